"""The building blocks of the unweighted sweep, each against a plain numpy reference.

The end-to-end metrics are checked against brute force elsewhere; these tests
pin down the pieces on the inputs that stress them: dense membership scans of
every width (tails shorter than a word, all-ones matrices that overflow the
first capacity guess), class sorts with signed zeros, subnormals and both
widths, and the membership sort.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from fastbias.prepare import _kernels as PK
from fastbias.prepare.memberships import (
    dense_members,
    prepare_memberships,
    prepare_memberships_dense,
)
from fastbias.sort.order import sort_classes, sort_memberships
from fastbias.sweep import _kernels as K

UINT = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}


def numpy_sortable_keys(values: np.ndarray) -> np.ndarray:
    """Independent numpy version of the float -> order-preserving unsigned key map."""
    values = values + values.dtype.type(0.0)  # -0.0 -> +0.0
    uint = UINT[values.dtype]
    bits = values.view(uint)
    sign = uint(1) << uint(8 * values.dtype.itemsize - 1)
    return np.where(bits & sign, ~bits, bits | sign).astype(uint)


def dense_case(rng, n_rows, n_cols, density):
    return rng.random((n_rows, n_cols)) < density


# ------------------------------------------------------------------ dense membership scan

@pytest.mark.parametrize("n_cols", [1, 3, 7, 8, 9, 24, 70])
@pytest.mark.parametrize("density", [0.0, 0.02, 0.3, 1.0])
@pytest.mark.parametrize("n_rows", [0, 1, 5, 1001])
def test_dense_members_equal_numpy_nonzero(n_rows, n_cols, density):
    matrix = dense_case(np.random.default_rng(n_rows * 100 + n_cols), n_rows, n_cols, density)
    flat = matrix.view(np.uint8).reshape(-1)
    words = flat[:flat.shape[0] // 8 * 8].view(np.uint64)
    for capacity in (0, 5, n_rows * n_cols):  # too small forces the output to grow
        rows, cols = dense_members(words, flat, n_cols, capacity)
        expected_rows, expected_cols = np.nonzero(matrix)
        np.testing.assert_array_equal(rows, expected_rows)
        np.testing.assert_array_equal(cols, expected_cols)


def test_dense_members_across_scan_chunks():
    """More words than one scan chunk, with the output growing between chunks."""
    n_cols = 5
    n_rows = PK.DENSE_SCAN_CHUNK_WORDS * 8 * 3 // n_cols + 3
    matrix = dense_case(np.random.default_rng(3), n_rows, n_cols, 0.5)
    flat = matrix.view(np.uint8).reshape(-1)
    words = flat[:flat.shape[0] // 8 * 8].view(np.uint64)
    rows, cols = dense_members(words, flat, n_cols, 1)
    expected_rows, expected_cols = np.nonzero(matrix)
    np.testing.assert_array_equal(rows, expected_rows)
    np.testing.assert_array_equal(cols, expected_cols)


@pytest.mark.parametrize("n_cols", [1, 5, 24])
def test_dense_members_every_byte_value(n_cols):
    """Any non-zero byte is a member (0x80 alone, 0x7F, 0xFF, ...), in words that are all
    zero, all members or mixed, across scan chunks (the branch-free list of non-zero words)."""
    rng = np.random.default_rng(n_cols)
    n_rows = PK.DENSE_SCAN_CHUNK_WORDS * 8 * 2 // n_cols + 7
    values = np.zeros(n_rows * n_cols, dtype=np.uint8)
    sparse = rng.random(values.shape[0]) < 0.01
    values[sparse] = rng.integers(1, 256, int(sparse.sum()))
    values[:256] = np.arange(256)  # every byte value, one per column position
    dense_block = slice(values.shape[0] // 2, values.shape[0] // 2 + 4096)
    values[dense_block] = rng.integers(0, 256, 4096)
    matrix = values.reshape(n_rows, n_cols)
    flat = matrix.reshape(-1)
    words = flat[:flat.shape[0] // 8 * 8].view(np.uint64)
    rows, cols = dense_members(words, flat, n_cols, 0)
    expected_rows, expected_cols = np.nonzero(matrix)
    np.testing.assert_array_equal(rows, expected_rows)
    np.testing.assert_array_equal(cols, expected_cols)


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.bool_, hnp.array_shapes(min_dims=2, max_dims=2, max_side=40)))
def test_dense_memberships_equal_column_memberships(matrix):
    labels = np.arange(matrix.shape[0]) % 3 == 0
    names = [f"g{j}" for j in range(matrix.shape[1])]
    dense = prepare_memberships_dense(labels, matrix, names)
    columns = prepare_memberships(labels, [np.flatnonzero(matrix[:, j])
                                           for j in range(matrix.shape[1])], names)
    for field in ("identity_rows", "row_ptr", "row_groups", "identity_labels", "cell_rows"):
        np.testing.assert_array_equal(getattr(dense, field), getattr(columns, field))
    expected_cells = np.stack([(matrix & ~labels[:, None]).sum(axis=0),
                               (matrix & labels[:, None]).sum(axis=0)], axis=1)
    np.testing.assert_array_equal(dense.cell_rows, expected_cells)


@pytest.mark.parametrize("n_rows", [1, 2, 63, 64, 65, 127, 128, 129, 1000, 4099])
@pytest.mark.parametrize("density", [0.0, 0.01, 0.3, 1.0])
def test_row_csr_from_column_rows_equals_numpy(n_rows, density):
    rng = np.random.default_rng(n_rows)
    matrix = rng.random((n_rows, 7)) < density
    matrix[:, 2] = False  # an empty subgroup between others
    matrix[[0, n_rows - 1], 5] = True  # the first and the last row
    matrix[np.arange(n_rows) % 64 == 63, 6] = True  # the last bit of every word
    group_rows = [np.flatnonzero(matrix[:, j]) for j in range(7)]
    group_ptr = np.concatenate([[0], np.cumsum([len(r) for r in group_rows])])
    flat = np.concatenate(group_rows).astype(np.int64)
    identity_rows, row_ptr, row_groups = PK.build_row_csr(flat, group_ptr, n_rows)
    rows, cols = np.nonzero(matrix)  # row-major: each row's subgroups in order
    np.testing.assert_array_equal(identity_rows, np.unique(rows))
    np.testing.assert_array_equal(row_ptr, np.concatenate(
        [[0], np.cumsum(matrix[matrix.any(axis=1)].sum(axis=1))]))
    np.testing.assert_array_equal(row_groups, cols)


# ------------------------------------------------------------------------- class sorts

def special_values(dtype):
    info = np.finfo(dtype)
    return np.array([0.0, -0.0, info.max, -info.max, info.tiny, -info.tiny,
                     info.smallest_subnormal, -info.smallest_subnormal, 1.0, -1.0, 0.5, 0.5],
                    dtype=dtype)


@settings(max_examples=80, deadline=None)
@given(values=hnp.arrays(st.sampled_from([np.float32, np.float64]), st.integers(0, 400),
                         elements=st.floats(allow_nan=False, allow_infinity=False, width=32)),
       data=st.data())
def test_sort_classes_equals_numpy_sort(values, data):
    labels = np.asarray(data.draw(st.lists(st.booleans(), min_size=values.size,
                                           max_size=values.size)), dtype=np.bool_)
    got = sort_classes(values, labels)
    for keys, mask in ((got.neg_keys, ~labels), (got.pos_keys, labels)):
        assert keys.dtype == UINT[values.dtype]
        np.testing.assert_array_equal(keys, numpy_sortable_keys(np.sort(values[mask])))
    neg, pos = values[~labels].astype(np.float64), values[labels].astype(np.float64)
    twice_u = 2 * (pos[:, None] > neg[None, :]).sum() + (pos[:, None] == neg[None, :]).sum()
    none = np.empty(0, dtype=np.int64)
    assert K.twice_auc_numerator_sorted(got.neg_keys, got.pos_keys, none, none) == twice_u
    # integer weights (bootstrap counts): every pair counts w_neg * w_pos times
    rng = np.random.default_rng(values.size)
    w_neg = rng.integers(0, 4, neg.size)
    w_pos = rng.integers(0, 4, pos.size)
    neg_sorted, pos_sorted = np.sort(neg, kind="stable"), np.sort(pos, kind="stable")
    pair_w = w_pos[:, None] * w_neg[None, :]
    want = (2 * (pair_w * (pos_sorted[:, None] > neg_sorted[None, :])).sum()
            + (pair_w * (pos_sorted[:, None] == neg_sorted[None, :])).sum())
    got_weighted = K.twice_auc_numerator_sorted(got.neg_keys, got.pos_keys,
                                                np.r_[0, np.cumsum(w_neg)], w_pos)
    assert got_weighted == want


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sort_classes_extreme_values_and_signed_zero(dtype):
    values = np.tile(special_values(dtype), 50)
    labels = np.arange(values.size) % 4 == 1
    got = sort_classes(values, labels)
    np.testing.assert_array_equal(got.neg_keys, numpy_sortable_keys(np.sort(values[~labels])))
    np.testing.assert_array_equal(got.pos_keys, numpy_sortable_keys(np.sort(values[labels])))
    # -0.0 and +0.0 give one key: the keys tie exactly where the scores do
    zero_keys = numpy_sortable_keys(np.array([0.0, -0.0], dtype=dtype))
    assert zero_keys[0] == zero_keys[1]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_walks_keys_made_in_numpy_are_the_sorts_keys(dtype):
    """Weighted walks and the numpy tier turn scores into keys in place
    (``sortable_keys_in_place``, in blocks): the sorts' keys of the same scores, bit for bit,
    across the blocks' edges, for every special value."""
    from fastbias.sort import order

    rng = np.random.default_rng(3)
    with np.errstate(over="ignore"):
        values = np.concatenate([np.tile(special_values(dtype), 40), [np.inf, -np.inf],
                                 rng.standard_normal(3 * order._KEYS_BLOCK + 5)
                                 * 10.0 ** rng.integers(-60, 60, 3 * order._KEYS_BLOCK + 5)
                                 ]).astype(dtype)
    values = values[rng.permutation(values.size)]
    got = order.sortable_keys_in_place(values.copy())
    assert got.dtype == UINT[np.dtype(dtype)]
    np.testing.assert_array_equal(got, numpy_sortable_keys(values))
    labels = np.zeros(values.size, dtype=bool)
    np.testing.assert_array_equal(np.sort(got), sort_classes(values, labels).neg_keys)
    assert order.sortable_keys_in_place(np.empty(0, dtype=dtype)).size == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weighted", [False, True])
def test_every_walk_reads_the_sorts_key_type(dtype, weighted):
    """Weighted walks read the scores' sortable keys as unweighted ones read the sorts' (and
    int32 codes), so the walks' kernels compile one version per key width (they compiled
    one more for float scores each: 19 s of the significance family's background compile),
    and so does the numpy tier's walk; the same memberships, keys and weights."""
    from fastbias.intervals.first_call import walk_in_numpy
    from fastbias.prepare.memberships import prepare_memberships_dense
    from fastbias.sort.order import SortedScores
    from fastbias.sweep.walk import member_walk

    rng = np.random.default_rng(11)
    n = 3000
    scores = (rng.integers(-20, 20, n) / 7).astype(dtype)
    scores[rng.random(n) < 0.05] = -0.0
    labels = rng.random(n) < 0.3
    dense = rng.random((n, 3)) < 0.3
    memberships = prepare_memberships_dense(labels, dense, ["a", "b", "c"])
    weights = rng.random(n) if weighted else None
    for walk in (member_walk(SortedScores(scores, memberships), weights),
                 walk_in_numpy(scores, memberships, weights)):
        assert walk.keys.dtype == walk.neg.dtype == walk.pos.dtype == UINT[np.dtype(dtype)]
        assert walk.codes.dtype == np.int32
        np.testing.assert_array_equal(walk.neg, numpy_sortable_keys(np.sort(scores[~labels])))
        np.testing.assert_array_equal(walk.pos, numpy_sortable_keys(np.sort(scores[labels])))
        assert (walk.keys[1:] >= walk.keys[:-1]).all()
        # the memberships: each (key, code[, weight]) of a brute-force listing, once
        rows, groups = np.nonzero(dense)
        want = sorted(zip(numpy_sortable_keys(scores[rows]).tolist(),
                          (2 * groups + labels[rows]).tolist(),
                          (weights[rows] if weighted else np.zeros(rows.size)).tolist()))
        got = sorted(zip(walk.keys.tolist(), walk.codes.tolist(),
                         (walk.weights if weighted else np.zeros(walk.keys.size)).tolist()))
        assert got == want


def test_sort_classes_one_class_and_empty():
    values = np.array([0.3, 0.1, 0.2], dtype=np.float32)
    only_negatives = sort_classes(values, np.zeros(3, dtype=bool))
    none = np.empty(0, dtype=np.int64)
    assert only_negatives.pos_keys.size == 0 and K.twice_auc_numerator_sorted(
        only_negatives.neg_keys, only_negatives.pos_keys, none, none) == 0
    np.testing.assert_array_equal(only_negatives.neg_keys, numpy_sortable_keys(np.sort(values)))
    empty = sort_classes(np.empty(0), np.empty(0, dtype=bool))
    assert empty.neg_keys.size == empty.pos_keys.size == 0


# -------------------------------------------------------------------- membership sort

@settings(max_examples=60, deadline=None)
@given(data=st.data(), dtype=st.sampled_from([np.float32, np.float64]))
def test_sort_memberships_lists_every_membership_in_score_order(data, dtype):
    n = data.draw(st.integers(0, 60))
    k = data.draw(st.integers(1, 5))
    values = np.asarray(data.draw(st.lists(st.sampled_from(list(special_values(dtype))),
                                           min_size=n, max_size=n)), dtype=dtype)
    labels = np.asarray(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    matrix = np.asarray(data.draw(st.lists(st.lists(st.booleans(), min_size=k, max_size=k),
                                           min_size=n, max_size=n)), dtype=bool).reshape(n, k)
    m = prepare_memberships_dense(labels, matrix, [f"g{j}" for j in range(k)])
    keys, codes = sort_memberships(values, m)
    rows, cols = np.nonzero(matrix)
    expected_keys = numpy_sortable_keys(values[rows])
    expected_codes = 2 * cols + labels[rows]
    order = np.argsort(expected_keys, kind="stable")  # stable: row-major order within ties
    np.testing.assert_array_equal(keys, expected_keys[order])
    np.testing.assert_array_equal(codes, expected_codes[order])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("spread", ["uniform", "rounded", "narrow", "logits"])
def test_sort_classes_large_inputs(dtype, spread):
    """Buckets far above the insertion-sort size, skewed and single-bucket distributions."""
    rng = np.random.default_rng(11)
    n = 200_000
    values = {"uniform": rng.random(n),
              "rounded": np.round(rng.beta(0.5, 4, n), 3),
              "narrow": 0.5 + rng.random(n) * 1e-3,  # every score shares its top digit
              "logits": rng.normal(0, 4, n)}[spread].astype(dtype)
    labels = rng.random(n) < 0.1
    got = sort_classes(values, labels)
    np.testing.assert_array_equal(got.neg_keys, numpy_sortable_keys(np.sort(values[~labels])))
    np.testing.assert_array_equal(got.pos_keys, numpy_sortable_keys(np.sort(values[labels])))


# ------------------------------------------------------------------ counts, split in two

def tied_memberships(rng, n, k, levels):
    values = (rng.integers(0, levels, n) / levels).astype(np.float32)
    labels = rng.random(n) < 0.3
    matrix = rng.random((n, k)) < 0.4
    m = prepare_memberships_dense(labels, matrix, [f"g{j}" for j in range(k)])
    return sort_memberships(values, m), sort_classes(values, labels), k


def all_member_counts(keys, codes, classes, k):
    """The unweighted counts of every membership, in one range on one thread."""
    no = np.empty(0, dtype=np.int64)
    return K.finish_member_counts(K.member_counts_in_range(
        keys, codes, 0, keys.shape[0], classes.neg_keys, classes.pos_keys, k, no, no, no))


@pytest.mark.parametrize("levels", [3, 40, 100_000])
def test_counts_of_two_adjacent_ranges_join_exactly(levels):
    (keys, codes), classes, k = tied_memberships(np.random.default_rng(levels), 3_000, 4, levels)
    whole = all_member_counts(keys, codes, classes, k)
    boundaries = [0] + [t for t in range(1, keys.size) if keys[t] != keys[t - 1]] + [keys.size]
    for middle in boundaries[::max(1, len(boundaries) // 25)] + [keys.size]:
        no = np.empty(0, dtype=np.int64)
        lower = K.member_counts_in_range(keys, codes, 0, middle, classes.neg_keys,
                                         classes.pos_keys, k, no, no, no)
        upper = K.member_counts_in_range(keys, codes, middle, keys.size, classes.neg_keys,
                                         classes.pos_keys, k, no, no, no)
        joined = K.finish_member_counts(K.add_member_counts(lower, upper))
        np.testing.assert_array_equal(joined, whole)


def test_block_boundary_never_splits_equal_scores():
    keys = np.array([1, 1, 1, 2, 2, 3, 3, 3, 3], dtype=np.uint32)
    assert [K.block_boundary_near(keys, t) for t in range(10)] == [3, 3, 3, 3, 5, 5, 9, 9, 9, 9]
    assert K.block_boundary_near(keys[:0], 0) == 0


@pytest.mark.parametrize("workers", [2, 3, 8])
def test_counts_on_many_threads_equal_one(monkeypatch, workers):
    import fastbias.sweep.counts as core

    sorted_members, classes, k = tied_memberships(np.random.default_rng(5), 5_000, 6, 50)
    no = np.empty(0, dtype=np.int64)
    alone = all_member_counts(*sorted_members, classes, k)
    monkeypatch.setattr(core, "PARALLEL_COUNT_MIN_MEMBERSHIPS", 0)
    split, twice_u = core.count_all(sorted_members, classes, k, workers=workers)
    np.testing.assert_array_equal(split, alone)
    expected_cells = np.bincount(sorted_members[1], minlength=2 * k).reshape(k, 2)
    np.testing.assert_array_equal(split[:, [K.CELL_SUBGROUP_NEG, K.CELL_SUBGROUP_POS]],
                                  expected_cells)
    assert twice_u == K.twice_auc_numerator_sorted(classes.neg_keys, classes.pos_keys, no, no)


# ------------------------------------------------------------------ one membership column

@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.float64])
@pytest.mark.parametrize("threshold", [0.0, 0.5, 1.0, 1.5])
@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 1_000, 100_003])
@pytest.mark.parametrize("offset", [0, 3])  # a slice that starts off a word boundary
def test_column_rows_equal_numpy(n, threshold, dtype, offset):
    from fastbias.prepare.memberships import column_rows

    base = np.random.default_rng(n).random(n + offset) < 0.03
    values = base.astype(dtype)[offset:]
    got = column_rows(values, threshold, np.empty(values.shape[0], dtype=np.int64))
    np.testing.assert_array_equal(got, np.flatnonzero(values.astype(np.float64) >= threshold))


def _dd_prefix_sums_one_by_one(values):
    """Compensated prefix sums as a prefix-sum array would hold them: ``_dd_add`` one value
    at a time from 0 (the pure-Python twin of the kernels' running sums)."""
    hi, lo = [0.0], [0.0]
    for v in values:
        s = hi[-1] + v  # _two_sum, then _dd_add's renormalisation, written out
        bb = s - hi[-1]
        err = (hi[-1] - (s - bb)) + (v - bb)
        err += lo[-1] + 0.0
        h = s + err
        hi.append(h)
        lo.append(err - (h - s))
    return np.array(hi), np.array(lo)


def whole_class_walk(values, rows, weights, scale, queries, order, more):
    """``K.class_weight_below_range`` over the whole class, as one piece: ``(hi, lo, more_hi,
    more_lo, total_hi, total_lo, n_positive)``."""
    n_a, n_b = queries.shape[0], more.shape[0]
    out = [np.empty(n) for n in (n_a, n_a, n_b, n_b)]
    total = K.class_weight_below_range(values, rows, weights, scale, 0, rows.shape[0], queries,
                                       order, 0, n_a, more, 0, n_b, *out)
    return (*out, *total)


@settings(max_examples=100, deadline=None)
@given(data=st.data(), levels=st.integers(2, 40), n=st.integers(0, 300),
       n_queries=st.integers(0, 60), scale_exponent=st.integers(-3, 3),
       rows_dtype=st.sampled_from([np.int32, np.int64]))
def test_class_weight_below_equals_exact_sums(data, levels, n, n_queries, scale_exponent,
                                                    rows_dtype):
    """Twice the weight below each query, ties 1/2, against exact rational sums and, bit for
    bit, against the sums of a prefix-sum array (what the kernel replaced); the class total
    and its positive-weight rows; queries given in order or through ``query_order``, and a
    second set of queries in the same walk (ties within and across the sets, -0.0 and 0.0)."""
    from fractions import Fraction

    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    rows = rng.permutation(2 * n + 5)[:n].astype(rows_dtype)
    values = np.sort(rng.integers(0, levels, n) / levels)
    weights = np.where(rng.random(2 * n + 5) < 0.2, 0.0, np.exp(rng.normal(0, 8, 2 * n + 5)))
    scale = 2.0 ** scale_exponent
    queries = rng.integers(-1, levels + 1, n_queries) / levels
    queries[queries == 0.0] = np.where(rng.random(int((queries == 0.0).sum())) < 0.5, -0.0, 0.0)
    order = np.argsort(queries, kind="stable").astype(np.int64)
    more = np.sort(rng.integers(-1, levels + 1, n_queries // 2) / levels)
    hi, lo, more_hi, more_lo, total_hi, total_lo, n_positive = whole_class_walk(
        values, rows, weights, scale, queries, order, more)
    w = [Fraction(weights[r]) / Fraction(scale) for r in rows]
    for q, h, lw in zip(np.concatenate([queries, more]), np.concatenate([hi, more_hi]),
                        np.concatenate([lo, more_lo])):
        exact = (2 * sum((x for x, v in zip(w, values) if v < q), Fraction(0))
                 + sum((x for x, v in zip(w, values) if v == q), Fraction(0)))
        assert abs(Fraction(h) + Fraction(lw) - exact) <= exact * Fraction(2) ** -100
    # bit for bit what the prefix sums gave: P(#below) + P(#below or tied), P(k) one by one
    p_hi, p_lo = _dd_prefix_sums_one_by_one(weights[rows] / scale)
    for q, h, lw in zip(np.concatenate([queries, more]), np.concatenate([hi, more_hi]),
                        np.concatenate([lo, more_lo])):
        lt, le = np.searchsorted(values, q, "left"), np.searchsorted(values, q, "right")
        want = K._dd_add(p_hi[lt], p_lo[lt], p_hi[le], p_lo[le])
        assert (h, lw) == (want[0], want[1])
    assert (total_hi, total_lo) == (p_hi[-1], p_lo[-1])
    exact_total = sum(w, Fraction(0))
    assert abs(Fraction(total_hi) + Fraction(total_lo) - exact_total) <= \
        exact_total * Fraction(2) ** -100
    assert n_positive == sum(1 for x in w if x > 0)
    empty = np.empty(0, dtype=np.int64)
    in_order = whole_class_walk(values, rows, weights, scale, queries[order], empty,
                                queries[:0])
    np.testing.assert_array_equal(in_order[0], hi[order])
    np.testing.assert_array_equal(in_order[1], lo[order])
    alone = whole_class_walk(values, rows, weights, scale, more, empty, more[:0])
    np.testing.assert_array_equal(alone[0], more_hi)
    np.testing.assert_array_equal(alone[1], more_lo)


@settings(max_examples=100, deadline=None)
@given(data=st.data(), levels=st.integers(2, 30), n_neg=st.integers(0, 200),
       n_pos=st.integers(0, 200), n_members=st.integers(0, 150), n_groups=st.integers(1, 4))
def test_replicate_counts_by_walk_equal_prefix_sums_and_pair_counts(data, levels, n_neg, n_pos,
                                                                     n_members, n_groups):
    """The replicates walked together, each row's count drawn in the walk: each replicate's
    counts equal the prefix-sum kernel's on its counts (``poisson_counts`` of every row,
    zeros among them), and its overall U a brute-force pair count; heavy ties across and
    within the classes and the memberships, rows in any order."""
    from fastbias.intervals import _kernels as IK

    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    n_rows = n_neg + n_pos + 5
    rows = rng.permutation(n_rows)
    neg_rows, pos_rows = rows[:n_neg].astype(np.int32), rows[n_neg:n_neg + n_pos].astype(np.int32)
    neg_keys = np.sort(rng.integers(0, levels, n_neg)).astype(np.uint32)
    pos_keys = np.sort(rng.integers(0, levels, n_pos)).astype(np.uint32)
    member_keys = np.sort(rng.integers(0, levels, n_members)).astype(np.uint32)
    member_codes = rng.integers(0, 2 * n_groups, n_members).astype(np.int32)
    # (int64 member rows, int32 class rows: the dtypes the bootstrap passes, so the test
    # compiles the version the library runs rather than one of its own)
    member_rows = rng.integers(0, n_rows, n_members).astype(np.int64)
    keys = rng.integers(0, 2**63, IK.REPLICATE_LANES, dtype=np.uint64)
    walked, total_neg, total_pos, twice_u = IK.replicate_counts_by_walk(
        member_keys, member_codes, member_rows, neg_keys, neg_rows, pos_keys, pos_rows, keys,
        n_groups)
    assert walked.shape == (IK.REPLICATE_LANES, n_groups, 7)
    columns = [K.CELL_SUBGROUP_NEG, K.CELL_SUBGROUP_POS, K.TWICE_SUBGROUP_U, K.TWICE_BPSN_U,
               K.TWICE_BNSP_U, K.TWICE_NEG_BG_ABOVE_U, K.TWICE_POS_BG_ABOVE_U]
    assert IK.REPLICATE_COLUMNS[3] == "twice_bpsn_u"  # (the order the test maps)
    counts = np.empty_like(walked)
    counts[..., columns] = walked
    for r in range(IK.REPLICATE_LANES):
        K.finish_member_counts(counts[r])
    for r, key in enumerate(keys):
        draws = IK.poisson_counts(key, np.empty(n_rows, dtype=np.uint8)).astype(np.int64)
        neg_draws, pos_draws = draws[neg_rows], draws[pos_rows]
        neg_cum = np.concatenate([[0], np.cumsum(neg_draws)])
        pos_cum = np.concatenate([[0], np.cumsum(pos_draws)])
        expected = K.finish_member_counts(K.member_counts_in_range(
            member_keys, member_codes, 0, n_members, neg_keys, pos_keys, n_groups,
            draws[member_rows], neg_cum, pos_cum))
        np.testing.assert_array_equal(counts[r], expected)
        assert total_neg[r] == int(neg_draws.sum()) and total_pos[r] == int(pos_draws.sum())
        pairs = (2 * (neg_keys[None, :] < pos_keys[:, None])
                 + (neg_keys[None, :] == pos_keys[:, None]))
        assert twice_u[r] == int((pos_draws[:, None] * neg_draws[None, :] * pairs).sum())


@settings(max_examples=60, deadline=None)
@given(data=st.data(), levels=st.integers(1, 25), n=st.integers(0, 120),
       n_groups=st.integers(1, 4), weights=st.sampled_from(["uniform", "integers", "wide",
                                                            "tiny and large"]))
def test_replicate_weights_by_walk_equal_exact_sums(data, levels, n, n_groups, weights):
    """The weighted replicates walked together: each replicate's sums, a row weighing its
    Poisson count (``poisson_counts``) times its base weight (rounded) over the scale, within
    2**-98 of the magnitudes summed of the exact rational sums (heavy ties across and within
    the classes and the subgroups, zero weights, weights over 2**130 apart); the rows of
    weight above 0 exact; each replicate's bits the same whether walked with 8 or 16."""
    from fractions import Fraction

    from fastbias.intervals import _kernels as IK

    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    scores = (rng.integers(0, levels, n) / levels).astype(np.float64)
    labels = rng.random(n) < rng.uniform(0.05, 0.95)
    member = rng.random((n, n_groups)) < rng.uniform(0.05, 0.9, n_groups)
    base = {"uniform": rng.uniform(0.1, 3.0, n), "integers": rng.integers(0, 3, n) * 1.0,
            "wide": np.exp(rng.normal(0.0, 20.0, n)),
            "tiny and large": np.where(rng.random(n) < 0.5, 1e-30, 1.0) * rng.uniform(1, 2, n)
            }[weights]
    scale = float(2.0 ** np.floor(np.log2(base.max()))) if n and base.max() > 0 else 1.0
    identity = np.flatnonzero(member.any(axis=1))
    at = identity[np.argsort(scores[identity], kind="stable")]
    id_ptr = np.concatenate([[0], np.cumsum(member[at].sum(axis=1))]).astype(np.int64)
    id_groups = np.concatenate([np.flatnonzero(member[r]) for r in at] + [[]]).astype(np.int32)
    classes = [np.flatnonzero(labels == c) for c in (False, True)]
    neg_rows, pos_rows = (rows[np.argsort(scores[rows], kind="stable")] for rows in classes)
    keys = rng.integers(0, 2**63, IK.REPLICATE_LANES, dtype=np.uint64)
    # (int32 class rows and read-only base weights: the version the bootstrap compiles)
    read_only_base = base.copy()
    read_only_base.setflags(write=False)

    def walk(lanes):
        return IK.replicate_weights_by_walk(
            scores[at], at.astype(np.int64), labels[at], id_ptr, id_groups, scores[neg_rows],
            neg_rows.astype(np.int32), scores[pos_rows], pos_rows.astype(np.int32),
            read_only_base, scale, lanes, n_groups)

    hi, lo, rows, totals, n_weighted, twice_u = walk(keys)
    fewer = walk(keys[3:3 + IK.MIN_REPLICATE_LANES])
    for got, part in zip((hi, lo, rows, totals, n_weighted, twice_u), fewer):
        np.testing.assert_array_equal(got[3:3 + IK.MIN_REPLICATE_LANES], part)

    def close(got_hi, got_lo, exact, magnitude):
        assert abs(Fraction(got_hi) + Fraction(got_lo) - exact) <= \
            magnitude * Fraction(2) ** -98 + Fraction(2) ** -1060

    for r, key in enumerate(keys):
        draws = IK.poisson_counts(key, np.empty(n, dtype=np.uint8))
        # (a replicate's weight is its count times the base weight, rounded: replicate_weights)
        w = [Fraction(float(np.float64(c) * base[i])) / Fraction(scale)
             for i, c in enumerate(draws)]

        def twice_below_of(rows_):  # score -> twice the weight of rows_ below it, ties 1/2
            at_score = {}
            for i in rows_:
                at_score[scores[i]] = at_score.get(scores[i], Fraction(0)) + w[i]
            table, below = {}, Fraction(0)
            for s in sorted(set(scores.tolist())):
                at = at_score.get(s, Fraction(0))
                table[s] = 2 * below + at
                below += at
            return table

        def twice_above_of(rows_):  # score -> twice the weight of rows_ above it, ties 1/2
            total = 2 * sum((w[i] for i in rows_), Fraction(0))
            return {s: total - v for s, v in twice_below_of(rows_).items()}

        totals_exact = [sum((w[i] for i in c), Fraction(0)) for c in classes]
        for c in range(2):
            close(totals[r, c, 0], totals[r, c, 1], totals_exact[c], totals_exact[c])
            assert n_weighted[r, c] == sum(1 for i in classes[c] if w[i] > 0)
        neg, pos = classes
        below_neg, above_neg, above_pos = (twice_below_of(neg), twice_above_of(neg),
                                           twice_above_of(pos))
        close(twice_u[r, 0], twice_u[r, 1],
              sum((w[x] * below_neg[scores[x]] for x in pos), Fraction(0)),
              2 * totals_exact[0] * totals_exact[1])
        for g in range(n_groups):
            cells = [[i for i in c if member[i, g]] for c in classes]
            cell_weights = [sum((w[i] for i in cell), Fraction(0)) for cell in cells]
            below_cell = twice_below_of(cells[0])
            exact = [cell_weights[0], cell_weights[1],
                     sum((w[x] * below_cell[scores[x]] for x in cells[1]), Fraction(0)),
                     sum((w[y] * above_pos[scores[y]] for y in cells[0]), Fraction(0)),
                     sum((w[x] * below_neg[scores[x]] for x in cells[1]), Fraction(0)),
                     sum((w[y] * above_neg[scores[y]] for y in cells[0]), Fraction(0)),
                     sum((w[x] * above_pos[scores[x]] for x in cells[1]), Fraction(0))]
            big = 2 * sum(totals_exact) * sum(cell_weights)
            for column, value in enumerate(exact):
                close(hi[r, g, column], lo[r, g, column], value, value if column < 2 else big)
            assert rows[r, g].tolist() == [sum(1 for i in cell if w[i] > 0) for cell in cells]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("share", [0.0, 0.003, 0.1, 0.5, 1.0])  # empty, tiny, ..., every row
def test_radix_sort_of_a_class_equals_sorting_its_rows(dtype, share):
    """The class read from the labels (first or last row in it or not, every kind of
    payload, int32 and int64) gives what sorting the list of its rows gives."""
    from fastbias.sort import _kernels as SK

    rng = np.random.default_rng(int(share * 1000))
    n = 2500
    scores = np.round(rng.normal(size=n), 1).astype(dtype)
    scores[::13] = -0.0
    bits = scores.view(np.uint32 if dtype == np.float32 else np.uint64)
    n_bits = scores.dtype.itemsize * 8
    labels = (rng.random(n) < share).astype(np.uint8)
    for label in (0, 1):
        rows = np.flatnonzero(labels == label)
        order = np.argsort(scores[rows], kind="stable")
        for kind in (SK.PAYLOAD_NONE, SK.PAYLOAD_POSITIONS, SK.PAYLOAD_ROWS):
            for width in (np.int32, np.int64):
                for as_keys in (False, True):
                    size = 0 if kind == SK.PAYLOAD_NONE else rows.shape[0]
                    keys, carried = SK.radix_sort_class(bits, labels, label, n_bits,
                                                        np.empty(size, width), kind, as_keys)
                    expected = SK.radix_sort_gathered(bits, rows.astype(np.int64), n_bits,
                                                      np.empty(size, width), kind, as_keys)
                    np.testing.assert_array_equal(keys, expected[0])
                    np.testing.assert_array_equal(carried, expected[1])
                    assert carried.dtype == width or kind == SK.PAYLOAD_NONE
                    if kind == SK.PAYLOAD_ROWS:
                        np.testing.assert_array_equal(carried, rows[order])
                    elif kind == SK.PAYLOAD_POSITIONS:
                        np.testing.assert_array_equal(carried, order)
                    if not as_keys:
                        np.testing.assert_array_equal(keys.view(dtype),
                                                      np.sort(scores[rows]) + 0.0)
    with pytest.raises(ValueError, match="one slot per row"):
        SK.radix_sort_class(bits, labels, 1, n_bits, np.empty(n + 1, np.int32),
                            SK.PAYLOAD_ROWS, False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("as_keys", [False, True])
def test_radix_sort_carries_the_same_payload_in_int64_and_int32(dtype, as_keys):
    """The int64 payload (what more than 2**31 rows would take) gives what the int32 one does,
    for every kind of payload; a scratch of the wrong length is refused."""
    from fastbias.sort import _kernels as SK

    rng = np.random.default_rng(7)
    scores = np.round(rng.normal(size=3000), 1).astype(dtype)
    scores[::17] = -0.0
    rows = rng.permutation(3000)[:2000].astype(np.int64)
    bits = scores.view(np.uint32 if dtype == np.float32 else np.uint64)
    n_bits = scores.dtype.itemsize * 8
    for kind in (SK.PAYLOAD_NONE, SK.PAYLOAD_POSITIONS, SK.PAYLOAD_ROWS):
        size = 0 if kind == SK.PAYLOAD_NONE else rows.shape[0]
        narrow = SK.radix_sort_gathered(bits, rows, n_bits, np.empty(size, np.int32), kind,
                                        as_keys)
        wide = SK.radix_sort_gathered(bits, rows, n_bits, np.empty(size, np.int64), kind,
                                      as_keys)
        np.testing.assert_array_equal(narrow[0], wide[0])
        np.testing.assert_array_equal(narrow[1], wide[1])
        assert narrow[1].dtype == np.int32 and wide[1].dtype == np.int64
        order = np.argsort(scores[rows], kind="stable")
        if kind == SK.PAYLOAD_POSITIONS:
            np.testing.assert_array_equal(wide[1], order)
        elif kind == SK.PAYLOAD_ROWS:
            np.testing.assert_array_equal(wide[1], rows[order])
        if not as_keys:
            np.testing.assert_array_equal(wide[0].view(dtype), np.sort(scores[rows]) + 0.0)
    with pytest.raises(ValueError, match="one slot per row"):
        SK.radix_sort_gathered(bits, rows, n_bits, np.empty(3, np.int32), SK.PAYLOAD_ROWS, False)
