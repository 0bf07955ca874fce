"""Weighted metrics against exact rational arithmetic, whatever the weights' scale and spread.

The reference (``tests.reference``) sums the weighted pairs exactly, on the
weights scaled to integers, and rounds once. fastbias must agree to 1e-12
relative (or 1e-20 absolute, for values that are themselves that small: an
AEG near 0), stay inside the metric's range, and give bit-identical results
when every weight is multiplied by a power of two (other constants change
the weights themselves by a rounding, so those are compared with the exact
value of the weights actually passed).
"""
import contextlib
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastbias
from fastbias.metrics.table import _RATIO_IS_GAP, _RATIO_PAIRS
from fastbias.prepare.memberships import prepare_memberships
from fastbias.sort.order import order_scores
from fastbias.streaming import evaluate_csv
from fastbias.sweep import _kernels as K
from fastbias.sweep import counts
from fastbias.sweep.double_double import metric_ratios
from fastbias.validate.errors import UndefinedMetricWarning
from tests.reference import brute_force_metrics, pair_probability

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
SETTINGS = settings(max_examples=150, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
RELATIVE = 1e-12
ABSOLUTE = 1e-20


def assert_exact(got, want, what):
    if np.isnan(want):
        assert np.isnan(got), f"{what}: expected NaN (undefined), got {got!r}"
        return
    assert abs(got - want) <= max(RELATIVE * abs(want), ABSOLUTE), \
        f"{what}: got {got!r}, exact {want!r} (difference {got - want:.3g})"


def assert_in_range(table):
    aucs = table[METRICS[:3]].to_numpy(dtype=float)
    gaps = table[METRICS[3:]].to_numpy(dtype=float)
    assert np.all(np.isnan(aucs) | ((aucs >= 0) & (aucs <= 1)))
    assert np.all(np.isnan(gaps) | ((gaps >= -0.5) & (gaps <= 0.5)))


def quietly(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return function(*args, **kwargs)


def check_against_exact(table, y, s, groups, w):
    assert_in_range(table)
    for name, member in groups.items():
        want = brute_force_metrics(y, s, member, w)
        for metric in METRICS:
            assert_exact(table.loc[name, metric], want[metric], f"{name} {metric}")
        cells = {"subgroup_negative_weight": member & ~y, "background_positive_weight": ~member & y,
                 "background_negative_weight": ~member & ~y}
        for column, cell in cells.items():
            exact = math.fsum(w[cell])
            assert abs(table.loc[name, column] - exact) <= RELATIVE * exact, (name, column)
    overall = pair_probability(s[y], s[~y], w[y], w[~y])
    assert_exact(table.attrs["overall_auc"], overall, "overall_auc")


@st.composite
def weighted_cases(draw):
    n = draw(st.integers(2, 40))
    y = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    levels = draw(st.integers(1, 6))
    s = np.array(draw(st.lists(st.integers(0, levels), min_size=n, max_size=n))) / levels
    spread = draw(st.sampled_from([0, 3, 12, 20, 30, 40, 80, 140]))
    exponents = np.array(draw(st.lists(st.integers(-spread, 0), min_size=n, max_size=n)))
    mantissas = np.array(draw(st.lists(st.floats(1.0, 9.99), min_size=n, max_size=n)))
    w = mantissas * 10.0 ** exponents
    zero = np.array(draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))) == 0
    w[zero] = 0.0
    # the overall scale: anything that keeps every weight a normal float
    scale = 10.0 ** draw(st.integers(-300 + spread, 300 - 1))
    w = w * scale
    n_groups = draw(st.integers(1, 3))
    groups = {}
    for k in range(n_groups):
        p = draw(st.sampled_from([0.1, 0.5, 0.9, 1.0]))
        flags = draw(st.lists(st.integers(0, 99), min_size=n, max_size=n))
        groups[f"g{k}"] = np.array(flags) < 100 * p
    return y, s, w, groups


@SETTINGS
@given(weighted_cases())
def test_bias_metrics_weighted_equal_exact_rationals(case):
    y, s, w, groups = case
    table = quietly(fastbias.bias_metrics, y, s, groups, sample_weight=w)
    check_against_exact(table, y, s, groups, w)


@SETTINGS
@given(weighted_cases())
def test_evaluator_and_evaluate_weighted_equal_exact_rationals(case):
    y, s, w, groups = case
    evaluator = quietly(fastbias.BiasEvaluator, y, groups, sample_weight=w)
    check_against_exact(quietly(evaluator.metrics, s), y, s, groups, w)
    df = pd.DataFrame({"y": y, "s": s, "w": w, **groups})
    res = quietly(fastbias.evaluate, df, label="y", scores="s", subgroups=list(groups),
                  sample_weight="w")
    table = res.for_model()
    check_against_exact(table, y, s, groups, w)


@SETTINGS
@given(weighted_cases(), st.integers(-1000, 900))
def test_power_of_two_scaling_changes_nothing(case, exponent):
    y, s, w, groups = case
    scaled = np.ldexp(w, exponent)
    positive = w[w > 0]
    if positive.size and not (np.all(np.isfinite(scaled))
                              and np.all(np.ldexp(scaled[w > 0], -exponent) == positive)
                              and scaled[w > 0].min() >= np.finfo(float).tiny):
        return  # the scaled weights are not the same numbers (overflow or subnormal)
    plain = quietly(fastbias.bias_metrics, y, s, groups, sample_weight=w)
    moved = quietly(fastbias.bias_metrics, y, s, groups, sample_weight=scaled)
    pd.testing.assert_frame_equal(moved[METRICS], plain[METRICS], check_exact=True)
    assert moved.attrs["overall_auc"] == plain.attrs["overall_auc"] or (
        np.isnan(moved.attrs["overall_auc"]) and np.isnan(plain.attrs["overall_auc"]))


@contextlib.contextmanager
def weighted_pieces(class_rows: int, identity_rows: int):
    """The weighted sums cut into pieces of a few rows, as at millions of rows, on threads
    however small the call."""
    saved = (counts.WEIGHTED_PIECE_ROWS, counts.WEIGHTED_PIECE_IDENTITY_ROWS,
             counts.PARALLEL_WEIGHTED_MIN_ROWS)
    counts.WEIGHTED_PIECE_ROWS, counts.WEIGHTED_PIECE_IDENTITY_ROWS = class_rows, identity_rows
    counts.PARALLEL_WEIGHTED_MIN_ROWS = 0
    try:
        yield
    finally:
        (counts.WEIGHTED_PIECE_ROWS, counts.WEIGHTED_PIECE_IDENTITY_ROWS,
         counts.PARALLEL_WEIGHTED_MIN_ROWS) = saved


@SETTINGS
@given(weighted_cases(), st.integers(1, 4), st.integers(1, 3))
def test_weighted_sums_in_pieces_equal_exact_rationals_on_any_thread_count(case, class_rows,
                                                                           identity_rows):
    """The weighted sums cut into pieces fixed by the data (blocks of tied scores kept
    whole), each class's sums made whole with the pieces below, the subgroup pairs across
    ranges added at the join: exact to the reference, and the same bits on 1, 2 and 3
    threads."""
    y, s, w, groups = case
    with weighted_pieces(class_rows, identity_rows):
        tables = [quietly(fastbias.bias_metrics, y, s, groups, sample_weight=w, n_jobs=jobs)
                  for jobs in (1, 2, 3)]
    check_against_exact(tables[0], y, s, groups, w)
    for table in tables[1:]:
        pd.testing.assert_frame_equal(table, tables[0], check_exact=True)
        assert table.attrs == tables[0].attrs or np.isnan(tables[0].attrs["overall_auc"])


@pytest.mark.parametrize("tiny", [1e-20, 1e-100])
@pytest.mark.parametrize("cell", ["background_negative", "background_positive"])
def test_a_tiny_background_next_to_a_heavy_subgroup_in_pieces(tiny, cell):
    """The certificate still holds when the sums come in pieces (their error bound counts
    every row and membership, as a chain's does)."""
    with weighted_pieces(7, 3):
        test_a_tiny_background_next_to_a_heavy_subgroup(tiny, cell)
        test_a_tiny_metric_keeps_its_relative_digits()


@pytest.mark.parametrize("scale", [1e-300, 1e-170, 1e-20, 1.0, 3.7, 1e160, 1e300])
def test_metrics_do_not_depend_on_the_weights_scale(scale):
    rng = np.random.default_rng(7)
    n = 400
    y = rng.random(n) < 0.4
    s = rng.integers(0, 20, n) / 20
    groups = {"a": rng.random(n) < 0.3, "b": rng.random(n) < 0.05}
    w = rng.uniform(0.5, 2.0, n) * scale
    table = quietly(fastbias.bias_metrics, y, s, groups, sample_weight=w)
    assert not table[METRICS].isna().any().any()
    check_against_exact(table, y, s, groups, w)


@pytest.mark.parametrize("tiny", [1e-20, 1e-30, 1e-40, 1e-100, 1e-140])
@pytest.mark.parametrize("cell", ["background_negative", "background_positive"])
def test_a_tiny_background_next_to_a_heavy_subgroup(tiny, cell):
    # the subgroup holds every row but one background row of tiny weight: its background
    # metrics are fully determined by that one row and must come out exact, not as the
    # rounding remainder of "class total minus subgroup"
    rng = np.random.default_rng(3)
    n = 300
    y = rng.random(n) < 0.5
    s = rng.integers(0, 30, n) / 30
    member = np.ones(n, dtype=bool)
    lonely = np.flatnonzero(~y if cell == "background_negative" else y)[0]
    member[lonely] = False
    w = rng.uniform(0.9, 1.1, n)
    w[lonely] = tiny
    table = quietly(fastbias.bias_metrics, y, s, {"g": member}, sample_weight=w)
    check_against_exact(table, y, s, {"g": member}, w)


def test_a_tiny_metric_keeps_its_relative_digits():
    # BPSN AUC of about 5e-31: of the background positives, the one above the subgroup
    # negatives weighs 1e-30 and the others (weight 1) are below them; a subgroup positive
    # of weight 1 above them all makes the fast sweep's "positives above minus subgroup
    # positives above" a cancellation
    y = np.array([0, 0, 0, 1, 1, 1, 1], dtype=bool)
    s = np.array([0.5, 0.5, 0.6, 0.1, 0.2, 0.9, 0.95])
    member = np.array([1, 1, 1, 0, 0, 0, 1], dtype=bool)
    w = np.array([1, 2, 1, 1, 1, 1e-30, 1.0])
    table = quietly(fastbias.bias_metrics, y, s, {"g": member}, sample_weight=w)
    check_against_exact(table, y, s, {"g": member}, w)
    assert 1e-31 < table.loc["g", "bpsn_auc"] < 1e-30


def test_weights_spanning_more_than_the_arithmetic_can_hold_are_refused():
    y = np.array([0, 1, 0, 1])
    s = np.array([0.1, 0.2, 0.3, 0.4])
    with pytest.raises(ValueError, match=r"sample_weight spans more than 2\*\*480.*position 2"):
        fastbias.bias_metrics(y, s, {"g": [True, False, True, False]},
                              sample_weight=[1.0, 2.0, 1e-300, 0.0])


@pytest.mark.parametrize("exponent", [-700, -201, 201, 700])
@pytest.mark.parametrize("kind", ["ci", "significance"])
def test_weights_too_far_from_1_for_intervals_are_refused_naming_the_largest(exponent, kind):
    """DeLong intervals and significance tests treat weights as frequency weights (their
    scale matters) and multiply up to four of them: beyond 2**+-200 the sums over- or
    underflowed, and standard errors and p-values came out NaN, 0 or 1 without a word. The
    metrics alone, and the bootstrap, take any scale."""
    rng = np.random.default_rng(2)
    n = 600
    y = rng.random(n) < 0.4
    s = rng.integers(0, 30, n) / 30
    groups = {"a": rng.random(n) < 0.3}
    w = np.ldexp(rng.uniform(0.5, 2.0, n), exponent)
    at = int(np.argmax(w))
    kw = {"ci": "delong"} if kind == "ci" else {"significance": "holm"}
    with pytest.raises(ValueError, match=rf"sample_weight holds weights too far from 1 for "
                                         rf"{'DeLong intervals' if kind == 'ci' else 'significance tests'}"
                                         rf": the largest is .* \(at position {at}\)"):
        fastbias.bias_metrics(y, s, groups, sample_weight=w, **kw)
    table = quietly(fastbias.bias_metrics, y, s, groups, sample_weight=w, ci="bootstrap",
                    n_boot=20, random_state=0)
    check_against_exact(table, y, s, groups, w)


def test_weights_near_the_limit_give_frequency_weight_standard_errors():
    """Within 2**+-200 the DeLong standard errors are those of frequency weights: for a
    total weight far above 1, scaling every weight by 2**k scales them by 2**(-k/2)."""
    rng = np.random.default_rng(4)
    n = 2_000
    y = rng.random(n) < 0.3
    s = np.round(rng.random(n) + 0.3 * y, 2)
    groups = {"a": rng.random(n) < 0.2, "b": rng.random(n) < 0.05}
    w = rng.uniform(0.1, 1.1, n)
    columns = [f"{m}_se" for m in METRICS]
    se = {k: quietly(fastbias.bias_metrics, y, s, groups, sample_weight=np.ldexp(w, k),
                     ci="delong")[columns].to_numpy() for k in (120, 199)}
    assert np.isfinite(se[199]).all() and (se[199] > 0).all()
    np.testing.assert_allclose(se[199], se[120] * 2.0 ** (-79 / 2), rtol=1e-12)


def test_out_of_core_significance_refuses_weights_too_far_from_1(tmp_path):
    rng = np.random.default_rng(6)
    n = 500
    df = pd.DataFrame({"y": rng.random(n) < 0.4, "s": rng.integers(0, 30, n) / 30,
                       "a": rng.random(n) < 0.3, "w": rng.uniform(0.5, 2.0, n) * 1e70})
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"sample_weight column 'w' holds weights too far "
                                         r"from 1 for significance tests: the largest is "
                                         r".*e\+70 at row \d+ in rows"):
        evaluate_csv(path, label="y", scores="s", subgroups=["a"], sample_weight="w",
                     significance="holm")


@SETTINGS
@given(weighted_cases())
def test_explicit_cell_counts_equal_exact_rationals(case):
    # the recomputation used for subgroups the fast sweep cannot certify, on every subgroup
    y, s, w, groups = case
    names = list(groups)
    m = prepare_memberships(y, [np.flatnonzero(groups[g]) for g in names], names)
    scale = float(np.ldexp(1.0, int(np.frexp(w.max())[1]) - 1)) if w.max() > 0 else 1.0
    order = order_scores(s.astype(np.float64), m)
    for name in names:
        hi, lo, bg_hi, bg_lo = K.explicit_cell_counts(groups[name], order.neg_rows,
                                                      order.neg_sorted, order.pos_rows,
                                                      order.pos_sorted, w / scale)
        values = metric_ratios(hi[None], lo[None], bg_hi[None], bg_lo[None], _RATIO_PAIRS,
                               _RATIO_IS_GAP)[0]
        want = brute_force_metrics(y, s, groups[name], w)
        for j, metric in enumerate(METRICS):
            assert_exact(values[j], want[metric], f"{name} {metric}")


@pytest.mark.parametrize("scale", [1e-300, 1e-170, 1.0, 1e160, 1e300])
@pytest.mark.parametrize("engine", ["parquet", "dask"])
def test_out_of_core_weighted_equal_exact_rationals(scale, engine, tmp_path):
    rng = np.random.default_rng(11)
    n = 600
    y = rng.random(n) < 0.45
    s = rng.integers(0, 25, n) / 25  # heavy ties: some buckets hold one score
    groups = {"a": rng.random(n) < 0.3, "b": np.ones(n, dtype=bool)}
    lonely = np.flatnonzero(~y)[0]
    groups["b"][lonely] = False  # b's background: one negative of tiny weight
    w = rng.uniform(0.5, 2.0, n) * 10.0 ** rng.integers(-6, 1, n)
    w[lonely] = 1e-40
    w = w * scale
    df = pd.DataFrame({"y": y, "s": s, "w": w, **groups})
    kwargs = dict(label="y", scores="s", subgroups=list(groups), sample_weight="w")
    if engine == "parquet":
        pytest.importorskip("pyarrow")
        from fastbias.streaming import evaluate_parquet

        path = tmp_path / "w.parquet"
        df.to_parquet(path)
        res = quietly(evaluate_parquet, path, bucket_rows=150, **kwargs)
    else:
        dd = pytest.importorskip("dask.dataframe")
        import dask

        import fastbias.dask

        with dask.config.set({"scheduler": "synchronous"}):
            res = quietly(fastbias.dask.evaluate, dd.from_pandas(df, npartitions=3),
                          npartitions=4, **kwargs)
    table = res.for_model()
    table.attrs["overall_auc"] = res.overall_auc["s"]
    check_against_exact(table, y, s, groups, w)


def test_a_weighted_auc_that_is_exactly_zero_is_not_negative():
    """Hypothesis found it: the background cell's U is a difference of double-double sums,
    and an exact 0 came out as -3e-31 (an AUC below 0). Every subgroup positive scores 0,
    the one background negative 1, so BNSP AUC is 0 exactly."""
    y = np.zeros(14, dtype=bool)
    y[[2, 10]] = True
    s = np.zeros(14)
    s[8] = 1.0
    w = np.array([0.0, 0.0, 5.4, 7.7, 0.0, 0.0, 53.0, 0.0, 0.096, 0.032, 8.0, 0.0, 0.0, 0.0])
    groups = {"g0": np.arange(14) != 8}
    table = quietly(fastbias.bias_metrics, y, s, groups, sample_weight=w)
    assert table.loc["g0", "bnsp_auc"] == 0.0
    assert table.loc["g0", "subgroup_auc"] == 0.5  # all subgroup rows tie at 0
    check_against_exact(table, y, s, groups, w)


@pytest.mark.parametrize("entry", ["bias_metrics", "evaluate", "parquet"])
def test_cell_weights_past_the_largest_double_are_inf_said_once(entry, tmp_path):
    """Weights near 1e307: the metrics are exact (the sums are made on the weights divided by
    a power of two), but the cells' total weights in the input's units are past 1.8e308.
    Those columns are inf, the others exact, and one warning names the inf cells (before:
    four numpy overflow RuntimeWarnings pointing inside fastbias, and nothing else)."""
    rng = np.random.default_rng(5)
    n = 300
    y = rng.random(n) < 0.5
    s = rng.integers(0, 30, n) / 30
    groups = {"big": rng.random(n) < 0.6, "small": rng.random(n) < 0.01}
    w = rng.uniform(0.5, 1.5, n) * 1e307
    exact_weight = {}
    for name, member in groups.items():
        for column, cell in {"subgroup_negative_weight": member & ~y,
                             "subgroup_positive_weight": member & y,
                             "background_negative_weight": ~member & ~y,
                             "background_positive_weight": ~member & y}.items():
            exact_weight[name, column] = math.fsum(w[cell] / 2.0 ** 64) * 2.0 ** 64
    # (math.fsum of the scaled weights, scaled back: inf past the largest double)
    assert any(np.isinf(v) for v in exact_weight.values())
    assert any(np.isfinite(v) for v in exact_weight.values())
    df = pd.DataFrame({"y": y, "s": s, "w": w, **groups})
    kwargs = dict(label="y", scores="s", subgroups=list(groups), sample_weight="w")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if entry == "bias_metrics":
            table = fastbias.bias_metrics(y, s, groups, sample_weight=w)
        elif entry == "evaluate":
            res = fastbias.evaluate(df, **kwargs)
            table = res.for_model()
            table.attrs["overall_auc"] = res.overall_auc["s"]
        else:
            pytest.importorskip("pyarrow")
            from fastbias.streaming import evaluate_parquet

            df.to_parquet(tmp_path / "w.parquet")
            res = evaluate_parquet(tmp_path / "w.parquet", bucket_rows=100, **kwargs)
            table = res.for_model()
            table.attrs["overall_auc"] = res.overall_auc["s"]
    assert not [c for c in caught if issubclass(c.category, RuntimeWarning)
                and not issubclass(c.category, UndefinedMetricWarning)], \
        [str(c.message) for c in caught]
    said = [str(c.message) for c in caught if "past the largest float64" in str(c.message)]
    assert len(said) == 1, [str(c.message) for c in caught]
    inf_cells = [f"{name}: {column}" for (name, column), v in exact_weight.items()
                 if np.isinf(v)]
    assert f"{len(inf_cells)} cell weight(s)" in said[0]
    for cell in inf_cells:
        assert cell in said[0]
    for (name, column), v in exact_weight.items():
        got = table.loc[name, column]
        if np.isinf(v):
            assert got == np.inf, (name, column)
        else:
            assert abs(got - v) <= RELATIVE * v, (name, column, got, v)
    for name, member in groups.items():
        want = brute_force_metrics(y, s, member, w / 2.0 ** 64)
        for metric in METRICS:
            assert_exact(table.loc[name, metric], want[metric], f"{name} {metric}")
    assert_exact(table.attrs["overall_auc"],
                 pair_probability(s[y], s[~y], w[y] / 2.0 ** 64, w[~y] / 2.0 ** 64), "overall")
