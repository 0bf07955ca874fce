"""``fastbias report`` against brute-force pair counts on data read independently with
pandas, and its errors against the Python API's: an independent review's tests (2026-11-27,
thirty-first session).

Found by review (each fails before its fix): ``--subgroup-threshold inf`` on an integer
identity column ended in a traceback; ``--thresholds inf`` wrote the CSV outputs, then
failed on the JSON one; ``--subgroups-file`` read 'g2 ' as the column 'g2' where the data
has both, silently, and blamed a missing name on --subgroups; the streamed JSON report
left out the confidence. The other tests record what was checked and right.
"""
import csv
import itertools
import json

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.cli import main
from tests.reference import brute_force_metrics
from tests.test_bounded_memory import _four_mib_for_data

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]


def _cli(capsys, *args):
    """``fastbias report ARGS`` in process; (status, stdout, stderr)."""
    try:
        status = main(["report", *map(str, args), "--progress", "never", "--force"])
    except SystemExit as exc:
        status = exc.code
    out = capsys.readouterr()
    return status, out.out, out.err


def _table(report: dict) -> dict:
    return {(m["name"], r["subgroup"]): r for m in report["models"] for r in m["subgroups"]}


def _assert_rows(report: dict, refs: dict, exact_keys=True):
    """refs: {(model, subgroup): (y, s, member, w)}; every metric the brute-force one."""
    table = _table(report)
    if exact_keys:
        assert set(table) == set(refs)
    for key, (y, s, member, w) in refs.items():
        want = brute_force_metrics(y, s, member, w)
        got = table[key]
        assert got["subgroup_size"] == int(np.asarray(member, bool).sum()), key
        for metric in METRICS:
            value = np.nan if got[metric] is None else got[metric]
            if np.isnan(want[metric]):
                assert np.isnan(value), (key, metric)
            else:
                assert value == want[metric], (key, metric, value, want[metric])


def _frame(n=300, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.4
    return pd.DataFrame({
        "y": y.astype(int),
        "s": np.round(rng.random(n) * 0.5 + 0.3 * y, 1),  # ties on a 0.1 grid
        "g1": (rng.random(n) < 0.3).astype(int),
        "g2": (rng.random(n) < 0.4).astype(int),
    })


def _big(n=20_000, seed=7):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.35
    g1 = np.where(rng.random(n) < 0.3, 1.0, 0.0)
    g1[rng.random(n) < 0.1] = np.nan
    return pd.DataFrame({
        "y": y.astype(int), "lab": np.where(y, "toxic", "fine"),
        "s": np.round(np.clip(0.3 + 0.3 * y + 0.1 * np.nan_to_num(g1)
                              + rng.normal(0, 0.2, n), 0, 1), 2),
        "g1": g1, "g2": (rng.random(n) < 0.2).astype(int), "g3": (rng.random(n) < 0.1).astype(int),
        "sex": rng.choice(["f", "m"], n), "w": rng.integers(1, 4, n),
    })


# ------------------------------------------------------------------------ found by review

def test_subgroup_threshold_inf_with_integer_identity_is_a_clear_error(tmp_path, capsys):
    """Was: ``--subgroup-threshold inf`` (or 1e400) on a 0/1 integer identity column ends in
    an uncaught OverflowError traceback (validate/values.py integer_cut: math.ceil(inf)).
    The API says ``subgroup_threshold must be finite, got inf``, and so does the CLI for a
    float identity column."""
    df = _frame()
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    with pytest.raises(ValueError, match="finite"):
        fastbias.evaluate(pd.read_csv(path), label="y", scores="s", subgroups=["g1"],
                          subgroup_threshold=float("inf"))
    for text in ["inf", "1e400"]:
        status, _, err = _cli(capsys, path, "--label", "y", "--scores", "s", "--subgroups",
                              "g1", "--subgroup-threshold", text, "-q")
        assert status in (1, 2) and "--subgroup-threshold" in err, err


def test_thresholds_inf_is_refused_before_work_or_written_to_json(tmp_path, capsys):
    """Was: ``--thresholds inf`` (or 1e400) is accepted, the table printed and the .csv
    and .thresholds.csv written, then the run fails with ``fastbias: error: Out of range
    float values are not JSON compliant: inf`` - no argument named, after the work, other
    outputs left behind. The API (``thresholds=[inf]``) evaluates it: nothing predicted
    positive. Right: refuse it up front naming --thresholds, or write the JSON report."""
    df = _frame()
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    out_csv, out_json = tmp_path / "r.csv", tmp_path / "r.json"
    status, _, err = _cli(capsys, path, "--label", "y", "--scores", "s", "--subgroups", "g1",
                          "--thresholds", "inf", "--out", out_csv, "--out", out_json, "-q")
    assert status == 0, err
    report = json.loads(out_json.read_text())  # strict JSON: the infinity as a string
    row = report["models"][0]["thresholds"][0]
    assert row["subgroup_tp"] == 0 and row["background_fp"] == 0
    assert row["threshold"] == "Infinity" and report["settings"]["thresholds"] == ["Infinity"]
    assert pd.read_csv(tmp_path / "r.thresholds.csv")["threshold"].tolist() == [np.inf]


def test_subgroups_file_keeps_a_name_that_exists_as_written(tmp_path, capsys):
    """(Was silent): the data has columns 'g2' and 'g2 ' (trailing space; here the
    complement of g2). ``--subgroups-file`` with the line 'g2 ' strips it and reports column
    'g2' - the other column - without a word. Right: the column named as written when it
    exists (or an error saying the name is ambiguous)."""
    df = _frame()
    df["g2 "] = 1 - df["g2"]
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    names = tmp_path / "names.txt"
    names.write_bytes(b"g2 \n")
    status, _, err = _cli(capsys, path, "--label", "y", "--scores", "s", "--subgroups-file",
                          names, "--out", tmp_path / "r.json", "-q")
    if status != 0:
        assert "g2 " in err, err
        return
    read = pd.read_csv(path)
    report = json.loads((tmp_path / "r.json").read_text())
    rows = report["models"][0]["subgroups"]
    assert len(rows) == 1
    want = brute_force_metrics(read["y"], read["s"], read["g2 "] >= 0.5)
    assert [rows[0][m] for m in METRICS] == [want[m] for m in METRICS]


def test_subgroups_file_unknown_column_names_the_option(tmp_path, capsys):
    """(Was an unclear error): a name in --subgroups-file that the data lacks is reported as
    ``unknown column 'gx' (--subgroups)``: the user gave --subgroups-file, not --subgroups."""
    path = tmp_path / "d.csv"
    _frame().to_csv(path, index=False)
    names = tmp_path / "names.txt"
    names.write_text("g1\ngx\n")
    status, _, err = _cli(capsys, path, "--label", "y", "--scores", "s", "--subgroups-file",
                          names, "-q")
    assert status == 1
    assert "'gx'" in err and "--subgroups-file" in err, err


def test_streamed_json_settings_state_the_same_confidence(tmp_path, capsys, monkeypatch):
    """(A JSON statement): without --ci/--significance, the in-memory JSON report says
    ``settings.confidence: 0.95`` and the streamed one of the same data and options
    (--sensitive-features, --positive) has no ``confidence`` key; every number is the same."""
    df = _big()
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    args = [path, "--label", "lab", "--positive", "toxic", "--scores", "s", "--subgroups",
            "g1", "g2", "g3", "--sensitive-features", "sex", "-q"]
    assert _cli(capsys, *args, "--out", tmp_path / "m.json")[0] == 0
    limit = _four_mib_for_data(monkeypatch, batch_rows=4_000)
    status, _, err = _cli(capsys, *args, "--out", tmp_path / "s.json", "--max-memory", limit)
    assert status == 0, err
    memory = json.loads((tmp_path / "m.json").read_text())
    streamed = json.loads((tmp_path / "s.json").read_text())
    assert streamed["settings"].get("engine") == "streaming"
    assert _table(memory) == _table(streamed)
    assert streamed["settings"].get("confidence") == memory["settings"]["confidence"]


# ------------------------------------------------------------------- checked and right

IDENTITY_TEXT = {
    "ints": (["0", "1"], None), "floats": (["0.0", "1.0"], None), "space": ([" 0", " 1"], None),
    "plus": (["+0", "+1"], None), "exp": (["0e0", "1e0"], None),
    "truefalse": (["false", "true"], None), "TrueFalse": (["False", "True"], None),
    "tf_NA": (["false", "true"], "NA"), "int_NA": (["0", "1"], "NA"),
    "int_nan": (["0", "1"], "nan"), "int_empty": (["0", "1"], ""),
}


@pytest.mark.parametrize("policy", ["background", "exclude"])
@pytest.mark.parametrize("variant", sorted(IDENTITY_TEXT))
def test_identity_text_forms_give_the_brute_force_numbers(tmp_path, capsys, variant, policy):
    values, na = IDENTITY_TEXT[variant]
    df = _frame(120, 1)
    n = len(df)
    missing = np.random.default_rng(5).random(n) < 0.15 if na is not None else np.zeros(n, bool)
    g = df["g1"].to_numpy()
    lines = ["y,s,g"] + [f"{df.y[i]},{df.s[i]},{na if missing[i] else values[g[i]]}"
                         for i in range(n)]
    path = tmp_path / "d.csv"
    path.write_text("\n".join(lines) + "\n")
    status, _, err = _cli(capsys, path, "--label", "y", "--scores", "s", "--subgroups", "g",
                          "--missing-subgroup", policy, "--out", tmp_path / "r.json", "-q")
    assert status == 0, err
    keep = ~missing if policy == "exclude" else np.ones(n, bool)
    y, s = df["y"].to_numpy().astype(bool), df["s"].to_numpy()
    _assert_rows(json.loads((tmp_path / "r.json").read_text()),
                 {("s", "g"): (y[keep], s[keep], ((g == 1) & ~missing)[keep], None)})


@pytest.mark.parametrize("values,positive,flip", [
    (("fine", "toxic"), "toxic", False), (("fine", "toxic"), "fine", True),
    ((1, 2), "2", False), ((1, 2), "1.0", True), ((0, 1), "0", True),
    (("False", "True"), "false", True), ((-1, 1), "-1", True), (("0", "toxic"), "0", True),
])
def test_positive_label_values_give_the_brute_force_numbers(tmp_path, capsys, values,
                                                            positive, flip):
    df = _frame(200, 4)
    y = df["y"].to_numpy().astype(bool)
    df["lab"] = np.where(y, values[1], values[0])
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    status, _, err = _cli(capsys, path, "--label", "lab", "--scores", "s", "--subgroups", "g1",
                          "--positive", positive, "--out", tmp_path / "r.json", "-q")
    assert status == 0, err
    _assert_rows(json.loads((tmp_path / "r.json").read_text()),
                 {("s", "g1"): (~y if flip else y, df["s"], df["g1"] == 1, None)})


def test_weights_csv_and_names_like_formulas(tmp_path, capsys):
    """Integer weights == repeated rows; the .csv's numbers (default and --csv-raw) equal the
    JSON's and the weighted brute force; names from --subgroups-file ('-x', '=SUM(1)', unicode)."""
    df = _big(3_000, 9).rename(columns={"g1": "-x", "g2": "=SUM(1)", "g3": "naïve group"})
    subs = ["-x", "=SUM(1)", "naïve group"]
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    names = tmp_path / "names.txt"
    names.write_bytes(("\ufeff" + "\r\n".join(subs) + "\r\n").encode())  # BOM and CRLF
    read = pd.read_csv(path)
    y = read["y"].to_numpy().astype(bool)
    refs = {(m, g): (y, read[m], read[g].to_numpy(float) >= 0.5, read["w"].to_numpy(float))
            for m in ["s"] for g in subs}
    rep = read.loc[read.index.repeat(read["w"])]
    for raw in ([], ["--csv-raw"]):
        status, _, err = _cli(capsys, path, "--label", "y", "--scores", "s", "--subgroups-file",
                              names, "--weight", "w", "--out", tmp_path / "r.json",
                              "--out", tmp_path / "r.csv", "-q", *raw)
        assert status == 0, err
        report = json.loads((tmp_path / "r.json").read_text())
        _assert_rows(report, refs)
        table = _table(report)
        for key in refs:
            want = brute_force_metrics(rep["y"].astype(bool), rep["s"],
                                       rep[key[1]].to_numpy(float) >= 0.5)
            for metric in METRICS:
                assert table[key][metric] == pytest.approx(want[metric], rel=1e-15, abs=1e-15)
        with open(tmp_path / "r.csv", newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        assert len(rows) == len(subs)
        for row in rows:
            name = row["subgroup"]
            if not raw and name[0] == "'":
                name = name[1:]
            for metric in METRICS:
                assert float(row[metric]) == table[row["model"], name][metric]


def test_subgroups_all_boolean_picks_the_flag_columns(tmp_path, capsys):
    rng = np.random.default_rng(3)
    df = _frame(3_000, 2)
    n = len(df)
    df["b"] = df["g2"].astype(bool)
    df["tf"] = np.where(df["g1"] == 1, "true", "false")
    df["na01"] = pd.array(np.where(rng.random(n) < 0.2, None, df["g2"]), dtype="Int64")
    df["late2"] = df["g1"]
    df.loc[2_500, "late2"] = 2  # 0/1 in the first rows, 2 later: not a flag column
    df["frac"] = rng.random(n).round(2)
    df["allna"] = np.nan
    df["w"] = rng.integers(0, 2, n)
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    status, _, err = _cli(capsys, path, "--label", "y", "--scores", "s", "--weight", "w",
                          "--subgroups-all-boolean", "--out", tmp_path / "r.json", "-q")
    assert status == 0, err
    report = json.loads((tmp_path / "r.json").read_text())
    assert [r["subgroup"] for r in report["models"][0]["subgroups"]] == \
        ["g1", "g2", "b", "tf", "na01"]
    # a 0/1 column given as a sensitive feature is one subgroup per value, not also an
    # identity column (which counted its tests twice)
    status, _, err = _cli(capsys, path, "--label", "y", "--scores", "s", "--weight", "w",
                          "--subgroups-all-boolean", "--sensitive-features", "b",
                          "--out", tmp_path / "r.json", "-q")
    assert status == 0, err
    report = json.loads((tmp_path / "r.json").read_text())
    assert [r["subgroup"] for r in report["models"][0]["subgroups"]] == \
        ["g1", "g2", "tf", "na01", "b=False", "b=True"]


@pytest.mark.parametrize("kind", ["csv", "semicolon", "tsv.gz", "jsonl", "parquet"])
def test_formats_with_sensitive_features_give_the_brute_force_numbers(tmp_path, capsys, kind):
    df = _big(1_500, 13)
    df["sex"] = np.where(np.arange(len(df)) % 7 == 0, 'a;"b", c', df["sex"])  # quoting
    extra = []
    if kind == "csv":
        path = tmp_path / "d.csv"
        df.to_csv(path, index=False)
    elif kind == "semicolon":
        path = tmp_path / "d.csv"
        df.to_csv(path, index=False, sep=";")
        extra = ["--sep", ";"]
    elif kind == "tsv.gz":
        path = tmp_path / "d.tsv.gz"
        df.to_csv(path, index=False, sep="\t")
    elif kind == "jsonl":
        path = tmp_path / "d.jsonl"
        df.to_json(path, orient="records", lines=True)
    else:
        pytest.importorskip("pyarrow")
        path = tmp_path / "d.parquet"
        df.to_parquet(path)
    y = df["y"].to_numpy().astype(bool)
    for policy in ["background", "exclude"]:
        status, _, err = _cli(capsys, path, "--label", "y", "--scores", "s", "--subgroups",
                              "g1", "g2", "--sensitive-features", "sex", "--missing-subgroup",
                              policy, "--out", tmp_path / "r.json", "-q", *extra)
        assert status == 0, err
        refs = {}
        for g in ["g1", "g2"]:
            v = df[g].to_numpy(float)
            keep = ~np.isnan(v) if policy == "exclude" else np.ones(len(df), bool)
            refs["s", g] = (y[keep], df["s"].to_numpy()[keep], (v >= 0.5)[keep], None)
        for value in df["sex"].unique():
            refs["s", f"sex={value}"] = (y, df["s"], df["sex"] == value, None)
        _assert_rows(json.loads((tmp_path / "r.json").read_text()), refs)


@pytest.mark.parametrize("policy", ["background", "exclude"])
def test_streamed_intersections_and_positive_give_the_brute_force_numbers(tmp_path, capsys,
                                                                          monkeypatch, policy):
    df = _big()
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    limit = _four_mib_for_data(monkeypatch, batch_rows=4_000)
    status, _, err = _cli(capsys, path, "--label", "lab", "--positive", "toxic", "--scores", "s",
                          "--subgroups", "g1", "g2", "g3", "--intersections", "2",
                          "--min-subgroup-size", "200", "--sensitive-features", "sex",
                          "--missing-subgroup", policy, "--max-memory", limit,
                          "--out", tmp_path / "r.json")
    assert status == 0, err
    assert "streaming it" in err
    y = df["lab"].to_numpy() == "toxic"
    s = df["s"].to_numpy()
    member = {g: df[g].to_numpy(float) >= 0.5 for g in ["g1", "g2", "g3"]}
    known = {g: ~np.isnan(df[g].to_numpy(float)) for g in ["g1", "g2", "g3"]}
    everyone = np.ones(len(df), bool)
    refs = {}
    for g in member:
        keep = known[g] if policy == "exclude" else everyone
        refs["s", g] = (y[keep], s[keep], member[g][keep], None)
    for value in ["f", "m"]:
        refs["s", f"sex={value}"] = (y, s, df["sex"].to_numpy() == value, None)
    for a, b in itertools.combinations(["g1", "g2", "g3"], 2):  # identities only (documented)
        both = member[a] & member[b]
        if (both & y).sum() >= 200 and (both & ~y).sum() >= 200:
            keep = known[a] & known[b] if policy == "exclude" else everyone
            refs["s", f"{a} & {b}"] = (y[keep], s[keep], both[keep], None)
    _assert_rows(json.loads((tmp_path / "r.json").read_text()), refs)


def test_thresholds_csv_counts_and_top_ranking(tmp_path, capsys):
    df = _big(2_500, 18)
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    status, out, err = _cli(capsys, path, "--label", "y", "--scores", "s", "--subgroups",
                            "g1", "g2", "g3", "--thresholds", "0.6", "0.3", "0.6", "--top", "2",
                            "--wide", "--out", tmp_path / "r.csv", "--out", tmp_path / "r.json",
                            "-q")
    assert status == 0, err
    y = df["y"].to_numpy().astype(bool)
    with open(tmp_path / "r.thresholds.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert sorted({float(r["threshold"]) for r in rows}) == [0.3, 0.6]
    assert len(rows) == 2 * 3
    for row in rows:
        member = df[row["subgroup"]].to_numpy(float) >= 0.5
        predicted = df[row["model"]].to_numpy() >= float(row["threshold"])
        assert int(row["subgroup_tp"]) == (member & y & predicted).sum()
        assert int(row["subgroup_fp"]) == (member & ~y & predicted).sum()
        assert int(row["background_tp"]) == (~member & y & predicted).sum()
        assert int(row["background_fp"]) == (~member & ~y & predicted).sum()
    report = json.loads((tmp_path / "r.json").read_text())
    ranked = sorted(report["models"][0]["subgroups"],
                    key=lambda r: min(r["subgroup_auc"], r["bpsn_auc"], r["bnsp_auc"]))
    shown = [line.split()[0] for line in out.splitlines() if line.split()[:1]
             and line.split()[0] in ("g1", "g2", "g3")]
    assert shown[:2] == [r["subgroup"] for r in ranked[:2]]
    assert len(set(shown)) == 2
