"""A mutation audit's tests (2026-11-28, forty-third session, an independent reviewer) of
fastbias/dask.py. 45 hand mutants were run against the synchronous Dask tests (the five
tests/test_dask*_reference.py files and tests/test_dask.py without its clusters): 25 killed
there, 20 lived; the tests here kill 16 of them (each checked to fail with its mutant): the
membership words at exactly 64 subgroups, the first pass skipped for weights, ``pos_label``
and object identity columns when ``divisions`` are given, a refusal naming partitions in the
scheduler's order, categorical identity columns not checked by their values' kind, a one-row
partition's sensitive-feature values dropped, a duplicated weight column, ``persist=True``
with ``compute=False``, boolean or per-model ``divisions``, ``npartitions=0``, the counting
passes naming the next partition, and the weight order of tied rows. 4 were equivalent. No
defect was found.

Every expected value comes from the test's own count: tests/reference.py's brute-force pair
counts (exact fractions) on the pandas frame built here, or hand counts. Dask's synchronous
scheduler throughout (tests/test_dask_reference.py's fixture); small frames with several
partitions, empty and one-row ones included.
"""

import dask
import numpy as np
import pandas as pd
import pytest

from .reference import brute_force_metrics
from .test_dask_reference import quiet, synchronous  # noqa: F401 (the autouse fixture)

dd = pytest.importorskip("dask.dataframe")
fdask = pytest.importorskip("fastbias.dask")

pytestmark = pytest.mark.jit_heavy

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]


def uneven(df, sizes):
    """A Dask DataFrame whose partitions hold ``sizes`` rows in order (0 for an empty one)."""
    assert sum(sizes) == len(df)
    cuts = np.cumsum([0, *sizes])
    parts = [df.iloc[cuts[k]:cuts[k + 1]] for k in range(len(sizes))]
    return dd.from_delayed([dask.delayed(lambda p: p)(p) for p in parts], meta=df.iloc[:0],
                           verify_meta=False)


def assert_brute_force(result, df, label, score, subgroups, weight=None, exclude=False):
    """Each subgroup's five metrics equal the brute force on df (exclude: the rows whose
    identity is NaN are left out of that subgroup's metrics)."""
    table = result.table.set_index("subgroup")
    for name in subgroups:
        rows = df[df[name].notna()] if exclude else df
        member = rows[name].fillna(0).to_numpy(dtype=float) >= 0.5
        expected = brute_force_metrics(rows[label].to_numpy(dtype=float) >= 0.5,
                                       rows[score].to_numpy(), member,
                                       None if weight is None else rows[weight].to_numpy())
        for metric in METRICS:
            got = table.loc[name, metric]
            want = expected[metric]
            assert (np.isnan(got) and np.isnan(want)) or got == want, (name, metric, got, want)


# ------------------------------------------------------------------ the join of partitions


def test_sixty_four_subgroups_with_exclude_equal_brute_force():
    """Kills mutant 0 (``n_words = n_groups // 64 + 1`` in _partition_counts: at exactly 64
    subgroups the unannotated word is read as a second member word). 64 identity columns, NaN
    identities, missing_subgroup="exclude", partitions of 0, 1 and more rows."""
    rng = np.random.default_rng(3)
    n = 48
    df = pd.DataFrame({"y": (np.arange(n) % 3 == 0).astype(float),
                       "s": np.round(rng.random(n), 1)})
    names = [f"g{j}" for j in range(64)]
    for j, name in enumerate(names):
        col = (rng.random(n) < 0.4).astype(float)
        col[rng.random(n) < 0.25] = np.nan
        df[name] = col
    ddf = uneven(df, [10, 0, 1, 20, 17])
    result = quiet(fdask.evaluate, ddf, label="y", scores="s", subgroups=names,
                   missing_subgroup="exclude", npartitions=4)
    assert_brute_force(result, df, "y", "s", names, exclude=True)


# ------------------------------------------------------- divisions given: the first pass still runs


def test_huge_weights_with_given_divisions_equal_brute_force():
    """Kills mutant 11 (the first pass skipped for weights when divisions are given: no weight
    scale). Weights 1e300..4e300: their sums overflow unless scaled (in-memory scales them)."""
    rng = np.random.default_rng(5)
    n = 40
    df = pd.DataFrame({"y": rng.random(n) < 0.5, "s": np.round(rng.random(n), 1),
                       "g": rng.random(n) < 0.4,
                       "w": rng.integers(1, 5, n) * 1e300})
    result = quiet(fdask.evaluate, uneven(df, [12, 0, 1, 27]), label="y", scores="s",
                   subgroups=["g"], sample_weight="w", divisions=[0.0, 0.3, 0.7, 1.0])
    table = result.table.set_index("subgroup")
    expected = brute_force_metrics(df.y, df.s, df.g, df.w.to_numpy())
    for metric in METRICS:
        assert table.loc["g", metric] == pytest.approx(expected[metric], abs=1e-12), metric


def test_weight_span_across_partitions_refused_with_given_divisions():
    """Kills mutant 11: each partition's weights are one value, together they span 2**480:
    refused as without divisions (the first pass sees all partitions)."""
    df = pd.DataFrame({"y": [0, 1] * 10, "s": np.linspace(0, 1, 20),
                       "g": [True, False, False, True] * 5,
                       "w": [1e200] * 10 + [1e-200] * 10})
    with pytest.raises(ValueError, match=r"spans more than 2\*\*480"):
        quiet(fdask.evaluate, dd.from_pandas(df, npartitions=2), label="y", scores="s",
              subgroups=["g"], sample_weight="w", divisions=[0.0, 0.5, 1.0])


def test_pos_label_third_value_across_partitions_with_given_divisions():
    """Kills mutant 12 (the first pass skipped for pos_label when divisions are given). Each
    partition holds two label values, the frame three: a ValueError naming the third, as
    documented for pos_label; and a pos_label no row holds is refused."""
    df = pd.DataFrame({"y": ["tox", "ok"] * 5 + ["tox", "maybe"] * 5,
                       "s": np.linspace(0, 1, 20), "g": [True, False, False, True] * 5})
    with pytest.raises(ValueError, match=r"more than two distinct values .*'maybe' first at "
                                         r"position 1, in Dask partition 1"):
        quiet(fdask.evaluate, dd.from_pandas(df, npartitions=2), label="y", scores="s",
              subgroups=["g"], pos_label="tox", label_threshold=None,
              divisions=[0.0, 0.5, 1.0])
    two = df.assign(y=["tox", "ok"] * 10)
    with pytest.raises(ValueError, match=r"pos_label 'toxic' does not occur"):
        quiet(fdask.evaluate, dd.from_pandas(two, npartitions=2), label="y", scores="s",
              subgroups=["g"], pos_label="toxic", label_threshold=None,
              divisions=[0.0, 0.5, 1.0])


def test_object_identity_kinds_differing_by_partition_refused_with_given_divisions():
    """Kills mutant 13 (the first pass skipped for object identity columns when divisions are
    given). An object column of booleans in partition 0 and of numbers in partition 1: each
    partition alone is valid, together they mean two things; refused (not a number)."""
    with dask.config.set({"dataframe.convert-string": False}):
        g = pd.Series([True, False, False, True] * 5, dtype=object)
        g.iloc[10:] = [1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0]
        df = pd.DataFrame({"y": [0.0, 1.0] * 10, "s": np.linspace(0, 1, 20), "g": g})
        with pytest.raises(TypeError, match=r"subgroup column 'g' holds (numeric|boolean) "
                                            r"values in Dask partition \d"):
            quiet(fdask.evaluate, dd.from_pandas(df, npartitions=2, sort=False), label="y",
                  scores="s", subgroups=["g"], divisions=[0.0, 0.5, 1.0])


@pytest.mark.parametrize("divisions", [None, [0.0, 0.5, 1.0]])
def test_score_dtype_refusal_names_first_partition(divisions):
    """Kills mutant 21 (without divisions: _captured lets a first-pass TypeError escape in the
    scheduler's order) and mutant 19 (a TypeError met as partitions are encoded, divisions given, not re-run
    in the frame's order). Partitions 1 and 3 of four read float32 scores where the meta says
    float64: the first of them, partition 1, is named (the synchronous scheduler met 3 first)."""
    rng = np.random.default_rng(1)
    parts = [pd.DataFrame({"y": [0.0, 1.0] * 5, "s": np.round(rng.random(10), 2),
                           "g": [True, False] * 5}) for _ in range(4)]
    for k in (1, 3):
        parts[k]["s"] = parts[k]["s"].astype(np.float32)
    ddf = dd.from_delayed([dask.delayed(p) for p in parts], meta=parts[0].iloc[:0],
                          verify_meta=False)
    with pytest.raises(TypeError, match=r"score column 's' reads as float32 in Dask "
                                        r"partition 1 but as float64"):
        quiet(fdask.evaluate, ddf, label="y", scores="s", subgroups=["g"],
              divisions=divisions)


def test_categorical_identity_of_booleans_and_of_numbers_by_partition_refused():
    """Kills mutant 24 (categorical identity columns not compared by their values' kind). The
    meta says "category" (unknown categories); partition 0's categories are booleans,
    partition 1's numbers: together they mean two things, refused naming the column (memory
    refuses the concatenated column as booleans and numbers)."""
    p0 = pd.DataFrame({"y": [0.0, 1.0, 0.0, 1.0], "s": [0.1, 0.2, 0.3, 0.4],
                       "g": pd.Categorical([True, False, True, False])})
    p1 = pd.DataFrame({"y": [1.0, 0.0, 1.0, 0.0], "s": [0.5, 0.6, 0.7, 0.8],
                       "g": pd.Categorical([1.0, 0.0, 0.0, 1.0])})
    meta = p1.iloc[:0].assign(g=pd.Categorical([]))
    ddf = dd.from_delayed([dask.delayed(p0), dask.delayed(p1)], meta=meta, verify_meta=False)
    with pytest.raises(TypeError, match=r"subgroup column 'g'"):
        quiet(fdask.evaluate, ddf, label="y", scores="s", subgroups=["g"])


def test_sensitive_feature_value_only_in_a_one_row_partition():
    """Kills mutant 27 (a one-row partition's sensitive-feature values dropped). Value "zz"
    occurs only in the one-row partition 2: its group is in the table, with the brute-force
    metrics (one row: size 1)."""
    y = [0, 1, 0, 1, 0, 1, 1, 0, 1, 0, 1]
    s = [.1, .2, .3, .4, .5, .6, .7, .8, .9, .05, .33]
    r = ["b", "a", "b", "a", "a", "b", "zz", "a", "b", "b", "a"]
    df = pd.DataFrame({"y": y, "s": s, "r": pd.array(r, dtype=object)})
    with dask.config.set({"dataframe.convert-string": False}):
        result = quiet(fdask.evaluate, uneven(df, [6, 0, 1, 4]), label="y", scores="s",
                       sensitive_features=["r"])
    table = result.table.set_index("subgroup")
    assert list(table.index) == ["r=a", "r=b", "r=zz"]
    assert int(table.loc["r=zz", "subgroup_size"]) == 1
    for value in ["a", "b", "zz"]:
        expected = brute_force_metrics(df.y, df.s, df.r == value)
        for metric in METRICS:
            got, want = table.loc[f"r={value}", metric], expected[metric]
            assert (np.isnan(got) and np.isnan(want)) or got == want, (value, metric)


# ------------------------------------------------------------------ arguments refused by name


def test_duplicate_weight_column_refused_by_name():
    """Kills mutant 29 (the weight column left out of the duplicate-name check): two columns
    named "w", sample_weight="w" is a ValueError naming the argument and the count."""
    df = pd.DataFrame([[0.0, 0.1, True, 1.0, 2.0], [1.0, 0.9, False, 1.0, 2.0]] * 5,
                      columns=["y", "s", "g", "w", "w"])
    with pytest.raises(ValueError, match=r"sample_weight: the DataFrame has 2 columns named 'w'"):
        quiet(fdask.evaluate, dd.from_pandas(df, npartitions=2), label="y", scores="s",
              subgroups=["g"], sample_weight="w")


def test_persist_with_compute_false_refused_without_a_cluster():
    """Kills mutant 33 (persist=True with compute=False accepted): a ValueError saying so, on
    the synchronous scheduler too (docs/distributed.md)."""
    df = pd.DataFrame({"y": [0.0, 1.0] * 5, "s": np.linspace(0, 1, 10), "g": [True, False] * 5})
    with pytest.raises(ValueError, match=r"persist=True needs compute=True"):
        fdask.evaluate(dd.from_pandas(df, npartitions=2), label="y", scores="s",
                       subgroups=["g"], persist=True, compute=False)


def test_boolean_divisions_refused_by_position():
    """Kills mutant 36 (booleans taken as the numbers 0 and 1 in divisions=)."""
    df = pd.DataFrame({"y": [0.0, 1.0] * 5, "s": np.linspace(0, 1, 10), "g": [True, False] * 5})
    with pytest.raises(TypeError, match=r"divisions must hold numbers, got True at position 2"):
        fdask.evaluate(dd.from_pandas(df, npartitions=2), label="y", scores="s",
                       subgroups=["g"], divisions=[0.0, 0.5, True])


def test_dict_divisions_check_each_models_own_boundaries():
    """Kills mutant 39 (a dict's first model's boundaries checked and used for every model):
    the second model's NaN boundary is named with its model."""
    df = pd.DataFrame({"y": [0.0, 1.0] * 5, "s": np.linspace(0, 1, 10),
                       "t": np.linspace(1, 0, 10), "g": [True, False] * 5})
    with pytest.raises(ValueError, match=r"divisions\['t'\] must not hold NaN \(position 1\)"):
        fdask.evaluate(dd.from_pandas(df, npartitions=2), label="y", scores=["s", "t"],
                       subgroups=["g"], divisions={"s": [0.0, 1.0], "t": [0.0, np.nan, 1.0]})


def test_zero_npartitions_refused_by_name():
    """Kills mutant 41 (npartitions=0 accepted)."""
    df = pd.DataFrame({"y": [0.0, 1.0] * 5, "s": np.linspace(0, 1, 10), "g": [True, False] * 5})
    with pytest.raises(ValueError, match=r"npartitions must be a positive integer, got 0"):
        fdask.evaluate(dd.from_pandas(df, npartitions=2), label="y", scores="s",
                       subgroups=["g"], npartitions=0)


@pytest.mark.parametrize("extra", [dict(intersections=2, subgroups=["g", "h"]),
                                   dict(sensitive_features=["f"], subgroups=["g"])])
def test_missing_label_named_in_its_partition_by_the_counting_passes(extra):
    """Kills mutant 43 (the intersections / sensitive-features pass names partition i + 1). A
    NaN label at row 13 = position 3 of partition 1 (partitions of 10 rows) is named there."""
    n = 30
    df = pd.DataFrame({"y": (np.arange(n) % 2).astype(float), "s": np.linspace(0, 1, n),
                       "g": np.arange(n) % 3 == 0, "h": np.arange(n) % 4 == 0,
                       "f": pd.array(np.where(np.arange(n) % 2 == 0, "p", "q"), dtype=object)})
    df.loc[13, "y"] = np.nan
    with dask.config.set({"dataframe.convert-string": False}):
        with pytest.raises(ValueError) as info:
            quiet(fdask.evaluate, dd.from_pandas(df, npartitions=3, sort=False), label="y",
                  scores="s", **extra)
    text = str(info.value)
    assert "'y'" in text and "Dask partition 1" in text and "position 3" in text, text


# ------------------------------------------------------------------ reproducible weighted sums


def test_weighted_delong_and_significance_do_not_depend_on_the_rows_order():
    """Kills mutants 4-6 of _weights_order (the rows of one score within a partition left in
    the order the shuffle hands them over). With divisions given, the same rows in another
    order land in the same partitions; the weighted placement sums (DeLong intervals,
    significance) must then be bit for bit the same (the module's promise: the order of rows
    of equal score must not move the sums' last bits). Weights 0.1/0.2/0.7/0.3 whose float
    sums depend on their order; three score values only."""
    rng = np.random.default_rng(11)
    n = 60
    df = pd.DataFrame({"y": rng.random(n) < 0.5, "s": rng.integers(0, 3, n) / 2,
                       "g": rng.random(n) < 0.5,
                       "w": rng.choice([0.1, 0.2, 0.7, 0.3, 1e-3], n)})
    kwargs = dict(label="y", scores="s", subgroups=["g"], sample_weight="w", ci="delong",
                  divisions=[0.0, 0.4, 0.9, 1.0])
    tables = []
    for seed in range(4):
        order = np.random.default_rng(seed).permutation(n)
        shuffled = df.iloc[order].reset_index(drop=True)
        result = quiet(fdask.evaluate, uneven(shuffled, [20, 0, 1, 39]), **kwargs)
        tables.append((result.table, result.overall_auc))
    for table, overall in tables[1:]:
        pd.testing.assert_frame_equal(table, tables[0][0], check_exact=True)
        pd.testing.assert_series_equal(overall, tables[0][1], check_exact=True)
