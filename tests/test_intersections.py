"""Intersections (``intersections=2|3``): each row equals the metrics of the AND of its columns.

Every expected value is an exact pair count (tests/reference.py) over a mask
built here with numpy (``&`` of the columns), never by fastbias.
"""
import itertools
import warnings

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.prepare.memberships import (
    intersections_of,
    prepare_memberships,
    with_intersections,
)
from tests.reference import brute_force_metrics

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
CELLS = ["subgroup_negatives", "subgroup_positives", "background_negatives",
         "background_positives"]


def random_data(seed, n=300, k=4, density=0.35, nan_share=0.0):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.4
    s = rng.integers(0, 6, n) / 5  # heavy ties
    w = rng.integers(1, 4, n).astype(float)
    columns = {}
    for j in range(k):
        col = (rng.random(n) < density).astype(float)
        col[rng.random(n) < nan_share] = np.nan  # each column its own unannotated rows
        columns[f"id{j}"] = col
    return y, s, w, pd.DataFrame(columns)


def expected_rows(y, s, groups, order, min_size, w=None, exclude=False):
    """{name: (cells, metrics)} for every combination kept, by brute force."""
    names = list(groups.columns)
    out = {}
    for r in range(2, order + 1):
        for combo in itertools.combinations(range(len(names)), r):
            values = groups.iloc[:, list(combo)].to_numpy()
            member = np.all(values >= 0.5, axis=1)
            n_neg, n_pos = int(np.sum(member & ~y)), int(np.sum(member & y))
            if n_neg < min_size or n_pos < min_size:
                continue
            kept = ~np.isnan(values).any(axis=1) if exclude else np.ones(len(y), bool)
            yk, sk, mk = y[kept], s[kept], member[kept]
            cells = [int(np.sum(mk & ~yk)), int(np.sum(mk & yk)), int(np.sum(~mk & ~yk)),
                     int(np.sum(~mk & yk))]
            out[" & ".join(names[j] for j in combo)] = (
                cells, brute_force_metrics(yk, sk, mk, None if w is None else w[kept]))
    return out


def check_table(table, expected, base_names):
    names = list(table.index)
    assert names[:len(base_names)] == base_names
    assert names[len(base_names):] == list(expected)  # exactly the kept ones, in order
    for name, (cells, metrics) in expected.items():
        assert table.loc[name, CELLS].astype(int).tolist() == cells, name
        for metric, value in metrics.items():
            got = float(table.loc[name, metric])
            if np.isnan(value):
                assert np.isnan(got), (name, metric)
            else:
                assert got == pytest.approx(value, rel=1e-12, abs=1e-15), (name, metric)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("order", [2, 3])
@pytest.mark.parametrize("weighted", [False, True])
def test_bias_metrics_intersections_equal_the_and_of_the_columns(seed, order, weighted):
    y, s, w, groups = random_data(seed, k=5)
    w = w if weighted else None
    min_size = 1 + seed % 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = fastbias.bias_metrics(y, s, groups.astype(bool), sample_weight=w,
                                      intersections=order, min_subgroup_size=min_size)
        alone = fastbias.bias_metrics(y, s, groups.astype(bool), sample_weight=w)
    expected = expected_rows(y, s, groups, order, min_size, w)
    assert len(expected) > 3  # the data has intersections on both sides of min_size
    check_table(table, expected, list(groups.columns))
    # the subgroups' own rows are unchanged by the intersections added
    pd.testing.assert_frame_equal(table.iloc[:groups.shape[1]], alone)


def test_dense_array_and_dict_inputs_give_the_same_intersections():
    y, s, _, groups = random_data(7, k=4)
    matrix = groups.to_numpy().astype(bool)
    by_array = fastbias.bias_metrics(y, s, matrix, intersections=2)
    by_dict = fastbias.bias_metrics(y, s, {f"subgroup_{j}": matrix[:, j] for j in range(4)},
                                    intersections=2)
    pd.testing.assert_frame_equal(by_array, by_dict)
    assert "subgroup_0 & subgroup_1" in by_array.index


@pytest.mark.parametrize("missing", ["background", "exclude"])
@pytest.mark.parametrize("weighted", [False, True])
def test_evaluate_intersections_with_unannotated_rows(missing, weighted):
    y, s, w, groups = random_data(3, n=400, k=4, nan_share=0.2)
    df = groups.assign(y=y, s=s, w=w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.evaluate(df, label="y", scores="s", subgroups=list(groups.columns),
                                missing_subgroup=missing, intersections=3,
                                sample_weight="w" if weighted else None)
    table = res.for_model()
    expected = expected_rows(y, s, groups, 3, 1, w if weighted else None,
                             exclude=missing == "exclude")
    check_table(table, expected, list(groups.columns))
    assert res.subgroups == list(table.index)
    assert res.settings["intersections"] == 3


def test_evaluate_many_models_and_omitted_rows():
    y, s, _, groups = random_data(5, n=500, k=3)
    s2 = s[::-1].copy()
    s2[:40] = np.nan
    df = groups.assign(y=y, a=s, b=s2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.evaluate(df, label="y", scores=["a", "b"], subgroups=list(groups.columns),
                                intersections=2, nan_policy="omit")
    for model, scores in (("a", s), ("b", s2)):
        kept = ~np.isnan(scores)
        expected = expected_rows(y[kept], scores[kept], groups[kept].reset_index(drop=True),
                                 2, 1)
        check_table(res.for_model(model), expected, list(groups.columns))


def test_the_first_call_in_numpy_builds_the_same_memberships():
    y, _, _, groups = random_data(11, k=5)
    rows = [np.flatnonzero(groups[c].to_numpy() >= 0.5) for c in groups.columns]
    compiled = with_intersections(prepare_memberships(y, rows, list(groups.columns)), 3)
    in_numpy = with_intersections(prepare_memberships(y, rows, list(groups.columns), False), 3,
                                  compiled=False)
    assert compiled.names == in_numpy.names
    for field in ("identity_rows", "row_ptr", "row_groups"):
        assert np.array_equal(getattr(compiled, field), getattr(in_numpy, field))


def test_rows_in_many_subgroups_and_at_the_edges():
    """A row in every subgroup, rows in exactly 2 and 3 (the last pair and triple), one-class
    intersections (dropped) and a subgroup of two rows."""
    n, k = 40, 6
    member = np.zeros((n, k), dtype=bool)
    member[0] = True                     # row 0 in all six
    member[1, [0, 5]] = True             # the last pair index
    member[2, [3, 4, 5]] = True          # the last triple
    member[3:20, 1] = member[3:20, 2] = True
    member[:, 4] = False
    member[2, 4] = True                  # g4: rows 0 and 2 only
    y = np.arange(n) % 2 == 1
    rows = [np.flatnonzero(member[:, j]) for j in range(k)]
    m = prepare_memberships(y, rows, [f"g{j}" for j in range(k)])
    combos, combo_rows = intersections_of(m, 3, min_size=1)
    want = []
    for r in (2, 3):
        for c in itertools.combinations(range(k), r):
            x = np.flatnonzero(member[:, list(c)].all(axis=1))
            if (~y[x]).sum() >= 1 and y[x].sum() >= 1:
                want.append((c, x))
    assert combos == [c for c, _ in want]
    for (_, x), got in zip(want, combo_rows):
        assert np.array_equal(x, got)
    # min_size counts each class: with 9 of each only (1, 2) is kept
    combos, _ = intersections_of(m, 3, min_size=9)
    assert combos == [(1, 2)]


@pytest.mark.parametrize("value", [1, 4, 0, True, 2.0, "2", [2]])
def test_bad_intersections_are_named(value):
    y, s, _, groups = random_data(1)
    with pytest.raises(ValueError, match=r"intersections must be None, 2 .* or 3"):
        fastbias.bias_metrics(y, s, groups.astype(bool), intersections=value)


@pytest.mark.parametrize("value", [0, -1, 1.5, True])
def test_bad_min_subgroup_size_is_named(value):
    y, s, _, groups = random_data(1)
    df = groups.assign(y=y, s=s)
    with pytest.raises(ValueError, match=r"min_subgroup_size must be an int >= 1"):
        fastbias.evaluate(df, label="y", scores="s", subgroups=list(groups.columns),
                          intersections=2, min_subgroup_size=value)


def test_a_column_named_like_an_intersection_is_an_error():
    y, s, _, groups = random_data(2, k=2)
    df = groups.astype(bool)
    df["id0 & id1"] = df["id0"] & df["id1"]
    with pytest.raises(ValueError, match=r"'id0 & id1' appears twice"):
        fastbias.bias_metrics(y, s, df, intersections=2)


def test_cli_report_with_intersections(tmp_path):
    """`fastbias report --intersections 2`: the CSV holds the pairs with the values of the API,
    the HTML report (score distributions of the worst rows included) is written."""
    pytest.importorskip("matplotlib")
    from fastbias.cli import main

    y, s, _, groups = random_data(4, n=600, k=3, nan_share=0.1)
    data = groups.assign(y=y.astype(int), s=s)
    data.to_csv(tmp_path / "d.csv", index=False)
    out_csv, out_html = tmp_path / "r.csv", tmp_path / "r.html"
    status = main(["report", str(tmp_path / "d.csv"), "--label", "y", "--scores", "s",
                   "--subgroups", "id0", "id1", "id2", "--intersections", "2",
                   "--min-subgroup-size", "3", "--missing-subgroup", "exclude", "-q",
                   "--out", str(out_csv), "--out", str(out_html)])
    assert status == 0
    table = pd.read_csv(out_csv).set_index("subgroup")
    expected = expected_rows(y, s, groups, 2, 3, exclude=True)
    assert list(table.index) == ["id0", "id1", "id2", *expected]
    for name, (cells, metrics) in expected.items():
        for metric, value in metrics.items():
            assert table.loc[name, metric] == pytest.approx(value, rel=1e-9)
    html = out_html.read_text()
    assert "id0 &amp; id1" in html


@pytest.mark.parametrize("argument", [["--intersections", "4"], ["--min-subgroup-size", "0"]])
def test_cli_refuses_bad_intersection_options(argument, tmp_path, capsys):
    from fastbias.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["report", str(tmp_path / "d.csv"), "--label", "y", "--scores", "s",
              "--subgroups", "a", *argument])
    assert exc.value.code == 2
    assert argument[0] in capsys.readouterr().err


def test_bias_evaluator_intersections_on_folds():
    y, s, _, groups = random_data(9, n=800, k=3)
    masks = groups.astype(bool)
    ev = fastbias.BiasEvaluator(y, masks, intersections=2, min_subgroup_size=5)
    table = ev.metrics(s)
    expected = expected_rows(y, s, groups, 2, 5)
    check_table(table, expected, list(groups.columns))
    fold = np.arange(0, 800, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        on_fold = ev.metrics(s[fold], index=fold)
    # the fold keeps the rows chosen on all data, with its own values
    assert list(on_fold.index) == list(table.index)
    fold_expected = expected_rows(y[fold], s[fold], groups.iloc[fold].reset_index(drop=True),
                                  2, 1)
    for name in expected:
        if name in fold_expected:
            cells, metrics = fold_expected[name]
            assert on_fold.loc[name, CELLS].astype(int).tolist() == cells
            assert float(on_fold.loc[name, "bpsn_auc"]) == pytest.approx(metrics["bpsn_auc"])


@pytest.mark.parametrize("ci", ["delong", "bernstein", "bootstrap"])
def test_intervals_of_an_intersection_are_those_of_its_and_column(ci):
    """An intersection row's interval equals the interval of a column holding the AND."""
    y, s, _, groups = random_data(6, n=400, k=3)
    masks = groups.astype(bool)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = fastbias.bias_metrics(y, s, masks, intersections=2, ci=ci, n_boot=50,
                                      random_state=1)
        for a, b in itertools.combinations(masks.columns, 2):
            name = f"{a} & {b}"
            if name not in table.index:
                continue
            alone = fastbias.bias_metrics(y, s, {name: (masks[a] & masks[b]).to_numpy()},
                                          ci=ci, n_boot=50, random_state=1)
            columns = [c for c in alone.columns if c.endswith(("_low", "_high"))]
            assert columns
            if ci == "bootstrap":
                # replicates resample every row: the intervals differ from the AND column's
                # but are there, finite, and ordered
                low = table.loc[name, [c for c in columns if c.endswith("_low")]].to_numpy(float)
                high = table.loc[name, [c for c in columns if c.endswith("_high")]].to_numpy(float)
                assert np.isfinite(low).all() and (low <= high).all()
                continue
            pd.testing.assert_series_equal(table.loc[name, columns], alone.loc[name, columns])


def test_the_final_metric_stays_over_the_subgroups():
    """Intersections are extra rows: the competition's final metric ignores them everywhere,
    the worst-subgroup scores include them."""
    y, s, _, groups = random_data(12, n=800, k=4)
    masks = groups.astype(bool)
    s[(masks["id0"] & masks["id1"] & ~y).to_numpy()] = 1.0  # a model unfair to id0 & id1
    df = groups.assign(y=y, s=s)
    plain = fastbias.bias_metrics(y, s, masks)
    want = fastbias.final_metric(plain)
    with_pairs = fastbias.bias_metrics(y, s, masks, intersections=2)
    assert len(with_pairs) > len(plain)
    assert fastbias.final_metric(with_pairs) == want
    res = fastbias.evaluate(df, label="y", scores="s", subgroups=list(groups.columns),
                            intersections=2)
    assert float(res.final_metric().iloc[0]) == want
    assert fastbias.final_metric(res.for_model()) == want
    report = fastbias.BiasReport.from_result(df, res)
    assert float(report.final_metrics().iloc[0]) == want
    ev = fastbias.BiasEvaluator(y, masks, intersections=2)
    assert ev.final_metric(s) == pytest.approx(want, rel=1e-15, abs=0)
    assert ev.score(s, "min_bpsn_auc") == float(with_pairs["bpsn_auc"].min())
    assert ev.score(s, "min_bpsn_auc") < float(plain["bpsn_auc"].min())  # a pair is worst here
    only_pairs = with_pairs[with_pairs.index.str.contains(" & ")]
    with pytest.raises(ValueError, match="only intersections"):
        fastbias.final_metric(only_pairs)


def test_the_report_says_how_many_rows_are_intersections():
    y, s, _, groups = random_data(13, n=600, k=3)
    df = groups.assign(y=y, s=s)
    res = fastbias.evaluate(df, label="y", scores="s", subgroups=list(groups.columns),
                            intersections=2, min_subgroup_size=2)
    n_pairs = len(res.subgroups) - 3
    assert n_pairs >= 2
    html = fastbias.BiasReport.from_result(df, res).to_html()
    assert (f"3 and {n_pairs} intersections (pairs with at least 2 rows of each class; the "
            f"final metric is over the 3)") in html


@pytest.mark.parametrize("seed", range(4))
def test_combination_codes_follow_the_rules_row_by_row(seed):
    """The out-of-core paths' intersection codes against a per-row reading of the rules:
    -1 when any part is unannotated, else 1 when every part is a member, else 0; rows
    fully annotated, unannotated and partly annotated, pairs and triples, some chosen."""
    from itertools import combinations

    from fastbias.prepare.encoded import with_combination_codes
    from fastbias.sweep.chunks import _chunk_universes

    rng = np.random.default_rng(seed)
    n, k = 300, 5
    codes = (rng.random((n, k)) < 0.4).astype(np.int8)
    codes[rng.random((n, k)) < 0.15] = -1            # partly annotated rows
    codes[rng.random(n) < 0.2] = -1                   # rows annotated for nothing
    codes[rng.random(n) < 0.2] = 1                    # rows in every subgroup
    every = list(combinations(range(k), 2)) + list(combinations(range(k), 3))
    chosen = [c for c in every if rng.random() < 0.6]
    out = with_combination_codes(codes, chosen)
    assert out.shape == (n, k + len(chosen)) and out.dtype == np.int8
    np.testing.assert_array_equal(out[:, :k], codes)
    for t, combo in enumerate(chosen):
        for i in range(n):
            parts = [int(codes[i, j]) for j in combo]
            expected = -1 if min(parts) < 0 else int(all(p == 1 for p in parts))
            assert out[i, k + t] == expected, (i, combo, parts)
    # the universes of a chunk: subgroups with the same unannotated rows share one
    universes = _chunk_universes(out)
    seen = sorted(j for _, members in universes for j in members)
    assert seen == list(range(out.shape[1]))
    for kept, members in universes:
        for j in members:
            expected_kept = np.flatnonzero(out[:, j] >= 0)
            if kept is None:
                assert expected_kept.shape[0] == n
            else:
                np.testing.assert_array_equal(kept, expected_kept)


def test_the_reports_figures_rank_the_identities_and_leave_intersections_to_their_section():
    """With pairs of identities, the small intersections (extreme AUCs from few rows) would
    fill the heatmaps' worst rows: the figures rank the identities alone, say how many
    intersections there are and where, and the intersections keep their own section."""
    pytest.importorskip("matplotlib")
    y, s, _, groups = random_data(14, n=800, k=4)
    df = groups.assign(y=y, s=s)
    res = fastbias.evaluate(df, label="y", scores="s", subgroups=list(groups.columns),
                            intersections=2, min_subgroup_size=2)
    members = res.settings["intersection_members"]
    assert len(members) >= 3
    report = fastbias.BiasReport.from_result(df, res)
    identities = [g for g in report.worst_subgroups() if g not in members]
    assert sorted(identities) == sorted(groups.columns)
    figures = {key: (caption, fig) for key, caption, fig in report.figures(max_subgroups=3)}
    caption, fig = figures["aucs"]
    assert (f"the 3 worst of 4 identities (the {len(members)} intersections: in their own "
            f"section)") in caption
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]  # (the heatmap's rows)
    assert sorted(labels) == sorted(identities[:3]), labels
    assert '<h2 id="intersections">' in report.to_html(max_subgroups=3)
    # without intersections nothing changes: subgroups, all of them
    plain = fastbias.BiasReport.from_result(df, fastbias.evaluate(
        df, label="y", scores="s", subgroups=list(groups.columns)))
    assert "all 4 subgroups" in plain.figures()[0][1]
