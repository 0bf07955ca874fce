"""``pos_label`` out of core: two-valued labels of any type in ``evaluate_csv``,
``evaluate_parquet`` and ``fastbias.dask.evaluate``, each piece checked as it is read and the
values of all the pieces together before any row is counted."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.streaming import evaluate_csv, evaluate_parquet
from fastbias.validate.values import LabelClasses

from .reference import brute_force_metrics

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
SUBGROUPS = ["g0", "g1", "g2"]


def _frame(n, seed, classes=("toxic", "None")):
    """Tied scores, identity columns with missing values, labels written as two text classes
    (the negative one "None": a class, not a missing value)."""
    rng = np.random.default_rng(seed)
    positive = rng.random(n) < 0.35
    df = pd.DataFrame({"y": np.where(positive, classes[0], classes[1]),
                       "s": np.round(rng.random(n), 1), "t": rng.random(n),
                       "w": rng.integers(1, 5, n) / 4.0})
    for j, name in enumerate(SUBGROUPS):
        g = (rng.random(n) < 0.3).astype(float)
        g[rng.random(n) < 0.2] = np.nan
        df[name] = g
    return df


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastbias.UndefinedMetricWarning)
        return function(*args, **kwargs)


def test_csv_text_labels_match_the_brute_force(tmp_path):
    df = _frame(90, seed=3)
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    result = _quiet(evaluate_csv, path, label="y", scores="s", subgroups=SUBGROUPS,
                    pos_label="toxic", batch_rows=7, bucket_rows=20)
    y, s = (df["y"] == "toxic").to_numpy(), df["s"].to_numpy()
    assert result.settings["pos_label"] == "toxic"
    assert result.settings["label_threshold"] is None
    for _, row in result.table.iterrows():
        expected = brute_force_metrics(y, s, df[row["subgroup"]].to_numpy() >= 0.5)
        for metric in METRICS:
            assert row[metric] == pytest.approx(expected[metric], rel=0, abs=1e-15) or (
                np.isnan(row[metric]) and np.isnan(expected[metric])), (row["subgroup"], metric)


@pytest.mark.parametrize("source", ["csv", "parquet", "dask"])
@pytest.mark.parametrize("weighted", [False, True])
def test_out_of_core_pos_label_equals_evaluate(tmp_path, source, weighted):
    """Many batches and buckets, weights, DeLong intervals and significance tests: the
    in-memory ``evaluate`` with the same ``pos_label`` (counts exact, floats to 1e-12)."""
    df = _frame(4_000, seed=11)
    kwargs = dict(label="y", scores=["s", "t"], subgroups=SUBGROUPS, pos_label="toxic",
                  missing_subgroup="exclude", sample_weight="w" if weighted else None,
                  ci="delong", significance="holm")
    expected = _quiet(fastbias.evaluate, df, **kwargs)
    if source == "csv":
        df.to_csv(tmp_path / "d.csv", index=False)
        result = _quiet(evaluate_csv, tmp_path / "d.csv", batch_rows=500, bucket_rows=1_500,
                        **kwargs)
    elif source == "parquet":
        pytest.importorskip("pyarrow")
        df.to_parquet(tmp_path / "d.parquet", row_group_size=600)
        result = _quiet(evaluate_parquet, tmp_path / "d.parquet", batch_rows=500,
                        bucket_rows=1_500, **kwargs)
    else:
        dd = pytest.importorskip("dask.dataframe")
        from fastbias.dask import evaluate as dask_evaluate

        result = _quiet(dask_evaluate, dd.from_pandas(df, npartitions=5), **kwargs)
    pd.testing.assert_frame_equal(result.table, expected.table, check_exact=False, rtol=1e-12,
                                  atol=0)
    assert result.settings["pos_label"] == "toxic"


def _assert_csv_batches_equal_evaluate(df, tmp_path):
    """``evaluate_csv`` of ``df`` in batches of 100 rows, pos_label="toxic": the table of
    ``evaluate``, exactly."""
    df.to_csv(tmp_path / "d.csv", index=False)
    result = _quiet(evaluate_csv, tmp_path / "d.csv", label="y", scores="s",
                    subgroups=SUBGROUPS, pos_label="toxic", batch_rows=100)
    expected = _quiet(fastbias.evaluate, df, label="y", scores="s", subgroups=SUBGROUPS,
                      pos_label="toxic")
    pd.testing.assert_frame_equal(result.table, expected.table, check_exact=True)


def test_pos_label_only_in_the_last_batch(tmp_path):
    """A batch without the positive class is no error: the classes are of all the rows."""
    df = _frame(1_000, seed=5)
    df["y"] = "None"
    df.loc[990:, "y"] = "toxic"
    _assert_csv_batches_equal_evaluate(df, tmp_path)


def test_a_third_value_in_a_later_batch_is_named_with_its_row(tmp_path):
    """Each batch holds only two values; all of them together hold three. The error names
    the third value and the file's row where it first occurs, before any row is counted."""
    df = _frame(1_000, seed=6)
    df.loc[:499, "y"] = np.where(df.loc[:499, "y"] == "toxic", "toxic", "None")
    df.loc[500:, "y"] = np.where(df.loc[500:, "y"] == "toxic", "toxic", "unknown")
    df.to_csv(tmp_path / "d.csv", index=False)
    first_unknown = int(np.flatnonzero(df["y"] == "unknown")[0])
    with pytest.raises(ValueError, match=(
            rf"label column 'y' has more than two distinct values \(\[.*'unknown'\]; "
            rf"'unknown' first at row {first_unknown}, in rows 500\.\.599 of .*d\.csv\)")):
        evaluate_csv(tmp_path / "d.csv", label="y", scores="s", subgroups=SUBGROUPS,
                     pos_label="toxic", batch_rows=100)


def test_a_third_value_within_one_batch_is_named_there(tmp_path):
    df = _frame(300, seed=7)
    df.loc[150, "y"] = "unknown"
    df.to_csv(tmp_path / "d.csv", index=False)
    with pytest.raises(ValueError, match=r"label column 'y' has 3 distinct values .*"
                                         r"\(in rows 100\.\.199 of .*d\.csv\)"):
        evaluate_csv(tmp_path / "d.csv", label="y", scores="s", subgroups=SUBGROUPS,
                     pos_label="toxic", batch_rows=100)


@pytest.mark.parametrize("source", ["csv", "parquet"])
def test_a_pos_label_no_row_holds_is_refused(tmp_path, source):
    df = _frame(500, seed=8)
    if source == "csv":
        df.to_csv(tmp_path / "d", index=False)
        run = evaluate_csv
    else:
        pytest.importorskip("pyarrow")
        df.to_parquet(tmp_path / "d", row_group_size=100)
        run = evaluate_parquet
    with pytest.raises(ValueError, match=r"pos_label 'Toxic' does not occur in label column "
                                         r"'y' \(its values are \['toxic', 'None'\]\)"):
        run(tmp_path / "d", label="y", scores="s", subgroups=SUBGROUPS, pos_label="Toxic",
            batch_rows=100)


def test_numbers_outside_zero_one_with_pos_label_in_parquet(tmp_path):
    """Labels 0/2: the Parquet footers' check of labels in [0, 1] does not apply to two
    classes named by pos_label."""
    pytest.importorskip("pyarrow")
    df = _frame(2_000, seed=9)
    df["y"] = np.where(df["y"] == "toxic", 2, 0)
    df.to_parquet(tmp_path / "d.parquet", row_group_size=300)
    result = _quiet(evaluate_parquet, tmp_path / "d.parquet", label="y", scores="s",
                    subgroups=SUBGROUPS, pos_label=2, batch_rows=300, bucket_rows=700)
    expected = _quiet(fastbias.evaluate, df.assign(y=df["y"] == 2), label="y", scores="s",
                      subgroups=SUBGROUPS)
    pd.testing.assert_frame_equal(result.table, expected.table, check_exact=True)
    with pytest.raises(ValueError, match=r"has values outside \[0, 1\]"):
        evaluate_parquet(tmp_path / "d.parquet", label="y", scores="s", subgroups=SUBGROUPS)


def test_dask_third_value_in_a_later_partition_with_divisions_given(tmp_path):
    """With divisions given and no weights the first pass did not run: with pos_label it
    does, so the classes of every partition are checked together."""
    dd = pytest.importorskip("dask.dataframe")
    from fastbias.dask import evaluate as dask_evaluate

    df = _frame(1_000, seed=10)
    df.loc[800:, "y"] = np.where(df.loc[800:, "y"] == "toxic", "toxic", "other")
    ddf = dd.from_pandas(df, npartitions=5)
    with pytest.raises(ValueError, match=r"'other' first at position \d+, in Dask partition 4"):
        dask_evaluate(ddf, label="y", scores="s", subgroups=SUBGROUPS,
                               pos_label="toxic", divisions=np.linspace(0, 1, 5))


def test_label_classes_join_in_order_and_keep_the_first_place():
    a = LabelClasses.of_piece(np.array([0, 0, 1]), 1, "in part A")
    b = LabelClasses.of_piece(np.array([1, 0]), 1, "in part B")
    c = LabelClasses.of_piece(np.array([0, 3, 0, 3]), 1, "in part C")
    assert a.values == ((0, "position 0, in part A"), (1, "position 2, in part A"))
    assert a.positive and b.positive and not c.positive
    joined = LabelClasses.join([None, c, a, b])
    assert joined.values == ((0, "position 0, in part C"), (3, "position 1, in part C"),
                             (1, "position 2, in part A"))
    assert joined.positive
    LabelClasses.join([a, b]).check(1, "label column 'y'")
    with pytest.raises(ValueError, match=r"\(\[0, 3, 1\]; 1 first at position 2, in part A\)"):
        joined.check(1, "label column 'y'")
    with pytest.raises(ValueError, match=r"pos_label 1 does not occur .* \[0, 3\]"):
        LabelClasses.join([c]).check(1, "label column 'y'")


def test_in_memory_pos_label_refuses_booleans_beside_numbers_and_names_a_third_value():
    """True == 1 in Python: an object label column of both read as one class pair (pandas'
    unique takes them for one value); refused, as the pieces out of core refuse it. A third
    value is named with its position."""
    df = _frame(20, seed=1)
    df["y"] = pd.Series([True, False] * 5 + [1, 0] * 5, dtype=object)
    with pytest.raises(TypeError, match=r"label column 'y' holds both booleans and numbers "
                                        r"\(True at position 0 and 1 at position 10\)"):
        fastbias.evaluate(df, label="y", scores="s", subgroups=SUBGROUPS, pos_label=True)
    df["y"] = ["toxic", "None"] * 6 + ["x"] + ["toxic"] * 7
    with pytest.raises(ValueError, match=r"3 distinct values \['toxic', 'None', 'x'\] \(the "
                                         r"third, 'x', first at position 12\)"):
        fastbias.evaluate(df, label="y", scores="s", subgroups=SUBGROUPS, pos_label="toxic")
    assert _quiet(fastbias.evaluate, df.iloc[:12], label="y", scores="s", subgroups=SUBGROUPS,
                  pos_label="toxic").settings["label_threshold"] is None


def test_csv_text_pos_label_reads_every_batch_as_text(tmp_path):
    """Classes "toxic" and "0": a batch holding only "0" read as the number 0 beside the
    text "0" of the others (three values, refused); a text pos_label reads the label as
    the file's text in every batch."""
    df = _frame(1_000, seed=12)
    df["y"] = np.where(df["y"] == "toxic", "toxic", "0")
    df.loc[:199, "y"] = "0"
    _assert_csv_batches_equal_evaluate(df, tmp_path)
