"""The ``fastbias`` command line, end to end: an independent review's tests (2026-11-28,
fortieth session).

Every number the CLI writes is checked against brute-force pair counts with
``fractions.Fraction`` (or scikit-learn) computed from the file written here, parsed by
this file's own reader (``csv`` / ``json`` from the standard library). No defect was found:
these are pins.
"""

import csv
import io
import json
import math
import os
from fractions import Fraction

import pytest

from . import cli_runner


def run_cli(args, cwd, check_rc=None, process=False):
    proc = cli_runner.run_cli(args, cwd, process=process)
    if check_rc is not None:
        assert proc.returncode == check_rc, (proc.returncode, proc.stdout, proc.stderr)
    return proc


# ---------------------------------------------------------------- reference (own code)

def pair_auc(pos, neg):
    """pos, neg: lists of (score as Fraction, weight as Fraction). P(s+ > s-) + ties/2."""
    num = Fraction(0)
    for sp, wp in pos:
        for sn, wn in neg:
            if sp > sn:
                num += wp * wn
            elif sp == sn:
                num += wp * wn / 2
    den = sum(w for _, w in pos) * sum(w for _, w in neg)
    if den == 0:
        return None
    return num / den


def ref_report(rows, score, groups, missing="background", sub_thr=Fraction(1, 2)):
    """rows: dicts with 'y' (0/1), score columns (Fraction), 'w' (Fraction), identity
    columns (Fraction or None). Returns overall AUC and {group: metrics}."""
    def pts(rs):
        return [(r[score], r["w"]) for r in rs]

    P = [r for r in rows if r["y"] == 1]
    N = [r for r in rows if r["y"] == 0]
    out = {"overall_auc": pair_auc(pts(P), pts(N)), "subgroups": {}}
    for g in groups:
        sub = [r for r in rows if r[g] is not None and r[g] >= sub_thr]
        if missing == "background":
            bg = [r for r in rows if r[g] is None or r[g] < sub_thr]
        else:
            bg = [r for r in rows if r[g] is not None and r[g] < sub_thr]
        sp = [r for r in sub if r["y"] == 1]
        sn = [r for r in sub if r["y"] == 0]
        bp = [r for r in bg if r["y"] == 1]
        bn = [r for r in bg if r["y"] == 0]
        m = {
            "subgroup_size": len(sub),
            "subgroup_negatives": len(sn), "subgroup_positives": len(sp),
            "background_negatives": len(bn), "background_positives": len(bp),
            "subgroup_auc": pair_auc(pts(sp), pts(sn)),
            "bpsn_auc": pair_auc(pts(bp), pts(sn)),
            "bnsp_auc": pair_auc(pts(sp), pts(bn)),
        }
        # AEG: P(subgroup score > background score) - 1/2 within one class
        an = pair_auc(pts(sn), pts(bn))
        ap = pair_auc(pts(sp), pts(bp))
        m["negative_aeg"] = None if an is None else an - Fraction(1, 2)
        m["positive_aeg"] = None if ap is None else ap - Fraction(1, 2)
        out["subgroups"][g] = m
    # Jigsaw final metric: 0.25 overall + 0.75 mean of the power means (p=-5)
    pms = []
    for metric in ("subgroup_auc", "bpsn_auc", "bnsp_auc"):
        vals = [out["subgroups"][g][metric] for g in groups]
        if any(v is None for v in vals):
            pms.append(None)
            continue
        if any(v == 0 for v in vals):
            pms.append(0.0)
            continue
        pms.append((sum(float(v) ** -5 for v in vals) / len(vals)) ** (-1 / 5))
    if any(p is None for p in pms):
        out["final_metric"] = None
    else:
        out["final_metric"] = 0.25 * float(out["overall_auc"]) + 0.75 * sum(pms) / 3
    return out


def close(a, b, tol=1e-12):
    if b is None:
        return a is None or (isinstance(a, float) and math.isnan(a)) or a == ""
    return a is not None and a != "" and abs(float(a) - float(b)) <= tol


METRICS = ("subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg")
COUNTS = ("subgroup_size", "subgroup_negatives", "subgroup_positives",
          "background_negatives", "background_positives")


def check_csv_out(path, refs):
    """refs: {model: ref_report(...)}; checks every row of the CLI's CSV output."""
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    seen = set()
    for row in rows:
        ref = refs[row["model"]]
        m = ref["subgroups"][row["subgroup"]]
        seen.add((row["model"], row["subgroup"]))
        for c in COUNTS:
            assert int(row[c]) == m[c], (row["model"], row["subgroup"], c, row[c], m[c])
        for c in METRICS:
            assert close(row[c], m[c]), (row["model"], row["subgroup"], c, row[c], m[c])
        assert close(row["overall_auc"], ref["overall_auc"])
        assert close(row["final_metric"], ref["final_metric"], 1e-12), (
            row["final_metric"], ref["final_metric"])
    assert seen == {(mo, g) for mo, r in refs.items() for g in r["subgroups"]}


def check_json_out(path, refs):
    with open(path, encoding="utf-8") as fh:
        d = json.load(fh)
    assert {m["name"] for m in d["models"]} == set(refs)
    for model in d["models"]:
        ref = refs[model["name"]]
        assert close(model["overall_auc"], ref["overall_auc"])
        assert close(model["final_metric"], ref["final_metric"])
        assert {r["subgroup"] for r in model["subgroups"]} == set(ref["subgroups"])
        for row in model["subgroups"]:
            m = ref["subgroups"][row["subgroup"]]
            for c in COUNTS:
                assert row[c] == m[c], (c, row[c], m[c])
            for c in METRICS:
                assert close(row[c], m[c]), (model["name"], row["subgroup"], c, row[c], m[c])
    return d


def F(text):
    """Own reader of a numeric CSV cell: '' -> None, else an exact Fraction."""
    text = text.strip()
    return None if text == "" else Fraction(text)


# ---------------------------------------------------------------- data files

TEXT_CSV = (
    'verdict,"model, a",model_b,"african american",muslim,w\r\n'
    'toxic,0.9,"0.25",1,0,1\r\n'
    'ok,0.1,0.75,1,1,2\r\n'
    '"toxic",0.4,0.4,0,1,1\r\n'
    'ok,0.4,0.3,0,,3\r\n'
    'toxic,0.7,0.9,1,,1\r\n'
    'ok,0.6,0.1,,1,1\r\n'
    'ok,0.4,0.4,1,0,2\r\n'
    'toxic,0.2,0.6,,0,1\r\n'
    'ok,0.9,0.25,0,1,1\r\n'
    'toxic,0.6,0.1,1,1,2\r\n'
)


def parse_text_csv(text, positive="toxic"):
    reader = csv.DictReader(io.StringIO(text, newline=""))
    rows = []
    for r in reader:
        rows.append({
            "y": 1 if r["verdict"] == positive else 0,
            "model, a": F(r["model, a"]), "model_b": F(r["model_b"]),
            "african american": F(r["african american"]), "muslim": F(r["muslim"]),
            "w": F(r["w"]),
        })
    return rows


@pytest.mark.parametrize("missing", ["background", "exclude"])
def test_text_label_quoted_names_weights_missing_policy(tmp_path, missing):
    data = tmp_path / "d.csv"
    data.write_text(TEXT_CSV, newline="")
    (tmp_path / "groups.txt").write_text("african american\nmuslim\n")
    run_cli(["report", data, "--label", "verdict", "--positive", "toxic",
             "--scores", "model, a", "model_b", "--subgroups-file", "groups.txt",
             "--weight", "w", "--missing-subgroup", missing,
             "--out", "r.csv", "--out", "r.json", "-q"], tmp_path, check_rc=0,
            process=missing == "exclude")  # (once as the installed command runs)
    rows = parse_text_csv(TEXT_CSV)
    groups = ["african american", "muslim"]
    refs = {s: ref_report(rows, s, groups, missing) for s in ("model, a", "model_b")}
    check_csv_out(tmp_path / "r.csv", refs)
    check_json_out(tmp_path / "r.json", refs)


def test_unweighted_terminal_table_matches_reference(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text(TEXT_CSV, newline="")
    p = run_cli(["report", data, "--label", "verdict", "--positive", "toxic",
                 "--scores", "model_b", "--subgroups", "muslim", "--wide", "-q"],
                tmp_path, check_rc=0)
    rows = [dict(r, w=Fraction(1)) for r in parse_text_csv(TEXT_CSV)]
    ref = ref_report(rows, "model_b", ["muslim"])
    head = [ln for ln in p.stdout.splitlines() if ln.startswith("model_b")][0]
    assert f"overall AUC {float(ref['overall_auc']):.4f}" in head, head
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("muslim")][0].split()
    m = ref["subgroups"]["muslim"]
    assert [int(x) for x in line[1:6]] == [m[c] for c in COUNTS]
    got = [float(x) for x in line[6:11]]
    want = [float(m[c]) for c in METRICS]
    assert got == pytest.approx(want, abs=5e-5), (got, want)


def test_true_false_text_label_and_fractional_thresholds_jsonl(tmp_path):
    # JSON lines: label as fractions (Jigsaw toxicity), identity as fractions, one key left out
    recs = [
        {"toxicity": 0.2, "s": 0.3, "g": 0.8},
        {"toxicity": 0.35, "s": 0.6, "g": 0.4},
        {"toxicity": 0.5, "s": "0.45", "g": 0.7},
        {"toxicity": 0.0, "s": 0.45, "g": None},
        {"toxicity": 0.9, "s": 0.1},
        {"toxicity": 0.31, "s": 0.8, "g": 1.0},
        {"toxicity": 0.1, "s": 0.05, "g": 0.69},
        {"toxicity": 0.7, "s": 0.7, "g": 0.75},
    ]
    data = tmp_path / "d.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    run_cli(["report", data, "--label", "toxicity", "--scores", "s", "--subgroups", "g",
             "--label-threshold", "0.3", "--subgroup-threshold", "0.7",
             "--missing-subgroup", "exclude", "--out", "r.json", "-q"], tmp_path, check_rc=0)
    rows = []
    for r in recs:
        g = r.get("g")
        rows.append({"y": 1 if Fraction(str(r["toxicity"])) >= Fraction(3, 10) else 0,
                     "s": Fraction(str(r["s"])), "w": Fraction(1),
                     "g": None if g is None else Fraction(str(g))})
    ref = ref_report(rows, "s", ["g"], "exclude", Fraction(7, 10))
    check_json_out(tmp_path / "r.json", {"s": ref})


def test_true_false_strings_label(tmp_path):
    text = ("label,s,g\nTrue,0.9,1\nFalse,0.5,1\nTrue,0.3,0\nFalse,0.2,0\n"
            "True,0.5,1\nFalse,0.6,0\n")
    (tmp_path / "d.csv").write_text(text)
    run_cli(["report", "d.csv", "--label", "label", "--scores", "s", "--subgroups", "g",
             "--out", "r.json", "-q"], tmp_path, check_rc=0)
    rows = [{"y": 1 if r["label"] == "True" else 0, "s": F(r["s"]), "g": F(r["g"]),
             "w": Fraction(1)} for r in csv.DictReader(io.StringIO(text))]
    check_json_out(tmp_path / "r.json", {"s": ref_report(rows, "s", ["g"])})


def test_parquet_bools(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    y = [True, False, True, False, True, False, False, True]
    s = [0.9, 0.2, 0.4, 0.4, 0.3, 0.8, 0.1, 0.6]
    g = [True, True, None, False, True, False, True, None]
    pq.write_table(pa.table({"y": y, "s": s, "g": pa.array(g, pa.bool_())}),
                   tmp_path / "d.parquet")
    run_cli(["report", "d.parquet", "--label", "y", "--scores", "s", "--subgroups", "g",
             "--out", "r.csv", "-q"], tmp_path, check_rc=0)
    rows = [{"y": int(a), "s": Fraction(b), "w": Fraction(1),
             "g": None if c is None else Fraction(int(c))} for a, b, c in zip(y, s, g)]
    check_csv_out(tmp_path / "r.csv", {"s": ref_report(rows, "s", ["g"])})


def test_thresholds_csv_counts(tmp_path):
    text = ("y,s,g\n1,0.9,1\n0,0.5,1\n1,0.3,0\n0,0.2,0\n1,0.5,1\n0,0.6,0\n1,0.7,0\n"
            "0,0.5,1\n")
    (tmp_path / "d.csv").write_text(text)
    run_cli(["report", "d.csv", "--label", "y", "--scores", "s", "--subgroups", "g",
             "--thresholds", "0.5", "--out", "r.csv", "-q"], tmp_path, check_rc=0)
    recs = list(csv.DictReader(io.StringIO(text)))
    with open(tmp_path / "r.thresholds.csv", newline="") as fh:
        out = list(csv.DictReader(fh))
    assert len(out) == 1
    row = out[0]
    sub = [r for r in recs if r["g"] == "1"]
    bg = [r for r in recs if r["g"] == "0"]

    def rates(rs):
        pos = [r for r in rs if r["y"] == "1"]
        neg = [r for r in rs if r["y"] == "0"]
        flag = [r for r in rs if Fraction(r["s"]) >= Fraction(1, 2)]
        tp = sum(1 for r in pos if Fraction(r["s"]) >= Fraction(1, 2))
        fp = sum(1 for r in neg if Fraction(r["s"]) >= Fraction(1, 2))
        return {"pos_rate": Fraction(len(flag), len(rs)), "tpr": Fraction(tp, len(pos)),
                "fpr": Fraction(fp, len(neg)), "fnr": 1 - Fraction(tp, len(pos)),
                "precision": Fraction(tp, len(flag)) if flag else None}
    rs, rb = rates(sub), rates(bg)
    names = {"tpr": "tpr", "fpr": "fpr", "fnr": "fnr", "pos_rate": "positive_rate",
             "precision": "precision"}
    for k, col in names.items():
        assert close(row[f"subgroup_{col}"], rs[k]), (k, row[f"subgroup_{col}"], rs[k])
        assert close(row[f"background_{col}"], rb[k]), (k, row[f"background_{col}"], rb[k])
        want = None if rs[k] is None or rb[k] is None else rs[k] - rb[k]
        assert close(row[f"{col}_gap"], want), (k, row[f"{col}_gap"], want)


def test_delong_overall_interval_matches_independent_delong(tmp_path):
    from scipy.stats import norm
    from sklearn.metrics import roc_auc_score
    y = [1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1, 0]
    s = [0.9, 0.2, 0.4, 0.4, 0.3, 0.8, 0.6, 0.1, 0.35, 0.7, 0.2, 0.5]
    g = [1, 1, 0, 1, 0, 0, 1, 0, 1, 1, 0, 1]
    text = "y,s,g\n" + "".join(f"{a},{b},{c}\n" for a, b, c in zip(y, s, g))
    (tmp_path / "d.csv").write_text(text)
    run_cli(["report", "d.csv", "--label", "y", "--scores", "s", "--subgroups", "g",
             "--ci", "delong", "--out", "r.json", "-q"], tmp_path, check_rc=0)
    d = json.load(open(tmp_path / "r.json"))
    m = d["models"][0]
    pos = [b for a, b in zip(y, s) if a]
    neg = [b for a, b in zip(y, s) if not a]
    auc = roc_auc_score(y, s)
    assert m["overall_auc"] == pytest.approx(auc, abs=1e-15)
    v10 = [sum(1.0 if p > n else 0.5 if p == n else 0 for n in neg) / len(neg) for p in pos]
    v01 = [sum(1.0 if p > n else 0.5 if p == n else 0 for p in pos) / len(pos) for n in neg]

    def var(v):
        mu = sum(v) / len(v)
        return sum((x - mu) ** 2 for x in v) / (len(v) - 1)
    se = math.sqrt(var(v10) / len(pos) + var(v01) / len(neg))
    z = norm.ppf(0.975)
    # the documented interval (docs/intervals.md) may be on a transformed scale; accept the
    # plain Wald interval clipped to [0, 1] or a logit one: check the centre holds auc and
    # the width is of the DeLong se's order
    lo, hi = m["overall_auc_low"], m["overall_auc_high"]
    assert lo <= auc <= hi
    assert (hi - lo) == pytest.approx(2 * z * se, rel=0.35), (lo, hi, se)


# ---------------------------------------------------------------- errors

def _err_line(p):
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("fastbias: error")]
    assert len(lines) == 1, p.stderr
    return lines[0]


@pytest.mark.parametrize("col,bad,body", [
    ("s", "abc", "y,s,g\n1,0.9,1\n0,0.5,1\n1,abc,0\n0,0.2,0\n"),
    ("g", "yes", "y,s,g\n1,0.9,1\n0,0.5,1\n1,0.3,yes\n0,0.2,0\n"),
    ("y", "maybe", "y,s,g\n1,0.9,1\n0,0.5,1\n1,0.3,0\nmaybe,0.2,0\n"),
])
def test_bad_cell_error_names_column_value_position(tmp_path, col, bad, body):
    (tmp_path / "d.csv").write_text(body)
    p = run_cli(["report", "d.csv", "--label", "y", "--scores", "s", "--subgroups", "g"],
                tmp_path, check_rc=1)
    line = _err_line(p)
    assert f"'{col}'" in line and bad in line, line
    assert "position" in line or "row" in line or "line" in line, line


def test_nan_score_error_position_is_data_row(tmp_path):
    (tmp_path / "d.csv").write_text("y,s,g\n1,0.9,1\n0,0.5,1\n1,,0\n0,0.2,0\n")
    p = run_cli(["report", "d.csv", "--label", "y", "--scores", "s", "--subgroups", "g"],
                tmp_path, check_rc=1)
    line = _err_line(p)
    assert "'s'" in line and "position 2" in line, line


def test_jsonl_bool_score_is_error(tmp_path):
    (tmp_path / "d.jsonl").write_text(
        '{"y":1,"s":0.9,"g":1}\n{"y":0,"s":true,"g":1}\n{"y":1,"s":0.2,"g":0}\n'
        '{"y":0,"s":0.1,"g":0}\n')
    p = run_cli(["report", "d.jsonl", "--label", "y", "--scores", "s", "--subgroups", "g"],
                tmp_path, check_rc=1)
    line = _err_line(p)
    assert "'s'" in line and "true" in line.lower(), line


def test_usage_errors_exit_2(tmp_path):
    (tmp_path / "d.csv").write_text("y,s,g\n1,0.9,1\n0,0.5,0\n")
    p = run_cli(["report", "d.csv", "--scores", "s", "--subgroups", "g"], tmp_path)
    assert p.returncode == 2
    p = run_cli(["report", "d.csv", "--label", "y", "--scores", "s", "--subgroups", "g",
                 "--ci", "wald"], tmp_path)
    assert p.returncode == 2


# ---------------------------------------------------------------- outputs

SMALL = "y,s,g\n1,0.9,1\n0,0.5,1\n1,0.3,0\n0,0.2,0\n"


def test_out_never_overwrites_input(tmp_path):
    d = tmp_path / "d.csv"
    d.write_text(SMALL)
    # the input named as a .csv output, with --force, by another spelling of its path
    p = run_cli(["report", "d.csv", "--label", "y", "--scores", "s", "--subgroups", "g",
                 "--out", "./sub/../d.csv", "--force", "-q"], tmp_path)
    assert p.returncode == 1, p.stdout
    assert d.read_text() == SMALL


def test_out_via_hardlink_to_input_refused(tmp_path):
    d = tmp_path / "d.csv"
    d.write_text(SMALL)
    os.link(d, tmp_path / "h.csv")
    p = run_cli(["report", "d.csv", "--label", "y", "--scores", "s", "--subgroups", "g",
                 "--out", "h.csv", "--force", "-q"], tmp_path)
    assert d.read_text() == SMALL, "input replaced through a hard link"
    assert p.returncode == 1


def test_out_symlink_refused_and_target_intact(tmp_path):
    d = tmp_path / "d.csv"
    d.write_text(SMALL)
    target = tmp_path / "victim.txt"
    target.write_text("keep")
    (tmp_path / "r.json").symlink_to(target)
    p = run_cli(["report", "d.csv", "--label", "y", "--scores", "s", "--subgroups", "g",
                 "--out", "r.json", "--force", "-q"], tmp_path)
    assert p.returncode == 1
    assert target.read_text() == "keep"
    assert (tmp_path / "r.json").is_symlink()


def test_thresholds_sidecar_symlink_refused(tmp_path):
    d = tmp_path / "d.csv"
    d.write_text(SMALL)
    target = tmp_path / "victim.txt"
    target.write_text("keep")
    (tmp_path / "r.thresholds.csv").symlink_to(target)
    p = run_cli(["report", "d.csv", "--label", "y", "--scores", "s", "--subgroups", "g",
                 "--thresholds", "0.5", "--out", "r.csv", "--force", "-q"], tmp_path)
    assert target.read_text() == "keep"
    assert p.returncode == 1


def test_thresholds_sidecar_is_input_refused(tmp_path):
    d = tmp_path / "r.thresholds.csv"
    d.write_text(SMALL)
    p = run_cli(["report", "r.thresholds.csv", "--label", "y", "--scores", "s",
                 "--subgroups", "g", "--thresholds", "0.5", "--out", "r.csv", "--force",
                 "-q"], tmp_path)
    assert d.read_text() == SMALL
    assert p.returncode == 1


def test_existing_out_without_force_kept(tmp_path):
    (tmp_path / "d.csv").write_text(SMALL)
    (tmp_path / "r.html").write_text("old")
    p = run_cli(["report", "d.csv", "--label", "y", "--scores", "s", "--subgroups", "g",
                 "--out", "r.html", "-q"], tmp_path)
    assert p.returncode == 1
    assert (tmp_path / "r.html").read_text() == "old"


def test_hostile_names_escaped(tmp_path):
    names = ["=HYPERLINK(1)", "\x1b[31mred", "<script>x</script>"]
    header = "y,s," + ",".join('"' + n.replace('"', '""') + '"' for n in names)
    body = "\n".join(["1,0.9,1,0,1", "0,0.5,1,1,0", "1,0.3,0,1,1", "0,0.2,0,0,1"])
    (tmp_path / "d.csv").write_text(header + "\n" + body + "\n")
    (tmp_path / "g.txt").write_text("\n".join(names) + "\n")
    p = run_cli(["report", "d.csv", "--label", "y", "--scores", "s", "--subgroups-file",
                 "g.txt", "--out", "r.csv", "--out", "r.html", "--progress", "never"],
                tmp_path, check_rc=0)
    assert "\x1b" not in p.stdout and "\x1b" not in p.stderr
    with open(tmp_path / "r.csv", newline="") as fh:
        subs = {r["subgroup"] for r in csv.DictReader(fh)}
    assert "'=HYPERLINK(1)" in subs and "=HYPERLINK(1)" not in subs
    html = (tmp_path / "r.html").read_text()
    assert "<script>x" not in html and "\x1b" not in html


# ---------------------------------------------------------------- more options

def test_sensitive_features_text_none_na_are_values(tmp_path):
    text = ("y,s,race\n1,0.9,None\n0,0.5,None\n1,0.3,NA\n0,0.2,NA\n1,0.6,\n0,0.1,black\n"
            "1,0.8,black\n")
    (tmp_path / "d.csv").write_text(text)
    run_cli(["report", "d.csv", "--label", "y", "--scores", "s", "--sensitive-features",
             "race", "--out", "r.json", "-q"], tmp_path, check_rc=0)
    recs = list(csv.DictReader(io.StringIO(text)))
    rows = []
    for r in recs:
        row = {"y": int(r["y"]), "s": Fraction(r["s"]), "w": Fraction(1)}
        for v in ("None", "NA", "black"):
            row[f"race={v}"] = None if r["race"] == "" else Fraction(int(r["race"] == v))
        rows.append(row)
    ref = ref_report(rows, "s", ["race=None", "race=NA", "race=black"])
    check_json_out(tmp_path / "r.json", {"s": ref})


def test_intersections_pairs(tmp_path):
    text = ("y,s,a,b\n1,0.9,1,1\n0,0.5,1,1\n1,0.3,1,0\n0,0.2,0,1\n1,0.6,1,1\n0,0.1,0,0\n"
            "1,0.8,0,1\n0,0.7,1,1\n1,0.4,0,0\n")
    (tmp_path / "d.csv").write_text(text)
    run_cli(["report", "d.csv", "--label", "y", "--scores", "s", "--subgroups", "a", "b",
             "--intersections", "2", "--out", "r.json", "-q"], tmp_path, check_rc=0)
    rows = []
    for r in csv.DictReader(io.StringIO(text)):
        rows.append({"y": int(r["y"]), "s": Fraction(r["s"]), "w": Fraction(1),
                     "a": Fraction(r["a"]), "b": Fraction(r["b"]),
                     "a & b": Fraction(int(r["a"] == "1" and r["b"] == "1"))})
    ref = ref_report(rows, "s", ["a", "b", "a & b"])
    # the final metric stays over the identities alone (docs)
    ref["final_metric"] = ref_report(rows, "s", ["a", "b"])["final_metric"]
    check_json_out(tmp_path / "r.json", {"s": ref})


def test_wilson_intervals_in_thresholds_csv(tmp_path):
    from scipy.stats import norm
    text = ("y,s,g\n1,0.9,1\n0,0.5,1\n1,0.3,0\n0,0.2,0\n1,0.5,1\n0,0.6,0\n1,0.7,0\n"
            "0,0.5,1\n1,0.55,1\n")
    (tmp_path / "d.csv").write_text(text)
    run_cli(["report", "d.csv", "--label", "y", "--scores", "s", "--subgroups", "g",
             "--thresholds", "0.5", "--confidence", "0.9", "--out", "r.csv", "-q"],
            tmp_path, check_rc=0)
    with open(tmp_path / "r.thresholds.csv", newline="") as fh:
        row = list(csv.DictReader(fh))[0]
    z = norm.ppf(0.95)

    def wilson(k, n):
        p = k / n
        c = (p + z * z / (2 * n)) / (1 + z * z / n)
        h = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        return c - h, c + h
    # subgroup g=1: pos rows 0.9, 0.5, 0.55 (all >= .5: tpr 3/3); neg 0.5, 0.5 (fpr 2/2)
    for col, k, n in (("subgroup_tpr", 3, 3), ("subgroup_fpr", 2, 2),
                      ("subgroup_positive_rate", 5, 5), ("background_tpr", 1, 2),
                      ("background_fpr", 1, 2), ("background_positive_rate", 2, 4)):
        lo, hi = wilson(k, n)
        assert float(row[col]) == pytest.approx(k / n, abs=1e-15)
        assert float(row[col + "_low"]) == pytest.approx(max(lo, 0), abs=1e-12), col
        assert float(row[col + "_high"]) == pytest.approx(min(hi, 1), abs=1e-12), col


def test_nan_policy_omit_per_model(tmp_path):
    text = ("y,s1,s2,g\n1,0.9,,1\n0,0.5,0.1,1\n1,,0.3,0\n0,0.2,0.4,0\n1,0.6,0.6,1\n"
            "0,0.1,nan,0\n,0.3,0.2,1\n1,0.4,0.35,0\n")
    (tmp_path / "d.csv").write_text(text)
    run_cli(["report", "d.csv", "--label", "y", "--scores", "s1", "s2", "--subgroups", "g",
             "--nan-policy", "omit", "--out", "r.csv", "--progress", "never"], tmp_path,
            check_rc=0)
    refs = {}
    for s in ("s1", "s2"):
        rows = []
        for r in csv.DictReader(io.StringIO(text)):
            if r["y"] == "" or r[s] in ("", "nan"):
                continue
            rows.append({"y": int(r["y"]), s: Fraction(r[s]), "w": Fraction(1),
                         "g": Fraction(r["g"])})
        refs[s] = ref_report(rows, s, ["g"])
    check_csv_out(tmp_path / "r.csv", refs)


def test_csv_raw_names_exact(tmp_path):
    names = ["=1+1", "'quoted", "-minus"]
    header = "y,s," + ",".join(names)
    body = "\n".join(["1,0.9,1,0,1", "0,0.5,1,1,0", "1,0.3,0,1,1", "0,0.2,0,0,1"])
    (tmp_path / "d.csv").write_text(header + "\n" + body + "\n")
    (tmp_path / "g.txt").write_text("\n".join(names) + "\n")
    run_cli(["report", "d.csv", "--label", "y", "--scores", "s", "--subgroups-file", "g.txt",
             "--out", "r.csv", "--csv-raw", "-q"], tmp_path, check_rc=0)
    with open(tmp_path / "r.csv", newline="") as fh:
        assert {r["subgroup"] for r in csv.DictReader(fh)} == set(names)
