"""An independent review's tests (2026-11-27): out-of-core paths (evaluate_csv, evaluate_parquet, fastbias.dask.evaluate and
the streamed CLI) against memory and against brute-force pair counts in fractions.Fraction.

No defect was found in this area; these tests pin the properties verified (tiny batches and
buckets, ties across bucket edges, NaN identities, weights, pos_label, exclude, intersections,
sensitive features, thresholds, DeLong intervals, significance on cells >= 30 rows)."""
import json
import warnings
from fractions import Fraction as F

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias import cli
from fastbias.streaming import evaluate_csv, evaluate_parquet

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
COUNTS = ["subgroup_negatives", "subgroup_positives", "background_negatives",
          "background_positives"]


def _auc(hi, lo):
    num = den = F(0)
    for s1, w1 in hi:
        for s2, w2 in lo:
            den += w1 * w2
            num += w1 * w2 if s1 > s2 else (w1 * w2 / 2 if s1 == s2 else 0)
    return None if den == 0 else num / den


def brute(scores, labels, member, weights=None):
    """member: True / False / None (unannotated: in no cell, as under 'exclude')."""
    n = len(scores)
    w = [F(1)] * n if weights is None else [F(float(x)) for x in weights]
    s = [F(float(x)) for x in scores]
    cell = lambda m, y: [(s[i], w[i]) for i in range(n) if member[i] is m and labels[i] == y]
    sn, sp, bn, bp = cell(True, False), cell(True, True), cell(False, False), cell(False, True)
    out = {"subgroup_auc": _auc(sp, sn), "bpsn_auc": _auc(bp, sn), "bnsp_auc": _auc(sp, bn)}
    x = _auc(bn, sn)
    out["negative_aeg"] = None if x is None else F(1, 2) - x
    x = _auc(bp, sp)
    out["positive_aeg"] = None if x is None else F(1, 2) - x
    out.update(subgroup_negatives=len(sn), subgroup_positives=len(sp),
               background_negatives=len(bn), background_positives=len(bp))
    return out


def _close(got, want):
    if want is None:
        return np.isnan(got)
    return abs(F(float(got)) - F(want)) <= abs(F(want)) * F(1, 2 ** 50) + F(1, 2 ** 70)


def _data(seed, n):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "y": rng.choice([0.0, 0.2, 0.5, 0.7, 1.0], n),
        "s": rng.integers(0, 5, n) / 4,             # heavy ties: they straddle tiny buckets
        "a": rng.choice([0.0, 0.3, 0.5, 1.0, np.nan], n),
        "b": rng.choice([0.0, 1.0, np.nan], n),
        "w": rng.choice([0.0, 0.25, 1.0, 3.0, 0.1], n),
        "cat": rng.choice(["p", "q"], n),
    })
    return df


@pytest.mark.parametrize("policy", ["background", "exclude"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_streamed_equals_brute_force_tiny_batches(policy, weighted, fmt, tmp_path):
    df = _data(3, 70)
    path = tmp_path / f"x.{fmt}"
    df.to_csv(path, index=False) if fmt == "csv" else df.to_parquet(path, index=False)
    fn = evaluate_csv if fmt == "csv" else evaluate_parquet
    kw = dict(label="y", scores="s", subgroups=["a", "b"], missing_subgroup=policy,
              label_threshold=0.7, subgroup_threshold=0.5,
              sample_weight="w" if weighted else None)
    labels = [v >= 0.7 for v in df.y]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for batch_rows, bucket_rows in [(1, 1), (2, 3), (7, 5)]:
            res = fn(path, batch_rows=batch_rows, bucket_rows=bucket_rows, n_jobs=1, **kw)
            for g in ["a", "b"]:
                member = [None if np.isnan(v) else bool(v >= 0.5) for v in df[g]]
                if policy == "background":
                    member = [bool(m) for m in member]
                want = brute(df.s, labels, member, df.w if weighted else None)
                row = res.table[res.table.subgroup == g].iloc[0]
                for k in METRICS:
                    assert _close(row[k], want[k]), (g, k, row[k], want[k], batch_rows)
                if not weighted:
                    for k in COUNTS:
                        assert row[k] == want[k], (g, k)


@pytest.mark.parametrize("pos_label, mapped", [("toxic", "text"), (2, "num"), (False, "bool")])
def test_streamed_pos_label_equals_brute_force(pos_label, mapped, tmp_path):
    df = _data(5, 50)
    positive = df.y >= 0.5
    if mapped == "text":
        df["lab"] = np.where(positive, "toxic", "None")  # "None" is a class, not missing
    elif mapped == "num":
        df["lab"] = np.where(positive, 2, 0)
    else:
        df["lab"] = ~positive
    path = tmp_path / "x.csv"
    df.to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = evaluate_csv(path, label="lab", scores="s", subgroups=["b"], pos_label=pos_label,
                           batch_rows=2, bucket_rows=2, n_jobs=1)
    want = brute(df.s, list(positive), [bool(v == 1.0) for v in df.b])
    row = res.table.iloc[0]
    for k in METRICS:
        assert _close(row[k], want[k]), (k, row[k], want[k])


OPTIONS = [
    {}, {"sample_weight": "w"}, {"missing_subgroup": "exclude", "sample_weight": "w"},
    {"ci": "delong"}, {"ci": "bernstein"},
    {"thresholds": [0.25, 0.5], "gap_interval": "bernstein"},
    {"intersections": 2, "missing_subgroup": "exclude"},
    {"sensitive_features": ["cat"]},
]


@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: ",".join(o) or "plain")
def test_streamed_and_dask_equal_memory(opts, tmp_path):
    import dask
    import dask.dataframe as dd

    import fastbias.dask as FD
    df = _data(9, 400)
    path = tmp_path / "x.csv"
    df.to_csv(path, index=False)
    kw = dict(label="y", scores="s", subgroups=["a", "b"], **opts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = fastbias.evaluate(df, **kw)
        got = [evaluate_csv(path, batch_rows=3, bucket_rows=4, n_jobs=1, **kw)]
        with dask.config.set(scheduler="synchronous"):
            got.append(FD.evaluate(dd.from_pandas(df, npartitions=5), npartitions=7,
                                   progress=False, **kw))
    exact = not any(k in opts for k in ("sample_weight", "ci"))
    for res in got:
        pd.testing.assert_frame_equal(ref.table.reset_index(drop=True),
                                      res.table.reset_index(drop=True),
                                      check_exact=exact, rtol=1e-9, atol=1e-14)
        if ref.thresholds is not None:
            pd.testing.assert_frame_equal(ref.thresholds.reset_index(drop=True),
                                          res.thresholds.reset_index(drop=True),
                                          check_exact=False, rtol=1e-9, atol=1e-14)
        assert dict(ref.overall_auc) == pytest.approx(dict(res.overall_auc), rel=1e-12)


def test_streamed_significance_equals_memory_on_large_cells(tmp_path):
    df = _data(2, 3000)
    path = tmp_path / "x.csv"
    df.to_csv(path, index=False)
    kw = dict(label="y", scores="s", subgroups=["a", "b"], significance="holm", ci="delong",
              missing_subgroup="exclude", sample_weight="w")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = fastbias.evaluate(df, **kw).table
        got = evaluate_csv(path, batch_rows=97, bucket_rows=50, n_jobs=1, **kw).table
    assert (ref[["subgroup_negatives", "subgroup_positives"]].min() >= 30).all()
    pd.testing.assert_frame_equal(ref.reset_index(drop=True), got.reset_index(drop=True),
                                  check_exact=False, rtol=1e-9, atol=1e-14)


def _cli_json(monkeypatch, data, out, extra, stream):
    if stream:  # as tests/test_json_lines_reference.py forces it, with batches of 2 rows
        monkeypatch.setattr(cli, "_row_bytes", lambda args, n: 10 ** 13)
        monkeypatch.setattr(cli, "_streaming_settings", lambda *a, **kw: (2, 7))
    rc = cli.main(["report", str(data), "--label", "y", "--scores", "s", "--subgroups", "a",
                   "b", "--out", str(out), "--force", "-q", *extra])
    assert rc == 0
    monkeypatch.undo()
    return json.loads(out.read_text())


@pytest.mark.parametrize("extra", [[], ["--weight", "w", "--ci", "delong"],
                                   ["--thresholds", "0.5", "--intersections", "2",
                                    "--missing-subgroup", "exclude"]])
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_cli_json_streamed_equals_in_memory(extra, fmt, tmp_path, monkeypatch, capsys):
    df = _data(4, 300)
    data = tmp_path / f"x.{fmt}"
    df.to_csv(data, index=False) if fmt == "csv" else df.to_parquet(data, index=False)
    mem = _cli_json(monkeypatch, data, tmp_path / "m.json", extra, stream=False)
    st = _cli_json(monkeypatch, data, tmp_path / "s.json", extra, stream=True)
    # documented differences only: the engine and the timing keys
    assert st["settings"].pop("engine") == "streaming"
    mem.pop("timings_s"), st.pop("timings_s")
    diffs = []
    _walk(mem, st, "", diffs)
    assert diffs == []


def _walk(a, b, path, out):
    """Key by key; floats within the documented weighted tolerance (docs/distributed.md)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in set(a) | set(b):
            if k not in a or k not in b:
                out.append((path + "/" + k, a.get(k, "<absent>"), b.get(k, "<absent>")))
            else:
                _walk(a[k], b[k], path + "/" + k, out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append((path, len(a), len(b)))
        for i, (x, y) in enumerate(zip(a, b)):
            _walk(x, y, f"{path}[{i}]", out)
    elif isinstance(a, float) and isinstance(b, float):
        if not (a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b)) + 1e-14):
            out.append((path, a, b))
    elif a != b:
        out.append((path, a, b))
