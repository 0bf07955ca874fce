"""Reports made in memory, streamed (the CLI past --max-memory) and from Dask: an
independent review's tests (2026-11-27).

Every expected value comes from an independent reference in this file (numpy bin counts by
hand, fractions.Fraction pair counts), never from fastbias itself. Found by review (the tests
under "found by review"; each fails before its fix): a row left out for its missing weight
(nan_policy="omit") was still drawn in the score distributions; scores from -1e308 to 1e308
gave NaN bin edges and no HTML report.
"""
import contextlib
import io
import json
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias import cli
from fastbias.reports.report import BiasReport

BINS = 40


# ------------------------------------------------------------------ references

def ref_edges(score_arrays, bins=BINS):
    """The documented rule: [0, 1] when every (kept) score lies there, else min..max."""
    allv = np.concatenate(score_arrays)
    lo, hi = float(allv.min()), float(allv.max())
    if lo >= 0 and hi <= 1:
        lo, hi = 0.0, 1.0
    return np.linspace(lo, hi, bins + 1)


def ref_bin(x, edges):
    """[e_k, e_k+1), the last bin closed, scores outside in the end bins; by hand."""
    bins = len(edges) - 1
    k = 0
    for j in range(bins + 1):
        if edges[j] <= x:
            k = j
    return min(k, bins - 1)


def ref_histograms(df, label, scores, groups, *, exclude, keep=None, bins=BINS, st=0.5):
    y = df[label].to_numpy(float)
    pos = y >= 0.5
    S = [df[m].to_numpy(float) for m in scores]
    ok = [np.isfinite(s) & (np.ones(len(df), bool) if keep is None else keep) for s in S]
    edges = ref_edges([s[o] for s, o in zip(S, ok)], bins)
    out = np.zeros((len(scores), len(groups), 4, bins), np.int64)
    for m, (s, o) in enumerate(zip(S, ok)):
        for g, cols in enumerate(groups.values()):
            member = np.ones(len(df), bool)
            annotated = np.ones(len(df), bool)
            for c in cols:
                v = df[c].to_numpy(float)
                member &= ~np.isnan(v) & (v >= st)
                annotated &= ~np.isnan(v)
            bg = ~member & (annotated if exclude else True)
            for c_i, rows in enumerate([member & ~pos, member & pos, bg & ~pos, bg & pos]):
                for x in s[rows & o]:
                    out[m, g, c_i, ref_bin(x, edges)] += 1
    return edges, out


def frac_auc(neg, pos):
    if len(neg) == 0 or len(pos) == 0:
        return None
    num = Fraction(0)
    for a in neg:
        for b in pos:
            num += 1 if b > a else Fraction(1, 2) if b == a else 0
    return num / (len(neg) * len(pos))


# ------------------------------------------------------------------ the CLI, both ways

def cli_report(tmp_path, monkeypatch, data, argv, *, stream):
    """Run `fastbias report`, return (BiasReport, stdout, json dict, csv text)."""
    captured = {}
    original = BiasReport.to_text

    def spy(self, *a, **k):
        captured["report"] = self
        return original(self, *a, **k)

    tag = "s" if stream else "m"
    js, cs = str(tmp_path / f"{tag}.json"), str(tmp_path / f"{tag}.csv")
    full = ["report", data, *argv, "--out", js, "--out", cs, "--force", "--progress", "never"]
    err, out = io.StringIO(), io.StringIO()
    with monkeypatch.context() as mp:
        mp.setattr(BiasReport, "to_text", spy)
        if stream:  # force streaming in tiny buckets (as tests/_fuzz_harness.py does)
            mp.setattr(cli, "_resident_memory", lambda: 0)
            mp.setattr(cli, "KERNEL_RESERVE", 0)
            mp.setattr(cli, "_row_bytes", lambda args, n: 10 ** 9)
            mp.setattr(cli, "_streaming_settings", lambda *a, **k: (11, 7))
            full += ["--max-memory", "64M"]
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            status = cli.main(full)
    assert status == 0, err.getvalue()
    assert ("streaming it" in err.getvalue()) == stream, err.getvalue()
    with open(js) as f:
        data_json = json.load(f)
    with open(cs, newline="") as f:
        csv_text = f.read()
    return captured["report"], out.getvalue(), data_json, csv_text


def _frame(seed=0, n=240):
    rng = np.random.default_rng(seed)
    edges = np.linspace(0, 1, BINS + 1)
    return pd.DataFrame({
        "y": rng.choice([0.0, 0.2, 0.5, 0.8, 1.0], n),
        # scores exactly on bin edges, 0.0, -0.0, 1.0, the float just below 0.5
        "s": rng.choice(np.r_[edges, -0.0, 0.3, 0.7, np.nextafter(0.5, 0)], n),
        # a second model outside [0, 1]: the common edges then span the scores' range
        "t": rng.normal(0, 2, n).round(1),
        "a": rng.choice([0.0, 1.0, np.nan, 0.5, 0.49], n),
        "b": rng.choice([0.0, 1.0, np.nan], n),
    })


@pytest.mark.parametrize("extra", [[], ["--missing-subgroup", "exclude"],
                                   ["--missing-subgroup", "exclude", "--intersections", "2",
                                    "--min-subgroup-size", "1"]])
def test_streamed_and_in_memory_reports_match_reference_histograms(tmp_path, monkeypatch, extra):
    """Holds: in memory and streamed, the histograms equal a by-hand binning of the rows, and
    the text table, JSON (settings' engine aside) and CSV are identical."""
    df = _frame()
    path = str(tmp_path / "x.csv")
    df.to_csv(path, index=False)
    argv = ["--label", "y", "--scores", "s", "t", "--subgroups", "a", "b", *extra]
    mem = cli_report(tmp_path, monkeypatch, path, argv, stream=False)
    st = cli_report(tmp_path, monkeypatch, path, argv, stream=True)
    groups = {"a": ["a"], "b": ["b"]}
    if "--intersections" in extra:
        groups["a & b"] = ["a", "b"]
    edges, counts = ref_histograms(df, "y", ["s", "t"], groups,
                                   exclude="exclude" in extra)
    for report, _, js, _ in (mem, st):
        h = report.histograms
        assert h.subgroups == list(groups)
        np.testing.assert_array_equal(h.edges, edges)
        np.testing.assert_array_equal(h.counts, counts)
        assert (h.n_rows, h.n_positives) == (len(df), int((df.y >= 0.5).sum()))
        assert (js["n_rows"], js["n_positives"]) == (len(df), int((df.y >= 0.5).sum()))
        # every histogram adds up to its cell in the table
        t = report.result.table
        for m_i, m in enumerate(["s", "t"]):
            for g_i, g in enumerate(groups):
                row = t[(t.model == m) & (t.subgroup == g)].iloc[0]
                assert list(counts[m_i, g_i].sum(axis=-1)) == [
                    row.subgroup_negatives, row.subgroup_positives,
                    row.background_negatives, row.background_positives]
    assert mem[1] == st[1]
    assert mem[3] == st[3]
    jm = {k: v for k, v in mem[2].items() if k not in ("timings_s", "settings")}
    js_ = {k: v for k, v in st[2].items() if k not in ("timings_s", "settings")}
    assert jm == js_


def test_streamed_table_matches_fraction_reference_with_signed_zeros(tmp_path, monkeypatch):
    """Holds: -0.0 and 0.0 tie across the streamed buckets, counts and AUCs exact."""
    rng = np.random.default_rng(3)
    n = 120
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "s": rng.choice([0.0, -0.0, 1.0, 0.5], n),
                       "a": rng.choice([0.0, 1.0, np.nan], n)})
    path = str(tmp_path / "x.csv")
    df.to_csv(path, index=False)
    assert "-0.0" in open(path).read()
    report, *_ = cli_report(tmp_path, monkeypatch, path,
                            ["--label", "y", "--scores", "s", "--subgroups", "a",
                             "--missing-subgroup", "exclude"], stream=True)
    y = df.y.to_numpy().astype(bool)
    s = df.s.to_numpy()
    v = df.a.to_numpy()
    g = v >= 0.5
    bg = ~g & ~np.isnan(v)
    row = report.result.table.iloc[0]
    assert row.subgroup_auc == float(frac_auc(s[g & ~y], s[g & y]))
    assert row.bpsn_auc == float(frac_auc(s[g & ~y], s[bg & y]))
    assert row.bnsp_auc == float(frac_auc(s[bg & ~y], s[g & y]))
    assert row.negative_aeg == float(Fraction(1, 2) - frac_auc(s[g & ~y], s[bg & ~y]))
    assert row.positive_aeg == float(Fraction(1, 2) - frac_auc(s[g & y], s[bg & y]))
    assert report.result.overall_auc.iloc[0] == float(frac_auc(s[~y], s[y]))


def test_dask_result_reports_as_in_memory():
    """Holds: BiasReport.from_result of a Dask evaluation gives the in-memory report."""
    dd = pytest.importorskip("dask.dataframe")
    import fastbias.dask

    df = _frame(seed=1).assign(w=np.random.default_rng(1).choice([0.5, 1.0, 2.0], 240))
    ddf = dd.from_pandas(df, npartitions=4)
    for kw in (dict(missing_subgroup="exclude"), dict(sample_weight="w")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mem = fastbias.bias_report(df, label="y", scores=["s", "t"], subgroups=["a", "b"],
                                       **kw)
            res = fastbias.dask.evaluate(ddf, label="y", scores=["s", "t"],
                                         subgroups=["a", "b"], progress=False, **kw)
            rep = BiasReport.from_result(df, res)
        assert rep.to_text() == mem.to_text()
        pd.testing.assert_frame_equal(rep.summary(), mem.summary())
        np.testing.assert_array_equal(rep.histograms.counts, mem.histograms.counts)


# ------------------------------------------------------------------ found by review

def test_histograms_leave_out_rows_omitted_for_a_missing_weight():
    """nan_policy="omit" drops a row whose weight is NaN for every model (the table's
    background_negatives is 0 and the Negative AEG n/a), but score_histograms still bins that
    row: the report's distribution figure draws a background-negatives curve (n=1) for a
    cell the metrics say is empty. Correct: the histograms leave out every row the
    evaluation omitted (missing label, weight or score), so each adds up to its table cell.
    Cause: fastbias/reports/histograms.py score_histograms discards only rows with a missing
    label or a non-finite score; it never looks at settings' sample weight."""
    df = pd.DataFrame({"y": [0, 1, 0, 1, 0, 1, 0, 1],
                       "s": [0.1, 0.9, 0.5, 0.2, 0.45, 0.3, 0.6, 0.8],
                       "w": [1, 1, np.nan, 1, 1, 1, 1, 2.0],
                       "g": [1, 1, 0, 0, 1, 0, 1, 0]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = fastbias.bias_report(df, label="y", scores="s", subgroups=["g"],
                                      sample_weight="w", nan_policy="omit")
    keep = ~df.w.isna().to_numpy()
    _, ref = ref_histograms(df, "y", ["s"], {"g": ["g"]}, exclude=False, keep=keep)
    row = report.result.table.iloc[0]
    assert row.background_negatives == 0  # (the row with the NaN weight, omitted)
    totals = report.histograms.counts[0, 0].sum(axis=-1)
    assert list(totals) == [row.subgroup_negatives, row.subgroup_positives,
                            row.background_negatives, row.background_positives]
    np.testing.assert_array_equal(report.histograms.counts, ref)
    # the result names its weight column: from_result finds the rows by itself
    again = BiasReport.from_result(df, report.result)
    np.testing.assert_array_equal(again.histograms.counts, ref)
    # weights given as an array: from_result cannot tell those rows without them (refused,
    # saying what to pass), and leaves them out with them
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fastbias.evaluate(df, label="y", scores="s", subgroups=["g"],
                                   sample_weight=df["w"].to_numpy(), nan_policy="omit")
    with pytest.raises(ValueError, match="pass sample_weight="):
        BiasReport.from_result(df, result)
    again = BiasReport.from_result(df, result, sample_weight=df["w"].to_numpy())
    np.testing.assert_array_equal(again.histograms.counts, ref)


def test_histogram_edges_finite_when_score_range_overflows():
    """Finite scores spanning more than the largest double (here -1e308 and 1e308)
    are accepted by evaluate (exact metrics), but histogram_edges' np.linspace(lo, hi) over
    them overflows: edges [nan, inf, inf, ..., 1e308], every row counted in bin 0, and
    to_html() fails with matplotlib's 'Nan values in "edges" are disallowed' (no name, no
    value). Correct: finite, increasing edges (e.g. computed as lo + k*(hi/bins - lo/bins))
    with each row in its bin, and an HTML report. Cause: fastbias/reports/histograms.py
    histogram_edges (np.linspace with stop - start = inf); the streamed CLI uses the same."""
    df = pd.DataFrame({"y": [0, 1, 0, 1, 0, 1], "s": [-1e308, 1e308, 0.5, 0.2, 3.0, -2.0],
                       "g": [1, 1, 0, 0, 1, 0]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = fastbias.bias_report(df, label="y", scores="s", subgroups=["g"], bins=4)
    edges = report.histograms.edges
    assert np.isfinite(edges).all() and (np.diff(edges) > 0).all(), edges
    # with edges -1e308, -5e307, 0, 5e307, 1e308 (by hand): 1e308 in the last bin, the
    # small scores either side of 0
    counts = report.histograms.counts[0, 0]
    assert counts[:, 3].sum() == 1 and counts[:, 0].sum() == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report.to_html()


def test_from_result_refuses_weights_the_result_did_not_use():
    """Weights beside a result that did not use them were read for nothing (or not at all):
    an unweighted result with sample_weight=, another weight column than the one evaluated,
    or weights whose missing rows are not those the result left out. Each is refused by name
    (found by review: they passed without a word)."""
    df = pd.DataFrame({"y": [0, 1, 0, 1, 0, 1, 0, 1], "s": [.1, .9, .3, .7, .2, .8, .4, .6],
                       "w": [1, 1, np.nan, 1, 1, 1, 1, 2.0], "v": [1.0] * 8,
                       "g": [1, 1, 0, 0, 1, 0, 1, 0]})
    plain = fastbias.evaluate(df, label="y", scores="s", subgroups=["g"])
    with pytest.raises(ValueError, match=r"sample_weight=3 was given, but the result was "
                                         r"evaluated without weights"):
        BiasReport.from_result(df, plain, sample_weight=3)
    with pytest.raises(ValueError, match="without weights"):
        BiasReport.from_result(df, plain, sample_weight="v")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        weighted = fastbias.evaluate(df, label="y", scores="s", subgroups=["g"],
                                     sample_weight="w", nan_policy="omit")
        by_array = fastbias.evaluate(df, label="y", scores="s", subgroups=["g"],
                                     sample_weight=df["w"].to_numpy(), nan_policy="omit")
    with pytest.raises(ValueError, match="evaluated with the weight column 'w'"):
        BiasReport.from_result(df, weighted, sample_weight="v")
    # weights with no missing value, where the result left one row out: refused
    with pytest.raises(ValueError, match=r"0 missing value\(s\) in 8 rows, but the result "
                                         r"left out 1 row\(s\)"):
        BiasReport.from_result(df, by_array, sample_weight=df["v"].to_numpy())
    with pytest.raises(ValueError, match=r"in 7 rows"):
        BiasReport.from_result(df, by_array, sample_weight=df["w"].to_numpy()[:7])
    # the same weights: the histograms leave the row out (1 + 6 kept = 7 rows counted)
    kept = BiasReport.from_result(df, by_array, sample_weight=df["w"].to_numpy())
    assert int(kept.histograms.counts.sum()) == 7
