"""Real data: the scored intersectional madlibs set (../shared/data/madlibs).

* The 2019 results the authors published for 12 subgroups and two Perspective
  models are reproduced by ``fastbias.compat.compute_bias_metrics_for_models``.
* The Jigsaw final metric and Pinned AUC over all 51 identity terms are checked
  against an independent pandas + sklearn computation.

Everything skips cleanly when ../shared/data is absent (``madlibs_dir`` fixture).
"""
import re

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import fastbias
from fastbias import compat

pytestmark = [pytest.mark.realdata, pytest.mark.jit_heavy]  # the kernels are covered without it

MODELS = ["TOXICITY@1", "TOXICITY@6"]


@pytest.fixture(scope="module")
def madlibs(madlibs_dir):
    """The scored set with a boolean ``label`` and one boolean column per identity term."""
    df = pd.read_csv(madlibs_dir / "intersectional_madlibs_scored.csv")
    words = pd.read_csv(madlibs_dir / "words.csv")
    terms = words.loc[words["type"] == "identity", "word"].tolist()
    df["label"] = df["toxicity"] == "toxic"
    phrases = pd.Series(df["phrase"].unique())
    columns = {}
    for term in terms:
        pattern = re.compile(r"\b" + term + r"\b", re.UNICODE | re.IGNORECASE)
        matches = dict(zip(phrases, (pattern.search(p) is not None for p in phrases)))
        columns[term] = df["phrase"].map(matches).astype(bool)
    df = pd.concat([df, pd.DataFrame(columns)], axis=1)
    return df, terms


def test_madlibs_layout(madlibs):
    df, terms = madlibs
    assert len(df) == 30240 and len(terms) == 51
    assert df["label"].sum() == 15120


def test_reproduces_the_2019_published_results(madlibs, madlibs_dir):
    df, _ = madlibs
    published = pd.read_csv(madlibs_dir / "unitary_results_2019.csv", index_col=0)
    subgroups = published["subgroup"].tolist()
    assert len(subgroups) == 12
    got = compat.compute_bias_metrics_for_models(df, subgroups, MODELS, "label",
                                                 legacy_names=True)
    assert got["subgroup"].tolist() == subgroups
    np.testing.assert_array_equal(got["subset_size"].to_numpy(),
                                  published["subset_size"].to_numpy())
    metric_columns = [c for c in published.columns if c.startswith("TOXICITY@")]
    assert len(metric_columns) == 10 and set(metric_columns) <= set(got.columns)
    for column in metric_columns:
        # the CSV holds 12 decimals
        np.testing.assert_allclose(got[column].to_numpy(), published[column].to_numpy(),
                                   rtol=0, atol=1e-11, err_msg=column)
    # the same numbers from the core API with the current names
    for model in MODELS:
        table = fastbias.bias_metrics(df["label"], df[model], df[subgroups])
        np.testing.assert_allclose(table["bpsn_auc"].to_numpy(),
                                   published[f"{model}_negative_cross_auc"].to_numpy(),
                                   rtol=0, atol=1e-11)
        np.testing.assert_allclose(table["positive_aeg"].to_numpy(),
                                   published[f"{model}_positive_aeg"].to_numpy(),
                                   rtol=0, atol=1e-11)


def _independent_final_metric(df, terms, model, power=-5, weight=0.25):
    """The competition metric the slow way: masks, roc_auc_score per subgroup, power means."""
    y = df["label"]
    per_metric = {"subgroup": [], "bpsn": [], "bnsp": []}
    for term in terms:
        g = df[term]
        per_metric["subgroup"].append(roc_auc_score(y[g], df.loc[g, model]))
        bpsn = (g & ~y) | (~g & y)
        per_metric["bpsn"].append(roc_auc_score(y[bpsn], df.loc[bpsn, model]))
        bnsp = (g & y) | (~g & ~y)
        per_metric["bnsp"].append(roc_auc_score(y[bnsp], df.loc[bnsp, model]))
    means = [(np.sum(np.power(v, power)) / len(v)) ** (1 / power) for v in per_metric.values()]
    return weight * roc_auc_score(y, df[model]) + (1 - weight) * np.mean(means)


@pytest.mark.parametrize("model", MODELS)
def test_final_metric_over_51_terms_matches_sklearn(madlibs, model):
    df, terms = madlibs
    expected = _independent_final_metric(df, terms, model)
    table = fastbias.bias_metrics(df["label"], df[model], df[terms])
    assert fastbias.final_metric(table) == pytest.approx(expected, rel=1e-12)
    bias_df = compat.compute_bias_metrics_for_model(df, terms, model, "label")
    overall = compat.calculate_overall_auc(df, model, "label")
    assert compat.get_final_metric(bias_df, overall) == pytest.approx(expected, rel=1e-12)


def test_final_metric_ranks_the_debiased_model_higher(madlibs):
    df, terms = madlibs
    score = {m: fastbias.final_metric(fastbias.bias_metrics(df["label"], df[m], df[terms]))
             for m in MODELS}
    assert score["TOXICITY@6"] > score["TOXICITY@1"]


@pytest.mark.parametrize("model", MODELS)
def test_pinned_auc_over_51_terms_matches_pandas_sample(madlibs, model):
    df, terms = madlibs
    got = fastbias.pinned_auc(df["label"], df[model], df[terms])
    expected = []
    for term in terms:
        subgroup_df = df[df[term]]
        background = df[~df[term]].sample(len(subgroup_df), random_state=25)
        pinned = pd.concat([subgroup_df, background])
        expected.append(roc_auc_score(pinned["label"], pinned[model]))
    np.testing.assert_allclose(got.to_numpy(), expected, rtol=1e-12, atol=0)
    # the expected (sampling-free) Pinned AUC stays close to the single draw
    expected_mode = fastbias.pinned_auc(df["label"], df[model], df[terms], method="expected")
    assert np.abs(expected_mode.to_numpy() - got.to_numpy()).max() < 0.02
