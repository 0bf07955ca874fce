"""Categorical sensitive features: one subgroup per value (``race=black``), and with several
features every combination of values that occurs (``race=black & gender=female``), as
fairlearn's ``MetricFrame`` groups rows.

Every table is checked against the same evaluation of boolean columns built here from the
values (``race == "black"``, and the AND of two), against sklearn's ``roc_auc_score`` per
group, and, where fairlearn is installed, against ``MetricFrame``.
"""
from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.metrics import METRIC_COLUMNS
from fastbias.validate.categories import MAX_CATEGORIES, category_codes
from fastbias.validate.errors import UndefinedMetricWarning
from tests.every_path import evaluate_on_every_path

from . import cli_runner

COUNTS = ["subgroup_size", "subgroup_negatives", "subgroup_positives", "background_negatives",
          "background_positives"]


def people(n=4000, seed=0, missing=0.0):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.3
    race = rng.choice(["white", "black", "asian", "latinx"], n, p=[0.5, 0.2, 0.2, 0.1])
    gender = rng.choice(["female", "male", "nonbinary"], n, p=[0.48, 0.48, 0.04])
    score = np.round(y + rng.normal(0, 1, n) + 0.3 * ((race == "black") & ~y), 1)  # ties
    df = pd.DataFrame({"y": y, "s": score, "race": race, "gender": gender,
                       "age": rng.choice([30, 18, 65], n)})
    if missing:
        df.loc[rng.random(n) < missing, "race"] = None
        df.loc[rng.random(n) < missing, "gender"] = np.nan
    return df


def boolean_columns(df, features):
    """The memberships of the features' values (and their combinations) as boolean columns,
    NaN where a value is missing: what a user would have built by hand."""
    out = {}
    singles = {}
    for feature in features:
        column = df[feature]
        values = sorted(column.dropna().unique())
        singles[feature] = values
        for v in values:
            member = (column == v).astype(float)
            member[column.isna()] = np.nan
            out[f"{feature}={v}"] = member
    if len(features) > 1:
        import itertools
        for combo in itertools.product(*(singles[f] for f in features)):
            member = np.ones(len(df))
            for f, v in zip(features, combo):
                member = member * (df[f] == v).to_numpy()
            missing = df[list(features)].isna().any(axis=1).to_numpy()
            member = np.where(missing, np.nan, member)
            name = " & ".join(f"{f}={v}" for f, v in zip(features, combo))
            out[name] = member
    return pd.DataFrame(out, index=df.index)


@pytest.mark.parametrize("policy", ["background", "exclude"])
@pytest.mark.parametrize("missing", [0.0, 0.1])
def test_one_feature_equals_its_boolean_columns(policy, missing):
    df = people(missing=missing)
    res = fastbias.evaluate(df, label="y", scores="s", sensitive_features=["race"],
                            missing_subgroup=policy).for_model()
    assert list(res.index) == ["race=asian", "race=black", "race=latinx", "race=white"]
    masks = boolean_columns(df, ["race"])
    ref = fastbias.evaluate(pd.concat([df, masks], axis=1), label="y", scores="s",
                            subgroups=list(masks.columns), missing_subgroup=policy).for_model()
    pd.testing.assert_frame_equal(res[COUNTS + METRIC_COLUMNS], ref[COUNTS + METRIC_COLUMNS])
    assert res.attrs["overall_auc"] == ref.attrs["overall_auc"]


@pytest.mark.parametrize("policy", ["background", "exclude"])
def test_two_features_add_every_combination_that_occurs(policy):
    df = people(n=6000, seed=1, missing=0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        res = fastbias.evaluate(df, label="y", scores="s", sensitive_features=["race", "gender"],
                                missing_subgroup=policy, min_subgroup_size=15)
    table = res.for_model()
    masks = boolean_columns(df, ["race", "gender"])
    ref = fastbias.evaluate(pd.concat([df, masks], axis=1), label="y", scores="s",
                            subgroups=list(masks.columns),
                            missing_subgroup=policy).for_model()
    # the combinations kept: at least 15 rows of each class, in the order of the values
    kept = [name for name in masks.columns if " & " not in name or
            (ref.loc[name, "subgroup_negatives"] >= 15 and ref.loc[name, "subgroup_positives"] >= 15)]
    assert list(table.index) == kept
    assert any(" & " in name for name in kept) and len(kept) < len(masks.columns)
    pd.testing.assert_frame_equal(table[COUNTS + METRIC_COLUMNS],
                                  ref.loc[kept, COUNTS + METRIC_COLUMNS])
    assert res.settings["sensitive_features"] == ["race", "gender"]


def test_groups_equal_sklearn_and_fairlearn():
    """The subgroup AUC of every value and combination: sklearn's roc_auc_score on the rows
    of the group, and fairlearn's MetricFrame of it where fairlearn is installed."""
    from sklearn.metrics import roc_auc_score
    df = people(n=5000, seed=2)
    table = fastbias.evaluate(df, label="y", scores="s",
                              sensitive_features=["race", "gender"]).for_model()
    for name, row in table.iterrows():
        member = np.ones(len(df), bool)
        for part in name.split(" & "):
            feature, value = part.split("=")
            member &= (df[feature] == value).to_numpy()
        assert row["subgroup_auc"] == pytest.approx(
            roc_auc_score(df["y"][member], df["s"][member]), abs=1e-15)
    fairlearn = pytest.importorskip("fairlearn.metrics")
    frame = fairlearn.MetricFrame(metrics=roc_auc_score, y_true=df["y"], y_pred=df["s"],
                                  sensitive_features=df[["race", "gender"]])
    for (race, gender), value in frame.by_group.items():
        assert table.loc[f"race={race} & gender={gender}", "subgroup_auc"] == pytest.approx(
            value, abs=1e-15)
    single = fairlearn.MetricFrame(metrics=roc_auc_score, y_true=df["y"], y_pred=df["s"],
                                   sensitive_features=df["race"])
    for race, value in single.by_group.items():
        assert table.loc[f"race={race}", "subgroup_auc"] == pytest.approx(value, abs=1e-15)


def test_value_order_and_names():
    codes = category_codes(pd.Series(pd.Categorical(["b", "a", "c", None, "a"],
                                                    categories=["c", "z", "b", "a"])), "x")
    assert codes.labels == ["x=c", "x=b", "x=a"]  # the categories' order; unused "z" left out
    assert codes.codes.tolist() == [1, 2, 0, -1, 2]
    assert category_codes(pd.Series([30, 18, 65, 18]), "age").labels == \
        ["age=18", "age=30", "age=65"]  # numbers by value
    assert category_codes(pd.Series([True, False, None], dtype=object), "flag").labels == \
        ["flag=False", "flag=True"]
    mixed = category_codes(pd.Series(["b", 10, "a", 9, b"z"], dtype=object), "m")
    assert mixed.labels == ["m=9", "m=10", "m=b'z'", "m=a", "m=b"]  # numbers by value first
    assert category_codes(pd.Series(["b", "a"], dtype="string[pyarrow]"), "p").labels == \
        ["p=a", "p=b"]


def test_refusals_name_the_column(tmp_path):
    df = people(n=300)
    df["id"] = np.arange(300).astype(str)
    with pytest.raises(ValueError, match=r"sensitive feature 'id' has .* distinct values"):
        category_codes(pd.Series(np.arange(MAX_CATEGORIES + 1)), "id")
    with pytest.raises(ValueError, match="sensitive feature 'v' holds values of different "
                                         "types that read the same, '1'"):
        category_codes(pd.Series([1, "1", 2], dtype=object), "v")
    with pytest.raises(KeyError, match="sensitive_features.*'nope'"):
        fastbias.evaluate(df, label="y", scores="s", sensitive_features=["nope"])
    df["race=black"] = (df["race"] == "black")
    with pytest.raises(ValueError, match="subgroup name 'race=black' appears twice"):
        fastbias.evaluate(df, label="y", scores="s", subgroups=["race=black"],
                          sensitive_features=["race"])
    with pytest.raises(ValueError, match="give subgroups or sensitive_features"):
        fastbias.evaluate(df, label="y", scores="s", subgroups=[])
    clash = pd.DataFrame({"y": [0, 1] * 20, "s": np.linspace(0, 1, 40),
                          "a": ["b=c", "x"] * 20, "a=b": ["c", "y"] * 20})
    with pytest.raises(ValueError, match="subgroup name 'a=b=c' appears twice"):
        fastbias.evaluate(clash, label="y", scores="s", sensitive_features=["a", "a=b"])
    clash.to_csv(tmp_path / "clash.csv", index=False)
    with pytest.raises(ValueError, match="subgroup name 'a=b=c' appears twice"):
        fastbias.evaluate_csv(tmp_path / "clash.csv", label="y", scores="s",
                              sensitive_features=["a", "a=b"])
    df.to_csv(tmp_path / "d.csv", index=False)
    with pytest.raises(ValueError, match="subgroup name 'race=black' appears twice"):
        fastbias.evaluate_csv(tmp_path / "d.csv", label="y", scores="s",
                              subgroups=["race=black"], sensitive_features=["race"])
    with pytest.raises(TypeError, match=r"subgroup column 'race' must be boolean or numeric.*"
                                        r"pass it as sensitive_features=\['race'\]"):
        fastbias.evaluate(df, label="y", scores="s", subgroups=["race"])
    with pytest.raises(TypeError, match=r"subgroup column 'race' must be boolean or numeric, "
                                        r"got dtype category \(e.g. '"):
        fastbias.evaluate(df.astype({"race": "category"}), label="y", scores="s",
                          subgroups=["race"])
    with pytest.raises(ValueError, match="intersections= combines boolean subgroups"):
        fastbias.bias_metrics(df["y"], df["s"], df[["race", "gender"]], intersections=2)


def test_final_metric_counts_the_combinations_of_features():
    """docs/sensitive_features.md: the final metric is the competition's formula over every
    group listed, the combinations of features too (they are not intersections= additions)."""
    from tests.reference import brute_force_metrics, pair_probability

    df = people(n=1500, seed=9)
    y, s = df["y"].to_numpy(), df["s"].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        res = fastbias.evaluate(df, label="y", scores="s", sensitive_features=["race", "gender"])
    table = res.for_model()
    groups = {}
    for race in sorted(df["race"].dropna().unique()):
        groups[f"race={race}"] = (df["race"] == race).to_numpy()
    for gender in sorted(df["gender"].dropna().unique()):
        groups[f"gender={gender}"] = (df["gender"] == gender).to_numpy()
    for race in sorted(df["race"].dropna().unique()):
        for gender in sorted(df["gender"].dropna().unique()):
            member = ((df["race"] == race) & (df["gender"] == gender)).to_numpy()
            if (member & y).any() and (member & ~y).any():
                groups[f"race={race} & gender={gender}"] = member
    assert sorted(table.index) == sorted(groups)
    overall = pair_probability(s[y], s[~y])
    values = {g: brute_force_metrics(y, s, member) for g, member in groups.items()}
    power_means = [np.mean([values[g][m] ** -5.0 for g in groups]) ** (-1 / 5)
                   for m in ("subgroup_auc", "bpsn_auc", "bnsp_auc")]
    expected = 0.25 * overall + 0.25 * sum(power_means)
    assert abs(res.final_metric()["s"] - expected) <= 1e-12
    singles = [g for g in groups if " & " not in g]
    power_means = [np.mean([values[g][m] ** -5.0 for g in singles]) ** (-1 / 5)
                   for m in ("subgroup_auc", "bpsn_auc", "bnsp_auc")]
    only_singles = fastbias.final_metric(table[~table.index.str.contains(" & ")], overall)
    assert abs(only_singles - (0.25 * overall + 0.25 * sum(power_means))) <= 1e-12


def test_subgroups_and_features_together_and_all_models():
    df = people(n=3000, seed=4)
    df["t"] = np.random.default_rng(4).random(len(df))
    df["is_black"] = df["race"] == "black"
    res = fastbias.evaluate(df, label="y", scores=["s", "t"], subgroups=["is_black"],
                            sensitive_features=["race"])
    table = res.for_model("t")
    assert list(table.index)[:2] == ["is_black", "race=asian"]
    pd.testing.assert_series_equal(table.loc["is_black", METRIC_COLUMNS],
                                   table.loc["race=black", METRIC_COLUMNS], check_names=False)


def test_bias_metrics_takes_a_categorical_column_as_subgroups():
    df = people(n=3000, seed=5)
    table = fastbias.bias_metrics(df["y"], df["s"], df["race"])
    masks = boolean_columns(df, ["race"]).astype(bool)
    ref = fastbias.bias_metrics(df["y"], df["s"], masks)
    pd.testing.assert_frame_equal(table[COUNTS + METRIC_COLUMNS], ref[COUNTS + METRIC_COLUMNS])
    both = fastbias.bias_metrics(df["y"], df["s"], df[["race", "gender"]])
    assert "race=black & gender=female" in both.index
    member = ((df["race"] == "black") & (df["gender"] == "female")).to_numpy()
    alone = fastbias.bias_metrics(df["y"], df["s"], {"g": member})
    pd.testing.assert_series_equal(both.loc["race=black & gender=female", METRIC_COLUMNS],
                                   alone.loc["g", METRIC_COLUMNS], check_names=False)


def test_cli_sensitive_features(tmp_path):
    df = people(n=3000, seed=6)
    df.to_csv(tmp_path / "d.csv", index=False)
    proc = cli_runner.run_cli(["report", tmp_path / "d.csv", "--label", "y", "--scores", "s",
                               "--sensitive-features", "race", "gender", "--out",
                               tmp_path / "r.csv"])
    assert proc.returncode == 0, proc.stderr
    out = pd.read_csv(tmp_path / "r.csv").set_index("subgroup")
    ref = fastbias.evaluate(df, label="y", scores="s",
                            sensitive_features=["race", "gender"]).for_model()
    assert list(out.index) == list(ref.index)
    np.testing.assert_allclose(out["bpsn_auc"], ref["bpsn_auc"], rtol=1e-12)


@pytest.mark.parametrize("policy", ["background", "exclude"])
def test_report_counts_the_rows_of_every_sensitive_group(policy, tmp_path):
    """The report's score distributions read the features as evaluate did: each group's four
    cells sum to the table's counts (missing values, combinations, both policies)."""
    from fastbias.report import BiasReport, score_histograms
    df = people(n=3000, seed=7, missing=0.1)
    res = fastbias.evaluate(df, label="y", scores="s", sensitive_features=["race", "gender"],
                            missing_subgroup=policy)
    table = res.for_model()
    histograms = score_histograms(df, res, bins=10)
    for name, row in table.iterrows():
        cells = histograms.cells("s", name)
        for cell in ("subgroup_negatives", "subgroup_positives", "background_negatives",
                     "background_positives"):
            assert int(cells[cell].sum()) == row[cell], (name, cell)
    path = tmp_path / "r.html"
    BiasReport.from_result(df, res).save(str(path))
    assert "race=black &amp; gender=female" in path.read_text()


def test_omitted_rows_and_the_evaluator_read_features_alike():
    df = people(n=3000, seed=8, missing=0.05)
    df.loc[::50, "s"] = np.nan
    with pytest.warns(fastbias.OmittedRowsWarning):
        omitted = fastbias.evaluate(df, label="y", scores="s", nan_policy="omit",
                                    sensitive_features=["race", "gender"]).for_model()
    kept = df.dropna(subset=["s"])
    ref = fastbias.evaluate(kept, label="y", scores="s",
                            sensitive_features=["race", "gender"]).for_model()
    pd.testing.assert_frame_equal(omitted[COUNTS + METRIC_COLUMNS], ref[COUNTS + METRIC_COLUMNS])
    # the evaluator (and bias_metrics) take the categorical columns as subgroups; a missing
    # value is then in no group, as under missing_subgroup="background"
    evaluator = fastbias.BiasEvaluator(kept["y"], kept[["race", "gender"]])
    table = evaluator.metrics(kept["s"])
    assert list(table.index) == list(ref.index)
    pd.testing.assert_frame_equal(table[METRIC_COLUMNS], ref[METRIC_COLUMNS])


def test_cli_needs_some_identity_columns(tmp_path, capsys):
    from fastbias.cli import main
    df = people(n=300)
    df.to_csv(tmp_path / "d.csv", index=False)
    status = main(["report", str(tmp_path / "d.csv"), "--label", "y", "--scores", "s",
                   "--progress", "never"])
    assert status == 1
    assert "give the identity columns: --subgroups" in capsys.readouterr().err


@pytest.mark.jit_heavy  # large inputs; the kernels are covered uncompiled by the small tests
def test_cli_streams_sensitive_features_to_the_in_memory_report(tmp_path, capsys, monkeypatch):
    """A file too large for --max-memory is streamed with --sensitive-features (a pass more
    finds the values): the JSON report equals the one made in memory."""
    from fastbias.cli import main
    from tests.test_bounded_memory import _four_mib_for_data
    df = people(n=40_000, seed=9, missing=0.05)
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    base = ["report", str(path), "--label", "y", "--scores", "s", "--sensitive-features",
            "race", "gender", "--missing-subgroup", "exclude", "--progress", "never"]
    assert main([*base, "--out", str(tmp_path / "memory.json")]) == 0
    capsys.readouterr()
    limit = _four_mib_for_data(monkeypatch, batch_rows=4_000)
    assert main([*base, "--out", str(tmp_path / "streamed.json"), "--max-memory",
                 str(limit)]) == 0
    err = capsys.readouterr().err
    assert "streaming it (three passes" in err
    memory, streamed = (json.loads((tmp_path / f"{n}.json").read_text())
                        for n in ("memory", "streamed"))
    assert streamed["settings"]["engine"] == "streaming"
    for report in (memory, streamed):
        report.pop("timings_s")
        report.pop("settings")
    assert streamed == memory


@pytest.mark.jit_heavy  # large inputs; the kernels are covered uncompiled by the small tests
@pytest.mark.parametrize("policy", ["background", "exclude"])
def test_out_of_core_sensitive_features_equal_evaluate(tmp_path, policy):
    df = people(n=20_000, seed=3, missing=0.05)
    kw = dict(label="y", scores="s", sensitive_features=["race", "gender"],
              missing_subgroup=policy, min_subgroup_size=20, significance="holm",
              thresholds=[0.5])
    ref, got = evaluate_on_every_path(tmp_path, df, bucket_rows=3000, npartitions=4, **kw)
    expected = ref.for_model()
    assert any(" & " in name for name in expected.index)
    for res in got:
        table = res.for_model()
        assert list(table.index) == list(expected.index)
        pd.testing.assert_frame_equal(table[COUNTS + METRIC_COLUMNS],
                                      expected[COUNTS + METRIC_COLUMNS])
        assert res.settings["sensitive_features"] == ["race", "gender"]
        # the p-values of the groups whose cells all have 30 rows or more: evaluate's
        large = expected[COUNTS[1:]].min(axis=1) >= 30
        assert large.sum() >= 5
        pvalues = [f"{m}_pvalue" for m in METRIC_COLUMNS]
        np.testing.assert_allclose(table.loc[large, pvalues], expected.loc[large, pvalues],
                                   rtol=1e-12)
        pd.testing.assert_frame_equal(res.thresholds, ref.thresholds, rtol=1e-12)


def test_out_of_core_values_are_sorted_and_found_in_every_batch(tmp_path):
    """A CSV's feature columns are read as the text in the file, alike in every batch (a zip
    code "01234" stays one, whatever a batch's values look like); values that first occur in
    the last batch are found; the values are sorted."""
    rng = np.random.default_rng(4)
    n = 6000
    df = pd.DataFrame({"y": rng.random(n) < 0.4, "s": rng.random(n),
                       "zip": rng.choice(["01234", "05678"], n)})
    df.loc[n - 50:, "zip"] = "unknown"  # only in the last batch: that batch reads as text
    df.loc[::97, "zip"] = None
    df.to_csv(tmp_path / "d.csv", index=False)
    kw = dict(label="y", scores="s", sensitive_features=["zip"])
    res = fastbias.evaluate_csv(tmp_path / "d.csv", batch_rows=1000, bucket_rows=2000, **kw)
    assert list(res.for_model().index) == ["zip=01234", "zip=05678", "zip=unknown"]
    memory = fastbias.evaluate(df, **kw)
    pd.testing.assert_frame_equal(res.for_model()[COUNTS + METRIC_COLUMNS],
                                  memory.for_model()[COUNTS + METRIC_COLUMNS])
    from fastbias.cli import main
    assert main(["report", str(tmp_path / "d.csv"), "--label", "y", "--scores", "s",
                 "--sensitive-features", "zip", "--out", str(tmp_path / "r.csv"),
                 "--progress", "never"]) == 0
    assert list(pd.read_csv(tmp_path / "r.csv")["subgroup"]) == list(res.for_model().index)


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_memberships_equal_the_rows_of_each_value_and_combination(data):
    """category_memberships against sets of rows built here: every value, every combination
    with at least min_size rows of each class, rows with a missing value in none."""
    from fastbias.prepare.memberships import category_memberships
    n = data.draw(st.integers(1, 40))
    a = data.draw(st.lists(st.sampled_from(["x", "y", "z", None]), min_size=n, max_size=n))
    b = data.draw(st.lists(st.sampled_from([1, 2, None]), min_size=n, max_size=n))
    labels = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    min_size = data.draw(st.integers(1, 3))
    features = [category_codes(pd.Series(a, dtype=object), "a"),
                category_codes(pd.Series(b, dtype=object), "b")]
    names, rows, missing, _ = category_memberships(features, labels, min_size)
    got = dict(zip(names, (r.tolist() for r in rows)))
    expected = {}
    for name, column in (("a", a), ("b", b)):
        for value in sorted({v for v in column if v is not None}):
            expected[f"{name}={value}"] = [i for i, v in enumerate(column) if v == value]
    for va in sorted({v for v in a if v is not None}):
        for vb in sorted({v for v in b if v is not None}):
            members = [i for i in range(n) if a[i] == va and b[i] == vb]
            if (labels[members].sum() >= min_size
                    and (~labels[members]).sum() >= min_size):
                expected[f"a={va} & b={vb}"] = members
    assert got == expected
    assert list(got) == list(expected)  # the documented order
    for name, unannotated in zip(names, missing):
        parts = [p.split("=")[0] for p in name.split(" & ")]
        want = np.array([any((a if p == "a" else b)[i] is None for p in parts)
                         for i in range(n)])
        assert np.array_equal(np.zeros(n, bool) if unannotated is None else unannotated, want)


def test_omitted_rows_that_hold_a_value_for_one_model_only_still_report():
    """nan_policy="omit" with models that drop different rows: a value whose rows are all
    dropped for the first model is a subgroup of the second; the report reads both."""
    from fastbias.report import BiasReport
    df = people(n=2000, seed=10)
    df["t"] = np.random.default_rng(10).random(len(df))
    df.loc[:39, "race"] = "z"
    df.loc[:39, "s"] = np.nan  # the only rows of race=z have no score for model s
    with pytest.warns(fastbias.OmittedRowsWarning):
        res = fastbias.evaluate(df, label="y", scores=["s", "t"], sensitive_features=["race"],
                                nan_policy="omit")
    assert "race=z" in res.subgroups
    report = BiasReport.from_result(df, res)
    assert int(report.histograms.cells("t", "race=z")["subgroup_negatives"].sum()
               + report.histograms.cells("t", "race=z")["subgroup_positives"].sum()) == 40


def test_the_evaluator_keeps_min_subgroup_size_and_refuses_intersections_of_categories():
    df = people(n=3000, seed=11)
    evaluator = fastbias.BiasEvaluator(df["y"], df[["race", "gender"]], min_subgroup_size=15)
    table = evaluator.metrics(df["s"])
    ref = fastbias.bias_metrics(df["y"], df["s"], df[["race", "gender"]], min_subgroup_size=15)
    assert list(table.index) == list(ref.index)
    combos = [name for name in ref.index if " & " in name]
    assert combos and (ref.loc[combos, ["subgroup_negatives", "subgroup_positives"]] >= 15).all(
        axis=None)
    with pytest.raises(ValueError, match="intersections= combines boolean subgroups"):
        fastbias.BiasEvaluator(df["y"], df[["race"]], intersections=2)


def test_out_of_core_settings_say_what_each_row_is_as_in_memory(tmp_path):
    """settings["sensitive_members"] (what a report made from the rows reads each value's and
    combination's members by) was missing out of core (found by review): a report of the
    streamed result with its DataFrame then looked for a column named "race=a"."""
    from fastbias.report import BiasReport

    rng = np.random.default_rng(0)
    n = 3_000
    df = pd.DataFrame({"y": rng.random(n) < 0.3, "s": rng.random(n),
                       "race": rng.choice(["a", "b", "c"], n), "sex": rng.choice(["f", "m"], n),
                       "g": rng.random(n) < 0.2})
    df.to_csv(tmp_path / "d.csv", index=False)
    kw = dict(label="y", scores="s", subgroups=["g"], sensitive_features=["race", "sex"],
              min_subgroup_size=5)
    expected = fastbias.evaluate(df, **kw)
    streamed = fastbias.evaluate_csv(tmp_path / "d.csv", **kw)
    assert streamed.settings["sensitive_members"] == expected.settings["sensitive_members"]
    assert streamed.settings["sensitive_members"]["race=b & sex=m"] == [
        ["race", "race=b"], ["sex", "sex=m"]]
    report = BiasReport.from_result(df, streamed)
    assert report.histograms.subgroups == BiasReport.from_result(df, expected).histograms.subgroups


def test_a_feature_missing_on_every_row_is_warned_on_every_path(tmp_path):
    """A sensitive feature with no value on any row makes no subgroup: every entry point
    says so once, naming it (it had vanished from the table without a word)."""
    rng = np.random.default_rng(5)
    n = 400
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "s": rng.random(n),
                       "race": pd.Series([None] * n, dtype=object),
                       "sex": rng.choice(["f", "m"], n)})
    with pytest.warns(UserWarning, match="sensitive feature 'race' has no value on any row") as seen:
        ref, got = evaluate_on_every_path(tmp_path, df, bucket_rows=64, npartitions=2,
                                          label="y", scores="s",
                                          sensitive_features=["race", "sex"])
    said = [w for w in seen if "no value on any row" in str(w.message)]
    assert len(said) == 1 + len(got)  # one warning per call
    assert "nor any combination" in str(said[0].message)
    assert list(ref.table["subgroup"]) == ["sex=f", "sex=m"]
    for res in got:
        assert list(res.table["subgroup"]) == ["sex=f", "sex=m"]
    # a feature with one value somewhere is not warned about
    df.loc[7, "race"] = "a"
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        res = fastbias.evaluate(df, label="y", scores="s", sensitive_features=["race", "sex"])
    assert "race=a" in list(res.table["subgroup"])


def test_the_cli_says_a_feature_missing_on_every_row(tmp_path, capsys):
    """The CLI shows the warning of a sensitive feature with no value (it passed on only the
    undefined metrics' and dropped rows' warnings; found by review)."""
    from fastbias.cli import main

    rng = np.random.default_rng(2)
    n = 200
    pd.DataFrame({"y": rng.integers(0, 2, n), "s": rng.random(n), "race": [""] * n,
                  "sex": rng.choice(["f", "m"], n)}).to_csv(tmp_path / "d.csv", index=False)
    assert main(["report", str(tmp_path / "d.csv"), "--label", "y", "--scores", "s",
                 "--sensitive-features", "race", "sex", "--progress", "never"]) == 0
    assert "warning: sensitive feature 'race' has no value on any row" in capsys.readouterr().err
