"""``pos_label`` out of core against the in-memory ``fastbias.evaluate`` and the CLI's
in-memory report: an independent review's tests (2026-11-27) of commit 0c0a0ad.

Found by review (each fails on that commit): labels read as booleans in some batches and as
numbers in others were one pair of classes (True == 1), where memory refuses the column
(CSV, and the streamed CLI's CSV and JSON lines); a third value within one batch was named
without its row; the settings' label_threshold and the streamed CLI's pos_label (1.0 for 1)
differed from memory's."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import fastbias
from fastbias.cli import main
from fastbias.streaming import evaluate_csv, evaluate_parquet

from .test_bounded_memory import _four_mib_for_data

SUBGROUPS = ["g0", "g1", "g2"]


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastbias.UndefinedMetricWarning)
        return function(*args, **kwargs)


def _frame(n, seed):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"y": rng.random(n) < 0.35, "s": np.round(rng.random(n), 1),
                       "t": rng.random(n)})
    for j, name in enumerate(SUBGROUPS):
        df[name] = (rng.random(n) < 0.3).astype(float)
    return df


def _report(path, out, *extra):
    return main(["report", str(path), "--label", "y", "--scores", "s", "t", "--subgroups",
                 *SUBGROUPS, "--out", str(out), "--progress", "never", *extra])


def _memory_then_streamed(path, tmp_path, capsys, monkeypatch, *extra):
    """(status, err, report or None) in memory, then streamed within 4 MiB."""
    out = []
    for streamed in (False, True):
        args = list(extra)
        if streamed:
            args += ["--max-memory", str(_four_mib_for_data(monkeypatch, batch_rows=4_000))]
        target = tmp_path / f"{'streamed' if streamed else 'memory'}.json"
        status = _report(path, target, *args)
        err = capsys.readouterr().err
        if streamed:
            assert "streaming it" in err, err
        out.append((status, err, json.loads(target.read_text()) if status == 0 else None))
    return out


def _labels_frame(n, seed, positive="toxic", negative="ok"):
    rng = np.random.default_rng(seed)
    pos = rng.random(n) < 0.4
    return pd.DataFrame({"y": np.where(pos, positive, negative).astype(object),
                         "s": np.round(rng.random(n), 2),
                         "g0": (rng.random(n) < 0.4).astype(float)})


K = dict(label="y", scores="s", subgroups=["g0"])


# ----------------------------------------------------------------------- found by review

def test_csv_true_false_batches_beside_one_zero_batches_are_refused_with_pos_label(tmp_path):
    """Labels written "0"/"1" in the first rows and "True"/"False" in the last: four texts.
    In memory (the file read whole) four distinct values are refused; without pos_label
    evaluate_csv refuses the boolean and numeric batches. With pos_label=1 each batch is read
    as its own type and True == 1 joins the classes: a number, silently."""
    df = _labels_frame(400, seed=0, positive="1", negative="0")
    df.loc[200:, "y"] = df.loc[200:, "y"].map({"1": "True", "0": "False"})
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    with pytest.raises(ValueError, match="distinct values"):  # the reference refuses
        fastbias.evaluate(pd.read_csv(path), pos_label=1, **K)
    with pytest.raises((ValueError, TypeError), match=r"label column 'y'"):
        evaluate_csv(path, pos_label=1, batch_rows=100, **K)


def test_cli_streamed_csv_true_false_beside_one_zero_is_refused_as_in_memory(
        tmp_path, capsys, monkeypatch):
    df = _frame(40_000, seed=1)
    y = df["y"].map({True: "1", False: "0"}).astype(object)
    y[20_000:] = df["y"][20_000:].map({True: "True", False: "False"})
    df["y"] = y
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    (m_status, m_err, _), (s_status, s_err, _) = _memory_then_streamed(
        path, tmp_path, capsys, monkeypatch, "--positive", "1")
    assert m_status == 1 and "has 4 distinct values" in m_err
    assert s_status == 1, "streamed report written where the in-memory one is refused"


def test_cli_streamed_jsonl_booleans_beside_numbers_is_refused_as_in_memory(
        tmp_path, capsys, monkeypatch):
    """JSON true/false in the first lines, 0/1 in the last: in memory 'holds both booleans
    and numbers'; streamed with --positive true, a report counting 1 as true."""
    df = _frame(40_000, seed=1)
    path = tmp_path / "d.jsonl"
    with open(path, "w") as handle:
        for i, row in enumerate(df.to_dict("records")):
            row["y"] = bool(row["y"]) if i < 20_000 else int(row["y"])
            handle.write(json.dumps(row) + "\n")
    (m_status, m_err, _), (s_status, s_err, _) = _memory_then_streamed(
        path, tmp_path, capsys, monkeypatch, "--positive", "true")
    assert m_status == 1 and "holds both booleans and numbers" in m_err
    assert s_status == 1, "streamed report written where the in-memory one is refused"


def test_a_third_value_within_one_batch_names_its_row(tmp_path):
    """Across batches the message says "'unk' first at row 331"; within one batch it names
    only the batch (rows 100..199), not the third value's row."""
    df = _labels_frame(300, seed=7)
    df.loc[150, "y"] = "unk"
    df.to_csv(tmp_path / "d.csv", index=False)
    with pytest.raises(ValueError, match=r"'unk'.*row 150\b"):
        evaluate_csv(tmp_path / "d.csv", pos_label="toxic", batch_rows=100, **K)


def test_settings_label_threshold_with_pos_label_as_in_memory(tmp_path):
    """In memory settings['label_threshold'] is 0.5 (or the one given) beside pos_label;
    out of core None: the same call's settings differ. (Another threshold than the default
    beside pos_label is refused on both now: it had been dropped without a word.)"""
    df = _labels_frame(300, seed=2)
    df.to_csv(tmp_path / "d.csv", index=False)
    for extra in ({}, {"label_threshold": 0.5}):
        expected = _quiet(fastbias.evaluate, df, pos_label="toxic", **K, **extra)
        result = _quiet(evaluate_csv, tmp_path / "d.csv", pos_label="toxic", batch_rows=100,
                        **K, **extra)
        pd.testing.assert_frame_equal(result.table, expected.table, check_exact=True)
        assert result.settings["label_threshold"] == expected.settings["label_threshold"]
    for call, data in ((fastbias.evaluate, df), (evaluate_csv, tmp_path / "d.csv")):
        with pytest.raises(ValueError, match="either pos_label or label_threshold"):
            _quiet(call, data, pos_label="toxic", **K, label_threshold=0.3)


@pytest.mark.jit_heavy  # (the CLI streaming: its kernels run compiled; too slow as Python)
def test_cli_streamed_positive_in_settings_as_in_memory(tmp_path, capsys, monkeypatch):
    """Integer labels 0/1, --positive 1: the in-memory report's settings say 1, the streamed
    one's 1.0 (read as a float whatever the column's integer type)."""
    df = _frame(40_000, seed=1)
    df["y"] = df["y"].astype(int)
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    (m_status, _, memory), (s_status, s_err, streamed) = _memory_then_streamed(
        path, tmp_path, capsys, monkeypatch, "--positive", "1")
    assert m_status == 0 and s_status == 0, s_err
    assert json.dumps(streamed["settings"]["pos_label"]) == \
        json.dumps(memory["settings"]["pos_label"])


# ------------------------------------------------------------------ pinned (pass now)

@pytest.mark.parametrize("word", ["None", "NA", "null", "nan", "N/A"])
def test_csv_missing_words_are_classes_either_way(tmp_path, word):
    df = _labels_frame(300, seed=3, negative=word)
    df.to_csv(tmp_path / "d.csv", index=False)
    for positive in ("toxic", word):
        expected = _quiet(fastbias.evaluate, df, pos_label=positive, **K)
        result = _quiet(evaluate_csv, tmp_path / "d.csv", pos_label=positive, batch_rows=70,
                        **K)
        pd.testing.assert_frame_equal(result.table, expected.table, check_exact=True)
        assert result.settings["pos_label"] == positive


@pytest.mark.parametrize("bad, expected", [
    ("", r"1 missing label value\(s\) .*first at row 250\).*in rows 200\.\.299"),
    (" toxic", r"3 distinct values \['toxic', 'ok', ' toxic'\].*in rows 200\.\.299"),
])
def test_csv_empty_field_and_whitespace_variant_are_refused(tmp_path, bad, expected):
    df = _labels_frame(400, seed=0)
    df.loc[250, "y"] = bad
    df.to_csv(tmp_path / "d.csv", index=False)
    with pytest.raises(ValueError, match=expected):
        evaluate_csv(tmp_path / "d.csv", pos_label="toxic", batch_rows=100, **K)


@pytest.mark.parametrize("source", ["csv", "parquet", "dask"])
def test_every_row_positive_gives_the_in_memory_nans(tmp_path, source):
    df = _labels_frame(300, seed=4, negative="toxic")
    expected = _quiet(fastbias.evaluate, df, pos_label="toxic", **K)
    if source == "csv":
        df.to_csv(tmp_path / "d.csv", index=False)
        result = _quiet(evaluate_csv, tmp_path / "d.csv", pos_label="toxic", batch_rows=70,
                        **K)
    elif source == "parquet":
        pytest.importorskip("pyarrow")
        df.to_parquet(tmp_path / "d.parquet", row_group_size=70)
        result = _quiet(evaluate_parquet, tmp_path / "d.parquet", pos_label="toxic",
                        batch_rows=70, **K)
    else:
        dd = pytest.importorskip("dask.dataframe")
        from fastbias.dask import evaluate as dask_evaluate
        result = _quiet(dask_evaluate, dd.from_pandas(df, npartitions=3), pos_label="toxic",
                        **K)
    pd.testing.assert_frame_equal(result.table, expected.table, check_exact=True)


@pytest.mark.parametrize("pos_label", [2, 2.0, np.float32(2), "2", True, 0])
def test_parquet_float_zero_two_labels_with_pos_label_of_other_types(tmp_path, pos_label):
    pytest.importorskip("pyarrow")
    df = _labels_frame(300, seed=5, positive=2.0, negative=0.0)
    df["y"] = df["y"].astype(float)
    df.to_parquet(tmp_path / "d.parquet", row_group_size=70)
    try:
        expected = _quiet(fastbias.evaluate, df, pos_label=pos_label, **K)
    except ValueError as error:
        with pytest.raises(ValueError, match=str(error).replace("[", r"\[").replace("(", r"\(")
                           .replace(")", r"\)").replace("]", r"\]")):
            evaluate_parquet(tmp_path / "d.parquet", pos_label=pos_label, batch_rows=70, **K)
        return
    result = _quiet(evaluate_parquet, tmp_path / "d.parquet", pos_label=pos_label,
                    batch_rows=70, **K)
    pd.testing.assert_frame_equal(result.table, expected.table, check_exact=True)


def test_parquet_third_value_across_row_groups_names_its_row(tmp_path):
    pytest.importorskip("pyarrow")
    df = _labels_frame(400, seed=0)
    df.loc[300:, "y"] = "toxic"
    df.loc[331, "y"] = "unk"
    df.to_parquet(tmp_path / "d.parquet", row_group_size=100)
    with pytest.raises(ValueError, match=r"'unk' first at row 331, in rows 300\.\.399"):
        evaluate_parquet(tmp_path / "d.parquet", pos_label="toxic", batch_rows=100, **K)


@pytest.mark.parametrize("dtype, positive, negative", [
    ("Int64", 1, 0), ("boolean", True, False), ("string", "tox", "ok"),
])
def test_nullable_dtypes_out_of_core(tmp_path, dtype, positive, negative):
    pytest.importorskip("pyarrow")
    dd = pytest.importorskip("dask.dataframe")
    from fastbias.dask import evaluate as dask_evaluate
    df = _labels_frame(300, seed=6, positive=positive, negative=negative)
    df["y"] = pd.array(list(df["y"]), dtype=dtype)
    expected = _quiet(fastbias.evaluate, df, pos_label=positive, **K)
    df.to_parquet(tmp_path / "d.parquet", row_group_size=70)
    for result in (_quiet(evaluate_parquet, tmp_path / "d.parquet", pos_label=positive,
                          batch_rows=70, **K),
                   _quiet(dask_evaluate, dd.from_pandas(df, npartitions=3),
                          pos_label=positive, **K)):
        pd.testing.assert_frame_equal(result.table, expected.table, check_exact=True)


def test_parquet_categories_differing_between_files(tmp_path):
    pytest.importorskip("pyarrow")
    df = _labels_frame(300, seed=8)
    df.iloc[:150].assign(y=pd.Categorical(df["y"][:150], categories=["ok", "toxic", "zzz"])) \
        .to_parquet(tmp_path / "a.parquet")
    df.iloc[150:].assign(y=pd.Categorical(df["y"][150:], categories=["toxic", "ok"])) \
        .to_parquet(tmp_path / "b.parquet")
    expected = _quiet(fastbias.evaluate, df, pos_label="toxic", **K)
    result = _quiet(evaluate_parquet, [tmp_path / "a.parquet", tmp_path / "b.parquet"],
                    pos_label="toxic", batch_rows=70, **K)
    pd.testing.assert_frame_equal(result.table, expected.table, check_exact=True)


def test_dask_empty_partition_and_a_partition_of_the_third_value_alone():
    dd = pytest.importorskip("dask.dataframe")
    import dask

    from fastbias.dask import evaluate as dask_evaluate
    df = _labels_frame(300, seed=9)
    parts = [dd.from_pandas(df, npartitions=3), dd.from_pandas(df.iloc[:0], npartitions=1)]
    with dask.config.set(scheduler="synchronous"):
        expected = _quiet(fastbias.evaluate, df, pos_label="toxic", **K)
        result = _quiet(dask_evaluate, dd.concat(parts), pos_label="toxic", **K)
        pd.testing.assert_frame_equal(result.table, expected.table, check_exact=True)
        alone = df.iloc[:5].assign(y="unk")
        with pytest.raises(ValueError, match=r"'unk' first at position 0, in Dask partition 3"):
            dask_evaluate(dd.concat([dd.from_pandas(df, npartitions=3),
                                     dd.from_pandas(alone, npartitions=1)]),
                          pos_label="toxic", **K)


@pytest.mark.jit_heavy  # (the CLI streaming: its kernels run compiled; too slow as Python)
@pytest.mark.parametrize("positive", ["true", "TRUE"])
def test_cli_streamed_jsonl_booleans_with_positive(tmp_path, capsys, monkeypatch, positive):
    df = _frame(40_000, seed=1)
    path = tmp_path / "d.jsonl"
    df.to_json(path, orient="records", lines=True)
    (m_status, _, memory), (s_status, s_err, streamed) = _memory_then_streamed(
        path, tmp_path, capsys, monkeypatch, "--positive", positive)
    assert m_status == 0 and s_status == 0, s_err
    assert streamed["settings"]["pos_label"] is True is memory["settings"]["pos_label"]
    for report in (memory, streamed):
        report.pop("timings_s")
        report.pop("settings")
    assert streamed == memory


@pytest.mark.jit_heavy  # (the CLI streaming: its kernels run compiled; too slow as Python)
def test_cli_streamed_text_label_whose_first_batch_looks_numeric_is_read_alike(
        tmp_path, capsys, monkeypatch):
    """Labels "1"/"unk" with only "1" in the first batch: in memory a report; streamed the
    first batch read 1 as a number and later ones "1" as text, and the file was refused
    ("[1, '1', 'unk']", an error, not a wrong number). Under a number --positive the label
    is now read as text and its number texts made numbers value by value, alike in every
    batch (thirty-sixth session): the same report both ways, checked by sklearn."""
    df = _frame(40_000, seed=1)
    y = df["y"].map({True: "1", False: "unk"}).astype(object)
    y[:5_000] = "1"
    df["y"] = y
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    (m_status, _, m_report), (s_status, s_err, s_report) = _memory_then_streamed(
        path, tmp_path, capsys, monkeypatch, "--positive", "1")
    memory, streamed = m_report, s_report
    assert m_status == 0 and s_status == 0, s_err
    positive = (df["y"] == "1").to_numpy()
    assert memory["n_positives"] == streamed["n_positives"] == int(positive.sum())
    want = roc_auc_score(positive, df["s"].to_numpy())
    assert memory["models"][0]["overall_auc"] == pytest.approx(want, abs=1e-15)
    assert streamed["models"][0]["overall_auc"] == pytest.approx(want, abs=1e-15)
