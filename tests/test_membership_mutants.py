"""Brute-force pins of where identity columns become members: an independent mutation audit's
tests (2026-11-27; the suite killed 20 of 36 mutants of the membership readers, kernels,
batch kinds and out-of-core encoding, these the other 16).

Each test compares what fastbias makes of an identity column with a reference
computed here one Python value at a time: a member is a value ``>= threshold``
compared exactly (Python compares an int or a float with a float exactly),
booleans are members as they are, a missing value (NaN, None, pd.NA) is never a
member and, under ``missing_subgroup="exclude"``, not annotated. Metrics are the
O(n^2) brute force of ``tests.reference`` on those masks.
"""
import math
import warnings

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.prepare.memberships import column_rows, member_rows, prepare_subgroups
from fastbias.validate.errors import UndefinedMetricWarning
from fastbias.validate.subgroups import (
    BatchKinds,
    IdentityValues,
    identity_kind,
    identity_values,
)
from tests.reference import brute_force_metrics

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
#: every byte value and the edges between them, ties included (v and v + 0.5)
BYTE_THRESHOLDS = [-129, -128.5, -128, -1, -0.5, 0, 0.5, 1, 1.5, 2, 126, 127, 127.5, 128,
                   200.5, 255, 255.5, 256]


def _quietly(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return function(*args, **kwargs)


def _naive_member(values, threshold):
    """(member, annotated) one Python value at a time."""
    member, annotated = [], []
    for v in list(values):
        if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
            member.append(False)
            annotated.append(False)
        else:
            annotated.append(True)
            member.append(v >= threshold)  # exact: int/float vs float in Python
    return np.array(member, dtype=bool), np.array(annotated, dtype=bool)


def _assert_table(table, y, s, members, what, w=None):
    """Each named row of ``table`` (its cells' rows and five metrics) against the brute force
    on ``(y, s, member)``, weighted by ``w`` where given."""
    for name, member in members.items():
        want = brute_force_metrics(y, s, member, w)
        assert int(table.loc[name, "subgroup_positives"]) == int(np.sum(member & y)), (what, name)
        assert int(table.loc[name, "subgroup_negatives"]) == int(np.sum(member & ~y)), (what, name)
        assert int(table.loc[name, "background_positives"]) == int(np.sum(~member & y)), \
            (what, name)
        for metric in METRICS:
            got, value = table.loc[name, metric], want[metric]
            assert (np.isnan(got) and np.isnan(value)) or abs(got - value) <= 1e-12, \
                (what, name, metric, got, value)


def _python_values(array):
    return [None if (isinstance(v, float) and math.isnan(v)) else v
            for v in np.asarray(array).tolist()]


def _csv(path, name, labels, scores, values):
    """A CSV of columns label, score and ``name`` (the values as written), at ``path``."""
    with open(path, "w") as f:
        f.write(f"label,score,{name}\n")
        f.writelines(f"{int(a)},{float(b)!r},{c}\n" for a, b, c in zip(labels, scores, values))
    return path


# ------------------------------------------------------------- every byte value, both kinds


@pytest.fixture(scope="module")
def bytes_data():
    rng = np.random.default_rng(256)
    n = 768
    u8 = rng.permutation(np.arange(n) % 256).astype(np.uint8)
    i8 = rng.permutation(np.arange(n) % 256).astype(np.uint8).view(np.int8)
    y = rng.random(n) < 0.45
    s = rng.integers(0, 9, n) / 8.0  # heavy ties
    return y, s, u8, i8


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("threshold", BYTE_THRESHOLDS)
def test_member_rows_of_every_byte_value(bytes_data, threshold, compiled):
    """uint8 and int8 numpy columns, all 256 values each: the rows are exactly those at or
    above the threshold (an int8 byte is never read as its unsigned twin)."""
    _, _, u8, i8 = bytes_data
    for column in (u8, i8, u8.astype(np.float32), i8.astype(np.int16)):
        read = identity_values(column, "g", threshold)
        want = np.flatnonzero([v >= threshold for v in column.tolist()])
        got = member_rows(read, compiled=compiled)
        assert got.tolist() == want.tolist(), (column.dtype, threshold, compiled)


@pytest.mark.parametrize("threshold", BYTE_THRESHOLDS)
def test_bias_metrics_of_numpy_byte_columns(bytes_data, threshold):
    """numpy int8/uint8 masks (the no-copy path of identity_values), as a dict and as an
    (n, k) array, through bias_metrics."""
    y, s, u8, i8 = bytes_data
    members = {name: np.array([v >= threshold for v in col.tolist()])
               for name, col in (("u8", u8), ("i8", i8))}
    table = _quietly(fastbias.bias_metrics, y, s, {"u8": u8, "i8": i8},
                     subgroup_threshold=threshold)
    _assert_table(table, y, s, members, f"dict {threshold}")
    matrix = np.column_stack([i8, i8.copy()])
    table = _quietly(fastbias.bias_metrics, y, s, matrix, subgroup_threshold=threshold)
    _assert_table(table, y, s, {"subgroup_0": members["i8"], "subgroup_1": members["i8"]},
                  f"int8 matrix {threshold}")


# ------------------------------------------------------------- float32 edges, uncompiled too

@pytest.mark.parametrize("compiled", [True, False])
def test_float32_threshold_edges_on_both_tiers(compiled):
    """A float32 0.7 is below 0.7: the first-call numpy tier (compiled=False) must compare
    as the kernels do, exactly, not in float32."""
    thresholds = [0.7, 0.1, 0.9, 1 / 3, 0.5, 2.0 ** -30]
    base = np.array(thresholds + [np.nextafter(np.float32(t), np.float32(2)) for t in thresholds]
                    + [np.nextafter(np.float32(t), np.float32(-2)) for t in thresholds]
                    + [np.nan, 0.0, 1.0], dtype=np.float32)
    for threshold in thresholds:
        want = np.flatnonzero([(not math.isnan(v)) and v >= threshold for v in base.tolist()])
        buffer = np.empty(base.shape[0], dtype=np.int64)
        got = column_rows(base, threshold, buffer, compiled=compiled)
        assert got.tolist() == want.tolist(), (threshold, compiled)
        read = identity_values(pd.Series(base), "g", threshold)
        assert member_rows(read, compiled=compiled).tolist() == want.tolist()
        labels = np.arange(base.shape[0]) % 2 == 0
        m = prepare_subgroups(labels, {"g": pd.Series(base)}, threshold, compiled=compiled)
        assert m.identity_rows.tolist() == want.tolist(), (threshold, compiled)


# ------------------------------------------------------------- float16 with NaN, every policy

@pytest.mark.parametrize("missing_subgroup", ["background", "exclude"])
@pytest.mark.parametrize("threshold", [-1, -0.25, 0, 0.25, 0.5, 1])
def test_float16_nan_is_never_a_member(threshold, missing_subgroup):
    """A float16 column's NaN is unannotated: never a member, even at thresholds <= 0."""
    rng = np.random.default_rng(16)
    n = 300
    values = (rng.integers(-4, 5, n) / 4.0).astype(np.float16)
    values[rng.random(n) < 0.2] = np.nan
    y = rng.random(n) < 0.4
    s = rng.integers(0, 7, n) / 6.0
    df = pd.DataFrame({"label": y, "score": s, "h": values})
    member, annotated = _naive_member(_python_values(values.astype(np.float64)), threshold)
    rows = annotated if missing_subgroup == "exclude" else np.ones(n, dtype=bool)
    res = _quietly(fastbias.evaluate, df, label="label", scores="score", subgroups=["h"],
                   subgroup_threshold=threshold, missing_subgroup=missing_subgroup)
    _assert_table(res.for_model(), y[rows], s[rows], {"h": member[rows]},
                  f"float16 {threshold} {missing_subgroup}")
    table = _quietly(fastbias.bias_metrics, y, s, {"h": values}, subgroup_threshold=threshold)
    _assert_table(table, y, s, {"h": member}, f"bias_metrics float16 {threshold}")


# ------------------------------------------------------------- nan_policy="omit" renumbering

@pytest.mark.parametrize("threshold", [0, 0.5, 2])
def test_omitted_rows_leave_every_subgroup(threshold):
    """bias_metrics(nan_policy="omit"): rows dropped for a NaN score leave the subgroups too,
    and the rows after them keep their own memberships (int, uint8, bool and nullable
    columns, read column by column)."""
    rng = np.random.default_rng(7)
    n = 400
    y = rng.random(n) < 0.4
    s = rng.integers(0, 10, n) / 9.0
    s[rng.random(n) < 0.25] = np.nan
    s[0] = np.nan  # the first row dropped too
    small = rng.integers(-2, 4, n)
    flags = rng.random(n) < 0.3
    missing = rng.random(n) < 0.1
    groups = {
        "int": small.astype(np.int64),
        "u8": (np.arange(n) % 256).astype(np.uint8),
        "flag": flags,
        "Int64-NA": pd.array([None if m else int(v) for v, m in zip(small, missing)],
                             dtype="Int64"),
    }
    kept = ~np.isnan(s)
    members = {}
    for name, col in groups.items():
        if name == "flag":
            member = np.asarray(col, dtype=bool)
        else:
            member, _ = _naive_member([None if v is pd.NA else int(v) for v in col], threshold)
        members[name] = member[kept]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = fastbias.bias_metrics(y, s, groups, subgroup_threshold=threshold,
                                      nan_policy="omit")
    _assert_table(table, y[kept], s[kept], members, f"omit {threshold}")


# ------------------------------------------------------------- masks without a threshold

@pytest.mark.parametrize("bad", [-1, 0.5, 2, -0.0001])
def test_a_mask_without_threshold_holds_only_0_and_1(bad):
    """Without a subgroup threshold a numeric column must be 0/1: any other value (below 0,
    between 0 and 1, above 1) is refused, never read as a membership."""
    y = np.array([0, 1, 0, 1, 1, 0])
    s = np.linspace(0, 1, 6)
    for dtype in (np.float64, np.int64) if float(bad).is_integer() else (np.float64,):
        mask = np.array([0, 1, 1, 0, bad, 1], dtype=dtype)
        with pytest.raises(ValueError, match="not a boolean mask"):
            fastbias.bias_metrics(y, s, {"g": mask})
        with pytest.raises(ValueError, match="not a boolean mask"):
            identity_values(mask, "g", None)
    ok = identity_values(np.array([0, 1, 1, 0], dtype=np.int8), "g", None)
    assert ok.member_mask().tolist() == [False, True, True, False]


# ------------------------------------------------------------- batch kinds: all-NA batches

def test_an_all_missing_batch_says_nothing_of_its_kind():
    """A batch whose identity column is all missing (read as float NaN, or a nullable
    integer of NA) has no kind: a later batch of booleans is not a conflict."""
    for empty in (pd.Series([np.nan] * 3), pd.Series([None] * 3, dtype="Int64"),
                  pd.Series([np.nan] * 3, dtype=np.float32)):
        assert identity_kind(empty) is None, empty.dtype
        kinds = BatchKinds(["g"])
        kinds.check(pd.DataFrame({"g": empty}), "in batch 1")
        kinds.check(pd.DataFrame({"g": [True, False, True]}), "in batch 2")
    assert identity_kind(pd.Series([np.nan, 1.0])) == "numeric"
    assert identity_kind(pd.Series([True, False])) == "boolean"
    kinds = BatchKinds(["g"])
    kinds.check(pd.DataFrame({"g": [0.5, np.nan]}), "in batch 1")
    with pytest.raises(TypeError, match="holds boolean values"):
        kinds.check(pd.DataFrame({"g": [True, False]}), "in batch 2")


@pytest.mark.parametrize("missing_subgroup", ["background", "exclude"])
def test_evaluate_csv_with_an_empty_first_batch_of_a_boolean_column(tmp_path,
                                                                    missing_subgroup):
    """evaluate_csv reading in small batches: the identity column is empty (missing) for
    the whole first batch, True/False later; the table is the brute force's."""
    rng = np.random.default_rng(3)
    n = 120
    y = rng.random(n) < 0.5
    s = rng.integers(0, 6, n) / 5.0
    flag = np.where(rng.random(n) < 0.4, "True", "False").astype(object)
    flag[:40] = ""  # the first batch (batch_rows=40): all missing
    flag[rng.random(n) < 0.1] = ""
    path = _csv(tmp_path / "d.csv", "g", y, s, flag)
    annotated = flag != ""
    member = flag == "True"
    rows = annotated if missing_subgroup == "exclude" else np.ones(n, dtype=bool)
    res = _quietly(fastbias.evaluate_csv, path, label="label", scores="score", subgroups=["g"],
                   missing_subgroup=missing_subgroup, batch_rows=40, bucket_rows=50)
    _assert_table(res.for_model(), y[rows], s[rows], {"g": member[rows]},
                  f"csv {missing_subgroup}")


# ------------------------------------------------------------- IdentityValues contract

def test_member_mask_never_counts_a_missing_row():
    """IdentityValues.member_mask: a missing row is never a member, whatever its value
    holds (the readers write 0/False/NaN there; the contract does not rely on it)."""
    values = IdentityValues(np.array([1, 1, 0, 1], dtype=np.uint8), 1.0,
                            np.array([True, False, False, False]), True)
    assert values.member_mask().tolist() == [False, True, False, True]
    floats = IdentityValues(np.array([0.9, 0.2, np.nan, 0.6]), 0.5,
                            np.array([False, False, True, True]), False)
    assert floats.member_mask().tolist() == [True, False, False, False]


# ------------------------------------------------------------- float32 in the code kernel

def test_membership_codes_compare_float32_exactly():
    """membership_codes (out-of-core codes) compares a float32 column with the threshold as
    real numbers, compiled or not: float32(0.7) is below 0.7; missing rows are -1 only when
    marked."""
    from fastbias.prepare import _kernels as K

    thresholds = [0.7, 0.1, 0.9, 1 / 3]
    values = np.array(thresholds + [np.nextafter(np.float32(t), np.float32(2))
                                    for t in thresholds] + [np.nan, 1.0], dtype=np.float32)
    missing = np.isnan(values)
    for threshold in thresholds:
        want = np.array([(not math.isnan(v)) and v >= threshold for v in values.tolist()])
        for mark in (True, False):
            codes = np.full((values.shape[0], 2), 7, dtype=np.int8)
            K.membership_codes(values, threshold, missing, mark, codes, 1)
            expected = np.where(missing, -1 if mark else 0, want.astype(np.int8))
            assert codes[:, 1].tolist() == expected.tolist(), (threshold, mark)
            assert (codes[:, 0] == 7).all()
        codes = np.zeros((values.shape[0], 1), dtype=np.int8)
        K.membership_codes(values, threshold, np.zeros(0, dtype=np.bool_), True, codes, 0)
        assert codes[:, 0].tolist() == want.astype(np.int8).tolist()
        out = np.empty(values.shape[0], dtype=np.int64)
        count = K.threshold_column_rows(values, threshold, out)
        assert out[:count].tolist() == np.flatnonzero(want).tolist(), threshold


@pytest.mark.parametrize("missing_subgroup", ["background", "exclude"])
def test_evaluate_parquet_float32_at_the_threshold(tmp_path, missing_subgroup):
    """A float32 identity column holding float32(0.7), NaN and its neighbours, read out of core
    from Parquet with threshold 0.7: the brute force's table."""
    pytest.importorskip("pyarrow")
    from fastbias.streaming import evaluate_parquet

    rng = np.random.default_rng(32)
    n = 200
    choices = np.array([0.7, np.nextafter(np.float32(0.7), np.float32(1)),
                        np.nextafter(np.float32(0.7), np.float32(0)), 0.2, 0.95, np.nan],
                       dtype=np.float32)
    values = rng.choice(choices, n)
    y = rng.random(n) < 0.5
    s = rng.integers(0, 8, n) / 7.0
    path = tmp_path / "f.parquet"
    pd.DataFrame({"label": y, "score": s, "g": values}).to_parquet(path)
    member, annotated = _naive_member(_python_values(values.astype(np.float64)), 0.7)
    rows = annotated if missing_subgroup == "exclude" else np.ones(n, dtype=bool)
    res = _quietly(evaluate_parquet, path, label="label", scores="score", subgroups=["g"],
                   subgroup_threshold=0.7, missing_subgroup=missing_subgroup, bucket_rows=64,
                   batch_rows=50)
    _assert_table(res.for_model(), y[rows], s[rows], {"g": member[rows]},
                  f"parquet float32 {missing_subgroup}")


# ------------------------------------------------------------- different NaN patterns, pairs

@pytest.fixture(scope="module")
def patchy():
    """Three float identity columns, each with its own missing rows (some rows missing in
    one, some in all), and a label and tied scores."""
    rng = np.random.default_rng(11)
    n = 360
    cols = {}
    for j, name in enumerate("abc"):
        v = rng.integers(0, 4, n) / 3.0
        v[rng.random(n) < 0.15 + 0.1 * j] = np.nan
        cols[name] = v
    everywhere = rng.random(n) < 0.05
    for values in cols.values():
        values[everywhere] = np.nan
    df = pd.DataFrame({"label": rng.random(n) < 0.45, "score": rng.integers(0, 9, n) / 8.0,
                       **cols})
    return df


def _patchy_expected(df, threshold, order):
    import itertools

    masks = {name: _naive_member(_python_values(df[name].to_numpy()), threshold)
             for name in "abc"}
    out = dict(masks)
    if order:
        for r in range(2, order + 1):
            for combo in itertools.combinations("abc", r):
                member = np.logical_and.reduce([masks[x][0] for x in combo])
                annotated = np.logical_and.reduce([masks[x][1] for x in combo])
                out[" & ".join(combo)] = (member, annotated)
    return out


def _assert_patchy(table, df, expected, what):
    y = df["label"].to_numpy(dtype=bool)
    s = df["score"].to_numpy(dtype=np.float64)
    for name, (member, annotated) in expected.items():
        assert name in table.index, (what, name)
        _assert_table(table, y[annotated], s[annotated], {name: member[annotated]},
                      f"{what} {name}")
        assert int(table.loc[name, "background_negatives"]) == \
            int(np.sum(~member & ~y & annotated)), (what, name)


@pytest.mark.parametrize("threshold", [0.5, 1])
def test_subgroups_with_their_own_missing_rows_exclude_only_their_own(patchy, tmp_path,
                                                                       threshold):
    """missing_subgroup="exclude" with a different missing pattern per column: each subgroup
    (and each intersection: rows missing in any part) leaves out only its own unannotated
    rows, in memory, from a CSV and from Parquet."""
    df = patchy
    for order in (None, 2, 3):
        expected = _patchy_expected(df, threshold, order)
        kw = {"label": "label", "scores": "score", "subgroups": list("abc"),
              "subgroup_threshold": threshold, "missing_subgroup": "exclude",
              "intersections": order}
        res = _quietly(fastbias.evaluate, df, **kw)
        _assert_patchy(res.for_model(), df, expected, f"evaluate {order}")
        path = tmp_path / "p.csv"
        df.to_csv(path, index=False)
        res = _quietly(fastbias.evaluate_csv, path, batch_rows=100, bucket_rows=80, **kw)
        _assert_patchy(res.for_model(), df, expected, f"evaluate_csv {order}")


def test_combination_codes_brute_force():
    """with_combination_codes on every (n, 3) code row of {-1, 0, 1}: 1 when every part is 1,
    -1 when any part is -1, else 0 (pairs and triples)."""
    import itertools

    from fastbias.prepare.encoded import with_combination_codes

    rows = np.array(list(itertools.product([-1, 0, 1], repeat=3)), dtype=np.int8)
    combos = [(0, 1), (0, 2), (1, 2), (0, 1, 2)]
    out = with_combination_codes(rows, combos)
    assert (out[:, :3] == rows).all()
    for i, row in enumerate(rows.tolist()):
        for t, combo in enumerate(combos):
            parts = [row[j] for j in combo]
            want = -1 if -1 in parts else (1 if all(p == 1 for p in parts) else 0)
            assert out[i, 3 + t] == want, (row, combo)


# ------------------------------------------------------------- object booleans, features

def test_object_booleans_are_boolean_batches(tmp_path):
    """A CSV's True/False column with an empty cell is read as objects (bools and NaN): that
    batch is boolean like one without empties, not a conflict."""
    assert identity_kind(pd.Series([True, None, False], dtype=object)) == "boolean"
    assert identity_kind(pd.Series([True, np.nan, False], dtype=object)) == "boolean"
    assert identity_kind(pd.Series([1, None, 0.5], dtype=object)) == "numeric"
    rng = np.random.default_rng(5)
    n = 90
    y = rng.random(n) < 0.5
    s = rng.integers(0, 6, n) / 5.0
    flag = np.where(rng.random(n) < 0.4, "True", "False").astype(object)
    flag[45:][rng.random(n - 45) < 0.2] = ""  # the second batch only has empty cells
    path = tmp_path / "o.csv"
    with open(path, "w") as f:
        f.write("label,score,g\n")
        f.writelines(f"{int(a)},{float(b)!r},{c}\n" for a, b, c in zip(y, s, flag))
    member, annotated = flag == "True", flag != ""
    res = _quietly(fastbias.evaluate_csv, path, label="label", scores="score", subgroups=["g"],
                   missing_subgroup="exclude", batch_rows=45, bucket_rows=50)
    _assert_table(res.for_model(), y[annotated], s[annotated], {"g": member[annotated]}, "csv")


@pytest.mark.parametrize("missing_subgroup", ["background", "exclude"])
def test_sensitive_features_with_missing_values_out_of_core(tmp_path, missing_subgroup):
    """sensitive_features with empty cells, read from a CSV: each value's subgroup is its
    rows; a missing value's row is in no subgroup and, under exclude, in no background of
    that feature (every value, the last included)."""
    rng = np.random.default_rng(9)
    n = 240
    y = rng.random(n) < 0.5
    s = rng.integers(0, 7, n) / 6.0
    race = rng.choice(np.array(["a", "b", "c"], dtype=object), n)
    race[rng.random(n) < 0.15] = ""
    path = _csv(tmp_path / "f.csv", "race", y, s, race)
    annotated = race != ""
    rows = annotated if missing_subgroup == "exclude" else np.ones(n, dtype=bool)
    res = _quietly(fastbias.evaluate_csv, path, label="label", scores="score",
                   sensitive_features=["race"], missing_subgroup=missing_subgroup,
                   batch_rows=60, bucket_rows=80)
    table = res.for_model()
    for value in "abc":
        member = race == value
        _assert_table(table, y[rows], s[rows], {f"race={value}": member[rows]},
                      f"features {missing_subgroup}")
        assert int(table.loc[f"race={value}", "background_negatives"]) == \
            int(np.sum(~member & ~y & rows))


def test_dask_partition_that_contradicts_the_meta_is_refused():
    """A Dask DataFrame whose meta says an identity column is boolean, but whose (only)
    partition holds numbers: refused by name, never read as numbers."""
    dd = pytest.importorskip("dask.dataframe")
    import dask

    import fastbias.dask

    rng = np.random.default_rng(1)
    n = 40
    df = pd.DataFrame({"label": rng.random(n) < 0.5, "score": rng.random(n),
                       "g": rng.random(n) < 0.5})
    meta = df.iloc[:0]
    frame = dd.from_pandas(df, npartitions=1).map_partitions(
        lambda p: p.assign(g=np.where(p["g"], 0.75, 0.25)), meta=meta)
    with dask.config.set({"scheduler": "synchronous"}), pytest.raises(TypeError, match="'g'"):
        _quietly(fastbias.dask.evaluate, frame, label="label", scores="score", subgroups=["g"])
