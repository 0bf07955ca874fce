"""A mutation audit of the public entry points (``frame.py``: ``evaluate``,
``_evaluate_prepared``, ``_evaluate_omitting``, ``merged_order``; ``arrays.py``:
``bias_metrics``, ``threshold_metrics``, ``overall_auc``, ``pinned_auc`` and its draws;
``evaluation.py``), by an independent reviewer (forty-sixth session): 47 hand mutants. 35 are
killed by fifteen existing files (tests/test_evaluate.py, the entry audits of the fortieth
session, the pandas-input, omit, per-model, threshold and aggregate tests), 11 only by the
tests here (each checked in a worktree of main to fail with its mutant: one weighted model
of 100,000 rows or more sorted without its weights, the table in the universes' order under
"exclude", a weight array of another length accepted under omit, every omitted-rows model
given the first one's overall AUC, threshold rows in sorted model order, ``pinned_auc``'s
memberships cut at the label threshold, a bad weight column named as the label, the label
threshold not read as a float64, the bootstrap bar's passes, the deprecated module's warning
and star-import), 1 is equivalent (``merged_order`` also consulting a name's own list, where
its position is always the head's). It found one defect, fixed with it: an int seed numpy
cannot take (-1, 2**40) gave numpy's bare message, naming no argument.

Every expected number is independent of the code under test: brute-force pair counts
(tests/reference.py), memberships a value at a time (tests/test_membership_columns.py),
sklearn's roc_auc_score, pandas' ``DataFrame.sample`` (what the authors' reference code
draws with) and exact Fractions.
"""
import decimal
import importlib
import sys
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import fastbias
from fastbias.frame import merged_order

from .reference import pair_fraction
from .test_membership_columns import naive_membership
from .test_membership_mutants import _assert_table, _quietly

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]


@pytest.fixture(scope="module")
def patchy():
    """Jigsaw-like frame: fractional labels, tied scores, identities with NaN (a: 30 %, c: an
    other 25 %, b: none), weights, a text feature with missing values."""
    rng = np.random.default_rng(46)
    n = 240
    tox = rng.choice([0.0, 0.2, 0.5, 0.7, 1.0], size=n)
    y = tox >= 0.5
    df = pd.DataFrame({
        "tox": tox,
        "m1": np.round(rng.random(n) * 0.6 + 0.3 * y, 2),
        "m2": np.round(rng.random(n) * 0.8 + 0.1 * y, 1),
        "a": np.where(rng.random(n) < 0.3, np.nan, rng.choice([0.0, 0.3, 0.6, 1.0], size=n)),
        "b": rng.choice([0.0, 0.4, 0.5, 0.9], size=n),
        "c": np.where(rng.random(n) < 0.25, np.nan, rng.choice([0.0, 0.5, 1.0], size=n)),
        "w": rng.choice([0.5, 1.0, 2.0, 3.0], size=n),
        "race": pd.Series(rng.choice(["x", "y", "z"], size=n), dtype=object),
    })
    df.loc[rng.random(n) < 0.2, "race"] = None
    # a2 shares a's unannotated rows: under "exclude" a and a2 share one universe, so the
    # universes' order (a, a2 | b | c) is not the given order (a, b, c, a2)
    df["a2"] = np.where(df["a"].isna(), np.nan, rng.choice([0.0, 0.7], size=n))
    return df


def _member(values, threshold=0.5):
    """(member, annotated) of an identity column, a value at a time."""
    return naive_membership(pd.Series(values), False, threshold)


# ------------------------------------------------------------------ evaluate / _evaluate_prepared

@pytest.mark.parametrize("policy", ["background", "exclude"])
@pytest.mark.parametrize("weighted", [False, True])
def test_evaluate_each_subgroup_in_its_own_universe_and_given_order(patchy, policy, weighted):
    """Subgroups listed so that the universes ("b" on all rows; "a" with "a2", and "c", on
    their annotated rows) come in another order than the subgroups: the table keeps the
    given order, each row is the brute force on its own rows, the overall AUC is of all
    rows."""
    df = patchy
    order = ["a", "b", "c", "a2"]
    res = _quietly(fastbias.evaluate, df, label="tox", scores=["m1", "m2"], subgroups=order,
                   missing_subgroup=policy, sample_weight="w" if weighted else None)
    y = df["tox"].to_numpy() >= 0.5
    w_all = df["w"].to_numpy() if weighted else None
    for model in ["m1", "m2"]:
        table = res.for_model(model)
        assert list(table.index) == order
        s = df[model].to_numpy()
        for name in order:
            member, annotated = _member(df[name])
            rows = annotated if policy == "exclude" else np.ones(len(df), bool)
            _assert_table(table, y[rows], s[rows], {name: member[rows]}, (model, policy),
                         None if w_all is None else w_all[rows])
        want = roc_auc_score(y, s, sample_weight=w_all)
        assert abs(res.overall_auc[model] - want) <= 1e-12
    assert list(res.table["model"]) == ["m1"] * 4 + ["m2"] * 4
    assert list(res.table["subgroup"]) == order * 2


def test_evaluate_thresholds_of_excluded_universes_in_the_product_order(patchy):
    df = patchy
    order = ["a", "b", "c", "a2"]
    cuts = [0.3, 0.6]
    res = _quietly(fastbias.evaluate, df, label="tox", scores=["m1"], subgroups=order,
                   missing_subgroup="exclude", thresholds=cuts, threshold_interval=None)
    t = res.thresholds
    assert list(zip(t["threshold"], t["subgroup"])) == [(c, g) for c in cuts for g in order]
    y = df["tox"].to_numpy() >= 0.5
    s = df["m1"].to_numpy()
    for _, row in t.iterrows():
        member, annotated = _member(df[row["subgroup"]])
        bg = annotated & ~member
        hit = s >= row["threshold"]
        assert row["subgroup_tp"] == np.sum(member & y & hit)
        assert row["subgroup_fp"] == np.sum(member & ~y & hit)
        assert row["background_tp"] == np.sum(bg & y & hit)
        assert row["background_fp"] == np.sum(bg & ~y & hit)
        assert row["background_negatives"] == np.sum(bg & ~y)


def test_evaluate_intersections_exclude_rows_unannotated_for_either(patchy):
    df = patchy
    res = _quietly(fastbias.evaluate, df, label="tox", scores="m1", subgroups=["a", "c"],
                   missing_subgroup="exclude", intersections=2)
    table = res.for_model("m1")
    assert list(table.index) == ["a", "c", "a & c"]
    y = df["tox"].to_numpy() >= 0.5
    s = df["m1"].to_numpy()
    ma, aa = _member(df["a"])
    mc, ac = _member(df["c"])
    rows = aa & ac
    _assert_table(table, y[rows], s[rows], {"a & c": (ma & mc)[rows]}, "intersection")


@pytest.mark.parametrize("policy", ["background", "exclude"])
def test_evaluate_sensitive_feature_missing_values_follow_the_policy(patchy, policy):
    df = patchy
    res = _quietly(fastbias.evaluate, df, label="tox", scores="m1",
                   sensitive_features=["race"], missing_subgroup=policy)
    table = res.for_model("m1")
    assert list(table.index) == ["race=x", "race=y", "race=z"]
    y = df["tox"].to_numpy() >= 0.5
    s = df["m1"].to_numpy()
    race = df["race"]
    rows = race.notna().to_numpy() if policy == "exclude" else np.ones(len(df), bool)
    members = {f"race={v}": (race == v).to_numpy()[rows] for v in "xyz"}
    _assert_table(table, y[rows], s[rows], members, policy)


@pytest.fixture(scope="module")
def big():
    """Above CONCURRENT_SWEEP_MIN_ROWS (100,000), where one model's class sort runs on a
    helper thread while the identity columns are read."""
    rng = np.random.default_rng(4646)
    n = 120_000
    y = rng.random(n) < 0.3
    return pd.DataFrame({
        "y": y.astype(float),
        "s": np.round(rng.random(n) + 0.4 * y, 3),
        "g": np.where(rng.random(n) < 0.4, np.nan, (rng.random(n) < 0.3).astype(float)),
        "w": rng.choice([0.25, 1.0, 4.0], size=n),
    })


def _sklearn_metrics(y, s, g, w=None):
    """The five metrics from sklearn (weighted, tie-aware)."""
    def auc(pos, neg):
        mask = pos | neg
        return roc_auc_score(pos[mask], s[mask], sample_weight=None if w is None else w[mask])
    return {"subgroup_auc": auc(g & y, g & ~y), "bpsn_auc": auc(~g & y, g & ~y),
            "bnsp_auc": auc(g & y, ~g & ~y),
            "negative_aeg": 0.5 - auc(~g & ~y, g & ~y), "positive_aeg": 0.5 - auc(~g & y, g & y)}


@pytest.mark.parametrize("policy,weighted", [("background", True), ("exclude", False),
                                             ("exclude", True)])
def test_one_model_on_many_rows_keeps_its_weights_and_its_universe(big, policy, weighted):
    df = big
    res = _quietly(fastbias.evaluate, df, label="y", scores="s", subgroups=["g"],
                   missing_subgroup=policy, sample_weight="w" if weighted else None)
    row = res.for_model("s").loc["g"]
    y = df["y"].to_numpy() == 1
    s = df["s"].to_numpy()
    w = df["w"].to_numpy() if weighted else None
    member, annotated = _member(df["g"])
    rows = annotated if policy == "exclude" else np.ones(len(df), bool)
    want = _sklearn_metrics(y[rows], s[rows], member[rows], None if w is None else w[rows])
    for metric in METRICS:
        assert abs(row[metric] - want[metric]) <= 1e-9, (metric, row[metric], want[metric])
    assert abs(res.overall_auc["s"] - roc_auc_score(y, s, sample_weight=w)) <= 1e-9


def test_bad_subgroup_threshold_is_named_as_such(patchy):
    with pytest.raises(ValueError, match="subgroup_threshold"):
        fastbias.evaluate(patchy, label="tox", scores="m1", subgroups=["a"],
                          subgroup_threshold=float("nan"))


def test_nan_label_threshold_is_refused(patchy):
    with pytest.raises(ValueError, match="label_threshold"):
        fastbias.evaluate(patchy, label="tox", scores="m1", subgroups=["a"],
                          label_threshold=float("nan"))


@pytest.mark.parametrize("threshold", [decimal.Decimal("0.5"), np.float32(0.5), 1 / 2])
def test_label_threshold_is_read_as_a_float64_and_recorded_as_one(patchy, threshold):
    """An exact Decimal or a float32 threshold is taken as the float64 it equals: the labels
    are those of 0.5, and settings record a plain float (what the JSON/report writers and a
    reader repeating the call expect), not the caller's object."""
    res = _quietly(fastbias.evaluate, patchy, label="tox", scores="m1", subgroups=["b"],
                   label_threshold=threshold, subgroup_threshold=decimal.Decimal("0.5"))
    for name in ("label_threshold", "subgroup_threshold"):
        assert type(res.settings[name]) is float and res.settings[name] == 0.5, name
    y = patchy["tox"].to_numpy() >= 0.5
    _assert_table(res.for_model("m1"), y, patchy["m1"].to_numpy(), {"b": _member(patchy["b"])[0]},
                 "threshold types")


def test_evaluate_refuses_a_weight_series_with_other_row_labels(patchy):
    w = patchy["w"].iloc[::-1]  # same values per label, other positions
    with pytest.raises(ValueError, match="sample_weight"):
        fastbias.evaluate(patchy, label="tox", scores="m1", subgroups=["a"], sample_weight=w)


def test_settings_say_no_label_threshold_under_pos_label(patchy):
    df = patchy.assign(lab=np.where(patchy["tox"] >= 0.5, "toxic", "ok"))
    res = _quietly(fastbias.evaluate, df, label="lab", scores="m1", subgroups=["b"],
                   pos_label="toxic")
    assert res.settings["label_threshold"] is None
    y = df["tox"].to_numpy() >= 0.5
    _assert_table(res.for_model("m1"), y, df["m1"].to_numpy(), {"b": _member(df["b"])[0]},
                 "pos_label")


def test_a_bad_weight_column_is_named_as_the_weight_column(patchy):
    df = patchy.assign(w=patchy["w"].where(np.arange(len(patchy)) != 5, -1.0))
    with pytest.raises(ValueError, match="sample_weight column 'w'"):
        fastbias.evaluate(df, label="tox", scores="m1", subgroups=["a"], sample_weight="w")


# ------------------------------------------------------------------ _evaluate_omitting

@pytest.fixture(scope="module")
def holes(patchy):
    """Missing labels on some rows, NaN scores (other rows per model), missing weights."""
    df = patchy.copy()
    n = len(df)
    df.loc[np.arange(n) % 17 == 3, "tox"] = np.nan
    df.loc[np.arange(n) % 11 == 1, "m1"] = np.nan
    df.loc[np.arange(n) % 13 == 2, "m2"] = np.nan
    df.loc[np.arange(n) % 19 == 7, "w"] = np.nan
    df["m3"] = np.round(df["m1"].fillna(0.5) * 0.7 + df["b"] * 0.2, 2)
    df.loc[np.arange(n) % 11 == 1, "m3"] = np.nan  # the same rows as m1: one group
    # row labels that are not positions: the kept rows must be taken by position
    df.index = np.random.default_rng(3).permutation(n) + 1000
    return df


@pytest.mark.parametrize("weighted", [False, True])
def test_omit_keeps_exactly_the_rows_without_a_missing_value(holes, weighted):
    df = holes
    models = ["m2", "m1", "m3"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.evaluate(df, label="tox", scores=models, subgroups=["a", "b"],
                                nan_policy="omit", sample_weight="w" if weighted else None)
    tox = df["tox"].to_numpy()
    common = ~np.isnan(tox)
    if weighted:
        common &= ~np.isnan(df["w"].to_numpy())
    assert res.models == models
    for model in models:
        s = df[model].to_numpy()
        rows = common & ~np.isnan(s)
        assert res.settings["omitted_rows"][model] == int(np.sum(~rows))
        y = tox[rows] >= 0.5
        w = df["w"].to_numpy()[rows] if weighted else None
        members = {g: _member(df[g])[0][rows] for g in ["a", "b"]}
        _assert_table(res.for_model(model), y, s[rows], members, model, w)
        assert abs(res.overall_auc[model] - roc_auc_score(y, s[rows], sample_weight=w)) <= 1e-12
    if weighted:
        assert res.settings["missing_weight_rows"] == int(np.isnan(df["w"].to_numpy()).sum())


def test_omit_threshold_rows_follow_the_given_model_order(holes):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.evaluate(holes, label="tox", scores=["m2", "m1"], subgroups=["b"],
                                nan_policy="omit", thresholds=[0.5], threshold_interval=None)
    t = res.thresholds
    assert list(t["model"]) == ["m2", "m1"]
    for _, row in t.iterrows():
        s = holes[row["model"]].to_numpy()
        tox = holes["tox"].to_numpy()
        rows = ~np.isnan(tox) & ~np.isnan(s)
        y, member = tox[rows] >= 0.5, _member(holes["b"])[0][rows]
        assert row["subgroup_tp"] == np.sum(member & y & (s[rows] >= 0.5))
        assert row["background_fp"] == np.sum(~member & ~y & (s[rows] >= 0.5))


def test_omit_refuses_a_weight_array_of_another_length(holes):
    w = np.ones(len(holes) + 1)
    with pytest.raises(ValueError, match="sample_weight"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fastbias.evaluate(holes, label="tox", scores="m1", subgroups=["b"],
                              nan_policy="omit", sample_weight=w)


def _evaluated_omitting(holes, **kwargs):
    """``evaluate`` of model m1 under ``nan_policy="omit"`` (its warnings quiet), and the
    labels, scores and rows kept (label and score present) worked out here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.evaluate(holes, label="tox", scores="m1", nan_policy="omit", **kwargs)
    tox, s = holes["tox"].to_numpy(), holes["m1"].to_numpy()
    return res, tox, s, ~np.isnan(tox) & ~np.isnan(s)


def test_omit_with_an_array_of_weights_takes_the_kept_positions(holes):
    w = holes["w"].fillna(1.0).to_numpy()
    res, tox, s, rows = _evaluated_omitting(holes, subgroups=["b"], sample_weight=w)
    _assert_table(res.for_model("m1"), tox[rows] >= 0.5, s[rows],
                 {"b": _member(holes["b"])[0][rows]}, "array weights", w[rows])


@pytest.mark.parametrize("policy", ["background", "exclude"])
def test_omit_with_sensitive_features(holes, policy):
    res, tox, s, rows = _evaluated_omitting(holes, sensitive_features=["race"],
                                            missing_subgroup=policy)
    if policy == "exclude":
        rows &= holes["race"].notna().to_numpy()
    members = {f"race={v}": (holes["race"] == v).to_numpy()[rows] for v in "xyz"}
    _assert_table(res.for_model("m1"), tox[rows] >= 0.5, s[rows], members, policy)


# ------------------------------------------------------------------ merged_order

def test_merged_order_puts_a_name_where_its_lists_hold_it():
    assert merged_order([["a", "b", "a & b"], ["a", "b", "a & c", "a & b"]]) == \
        ["a", "b", "a & c", "a & b"]
    assert merged_order([["a", "b", "a & c", "a & b"], ["a", "b", "a & b"]]) == \
        ["a", "b", "a & c", "a & b"]
    assert merged_order([["x", "z"], ["x", "y", "z"], ["y", "w", "z"]]) == ["x", "y", "w", "z"]
    assert merged_order([["p"], []]) == ["p"]


# ------------------------------------------------------------------ arrays.py

@pytest.fixture(scope="module")
def arrays():
    rng = np.random.default_rng(64)
    n = 200
    frac = rng.choice([0.0, 0.3, 0.6, 1.0], size=n)
    y = frac >= 0.5
    s = np.round(rng.random(n) * 0.7 + 0.3 * y, 2)
    ident = pd.DataFrame({"g": rng.choice([0.0, 0.35, 0.7], size=n),
                          "h": rng.choice([0.0, 1.0], size=n, p=[0.7, 0.3])})
    w = rng.choice([0.5, 1.0, 3.0], size=n)
    return frac, y, s, ident, w


def test_bias_metrics_thresholds_memberships_at_subgroup_threshold(arrays):
    frac, y, s, ident, _ = arrays
    table = _quietly(fastbias.bias_metrics, frac, s, ident, label_threshold=0.5,
                     subgroup_threshold=0.3)
    _assert_table(table, y, s, {"g": ident["g"].to_numpy() >= 0.3,
                                "h": ident["h"].to_numpy() >= 0.3}, "thresholds")


def test_bias_metrics_refuses_a_weight_series_with_other_row_labels(arrays):
    frac, y, s, ident, w = arrays
    with pytest.raises(ValueError, match="sample_weight"):
        fastbias.bias_metrics(pd.Series(y), pd.Series(s), ident.astype(bool),
                              sample_weight=pd.Series(w, index=np.arange(len(w))[::-1]))


def test_threshold_metrics_refuses_subgroups_with_other_row_labels(arrays):
    frac, y, s, ident, _ = arrays
    shuffled = ident.astype(bool).set_axis(np.arange(len(y))[::-1])
    with pytest.raises(ValueError, match="subgroups"):
        fastbias.threshold_metrics(pd.Series(y), pd.Series(s), shuffled)


def test_weighted_threshold_rates_are_weight_sums(arrays):
    frac, y, s, ident, w = arrays
    member = ident["h"].to_numpy() == 1
    t = fastbias.threshold_metrics(y, s, {"h": member}, thresholds=[0.4, 0.6], sample_weight=w,
                                   interval=None)
    for cut in [0.4, 0.6]:
        row = t.loc[(cut, "h")]
        hit = s >= cut
        want_tpr = Fraction(float(np.sum(w[member & y & hit]))) / Fraction(
            float(np.sum(w[member & y])))
        want_bg_fpr = Fraction(float(np.sum(w[~member & ~y & hit]))) / Fraction(
            float(np.sum(w[~member & ~y])))
        assert abs(row["subgroup_tpr"] - float(want_tpr)) <= 1e-12
        assert abs(row["background_fpr"] - float(want_bg_fpr)) <= 1e-12


def test_threshold_metrics_omit_leaves_the_dropped_rows_out_of_every_subgroup(arrays):
    frac, y, s, ident, _ = arrays
    s2 = s.copy()
    s2[::9] = np.nan
    member = ident["h"].to_numpy() == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = fastbias.threshold_metrics(y, s2, {"h": member}, thresholds=[0.5],
                                       nan_policy="omit", interval=None)
    rows = ~np.isnan(s2)
    row = t.loc[(0.5, "h")]
    assert row["subgroup_positives"] == np.sum(member[rows] & y[rows])
    assert row["subgroup_tp"] == np.sum(member[rows] & y[rows] & (s2[rows] >= 0.5))
    assert row["background_negatives"] == np.sum(~member[rows] & ~y[rows])


def test_overall_auc_weighted_is_sklearns(arrays):
    frac, y, s, ident, w = arrays
    assert abs(fastbias.overall_auc(y, s, sample_weight=w)
               - roc_auc_score(y, s, sample_weight=w)) <= 1e-12


def test_overall_auc_refuses_a_weight_series_with_other_row_labels(arrays):
    frac, y, s, ident, w = arrays
    with pytest.raises(ValueError, match="sample_weight"):
        fastbias.overall_auc(pd.Series(y), pd.Series(s),
                             sample_weight=pd.Series(w, index=np.arange(len(w))[::-1]))


def test_overall_auc_undefined_warning_counts_each_class():
    with pytest.warns(fastbias.UndefinedMetricWarning, match=r"negatives=3, positives=0"):
        value = fastbias.overall_auc([0, 0, 0], [0.1, 0.2, 0.3])
    assert np.isnan(value)


# ------------------------------------------------------------------ pinned_auc

def _reference_pinned(df, groups, draw, method="sample"):
    """The authors' reference code: subgroup rows + ``draw(pool, n_g)`` rows, sklearn AUC."""
    out = {}
    for name in groups:
        sub = df[df[name]]
        pool = df[~df[name]] if method == "sample" else df
        combined = pd.concat([sub, draw(pool, len(sub))])
        out[name] = roc_auc_score(combined["y"], combined["s"])
    return out


@pytest.fixture(scope="module")
def pin_df():
    rng = np.random.default_rng(2025)
    n = 300
    y = rng.random(n) < 0.4
    df = pd.DataFrame({"y": y, "s": np.round(rng.random(n) + 0.5 * y, 2)})
    # interleaved memberships, so a background position maps to a row past subgroup rows
    df["g1"] = rng.random(n) < 0.3
    df["g2"] = (np.arange(n) % 3 == 0) | (rng.random(n) < 0.1)
    df["g3"] = np.arange(n) < 40
    return df


@pytest.mark.parametrize("replace", [False, True])
def test_sampled_pinned_auc_is_the_reference_codes_draw(pin_df, replace):
    groups = ["g1", "g2", "g3"]
    got = fastbias.pinned_auc(pin_df["y"].to_numpy(), pin_df["s"].to_numpy(), pin_df[groups],
                              replace=replace)
    want = _reference_pinned(pin_df, groups, lambda pool, k: pool.sample(
        k, random_state=25, replace=replace))
    for name in groups:
        assert abs(got[name] - want[name]) <= 1e-12, name


def test_sampled_pinned_auc_with_another_int_seed_reseeds_per_subgroup(pin_df):
    groups = ["g1", "g2", "g3"]
    got = fastbias.pinned_auc(pin_df["y"], pin_df["s"], pin_df[groups], random_state=7)
    want = _reference_pinned(pin_df, groups, lambda pool, k: pool.sample(k, random_state=7))
    for name in groups:
        assert abs(got[name] - want[name]) <= 1e-12, name


def test_sampled_pinned_auc_shares_a_given_random_state(pin_df):
    groups = ["g1", "g2", "g3"]
    got = fastbias.pinned_auc(pin_df["y"], pin_df["s"], pin_df[groups],
                              random_state=np.random.RandomState(11))
    rs = np.random.RandomState(11)
    want = _reference_pinned(pin_df, groups, lambda pool, k: pool.sample(k, random_state=rs))
    for name in groups:
        assert abs(got[name] - want[name]) <= 1e-12, name


def test_dixon_pinned_auc_draws_from_all_rows(pin_df):
    groups = ["g1", "g2", "g3"]
    got = fastbias.pinned_auc(pin_df["y"], pin_df["s"], pin_df[groups], method="dixon")
    want = _reference_pinned(pin_df, groups, lambda pool, k: pool.sample(k, random_state=25),
                             method="dixon")
    for name in groups:
        assert abs(got[name] - want[name]) <= 1e-12, name


def test_pinned_auc_refuses_a_boolean_seed_and_a_non_boolean_replace(pin_df):
    with pytest.raises(TypeError, match="random_state"):
        fastbias.pinned_auc(pin_df["y"], pin_df["s"], pin_df[["g1"]], random_state=True)
    with pytest.raises(TypeError, match="replace"):
        fastbias.pinned_auc(pin_df["y"], pin_df["s"], pin_df[["g1"]], replace=0)


def test_pinned_auc_refuses_subgroups_with_other_row_labels(pin_df):
    shuffled = pin_df[["g1"]].set_axis(pin_df.index[::-1])
    with pytest.raises(ValueError, match="subgroups"):
        fastbias.pinned_auc(pin_df["y"], pin_df["s"], shuffled)


def test_pinned_auc_subgroup_larger_than_its_background_is_named(pin_df):
    big = np.arange(len(pin_df)) < 200
    with pytest.raises(ValueError, match="subgroup 'big' has 200 rows"):
        fastbias.pinned_auc(pin_df["y"], pin_df["s"], {"big": big})


def test_pinned_auc_thresholds_labels_and_memberships_each_with_its_own(pin_df):
    frac = np.where(pin_df["y"], 0.6, 0.2)
    value = np.where(pin_df["g1"], 0.35, 0.1)
    got = fastbias.pinned_auc(frac, pin_df["s"], {"g1": value}, label_threshold=0.5,
                              subgroup_threshold=0.3)
    want = _reference_pinned(pin_df, ["g1"], lambda pool, k: pool.sample(k, random_state=25))
    assert abs(got["g1"] - want["g1"]) <= 1e-12


def _expected_pinned(y, s, g, replace):
    """E[U] / E[pairs] of the pinned set g + m draws from the background (exact Fractions)."""
    gn, gp, bn, bp = s[g & ~y], s[g & y], s[~g & ~y], s[~g & y]
    m, big_n = int(g.sum()), int((~g).sum())

    def u(pos, neg):  # sum over pairs of [pos > neg] + 1/2 [tie]
        f = pair_fraction(pos, neg)
        return Fraction(0) if f is None else f * len(pos) * len(neg)

    f1 = Fraction(m, big_n)
    f2 = Fraction(m * (m - 1), big_n * big_n) if replace else \
        Fraction(m * (m - 1), big_n * (big_n - 1))
    pairs = (len(gn) * len(gp) + f1 * (len(gn) * len(bp) + len(gp) * len(bn))
             + f2 * len(bn) * len(bp))
    wins = u(gp, gn) + f1 * (u(bp, gn) + u(gp, bn)) + f2 * u(bp, bn)
    return float(wins / pairs)


@pytest.mark.parametrize("replace", [False, True])
def test_expected_pinned_auc_is_the_ratio_of_expectations(pin_df, replace):
    y, s = pin_df["y"].to_numpy(), pin_df["s"].to_numpy()
    groups = ["g1", "g3"]
    got = fastbias.pinned_auc(y, s, pin_df[groups], method="expected", replace=replace)
    for name in groups:
        want = _expected_pinned(y, s, pin_df[name].to_numpy(), replace)
        assert abs(got[name] - want) <= 1e-12, (name, got[name], want)


# ------------------------------------------------------------------ evaluation.py

def test_deprecated_module_warns_and_reexports():
    sys.modules.pop("fastbias.evaluation", None)
    with pytest.warns(DeprecationWarning, match="fastbias.evaluation is deprecated"):
        module = importlib.import_module("fastbias.evaluation")
    assert module.evaluate is fastbias.evaluate
    assert module.EvaluationResult is fastbias.EvaluationResult
    namespace = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        exec("from fastbias.evaluation import *", namespace)
    assert namespace["evaluate"] is fastbias.evaluate
    assert namespace["EvaluationResult"] is fastbias.EvaluationResult


def test_bootstrap_progress_bar_counts_exactly_the_replicates_it_declares(patchy, monkeypatch):
    """Under "exclude" with one universe of all rows, the bar's total is the replicates run
    (models x universes x n_boot): no extra all-rows pass is declared that never runs."""
    import fastbias.frame as frame

    bars = []

    class Recording(frame.Bar):
        def __init__(self, total, *args, **kwargs):
            super().__init__(total, *args, **kwargs)
            self.total = total
            bars.append(self)

    monkeypatch.setattr(frame, "Bar", Recording)
    _quietly(fastbias.evaluate, patchy, label="tox", scores=["m1"], subgroups=["a", "b"],
             missing_subgroup="exclude", ci="bootstrap", n_boot=20, random_state=1)
    assert len(bars) == 1
    assert bars[0].total == 2 * 20  # universes: all rows (b), a's annotated rows (a)
    assert bars[0].done == bars[0].total


# ------------------------------------------------------------------ the defect found

def test_pinned_auc_out_of_range_seed_names_random_state(pin_df):
    """README: "Bad input is an error that names the argument ... and what is wrong". An int
    seed numpy cannot take (negative, or >= 2**32) gave numpy's bare "Seed must be between 0
    and 2**32 - 1", which names no argument (found by this audit); now a ValueError names
    ``random_state`` and the value, and the ends of the range are taken."""
    for seed in (0, 2 ** 32 - 1):
        assert 0.0 <= fastbias.pinned_auc(pin_df["y"], pin_df["s"], pin_df[["g1"]],
                                          random_state=seed)["g1"] <= 1.0
    for seed in (-1, 2 ** 32, 2 ** 40):
        with pytest.raises(ValueError, match=rf"random_state .*got {seed}"):
            fastbias.pinned_auc(pin_df["y"], pin_df["s"], pin_df[["g1"]], random_state=seed)
