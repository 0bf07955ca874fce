"""A mutation audit of the in-memory entry points (fastbias.evaluate, bias_metrics,
overall_auc, pinned_auc, threshold_metrics): an independent review's tests (2026-11-28,
fortieth session), each against an independent reference (brute-force pair counts in
fractions.Fraction, sklearn, pandas' own sampling, the documented messages). Of the 8 hand
mutants run against the entry points' tests, 6 were killed; two survivors are killed here
(``pinned_auc`` seeding an int seed once for all subgroups; under ``nan_policy="omit"`` a
subgroup listed twice where two models keep different rows), two were equivalent. The other
tests pin the behaviour the remaining mutants would change. No defect was found."""
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import fastbias

from .reference import pair_fraction


def ref_metrics(y, s, member, background, w=None):
    """Subgroup/BPSN/BNSP AUC as exact Fractions (tests/reference.py's pair counts; None
    where a side is empty)."""
    y = np.asarray(y, dtype=bool)
    s = np.asarray(s, dtype=np.float64)
    w = np.ones(len(y)) if w is None else np.array([float(x) for x in w])
    member, background = np.asarray(member, dtype=bool), np.asarray(background, dtype=bool)

    def auc(negatives, positives):
        neg, pos = negatives & ~y, positives & y
        return pair_fraction(s[pos], s[neg], w[pos], w[neg])
    return {"subgroup_auc": auc(member, member), "bpsn_auc": auc(member, background),
            "bnsp_auc": auc(background, member)}


def _check(row, expected):
    for k, v in expected.items():
        if v is None:
            assert np.isnan(row[k]), k
        else:
            assert row[k] == pytest.approx(float(v), abs=1e-12), (k, row[k], float(v))


def _quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **k)


Y = np.array([0, 1, 0, 1, 1, 0, 0, 1, 1, 0, 1, 0])
S1 = np.array([.1, .9, .35, .35, .8, .7, .2, .6, .3, .5, .55, .45])
S2 = np.array([.9, .2, .4, .6, .1, .3, .8, .7, .5, .05, .65, .15])
G = np.array([1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 1, 0], bool)
H = np.array([0, 1, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1], bool)


def _frame():
    return pd.DataFrame({"y": Y, "a": S1, "b": S2, "g": G, "h": H,
                         "w": [1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 4.0]})


# ---- evaluate ---------------------------------------------------------------------------

def test_evaluate_two_models_each_their_own_scores():
    """Kills 'every model reads the first model's scores'."""
    res = _quiet(fastbias.evaluate, _frame(), label="y", scores=["a", "b"], subgroups=["g", "h"])
    for m, s in (("a", S1), ("b", S2)):
        for name, mask in (("g", G), ("h", H)):
            _check(res.for_model(m).loc[name], ref_metrics(Y, s, mask, ~mask))
        assert res.overall_auc[m] == pytest.approx(roc_auc_score(Y, s), abs=1e-12)


def test_evaluate_weight_column_is_the_weights():
    """Kills 'weight column read from the label column'."""
    df = _frame()
    res = _quiet(fastbias.evaluate, df, label="y", scores="a", subgroups=["g"], sample_weight="w")
    _check(res.for_model().loc["g"], ref_metrics(Y, S1, G, ~G, [Fraction(x) for x in df["w"]]))
    assert res.overall_auc["a"] == pytest.approx(
        roc_auc_score(Y, S1, sample_weight=df["w"]), abs=1e-12)


def test_evaluate_weight_series_with_permuted_index_refused():
    """Kills 'drop df/sample_weight index alignment' (and 'permuted index accepted'):
    a weight Series in another row order would pair weights with the wrong rows."""
    df = _frame()
    w = df["w"].iloc[::-1]
    with pytest.raises(ValueError, match="sample_weight"):
        fastbias.evaluate(df, label="y", scores="a", subgroups=["g"], sample_weight=w)


def test_evaluate_background_counts_unannotated_nullable_boolean_rows():
    """Kills 'background acts as exclude': a pd.NA of a nullable boolean identity is
    background under the default missing_subgroup='background'."""
    df = _frame()
    g = pd.array(list(G), dtype="boolean")
    g[[5, 7, 9]] = pd.NA
    df["g"] = g
    res = _quiet(fastbias.evaluate, df, label="y", scores="a", subgroups=["g"])
    _check(res.for_model().loc["g"], ref_metrics(Y, S1, G, ~G))  # NA rows are not members
    res_x = _quiet(fastbias.evaluate, df, label="y", scores="a", subgroups=["g"],
                   missing_subgroup="exclude")
    annotated = np.ones(12, bool)
    annotated[[5, 7, 9]] = False
    _check(res_x.for_model().loc["g"], ref_metrics(Y, S1, G, ~G & annotated))


def test_evaluate_sensitive_feature_missing_is_background_by_default():
    """Kills "sensitive features' missing always excluded"."""
    df = _frame()
    race = np.array(["x", "x", "y", "x", "y", None, "y", None, "x", "y", "x", "y"], object)
    df["race"] = race
    res = _quiet(fastbias.evaluate, df, label="y", scores="a", sensitive_features=["race"])
    member = race == "x"
    _check(res.for_model().loc["race=x"], ref_metrics(Y, S1, member, ~member))


def _exclude_frame():
    df = _frame()
    df["g"] = np.where(G, 1.0, 0.0)
    df["h"] = np.where(H, 1.0, 0.0)
    df.loc[[2, 5], "g"] = np.nan      # two different patterns: two universes, none of all rows
    df.loc[[0, 9, 10], "h"] = np.nan
    return df


def test_evaluate_exclude_two_universes_rows_order_and_overall():
    """Kills 'exclude universe rows not re-indexed', 'overall AUC from the last universe'
    and 'universes' rows not put in subgroup order'."""
    df = _exclude_frame()
    res = _quiet(fastbias.evaluate, df, label="y", scores="a", subgroups=["h", "g"],
                 missing_subgroup="exclude")
    table = res.for_model()
    assert list(table.index) == ["h", "g"]
    for name in ("g", "h"):
        col = df[name].to_numpy()
        ann = ~np.isnan(col)
        mem = ann & (col >= 0.5)
        _check(table.loc[name], ref_metrics(Y, S1, mem, ann & ~mem))
        assert table.loc[name, "subgroup_size"] == mem.sum()
    assert res.overall_auc["a"] == pytest.approx(roc_auc_score(Y, S1), abs=1e-12)


def test_evaluate_bad_missing_subgroup_refused():
    """Kills 'missing_subgroup not validated' (a typo read as background)."""
    with pytest.raises(ValueError, match="missing_subgroup"):
        fastbias.evaluate(_exclude_frame(), label="y", scores="a", subgroups=["g"],
                          missing_subgroup="exlude")


def test_evaluate_pos_label_with_threshold_refused_and_settings():
    """Kills 'pos_label + label_threshold not refused' and the settings' label_threshold."""
    df = _frame()
    df["lab"] = np.where(Y == 1, "toxic", "ok")
    with pytest.raises(ValueError, match="label_threshold"):
        fastbias.evaluate(df, label="lab", scores="a", subgroups=["g"], pos_label="toxic",
                          label_threshold=0.3)
    res = _quiet(fastbias.evaluate, df, label="lab", scores="a", subgroups=["g"],
                 pos_label="toxic")
    assert res.settings["label_threshold"] is None
    _check(res.for_model().loc["g"], ref_metrics(Y, S1, G, ~G))


def test_evaluate_duplicate_scores_refused():
    """Kills 'duplicate names accepted'."""
    with pytest.raises(ValueError, match="duplicate"):
        fastbias.evaluate(_frame(), label="y", scores=["a", "a"], subgroups=["g"])


def test_evaluate_float32_identity_at_threshold_exact():
    """Kills the two float32 at_or_above mutants: float32(0.5) >= 0.5 is a member,
    float32(0.7) (= 0.699999988...) >= 0.7 is not, as real numbers."""
    df = _frame()
    vals = np.where(G, 0.5, 0.0).astype(np.float32)
    vals[[4, 5]] = np.float32(0.7)
    df["g"] = vals
    for thr, members in ((0.5, G | np.isin(np.arange(12), [4, 5])),
                         (0.7, np.zeros(12, bool))):
        res = _quiet(fastbias.evaluate, df, label="y", scores="a", subgroups=["g"],
                     subgroup_threshold=thr)
        assert res.for_model().loc["g", "subgroup_size"] == members.sum()
    res = _quiet(fastbias.evaluate, df, label="y", scores="a", subgroups=["g"],
                 subgroup_threshold=0.6)
    m = np.isin(np.arange(12), [4, 5])
    _check(res.for_model().loc["g"], ref_metrics(Y, S1, m, ~m))


# ---- evaluate(nan_policy="omit") -----------------------------------------------------

def _omit_frame():
    df = _frame()
    df["y"] = df["y"].astype(float)
    df.loc[1, "y"] = np.nan                  # every model
    df.loc[[3, 4], "a"] = [np.nan, np.inf]   # model a only
    return df


def test_evaluate_omit_rows_counts_and_overall_per_model():
    """Kills 'common drops lost', 'omitted_rows counts kept', 'warning says dropped as
    kept' and 'overall AUC of model 0 for all'."""
    df = _omit_frame()
    with pytest.warns(fastbias.OmittedRowsWarning, match=r"rows kept per model: 'a': 9, 'b': 11 of 12"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", fastbias.UndefinedMetricWarning)
            res = fastbias.evaluate(df, label="y", scores=["a", "b"], subgroups=["g"],
                                    nan_policy="omit")
    assert res.settings["omitted_rows"] == {"a": 3, "b": 1}
    keep_a = ~np.isin(np.arange(12), [1, 3, 4])
    keep_b = np.arange(12) != 1
    for m, s, keep in (("a", S1, keep_a), ("b", S2, keep_b)):
        assert res.overall_auc[m] == pytest.approx(roc_auc_score(Y[keep], s[keep]), abs=1e-12)
        _check(res.for_model(m).loc["g"], ref_metrics(Y[keep], s[keep], G[keep], ~G[keep]))


def test_evaluate_omit_with_weight_array():
    """Weights given as an array under nan_policy='omit' follow the kept rows."""
    df = _omit_frame()
    w = np.array([1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 4.0])
    res = _quiet(fastbias.evaluate, df, label="y", scores="a", subgroups=["g"],
                 sample_weight=w, nan_policy="omit")
    keep = ~np.isin(np.arange(12), [1, 3, 4])
    _check(res.for_model().loc["g"], ref_metrics(Y[keep], S1[keep], G[keep], ~G[keep],
                                                 [Fraction(x) for x in w[keep]]))


# ---- arrays ---------------------------------------------------------------------------

def _shuffled_series():
    y = pd.Series(Y)
    s = pd.Series(S1[::-1], index=np.arange(12)[::-1])
    return y, s


def test_bias_metrics_misaligned_series_refused():
    """Kills 'bias_metrics: no index alignment'."""
    y, s = _shuffled_series()
    with pytest.raises(ValueError, match="different indexes"):
        fastbias.bias_metrics(y, s, {"g": G})


def test_threshold_metrics_misaligned_series_refused():
    """Kills 'threshold_metrics: no index alignment'."""
    y, s = _shuffled_series()
    with pytest.raises(ValueError, match="different indexes"):
        fastbias.threshold_metrics(y, s, {"g": G})


def test_overall_auc_misaligned_series_refused():
    """Kills 'overall_auc: no index alignment'."""
    y, s = _shuffled_series()
    with pytest.raises(ValueError, match="different indexes"):
        fastbias.overall_auc(y, s)


def test_pinned_auc_misaligned_series_refused():
    """Kills 'pinned_auc: no index alignment'."""
    y, s = _shuffled_series()
    with pytest.raises(ValueError, match="different indexes"):
        fastbias.pinned_auc(y, s, {"g": G})


def test_overall_auc_one_class_nan_with_counts_in_warning():
    """Kills 'overall_auc: no warning' and 'message swaps classes'."""
    with pytest.warns(fastbias.UndefinedMetricWarning, match=r"negatives=0, positives=3"):
        v = fastbias.overall_auc([1, 1, 1], [0.1, 0.2, 0.3])
    assert np.isnan(v)


def test_pinned_auc_sample_matches_reference_code():
    """Kills 'pinned_auc sample: background position off by one' and 'int seed seeds once':
    the documented reference is df[~df[g]].sample(len(df[df[g]]), random_state=25) per
    subgroup."""
    rng = np.random.default_rng(4)
    n = 60
    y = rng.random(n) < 0.5
    s = rng.random(n) + 0.3 * y
    groups = {"g": rng.random(n) < 0.3, "h": rng.random(n) < 0.25}
    got = _quiet(fastbias.pinned_auc, y, s, groups)
    df = pd.DataFrame({"y": y, "s": s, **groups})
    for name in groups:
        pinned = pd.concat([df[df[name]], df[~df[name]].sample(int(df[name].sum()),
                                                               random_state=25)])
        assert got[name] == pytest.approx(roc_auc_score(pinned["y"], pinned["s"]), abs=1e-12)


def test_pinned_auc_argument_types_refused():
    """Kills 'replace not validated' and 'bool seed accepted'."""
    with pytest.raises(TypeError, match="replace"):
        fastbias.pinned_auc(Y, S1, {"g": G}, replace="yes")
    with pytest.raises(TypeError, match="random_state"):
        fastbias.pinned_auc(Y, S1, {"g": G}, random_state=True)


def test_labels_outside_unit_interval_refused_and_fractions_need_threshold():
    """Kills 'labels: 1.2 accepted' and 'fractions without threshold silently negative'."""
    with pytest.raises(ValueError, match=r"outside \[0, 1\].*1\.2 at position 2"):
        fastbias.bias_metrics([0, 1, 1.2, 0], [.1, .2, .3, .4], {"g": [1, 1, 0, 0]},
                              label_threshold=0.5)
    with pytest.raises(ValueError, match=r"not binary.*0\.5 at position 2"):
        fastbias.bias_metrics([0, 1, 0.5, 0], [.1, .2, .3, .4], {"g": [1, 1, 0, 0]})


def test_negative_weight_refused():
    """Kills 'weights: -0.5 accepted'."""
    with pytest.raises(ValueError, match=r"negative.*-0\.5 at position 1"):
        fastbias.bias_metrics(Y, S1, {"g": G}, sample_weight=[1, -0.5] + [1] * 10)


def test_scores_keep_float64_and_big_ints_refused():
    """Kills 'scores: float64 rounded to float32' and 'ints beyond 2**53 rounded'."""
    y = np.array([0, 1, 0, 1])
    s = np.array([1.0, 1.0 + 2 ** -40, 0.2, 0.3])  # tied in float32, not in float64
    assert fastbias.overall_auc(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-15)  # 0.75
    assert roc_auc_score(y, s.astype(np.float32)) == 0.625  # what rounding would give
    with pytest.raises(ValueError, match="2\\*\\*53"):
        fastbias.overall_auc(y, np.array([2 ** 53 + 1, 2 ** 53, 1, 2], dtype=np.int64))


def test_bias_metrics_omit_weighted_and_infinite_score():
    """Kills 'validated_rows omit: weights not subset' and 'omit: inf scores not dropped'."""
    s = S1.copy()
    s[[2, 6]] = [np.inf, np.nan]
    w = np.array([1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 4.0])
    t = _quiet(fastbias.bias_metrics, Y, s, {"g": G}, sample_weight=w, nan_policy="omit")
    keep = ~np.isin(np.arange(12), [2, 6])
    _check(t.loc["g"], ref_metrics(Y[keep], S1[keep], G[keep], ~G[keep],
                                   [Fraction(x) for x in w[keep]]))


def test_inexact_threshold_refused():
    """Kills 'check_threshold: inexact Fraction accepted'."""
    with pytest.raises(ValueError, match="subgroup_threshold"):
        fastbias.evaluate(_frame(), label="y", scores="a", subgroups=["w"],
                          subgroup_threshold=Fraction(1, 3))


def test_threshold_metrics_bernstein_with_weights_refused():
    """Kills 'bernstein gap with weights allowed'."""
    with pytest.raises(ValueError, match="unweighted"):
        fastbias.threshold_metrics(Y, S1, {"g": G}, sample_weight=np.ones(12),
                                   gap_interval="bernstein")


def test_nullable_int_identity_na_never_member():
    """Kills 'identity ints with NA: NA filler may be member': an Int64 identity column's
    pd.NA is not a member whatever the threshold."""
    df = _frame()
    col = pd.array(np.where(G, 5, 1), dtype="Int64")
    col[[4, 6]] = pd.NA
    df["g"] = col
    for thr in (-10.0, 0.0, 3.0):
        res = _quiet(fastbias.evaluate, df, label="y", scores="a", subgroups=["g"],
                     subgroup_threshold=thr)
        vals = np.where(G, 5, 1)
        mem = (vals >= thr) & ~np.isin(np.arange(12), [4, 6])
        assert res.for_model().loc["g", "subgroup_size"] == mem.sum(), thr


def test_evaluate_omit_two_row_sets_lists_each_subgroup_once():
    """Kills 'omit: subgroups list concatenated': models evaluated on different rows share
    their subgroups; the result lists each once, in the given order."""
    res = _quiet(fastbias.evaluate, _omit_frame(), label="y", scores=["a", "b"],
                 subgroups=["g", "h"], nan_policy="omit")
    assert list(res.subgroups) == ["g", "h"]
    assert list(res.wide().index) == ["g", "h"]
