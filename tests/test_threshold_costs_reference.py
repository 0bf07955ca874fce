"""An independent review's tests (2026-11-27): the threshold metrics and their intervals.

Every expected value comes from an independent reference in this file: plain Python
loops, fractions.Fraction for weighted counts, scipy.stats.beta for Clopper-Pearson, the
Wilson and Bernstein formulas of docs/thresholds.md and docs/intervals.md written out.

Found by review (each fails before its fix): the TPR gap's Bernstein interval held 0 where
the FNR gap's (the same disparity) did not, and the positive rate's was not the paper's
demographic-parity interval (now both take the paper's cost 1 - y_hat, mirrored); the HTML
report never said the threshold intervals' level (80% ones read as 95%);
demographic_parity_cost / equal_opportunity_cost compared a float32 score with a float64
threshold in float64 (the other entry points round the threshold to the scores' type) and
took NaN, True, text and lists as thresholds; bernstein_halfwidth took n = 2.5 or True.
"""
from __future__ import annotations

import math
import warnings
from fractions import Fraction
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest

import fastbias

# ---------------------------------------------------------------- references


def _ref_counts(y, s, member, t, w=None, annotated=None):
    """Counts and rates of docs/thresholds.md by loops: predicted positive iff s >= t
    (``s`` and ``t`` Python floats, compared exactly)."""
    n = len(y)
    w = [1] * n if w is None else list(w)
    out = {}

    def total(rows):
        return sum((Fraction(w[i]) for i in rows), Fraction(0))

    sub = [i for i in range(n) if member[i]]
    back = [i for i in range(n) if not member[i] and (annotated is None or annotated[i])]
    for side, rows in (("subgroup", sub), ("background", back)):
        neg = [i for i in rows if not y[i]]
        pos = [i for i in rows if y[i]]
        tp = total([i for i in pos if s[i] >= t])
        fp = total([i for i in neg if s[i] >= t])
        big_n, big_p = total(neg), total(pos)

        def rate(a, b):
            return float(a / b) if b else math.nan

        out.update({f"{side}_negatives": big_n, f"{side}_positives": big_p,
                    f"{side}_tp": tp, f"{side}_fp": fp,
                    f"{side}_positive_rate": rate(tp + fp, big_n + big_p),
                    f"{side}_tpr": rate(tp, big_p), f"{side}_fpr": rate(fp, big_n),
                    f"{side}_fnr": rate(big_p - tp, big_p),
                    f"{side}_precision": rate(tp, tp + fp)})
    return out


def _halfwidth(n, sigma2, max_cost, gamma, confidence):
    """docs/intervals.md: t = (B + sqrt(B^2 + 8 n sigma^2 L)) / (2 n), B = 2 C L / (3 gamma)."""
    big_l = math.log(2.0 / (1.0 - confidence))
    b = 2.0 * max_cost * big_l / (3.0 * gamma)
    return (b + math.sqrt(b * b + 8.0 * n * sigma2 * big_l)) / (2.0 * n)


def _ref_bernstein(cost, group, confidence, clip=True):
    """Ethayarajh's interval from the docs' formula: z_i = c_i f(x_i) / Pr[f = f(x_i)],
    mean and sample variance (ddof=1) in Fractions, gamma = min group frequency."""
    n = len(cost)
    n_a = sum(1 for g in group if g == 1)
    n_b = sum(1 for g in group if g == -1)
    if n_a == 0 or n_b == 0 or n < 2:
        return math.nan, math.nan
    g_a, g_b = Fraction(n_a, n), Fraction(n_b, n)
    z = [Fraction(c) / g_a if g == 1 else (-Fraction(c) / g_b if g == -1 else Fraction(0))
         for c, g in zip(cost, group)]
    mean = sum(z) / n
    var = sum((v - mean) ** 2 for v in z) / (n - 1)
    t = _halfwidth(n, float(var), 1.0, float(min(g_a, g_b)), confidence)
    low, high = float(mean) - t, float(mean) + t
    if clip:
        low, high = max(-1.0, min(1.0, low)), max(-1.0, min(1.0, high))
    return low, high


def _wilson(k, n, confidence):
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def _clopper_pearson(k, n, confidence):
    stats = pytest.importorskip("scipy.stats")
    alpha = 1.0 - confidence
    low = 0.0 if k == 0 else float(stats.beta.ppf(alpha / 2, k, n - k + 1))
    high = 1.0 if k == n else float(stats.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return low, high


def _close(a, b, tol=1e-12):
    a, b = float(a), float(b)
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol * max(1.0, abs(b))


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


RATE_SETS = ("positive_rate", "tpr", "fpr", "fnr", "precision")

# ---------------------------------------------------------------- properties that held


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_counts_and_rates_match_loops_at_tied_thresholds(dtype):
    """Scores exactly at a threshold count as predicted positive (>=), with the threshold
    rounded to the scores' dtype (docs/thresholds.md); unsorted, duplicated thresholds;
    fractional and zero weights."""
    rng = np.random.default_rng(0)
    for trial in range(12):
        n = int(rng.integers(8, 50))
        y = rng.integers(0, 2, n).astype(bool)
        s = rng.choice([0.0, 0.1, 0.3, 0.5, 0.7, 1.0], n).astype(dtype)
        g = rng.random(n) < 0.4
        w = rng.choice([0.0, 0.5, 1.25, 3.0], n) if trial % 2 else None
        thresholds = [0.7, 0.1, 0.3, 0.7, 0.0, 1.0, 0.5]
        table = _quiet(fastbias.threshold_metrics, y, s, {"g": g}, thresholds=thresholds,
                       sample_weight=w, interval=None)
        assert list(table.index.get_level_values(0)) == sorted(set(thresholds))
        for t in sorted(set(thresholds)):
            t_cmp = float(dtype(t))  # the documented comparison: threshold in scores' dtype
            ref = _ref_counts(y.tolist(), [float(v) for v in s], g.tolist(), t_cmp, w)
            row = table.loc[(t, "g")]
            for key, value in ref.items():
                assert _close(row[key], value), (trial, t, key, row[key], value)


def test_wilson_and_exact_rate_intervals_match_formulas():
    rng = np.random.default_rng(2)
    n = 40
    y = rng.integers(0, 2, n).astype(bool)
    s = np.round(rng.random(n), 1)
    g = rng.random(n) < 0.4
    for method, ref in (("wilson", _wilson), ("exact", _clopper_pearson)):
        for conf in (0.9, 0.99):
            table = _quiet(fastbias.threshold_metrics, y, s, {"g": g}, thresholds=[0.5],
                           interval=method, confidence=conf)
            row = table.loc[(0.5, "g")]
            p = s >= 0.5
            for side, m in (("subgroup", g), ("background", ~g)):
                sets = {"positive_rate": (m, p), "tpr": (m & y, p), "fpr": (m & ~y, p),
                        "fnr": (m & y, ~p), "precision": (m & p, y)}
                for rate, (inset, hit) in sets.items():
                    trials, k = int(inset.sum()), int((inset & hit).sum())
                    if trials == 0:
                        assert math.isnan(row[f"{side}_{rate}_low"])
                        continue
                    low, high = ref(k, trials, conf)
                    assert _close(row[f"{side}_{rate}_low"], low, 1e-9)
                    assert _close(row[f"{side}_{rate}_high"], high, 1e-9)


def test_bernstein_gap_interval_is_the_documented_procedure_per_rate():
    """gap_interval='bernstein' = Ethayarajh's interval with the gap's rate as the cost on
    the rows of its set, A = subgroup, B = background, all other rows in neither, clipped
    to [-1, 1] (docs/thresholds.md)."""
    rng = np.random.default_rng(1)
    for trial in range(8):
        n = int(rng.integers(5, 60))
        y = rng.integers(0, 2, n).astype(bool)
        s = np.round(rng.random(n), 1)
        g = rng.random(n) < rng.uniform(0.1, 0.6)
        conf = (0.9, 0.95, 0.99)[trial % 3]
        table = _quiet(fastbias.threshold_metrics, y, s, {"g": g}, thresholds=[0.5],
                       interval=None, gap_interval="bernstein", confidence=conf)
        row = table.loc[(0.5, "g")]
        p = s >= 0.5
        # (the positive rate's and the TPR's gaps: the paper's cost 1 - y_hat, mirrored)
        sets = {"positive_rate": (np.ones(n, bool), ~p, -1), "tpr": (y, ~p, -1),
                "fpr": (~y, p, 1), "fnr": (y, ~p, 1), "precision": (p, y, 1)}
        for rate, (inset, hit, sign) in sets.items():
            group = np.where(inset & g, 1, np.where(inset & ~g, -1, 0))
            low, high = sorted(sign * v for v in _ref_bernstein(hit.astype(int).tolist(),
                                                                group.tolist(), conf))
            assert _close(row[f"{rate}_gap_low"], low, 1e-9), (trial, rate)
            assert _close(row[f"{rate}_gap_high"], high, 1e-9), (trial, rate)


def test_bernstein_halfwidth_and_min_samples_match_docs():
    assert _close(fastbias.bernstein_halfwidth(3160, sigma2=4, max_cost=1, gamma=0.5),
                  _halfwidth(3160, 4, 1, 0.5, 0.95), 1e-14)
    assert round(_halfwidth(3160, 4, 1, 0.5, 0.95), 4) == 0.0974
    for delta, s2, gam, conf in ((0.05, 4, 0.5, 0.95), (0.1, 0.25, 0.1, 0.99),
                                 (0.3, 1.0, 0.25, 0.9), (1.0, 0.0, 1.0, 0.95)):
        got = fastbias.bernstein_min_samples(delta, sigma2=s2, max_cost=1, gamma=gam,
                                             confidence=conf)
        n = 1
        while not _halfwidth(n, s2, 1, gam, conf) < delta:  # brute force: smallest n
            n += 1
        assert got == n, (delta, s2, gam, conf, got, n)
    assert fastbias.bernstein_min_samples(0.05, sigma2=4, max_cost=1, gamma=0.5) == 11903


def test_threshold_entry_points_agree_on_float32_ties(tmp_path):
    """arrays, DataFrame evaluate, Dask and Parquet count a float32 score equal to a
    threshold the same way (the threshold rounded to float32)."""
    dd = pytest.importorskip("dask.dataframe")
    import fastbias.dask as fdask
    rng = np.random.default_rng(3)
    n = 300
    df = pd.DataFrame({"label": rng.integers(0, 2, n).astype(bool),
                       "s": rng.choice(np.array([0.1, 0.3, 0.5, 0.7], np.float32), n),
                       "a": rng.random(n) < 0.3})
    thresholds = [0.1, 0.7, 0.3]
    expected = {}
    for t in thresholds:
        pred = df["s"].to_numpy() >= np.float32(t)  # 0.7 as float32 is below 0.7: counted
        expected[t] = int((pred & df["a"].to_numpy() & df["label"].to_numpy()).sum())
    tab = _quiet(fastbias.threshold_metrics, df["label"], df["s"], df[["a"]],
                 thresholds=thresholds)
    assert {t: int(tab.loc[(t, "a"), "subgroup_tp"]) for t in thresholds} == expected
    got_eval = _quiet(fastbias.evaluate, df, label="label", scores="s", subgroups=["a"],
                      thresholds=thresholds).thresholds
    assert got_eval.set_index("threshold")["subgroup_tp"].to_dict() == expected
    df.to_parquet(tmp_path / "d.parquet")
    got_pq = _quiet(fastbias.evaluate_parquet, str(tmp_path / "d.parquet"), label="label",
                    scores="s", subgroups=["a"], thresholds=thresholds,
                    bucket_rows=50, batch_rows=100).thresholds
    assert got_pq.set_index("threshold")["subgroup_tp"].to_dict() == expected
    got_dask = _quiet(fdask.evaluate, dd.from_pandas(df, npartitions=3), label="label",
                      scores="s", subgroups=["a"], thresholds=thresholds).thresholds
    assert got_dask.set_index("threshold")["subgroup_tp"].to_dict() == expected


def test_bad_thresholds_refused_with_position():
    y, s = np.array([0, 1, 0, 1]), np.array([0.1, 0.2, 0.6, 0.9])
    g = {"g": np.array([1, 1, 0, 0], bool)}
    with pytest.raises(ValueError, match=r"NaN \(position 1\)"):
        fastbias.threshold_metrics(y, s, g, thresholds=[0.5, np.nan])
    with pytest.raises(TypeError, match="position 0"):
        fastbias.threshold_metrics(y, s, g, thresholds=[True])
    with pytest.raises(TypeError, match="position 0"):
        fastbias.threshold_metrics(y, s, g, thresholds=["0.5"])


def test_empty_and_full_subgroups_nan_with_counts_under_exclude():
    rng = np.random.default_rng(5)
    n = 80
    df = pd.DataFrame({"label": rng.integers(0, 2, n).astype(bool),
                       "s": np.round(rng.random(n), 1),
                       "a": rng.choice([0.0, 1.0, np.nan], n, p=[0.5, 0.2, 0.3]),
                       "empty": np.zeros(n), "every": np.ones(n)})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = fastbias.evaluate(df, label="label", scores="s",
                                subgroups=["a", "empty", "every"], thresholds=[0.5],
                                gap_interval="bernstein", missing_subgroup="exclude")
    assert any("threshold rate(s) undefined" in str(w.message) for w in caught)
    table = res.thresholds
    for name in ("a", "empty", "every"):
        annotated = df[name].notna().tolist()
        member = (df[name] >= 0.5).tolist()
        ref = _ref_counts(df["label"].tolist(), df["s"].tolist(), member, 0.5,
                          annotated=annotated)
        row = table[table["subgroup"] == name].iloc[0]
        for key, value in ref.items():
            assert _close(row[key], value), (name, key)
    assert math.isnan(table[table["subgroup"] == "empty"]["fpr_gap_low"].iloc[0])
    assert math.isnan(table[table["subgroup"] == "every"]["fpr_gap_low"].iloc[0])


# ---------------------------------------------------------------- found by review


def _tpr_case():
    """All rows positive; a subgroup of 30 rows, all predicted positive (TPR 1, FNR 0);
    a background of 970 rows, 679 predicted positive (TPR 0.7, FNR 0.3)."""
    n_a, n_b = 30, 970
    y = np.ones(n_a + n_b, bool)
    s = np.r_[np.full(n_a, 0.9), np.full(679, 0.9), np.full(n_b - 679, 0.1)]
    g = np.r_[np.ones(n_a, bool), np.zeros(n_b, bool)]
    return y, s, g


def test_tpr_and_fnr_gap_bernstein_intervals_contradict():
    """Was: fnr_gap = -tpr_gap exactly (docs/thresholds.md), the same disparity; yet
    with gap_interval='bernstein' the FNR gap's interval [-0.398, -0.202] excludes 0
    while the TPR gap's [-0.243, +0.843] contains it (the cost 1 - y_hat and the cost
    y_hat give different sample variances of the amortized disparity). The table and the
    report state that the same gap is and is not resolved. Correct: one interval for one
    disparity, mirrored between the two names (the paper's equal-opportunity cost is
    1 - y_hat on the positives, i.e. the FNR one: fastbias.equal_opportunity_cost)."""
    y, s, g = _tpr_case()
    row = fastbias.threshold_metrics(y, s, {"g": g}, thresholds=[0.5], interval=None,
                                     gap_interval="bernstein").loc[(0.5, "g")]
    assert _close(row["fnr_gap"], -row["tpr_gap"])  # (to rounding: 0.3 vs 0.30000000000000004)
    # independent reference: the paper's equal opportunity cost c = 1 - y_hat on positives
    p = s >= 0.5
    group = np.where(g, 1, -1)
    fnr_low, fnr_high = _ref_bernstein((~p).astype(int).tolist(), group.tolist(), 0.95)
    assert fnr_high < 0  # the FNR gap is resolved
    assert _close(row["fnr_gap_low"], fnr_low, 1e-9)
    # the TPR gap (= -FNR gap) must carry the mirrored interval and be resolved too
    assert (row["tpr_gap_low"] > 0) == (row["fnr_gap_high"] < 0)
    assert _close(row["tpr_gap_low"], -fnr_high, 1e-9)
    assert _close(row["tpr_gap_high"], -fnr_low, 1e-9)


def test_positive_rate_gap_interval_is_not_the_papers_demographic_parity_interval():
    """Was: The docs call positive_rate_gap the demographic parity difference and its
    interval the Bernstein interval of Ethayarajh (fastbias.bernstein_interval); the
    paper's (and fastbias.demographic_parity_cost's) demographic parity cost is 1 - y_hat,
    whose disparity is -positive_rate_gap. Computed from the docs' formula, that interval
    is [0.2016, 0.3984] (mirrored): fastbias gives [-0.243, +0.843], which contains 0."""
    y, s, g = _tpr_case()
    row = fastbias.threshold_metrics(y, s, {"g": g}, thresholds=[0.5], interval=None,
                                     gap_interval="bernstein").loc[(0.5, "g")]
    p = s >= 0.5
    low, high = _ref_bernstein((1 - p.astype(int)).tolist(), np.where(g, 1, -1).tolist(),
                               0.95)
    assert _close(row["positive_rate_gap"], 0.3)
    assert _close(row["positive_rate_gap_low"], -high, 1e-9)
    assert _close(row["positive_rate_gap_high"], -low, 1e-9)


def test_report_does_not_state_confidence_of_threshold_intervals():
    """Was: evaluate(..., confidence=0.8, thresholds=..., gap_interval='bernstein')
    without ci: the HTML report shows every gap's interval ("bars: Bernstein intervals",
    the settings line "rates' intervals: exact; gaps' intervals: bernstein") but nowhere
    says they are 80% intervals (the AUC intervals' line says "delong, 80%"). A reader
    takes them for 95%. Correct: the level stated with the threshold intervals."""
    rng = np.random.default_rng(3)
    n = 200
    df = pd.DataFrame({"label": rng.integers(0, 2, n).astype(bool),
                       "s": np.round(rng.random(n), 2), "a": rng.random(n) < 0.3})
    report = _quiet(fastbias.bias_report, df, label="label", scores="s", subgroups=["a"],
                    thresholds=[0.5], gap_interval="bernstein", threshold_interval="exact",
                    confidence=0.8)
    html = report.to_html()
    start = html.find("gaps&#x27; intervals")
    assert start >= 0
    assert "80%" in html, "the 80% level of the threshold intervals is not stated"


def test_demographic_parity_cost_threshold_rule_differs_from_threshold_metrics():
    """Was (inconsistent entry points): A float32 score of 0.7 and a threshold
    numpy.float64(0.7) (e.g. an element of numpy.linspace, as the docs' own example
    passes): threshold_metrics rounds the threshold to float32 and counts the row as
    predicted positive (docs/thresholds.md); demographic_parity_cost compares in float64
    and calls it predicted negative. The same row, threshold and scores give opposite
    predictions, so bernstein_interval(*demographic_parity_cost(...)) bounds a different
    gap than threshold_metrics reports. Correct: one rule (the documented one)."""
    s = np.array([0.7, 0.7, 0.2, 0.9], dtype=np.float32)
    group = np.array([1, 1, -1, -1])
    threshold = np.float64(0.7)
    # the documented rule: the threshold rounded to the scores' dtype
    documented = [float(v) >= float(np.float32(0.7)) for v in s]
    table = _quiet(fastbias.threshold_metrics, np.ones(4, bool), s, {"A": group == 1},
                   thresholds=threshold, interval=None)
    assert int(table.loc[(0.7, "A"), "subgroup_tp"]) == sum(documented[:2])  # holds
    cost, _ = fastbias.demographic_parity_cost(s, group, threshold=threshold)
    assert cost.tolist() == [0.0 if d else 1.0 for d in documented]


@pytest.mark.parametrize("bad", [np.nan, True, "0.5", [0.5, 0.6]])
def test_bernstein_cost_functions_do_not_check_threshold(bad):
    """Was: demographic_parity_cost / equal_opportunity_cost take any threshold:
    NaN silently makes every row predicted negative (cost 1 everywhere), True is read as
    1.0 (threshold_metrics refuses a bool), a string fails inside numpy with
    UFuncTypeError not naming the argument, a list with a broadcasting error. Correct:
    a ValueError/TypeError naming ``threshold`` and the value, as thresholds= does."""
    s = np.array([0.7, 0.7, 0.2, 0.9])
    group = np.array([1, 1, -1, -1])
    with pytest.raises((ValueError, TypeError), match="threshold"):
        fastbias.demographic_parity_cost(s, group, threshold=bad)
    with pytest.raises((ValueError, TypeError), match="threshold"):
        fastbias.equal_opportunity_cost(np.ones(4), s, group, threshold=bad)


@pytest.mark.parametrize("n", [2.5, True])
def test_bernstein_halfwidth_accepts_a_non_count_n(n):
    """Was (minor): n is 'Number of examples' (int); 2.5 and True are taken as counts
    (True as 1 example) and give a half-width. Correct: a ValueError/TypeError naming n."""
    with pytest.raises((ValueError, TypeError), match=r"\bn\b"):
        fastbias.bernstein_halfwidth(n, sigma2=1.0, gamma=0.5)
