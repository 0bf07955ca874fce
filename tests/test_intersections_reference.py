"""Intersections and sensitive features against an independent brute force, on every entry
point: an independent review's tests (2026-11-27).

Every expected number comes from membership masks and universes built here by hand from
docs/intersections.md and docs/sensitive_features.md, and exact pair counts (ties 1/2).
Found by review (each fails on the code before its fix): a CSV column that is both an
identity column and a sensitive feature was refused (read as text for the feature); the
CLI named such a column's groups sex=False/True from Parquet or JSON lines; True and 1 in
one feature column made one group named after whichever came first; Dask crashed on a
feature of tuples.
"""
from __future__ import annotations

import itertools
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import fastbias

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
CELLS = ["subgroup_negatives", "subgroup_positives", "background_negatives",
         "background_positives"]


def _pf(sa, wa, sb, wb):
    """P(s_a > s_b) + 1/2 P(tie) over weighted pairs, exactly; None if no weight."""
    ta = sum((Fraction(float(x)) for x in wa), Fraction(0))
    tb = sum((Fraction(float(x)) for x in wb), Fraction(0))
    if len(sa) == 0 or len(sb) == 0 or ta == 0 or tb == 0:
        return None
    num = Fraction(0)
    for x, u in zip(sa, wa):
        for z, v in zip(sb, wb):
            if x > z:
                num += Fraction(float(u)) * Fraction(float(v))
            elif x == z:
                num += Fraction(float(u)) * Fraction(float(v)) / 2
    return num / (ta * tb)


def ref_row(y, s, member, universe, w=None):
    """(cells, metrics) of one subgroup: member and universe are boolean masks."""
    y = np.asarray(y, bool)
    s = np.asarray(s, float)
    w = np.ones(len(y)) if w is None else np.asarray(w, float)
    m = member & universe
    b = ~member & universe
    gn, gp, bn, bp = m & ~y, m & y, b & ~y, b & y
    cells = [int(gn.sum()), int(gp.sum()), int(bn.sum()), int(bp.sum())]

    def pf(a, c):
        return _pf(s[a], w[a], s[c], w[c])

    def val(f, aeg=False):
        if f is None:
            return np.nan
        return float(Fraction(1, 2) - f) if aeg else float(f)

    metrics = {"subgroup_auc": val(pf(gp, gn)), "bpsn_auc": val(pf(bp, gn)),
               "bnsp_auc": val(pf(gp, bn)), "negative_aeg": val(pf(bn, gn), True),
               "positive_aeg": val(pf(bp, gp), True)}
    return cells, metrics


def check(table, expected):
    """expected: {name: (cells, metrics)} in order; table rows must be exactly these."""
    assert list(table.index) == list(expected), (list(table.index), list(expected))
    for name, (cells, metrics) in expected.items():
        assert table.loc[name, CELLS].astype(int).tolist() == cells, (name, cells)
        for metric, value in metrics.items():
            got = float(table.loc[name, metric])
            if np.isnan(value):
                assert np.isnan(got), (name, metric, got)
            else:
                assert got == pytest.approx(value, rel=1e-12, abs=1e-14), (name, metric)


def ref_intersections(y, s, cols: pd.DataFrame, order, min_size, thr=0.5, w=None,
                      exclude=False):
    """Subgroups then pairs then triples, as docs/intersections.md describes."""
    y = np.asarray(y, bool)
    names = list(cols.columns)

    def mem(c):
        v = cols[c]
        if v.dtype == bool or str(v.dtype) == "boolean":
            return v.fillna(False).to_numpy(bool)
        f = v.astype("float64").to_numpy()
        return np.nan_to_num(f, nan=-np.inf) >= thr
    def annotated(c):
        return ~cols[c].isna().to_numpy()
    out = {}
    for c in names:
        uni = annotated(c) if exclude else np.ones(len(y), bool)
        out[c] = ref_row(y, s, mem(c), uni, w)
    for r in range(2, (order or 1) + 1):
        for combo in itertools.combinations(names, r):
            member = np.logical_and.reduce([mem(c) for c in combo])
            if (member & ~y).sum() < min_size or (member & y).sum() < min_size:
                continue
            uni = (np.logical_and.reduce([annotated(c) for c in combo]) if exclude
                   else np.ones(len(y), bool))
            out[" & ".join(combo)] = ref_row(y, s, member, uni, w)
    return out


def ref_features(y, s, df: pd.DataFrame, features, min_size, w=None, exclude=False):
    """The sensitive features' groups as docs/sensitive_features.md describes (plain
    sortable values, no Categorical)."""
    y = np.asarray(y, bool)
    out = {}
    values = {}
    for f in features:
        col = df[f]
        present = col.notna().to_numpy()
        values[f] = sorted(col.dropna().unique())
        for v in values[f]:
            member = present & (col == v).to_numpy()
            out[f"{f}={v}"] = ref_row(y, s, member, present if exclude else np.ones(len(y), bool), w)
    if len(features) > 1:
        present = df[list(features)].notna().all(axis=1).to_numpy()
        for combo in itertools.product(*(values[f] for f in features)):
            member = present.copy()
            for f, v in zip(features, combo):
                member &= (df[f] == v).to_numpy()
            if (member & ~y).sum() < min_size or (member & y).sum() < min_size:
                continue
            out[" & ".join(f"{f}={v}" for f, v in zip(features, combo))] = ref_row(
                y, s, member, present if exclude else np.ones(len(y), bool), w)
    return out


# ---------------------------------------------------------------------------------------------
# Pinned behaviour (passes): every entry point equals the brute force
# ---------------------------------------------------------------------------------------------

def _mixed_frame(seed=2, n=160):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.45
    s = rng.integers(0, 5, n) / 4  # heavy ties
    w = rng.integers(0, 3, n).astype(float)  # zero weights too
    df = pd.DataFrame({
        "y": y, "s": s, "w": w,
        "a": rng.choice([0.0, 0.5, 1.0, np.nan], n, p=[.4, .2, .3, .1]),  # at the threshold
        "b": rng.choice([0, 1], n),                                        # int
        "c": rng.random(n) < 0.4,                                          # bool
        "race": rng.choice(["x", "y", "z", None], n, p=[.4, .3, .2, .1]),
        "g": rng.choice(["f", "m", None], n, p=[.5, .4, .1])})
    return y, s, w, df


def _every_path(tmp_path, df, **kw):
    pytest.importorskip("pyarrow")
    dd = pytest.importorskip("dask.dataframe")
    dask = pytest.importorskip("dask")
    import fastbias.dask as on_dask
    df.to_parquet(tmp_path / "d.parquet")
    df.to_csv(tmp_path / "d.csv", index=False)
    with warnings.catch_warnings(), dask.config.set({"scheduler": "synchronous",
                                                     "dataframe.convert-string": False}):
        warnings.simplefilter("ignore")
        return {
            "evaluate": fastbias.evaluate(df, **kw).for_model(),
            "parquet": fastbias.evaluate_parquet(tmp_path / "d.parquet", bucket_rows=50,
                                                 **kw).for_model(),
            "csv": fastbias.evaluate_csv(tmp_path / "d.csv", bucket_rows=50, batch_rows=40,
                                         **kw).for_model(),
            "dask": on_dask.evaluate(dd.from_pandas(df, npartitions=3), **kw).for_model()}


@pytest.mark.parametrize("order,min_size", [(2, 1), (3, 4)])
@pytest.mark.parametrize("policy", ["background", "exclude"])
@pytest.mark.parametrize("weighted", [False, True])
def test_every_entry_point_equals_the_brute_force(tmp_path, order, min_size, policy, weighted):
    y, s, w, df = _mixed_frame()
    kw = dict(label="y", scores="s", subgroups=["a", "b", "c"], intersections=order,
              min_subgroup_size=min_size, missing_subgroup=policy,
              sample_weight="w" if weighted else None, sensitive_features=["race", "g"])
    ww = w if weighted else None
    expected = ref_intersections(y, s, df[["a", "b", "c"]], order, min_size, w=ww,
                                 exclude=policy == "exclude")
    expected.update(ref_features(y, s, df, ["race", "g"], min_size, w=ww,
                                 exclude=policy == "exclude"))
    assert any(" & " in k for k in expected)
    for name, table in _every_path(tmp_path, df, **kw).items():
        check(table, expected)


def test_min_subgroup_size_counts_rows_not_weight_on_every_path(tmp_path):
    rng = np.random.default_rng(5)
    n = 100
    y = rng.random(n) < 0.4
    s = rng.integers(0, 5, n) / 4
    a = np.zeros(n)
    a[:30] = 1
    y[:30] = False
    y[:3] = True   # a & b: exactly 3 positives, all of weight 0
    w = np.ones(n)
    w[:3] = 0.0
    df = pd.DataFrame({"y": y, "s": s, "w": w, "a": a, "b": a.copy(),
                       "c": (rng.random(n) < .5).astype(float)})
    for min_size in (3, 4):
        kw = dict(label="y", scores="s", subgroups=["a", "b", "c"], intersections=2,
                  min_subgroup_size=min_size, sample_weight="w")
        expected = ref_intersections(y, s, df[["a", "b", "c"]], 2, min_size, w=w)
        assert ("a & b" in expected) == (min_size == 3)
        for table in _every_path(tmp_path, df, **kw).values():
            check(table, expected)


def test_bias_metrics_and_evaluator_equal_the_brute_force():
    rng = np.random.default_rng(10)
    n = 120
    y = rng.random(n) < 0.4
    s = rng.integers(0, 5, n) / 4
    w = rng.choice([0.0, 0.5, 1.0, 3.0], n)
    cols = pd.DataFrame({"a": rng.choice([0.0, 0.3, 0.5, 1.0, np.nan], n),
                         "b": rng.choice([0.0, 0.5, 1.0, np.nan], n),
                         "c": rng.choice([0.0, 0.7, 1.0], n)})
    expected = ref_intersections(y, s, cols, 3, 2, thr=0.5, w=w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(fastbias.bias_metrics(y, s, cols, sample_weight=w, subgroup_threshold=0.5,
                                    intersections=3, min_subgroup_size=2), expected)
        ev = fastbias.BiasEvaluator(y, cols, sample_weight=w, subgroup_threshold=0.5,
                                    intersections=3, min_subgroup_size=2)
        check(ev.metrics(s), expected)


def test_final_metric_counts_features_and_leaves_out_intersections_by_attrs_not_names():
    """A subgroup column named 'p & q' and a feature value 'y & z' are not intersections."""
    rng = np.random.default_rng(7)
    n = 300
    y = rng.random(n) < 0.4
    df = pd.DataFrame({"y": y, "s": np.round(y * 0.3 + rng.random(n), 2),
                       "p & q": rng.random(n) < .3, "a": rng.random(n) < .4,
                       "race": rng.choice(["x", "y & z"], n)})
    res = fastbias.evaluate(df, label="y", scores="s", subgroups=["p & q", "a"],
                            intersections=2, sensitive_features=["race"])
    table = res.for_model()
    assert list(table.index) == ["p & q", "a", "p & q & a", "race=x", "race=y & z"]
    keep = table.drop(index=["p & q & a"])
    from sklearn.metrics import roc_auc_score
    overall = roc_auc_score(y, df["s"])

    def pm(v):
        return float(np.mean(np.asarray(v, float) ** -5) ** (-1 / 5))
    want = 0.25 * overall + 0.25 * sum(pm(keep[m]) for m in
                                       ["subgroup_auc", "bpsn_auc", "bnsp_auc"])
    assert float(res.final_metric().iloc[0]) == pytest.approx(want, rel=1e-12)
    assert fastbias.final_metric(table) == pytest.approx(want, rel=1e-12)


def test_feature_values_are_exact_sorted_by_kind_and_named_apart():
    """Numbers by value, then text by code point; 0.1 + 0.2 and 0.3 are two groups, and so
    are 2**53 + 1 (int) and 2**53 (float); names that would read alike are refused."""
    y = np.array([0, 1] * 6, bool)
    s = np.linspace(0, 1, 12)

    def names(values):
        df = pd.DataFrame({"y": y, "s": s, "r": pd.Series(values * (12 // len(values)),
                                                          dtype=object)})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = fastbias.evaluate(df, label="y", scores="s", sensitive_features=["r"])
        return list(t.for_model().index)
    assert names([2, "b", 1.5, "a", 10, "B"]) == ["r=1.5", "r=2", "r=10", "r=B", "r=a", "r=b"]
    assert names([0.1 + 0.2, 0.3]) == ["r=0.3", "r=0.30000000000000004"]
    assert names([2 ** 53 + 1, float(2 ** 53)]) == ["r=9007199254740992", "r=9007199254740993"]
    for alike in ([1.0, "1"], [True, "True"]):
        with pytest.raises(ValueError, match="'r' holds values of different types"):
            names(alike)


def test_names_that_collide_through_intersections_or_features_are_refused_everywhere(tmp_path):
    rng = np.random.default_rng(4)
    n = 200
    df = pd.DataFrame({"y": rng.random(n) < .4, "s": rng.random(n),
                       "r": rng.choice(["a", "a & g=f"], n), "g": rng.choice(["f", "m"], n),
                       "x": rng.random(n) < .5, "y & z": rng.random(n) < .5,
                       "x & y": rng.random(n) < .5, "z": rng.random(n) < .5})
    with pytest.raises(ValueError, match="'r=a & g=f' appears twice"):
        _every_path(tmp_path, df, label="y", scores="s", sensitive_features=["r", "g"])
    with pytest.raises(ValueError, match="'x & y & z' appears twice"):
        _every_path(tmp_path, df, label="y", scores="s", subgroups=["x", "y & z", "x & y", "z"],
                    intersections=2)


# ---------------------------------------------------------------------------------------------
# Found by review
# ---------------------------------------------------------------------------------------------

def _sex_frame(n=400):
    rng = np.random.default_rng(2)
    return pd.DataFrame({"y": rng.random(n) < .4, "s": rng.random(n), "a": rng.random(n) < .4,
                         "b": rng.random(n) < .5, "sex": rng.choice([0, 1], n)})


def test_evaluate_csv_takes_a_column_as_subgroup_and_sensitive_feature_as_evaluate_does(tmp_path):
    """evaluate / evaluate_parquet / dask give 'a', 'sex', 'a & sex', 'sex=0', 'sex=1';
    evaluate_csv raised TypeError "subgroup column 'sex' must be boolean or numeric, got dtype
    str ... pass it as sensitive_features=['sex']" (it already is)."""
    df = _sex_frame()
    df.to_csv(tmp_path / "d.csv", index=False)
    kw = dict(label="y", scores="s", subgroups=["a", "sex"], sensitive_features=["sex"],
              intersections=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        memory = fastbias.evaluate(df, **kw).for_model()
        got = fastbias.evaluate_csv(tmp_path / "d.csv", **kw).for_model()
    assert list(memory.index) == ["a", "sex", "a & sex", "sex=0", "sex=1"]
    pd.testing.assert_frame_equal(got[CELLS + METRICS], memory[CELLS + METRICS])


@pytest.mark.parametrize("choose", [["--subgroups-all-boolean"], ["--subgroups", "a", "b", "sex"]])
def test_cli_with_a_01_sensitive_feature_among_the_boolean_columns(tmp_path, choose, capsys):
    """`fastbias report d.csv ... --subgroups-all-boolean --sensitive-features sex` (sex holds
    0/1) exited 2: "subgroup column 'sex' must be boolean or numeric, got dtype str ... pass
    it as sensitive_features=['sex']". The library evaluates the same arguments."""
    from fastbias.cli import main
    df = _sex_frame()
    df.to_csv(tmp_path / "d.csv", index=False)
    rc = main(["report", str(tmp_path / "d.csv"), "--label", "y", "--scores", "s", *choose,
               "--intersections", "2", "--sensitive-features", "sex",
               "--out", str(tmp_path / "r.csv"), "--progress", "never"])
    assert rc == 0, capsys.readouterr().err
    names = list(pd.read_csv(tmp_path / "r.csv")["subgroup"])
    assert names[-2:] == ["sex=0", "sex=1"]
    assert "a & b" in names


@pytest.mark.parametrize("order", [[True, 1, "x", "x"], [1, True, "x", "x"]])
@pytest.mark.parametrize("entry", ["evaluate", "bias_metrics"])
def test_a_feature_mixing_true_and_1_is_not_one_group_named_by_row_order(order, entry):
    """An object column holding True and 1 (and text): both entry points merged the rows of
    True and of 1 into one group, named 'r=True' or 'r=1' after whichever comes first in the
    column (the same rows in another order give another table). bias_metrics refuses a column
    of booleans and numbers ("holds both booleans and numbers"); docs: groups per value, a
    mixing column sorted by kind, values that read alike refused. Expected: a ValueError
    naming 'r', or two groups r=1 and r=True."""
    y = np.array([0, 1] * 6, bool)
    s = np.linspace(0, 1, 12)
    col = pd.Series(order * 3, dtype=object)
    df = pd.DataFrame({"y": y, "s": s, "r": col})
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if entry == "evaluate":
                table = fastbias.evaluate(df, label="y", scores="s",
                                          sensitive_features=["r"]).for_model()
            else:
                table = fastbias.bias_metrics(y, s, df[["r"]])
    except (ValueError, TypeError) as exc:
        assert "'r'" in str(exc)
        return
    assert {"r=1", "r=True"} <= set(table.index), list(zip(table.index, table.subgroup_size))


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
@pytest.mark.parametrize("choose", [["--subgroups-all-boolean"], ["--subgroups", "a", "b", "sex"]])
def test_cli_names_a_01_feature_by_its_values_when_it_is_also_a_subgroup(tmp_path, fmt, choose):
    """Parquet / JSON lines, `--sensitive-features sex` with sex 0/1 also among the boolean
    subgroups: the groups were named 'sex=False', 'sex=True' (the column read as flags), where
    the same CLI without the subgroup, and fastbias.evaluate with it, name them 'sex=0',
    'sex=1'."""
    pytest.importorskip("pyarrow")
    from fastbias.cli import main
    df = _sex_frame()
    path = tmp_path / f"d.{fmt}"
    if fmt == "parquet":
        df.to_parquet(path)
    else:
        df.to_json(path, orient="records", lines=True)
    assert main(["report", str(path), "--label", "y", "--scores", "s", *choose,
                 "--sensitive-features", "sex", "--out", str(tmp_path / "r.csv"),
                 "--progress", "never", "-q"]) == 0
    names = list(pd.read_csv(tmp_path / "r.csv")["subgroup"])
    library = fastbias.evaluate(df, label="y", scores="s", subgroups=["a", "b", "sex"],
                                sensitive_features=["sex"]).for_model()
    assert list(library.index)[-2:] == ["sex=0", "sex=1"]
    assert names[-2:] == ["sex=0", "sex=1"], names


def test_dask_feature_of_tuples_is_evaluated_or_refused_by_name():
    """fastbias.evaluate groups an object column of tuples ('t=(1, 2)', 't=(3,)');
    fastbias.dask.evaluate on the same rows raised a bare IndexError('tuple index out of
    range') from pd.Index(list_of_tuples) in prepare/encoded.py: neither the table nor an
    error naming the column."""
    dd = pytest.importorskip("dask.dataframe")
    dask = pytest.importorskip("dask")
    import fastbias.dask as on_dask
    rng = np.random.default_rng(4)
    n = 60
    df = pd.DataFrame({"y": rng.random(n) < .4, "s": rng.random(n),
                       "t": pd.Series([(1, 2), (3,)] * (n // 2), dtype=object)})
    memory = fastbias.evaluate(df, label="y", scores="s", sensitive_features=["t"]).for_model()
    assert list(memory.index) == ["t=(1, 2)", "t=(3,)"]
    try:
        with dask.config.set({"scheduler": "synchronous", "dataframe.convert-string": False}):
            got = on_dask.evaluate(dd.from_pandas(df, npartitions=2), label="y", scores="s",
                                   sensitive_features=["t"]).for_model()
    except (ValueError, TypeError) as exc:
        assert "'t'" in str(exc)
        return
    pd.testing.assert_frame_equal(got[CELLS + METRICS], memory[CELLS + METRICS])


def test_evaluate_csv_a_true_false_column_as_subgroup_and_feature_under_exclude(tmp_path):
    """The same refusal for a CSV column of True/False/empty ('smoker') given as a subgroup and
    as a sensitive feature (evaluate_parquet gives 'a', 'smoker', 'a & smoker',
    'smoker=False', 'smoker=True' and equals fastbias.evaluate)."""
    rng = np.random.default_rng(2)
    n = 400
    df = pd.DataFrame({"y": rng.random(n) < .4, "s": rng.random(n), "a": rng.random(n) < .4,
                       "smoker": pd.Series(rng.choice([True, False, None], n), dtype=object)})
    df.to_csv(tmp_path / "d.csv", index=False)
    kw = dict(label="y", scores="s", subgroups=["a", "smoker"], sensitive_features=["smoker"],
              intersections=2, missing_subgroup="exclude")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        memory = fastbias.evaluate(pd.read_csv(tmp_path / "d.csv"), **kw).for_model()
        got = fastbias.evaluate_csv(tmp_path / "d.csv", **kw).for_model()
    assert list(memory.index) == ["a", "smoker", "a & smoker", "smoker=False", "smoker=True"]
    pd.testing.assert_frame_equal(got[CELLS + METRICS], memory[CELLS + METRICS])
