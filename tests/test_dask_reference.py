"""``fastbias.dask.evaluate`` against the in-memory ``fastbias.evaluate`` of the same rows
(``ddf.compute()``) or against a clear error: an independent review's tests (2026-11-27) of
inputs whose partitions differ from one another, odd partitionings and bad arguments.

Dask's synchronous scheduler (no cluster): the partitions are still encoded, range-partitioned
and counted one by one, which is what these inputs probe. Found by review (each fails on the
code before its fix): a label or identity column read as booleans in one file or partition
and as numbers in another gave a number where memory refuses the column; a bad
``random_state`` crashed with errors that named no argument.
"""
import warnings

import dask
import numpy as np
import pandas as pd
import pytest

import fastbias
import fastbias.streaming
from fastbias import UndefinedMetricWarning

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("distributed")
fdask = pytest.importorskip("fastbias.dask")

pytestmark = pytest.mark.jit_heavy  # many small end-to-end runs: compiled runs only

TOL = 1e-12


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        warnings.simplefilter("ignore", UserWarning)
        return function(*args, **kwargs)


def assert_same(result, reference, exact=True):
    tol = {} if exact else {"rtol": TOL, "atol": TOL}
    pd.testing.assert_frame_equal(result.table, reference.table, check_exact=exact, **tol)
    pd.testing.assert_series_equal(result.overall_auc, reference.overall_auc,
                                   check_exact=exact, **tol)
    if reference.thresholds is not None:
        pd.testing.assert_frame_equal(result.thresholds, reference.thresholds,
                                      check_exact=exact, **tol)


def frame(n=300, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "y": rng.random(n) < 0.4,
        "s": np.round(rng.random(n), 2),
        "a": rng.random(n) < 0.3,
        "b": np.where(rng.random(n) < 0.2, np.nan, rng.random(n) < 0.4),
        "w": rng.integers(0, 5, n).astype(float),
    })


KW = dict(label="y", scores="s", subgroups=["a", "b"])


def both(ddf, dask_only=None, **kwargs):
    reference = quiet(fastbias.evaluate, ddf.compute(), **kwargs)
    result = quiet(fdask.evaluate, ddf, **kwargs, **(dask_only or {}))
    return result, reference


# ----------------------------------------------------------------------- found by review


def write_two_files(tmp_path, first, second):
    first.to_parquet(tmp_path / "a.parquet", index=False)
    second.to_parquet(tmp_path / "b.parquet", index=False)
    return str(tmp_path)


def test_parquet_paths_subgroup_boolean_in_one_file_numbers_in_another_is_refused(
        tmp_path):
    """Subgroup 'b' is boolean in a.parquet and float (with NaN) in b.parquet: a boolean True
    is a member whatever the threshold, a number only at or above it, so the column means
    two things. ``evaluate_parquet`` refuses it (BatchKinds: "a column must hold one kind"),
    as ``fastbias.evaluate`` refuses the concatenated (object) column; the Dask path on the
    same paths returned a result."""
    df = frame()
    first = df.iloc[:100].assign(b=lambda d: d["b"] == 1)
    path = write_two_files(tmp_path, first, df.iloc[100:])
    kwargs = dict(KW, missing_subgroup="exclude", subgroup_threshold=0.8)
    # (now refused from the files' footers, before any row is read, by both)
    footers = r"subgroup column 'b' is boolean in .*a\.parquet but number in .*b\.parquet"
    with pytest.raises(TypeError, match=footers):
        fastbias.streaming.evaluate_parquet(path, **kwargs)  # the reference behaviour
    with pytest.raises(TypeError, match=footers):
        quiet(fdask.evaluate, path, **kwargs)


def test_read_parquet_ddf_subgroup_kind_differs_between_partitions_is_refused(tmp_path):
    """The same files through ``dd.read_parquet``: each partition is read with its own file's
    type, so partition 0 reads 'b' as booleans and partition 1 as numbers. In memory
    (``ddf.compute()``) the column is refused; the Dask path gave a number."""
    df = frame()
    first = df.iloc[:100].assign(b=lambda d: d["b"] == 1)
    ddf = dd.read_parquet(write_two_files(tmp_path, first, df.iloc[100:]))
    kwargs = dict(KW, missing_subgroup="exclude", subgroup_threshold=0.8)
    with pytest.raises(TypeError, match=r"subgroup column 'b' holds both booleans and numbers"):
        quiet(fastbias.evaluate, ddf.compute(), **kwargs)
    with pytest.raises(TypeError, match=r"subgroup column 'b' .*one kind"):
        quiet(fdask.evaluate, ddf, **kwargs)


def test_read_parquet_ddf_label_kind_differs_between_partitions_is_refused(tmp_path):
    """Label 'y' boolean in one file, fractional numbers in the other: ``dd.read_parquet``
    keeps the first file's bool as the meta and reads each file with its own type. The Dask
    path on the paths refuses it ("labels must be read one way"), ``fastbias.evaluate`` on
    ``ddf.compute()`` refuses it (object labels); the Dask path on the DataFrame thresholded
    one partition's labels and took the other's booleans, and returned a result."""
    df = frame()
    second = df.iloc[100:].assign(y=np.round(np.random.default_rng(1).random(200), 2))
    path = write_two_files(tmp_path, df.iloc[:100], second)
    with pytest.raises(TypeError, match=r"label column 'y' is boolean in .* but number in"):
        quiet(fdask.evaluate, path, **KW)
    ddf = dd.read_parquet(path)
    with pytest.raises(TypeError, match=r"label column 'y'"):
        quiet(fastbias.evaluate, ddf.compute(), **KW)
    with pytest.raises(TypeError, match=r"label column 'y'"):
        quiet(fdask.evaluate, ddf, **KW)


@pytest.mark.parametrize("random_state", [-1, 1.5, "seed", True])
def test_bad_random_state_is_named(random_state):
    """``random_state`` is not checked: -1 gave numpy's "expected non-negative integer",
    None "unsupported operand type(s) for +: 'NoneType' and 'int'", 1.5 "SeedSequence
    expects int ... not 2.5", "seed" "can only concatenate str (not "int") to str": none
    names the argument."""
    ddf = dd.from_pandas(frame(), npartitions=2)
    with pytest.raises((TypeError, ValueError), match="random_state"):
        fdask.evaluate(ddf, **KW, random_state=random_state)


def test_random_state_none_draws_a_seed():
    """None (scikit-learn's "no seed") draws one: the partitions' sizes may change, never the
    result."""
    df = frame()
    result = quiet(fdask.evaluate, dd.from_pandas(df, npartitions=2), **KW, random_state=None)
    expected = quiet(fastbias.evaluate, df, **KW)
    pd.testing.assert_frame_equal(result.table, expected.table, check_exact=True)


# ------------------------------------------------------------- edges that pass (pinned)


def test_empty_partitions_after_a_filter_equal_in_memory():
    ddf = dd.from_pandas(frame(), npartitions=4)
    result, reference = both(ddf[ddf["s"] > 0.95], **KW)
    assert_same(result, reference)


def test_a_filter_that_leaves_no_row_is_a_clear_error():
    ddf = dd.from_pandas(frame(), npartitions=4)
    with pytest.raises(ValueError, match="no rows"):
        quiet(fdask.evaluate, ddf[ddf["s"] > 5], **KW)


@pytest.mark.parametrize("npartitions_in, npartitions_out", [(30, None), (1, 1), (2, 50)])
def test_tiny_single_and_many_output_partitions_equal_in_memory(npartitions_in,
                                                                npartitions_out):
    df = frame(60 if npartitions_in == 30 else 300)
    ddf = dd.from_pandas(df, npartitions=npartitions_in)
    result, reference = both(ddf, dict(npartitions=npartitions_out), **KW)
    assert_same(result, reference)


def test_partitions_of_one_class_each_and_a_repeated_string_index():
    df = frame().sort_values("y").reset_index(drop=True)
    df.index = [f"r{i % 7}" for i in range(len(df))]
    ddf = dd.from_pandas(df, npartitions=5, sort=False)
    result, reference = both(ddf, **KW, missing_subgroup="exclude")
    assert_same(result, reference)


@pytest.mark.parametrize("scores", ["tied", "signed_zeros", "subnormal", "huge"])
def test_extreme_and_tied_scores_equal_in_memory(scores):
    df = frame()
    rng = np.random.default_rng(3)
    n = len(df)
    df["s"] = {"tied": np.full(n, 0.5),
               "signed_zeros": np.where(rng.random(n) < 0.5, 0.0, -0.0),
               "subnormal": 5e-324 * rng.integers(0, 4, n),
               "huge": np.where(rng.random(n) < 0.5, -1.7e308, 1.7e308) * rng.random(n)}[scores]
    result, reference = both(dd.from_pandas(df, npartitions=3), dict(npartitions=8), **KW)
    assert_same(result, reference)


@pytest.mark.parametrize("divisions", [[-np.inf, 0.5, np.inf], [0.0, 0.3, 0.4], [0.5, 0.6],
                                       [0.0, 0.5, 1.0, np.inf]])
def test_given_divisions_that_clip_or_are_infinite_equal_in_memory(divisions):
    """Scores outside the given boundaries (above the last, or only one partition) stay in
    order: exact numbers (the divisions that reorder them are refused, tests/test_dask.py)."""
    result, reference = both(dd.from_pandas(frame(), npartitions=3),
                             dict(divisions=divisions), **KW)
    assert_same(result, reference)


def test_nullable_boolean_subgroup_with_na_in_one_partition_only():
    parts = [frame(100, seed) for seed in range(3)]
    parts[1]["a"] = parts[1]["a"].astype("boolean")
    parts[1].loc[parts[1].index[:5], "a"] = pd.NA
    ddf = dd.from_delayed([dask.delayed(p) for p in parts], meta=parts[0].iloc[:0],
                          verify_meta=False)
    full = pd.concat(parts, ignore_index=True)
    kwargs = dict(KW, missing_subgroup="exclude")
    assert_same(quiet(fdask.evaluate, ddf, **kwargs), quiet(fastbias.evaluate, full, **kwargs))


def test_float32_scores_in_one_partition_of_a_float64_meta_are_named():
    parts = [frame(100, seed) for seed in range(3)]
    parts[1]["s"] = parts[1]["s"].astype(np.float32)
    ddf = dd.from_delayed([dask.delayed(p) for p in parts], meta=parts[0].iloc[:0],
                          verify_meta=False)
    with pytest.raises(TypeError, match=r"score column 's' reads as float32 in Dask "
                                        r"partition 1 but as float64"):
        quiet(fdask.evaluate, ddf, **KW)


def test_weights_whose_span_is_too_wide_only_across_partitions_are_refused(tmp_path):
    """Each partition's weights are one value; only together do they span 2**480: refused,
    naming the rows of both (they had been "in the data")."""
    df = frame().assign(w=np.where(np.arange(300) < 150, 1e200, 1e-200))
    with pytest.raises(ValueError, match=r"sample_weight column 'w' spans more than 2\*\*480"
                                         r".*1e-200 at position 0 in Dask partition 1 and the "
                                         r"largest 1e\+200 at position 0 in Dask partition 0"):
        quiet(fdask.evaluate, dd.from_pandas(df, npartitions=2), **KW, sample_weight="w")
    # and out of core, by the rows of the file (each batch's weights one value)
    df.to_csv(tmp_path / "d.csv", index=False)
    with pytest.raises(ValueError, match=r"spans more than 2\*\*480.*1e-200 at row 150\b.* "
                                         r"and the largest 1e\+200 at row 0\b"):
        quiet(fastbias.evaluate_csv, tmp_path / "d.csv", **KW, sample_weight="w",
              batch_rows=150)


@pytest.mark.parametrize("weights", ["mostly_zero", "zero_above_0.3", "all_zero", "huge"])
def test_odd_weights_equal_in_memory(weights):
    df = frame()
    n = len(df)
    df["w"] = {"mostly_zero": np.where(np.arange(n) < 290, 0.0, 1.0),
               "zero_above_0.3": np.where(df["s"] > 0.3, 0.0, 1.0),
               "all_zero": np.zeros(n),
               "huge": np.random.default_rng(4).integers(1, 5, n) * 1e300}[weights]
    result, reference = both(dd.from_pandas(df, npartitions=3), dict(npartitions=6), **KW,
                             sample_weight="w", ci=None if weights == "huge" else "delong")
    assert_same(result, reference, exact=False)


def test_every_extra_at_once_equals_in_memory():
    """Intersections, sensitive features, significance, DeLong and thresholds, NaN identities
    in half the partitions only, weighted, several models of three score types."""
    rng = np.random.default_rng(5)
    n = 1_000
    df = pd.DataFrame({"y": rng.random(n) < 0.4, "s": np.round(rng.random(n), 2),
                       "s32": rng.random(n).astype(np.float32), "si": rng.integers(0, 5, n),
                       "a": np.where(np.arange(n) < 500, rng.random(n) < 0.3, np.nan),
                       "b": rng.random(n) < 0.5, "f": pd.Categorical(rng.choice(list("xyz"), n)),
                       "w": rng.integers(0, 4, n) / 2})
    kwargs = dict(label="y", scores=["s", "s32", "si"], subgroups=["a", "b"],
                  missing_subgroup="exclude", intersections=2, sensitive_features=["f"],
                  significance="bh", ci="delong", thresholds=[0.5], sample_weight="w",
                  min_subgroup_size=30)  # cells of 30+ rows: the same tests as in memory
    result, reference = both(dd.from_pandas(df, npartitions=4), dict(npartitions=5),
                             **kwargs)
    assert_same(result, reference, exact=False)


def test_small_cells_significance_is_the_documented_bound_not_the_in_memory_draw():
    """docs/significance.md, "Out of core": a cell under 30 rows gets Hoeffding's bound on
    its permutation p-value (never below the in-memory one) and says so in model_attrs."""
    df = frame()
    df["a"] = np.random.default_rng(6).random(len(df)) < 0.05
    result, reference = both(dd.from_pandas(df, npartitions=3), **KW, significance="holm")
    assert result.model_attrs["s"]["permutation_bounds"] > 0
    ours, theirs = result.table["subgroup_auc_pvalue"], reference.table["subgroup_auc_pvalue"]
    assert (ours >= theirs - TOL).all()
    pd.testing.assert_frame_equal(result.table[["subgroup_auc", "bpsn_auc", "bnsp_auc"]],
                                  reference.table[["subgroup_auc", "bpsn_auc", "bnsp_auc"]])


def test_object_columns_whose_partitions_differ_in_kind_are_refused():
    """An object column (no type in the meta) of booleans in one partition and numbers in
    another: the values of each partition say its kind, and all must agree (one more
    pass over those columns only), for identity columns and the label alike. (Dask makes
    object columns strings unless told not to.)"""
    with dask.config.set({"dataframe.convert-string": False}):
        _object_columns_whose_partitions_differ()


def _object_columns_whose_partitions_differ():
    df = frame()
    b = df["b"].astype(object)
    b.iloc[:150] = b.iloc[:150].map(lambda v: v if pd.isna(v) else bool(v))
    mixed = df.assign(b=b)
    with pytest.raises(TypeError, match=r"subgroup column 'b' holds both booleans and numbers"):
        quiet(fastbias.evaluate, mixed, **KW)
    with pytest.raises(TypeError, match=r"subgroup column 'b' holds numeric values in Dask "
                                        r"partition 1 but boolean values in Dask partition 0"):
        quiet(fdask.evaluate, dd.from_pandas(mixed, npartitions=2, sort=False), **KW)
    y = df["y"].astype(object)
    y.iloc[150:] = np.round(np.random.default_rng(2).random(150), 2)
    with pytest.raises(TypeError, match=r"label column 'y' holds numeric values in Dask "
                                        r"partition 1 but boolean values in Dask partition 0"):
        quiet(fdask.evaluate, dd.from_pandas(df.assign(y=y), npartitions=2, sort=False), **KW)
    # one kind in every partition (object booleans throughout): the in-memory numbers
    same = df.assign(a=df["a"].astype(object))
    result, reference = both(dd.from_pandas(same, npartitions=3, sort=False), **KW)
    pd.testing.assert_frame_equal(result.table, reference.table, check_exact=True)
