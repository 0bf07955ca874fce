"""Bounded memory whatever a file inflates to (issue 19, item 5).

* the line guard of ``fastbias.validate.textfile`` against an independent reference (the
  longest line of the bytes, by ``bytes.split``), and the decompression bombs it stops;
* ``fastbias.streaming.evaluate_csv`` against the O(n^2) brute force (small data: heavy
  ties, unannotated rows excluded) and against the in-memory ``fastbias.evaluate`` (itself
  tested against the brute force, sklearn and scipy) on data of many batches and buckets;
* the streamed score histograms against ``score_histograms`` on the frame;
* the first pass's sample: uniform and bounded however many rows arrive;
* the CLI: data over ``--max-memory`` is streamed to the same report, options that need the
  rows in memory are refused by name, a budget too small is a clear error, and the spill
  files are checked against the free disk before any is written.
"""
import bz2
import csv
import dataclasses
import gzip
import importlib.util
import io
import json
import lzma
import os
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import fastbias
from fastbias import UndefinedMetricWarning
from fastbias.cli import main
from fastbias.reports.histograms import score_histograms
from fastbias.streaming import (
    _first_pass,
    check_spill_space,
    evaluate_csv,
    evaluate_parquet,
    stream_evaluate,
)
from fastbias.validate.spec import column_spec
from fastbias.validate.textfile import (
    DataFileError,
    _LineGuard,
    iter_text_batches,
    open_text,
    open_text_source,
)

from .reference import brute_force_metrics

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]


def quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return function(*args, **kwargs)


# ----------------------------------------------------------------------------- line guard

@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.integers(0, 40), min_size=1, max_size=30),
       final_newline=st.booleans(), limit=st.integers(1, 45), read_size=st.integers(1, 64))
def test_line_guard_refuses_exactly_the_lines_over_the_limit(lines, final_newline, limit,
                                                              read_size):
    data = b"\n".join(b"x" * n for n in lines) + (b"\n" if final_newline else b"")
    longest = max(len(part) for part in data.split(b"\n"))
    first_long = next((i for i, part in enumerate(data.split(b"\n")) if len(part) > limit), None)
    guard = _LineGuard(io.BytesIO(data), limit, "f.csv")
    out = bytearray()
    try:
        while True:
            buffer = bytearray(read_size)
            n = guard.readinto(buffer)
            if n == 0:
                break
            out += buffer[:n]
    except DataFileError as error:
        assert longest > limit
        assert f"line {first_long + 1:,} of data file 'f.csv'" in str(error)
    else:
        assert longest <= limit
        assert bytes(out) == data
        assert guard.lines == data.count(b"\n")


def _bomb(path, compress, head=b"y,s,g\n", body=b"0" * (1 << 20), repeat=24):
    with compress(path, "wb") as handle:
        handle.write(head)
        for _ in range(repeat):
            handle.write(body)
    return path


@pytest.mark.parametrize("suffix, compress", [(".csv.gz", gzip.open), (".csv.bz2", bz2.open),
                                              (".csv.xz", lzma.open)])
def test_an_endless_line_is_refused_before_it_is_held(tmp_path, suffix, compress):
    path = _bomb(tmp_path / f"bomb{suffix}", compress)  # 24 MiB of zeros on line 2
    assert os.path.getsize(path) < 1 << 20
    with pytest.raises(DataFileError, match=r"line 2 of data file .*bomb.* longer than 16 MiB"):
        evaluate_csv(path, label="y", scores="s", subgroups=["g"])
    header_bomb = _bomb(tmp_path / f"header{suffix}", compress, head=b"")
    with pytest.raises(DataFileError, match="line 1 of data file"):
        open_text_source(header_bomb)


def test_cli_names_the_file_and_line_of_a_bomb(tmp_path, capsys):
    path = _bomb(tmp_path / "bomb.csv.gz", gzip.open)
    status = main(["report", str(path), "--label", "y", "--scores", "s", "--subgroups", "g",
                   "--progress", "never"])
    err = capsys.readouterr().err
    assert status == 1
    assert "line 2 of data file" in err and "bomb.csv.gz" in err and "Traceback" not in err


def test_line_limit_is_an_argument(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("y,s,g\n0,0.1,1\n1,0.2," + "1" * 50 + "\n")
    with pytest.raises(DataFileError, match="line 3 of data file"):
        evaluate_csv(path, label="y", scores="s", subgroups=["g"], line_limit=40)
    with pytest.raises(ValueError, match="line_limit must be a positive number"):
        evaluate_csv(path, label="y", scores="s", subgroups=["g"], line_limit=0)


# ----------------------------------------------------------------------------- evaluate_csv

def _tied_frame(n, seed, n_groups=3, missing=True):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"y": (rng.random(n) < 0.35).astype(int),
                       "s": np.round(rng.random(n), 1)})  # about ten distinct scores: heavy ties
    for j in range(n_groups):
        g = (rng.random(n) < 0.3).astype(float)
        if missing:
            g[rng.random(n) < 0.2] = np.nan
        df[f"g{j}"] = g
    return df


@pytest.mark.parametrize("policy", ["background", "exclude"])
def test_evaluate_csv_matches_the_brute_force(tmp_path, policy):
    df = _tied_frame(90, seed=3)
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    result = quiet(evaluate_csv, path, label="y", scores="s", subgroups=["g0", "g1", "g2"],
                   missing_subgroup=policy, batch_rows=7, bucket_rows=20)
    y, s = df["y"].to_numpy() == 1, df["s"].to_numpy()
    for j, row in result.table.iterrows():
        g = df[row["subgroup"]].to_numpy()
        kept = ~np.isnan(g) if policy == "exclude" else np.ones(len(g), bool)
        expected = brute_force_metrics(y[kept], s[kept], g[kept] >= 0.5)
        for metric in METRICS:
            assert row[metric] == pytest.approx(expected[metric], rel=0, abs=1e-15) or (
                np.isnan(row[metric]) and np.isnan(expected[metric])), (row["subgroup"], metric)


@pytest.mark.parametrize("suffix, sep", [(".csv", ","), (".csv.gz", ","), (".tsv.xz", "\t")])
@pytest.mark.parametrize("weighted", [False, True])
def test_evaluate_csv_equals_evaluate_over_many_batches_and_buckets(tmp_path, suffix, sep,
                                                                     weighted):
    df = _tied_frame(6_000, seed=11)
    df["t"] = np.random.default_rng(5).random(len(df))  # a second, untied model
    if weighted:
        df["w"] = np.random.default_rng(6).integers(1, 5, len(df)) / 4.0
    path = tmp_path / f"d{suffix}"
    df.to_csv(path, index=False, sep=sep)
    kwargs = dict(label="y", scores=["s", "t"], subgroups=["g0", "g1", "g2"],
                  missing_subgroup="exclude", sample_weight="w" if weighted else None)
    result = quiet(evaluate_csv, path, batch_rows=700, bucket_rows=900, **kwargs)
    reference = quiet(fastbias.evaluate, df, **kwargs)
    assert result.settings["engine"] == "streaming"
    exact = not weighted
    pd.testing.assert_frame_equal(result.table, reference.table, check_exact=exact,
                                  **({} if exact else {"rtol": 1e-12, "atol": 1e-12}))


def test_evaluate_csv_names_the_rows_of_a_bad_value(tmp_path):
    df = _tied_frame(50, seed=1, missing=False)
    df["s"] = df["s"].astype(object)
    df.loc[37, "s"] = "oops"
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    # the value named is the stray word, not a number written as text before it
    with pytest.raises((ValueError, TypeError),
                       match=r"score column 's'.*'oops' at row 37.*rows 30\.\.39 of"):
        evaluate_csv(path, label="y", scores="s", subgroups=["g0"], batch_rows=10)


def test_evaluate_csv_checks_its_columns_and_sizes(tmp_path):
    path = tmp_path / "d.csv"
    _tied_frame(20, seed=1).to_csv(path, index=False)
    with pytest.raises(KeyError, match=r"subgroups: column\(s\) \['nope'\] not in the CSV file"):
        evaluate_csv(path, label="y", scores="s", subgroups=["nope"])
    with pytest.raises(ValueError, match="batch_rows must be a positive integer"):
        evaluate_csv(path, label="y", scores="s", subgroups=["g0"], batch_rows=0)
    with pytest.raises(FileNotFoundError, match="not found"):
        evaluate_csv(tmp_path / "absent.csv", label="y", scores="s", subgroups=["g0"])


# ----------------------------------------------------------------------------- histograms

@pytest.mark.parametrize("intersections", [None, 2])
@pytest.mark.parametrize("policy", ["background", "exclude"])
def test_streamed_histograms_equal_those_of_the_frame(tmp_path, policy, intersections):
    """The score distributions of the report, intersections included (the HTML report of a
    streamed file draws those of the worst rows, which can be intersections)."""
    df = _tied_frame(3_000, seed=4)
    df["t"] = np.random.default_rng(9).normal(0, 2, len(df))  # outside [0, 1]: its own range
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    source = open_text_source(path)
    spec = column_spec(source.names, label="y", scores=["s", "t"], subgroups=["g0", "g1"],
                       label_threshold=0.5, subgroup_threshold=0.5, missing_subgroup=policy,
                       sample_weight=None)
    spec = dataclasses.replace(spec, intersections=intersections)
    result, streamed = quiet(stream_evaluate, spec,
                             lambda columns: iter_text_batches(source, columns, 400),
                             [np.dtype(np.float64)] * 2, bucket_rows=1_000, histogram_bins=17)
    expected = score_histograms(df, result, bins=17)
    assert streamed.subgroups == expected.subgroups == list(result.subgroups)
    assert ("g0 & g1" in streamed.subgroups) == (intersections == 2)
    np.testing.assert_array_equal(streamed.edges, expected.edges)
    np.testing.assert_array_equal(streamed.counts, expected.counts)
    assert (streamed.n_rows, streamed.n_negatives, streamed.n_positives) == (
        expected.n_rows, expected.n_negatives, expected.n_positives)


# ----------------------------------------------------------------------------- first pass

def test_the_first_pass_sample_is_bounded_and_uniform(monkeypatch):
    import fastbias.streaming as streaming

    monkeypatch.setattr(streaming, "SAMPLE_LEAST", 2_000)
    monkeypatch.setattr(streaming, "SAMPLE_MOST", 3_000)  # reached: 200 buckets want 20,000
    monkeypatch.setattr(streaming, "SAMPLE_PER_BUCKET", 100)
    n, batch = 200_000, 5_000
    scores = np.arange(n) / n  # uniform on [0, 1): the sample's deciles are known
    spec = column_spec(["y", "s", "g"], label="y", scores="s", subgroups="g", label_threshold=0.5,
                       subgroup_threshold=0.5, missing_subgroup="background",
                       sample_weight=None)

    def read(columns):
        for start in range(0, n, batch):
            frame = {"s": pd.Series(scores[start:start + batch]),
                     "y": pd.Series(np.zeros(batch))}
            yield {c: frame[c] for c in columns}, ""

    summary, rows = _first_pass(read, spec, None, 1_000, 0, all_models=True)
    assert rows == n
    target = 3_000  # min(SAMPLE_MOST, max(SAMPLE_LEAST, 100 per bucket x 200 buckets))
    size = summary.samples[0].shape[0]
    assert target // 2 <= size <= 2 * target
    stands_for = summary.sample_weights[0]
    assert stands_for.sum() == pytest.approx(n, rel=0.1)  # each kept value stands for 1/rate rows
    deciles = np.quantile(summary.samples[0], np.linspace(0.1, 0.9, 9))
    np.testing.assert_allclose(deciles, np.linspace(0.1, 0.9, 9), atol=0.05)
    assert (summary.lowest[0], summary.highest[0]) == (0.0, (n - 1) / n)


def test_spill_space_is_checked_before_writing(tmp_path, monkeypatch):
    class Tiny:
        f_bavail, f_frsize = 10, 4096

    monkeypatch.setattr(os, "statvfs", lambda path: Tiny())
    with pytest.raises(OSError, match=r"spill files of 1,000,000 rows need 0\.0 GiB under "
                                      r".*, which has 0\.0 GiB free"):
        check_spill_space(str(tmp_path / "x"), 1_000_000, [33])
    check_spill_space(str(tmp_path / "x"), 1_000, [33])  # 33 kB fit in 40 kB


# ----------------------------------------------------------------------------- the CLI

SUBGROUPS = ["g0", "g1", "g2"]


def _four_mib_for_data(monkeypatch, batch_rows=None) -> int:
    """A --max-memory that leaves 4 MiB for the data: the program taken as 100 MiB, no
    kernel reserve, a first-pass sample of 1,000 values, two threads; returns it."""
    import fastbias.cli as cli
    import fastbias.streaming

    monkeypatch.setattr(cli, "_resident_memory", lambda: 100 * 2 ** 20)
    monkeypatch.setattr(cli, "KERNEL_RESERVE", 0)
    if batch_rows is not None:
        monkeypatch.setattr(cli, "CSV_CHUNK_ROWS", batch_rows)
    monkeypatch.setattr(fastbias.streaming, "SAMPLE_LEAST", 1_000)
    monkeypatch.setattr(fastbias.streaming, "SAMPLE_MOST", 1_000)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    return 100 * 2 ** 20 + 4 * 2 ** 20 + fastbias.streaming.sample_memory(2)


def _report(path, out, *extra):
    return main(["report", str(path), "--label", "y", "--scores", "s", "t", "--subgroups",
                 *SUBGROUPS, "--out", str(out), "--progress", "never", *extra])


@pytest.mark.jit_heavy
@pytest.mark.parametrize("suffix", [".csv.gz", ".jsonl", ".parquet"])
def test_cli_streams_data_over_the_budget_to_the_same_report(tmp_path, capsys, suffix,
                                                           monkeypatch):

    df = _tied_frame(40_000, seed=2)
    df["t"] = np.random.default_rng(8).random(len(df))
    path = _written(df, tmp_path, suffix)
    # a limit that leaves 4 MiB for the data, where in memory the rows would need ~8 MB:
    # batches of about 3,000 rows, buckets of about 12,000 (four of them), a thinned sample
    _assert_streamed_report_equals_memory(path, tmp_path, capsys, monkeypatch,
                                          "--missing-subgroup", "exclude")


def _written(df, tmp_path, suffix: str):
    """``df`` written as ``d<suffix>`` (Parquet in row groups of 7,000 rows); its path."""
    path = tmp_path / f"d{suffix}"
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
        df.to_parquet(path, row_group_size=7_000)
    elif suffix == ".jsonl":
        df.to_json(path, orient="records", lines=True)
    else:
        df.to_csv(path, index=False)
    return path


def memory_and_streamed_reports(path, tmp_path, capsys, monkeypatch, *extra) -> tuple:
    """The CLI's JSON reports of ``path`` in memory, then streamed within 4 MiB."""
    assert _report(path, tmp_path / "memory.json", *extra) == 0
    capsys.readouterr()
    limit = _four_mib_for_data(monkeypatch, batch_rows=4_000)
    status = _report(path, tmp_path / "streamed.json", *extra, "--max-memory", str(limit))
    err = capsys.readouterr().err
    assert status == 0, err
    assert "streaming it" in err
    memory = json.loads((tmp_path / "memory.json").read_text())
    streamed = json.loads((tmp_path / "streamed.json").read_text())
    assert streamed["settings"]["engine"] == "streaming"
    return memory, streamed


def _assert_streamed_report_equals_memory(path, tmp_path, capsys, monkeypatch, *extra):
    """The CLI's JSON report of ``path`` in memory, then streamed within 4 MiB: the same,
    but for the timings and settings; returns the streamed report."""
    memory, streamed = memory_and_streamed_reports(path, tmp_path, capsys, monkeypatch, *extra)
    _assert_same_reports(memory, streamed)
    return streamed


def _assert_same_reports(memory: dict, streamed: dict) -> None:
    """Two JSON reports the same, but for their timings and settings."""
    for report in (memory, streamed):
        report.pop("timings_s")
        report.pop("settings")
    assert streamed == memory


def test_max_memory_help_names_what_streaming_refuses():
    """The help of --max-memory lists as refused exactly what ``_check_streamable`` refuses
    (it had listed --ci and --positive after both came out of core)."""
    import re
    import types

    import fastbias.cli as cli

    report = next(a for a in cli.build_parser()._actions
                  if a.dest == "command").choices["report"]
    text = " ".join(next(a for a in report._actions if a.dest == "max_memory").help.split())
    refused_in_help = re.search(r"no (.*)$", text).group(1)
    for option, value in (("--ci", "bootstrap"), ("--nan-policy", "omit")):
        assert f"{option} {value}" in refused_in_help
    assert "--positive" not in refused_in_help and "delong" not in refused_in_help.lower()
    over = types.SimpleNamespace(rows_text=lambda: "10", rows=10, row_bytes=8)
    for ci, nan_policy, refused in (("bootstrap", "raise", True), ("delong", "raise", False),
                                    ("bernstein", "raise", False), (None, "omit", True)):
        args = types.SimpleNamespace(ci=ci, nan_policy=nan_policy, data="d.csv", positive="a")
        if refused:
            with pytest.raises(cli.CLIError, match="does not do"):
                cli._check_streamable(args, over, 2 ** 20, 0)
        else:
            cli._check_streamable(args, over, 2 ** 20, 0)


def test_cli_refuses_options_that_need_the_rows_in_memory(tmp_path, capsys, monkeypatch):
    import fastbias.cli as cli

    df = _tied_frame(20_000, seed=2)
    df["t"] = df["s"]
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    monkeypatch.setattr(cli, "_resident_memory", lambda: 0)
    monkeypatch.setattr(cli, "KERNEL_RESERVE", 0)
    status = _report(path, tmp_path / "o.json", "--ci", "bootstrap", "--significance", "holm",
                     "--max-memory", "1M")
    err = capsys.readouterr().err
    assert status == 1
    assert "that --max-memory (1.0 MiB) leaves for data" in err
    # (--significance and --ci delong stream)
    assert "does not do --ci bootstrap. Drop it" in err
    assert not (tmp_path / "o.json").exists()
    # a limit the program itself fills: no "0 bytes" left for data, but what takes it
    monkeypatch.setattr(cli, "_resident_memory", lambda: 3 * 2 ** 20)
    status = _report(path, tmp_path / "o.json", "--ci", "bootstrap", "--max-memory", "2M")
    err = capsys.readouterr().err
    assert status == 1
    assert ("--max-memory (2.0 MiB) leaves nothing for data beside the program itself "
            "(3.0 MiB, and 0 bytes kept for its kernels)") in err
    assert "0 bytes that" not in err


def test_cli_says_when_the_budget_cannot_even_stream(tmp_path, capsys):
    df = _tied_frame(20_000, seed=2)
    df["t"] = df["s"]
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    status = _report(path, tmp_path / "o.json", "--max-memory", "1M")
    err = capsys.readouterr().err
    assert status == 1
    assert "--max-memory is too small to stream this data" in err and "give at least" in err


@pytest.mark.parametrize("text, valid", [("8G", True), ("500M", True), ("2.5GiB", True),
                                         ("1000000000", True), ("abc", False), ("-1G", False),
                                         ("10", False), ("5X", False)])
def test_max_memory_sizes(text, valid, tmp_path, capsys):
    from fastbias.cli import build_parser

    parser = build_parser()
    argv = ["report", "d.csv", "--label", "y", "--scores", "s", "--subgroups", "g",
            "--max-memory", text]
    if valid:
        assert parser.parse_args(argv).max_memory > 2 ** 20
    else:
        with pytest.raises(SystemExit):
            parser.parse_args(argv)
        assert "--max-memory" in capsys.readouterr().err


def test_open_text_reads_what_was_written(tmp_path):
    data = b"a,b\n" + b"1,2\n" * 1000
    path = tmp_path / "d.csv.gz"
    with gzip.open(path, "wb") as handle:
        handle.write(data)
    with open_text(str(path), "gzip") as stream:
        assert stream.read() == data
        assert stream.lines == 1001


def test_a_parquet_of_too_many_rows_for_the_disk_fails_before_reading_a_row(tmp_path, capsys,
                                                                          monkeypatch):
    """The 12 MB Parquet file of 1.2e9 rows, in small: its footer alone decides that it is
    streamed, and the spill files are checked against the free disk before any row is read."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    import fastbias.cli as cli
    import fastbias.streaming
    import fastbias.validate.parquet as parquet_module

    n = 2_000_000
    table = pa.table({"y": pa.array(np.zeros(n, np.int8)), "s": pa.array(np.zeros(n)),
                      "t": pa.array(np.zeros(n)), **{g: pa.array(np.zeros(n)) for g in SUBGROUPS}})
    path = tmp_path / "many.parquet"
    pq.write_table(table, path, row_group_size=n)
    assert os.path.getsize(path) < 1 << 20  # constant columns compress to almost nothing

    class Tiny:
        f_bavail, f_frsize = 1_000, 4096  # 4 MB free

    def no_rows(*args, **kwargs):
        raise AssertionError("a row was read")

    monkeypatch.setattr(os, "statvfs", lambda path: Tiny())
    monkeypatch.setattr(cli, "_resident_memory", lambda: 0)
    monkeypatch.setattr(cli, "KERNEL_RESERVE", 0)
    monkeypatch.setattr(parquet_module, "iter_batches", no_rows)
    monkeypatch.setattr(fastbias.streaming, "SAMPLE_MOST", 1_000)
    status = _report(path, tmp_path / "o.json", "--max-memory", "64M")
    err = capsys.readouterr().err
    assert status == 1, err
    assert "spill files of 2,000,000 rows need" in err and "GiB free" in err


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz"])
def test_a_text_file_far_over_the_budget_is_streamed_after_its_first_batch(tmp_path, capsys,
                                                                          monkeypatch, suffix):
    """The rows a CSV holds are projected from the share of its bytes the first batch took:
    a file needing many times the budget is not read up to the budget before streaming."""
    import fastbias.cli as cli

    df = _tied_frame(40_000, seed=2)
    df["t"] = df["s"]
    path = tmp_path / f"d{suffix}"
    df.to_csv(path, index=False)
    batches_read = []
    real_batches = cli._batches

    def counting(*args, **kwargs):
        batches_read.append(0)
        for item in real_batches(*args, **kwargs):
            batches_read[-1] += 1
            yield item

    monkeypatch.setattr(cli, "_batches", counting)
    # 4 MiB for the data: the file needs ~8 MB in memory, the first 2,000 rows ~0.4 MB
    limit = _four_mib_for_data(monkeypatch, batch_rows=2_000)
    status = _report(path, tmp_path / "o.json", "--max-memory", str(limit))
    err = capsys.readouterr().err
    assert status == 0, err
    assert "streaming it" in err
    assert batches_read == [1]  # the in-memory attempt stopped after one batch
    status = _report(path, tmp_path / "o2.json", "--max-memory", str(limit), "--ci",
                     "bootstrap")
    err = capsys.readouterr().err
    assert status == 1 and "holds about 4" in err and "does not do --ci bootstrap" in err


@settings(max_examples=150, deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.integers(-3, 300), st.floats(-2, 2),
                                 st.sampled_from([np.nan, np.inf, -np.inf, 0.5, 1.0, 0.7, 0.9,
                                                  0.3])),
                       min_size=1, max_size=30),
       kind=st.sampled_from(["float64", "float32", "float16", "int64", "uint8", "Int16",
                             "Float64", "bool", "boolean"]),
       threshold=st.sampled_from([0.5, 0.0, 1.0, 2.0, 0.3, 0.7, 0.9, -1.0, 255.0]))
@example(values=[0.7, 0.9, 0.3, 0.69], kind="float32", threshold=0.7)
@example(values=[0.7, 0.9, 0.3, 0.69], kind="float16", threshold=0.9)
@example(values=[0.7, None, 0.9], kind="float32", threshold=0.9)
def test_compact_memberships_keep_exactly_the_membership_read(values, kind, threshold):
    """The CLI holds numeric identity columns as nullable booleans: the membership kernel
    (what evaluate and encode_frame count with) and the report's histograms (member_mask)
    must see the same members and unannotated rows as on the column itself. float32 tenths
    with thresholds 0.7 and 0.9 catch a comparison made in float32."""
    from fastbias.cli import _compact_memberships
    from fastbias.validate.subgroups import identity_values

    if kind == "float16":
        values = [v if v is None or not isinstance(v, float) or abs(v) < 60_000 else None
                  for v in values]
    if kind in ("float64", "float32", "float16", "Float64"):
        column = pd.Series([np.nan if v is None else float(v) for v in values])
        column = column.astype(kind)
    elif kind in ("int64", "uint8"):
        column = pd.Series([abs(int(v)) % 256 if isinstance(v, (int, float)) and np.isfinite(v)
                            else 0 for v in values]).astype(kind)
    elif kind == "Int16":
        column = pd.Series([None if v is None or not np.isfinite(v) else int(v) for v in values],
                           dtype="Int16")
    else:
        column = pd.Series([None if v is None else bool(v) for v in values])
        column = column.astype(kind) if kind == "boolean" else column.fillna(False).astype(bool)
    codes_before = _codes(column.copy(), threshold)
    compact = _compact_memberships(pd.DataFrame({"g": column.copy()}), ["g"], threshold)["g"]
    np.testing.assert_array_equal(_codes(compact, threshold), codes_before)
    # the histograms' reading of the column agrees with the kernel, before and after
    for col in (column, compact):
        read = identity_values(col.copy(), "g", threshold)
        missing = np.zeros(len(col), bool) if read.missing is None else read.missing
        np.testing.assert_array_equal(read.member_mask(), codes_before == 1)
        np.testing.assert_array_equal(missing, codes_before == -1)


def _codes(column, threshold):
    """The membership kernel's codes of one identity column (1 member, 0 not, -1 unannotated)."""
    from fastbias.prepare import _kernels as PK
    from fastbias.validate.subgroups import identity_column

    frame = pd.DataFrame({"g": column})
    read = identity_column(frame, "g", threshold)
    codes = np.zeros((len(column), 1), dtype=np.int8)
    PK.membership_codes(read.values, read.threshold,
                        np.zeros(0, bool) if read.missing is None else read.missing, True,
                        codes, 0)
    return codes[:, 0]


def test_json_lines_scores_are_read_to_the_last_bit(tmp_path, capsys):
    """pandas' default JSON float parser is not correctly rounded: scores one ulp apart came
    back tied, and the AUCs moved in the 4th decimal. Read back, every score is the number
    written, and the report equals the one on the frame."""
    rng = np.random.default_rng(0)
    n = 4_000
    base = rng.random(n // 2)
    s = np.concatenate([base, np.nextafter(base, 2.0)])  # pairs one ulp apart
    y = np.concatenate([np.zeros(n // 2, bool), np.ones(n // 2, bool)])
    df = pd.DataFrame({"y": y.astype(int), "s": s, "t": s[::-1].copy(),
                       "g0": (rng.random(n) < 0.3).astype(float),
                       "g1": (rng.random(n) < 0.3).astype(float),
                       "g2": (rng.random(n) < 0.3).astype(float),
                       "created_at": rng.integers(0, 10, n)})
    path = tmp_path / "d.jsonl"
    with open(path, "w") as handle:
        for row in df.to_dict("records"):
            handle.write(json.dumps(row) + "\n")  # json.dumps: the shortest repr, exact
    source = open_text_source(path)
    (frame, _), = list(iter_text_batches(source, ["s", "created_at"], 10 * n))
    np.testing.assert_array_equal(frame["s"].to_numpy(), s)
    assert frame["created_at"].dtype.kind == "i"  # not turned into dates
    assert _report(path, tmp_path / "o.json") == 0
    capsys.readouterr()
    reference = fastbias.evaluate(df, label="y", scores=["s", "t"], subgroups=SUBGROUPS)
    _assert_json_report_is(json.loads((tmp_path / "o.json").read_text()), reference)


def _assert_json_report_is(data: dict, reference) -> None:
    """A CLI JSON report gives each model's overall AUC and each subgroup's size and metrics
    of ``reference`` (an EvaluationResult), exactly."""
    got = {m["name"]: m for m in data["models"]}
    assert sorted(got) == sorted(reference.models)
    for model in reference.models:
        assert got[model]["overall_auc"] == reference.overall_auc[model]
        rows = {r["subgroup"]: r for r in got[model]["subgroups"]}
        part = reference.for_model(model)
        for g in part.index:
            assert rows[g]["subgroup_size"] == part.loc[g, "subgroup_size"], (model, g)
            for metric in METRICS:
                assert rows[g][metric] == part.loc[g, metric], (model, g, metric)


def _csv_walk(data: bytes) -> tuple:
    """``(lengths of the records of data, whether it ends inside a quoted field)``, walking
    the bytes one at a time as the CSV parser reads them: a newline inside a quoted field
    does not end a record; a double quote opens a field only as its first byte (after a
    comma or a record's start), a doubled one inside is text, and the field goes on after
    its closing quote."""
    lengths, run, state = [], 0, "start"
    for byte in map(chr, data):
        ends = False
        if state == "quoted":
            state = "quote" if byte == '"' else "quoted"
        elif state == "quote" and byte == '"':
            state = "quoted"
        elif byte == ",":
            state = "start"
        elif byte == "\n":
            ends, state = True, "start"
        elif state == "start" and byte == '"':
            state = "quoted"
        else:
            state = "text"
        if ends:
            lengths.append(run)
            run = 0
        else:
            run += 1
    return lengths + [run], state == "quoted"


def _records_by_hand(data: bytes, quotes: bool) -> list:
    """Lengths of the records of ``data``: newline-ended, with ``quotes`` as the CSV parser
    reads them (:func:`_csv_walk`)."""
    if quotes:
        return _csv_walk(data)[0]
    return [len(line) for line in data.split(b"\n")]


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=200).map(
           lambda b: bytes(b'x"\n,'[v % 4] for v in b)),
       limit=st.integers(1, 40), read_size=st.integers(1, 64))
def test_the_csv_guard_counts_records_as_the_parser_sees_them(data, limit, read_size):
    """Record ends as pandas' parser finds them (a quote mid-field is text: an inch mark
    had made the guard read the rest of a file as one quoted record), whatever the reads'
    sizes; the walk by hand agrees with Python's csv module on the number of records."""
    lengths = _records_by_hand(data, quotes=True)
    # (the csv module, on data whose quoted fields all close: one row per record, a blank
    # line an empty row)
    if data and not _csv_walk(data)[1]:
        rows = list(csv.reader(io.StringIO(data.decode(), newline="")))
        assert len(rows) == len(lengths) - (lengths[-1] == 0 and data.endswith(b"\n"))
    guard = _LineGuard(io.BytesIO(data), limit, "f.csv", quotes=True)
    try:
        while guard.readinto(bytearray(read_size)):
            pass
    except DataFileError:
        assert max(lengths) > limit
    else:
        assert max(lengths) <= limit
        assert guard.records == len(lengths) - 1
        assert guard.lines == data.count(b"\n")


def test_a_quote_that_never_closes_is_one_long_record(tmp_path):
    path = _bomb(tmp_path / "quoted.csv.gz", gzip.open, head=b'y,s,g\n"', body=b"0\n" * (1 << 19),
                 repeat=40)  # 40 MiB of short lines inside one quoted field
    with pytest.raises(DataFileError, match=r"line 2 of data file .* unclosed quote"):
        evaluate_csv(path, label="y", scores="s", subgroups=["g"])


def test_csv_headers_as_pandas_reads_them(tmp_path, capsys):
    """Blank lines before a CSV's header are passed over, as pandas passes them (the header
    reader stopped there: an UnboundLocalError, a traceback from the CLI), and a quoted name
    holding a line break is one name (it was cut at the break, the names after it lost)."""
    df = _tied_frame(300, seed=4)
    df.insert(2, "a\nb", df[SUBGROUPS[0]])  # (before other names, which were lost)
    df["t"] = df["s"]
    groups = [*SUBGROUPS, "a\nb"]
    reference = quiet(fastbias.evaluate, df, label="y", scores="s", subgroups=groups)
    text = df.to_csv(index=False)
    for name, content in (("blank.csv", "\n  \n" + text), ("broken.csv", text)):
        path = tmp_path / name
        path.write_text(content)
        assert open_text_source(path).names == list(df.columns)
        got = quiet(evaluate_csv, path, label="y", scores="s", subgroups=groups)
        pd.testing.assert_frame_equal(got.table, reference.table)
    status = _report(tmp_path / "blank.csv", tmp_path / "o.json")
    assert status == 0, capsys.readouterr().err


def test_zip_bom_and_json_keys(tmp_path, capsys):
    import zipfile

    df = _tied_frame(300, seed=1)
    df["t"] = df["s"]
    # a byte-order mark (Excel writes one) does not hide the first column's name
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + df.to_csv(index=False).encode())
    assert open_text_source(bom).names[0] == "y"
    reference = quiet(fastbias.evaluate, df, label="y", scores="s", subgroups=SUBGROUPS)
    got = quiet(evaluate_csv, bom, label="y", scores="s", subgroups=SUBGROUPS)
    pd.testing.assert_frame_equal(got.table, reference.table)
    # a truncated or corrupt zip is one error line naming the file, never a traceback
    good = tmp_path / "d.csv.zip"
    with zipfile.ZipFile(good, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("d.csv", df.to_csv(index=False))
    for name, content in (("junk.csv.zip", b"PK\x03\x04 not a zip at all"),
                          ("cut.csv.zip", good.read_bytes()[: len(good.read_bytes()) // 2])):
        (tmp_path / name).write_bytes(content)
        status = _report(tmp_path / name, tmp_path / "o.json")
        err = capsys.readouterr().err
        assert status == 1 and "Traceback" not in err, err
        assert err.strip().splitlines()[-1].startswith("fastbias: error: ") and name in err
    # JSON lines: a key missing from every line of a batch is missing values, whatever the
    # batch size (as when the whole file is read)
    path = tmp_path / "keys.jsonl"
    with open(path, "w") as handle:
        for i, row in enumerate(df.to_dict("records")):
            if 1 <= i < 200:
                row.pop("g1")
            handle.write(json.dumps({k: (None if isinstance(v, float) and np.isnan(v) else v)
                                     for k, v in row.items()}) + "\n")
    expected = df.copy()
    expected.loc[1:199, "g1"] = np.nan
    reference = quiet(fastbias.evaluate, expected, label="y", scores="s", subgroups=SUBGROUPS,
                      missing_subgroup="exclude")
    source = open_text_source(path)
    spec = column_spec(source.names, label="y", scores="s", subgroups=SUBGROUPS,
                       label_threshold=0.5, subgroup_threshold=0.5, missing_subgroup="exclude",
                       sample_weight=None)
    result, _ = quiet(stream_evaluate, spec,
                      lambda columns: iter_text_batches(source, columns, 50),
                      [np.dtype(np.float64)], bucket_rows=100)
    pd.testing.assert_frame_equal(result.table, reference.table)


def test_a_column_that_changes_kind_between_batches_is_refused(tmp_path, capsys, monkeypatch):
    """Integers in one batch and True/False in another: read at once, the column is refused
    (object dtype); read in batches it would mean two things (>= threshold, and True). Both
    the streamed and the in-memory CLI reading refuse it, naming the column and the rows."""
    import fastbias.cli as cli

    df = _tied_frame(2_000, seed=1, missing=False)
    df["t"] = df["s"]
    g = df["g1"].astype(int).astype(object)
    g[1_000:] = g[1_000:].astype(bool)
    df["g1"] = g
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    with pytest.raises(TypeError, match=r"subgroup column 'g1' holds boolean values in rows "
                                        r"1000\.\.1499 .* but numeric values in rows 0\.\.499"):
        evaluate_csv(path, label="y", scores="s", subgroups=SUBGROUPS, batch_rows=500)
    monkeypatch.setattr(cli, "CSV_CHUNK_ROWS", 1_000)
    status = _report(path, tmp_path / "o.json")
    err = capsys.readouterr().err
    assert status == 1 and "data column 'g1' holds boolean values in rows 1000..1999" in err
    assert "numeric values in rows 0..999" in err


def _json_lines(path, rows) -> None:
    with open(path, "w") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")


@pytest.mark.jit_heavy
def test_json_booleans_with_nulls_in_some_batches_read_as_booleans(tmp_path, capsys,
                                                                   monkeypatch):
    """true/false with null (or the key left out) in the first batch only: pandas reads that
    batch's column as 1.0/0.0 and the others' as booleans, which was refused as a column
    of two kinds. Read as written, the report in memory and streamed equals
    fastbias.evaluate of the same rows (the first line has no key g1, which later lines
    have: a column all the same, in memory and streamed)."""
    import fastbias.cli as cli

    rng = np.random.default_rng(12)
    n = 60_000  # over the 4 MiB the streamed report is given
    y = rng.random(n) < 0.35
    s = np.round(rng.random(n) + 0.2 * y, 2)
    rows, frame = [], {"y": [], "s": [], "t": [], "g0": [], "g1": [], "g2": []}
    for i in range(n):
        row = {"y": bool(y[i]), "s": float(s[i]), "t": float(s[-1 - i])}
        for j in range(3):
            member = bool(rng.random() < 0.3)
            row[f"g{j}"] = None if i < 3_000 and rng.random() < 0.2 else member
        if i == 0 or (i < 3_000 and rng.random() < 0.1):
            del row["g1"]  # a key left out is a null (the first line's too: see below)
        rows.append(row)
        for key in frame:
            frame[key].append(row.get(key))
    path = tmp_path / "flags.jsonl"
    _json_lines(path, rows)
    df = pd.DataFrame(frame).astype({"g0": "boolean", "g1": "boolean", "g2": "boolean"})
    reference = quiet(fastbias.evaluate, df, label="y", scores=["s", "t"],
                      subgroups=SUBGROUPS, missing_subgroup="exclude")
    monkeypatch.setattr(cli, "CSV_CHUNK_ROWS", 4_000)  # nulls in the first batch alone
    streamed = _assert_streamed_report_equals_memory(path, tmp_path, capsys, monkeypatch,
                                                     "--missing-subgroup", "exclude")
    _assert_json_report_is(streamed, reference)


@pytest.mark.parametrize("column, value", [("s", True), ("t", "1_000"), ("w", False)])
def test_json_scores_and_weights_written_otherwise_than_as_numbers_are_refused_streamed(
        tmp_path, capsys, monkeypatch, column, value):
    """A score or weight written ``true``/``false``, or as text that is no number's ("1_000",
    which Python's ``float`` reads), among numbers in a later batch of a streamed JSON-lines
    file, is refused naming its column and value (pandas read them as 1.0/0.0 and 1000.0,
    and the report was made on them; found by review)."""
    rng = np.random.default_rng(4)
    rows = [{"y": int(rng.random() < 0.4), "s": float(rng.random()), "t": float(rng.random()),
             "w": float(rng.uniform(0.5, 2)), **{g: bool(rng.random() < 0.3) for g in SUBGROUPS}}
            for _ in range(40_000)]
    rows[30_000][column] = value
    path = tmp_path / "d.jsonl"
    _json_lines(path, rows)
    limit = _four_mib_for_data(monkeypatch, batch_rows=4_000) + 2 * 2 ** 20  # (7 columns)
    status = _report(path, tmp_path / "o.json", "--weight", "w", "--max-memory", str(limit))
    err = capsys.readouterr().err
    assert status == 1 and "streaming it" in err, err
    assert f"column {column!r}" in err and f"{value!r} at row 30000" in err, err
    assert not (tmp_path / "o.json").exists()


def test_json_keys_that_only_later_lines_have_are_columns(tmp_path, capsys):
    """A JSON line may leave out a key whose value is missing, the first line too: a column
    is one that some line has as a key (the lines without it: missing values). A key no
    line has, or only an object nested in a line, is an unknown column, named."""
    rng = np.random.default_rng(3)
    rows = []
    for i in range(2_000):
        row = {"y": int(rng.random() < 0.4), "s": float(np.round(rng.random(), 2)),
               "t": float(rng.random()), "g0": int(rng.random() < 0.3),
               "note": 'a "g2": 1 in a value'}
        if i >= 1_500:
            row["g1"], row["g2"] = int(rng.random() < 0.5), int(rng.random() < 0.5)
        if i % 5 == 0:
            row["inner"] = {"kept_inside": 1}
        rows.append(row)
    path = tmp_path / "late.jsonl"
    _json_lines(path, rows)
    df = pd.DataFrame(rows)
    reference = quiet(fastbias.evaluate, df, label="y", scores=["s", "t"],
                      subgroups=SUBGROUPS, missing_subgroup="exclude")
    assert _report(path, tmp_path / "o.json", "--missing-subgroup", "exclude") == 0, \
        capsys.readouterr().err
    capsys.readouterr()
    assert (reference.for_model("s")["subgroup_size"] > 0).all()
    _assert_json_report_is(json.loads((tmp_path / "o.json").read_text()), reference)
    for name in ("kept_inside", "g3"):
        status = main(["report", str(path), "--label", "y", "--scores", "s", "--subgroups",
                       "g0", name, "--out", str(tmp_path / "x.json"), "--progress", "never"])
        err = capsys.readouterr().err
        assert status == 1 and f"unknown column {name!r} (--subgroups)" in err, err


def test_subgroups_all_boolean_takes_json_keys_the_first_line_leaves_out(tmp_path, capsys):
    """--subgroups-all-boolean on JSON lines: every key some line has is a candidate (one in
    the last line alone too); the chosen columns give the report of naming them."""
    rng = np.random.default_rng(5)
    rows = []
    for i in range(3_000):
        row = {"y": bool(rng.random() < 0.4), "s": float(np.round(rng.random(), 3)),
               "t": float(rng.random()), "g0": bool(rng.random() < 0.3), "note": "text"}
        if i > 0 and rng.random() < 0.8:  # never in the first line; null in some
            row["g1"] = bool(rng.random() < 0.5) if rng.random() < 0.8 else None
        if i > 2_000:
            row["count"] = 3  # a number: not a flag
        if i == 2_999:
            row["g2"] = True
        rows.append(row)
    path = tmp_path / "flags.jsonl"
    _json_lines(path, rows)
    assert _report(path, tmp_path / "named.json") == 0
    capsys.readouterr()
    args = ["report", str(path), "--label", "y", "--scores", "s", "t",
            "--subgroups-all-boolean", "--out", str(tmp_path / "all.json"), "--progress", "never"]
    assert main(args) == 0
    capsys.readouterr()
    named, chosen = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("named", "all"))
    assert [r["subgroup"] for r in chosen["models"][0]["subgroups"]] == \
        [r["subgroup"] for r in named["models"][0]["subgroups"]]
    assert sorted(r["subgroup"] for r in chosen["models"][0]["subgroups"]) == SUBGROUPS
    assert chosen["models"] == named["models"]


def test_later_json_keys_counts_only_the_keys_of_each_lines_object(tmp_path):
    from fastbias.validate.textfile import later_json_keys

    path = tmp_path / "k.jsonl"
    lines = ['{"a": 1}',
             '{"a": 2, "text": "\\"b\\": not a key"}',  # "b": inside a string value
             '{"a": 3, "inner": {"c": 1}}',  # c only in a nested object
             '{"a": 4, "caf\\u00e9" : 1}',  # written with ensure_ascii (and a space)
             '{"a": 5, "na\u00efve": 2}',  # written without it
             '{"a": 6, "text": "ends with \\\\", "d": 0}',  # an escaped backslash, then d
             '[{"f": 1}, ["f", 2]]',  # an array: no keys (a line the reading refuses)
             '{"a\\/b": 1, "x\\u003Cy": 2, "g\\u0031": 3, "\\ud83d\\ude00": 4}']  # escapes
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert json.loads(lines[3]) == {"a": 4, "caf\u00e9": 1}
    assert json.loads(lines[-1]) == {"a/b": 1, "x<y": 2, "g1": 3, "\U0001f600": 4}
    wanted = ["b", "c", "caf\u00e9", "na\u00efve", "d", "e", "f", "a/b", "x<y", "g1",
              "\U0001f600"]
    found = later_json_keys(str(path), None, wanted)
    assert found == {"caf\u00e9", "na\u00efve", "d", "a/b", "x<y", "g1", "\U0001f600"}


def test_a_json_column_of_booleans_and_numbers_is_refused_naming_both(tmp_path, capsys):
    """true beside 1 in one column is two kinds of value (a flag, a number compared with the
    threshold): refused, naming one of each, for an identity and for the label alike."""
    rows = [{"y": i % 2, "s": i / 10, "t": i / 10, "g0": True, "g1": 1, "g2": False}
            for i in range(10)]
    rows[3]["g1"] = True
    path = tmp_path / "mixed.jsonl"
    _json_lines(path, rows)
    assert _report(path, tmp_path / "o.json") == 1
    err = capsys.readouterr().err
    assert "subgroup column 'g1' holds both booleans and numbers (1 at position 0 and True " \
           "at position 3)" in err
    for row in rows:
        row["g1"] = 1
    rows[5]["y"] = True
    _json_lines(path, rows)
    assert _report(path, tmp_path / "o.json") == 1
    err = capsys.readouterr().err
    assert "label column 'y' holds both booleans and numbers (0 at position 0 and True at " \
           "position 5)" in err


def test_a_text_label_without_positive_is_refused_before_streaming(tmp_path, capsys,
                                                                    monkeypatch):

    df = _tied_frame(60_000, seed=2)
    df["t"] = df["s"]
    df["y"] = np.where(df["y"] == 1, "toxic", "fine")
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    limit = _four_mib_for_data(monkeypatch)
    status = _report(path, tmp_path / "o.json", "--max-memory", str(limit))
    err = capsys.readouterr().err
    assert status == 1
    assert "label column 'y' is not numeric (values like 'fine', 'toxic'); say which value " \
           "is the positive class with --positive VALUE" in err
    assert "pass 1" not in err  # refused before any pass over the file


@pytest.mark.jit_heavy
@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_cli_streams_a_text_label_with_positive_to_the_in_memory_report(
        tmp_path, capsys, monkeypatch, suffix):
    """--positive on streamed data (it needed the rows in memory): a text label whose other
    class is "None" (a class, not a missing value) gives the in-memory report."""
    df = _tied_frame(40_000, seed=2)
    df["t"] = np.random.default_rng(8).random(len(df))
    df["y"] = np.where(df["y"] == 1, "toxic", "None")
    path = _written(df, tmp_path, suffix)
    memory, streamed = memory_and_streamed_reports(path, tmp_path, capsys, monkeypatch,
                                                   "--positive", "toxic")
    assert streamed["settings"]["pos_label"] == memory["settings"]["pos_label"] == "toxic"
    _assert_same_reports(memory, streamed)


@pytest.mark.parametrize("positive, labels, expected", [
    ("2", [0, 2], None),                        # numbers: --positive read as one
    ("TRUE", [False, True], None),              # booleans, any case
    ("yes", [0, 1], "--positive 'yes' is not a number, and label column 'y' holds numbers"),
    ("1", [False, True], "--positive '1': label column 'y' holds booleans (true/false)"),
])
def test_streamed_positive_is_read_in_the_label_columns_type(tmp_path, capsys, monkeypatch,
                                                            positive, labels, expected):
    pytest.importorskip("pyarrow")
    df = _tied_frame(60_000, seed=4)
    df["t"] = df["s"]
    df["y"] = np.where(df["y"] == 1, labels[1], labels[0])
    path = tmp_path / "d.parquet"
    df.to_parquet(path, row_group_size=7_000)
    limit = _four_mib_for_data(monkeypatch)
    status = _report(path, tmp_path / "o.json", "--max-memory", str(limit),
                     "--positive", positive)
    err = capsys.readouterr().err
    if expected is not None:
        assert status == 1 and expected in err, err
        assert "pass 1" not in err
        return
    assert status == 0, err
    report = json.loads((tmp_path / "o.json").read_text())
    assert report["settings"]["engine"] == "streaming"
    ref = fastbias.evaluate(df.assign(y=df["y"] == labels[1]), label="y", scores=["s", "t"],
                            subgroups=SUBGROUPS)
    assert report["n_positives"] == int((df["y"] == labels[1]).sum())
    assert [row["bpsn_auc"] for row in report["models"][0]["subgroups"]] == pytest.approx(
        list(ref.for_model("s")["bpsn_auc"]), rel=1e-15, abs=0)


def test_batches_are_sized_by_the_text_a_record_takes(tmp_path):
    """pandas tokenizes whole records, the columns it drops included: a batch of records of
    10 KB each is sized by that, not by the few columns kept."""
    from fastbias.cli import _streaming_settings, build_parser
    from fastbias.validate.textfile import record_bytes

    path = tmp_path / "wide.csv"
    note = "x" * 9_990
    rows = [f'{i % 2},0.{i % 7},1,"{note}\n{note}"' for i in range(400)]  # quoted newline
    path.write_text("y,s,g,note\n" + "\n".join(rows) + "\n")
    per_record = (path.stat().st_size) / 401
    assert abs(record_bytes(str(path), None, quotes=True) - per_record) / per_record < 0.01
    args = build_parser().parse_args(["report", str(path), "--label", "y", "--scores", "s",
                                      "--subgroups", "g"])
    budget = 2 ** 30
    batch_rows, _ = _streaming_settings(args, budget, 3, record_bytes(str(path), None, True))
    assert batch_rows * 3 * per_record <= budget // 4 + 3 * per_record
    narrow, _ = _streaming_settings(args, budget, 3, 0)
    assert narrow > 4 * batch_rows  # the columns alone would have allowed far more


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_float32_identity_columns_are_compared_in_float64_on_every_path(dtype):
    """0.9 in float32 is below 0.9: not a member at threshold 0.9, on every path (compiled
    kernels compared in float64; uncompiled, numpy compared a float32 value with a Python
    float in float32 and said member)."""
    from fastbias.prepare import _kernels as PK

    values = np.array([0.7, 0.9, 0.95, 0.3], dtype=dtype)
    widened = values.astype(np.float32)  # the identity reader widens float16 (exactly)
    out = np.empty(4, dtype=np.int64)
    count = PK.threshold_column_rows(widened, 0.9, out)
    assert out[:count].tolist() == [2]
    codes = np.zeros((4, 1), dtype=np.int8)
    PK.membership_codes(widened, 0.9, np.zeros(0, bool), False, codes, 0)
    assert codes[:, 0].tolist() == [0, 0, 1, 0]
    y = np.array([0, 1, 0, 1] * 50, dtype=bool)
    s = np.linspace(0, 1, 200)
    g = np.tile(values, 50)
    table = quiet(fastbias.bias_metrics, y, s, {"g": pd.Series(g)}, subgroup_threshold=0.9)
    assert table.loc["g", "subgroup_size"] == 50


# ----------------------------------------------------------------------------- intersections

@pytest.mark.parametrize("policy", ["background", "exclude"])
def test_streamed_intersections_match_the_brute_force_of_the_and_column(tmp_path, policy):
    """Each "a & b" row of evaluate_csv equals the brute-force pair count on the AND of the
    two thresholded columns (with 'exclude', rows unannotated for either are left out)."""
    df = _tied_frame(400, seed=4)
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    result = quiet(evaluate_csv, path, label="y", scores="s", subgroups=["g0", "g1", "g2"],
                   missing_subgroup=policy, batch_rows=11, bucket_rows=25, intersections=3)
    y, s = df["y"].to_numpy() == 1, df["s"].to_numpy()
    table = result.for_model()
    assert table.attrs["intersections"] == [n for n in table.index if " & " in n]
    assert [n for n in table.index if " & " in n][:3] == ["g0 & g1", "g0 & g2", "g1 & g2"]
    for name in table.attrs["intersections"]:
        parts = [df[p].to_numpy() for p in name.split(" & ")]
        member = np.logical_and.reduce([p >= 0.5 for p in parts])
        kept = np.ones(len(df), bool)
        if policy == "exclude":
            kept = np.logical_and.reduce([~np.isnan(p) for p in parts])
        assert (member[kept] & y[kept]).any() and (member[kept] & ~y[kept]).any()
        expected = brute_force_metrics(y[kept], s[kept], member[kept])
        for metric in METRICS:
            assert table.loc[name, metric] == pytest.approx(expected[metric], rel=0, abs=1e-15), \
                (name, metric)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("policy", ["background", "exclude"])
def test_streamed_intersections_equal_evaluate(tmp_path, policy, weighted, monkeypatch):
    """Parquet and CSV, many batches cut into pieces, many buckets and a score tied on 40%
    of the rows (counted without being stored): the same rows, names, order, numbers and
    attrs as fastbias.evaluate(intersections=3, min_subgroup_size=3)."""
    import fastbias.streaming as streaming

    monkeypatch.setattr(streaming, "COMBINATION_BATCH_BYTES", 1_000)  # pieces of 1,000 rows
    df = _tied_frame(8_000, seed=6, n_groups=4)
    df.loc[np.random.default_rng(7).random(len(df)) < 0.4, "s"] = 0.5
    df["w"] = np.random.default_rng(8).integers(1, 5, len(df)) * 0.25
    kw = dict(label="y", scores="s", subgroups=["g0", "g1", "g2", "g3"], intersections=3,
              min_subgroup_size=3, missing_subgroup=policy,
              sample_weight="w" if weighted else None)
    expected = quiet(fastbias.evaluate, df, **kw)
    assert len(expected.for_model().attrs["intersections"]) == 10
    df.to_csv(tmp_path / "d.csv", index=False)
    results = [quiet(evaluate_csv, tmp_path / "d.csv", batch_rows=2_500, bucket_rows=1_500,
                     **kw)]
    if importlib.util.find_spec("pyarrow") is not None:
        df.to_parquet(tmp_path / "d.parquet", row_group_size=2_000)
        results.append(quiet(evaluate_parquet, tmp_path / "d.parquet", batch_rows=2_500,
                             bucket_rows=1_500, **kw))
    for result in results:
        pd.testing.assert_frame_equal(result.table, expected.table, check_exact=not weighted,
                                      rtol=1e-14)
        assert result.for_model().attrs == expected.for_model().attrs
        assert result.settings["intersection_members"] == expected.settings[
            "intersection_members"]
        assert result.final_metric().equals(expected.final_metric())   # subgroups only


def test_streamed_intersections_keep_only_those_large_enough(tmp_path):
    df = _tied_frame(3_000, seed=9)
    df.to_csv(tmp_path / "d.csv", index=False)
    kw = dict(label="y", scores="s", subgroups=["g0", "g1", "g2"], intersections=2)
    for size in (1, 40, 10_000):
        expected = quiet(fastbias.evaluate, df, min_subgroup_size=size, **kw)
        result = quiet(evaluate_csv, tmp_path / "d.csv", min_subgroup_size=size, **kw)
        assert list(result.for_model().index) == list(expected.for_model().index)
    assert list(result.for_model().index) == ["g0", "g1", "g2"]          # none is that large
    with pytest.raises(ValueError, match="intersections must be None, 2"):
        evaluate_csv(tmp_path / "d.csv", intersections=4, **{k: v for k, v in kw.items()
                                                              if k != "intersections"})


@pytest.mark.jit_heavy  # the streaming kernels are covered uncompiled by the tests above
def test_cli_streams_intersections_to_the_in_memory_report(tmp_path, capsys, monkeypatch):
    df = _tied_frame(40_000, seed=2)
    df["t"] = np.random.default_rng(8).random(len(df))
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    streamed = _assert_streamed_report_equals_memory(
        path, tmp_path, capsys, monkeypatch, "--missing-subgroup", "exclude",
        "--intersections", "2", "--min-subgroup-size", "5")
    assert any(" & " in row["subgroup"] for row in streamed["models"][0]["subgroups"])


@pytest.mark.jit_heavy
def test_cli_streams_significance_to_the_in_memory_report(tmp_path, capsys, monkeypatch):
    """--significance on streamed data: every cell has 30 rows or more, so the p-values,
    adjusted p-values and flags are those of the report made in memory, to the bit."""
    df = _tied_frame(40_000, seed=2)
    df["t"] = np.random.default_rng(8).random(len(df))
    df.loc[df["y"] == 0, "t"] += 0.2 * df.loc[df["y"] == 0, "g1"].fillna(0)  # a gap to flag
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    streamed = _assert_streamed_report_equals_memory(
        path, tmp_path, capsys, monkeypatch, "--significance", "holm", "--intersections", "2")
    rows = [row for model in streamed["models"] for row in model["subgroups"]]
    assert all("bpsn_auc_pvalue_adjusted" in row for row in rows)
    assert any(row["bpsn_auc_significant"] for row in rows)


@pytest.mark.jit_heavy
def test_cli_streams_thresholds_to_the_in_memory_report(tmp_path, capsys, monkeypatch):
    """--thresholds on streamed data: every bucket counts its rows at each threshold; the
    JSON report's threshold rows are those of the report made in memory."""
    df = _tied_frame(40_000, seed=3)
    df["t"] = np.random.default_rng(9).random(len(df))
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    streamed = _assert_streamed_report_equals_memory(
        path, tmp_path, capsys, monkeypatch, "--thresholds", "0.3", "0.5",
        "--missing-subgroup", "exclude")
    rows = streamed["models"][0]["thresholds"]
    assert len(rows) == 2 * len(SUBGROUPS) and "fpr_gap" in rows[0]


def test_cli_streams_text_classes_whose_first_rows_look_numeric(tmp_path, capsys, monkeypatch):
    """Classes "toxic" and "0" with only "0" in the first 5,000 rows: the first batches read
    as numbers, and streaming refused --positive toxic as "not a number"; a --positive that
    is not a number reads the label as text in every batch, as the report in memory does."""
    df = _tied_frame(40_000, seed=2)
    df["t"] = np.random.default_rng(8).random(len(df))
    df["y"] = np.where(df["y"] == 1, "toxic", "0")
    df.loc[:4_999, "y"] = "0"
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    memory, streamed = memory_and_streamed_reports(path, tmp_path, capsys, monkeypatch,
                                                   "--positive", "toxic")
    assert streamed["settings"]["pos_label"] == memory["settings"]["pos_label"] == "toxic"
    _assert_same_reports(memory, streamed)
