"""A mutation audit of the command line (``cli.py``) by an independent reviewer (forty-fourth
session): 50 hand mutants, 34 killed by the CLI's tests and these together, 2 more by tests
added for them, 10 equivalent (a later check refuses the same input), 3 left (a CSV label read
as text under ``--positive`` across read batches, a sensitive feature that is also an identity
column, a ``--subgroups-file`` name with spaces around it where the data has that spaced
column). Every number is computed here from the file the test wrote (tests/reference.py's
brute force, hand counts, Wilson's formula) and read back from the CLI's own CSV/JSON outputs
with Python's csv/json. Each test names the mutants of cli.py it kills.
"""
import csv
import json
import math
import os

import numpy as np
import pytest

from .cli_runner import run_cli
from .reference import brute_force_metrics
from .test_threshold_costs_reference import _wilson

KEYS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]

# label fractions, scores with ties, identity fractions with missing values, weights
ROWS = [  # y,    m1,  m2,    g1,   g2,   w
    (0.0, 0.10, 0.3, 0.6, 1, 1.0),
    (1.0, 0.90, 0.8, 0.6, 0, 2.0),
    (0.45, 0.40, 0.2, 0.0, 1, 1.0),
    (0.5, 0.30, 0.7, 0.4, None, 1.0),
    (0.3, 0.50, 0.5, None, 0, 1.5),
    (1.0, 0.60, 0.6, 0.2, 1, 3.0),
    (0.7, 0.50, 0.4, 0.45, 0, 0.5),
    (0.0, 0.20, 0.1, 0.9, 0, 1.0),
    (0.35, 0.70, 0.9, 0.3, 1, 2.5),
    (0.8, 0.35, 0.3, 0.5, None, 1.0),
    (0.4, 0.65, 0.6, 0.1, 0, 1.0),
    (0.6, 0.45, 0.2, 0.0, 1, 4.0),
]


def _write(folder, rows=ROWS, name="d.csv"):
    path = os.path.join(folder, name)
    with open(path, "w", newline="") as handle:
        handle.write("y,m1,m2,g1,g2,w\n")
        for row in rows:
            handle.write(",".join("" if v is None else repr(v) for v in row) + "\n")
    return path


def _expected(rows, label_t=0.5, sub_t=0.5, missing="background", weighted=False, model=1):
    """Per subgroup: the five metrics by brute force over the rows as written."""
    y = np.array([r[0] >= label_t for r in rows])
    s = np.array([r[model] for r in rows])
    w = np.array([r[5] for r in rows]) if weighted else None
    out = {}
    for name, col in (("g1", 3), ("g2", 4)):
        vals = [r[col] for r in rows]
        keep = np.array([v is not None or missing == "background" for v in vals])
        member = np.array([v is not None and v >= sub_t for v in vals])
        out[name] = brute_force_metrics(y[keep], s[keep], member[keep],
                                        None if w is None else w[keep])
    return out


def _json_rows(path, model="m1"):
    data = json.load(open(path))
    (m,) = [m for m in data["models"] if m["name"] == model]
    return data, {r["subgroup"]: r for r in m["subgroups"]}


def _same(a, b):
    return (a is None and math.isnan(b)) or (a is not None and a == b)


def _check(rows_out, expected):
    for sub, exp in expected.items():
        for key in KEYS:
            got = rows_out[sub][key]
            got = None if got in (None, "") else float(got)
            assert _same(got, exp[key]), (sub, key, got, exp[key])


def _report(tmp_path, *extra, data=None):
    data = data or _write(str(tmp_path))
    return run_cli(["report", data, "--label", "y", "--scores", "m1", "m2", "--subgroups", "g1",
                    "g2", "-q", *extra], cwd=str(tmp_path))


def test_defaults_thresholds_and_missing_policy(tmp_path):
    """Kills: default --label-threshold wrong (0.25), subgroup_threshold not passed,
    compaction at 0.5 instead of --subgroup-threshold, missing_subgroup ignored."""
    r = _report(tmp_path, "--out", "a.json")
    assert r.returncode == 0, r.stderr
    _check(_json_rows(tmp_path / "a.json")[1], _expected(ROWS))
    r = _report(tmp_path, "--out", "b.csv", "--label-threshold", "0.4",
                "--subgroup-threshold", "0.3", "--missing-subgroup", "exclude")
    assert r.returncode == 0, r.stderr
    got = {row["subgroup"]: row for row in csv.DictReader(open(tmp_path / "b.csv"))
           if row["model"] == "m2"}
    _check(got, _expected(ROWS, 0.4, 0.3, "exclude", model=2))


def test_weight_and_nan_policy_omit(tmp_path):
    """Kills: --weight dropped, --nan-policy omit dropped. m2 has a NaN in row 3: omitted for
    m2 only; m1 keeps every row."""
    rows = [list(r) for r in ROWS]
    rows[3][2] = float("nan")
    path = _write(str(tmp_path), rows)
    r = _report(tmp_path, "--weight", "w", "--nan-policy", "omit", "--out", "o.json", data=path)
    assert r.returncode == 0, r.stderr
    _check(_json_rows(tmp_path / "o.json", "m1")[1], _expected(ROWS, weighted=True))
    kept = [r for i, r in enumerate(ROWS) if i != 3]
    _check(_json_rows(tmp_path / "o.json", "m2")[1], _expected(kept, weighted=True, model=2))
    r = _report(tmp_path, "--out", "p.json", data=path)  # default raise: names column, row
    assert r.returncode == 1 and "'m2'" in r.stderr and "position 3" in r.stderr, r.stderr


def test_thresholds_csv_confidence_and_report_threshold(tmp_path):
    """Kills: --confidence not passed, thresholds sibling not written / misnamed, the
    --report-threshold not added to --thresholds, --gap-interval dropped."""
    r = _report(tmp_path, "--thresholds", "0.5", "--report-threshold", "0.35",
                "--confidence", "0.8", "--gap-interval", "bernstein", "--out", "t.csv",
                "--out", "t.json")
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(open(tmp_path / "t.thresholds.csv")))
    assert sorted({float(x["threshold"]) for x in rows}) == [0.35, 0.5]
    y = [v[0] >= 0.5 for v in ROWS]
    for row in rows:
        t, model = float(row["threshold"]), row["model"]
        col = 1 if model == "m1" else 2
        sub = 3 if row["subgroup"] == "g1" else 4
        member = [v[sub] is not None and v[sub] >= 0.5 for v in ROWS]
        neg = [i for i in range(len(ROWS)) if member[i] and not y[i]]
        fp = sum(ROWS[i][col] >= t for i in neg)
        assert int(row["subgroup_fp"]) == fp and int(row["subgroup_negatives"]) == len(neg)
        if neg:
            lo, hi = _wilson(fp, len(neg), 0.8)  # (the suite's Wilson reference)
            assert float(row["subgroup_fpr_low"]) == pytest.approx(lo, abs=1e-12)
            assert float(row["subgroup_fpr_high"]) == pytest.approx(hi, abs=1e-12)
    data = json.load(open(tmp_path / "t.json"))
    assert data["settings"]["gap_interval"] == "bernstein"
    assert any(k.endswith("_low") and "gap" in k for k in data["models"][0]["thresholds"][0])


def test_csv_raw_writes_names_as_they_are(tmp_path):
    """Kills: --csv-raw ignored. A column named '=g' is written "'=g" by default."""
    path = tmp_path / "e.csv"
    path.write_text("y,m1,=g\n0,0.1,1\n1,0.9,1\n0,0.4,0\n1,0.3,0\n")
    for extra, name in (([], "'=g"), (["--csv-raw"], "=g")):
        out = f"o{len(extra)}.csv"
        r = run_cli(["report", str(path), "--label", "y", "--scores", "m1", "--subgroups=" + "=g",
                     "-q", "--out", out, *extra], cwd=str(tmp_path))
        assert r.returncode == 0, r.stderr
        (row,) = csv.DictReader(open(tmp_path / out))
        assert row["subgroup"] == name
        exp = brute_force_metrics([0, 1, 0, 1], [0.1, 0.9, 0.4, 0.3], [1, 1, 0, 0])
        _check({"=g": row}, {"=g": exp})


def test_outputs_refused_and_force(tmp_path):
    """Kills: symlink output accepted, input as output, --force ignored, duplicate outputs,
    directory output, upper-case extension refused."""
    data = _write(str(tmp_path))
    base = ["report", data, "--label", "y", "--scores", "m1", "--subgroups", "g1", "-q"]
    (tmp_path / "target.json").write_text("keep")
    os.symlink(tmp_path / "target.json", tmp_path / "link.json")
    os.mkdir(tmp_path / "dir.json")
    (tmp_path / "old.json").write_text("old")
    for outs, words in ((["link.json"], "symbolic link"), ([data], None),
                        (["old.json"], "already exists"), (["x.json", "./x.json"], "twice"),
                        (["dir.json"], "directory")):
        r = run_cli(base + [a for o in outs for a in ("--out", o)] + ["--force"] * (
            words not in ("already exists",)), cwd=str(tmp_path))
        assert r.returncode == 1, (outs, r.stderr)
        assert words is None or words in r.stderr, r.stderr
    assert (tmp_path / "target.json").read_text() == "keep"
    assert open(data).read().startswith("y,m1")
    r = run_cli(base + ["--out", "old.json", "--out", "U.CSV", "--force"], cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    _check(_json_rows(tmp_path / "old.json")[1], {"g1": _expected(ROWS)["g1"]})
    (row,) = csv.DictReader(open(tmp_path / "U.CSV"))
    assert float(row["bnsp_auc"]) == _expected(ROWS)["g1"]["bnsp_auc"]


@pytest.mark.parametrize("args", [
    ["--confidence", "1"], ["--confidence", "0"], ["--top", "0"], ["--seed", "-1", "--ci",
                                                                     "bootstrap"],
    ["--label-threshold", "inf"], ["--subgroup-threshold", "-inf"],
    ["--thresholds", "9007199254740993"], ["--sep", '"'], ["--max-memory", "1000"],
    ["--n-boot", "5", "--ci", "delong"], ["--positive", "1", "--label-threshold", "0.5"],
])
def test_bad_options_refused(tmp_path, args):
    """Kills the dropped/loosened checks of --confidence, --top, --seed, the finite label and
    subgroup thresholds, the float64 threshold, --sep, --max-memory, --n-boot, --positive."""
    r = _report(tmp_path, *args)
    assert r.returncode in (1, 2), (args, r.returncode, r.stdout[:200])
    assert args[0] in r.stderr or args[-2] in r.stderr or "--positive" in r.stderr, r.stderr


def test_max_memory_units():
    """Kills: MB read as MiB (docs: 500M and 2.5GiB, SI units MB/GB)."""
    from fastbias.cli import _parse_size
    assert _parse_size("3MB") == 3_000_000 and _parse_size("2.5GiB") == int(2.5 * 2 ** 30)


def test_positive_classes(tmp_path):
    """Kills: positive class = first value, a three-class label accepted, text label without
    --positive accepted, JSON booleans with --positive TRUE (case), NaN text as a number."""
    y = ["ok", "toxic", "ok", "toxic", "ok", "toxic"]
    s = [0.2, 0.1, 0.4, 0.9, 0.3, 0.5]
    g = [1, 1, 0, 0, 1, 0]
    path = tmp_path / "p.csv"
    path.write_text("y,m1,g\n" + "".join(f"{a},{b},{c}\n" for a, b, c in zip(y, s, g)))
    base = ["report", str(path), "--label", "y", "--scores", "m1", "--subgroups", "g", "-q"]
    r = run_cli(base + ["--positive", "toxic", "--out", "o.json"], cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    exp = brute_force_metrics([v == "toxic" for v in y], s, [bool(v) for v in g])
    _check(_json_rows(tmp_path / "o.json")[1], {"g": exp})
    r = run_cli(base, cwd=str(tmp_path))
    assert r.returncode == 1 and "--positive" in r.stderr and "'y'" in r.stderr
    # JSON lines booleans, --positive TRUE
    jl = tmp_path / "p.jsonl"
    jl.write_text("".join(json.dumps({"y": v == "toxic", "m1": b, "g": c}) + "\n"
                          for v, b, c in zip(y, s, g)))
    r = run_cli(["report", str(jl), "--label", "y", "--scores", "m1", "--subgroups", "g", "-q",
                 "--positive", "TRUE", "--out", "j.json"], cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    _check(_json_rows(tmp_path / "j.json")[1], {"g": exp})
    # a third class, and "NaN" text beside numbers: errors naming the value and its row
    for third, label in (("unsure", "toxic"), ("NaN", "1")):
        yy = [label if v == "toxic" else ("0" if label == "1" else "ok") for v in y]
        yy[4] = third
        path.write_text("y,m1,g\n" + "".join(f"{a},{b},{c}\n" for a, b, c in zip(yy, s, g)))
        r = run_cli(base + ["--positive", label], cwd=str(tmp_path))
        assert r.returncode == 1 and repr(third) in r.stderr and "position 4" in r.stderr, \
            (third, r.stderr)


def test_names_escaped_on_terminal(tmp_path):
    """Kills: CLIError and notes printed raw. An unknown column and a subgroup with an ESC."""
    data = _write(str(tmp_path))
    r = run_cli(["report", data, "--label", "y\x1b[2J", "--scores", "m1", "--subgroups", "g1"],
                cwd=str(tmp_path))
    assert r.returncode == 1 and "\x1b" not in r.stderr and "\\x1b" in r.stderr
    assert "(--label)" in r.stderr
    path = tmp_path / "n.csv"
    path.write_text("y,m1,g\x1b]0;x\x07\n0,0.1,1\n1,0.9,0\n0,0.4,0\n1,0.3,0\n")
    r = run_cli(["report", str(path), "--label", "y", "--scores", "m1", "--subgroups",
                 "g\x1b]0;x\x07"], cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "warning" in r.stderr and "\x1b" not in r.stderr + r.stdout, r.stderr


def test_top_wide_and_empty_data(tmp_path):
    """Kills: --top ignored, --wide ignored, empty data not refused."""
    r = _report(tmp_path, "--top", "1", "--ci", "delong", "--wide")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert sum(line.startswith("g1 ") or line.startswith("g2 ") for line in lines) == 2  # 1/model
    table = lambda out: [x for x in out.splitlines() if x.startswith(("subgroup ", "g1 ", "g2 "))]  # noqa: E731
    assert max(map(len, table(r.stdout))) > 100
    r = _report(tmp_path, "--ci", "delong")
    assert max(map(len, table(r.stdout))) <= 100
    (tmp_path / "e.csv").write_text("y,m1,m2,g1,g2,w\n")
    r = _report(tmp_path, data=str(tmp_path / "e.csv"))
    assert r.returncode == 1 and "no rows" in r.stderr


def test_subgroups_file_line_endings_and_repeats(tmp_path):
    """Kills: --subgroups-file split on \\n only (CR files), repeated names accepted."""
    data = _write(str(tmp_path))
    (tmp_path / "s.txt").write_bytes(b"g1\rg2\r")
    r = run_cli(["report", data, "--label", "y", "--scores", "m1", "--subgroups-file", "s.txt",
                 "-q", "--out", "o.json"], cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    _check(_json_rows(tmp_path / "o.json")[1], _expected(ROWS))
    (tmp_path / "s.txt").write_text("g1\n\ng1\n")
    r = run_cli(["report", data, "--label", "y", "--scores", "m1", "--subgroups-file", "s.txt",
                 "-q"], cwd=str(tmp_path))
    assert r.returncode == 1 and "more than once" in r.stderr


def test_intersections_min_size(tmp_path):
    """Kills: --min-subgroup-size not passed, its default 2. g1 & g2 (members >= 0.5, missing
    aside) holds rows 0 (neg) and 9? no: row 0 only (g2 of row 9 missing) -> with one class
    it is never kept; g1 & g2 at --subgroup-threshold 0.3: rows 0, 6(0.45, g2 0), ..."""
    rows = ROWS + [(1.0, 0.55, 0.5, 0.7, 1, 1.0)]  # g1 & g2: row 0 (neg), row 12 (pos)
    path = _write(str(tmp_path), rows)
    r = _report(tmp_path, "--intersections", "2", "--out", "i.json", data=path)
    assert r.returncode == 0, r.stderr
    got = _json_rows(tmp_path / "i.json")[1]
    assert "g1 & g2" in got and got["g1 & g2"]["subgroup_size"] == 2
    y = np.array([r[0] >= 0.5 for r in rows])
    member = np.array([r[3] is not None and r[3] >= 0.5 and r[4] is not None and r[4] >= 0.5
                       for r in rows])
    exp = brute_force_metrics(y, [r[1] for r in rows], member)
    for key in KEYS:
        assert _same(got["g1 & g2"][key], exp[key]), key
    r = _report(tmp_path, "--intersections", "2", "--min-subgroup-size", "2", "--out",
                "k.json", data=path)
    assert r.returncode == 0 and "g1 & g2" not in _json_rows(tmp_path / "k.json")[1]


def test_library_message_in_cli_terms(tmp_path):
    """Kills: label_threshold not translated to --label-threshold in a library error (a label
    of 2 at row 4: the error names the column, the value, its row and the option)."""
    (tmp_path / "b.csv").write_text("y,m1,g1\n0,0.1,1\n1,0.9,1\n0,0.4,0\n1,0.3,0\n2,0.5,0\n")
    r = run_cli(["report", "b.csv", "--label", "y", "--scores", "m1", "--subgroups", "g1", "-q"],
                cwd=str(tmp_path))
    assert r.returncode == 1 and "'y'" in r.stderr and "2 at position 4" in r.stderr
    assert "--label-threshold" in r.stderr and "label_threshold" not in r.stderr, r.stderr


def test_output_path_escaped_in_notes(tmp_path):
    """Kills: _say printing raw text. The 'wrote ...' note names an --out path holding ESC."""
    data = _write(str(tmp_path))
    out = "o\x1b]0;t\x07.json"
    r = run_cli(["report", data, "--label", "y", "--scores", "m1", "--subgroups", "g1", "--out",
                 out], cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stderr and "\\x1b" in r.stderr, r.stderr
    _check(_json_rows(tmp_path / out)[1], {"g1": _expected(ROWS)["g1"]})
