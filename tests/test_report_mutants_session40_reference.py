"""A mutation audit of the report layer (fastbias/reports/report.py, fastbias/tables/result.py):
an independent review's tests (2026-11-28, fortieth session). Each pins a statement the report
makes against a reference computed here (brute-force pair counts with fractions.Fraction,
sklearn's roc_auc_score, hand counts of the table), never against fastbias' own output on
another path; each docstring names the hand mutants it kills. Of the eight mutants run against
the whole of the report tests, six were killed and two survived (a one-row cell's undefined
reason said "= 0"; the text table's zero-width mark on every interval): killed here. No
defect was found in the code itself."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import fastbias

from .test_report_statements_reference import _reference  # (pair counts in fractions)

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
AUCS = METRICS[:3]
AEGS = METRICS[3:]
SUBGROUPS = ["gc", "ga", "gb"]  # (not sorted: the order given must be kept)
MODELS = ["zeta", "alpha"]  # (not sorted either)


def _data():
    rng = np.random.default_rng(12)
    n = 48
    y = (rng.random(n) < 0.45).astype(int)
    ga = rng.random(n) < 0.35
    gb = rng.random(n) < 0.35
    gc = (rng.random(n) < 0.4) & (y == 0)  # one-class: three metrics undefined
    gc[np.flatnonzero(y == 0)[:2]] = True
    df = pd.DataFrame({"y": y, "ga": ga, "gb": gb, "gc": gc})
    df["zeta"] = np.round(rng.random(n) + 0.5 * y, 2)
    df["alpha"] = np.round(rng.random(n) + 0.3 * y + 0.45 * ga - 0.3 * gb, 2)
    return df


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


@pytest.fixture(scope="module")
def data():
    return _data()


@pytest.fixture(scope="module")
def report(data):
    return _quiet(fastbias.bias_report, data, label="y", scores=MODELS, subgroups=SUBGROUPS)


def _refs(df, model):
    return {g: _reference(df["y"], df[model], df[g]) for g in SUBGROUPS}


def test_summary_extremes_and_undefined_count_match_brute_force(data, report):
    """Lowest AUC (value, first subgroup/metric in table order, ties), largest |AEG| (signed
    value, where, ties) and the undefined count of each model, from pair counts."""
    summary = report.summary()
    for model in MODELS:
        ref = _refs(data, model)
        aucs = [(g, m, ref[g][m]) for g in SUBGROUPS for m in AUCS if ref[g][m] is not None]
        low = min(v for _, _, v in aucs)
        first = next((g, m) for g, m, v in aucs if v == low)
        row = summary.loc[model]
        assert row["lowest_auc"] == pytest.approx(float(low), abs=1e-12)
        assert (row["lowest_auc_subgroup"], row["lowest_auc_metric"]) == first
        assert row["lowest_auc_ties"] == sum(v == low for _, _, v in aucs) - 1
        aegs = [(g, m, ref[g][m]) for g in SUBGROUPS for m in AEGS if ref[g][m] is not None]
        big = max(abs(v) for _, _, v in aegs)
        g, m, v = next(t for t in aegs if abs(t[2]) == big)
        assert row["largest_abs_aeg"] == pytest.approx(float(v), abs=1e-12)
        assert (row["largest_aeg_subgroup"], row["largest_aeg_metric"]) == (g, m)
        assert row["largest_aeg_ties"] == sum(abs(t[2]) == big for t in aegs) - 1
        assert row["undefined_values"] == sum(ref[g][m] is None for g in SUBGROUPS
                                              for m in METRICS)


def test_undefined_reason_names_only_the_empty_cell():
    """A subgroup of one negative and no positive: its Subgroup AUC is undefined because the
    subgroup's positives are empty (0 rows), not its negatives (1 row). Kills M06 (a cell of
    one row called empty: ``int(row[c]) <= 1``) and M40 (the reason's branches swapped)."""
    df = pd.DataFrame({"y": [0, 0, 1, 1, 0, 1], "s": [.1, .2, .3, .4, .5, .6],
                       "g": [1, 0, 0, 0, 0, 0]})
    report = _quiet(fastbias.bias_report, df, label="y", scores="s", subgroups=["g"])
    cells = report.undefined_cells()
    # hand count: sub- = 1, sub+ = 0, bg- = 2, bg+ = 3: subgroup AUC, BNSP and positive AEG
    assert sorted(cells["metric"]) == sorted(["subgroup_auc", "bnsp_auc", "positive_aeg"])
    reasons = dict(zip(cells["metric"], cells["reason"]))
    assert reasons["subgroup_auc"] == ("it compares subgroup negatives with subgroup "
                                       "positives, and subgroup_positives = 0")
    assert reasons["bnsp_auc"] == ("it compares background negatives with subgroup "
                                   "positives, and subgroup_positives = 0")


def test_text_says_nothing_was_cut_when_every_subgroup_is_shown(data, report):
    """to_text(max_subgroups=3) of 3 subgroups shows every row: no "(3 worst of 3 ...)" note,
    and the n/a count is not said to include "rows not shown". With max_subgroups=2 both are
    said (1 of the 3 rows is left out). Kills M10 (``max_subgroups <= n``) and M11."""
    full = report.to_text(max_subgroups=3)
    assert "worst of" not in full
    assert "those not shown included" not in full
    n_undefined = sum(v is None for m in MODELS for r in _refs(data, m).values()
                      for v in r.values())
    assert f"n/a: {n_undefined} undefined value(s):" in full
    cut = report.to_text(max_subgroups=2)
    assert "(2 worst of 3 subgroups shown for each model" in cut
    assert f"n/a: {n_undefined} undefined value(s) in all the rows, those not shown included" \
        in cut


def _power_mean(values, p=-5.0):
    return float(np.mean(np.power(np.asarray(values, dtype=float), p)) ** (1.0 / p))


def test_final_metric_undefined_propagates_to_every_output(data, report):
    """gc is one-class, so each model has undefined AUCs: the final metric (default
    undefined="propagate") is NaN in summary() and to_frame(); final_metrics("omit") is
    0.25 * overall AUC + 0.75 * the mean of the power means (p=-5) of the defined values,
    computed here from pair counts. Kills M18 (to_frame's final metric the omit one) and
    M35 (final_metrics ignoring ``undefined``)."""
    frame = report.to_frame()
    assert frame["final_metric"].isna().all()
    assert report.summary()["final_metric"].isna().all()
    omit = report.final_metrics("omit")
    for model in MODELS:
        ref = _refs(data, model)
        overall = roc_auc_score(data["y"], data[model])
        means = [_power_mean([float(ref[g][m]) for g in SUBGROUPS if ref[g][m] is not None])
                 for m in AUCS]
        assert omit[model] == pytest.approx(0.25 * overall + 0.75 * np.mean(means), abs=1e-12)


def test_text_gives_the_omit_value_only_where_defined(data, report):
    """The text's header for a model whose final metric is n/a adds "(X without the n/a
    AUCs)" with X the omit value computed here; where every AUC is n/a nothing is added.
    Kills M37 (the note made even where the omitted value is n/a: "nan without ...")."""
    text = report.to_text()
    for model in MODELS:
        ref = _refs(data, model)
        overall = roc_auc_score(data["y"], data[model])
        means = [_power_mean([float(ref[g][m]) for g in SUBGROUPS if ref[g][m] is not None])
                 for m in AUCS]
        assert f"({0.25 * overall + 0.75 * np.mean(means):.4f} without the n/a AUCs)" in text
    one = pd.DataFrame({"y": [0, 0, 1, 1], "s": [.1, .4, .3, .8], "g": [1, 1, 0, 0]})
    only = _quiet(fastbias.bias_report, one, label="y", scores="s", subgroups=["g"])
    assert "without the n/a AUCs" not in only.to_text()
    assert "nan" not in only.to_text()


def test_for_model_carries_its_own_overall_auc(data):
    """for_model(m).attrs["overall_auc"] is m's overall AUC (sklearn), for the second model
    too. Kills R01 (the first model's overall AUC on every model's table)."""
    res = _quiet(fastbias.evaluate, data, label="y", scores=MODELS, subgroups=SUBGROUPS)
    for model in MODELS:
        assert res.for_model(model).attrs["overall_auc"] == pytest.approx(
            roc_auc_score(data["y"], data[model]), abs=1e-12)
    with pytest.raises(ValueError, match="several models"):
        res.for_model()


def test_wide_keeps_the_given_order_and_values(data):
    """wide(): index the subgroups and columns the models in the order given (neither
    sorted), each cell the pair-count value. Kills R04 and R09 (sorted models/subgroups)."""
    res = _quiet(fastbias.evaluate, data, label="y", scores=MODELS, subgroups=SUBGROUPS)
    wide = res.wide(["bpsn_auc"])
    assert list(wide.index) == SUBGROUPS
    assert list(wide.columns) == [("bpsn_auc", m) for m in MODELS]
    for model in MODELS:
        ref = _refs(data, model)
        for g in SUBGROUPS:
            assert wide.at[g, ("bpsn_auc", model)] == pytest.approx(float(ref[g]["bpsn_auc"]),
                                                                   abs=1e-12)


def test_text_marks_only_zero_width_intervals(data):
    """With ci="delong" on this data each defined value's interval has low < high (checked
    here on the table), so the text shows no zero-width mark (degree sign) and no
    zero-width note. Kills M08 (the mark put on every interval: ``low <= high``)."""
    report = _quiet(fastbias.bias_report, data, label="y", scores=MODELS, subgroups=SUBGROUPS,
                    ci="delong")
    table = report.result.table
    shown = 0
    for m in METRICS:
        if f"{m}_low" in table.columns:
            defined = table[m].notna() & table[f"{m}_low"].notna()
            assert (table.loc[defined, f"{m}_low"] < table.loc[defined, f"{m}_high"]).all()
            shown += int(defined.sum())
    assert shown > 0
    text = report.to_text()
    assert "\u00b0" not in text
    assert "zero-width interval" not in text
