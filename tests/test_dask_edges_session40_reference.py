"""``fastbias.dask.evaluate`` on partitioned inputs at their edges: an independent review's
tests (2026-11-28, fortieth session).

Every number is checked against an independent reference written here: brute-force pair
counts in ``fractions.Fraction`` (weights read exactly as Fractions of their floats), a
plain numpy DeLong (ddof 1 placements) and hand counts of threshold rates, all on
``ddf.compute()``. Partitions are built with ``dd.from_delayed`` (unknown divisions) and
include empty, one-row and one-class partitions; nullable, categorical, pyarrow and float
identity columns under both ``missing_subgroup`` settings; weight scales 1e-300 to 1e300;
errors naming the column, value and partition. No defect was found: these are pins.
"""
import itertools
import warnings
from fractions import Fraction

import dask
import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("distributed")
fd = pytest.importorskip("fastbias.dask")

pytestmark = pytest.mark.jit_heavy

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
COUNTS = ["subgroup_negatives", "subgroup_positives", "background_negatives",
          "background_positives"]


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# ---------------------------------------------------------------- independent reference
def _pairs(a_s, a_w, b_s, b_w):
    """P(a > b) + 1/2 P(a == b) over weighted pairs, exact; None when no pair weighs."""
    total = num2 = Fraction(0)
    for sa, wa in zip(a_s, a_w):
        for sb, wb in zip(b_s, b_w):
            w = wa * wb
            total += w
            num2 += 2 * w if sa > sb else (w if sa == sb else 0)
    return None if total == 0 else num2 / (2 * total)


def ref_metrics(y, s, member, w=None):
    """member: True / False / None (None: left out, missing_subgroup="exclude")."""
    n = len(y)
    w = [Fraction(1)] * n if w is None else [Fraction(float(x)) for x in w]

    def cell(m, pos):
        idx = [i for i in range(n) if member[i] is m and bool(y[i]) is pos]
        return [s[i] for i in idx], [w[i] for i in idx]
    sn, sp, bn, bp = cell(True, False), cell(True, True), cell(False, False), cell(False, True)
    f = lambda v: np.nan if v is None else float(v)  # noqa: E731
    ne, pe = _pairs(*bn, *sn), _pairs(*bp, *sp)
    return dict(subgroup_auc=f(_pairs(*sp, *sn)), bpsn_auc=f(_pairs(*bp, *sn)),
                bnsp_auc=f(_pairs(*sp, *bn)),
                negative_aeg=np.nan if ne is None else float(Fraction(1, 2) - ne),
                positive_aeg=np.nan if pe is None else float(Fraction(1, 2) - pe),
                subgroup_negatives=len(sn[0]), subgroup_positives=len(sp[0]),
                background_negatives=len(bn[0]), background_positives=len(bp[0]))


def ref_overall(y, s, w=None):
    w = [Fraction(1)] * len(y) if w is None else [Fraction(float(x)) for x in w]
    pos = [i for i in range(len(y)) if y[i]]
    neg = [i for i in range(len(y)) if not y[i]]
    v = _pairs([s[i] for i in pos], [w[i] for i in pos], [s[i] for i in neg],
               [w[i] for i in neg])
    return np.nan if v is None else float(v)


def threshold_member(t, missing):
    def member(df, g):
        out = []
        for v in df[g]:
            if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
                out.append(None if missing == "exclude" else False)
            elif isinstance(v, (bool, np.bool_)):
                out.append(bool(v))
            else:
                out.append(bool(v >= t))
        return out
    return member


def parts(frames):
    return dd.from_delayed([dask.delayed(f) for f in frames], meta=frames[0].iloc[:0],
                           verify_meta=False)


def check(ddf, member, **kw):
    res = fd.evaluate(ddf, **kw)
    df = ddf.compute()
    labels = df[kw["label"]]
    if kw.get("pos_label") is not None:
        y = list(labels == kw["pos_label"])
    elif str(labels.dtype) in ("bool", "boolean", "bool[pyarrow]"):
        y = list(labels.astype(bool))
    else:
        y = list(labels.astype(float) >= kw.get("label_threshold", 0.5))
    w = None if kw.get("sample_weight") is None else list(df[kw["sample_weight"]].astype(float))
    models = [kw["scores"]] if isinstance(kw["scores"], str) else kw["scores"]
    rtol = 2.0 ** -50 if w else 0.0
    for m in models:
        s = list(df[m].astype(float))
        exp, got = ref_overall(y, s, w), float(res.overall_auc[m])
        assert (np.isnan(exp) and np.isnan(got)) or abs(got - exp) <= rtol * abs(exp), (m, got, exp)
        for g in kw["subgroups"]:
            ref = ref_metrics(y, s, member(df, g), w)
            row = res.table[(res.table.model == m) & (res.table.subgroup == g)].iloc[0]
            for c in METRICS:
                got, exp = float(row[c]), ref[c]
                assert (np.isnan(exp) and np.isnan(got)) or abs(got - exp) <= rtol * abs(exp), \
                    (m, g, c, got, exp)
            for c in COUNTS:
                assert int(row[c]) == ref[c], (m, g, c, row[c], ref[c])
    return res


def base(n, seed):
    r = np.random.default_rng(seed)
    return pd.DataFrame({"y": r.random(n) < 0.45, "s": np.round(r.random(n), 1)})


# ---------------------------------------------------------------- identity columns
@pytest.mark.parametrize("missing", ["background", "exclude"])
def test_nullable_int64_votes_and_boolean_with_na_in_odd_partitions(missing):
    rng = np.random.default_rng(1000)
    frames = []
    for k, n in enumerate([30, 0, 1, 25, 20]):
        f = base(n, k)
        votes = pd.array(rng.integers(0, 4, n), dtype="Int64")
        if n:
            votes[rng.random(n) < 0.3] = pd.NA
        if k == 4:
            votes[:] = pd.NA  # a partition with no annotated row
        flag = pd.array(rng.random(n) < 0.4, dtype="boolean")
        if n:
            flag[rng.random(n) < 0.3] = pd.NA
        f["votes"], f["flag"] = votes, flag
        frames.append(f)
    ddf = parts(frames)
    for t in (2, 1.5):
        check(ddf, threshold_member(t, missing), label="y", scores="s",
              subgroups=["votes", "flag"], subgroup_threshold=t, missing_subgroup=missing)


@pytest.mark.parametrize("missing", ["background", "exclude"])
def test_categorical_integer_identity_with_other_categories_per_partition(missing):
    rng = np.random.default_rng(7)
    frames = []
    for k, cats in enumerate([[0, 1, 2], [2, 3], [1, 3, 5]]):
        f = base(25, 10 + k)
        vals = rng.choice(cats, 25).astype(object)
        vals[rng.random(25) < 0.2] = np.nan
        f["c"] = pd.Categorical(vals, categories=cats)
        frames.append(f)
    check(parts(frames), threshold_member(2, missing), label="y", scores="s", subgroups=["c"],
          subgroup_threshold=2, missing_subgroup=missing)


@pytest.mark.parametrize("missing", ["background", "exclude"])
def test_float_identity_nan_with_all_nan_and_one_class_partitions(missing):
    rng = np.random.default_rng(3)
    frames = []
    for k in range(4):
        f = base(20, 20 + k)
        g = rng.random(20)
        g[rng.random(20) < 0.3] = np.nan
        if k == 2:
            g[:] = np.nan
        if k == 1:
            f["y"] = True
        f["g"] = g
        frames.append(f)
    ddf = parts(frames)
    check(ddf, threshold_member(0.5, missing), label="y", scores="s", subgroups=["g"],
          missing_subgroup=missing)
    check(ddf, threshold_member(0.7, missing), label="y", scores="s", subgroups=["g"],
          subgroup_threshold=0.7, missing_subgroup=missing, npartitions=7)


def test_pyarrow_backed_label_score_and_identity_with_null():
    frames = []
    for k in range(3):
        f = base(15, 95 + k)
        f["sp"] = pd.array(f.s, dtype="double[pyarrow]")
        gb = pd.array(np.random.default_rng(k).random(15) < 0.5, dtype="bool[pyarrow]")
        gb[2] = None
        f["gb"], f["yp"] = gb, pd.array(f.y, dtype="bool[pyarrow]")
        frames.append(f)
    for missing in ("background", "exclude"):
        check(parts(frames), threshold_member(0.5, missing), label="yp", scores="sp",
              subgroups=["gb"], missing_subgroup=missing)
    frames[1].loc[4, "sp"] = None
    with pytest.raises(ValueError, match=r"'sp' has 1 NaN.*position 4.*partition 1"):
        fd.evaluate(parts(frames), label="yp", scores="sp", subgroups=["gb"])


# ---------------------------------------------------------------- weights
def _weighted_frames():
    rng = np.random.default_rng(5)
    frames = []
    for k, n in enumerate([20, 0, 15, 1, 20]):
        f = base(n, 30 + k)
        f["g"] = rng.random(n) < 0.4
        f["w"] = rng.random(n) * 3
        if n:
            f.loc[f.index[rng.random(n) < 0.3], "w"] = 0.0
        if k == 2:
            f["w"] = -0.0  # a partition weighing nothing, signed zero
        frames.append(f)
    return frames


@pytest.mark.parametrize("scale", [1.0, 1e-300, 1e300, 2.0 ** -1000])
def test_weights_with_zeros_at_any_scale_equal_exact_fractions(scale):
    frames = [f.assign(w=f.w * scale) for f in _weighted_frames()]
    check(parts(frames), threshold_member(0.5, "background"), label="y", scores="s",
          subgroups=["g"], sample_weight="w")


def test_weights_spread_1e140_across_partitions():
    frames = [f.assign(w=f.w * (1e100 if k == 0 else 1e-40))
              for k, f in enumerate(_weighted_frames())]
    check(parts(frames), threshold_member(0.5, "background"), label="y", scores="s",
          subgroups=["g"], sample_weight="w")


def test_a_cell_whose_rows_all_weigh_zero_is_nan():
    frames = []
    for f in _weighted_frames():
        f = f.copy()
        f.loc[f.g & f.y, "w"] = 0.0
        frames.append(f)
    res = check(parts(frames), threshold_member(0.5, "background"), label="y", scores="s",
                subgroups=["g"], sample_weight="w")
    row = res.table.iloc[0]
    assert row["subgroup_positives"] > 0 and row["subgroup_positive_weight"] == 0
    assert np.isnan(row["subgroup_auc"]) and np.isnan(row["bnsp_auc"])
    assert np.isnan(row["positive_aeg"])


# ---------------------------------------------------------------- labels
def test_pos_label_on_text_boolean_and_integer_labels():
    frames = []
    for k, n in enumerate([12, 0, 1, 15]):
        f = base(n, 40 + k)
        f["lab"] = np.where(f.y, "toxic", "ok")
        f["yi"] = f.y.astype("int64") * 2
        f["g"] = np.random.default_rng(k).random(n) < 0.5
        frames.append(f)
    ddf = parts(frames)
    member = threshold_member(0.5, "background")
    for label, pos in [("lab", "toxic"), ("lab", "ok"), ("y", False), ("y", True),
                       ("yi", 0), ("yi", 2), ("yi", 2.0)]:
        check(ddf, member, label=label, scores="s", subgroups=["g"], pos_label=pos)
    with pytest.raises(ValueError, match=r"pos_label 'Toxic' does not occur in label column"):
        fd.evaluate(ddf, label="lab", scores="s", subgroups=["g"], pos_label="Toxic")


def test_categorical_label_with_other_categories_per_partition_and_pos_label():
    frames = []
    for k, cats in enumerate([["ok", "toxic"], ["toxic"], ["ok"], ["toxic", "ok", "zzz"]]):
        f = base(12, 80 + k)
        values = np.where(f.y, "toxic", "ok") if len(cats) > 1 else [cats[0]] * 12
        f["lab"] = pd.Categorical(values, categories=cats)
        f["g"] = np.random.default_rng(k).random(12) < 0.5
        frames.append(f)
    check(parts(frames), threshold_member(0.5, "background"), label="lab", scores="s",
          subgroups=["g"], pos_label="toxic")


def test_fractional_and_float32_labels_with_label_threshold():
    frames = []
    for k, n in enumerate([20, 20, 0, 3]):
        f = base(n, 50 + k)
        f["t"] = np.round(np.random.default_rng(k).random(n), 1)
        f["t32"] = f["t"].astype("float32")  # float32(0.7) < 0.7: not positive at 0.7
        f["g"] = np.random.default_rng(k + 9).random(n) < 0.5
        frames.append(f)
    member = threshold_member(0.5, "background")
    check(parts(frames), member, label="t", scores="s", subgroups=["g"], label_threshold=0.3)
    check(parts(frames), member, label="t32", scores="s", subgroups=["g"], label_threshold=0.7)


def test_float16_and_float32_scores_with_given_divisions():
    frames = []
    for k in range(3):
        f = base(20, 90 + k)
        f["g"] = np.random.default_rng(k).random(20) < 0.5
        f["s16"] = np.random.default_rng(k).random(20).astype("float16")
        f["s32"] = np.float32(f["s16"]) + np.float32(1e-8)
        frames.append(f)
    member = threshold_member(0.5, "background")
    check(parts(frames), member, label="y", scores=["s16"], subgroups=["g"])
    check(parts(frames), member, label="y", scores=["s32"], subgroups=["g"],
          divisions=[0, 0.25, 0.5, 1.0])


# ---------------------------------------------------------------- messages
def _message_frames():
    rng = np.random.default_rng(11)
    frames = []
    for k, n in enumerate([10, 0, 8, 6]):
        f = base(n, 60 + k)
        f["s2"] = f["s"] * 0.5
        f["g"] = rng.random(n) < 0.5
        f["w"] = 1.0
        f["lab"] = f.y.astype(float)
        f.index = np.arange(n) + 1000 * k  # row labels are not positions
        frames.append(f)
    return frames


def _set(frames, part, pos, column, value):
    frames[part].loc[frames[part].index[pos], column] = value
    return frames


@pytest.mark.parametrize("part,pos,column,value,kw,pattern", [
    (2, 3, "s2", np.nan, {}, r"score column 's2' has 1 NaN .*position 3.*Dask partition 2"),
    (3, 4, "s", np.inf, {}, r"score column 's' has 0 NaN and 1 infinite.*position 4.*partition 3"),
    (2, 1, "lab", 2.0, {"label": "lab"}, r"label column 'lab'.*2\.0 at position 1.*partition 2"),
    (2, 5, "lab", np.nan, {"label": "lab"}, r"label column 'lab' has 1 missing.*position 5.*partition 2"),
    (3, 2, "w", -0.5, {"sample_weight": "w"}, r"'w' has 1 negative.*-0\.5 at position 2.*partition 3"),
    (3, 2, "w", np.inf, {"sample_weight": "w"}, r"'w' has 1 infinite.*position 2.*partition 3"),
    (0, 7, "w", np.nan, {"sample_weight": "w"}, r"'w' has 1 NaN or missing.*position 7.*partition 0"),
])
def test_bad_values_name_column_value_partition_and_its_own_position(part, pos, column, value,
                                                                      kw, pattern):
    frames = _set(_message_frames(), part, pos, column, value)
    args = dict(label="y", scores=["s", "s2"], subgroups=["g"])
    args.update(kw)
    with pytest.raises(ValueError, match=pattern):
        fd.evaluate(parts(frames), **args)


def test_nullable_integer_label_and_weight_problems_are_named():
    frames = _message_frames()
    for f in frames:
        f["li"] = pd.array(f["lab"].astype("int64"), dtype="Int64")
        f["wi"] = pd.array(np.ones(len(f), dtype="int64"), dtype="Int64")
    frames[2].loc[frames[2].index[4], "li"] = pd.NA
    with pytest.raises(ValueError, match=r"'li' has 1 missing.*position 4.*partition 2"):
        fd.evaluate(parts(frames), label="li", scores="s", subgroups=["g"])
    frames = _message_frames()
    for f in frames:
        f["wi"] = pd.array(np.ones(len(f), dtype="int64"), dtype="Int64")
    frames[3].loc[frames[3].index[5], "wi"] = 2 ** 53 + 1
    with pytest.raises(ValueError, match=r"'wi'.*9007199254740993 at position 5.*partition 3"):
        fd.evaluate(parts(frames), label="y", scores="s", subgroups=["g"], sample_weight="wi")


# ---------------------------------------------------------------- extras
def _delong_se(xs, ys):
    xs, ys = np.asarray(xs, float), np.asarray(ys, float)
    m, n = len(xs), len(ys)
    if m < 2 or n < 2:
        return np.nan
    v10 = np.array([((ys < x).sum() + 0.5 * (ys == x).sum()) / n for x in xs])
    v01 = np.array([((xs > y).sum() + 0.5 * (xs == y).sum()) / m for y in ys])
    return float(np.sqrt(v10.var(ddof=1) / m + v01.var(ddof=1) / n))


def _extras_frames():
    frames = []
    for k, n in enumerate([40, 0, 1, 30, 35]):
        f = base(n, 70 + k)
        r = np.random.default_rng(k)
        f["s"] = np.round(r.random(n) * 0.6 + 0.4 * f.y, 2)
        g = np.where(r.random(n) < 0.4, 1.0, 0.0)
        g[r.random(n) < 0.2] = np.nan
        f["g"], f["h"] = g, r.random(n) < 0.5
        if k == 3:
            f["y"] = False  # a partition of negatives only
        frames.append(f)
    return frames


@pytest.mark.parametrize("missing", ["background", "exclude"])
def test_delong_intervals_equal_a_plain_delong(missing):
    ddf = parts(_extras_frames())
    df = ddf.compute().reset_index(drop=True)
    res = fd.evaluate(ddf, label="y", scores="s", subgroups=["g", "h"],
                      missing_subgroup=missing, ci="delong")
    y, s, z = df.y.to_numpy(), df.s.to_numpy(), norm.ppf(0.975)
    for name in ("g", "h"):
        col = df[name].astype(float).to_numpy()
        annotated = ~np.isnan(col) if missing == "exclude" else np.ones(len(col), bool)
        mem = (col >= 0.5) & ~np.isnan(col)
        sp, sn = s[mem & y], s[mem & ~y]
        bp, bn = s[~mem & annotated & y], s[~mem & annotated & ~y]
        row = res.table[res.table.subgroup == name].iloc[0]
        for metric, (x_, y_) in dict(subgroup_auc=(sp, sn), bpsn_auc=(bp, sn),
                                     bnsp_auc=(sp, bn), negative_aeg=(bn, sn),
                                     positive_aeg=(bp, sp)).items():
            se = _delong_se(x_, y_)
            assert row[metric + "_se"] == pytest.approx(se, rel=1e-9), (name, metric)
            low, high = (0, 1) if metric.endswith("auc") else (-0.5, 0.5)
            assert row[metric + "_low"] == pytest.approx(max(low, row[metric] - z * se), abs=1e-12)
            assert row[metric + "_high"] == pytest.approx(min(high, row[metric] + z * se), abs=1e-12)


def test_threshold_rates_equal_hand_counts():
    ddf = parts(_extras_frames())
    df = ddf.compute().reset_index(drop=True)
    res = fd.evaluate(ddf, label="y", scores="s", subgroups=["h"],
                      thresholds=[0.0, 0.3, 0.5, 0.51, 1.0])
    y, s, mem = df.y.to_numpy(), df.s.to_numpy(), df.h.to_numpy()
    assert len(res.thresholds) == 5
    for _, r in res.thresholds.iterrows():
        pred = s >= r["threshold"]
        for side, rows in (("subgroup", mem), ("background", ~mem)):
            neg, pos = rows & ~y, rows & y
            assert r[f"{side}_fp"] == pred[neg].sum() and r[f"{side}_tp"] == pred[pos].sum()
            assert r[f"{side}_fpr"] == pytest.approx(pred[neg].sum() / neg.sum(), abs=1e-15)
            assert r[f"{side}_fnr"] == pytest.approx((~pred[pos]).sum() / pos.sum(), abs=1e-15)


@pytest.mark.parametrize("missing", ["background", "exclude"])
def test_intersections_with_nan_identities_equal_brute_force(missing):
    frames = []
    for k, n in enumerate([40, 0, 1, 40]):
        f = base(n, 110 + k)
        r = np.random.default_rng(k)
        for c in "abc":
            v = (r.random(n) < 0.5).astype(float)
            v[r.random(n) < 0.2] = np.nan
            f[c] = v
        frames.append(f)
    ddf = parts(frames)
    df = ddf.compute().reset_index(drop=True)
    res = fd.evaluate(ddf, label="y", scores="s", subgroups=list("abc"),
                      missing_subgroup=missing, intersections=2, min_subgroup_size=3)
    expected = list("abc")
    for a, b in itertools.combinations("abc", 2):
        both = (df[a] >= 0.5) & (df[b] >= 0.5)
        if (both & df.y).sum() >= 3 and (both & ~df.y).sum() >= 3:
            expected.append(f"{a} & {b}")
    assert res.table.subgroup.tolist() == expected
    y, s = list(df.y), list(df.s)
    for name in expected:
        cols = name.split(" & ")
        member = []
        for i in range(len(df)):
            vals = [df[c][i] for c in cols]
            if any(np.isnan(v) for v in vals):  # docs/intersections.md: unannotated for a or b
                member.append(None if missing == "exclude" else False)
            else:
                member.append(all(v >= 0.5 for v in vals))
        ref = ref_metrics(y, s, member)
        row = res.table[res.table.subgroup == name].iloc[0]
        for c in METRICS:
            assert (np.isnan(ref[c]) and np.isnan(row[c])) or row[c] == ref[c], (name, c)
        for c in COUNTS:
            assert row[c] == ref[c], (name, c)
