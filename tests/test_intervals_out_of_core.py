"""Intervals out of core: ``ci="delong"`` and ``ci="bernstein"`` of evaluate_csv,
evaluate_parquet, fastbias.dask.evaluate and the CLI's streamed path.

DeLong's standard errors are checked against DeLong's variance straight from the pair
matrix (the structural components, ``tests/test_intervals.py``'s reference, rows repeated
by their integer weights) and against the in-memory ``evaluate``; Bernstein's against the
in-memory ones, which ``tests/test_intervals.py`` checks against their formula.
"""
import warnings

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.streaming import evaluate_csv
from tests.test_intervals import cells, delong_variance_reference

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
SAMPLES = {"subgroup_auc": (("subgroup", 1), ("subgroup", 0)),
           "bpsn_auc": (("background", 1), ("subgroup", 0)),
           "bnsp_auc": (("subgroup", 1), ("background", 0)),
           "negative_aeg": (("background", 0), ("subgroup", 0)),
           "positive_aeg": (("background", 1), ("subgroup", 1))}


def frame(seed, n=600, weighted=False, missing=False):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.4
    s = np.round(rng.random(n) + 0.3 * y, 1)  # heavy ties: some buckets hold one score
    df = pd.DataFrame({"y": y, "s": s,
                       "a": rng.random(n) < 0.3, "b": rng.random(n) < 0.08,
                       "c": (rng.random(n) < 0.5).astype(float)})
    if missing:
        df.loc[rng.random(n) < 0.25, "c"] = np.nan
    if weighted:
        df["w"] = rng.integers(1, 4, n).astype(float)
    return df


def out_of_core(df, engine, tmp_path, **kwargs):
    if engine == "csv":
        path = tmp_path / "d.csv"
        df.to_csv(path, index=False)
        return evaluate_csv(path, bucket_rows=150, **kwargs)
    if engine == "parquet":
        pytest.importorskip("pyarrow")
        from fastbias.streaming import evaluate_parquet

        path = tmp_path / "d.parquet"
        df.to_parquet(path)
        return evaluate_parquet(path, bucket_rows=150, **kwargs)
    dd = pytest.importorskip("dask.dataframe")
    import dask

    import fastbias.dask

    with dask.config.set({"scheduler": "synchronous"}):
        return fastbias.dask.evaluate(dd.from_pandas(df, npartitions=3), npartitions=4,
                                      **kwargs)


def reference_se(df, member, metric, weighted):
    """DeLong's standard error from the pair matrix, rows repeated by their weights."""
    y = df["y"].to_numpy(bool)
    rep = df["w"].to_numpy(int) if weighted else np.ones(len(df), int)
    s = np.repeat(df["s"].to_numpy(float), rep)
    cell = {k: np.repeat(v, rep) for k, v in cells(y, member).items()}
    x_cell, y_cell = SAMPLES[metric]
    return np.sqrt(delong_variance_reference(s[cell[x_cell]], s[cell[y_cell]]))


@pytest.mark.parametrize("engine", ["csv", "parquet", "dask"])
@pytest.mark.parametrize("weighted", [False, True])
def test_out_of_core_delong_intervals_equal_the_pair_matrix_and_memory(engine, weighted,
                                                                       tmp_path):
    df = frame(3, weighted=weighted)
    kwargs = dict(label="y", scores="s", subgroups=["a", "b", "c"], ci="delong",
                  sample_weight="w" if weighted else None)
    got = out_of_core(df, engine, tmp_path, **kwargs)
    memory = fastbias.evaluate(df, **kwargs)
    assert list(got.table.columns) == list(memory.table.columns)
    assert got.settings["ci"] == "delong"
    table = got.for_model()
    for name in ["a", "b", "c"]:
        member = df[name].to_numpy(bool)
        for metric in METRICS:
            want = reference_se(df, member, metric, weighted)
            assert table.loc[name, f"{metric}_se"] == pytest.approx(want, rel=1e-9, abs=0), \
                (name, metric)
    columns = [c for c in memory.table if c.endswith(("_se", "_low", "_high"))]
    np.testing.assert_allclose(got.table[columns].to_numpy(float),
                               memory.table[columns].to_numpy(float), rtol=1e-12, atol=0)
    y = df["y"].to_numpy(bool)
    rep = df["w"].to_numpy(int) if weighted else np.ones(len(df), int)
    s, yy = np.repeat(df["s"].to_numpy(float), rep), np.repeat(y, rep)
    want = np.sqrt(delong_variance_reference(s[yy], s[~yy]))
    attrs, in_memory = got.model_attrs["s"], memory.model_attrs["s"]
    assert attrs["overall_auc_se"] == pytest.approx(want, rel=1e-9, abs=0)
    for key in ("overall_auc_low", "overall_auc_high", "overall_auc_se"):
        assert attrs[key] == pytest.approx(in_memory[key], rel=1e-12, abs=0), key


@pytest.mark.parametrize("engine", ["csv", "dask"])
def test_out_of_core_bernstein_intervals_equal_memory(engine, tmp_path):
    df = frame(4, missing=True)
    for policy in ("background", "exclude"):
        kwargs = dict(label="y", scores="s", subgroups=["a", "b", "c"], ci="bernstein",
                      missing_subgroup=policy)
        got = out_of_core(df, engine, tmp_path, **kwargs)
        memory = fastbias.evaluate(df, **kwargs)
        assert list(got.table.columns) == list(memory.table.columns)
        pd.testing.assert_frame_equal(got.table, memory.table)
        for key in ("overall_auc_low", "overall_auc_high"):
            assert got.model_attrs["s"][key] == memory.model_attrs["s"][key], (policy, key)


def test_out_of_core_delong_under_exclude(tmp_path):
    """Each subgroup's interval is of its annotated rows, as in memory; the overall AUC's is
    of all the rows: from a subgroup compared with every row, or where none is from the
    chunks' sums of all their rows (it had been NaN there: found by review)."""
    df = frame(5, missing=True)
    kwargs = dict(label="y", scores="s", ci="delong", missing_subgroup="exclude")
    got = out_of_core(df, "csv", tmp_path, subgroups=["a", "c"], **kwargs)
    memory = fastbias.evaluate(df, subgroups=["a", "c"], **kwargs)
    columns = [c for c in memory.table if c.endswith(("_se", "_low", "_high"))]
    np.testing.assert_allclose(got.table[columns].to_numpy(float),
                               memory.table[columns].to_numpy(float), rtol=1e-12, atol=0)
    annotated = df[df["c"].notna()]
    member = annotated["c"].to_numpy(float) >= 0.5
    for metric in METRICS:
        assert got.for_model().loc["c", f"{metric}_se"] == pytest.approx(
            reference_se(annotated, member, metric, False), rel=1e-9, abs=0)
    assert got.model_attrs["s"]["overall_auc_se"] == pytest.approx(
        memory.model_attrs["s"]["overall_auc_se"], rel=1e-12, abs=0)
    y = df["y"].to_numpy(bool)
    s = df["s"].to_numpy(float)
    want = np.sqrt(delong_variance_reference(s[y], s[~y]))
    for engine in ("csv", "parquet", "dask"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            alone = out_of_core(df, engine, tmp_path, subgroups=["c"], **kwargs)
        assert not [w for w in caught if "overall AUC" in str(w.message)], engine
        attrs = alone.model_attrs["s"]
        assert attrs["overall_auc_se"] == pytest.approx(want, rel=1e-9, abs=0), engine
        for key in ("overall_auc_low", "overall_auc_high", "overall_auc_se"):
            assert attrs[key] == pytest.approx(memory.model_attrs["s"][key], rel=1e-12,
                                               abs=0), (engine, key)
    # buckets of 40 rows: a score held by more than 20 rows is a tied chunk, counted
    # without its rows (its sums of all rows from the class totals)
    path = tmp_path / "tied.csv"
    df.to_csv(path, index=False)
    tied = evaluate_csv(path, bucket_rows=40, subgroups=["c"], **kwargs)
    assert tied.model_attrs["s"]["overall_auc_se"] == pytest.approx(want, rel=1e-9, abs=0)
    # the subgroup's own interval is still made
    assert alone.for_model().loc["c", "subgroup_auc_se"] == pytest.approx(
        got.for_model().loc["c", "subgroup_auc_se"], rel=1e-12, abs=0)


def test_out_of_core_intervals_and_tests_together_equal_memory(tmp_path):
    df = frame(6, n=900)
    kwargs = dict(label="y", scores="s", subgroups=["a", "c"], ci="delong",
                  significance="holm")
    got = out_of_core(df, "csv", tmp_path, **kwargs)
    memory = fastbias.evaluate(df, **kwargs)
    assert list(got.table.columns) == list(memory.table.columns)
    columns = [c for c in memory.table if c.endswith(("_se", "_low", "_high"))]
    np.testing.assert_allclose(got.table[columns].to_numpy(float),
                               memory.table[columns].to_numpy(float), rtol=1e-12, atol=0)
    # (no test here has a cell under 30 rows: DeLong's or the moments' p-values, as in memory)
    pvalues = [c for c in memory.table if c.endswith("_pvalue")]
    np.testing.assert_allclose(got.table[pvalues].to_numpy(float),
                               memory.table[pvalues].to_numpy(float), rtol=1e-9, atol=0)


def test_out_of_core_refuses_what_needs_the_rows(tmp_path):
    df = frame(7, weighted=True)
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    kwargs = dict(label="y", scores="s", subgroups=["a"])
    with pytest.raises(ValueError, match="ci='bootstrap' needs the rows in memory"):
        evaluate_csv(path, ci="bootstrap", **kwargs)
    with pytest.raises(ValueError, match="Bernstein interval needs unweighted rows"):
        evaluate_csv(path, ci="bernstein", sample_weight="w", **kwargs)
    with pytest.raises(ValueError, match="ci must be None"):
        evaluate_csv(path, ci="wald", **kwargs)
    df["w"] = df["w"] * 1e70
    df.to_csv(path, index=False)
    with pytest.raises(ValueError, match="too far from 1 for DeLong intervals"):
        evaluate_csv(path, ci="delong", sample_weight="w", **kwargs)


@pytest.mark.jit_heavy  # (the CLI streaming: its kernels run compiled; too slow as Python)
def test_cli_streams_delong_intervals(tmp_path, capsys, monkeypatch):
    from tests.test_bounded_memory import _tied_frame, memory_and_streamed_reports

    df = _tied_frame(30_000, seed=3)
    df["t"] = np.random.default_rng(9).random(len(df))
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    memory, streamed = memory_and_streamed_reports(path, tmp_path, capsys, monkeypatch,
                                                   "--ci", "delong")
    assert streamed["settings"]["ci"] == "delong"
    found = 0
    assert len(memory["models"]) == len(streamed["models"]) == 2

    def same(a, b, key):
        nonlocal found
        if isinstance(a, dict):
            assert a.keys() == b.keys(), key
            for k in a:
                same(a[k], b[k], k)
        elif isinstance(a, list):
            assert len(a) == len(b), key
            for x, z in zip(a, b):
                same(x, z, key)
        elif isinstance(a, float) and key.endswith(("_se", "_low", "_high")):
            found += 1
            assert b == pytest.approx(a, rel=1e-12, abs=0), key
        else:
            assert a == b, key

    same(memory["models"], streamed["models"], "models")
    assert found >= 2 * 3 * 15
