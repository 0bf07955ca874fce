"""A mutation audit of the out-of-core readers, continued: an independent review's tests
(2026-11-28, fortieth session; a second reviewer, then the session's lead) that kill survivors
of the hand mutants of fastbias/validate/textfile.py and fastbias/streaming.py that no test
killed yet (a feature that is also a subgroup read as text; a later sub-batch's row named
within it; a JSON ``true`` or a long integer written as text among the scores). Expected
values come from the test's own ``csv``/``json`` view of the file it wrote, brute-force pair
counts in ``fractions.Fraction`` and the documented refusals, never from fastbias' output. No
defect was found in the code itself."""
import csv
import json

import pytest

import fastbias.streaming as streaming
from fastbias.streaming import evaluate_csv

from . import cli_runner
from .test_reader_mutants_session40_reference import (
    pair_auc,  # (pair counts in fractions)
)


def brute(rows):
    """rows: (label bool, score, member bool) -> (size, subgroup, bpsn, bnsp) AUCs."""
    sp = [s for y, s, g in rows if g and y]
    sn = [s for y, s, g in rows if g and not y]
    bp = [s for y, s, g in rows if not g and y]
    bn = [s for y, s, g in rows if not g and not y]
    return (sum(1 for _, _, g in rows if g), pair_auc(sp, sn), pair_auc(bp, sn),
            pair_auc(sp, bn))


def csv_rows(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def test_feature_that_is_also_a_subgroup_groups_its_values_as_numbers(tmp_path):
    """Kills ``text = [*(f for f in spec.features if f not in spec.subgroups), ...`` ->
    every feature read as text (streaming.evaluate_csv; its comment: "a feature that is an
    identity column too is read as numbers or booleans, as its subgroup must be; its values
    name the same groups").

    Column g is both a subgroup and a sensitive feature, written ``1``, ``1.0``, ``0`` and
    ``0.0``. As numbers (the subgroup's reading) the feature has two values, 0 and 1, of 4
    rows each; read as text it would have four groups (``1`` and ``1.0`` apart). Expected:
    rows g, g=0, g=1 with the brute-force sizes and AUCs of the csv module's rows (member of
    g and of g=1 where float(g) == 1; of g=0 where float(g) == 0)."""
    rows = [(0, 0.1, "1"), (1, 0.9, "1.0"), (0, 0.4, "0"), (1, 0.2, "0.0"), (0, 0.3, "1"),
            (1, 0.8, "0"), (1, 0.5, "1"), (0, 0.6, "0.0")]
    path = tmp_path / "d.csv"
    path.write_text("y,s,g\n" + "".join(f"{y},{s},{g}\n" for y, s, g in rows))
    parsed = [(y == "1", float(s), float(g)) for y, s, g in csv_rows(path)[1:]]
    want = {"g": brute([(y, s, v == 1.0) for y, s, v in parsed]),
            "g=1": brute([(y, s, v == 1.0) for y, s, v in parsed]),
            "g=0": brute([(y, s, v == 0.0) for y, s, v in parsed])}
    result = evaluate_csv(path, label="y", scores="s", subgroups=["g"],
                          sensitive_features=["g"], batch_rows=3, bucket_rows=3)
    table = result.table
    got = {str(r.subgroup): (int(r.subgroup_size), float(r.subgroup_auc), float(r.bpsn_auc),
                             float(r.bnsp_auc)) for r in table.itertuples()}
    assert got == want


def test_error_in_a_later_sub_batch_names_the_files_row(tmp_path, monkeypatch):
    """Kills ``PieceWhere(where, where.first_row + start)`` -> ``where.first_row``
    (streaming._pieces: with sensitive features (or intersections) a batch is encoded in
    sub-batches of at least 1,000 rows, ``COMBINATION_BATCH_BYTES`` divided by the extra
    columns; lowered here so that a small file takes the 1,000-row floor, as a file with some
    33,000 extra columns would).

    1,100 rows read in one batch of 2,000 with ``sensitive_features=["h"]``: the subgroup
    column g is empty (unannotated) but for ``abc`` at the csv module's row 1050, in the
    second sub-batch (rows 1000..1099); only the second pass, in sub-batches, reads g.
    Expected: the TypeError names ``'abc' at row 1050``; the mutant named row 50, the
    position within the sub-batch. (With ``intersections=`` the pass choosing the
    combinations reads g in whole batches first and names the row right either way.)"""
    monkeypatch.setattr(streaming, "COMBINATION_BATCH_BYTES", 1)
    lines = ["y,s,g,h"]
    for i in range(1100):
        g = "abc" if i == 1050 else ""
        lines.append(f"{int(i % 3 == 0)},{(i * 7919 % 1000) / 1000},{g},{i % 2}")
    path = tmp_path / "d.csv"
    path.write_text("\n".join(lines) + "\n")
    at = [r[2] for r in csv_rows(path)[1:]].index("abc")
    assert at == 1050
    with pytest.raises(TypeError, match=rf"subgroup column 'g' .*'abc' at row {at}\b"):
        evaluate_csv(path, label="y", scores="s", subgroups=["g"], sensitive_features=["h"],
                     batch_rows=2000)


def _jsonl(path, records):
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def test_a_json_true_among_scores_written_as_text_is_refused(tmp_path):
    """Kills ``_json_number`` taking booleans for numbers (textfile.py: ``and not
    isinstance(value, (bool, np.bool_))`` dropped; added by the session's lead after the
    second reviewer left it unjudged). A score column of numbers written as text holds one
    JSON ``true``: not a score (the session-35 review's finding, fixed then: a JSON boolean
    in a score column is refused, not read as 1). Expected: status 1, the error naming column 's', the value True and position 1;
    the mutant read it as the score 1.0, silently."""
    _jsonl(tmp_path / "d.jsonl", [{"y": 0, "s": "0.5", "g": 1}, {"y": 1, "s": True, "g": 1},
                                  {"y": 0, "s": 0.2, "g": 0}, {"y": 1, "s": 0.7, "g": 0}])
    run = cli_runner.run_cli(["report", "d.jsonl", "--label", "y", "--scores", "s",
                              "--subgroups", "g", "-q", "--out", "r.json"], tmp_path)
    assert run.returncode == 1, run.stderr
    assert "'s'" in run.stderr and "True at position 1" in run.stderr, run.stderr
    assert not (tmp_path / "r.json").exists()


def test_a_score_written_as_a_long_integer_text_is_read_exactly_and_refused(tmp_path):
    """Kills ``_json_number`` reading integer text as a float (textfile.py: ``if
    _INTEGER_TEXT.fullmatch(value)`` never taken; added by the session's lead). The text
    "9007199254740993" is 2**53 + 1: as a float it is 2**53, a tie with the next row's
    "9007199254740992". Read exactly it is an integer float64 cannot hold, which the scores'
    reader refuses (docs/validation.md, "integer scores": 2**53 + 1 is a ValueError). Expected: status 1 naming 's', the value
    9007199254740993 and position 0; the mutant tied the two scores, silently."""
    _jsonl(tmp_path / "d.jsonl", [{"y": 0, "s": str(2 ** 53 + 1), "g": 1},
                                  {"y": 1, "s": str(2 ** 53), "g": 1},
                                  {"y": 0, "s": "0", "g": 0}, {"y": 1, "s": "1", "g": 0}])
    run = cli_runner.run_cli(["report", "d.jsonl", "--label", "y", "--scores", "s",
                              "--subgroups", "g", "-q", "--out", "r.json"], tmp_path)
    assert run.returncode == 1, run.stderr
    assert "'s'" in run.stderr and "9007199254740993 at position 0" in run.stderr, run.stderr
