"""An independent review's tests (2026-11-27) of the thirty-fourth session's own changes
(CLI warnings in CLI terms, complement-cost Bernstein gap intervals, the paired DeLong test's
weight scale, from_result's weight checks, the boosting metrics' binding of evaluators, JSON
lines read leniently, Dask's score-dtype example, the Bernstein helpers' checks).

Every expected value comes from an independent reference here: Fractions/Decimals for
Ethayarajh's procedure, sklearn for AUCs, hand counts, hand-written strings. Found by review
(each fails before its fix): CLI warnings rewrote unquoted subgroup names that read like
arguments ('n_boot' as '--n-boot'); "--missing-subgroup='exclude'"; from_result took weights
missing on other rows of the same count; the boosting metrics refused a set of the same rows
built again (continued training, a search); Dask named a number written as text before a word
of a later partition.
"""
from __future__ import annotations

import warnings
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import fastbias
from fastbias.cli import main as cli_main

getcontext().prec = 50


# --------------------------------------------------------------------------- references

def _dec(fr: Fraction) -> Decimal:
    return Decimal(fr.numerator) / Decimal(fr.denominator)


def _bernstein_ref(cost, in_a, in_b, confidence):
    """Ethayarajh (2020): amortized disparity phi = c/g_A on A, -c/g_B on B, 0 elsewhere,
    over all n rows; plug-in (n-1) variance, gamma = min group frequency, max cost 1,
    t = (b + sqrt(b^2 + 8 n s^2 L)) / (2n), b = 2 L / (3 gamma), L = log(2 / alpha)."""
    cost = [int(c) for c in cost]
    in_a = [int(v) for v in in_a]
    in_b = [int(v) for v in in_b]
    n = len(cost)
    na, nb = sum(in_a), sum(in_b)
    if na == 0 or nb == 0 or n < 2:
        return None
    ga, gb = Fraction(na, n), Fraction(nb, n)
    phi = [Fraction(c) / ga if a else (-Fraction(c) / gb if b else Fraction(0))
           for c, a, b in zip(cost, in_a, in_b)]
    mean = sum(phi) / n
    var = sum((p - mean) ** 2 for p in phi) / (n - 1)
    log_term = (Decimal(2) / (Decimal(1) - Decimal(repr(confidence)))).ln()
    b = Decimal(2) * log_term / (Decimal(3) * _dec(min(ga, gb)))
    t = (b + (b * b + Decimal(8) * n * _dec(var) * log_term).sqrt()) / (Decimal(2) * n)
    return _dec(mean) - t, _dec(mean) + t


def _gap_ref(y, s, g, thr, rate, confidence):
    """The gap's interval: the paper's cost per rate (1 - y_hat for demographic parity and
    equal opportunity, mirrored; the rate itself for fpr/fnr/precision), clipped to [-1, 1]."""
    yhat = [1 if v >= thr else 0 for v in s]
    y = [int(v) for v in y]
    complement = rate in ("positive_rate", "tpr")
    if rate == "positive_rate":
        inset, cost = [1] * len(y), [1 - h for h in yhat]
    elif rate == "tpr":
        inset, cost = y, [1 - h for h in yhat]
    elif rate == "fnr":
        inset, cost = y, [1 - h for h in yhat]
    elif rate == "fpr":
        inset, cost = [1 - v for v in y], yhat
    else:  # precision
        inset, cost = yhat, y
    a = [int(i and gg) for i, gg in zip(inset, g)]
    b = [int(i and not gg) for i, gg in zip(inset, g)]
    r = _bernstein_ref(cost, a, b, confidence)
    if r is None:
        return np.nan, np.nan
    lo, hi = r
    if complement:
        lo, hi = -hi, -lo

    def clip(x):
        return float(min(max(x, Decimal(-1)), Decimal(1)))
    return clip(lo), clip(hi)


RATES = ("positive_rate", "tpr", "fpr", "fnr", "precision")


def _check_gaps(table, y, s, g, thresholds, confidence, name="g"):
    table = table.reset_index() if "threshold" not in table.columns else table
    table = table.set_index(["threshold", "subgroup"])
    for thr in thresholds:
        row = table.loc[(thr, name)]
        for rate in RATES:
            want = _gap_ref(y, s, g, thr, rate, confidence)
            got = (float(row[f"{rate}_gap_low"]), float(row[f"{rate}_gap_high"]))
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12,
                                       err_msg=f"{rate} at {thr}")


# ------------------------------------------------------------ CLI warnings: data names kept

def _empty_subgroup_csv(path, names):
    rng = np.random.default_rng(0)
    n = 60
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "s": np.round(rng.random(n), 2)})
    for name in names:
        df[name] = 0  # no row in the subgroup: every metric that needs it is NaN
    df.to_csv(path, index=False)


HOSTILE = ["pos_label", "n_boot", "the background's sample_weight", "confidence"]


def test_cli_undefined_metric_warning_keeps_subgroup_names(tmp_path, capsys):
    # Was: the UndefinedMetricWarning lists subgroups unquoted ("pos_label: subgroup_auc"),
    # and _in_cli_terms (now applied to warnings) rewrites them: the CLI prints
    # "--positive: subgroup_auc", "--n-boot: ...", "the background's --weight: ...",
    # "--confidence: ...". Right: the subgroups' own names (cause: fastbias/metrics/table.py
    # warn_undefined's f"{name}: {metric}" is not a repr, so _QUOTED does not protect it).
    path = tmp_path / "a.csv"
    _empty_subgroup_csv(path, HOSTILE)
    rc = cli_main(["report", str(path), "--label", "y", "--scores", "s", "--subgroups",
                   *HOSTILE])
    err = capsys.readouterr().err
    assert rc == 0
    warning = next(line for line in err.splitlines() if "metric value(s) undefined" in line)
    for name in HOSTILE:
        assert f"{name}: subgroup_auc" in warning, (name, warning)
    for rewritten in ("--positive: ", "--n-boot: ", "--weight: ", "--confidence: "):
        assert rewritten not in warning


def test_cli_threshold_rate_warning_keeps_subgroup_names(tmp_path, capsys):
    # Was (same cause, the threshold rates' warning "<name> at <t>: subgroup tpr"):
    # printed as "--positive at 0.5: subgroup positive_rate".
    path = tmp_path / "a.csv"
    _empty_subgroup_csv(path, HOSTILE)
    rc = cli_main(["report", str(path), "--label", "y", "--scores", "s", "--subgroups",
                   *HOSTILE, "--thresholds", "0.5"])
    err = capsys.readouterr().err
    assert rc == 0
    warning = next(line for line in err.splitlines() if "threshold rate(s) undefined" in line)
    assert "pos_label at 0.5: subgroup positive_rate" in warning, warning
    assert "--positive at 0.5" not in warning


def test_cli_warning_names_missing_subgroup_as_an_option(tmp_path, capsys):
    # Was (minor, cosmetic): a warning now says "--missing-subgroup='exclude'" (the word
    # translated, the Python value left), where ci= and nan_policy= become "--ci delong" /
    # "--nan-policy omit". Right: "--missing-subgroup exclude".
    rng = np.random.default_rng(0)
    n = 200
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "s": rng.random(n),
                       "g": rng.integers(0, 2, n).astype(float)})
    df.loc[:20, "g"] = np.nan
    df.to_csv(tmp_path / "b.csv", index=False)
    rc = cli_main(["report", str(tmp_path / "b.csv"), "--label", "y", "--scores", "s",
                   "--subgroups", "g", "--missing-subgroup", "exclude", "--ci", "bootstrap",
                   "--n-boot", "20"])
    err = capsys.readouterr().err
    assert rc == 0
    assert "interval(s) not made" in err
    assert "missing_subgroup" not in err
    assert "--missing-subgroup exclude" in err, err


@pytest.mark.parametrize("name", ["confidence", "it's", 'a"b', "x'y\"z", "a\\b", "é n_boot",
                                  "sample_weight", "'", '"'])
def test_in_cli_terms_leaves_quoted_names(name):
    # a repr'd name is left as it is, prose around it translated.
    from fastbias.cli import _in_cli_terms
    message = f"subgroup {name!r} has no rows; the background's sample_weight and {name!r}"
    want = f"subgroup {name!r} has no rows; the background's --weight and {name!r}"
    assert _in_cli_terms(message) == want


# ------------------------------------------------------- threshold gaps' Bernstein intervals

def _gap_data(seed, n):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = np.round(rng.random(n), 1)
    g = rng.random(n) < rng.uniform(0.1, 0.9)
    return y, s, g


@pytest.mark.parametrize("seed", range(6))
def test_threshold_metrics_gap_intervals_match_fraction_reference(seed):
    # every rate's gap interval (complement cost, mirrored, for positive_rate/tpr)
    y, s, g = _gap_data(seed, 10 + 9 * seed)
    confidence = [0.8, 0.9, 0.95, 0.99, 0.5, 0.999][seed]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = fastbias.threshold_metrics(y, s, {"g": g}, thresholds=[0.3, 0.5, 0.7],
                                           gap_interval="bernstein", confidence=confidence)
    _check_gaps(table, y, s, g, [0.3, 0.5, 0.7], confidence)


@pytest.mark.parametrize("missing_subgroup", ["background", "exclude"])
def test_gap_intervals_match_reference_on_every_entry_point(tmp_path, missing_subgroup):
    # evaluate, evaluate_csv, evaluate_parquet, fastbias.dask and the CLI agree with
    # the reference (the universe of "exclude": the annotated rows only)
    rng = np.random.default_rng(5)
    n = 80
    y = rng.integers(0, 2, n)
    s = np.round(rng.random(n), 1)
    g = (rng.random(n) < 0.3).astype(float)
    g[:10] = np.nan
    df = pd.DataFrame({"y": y, "s": s, "g": g})
    df.to_csv(tmp_path / "c.csv", index=False)
    df.to_parquet(tmp_path / "c.parquet")
    keep = ~np.isnan(g) if missing_subgroup == "exclude" else np.ones(n, bool)
    member = np.nan_to_num(g) == 1
    ref = (y[keep], s[keep], member[keep])
    thr = [0.3, 0.5]
    kw = dict(label="y", scores=["s"], subgroups=["g"], thresholds=thr,
              gap_interval="bernstein", confidence=0.9, missing_subgroup=missing_subgroup)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _check_gaps(fastbias.evaluate(df, **kw).thresholds, *ref, thr, 0.9)
        _check_gaps(fastbias.evaluate_csv(tmp_path / "c.csv", **kw).thresholds, *ref, thr, 0.9)
        _check_gaps(fastbias.evaluate_parquet(tmp_path / "c.parquet", **kw).thresholds,
                    *ref, thr, 0.9)
        dask = pytest.importorskip("dask")
        import dask.dataframe as dd

        import fastbias.dask as fd
        with dask.config.set(scheduler="synchronous"):
            _check_gaps(fd.evaluate(dd.from_pandas(df, npartitions=3), **kw).thresholds,
                        *ref, thr, 0.9)
    rc = cli_main(["report", str(tmp_path / "c.csv"), "--label", "y", "--scores", "s",
                   "--subgroups", "g", "--thresholds", "0.3", "0.5", "--gap-interval",
                   "bernstein", "--confidence", "0.9", "--missing-subgroup", missing_subgroup,
                   "--out", str(tmp_path / "out.csv"), "-q"])
    assert rc == 0
    _check_gaps(pd.read_csv(tmp_path / "out.thresholds.csv"), *ref, thr, 0.9)


def test_tpr_gap_interval_is_fnr_gap_interval_mirrored():
    # the TPR gap's interval is exactly the FNR gap's, mirrored
    y, s, g = _gap_data(11, 300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = fastbias.threshold_metrics(y, s, {"g": g}, thresholds=[0.2, 0.5, 0.8],
                                       gap_interval="bernstein")
    assert np.array_equal(t["tpr_gap_low"].to_numpy(), -t["fnr_gap_high"].to_numpy())
    assert np.array_equal(t["tpr_gap_high"].to_numpy(), -t["fnr_gap_low"].to_numpy())


def test_cost_functions_round_threshold_to_float32_scores():
    # float32 0.7 is at threshold 0.7 (as thresholds= counts it), and the
    # demographic parity cost's interval mirrored is the table's positive-rate gap interval
    s = np.array([0.7, 0.7, 0.1, 0.9, 0.3, 0.7, 0.5, 0.2], dtype=np.float32)
    y = np.array([1, 0, 1, 1, 0, 1, 0, 0])
    grp = np.array([1, 1, 1, 1, -1, -1, -1, -1])
    cost, _ = fastbias.demographic_parity_cost(s, grp, threshold=0.7)
    assert cost.tolist() == [0, 0, 1, 0, 1, 0, 1, 1]
    cost, _ = fastbias.equal_opportunity_cost(y, s, grp, threshold=0.7)
    assert cost[[0, 2, 3, 5]].tolist() == [0, 1, 0, 0]
    for bad in (np.nan, "0.5", True, None, [0.5]):
        with pytest.raises((TypeError, ValueError), match="threshold"):
            fastbias.demographic_parity_cost(s, grp, threshold=bad)


def test_bernstein_halfwidth_checks_n():
    # whole n only, naming the value and position; the formula as the paper's
    import math
    with pytest.raises(ValueError, match=r"2\.5 at position 1"):
        fastbias.bernstein_halfwidth([100, 2.5], sigma2=0.25, gamma=0.5)
    with pytest.raises(TypeError):
        fastbias.bernstein_halfwidth(True, sigma2=0.25, gamma=0.5)
    log_term = math.log(2 / 0.05)
    b = 2 * log_term / (3 * 0.5)
    want = (b + math.sqrt(b * b + 8 * 100 * 0.25 * log_term)) / 200
    assert fastbias.bernstein_halfwidth(100, sigma2=0.25, gamma=0.5) == pytest.approx(
        want, rel=1e-15)


# ------------------------------------------------------------------ paired DeLong weights

def test_delong_paired_test_weight_scale_bounds():
    # the largest weight exactly 2**200 is taken (and the AUCs are sklearn's), one
    # just above is refused naming it; below 2**-200 refused too
    rng = np.random.default_rng(0)
    n = 200
    y = rng.integers(0, 2, n)
    a = rng.random(n)
    b = a + rng.normal(0, 0.3, n)
    w = rng.integers(1, 5, n).astype(float)
    w[7] = 4.0
    big = w * 2.0 ** 198
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = fastbias.delong_paired_test(y, a, b, sample_weight=big)
    row = r.iloc[0]
    assert row["value_a"] == pytest.approx(roc_auc_score(y, a, sample_weight=w), abs=1e-12)
    assert row["value_b"] == pytest.approx(roc_auc_score(y, b, sample_weight=w), abs=1e-12)
    with pytest.raises(ValueError, match="too far from 1"):
        fastbias.delong_paired_test(y, a, b, sample_weight=big * (1 + 2 ** -50))
    with pytest.raises(ValueError, match="too far from 1"):
        fastbias.delong_paired_test(y, a, b, sample_weight=w * 2.0 ** -205)


# ------------------------------------------------------------ from_result's weight checks

def test_from_result_refuses_weights_missing_on_other_rows():
    # Was: evaluate(nan_policy="omit") with weights missing at row 0 (a subgroup
    # negative); the report given weights missing at row 9 instead (same count) is accepted
    # and its histograms count 3 subgroup negatives where the table has 2. Right: a
    # ValueError ("weights whose missing rows differ" are what the commit refuses), or the
    # histograms leaving out row 0. Cause: fastbias/reports/histograms.py compares only the
    # number of missing weights with settings["missing_weight_rows"].
    from fastbias.report import score_histograms
    df = pd.DataFrame({"y": [0, 1, 0, 1, 0, 1, 0, 1, 1, 0],
                       "s": [.1, .9, .2, .8, .3, .7, .4, .6, .55, .45],
                       "g": [1, 1, 1, 1, 1, 0, 0, 0, 0, 0]})
    w_eval = np.ones(10)
    w_eval[0] = np.nan
    w_other = np.ones(10)
    w_other[9] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fastbias.evaluate(df, label="y", scores="s", subgroups=["g"],
                                   sample_weight=w_eval, nan_policy="omit")
    # by hand: subgroup rows 1..4 kept -> 2 negatives, 2 positives
    assert int(result.table["subgroup_negatives"].iloc[0]) == 2
    try:
        hist = score_histograms(df, result, bins=4, sample_weight=w_other)
    except ValueError:
        return  # refused: right
    cells = hist.cells("s", "g")
    assert int(np.sum(cells["subgroup_negatives"])) == 2
    assert int(np.sum(cells["background_negatives"])) == 2


def test_from_result_weight_checks_hold():
    # weights given to an unweighted result, and another weight column, are refused
    from fastbias.reports.report import BiasReport
    rng = np.random.default_rng(1)
    n = 50
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "s": rng.random(n),
                       "g": rng.integers(0, 2, n), "w": rng.random(n) + 0.5,
                       "w2": rng.random(n) + 0.5})
    plain = fastbias.evaluate(df, label="y", scores="s", subgroups=["g"])
    with pytest.raises(ValueError, match="without weights"):
        BiasReport.from_result(df, plain, sample_weight="w")
    df.loc[3, "w"] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        weighted = fastbias.evaluate(df, label="y", scores="s", subgroups=["g"],
                                     sample_weight="w", nan_policy="omit")
        with pytest.raises(ValueError, match="'w2'.*'w'"):
            BiasReport.from_result(df, weighted, sample_weight="w2")
        report = BiasReport.from_result(df, weighted, sample_weight="w")
    assert int(report.histograms.counts.sum()) == n - 1  # row 3 left out, by hand
    # (note: without missing weights the weight column is not recorded, so sample_weight="w2"
    # beside a result weighted by "w" is accepted; harmless, the histograms do not use it)


# ------------------------------------------------------------ boosting: one evaluator, sets

def _boost_data():
    rng = np.random.default_rng(0)
    xtr = rng.normal(size=(400, 4))
    ytr = (xtr[:, 0] + rng.normal(size=400) > 0).astype(float)
    xv = rng.normal(size=(200, 4))
    yv = (xv[:, 0] + rng.normal(size=200) > 0).astype(float)
    return xtr, ytr, xv, yv, xv[:, 1] > 0


def _min_bpsn_ref(y, pred, member):
    # BPSN AUC: subgroup negatives vs background positives (sklearn)
    keep = (member & (y == 0)) | (~member & (y == 1))
    return roc_auc_score(y[keep], pred[keep])


def test_xgboost_continued_training_on_a_new_dmatrix_of_the_same_rows():
    # Was (a legitimate use refused): training continued with xgb_model= on a fresh
    # DMatrix of the same validation rows, the first DMatrix still alive, is refused
    # ("already serves another evaluation set"): the evaluator fits both (they are the same
    # rows). Right: the second run reports the metric of its predictions. Cause:
    # fastbias/boosting.py _evaluator_for's new any(ref() is not data ...) check.
    xgb = pytest.importorskip("xgboost")
    from fastbias.boosting import xgboost_metric
    xtr, ytr, xv, yv, member = _boost_data()
    ev = fastbias.BiasEvaluator(yv, {"g": member})
    metric = xgboost_metric(ev, metrics=["min_bpsn_auc"])
    dtrain = xgb.DMatrix(xtr, ytr)
    dvalid = xgb.DMatrix(xv, yv)
    params = {"objective": "binary:logistic"}
    first = xgb.train(params, dtrain, 3, evals=[(dvalid, "v")], custom_metric=metric,
                      verbose_eval=False)
    dvalid_again = xgb.DMatrix(xv, yv)
    log = {}
    with pytest.warns(UserWarning, match="takes over its BiasEvaluator"):  # (said once)
        second = xgb.train(params, dtrain, 2, evals=[(dvalid_again, "v")],
                           custom_metric=metric, xgb_model=first, evals_result=log,
                           verbose_eval=False)
    pred = second.predict(dvalid_again)
    assert log["v"]["min_bpsn_auc"][-1] == pytest.approx(_min_bpsn_ref(yv, pred, member),
                                                          abs=1e-6)
    del dvalid


def test_lightgbm_search_keeping_boosters_with_fresh_datasets():
    # Was (a legitimate use refused): a parameter search, one feval for all runs,
    # each run its own lgb.Dataset of the same validation rows, keep_training_booster=True
    # (the boosters keep their valid sets alive) -> the second run is refused.
    lgb = pytest.importorskip("lightgbm")
    from fastbias.boosting import lightgbm_metric
    xtr, ytr, xv, yv, member = _boost_data()
    ev = fastbias.BiasEvaluator(yv, {"g": member})
    metric = lightgbm_metric(ev, metrics=["min_bpsn_auc"])
    kept = []
    for rate in (0.1, 0.3):
        dtrain = lgb.Dataset(xtr, ytr)
        dvalid = lgb.Dataset(xv, yv, reference=dtrain)
        log = {}
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            booster = lgb.train({"objective": "binary", "verbose": -1, "num_leaves": 4,
                                 "learning_rate": rate}, dtrain, num_boost_round=3,
                                valid_sets=[dvalid], valid_names=["v"], feval=metric,
                                keep_training_booster=True,
                                callbacks=[lgb.record_evaluation(log)])
        # (the second run's set takes the evaluator over from the first's: said once)
        taken = [w for w in seen if "takes over its BiasEvaluator" in str(w.message)]
        assert len(taken) == (rate == 0.3), [str(w.message) for w in seen]
        kept.append(booster)
        pred = booster.predict(xv)
        assert log["v"]["min_bpsn_auc"][-1] == pytest.approx(
            _min_bpsn_ref(yv, pred, member), abs=1e-6)


def test_boosting_same_dataset_twice_and_fresh_loops_still_work():
    # the same Dataset given twice, and runs whose earlier sets are gone
    lgb = pytest.importorskip("lightgbm")
    from fastbias.boosting import lightgbm_metric
    xtr, ytr, xv, yv, member = _boost_data()
    metric = lightgbm_metric(fastbias.BiasEvaluator(yv, {"g": member}),
                             metrics=["min_bpsn_auc"])
    for _ in range(2):
        dtrain = lgb.Dataset(xtr, ytr)
        dvalid = lgb.Dataset(xv, yv, reference=dtrain)
        lgb.train({"objective": "binary", "verbose": -1, "num_leaves": 4}, dtrain,
                  num_boost_round=2, valid_sets=[dvalid, dvalid], feval=metric)


def test_boosting_training_set_alike_is_refused():
    # the targeted case, a training set of the validation set's size and labels with
    # no evaluator of its own, is refused rather than scored with the wrong subgroups
    lgb = pytest.importorskip("lightgbm")
    from fastbias.boosting import lightgbm_metric
    _, _, xv, yv, member = _boost_data()
    rng = np.random.default_rng(3)
    x_other = rng.normal(size=xv.shape)
    metric = lightgbm_metric(fastbias.BiasEvaluator(yv, {"g": member}))
    dtrain = lgb.Dataset(x_other, yv, free_raw_data=False)
    dvalid = lgb.Dataset(xv, yv, reference=dtrain)
    with pytest.raises(ValueError, match="take turns with one BiasEvaluator"):
        lgb.train({"objective": "binary", "verbose": -1, "num_leaves": 4}, dtrain,
                  num_boost_round=2, valid_sets=[dvalid, dtrain],
                  valid_names=["v", "t"], feval=metric)


# ------------------------------------------------------------ Dask score dtype example

def test_dask_score_dtype_example_names_the_value_to_fix():
    # Was (message): a score column of text, numbers as text in partition 0 and the
    # stray word 'abc' in partition 1: in memory the message names 'abc' (numbers written
    # as text are passed over "so the value named is the one to fix"); fastbias.dask names
    # "'0.1' at position 0 (numbers written as text) of Dask partition 0". Right: 'abc' at
    # position 1 of partition 1. Cause: fastbias/dask.py _example_of returns partition 0's
    # numbers-as-text fallback before looking at later partitions.
    dask = pytest.importorskip("dask")
    import dask.dataframe as dd

    import fastbias.dask as fd
    s = ["0.1", "0.2", "0.3", "0.4", "0.5", "abc", "0.7", "0.8"]
    df = pd.DataFrame({"y": [0, 1] * 4, "s": pd.Series(s, dtype=object),
                       "g": [1, 0, 1, 0, 0, 1, 1, 0]})
    with pytest.raises(TypeError, match="'abc' at position 5"):
        fastbias.evaluate(df, label="y", scores="s", subgroups=["g"])
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(TypeError, match="'abc'"):
            fd.evaluate(dd.from_pandas(df, npartitions=2, sort=False), label="y",
                        scores="s", subgroups=["g"])


# ------------------------------------------------------------ JSON lines with raw controls

def test_json_lines_raw_control_characters_on_every_line(tmp_path):
    # raw tabs/control characters in keys and strings on every line, a line of two
    # objects: the numbers are sklearn's of the rows pandas reads
    rng = np.random.default_rng(3)
    n = 60
    y = rng.integers(0, 2, n)
    s = np.round(rng.random(n), 3)
    g = rng.integers(0, 2, n)
    lines = []
    for i in range(n):
        rec = '{"y": %d, "s": %s, "g\tx": %d, "note": "a\tb\x01c"}' % (y[i], s[i], g[i])
        if i % 7 == 3:
            rec += ', {"y": 1, "s": 0.5, "g\tx": 0, "note": "z\x02"}'
        lines.append(rec)
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(lines) + "\n")
    yy, ss, gg = [], [], []
    for i in range(n):
        yy.append(y[i]); ss.append(s[i]); gg.append(g[i])
        if i % 7 == 3:
            yy.append(1); ss.append(0.5); gg.append(0)
    yy, ss, gg = np.array(yy), np.array(ss), np.array(gg) == 1
    rc = cli_main(["report", str(path), "--label", "y", "--scores", "s", "--subgroups",
                   "g\tx", "--out", str(tmp_path / "o.csv"), "-q"])
    assert rc == 0
    out = pd.read_csv(tmp_path / "o.csv")
    assert float(out["subgroup_auc"].iloc[0]) == pytest.approx(
        roc_auc_score(yy[gg], ss[gg]), abs=1e-12)
    assert float(out["overall_auc"].iloc[0]) == pytest.approx(roc_auc_score(yy, ss),
                                                              abs=1e-12)



def test_boosting_set_alike_to_a_paired_set_is_refused_at_once():
    """An evaluator given as a pair with one set serves that set: another live set of the
    same size and labels is refused at its first call (no round with another set's
    subgroups), naming what to do."""
    from fastbias.boosting import lightgbm_metric

    class Data:
        def __init__(self, label):
            self.label = np.asarray(label, np.float32)

        def get_label(self):
            return self.label

        def num_data(self):
            return self.label.shape[0]

    y = np.array([0, 1] * 20)
    member = np.arange(40) % 3 == 0
    dvalid, dtrain = Data(y), Data(y)
    metric = lightgbm_metric([(dvalid, fastbias.BiasEvaluator(y, {"g": member}))])
    scores = np.linspace(0, 1, 40)
    assert metric(scores, dvalid)
    with pytest.raises(ValueError, match=r"an evaluation set of 40 rows has the size and "
                                         r"labels of a BiasEvaluator paired with another "
                                         r"evaluation set"):
        metric(scores, dtrain)


def test_bernstein_edges_of_numbers():
    """An n past the largest double is named (was: Python's "int too large to convert to
    float"); a threshold of 1e300 beside float32 scores predicts every row negative without
    numpy's overflow warning."""
    with pytest.raises(ValueError, match=r"n must be finite, got 1000000"):
        fastbias.bernstein_halfwidth(10 ** 400, sigma2=1.0, gamma=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cost, _ = fastbias.demographic_parity_cost(np.float32([0.1, 0.9]), [1, -1],
                                                   threshold=1e300)
    assert cost.tolist() == [1.0, 1.0]
