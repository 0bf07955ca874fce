"""An independent review's tests (2026-11-28, thirty-eighth session): models that keep
different subgroups, out of core and in the figures and result methods. Every number is
checked against a brute-force reference written here (pair counts in exact fractions over
each model's own rows).

Found by review (each failed before its fix): ``for_model(m).attrs["intersections"]`` named
other models' intersections; the AUC/AEG heatmaps and the interval figure drew a model's
absent subgroup as the hatched "n/a" of an undefined value, under captions saying so.

Out of core, ``nan_policy="omit"`` is documented as unsupported (docs/distributed.md,
"Supported and not (yet)"; docs/cli.md): there every model keeps every row, so all models keep
the same intersections. These tests pin that the paths refuse NaN scores / omit by name and
give exact per-model tables with intersections=2 and min_subgroup_size.
"""
from __future__ import annotations

import itertools
import json
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import fastbias

from . import cli_runner

MIN = 5
AUCS = ["subgroup_auc", "bpsn_auc", "bnsp_auc"]
METRICS = AUCS + ["negative_aeg", "positive_aeg"]


# ------------------------------------------------------------------ reference (own)

def _auc(neg, pos):
    if len(neg) == 0 or len(pos) == 0:
        return None
    neg = np.asarray(neg, float)
    pos = np.asarray(pos, float)
    gt = int((pos[:, None] > neg[None, :]).sum())
    eq = int((pos[:, None] == neg[None, :]).sum())
    return Fraction(2 * gt + eq, 2 * len(neg) * len(pos))


def _row(y, s, m):
    gn, gp, bn, bp = s[m & ~y], s[m & y], s[~m & ~y], s[~m & y]
    r = {"subgroup_size": int(m.sum()), "subgroup_auc": _auc(gn, gp),
         "bpsn_auc": _auc(gn, bp), "bnsp_auc": _auc(bn, gp)}
    a = _auc(gn, bn)
    r["negative_aeg"] = None if a is None else Fraction(1, 2) - a
    a = _auc(gp, bp)
    r["positive_aeg"] = None if a is None else Fraction(1, 2) - a
    return r


def reference(df, model, ids, order=2, min_size=MIN):
    """{subgroup: row} on the model's own rows (score not NaN): the identities, then the
    combinations with at least min_size rows of each class among those rows."""
    keep = df[model].notna().to_numpy()
    y = df["y"].to_numpy(bool)[keep]
    s = df[model].to_numpy(float)[keep]
    out = {}
    for g in ids:
        out[g] = _row(y, s, df[g].to_numpy(bool)[keep])
    for k in range(2, order + 1):
        for combo in itertools.combinations(ids, k):
            m = np.logical_and.reduce([df[g].to_numpy(bool)[keep] for g in combo])
            if (m & y).sum() >= min_size and (m & ~y).sum() >= min_size:
                out[" & ".join(combo)] = _row(y, s, m)
    return out, _auc(s[~y], s[y])


def check_table(table, model, ref):
    part = table[table["model"] == model].set_index("subgroup")
    assert list(part.index) == list(ref), (model, list(part.index), list(ref))
    for g, r in ref.items():
        assert int(part.at[g, "subgroup_size"]) == r["subgroup_size"], (model, g)
        for metric in METRICS:
            got = part.at[g, metric]
            if r[metric] is None:
                assert np.isnan(got), (model, g, metric, got)
            else:
                assert abs(got - float(r[metric])) <= 1e-12, (model, g, metric, got,
                                                               float(r[metric]))


def frame(seed=0, n=240, nan=True):
    """Three identities; m1 loses most positives of a & b (so m1 keeps no a & b under omit),
    m2 loses most negatives of b & c; m3 is complete."""
    rng = np.random.default_rng(seed)
    a, b, c = (rng.random(n) < 0.45 for _ in range(3))
    y = rng.random(n) < 0.45
    df = pd.DataFrame({"y": y, "a": a, "b": b, "c": c,
                       "m1": np.round(rng.random(n) + 0.3 * y, 2),
                       "m2": np.round(rng.random(n) + 0.2 * y, 2),
                       "m3": np.round(rng.random(n) + 0.1 * y, 1)})
    if nan:
        ab = np.flatnonzero(a & b & y)
        df.loc[ab[:-2], "m1"] = np.nan
        bc = np.flatnonzero(b & c & ~y)
        df.loc[bc[:-3], "m2"] = np.nan
    return df


KW = dict(label="y", scores=["m1", "m2", "m3"], subgroups=["a", "b", "c"], intersections=2,
          min_subgroup_size=MIN)


def quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **k)


@pytest.fixture(scope="module")
def omit_result():
    df = frame()
    return df, quiet(fastbias.evaluate, df, nan_policy="omit", **KW)


# ------------------------------------------------------------------ in memory (baseline)

def test_omit_inmemory_each_model_own_subgroups(omit_result):
    df, res = omit_result
    seen = set()
    for m in KW["scores"]:
        ref, overall = reference(df, m, KW["subgroups"])
        check_table(res.table, m, ref)
        assert abs(res.overall_auc[m] - float(overall)) <= 1e-12
        assert res.subgroups_of([m]) == list(ref)
        seen.add(tuple(ref))
    assert len(seen) == 3  # the three models really keep different subgroups


def test_for_model_attrs_intersections_are_the_models_own(omit_result):
    """``EvaluationResult.for_model(m).attrs["intersections"]`` lists m's own kept
    intersections in the table's order. (Found by review: it listed the union of every
    model's, "a & b" (kept by m2/m3 only) for m1 too, out of the documented order: observed
    ['a & c', 'b & c', 'a & b'] for m1, expected ['a & c', 'b & c'].)"""
    df, res = omit_result
    for m in KW["scores"]:
        ref, _ = reference(df, m, KW["subgroups"])
        own = [g for g in ref if " & " in g]
        assert res.for_model(m).attrs.get("intersections") == own, (
            m, res.for_model(m).attrs.get("intersections"), own)


def test_final_metric_per_model_over_identities_only(omit_result):
    df, res = omit_result
    got = res.final_metric()
    for m in KW["scores"]:
        ref, overall = reference(df, m, KW["subgroups"])
        means = []
        for metric in AUCS:
            v = [float(ref[g][metric]) for g in KW["subgroups"]]
            means.append((sum(x ** -5 for x in v) / len(v)) ** (-1 / 5))
        exp = 0.25 * float(overall) + 0.75 * sum(means) / 3
        assert abs(got[m] - exp) <= 1e-12, (m, got[m], exp)


def test_wide_absent_is_nan_and_union_in_order(omit_result):
    """wide() is documented as the union; a model's absent combination is NaN there (pinned,
    see report: NaN here cannot be told from 'undefined')."""
    df, res = omit_result
    w = res.wide(["bpsn_auc"])
    union = ["a", "b", "c", "a & b", "a & c", "b & c"]
    assert list(w.index) == union
    for m in KW["scores"]:
        ref, _ = reference(df, m, KW["subgroups"])
        for g in union:
            v = w.at[g, ("bpsn_auc", m)]
            if g in ref:
                assert abs(v - float(ref[g]["bpsn_auc"])) <= 1e-12
            else:
                assert np.isnan(v)


# ------------------------------------------------------------------ report methods / exports

@pytest.fixture(scope="module")
def report(omit_result):
    df, res = omit_result
    from fastbias.report import BiasReport
    return df, res, quiet(BiasReport.from_result, df, res)


def test_report_exports_per_model_rows(report):
    df, res, rep = report
    fr = rep.to_frame()
    d = rep.to_dict()
    for m in KW["scores"]:
        ref, overall = reference(df, m, KW["subgroups"])
        check_table(fr, m, ref)
        rec = next(x for x in d["models"] if x["name"] == m)
        assert [r["subgroup"] for r in rec["subgroups"]] == list(ref)
        assert sorted(rep.worst_subgroups(model=m)) == sorted(ref)
        s = rep.summary().loc[m]
        vals = {(g, k): float(r[k]) for g, r in ref.items() for k in AUCS if r[k] is not None}
        low = min(vals.values())
        assert abs(s["lowest_auc"] - low) <= 1e-12
        assert s["lowest_auc_subgroup"] in ref
        assert rep.final_metrics()[m] == pytest.approx(res.final_metric()[m], abs=1e-15)
    assert set(rep.worst_subgroups()) == set(res.subgroups)


def test_report_text_and_html_no_foreign_rows(report):
    df, res, rep = report
    text = rep.to_text()
    blocks = {}
    for m in KW["scores"]:
        start = text.index(f"{m}  overall AUC")
        blocks[m] = text[start:]
    for i, m in enumerate(KW["scores"]):
        block = blocks[m]
        nxt = KW["scores"][i + 1] if i + 1 < len(KW["scores"]) else None
        if nxt:
            block = block[:block.index(f"{nxt}  overall AUC")]
        ref, _ = reference(df, m, KW["subgroups"])
        for g in ["a & b", "a & c", "b & c"]:
            assert (g in block) == (g in ref), (m, g)


# ------------------------------------------------------------------ figures

def _texts(fig):
    return [[t.get_text() for t in ax.texts] for ax in fig.axes]


def test_heatmap_marks_an_absent_subgroup_absent(report):
    """The AUC heatmap marks a model's absent subgroup "absent", not the hatched "n/a" of an
    undefined cell (it did before: found by review)."""
    df, res, rep = report
    pytest.importorskip("matplotlib")
    from fastbias.plotting import plot_auc_heatmap
    fig = plot_auc_heatmap(res, subgroups=["a", "a & b"])
    texts = _texts(fig)
    # panel 0 is m1, which has no "a & b": three "absent" marks there, no number, no n/a
    assert texts[0].count("absent") == 3 and "n/a" not in texts[0]
    ref1, _ = reference(df, "m1", KW["subgroups"])
    assert "a & b" not in ref1
    # every AUC m1 has for "a" is defined, so those n/a are exactly the absent row
    assert all(ref1["a"][k] is not None for k in AUCS)


def test_report_figure_captions(report):
    """The captions: with intersections the figures show the identities only (all models keep
    them); the caption's 'hatched n/a = undefined' is then never applied to an absent cell."""
    df, res, rep = report
    pytest.importorskip("matplotlib")
    figs = rep.figures()
    cap = dict((k, c) for k, c, _ in figs)
    assert "all 3 identities" in cap["aucs"]
    assert "the 3 intersections: in their own section" in cap["aucs"]
    aucfig = dict((k, f) for k, _, f in figs)["aucs"]
    for panel, m in zip(aucfig.axes, KW["scores"]):
        ref, _ = reference(df, m, KW["subgroups"])
        n_undef = sum(ref[g][k] is None for g in KW["subgroups"] for k in AUCS)
        assert [t.get_text() for t in panel.texts].count("n/a") == n_undef


def _feature_frame(seed=3, n=300):
    rng = np.random.default_rng(seed)
    race = rng.choice(["r1", "r2"], n)
    sex = rng.choice(["f", "m"], n)
    y = rng.random(n) < 0.45
    df = pd.DataFrame({"y": y, "race": race, "sex": sex,
                       "m1": np.round(rng.random(n) + 0.3 * y, 2),
                       "m2": np.round(rng.random(n) + 0.2 * y, 2)})
    sel = np.flatnonzero((race == "r1") & (sex == "f") & y)
    df.loc[sel[:-2], "m1"] = np.nan
    return df


def test_report_heatmap_and_caption_tell_an_absent_combination_apart():
    """With sensitive_features (combinations are not "intersections", so they are in the
    report's AUC heatmap) and nan_policy="omit", m1 keeps no "race=r1 & sex=f" (2 positives in
    its rows, min_subgroup_size=5). Its cells read "absent" and the caption says what that
    means. (Found by review: they were hatched "n/a" under a caption saying "hatched n/a =
    undefined", though m1's metric there is not undefined: the subgroup is not m1's.)"""
    pytest.importorskip("matplotlib")
    from fastbias.report import BiasReport
    df = _feature_frame()
    res = quiet(fastbias.evaluate, df, label="y", scores=["m1", "m2"], subgroups=[],
                sensitive_features=["race", "sex"], min_subgroup_size=MIN, nan_policy="omit")
    assert "race=r1 & sex=f" not in res.subgroups_of(["m1"])
    assert "race=r1 & sex=f" in res.subgroups_of(["m2"])
    rep = quiet(BiasReport.from_result, df, res)
    figs = rep.figures()
    cap = dict((k, c) for k, c, _ in figs)["aucs"]
    fig = dict((k, f) for k, _, f in figs)["aucs"]
    rows = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    i = rows.index("race=r1 & sex=f")
    m1_texts = [(t.get_position(), t.get_text()) for t in fig.axes[0].texts]
    in_row = [txt for (x, yy), txt in m1_texts if round(yy) == i]
    assert in_row == ["absent"] * 3
    absent_said = ("absent" in cap) or ("not a subgroup" in cap) or ("not kept" in cap)
    assert absent_said, cap


# ------------------------------------------------------------------ out of core

@pytest.fixture(scope="module")
def full_csv(tmp_path_factory):
    df = frame(nan=False)
    path = tmp_path_factory.mktemp("csv") / "d.csv"
    df.to_csv(path, index=False)
    return df, str(path)


def test_csv_streamed_intersections_exact(full_csv):
    df, path = full_csv
    res = quiet(fastbias.evaluate_csv, path, **KW)
    for m in KW["scores"]:
        ref, overall = reference(df, m, KW["subgroups"])
        check_table(res.table, m, ref)
        assert abs(res.overall_auc[m] - float(overall)) <= 1e-12


def test_csv_streamed_refuses_nan_and_omit(tmp_path):
    df = frame()
    path = tmp_path / "n.csv"
    df.to_csv(path, index=False)
    with pytest.raises(TypeError, match="nan_policy"):
        fastbias.evaluate_csv(str(path), nan_policy="omit", **KW)
    with pytest.raises(ValueError) as e:
        quiet(fastbias.evaluate_csv, str(path), **KW)
    msg = str(e.value)
    assert "m1" in msg or "m2" in msg, msg
    assert "NaN" in msg or "finite" in msg, msg


def test_dask_intersections_exact_and_nan_refused():
    dd = pytest.importorskip("dask.dataframe")
    import dask

    import fastbias.dask as fdask
    df = frame(nan=False)
    with dask.config.set(scheduler="synchronous"):
        res = quiet(fdask.evaluate, dd.from_pandas(df, npartitions=3), progress=False, **KW)
        for m in KW["scores"]:
            ref, overall = reference(df, m, KW["subgroups"])
            check_table(res.table, m, ref)
            assert abs(res.overall_auc[m] - float(overall)) <= 1e-12
        with pytest.raises(TypeError, match="nan_policy"):
            fdask.evaluate(dd.from_pandas(df, npartitions=3), nan_policy="omit", **KW)
        bad = frame()
        with pytest.raises(ValueError) as e:
            quiet(fdask.evaluate, dd.from_pandas(bad, npartitions=3), progress=False, **KW)
        assert "'m1'" in str(e.value) or "'m2'" in str(e.value), str(e.value)


def _cli(*args):
    return cli_runner.run_cli(args)


def test_cli_report_csv_omit_per_model_json(tmp_path):
    df = frame()
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "r.json"
    p = _cli("report", str(path), "--label", "y", "--scores", "m1", "m2", "m3", "--subgroups",
             "a", "b", "c", "--intersections", "2", "--min-subgroup-size", str(MIN),
             "--nan-policy", "omit", "--out", str(out), "-q")
    assert p.returncode == 0, p.stderr
    d = json.loads(out.read_text())
    for m in KW["scores"]:
        ref, overall = reference(df, m, KW["subgroups"])
        rec = next(x for x in d["models"] if x["name"] == m)
        assert [r["subgroup"] for r in rec["subgroups"]] == list(ref)
        for r in rec["subgroups"]:
            for metric in METRICS:
                exp = ref[r["subgroup"]][metric]
                assert (r[metric] is None) if exp is None else \
                    abs(r[metric] - float(exp)) <= 1e-12
        assert abs(rec["overall_auc"] - float(overall)) <= 1e-12
    # streamed (forced by a small --max-memory): omit refused by name, no silent result
    p = _cli("report", str(path), "--label", "y", "--scores", "m1", "m2", "m3", "--subgroups",
             "a", "b", "c", "--intersections", "2", "--min-subgroup-size", str(MIN),
             "--nan-policy", "omit", "--max-memory", "1M", "--out", str(tmp_path / "s.json"),
             "-q")
    assert p.returncode != 0
    assert "--nan-policy omit" in p.stderr, p.stderr
    assert not (tmp_path / "s.json").exists()


def test_report_interval_figure_marks_an_absent_combination_absent():
    """Same data as above with ci="delong": the report's interval figure marks m1's absent
    "race=r1 & sex=f" "absent" (one per metric panel, in m1's row offset), and its caption
    says what that means. (Found by review: it was the "n/a" that plot_intervals documents
    as an undefined value, under "Point estimates and intervals, all 8 subgroups.")"""
    pytest.importorskip("matplotlib")
    from fastbias.report import BiasReport
    df = _feature_frame()
    res = quiet(fastbias.evaluate, df, label="y", scores=["m1", "m2"], subgroups=[],
                sensitive_features=["race", "sex"], min_subgroup_size=MIN, nan_policy="omit",
                ci="delong")
    rep = quiet(BiasReport.from_result, df, res)
    figs = rep.figures()
    cap = dict((k, c) for k, c, _ in figs)["intervals"]
    fig = dict((k, f) for k, _, f in figs)["intervals"]
    rows = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    i = rows.index("race=r1 & sex=f")
    # no value m1 or m2 has is undefined here, so every n/a is the absent pair
    assert not res.table[METRICS].isna().to_numpy().any()
    assert not [t for ax in fig.axes for t in ax.texts if t.get_text() == "n/a"]
    marks = [t.get_position()[1] for ax in fig.axes for t in ax.texts
             if t.get_text() == "absent"]
    assert len(marks) == len(fig.axes) and all(abs(y - i) < 0.5 for y in marks)
    absent_said = ("absent" in cap) or ("not a subgroup" in cap) or ("not kept" in cap)
    assert absent_said, cap


def test_csv_streamed_sensitive_features_exact(tmp_path):
    df = _feature_frame()
    df["m1"] = df["m1"].fillna(0.5)
    path = tmp_path / "f.csv"
    df.to_csv(path, index=False)
    res = quiet(fastbias.evaluate_csv, str(path), label="y", scores=["m1", "m2"],
                sensitive_features=["race", "sex"], min_subgroup_size=MIN)
    ids = {"race=r1": df.race == "r1", "race=r2": df.race == "r2",
           "sex=f": df.sex == "f", "sex=m": df.sex == "m"}
    b = df[["y", "m1", "m2"]].assign(**{k: v.to_numpy() for k, v in ids.items()})
    for m in ["m1", "m2"]:
        ref, overall = reference(b, m, list(ids), order=1)
        for r in ["r1", "r2"]:
            for s in ["f", "m"]:
                mask = ((df.race == f"{r}") & (df.sex == s)).to_numpy()
                y = df.y.to_numpy(bool)
                if (mask & y).sum() >= MIN and (mask & ~y).sum() >= MIN:
                    ref[f"race={r} & sex={s}"] = _row(y, df[m].to_numpy(float), mask)
        part = res.table[res.table.model == m]
        assert sorted(part.subgroup) == sorted(ref)
        check_table(part.set_index("subgroup").loc[list(ref)].reset_index(), m, ref)
        assert abs(res.overall_auc[m] - float(overall)) <= 1e-12
