"""An independent review's tests (2026-11-27): claims of README.md and docs/*.md checked
against the library.

Expected values come from independent references (brute-force pair counts, sklearn,
scipy, hand computation, the text of the docs), never from fastbias itself. Found by review
(each fails before its fix): the CLI's --nan-policy omit warning said nan_policy='omit';
a refusal to stream said "more than 200 rows" of a file of 200; and (found while fixing the
first) a data column named like an argument ('confidence') was shown as '--confidence'.
"""
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm
from sklearn.metrics import roc_auc_score

import fastbias

from . import cli_runner

ROOT = Path(__file__).resolve().parents[1]


def _cli(args, cwd):
    if args[0] not in ("report", "demo"):
        args = ["report", *args]
    return cli_runner.run_cli(args, cwd)


def _csv(tmp_path, n=200, nan_rows=()):
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, n)
    s = np.round(rng.random(n), 2)
    s2 = s.copy()
    s2[list(nan_rows)] = np.nan
    df = pd.DataFrame({"toxicity": y, "model_a": s, "model_b": s2,
                       "male": rng.random(n) < 0.3, "verdict": np.where(y == 1, "toxic", "fine")})
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    return path, df


def _brute_auc(pos, neg):
    pos = np.asarray(pos, float)[:, None]
    neg = np.asarray(neg, float)[None, :]
    return float(((pos > neg) + 0.5 * (pos == neg)).mean())


# --------------------------------------------------------------------------------------
# found by review
# --------------------------------------------------------------------------------------

def test_cli_nan_policy_omit_warning_names_the_option(tmp_path):
    """Was: docs/validation.md:128 says the CLI's omit line reads
    ``fastbias: warning: --nan-policy omit dropped rows (score column 'b': 2 ...)``, and
    docs/validation.md:116-117 promise "options named as options". The CLI prints the
    library's Python wording instead: ``fastbias: warning: nan_policy='omit' dropped rows``
    (fastbias/cli.py ~1082 forwards frame.py:552's warning text unchanged).
    Correct: the line names the option ``--nan-policy omit``."""
    path, df = _csv(tmp_path, nan_rows=(5, 9))
    r = _cli([str(path), "--label", "toxicity", "--scores", "model_a", "model_b",
              "--subgroups", "male", "--nan-policy", "omit", "--progress", "never"], tmp_path)
    assert r.returncode == 0, r.stderr
    line = [ln for ln in r.stderr.splitlines() if "dropped rows" in ln]
    assert line, r.stderr
    # the counts the doc promises hold (independent count: 2 NaN in model_b)
    assert "score column 'model_b': 2 (2 NaN or missing, 0 infinite)" in line[0]
    assert line[0].startswith("fastbias: warning: --nan-policy omit dropped rows"), line[0]


def test_cli_streaming_refusal_does_not_claim_more_rows_than_the_file_has(tmp_path):
    """Was: docs/cli.md:163-166: --ci bootstrap with streamed data is refused "with the
    sizes that decided it". For a CSV of exactly 200 data rows the message says
    "'d.csv' holds more than 200 rows" (fastbias/cli.py rows_text(): "more than N" whenever
    the count is not flagged exact, even when the whole file was read). Correct: 200 rows
    (or "at least 200"), never "more than" the file's row count."""
    path, df = _csv(tmp_path, n=200)
    assert len(df) == 200
    r = _cli([str(path), "--label", "toxicity", "--scores", "model_a", "--subgroups", "male",
              "--max-memory", "100M", "--ci", "bootstrap", "--progress", "never"], tmp_path)
    assert r.returncode == 1
    assert "--ci bootstrap" in r.stderr
    assert "more than 200 rows" not in r.stderr, r.stderr
    assert "d.csv' holds at least 200 rows, which need about" in r.stderr, r.stderr


def test_cli_names_from_data_are_not_taken_for_options(tmp_path):
    """A score column named 'confidence' (or 'sample_weight', 'n_boot') is a name from the
    data: the CLI's messages said "score column '--confidence' has 1 NaN", rewriting it as
    if it were the Python argument. Quoted names are now left as they are; the Python
    words outside them still become options (--nan-policy omit)."""
    path = tmp_path / "c.csv"
    path.write_text("y,confidence,sample_weight,g\n1,0.9,0.1,1\n0,,0.2,0\n1,0.4,0.3,0\n"
                    "0,0.3,0.4,1\n1,0.8,0.5,0\n0,0.2,0.6,1\n")
    r = _cli([str(path), "--label", "y", "--scores", "confidence", "sample_weight",
              "--subgroups", "g", "--progress", "never"], tmp_path)
    assert r.returncode == 1
    assert ("fastbias: error: score column 'confidence' has 1 NaN and 0 infinite value(s) "
            "(first at position 1); scores must be finite: drop those rows first, or pass "
            "--nan-policy omit") in r.stderr, r.stderr
    r = _cli([str(path), "--label", "y", "--scores", "confidence", "sample_weight",
              "--subgroups", "g", "--progress", "never", "--nan-policy", "omit"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert ("fastbias: warning: --nan-policy omit dropped rows (score column 'confidence': 1 "
            "(1 NaN or missing, 0 infinite)); rows kept per model: 'confidence': 5, "
            "'sample_weight': 6 of 6") in r.stderr, r.stderr


# --------------------------------------------------------------------------------------
# Claims that hold (pinned)
# --------------------------------------------------------------------------------------

Y10 = np.array([0, 1, 0, 1, 0, 1, 0, 1, 0, 1])
S10 = np.linspace(0.05, 0.95, 10)
G10 = {"g": np.array([1, 1, 1, 1, 0, 0, 0, 0, 1, 0], bool)}


@pytest.mark.parametrize("kwargs, exc, text", [
    # docs/validation.md:41
    (dict(y_score=np.where(np.arange(10) == 4, np.nan, S10)), ValueError,
     "y_score has 1 NaN and 0 infinite value(s) (first at position 4)"),
    # :46
    (dict(sample_weight=np.where(np.arange(10) == 9, -0.5, 1.0)), ValueError,
     "sample_weight has 1 negative value(s) (e.g. -0.5 at position 9); weights must be >= 0"),
    # :52
    (dict(y_score=S10[:7]), ValueError, "y_score has 7 rows but y_true has 10"),
    # :55
    (dict(y_true=np.array([0, .5, 0, .5, 0, .5, 0, .5, 1, .5])), ValueError,
     "y_true is not binary: 5 value(s) other than 0/1 (e.g. 0.5 at position 1)"),
    # :60
    (dict(y_true=np.array(["b", "a"] * 5), pos_label="A"), ValueError,
     "pos_label 'A' does not occur in y_true (its values are ['b', 'a'])"),
    # :97
    (dict(subgroups=np.ones((2, 10), bool)), ValueError,
     "subgroups has 2 rows but y_true has 10; one row per subgroup? expected (n_rows, "
     "n_subgroups) = (10, 2): transpose it"),
    # :95
    (dict(subgroups={"g": G10["g"][:9]}), ValueError, "subgroup 'g' mask has 9 rows but y_true has 10"),
    # :82
    (dict(y_score=np.ones(10, bool)), TypeError, "y_score must be numeric scores"),
    # :86
    (dict(label_threshold=True), TypeError, "label_threshold must be a number, got True"),
    # :51
    (dict(sample_weight=np.where(np.arange(10) == 2, 1e-300, np.where(np.arange(10) == 1, 2.0, 1.0))),
     ValueError, "sample_weight spans more than 2**480 (1e144): the smallest positive weight is "
                 "1e-300 at position 2 and the largest 2.0 at position 1"),
])
def test_validation_table_messages(kwargs, exc, text):
    args = dict(y_true=Y10, y_score=S10, subgroups=G10)
    args.update(kwargs)
    y, s, g = args.pop("y_true"), args.pop("y_score"), args.pop("subgroups")
    with pytest.raises(exc) as info:
        fastbias.bias_metrics(y, s, g, **args)
    assert text in str(info.value)


def test_masked_array_entries_are_missing():
    """docs/validation.md:39: masked entries are missing values (11 of them here)."""
    scores = np.ma.masked_equal(np.r_[[-1.0] * 11, S10], -1)
    y = np.r_[Y10, Y10, [0]]
    g = {"g": np.r_[G10["g"], G10["g"], [True]]}
    with pytest.raises(ValueError, match=re.escape("y_score has 11 NaN and 0 infinite value(s) "
                                                   "(first at position 0)")):
        fastbias.bias_metrics(y, scores, g)


def test_omit_warning_text_as_documented():
    """docs/validation.md:139-140, the example warning, verbatim."""
    y = np.array([0, 1, np.nan, 1, 0, 1, 0, 1, 0, 1.])
    s = S10.copy()
    s[3], s[5] = np.nan, np.inf
    w = np.ones(10)
    w[7] = np.nan
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        t = fastbias.bias_metrics(y, s, G10, sample_weight=w, nan_policy="omit")
    msgs = [str(r.message) for r in rec if issubclass(r.category, fastbias.OmittedRowsWarning)]
    assert msgs == ["nan_policy='omit' dropped 4 of 10 rows (y_true: 1 missing; y_score: 2 "
                    "(1 NaN or missing, 1 infinite); sample_weight: 1 NaN or missing)"]
    keep = np.array([0, 1, 4, 6, 8, 9])
    gk = G10["g"][keep]
    yk, sk = y[keep], s[keep]
    assert t.loc["g", "bpsn_auc"] == _brute_auc(sk[~gk & (yk == 1)], sk[gk & (yk == 0)])


def test_float32_label_and_identity_compared_as_real_numbers():
    """docs/validation.md:85: float32(0.7) is below 0.7, for labels and identities alike."""
    yf = np.array([0, 0.7, 0, 1, 0, 1, 0, 1, 0, 1], np.float32)
    t = fastbias.bias_metrics(yf, S10, G10, label_threshold=0.7)
    assert t.loc["g", ["subgroup_positives", "background_positives"]].tolist() == [1, 3]
    gf = np.array([0.7, 1, 1, 1, 0, 0, 0, 0, 1, 0], np.float32)
    t = fastbias.bias_metrics(Y10, S10, {"g": gf}, subgroup_threshold=0.7)
    assert t.loc["g", ["subgroup_negatives", "subgroup_positives"]].tolist() == [2, 2]


def test_index_mismatch_error_as_documented():
    """docs/validation.md:40."""
    df = pd.DataFrame({"y": Y10, "s": S10, "g": G10["g"]})
    other = df.sample(frac=1, random_state=1)
    with pytest.raises(ValueError, match="y_true and subgroups are pandas objects with different indexes"):
        fastbias.bias_metrics(df.y, df.s, other[["g"]])


def test_evaluate_csv_names_file_row_and_batch(tmp_path):
    """docs/validation.md:7-11: out of core, positions are file rows, with the batch range."""
    rng = np.random.default_rng(2)
    n = 400
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "s": rng.random(n), "g": rng.random(n) < 0.3})
    df.loc[250, "s"] = np.nan
    df.to_csv(tmp_path / "nan.csv", index=False)
    with pytest.raises(ValueError) as info:
        fastbias.evaluate_csv(tmp_path / "nan.csv", label="y", scores="s", subgroups=["g"],
                              batch_rows=100)
    assert "(first at row 250)" in str(info.value)
    assert "(in rows 200..299 of" in str(info.value)


@pytest.mark.parametrize("extra, rc, text", [
    # docs/validation.md:125
    (["--label-threshold", "inf"], 2, "fastbias report: error: argument --label-threshold: must be finite, got inf"),
    (["--seed", "-3"], 2, "argument --seed: must be 0 or more, got -3"),
    # :126
    (["--n-boot", "10", "--ci", "delong"], 1,
     "fastbias: error: --n-boot is the number of bootstrap replicates; it needs --ci bootstrap (got --ci delong)"),
    # docs/cli.md:196
    (["--out", "report.xlsx"], 1, "fastbias: error: --out 'report.xlsx': unknown extension '.xlsx'; use .html, .csv or .json"),
])
def test_cli_documented_errors(tmp_path, extra, rc, text):
    path, _ = _csv(tmp_path)
    r = _cli([str(path), "--label", "toxicity", "--scores", "model_a", "--subgroups", "male",
              "--progress", "never", *extra], tmp_path)
    assert r.returncode == rc
    assert text in r.stderr


def test_cli_positive_with_label_threshold_and_four_values(tmp_path):
    """docs/validation.md:62 and :127."""
    path, df = _csv(tmp_path)
    r = _cli([str(path), "--label", "verdict", "--positive", "toxic", "--label-threshold", "0.3",
              "--scores", "model_a", "--subgroups", "male"], tmp_path)
    assert r.returncode == 1 and "pass either --positive or --label-threshold, not both" in r.stderr
    v = df.verdict.copy()
    v[3], v[4] = "Toxic", "unknown"
    df.assign(verdict=v).to_csv(tmp_path / "d4.csv", index=False)
    r = _cli([str(tmp_path / "d4.csv"), "--label", "verdict", "--positive", "toxic",
              "--scores", "model_a", "--subgroups", "male"], tmp_path)
    assert r.returncode == 1
    assert ("label column 'verdict' has 4 distinct values ('Toxic', 'fine', 'toxic', 'unknown'; "
            "the third, 'Toxic', first at position 3); --positive needs two-class labels"
            ) in r.stderr


def test_cli_synopsis_options_match_help():
    """docs/cli.md:33-44: every option of the synopsis is one of `fastbias report --help`'s,
    and vice versa."""
    doc = (ROOT / "docs" / "cli.md").read_text()
    synopsis = doc.split("## `fastbias report`")[1].split("```")[1]
    doc_opts = {o if o != "-q" else "--quiet"
                for o in re.findall(r"(--[a-z][a-z-]+|-q)\b", synopsis)}
    r = _cli(["report", "--help"], ROOT)
    help_opts = set(re.findall(r"^  (?:-q, )?(--[a-z][a-z-]+)", r.stdout, re.M))
    help_opts.discard("--help")
    assert len(help_opts) > 25
    assert doc_opts == help_opts


def test_delong_intervals_match_brute_force():
    """docs/intervals.md:70-80: DeLong se = sqrt(S10/m + S01/n), interval est -/+ z se, clipped."""
    rng = np.random.default_rng(7)
    n = 120
    y = rng.integers(0, 2, n)
    s = np.round(rng.random(n) + 0.3 * y, 1)
    g = rng.random(n) < 0.4
    t = fastbias.bias_metrics(y, s, {"g": g}, ci="delong")
    cells = {"subgroup_auc": (s[g & (y == 1)], s[g & (y == 0)]),
             "bpsn_auc": (s[~g & (y == 1)], s[g & (y == 0)]),
             "bnsp_auc": (s[g & (y == 1)], s[~g & (y == 0)]),
             "negative_aeg": (s[~g & (y == 0)], s[g & (y == 0)]),
             "positive_aeg": (s[~g & (y == 1)], s[g & (y == 1)])}
    z = norm.ppf(0.975)
    for m, (X, Y) in cells.items():
        K = (X[:, None] > Y[None, :]) + 0.5 * (X[:, None] == Y[None, :])
        th = K.mean()
        se = np.sqrt(K.mean(1).var(ddof=1) / len(X) + K.mean(0).var(ddof=1) / len(Y))
        est = th if "auc" in m else 0.5 - th
        lo, hi = est - z * se, est + z * se
        lo, hi = (max(lo, 0), min(hi, 1)) if "auc" in m else (max(lo, -.5), min(hi, .5))
        got = t.loc["g", [m, m + "_se", m + "_low", m + "_high"]].to_numpy(float)
        np.testing.assert_allclose(got, [est, se, lo, hi], rtol=1e-12, atol=1e-15)


def test_significance_delong_and_holm_match_brute_force():
    """docs/significance.md: cells >= 300 use DeLong's paired z-test vs the overall AUC; Holm
    adjusts over all subgroups x metrics."""
    rng = np.random.default_rng(11)
    n = 1600
    y = (rng.random(n) < 0.5).astype(int)
    g = rng.random(n) < 0.45
    s = np.round(rng.random(n) + 0.4 * y + 0.15 * g, 2)
    t = fastbias.bias_metrics(y, s, {"g": g, "h": rng.random(n) < 0.5}, significance="holm")

    def psi(ix, iy):
        K = (s[ix][:, None] > s[iy][None, :]) + 0.5 * (s[ix][:, None] == s[iy][None, :])
        th, out = K.mean(), np.zeros(n)
        out[ix] += (K.mean(1) - th) / np.sqrt(len(ix) * (len(ix) - 1))
        out[iy] += (K.mean(0) - th) / np.sqrt(len(iy) * (len(iy) - 1))
        return th, out

    th_o, ps_o = psi(np.where(y == 1)[0], np.where(y == 0)[0])
    w = np.where
    for m, (ix, iy) in {"subgroup_auc": (w(g & (y == 1))[0], w(g & (y == 0))[0]),
                        "bpsn_auc": (w(~g & (y == 1))[0], w(g & (y == 0))[0]),
                        "bnsp_auc": (w(g & (y == 1))[0], w(~g & (y == 0))[0])}.items():
        assert min(len(ix), len(iy)) >= 300
        th, ps = psi(ix, iy)
        p = 2 * norm.sf(abs(th - th_o) / np.sqrt(((ps - ps_o) ** 2).sum()))
        assert t.loc["g", m + "_pvalue"] == pytest.approx(p, rel=1e-9)
    cols = [c for c in t.columns if c.endswith("_pvalue")]
    p = t[cols].to_numpy().ravel()
    ok = ~np.isnan(p)
    pv = p[ok]
    adj, run = np.empty(len(pv)), 0.0
    for r, i in enumerate(np.argsort(pv)):
        run = max(run, min(1.0, (len(pv) - r) * pv[i]))
        adj[i] = run
    np.testing.assert_allclose(t[[c + "_adjusted" for c in cols]].to_numpy().ravel()[ok], adj, rtol=1e-12)


def test_intersection_background_under_exclude_matches_sklearn():
    """docs/intersections.md:42-47: under "exclude" an intersection's background is the rows
    annotated for both of its columns."""
    df = fastbias.make_jigsaw_like(n_rows=60_000, n_identities=4, random_state=0)
    res = fastbias.evaluate(df, label="toxicity", scores="model_biased",
                            subgroups=["male", "female", "transgender", "other_gender"],
                            missing_subgroup="exclude", intersections=2)
    t = res.for_model()
    y = (df.toxicity >= 0.5).to_numpy()
    s = df.model_biased.to_numpy()
    a, b = "female", "other_gender"
    ann = (df[a].notna() & df[b].notna()).to_numpy()
    m = ((df[a] >= 0.5) & (df[b] >= 0.5)).to_numpy()
    bg = ann & ~m
    sel = (m & ~y) | (bg & y)
    assert t.loc[f"{a} & {b}", "bpsn_auc"] == pytest.approx(roc_auc_score(y[sel], s[sel]), abs=1e-12)
    assert t.loc[f"{a} & {b}", "background_negatives"] == (bg & ~y).sum()


def test_pinned_auc_sample_is_the_reference_construction():
    """docs/aggregates.md:53."""
    rng = np.random.default_rng(3)
    n = 300
    y = rng.integers(0, 2, n)
    s = np.round(rng.random(n), 2)
    G = pd.DataFrame({"a": rng.random(n) < 0.3, "b": rng.random(n) < 0.2})
    df = pd.DataFrame({"y": y, "s": s}).join(G)
    got = fastbias.pinned_auc(y, s, G)
    for name in G:
        sub = df[df[name]]
        pinned = pd.concat([sub, df[~df[name]].sample(len(sub), random_state=25)])
        assert got[name] == pytest.approx(roc_auc_score(pinned.y, pinned.s), abs=1e-12)


def test_power_mean_documented_limits():
    """docs/aggregates.md:37-39."""
    assert fastbias.power_mean([1, 4, 16], 0) == pytest.approx(4.0)
    assert fastbias.power_mean([1, 4, 16], np.inf) == 16
    assert fastbias.power_mean([1, 4, 16], -np.inf) == 1
    assert fastbias.power_mean([0, 4, 16], -5) == 0
    assert np.isnan(fastbias.power_mean([np.nan, 4, 16], -5))
    with pytest.raises(ValueError):
        fastbias.power_mean([-1, 4, 16], -5)


def test_float16_threshold_rounding_as_documented():
    """docs/thresholds.md:34-38: float16(0.1) = 0.09998 is not counted at threshold 0.1."""
    y = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    g = {"g": np.array([1, 1, 1, 1, 0, 0, 0, 0], bool)}
    s16 = np.array([0.1, 0.1, 0.2, 0.05, 0.1, 0.3, 0.01, 0.9], np.float16)
    t = fastbias.threshold_metrics(y, s16, g, thresholds=[0.1])
    exact = s16.astype(float) >= 0.1
    gm = g["g"]
    assert t[["subgroup_tp", "subgroup_fp", "background_tp", "background_fp"]].iloc[0].tolist() == [
        (exact & (y == 1) & gm).sum(), (exact & (y == 0) & gm).sum(),
        (exact & (y == 1) & ~gm).sum(), (exact & (y == 0) & ~gm).sum()]


def test_overall_auc_equals_sklearn():
    """README.md:31: overall_auc == sklearn.metrics.roc_auc_score (ties, weights)."""
    rng = np.random.default_rng(4)
    n = 5000
    y = rng.integers(0, 2, n)
    s = np.round(rng.random(n), 2)
    w = rng.random(n) * 3
    assert fastbias.overall_auc(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-15)
    assert fastbias.overall_auc(y, s, sample_weight=w) == pytest.approx(
        roc_auc_score(y, s, sample_weight=w), rel=1e-13)


def test_compat_fractional_subgroup_hint_names_no_threshold():
    """The copied reference functions take no threshold; their refusal of a fractional
    subgroup column said "pass a subgroup threshold to binarize" (which they cannot) before
    the conversion that works. Now only the conversion is advised."""
    from fastbias import compat
    df = pd.DataFrame({"y": [0, 1, 0, 1], "m": [.1, .9, .3, .7], "g": [0.2, 1, 0, 1]})
    with pytest.raises(ValueError) as seen:
        compat.compute_bias_metrics_for_model(df, ["g"], "m", "y")
    assert str(seen.value) == ("subgroup 'g' is not a boolean mask: value 0.2 at position 0; "
                               "the copied code needs boolean columns; convert first as the "
                               "benchmark kernel does, e.g. df[col] = df[col] >= 0.5")
