"""Security of the thirty-first session's changes: an independent review's tests
(2026-11-27): --subgroups-file's header read, the messages that now echo values, the JSON
report's non-finite values, EvaluationResult's warning replay and fastbias.dask's error path.

Found by review (the tests named ``..._bounded``/``..._capped``; each fails before its fix):
a CSV header of many short quoted lines was read whole, however large; a long padded name
in --subgroups-file compiled a regular expression of 40 bytes a character; the names file
was read whole; names were echoed whole in messages. The others pin properties that hold."""
from __future__ import annotations

import argparse
import gzip
import json
import os
import pickle
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pandas as pd
import pytest

from fastbias.cli import CLIError, _subgroups_from_file, main, read_header

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNSAFE = ["\x1b", "\x07", "\u202e", "\x9b", "\x00"]


def _namespace(data):
    return argparse.Namespace(data=str(data), input_format=None, sep=None)


def _write_csv(path, columns):
    frame = pd.DataFrame({c: [0, 1, 0, 1] for c in columns})
    frame.to_csv(path, index=False)


def _child(code: str, timeout: float = 60):
    env = {**os.environ, "PYTHONPATH": ROOT, "OPENBLAS_NUM_THREADS": "1",
           "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=timeout)


# ------------------------------------------------------------------ bounded memory: headers

def test_csv_header_record_is_bounded(tmp_path):
    """(Was a memory bomb): the data file's header, which --subgroups-file now also
    reads (read_header, via text_header), is guarded per *line*, not per CSV *record*
    (open_text without quotes=True): a header of quoted names each holding a line break is
    one record of any length, taken whole by csv.reader. 17 MiB here (past the 16 MiB
    LINE_LIMIT that the data read enforces); a gzip of `"\\n",` repeated inflates the same
    way to GBs (a 9 MB .gz of 4M such names took 740 MB RSS)."""
    path = tmp_path / "bomb.csv.gz"
    field = "x" * 1000
    with gzip.open(path, "wb") as handle:
        handle.write(",".join(f'"{i}{field}\n"' for i in range(17_500)).encode() + b"\n1\n")
    with pytest.raises(CLIError, match="longer than"):
        read_header(str(path))


def test_subgroups_file_read_is_bounded(tmp_path):
    """(Was a memory bomb): _subgroups_from_file does handle.read() of the whole names
    file (the old code also held every line): /dev/zero, a FIFO or a huge file grows memory
    until it runs out. Under a 1 GiB address-space limit it ends in a bare MemoryError
    (the CLI prints "fastbias: error: " and nothing else) instead of a CLIError naming
    --subgroups-file and a size limit."""
    code = """
        import resource, sys
        from fastbias.cli import _subgroups_from_file, CLIError
        limit = 1 << 30
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        try:
            _subgroups_from_file("/dev/zero")
        except CLIError as exc:
            print("CLIError", str(exc)[:200]); sys.exit(0)
        except MemoryError:
            print("MemoryError"); sys.exit(3)
    """
    done = _child(code, timeout=45)
    assert done.returncode == 0, (done.stdout + done.stderr)[-500:]


def test_long_padded_name_is_bounded(tmp_path):
    """(Was a memory bomb): a padded name in --subgroups-file (new: padded and stripped
    names are looked up in the data's header) with a JSON-lines data file builds one regular
    expression per name, ~40 bytes of pattern per character (_json_text), compiled by sre:
    a 400 KB line took 31 s and 1.2 GB over the baseline; 4 MB would need ~12 GB. Here a
    100 KB names file (~300 MB, ~8 s now) must not cost 100 MB."""
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"y": 1, "s": 0.5, "g": 1}) + "\n")
    names = tmp_path / "names.txt"
    names.write_text("g\n" + "x" * 100_000 + " \n")
    code = f"""
        import argparse, resource
        from fastbias.cli import _subgroups_from_file
        args = argparse.Namespace(data={str(data)!r}, input_format=None, sep=None)
        from fastbias.cli import CLIError
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            _subgroups_from_file({str(names)!r}, args)
        except CLIError as error:  # (a line longer than a name may be: refused at once)
            print("refused", "at most 4,096 characters" in str(error))
        print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
    """
    done = _child(code)
    assert done.returncode == 0, done.stderr[-500:]
    assert "refused True" in done.stdout, done.stdout
    grown_mib = int(done.stdout.split()[-1])
    assert grown_mib < 100, f"{grown_mib} MiB for a 100 KB names file"


# ------------------------------------------------------------------ terminal escaping

def _run_cli(capsys, argv):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_padded_name_both_in_data_message_is_escaped(tmp_path, capsys):
    """Holds: 'both a column X and a column X-stripped' names ANSI/bidi/NUL/C1 names only
    escaped (repr, then terminal_text)."""
    evil = "\x1b]0;pwn\x07\u202e\x9b2J\x00g"
    data = tmp_path / "d.csv"
    _write_csv(data, ["y", "s", evil, evil + " "])
    names = tmp_path / "names.txt"
    names.write_text(evil + " \n", encoding="utf-8")
    code, out, err = _run_cli(capsys, ["report", str(data), "--label", "y", "--scores", "s",
                                       "--subgroups-file", str(names), "--out",
                                       str(tmp_path / "r.json"), "--progress", "never"])
    assert code == 1 and "rename one" in err
    for char in UNSAFE:
        assert char not in err and char not in out


def test_unknown_subgroups_file_name_message_is_escaped(tmp_path, capsys):
    """Holds: an unknown name from the names file (and the data's own names listed) reach
    stderr escaped."""
    evil = "\x1b[31mred\u2066\r\n"
    data = tmp_path / "d.csv"
    _write_csv(data, ["y", "s", "\x1b[2Jcol\x85"])
    names = tmp_path / "names.txt"
    names.write_bytes(("\x1b[31mred\u2066\x0b \n").encode())
    code, out, err = _run_cli(capsys, ["report", str(data), "--label", "y", "--scores", "s",
                                       "--subgroups-file", str(names), "--out",
                                       str(tmp_path / "r.json"), "--progress", "never"])
    assert code == 1 and "--subgroups-file" in err
    for char in UNSAFE + ["\x85", "\u2066", "\x0b"]:
        assert char not in err and char not in out
    assert evil not in err


def test_error_messages_echo_names_capped(tmp_path, capsys):
    """(Was terminal flooding): a 1 MB name from --subgroups-file is echoed whole
    (twice where the data has both forms) in the one-line error: nothing bounds how much of
    a name a message shows (the same holds of the data's own names in "The file has
    columns: ...", up to 15 names of up to 16 MiB each)."""
    data = tmp_path / "d.csv"
    _write_csv(data, ["y", "s", "g"])
    names = tmp_path / "names.txt"
    names.write_text("A" * 1_000_000 + " \n")
    code, _, err = _run_cli(capsys, ["report", str(data), "--label", "y", "--scores", "s",
                                     "--subgroups-file", str(names), "--out",
                                     str(tmp_path / "r.json"), "--progress", "never"])
    assert code == 1
    assert len(err) < 20_000, f"error message of {len(err):,} characters"


def test_names_differing_only_in_whitespace(tmp_path):
    """Holds: ' g' and 'g ' with only 'g' in the data are one name repeated (an error);
    with both padded forms in the data each is taken as written; 'g ' beside 'g' is an
    error."""
    data = tmp_path / "d.csv"
    names = tmp_path / "names.txt"
    _write_csv(data, ["y", "s", "g"])
    names.write_text(" g\ng \n")
    with pytest.raises(CLIError):
        _subgroups_from_file(str(names), _namespace(data))
    _write_csv(data, ["y", "s", " g", "g "])
    assert _subgroups_from_file(str(names), _namespace(data)) == [" g", "g "]
    _write_csv(data, ["y", "s", "g", "g "])
    names.write_text("g \n")
    with pytest.raises(CLIError, match="rename one"):
        _subgroups_from_file(str(names), _namespace(data))


def test_subgroups_file_binary_and_nul(tmp_path):
    """Holds: a names file that is not UTF-8 is a CLIError; NUL bytes in a name are kept
    as written (and matched against the data's names exactly)."""
    names = tmp_path / "names.bin"
    names.write_bytes(b"\xff\xfe\x00garbage\n")
    with pytest.raises(CLIError, match="not UTF-8"):
        _subgroups_from_file(str(names))
    names.write_bytes(b"g\x00h \n")
    assert _subgroups_from_file(str(names)) == ["g\x00h"]


# ------------------------------------------------------------------ strict JSON

def test_json_report_strict_with_infinite_thresholds_and_options(tmp_path):
    """Holds: the JSON report parses as strict JSON (no NaN/Infinity literals) with
    thresholds of +-inf, undefined rates, intersections, sensitive features, weights,
    significance and nan_policy='omit'."""
    import fastbias
    from fastbias.report import BiasReport

    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame({"y": rng.integers(0, 2, n).astype(float), "s": rng.random(n),
                       "g": rng.integers(0, 2, n).astype(bool),
                       "h": rng.integers(0, 2, n).astype(bool),
                       "f": rng.choice(["a", "b"], n), "w": rng.random(n) + 0.5})
    df.loc[3, "s"] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fastbias.evaluate(df, label="y", scores="s", subgroups=["g", "h"],
                                   sensitive_features=["f"], sample_weight="w",
                                   thresholds=[-np.inf, 0.5, np.inf], significance="holm",
                                   intersections=2, nan_policy="omit")
        text = BiasReport.from_result(df, result).to_json()

    def refuse(constant):
        raise ValueError(f"non-strict JSON constant {constant}")

    parsed = json.loads(text, parse_constant=refuse)
    assert "Infinity" in parsed["settings"]["thresholds"]


# ------------------------------------------------------------------ pickle replay

def _result():
    import fastbias

    rng = np.random.default_rng(1)
    df = pd.DataFrame({"y": rng.integers(0, 2, 50), "s": rng.random(50),
                       "g": rng.integers(0, 2, 50).astype(bool)})
    return fastbias.evaluate(df, label="y", scores="s", subgroups=["g"])


def test_setstate_replay_adds_nothing_beyond_pickle():
    """Holds (pickle is code execution anyway): a replayed warning is only warnings.warn of
    the carried (message, category): another pid warns once; this pid not at all; the
    carried list is not kept once warned (a second pickle does not warn again); a category
    that is not a Warning is passed over (a crafted pickle can do far worse by itself)."""
    result = _result()
    result._replay = (os.getpid() + 1, [("\x1b[31m" + "m" * 10_000, RuntimeWarning)])
    blob = pickle.dumps(result)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = pickle.loads(blob)
        again = pickle.loads(pickle.dumps(loaded))
    assert len(caught) == 1 and caught[0].category is RuntimeWarning
    assert not hasattr(loaded, "_replay") and not hasattr(again, "_replay")
    result._replay = (os.getpid(), [("same process", UserWarning)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pickle.loads(pickle.dumps(result))
    assert not caught
    result._replay = (os.getpid() + 1, [("x", int)])  # (not a Warning: not warned, no error)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pickle.loads(pickle.dumps(result))
    assert not caught


# ------------------------------------------------------------------ Dask error path

def test_dask_lacking_column_reads_each_partition_once_more():
    """Holds (cost pinned): the error path reads every partition again, one at a time, into
    the calling process (dask.compute of data.partitions[i]): memory of one partition at a
    time in the client, time of a second pass over the data; the message names the
    partition."""
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    import collections

    import fastbias.dask as fd

    calls = collections.Counter()

    def part(i, n=200):
        calls[i] += 1
        rng = np.random.default_rng(i)
        frame = pd.DataFrame({"y": rng.integers(0, 2, n), "s": rng.random(n),
                              "g": rng.integers(0, 2, n).astype(bool)})
        return frame.drop(columns="g") if i == 3 else frame

    meta = part(0).iloc[:0]
    calls.clear()
    ddf = dd.from_delayed([dask.delayed(part)(i) for i in range(4)], meta=meta,
                          verify_meta=False)
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(ValueError, match="column 'g' is missing from Dask partition 3"):
            fd.evaluate(ddf, label="y", scores="s", subgroups=["g"])
    assert max(calls.values()) <= 3 and set(calls) == {0, 1, 2, 3}
