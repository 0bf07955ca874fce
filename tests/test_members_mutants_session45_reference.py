"""A mutation audit of how identity columns become memberships (``prepare/memberships.py``,
``prepare/_kernels.py``, ``validate/subgroups.py``), by an independent reviewer (forty-fifth
session): 44 hand mutants. 29 are killed by the existing related files
(tests/test_membership_mutants.py, test_memberships_mutants_session35_reference.py,
test_memberships_reference.py, test_identity_members_reference.py), 10 more by the tests here
(not by those files; each checked to fail with its mutant and pass without: an (n, 0) array
taken as an empty table, a named Series renamed, rows left out by ``nan_policy="omit"`` kept on
the dense path, the numpy tier's CSR order and last pointer, missing values without a threshold,
the transpose hint for integer (k, n) arrays, duplicated and 1-vs-"1" names), 5 are equivalent.

Every expected value here comes from a reference built in plain Python from the documented rule:
a member is a value ``>= threshold`` (compared exactly), a boolean True is a member whatever the
threshold, a missing value (NaN, None, pd.NA) is never a member and, under
``missing_subgroup="exclude"``, is left out of that subgroup's comparisons. Metrics are the
O(n^2) brute force of ``tests.reference`` (through the suite's ``_assert_table`` and
``naive_membership``).
"""
import warnings

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.prepare.memberships import (
    group_rows_of,
    prepare_memberships,
    prepare_memberships_dense,
    prepare_subgroups,
)
from fastbias.validate.errors import UndefinedMetricWarning

from .test_membership_columns import naive_membership
from .test_membership_mutants import _assert_table, _quietly


def _check_row(table, name, y, s, member, what=""):
    _assert_table(table, y, s, {name: member}, what)


def _csr_reference(masks):
    """(identity_rows, row_ptr, row_groups) of a list of boolean masks, by hand."""
    n = len(masks[0]) if masks else 0
    rows, ptr, groups = [], [0], []
    for i in range(n):
        mine = [g for g, m in enumerate(masks) if m[i]]
        if mine:
            rows.append(i)
            groups += mine
            ptr.append(len(groups))
    return rows, ptr, groups


def _assert_csr(m, masks, what=""):
    rows, ptr, groups = _csr_reference(masks)
    assert m.identity_rows.tolist() == rows, what
    assert m.row_ptr.tolist() == ptr, what
    assert m.row_groups.tolist() == groups, what
    assert m.identity_labels.tolist() == m.labels[rows].tolist(), what


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(45)
    n = 60
    y = rng.random(n) < 0.45
    y[:2] = [True, False]
    s = rng.integers(0, 7, n) / 6.0  # ties
    return y, s


# ------------------------------------------------------------- nullable columns via evaluate


def _nullable_frame(y, s):
    n = y.shape[0]
    rng = np.random.default_rng(7)
    b = pd.array([None if i % 7 == 3 else bool(rng.random() < 0.4) for i in range(n)],
                 dtype="boolean")
    i64 = pd.array([None if i % 5 == 1 else int(rng.integers(0, 4)) for i in range(n)],
                   dtype="Int64")
    f64 = pd.array([None if i % 6 == 2 else [0.25, 0.5, 0.75, 1.0][rng.integers(0, 4)]
                    for i in range(n)], dtype="Float64")
    return pd.DataFrame({"label": y.astype(int), "score": s, "b": b, "i": i64, "f": f64})


@pytest.mark.parametrize("threshold", [0.5, 2])
@pytest.mark.parametrize("policy", ["background", "exclude"])
def test_nullable_columns_in_evaluate(data, threshold, policy):
    """pandas boolean / Int64 / Float64 with pd.NA: NA never a member; "exclude" drops
    the NA rows from that subgroup's comparisons only. Threshold 0.5 puts Float64's 0.5
    exactly at the edge (a member: ``>=``)."""
    y, s = data
    df = _nullable_frame(y, s)
    result = _quietly(fastbias.evaluate, df, label="label", scores="score",
                      subgroups=["b", "i", "f"], subgroup_threshold=threshold,
                      missing_subgroup=policy)
    table = result.table.set_index("subgroup")
    for name in ["b", "i", "f"]:
        member, annotated = naive_membership(df[name], name == "b", threshold)
        if policy == "exclude":
            _check_row(table, name, y[annotated], s[annotated], member[annotated],
                       f"{name} {policy}")
        else:
            _check_row(table, name, y, s, member, f"{name} {policy}")


@pytest.mark.parametrize("compiled", [True, False])
def test_nullable_columns_in_a_dict_with_threshold(data, compiled):
    """bias_metrics / prepare_subgroups of a dict of nullable columns with a threshold: the
    members are exactly the rows at or above it (NA: none), on both tiers."""
    y, s = data
    df = _nullable_frame(y, s)
    groups = {"b": df["b"], "i": df["i"].array, "f": df["f"]}
    masks = [naive_membership(df[c], c == "b", 1)[0] for c in ("b", "i", "f")]
    m = prepare_subgroups(y, groups, 1, compiled=compiled)
    assert m.names == ["b", "i", "f"]
    _assert_csr(m, masks, f"compiled={compiled}")
    table = _quietly(fastbias.bias_metrics, y, s, groups, subgroup_threshold=1)
    for name, member in zip(["b", "i", "f"], masks):
        _check_row(table, name, y, s, member)


@pytest.mark.parametrize("column", ["b", "i", "f"])
def test_nullable_na_without_threshold_is_refused_with_position(data, column):
    """No threshold: a missing value is a ValueError naming the column, the count and the
    first position."""
    y, s = data
    df = _nullable_frame(y, s)
    values = df[column]
    if column != "b":  # make it 0/1 apart from the NA so that only the NA is wrong
        values = (values >= 1).astype(values.dtype if column == "f" else "Int64")
    first = int(np.flatnonzero(values.isna().to_numpy())[0])
    count = int(values.isna().sum())
    with pytest.raises(ValueError) as info:
        fastbias.bias_metrics(y, s, {"g": values})
    text = str(info.value)
    assert "'g'" in text and f"{count} NaN or missing" in text and f"position {first}" in text


# ------------------------------------------------------------- integers, bools, floats at ties


@pytest.mark.parametrize("threshold", [-1.5, 0, 0.5, 1, 2, 2.5, 3, 10 ** 6])
def test_integer_and_bool_columns_against_thresholds(data, threshold):
    """int64/int16/uint16 columns are compared with the threshold; a bool column is its own
    membership whatever the threshold (True: member even above 1, False: not even at 0)."""
    y, s = data
    n = y.shape[0]
    ints = (np.arange(n) % 5 - 1)
    bools = np.arange(n) % 3 == 0
    groups = {"i64": ints.astype(np.int64), "i16": ints.astype(np.int16),
              "u16": (ints + 1).astype(np.uint16), "bool": bools}
    table = _quietly(fastbias.bias_metrics, y, s, groups, subgroup_threshold=threshold)
    for name, col in groups.items():
        member = bools if name == "bool" else np.array([v >= threshold for v in col.tolist()])
        _check_row(table, name, y, s, member, f"{name} {threshold}")


@pytest.mark.parametrize("compiled", [True, False])
def test_float_values_exactly_at_the_threshold_are_members(compiled):
    """``value >= threshold``: a float64 exactly at the threshold is a member, the next
    float below is not (also for float32 and the uint8 byte-scan path at threshold 1)."""
    t = 0.3
    below = np.nextafter(t, 0.0)
    above = np.nextafter(t, 1.0)
    values = np.array([t, below, above, 0.0, t, np.nan, 1.0, below])
    y = np.array([1, 0, 1, 0, 0, 1, 1, 0], dtype=bool)
    m = prepare_subgroups(y, {"f64": values, "f32": values.astype(np.float32),
                              "u8": np.array([1, 0, 2, 0, 255, 0, 1, 0], np.uint8)}, t,
                          compiled=compiled)
    f32 = values.astype(np.float32)
    want = [np.array([v >= t for v in values.tolist()]),
            np.array([float(v) >= t for v in f32.tolist()]),
            np.array([1, 0, 1, 0, 1, 0, 1, 0], dtype=bool)]
    _assert_csr(m, want, f"compiled={compiled}")


def test_uint8_at_threshold_zero_counts_the_zero_bytes():
    """uint8 with threshold 0: every byte (0 included) is >= 0, so every row is a member;
    threshold 1: exactly the non-zero bytes. (Kills a mutant that sends threshold 0 to the
    non-zero byte scan.)"""
    u8 = np.array([0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0], dtype=np.uint8)
    y = np.arange(11) % 2 == 0
    for compiled in (True, False):
        m0 = prepare_subgroups(y, {"u": u8}, 0, compiled=compiled)
        assert m0.identity_rows.tolist() == list(range(11)), compiled
        m1 = prepare_subgroups(y, {"u": u8}, 1, compiled=compiled)
        assert m1.identity_rows.tolist() == [1, 9], compiled


# ------------------------------------------------------------- containers agree, both tiers


def _masks(n, k, seed):
    rng = np.random.default_rng(seed)
    masks = rng.random((n, k)) < 0.3
    masks[:, 0] = False  # an empty subgroup
    masks[:, -1] = True  # one that is every row
    masks[n // 2] = True  # a row in every subgroup
    return masks


@pytest.mark.parametrize("n", [1, 7, 8, 9, 23, 64, 65])
@pytest.mark.parametrize("compiled", [True, False])
def test_containers_give_the_same_csr(n, compiled):
    """A dense (n, k) bool array, an int8 (n, k) 0/1 array, a DataFrame of bool columns and a
    dict of uint8 columns: the same CSR, equal to the hand-made one, on both tiers."""
    k = 4
    masks = _masks(n, k, n)
    y = np.arange(n) % 3 == 1
    cols = [masks[:, j] for j in range(k)]
    names = [f"subgroup_{j}" for j in range(k)]
    inputs = {
        "dense bool": masks,
        "dense int8": masks.astype(np.int8),
        "frame": pd.DataFrame(dict(zip(names, cols))),
        "dict uint8": {name: c.astype(np.uint8) for name, c in zip(names, cols)},
        "fortran bool": np.asfortranarray(masks),
    }
    for what, subgroups in inputs.items():
        m = prepare_subgroups(y, subgroups, compiled=compiled)
        assert m.names == names, what
        _assert_csr(m, cols, what)
        assert [r.tolist() for r in group_rows_of(m)] == \
            [np.flatnonzero(c).tolist() for c in cols], what


@pytest.mark.parametrize("compiled", [True, False])
def test_kept_rows_renumber_the_members(compiled):
    """``kept`` (nan_policy="omit") keeps only those rows, renumbered, for the dense and the
    column paths alike."""
    n, k = 21, 3
    masks = _masks(n, k, 3)
    kept = np.ones(n, dtype=bool)
    kept[[0, 5, 6, 20]] = False
    y_kept = (np.arange(kept.sum()) % 2 == 0)
    want = [masks[kept, j] for j in range(k)]
    for what, subgroups in (("dense", masks),
                            ("dict", {f"subgroup_{j}": masks[:, j] for j in range(k)})):
        m = prepare_subgroups(y_kept, subgroups, None, kept, compiled=compiled)
        assert m.n_rows == int(kept.sum())
        _assert_csr(m, want, what)


def test_nan_policy_omit_with_subgroups_matches_the_dropped_rows(data):
    """bias_metrics(nan_policy="omit"): the metrics of the rows with a score, each subgroup
    restricted to them (dense array and dict)."""
    y, s = data
    s = s.copy()
    s[[3, 10, 11, 40]] = np.nan
    masks = _masks(y.shape[0], 3, 9)
    keep = ~np.isnan(s)
    for subgroups in (masks, {f"subgroup_{j}": masks[:, j] for j in range(3)}):
        table = _quietly(fastbias.bias_metrics, y, s, subgroups, nan_policy="omit")
        for j in range(3):
            _check_row(table, f"subgroup_{j}", y[keep], s[keep], masks[keep, j])


def test_empty_all_rows_and_one_class_subgroups(data):
    """An empty subgroup: every metric NaN, size 0; a subgroup of every row: subgroup AUC is
    the overall AUC, the background ones NaN; a one-class subgroup: its AUC NaN."""
    y, s = data
    n = y.shape[0]
    groups = {"empty": np.zeros(n, bool), "all": np.ones(n, bool), "pos": y.copy(),
              "neg": ~y}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = fastbias.bias_metrics(y, s, groups)
    assert any(issubclass(w.category, UndefinedMetricWarning) for w in caught)
    for name, member in groups.items():
        _check_row(table, name, y, s, member, name)


# ------------------------------------------------------------- names and errors


def test_duplicated_frame_columns_are_refused_by_name():
    """A DataFrame with the same column twice (or 1 and "1", equal as text) is a ValueError
    naming the duplicate, never one subgroup silently replacing the other."""
    y = np.array([0, 1, 0, 1], dtype=bool)
    s = np.array([0.1, 0.4, 0.35, 0.8])
    frame = pd.DataFrame([[1, 0], [0, 1], [1, 1], [0, 0]], columns=["a", "a"]).astype(bool)
    with pytest.raises(ValueError, match=r"duplicate name\(s\): \['a'\]"):
        fastbias.bias_metrics(y, s, frame)
    frame = pd.DataFrame([[1, 0], [0, 1], [1, 1], [0, 0]], columns=[1, "1"]).astype(bool)
    with pytest.raises(ValueError, match=r"duplicate name\(s\): \['1'\]"):
        fastbias.bias_metrics(y, s, frame)
    with pytest.raises(ValueError, match=r"duplicate name\(s\): \['1'\]"):
        fastbias.bias_metrics(y, s, {1: [True, False, True, False], "1": [1, 0, 0, 1]})


def test_errors_name_the_column_value_and_position():
    y = np.array([0, 1, 0, 1, 1], dtype=bool)
    s = np.array([0.1, 0.4, 0.35, 0.8, 0.2])
    with pytest.raises(ValueError) as info:
        fastbias.bias_metrics(y, s, {"ok": [0, 1, 0, 1, 1], "bad": [0, 1, 1, 2, 0]})
    assert "'bad'" in str(info.value) and "2" in str(info.value) and "position 3" in str(
        info.value)
    with pytest.raises(ValueError, match=r"subgroup 'short' mask has 4 rows but y_true has 5"):
        fastbias.bias_metrics(y, s, {"short": [0, 1, 0, 1]})
    with pytest.raises(ValueError, match="transpose"):
        fastbias.bias_metrics(y, s, np.zeros((2, 5), dtype=bool))
    with pytest.raises(ValueError, match="transpose"):
        fastbias.bias_metrics(y, s, np.zeros((2, 5), dtype=np.int8))
    with pytest.raises(ValueError, match=r"has 4 rows but y_true has 5"):
        fastbias.bias_metrics(y, s, np.zeros((4, 2), dtype=bool))
    with pytest.raises(ValueError, match="subgroups is empty"):
        fastbias.bias_metrics(y, s, {})


def test_non_binary_float_in_mask_names_value_and_position():
    y = np.array([0, 1, 0, 1, 1], dtype=bool)
    s = np.array([0.1, 0.4, 0.35, 0.8, 0.2])
    with pytest.raises(ValueError) as info:
        fastbias.bias_metrics(y, s, pd.DataFrame({"x": [0.0, 1.0, 1.0, 0.0, 0.5]}))
    text = str(info.value)
    assert "'x'" in text and "0.5" in text and "position 4" in text


def test_series_without_name_is_subgroup_0(data):
    y, s = data
    member = np.arange(y.shape[0]) % 4 == 0
    table = _quietly(fastbias.bias_metrics, y, s, pd.Series(member))
    assert list(table.index) == ["subgroup_0"]
    _check_row(table, "subgroup_0", y, s, member)


# ------------------------------------------------------------- low level builders


@pytest.mark.parametrize("compiled", [True, False])
def test_prepare_memberships_from_row_lists(compiled):
    """prepare_memberships from per-subgroup row lists (one empty, overlapping ones) gives
    the hand-made CSR on both tiers."""
    n = 70
    lists = [np.array([], dtype=np.int64), np.array([0, 3, 64, 69]), np.array([3, 63, 64]),
             np.arange(n)]
    masks = [np.isin(np.arange(n), r) for r in lists]
    y = np.arange(n) % 2 == 1
    m = prepare_memberships(y, lists, ["e", "a", "b", "all"], compiled)
    _assert_csr(m, masks)
    assert m.cell_rows.tolist() == [[int((mk & ~y).sum()), int((mk & y).sum())] for mk in masks]


@pytest.mark.parametrize("workers", [1, 2])
def test_dense_scan_split_over_threads(workers):
    """prepare_memberships_dense on 2 threads, rows cut in pieces at multiples of 8 (n not a
    multiple of 8): the CSR of np.nonzero."""
    n, k = 400_003, 3
    rng = np.random.default_rng(1)
    matrix = rng.random((n, k)) < 0.01
    matrix[-1] = True
    y = rng.random(n) < 0.5
    m = prepare_memberships_dense(y, matrix, ["a", "b", "c"], workers=workers)
    rows, cols = np.nonzero(matrix)
    ident, first = np.unique(rows, return_index=True)
    assert np.array_equal(m.identity_rows, ident)
    assert np.array_equal(m.row_ptr, np.append(first, rows.shape[0]))
    assert np.array_equal(m.row_groups, cols)
    assert np.array_equal(m.identity_labels, y[ident])


# ------------------------------------------------------------- survivors of the mutation audit


def test_dense_array_with_no_column_is_refused(data):
    """An (n, 0) boolean array holds no subgroup: a ValueError, not an empty table. Kills the
    mutant ``subgroups.shape[1] > 0`` -> ``>= 0`` in prepare_subgroups (which sent it to the
    dense scan and returned no rows)."""
    y, s = data
    for dtype in (bool, np.int8):
        with pytest.raises(ValueError, match="subgroups is empty"):
            fastbias.bias_metrics(y, s, np.zeros((y.shape[0], 0), dtype=dtype))


def test_named_series_keeps_its_name(data):
    """A named Series is one subgroup of that name (a non-str name as its text). Kills the
    mutant that names every Series "subgroup_0"."""
    y, s = data
    member = np.arange(y.shape[0]) % 4 == 1
    for name, shown in (("women", "women"), (7, "7")):
        table = _quietly(fastbias.bias_metrics, y, s, pd.Series(member, name=name))
        assert list(table.index) == [shown]
        _check_row(table, shown, y, s, member)
