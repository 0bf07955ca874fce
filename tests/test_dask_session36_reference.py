"""An independent review's tests (2026-11-27) of fastbias.dask.evaluate against in-memory
fastbias.evaluate and an independent brute-force reference (exact Fractions over all pairs;
never fastbias itself).

Found by review (failed before its fix): the third label value misnamed within a
partition; the others pin properties that were checked and hold.
"""
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")

import fastbias  # noqa: E402
import fastbias.dask  # noqa: E402

# --- independent reference -------------------------------------------------------------------

def _p_above(a, b, wa, wb):
    """Exact P(s_a > s_b) + 1/2 P(tie) over weighted pairs, or None if a side weighs 0."""
    num = Fraction(0)
    tot = Fraction(0)
    for x, u in zip(a, wa):
        for y, v in zip(b, wb):
            w = Fraction(u) * Fraction(v)
            tot += w
            if x > y:
                num += w
            elif x == y:
                num += w / 2
    return None if tot == 0 else num / tot


def reference_row(y, s, member, annotated, w):
    """Counts and the five metrics of one subgroup, by brute force.

    y, member, annotated: bool arrays; background = annotated & ~member."""
    y, s, member, annotated, w = (np.asarray(a) for a in (y, s, member, annotated, w))
    bg = annotated & ~member
    sn, sp = s[member & ~y], s[member & y]
    bn, bp = s[bg & ~y], s[bg & y]
    wsn, wsp = w[member & ~y], w[member & y]
    wbn, wbp = w[bg & ~y], w[bg & y]

    def f(v):
        return np.nan if v is None else float(v)

    neg = _p_above(bn, sn, wbn, wsn)
    pos = _p_above(bp, sp, wbp, wsp)
    return {
        "subgroup_negatives": len(sn), "subgroup_positives": len(sp),
        "background_negatives": len(bn), "background_positives": len(bp),
        "subgroup_auc": f(_p_above(sp, sn, wsp, wsn)),
        "bpsn_auc": f(_p_above(bp, sn, wbp, wsn)),
        "bnsp_auc": f(_p_above(sp, bn, wsp, wbn)),
        "negative_aeg": np.nan if neg is None else float(Fraction(1, 2) - neg),
        "positive_aeg": np.nan if pos is None else float(Fraction(1, 2) - pos),
    }


def _close(a, b):
    # docs/distributed.md: weighted metrics within 2**-50 of the value or 2**-70 absolute
    if np.isnan(a) or np.isnan(b):
        return np.isnan(a) and np.isnan(b)
    return abs(a - b) <= max(2 ** -50 * abs(b), 2 ** -70)


def _frame(n=160, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "y": rng.random(n).round(2),
        "s": rng.integers(0, 12, n) / 12,                       # heavy ties
        "gb": pd.array(np.where(rng.random(n) < 0.25, None, rng.random(n) < 0.35),
                       dtype="boolean"),                        # nullable booleans with NA
        "gf": pd.array(np.where(rng.random(n) < 0.25, np.nan, rng.random(n).round(1)),
                       dtype="Float64"),                        # Float64 with NA
        "gi": rng.integers(0, 5, n).astype(np.uint8),           # vote counts
        "w": np.where(rng.random(n) < 0.15, 0.0, rng.integers(1, 9, n) / 4),
        "key": np.arange(n),
    })


def _quiet(f, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*a, **k)


# --- found by review ------------------------------------------------------------------------

def test_found_pos_label_third_value_misnamed_within_a_partition():
    """Labels ok/toxic/.../'maybe' at row 9; pos_label='toxic'. With 3 partitions of 4 rows,
    partition 2 holds rows 8..11 = ok, maybe, ok, toxic.

    fastbias.dask gave: "label column 'lab' has 3 distinct values ['ok', 'maybe', 'toxic']
    (the third, 'toxic', first at position 3) ... (in Dask partition 2)": it named the
    POSITIVE CLASS ITSELF, 'toxic', as the offending third value, and the wrong row.
    In memory (and with 1 partition) it says "the third, 'maybe', first at position 9".
    Correct: name 'maybe' (position 1 of Dask partition 2) -- the value that is neither of the
    two classes seen before it in the frame's order; never pos_label.
    Cause: fastbias/validate/values.py binary_labels(piece=True) named distinct[2] of the
    partition's own factorize order, without regard to pos_label."""
    n = 12
    df = pd.DataFrame({"lab": pd.array(["ok", "toxic"] * 6, dtype="string[pyarrow]"),
                       "s": np.arange(n) / n, "g": [True, False] * 6})
    df.loc[9, "lab"] = "maybe"
    with pytest.raises(ValueError) as memory:
        fastbias.evaluate(df, label="lab", scores="s", subgroups=["g"], pos_label="toxic")
    assert "the third, 'maybe'" in str(memory.value)  # the in-memory message (holds)
    ddf = dd.from_pandas(df, npartitions=3, sort=False)
    assert [len(p) for p in (ddf.partitions[i].compute() for i in range(3))] == [4, 4, 4]
    with pytest.raises(ValueError) as got:
        fastbias.dask.evaluate(ddf, label="lab", scores="s", subgroups=["g"],
                               pos_label="toxic", progress=False)
    message = str(got.value)
    assert "the third, 'toxic'" not in message, message   # (pos_label named as third)
    assert "'maybe'" in message and "partition 2" in message, message


# --- properties checked that hold ------------------------------------------------------------

@pytest.mark.parametrize("weighted", [False, True])
def test_dask_equals_brute_force_exclude_nullable_empty_partitions(weighted):
    """missing_subgroup='exclude' with boolean/Float64 NA identities and an integer identity
    thresholded at 3, fractional labels at label_threshold=0.3, weights with zeros, on a
    Dask frame whose middle partitions are empty after a filter."""
    df = _frame()
    ddf = dd.from_pandas(df, npartitions=6, sort=False)
    keep = (df.key < 40) | (df.key >= 130)
    fil = ddf[(ddf.key < 40) | (ddf.key >= 130)]
    assert any(len(fil.partitions[i].compute()) == 0 for i in range(fil.npartitions))
    sub = df[keep].reset_index(drop=True)
    kw = dict(label="y", scores="s", subgroups=["gb", "gf", "gi"], subgroup_threshold=0.5,
              missing_subgroup="exclude", label_threshold=0.3,
              sample_weight="w" if weighted else None)
    got = _quiet(fastbias.dask.evaluate, fil, progress=False, **kw).table
    y = sub.y.to_numpy() >= 0.3
    s = sub.s.to_numpy()
    w = sub.w.to_numpy() if weighted else np.ones(len(sub))
    gb_ann = ~sub.gb.isna().to_numpy()
    gf_ann = ~sub.gf.isna().to_numpy()
    groups = {
        "gb": (sub.gb.fillna(False).to_numpy(bool), gb_ann),
        "gf": (sub.gf.fillna(0).to_numpy(float) >= 0.5, gf_ann),
        "gi": (sub.gi.to_numpy() >= 1, np.ones(len(sub), bool)),   # threshold 0.5 on uint8
    }
    for name, (member, ann) in groups.items():
        ref = reference_row(y, s, member & ann, ann, w)
        row = got[got.subgroup == name].iloc[0]
        for col, value in ref.items():
            if col.endswith(("negatives", "positives")):
                assert int(row[col]) == value, (name, col)
            else:
                assert _close(float(row[col]), value), (name, col, row[col], value)


def test_dask_text_pos_label_single_row_partitions_brute_force():
    """pyarrow-string labels with pos_label, 12 partitions of one row each, and a subgroup
    present in one partition only."""
    n = 12
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"lab": pd.array(rng.choice(["toxic", "ok"], n), dtype="string[pyarrow]"),
                       "s": rng.integers(0, 4, n) / 4.0,
                       "g": np.arange(n) < 5, "h": np.arange(n) == 7})
    df.loc[0, "lab"], df.loc[1, "lab"] = "toxic", "ok"
    got = _quiet(fastbias.dask.evaluate, dd.from_pandas(df, npartitions=n, sort=False),
                 label="lab", scores="s", subgroups=["g", "h"], pos_label="toxic",
                 progress=False).table
    y = (df.lab == "toxic").to_numpy()
    for name in ("g", "h"):
        ref = reference_row(y, df.s.to_numpy(), df[name].to_numpy(), np.ones(n, bool),
                            np.ones(n))
        row = got[got.subgroup == name].iloc[0]
        for col, value in ref.items():
            assert (np.isnan(value) and np.isnan(row[col])) or row[col] == value, (name, col)


def test_dask_unknown_divisions_several_models_equal_memory_bitwise():
    df = _frame(seed=4)
    df["t"] = (df.s * 7 % 1).astype(np.float32)
    ddf = dd.from_pandas(df, npartitions=4, sort=False).clear_divisions()
    assert not ddf.known_divisions
    kw = dict(label="y", scores=["s", "t"], subgroups=["gb", "gf"], intersections=2,
              missing_subgroup="exclude")
    mem = _quiet(fastbias.evaluate, df, **kw)
    got = _quiet(fastbias.dask.evaluate, ddf, progress=False, **kw)
    pd.testing.assert_frame_equal(got.table.reset_index(drop=True),
                                  mem.table.reset_index(drop=True), check_exact=True)
    assert got.overall_auc.tolist() == mem.overall_auc.tolist()


def test_dask_lazy_compute_and_warnings_match_memory():
    rng = np.random.default_rng(0)
    d = pd.DataFrame({"y": rng.random(40) < 0.5, "s": rng.random(40),
                      "g": np.r_[np.ones(3, bool), np.zeros(37, bool)], "h": np.zeros(40, bool)})
    d.loc[:2, "y"] = True
    kw = dict(label="y", scores="s", subgroups=["g", "h"])
    out = {}
    for key, run in (("mem", lambda: fastbias.evaluate(d, **kw)),
                     ("dask", lambda: fastbias.dask.evaluate(dd.from_pandas(d, npartitions=3),
                                                             progress=False, **kw)),
                     ("lazy", lambda: fastbias.dask.evaluate(dd.from_pandas(d, npartitions=3),
                                                             progress=False, compute=False,
                                                             **kw).compute())):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = run()
        out[key] = (result.table, sorted(str(w.message) for w in caught
                                         if "undefined" in str(w.message)))
    assert len(out["mem"][1]) == 1 and "8 metric value(s) undefined" in out["mem"][1][0]
    for key in ("dask", "lazy"):
        assert out[key][1] == out["mem"][1]
        pd.testing.assert_frame_equal(out[key][0].reset_index(drop=True),
                                      out["mem"][0].reset_index(drop=True), check_exact=True)


def test_dask_local_cluster_thresholds_hand_counts():
    distributed = pytest.importorskip("distributed")
    rng = np.random.default_rng(8)
    n = 200
    df = pd.DataFrame({"y": rng.random(n) < 0.4, "s": rng.integers(0, 10, n) / 10,
                       "g": rng.random(n) < 0.3})
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        res = _quiet(fastbias.dask.evaluate, dd.from_pandas(df, npartitions=4),
                     label="y", scores="s", subgroups=["g"], thresholds=[0.5],
                     progress=False)
    th = res.thresholds
    row = th.iloc[0]
    g, y, pred = df.g.to_numpy(), df.y.to_numpy(), df.s.to_numpy() >= 0.5
    assert int(row["subgroup_tp"]) == int((g & y & pred).sum())
    assert int(row["subgroup_fp"]) == int((g & ~y & pred).sum())
    assert int(row["background_tp"]) == int((~g & y & pred).sum())
    assert int(row["background_fp"]) == int((~g & ~y & pred).sum())
    assert row["subgroup_tpr"] == (g & y & pred).sum() / (g & y).sum()
