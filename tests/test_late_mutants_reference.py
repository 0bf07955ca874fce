"""A mutation audit's tests (2026-11-27) of the thirty-second session's changes (commits
3479b17..e16068a: the readers' second look at large integers, JSON lines, the Parquet folder
walk, the histograms' weights, names_column).

The audit found no defect: 37 of 48 mutants were killed by the suite; each test here kills
one of the 8 that lived and changed what a user sees. Expected values come from hand-made
files, Python's json, pyarrow's own reading and hand counts, never from fastbias."""
import json
import os
import warnings

import numpy as np
import pandas as pd
import pytest

from fastbias.validate import parquet as pqmod
from fastbias.validate.textfile import (
    DataFileError,
    iter_text_batches,
    open_text_source,
)


def _rows(path, columns, batch_rows=10):
    src = open_text_source(str(path), wanted=columns)
    frames = [f for f, _ in iter_text_batches(src, list(columns), batch_rows)]
    return pd.concat(frames, ignore_index=True)


# ---------------------------------------------------------------- JSON lines (textfile.py)

def test_jsonl_line_with_raw_tab_and_brace_comma_inside_a_string_is_read(tmp_path):
    # Kills T17 (_objects_only answering False for a line that Python's json cannot parse).
    # One object per line; a text value holds "}, " and a raw tab (RFC 8259 forbids a raw
    # tab in a string, so Python's strict json.loads refuses the line, pandas reads it). The
    # line is one object: it must be read, not refused as "not a JSON object".
    # (the first line is the header, parsed strictly: the line of the tab comes second)
    lines = ['{"y": 0, "s": 0.25, "t": "d"}', '{"y": 1, "s": 0.75, "t": "a}, b\tc"}']
    p = tmp_path / "tab.jsonl"
    p.write_text("\n".join(lines) + "\n")
    expected = [json.loads(line, strict=False) for line in lines]  # Python's own reading
    frame = _rows(p, ["y", "s", "t"])
    assert frame["y"].tolist() == [r["y"] for r in expected]
    assert frame["s"].tolist() == [r["s"] for r in expected]
    assert frame["t"].tolist() == [r["t"] for r in expected]


def test_jsonl_key_on_a_later_line_written_with_a_space_before_the_colon_is_found(tmp_path):
    # Kills T20 (later_json_keys' pattern without \s* before ':'). JSON allows spaces before
    # the colon ("g" : 1); a key that only a later line holds, written so, is a column.
    lines = ['{"y": 1, "s": 0.9}', '{"y": 0, "s": 0.2, "g" : 1}', '{"y": 1, "s": 0.4, "g" : 0}']
    p = tmp_path / "later.jsonl"
    p.write_text("\n".join(lines) + "\n")
    assert "g" in open_text_source(str(p), wanted=["y", "s", "g"]).names
    frame = _rows(p, ["y", "s", "g"])
    expected = [json.loads(line).get("g") for line in lines]
    got = frame["g"].tolist()
    assert np.isnan(got[0]) and expected[0] is None
    assert got[1:] == expected[1:]


# ---------------------------------------------------------------- joined batches (textfile.py)

def test_cli_joined_uint64_batch_beside_float_batch_is_refused(tmp_path, monkeypatch):
    # Kills T22 (joined_batches looking only at int64 batches). Batch 1 holds
    # 18446744073709551615 and 18446744073709551614 (pandas: uint64, exact), batch 2 decimals:
    # joined as float64 both become 18446744073709551616.0 (a new tie), silently. Right: a
    # refusal naming the column and the integer, as for an int64 batch.
    from fastbias import cli
    monkeypatch.setattr(cli, "CSV_CHUNK_ROWS", 2)
    a, b = 2 ** 64 - 1, 2 ** 64 - 2
    assert float(a) == float(b)  # the reference: float64 cannot tell them apart
    p = tmp_path / "u.csv"
    p.write_text("s\n%d\n%d\n0.5\n0.25\n" % (a, b))
    with pytest.raises(DataFileError, match=r"'s'.*18446744073709551615"):
        cli._read_data(str(p), ["s"])


# ---------------------------------------------------------------- Parquet folders (parquet.py)

def _parquet(path, values=(0.5,)):
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"s": list(values)}).to_parquet(path)
    return str(path)


def test_link_back_to_an_inner_folder_is_cut(tmp_path):
    # Kills P5 (the folders above a link not growing as the walk goes down: only a loop to
    # the directory given was cut). d/sub/again -> d/sub is a loop below the top: the walk
    # must list d/sub/x.parquet once (pyarrow's own listing: one file), not follow the link
    # until the path is too long or a million entries.
    x = _parquet(tmp_path / "d" / "sub" / "x.parquet")
    os.symlink(tmp_path / "d" / "sub", tmp_path / "d" / "sub" / "again")
    _, files = pqmod.parquet_files(str(tmp_path / "d"))
    assert files == [x]


def test_link_to_a_file_outside_is_read(tmp_path):
    # Kills P13 (a link to a file left out). d/b.parquet -> elsewhere/real.parquet: a file of
    # the directory as the operating system shows it (os.path.isfile is True), read once.
    real = _parquet(tmp_path / "elsewhere" / "real.parquet")
    a = _parquet(tmp_path / "d" / "a.parquet")
    os.symlink(real, tmp_path / "d" / "b.parquet")
    assert os.path.isfile(tmp_path / "d" / "b.parquet")
    _, files = pqmod.parquet_files(str(tmp_path / "d"))
    assert files == [a, str(tmp_path / "d" / "b.parquet")]


def test_walk_past_most_entries_is_refused(tmp_path, monkeypatch):
    # Kills P12 (the bound on entries not MOST_ENTRIES). With the bound set to 5, a folder
    # of 8 files is refused by name, not listed.
    for i in range(8):
        _parquet(tmp_path / "d" / f"p{i}.parquet")
    monkeypatch.setattr(pqmod, "MOST_ENTRIES", 5)
    with pytest.raises(ValueError, match="more than 5 files and folders"):
        pqmod.parquet_files(str(tmp_path / "d"))
    monkeypatch.setattr(pqmod, "MOST_ENTRIES", 8)
    assert len(pqmod.parquet_files(str(tmp_path / "d"))[1]) == 8


# ---------------------------------------------------------------- histograms (reports)

def _weighted_frame(weight_name):
    rng = np.random.default_rng(3)
    n = 90
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "s": rng.random(n),
                       "g": rng.integers(0, 2, n).astype(float)})
    df[weight_name] = rng.random(n) + 0.1
    df.loc[::5, weight_name] = np.nan
    return df


def _hand_counts(df, keep):
    return {name: int(((df.g == member) & (df.y == label) & keep).sum())
            for name, member, label in (("subgroup_negatives", 1, 0),
                                        ("subgroup_positives", 1, 1),
                                        ("background_negatives", 0, 0),
                                        ("background_positives", 0, 1))}


def test_from_result_finds_a_weight_column_named_0_by_itself(tmp_path):
    # Kills H3 (the recorded weight column taken with `or`: a column named 0 is falsy, so
    # from_result asked for sample_weight= though the result names the column). evaluate
    # takes an integer column name for sample_weight (names_column); a report from the result
    # must leave out the rows of missing weight by itself.
    import fastbias
    from fastbias.report import BiasReport
    df = _weighted_frame(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.evaluate(df, label="y", scores=["s"], subgroups=["g"], sample_weight=0,
                                nan_policy="omit")
        rep = BiasReport.from_result(df, res)
    cells = rep.histograms.cells("s", "g")
    for name, expected in _hand_counts(df, df[0].notna()).items():
        assert int(np.sum(cells[name])) == expected, name


def test_sample_weight_true_is_not_the_column_named_1():
    # Kills H9 (bool no longer refused by names_column): True == 1, so `True in df.columns`
    # holds for a frame with a column named 1, and the weights would silently be that column.
    # Right: a TypeError naming sample_weight (a bool is neither a column name nor weights).
    import fastbias
    df = pd.DataFrame({"y": [0, 1, 0, 1], "s": [.1, .9, .2, .8], "g": [1, 1, 0, 0],
                       1: [1.0, 2.0, 3.0, 4.0]})
    assert True in df.columns  # the trap
    with pytest.raises(TypeError, match="sample_weight"):
        fastbias.evaluate(df, label="y", scores=["s"], subgroups=["g"], sample_weight=True)


@pytest.mark.parametrize("value", [1e20, -1e20, 1.7e308])
def test_histogram_edges_of_one_large_value_are_increasing(value):
    # Kills H10 (a single value padded by 0.5 only: at 1e20, 0.5 is below the spacing of
    # doubles, so every edge equals the value and no bin has a width). Right: bins+1 finite,
    # strictly increasing edges around the value.
    from fastbias.reports.histograms import histogram_edges
    edges = histogram_edges(value, value, 10)
    assert len(edges) == 11 and np.isfinite(edges).all()
    assert (np.diff(edges) > 0).all()
    assert edges[0] < value < edges[-1]


def test_later_json_keys_counts_only_keys_of_a_lines_objects(tmp_path):
    # Kills T19 (any list taken for an object's pairs). A line holding an array is no object:
    # its strings are not keys ("gx" must not unpack as the key "g"), and an array of an
    # object must not stop the search with a bare unpacking error. Internal API: its
    # docstring's contract ("a key counts only as a key of the line's object").
    from fastbias.validate.textfile import later_json_keys
    p = tmp_path / "arr.jsonl"
    p.write_text('{"y": 1, "s": 0.5}\n["gx", {"g": 1}]\n[{"g": 1}]\n{"y": 0, "s": 0.1, "h": 2}\n')
    assert later_json_keys(str(p), None, ["g", "h"]) == {"h"}


def test_report_histograms_of_a_sensitive_feature_named_by_an_integer():
    # Kills H12 (the feature looked up by its text only: the settings name column 5 as "5",
    # a bare KeyError '5'). Each value's cells hold its rows, counted by hand.
    from fastbias.report import bias_report
    rng = np.random.default_rng(1)
    n = 60
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "s": rng.random(n),
                       5: rng.choice(["a", "b", "c"], n)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = bias_report(df, label="y", scores=["s"], subgroups=None, sensitive_features=[5])
    assert list(rep.result.subgroups) == ["5=a", "5=b", "5=c"]
    for value in "abc":
        cells = rep.histograms.cells("s", f"5={value}")
        member = df[5] == value
        for name, inside, label in (("subgroup_negatives", True, 0),
                                    ("subgroup_positives", True, 1),
                                    ("background_negatives", False, 0),
                                    ("background_positives", False, 1)):
            expected = int(((member == inside) & (df.y == label)).sum())
            assert int(np.sum(cells[name])) == expected, (value, name)
