"""Regression tests: inputs that once gave plausible wrong numbers now give the exact
number or a clear error naming the argument (issue "Never silently wrong").

Each expected value comes from an independent reference (brute force, exact
rationals, sklearn), never from fastbias itself.
"""
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias._validation import UndefinedMetricWarning
from tests.reference import brute_force_metrics, pair_probability

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]


def quietly(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return function(*args, **kwargs)


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(12)
    n = 300
    return pd.DataFrame({"y": rng.random(n) < 0.4, "s": rng.integers(0, 30, n) / 30,
                         "w": rng.uniform(0.5, 2.0, n), "g": rng.random(n) < 0.3,
                         "h": rng.random(n) < 0.5},
                        index=pd.Index(rng.permutation(n) + 1000, name="comment_id"))


def expected_table(df, groups=("g", "h"), weights=None):
    y, s = df["y"].to_numpy(), df["s"].to_numpy()
    w = None if weights is None else np.asarray(weights, dtype=float)
    return {g: brute_force_metrics(y, s, df[g].to_numpy(), w) for g in groups}


def assert_table(table, expected):
    for name, values in expected.items():
        for metric in METRICS:
            got, want = table.loc[name, metric], values[metric]
            assert (np.isnan(got) and np.isnan(want)) or abs(got - want) <= 1e-12, \
                (name, metric, got, want)


# ------------------------------------------------------------------ pandas indexes

def test_bias_metrics_refuses_subgroups_from_another_row_order(frame):
    shuffled = frame.sample(frac=1, random_state=3)
    with pytest.raises(ValueError, match="y_true and subgroups are pandas objects with "
                                         "different indexes"):
        fastbias.bias_metrics(shuffled["y"], shuffled["s"], frame[["g", "h"]])
    # the fix the message gives: align one like the other
    table = quietly(fastbias.bias_metrics, shuffled["y"], shuffled["s"],
                    frame[["g", "h"]].reindex(shuffled.index))
    assert_table(table, expected_table(shuffled))


def test_bias_metrics_takes_aligned_pandas_inputs_and_plain_arrays(frame):
    table = quietly(fastbias.bias_metrics, frame["y"], frame["s"], frame[["g", "h"]],
                    sample_weight=frame["w"])
    assert_table(table, expected_table(frame, weights=frame["w"]))
    table = quietly(fastbias.bias_metrics, frame["y"].to_numpy(), frame["s"],
                    {"g": frame["g"].to_numpy(), "h": frame["h"]})
    assert_table(table, expected_table(frame))


def test_dict_of_series_is_checked_column_by_column(frame):
    other = frame.sample(frac=1, random_state=1)
    with pytest.raises(ValueError, match=r"subgroups\['h'\]"):
        fastbias.bias_metrics(frame["y"], frame["s"], {"g": frame["g"], "h": other["h"]})


def test_sample_weight_series_must_follow_the_rows(frame):
    shuffled_weights = frame["w"].sample(frac=1, random_state=5)
    with pytest.raises(ValueError, match="y_true and sample_weight"):
        fastbias.bias_metrics(frame["y"], frame["s"], frame[["g"]], sample_weight=shuffled_weights)
    with pytest.raises(ValueError, match="df and sample_weight"):
        fastbias.evaluate(frame, label="y", scores="s", subgroups=["g"],
                          sample_weight=shuffled_weights)
    res = quietly(fastbias.evaluate, frame, label="y", scores="s", subgroups=["g", "h"],
                  sample_weight=frame["w"])
    assert_table(res.for_model(), expected_table(frame, weights=frame["w"]))


def test_evaluator_scores_must_carry_the_evaluators_rows(frame):
    evaluator = fastbias.BiasEvaluator(frame["y"], frame[["g", "h"]])
    shuffled = frame["s"].sample(frac=1, random_state=2)
    with pytest.raises(ValueError, match="the evaluator's rows .* and y_score"):
        evaluator.metrics(shuffled)
    assert_table(quietly(evaluator.metrics, frame["s"]), expected_table(frame))
    assert_table(quietly(evaluator.metrics, frame["s"].to_numpy()), expected_table(frame))
    # a fold: the scores of the rows at `index`, labelled as those rows
    fold = np.arange(0, len(frame), 3)
    part = frame.iloc[fold]
    assert_table(quietly(evaluator.metrics, part["s"], index=fold), expected_table(part))
    with pytest.raises(ValueError, match="the evaluator's rows at index"):
        evaluator.metrics(part["s"].sample(frac=1, random_state=0), index=fold)
    with pytest.raises(ValueError, match="score_matrix"):
        evaluator.metrics_many(frame[["s"]].sample(frac=1, random_state=0))


def test_routed_subgroups_in_another_order_than_x_are_refused(frame):
    sklearn = pytest.importorskip("sklearn")
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import KFold, cross_val_score

    from fastbias.sklearn import make_bias_scorer

    X = frame[["s"]]
    y = frame["y"]
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = make_bias_scorer("min_bpsn_auc")
        kwargs = dict(scoring=scorer, cv=KFold(3))
        good = cross_val_score(LogisticRegression(), X, y,
                               params={"subgroups": frame[["g", "h"]]}, **kwargs)
        assert np.all((good >= 0) & (good <= 1))
        with pytest.raises(ValueError, match="different indexes"):
            cross_val_score(LogisticRegression(), X, y, error_score="raise",
                            params={"subgroups": frame[["g", "h"]].sort_index()}, **kwargs)


def test_interval_and_aggregate_entry_points_check_indexes(frame):
    shuffled = frame.sample(frac=1, random_state=9)
    with pytest.raises(ValueError, match="different indexes"):
        fastbias.delong_paired_test(frame["y"], frame["s"], shuffled["s"])
    with pytest.raises(ValueError, match="different indexes"):
        fastbias.pinned_auc(frame["y"], frame["s"], shuffled[["g"]])
    with pytest.raises(ValueError, match="cost and group"):
        fastbias.bernstein_interval(frame["s"], shuffled["g"].astype(int) * 2 - 1)


# ------------------------------------------------------------------ AEG rounding

def test_aeg_near_zero_is_correctly_rounded_at_millions_of_rows():
    # two score values; background and subgroup negatives split almost alike, so the gap is
    # about -1e-7 and `0.5 - rounded ratio` would lose its last digits
    bg0, bg1, g0, g1 = 2_000_000, 2_000_000, 1_999_999, 2_000_001
    y = np.zeros(bg0 + bg1 + g0 + g1 + 2, dtype=bool)
    y[-2:] = True  # two positives so that the table is well defined
    s = np.concatenate([np.zeros(bg0), np.ones(bg1), np.zeros(g0), np.ones(g1), [0.0, 1.0]])
    member = np.concatenate([np.zeros(bg0 + bg1, bool), np.ones(g0 + g1, bool), [True, False]])
    table = quietly(fastbias.bias_metrics, y, s.astype(np.float32), {"g": member})
    background, subgroup = bg0 + bg1, g0 + g1
    # P(background > subgroup) + 1/2 P(tie), exact
    p = Fraction(2 * bg1 * g0 + bg0 * g0 + bg1 * g1, 2 * background * subgroup)
    exact = Fraction(1, 2) - p
    assert table.loc["g", "negative_aeg"] == float(exact)
    assert 0.5 - float(p) != float(exact)  # the old way really would round wrongly here


def test_every_metric_is_the_correctly_rounded_count_ratio():
    rng = np.random.default_rng(4)
    n = 3000
    y = rng.random(n) < 0.5
    s = rng.integers(0, 7, n).astype(np.float64)
    g = rng.random(n) < 0.5
    table = quietly(fastbias.bias_metrics, y, s, {"g": g})
    want = brute_force_metrics(y, s, g)  # exact rationals, rounded once
    for metric in METRICS:
        assert table.loc["g", metric] == want[metric], metric
    assert table.attrs["overall_auc"] == pair_probability(s[y], s[~y])


# ------------------------------------------------------------------ reports and the CLI

@pytest.fixture(scope="module")
def two_models():
    """Two models whose worst subgroups differ: model_a is bad on g0, model_b on g3."""
    rng = np.random.default_rng(8)
    n = 4000
    y = rng.random(n) < 0.4
    groups = {f"g{k}": rng.random(n) < 0.2 for k in range(6)}
    noise = rng.normal(0, 1, n)
    a = y + noise + 1.5 * (groups["g0"] & ~y)  # g0's negatives scored high by model_a
    b = y + noise + 1.5 * (groups["g3"] & ~y)
    return pd.DataFrame({"label": y, "model_a": a, "model_b": b, **groups})


def test_each_models_worst_block_is_its_own(two_models):
    report = fastbias.bias_report(two_models, label="label", scores=["model_a", "model_b"],
                                  subgroups=[f"g{k}" for k in range(6)])
    text = report.to_text(max_subgroups=1)
    blocks = text.split("\n\n")
    assert blocks[0].splitlines()[3].split()[0] == "g0"
    assert blocks[1].splitlines()[3].split()[0] == "g3"
    for model, worst in (("model_a", "g0"), ("model_b", "g3")):
        table = report.result.for_model(model)
        lowest = table[["subgroup_auc", "bpsn_auc", "bnsp_auc"]].min(axis=1)
        assert lowest.idxmin() == worst  # the reference: the model's own lowest AUC
    page = report.to_html()
    a_table = page.split('data-model="model_a"')[1].split("</table>")[0]
    b_table = page.split('data-model="model_b"')[1].split("</table>")[0]
    assert a_table.index(">g0<") < a_table.index(">g3<")
    assert b_table.index(">g3<") < b_table.index(">g0<")


def test_cli_refuses_a_third_label_value_with_positive(tmp_path, capsys, two_models):
    from fastbias.cli import main

    df = two_models.assign(verdict=np.where(two_models["label"], "toxic", "fine"))
    df.loc[5, "verdict"] = "Toxic"  # other casing
    df.loc[9, "verdict"] = "unknown"
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    status = main(["report", str(path), "--label", "verdict", "--positive", "toxic", "--scores",
                   "model_a", "--subgroups", "g0", "--quiet"])
    err = capsys.readouterr().err
    assert status == 1
    assert "label column 'verdict' has 4 distinct values" in err
    assert "'Toxic'" in err and "'unknown'" in err and "--positive" in err


def test_cli_positive_matches_by_value_and_the_report_states_the_rule(tmp_path, two_models):
    from fastbias.cli import main

    df = two_models.assign(verdict=np.where(two_models["label"], "toxic", "fine"),
                           flag=two_models["label"].astype(int))
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    want = brute_force_metrics(df["label"].to_numpy(), df["model_a"].to_numpy(),
                               df["g0"].to_numpy())
    for label, positive in (("verdict", "toxic"), ("flag", "1"), ("label", "true")):
        out = tmp_path / f"{label}.html"
        out_json = tmp_path / f"{label}.json"
        assert main(["report", str(path), "--label", label, "--positive", positive, "--scores",
                     "model_a", "--subgroups", "g0", "--out", str(out), "--out", str(out_json),
                     "--quiet"]) == 0
        import json

        row = json.loads(out_json.read_text())["models"][0]["subgroups"][0]
        for metric in METRICS:
            assert abs(row[metric] - want[metric]) <= 1e-12, (label, metric)
        page = out.read_text()
        assert "positive if &ge;" not in page.split('class="settings"')[1].split("</table>")[0]
        assert "positive if =" in page
