"""A mutation audit of the sort stage and the counting sweep (``sort/order.py``,
``sort/_kernels.py``, ``sort/buckets.py``, ``sweep/counts.py``, the counting walk of
``sweep/_kernels.py``, ``sweep/parallel.py``), by an independent reviewer (forty-fifth
session): 47 hand mutants. 40 are killed by the existing tests (32 by
tests/test_sort_sweep_mutants_session36_reference.py, 8 more by tests/test_kernels.py and
tests/test_core_reference.py), 4 only by the tests here (each checked to fail with its mutant
and pass without: buckets of two key values left unsorted, the pair-count guard without its
factor of two, the sort beside the membership scan given a wrong key range, a value of exactly
half a bucket's share not isolated), 3 are equivalent. Other tests here pin what the existing
tests already kill.

Every expected value comes from an independent reference: numpy's sort for orders, ranks
of distinct values for sortable keys, exact brute-force pair counts
(tests/reference.py) for the metrics, and hand arithmetic. The cases aim at what
tests/test_sort_sweep_mutants_session36_reference.py does not reach: buckets of the
bucket sort holding exactly two key values (shift 1), buckets sorted on digits that do
not divide the bits left (shift 13), the usual two 11-bit passes over a heavy bucket
(shift 22), ranges of two keys, key blocks past 65,536 values, the sort that runs beside
the membership scan (sweep/parallel.py), and the pair-count guard's factor of two.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import fastbias
from fastbias.prepare.memberships import prepare_memberships
from fastbias.sort import _kernels as SK
from fastbias.sort import order as O
from fastbias.sort.buckets import bucket_edges
from fastbias.sweep import counts as C
from fastbias.sweep import parallel as P

from .reference import brute_force_metrics

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
UINT = {np.float32: np.uint32, np.float64: np.uint64}


def _ulp_steps(dtype, base, steps):
    """Scores ``steps`` units in the last place above ``base`` (positive): adjacent floats,
    so that the keys' span is exactly ``max(steps) - min(steps)``."""
    bits = np.array(base, dtype=dtype).view(UINT[dtype])
    return (bits + np.asarray(steps).astype(UINT[dtype])).view(dtype)


def _bucket_case(dtype, span, n_low, low_width, seed):
    """Scores whose keys span exactly ``span`` (so shift = bit_length(span) - 8) with
    ``n_low`` of them crowded in the lowest ``low_width`` keys (one heavy bucket)."""
    rng = np.random.default_rng(seed)
    steps = np.concatenate([[0, span], rng.integers(0, low_width, n_low)])
    rng.shuffle(steps)
    return _ulp_steps(dtype, 1.0, steps)


def _check_against_brute_force(y, s, groups, **kwargs):
    table = fastbias.bias_metrics(y, s, groups, **kwargs)
    w = kwargs.get("sample_weight")
    for name, member in groups.items():
        expect = brute_force_metrics(y, s, member, w)
        for metric in METRICS:
            got = float(table.loc[name, metric])
            assert (np.isnan(got) and np.isnan(expect[metric])) or got == expect[metric], (
                name, metric, got, expect[metric])


# (span of the keys, scores in the heavy bucket, width of that bucket's keys):
# span 300 -> shift 1: every bucket holds two key values and must still be sorted;
# span 1.5e6 -> shift 13: a bucket of ~100 keys is sorted in 2 passes of 7 bits (13 = 7 + 6);
# span 2**29 + 5 -> shift 22: a bucket of 3,000 keys takes the usual 2 x 11-bit passes.
BUCKET_SHAPES = [(300, 400, 300), (1_500_000, 100, 8192), (2 ** 29 + 5, 3000, 2 ** 22)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("span,n_low,width", BUCKET_SHAPES)
def test_bucket_sort_of_every_bucket_shape_equals_numpy(dtype, span, n_low, width):
    """The class sort and the membership sort against np.sort where the buckets hold two key
    values, are sorted on uneven digits, or take the usual two 11-bit passes. Kills the
    mutants ``bits_left <= 1`` (shift-1 buckets unsorted), ``digit_bits = bits_left //
    n_passes`` (the 13th bit lost) and the 2 x 11 path run with one pass."""
    scores = _bucket_case(dtype, span, n_low, width, seed=span % 97)
    _, shift = O.score_key_range(scores)
    assert int(shift) == max(int(span).bit_length() - 8, 0)
    rng = np.random.default_rng(5)
    labels = rng.random(scores.shape[0]) < 0.5
    matrix = rng.random((scores.shape[0], 2)) < 0.6
    m = prepare_memberships(labels, [np.flatnonzero(matrix[:, g]) for g in range(2)],
                            ["a", "b"])
    classes, (keys, codes) = O.sort_keys(scores, labels, m, 1)
    for label, got in ((False, classes.neg_keys), (True, classes.pos_keys)):
        expect = np.sort(scores[labels == label])
        np.testing.assert_array_equal(O.floats_of_keys_in_place(got.copy(), dtype), expect)
    rows, groups = np.nonzero(matrix)
    order = np.argsort(scores[rows], kind="stable")
    np.testing.assert_array_equal(O.floats_of_keys_in_place(keys.copy(), dtype),
                                  scores[rows[order]])
    np.testing.assert_array_equal(codes, 2 * groups[order] + labels[rows[order]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bucket_sort_of_a_heavy_top_bucket(dtype):
    """The last bucket (the positives' and the memberships' top one, which ends at the
    array's end) holds 200 distinct shuffled keys: it is sorted to its last slot (kills
    the last bucket's end one short)."""
    rng = np.random.default_rng(12)
    span = 2 ** 21 - 1  # shift 13: the keys span[-8192:] fill bucket 255, the last
    steps = np.concatenate([[0, span], span - rng.permutation(8000)[:200]])
    scores = _ulp_steps(dtype, 1.0, steps)
    labels = np.ones(scores.shape[0], dtype=bool)
    labels[0] = False
    m = prepare_memberships(labels, [np.arange(scores.shape[0])], ["all"])
    classes, (keys, _) = O.sort_keys(scores, labels, m, 1)
    np.testing.assert_array_equal(O.floats_of_keys_in_place(classes.pos_keys.copy(), dtype),
                                  np.sort(scores[labels]))
    np.testing.assert_array_equal(O.floats_of_keys_in_place(keys.copy(), dtype),
                                  np.sort(scores))


@pytest.mark.parametrize("span,n_low,width", BUCKET_SHAPES[:2])
def test_metrics_with_two_key_buckets_and_uneven_digits_exact(span, n_low, width):
    """bias_metrics on the same scores equals the exact brute-force metrics (the sort's
    errors reach the numbers: the walk's galloping needs sorted classes)."""
    scores = _bucket_case(np.float32, span, n_low, width, seed=3)
    rng = np.random.default_rng(8)
    y = rng.random(scores.shape[0]) < 0.45
    groups = {"a": rng.random(scores.shape[0]) < 0.5, "b": rng.random(scores.shape[0]) < 0.2}
    _check_against_brute_force(y, scores, groups)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_radix_sort_of_two_rows(dtype):
    """A range of two keys out of order is sorted (kills ``hi - lo < 3`` in the LSD
    passes): [2.0, 1.0] -> [1.0, 2.0], positions [1, 0]."""
    values, order = O.sorted_scores(np.array([2.0, 1.0], dtype=dtype), np.arange(2),
                                    with_order=True)
    assert values.tolist() == [1.0, 2.0]
    assert order.tolist() == [1, 0]


def test_weighted_metrics_with_two_rows_per_class():
    """Weighted calls sort each class by its own radix sort: two negatives and two
    positives, each pair given in decreasing order. Subgroup {rows 0, 2}: negative 0.9,
    positive 0.8 -> subgroup AUC 0; BPSN: background positive 0.3 (w 3) vs negative 0.9
    -> 0; BNSP: positive 0.8 vs background negative 0.1 (w 2) -> 1."""
    y = np.array([0, 0, 1, 1])
    s = np.array([0.9, 0.1, 0.8, 0.3])
    w = np.array([1.0, 2.0, 1.0, 3.0])
    member = np.array([True, False, True, False])
    t = fastbias.bias_metrics(y, s, {"g": member}, sample_weight=w)
    assert float(t.loc["g", "subgroup_auc"]) == 0.0
    assert float(t.loc["g", "bpsn_auc"]) == 0.0
    assert float(t.loc["g", "bnsp_auc"]) == 1.0
    _check_against_brute_force(y, s, {"g": member}, sample_weight=w)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_radix_sort_when_all_but_one_share_a_digit(dtype):
    """[1, 1 + ulp, 1]: two of the three keys share every digit, the first key among them;
    the lowest digit's pass must still run (kills a pass skipped when its first key's digit
    is held by all but one): -> [1, 1, 1 + ulp], positions [0, 2, 1]."""
    up = np.nextafter(dtype(1.0), dtype(2.0))
    values, order = O.sorted_scores(np.array([1.0, up, 1.0], dtype=dtype), np.arange(3),
                                    with_order=True)
    assert values.tolist() == [1.0, 1.0, float(up)]
    assert order.tolist() == [0, 2, 1]


@pytest.mark.parametrize("payload", [SK.PAYLOAD_ROWS, SK.PAYLOAD_POSITIONS])
def test_radix_sort_class_of_an_absent_class_and_positions(payload):
    """radix_sort_class of a class no row has (every label 1, class 0) is empty (kills the
    search for the class's last row stopping at row 1, which writes past an empty array);
    and with PAYLOAD_POSITIONS each sorted key carries its rank in the class (kills the
    first rank left unwritten). Scores [3, 1, 2, 0], labels [1, 0, 1, 1], class 1:
    sorted [0, 2, 3], ranks in the class [2, 1, 0], rows [3, 2, 0]."""
    scores = np.array([3.0, 1.0, 2.0, 0.0])
    bits = scores.view(np.uint64)
    ones = np.ones(4, dtype=np.uint8)
    out, carried = SK.radix_sort_class(bits, ones, 0, 64, np.empty(0, dtype=np.int64),
                                       payload)
    assert out.shape == (0,) and carried.shape == (0,)
    labels = np.array([1, 0, 1, 1], dtype=np.uint8)
    out, carried = SK.radix_sort_class(bits, labels, 1, 64, np.empty(3, dtype=np.int64),
                                       payload)
    assert out.view(np.float64).tolist() == [0.0, 2.0, 3.0]
    assert carried.tolist() == ([3, 2, 0] if payload == SK.PAYLOAD_ROWS else [2, 1, 0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sortable_keys_in_place_past_one_block(dtype):
    """Keys made a block of 65,536 at a time order and tie as the scores on every value,
    the blocks' last ones included (kills a block slice one short)."""
    rng = np.random.default_rng(2)
    n = 70_000
    pool = np.array([-np.finfo(dtype).max, -2.5, -np.finfo(dtype).smallest_subnormal, -0.0,
                     0.0, np.finfo(dtype).smallest_subnormal, 0.75, np.finfo(dtype).max],
                    dtype=dtype)
    scores = pool[rng.integers(0, pool.shape[0], n)]
    scores[65_535] = pool[0]
    scores[65_534] = pool[-1]
    keys = O.sortable_keys_in_place(scores.copy()).astype(np.uint64)
    ranks = np.searchsorted(np.unique(scores.astype(np.float64)), scores.astype(np.float64))
    order = np.argsort(ranks, kind="stable")
    k = keys[order]
    r = ranks[order]
    np.testing.assert_array_equal(k[1:] > k[:-1], r[1:] > r[:-1])
    np.testing.assert_array_equal(k[1:] == k[:-1], r[1:] == r[:-1])


def test_sort_beside_the_membership_scan_exact(monkeypatch):
    """The class sort that runs on a helper thread while the memberships are built
    (sweep/parallel.py's overlap, normally from 100,000 rows) gives the exact metrics;
    heavy ties with -0.0 and 0.0. Kills a membership sort given a wrong key range."""
    monkeypatch.setattr(P, "CONCURRENT_SWEEP_MIN_ROWS", 1)
    monkeypatch.setattr(P, "available", lambda *args, **kwargs: False)
    rng = np.random.default_rng(9)
    n = 600
    levels = np.array([-1.0, -0.0, 0.0, 0.25, 0.5, 3.0])
    s = levels[rng.integers(0, levels.shape[0], n)]
    y = rng.random(n) < 0.4
    groups = {"a": rng.random(n) < 0.3, "b": rng.random(n) < 0.7, "all": np.ones(n, bool)}
    calls = []
    real = P._sort_classes_sharing
    monkeypatch.setattr(P, "_sort_classes_sharing",
                        lambda *a: calls.append(1) or real(*a))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the subgroup of every row: its background is empty
        _check_against_brute_force(y, s, groups, n_jobs=2)
    assert calls, "the overlap path was not taken"


def test_pair_count_guard_counts_twice_the_pairs():
    """Twice the pairs is what must stay below 2**62: (2**31 - 1)**2 pairs are below 2**62
    but twice them is not, so they are refused; 2**30 x (2**31 - 1) (twice: 2**62 - 2**31)
    are accepted. Kills the factor 2 dropped."""
    with pytest.raises(ValueError, match="2,147,483,647 negatives and 2,147,483,647 positives"):
        C.check_pair_count(2 ** 31 - 1, 2 ** 31 - 1)
    C.check_pair_count(2 ** 30, 2 ** 31 - 1)


def test_bucket_edges_isolate_a_value_of_exactly_half_a_bucket():
    """A value holding exactly half a bucket's share of the sample is isolated in a
    single-score bucket (the docstring: "half a bucket's share ... or more"): 16 values,
    4 buckets, 2.5 twice (2 / 16 = half of 1/4). Kills ``>`` for ``>=``."""
    sample = np.array([0, 1, 2, 2.5, 2.5, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13], dtype=float)
    edges = bucket_edges(sample, 4)
    assert 2.5 in edges and np.nextafter(2.5, np.inf) in edges


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_extremes_subnormals_and_signed_zeros_exact(dtype):
    """Scores at the largest finite magnitudes, subnormals and both zeros (float32 and
    float64), heavy ties: the metrics equal the exact brute force, and float32 scores give
    the same table as the same values in float64."""
    info = np.finfo(dtype)
    pool = np.array([-info.max, -info.smallest_subnormal, -0.0, 0.0,
                     info.smallest_subnormal, 2 * info.smallest_subnormal, info.max],
                    dtype=dtype)
    rng = np.random.default_rng(4)
    s = pool[rng.integers(0, pool.shape[0], 300)]
    y = rng.random(300) < 0.5
    groups = {"a": rng.random(300) < 0.4, "b": rng.random(300) < 0.1}
    _check_against_brute_force(y, s, groups)
    if dtype == np.float32:
        a = fastbias.bias_metrics(y, s, groups)
        b = fastbias.bias_metrics(y, s.astype(np.float64), groups)
        np.testing.assert_array_equal(a[METRICS].to_numpy(), b[METRICS].to_numpy())


def test_background_row_counts_by_class():
    """The table's background row counts come from the sweep's class sizes: 3 negatives and
    1 positive, subgroup {row 0} (a negative) -> background 2 negatives, 1 positive (kills
    the unweighted SweepCounts' class_rows given as (positives, negatives))."""
    y = np.array([0, 0, 0, 1])
    s = np.array([0.1, 0.4, 0.2, 0.9])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the subgroup has no positive: its AUC is NaN
        t = fastbias.bias_metrics(y, s, {"g": np.array([True, False, False, False])})
    assert int(t.loc["g", "background_negatives"]) == 2
    assert int(t.loc["g", "background_positives"]) == 1
    assert float(t.loc["g", "bpsn_auc"]) == 1.0
