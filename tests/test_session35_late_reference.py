"""An independent review's tests (2026-11-27): a mutation audit of the thirty-fifth session's
later changes (JSON lines' number columns, NUMBER_TEXT/first_non_numeric,
refuse_numbers_as_text, BiasEvaluator._many's alignment check, plot_subgroup_scores' inputs,
the CLI's third-label position, BrokenPipeError and argparse hint): 40 mutants, 25 killed by
the suite, 8 survivors killed here, 7 equivalent. Found by review (failed before its fix): a
column of numbers beside numbers written as text, under a subgroup threshold, became one
subgroup per value in bias_metrics.

Expected values come from sklearn, numpy, pandas' CSV reader and hand counts, never from
fastbias.
"""
from __future__ import annotations

import io
import os
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import fastbias
from tests.test_session35_diff_reference import _cli, _jsonl


def _base(n=10):
    return [{"label": i % 2, "s": i / 10, "g": i % 3 == 0} for i in range(n)]


def _quiet(f):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f()


# ------------------------------------------------------------------ JSON lines' numbers

@pytest.mark.parametrize("text", [".5", "5.", "-.25", "1E-1"])
def test_jsonl_score_text_that_pandas_reads_as_a_number_is_that_number(tmp_path, capsys,
                                                                       monkeypatch, text):
    # Reference: pandas' CSV reader reads the text as a float (the definition NUMBER_TEXT
    # claims), and sklearn gives the AUC with float(text) in row 3. Kills a NUMBER_TEXT
    # without the '\.\d+' alternative (".5" then refused as text).
    assert pd.read_csv(io.StringIO(f"s\n0.5\n{text}\n"))["s"].dtype.kind == "f"
    rows = _base()
    rows[3]["s"] = text
    _jsonl(tmp_path / "d.jsonl", rows)
    rc, out, err = _cli(capsys, monkeypatch, tmp_path, "report", "d.jsonl", "--label", "label",
                        "--scores", "s", "--subgroups", "g", "-q")
    assert rc == 0, err
    y = [i % 2 for i in range(10)]
    s = [i / 10 for i in range(10)]
    s[3] = float(text)
    assert f"overall AUC {roc_auc_score(y, s):.4f}" in out, out


@pytest.mark.parametrize("text", ["\u0661", "\u0663.5", "\uff11"])
def test_jsonl_score_in_other_scripts_digits_is_refused_by_name(tmp_path, capsys, monkeypatch,
                                                               text):
    # Python's float() reads Arabic-Indic / fullwidth digits; pandas' CSV reader does not
    # (reference below). Right: refused, naming the value and row 3. Kills NUMBER_TEXT
    # without re.ASCII (then '\u0661' is silently the score 1.0).
    assert pd.read_csv(io.StringIO(f"s\n0.5\n{text}\n"))["s"].dtype.kind not in "fiu"
    rows = _base()
    rows[3]["s"] = text
    _jsonl(tmp_path / "d.jsonl", rows)
    rc, out, err = _cli(capsys, monkeypatch, tmp_path, "report", "d.jsonl", "--label", "label",
                        "--scores", "s", "--subgroups", "g", "-q")
    assert rc == 1, out
    assert f"{text!r} at position 3" in err, err


def test_jsonl_weight_written_as_text_is_its_number(tmp_path, capsys, monkeypatch):
    # A weight "3" (text) in a JSON-lines file is the weight 3: weighted AUC by sklearn.
    rows = _base(12)
    for i, r in enumerate(rows):
        r["w"] = 1 + i % 3
    rows[4]["w"] = "3"  # 1 + 4 % 3 = 2 before: now 3
    _jsonl(tmp_path / "d.jsonl", rows)
    rc, out, err = _cli(capsys, monkeypatch, tmp_path, "report", "d.jsonl", "--label", "label",
                        "--scores", "s", "--subgroups", "g", "--weight", "w", "-q")
    assert rc == 0, err
    y = [i % 2 for i in range(12)]
    s = [i / 10 for i in range(12)]
    w = [1 + i % 3 for i in range(12)]
    w[4] = 3
    assert f"overall AUC {roc_auc_score(y, s, sample_weight=w):.4f}" in out, out


def test_jsonl_weight_true_is_refused_not_one(tmp_path, capsys, monkeypatch):
    # JSON true as a weight: pandas would read it as 1.0 beside numbers. Right: refused,
    # naming True and row 2.
    rows = _base()
    for r in rows:
        r["w"] = 2.0
    rows[2]["w"] = True
    _jsonl(tmp_path / "d.jsonl", rows)
    rc, out, err = _cli(capsys, monkeypatch, tmp_path, "report", "d.jsonl", "--label", "label",
                        "--scores", "s", "--subgroups", "g", "--weight", "w", "-q")
    assert rc == 1, out
    assert "True at position 2" in err, err


# ------------------------------------------------------------------ refuse_numbers_as_text

Y6 = np.array([0, 1, 0, 1, 0, 1])
S6 = np.array([.1, .2, .3, .4, .5, .6])


def test_text_beside_number_text_stays_categories_under_a_threshold():
    # ["a", "0.2", ...] is a column of categories (one is not a number): under a threshold it
    # is not refused, one subgroup per value, sizes counted by hand. Kills all() -> any().
    g = pd.Series(["a", "0.2", "a", "0.2", "0.2", "a"], dtype=object)
    table = _quiet(lambda: fastbias.bias_metrics(Y6, S6, {"g": g}, subgroup_threshold=0.5))
    assert dict(zip(table.index, table["subgroup_size"])) == {"g=0.2": 3, "g=a": 3}
    # subgroup AUC of g=a: rows 0, 2, 5 -> negatives .1, .3 vs positive .6: 1.0 by hand
    assert table.loc["g=a", "subgroup_auc"] == roc_auc_score([0, 0, 1], [.1, .3, .6]) == 1.0


def test_numbers_and_number_text_under_a_threshold_are_not_one_subgroup_per_value():
    # Found by review: an object column holding only numbers, some written as numbers and some
    # as text ([0.7, "0.2", ...], e.g. a column assembled from two sources), with
    # subgroup_threshold=0.5 gave subgroups "g=0.2", "g=0.7" (the threshold silently not
    # applied), the very case refused when every value is text: refused so too.
    g = pd.Series([0.7, "0.2", 0.7, "0.2", 0.7, "0.2"], dtype=object)
    with pytest.raises(TypeError, match=r"subgroup 'g' holds numbers written as text \(e.g. "
                                        r"'0.2' at position 1\) and subgroup_threshold=0.5"):
        fastbias.bias_metrics(Y6, S6, {"g": g}, subgroup_threshold=0.5)


def test_all_missing_text_categorical_under_a_threshold_is_not_an_index_error():
    # A Categorical of text categories with no value at all (an unannotated column), under a
    # threshold: not "numbers written as text" (there are none). Right: what the same column
    # gives without the threshold, never an IndexError. Kills dropping 'len(values) == 0'.
    g = pd.Series(pd.Categorical([None] * 6, categories=["0.2", "0.7"]))

    def call(**kw):
        try:
            return _quiet(lambda: fastbias.bias_metrics(Y6, S6, {"g": g}, **kw))
        except (TypeError, ValueError) as exc:
            return type(exc)
    plain = call()
    thresholded = call(subgroup_threshold=0.5)
    if isinstance(plain, type):
        assert thresholded is plain
    else:
        assert not isinstance(thresholded, type), thresholded
        assert list(thresholded.index) == list(plain.index)
        assert list(thresholded["subgroup_size"]) == list(plain["subgroup_size"])


def test_number_text_refusal_names_the_first_present_value_after_missing_ones():
    # Two missing values first: the value named is '0.7' at position 2 (hand).
    g = pd.Series([None, np.nan, "0.7", "0.2", "0.7", "0.2"], dtype=object)
    with pytest.raises(TypeError, match=r"'0.7' at position 2"):
        fastbias.bias_metrics(Y6, S6, {"g": g}, subgroup_threshold=0.5)


# ------------------------------------------------------------------ BiasEvaluator._many

def test_many_accepts_dataframe_and_dict_of_arrays_equal_sklearn():
    rng = np.random.default_rng(5)
    n = 60
    y = np.arange(n) % 2
    g = np.arange(n) % 3 == 0
    a, b = rng.random(n), rng.random(n)
    ev = fastbias.BiasEvaluator(y, {"g": g})
    shuffled = rng.permutation(n)
    for matrix in ({"a": a, "b": b}, pd.DataFrame({"a": a, "b": b}, index=shuffled),
                   {"a": pd.Series(a), "b": pd.Series(b, index=pd.Index(list(range(n))))}):
        table = _quiet(lambda: ev.scores_many(matrix, ["overall_auc"]))
        assert table.loc["a", "overall_auc"] == pytest.approx(roc_auc_score(y, a), abs=1e-12)
        assert table.loc["b", "overall_auc"] == pytest.approx(roc_auc_score(y, b), abs=1e-12)


# ------------------------------------------------------------------ plot_subgroup_scores

def _plot(*args, **kwargs):
    pytest.importorskip("matplotlib")
    from fastbias.plotting import plot_subgroup_scores

    return plot_subgroup_scores(*args, **kwargs)


def _curves(fig):
    return {p.get_label(): np.asarray(p.get_data().values) for p in fig.axes[0].patches}


def _density(values, bins):
    counts, _ = np.histogram(values, bins=bins, range=(0.0, 1.0))
    return counts / (counts.sum() * (1.0 / bins))


def test_plot_subgroup_threshold_other_than_half_is_applied():
    # member fractions 0.3 / 0.1 with subgroup_threshold=0.2: members are the 0.3 rows. The
    # drawn densities equal numpy's histogram of each group's scores. Kills a threshold fixed
    # at 0.5 (then no member, and no subgroup curve).
    y = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    s = np.array([.05, .95, .3, .7, .15, .85, .45, .55])
    frac = np.array([.3, .3, .1, .1, .3, .1, .1, .3])
    fig = _plot(y, s, frac, bins=4, subgroup_threshold=0.2)
    curves = _curves(fig)
    g = frac >= 0.2
    yb = y.astype(bool)
    for label, mask in [("subgroup negatives", g & ~yb), ("subgroup positives", g & yb),
                        ("background negatives", ~g & ~yb), ("background positives", ~g & yb)]:
        assert label in curves, sorted(curves)
        np.testing.assert_allclose(curves[label], _density(s[mask], 4))


def test_plot_pos_label_picks_the_positive_class():
    # text labels with pos_label="toxic": positives are the "toxic" rows (hand).
    y = np.array(["ok", "toxic", "ok", "toxic", "ok", "toxic"])
    s = np.array([.1, .9, .3, .6, .2, .8])
    g = np.array([True, True, True, False, False, False])
    curves = _curves(_plot(y, s, g, bins=2, pos_label="toxic"))
    np.testing.assert_allclose(curves["subgroup positives"], _density(s[[1]], 2))
    np.testing.assert_allclose(curves["subgroup negatives"], _density(s[[0, 2]], 2))
    np.testing.assert_allclose(curves["background positives"], _density(s[[3, 5]], 2))
    np.testing.assert_allclose(curves["background negatives"], _density(s[[4]], 2))


@pytest.mark.parametrize("which", ["y_score", "member"])
def test_plot_refuses_inputs_of_another_length_by_name(which):
    # bias_metrics refuses a short score or membership column naming it; so must the plot.
    y = [0, 1, 0, 1]
    s = [.1, .2, .3, .4]
    g = [True, False, True, False]
    args = {"y_score": (y, s[:3], g), "member": (y, s, g[:3])}[which]
    with pytest.raises(ValueError, match=which):
        _plot(*args, bins=2)


@pytest.mark.parametrize("bad,words", [(np.nan, "NaN"), (np.inf, "infinite")])
def test_plot_refuses_scores_that_are_not_finite(bad, words):
    # A NaN score was silently left out of the histograms (np.histogram drops it); right:
    # refused as bias_metrics does, naming y_score and position 2.
    s = [.1, .2, bad, .4]
    with pytest.raises(ValueError, match=r"y_score.*position 2"):
        _plot([0, 1, 0, 1], s, [True, False, True, False], bins=2)


@pytest.mark.parametrize("make", [lambda v: np.asarray(v, dtype=np.float16),
                                  lambda v: pd.array(v, dtype="Float64"), list])
def test_plot_accepts_what_bias_metrics_accepts(make):
    y = np.array([0, 1, 0, 1, 0, 1])
    s = np.array([.125, .875, .25, .75, .375, .625])  # exact in float16
    g = pd.array([True, True, False, False, True, False], dtype="boolean")
    curves = _curves(_plot(y, make(list(s)), g, bins=2))
    gm = np.asarray(g, dtype=bool)
    yb = y.astype(bool)
    np.testing.assert_allclose(curves["subgroup positives"], _density(s[gm & yb], 2))
    np.testing.assert_allclose(curves["background negatives"], _density(s[~gm & ~yb], 2))


# ------------------------------------------------------------------ CLI

def test_fourth_label_value_names_the_third_in_row_order(tmp_path, capsys, monkeypatch):
    # labels in row order: a, b, a, c, d, ... -> the third distinct value is 'c', first at
    # row 3 (hand). Kills 'values[-1]' (which names 'd') and is the message's own claim.
    labels = ["a", "b", "a", "c", "d", "b", "a", "b"]
    pd.DataFrame({"y": labels, "s": np.linspace(0, 1, 8),
                  "g": [1, 0] * 4}).to_csv(tmp_path / "d.csv", index=False)
    rc, out, err = _cli(capsys, monkeypatch, tmp_path, "report", "d.csv", "--label", "y",
                        "--positive", "a", "--scores", "s", "--subgroups", "g", "-q")
    assert rc == 1
    assert "4 distinct values" in err and "the third, 'c', first at position 3" in err, err


def test_unrecognized_long_option_gets_no_dash_column_hint(tmp_path, capsys, monkeypatch):
    # '--bogus' is a mistyped option, not a column named with a leading '-': the hint about
    # '--scores=-m2' does not apply. Kills widening 'unrecognized arguments: -[^-]'.
    (tmp_path / "d.csv").write_text("y,s,g\n0,0.1,1\n1,0.9,0\n")
    rc, out, err = _cli(capsys, monkeypatch, tmp_path, "report", "d.csv", "--label", "y",
                        "--scores", "s", "--subgroups", "g", "--bogus")
    assert rc == 2
    assert "--bogus" in err and "--scores=-m2" not in err, err


def test_unrecognized_single_dash_argument_gets_the_hint(tmp_path, capsys, monkeypatch):
    (tmp_path / "d.csv").write_text("y,s,-m2,g\n0,0.1,0.2,1\n1,0.9,0.8,0\n")
    rc, out, err = _cli(capsys, monkeypatch, tmp_path, "report", "d.csv", "--label", "y",
                        "--scores", "s", "-m2", "--subgroups", "g")
    assert rc == 2
    assert "--scores=-m2" in err, err


def test_stdout_closed_is_false_for_a_file_and_an_open_pipe(tmp_path, monkeypatch):
    # Only a pipe whose reader has left is "closed": a BrokenPipeError from elsewhere must
    # stay an error. Kills _stdout_closed returning True regardless.
    from fastbias import cli

    with open(tmp_path / "out.txt", "w") as f:
        monkeypatch.setattr("sys.stdout", f)
        assert cli._stdout_closed() is False
    r, w = os.pipe()
    try:
        with os.fdopen(w, "w") as f:
            monkeypatch.setattr("sys.stdout", f)
            assert cli._stdout_closed() is False
            os.close(r)
            r = None
            assert cli._stdout_closed() is True
    finally:
        if r is not None:
            os.close(r)


def test_broken_pipe_not_of_stdout_is_an_error(tmp_path, capsys, monkeypatch):
    # A BrokenPipeError raised while stdout is fine (here: pytest's capture, no real pipe)
    # comes from another pipe: status 1 and an error line, not a silent 141. Kills
    # dropping the 'if not _stdout_closed()' branch.
    from fastbias import cli

    (tmp_path / "d.csv").write_text("y,s,g\n0,0.1,1\n1,0.9,0\n")

    def broken(*args, **kwargs):
        raise BrokenPipeError(32, "Broken pipe")
    monkeypatch.setattr(cli, "read_data", broken)
    rc, out, err = _cli(capsys, monkeypatch, tmp_path, "report", "d.csv", "--label", "y",
                        "--scores", "s", "--subgroups", "g", "-q")
    assert rc == 1
    assert "fastbias: error:" in err and "Broken pipe" in err, err
