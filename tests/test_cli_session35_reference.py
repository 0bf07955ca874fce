"""An independent review's tests (2026-11-27) of the ``fastbias`` command line and its
progress output, stdout and stderr captured apart (in process through ``fastbias.cli.main``,
as ``python -m fastbias`` runs it; in a process of its own where the test is about pipes).

Every expected value comes from an independent reference: brute-force pair counts on rows picked
by hand (``_pair``), scikit-learn's ``roc_auc_score``, or hand computation. Found by review
(each fails before its fix): JSON lines read ``true``/``false`` (and ``"1_000"``) in a score
or weight column as numbers, silently; the error for a value only Python's ``float`` reads
("1_000") named a good value; the error for a third label value beside ``--positive`` gave
no position; a reader that closes the pipe (``| head``) got "Broken pipe" and status 1.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from . import cli_runner

REPO_ROOT = Path(__file__).resolve().parents[1]
METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]


def run_cli(*args, cwd=None):
    return cli_runner.run_cli(args, cwd)


def _pair(neg, wneg, pos, wpos):
    """Weighted P(s(pos) > s(neg)) + 1/2 P(tie), by brute force over every pair."""
    neg, pos = np.asarray(neg, float), np.asarray(pos, float)
    if len(neg) == 0 or len(pos) == 0:
        return float("nan")
    w = np.asarray(wneg, float)[:, None] * np.asarray(wpos, float)[None, :]
    hits = (pos[None, :] > neg[:, None]) + 0.5 * (pos[None, :] == neg[:, None])
    return float((hits * w).sum() / w.sum())


def _reference(y, s, member, background, w):
    sn, sp = member & ~y, member & y
    bn, bp = background & ~y, background & y
    return {
        "subgroup_auc": _pair(s[sn], w[sn], s[sp], w[sp]),
        "bpsn_auc": _pair(s[sn], w[sn], s[bp], w[bp]),
        "bnsp_auc": _pair(s[bn], w[bn], s[sp], w[sp]),
        "negative_aeg": 0.5 - _pair(s[sn], w[sn], s[bn], w[bn]),
        "positive_aeg": 0.5 - _pair(s[sp], w[sp], s[bp], w[bp]),
        "counts": (int(sn.sum()), int(sp.sum()), int(bn.sum()), int(bp.sum())),
    }


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


# --------------------------------------------------------------------------- properties that hold

@pytest.fixture(scope="module")
def weighted_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("weighted")
    rng = np.random.default_rng(1)
    n = 1500
    df = pd.DataFrame({"label": rng.integers(0, 2, n), "m1": np.round(rng.random(n), 2),
                       "m2": np.round(rng.random(n), 1),
                       "g1": rng.choice([0, 1, np.nan], n, p=[.6, .3, .1]),
                       "g2": rng.choice([0., 1.], n, p=[.8, .2]),
                       "w": rng.integers(1, 4, n).astype(float)})
    df.to_csv(tmp / "d.csv", index=False)
    proc = run_cli("report", "d.csv", "--label", "label", "--scores", "m1", "m2",
                   "--subgroups", "g1", "g2", "--weight", "w", "--thresholds", "0.5",
                   "--out", "o.csv", "--out", "o.json", "--progress", "always", cwd=tmp)
    return tmp, df, proc


def test_weighted_csv_json_equal_brute_force(weighted_run):
    tmp, df, proc = weighted_run
    assert proc.returncode == 0, proc.stderr
    out = pd.read_csv(tmp / "o.csv")
    js = json.loads((tmp / "o.json").read_text())
    y = df["label"].to_numpy() == 1
    w = df["w"].to_numpy()
    for model in ["m1", "m2"]:
        s = df[model].to_numpy()
        finals = []
        for g in ["g1", "g2"]:
            member = df[g].to_numpy() >= 0.5
            ref = _reference(y, s, member, ~member, w)  # NaN identity = background (default)
            finals.append(ref)
            row = out[(out.model == model) & (out.subgroup == g)].iloc[0]
            jrow = next(r for m in js["models"] if m["name"] == model
                        for r in m["subgroups"] if r["subgroup"] == g)
            for metric in METRICS:
                assert row[metric] == pytest.approx(ref[metric], abs=1e-12)
                assert jrow[metric] == pytest.approx(ref[metric], abs=1e-12)
            assert tuple(row[["subgroup_negatives", "subgroup_positives", "background_negatives",
                              "background_positives"]]) == ref["counts"]
        overall = roc_auc_score(y, s, sample_weight=w)
        pm = lambda k: np.mean([f[k] ** -5 for f in finals]) ** (-1 / 5)  # noqa: E731
        final = 0.25 * overall + 0.25 * (pm("subgroup_auc") + pm("bpsn_auc") + pm("bnsp_auc"))
        assert out[out.model == model].overall_auc.iloc[0] == pytest.approx(overall, abs=1e-12)
        assert out[out.model == model].final_metric.iloc[0] == pytest.approx(final, abs=1e-12)


def test_weighted_threshold_rates_equal_hand_counts(weighted_run):
    tmp, df, proc = weighted_run
    t = pd.read_csv(tmp / "o.thresholds.csv")
    y = df["label"].to_numpy() == 1
    w = df["w"].to_numpy()
    assert len(t) == 4
    for _, r in t.iterrows():
        predicted = df[r.model].to_numpy() >= r.threshold
        member = df[r.subgroup].to_numpy() >= 0.5
        for side, m in [("subgroup", member), ("background", ~member)]:
            ref = {"positive_rate": w[m & predicted].sum() / w[m].sum(),
                   "tpr": w[m & predicted & y].sum() / w[m & y].sum(),
                   "fpr": w[m & predicted & ~y].sum() / w[m & ~y].sum(),
                   "precision": w[m & predicted & y].sum() / w[m & predicted].sum()}
            for k, v in ref.items():
                assert r[f"{side}_{k}"] == pytest.approx(v, abs=1e-12)


def test_progress_always_never_reaches_stdout(weighted_run):
    _, _, proc = weighted_run
    # --progress always draws the status line; with stdout a pipe it must stay on stderr
    assert "\r" not in proc.stdout and "\x1b" not in proc.stdout
    assert "reading d.csv" in proc.stderr
    assert "wrote" not in proc.stdout and "time:" not in proc.stdout
    assert proc.stdout.startswith("m1  overall AUC")


def test_quiet_leaves_stderr_empty_and_table_on_stdout(weighted_run):
    tmp, _, _ = weighted_run
    proc = run_cli("report", "d.csv", "--label", "label", "--scores", "m1",
                   "--subgroups", "g1", "-q", cwd=tmp)
    assert proc.returncode == 0
    assert proc.stderr == ""
    assert proc.stdout.startswith("m1  overall AUC")


def test_text_label_exclude_intersections_jsonl_equal_brute_force(tmp_path):
    rng = np.random.default_rng(4)
    n = 600
    y = rng.integers(0, 2, n).astype(bool)
    df = pd.DataFrame({"verdict": np.where(y, "toxic", "fine"),
                       "=model": np.round(rng.random(n) + 0.1 * y, 3),
                       "g1": rng.choice([True, False], n),
                       "g2": rng.choice([1.0, 0.0, np.nan], n)})
    rows = [{k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in r.items()}
            for r in df.to_dict("records")]
    for r in rows:
        r["g1"] = bool(r["g1"])
    _write_jsonl(tmp_path / "p.jsonl", rows)
    proc = run_cli("report", "p.jsonl", "--label", "verdict", "--positive", "toxic",
                   "--scores", "=model", "--subgroups", "g1", "g2", "--missing-subgroup",
                   "exclude", "--intersections", "2", "--out", "p.csv", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = pd.read_csv(tmp_path / "p.csv")
    assert set(out.model) == {"'=model"}  # formula-looking model name made text
    s = df["=model"].to_numpy()
    g1 = df.g1.to_numpy().astype(float)
    g2 = df.g2.to_numpy()
    sets = {"g1": (g1 >= .5, ~np.isnan(g1)), "g2": (g2 >= .5, ~np.isnan(g2)),
            "g1 & g2": ((g1 >= .5) & (g2 >= .5), ~np.isnan(g1) & ~np.isnan(g2))}
    for g, (member, annotated) in sets.items():
        ref = _reference(y, s, member, ~member & annotated, np.ones(n))
        row = out[out.subgroup == g].iloc[0]
        for metric in METRICS:
            assert row[metric] == pytest.approx(ref[metric], abs=1e-12)
    assert out.overall_auc.iloc[0] == pytest.approx(roc_auc_score(y, s), abs=1e-12)


def test_hostile_names_escaped_in_csv_terminal_html(tmp_path):
    rng = np.random.default_rng(2)
    n = 200
    names = ["=cmd|' /C calc'!A0", "a,b \"q\"", "esc\x1b[31mred", "@at", "\u202erlo"]
    d = {"label": rng.integers(0, 2, n), "s": np.round(rng.random(n), 2)}
    for name in names:
        d[name] = rng.integers(0, 2, n)
    pd.DataFrame(d).to_parquet(tmp_path / "h.parquet")
    proc = run_cli("report", "h.parquet", "--label", "label", "--scores", "s",
                   "--subgroups", *names, "--out", "h.csv", "--out", "h.html", "-q",
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\u202e" not in proc.stdout
    csv = pd.read_csv(tmp_path / "h.csv")
    assert "'=cmd|' /C calc'!A0" in set(csv.subgroup) and "'@at" in set(csv.subgroup)
    assert 'a,b "q"' in set(csv.subgroup)
    html = (tmp_path / "h.html").read_text(encoding="utf-8")
    assert "\x1b" not in html and "\u202e" not in html and "a,b \"q\"" not in html


def test_output_never_the_input_or_a_link(tmp_path):
    pd.DataFrame({"label": [0, 1, 0, 1], "s": [.1, .2, .3, .4], "g": [1, 0, 1, 0]}).to_csv(
        tmp_path / "in.thresholds.csv", index=False)
    before = (tmp_path / "in.thresholds.csv").read_bytes()
    proc = run_cli("report", "in.thresholds.csv", "--label", "label", "--scores", "s",
                   "--subgroups", "g", "--thresholds", "0.5", "--out", "in.csv", "--force",
                   cwd=tmp_path)
    assert proc.returncode == 1 and "input data file" in proc.stderr
    os.symlink("nowhere", tmp_path / "dang.csv")
    proc = run_cli("report", "in.thresholds.csv", "--label", "label", "--scores", "s",
                   "--subgroups", "g", "--out", "dang.csv", "--force", cwd=tmp_path)
    assert proc.returncode == 1 and "symbolic link" in proc.stderr
    assert (tmp_path / "in.thresholds.csv").read_bytes() == before
    assert not os.path.exists(tmp_path / "nowhere")


# --------------------------------------------------------------------------- found by review

def test_error_names_the_wrong_cell_for_python_only_numbers(tmp_path):
    # Found by review: A CSV score column with '1_000' (or an Arabic-Indic digit '٣') at row 2 is read
    # by pandas as text; first_non_numeric (fastbias/validate/columns.py) skips every value
    # that Python's float() accepts, and float('1_000') == 1000.0, so the error blames the
    # perfectly good '0.1' at position 0 "(numbers written as text)".
    # Current: "score column 's' must be numeric scores, got dtype object (e.g. '0.1' at
    #           position 0 (numbers written as text))"
    # Right: name the offending cell, '1_000' at position 2.
    for bad in ["1_000", "\u0663"]:
        (tmp_path / "cv.csv").write_text(f"label,s,g\n0,0.1,1\n1,0.2,0\n0,{bad},1\n1,0.4,0\n",
                                         encoding="utf-8")
        proc = run_cli("report", "cv.csv", "--label", "label", "--scores", "s",
                       "--subgroups", "g", "-q", cwd=tmp_path)
        assert proc.returncode == 1
        assert repr(bad) in proc.stderr and "position 2" in proc.stderr, proc.stderr


def test_jsonl_boolean_score_is_silently_one(tmp_path):
    # Found by review: In JSON lines a score written `true` on line 3 (among numbers) is read as 1.0 and
    # the report is computed on it (overall AUC 0.44, the AUC with 1.0 there, by sklearn).
    # docs/validation.md: "booleans as scores" are a TypeError; the label column with a
    # boolean beside numbers is refused naming both ("holds both booleans and numbers").
    # Right: exit 1 naming column 's' and position 2. Cause: pd.read_json(dtype=True) in
    # fastbias/validate/textfile.py iter_text_batches coerces the mixed column to float64
    # before any check sees the boolean (the score was not among the flag columns).
    rows = [{"label": i % 2, "s": i / 10, "g": i % 3 == 0} for i in range(10)]
    rows[2]["s"] = True
    _write_jsonl(tmp_path / "b.jsonl", rows)
    proc = run_cli("report", "b.jsonl", "--label", "label", "--scores", "s", "--subgroups", "g",
                   "-q", cwd=tmp_path)
    silently = roc_auc_score([i % 2 for i in range(10)],
                             [1.0 if i == 2 else i / 10 for i in range(10)])
    assert f"overall AUC {silently:.4f}" not in proc.stdout
    assert proc.returncode == 1
    assert "'s'" in proc.stderr and "position 2" in proc.stderr


def test_jsonl_boolean_weights_silently_one_and_zero(tmp_path):
    # Found by review: --weight w with `true`/`false` on lines 4-5 among numbers: read as weights 1 and 0
    # without a word. docs/validation.md: "boolean / string weights -> TypeError: sample_weight
    # must be numeric (an object column names its first non-number and row)". Right: exit 1
    # naming --weight column 'w' and position 3.
    rows = [{"label": i % 2, "s": i / 10, "g": i % 3 == 0, "w": 1} for i in range(10)]
    rows[3]["w"], rows[4]["w"] = True, False
    _write_jsonl(tmp_path / "w.jsonl", rows)
    proc = run_cli("report", "w.jsonl", "--label", "label", "--scores", "s", "--subgroups", "g",
                   "--weight", "w", "-q", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout
    assert "'w'" in proc.stderr and "position 3" in proc.stderr


def test_jsonl_score_written_as_text_is_its_number_and_other_text_is_refused(tmp_path):
    # A score written as the JSON string "0.7" is the number 0.7 (JSON lines often quote
    # numbers; read exactly, as pandas read it before); text that is no number's ("1_000",
    # which Python's float reads as 1000.0, pandas too) is refused naming it and its position.
    rows = [{"label": i % 2, "s": i / 10, "g": i % 3 == 0} for i in range(10)]
    rows[5]["s"] = "0.7"
    _write_jsonl(tmp_path / "t.jsonl", rows)
    proc = run_cli("report", "t.jsonl", "--label", "label", "--scores", "s", "--subgroups", "g",
                   "-q", cwd=tmp_path)
    expected = roc_auc_score([i % 2 for i in range(10)],
                             [0.7 if i == 5 else i / 10 for i in range(10)])
    assert proc.returncode == 0, proc.stderr
    assert f"overall AUC {expected:.4f}" in proc.stdout, proc.stdout
    rows[5]["s"] = "1_000"
    _write_jsonl(tmp_path / "t.jsonl", rows)
    proc = run_cli("report", "t.jsonl", "--label", "label", "--scores", "s", "--subgroups", "g",
                   "-q", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout
    assert "'s'" in proc.stderr and "'1_000' at position 5" in proc.stderr, proc.stderr


def test_third_label_value_error_lacks_its_position(tmp_path):
    # Found by review: --positive toxic on a label column where row 17 holds a third
    # value: "label column 'verdict' has 3 distinct values ('fine', 'other', 'toxic'); ...",
    # no position, while the streamed path (docs/cli.md) names "it and its row" and every
    # other bad-value error names a position. Right: name 'other' and position 17.
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 60).astype(bool)
    verdict = np.where(y, "toxic", "fine").astype(object)
    verdict[17] = "other"
    pd.DataFrame({"verdict": verdict, "s": rng.random(60).round(2),
                  "g": rng.integers(0, 2, 60)}).to_csv(tmp_path / "v.csv", index=False)
    proc = run_cli("report", "v.csv", "--label", "verdict", "--positive", "toxic",
                   "--scores", "s", "--subgroups", "g", "-q", cwd=tmp_path)
    assert proc.returncode == 1
    assert "'other'" in proc.stderr
    assert "17" in proc.stderr, proc.stderr


def test_a_reader_that_closes_the_pipe_ends_the_command_quietly(tmp_path):
    """``fastbias report ... | head``: the reader closes the pipe; the command stops with
    status 141 (128 + SIGPIPE, as a shell reports it), not "Broken pipe" and status 1."""
    rng = np.random.default_rng(2)
    pd.DataFrame({"y": rng.integers(0, 2, 200), "s": rng.random(200),
                  "g": rng.integers(0, 2, 200)}).to_csv(tmp_path / "p.csv", index=False)
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "fastbias.cli", "report", "p.csv", "--label",
                             "y", "--scores", "s", "--subgroups", "g", "-q"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdout.close()  # the only reader leaves before anything is written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 141, err
    assert "Broken pipe" not in err and "Exception ignored" not in err, err


def test_a_column_named_with_a_leading_dash_is_given_after_an_equals_sign(tmp_path):
    """argparse takes ``-m2`` for an option: the error says how to name such a column, and
    ``--scores=-m2`` evaluates it (the AUC by sklearn)."""
    (tmp_path / "d.csv").write_text("y,-m2,g\n0,0.1,1\n1,0.5,0\n0,0.3,0\n1,0.2,1\n")
    proc = run_cli("report", "d.csv", "--label", "y", "--scores", "-m2", "--subgroups", "g",
                   "-q", cwd=tmp_path)
    assert proc.returncode == 2 and "give it after '=': --scores=-m2" in proc.stderr, proc.stderr
    proc = run_cli("report", "d.csv", "--label", "y", "--scores=-m2", "--subgroups", "g", "-q",
                   cwd=tmp_path)
    expected = roc_auc_score([0, 1, 0, 1], [0.1, 0.5, 0.3, 0.2])
    assert proc.returncode == 0 and f"overall AUC {expected:.4f}" in proc.stdout, proc.stderr
