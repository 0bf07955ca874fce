"""evaluate(): DataFrames as they come, against the brute-force reference."""
import warnings

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.metrics import METRIC_COLUMNS
from fastbias.synthetic import JIGSAW_IDENTITIES, make_jigsaw_like, to_arrays
from tests.reference import brute_force_metrics


def _assert_metrics_equal(row, expected):
    for metric, value in expected.items():
        got = row[metric]
        if np.isnan(value):
            assert np.isnan(got), metric
        else:
            assert got == pytest.approx(value, rel=1e-12, abs=1e-12), metric


@pytest.fixture(scope="module")
def jigsaw_small():
    return make_jigsaw_like(n_rows=3_000, n_identities=5, annotated_fraction=0.6,
                            identity_fraction_range=(0.02, 0.1), random_state=3)


def test_evaluate_background_policy_matches_brute_force(jigsaw_small):
    df = jigsaw_small
    names = JIGSAW_IDENTITIES[:5]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastbias.UndefinedMetricWarning)
        res = fastbias.evaluate(df, label="toxicity", scores=["model_fair", "model_biased"],
                                subgroups=names)
    y = df["toxicity"].to_numpy() >= 0.5
    for model in ["model_fair", "model_biased"]:
        s = df[model].to_numpy()
        table = res.for_model(model)
        for g in names:
            member = df[g].to_numpy() >= 0.5  # NaN >= 0.5 is False: background
            _assert_metrics_equal(table.loc[g], brute_force_metrics(y, s, member))
            assert table.loc[g, "subgroup_size"] == member.sum()
        from sklearn.metrics import roc_auc_score

        assert res.overall_auc[model] == pytest.approx(roc_auc_score(y, s), abs=1e-12)


def test_evaluate_exclude_policy_drops_unannotated_rows_from_background(jigsaw_small):
    df = jigsaw_small.copy()
    names = JIGSAW_IDENTITIES[:3]
    # give one identity its own NaN pattern so that two universes are needed
    df.loc[df.index[:200], names[2]] = np.nan
    res = fastbias.evaluate(df, label="toxicity", scores="model_biased", subgroups=names,
                            missing_subgroup="exclude")
    y = df["toxicity"].to_numpy() >= 0.5
    s = df["model_biased"].to_numpy()
    table = res.for_model()
    for g in names:
        annotated = df[g].notna().to_numpy()
        member = df[g].to_numpy()[annotated] >= 0.5
        expected = brute_force_metrics(y[annotated], s[annotated], member)
        _assert_metrics_equal(table.loc[g], expected)
        assert table.loc[g, "background_negatives"] == ((~member) & ~y[annotated]).sum()
    # the overall AUC still uses every row
    from sklearn.metrics import roc_auc_score

    assert res.overall_auc["model_biased"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)


def test_evaluate_equals_bias_metrics_on_arrays(jigsaw_small):
    df = jigsaw_small
    names = JIGSAW_IDENTITIES[:5]
    y, s, groups = to_arrays(df, score="model_biased", subgroups=names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastbias.UndefinedMetricWarning)
        direct = fastbias.bias_metrics(y, s, pd.DataFrame(groups, columns=names))
        via_df = fastbias.evaluate(df, label="toxicity", scores="model_biased",
                                   subgroups=names).for_model()
    pd.testing.assert_frame_equal(direct, via_df, check_exact=True)


@pytest.mark.jit_heavy
@pytest.mark.parametrize("missing_subgroup", ["background", "exclude"])
def test_one_large_model_sorted_on_two_threads_matches_sklearn(missing_subgroup):
    """Above CONCURRENT_SWEEP_MIN_ROWS one model's class sort runs beside the column reads."""
    from sklearn.metrics import roc_auc_score

    from fastbias.sweep.parallel import CONCURRENT_SWEEP_MIN_ROWS

    df = make_jigsaw_like(n_rows=CONCURRENT_SWEEP_MIN_ROWS + 20_000, n_identities=4,
                          annotated_fraction=0.5, random_state=8)
    names = JIGSAW_IDENTITIES[:4]
    res = fastbias.evaluate(df, label="toxicity", scores="model_biased", subgroups=names,
                            missing_subgroup=missing_subgroup)
    table = res.for_model()
    y = df["toxicity"].to_numpy() >= 0.5
    s = df["model_biased"].to_numpy()
    for g in names:
        rows = df[g].notna().to_numpy() if missing_subgroup == "exclude" else np.ones(len(df), bool)
        member = df[g].to_numpy()[rows] >= 0.5
        yy, ss = y[rows], s[rows].astype(np.float64)
        assert table.loc[g, "subgroup_auc"] == pytest.approx(
            roc_auc_score(yy[member], ss[member]), abs=1e-12)
        bnsp = (member & yy) | (~member & ~yy)
        assert table.loc[g, "bnsp_auc"] == pytest.approx(roc_auc_score(yy[bnsp], ss[bnsp]),
                                                         abs=1e-12)
    assert res.overall_auc["model_biased"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)


def test_many_models_in_threads_equal_one_at_a_time(jigsaw_small):
    df = jigsaw_small.copy()
    rng = np.random.default_rng(0)
    models = []
    for i in range(6):
        df[f"m{i}"] = np.round(rng.random(len(df)), 2).astype(np.float32 if i % 2 else np.float64)
        models.append(f"m{i}")
    names = JIGSAW_IDENTITIES[:5]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastbias.UndefinedMetricWarning)
        together = fastbias.evaluate(df, label="toxicity", scores=models, subgroups=names, n_jobs=3)
        for m in models:
            alone = fastbias.evaluate(df, label="toxicity", scores=m, subgroups=names, n_jobs=1)
            pd.testing.assert_frame_equal(together.for_model(m), alone.for_model(m))
    wide = together.wide(["bpsn_auc"])
    assert list(wide.columns.get_level_values(1)) == models
    assert list(wide.index) == names


def test_weights_by_column_name(jigsaw_small):
    df = jigsaw_small.copy()
    df["w"] = np.random.default_rng(1).random(len(df))
    names = JIGSAW_IDENTITIES[:2]
    res = fastbias.evaluate(df, label="toxicity", scores="model_fair", subgroups=names,
                            sample_weight="w")
    y = df["toxicity"].to_numpy() >= 0.5
    for g in names:
        expected = brute_force_metrics(y, df["model_fair"].to_numpy(), df[g].to_numpy() >= 0.5,
                                       df["w"].to_numpy())
        _assert_metrics_equal(res.for_model().loc[g], expected)


def test_nullable_and_boolean_identity_columns():
    df = pd.DataFrame({
        "label": [0, 1, 0, 1, 0, 1, 1, 0],
        "score": [0.1, 0.9, 0.4, 0.35, 0.8, 0.7, 0.2, 0.3],
        "g_bool": [True, True, False, False, True, False, True, False],
        "g_nullable": pd.array([1.0, None, 0.0, 0.9, 0.6, None, 0.0, 1.0], dtype="Float64"),
        "g_boolean": pd.array([True, None, False, True, True, False, None, True], dtype="boolean"),
    })
    res = fastbias.evaluate(df, label="label", scores="score",
                            subgroups=["g_bool", "g_nullable", "g_boolean"])
    table = res.for_model()
    y = df["label"].to_numpy() == 1
    s = df["score"].to_numpy()
    members = {
        "g_bool": df["g_bool"].to_numpy(),
        "g_nullable": df["g_nullable"].to_numpy(dtype=float, na_value=np.nan) >= 0.5,
        "g_boolean": df["g_boolean"].fillna(False).to_numpy(dtype=bool),
    }
    for g, member in members.items():
        _assert_metrics_equal(table.loc[g], brute_force_metrics(y, s, member))


def test_errors_name_the_column(jigsaw_small):
    df = jigsaw_small
    with pytest.raises(KeyError, match="nope"):
        fastbias.evaluate(df, label="toxicity", scores="nope", subgroups=["male"])
    with pytest.raises(KeyError, match="subgroups"):
        fastbias.evaluate(df, label="toxicity", scores="model_fair", subgroups=["male", "martian"])
    with pytest.raises(KeyError, match="label"):
        fastbias.evaluate(df, label="target", scores="model_fair", subgroups=["male"])
    bad = df.copy()
    bad.loc[bad.index[5], "model_fair"] = np.nan
    with pytest.raises(ValueError, match="model_fair.*1 NaN"):
        fastbias.evaluate(bad, label="toxicity", scores="model_fair", subgroups=["male"])
    with pytest.raises(ValueError, match="missing_subgroup"):
        fastbias.evaluate(df, label="toxicity", scores="model_fair", subgroups=["male"],
                          missing_subgroup="drop")
    with pytest.raises(ValueError, match="empty"):
        fastbias.evaluate(df.iloc[:0], label="toxicity", scores="model_fair", subgroups=["male"])
    with pytest.raises(TypeError, match="DataFrame"):
        fastbias.evaluate(df.to_numpy(), label="toxicity", scores="model_fair", subgroups=["male"])
    text = df.assign(male=df["male"].astype(str))
    with pytest.raises(TypeError, match="'male'"):
        fastbias.evaluate(text, label="toxicity", scores="model_fair", subgroups=["male"])


def test_undefined_metrics_warn_with_model_and_counts():
    df = pd.DataFrame({"y": [0, 0, 1, 1], "s": [0.1, 0.2, 0.3, 0.4], "g": [1.0, 1.0, 0.0, 0.0]})
    with pytest.warns(fastbias.UndefinedMetricWarning, match=r"model 's'.*subgroup_positives=0"):
        res = fastbias.evaluate(df, label="y", scores="s", subgroups=["g"])
    row = res.for_model().loc["g"]
    assert np.isnan(row["subgroup_auc"]) and row["subgroup_negatives"] == 2
    assert row["bpsn_auc"] == 1.0  # defined: subgroup negatives vs background positives


def test_table_layout(jigsaw_small):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastbias.UndefinedMetricWarning)
        res = fastbias.evaluate(jigsaw_small, label="toxicity", scores=["model_fair", "model_biased"],
                                subgroups=JIGSAW_IDENTITIES[:5])
    assert list(res.table.columns[:2]) == ["model", "subgroup"]
    for col in ["subgroup_size", "subgroup_negatives", "subgroup_positives", "background_negatives",
                "background_positives", *METRIC_COLUMNS]:
        assert col in res.table.columns
    assert "model_biased" in repr(res)



@pytest.mark.parametrize("weight", [8, 7.5, np.int64(9)])
def test_a_number_that_names_no_column_is_refused_as_a_weight_column(weight):
    """sample_weight=8 where no column is named 8 is a KeyError naming sample_weight, the
    number and the columns (it said "must be an array-like ..., got int"); the column named
    7 is read as the weights."""
    df = pd.DataFrame({"y": [0, 1, 0, 1], "s": [0.1, 0.2, 0.3, 0.4],
                       "g": [True, False, True, True], 7: [1.0, 2.0, 3.0, 4.0]})
    with pytest.raises(KeyError, match=r"sample_weight: column\(s\) \[.+\] not in the "
                                       r"DataFrame \(columns are \['y', 's', 'g', 7\]\)"):
        fastbias.evaluate(df, label="y", scores=["s"], subgroups=["g"], sample_weight=weight)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.evaluate(df, label="y", scores=["s"], subgroups=["g"], sample_weight=7)
    # negatives (0.1, w 1), (0.3, w 3); positives (0.2, w 2), (0.4, w 4): the weighted AUC is
    # (1*2 + 1*4 + 3*4) / ((1 + 3) (2 + 4)) = 18 / 24
    assert float(res.overall_auc["s"]) == 18 / 24
