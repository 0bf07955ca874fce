"""A mutation audit of the streamed (out-of-core) computation (``streaming.py``,
``sweep/chunks.py``, ``sort/buckets.py``) and of the aggregates (``metrics/aggregates.py``), by
an independent reviewer (forty-fourth session): 55 hand mutants, 30 killed by the existing
tests run, 11 by these, 10 equivalent, 4 left (a weighted one-bucket source's first pass, the
tied weight bits' min for max, float32-schema scores read as float64 with the check dropped,
the background's low parts of the double-double sums).

Every expected value comes from an independent reference: the brute-force exact pair counts
of tests/reference.py over the whole data set concatenated (streamed path), 80-digit
decimals (power means, tests/test_aggregates.py's), the Kaggle kernel's code in
tests/_kernel_ref.py (final metric), or an exhaustive enumeration of the draws (expected
Pinned AUC).
"""
import itertools
import math
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias import UndefinedMetricWarning
from fastbias.compat import get_final_metric
from fastbias.streaming import evaluate_csv, evaluate_parquet

from . import _kernel_ref as KR
from .reference import brute_force_metrics, pair_probability
from .test_aggregates import _power_mean_in_decimal
from .test_bounded_memory import quiet

pq = pytest.importorskip("pyarrow.parquet")

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
GROUPS = ["g0", "g1", "g2"]


# ----------------------------------------------------------------------------- streamed data

def _frame(seed=7, n=90):
    """Heavy ties (one value holds a third of the rows), NaN identities, dyadic weights."""
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 12, n).astype(np.float64) / 8
    s[rng.random(n) < 0.35] = 0.75  # a heavy value: a single-score bucket
    y = rng.random(n) < 0.45
    frame = {"y": y.astype(np.int64), "s": s}
    for j, g in enumerate(GROUPS):
        v = (rng.random(n) < 0.3 + 0.1 * j).astype(np.float64)
        v[rng.random(n) < 0.2] = np.nan
        frame[g] = v
    frame["w"] = rng.integers(0, 9, n) / 4.0  # dyadic (zeros included): exact sums
    return pd.DataFrame(frame)


def _expected(df, missing, weighted):
    """Brute-force metrics of all rows at once: code -1 rows left out of that subgroup."""
    y = df["y"].to_numpy() == 1
    s = df["s"].to_numpy()
    w = df["w"].to_numpy() if weighted else None
    rows = {}
    for g in GROUPS:
        v = df[g].to_numpy()
        kept = ~np.isnan(v) if missing == "exclude" else np.ones(len(v), bool)
        member = np.nan_to_num(v) >= 0.5
        rows[g] = brute_force_metrics(y[kept], s[kept], member[kept],
                                      None if w is None else w[kept])
    auc = pair_probability(s[y], s[~y], None if w is None else w[y],
                           None if w is None else w[~y])
    return pd.DataFrame(rows).T[METRICS], auc


def _write_parts(df, tmp_path):
    """The rows in three Parquet files (uneven sizes)."""
    for i, (a, b) in enumerate([(0, 31), (31, 32), (32, len(df))]):
        df.iloc[a:b].to_parquet(tmp_path / f"part-{i}.parquet")
    return tmp_path


@pytest.mark.parametrize("bucket_rows", [1, 4, 25, 10_000])
@pytest.mark.parametrize("missing", ["background", "exclude"])
@pytest.mark.parametrize("weighted", [False, True])
def test_streamed_parquet_equals_brute_force_of_all_rows(tmp_path, bucket_rows, missing,
                                                         weighted):
    """Many batches feeding one bucket (batch_rows=7), single-score buckets, unannotated rows,
    zero weights. Kills the mutants 'stored-row counts of earlier batches forgotten', 'stored
    buckets swept unweighted', 'spilled codes unsigned', 'wrong bucket taken as single-score'."""
    df = _frame()
    directory = _write_parts(df, tmp_path)
    result = quiet(evaluate_parquet, directory, label="y", scores="s", subgroups=GROUPS,
                   missing_subgroup=missing, sample_weight="w" if weighted else None,
                   batch_rows=7, bucket_rows=bucket_rows, n_jobs=1)
    expected, auc = _expected(df, missing, weighted)
    got = result.for_model("s")[METRICS].to_numpy(float)
    np.testing.assert_allclose(got, expected.to_numpy(float), rtol=0, atol=1e-12)
    assert result.overall_auc["s"] == pytest.approx(auc, abs=1e-12)


def test_streamed_csv_weighted_excluded_equals_brute_force(tmp_path):
    """The CSV path (weights not exact in float32: 1 + 2**-30)."""
    df = _frame(seed=3, n=70)
    df["w"] = df["w"] + 2.0 ** -30
    df.to_csv(tmp_path / "x.csv", index=False)
    result = quiet(evaluate_csv, tmp_path / "x.csv", label="y", scores="s", subgroups=GROUPS,
                   missing_subgroup="exclude", sample_weight="w", batch_rows=9, bucket_rows=6)
    expected, auc = _expected(df, "exclude", True)
    np.testing.assert_allclose(result.for_model("s")[METRICS].to_numpy(float),
                               expected.to_numpy(float), rtol=0, atol=1e-12)
    assert result.overall_auc["s"] == pytest.approx(auc, abs=1e-12)


def test_streamed_single_row_score_values_in_single_score_buckets(tmp_path):
    """bucket_rows=1: every value is its own single-score bucket, one of them holding one row.
    Kills 'tied bucket of one row dropped' and 'tied bucket gets the next edge as its score'."""
    y = np.array([0, 1, 0, 1, 1, 0, 0, 1])
    s = np.array([0.1, 0.2, 0.2, 0.3, 0.3, 0.3, 0.4, 0.5])
    g = np.array([1, 0, 1, 1, 0, 0, 1, 1], dtype=np.float64)
    pd.DataFrame({"y": y, "s": s, "g": g}).to_parquet(tmp_path / "t.parquet")
    result = evaluate_parquet(tmp_path / "t.parquet", label="y", scores="s", subgroups=["g"],
                              bucket_rows=1, batch_rows=3)
    expected = brute_force_metrics(y == 1, s, g == 1)
    np.testing.assert_allclose(result.for_model("s")[METRICS].to_numpy(float)[0],
                               np.array([expected[m] for m in METRICS], float), rtol=0, atol=1e-15)
    assert result.overall_auc["s"] == pair_probability(s[y == 1], s[y == 0])


def test_streamed_intersections_equal_brute_force(tmp_path):
    """intersections=2 out of core: the pair cells are the AND of the memberships.
    Kills 'intersections not chosen out of core'."""
    df = _frame(seed=11, n=80)
    for g in GROUPS:
        df[g] = df[g].fillna(0.0)
    df.to_parquet(tmp_path / "i.parquet")
    result = evaluate_parquet(tmp_path / "i.parquet", label="y", scores="s", subgroups=GROUPS,
                              intersections=2, batch_rows=11, bucket_rows=10)
    table = result.for_model("s")
    y, s = df["y"].to_numpy() == 1, df["s"].to_numpy()
    a, b = df["g0"].to_numpy() >= 0.5, df["g1"].to_numpy() >= 0.5
    expected = brute_force_metrics(y, s, a & b)
    assert "g0 & g1" in table.index
    for m in METRICS:
        assert table.loc["g0 & g1", m] == pytest.approx(expected[m], abs=1e-15)


def test_streamed_sizes_refused(tmp_path):
    """bucket_rows=0 / batch_rows=0: a ValueError naming the argument.
    Kills 'bucket_rows/batch_rows 0 accepted'."""
    _frame().to_parquet(tmp_path / "z.parquet")
    for name in ("bucket_rows", "batch_rows"):
        with pytest.raises(ValueError, match=name):
            evaluate_parquet(tmp_path / "z.parquet", label="y", scores="s", subgroups=GROUPS,
                             **{name: 0})


# ----------------------------------------------------------------------------- power mean

@pytest.mark.parametrize("p", [-5, -1, 1, 2, 3.5, 7, -300, 1000, 1e-10, -1e-12, 0.01,
                               -0.03, 0.06, 0.07, -0.2])
@pytest.mark.parametrize("values", [[0.5, 1.0], [0.61, 0.93, 0.77, 0.88], [0.45, 0.9],
                                    [1e-200, 1.0, 3e-5], [2.5, 1e150, 7.0]])
def test_power_mean_equals_exact_decimal_value(values, p):
    """Kills 'near-zero formula on the wrong side', 'near-zero formula only below 2**-40',
    'near-zero formula used for spread values too', 'rescaling by wrong extreme'."""
    expected = _power_mean_in_decimal(values, p)
    assert fastbias.power_mean(values, p) == pytest.approx(expected, rel=1e-12, abs=0)


def test_power_mean_limits_zeros_and_nan():
    """p = -inf/+inf the min/max, zero with p < 0 gives 0, zero with p > 0 does not, NaN in
    NaN out whatever p. Kills 'zero_below sign flipped', 'p=-inf ignores NaN', 'p=0 ignores NaN'."""
    assert fastbias.power_mean([0.3, 0.9, 0.5], float("-inf")) == 0.3
    assert fastbias.power_mean([0.3, 0.9, 0.5], float("inf")) == 0.9
    assert fastbias.power_mean([0.0, 0.8], -5) == 0.0
    assert fastbias.power_mean([0.0, 0.8], 2) == pytest.approx(math.sqrt(0.32), rel=1e-15)
    assert fastbias.power_mean([1e-320, 0.8], 3) == pytest.approx(0.8 / 2 ** (1 / 3), rel=1e-15)
    for p in (float("-inf"), float("inf"), -5, 0, 1e-9, 2):
        assert math.isnan(fastbias.power_mean([0.5, float("nan"), 0.7], p)), p


def test_power_mean_refuses_negative_values():
    """Kills 'tiny negative values accepted'."""
    with pytest.raises(ValueError, match="position 1"):
        fastbias.power_mean([0.5, -1e-310, 0.7], -5)


# ----------------------------------------------------------------------------- final metric

def _table(sub, bpsn, bnsp, names=None):
    names = names or [f"g{i}" for i in range(len(sub))]
    return pd.DataFrame({"subgroup": names, "subgroup_auc": sub, "bpsn_auc": bpsn,
                         "bnsp_auc": bnsp})


@pytest.mark.parametrize("weight", [0.0, 0.25, 0.4, 1.0])
def test_final_metric_equals_kernel(weight):
    """Against the Kaggle kernel's get_final_metric. Kills 'weights swapped' and
    'overall_weight 1 refused'."""
    t = _table([0.81, 0.9, 0.62], [0.7, 0.95, 0.88], [0.91, 0.77, 0.69])
    expected = KR.get_final_metric(t, 0.87, POWER=-5, OVERALL_MODEL_WEIGHT=weight)
    got = fastbias.final_metric(t, 0.87, overall_weight=weight)
    assert got == pytest.approx(expected, rel=1e-14)


def test_final_metric_omit_drops_only_the_undefined_values():
    """One NaN BPSN: its power mean runs over the two other subgroups (hand value).
    Kills 'omit keeps a single NaN'."""
    t = _table([0.81, 0.9, 0.62], [np.nan, 0.95, 0.88], [0.91, 0.77, 0.69])
    pm = lambda v: (sum(x ** -5 for x in v) / len(v)) ** (-1 / 5)
    expected = 0.25 * 0.87 + 0.75 * (pm([0.81, 0.9, 0.62]) + pm([0.95, 0.88])
                                     + pm([0.91, 0.77, 0.69])) / 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fastbias.final_metric(t, 0.87, undefined="omit") == pytest.approx(expected,
                                                                                 rel=1e-14)


def test_final_metric_omit_of_an_all_nan_metric_is_said():
    """Kills 'omit-to-nothing NaN not said'."""
    t = _table([0.81, 0.9], [np.nan, np.nan], [0.91, 0.77])
    with pytest.warns(UndefinedMetricWarning, match="every subgroup"):
        assert math.isnan(fastbias.final_metric(t, 0.87, undefined="omit"))


def test_final_metric_leaves_intersections_out():
    """Kills 'intersections not left out of the final metric'."""
    t = _table([0.81, 0.9, 0.5], [0.7, 0.95, 0.5], [0.91, 0.77, 0.5], ["a", "b", "a & b"])
    t.attrs["intersections"] = ["a & b"]
    expected = KR.get_final_metric(t.iloc[:2], 0.8)
    assert fastbias.final_metric(t, 0.8) == pytest.approx(expected, rel=1e-14)


def test_final_metric_refuses_bad_arguments():
    """Kills 'overall_auc range unchecked' and 'two-model table accepted'."""
    t = _table([0.81, 0.9], [0.7, 0.95], [0.91, 0.77])
    with pytest.raises(ValueError, match="overall_auc"):
        fastbias.final_metric(t, 1.5)
    two = pd.concat([t.assign(model="m1"), t.assign(model="m2")])
    with pytest.raises(ValueError, match="2 models"):
        fastbias.final_metric(two, 0.8)


# ----------------------------------------------------------------------------- pinned AUC

def _pinned_ratio_of_expectations(y, s, member, population, replace):
    """sum over every equally likely draw of U / sum of pairs (exhaustive)."""
    m = int(member.sum())
    draws = (itertools.product(population, repeat=m) if replace
             else itertools.combinations(population, m))
    twice_u, pairs = Fraction(0), Fraction(0)
    g = list(np.flatnonzero(member))
    for drawn in draws:
        rows = g + list(drawn)
        pos = [s[i] for i in rows if y[i]]
        neg = [s[i] for i in rows if not y[i]]
        twice_u += sum(2 * (a > b) + (a == b) for a in pos for b in neg)
        pairs += len(pos) * len(neg)
    return float(twice_u / (2 * pairs))


@pytest.mark.parametrize("method", ["expected", "expected_dixon"])
@pytest.mark.parametrize("replace", [False, True])
def test_expected_pinned_auc_equals_enumeration_of_draws(method, replace):
    """Kills 'f2 replace/no-replace swapped', 'background U keeps BNSP pairs', 'dixon: subgroup
    pairs missing in P+ > Dg-', 'expected population size = all rows'."""
    y = np.array([1, 0, 0, 1, 1, 0, 1, 0, 0], bool)
    s = np.array([0.9, 0.2, 0.6, 0.4, 0.6, 0.8, 0.3, 0.1, 0.6])
    member = np.array([1, 1, 0, 1, 0, 0, 0, 0, 0], bool)
    population = (np.flatnonzero(~member) if method == "expected" else np.arange(len(y)))
    expected = _pinned_ratio_of_expectations(y, s, member, list(population), replace)
    got = fastbias.pinned_auc(y, s, {"g": member}, method=method, replace=replace)["g"]
    assert got == pytest.approx(expected, rel=1e-13)


def test_pinned_subgroup_as_large_as_its_background_is_accepted():
    """|g| = |background| without replacement: the whole background is drawn, so the pinned set
    is every row and the expected Pinned AUC is the overall AUC. Kills 'subgroup equal to
    background refused'."""
    y = np.array([1, 0, 0, 1, 1, 0], bool)
    s = np.array([0.9, 0.2, 0.6, 0.4, 0.5, 0.8])
    member = np.array([1, 1, 1, 0, 0, 0], bool)
    got = fastbias.pinned_auc(y, s, {"g": member}, method="expected")["g"]
    assert got == pytest.approx(pair_probability(s[y], s[~y]), rel=1e-15)
    with pytest.raises(ValueError, match="covers every row"):
        fastbias.pinned_auc(y, s, {"g": np.ones(6, bool)}, method="expected")


@pytest.mark.parametrize("power", [float("-inf"), 0, float("inf")])
def test_final_metric_propagates_nan_at_the_power_limits(power):
    """undefined='propagate' with p = -inf, 0 or +inf: a NaN AUC makes the final metric NaN (as
    the warning says), not the min/geometric mean/max of the others. Kills 'p=-inf ignores NaN'
    and 'p=0 ignores NaN'."""
    t = _table([0.81, 0.9, 0.62], [np.nan, 0.95, 0.88], [0.91, 0.77, 0.69])
    with pytest.warns(UndefinedMetricWarning, match="bpsn_auc"):
        assert math.isnan(fastbias.final_metric(t, 0.87, power=power))
    # omit: over the defined values, by hand
    pm = {float("-inf"): min, float("inf"): max,
          0: lambda v: math.exp(sum(math.log(x) for x in v) / len(v))}[power]
    expected = 0.25 * 0.87 + 0.75 * (pm([0.81, 0.9, 0.62]) + pm([0.95, 0.88])
                                     + pm([0.91, 0.77, 0.69])) / 3
    assert fastbias.final_metric(t, 0.87, power=power, undefined="omit") == pytest.approx(
        expected, rel=1e-14)


def test_evaluator_min_auc_omit_is_the_minimum_of_the_defined_values():
    """BiasEvaluator.score('min_bpsn_auc') under undefined='omit' with one subgroup's BPSN
    undefined: the minimum of the others, from brute-force pair counts. Kills 'worst_auc omit
    takes max'."""
    y = np.array([1, 0, 0, 1, 1, 0, 1, 0, 0, 1], bool)
    s = np.array([0.9, 0.2, 0.6, 0.4, 0.5, 0.8, 0.3, 0.1, 0.7, 0.65])
    groups = {"a": np.array([1, 1, 1, 0, 0, 0, 0, 0, 0, 1], bool),
              "b": np.array([0, 1, 0, 1, 1, 0, 0, 1, 0, 0], bool),
              "c": np.array([1, 0, 0, 1, 0, 0, 0, 0, 0, 0], bool)}
    groups["c"] = np.array([1, 0, 0, 1, 0, 0, 1, 0, 0, 0], bool)  # positives only: BPSN undefined
    bpsn = {k: pair_probability(s[~m & y], s[m & ~y]) for k, m in groups.items()}
    assert math.isnan(bpsn["c"]) and bpsn["a"] != bpsn["b"]
    expected = min(v for v in bpsn.values() if not math.isnan(v))
    ev = fastbias.BiasEvaluator(y, groups, undefined="omit")
    assert ev.score(s, "min_bpsn_auc") == expected
    ev = fastbias.BiasEvaluator(y, groups)
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(ev.score(s, "min_bpsn_auc"))


def test_expected_pinned_auc_of_a_one_class_pinned_set_warns_once_without_runtime_warning():
    """A subgroup and background of negatives only: NaN with one UndefinedMetricWarning and no
    numpy RuntimeWarning (0/0). Kills 'zero pairs divided'."""
    y = np.array([0, 0, 0, 0, 1, 0], bool)
    s = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    member = np.array([1, 1, 0, 0, 0, 0], bool)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = fastbias.pinned_auc(y[:4], s[:4], {"g": member[:4]}, method="expected")["g"]
    assert math.isnan(got)
    kinds = [w.category for w in caught]
    assert RuntimeWarning not in kinds and kinds.count(UndefinedMetricWarning) == 1, kinds


@pytest.mark.parametrize("bucket_rows", [1, 4, 10_000])
@pytest.mark.parametrize("missing", ["background", "exclude"])
def test_streamed_threshold_counts_at_a_heavy_score_equal_hand_counts(tmp_path, bucket_rows,
                                                                      missing):
    """thresholds= out of core, one threshold exactly at the heavy (single-score bucket) value
    0.75 and one just above it: the tp/fp counts of every subgroup and its background are the
    hand counts of ``score >= t`` over all rows. Kills 'tied bucket gets the next edge as its
    score' and 'tied bucket skips extras when only one of sums/thresholds is asked'."""
    df = _frame()
    directory = _write_parts(df, tmp_path)
    thresholds = [0.5, 0.75, float(np.nextafter(0.75, 1.0))]
    result = quiet(evaluate_parquet, directory, label="y", scores="s", subgroups=GROUPS,
                   missing_subgroup=missing, thresholds=thresholds, batch_rows=7,
                   bucket_rows=bucket_rows, n_jobs=1)
    table = result.thresholds
    y, s = df["y"].to_numpy() == 1, df["s"].to_numpy()
    checked = 0
    for t in thresholds:
        for g in GROUPS:
            v = df[g].to_numpy()
            kept = ~np.isnan(v) if missing == "exclude" else np.ones(len(v), bool)
            member = np.nan_to_num(v) >= 0.5
            bg = kept & ~member
            row = table[(table["threshold"] == t) & (table["subgroup"] == g)]
            assert len(row) == 1
            row = row.iloc[0]
            flagged = s >= t
            assert row["subgroup_tp"] == np.sum(member & y & flagged)
            assert row["subgroup_fp"] == np.sum(member & ~y & flagged)
            assert row["background_tp"] == np.sum(bg & y & flagged)
            assert row["background_fp"] == np.sum(bg & ~y & flagged)
            checked += 1
    assert checked == 9


def test_streamed_csv_of_a_header_only_is_refused(tmp_path):
    """No data rows: a ValueError saying so, not an empty result. Pins 'no-rows check'."""
    (tmp_path / "e.csv").write_text("y,s,g0\n")
    with pytest.raises(ValueError, match="no rows"):
        evaluate_csv(tmp_path / "e.csv", label="y", scores="s", subgroups=["g0"])


def test_streamed_pos_label_absent_or_third_value_is_refused(tmp_path):
    """pos_label that no row holds, or a third label value: a ValueError naming it. Kills
    'label classes check dropped'."""
    df = pd.DataFrame({"y": ["ok", "toxic", "ok", "toxic"], "s": [0.1, 0.2, 0.3, 0.4],
                       "g0": [1, 0, 1, 0]})
    df.to_parquet(tmp_path / "p.parquet")
    with pytest.raises(ValueError, match="spam"):
        evaluate_parquet(tmp_path / "p.parquet", label="y", scores="s", subgroups=["g0"],
                         pos_label="spam")
    df.assign(y=["ok", "toxic", "meh", "toxic"]).to_parquet(tmp_path / "q.parquet")
    with pytest.raises(ValueError, match="meh"):
        evaluate_parquet(tmp_path / "q.parquet", label="y", scores="s", subgroups=["g0"],
                         pos_label="toxic")


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_streamed_intersections_in_pieces_equal_brute_force(tmp_path, monkeypatch, fmt):
    """With intersections, a batch is encoded in pieces (here of 1,000 rows, the least, by a
    tiny COMBINATION_BATCH_BYTES): every row of every piece counts. Kills 'piece drops its last
    row (DataFrame)' and 'piece drops its first row (dict)'."""
    import fastbias.streaming as streaming
    monkeypatch.setattr(streaming, "COMBINATION_BATCH_BYTES", 1)
    rng = np.random.default_rng(5)
    n = 2_300
    df = pd.DataFrame({"y": (rng.random(n) < 0.4).astype(int),
                       "s": rng.integers(0, 50, n) / 50,
                       "g0": (rng.random(n) < 0.5).astype(int),
                       "g1": (rng.random(n) < 0.5).astype(int)})
    path = tmp_path / f"x.{fmt}"
    write, run = {"parquet": (df.to_parquet, evaluate_parquet),
                  "csv": (lambda to: df.to_csv(to, index=False), evaluate_csv)}[fmt]
    write(path)
    result = run(path, label="y", scores="s", subgroups=["g0", "g1"], intersections=2,
                 batch_rows=2_300, bucket_rows=800)
    y, s = df["y"].to_numpy() == 1, df["s"].to_numpy()
    both = (df["g0"].to_numpy() == 1) & (df["g1"].to_numpy() == 1)
    table = result.for_model("s")
    assert table.loc["g0 & g1", "subgroup_size"] == both.sum()
    expected = brute_force_metrics(y, s, both)
    for m in METRICS:
        assert table.loc["g0 & g1", m] == pytest.approx(expected[m], abs=1e-15)
    assert result.overall_auc["s"] == pytest.approx(pair_probability(s[y], s[~y]), abs=1e-15)


@pytest.mark.parametrize(("column", "values", "shown"), [
    ("subgroup_auc", [81.0, 90.0, 62.0], r"holds 81\.0 for subgroup 'g0' \(row 0\) and 2 more"),
    ("bpsn_auc", [0.7, -0.1, 0.88], r"holds -0\.1 for subgroup 'g1' \(row 1\);"),
    ("bnsp_auc", [0.91, 0.77, np.inf], r"holds inf for subgroup 'g2' \(row 2\);"),
    ("bnsp_auc", [0.91, 1.0000000000000002, 0.5], r"holds 1\.0000000000000002 for subgroup 'g1'"),
])
def test_final_metric_refuses_an_auc_outside_zero_one(column, values, shown):
    """DEFECT fixed: a table of AUCs outside [0, 1] gave a number that looks like a final metric
    (AUCs in percent, 81 and 90: 61.3; 1.1: 0.767; inf: 0.782) and a negative one NaN with
    the warning "undefined in every subgroup". Now a ValueError naming the column, the value,
    the subgroup and its row (found by the reviewer's note)."""
    t = _table([0.81, 0.9, 0.62], [0.7, 0.95, 0.88], [0.91, 0.77, 0.69])
    t[column] = values
    for run in (lambda: fastbias.final_metric(t, 0.87),
                lambda: get_final_metric(t, 0.87)):
        with pytest.raises(ValueError, match=f"table column '{column}' {shown}"):
            run()
    # an intersection's row (left out of the metric) is an AUC too: refused the same way
    t = _table([0.81, 0.9, 0.62], [0.7, 0.95, 0.88], [0.91, 0.77, 0.69], ["a", "b", "a & b"])
    t.attrs["intersections"] = ["a & b"]
    t.loc[2, "subgroup_auc"] = 75.0
    with pytest.raises(ValueError, match=r"holds 75\.0 for subgroup 'a & b' \(row 2\)"):
        fastbias.final_metric(t, 0.87)


def test_final_metric_takes_aucs_of_exactly_zero_and_one():
    """The ends of [0, 1] are AUCs (a subgroup perfectly ranked or reversed): the final metric
    is the Kaggle kernel's, a zero AUC making its power mean 0 at p = -5."""
    t = _table([0.0, 1.0, 0.62], [1.0, 0.95, 0.88], [0.91, 0.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (the kernel divides by zero)
        expected = KR.get_final_metric(t, 1.0)
    assert fastbias.final_metric(t, 1.0) == pytest.approx(expected, rel=1e-14)
