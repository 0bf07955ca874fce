"""fastbias.compat against straightforward per-subgroup pandas + sklearn/scipy implementations.

The ``_slow_*`` functions below are written here to behave like the code people
copy (the Kaggle benchmark kernel and the authors' ``model_bias_analysis.py``):
one boolean-mask selection and one ``roc_auc_score`` per subgroup and metric,
a one-class ``ValueError`` giving NaN, ``sort_values`` on the result.
"""
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import fastbias
from fastbias import UndefinedMetricWarning, compat

from .reference import sklearn_scipy_metrics


def _auc_or_nan(labels, scores):
    try:
        with warnings.catch_warnings():  # newer sklearn warns and returns NaN for one class
            warnings.simplefilter("ignore")
            return roc_auc_score(labels, scores)
    except ValueError:  # older sklearn raises for one class
        return np.nan


def _slow_kaggle_table(df, subgroups, model, label):
    records = []
    for g in subgroups:
        in_g, y = df[g], df[label]
        records.append({
            "subgroup": g,
            "subgroup_size": int(in_g.sum()),
            "subgroup_auc": _auc_or_nan(df.loc[in_g, label], df.loc[in_g, model]),
            "bpsn_auc": _auc_or_nan(*_cells(df, (in_g & ~y) | (~in_g & y), label, model)),
            "bnsp_auc": _auc_or_nan(*_cells(df, (in_g & y) | (~in_g & ~y), label, model)),
        })
    return pd.DataFrame(records).sort_values("subgroup_auc", ascending=True)


def _cells(df, mask, label, model):
    return df.loc[mask, label], df.loc[mask, model]


def _slow_power_mean(series, p):
    return (sum(np.power(series, p)) / len(series)) ** (1 / p)


def _slow_final_metric(bias_df, overall, power=-5, weight=0.25):
    bias = np.mean([_slow_power_mean(bias_df[m], power)
                    for m in ("subgroup_auc", "bpsn_auc", "bnsp_auc")])
    return weight * overall + (1 - weight) * bias


def _dataset(seed, n=800, k=6, tie_decimals=1):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"target": rng.random(n) < 0.35})
    names = [f"id_{j}" for j in range(k)]
    for j, name in enumerate(names):
        df[name] = rng.random(n) < rng.uniform(0.02, 0.3)
    base = rng.normal(size=n) + 1.3 * df["target"].to_numpy()
    df["fair"] = np.round(base, tie_decimals)
    df["biased"] = np.round(base + 0.9 * df[names[0]].to_numpy(), tie_decimals).astype(np.float32)
    return df, names


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("model", ["fair", "biased"])
def test_compute_bias_metrics_for_model_matches_slow_kernel(seed, model):
    df, names = _dataset(seed)
    got = compat.compute_bias_metrics_for_model(df, names, model, "target")
    expected = _slow_kaggle_table(df, names, model, "target")
    pd.testing.assert_frame_equal(got, expected, check_exact=False, rtol=1e-12, atol=0)


def test_sort_order_with_ties_and_nan_matches_the_kernel():
    df, names = _dataset(3, n=400)
    # perfect separation: several subgroups tie at subgroup_auc == 1.0
    df["fair"] = df["target"].astype(float) + np.linspace(0, 0.1, len(df))
    df["one_class"] = df["id_1"] & df["target"]  # subgroup AUC undefined
    df["empty"] = False
    names = ["one_class", *names, "empty"]
    with pytest.warns(UndefinedMetricWarning):
        got = compat.compute_bias_metrics_for_model(df, names, "fair", "target")
    expected = _slow_kaggle_table(df, names, "fair", "target")
    assert (expected["subgroup_auc"] == 1.0).sum() >= 3
    pd.testing.assert_frame_equal(got, expected, check_exact=False, rtol=1e-12, atol=0)
    assert got.index.tolist() == expected.index.tolist()
    assert got["subgroup"].iloc[-2:].tolist() == ["one_class", "empty"]


def test_include_asegs_adds_the_average_equality_gaps():
    df, names = _dataset(4)
    got = compat.compute_bias_metrics_for_model(df, names, "biased", "target", include_asegs=True)
    assert got.columns.tolist() == ["subgroup", "subgroup_size", "subgroup_auc", "bpsn_auc",
                                    "bnsp_auc", "negative_aeg", "positive_aeg"]
    y, s = df["target"].to_numpy(), df["biased"].to_numpy()
    for _, row in got.iterrows():
        ref = sklearn_scipy_metrics(y, s, df[row["subgroup"]].to_numpy())
        for metric in ("negative_aeg", "positive_aeg", "bpsn_auc"):
            assert row[metric] == pytest.approx(ref[metric], rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("seed", [0, 1])
def test_calculate_overall_auc_and_final_metric_match_sklearn(seed):
    df, names = _dataset(seed)
    for model in ("fair", "biased"):
        overall = compat.calculate_overall_auc(df, model)
        assert overall == pytest.approx(roc_auc_score(df["target"], df[model]), rel=1e-12)
        slow_table = _slow_kaggle_table(df, names, model, "target")
        fast_table = compat.compute_bias_metrics_for_model(df, names, model, "target")
        expected = _slow_final_metric(slow_table, roc_auc_score(df["target"], df[model]))
        assert compat.get_final_metric(fast_table, overall) == pytest.approx(expected, rel=1e-12)
        got = compat.get_final_metric(fast_table, overall, POWER=2, OVERALL_MODEL_WEIGHT=0.6)
        assert got == pytest.approx(_slow_final_metric(slow_table, overall, 2, 0.6), rel=1e-12)
    renamed = df.rename(columns={"target": "toxic"})
    assert compat.calculate_overall_auc(renamed, "fair", "toxic") == pytest.approx(
        roc_auc_score(df["target"], df["fair"]), rel=1e-12)


def test_power_mean_and_nan_final_metric_like_the_kernel():
    values = pd.Series([0.7, 0.95, 0.88, 0.5])
    for p in (-5, -1, 2):
        assert compat.power_mean(values, p) == pytest.approx(_slow_power_mean(values, p),
                                                             rel=1e-12)
    bias_df = pd.DataFrame({"subgroup_auc": [0.9, np.nan], "bpsn_auc": [0.8, 0.7],
                            "bnsp_auc": [0.9, 0.9]})
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(compat.get_final_metric(bias_df, 0.9))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert math.isnan(_slow_final_metric(bias_df, 0.9))


def _slow_reference_models(df, subgroups, models, label, legacy=False):
    bpsn, bnsp = ("negative_cross_auc", "positive_cross_auc") if legacy else ("bpsn_auc",
                                                                                "bnsp_auc")
    y = df[label].to_numpy()
    records = []
    for g in subgroups:
        record = {"subgroup": g, "subset_size": int(df[g].sum())}
        for model in models:
            ref = sklearn_scipy_metrics(y, df[model].to_numpy(), df[g].to_numpy())
            record[f"{model}_subgroup_auc"] = ref["subgroup_auc"]
            record[f"{model}_{bpsn}"] = ref["bpsn_auc"]
            record[f"{model}_{bnsp}"] = ref["bnsp_auc"]
            record[f"{model}_negative_aeg"] = ref["negative_aeg"]
            record[f"{model}_positive_aeg"] = ref["positive_aeg"]
        records.append(record)
    return pd.DataFrame(records)


@pytest.mark.parametrize("legacy", [False, True])
def test_compute_bias_metrics_for_models_matches_reference_layout(legacy):
    df, names = _dataset(5)
    got = compat.compute_bias_metrics_for_models(df, names, ["fair", "biased"], "target",
                                                 legacy_names=legacy)
    expected = _slow_reference_models(df, names, ["fair", "biased"], "target", legacy)
    pd.testing.assert_frame_equal(got, expected, check_exact=False, rtol=1e-12, atol=1e-15)
    with pytest.raises(NotImplementedError, match="include_asegs"):
        compat.compute_bias_metrics_for_models(df, names, ["fair"], "target", include_asegs=True)


def test_one_sweep_per_model_not_per_subgroup(monkeypatch):
    df, names = _dataset(6, k=12)
    import fastbias.sweep.counts as counts
    import fastbias.sweep.parallel as parallel

    calls = []
    original = counts.count_sorted

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    # every path to the counts (one thread or two) goes through sweep.counts.count_sorted
    for module in (counts, parallel):
        monkeypatch.setattr(module, "count_sorted", counting)
    compat.compute_bias_metrics_for_models(df, names, ["fair", "biased"], "target")
    assert len(calls) == 2
    compat.compute_bias_metrics_for_model(df, names, "fair", "target")
    assert len(calls) == 3


def test_integer_labels_duplicates_and_single_name():
    df, names = _dataset(7)
    as_int = df.assign(target=df["target"].astype(int), **{n: df[n].astype(int) for n in names})
    pd.testing.assert_frame_equal(compat.compute_bias_metrics_for_model(as_int, names, "fair",
                                                                        "target"),
                                  compat.compute_bias_metrics_for_model(df, names, "fair",
                                                                        "target"))
    dup = compat.compute_bias_metrics_for_models(df, [names[0], names[1], names[0]], "fair",
                                                 "target")
    assert dup["subgroup"].tolist() == [names[0], names[1], names[0]]
    pd.testing.assert_series_equal(dup.iloc[0], dup.iloc[2], check_names=False)
    single = compat.compute_bias_metrics_for_model(df, names[2], "fair", "target")
    assert single["subgroup"].tolist() == [names[2]]


def test_clear_errors():
    df, names = _dataset(8)
    fractional = df.assign(target=np.where(df["target"], 0.7, 0.1))
    with pytest.raises(ValueError, match=r"label column 'target' is not boolean.*>= 0.5"):
        compat.compute_bias_metrics_for_model(fractional, names, "fair", "target")
    with pytest.raises(ValueError, match=r"label column 'target' is not boolean"):
        compat.calculate_overall_auc(fractional, "fair")
    soft = df.assign(id_0=df["id_0"] * 0.6)
    with pytest.raises(ValueError, match=r"subgroup 'id_0'.*>= 0.5"):
        compat.compute_bias_metrics_for_model(soft, names, "fair", "target")
    with pytest.raises(KeyError, match=r"model: column\(s\) \['nope'\] not in the DataFrame"):
        compat.compute_bias_metrics_for_models(df, names, ["fair", "nope"], "target")
    with pytest.raises(KeyError, match=r"subgroups: column\(s\) \['gone'\] not in the DataFrame"):
        compat.compute_bias_metrics_for_model(df, ["gone"], "fair", "target")
    with pytest.raises(KeyError, match=r"label_col: column\(s\) \['label'\] not in the DataFrame"):
        compat.calculate_overall_auc(df, "fair", "label")
    with pytest.raises(ValueError, match="only one class"):
        compat.calculate_overall_auc(df.assign(target=True), "fair")
    with pytest.raises(ValueError, match="model column 'fair' has 1 NaN"):
        compat.compute_bias_metrics_for_model(df.assign(fair=df["fair"].where(df.index != 3)),
                                              names, "fair", "target")
    with pytest.raises(TypeError, match="DataFrame"):
        compat.compute_bias_metrics_for_model(df.to_numpy(), names, "fair", "target")
    with pytest.raises(ValueError, match="subgroups is empty"):
        compat.compute_bias_metrics_for_model(df, [], "fair", "target")


def test_compat_agrees_with_bias_metrics():
    df, names = _dataset(9)
    table = fastbias.bias_metrics(df["target"], df["biased"], df[names])
    out = compat.compute_bias_metrics_for_model(df, names, "biased", "target").set_index(
        "subgroup")
    for metric in ("subgroup_auc", "bpsn_auc", "bnsp_auc"):
        np.testing.assert_array_equal(out.loc[names, metric].to_numpy(), table[metric].to_numpy())
    assert compat.get_final_metric(out, table.attrs["overall_auc"]) == fastbias.final_metric(table)


def test_the_two_argument_form_names_the_default_label_column():
    df = pd.DataFrame({"toxicity": [0, 1, 0, 1], "m": [0.1, 0.9, 0.3, 0.6]})
    with pytest.raises(KeyError, match=r"default label column 'target' .*TOXICITY_COLUMN.*"
                                       r"pass label_col="):
        compat.calculate_overall_auc(df, "m")
    assert compat.calculate_overall_auc(df, "m", label_col="toxicity") == 1.0


@pytest.mark.parametrize("values,shown,hint", [
    (["fine", "toxic", "fine", "toxic"], "'fine'", "df[col] == 'fine'"),
    ([0.25, 1.0, 0.0, 1.0], "0.25", "df[col] >= 0.5"),
])
def test_label_errors_suggest_a_conversion_that_fits(values, shown, hint):
    df = pd.DataFrame({"lab": values, "m": [0.1, 0.9, 0.3, 0.6]})
    with pytest.raises(ValueError) as err:
        compat.calculate_overall_auc(df, "m", label_col="lab")
    message = str(err.value)
    assert f"(e.g. {shown} at position 0)" in message and hint in message
    assert "np.float64" not in message
