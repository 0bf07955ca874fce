"""An independent review's tests (2026-11-27) of the thirty-sixth session's changes
(ColumnReading, draw_seed, visible names, labels). Every expected value comes from an
independent reference (sklearn, brute force), never from fastbias itself.

Found by review (each failed before its fix): a CSV text label whose positive class is
written as a number ("0" beside "ok", ``--positive 0``), read in several batches in memory
or streamed, was refused as three labels. Weighted rows tied in score, shuffled, drew other
subsets (now drawn in one order, by weight). The others pin properties that held."""
import contextlib
import html
import io
import itertools
import json
import os
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

sys.path.insert(0, os.path.dirname(__file__))
from _fuzz_harness import cli_streaming  # noqa: E402

from tests.test_first_call import cold, compiling  # noqa: E402,F401 (the suite's fixtures)


def _text_label_file(tmp_path, positive_text, negative_text):
    """A CSV whose label is text; the positives come first so that the first rows (a batch)
    hold only the positive value."""
    rng = np.random.default_rng(0)
    n = 3000
    y = np.sort(rng.random(n) < 0.4)[::-1].copy()  # positives first
    s = np.round(rng.random(n) * 0.5 + 0.4 * y, 3)
    g = rng.random(n) < 0.3
    path = tmp_path / "data.csv"
    pd.DataFrame({"label": np.where(y, positive_text, negative_text), "score": s,
                  "g": g.astype(int)}).to_csv(path, index=False)
    return path, roc_auc_score(y[g], s[g]), int(y.sum())


def _cli_json(path, positive, tmp_path, stream_batch=None):
    import fastbias.cli as cli

    out = tmp_path / f"out{stream_batch}.json"
    err = io.StringIO()
    with cli_streaming(stream_batch) as extra, contextlib.redirect_stderr(err), \
            contextlib.redirect_stdout(io.StringIO()):
        status = cli.main(["report", str(path), "--label", "label", "--scores", "score",
                           "--subgroups", "g", "--positive", positive, "--out", str(out),
                           "--force", "--progress", "never", *extra])
    return status, err.getvalue(), (json.loads(out.read_text()) if status == 0 else None)


# ---------------------------------------------------------------------------------------
# (1) ColumnReading: a CSV text label whose positive class is written as a number
# ---------------------------------------------------------------------------------------

def test_text_label_numeric_positive_single_batch_is_exact(tmp_path):
    # holds: labels "0" (positive) / "ok", --positive 0, a file read in one batch
    path, ref, npos = _text_label_file(tmp_path, "0", "ok")
    status, err, out = _cli_json(path, "0", tmp_path)
    assert status == 0, err
    assert out["n_positives"] == npos
    assert out["models"][0]["subgroups"][0]["subgroup_auc"] == pytest.approx(ref, abs=1e-12)


def test_text_label_numeric_positive_in_memory_many_batches(tmp_path, monkeypatch):
    # Found by review: the same file read in memory in several batches (over CSV_CHUNK_ROWS =
    # 250,000 rows; simulated by a smaller chunk) is refused: "label column 'label' has 3
    # distinct values ('0', '0', 'ok' ...)" -- the refusal commit e1e1d38 says it removed.
    # _column_reading (fastbias/cli.py) reads the label as text only when --positive is not a
    # number, so a batch of only "0" reads as int 0 and the next as the text "0".
    # Correct: the exact Subgroup AUC, as for the one-batch read.
    import fastbias.cli as cli

    monkeypatch.setattr(cli, "CSV_CHUNK_ROWS", 1000)
    path, ref, npos = _text_label_file(tmp_path, "0", "ok")
    status, err, out = _cli_json(path, "0", tmp_path)
    assert status == 0, err
    assert out["n_positives"] == npos
    assert out["models"][0]["subgroups"][0]["subgroup_auc"] == pytest.approx(ref, abs=1e-12)


@pytest.mark.parametrize("positive_text,positive", [("0", "0"), ("1.0", "1.0")])
def test_text_label_numeric_positive_streamed(tmp_path, positive_text, positive):
    # Found by review: streamed, the file the in-memory report evaluates exactly was refused as
    # three labels ([0, '0', 'ok']): the first batch's "0" read as a number, later batches'
    # as text (same cause as above: the "one rule" of ColumnReading keeps the label numeric
    # where --positive looks like a number). Correct: the same exact result as in memory.
    path, ref, npos = _text_label_file(tmp_path, positive_text, "ok")
    status, err, out = _cli_json(path, positive, tmp_path, stream_batch=500)
    assert status == 0, err
    assert out["n_positives"] == npos
    assert out["models"][0]["subgroups"][0]["subgroup_auc"] == pytest.approx(ref, abs=1e-12)


@pytest.mark.parametrize("pos_text,neg_text,positive", [
    ("toxic", "0", "toxic"), (" toxic", "ok", " toxic"), ("None", "ok", "None"),
    ("True", "False", "True"), ("true", "false", "True")])
@pytest.mark.parametrize("stream", [None, 500])
def test_text_label_in_memory_and_streamed_exact(tmp_path, pos_text, neg_text, positive,
                                                 stream):
    # holds: text positives, edge spaces, "None", booleans: exact both ways
    path, ref, npos = _text_label_file(tmp_path, pos_text, neg_text)
    status, err, out = _cli_json(path, positive, tmp_path, stream_batch=stream)
    assert status == 0, err
    assert out["n_positives"] == npos
    assert out["models"][0]["subgroups"][0]["subgroup_auc"] == pytest.approx(ref, abs=1e-12)


# ---------------------------------------------------------------------------------------
# (6) draw_seed: the drawn permutation tests
# ---------------------------------------------------------------------------------------

def _pvalues(y, s, g, w=None):
    import fastbias

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = fastbias.bias_metrics(y, s, g, sample_weight=w, significance="holm")
    return table.filter(like="_pvalue").to_numpy()


def _tied_data(seed=1, n=400):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.5
    s = np.round(rng.random(n) * 4) / 4 + 0.1 * y  # few distinct scores: many ties
    g = np.zeros((n, 2), bool)
    g[:40, 0] = True
    g[20:70, 1] = True
    w = rng.integers(1, 4, n).astype(float)
    return y, s, g, w, rng.permutation(n)


def test_unweighted_drawn_pvalues_do_not_depend_on_row_order_or_neighbours():
    # holds: same rows in another order, or a subgroup evaluated alone: same p-values
    y, s, g, _, perm = _tied_data()
    base = _pvalues(y, s, g)
    np.testing.assert_array_equal(base, _pvalues(y[perm], s[perm], g[perm]))
    np.testing.assert_array_equal(base[:1], _pvalues(y, s, g[:, :1]))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_weighted_tied_drawn_pvalues_do_not_depend_on_row_order(seed):
    # The review found that weighted rows tied in score, shuffled, gave other drawn p-values
    # (e.g. 0.571 against 0.625): they were drawn in the order given. Rows tied in score are
    # now drawn in one order (by weight), so a shuffle gives the same p-values exactly.
    y, s, g, w, perm = _tied_data(seed)
    a = _pvalues(y, s, g, w)
    assert np.isfinite(a).sum() >= 6
    np.testing.assert_array_equal(a, _pvalues(y[perm], s[perm], g[perm], w[perm]))


def test_weighted_tied_drawn_pvalues_alike_in_the_first_call_tier(compiling):  # noqa: F811
    # the numpy tier (kernels still compiling) makes the rows it draws from as the kernels
    # do: a shuffle of weighted tied rows draws the same p-values there too
    y, s, g, w, perm = _tied_data(4)
    a = _pvalues(y, s, g, w)
    np.testing.assert_array_equal(a, _pvalues(y[perm], s[perm], g[perm], w[perm]))


def test_weighted_untied_pvalues_do_not_depend_on_row_order():
    # holds: without ties the weighted p-values are order-free
    rng = np.random.default_rng(1)
    n = 600
    y = rng.random(n) < 0.5
    s = rng.random(n) + 0.1 * y
    g = np.zeros((n, 1), bool)
    g[:40, 0] = True
    w = rng.integers(1, 4, n).astype(float)
    perm = rng.permutation(n)
    np.testing.assert_array_equal(_pvalues(y, s, g, w),
                                  _pvalues(y[perm], s[perm], g[perm], w[perm]))


# ---------------------------------------------------------------------------------------
# (4) names shown: no two alike
# ---------------------------------------------------------------------------------------

def test_name_cell_and_spreadsheet_cell_are_one_to_one():
    # holds: brute force over short names of an alphabet of escapes, spaces and backslashes
    from fastbias.reports.plain import name_cell, spreadsheet_cell

    alphabet = ["a", " ", "\\", "x", "2", "0", "\t", "\xa0", "5", "c", "\u202e"]
    seen = {}
    for length in range(1, 5):
        for chars in itertools.product(alphabet, repeat=length):
            name = "".join(chars)
            shown = name_cell(name)
            assert seen.setdefault(shown, name) == name, (name, seen[shown], shown)
            assert "\t" not in shown and "\u202e" not in shown and shown == shown.strip()
    seen = {}
    for length in range(1, 4):
        for chars in itertools.product(["=", "'", "a", "+", " ", "\t"], repeat=length):
            name = "".join(chars)
            assert seen.setdefault(spreadsheet_cell(name), name) == name


def test_html_names_render_apart():
    # holds: "x  y" and "x \xa0y" (space, no-break space) render differently in the HTML
    from fastbias.reports.report import _html_name

    names = ["x  y", "x \xa0y", "a ", "a\\x20", "a\xa0"]
    rendered = [html.unescape(_html_name(n)) for n in names]
    assert len(set(rendered)) == len(names)


# ---------------------------------------------------------------------------------------
# (7) labels: the value named as "the third"; (2) sklearn pos_label
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("values,pos_label,third", [
    (["ok", "maybe", "toxic"], "toxic", "maybe"),
    (["toxic", "ok", "maybe"], "toxic", "maybe"),
    (["ok", "toxic", "maybe", "x"], "toxic", "maybe"),
    (["a", "b", "c"], "zzz", "c")])
def test_third_value_named(values, pos_label, third):
    from fastbias.validate.values import binary_labels

    with pytest.raises(ValueError) as info:
        binary_labels(np.array(values, dtype=object), "y_true", pos_label=pos_label)
    assert f"the third, {third!r}" in str(info.value)
    assert str(info.value).count(repr(third)) >= 1


@pytest.mark.parametrize("method", ["decision_function", "predict_proba", "predict"])
def test_positive_class_scores_refuses_unknown_pos_label(method):
    from sklearn.linear_model import LogisticRegression

    from fastbias.sklearn import positive_class_scores

    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    model = LogisticRegression().fit(X, np.array(["neg", "neg", "pos", "pos"]))
    with pytest.raises(ValueError, match="posx"):
        positive_class_scores(model, X, response_method=method, pos_label="posx")
    # and the named class gives its own scores (reference: sklearn's probabilities)
    if method == "predict_proba":
        got = positive_class_scores(model, X, response_method=method, pos_label="neg")
        np.testing.assert_allclose(got, model.predict_proba(X)[:, 0])
