"""Reproduce the authors' published 2019 numbers on the intersectional madlibs data.

Data: ../shared/data/madlibs (see its README; never copied into the repository).
The label is ``toxicity == "toxic"``; the subgroup column of identity term ``w``
(rows of words.csv with ``type == "identity"``) is True where
``re.search(r"\\b" + w + r"\\b", phrase, re.UNICODE | re.IGNORECASE)`` matches.
unitary_results_2019.csv holds the published Subgroup AUC, BPSN AUC
(``negative_cross_auc``), BNSP AUC (``positive_cross_auc``), both AEGs and the
subset size for 12 subgroups and two Perspective API models, printed with 12
significant digits; an exact implementation reproduces them to 1e-9 (in fact
to ~5e-13, the print precision). Skipped when ../shared is absent.
"""
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import fastbias
from fastbias import UndefinedMetricWarning

from .reference import sklearn_scipy_metrics

pytestmark = [pytest.mark.realdata, pytest.mark.jit_heavy]  # the kernels are covered without it

MODELS = ["TOXICITY@1", "TOXICITY@6"]
PUBLISHED_COLUMN = {  # fastbias column -> suffix in unitary_results_2019.csv
    "subgroup_auc": "subgroup_auc",
    "bpsn_auc": "negative_cross_auc",
    "bnsp_auc": "positive_cross_auc",
    "negative_aeg": "negative_aeg",
    "positive_aeg": "positive_aeg",
}
PUBLISHED_TOL = 1e-9


def term_column(phrases: pd.Series, term: str) -> np.ndarray:
    """Rows whose phrase contains ``term`` as a whole word (the README's rule)."""
    pattern = re.compile(r"\b" + term + r"\b", re.UNICODE | re.IGNORECASE)
    return np.fromiter((pattern.search(p) is not None for p in phrases), dtype=bool,
                       count=len(phrases))


@pytest.fixture(scope="module")
def madlibs(madlibs_dir):
    scored = pd.read_csv(madlibs_dir / "intersectional_madlibs_scored.csv")
    words = pd.read_csv(madlibs_dir / "words.csv")
    published = pd.read_csv(madlibs_dir / "unitary_results_2019.csv", index_col=0)
    terms = words.loc[words["type"] == "identity", "word"].tolist()
    subgroups = pd.DataFrame({term: term_column(scored["phrase"], term) for term in terms})
    labels = (scored["toxicity"] == "toxic").to_numpy()
    return {"scored": scored, "labels": labels, "subgroups": subgroups, "terms": terms,
            "published": published.set_index("subgroup")}


@pytest.fixture(scope="module")
def tables(madlibs):
    """bias_metrics for every identity term, per model (one call each)."""
    out = {}
    for model in MODELS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            out[model] = fastbias.bias_metrics(madlibs["labels"], madlibs["scored"][model],
                                               madlibs["subgroups"])
    return out


def test_data_is_as_described(madlibs):
    assert len(madlibs["scored"]) == 30_240
    assert madlibs["labels"].sum() == 15_120
    assert len(madlibs["terms"]) == 51
    assert len(madlibs["published"]) == 12
    # the README's whole-word rule: "trans" is not "transgender", "american" is in "african american"
    subgroups = madlibs["subgroups"]
    assert not (subgroups["trans"] & subgroups["transgender"]).any()
    assert (subgroups["american"] | ~subgroups["african american"]).all()


@pytest.mark.parametrize("model", MODELS)
def test_reproduces_published_2019_numbers(madlibs, tables, model):
    table = tables[model]
    published = madlibs["published"]
    assert set(published.index) <= set(table.index)
    for subgroup, row in published.iterrows():
        assert table.loc[subgroup, "subgroup_size"] == row["subset_size"], subgroup
        for ours, theirs in PUBLISHED_COLUMN.items():
            expected = row[f"{model}_{theirs}"]
            actual = table.loc[subgroup, ours]
            assert abs(actual - expected) <= PUBLISHED_TOL, (subgroup, ours, actual, expected)


@pytest.mark.parametrize("model", MODELS)
def test_every_term_matches_sklearn_scipy(madlibs, tables, model):
    """All 51 terms (not only the published 12) against the sklearn/scipy loop."""
    table = tables[model]
    y = madlibs["labels"]
    s = madlibs["scored"][model].to_numpy()
    for term in madlibs["terms"]:
        g = madlibs["subgroups"][term].to_numpy()
        expected = sklearn_scipy_metrics(y, s, g)
        for metric, value in expected.items():
            actual = table.loc[term, metric]
            if np.isnan(value):
                assert np.isnan(actual), (term, metric)
            else:
                assert abs(actual - value) <= 1e-12, (term, metric, actual, value)
    assert abs(table.attrs["overall_auc"] - roc_auc_score(y, s)) <= 1e-12
    assert fastbias.overall_auc(y, s) == table.attrs["overall_auc"]


def test_intersections_match_sklearn_scipy(madlibs):
    """Intersections (the AND of two term columns), e.g. "black gay"."""
    subgroups = madlibs["subgroups"]
    pairs = [("black", "gay"), ("white", "lesbian"), ("asian", "trans"), ("american", "queer")]
    intersections = {f"{a} {b}": (subgroups[a] & subgroups[b]).to_numpy() for a, b in pairs}
    assert all(mask.any() for mask in intersections.values())
    y = madlibs["labels"]
    for model in MODELS:
        s = madlibs["scored"][model].to_numpy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            table = fastbias.bias_metrics(y, s, intersections)
        for name, g in intersections.items():
            for metric, value in sklearn_scipy_metrics(y, s, g).items():
                actual = table.loc[name, metric]
                assert (np.isnan(actual) and np.isnan(value)) or abs(actual - value) <= 1e-12, \
                    (model, name, metric)


def test_every_pair_of_terms_from_one_sweep(madlibs):
    """``intersections=2`` on all 51 terms: exactly the pairs that occur with both classes,
    each equal to sklearn/scipy on the AND of its two columns (e.g. "gay & black")."""
    import itertools

    subgroups = madlibs["subgroups"]
    y = madlibs["labels"]
    s = madlibs["scored"]["TOXICITY@6"].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        table = fastbias.bias_metrics(y, s, subgroups, intersections=2)
    expected = []
    for a, b in itertools.combinations(madlibs["terms"], 2):
        g = (subgroups[a] & subgroups[b]).to_numpy()
        if (g & y).any() and (g & ~y).any():
            expected.append((f"{a} & {b}", g))
    assert list(table.index) == madlibs["terms"] + [name for name, _ in expected]
    assert "gay & black" in table.index and len(expected) > 100  # in the order of words.csv
    for name, g in expected:
        for metric, value in sklearn_scipy_metrics(y, s, g).items():
            assert abs(table.loc[name, metric] - value) <= 1e-12, (name, metric)
