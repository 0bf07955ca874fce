"""An independent review's tests (2026-11-27): a mutation audit of the membership stage
(identity columns -> subgroup members: fastbias/prepare/_kernels.py, prepare/memberships.py,
validate/subgroups.py, validate/values.py). Of 41 hand-made mutants the suite killed 27; these
tests kill 6 more (a dense matrix whose column count makes ``k * (1 / k)`` round below 1, a
column of all members one word past a multiple of 64 rows, the threaded dense scan's labels
and word-aligned pieces, a one-row batch with an unannotated row under ``exclude``, rows
dropped by ``nan_policy="omit"`` counted for a combination's minimum size); 8 were
equivalent. No defect was found.

Expected values come from plain-Python / numpy brute force (member iff value >=
subgroup_threshold, NaN/NA never a member, as docs/validation.md says), never from fastbias.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.prepare import memberships as PM

# ----------------------------------------------------------------------------- reference

def _ref_counts(y, member, excluded=None):
    """(size, negatives, positives, background negatives, background positives)."""
    y = np.asarray(y, dtype=bool)
    member = np.asarray(member, dtype=bool)
    keep = np.ones_like(member) if excluded is None else ~np.asarray(excluded, dtype=bool)
    return (int(member.sum()), int((member & ~y).sum()), int((member & y).sum()),
            int((~member & ~y & keep).sum()), int((~member & y & keep).sum()))


def _ref_auc(neg_scores, pos_scores):
    """Mann-Whitney AUC by brute-force pair counts (ties 1/2)."""
    if len(neg_scores) == 0 or len(pos_scores) == 0:
        return float("nan")
    wins = 0.0
    for p in pos_scores:
        for q in neg_scores:
            wins += 1.0 if p > q else 0.5 if p == q else 0.0
    return wins / (len(neg_scores) * len(pos_scores))


COLS = ["subgroup_size", "subgroup_negatives", "subgroup_positives",
        "background_negatives", "background_positives"]


def _counts_of(table, name):
    return tuple(int(table.loc[name, c]) for c in COLS)


def _quiet_bias_metrics(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fastbias.bias_metrics(*args, **kwargs)


def _ref_csr(matrix):
    """Row CSR of a dense 0/1 matrix by np.nonzero (row-major)."""
    rows, cols = np.nonzero(matrix)
    identity_rows, first = np.unique(rows, return_index=True)
    return identity_rows, np.append(first, rows.shape[0]), cols


# ------------------------------------------------ _row_of's upward correction (K7)

@pytest.mark.parametrize("k", [49, 98, 103, 107])
def test_dense_matrix_with_k_where_float_division_undershoots(k):
    """For k = 49, 98, 103, 107 columns, ``int(k * (1.0 / k))`` is 0, not 1: the position of
    row 1, column 0 is mapped to row 0 unless ``_row_of`` corrects upward on
    ``(row + 1) * n_cols <= position`` (mutant ``<`` leaves it at row 0, column k: a member of
    a column that does not exist and a row lost). Every subgroup's counts must be the column
    sums of the matrix."""
    rng = np.random.default_rng(k)
    n = 41
    matrix = rng.random((n, k)) < 0.3
    matrix[1, 0] = True  # position k exactly
    matrix[2, 0] = True  # position 2k (98 = 2 * 49)
    y = np.arange(n) % 3 == 0
    s = rng.random(n)
    table = _quiet_bias_metrics(y, s, matrix)
    for j in range(k):
        assert _counts_of(table, f"subgroup_{j}") == _ref_counts(y, matrix[:, j]), j
    m = matrix[:, 0]
    got = table.loc["subgroup_0", "subgroup_auc"]
    assert got == pytest.approx(_ref_auc(s[m & ~y], s[m & y]), abs=1e-12)
    # and the CSR itself, against np.nonzero
    mem = PM.prepare_memberships_dense(y, matrix, [f"subgroup_{j}" for j in range(k)])
    ref_rows, ref_ptr, ref_groups = _ref_csr(matrix)
    np.testing.assert_array_equal(mem.identity_rows, ref_rows)
    np.testing.assert_array_equal(mem.row_ptr, ref_ptr)
    np.testing.assert_array_equal(mem.row_groups, ref_groups)


# ------------------------------------------- the dense scan's room check (K8, K9)

@pytest.mark.parametrize("n", list(range(56, 81)) + [127, 128, 129, 513, 520])
def test_all_true_boolean_column_of_every_small_length(n):
    """A bool column whose rows are all members but row 0: the byte scan writes up to 8
    members a word into an output sized max(n // 64, 64), so the room check must count 8
    a word (mutant 7: 72 members written into 64 slots, the slice keeps 64, rows lost) and
    the tail bytes too."""
    y = np.arange(n) % 2 == 0
    s = (np.arange(n) * 7919 % 101) / 101.0
    column = np.ones(n, dtype=bool)
    column[0] = False
    for sub in ({"g": column}, {"g": column.astype(np.uint8)}):
        table = _quiet_bias_metrics(y, s, sub, subgroup_threshold=0.5)
        assert _counts_of(table, "g") == _ref_counts(y, column), n
    buffer = np.empty(n, dtype=np.int64)
    np.testing.assert_array_equal(PM.column_rows(column, 1.0, buffer), np.arange(1, n))


@pytest.mark.parametrize("n", [9, 33, 65, 71, 72, 73])
def test_all_true_dense_matrix_of_small_lengths(n):
    """(n, 1) and (n, 3) all-True matrices: every row of every subgroup is a member."""
    y = np.arange(n) % 2 == 0
    for k in (1, 3):
        matrix = np.ones((n, k), dtype=bool)
        mem = PM.prepare_memberships_dense(y, matrix, [f"g{j}" for j in range(k)])
        ref_rows, ref_ptr, ref_groups = _ref_csr(matrix)
        np.testing.assert_array_equal(mem.identity_rows, ref_rows)
        np.testing.assert_array_equal(mem.row_ptr, ref_ptr)
        np.testing.assert_array_equal(mem.row_groups, ref_groups)


# ------------------------------------- ranges of rows start at whole words (M4, M5, K15)

def test_dense_scan_on_threads_with_ranges_not_multiple_of_8():
    """prepare_memberships_dense on 2 workers (the pool path: several ranges at n = 400,003)
    gives the np.nonzero CSR. (Pin only: each range is scanned from its own start, so
    dropping the ``// 8 * 8`` of its bounds (mutant M5) is equivalent on x86.)"""
    rng = np.random.default_rng(5)
    n, k = 400_003, 3
    matrix = rng.random((n, k)) < 0.02
    labels = rng.random(n) < 0.4
    mem = PM.prepare_memberships_dense(labels, matrix, ["a", "b", "c"], workers=2)
    ref_rows, ref_ptr, ref_groups = _ref_csr(matrix)
    np.testing.assert_array_equal(mem.identity_rows, ref_rows)
    np.testing.assert_array_equal(mem.row_ptr, ref_ptr)
    np.testing.assert_array_equal(mem.row_groups, ref_groups)
    np.testing.assert_array_equal(mem.identity_labels, labels[ref_rows])


@pytest.mark.parametrize("pieces", [2, 3, 7])
def test_dense_csr_on_numba_pieces_against_nonzero(pieces):
    """csr_from_dense_on_numba (the Numba-threads round, taken on machines with TBB and 8+
    workers) called with explicit pieces: ranges must start at multiples of 8 rows, and each
    identity row's label is labels[row] (not labels[its rank])."""
    rng = np.random.default_rng(pieces)
    n, k = 1_003, 3
    matrix = rng.random((n, k)) < 0.1
    labels = rng.random(n) < 0.5
    flat = np.ascontiguousarray(matrix).view(np.uint8).reshape(-1)
    if flat.ctypes.data % 8:
        flat = flat.copy()
    rows, ptr, groups, id_labels = PM.csr_from_dense_on_numba(flat, n, k, labels, pieces)
    ref_rows, ref_ptr, ref_groups = _ref_csr(matrix)
    np.testing.assert_array_equal(rows, ref_rows)
    np.testing.assert_array_equal(ptr, ref_ptr)
    np.testing.assert_array_equal(groups, ref_groups)
    np.testing.assert_array_equal(id_labels, labels[ref_rows])


# ---------------------------------------- out-of-core codes of a one-row batch (K21)

@pytest.mark.parametrize("missing_subgroup", ["exclude", "background"])
def test_csv_one_row_batches_with_unannotated_row(tmp_path, missing_subgroup):
    """evaluate_csv with batch_rows=1: the unannotated row is alone in its batch (a missing
    mask of one entry). Under "exclude" it leaves the background (background negatives 1,
    not 2); under "background" it is a background negative. Reference: hand count."""
    df = pd.DataFrame({"y": [0, 1, 0, 1, 0, 1, 0],
                       "s": [.1, .9, .3, .2, .5, .6, .7],
                       "g": [1.0, 1, 0, 0, np.nan, 0, 1]})
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    member = (df["g"] >= 0.5).to_numpy()  # NaN >= 0.5 is False: never a member
    excluded = df["g"].isna().to_numpy() if missing_subgroup == "exclude" else None
    expected = _ref_counts(df["y"].to_numpy(), member, excluded)
    for batch_rows in (1, 2, 1000):
        r = fastbias.evaluate_csv(path, label="y", scores="s", subgroups=["g"],
                                  missing_subgroup=missing_subgroup, batch_rows=batch_rows)
        t = r.table.set_index("subgroup")
        assert _counts_of(t, "g") == expected, batch_rows


# ------------------------------- categorical columns with nan_policy="omit" (M12)

def test_dropped_rows_do_not_count_for_a_combination_min_size():
    """Two categorical subgroup columns and nan_policy="omit": a row dropped for its NaN
    score is in no subgroup and must not count towards a combination's min_subgroup_size.
    "a=x & b=u" holds, among the kept rows, one positive and no negative: with
    min_subgroup_size=1 it is not listed (mutant: the dropped row counted as a negative of
    it, and the combination is listed with metrics that have no negatives)."""
    a = pd.Series(["x", "x", "y", "y", "x", "y", "y"])
    b = pd.Series(["u", "u", "v", "u", "v", "v", "u"])
    y = np.array([1, 0, 0, 1, 0, 1, 0])
    s = np.array([0.9, np.nan, 0.2, 0.8, 0.4, 0.3, 0.1])
    table = _quiet_bias_metrics(y, s, {"a": a, "b": b}, nan_policy="omit")
    kept = ~np.isnan(s)
    combos = {}
    for i in np.flatnonzero(kept):
        combos.setdefault(f"a={a[i]} & b={b[i]}", []).append(y[i])
    expected = sorted(name for name, ys in combos.items() if 0 in ys and 1 in ys)
    got = sorted(name for name in table.index if " & " in name)
    assert got == expected
    assert "a=x & b=u" not in table.index


# -------------------------------------- nullable integers: NA never a member (S2)

@pytest.mark.parametrize("threshold", [0, -3, 0.5])
def test_nullable_integer_na_is_never_a_member_at_any_threshold(threshold):
    """A nullable Int64 column with <NA>: at a threshold at or below the value the reader
    puts under the mask (0), <NA> must still be a non-member (docs/validation.md: with a
    threshold, never a member)."""
    col = pd.array([1, None, 0, 2, None, -5, 3, 0], dtype="Int64")
    y = np.array([0, 1, 0, 1, 0, 1, 1, 0])
    s = np.array([.1, .9, .3, .2, .5, .6, .7, .4])
    annotated = ~np.asarray(pd.isna(col))
    values = np.where(annotated, np.asarray(col.fillna(0), dtype=np.int64), 0)
    member = annotated & (values >= threshold)
    table = _quiet_bias_metrics(y, s, {"g": col}, subgroup_threshold=threshold)
    assert _counts_of(table, "g") == _ref_counts(y, member)


# ------------------------------- no threshold: a fraction is refused, not read (S4)

def test_fraction_in_mask_without_threshold_is_refused_with_position():
    """Without subgroup_threshold a numeric identity column must hold 0 and 1 only; 0.5 at
    position 2 is a ValueError naming the column, the value and its position (mutant: range
    check 0 <= v <= 1 lets 0.5 through, silently a non-member)."""
    y = np.array([0, 1, 0, 1])
    s = np.array([.1, .9, .3, .2])
    with pytest.raises(ValueError) as info:
        fastbias.bias_metrics(y, s, {"grp": np.array([0.0, 1.0, 0.5, 1.0])})
    msg = str(info.value)
    assert "grp" in msg and "0.5" in msg and "2" in msg


# --------------------------- a mis-aligned boolean column through the byte scan (M3)

@pytest.mark.parametrize("offset", range(1, 8))
def test_misaligned_boolean_column(offset):
    """A bool column that starts mid-word (a slice of a larger array): members are exactly
    its True rows. (Pin only: without the aligning copy (mutant M3) numpy/numba read the
    unaligned words correctly on x86.)"""
    rng = np.random.default_rng(offset)
    big = rng.random(1_000 + offset) < 0.3
    column = big[offset:]
    n = column.shape[0]
    buffer = np.empty(n, dtype=np.int64)
    np.testing.assert_array_equal(PM.column_rows(column, 1.0, buffer), np.flatnonzero(column))
