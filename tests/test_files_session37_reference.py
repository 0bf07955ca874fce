"""An independent review's tests (2026-11-27): the same data read every way (CSV, TSV,
compressed CSV, JSON lines, Parquet; in memory with ``evaluate``/``bias_metrics``/
``BiasEvaluator``, streamed with ``evaluate_csv``/``evaluate_parquet`` at batch sizes 1.. and
tiny bucket sizes that cut ties, and the CLI's CSV and JSON outputs) against a brute-force
reference: the files are parsed with the csv/json modules (or kept as the Python rows they
were written from) and every metric is counted pair by pair in ``fractions.Fraction`` (ties
1/2); the two ~300 KB files that cross pandas' read blocks use an exact rank count (numpy
searchsorted on object sums).

No wrong number was found: every case agreed with the reference and with
docs/validation.md, docs/cli.md and docs/distributed.md. Noticed beside it: the CLI's
message for a label column of numbers with one word far down named no position, where
``evaluate_csv`` names the row (now it names the word and its position:
``tests/test_cli.py``). Parquet labels outside [0, 1] found from the footer's statistics
name the row group and its row range (documented). ``evaluate_csv(pos_label=1)`` on a
True/False text label column counts True as positive (Python's True == 1), where the CLI's
``--positive 1`` refuses the file ("does not occur").
"""
from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastbias
from fastbias.cli import main as cli_main

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
COUNTS = ["subgroup_negatives", "subgroup_positives", "background_negatives",
          "background_positives"]


# ----------------------------------------------------------------------------- reference
def _u(xs, ys, wx=None, wy=None):
    """P(Y > X) with ties 1/2 as a Fraction, weighted pairs w_x * w_y; None if no pair."""
    wx = wx or [Fraction(1)] * len(xs)
    wy = wy or [Fraction(1)] * len(ys)
    num = Fraction(0)
    den = Fraction(0)
    for x, a in zip(xs, wx):
        for y, b in zip(ys, wy):
            w = a * b
            den += w
            if y > x:
                num += w
            elif y == x:
                num += w / 2
    if den == 0:
        return None
    return num / den


def reference(labels, scores, member, policy="background", weights=None):
    """labels: list of bool; scores: list of Fraction/float; member: list of True/False/None."""
    n = len(labels)
    member = [None if m is None else bool(m) for m in member]
    labels = [bool(v) for v in labels]
    w = [Fraction(1)] * n if weights is None else [Fraction(x) for x in weights]
    s = [Fraction(x) for x in scores]

    def cell(pred):
        idx = [i for i in range(n) if pred(i)]
        return [s[i] for i in idx], [w[i] for i in idx]

    gn = cell(lambda i: member[i] is True and not labels[i])
    gp = cell(lambda i: member[i] is True and labels[i])
    if policy == "background":
        inbg = lambda i: member[i] is not True  # noqa: E731
    else:
        inbg = lambda i: member[i] is False  # noqa: E731
    bn = cell(lambda i: inbg(i) and not labels[i])
    bp = cell(lambda i: inbg(i) and labels[i])
    out = {
        "subgroup_negatives": len(gn[0]), "subgroup_positives": len(gp[0]),
        "background_negatives": len(bn[0]), "background_positives": len(bp[0]),
    }
    out["subgroup_auc"] = _u(gn[0], gp[0], gn[1], gp[1])
    out["bpsn_auc"] = _u(gn[0], bp[0], gn[1], bp[1])
    out["bnsp_auc"] = _u(bn[0], gp[0], bn[1], gp[1])
    # P(s(D-) > s(Dg-)) = 1 - P(s(Dg-) >= ...) : use _u with X = background, Y = subgroup
    # P(bg > sub) = P(Y=bg > X=sub)
    p = _u(gn[0], bn[0], gn[1], bn[1])
    out["negative_aeg"] = None if p is None else Fraction(1, 2) - p
    p = _u(gp[0], bp[0], gp[1], bp[1])
    out["positive_aeg"] = None if p is None else Fraction(1, 2) - p
    return out


def overall_ref(labels, scores):
    neg = [Fraction(s) for s, y in zip(scores, labels) if not y]
    pos = [Fraction(s) for s, y in zip(scores, labels) if y]
    return _u(neg, pos)


def check_table(table, expected, *, model=None, tol=1e-15, rel=0.0):
    """table: fastbias tidy table; expected: {subgroup: reference dict}."""
    t = table if model is None else table[table["model"] == model]
    got = {str(r["subgroup"]): r for _, r in t.iterrows()}
    assert set(got) == set(expected), (sorted(got), sorted(expected))
    for name, ref in expected.items():
        row = got[name]
        for c in COUNTS:
            if c in row.index and rel == 0.0:
                assert int(row[c]) == ref[c], (name, c, row[c], ref[c])
        for m in METRICS:
            v = row[m]
            if ref[m] is None:
                assert v is None or (isinstance(v, float) and math.isnan(v)) or pd.isna(v), \
                    (name, m, v)
            else:
                exp = float(ref[m])
                assert not pd.isna(v), (name, m, v, exp)
                assert abs(float(v) - exp) <= tol + rel * abs(exp), (name, m, float(v), exp)


# ----------------------------------------------------------------------------- data
IDS = ["flag", "votes", "frac"]


def make_rows(n=60, seed=0):
    """Rows as plain Python: label int, score on a coarse grid (ties), flag bool, votes int,
    frac float or None (Jigsaw style)."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        rows.append({
            "y": int(rng.integers(0, 2)),
            "s": float(rng.integers(0, 6)) / 5,
            "t": float(rng.integers(0, 40)) / 7,
            "flag": bool(rng.random() < 0.35),
            "votes": int(rng.integers(0, 4)),
            "frac": None if rng.random() < 0.3 else float(rng.integers(0, 11)) / 10,
        })
    return rows


def ref_for(rows, policy, score="s", thr=0.5, weights=None):
    labels = [r["y"] >= 0.5 if not isinstance(r["y"], bool) else r["y"] for r in rows]
    scores = [r[score] for r in rows]
    out = {}
    out["flag"] = reference(labels, scores, [bool(r["flag"]) for r in rows], policy, weights)
    out["votes"] = reference(labels, scores, [r["votes"] >= thr for r in rows], policy, weights)
    out["frac"] = reference(labels, scores, [None if r["frac"] is None else r["frac"] >= thr
                                             for r in rows], policy, weights)
    return out


def write_csv(path, rows, cols=None):
    cols = cols or list(rows[0])
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow(["" if r[c] is None else (repr(r[c]) if isinstance(r[c], float) else r[c])
                        for c in cols])


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def write_any(path, rows, fmt):
    """Write ``rows`` as CSV, JSON lines or Parquet."""
    if fmt == "csv":
        write_csv(path, rows)
    elif fmt == "jsonl":
        write_jsonl(path, rows)
    else:
        frame_of(rows).to_parquet(path)


def frame_of(rows):
    df = pd.DataFrame(rows)
    df["frac"] = df["frac"].astype(float)
    df["votes"] = df["votes"].astype("int8")
    return df


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("rev37")
    rows = make_rows()
    write_csv(d / "d.csv", rows)
    write_jsonl(d / "d.jsonl", rows)
    frame_of(rows).to_parquet(d / "d.parquet", row_group_size=16)
    return d, rows


def run_cli(args):
    err = io.StringIO()
    out = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = cli_main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def read_cli_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        recs = list(csv.DictReader(f))
    t = pd.DataFrame(recs)
    for c in METRICS:
        t[c] = [float("nan") if v == "" else float(v) for v in t[c]]
    return t


# ----------------------------------------------------------------------------- tests
@pytest.mark.parametrize("policy", ["background", "exclude"])
def test_dataframe_path_matches_reference(files, policy):
    _, rows = files
    res = fastbias.evaluate(frame_of(rows), label="y", scores=["s", "t"], subgroups=IDS,
                            missing_subgroup=policy)
    check_table(res.table, ref_for(rows, policy), model="s")
    check_table(res.table, ref_for(rows, policy, score="t"), model="t")
    labels = [bool(r["y"]) for r in rows]
    assert res.overall_auc["s"] == float(overall_ref(labels, [r["s"] for r in rows]))


@pytest.mark.parametrize("policy", ["background", "exclude"])
@pytest.mark.parametrize("batch", [1, 2, 7, 16, 59, 60, 61, 10_000])
def test_evaluate_csv_batches(files, policy, batch):
    d, rows = files
    res = fastbias.evaluate_csv(d / "d.csv", label="y", scores=["s", "t"], subgroups=IDS,
                                missing_subgroup=policy, batch_rows=batch, bucket_rows=8)
    check_table(res.table, ref_for(rows, policy), model="s")
    check_table(res.table, ref_for(rows, policy, score="t"), model="t")


@pytest.mark.parametrize("policy", ["background", "exclude"])
@pytest.mark.parametrize("batch", [1, 3, 16, 17, 1000])
def test_evaluate_parquet_batches(files, policy, batch):
    d, rows = files
    res = fastbias.evaluate_parquet(d / "d.parquet", label="y", scores=["s", "t"],
                                    subgroups=IDS, missing_subgroup=policy,
                                    batch_rows=batch, bucket_rows=8)
    check_table(res.table, ref_for(rows, policy), model="s")
    check_table(res.table, ref_for(rows, policy, score="t"), model="t")


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
@pytest.mark.parametrize("policy", ["background", "exclude"])
def test_cli_csv_output(files, tmp_path, fmt, policy):
    d, rows = files
    out = tmp_path / "o.csv"
    code, _, err = run_cli(["report", d / f"d.{fmt}", "--label", "y", "--scores", "s", "t",
                            "--subgroups", *IDS, "--missing-subgroup", policy, "--out", out,
                            "--csv-raw", "-q"])
    assert code == 0, err
    t = read_cli_csv(out)
    check_table(t, ref_for(rows, policy), model="s")
    check_table(t, ref_for(rows, policy, score="t"), model="t")


@pytest.mark.parametrize("piece", [1, 7, 30])
def test_bias_evaluator_in_pieces(files, piece):
    """An evaluator over all rows, scored on index folds (pieces of the rows)."""
    _, rows = files
    df = frame_of(rows)
    ev = fastbias.BiasEvaluator(df["y"].to_numpy(), df[IDS], subgroup_threshold=0.5)
    n = len(rows)
    for start in range(0, n, piece):
        idx = np.arange(start, min(n, start + piece))
        sub = [rows[i] for i in idx]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = ev.metrics(df["s"].to_numpy()[idx], index=idx)
        t = t.reset_index() if "subgroup" not in t.columns else t
        check_table(t, ref_for(sub, "background"))


# ---- labels
@pytest.mark.parametrize("batch", [1, 4, 1000])
@pytest.mark.parametrize("thr", [0.5, 0.3, 0.7])
def test_fractional_labels_threshold_csv(tmp_path, batch, thr):
    rows = make_rows(40, seed=3)
    grid = [0.0, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0]
    for i, r in enumerate(rows):
        r["y"] = grid[i % len(grid)]
    write_csv(tmp_path / "f.csv", rows)
    res = fastbias.evaluate_csv(tmp_path / "f.csv", label="y", scores=["s"], subgroups=["flag"],
                                label_threshold=thr, batch_rows=batch)
    labels = [r["y"] >= thr for r in rows]
    exp = {"flag": reference(labels, [r["s"] for r in rows], [r["flag"] for r in rows])}
    check_table(res.table, exp)
    res2 = fastbias.evaluate(pd.read_csv(tmp_path / "f.csv"), label="y", scores=["s"],
                             subgroups=["flag"], label_threshold=thr)
    check_table(res2.table, exp)


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_boolean_labels(tmp_path, fmt):
    rows = make_rows(30, seed=5)
    for r in rows:
        r["y"] = bool(r["y"])
    path = tmp_path / f"b.{fmt}"
    write_any(path, rows, fmt)
    out = tmp_path / "o.csv"
    code, _, err = run_cli(["report", path, "--label", "y", "--scores", "s", "--subgroups",
                            *IDS, "--out", out, "--csv-raw", "-q"])
    assert code == 0, err
    check_table(read_cli_csv(out), ref_for(rows, "background"))


def _text_label_rows(n, seed, neg="ok", pos="toxic"):
    rows = make_rows(n, seed)
    for r in rows:
        r["y"] = pos if r["y"] else neg
    return rows


def _ref_text(rows, pos, policy="background"):
    labels = [r["y"] == pos for r in rows]
    s = [r["s"] for r in rows]
    return {"flag": reference(labels, s, [r["flag"] for r in rows], policy),
            "frac": reference(labels, s, [None if r["frac"] is None else r["frac"] >= 0.5
                                          for r in rows], policy)}


@pytest.mark.parametrize("neg,pos", [("ok", "toxic"), ("0", "toxic"), ("None", "toxic"),
                                     ("toxic", "0")])
@pytest.mark.parametrize("batch", [1, 5, 1000])
def test_text_labels_pos_label_csv(tmp_path, neg, pos, batch):
    rows = _text_label_rows(40, 7, neg, pos)
    write_csv(tmp_path / "t.csv", rows)
    res = fastbias.evaluate_csv(tmp_path / "t.csv", label="y", scores=["s"],
                                subgroups=["flag", "frac"], pos_label=pos, batch_rows=batch)
    check_table(res.table, _ref_text(rows, pos))


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_text_labels_cli_positive(tmp_path, fmt):
    rows = _text_label_rows(40, 8)
    path = tmp_path / f"t.{fmt}"
    if fmt == "csv":
        write_csv(path, rows)
    elif fmt == "jsonl":
        write_jsonl(path, rows)
    else:
        pd.DataFrame(rows).to_parquet(path)
    out = tmp_path / "o.csv"
    code, _, err = run_cli(["report", path, "--label", "y", "--scores", "s", "--subgroups",
                            "flag", "frac", "--positive", "toxic", "--out", out, "--csv-raw",
                            "-q"])
    assert code == 0, err
    check_table(read_cli_csv(out), _ref_text(rows, "toxic"))


def test_label_numbers_then_text_across_blocks(tmp_path):
    """A label column of '0' for the first ~300 KB and 'toxic' later; pandas reads CSV in
    blocks (low_memory), so the first blocks look numeric."""
    n = 40_000
    rng = np.random.default_rng(11)
    y = np.where(np.arange(n) < 30_000, "0", np.where(rng.random(n) < 0.5, "toxic", "0"))
    s = rng.integers(0, 50, n) / 49
    g = rng.random(n) < 0.3
    path = tmp_path / "big.csv"
    pd.DataFrame({"y": y, "s": s, "g": g}).to_csv(path, index=False)
    assert path.stat().st_size > 2 ** 18
    lab = y == "toxic"
    # reference by sklearn-free exact counting via ranks (pairs too many for brute force)
    exp = _rank_reference(lab, s, g)
    for batch in (250_000, 7_777):
        res = fastbias.evaluate_csv(path, label="y", scores=["s"], subgroups=["g"],
                                    pos_label="toxic", batch_rows=batch)
        check_table(res.table, {"g": exp})
    out = tmp_path / "o.csv"
    code, _, err = run_cli(["report", path, "--label", "y", "--scores", "s", "--subgroups",
                            "g", "--positive", "toxic", "--out", out, "--csv-raw", "-q"])
    assert code == 0, err
    check_table(read_cli_csv(out), {"g": exp})


def _auc_rank(x, y):
    """Exact P(Y > X) + 1/2 P(Y == X) as a Fraction, via sorting (independent of fastbias)."""
    if len(x) == 0 or len(y) == 0:
        return None
    xs = np.sort(np.asarray(x))
    ys = np.asarray(y)
    below = np.searchsorted(xs, ys, side="left").astype(object).sum()
    upto = np.searchsorted(xs, ys, side="right").astype(object).sum()
    return Fraction(int(below) + int(upto), 2 * len(x) * len(y))


def _rank_reference(lab, s, g):
    gn, gp, bn, bp = s[g & ~lab], s[g & lab], s[~g & ~lab], s[~g & lab]
    out = {"subgroup_negatives": len(gn), "subgroup_positives": len(gp),
           "background_negatives": len(bn), "background_positives": len(bp),
           "subgroup_auc": _auc_rank(gn, gp), "bpsn_auc": _auc_rank(gn, bp),
           "bnsp_auc": _auc_rank(bn, gp)}
    p = _auc_rank(gn, bn)
    out["negative_aeg"] = None if p is None else Fraction(1, 2) - p
    p = _auc_rank(gp, bp)
    out["positive_aeg"] = None if p is None else Fraction(1, 2) - p
    return out


def test_identity_numbers_then_na_words_across_blocks(tmp_path):
    """An identity column of numbers for ~300 KB, then 'NA'/empty cells: unannotated."""
    n = 40_000
    rng = np.random.default_rng(12)
    y = rng.integers(0, 2, n).astype(bool)
    s = rng.integers(0, 30, n) / 29
    frac = (rng.integers(0, 11, n) / 10).astype(object)
    late = (np.arange(n) > 33_000) & (rng.random(n) < 0.5)
    frac[late] = "NA"
    path = tmp_path / "big2.csv"
    pd.DataFrame({"y": y.astype(int), "s": s, "g": frac}).to_csv(path, index=False)
    member_ok = ~late
    for policy in ("background", "exclude"):
        gm = np.array([False if late[i] else frac[i] >= 0.5 for i in range(n)])
        if policy == "background":
            bg = ~gm
        else:
            bg = ~gm & member_ok
        gn, gp, bn, bp = s[gm & ~y], s[gm & y], s[bg & ~y], s[bg & y]
        exp = {"subgroup_negatives": len(gn), "subgroup_positives": len(gp),
               "background_negatives": len(bn), "background_positives": len(bp),
               "subgroup_auc": _auc_rank(gn, gp), "bpsn_auc": _auc_rank(gn, bp),
               "bnsp_auc": _auc_rank(bn, gp),
               "negative_aeg": Fraction(1, 2) - _auc_rank(gn, bn),
               "positive_aeg": Fraction(1, 2) - _auc_rank(gp, bp)}
        for batch in (250_000, 9_999):
            res = fastbias.evaluate_csv(path, label="y", scores=["s"], subgroups=["g"],
                                        missing_subgroup=policy, batch_rows=batch)
            check_table(res.table, {"g": exp})


# ---- identity column shapes
@pytest.mark.parametrize("fmt", ["csv", "parquet", "memory"])
@pytest.mark.parametrize("policy", ["background", "exclude"])
def test_all_na_and_all_zero_identity(tmp_path, fmt, policy):
    rows = make_rows(30, seed=9)
    for r in rows:
        r["none"] = None
        r["zero"] = 0
    df = pd.DataFrame(rows)
    df["none"] = df["none"].astype(float)
    path = tmp_path / "z.csv"
    if fmt == "csv":
        write_csv(path, rows)
    elif fmt == "parquet":
        path = tmp_path / "z.parquet"
        df.to_parquet(path)
    labels = [bool(r["y"]) for r in rows]
    s = [r["s"] for r in rows]
    exp = {"none": reference(labels, s, [None] * 30, policy),
           "zero": reference(labels, s, [False] * 30, policy),
           "flag": reference(labels, s, [r["flag"] for r in rows], policy)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kw = dict(label="y", scores=["s"], subgroups=["none", "zero", "flag"],
                  missing_subgroup=policy)
        if fmt == "csv":
            res = fastbias.evaluate_csv(path, batch_rows=4, **kw)
        elif fmt == "parquet":
            res = fastbias.evaluate_parquet(path, batch_rows=4, **kw)
        else:
            res = fastbias.evaluate(df, **kw)
    check_table(res.table, exp)
    und = [w for w in caught if issubclass(w.category, fastbias.UndefinedMetricWarning)]
    assert len(und) == 1, [str(w.message) for w in caught]


@pytest.mark.parametrize("policy", ["background", "exclude"])
def test_nullable_memory_vs_parquet(tmp_path, policy):
    rows = make_rows(50, seed=13)
    df = pd.DataFrame(rows)
    df["votes"] = pd.array([None if i % 7 == 0 else r["votes"] for i, r in enumerate(rows)],
                           dtype="Int64")
    df["flag"] = pd.array([None if i % 5 == 0 else r["flag"] for i, r in enumerate(rows)],
                          dtype="boolean")
    df["frac"] = df["frac"].astype("Float64")
    df.to_parquet(tmp_path / "n.parquet")
    labels = [bool(r["y"]) for r in rows]
    s = [r["s"] for r in rows]
    exp = {
        "votes": reference(labels, s, [None if pd.isna(v) else v >= 1 for v in df["votes"]],
                           policy),
        "flag": reference(labels, s, [None if pd.isna(v) else bool(v) for v in df["flag"]],
                          policy),
        "frac": reference(labels, s, [None if r["frac"] is None else r["frac"] >= 0.5
                                      for r in rows], policy),
    }
    # votes >= 0.5 <=> votes >= 1 for integers
    kw = dict(label="y", scores=["s"], subgroups=IDS, missing_subgroup=policy,
              subgroup_threshold=0.5)
    check_table(fastbias.evaluate(df, **kw).table, exp)
    check_table(fastbias.evaluate_parquet(tmp_path / "n.parquet", batch_rows=6, **kw).table,
                exp)
    out = tmp_path / "o.csv"
    code, _, err = run_cli(["report", tmp_path / "n.parquet", "--label", "y", "--scores", "s",
                            "--subgroups", *IDS, "--missing-subgroup", policy, "--out", out,
                            "--csv-raw", "-q"])
    assert code == 0, err
    check_table(read_cli_csv(out), exp)


@pytest.mark.parametrize("sthr", [1, 2, 3])
def test_int_identity_thresholds_files(tmp_path, sthr):
    rows = make_rows(40, seed=17)
    write_csv(tmp_path / "v.csv", rows)
    write_jsonl(tmp_path / "v.jsonl", rows)
    labels = [bool(r["y"]) for r in rows]
    exp = {"votes": reference(labels, [r["s"] for r in rows],
                              [r["votes"] >= sthr for r in rows])}
    res = fastbias.evaluate_csv(tmp_path / "v.csv", label="y", scores=["s"],
                                subgroups=["votes"], subgroup_threshold=sthr, batch_rows=3)
    check_table(res.table, exp)
    out = tmp_path / "o.csv"
    code, _, err = run_cli(["report", tmp_path / "v.jsonl", "--label", "y", "--scores", "s",
                            "--subgroups", "votes", "--subgroup-threshold", sthr, "--out", out,
                            "--csv-raw", "-q"])
    assert code == 0, err
    check_table(read_cli_csv(out), exp)


@pytest.mark.parametrize("batch", [1, 5, 1000])
def test_weights_column(tmp_path, batch):
    rows = make_rows(25, seed=19)
    wts = [float(i % 4) * 0.25 + (0.5 if i % 3 else 0.0) for i in range(25)]
    for r, w in zip(rows, wts):
        r["w"] = w
    write_csv(tmp_path / "w.csv", rows)
    frame_of(rows).assign(w=wts).to_parquet(tmp_path / "w.parquet")
    labels = [bool(r["y"]) for r in rows]
    s = [r["s"] for r in rows]
    exp = {"flag": reference(labels, s, [r["flag"] for r in rows], weights=wts),
           "frac": reference(labels, s, [None if r["frac"] is None else r["frac"] >= 0.5
                                         for r in rows], weights=wts)}
    kw = dict(label="y", scores=["s"], subgroups=["flag", "frac"], sample_weight="w")
    tol = dict(tol=2 ** -70, rel=2 ** -50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_table(fastbias.evaluate_csv(tmp_path / "w.csv", batch_rows=batch, **kw).table,
                    exp, **tol)
        check_table(fastbias.evaluate_parquet(tmp_path / "w.parquet", batch_rows=batch,
                                              **kw).table, exp, **tol)
        check_table(fastbias.evaluate(pd.read_csv(tmp_path / "w.csv"), **kw).table, exp, **tol)


# ---- refused inputs: the position named must really hold the value
ROW = 23


def _bad_rows(kind):
    rows = make_rows(40, seed=21)
    if kind == "nan_score":
        rows[ROW]["s"] = None
    elif kind == "label_out":
        rows[ROW]["y"] = 2
    elif kind == "neg_weight":
        for r in rows:
            r["w"] = 1.0
        rows[ROW]["w"] = -0.5
    elif kind == "missing_label":
        rows[ROW]["y"] = None
    elif kind == "missing_weight":
        for r in rows:
            r["w"] = 1.0
        rows[ROW]["w"] = None
    elif kind == "inf_score":
        rows[ROW]["s"] = float("inf")
    return rows


def _position_of(msg):
    import re
    m = re.search(r"(?:first at|at) (?:row|position) ([\d,]+)", msg) or \
        re.search(r"\(e\.g\. [^)]*? at (?:row|position) ([\d,]+)", msg)
    assert m, msg
    return int(m.group(1).replace(",", ""))


@pytest.mark.parametrize("kind,col", [("nan_score", "s"), ("label_out", "y"),
                                      ("neg_weight", "w"), ("missing_label", "y"),
                                      ("missing_weight", "w"), ("inf_score", "s")])
@pytest.mark.parametrize("where", ["memory", "csv1", "csv7", "csv_big", "parquet5",
                                   "parquet_nostats",
                                   "cli_csv", "cli_jsonl", "cli_parquet"])
def test_refusal_position_is_right(tmp_path, kind, col, where):
    rows = _bad_rows(kind)
    cols = list(rows[0])
    write_csv(tmp_path / "e.csv", rows, cols)
    write_jsonl(tmp_path / "e.jsonl", rows)
    df = pd.DataFrame(rows)
    df["s"] = df["s"].astype(float)
    df["y"] = df["y"].astype(float)
    df.to_parquet(tmp_path / "e.parquet", row_group_size=8)
    df.to_parquet(tmp_path / "ens.parquet", row_group_size=8, write_statistics=False)
    kw = dict(label="y", scores=["s"], subgroups=["flag"])
    if "w" in cols:
        kw["sample_weight"] = "w"
    err = None
    try:
        if where == "memory":
            fastbias.evaluate(df, **kw)
        elif where.startswith("csv"):
            b = {"csv1": 1, "csv7": 7, "csv_big": 10_000}[where]
            fastbias.evaluate_csv(tmp_path / "e.csv", batch_rows=b, **kw)
        elif where == "parquet5":
            fastbias.evaluate_parquet(tmp_path / "e.parquet", batch_rows=5, **kw)
        elif where == "parquet_nostats":
            fastbias.evaluate_parquet(tmp_path / "ens.parquet", batch_rows=5, **kw)
        else:
            ext = where.split("_")[1]
            args = ["report", tmp_path / f"e.{ext}", "--label", "y", "--scores", "s",
                    "--subgroups", "flag", "-q"]
            if "w" in cols:
                args += ["--weight", "w"]
            code, _, e = run_cli(args)
            assert code == 1, e
            err = e
    except (ValueError, TypeError) as e:
        err = str(e)
    assert err is not None, "accepted a bad input"
    assert repr(col) in err or f"'{col}'" in err, err
    import re
    group = re.search(r"row group \d+, rows (\d+)\.\.(\d+) of", err)
    if where == "parquet5" and group and kind == "label_out":
        # documented: labels outside [0, 1] found from the footer's statistics name the
        # row group and its rows
        assert int(group.group(1)) <= ROW <= int(group.group(2)), err
    else:
        assert _position_of(err) == ROW, err
    bad = {"nan_score": None, "label_out": "2", "neg_weight": "-0.5", "missing_label": None,
           "missing_weight": None, "inf_score": "infinite"}[kind]
    if bad is not None:
        assert bad in err, err


@pytest.mark.parametrize("where", ["csv1", "csv4", "cli_csv", "cli_jsonl"])
def test_text_in_score_column_position(tmp_path, where):
    rows = make_rows(30, seed=23)
    rows[ROW]["s"] = "oops"
    write_csv(tmp_path / "e.csv", rows)
    write_jsonl(tmp_path / "e.jsonl", rows)
    err = None
    try:
        if where.startswith("csv"):
            fastbias.evaluate_csv(tmp_path / "e.csv", label="y", scores=["s"],
                                  subgroups=["flag"], batch_rows=int(where[3:]))
        else:
            code, _, err = run_cli(["report", tmp_path / f"e.{where[4:]}", "--label", "y",
                                    "--scores", "s", "--subgroups", "flag", "-q"])
            assert code == 1, err
    except (ValueError, TypeError) as e:
        err = str(e)
    assert err is not None
    assert "'s'" in err and "oops" in err, err
    assert _position_of(err) == ROW, err


# ---- names from data
NAMES = ["a,b", 'q"uote', "new\nline", "ünï ☃", " lead", "=SUM(1)"]


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_hostile_names_roundtrip(tmp_path, fmt):
    rows = make_rows(30, seed=29)
    rng = np.random.default_rng(1)
    named = []
    for r in rows:
        d = {"lbl,1": r["y"], "sc\"ore": r["s"]}
        for nm in NAMES:
            d[nm] = bool(rng.random() < 0.4)
        named.append(d)
    path = tmp_path / f"h.{fmt}"
    if fmt == "csv":
        write_csv(path, named)
    elif fmt == "jsonl":
        write_jsonl(path, named)
    else:
        pd.DataFrame(named).to_parquet(path)
    labels = [bool(d["lbl,1"]) for d in named]
    s = [d["sc\"ore"] for d in named]
    exp = {nm: reference(labels, s, [d[nm] for d in named]) for nm in NAMES}
    out = tmp_path / "o.csv"
    code, _, err = run_cli(["report", path, "--label", "lbl,1", "--scores", "sc\"ore",
                            "--subgroups", *NAMES, "--out", out, "--csv-raw", "-q"])
    assert code == 0, err
    t = read_cli_csv(out)
    assert set(t["model"]) == {"sc\"ore"}
    check_table(t, exp)
    if fmt == "csv":
        res = fastbias.evaluate_csv(path, label="lbl,1", scores=["sc\"ore"], subgroups=NAMES,
                                    batch_rows=4)
        check_table(res.table, exp)


# ---- property test: random files, random batch sizes
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_property_csv_any_batch(tmp_path, data):
    n = data.draw(st.integers(2, 30))
    y = data.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    s = data.draw(st.lists(st.sampled_from([0.0, -0.0, 0.1, 0.25, 0.5, 1.0, -3.0, 1e-300,
                                            5e-324, -5e-324]),
                           min_size=n, max_size=n))
    g = data.draw(st.lists(st.sampled_from([None, 0.0, 0.4, 0.5, 1.0]), min_size=n, max_size=n))
    policy = data.draw(st.sampled_from(["background", "exclude"]))
    batch = data.draw(st.integers(1, n + 1))
    buckets = data.draw(st.sampled_from([8, 16, 4_000_000]))
    rows = [{"y": a, "s": b, "g": c} for a, b, c in zip(y, s, g)]
    path = tmp_path / f"p{n}_{batch}.csv"
    write_csv(path, rows)
    exp = {"g": reference([bool(v) for v in y], s, [None if c is None else c >= 0.5 for c in g],
                          policy)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            res = fastbias.evaluate_csv(path, label="y", scores=["s"], subgroups=["g"],
                                        missing_subgroup=policy, batch_rows=batch,
                                        bucket_rows=buckets)
        except ValueError as e:
            pytest.fail(f"refused valid data: {e}")
    check_table(res.table, exp)


# ---- more file shapes
@pytest.mark.parametrize("pos", [2, "2"])
@pytest.mark.parametrize("batch", [1, 6, 1000])
def test_pos_label_numeric_classes_csv(tmp_path, pos, batch):
    rows = make_rows(30, seed=31)
    for r in rows:
        r["y"] = 2 if r["y"] else 0
    write_csv(tmp_path / "p.csv", rows)
    exp = _ref_text(rows, 2)
    res = fastbias.evaluate_csv(tmp_path / "p.csv", label="y", scores=["s"],
                                subgroups=["flag", "frac"], pos_label=pos, batch_rows=batch)
    check_table(res.table, exp)


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_pos_label_numeric_classes_cli(tmp_path, fmt):
    rows = make_rows(30, seed=33)
    for r in rows:
        r["y"] = 2 if r["y"] else 0
    path = tmp_path / f"p.{fmt}"
    write_any(path, rows, fmt)
    out = tmp_path / "o.csv"
    code, _, err = run_cli(["report", path, "--label", "y", "--scores", "s", "--subgroups",
                            "flag", "frac", "--positive", "2", "--out", out, "--csv-raw", "-q"])
    assert code == 0, err
    check_table(read_cli_csv(out), _ref_text(rows, 2))


def test_jsonl_scores_written_as_text(tmp_path):
    """JSON lines: a score may be written as the text of a number, read exactly."""
    rows = make_rows(30, seed=35)
    vals = ["0.1", "1e-300", "-0.0", "0.30000000000000004", "0.3", "12", "-7.5"]
    for i, r in enumerate(rows):
        r["s"] = vals[i % len(vals)]
    write_jsonl(tmp_path / "t.jsonl", rows)
    labels = [bool(r["y"]) for r in rows]
    s = [float(r["s"]) for r in rows]
    exp = {"flag": reference(labels, s, [r["flag"] for r in rows])}
    out = tmp_path / "o.csv"
    code, _, err = run_cli(["report", tmp_path / "t.jsonl", "--label", "y", "--scores", "s",
                            "--subgroups", "flag", "--out", out, "--csv-raw", "-q"])
    assert code == 0, err
    check_table(read_cli_csv(out), exp)


@pytest.mark.parametrize("ext", ["csv.gz", "tsv", "jsonl.gz", "csv.bz2"])
def test_compressed_and_tsv(files, tmp_path, ext):
    import bz2
    import gzip
    d, rows = files
    path = tmp_path / f"c.{ext}"
    if ext.startswith("jsonl"):
        text = (d / "d.jsonl").read_text()
    elif ext == "tsv":
        text = (d / "d.csv").read_text().replace(",", "\t")
    else:
        text = (d / "d.csv").read_text()
    if ext.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    elif ext.endswith(".bz2"):
        path.write_bytes(bz2.compress(text.encode()))
    else:
        path.write_text(text)
    out = tmp_path / "o.csv"
    code, _, err = run_cli(["report", path, "--label", "y", "--scores", "s", "--subgroups",
                            *IDS, "--out", out, "--csv-raw", "-q"])
    assert code == 0, err
    check_table(read_cli_csv(out), ref_for(rows, "background"))
    if not ext.startswith("jsonl"):
        res = fastbias.evaluate_csv(path, label="y", scores=["s"], subgroups=IDS, batch_rows=7)
        check_table(res.table, ref_for(rows, "background"), model="s")


@pytest.mark.parametrize("policy", ["background", "exclude"])
@pytest.mark.parametrize("batch", [1, 2, 3, 1000])
def test_bool_identity_with_empty_cells_csv(tmp_path, policy, batch):
    rows = make_rows(24, seed=37)
    cells = ["True", "", "False", "True", "False", "False", ""]
    text = "y,s,g\n" + "".join(f"{r['y']},{r['s']!r},{cells[i % len(cells)]}\n"
                               for i, r in enumerate(rows))
    (tmp_path / "b.csv").write_text(text)
    member = [{"True": True, "False": False, "": None}[cells[i % len(cells)]]
              for i in range(len(rows))]
    exp = {"g": reference([r["y"] for r in rows], [r["s"] for r in rows], member, policy)}
    res = fastbias.evaluate_csv(tmp_path / "b.csv", label="y", scores=["s"], subgroups=["g"],
                                missing_subgroup=policy, batch_rows=batch)
    check_table(res.table, exp)
    out = tmp_path / "o.csv"
    code, _, err = run_cli(["report", tmp_path / "b.csv", "--label", "y", "--scores", "s",
                            "--subgroups", "g", "--missing-subgroup", policy, "--out", out,
                            "--csv-raw", "-q"])
    assert code == 0, err
    check_table(read_cli_csv(out), exp)


@pytest.mark.parametrize("where", ["csv1", "csv3", "csv_big", "cli"])
def test_position_counts_records_not_lines(tmp_path, where):
    """Quoted line breaks and blank lines before a bad row: the row named is the data row
    (0-based), the same in every reader."""
    rows = make_rows(30, seed=39)
    lines = ["y,s,g,note"]
    for i, r in enumerate(rows):
        note = '"two\nlines"' if i % 4 == 0 else ('"x, y"' if i % 5 == 0 else "n")
        s = "nan" if i == ROW else repr(r["s"])
        lines.append(f"{r['y']},{s},{int(r['flag'])},{note}")
        if i == 10:
            lines.append("")  # a blank line: skipped, no row
    (tmp_path / "q.csv").write_text("\n".join(lines) + "\n")
    err = None
    try:
        if where == "cli":
            code, _, err = run_cli(["report", tmp_path / "q.csv", "--label", "y", "--scores",
                                    "s", "--subgroups", "g", "-q"])
            assert code == 1, err
        else:
            b = {"csv1": 1, "csv3": 3, "csv_big": 1000}[where]
            fastbias.evaluate_csv(tmp_path / "q.csv", label="y", scores=["s"],
                                  subgroups=["g"], batch_rows=b)
    except ValueError as e:
        err = str(e)
    assert err is not None
    assert "'s'" in err and _position_of(err) == ROW, err


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_missing_keys_and_null_identities(tmp_path, fmt):
    rows = make_rows(30, seed=41)
    objs = []
    member = []
    for i, r in enumerate(rows):
        o = {"y": r["y"], "s": r["s"]}
        k = i % 4
        if k == 0:
            o["g"] = True
            member.append(True)
        elif k == 1:
            o["g"] = False
            member.append(False)
        elif k == 2:
            o["g"] = None
            member.append(None)
        else:
            member.append(None)  # key left out
        objs.append(o)
    path = tmp_path / f"m.{fmt}"
    if fmt == "jsonl":
        with open(path, "w") as f:
            for o in objs:
                f.write(json.dumps(o) + "\n")
    else:
        write_csv(path, [{**o, "g": o.get("g")} for o in objs], ["y", "s", "g"])
    for policy in ("background", "exclude"):
        exp = {"g": reference([o["y"] for o in objs], [o["s"] for o in objs], member, policy)}
        out = tmp_path / f"o{policy}.csv"
        code, _, err = run_cli(["report", path, "--label", "y", "--scores", "s",
                                "--subgroups", "g", "--missing-subgroup", policy, "--out", out,
                                "--csv-raw", "-q"])
        assert code == 0, err
        check_table(read_cli_csv(out), exp)


# ---- Parquet types
def test_parquet_float32_scores_tie_in_float32(tmp_path):
    rng = np.random.default_rng(43)
    n = 40
    base = np.float32(0.3)
    # float64 values distinct but equal once float32: ties in float32
    s64 = np.array([float(base) + k * 1e-12 for k in rng.integers(0, 3, n)]) + \
        rng.integers(0, 3, n) * 0.25
    s32 = s64.astype(np.float32)
    y = rng.integers(0, 2, n)
    g = rng.random(n) < 0.4
    df = pd.DataFrame({"y": y, "s": s32, "g": g})
    df.to_parquet(tmp_path / "f.parquet")
    exp = {"g": reference(list(y), [float(v) for v in s32], list(g))}
    check_table(fastbias.evaluate(df, label="y", scores=["s"], subgroups=["g"]).table, exp)
    for b in (1, 7, 1000):
        check_table(fastbias.evaluate_parquet(tmp_path / "f.parquet", label="y", scores=["s"],
                                              subgroups=["g"], batch_rows=b).table, exp)
    out = tmp_path / "o.csv"
    code, _, err = run_cli(["report", tmp_path / "f.parquet", "--label", "y", "--scores", "s",
                            "--subgroups", "g", "--out", out, "--csv-raw", "-q"])
    assert code == 0, err
    check_table(read_cli_csv(out), exp)


@pytest.mark.parametrize("batch", [1, 5, 1000])
def test_parquet_text_labels_and_int_identities(tmp_path, batch):
    rows = _text_label_rows(36, 45)
    df = pd.DataFrame(rows)
    df["votes"] = pd.array([None if i % 6 == 0 else r["votes"] for i, r in enumerate(rows)],
                           dtype="UInt8")
    df["y"] = df["y"].astype("category")
    df.to_parquet(tmp_path / "t.parquet")
    labels = [r["y"] == "toxic" for r in rows]
    s = [r["s"] for r in rows]
    for policy in ("background", "exclude"):
        exp = {"votes": reference(labels, s, [None if pd.isna(v) else v >= 2
                                              for v in df["votes"]], policy)}
        res = fastbias.evaluate_parquet(tmp_path / "t.parquet", label="y", scores=["s"],
                                        subgroups=["votes"], subgroup_threshold=2,
                                        missing_subgroup=policy, pos_label="toxic",
                                        batch_rows=batch)
        check_table(res.table, exp)
        res = fastbias.evaluate(df, label="y", scores=["s"], subgroups=["votes"],
                                subgroup_threshold=2, missing_subgroup=policy,
                                pos_label="toxic")
        check_table(res.table, exp)


def test_parquet_several_files_equal_one(files, tmp_path):
    d, rows = files
    df = frame_of(rows)
    df.iloc[:25].to_parquet(tmp_path / "a.parquet")
    df.iloc[25:].to_parquet(tmp_path / "b.parquet")
    res = fastbias.evaluate_parquet([tmp_path / "a.parquet", tmp_path / "b.parquet"],
                                    label="y", scores=["s"], subgroups=IDS, batch_rows=4)
    check_table(res.table, ref_for(rows, "background"), model="s")


def test_jsonl_escaped_keys(tmp_path):
    rng = np.random.default_rng(5)
    keys = ['\\u00e9t\\u00e9', 'a\\/b', 'n\\nl', '\\ud83d\\ude00']
    lines = []
    for i in range(30):
        flags = [json.dumps(bool(rng.random() < .4)) for _ in keys]
        body = ", ".join(f'"{k}": {v}' for k, v in zip(keys, flags))
        lines.append('{"y": %d, "s": %r, %s}' % (i % 2, float(rng.integers(0, 5)) / 4, body))
    (tmp_path / "e.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    objs = [json.loads(line) for line in lines]
    names = [k for k in objs[0] if k not in ("y", "s")]
    assert names == ["été", "a/b", "n\nl", "\U0001F600"]
    exp = {nm: reference([o["y"] for o in objs], [o["s"] for o in objs],
                         [o[nm] for o in objs]) for nm in names}
    out = tmp_path / "o.csv"
    code, _, err = run_cli(["report", tmp_path / "e.jsonl", "--label", "y", "--scores", "s",
                            "--subgroups", *names, "--out", out, "--csv-raw", "-q"])
    assert code == 0, err
    check_table(read_cli_csv(out), exp)


def test_cli_json_output_and_formula_names(files, tmp_path):
    d, rows = files
    df = frame_of(rows).rename(columns={"flag": "=cmd", "votes": "'q"})
    df.to_parquet(tmp_path / "n.parquet")
    exp = ref_for(rows, "background")
    exp = {"=cmd": exp["flag"], "'q": exp["votes"], "frac": exp["frac"]}
    out_json, out_csv = tmp_path / "o.json", tmp_path / "o.csv"
    code, _, err = run_cli(["report", tmp_path / "n.parquet", "--label", "y", "--scores", "s",
                            "--subgroups", "=cmd", "'q", "frac", "--out", out_json,
                            "--out", out_csv, "-q"])
    assert code == 0, err
    # a spreadsheet-safe CSV: a name starting with = or ' gets a ' in front (docs/cli.md)
    t = read_cli_csv(out_csv)
    assert set(t["subgroup"]) == {"'=cmd", "''q", "frac"}
    t["subgroup"] = [v[1:] if v.startswith("'") else v for v in t["subgroup"]]
    check_table(t, exp)
    doc = json.loads(out_json.read_text(encoding="utf-8"))
    found = []

    def walk(x):
        if isinstance(x, dict):
            if "subgroup" in x and "subgroup_auc" in x:
                found.append(x)
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(doc)
    got = pd.DataFrame(found)
    for c in METRICS:
        got[c] = [float("nan") if v is None else v for v in got[c]]
    check_table(got, exp)


def test_bias_metrics_arrays_from_csv_text(files):
    """The arrays entry point given columns parsed by the csv module (plain Python)."""
    d, rows = files
    with open(d / "d.csv", newline="") as f:
        recs = list(csv.DictReader(f))
    y = np.array([int(r["y"]) for r in recs])
    s = np.array([float(r["s"]) for r in recs])
    masks = {"flag": np.array([r["flag"] == "True" for r in recs]),
             "votes": np.array([int(r["votes"]) >= 1 for r in recs])}
    res = fastbias.bias_metrics(y, s, masks)
    if "subgroup" not in res.columns:
        res = res.rename_axis("subgroup").reset_index()
    exp = ref_for(rows, "background")
    check_table(res, {"flag": exp["flag"], "votes": exp["votes"]})


@pytest.mark.parametrize("batch", [1, 1000])
def test_float32_identity_threshold_as_reals(tmp_path, batch):
    rows = make_rows(30, seed=47)
    vals = np.array([0.7, 0.8, 0.6, 0.7, np.nan], dtype=np.float32)
    g = vals[np.arange(30) % 5]
    df = frame_of(rows).assign(g=g)
    df.to_parquet(tmp_path / "g.parquet")
    member = [None if np.isnan(v) else Fraction(float(v)) >= Fraction(0.7) for v in g]
    assert member[:2] == [False, True]
    exp = {"g": reference([r["y"] for r in rows], [r["s"] for r in rows], member, "exclude")}
    kw = dict(label="y", scores=["s"], subgroups=["g"], subgroup_threshold=0.7,
              missing_subgroup="exclude")
    check_table(fastbias.evaluate(df, **kw).table, exp)
    check_table(fastbias.evaluate_parquet(tmp_path / "g.parquet", batch_rows=batch,
                                          **kw).table, exp)


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_names_that_are_missing_words_or_numbers(tmp_path, fmt):
    """Columns named None, 1, NA, nan are names, not missing values or positions."""
    rows = _text_label_rows(30, 49)
    hdr = {"y": "None", "s": "1", "flag": "NA", "votes": "nan"}
    named = [{hdr[k]: (r[k] if k != "votes" else r[k] >= 1) for k in hdr} for r in rows]
    path = tmp_path / f"nm.{fmt}"
    if fmt == "csv":
        write_csv(path, named)
    else:
        write_jsonl(path, named)
    labels = [r["y"] == "toxic" for r in rows]
    s = [r["s"] for r in rows]
    exp = {"NA": reference(labels, s, [r["flag"] for r in rows]),
           "nan": reference(labels, s, [r["votes"] >= 1 for r in rows])}
    out = tmp_path / "o.csv"
    code, _, err = run_cli(["report", path, "--label", "None", "--scores", "1", "--subgroups",
                            "NA", "nan", "--positive", "toxic", "--out", out, "--csv-raw",
                            "-q"])
    assert code == 0, err
    with open(out, newline="", encoding="utf-8") as f:
        recs = list(csv.DictReader(f))
    assert {r["subgroup"] for r in recs} == {"NA", "nan"}
    assert {r["model"] for r in recs} == {"1"}
    t = pd.DataFrame(recs)
    for c in METRICS:
        t[c] = t[c].astype(float)
    check_table(t, exp)
    if fmt == "csv":
        for b in (1, 1000):
            res = fastbias.evaluate_csv(path, label="None", scores=["1"],
                                        subgroups=["NA", "nan"], pos_label="toxic",
                                        batch_rows=b)
            check_table(res.table, exp)


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_subgroups_all_boolean_same_choice_every_format(tmp_path, fmt):
    rng = np.random.default_rng(11)
    n = 30
    rows = []
    for i in range(n):
        rows.append({"y": int(rng.integers(0, 2)), "s": float(rng.integers(0, 5)) / 4,
                     "b": bool(rng.random() < .4), "i01": int(rng.integers(0, 2)),
                     "na01": None if i % 3 == 0 else int(rng.integers(0, 2)),
                     "frac": float(rng.random()), "i012": int(rng.integers(0, 3)),
                     "txt": "a" if rng.random() < .5 else "b",
                     "bna": None if i % 4 == 0 else bool(i % 3)})
    path = tmp_path / f"ab.{fmt}"
    if fmt == "csv":
        write_csv(path, rows)
    elif fmt == "jsonl":
        write_jsonl(path, rows)
    else:
        df = pd.DataFrame(rows)
        df["na01"] = pd.array([r["na01"] for r in rows], dtype="Int64")
        df["bna"] = pd.array([r["bna"] for r in rows], dtype="boolean")
        df.to_parquet(path)
    labels = [r["y"] for r in rows]
    s = [r["s"] for r in rows]
    exp = {c: reference(labels, s, [None if r[c] is None else bool(r[c]) for r in rows])
           for c in ("b", "i01", "na01", "bna")}
    out = tmp_path / "o.csv"
    code, _, err = run_cli(["report", path, "--label", "y", "--scores", "s",
                            "--subgroups-all-boolean", "--out", out, "--csv-raw", "-q"])
    assert code == 0, err
    check_table(read_cli_csv(out), exp)
