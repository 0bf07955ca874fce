"""The ``fastbias`` command, run as a real process (and in-process for the many error cases).

Every number the command writes is checked against brute-force pair counts
(tests.reference) or scikit-learn, for each input and output format.
"""
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from fastbias.cli import main
from fastbias.metrics import METRIC_COLUMNS
from tests import cli_runner
from tests.reference import brute_force_metrics

MODELS = ["model_a", "model_b"]
SUBGROUPS = ["g1", "g2", "nobody_toxic"]


def run_cli(*args, cwd=None, timeout=240):
    """Run ``python -m fastbias ARGS`` in a fresh process; returns CompletedProcess."""
    return cli_runner.run_cli(args, cwd, process=True, timeout=timeout)


def make_frame(n=300, seed=1):
    """Ties on a 0.1 grid, a fractional label, identity fractions with NaN, a text label and a
    subgroup without positives (its Subgroup AUC, BNSP AUC and Positive AEG are undefined)."""
    rng = np.random.default_rng(seed)
    toxic = rng.random(n) < 0.4
    g1 = np.where(rng.random(n) < 0.3, rng.uniform(0.5, 1, n), 0.0)
    g1[rng.random(n) < 0.15] = np.nan
    g2 = np.where(rng.random(n) < 0.25, 1.0, 0.0)
    return pd.DataFrame({
        "toxicity": np.where(toxic, rng.uniform(0.5, 1, n), rng.uniform(0, 0.45, n)).round(3),
        "verdict": np.where(toxic, "toxic", "fine"),
        "model_a": np.round(np.clip(0.3 + 0.4 * toxic + 0.1 * (g1 > 0.5)
                                    + rng.normal(0, 0.2, n), 0, 1), 1),
        "model_b": np.round(np.clip(0.3 + 0.3 * toxic + rng.normal(0, 0.25, n), 0, 1), 1),
        "g1": g1,
        "g2": g2,
        "nobody_toxic": np.where(~toxic & (rng.random(n) < 0.2), 1.0, 0.0),
    })


def reference_table(df, *, label_threshold=0.5, subgroup_threshold=0.5, policy="background"):
    """{(model, subgroup): {metric: value}} by brute force on rows picked by hand."""
    y = df["toxicity"].to_numpy() >= label_threshold
    out = {}
    for model in MODELS:
        s = df[model].to_numpy(dtype=np.float64)
        for g in SUBGROUPS:
            values = df[g].to_numpy(dtype=np.float64)
            universe = ~np.isnan(values) if policy == "exclude" else np.ones(len(df), bool)
            member = (values >= subgroup_threshold) & universe
            out[model, g] = brute_force_metrics(y[universe], s[universe], member[universe])
            out[model, g]["subgroup_size"] = int(member.sum())
    return out


def assert_matches_reference(rows, reference):
    """rows: iterable of dicts with model, subgroup and the metrics (None or NaN = undefined)."""
    seen = set()
    for row in rows:
        want = reference[row["model"], row["subgroup"]]
        seen.add((row["model"], row["subgroup"]))
        assert int(row["subgroup_size"]) == want["subgroup_size"]
        for metric in METRIC_COLUMNS:
            got = row[metric]
            if np.isnan(want[metric]):
                assert got is None or np.isnan(got), (row["model"], row["subgroup"], metric)
            else:
                assert got == pytest.approx(want[metric], abs=1e-12), (row["subgroup"], metric)
    assert seen == set(reference)


@pytest.fixture(scope="module")
def frame():
    return make_frame()


@pytest.fixture(scope="module")
def data_files(frame, tmp_path_factory):
    folder = tmp_path_factory.mktemp("data")
    files = {"csv": folder / "data.csv", "tsv.gz": folder / "data.tsv.gz",
             "jsonl": folder / "data.jsonl"}
    frame.to_csv(files["csv"], index=False)
    frame.to_csv(files["tsv.gz"], index=False, sep="\t")
    frame.to_json(files["jsonl"], orient="records", lines=True)
    try:
        import pyarrow  # noqa: F401

        files["parquet"] = folder / "data.parquet"
        frame.to_parquet(files["parquet"], row_group_size=100)
    except ImportError:
        pass
    return files


REPORT_ARGS = ["--label", "toxicity", "--scores", *MODELS, "--subgroups", *SUBGROUPS]


# --------------------------------------------------------------------------- real processes

def test_report_from_csv_writes_every_format(data_files, frame, tmp_path):
    outs = [tmp_path / "r.csv", tmp_path / "r.json", tmp_path / "r.html"]
    proc = run_cli("report", data_files["csv"], *REPORT_ARGS,
                   *[x for o in outs for x in ("--out", o)])
    assert proc.returncode == 0, proc.stderr
    reference = reference_table(frame)

    table = pd.read_csv(outs[0])
    assert_matches_reference(table.to_dict("records"), reference)
    from sklearn.metrics import roc_auc_score

    y = frame["toxicity"] >= 0.5
    for model in MODELS:
        assert table.loc[table["model"] == model, "overall_auc"].iloc[0] == pytest.approx(
            roc_auc_score(y, frame[model]), abs=1e-12)

    data = json.loads(outs[1].read_text())  # strict JSON: undefined values are null
    assert_matches_reference([{"model": m["name"], **row} for m in data["models"]
                              for row in m["subgroups"]], reference)
    assert data["settings"]["missing_subgroup"] == "background"

    page = outs[2].read_text()
    assert page.startswith("<!DOCTYPE html>") and "data:image/png;base64," in page
    assert "subgroup_positives = 0" in page  # the undefined cells are explained

    # the terminal table: one block per model with the same numbers
    row = table[(table["model"] == "model_b") & (table["subgroup"] == "g2")].iloc[0]
    line = [ln for ln in proc.stdout.split("\n\n")[1].splitlines() if ln.startswith("g2 ")][0]
    assert f"{row['bpsn_auc']:.4f}" in line and f"{row['positive_aeg']:+.4f}" in line
    assert "model_a  overall AUC" in proc.stdout
    assert "undefined" in proc.stderr  # the UndefinedMetricWarning, as one line
    # stderr is not a terminal: no status line rewritten with \r, one plain line per step
    assert "\r" not in proc.stderr
    assert "fastbias: reading data.csv ...\nfastbias: evaluating 2 model(s)" in proc.stderr
    assert all(w.startswith("fastbias: ") or w.startswith("wrote ") or w.startswith("time: ")
               for w in proc.stderr.strip().splitlines())


def test_report_from_compressed_tsv_with_progress(data_files, frame, tmp_path):
    out = tmp_path / "r.csv"
    proc = run_cli("report", data_files["tsv.gz"], *REPORT_ARGS, "--out", out,
                   "--missing-subgroup", "exclude", "--subgroup-threshold", "0.6",
                   "--label-threshold", "0.7", "--progress", "always")
    assert proc.returncode == 0, proc.stderr
    reference = reference_table(frame, label_threshold=0.7, subgroup_threshold=0.6,
                                policy="exclude")
    assert_matches_reference(pd.read_csv(out).to_dict("records"), reference)
    # progress was displayed (text mode turns its carriage returns into newlines)
    assert "reading data.tsv.gz: 100% (300 rows)" in proc.stderr, proc.stderr
    assert "evaluating 2 model(s) x 3 subgroups ..." in proc.stderr


@pytest.mark.parametrize("kind", ["jsonl", "parquet"])
@pytest.mark.parametrize("progress", ["always", "never"])
def test_report_reads_jsonl_and_parquet(kind, progress, data_files, frame, tmp_path, capsys):
    if kind not in data_files:
        pytest.skip("pyarrow is not installed")
    out = tmp_path / "r.json"
    status = main(["report", str(data_files[kind]), *REPORT_ARGS, "--out", str(out),
                   "--missing-subgroup", "exclude", "--progress", progress])
    err = capsys.readouterr().err
    assert status == 0, err
    data = json.loads(out.read_text())
    assert_matches_reference([{"model": m["name"], **row} for m in data["models"]
                              for row in m["subgroups"]], reference_table(frame, policy="exclude"))
    shown = {"jsonl": "reading data.jsonl: 100% (300 rows)",
             "parquet": "reading data.parquet: 100% (300 rows)"}[kind]
    assert (shown in err) == (progress == "always")


def test_errors_exit_nonzero_with_one_line(data_files, tmp_path):
    proc = run_cli("report", tmp_path / "missing.csv", *REPORT_ARGS)
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"fastbias: error: data file '{tmp_path / 'missing.csv'}' not found"
    assert proc.stdout == ""
    proc = run_cli("report", data_files["csv"], "--label", "toxicity", "--scores", "model_c",
                   "--subgroups", "g1")
    assert proc.returncode == 1
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "unknown column 'model_c' (--scores); did you mean 'model_b' or 'model_a'?" in \
        proc.stderr


def test_demo_prints_table_and_timings_and_writes_report(tmp_path):
    proc = run_cli("demo", "--rows", "30000", "--identities", "6", "--out", "demo.html",
                   "--out", "demo.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("fastbias demo: 30,000 rows")
    assert "model_biased  overall AUC" in out and "time per step" in out
    for step in ("generate data", "evaluate 2 models x 6 subgroups", "total"):
        assert re.search(re.escape(step) + r"\s+\d+\.\d\d s", out), step
    assert f"wrote {tmp_path / 'demo.html'}" in out
    # piped: each step is announced as it starts, in order, on its own line
    steps = [line for line in proc.stderr.splitlines() if line.endswith(" ...")]
    assert steps == ["fastbias: generating 30,000 rows ...", "fastbias: compiling kernels ...",
                     "fastbias: evaluating 2 model(s) x 6 subgroups ...",
                     "fastbias: writing the report ..."]
    page = (tmp_path / "demo.html").read_text()
    assert page.count("data:image/png;base64,") >= 3
    # the numbers are those of the generated set, checked against brute force for a subgroup
    from fastbias.synthetic import make_jigsaw_like

    df = make_jigsaw_like(n_rows=30000, n_identities=6, random_state=0)
    data = json.loads((tmp_path / "demo.json").read_text())
    y = df["toxicity"].to_numpy() >= 0.5
    member = df["transgender"].to_numpy() >= 0.5
    biased = {m["name"]: {r["subgroup"]: r for r in m["subgroups"]} for m in data["models"]}
    row = biased["model_biased"]["transgender"]
    assert row["subgroup_positives"] == int((member & y).sum())
    sub_auc = brute_force_metrics(y[member], df["model_biased"].to_numpy()[member],
                                  np.ones(int(member.sum()), bool))
    assert row["subgroup_auc"] == pytest.approx(sub_auc["subgroup_auc"], abs=1e-12)
    # the biased model's identities (every other one) have a lower BPSN AUC than the fair model
    for identity in ("male", "transgender", "heterosexual"):
        assert biased["model_biased"][identity]["bpsn_auc"] < biased["model_fair"][identity]["bpsn_auc"]
        assert biased["model_biased"][identity]["negative_aeg"] > 0.05


def test_console_script_is_installed():
    script = shutil.which("fastbias", path=os.path.dirname(sys.executable))
    if script is None:
        pytest.skip("the fastbias console script is not installed in this environment")
    proc = subprocess.run([script, "--version"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("fastbias ")


# --------------------------------------------------------------------------- in-process errors

def run_main(capsys, *args):
    status = main([str(a) for a in args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture(scope="module")
def bad_files(frame, tmp_path_factory):
    folder = tmp_path_factory.mktemp("bad")
    nan_scores = frame.copy()
    nan_scores.loc[[5, 9], "model_b"] = np.nan
    nan_scores.to_csv(folder / "nan_scores.csv", index=False)
    text_scores = frame.copy()
    text_scores["model_b"] = "high"
    text_scores.to_csv(folder / "text_scores.csv", index=False)
    text_group = frame.copy()
    text_group["g2"] = np.where(frame["g2"] > 0, "yes", "no")
    text_group.to_csv(folder / "text_group.csv", index=False)
    (folder / "empty.csv").write_text("")
    (folder / "data.xlsx").write_text("x")
    (folder / "array.json").write_text('[{"a": 1}]\n')
    frame.to_csv(folder / "ok.csv", index=False)
    return folder


@pytest.mark.parametrize("args, message", [
    (["nan_scores.csv", *REPORT_ARGS],
     "score column 'model_b' has 2 NaN and 0 infinite value(s) (first at position 5)"),
    (["nan_scores.csv", *REPORT_ARGS], "--nan-policy omit"),
    (["text_scores.csv", *REPORT_ARGS], "score column 'model_b'"),
    (["text_group.csv", *REPORT_ARGS], "subgroup column 'g2'"),
    (["ok.csv", "--label", "verdict", "--scores", "model_a", "--subgroups", "g1"],
     "label column 'verdict' is not numeric (dtype"),
    (["ok.csv", "--label", "verdict", "--positive", "bad", "--scores", "model_a",
      "--subgroups", "g1"], "--positive 'bad' does not occur in label column 'verdict' "
                            "(values: 'fine', 'toxic')"),
    (["ok.csv", "--label", "toxicity", "--scores", "model_a", "--subgroups", "g3"],
     "unknown column 'g3' (--subgroups); did you mean 'g2' or 'g1'?"),
    (["ok.csv", "--label", "toxic", "--scores", "model_a", "--subgroups", "g1"],
     "unknown column 'toxic' (--label); did you mean 'toxicity' or 'nobody_toxic'?"),
    (["ok.csv", *REPORT_ARGS, "--out", "report.xlsx"],
     "--out 'report.xlsx': unknown extension '.xlsx'; use .html, .csv or .json"),
    (["ok.csv", *REPORT_ARGS, "--out", "no/such/folder/r.html"], "does not exist"),
    (["empty.csv", *REPORT_ARGS], "is empty"),
    (["data.xlsx", *REPORT_ARGS], "cannot tell the format of"),
    (["array.json", *REPORT_ARGS], "is a JSON array, not JSON lines"),
    (["ok.csv", *REPORT_ARGS, "--weight", "wait"], "unknown column 'wait' (--weight). The file "
                                                   "has columns: 'toxicity', 'verdict', 'model_a'"),
])
def test_error_messages(args, message, bad_files, capsys, monkeypatch):
    monkeypatch.chdir(bad_files)
    status, out, err = run_main(capsys, "report", *args)
    assert status == 1
    # stderr is piped: the steps that started are announced, then the error in one line
    lines = err.strip().splitlines()
    assert all(line.startswith("fastbias: ") and line.endswith(" ...") for line in lines[:-1])
    err = lines[-1]
    assert err.startswith("fastbias: error: ") and message in err, err
    assert "nan_policy" not in err and "pos_label" not in err  # options, not Python arguments
    assert out == ""


def test_text_label_with_positive(bad_files, frame, capsys, tmp_path):
    status, out, err = run_main(capsys, "report", bad_files / "ok.csv", "--label", "verdict",
                                "--positive", "toxic", "--scores", *MODELS, "--subgroups",
                                *SUBGROUPS, "--out", tmp_path / "r.json", "--quiet")
    assert status == 0 and err == ""
    data = json.loads((tmp_path / "r.json").read_text())
    assert_matches_reference([{"model": m["name"], **row} for m in data["models"]
                              for row in m["subgroups"]], reference_table(frame))


def test_nan_policy_omit_leaves_out_nan_rows(bad_files, frame, capsys, tmp_path):
    status, out, err = run_main(capsys, "report", bad_files / "nan_scores.csv", *REPORT_ARGS,
                                "--nan-policy", "omit", "--out", tmp_path / "r.csv")
    if status == 1 and "nan_policy" in err:
        pytest.skip("this fastbias.evaluate has no nan_policy")
    assert status == 0, err
    table = pd.read_csv(tmp_path / "r.csv")
    keep = np.ones(len(frame), bool)
    keep[[5, 9]] = False
    reference = reference_table(frame[keep].reset_index(drop=True))
    only_b = table[table["model"] == "model_b"]
    want = {("model_b", g): reference["model_b", g] for g in SUBGROUPS}
    assert_matches_reference(only_b.to_dict("records"), want)
    want_a = {("model_a", g): reference_table(frame)["model_a", g] for g in SUBGROUPS}
    assert_matches_reference(table[table["model"] == "model_a"].to_dict("records"), want_a)


def test_usage_errors_exit_2(capsys):
    for args in (["report", "x.csv", *REPORT_ARGS, "--ci", "magic"],
                 ["report", "x.csv", *REPORT_ARGS, "--confidence", "1.5"],
                 ["demo", "--rows", "ten"], []):
        with pytest.raises(SystemExit) as exc:
            main(args)
        assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'magic'" in err and "must be between 0 and 1" in err


def test_top_limits_the_terminal_table(bad_files, capsys):
    status, out, _ = run_main(capsys, "report", bad_files / "ok.csv", *REPORT_ARGS, "--top", "1",
                              "-q")
    assert status == 0
    block = out.split("\n\n")[0].splitlines()
    assert len(block) == 4  # heading, column names, rule, one subgroup
    assert "(1 worst of 3 subgroups shown for each model" in out


def test_ci_is_passed_to_evaluate(bad_files, frame, capsys, tmp_path):
    pytest.importorskip("fastbias.intervals")
    status, out, err = run_main(capsys, "report", bad_files / "ok.csv", *REPORT_ARGS,
                                "--ci", "delong", "--confidence", "0.9",
                                "--out", tmp_path / "r.csv", "-q")
    assert status == 0, err
    table = pd.read_csv(tmp_path / "r.csv")
    import warnings

    import fastbias

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = fastbias.evaluate(frame, label="toxicity", scores=MODELS, subgroups=SUBGROUPS,
                                 ci="delong", confidence=0.9).table
    for column in ("bpsn_auc_low", "bpsn_auc_high"):
        np.testing.assert_allclose(table[column], want[column], rtol=0, atol=1e-12)
    assert re.search(r"\d\.\d{4} \[\d\.\d{3}, \d\.\d{3}\]", out)  # intervals on the terminal


def test_subgroups_from_a_file_and_all_boolean_columns(tmp_path, capsys):
    """Names with spaces come whole from --subgroups-file; --subgroups-all-boolean takes the
    bool and 0/1 columns (missing values aside) and leaves fractions, text, label and scores."""
    import pandas as pd

    rng = np.random.default_rng(3)
    n = 400
    df = pd.DataFrame({
        "y": rng.integers(0, 2, n), "s": rng.random(n), "s2": rng.random(n),
        "african american": rng.integers(0, 2, n), "african": rng.random(n) < 0.5,
        "american": np.where(rng.random(n) < 0.1, np.nan, rng.integers(0, 2, n)),
        "fraction": rng.random(n), "text": rng.choice(["a", "b"], n), "w": rng.integers(0, 2, n)})
    df.to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "names.txt").write_text("african american\n\n  american  \n")
    common = ["report", str(tmp_path / "d.csv"), "--label", "y", "--scores", "s", "s2", "-q"]
    assert main(common + ["--subgroups-file", str(tmp_path / "names.txt"),
                          "--out", str(tmp_path / "file.csv")]) == 0
    assert main(common + ["--subgroups", "african american", "american",
                          "--out", str(tmp_path / "listed.csv")]) == 0
    by_file = pd.read_csv(tmp_path / "file.csv")
    assert set(by_file["subgroup"]) == {"african american", "american"}
    pd.testing.assert_frame_equal(by_file, pd.read_csv(tmp_path / "listed.csv"))
    assert main(common + ["--weight", "w", "--subgroups-all-boolean",
                          "--out", str(tmp_path / "all.csv")]) == 0
    assert set(pd.read_csv(tmp_path / "all.csv")["subgroup"]) == {
        "african american", "african", "american"}
    capsys.readouterr()
    (tmp_path / "empty.txt").write_text("\n\n")
    assert main(common + ["--subgroups-file", str(tmp_path / "empty.txt")]) == 1
    assert "names no column" in capsys.readouterr().err
    assert main(common + ["--subgroups-file", str(tmp_path / "missing.txt")]) == 1
    assert "missing.txt" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(common + ["--subgroups", "african", "--subgroups-all-boolean"])


def test_jsonl_subnormal_number_is_named(tmp_path, capsys):
    """pandas' exact JSON parser refuses a number below the normal floats (1e-310, 1e-400)
    or beyond them (1e400) with
    "Range error when decoding numeric as double at position 11", naming neither column
    nor row (and "after row 0" misleads): the error names the column, the row and the
    text (found by review)."""
    path = tmp_path / "sub.jsonl"
    path.write_text('{"y":0,"s":0.3,"g":1}\n{"y":1,"s":0.5,"g":0}\n\n'
                    '{"y":0,"s":0.2,"g":1,"w":-2e-320}\n{"y":1,"s":0.7,"g":1}\n')
    args = ["report", str(path), "--label", "y", "--scores", "s", "--subgroups", "g",
            "--quiet"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert re.search(r"column 'w' of .*sub\.jsonl' holds -2e-320 at row 2 \(line 4\), a number "
                     r"float64 "
                     r"holds only below its normal range", err), err
    for text in ("1e-400", "1e400"):  # (0 once rounded; an infinity)
        path.write_text('{"y":0,"s":0.3,"g":1}\n{"y":1,"s":0.5,"g":0,"w":%s}\n' % text)
        assert main(args) == 1
        assert f"holds {text} at row 1" in capsys.readouterr().err


def test_a_text_identity_column_points_to_the_cli_option(tmp_path, capsys):
    """The library's advice "pass it as sensitive_features=['race']" said in the CLI's terms
    (found by review)."""
    path = tmp_path / "d.csv"
    path.write_text("y,s,race\n0,0.1,a\n1,0.9,b\n0,0.4,a\n1,0.2,b\n")
    assert main(["report", str(path), "--label", "y", "--scores", "s", "--subgroups", "race",
                 "-q"]) == 1
    err = capsys.readouterr().err
    assert "pass it as --sensitive-features race" in err and "sensitive_features=" not in err


def test_a_text_value_in_a_label_of_numbers_is_named_with_its_row(tmp_path, capsys):
    """A label column of numbers with one word far down (pandas then reads it all as text)
    is refused naming the word and its row; the row named holds it in the file."""
    import csv

    rng = np.random.default_rng(2)
    rows = [[int(rng.random() < 0.3), rng.random(), int(rng.random() < 0.2)]
            for _ in range(40_000)]
    rows[35_123][0] = "toxic"
    path = tmp_path / "late_word.csv"
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([["y", "s", "g"], *rows])
    status, _, err = run_main(capsys, "report", str(path), "--label", "y", "--scores", "s",
                              "--subgroups", "g", "-q")
    assert status == 1
    assert "label column 'y' is not numeric" in err and "'toxic' at position 35123" in err, err
    with open(path, newline="") as f:
        assert list(csv.reader(f))[1 + 35_123][0] == "toxic"
