"""A mutation audit's tests (2026-11-28, forty-third session, an independent reviewer) of
fastbias/compat.py (the Kaggle kernel's and the authors' functions) and
fastbias/validate/categories.py with its consumer ``category_memberships``. 42 hand mutants
were run against the seven test files that exercise these modules (tests/test_compat*.py,
the two integrations files, tests/test_sensitive_features*.py, tests/test_membership_mutants.py):
31 killed there, 11 lived, and the tests here kill all 11 (each checked to fail with its
mutant): a label of 2 read as a positive; booleans sorted among the numbers of a mixed column;
float32 values named by their float64 digits; ``True`` beside ``1`` and ``False`` beside ``0``
not refused; ``is_categorical`` reading only the first value, taking any object column, or
taking a numeric Categorical given a threshold; numbers beside their own text not refused; the
out-of-core feature summary's classes swapped; a combination of one class kept out of core.
The other tests pin what the suite already killed, on data of their own. No defect was found.

Every expected value comes from the Kaggle kernel's own code (tests/_kernel_ref.py: sklearn
per subgroup), brute-force pair counts (tests/reference.py) or hand reasoning on hand-built
frames, never from fastbias."""

import numpy as np
import pandas as pd
import pytest

from fastbias import compat
from fastbias.prepare.memberships import _rows_by_code, category_memberships
from fastbias.validate import categories as cat

from . import _kernel_ref as K
from .reference import brute_force_metrics

# ---------------------------------------------------------------- compat.py

def _kernel_frame():
    # 8 rows; g and h overlap; hand-chosen distinct scores with one tie
    return pd.DataFrame({
        "target": [False, True, False, True, True, False, True, False],
        "pred": [0.1, 0.9, 0.4, 0.35, 0.8, 0.7, 0.4, 0.2],
        "g": [True, True, True, True, False, False, False, False],
        "h": [False, True, True, False, True, True, False, False],
        "k": [True, False, False, True, True, False, False, True],
    })


def test_duplicated_subgroup_gives_a_row_each_like_the_kernel():
    """Kills c06 (duplicates collapsed): the kernel loops over the list, one row per entry."""
    df = _kernel_frame()
    subs = ["g", "h", "g"]
    got = compat.compute_bias_metrics_for_model(df, subs, "pred", "target")
    want = K.compute_bias_metrics_for_model(df, subs, "pred", "target")
    assert got["subgroup"].tolist() == want["subgroup"].tolist()
    assert len(got) == 3
    for col in ("subgroup_size", "subgroup_auc", "bpsn_auc", "bnsp_auc"):
        np.testing.assert_allclose(got[col].to_numpy(dtype=float),
                                   want[col].to_numpy(dtype=float), rtol=0, atol=1e-12)


def test_kernel_table_sorted_ascending_with_bpsn_bnsp_in_place():
    """Kills c07 (descending sort) and c09 (BPSN/BNSP swapped)."""
    df = _kernel_frame()
    got = compat.compute_bias_metrics_for_model(df, ["g", "h", "k"], "pred", "target")
    want = K.compute_bias_metrics_for_model(df, ["g", "h", "k"], "pred", "target")
    assert got["subgroup"].tolist() == want["subgroup"].tolist()
    assert got.index.tolist() == want.index.tolist()
    for col in ("subgroup_auc", "bpsn_auc", "bnsp_auc"):
        np.testing.assert_allclose(got[col].to_numpy(), want[col].to_numpy(), atol=1e-12)


def test_include_asegs_columns_match_the_authors_mwu():
    """Kills c08 (negative_aeg taken from positive_aeg)."""
    df = _kernel_frame()
    got = compat.compute_bias_metrics_for_model(df, ["g", "h"], "pred", "target",
                                                include_asegs=True).set_index("subgroup")
    for s in ("g", "h"):
        assert got.loc[s, "negative_aeg"] == pytest.approx(
            K.compute_negative_aeg(df, s, "target", "pred"), abs=1e-12)
        assert got.loc[s, "positive_aeg"] == pytest.approx(
            K.compute_positive_aeg(df, s, "target", "pred"), abs=1e-12)
    # hand check for g: negatives of g {0.1, 0.4}, background negatives {0.7, 0.2}
    # P(bg > sub) = (0.7>0.1, 0.7>0.4, 0.2>0.1, 0.2<0.4) = 3/4 -> 0.5 - 3/4 = -0.25
    assert got.loc["g", "negative_aeg"] == -0.25


def test_labels_other_than_0_1_refused():
    """Kills c03 (label 2 read as positive): a 0/1 column with a 2 is a ValueError naming it."""
    df = _kernel_frame()
    df["target"] = df["target"].astype(int)
    df.loc[3, "target"] = 2
    with pytest.raises(ValueError, match=r"'target'.*2.*position 3"):
        compat.compute_bias_metrics_for_model(df, ["g"], "pred", "target")
    with pytest.raises(ValueError, match="target"):
        compat.calculate_overall_auc(df, "pred")


def test_overall_auc_all_positive_refused():
    """Kills c10: an all-positive label column has no ROC AUC (sklearn raises ValueError)."""
    df = pd.DataFrame({"target": [True, True, True], "pred": [0.1, 0.2, 0.3]})
    with pytest.raises(ValueError, match="one class"):
        compat.calculate_overall_auc(df, "pred")


def test_final_metric_uses_power_and_weight():
    """Kills c11 (POWER ignored): expected from the kernel's own get_final_metric."""
    bias = pd.DataFrame({"subgroup_auc": [0.9, 0.6], "bpsn_auc": [0.8, 0.7],
                         "bnsp_auc": [0.95, 0.5]})
    for power, weight in ((-2, 0.5), (3, 0.1), (-5, 0.25)):
        want = K.get_final_metric(bias, 0.85, POWER=power, OVERALL_MODEL_WEIGHT=weight)
        got = compat.get_final_metric(bias, 0.85, POWER=power, OVERALL_MODEL_WEIGHT=weight)
        assert got == pytest.approx(want, rel=1e-12)


def test_several_models_refuse_twice_listed_names():
    """Kills c13/c14: a model twice, or a subgroup twice among two models, is a ValueError."""
    df = _kernel_frame()
    df["pred2"] = df["pred"][::-1].to_numpy()
    with pytest.raises(ValueError, match="'pred' twice"):
        compat.compute_bias_metrics_for_models(df, ["g"], ["pred", "pred"], "target")
    with pytest.raises(ValueError, match="'g' twice"):
        compat.compute_bias_metrics_for_models(df, ["g", "g"], ["pred", "pred2"], "target")


def test_several_models_match_reference_and_legacy_names():
    """Kills c15 (legacy_names inverted); every number from the authors' code."""
    df = _kernel_frame()
    df["pred2"] = df["pred"][::-1].to_numpy()
    got = compat.compute_bias_metrics_for_models(df, ["g", "h", "k"], ["pred", "pred2"], "target")
    want = K.compute_bias_metrics_for_models(df, ["g", "h", "k"], ["pred", "pred2"], "target")
    assert got.columns.tolist() == want.columns.tolist()
    assert got["subgroup"].tolist() == want["subgroup"].tolist()
    assert got["subset_size"].tolist() == want["subset_size"].tolist()
    for col in want.columns[2:]:
        np.testing.assert_allclose(got[col].to_numpy(dtype=float),
                                   want[col].to_numpy(dtype=float), atol=1e-12)
    legacy = compat.compute_bias_metrics_for_models(df, ["g"], ["pred"], "target",
                                                    legacy_names=True)
    assert "pred_negative_cross_auc" in legacy.columns
    assert "pred_positive_cross_auc" in legacy.columns
    assert "pred_bpsn_auc" not in legacy.columns


def test_nullable_subgroup_na_rows_left_out_as_the_kernels_masks_do():
    """Kills c16 (<NA> rows as background) and c18 (only an all-<NA> column handled):
    the kernel's df[df[g]] / df[~df[g]] drop <NA> rows; expected from brute-force pair
    counts on the annotated rows."""
    df = _kernel_frame()
    g = pd.array([True, True, None, True, False, None, False, False], dtype="boolean")
    df["g"] = g
    got = compat.compute_bias_metrics_for_model(df, ["g"], "pred", "target").iloc[0]
    keep = ~np.asarray(pd.isna(g))
    y = df["target"].to_numpy()[keep]
    s = df["pred"].to_numpy()[keep]
    m = np.asarray(g[keep], dtype=bool)
    want = brute_force_metrics(y, s, m)
    assert got["subgroup_size"] == 3
    for col in ("subgroup_auc", "bpsn_auc", "bnsp_auc"):
        assert got[col] == want[col], col
    # and the kernel's own code agrees (its masks take <NA> as False)
    kern = K.compute_bias_metrics_for_model(df, ["g"], "pred", "target").iloc[0]
    for col in ("subgroup_auc", "bpsn_auc", "bnsp_auc"):
        assert got[col] == pytest.approx(kern[col], abs=1e-12)


def test_single_subgroup_name_string_is_one_subgroup():
    """Kills c17 (a string split into characters)."""
    df = _kernel_frame().rename(columns={"g": "male"})
    got = compat.compute_bias_metrics_for_model(df, "male", "pred", "target")
    assert got["subgroup"].tolist() == ["male"]
    y, s, m = df["target"], df["pred"], df["male"]
    assert got["subgroup_auc"].iloc[0] == brute_force_metrics(y, s, m)["subgroup_auc"]


def test_boolean_model_column_read_as_0_1():
    """Kills c05: a boolean (hard-decision) model column scores as 0/1, as roc_auc_score does."""
    df = _kernel_frame()
    df["hard"] = df["pred"] >= 0.4
    from sklearn.metrics import roc_auc_score
    want = roc_auc_score(df["target"], df["hard"].astype(float))
    assert compat.calculate_overall_auc(df, "hard") == pytest.approx(want, abs=1e-12)


# ---------------------------------------------------------------- categories.py

def test_value_text_names():
    """Kills k01 (whole float named '2.0') and k02 (bools named 1/0)."""
    assert cat.value_text(2.0) == "2"
    assert cat.value_text(np.float64(-3.0)) == "-3"
    assert cat.value_text(2.5) == "2.5"
    assert cat.value_text(True) == "True"
    assert cat.value_text(np.bool_(False)) == "False"
    c = cat.category_codes(pd.Series([1.0, None, 2.0]), "n")
    assert c.labels == ["n=1", "n=2"]


def test_mixed_column_order_numbers_then_type_name_then_text():
    """Kills k04 (booleans sorted among numbers) and k05 (type name ignored): docs: numbers
    first by value, then the rest by type name ('bool' < 'str') and text."""
    col = pd.Series(["A", True, 2, 1.5, "B"], dtype=object)
    c = cat.category_codes(col, "f")
    assert [cat.value_text(v) for v in c.values] == ["1.5", "2", "True", "A", "B"]
    assert c.codes.tolist() == [3, 2, 1, 0, 4]


def test_categorical_codes_unused_and_missing():
    """Kills k06 (first category dropped) and k07 (a missing row coded as the last
    category): categories with no rows left out, missing is -1."""
    col = pd.Series(pd.Categorical(["a", None, "c", "a"], categories=["a", "b", "c"]))
    c = cat.category_codes(col, "r")
    assert c.values == ["a", "c"]
    assert c.codes.tolist() == [0, -1, 1, 0]


def test_codes_missing_and_first_seen_order():
    """Kills k08 (missing joins the last-seen value), k09 (NaN a value), k10 (permutation
    in place of its inverse)."""
    col = pd.Series(["b", None, "c", "a", np.nan, "b"], dtype=object)
    c = cat.category_codes(col, "r")
    assert c.values == ["a", "b", "c"]
    assert c.codes.tolist() == [1, -1, 2, 0, -1, 1]
    assert c.missing.tolist() == [False, True, False, False, True, False]


def test_float32_values_named_as_written():
    """Kills k11: a float32 0.1 names itself '0.1' (not 0.10000000149011612)."""
    c = cat.category_codes(pd.Series(np.array([0.1, 0.25, 0.1], dtype=np.float32)), "x")
    assert c.labels == ["x=0.1", "x=0.25"]


def test_booleans_beside_numbers_refused():
    """Kills k12/k13: True beside 1, False beside 0, in an object column, are refused."""
    with pytest.raises(TypeError, match="both booleans and numbers"):
        cat.category_codes(pd.Series([True, 1, "a"], dtype=object), "f")
    with pytest.raises(TypeError, match="both booleans and numbers"):
        cat.category_codes(pd.Series([False, 0, "a"], dtype=object), "f")


def test_values_reading_alike_refused():
    """Kills k16: 1 and '1' would both be 'f=1'."""
    with pytest.raises(ValueError, match="'1'"):
        cat.category_codes(pd.Series([1, "1", "a"], dtype=object), "f")


def test_max_categories_boundary():
    """Docs: more than 1,000 distinct values refused; exactly 1,000 accepted."""
    ok = cat.category_codes(pd.Series([f"v{i:04d}" for i in range(1000)]), "id")
    assert len(ok.values) == 1000
    with pytest.raises(ValueError, match="1,001 distinct values"):
        cat.category_codes(pd.Series([f"v{i:04d}" for i in range(1001)]), "id")


def test_is_categorical_reads():
    """Kills k17 (only the first object value looked at), k18 (any object column
    categorical), k19 (numeric Categorical with a threshold read as categories)."""
    assert cat.is_categorical(pd.Series([1, 2, "a"], dtype=object))
    assert not cat.is_categorical(pd.Series([True, False, None], dtype=object))
    assert not cat.is_categorical(pd.Series([0.2, 0.7, None], dtype=object))
    num = pd.Series(pd.Categorical([0.2, 0.7, 0.2]))
    assert cat.is_categorical(num)
    assert not cat.is_categorical(num, threshold=0.5)
    assert cat.is_categorical(pd.Series(pd.Categorical(["x", "y"])), threshold=0.5)


def test_refuse_numbers_as_text():
    """Kills k20: numbers beside their text, under a threshold, are refused."""
    with pytest.raises(TypeError, match="numbers written as text"):
        cat.refuse_numbers_as_text(pd.Series([0.7, "0.2"], dtype=object), "g", 0.5)
    with pytest.raises(TypeError, match="position 1"):
        cat.refuse_numbers_as_text(pd.Series([None, "0.2"], dtype=object), "g", 0.5)
    cat.refuse_numbers_as_text(pd.Series(["a", "0.2"], dtype=object), "g", 0.5)  # real text


def _two_feature_frame():
    return pd.DataFrame({
        "race": ["a", "b", "a", None, "b", "a", "b", "a"],
        "sex": ["f", "m", "m", "f", "f", "f", None, "m"],
    }), np.array([True, False, False, True, True, False, True, True])


def test_feature_summary_cells_hand_counted():
    """Kills k22 (rows with a missing value counted) and k23 (classes swapped), k28 (no
    cells for two features)."""
    frame, y = _two_feature_frame()
    s = cat.feature_summary(frame, ["race", "sex"], y)
    assert s["values"] == [{"a", "b"}, {"f", "m"}]
    # rows without a missing value: 0 a f +, 1 b m -, 2 a m -, 4 b f +, 5 a f -, 7 a m +
    assert s["cells"] == {("a", "f"): [1, 1], ("a", "m"): [1, 1], ("b", "f"): [0, 1],
                          ("b", "m"): [1, 0]}


def test_merge_and_choose_out_of_core():
    """Kills k25 (later pieces' values lost) and k27 (a combination with one class kept);
    merge sums counts."""
    frame, y = _two_feature_frame()
    first = cat.feature_summary(frame.iloc[:4], ["race", "sex"], y[:4])
    second = cat.feature_summary(frame.iloc[4:].reset_index(drop=True), ["race", "sex"], y[4:])
    merged = cat.merge_feature_summaries(cat.merge_feature_summaries(None, first), second)
    assert merged == cat.feature_summary(frame, ["race", "sex"], y)
    third = {"values": [{"c"}, {"x"}], "cells": {("c", "x"): [0, 2]}}
    merged = cat.merge_feature_summaries(merged, third)
    values, combos = cat.chosen_features(merged, ["race", "sex"], 1)
    assert values == (("a", "b", "c"), ("f", "m", "x"))
    assert combos == ((0, 0), (0, 1))          # a&f and a&m have both classes
    values, combos = cat.chosen_features(merged, ["race", "sex"], 2)
    assert combos == ()


def test_category_memberships_rows_names_missing():
    """Kills m01 (missing ignored for single values), m02 (one-class combos kept), m04
    (combination decoded in the wrong digit order), m05 (rows offset by missing rows),
    m06 (combos' missing ignored)."""
    race = cat.category_codes(pd.Series(["b", None, "a", "c", "a", "c", "b"]), "race")
    sex = cat.category_codes(pd.Series(["m", "f", "f", "m", "m", "f", None]), "sex")
    y = np.array([True, False, True, False, False, True, True])
    names, rows, missing, parts = category_memberships([race, sex], y, 1)
    singles = ["race=a", "race=b", "race=c", "sex=f", "sex=m"]
    # combos with both classes: a&f rows[2] +; a&m row 4 -; so a alone by sex has one class.
    # c&m row 3 -, c&f row 5 +, b&m row 0 +  -> none has both classes
    assert names == singles
    assert [r.tolist() for r in rows] == [[2, 4], [0, 6], [3, 5], [1, 2, 5], [0, 3, 4]]
    assert missing[0].tolist() == [False, True, False, False, False, False, False]
    assert missing[3].tolist() == [False, False, False, False, False, False, True]
    # with labels making r=c & s=f and r=a & s=m two-class (rows 3,5 differ in sex: none)
    y2 = np.array([True, False, True, False, False, True, True])
    race2 = cat.category_codes(pd.Series(["c", None, "c", "c", "a", "a", "b"]), "race")
    sex2 = cat.category_codes(pd.Series(["f", "f", "f", "m", "m", "m", None]), "sex")
    # c&f: rows 0 (+), 2 (+) -> one class; c&m: row 3 (-); a&m: rows 4 (-), 5 (+) -> kept
    names, rows, missing, parts = category_memberships([race2, sex2], y2, 1)
    assert names[-1:] == ["race=a & sex=m"] and len(names) == 3 + 2 + 1
    assert rows[-1].tolist() == [4, 5]
    assert parts[-1] == [(0, 0), (1, 1)]
    assert missing[-1].tolist() == [False, True, False, False, False, False, True]


def test_rows_by_code_with_missing_first():
    """Kills m05: increasing rows per code, missing rows (-1) skipped."""
    out = _rows_by_code(np.array([1, -1, 0, -1, 1, 2], dtype=np.int32), 3)
    assert [r.tolist() for r in out] == [[2], [0, 4], [5]]


def test_evaluate_sensitive_feature_exclude_matches_brute_force():
    """End to end: evaluate(sensitive_features=['race'], missing_subgroup='exclude')
    against brute-force pair counts on the annotated rows (kills m01 end to end)."""
    import fastbias
    df = pd.DataFrame({
        "y": [1, 0, 1, 0, 1, 0, 1, 0, 1, 0],
        "s": [0.9, 0.1, 0.3, 0.6, 0.8, 0.45, 0.2, 0.7, 0.55, 0.05],
        "race": ["a", "a", "b", None, "b", "a", None, "b", "a", "b"],
    })
    res = fastbias.evaluate(df, label="y", scores="s", sensitive_features=["race"],
                            missing_subgroup="exclude")
    table = res.for_model()
    keep = df["race"].notna().to_numpy()
    for value in ("a", "b"):
        member = (df["race"] == value).to_numpy()
        want = brute_force_metrics(df["y"].to_numpy()[keep], df["s"].to_numpy()[keep],
                                   member[keep])
        row = table.loc[f"race={value}"]
        for col in ("subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"):
            assert row[col] == want[col], (value, col)
