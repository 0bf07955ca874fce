"""An independent review's tests (2026-11-27) of the thirty-third session's later commits
(8946130..b8b40d1): intersections as sparse keys in memory and out of core, the bootstrap
memory refusal, DeLong's _known_sum, HTML/terminal name display. Expected values come from
brute force / fractions.Fraction.

Found by review (each fails before its fix): a DeLong standard error 4e-4 off, not NaN,
where a class weighs 1 + 1e-13 (W - 1 from the rounded W); the docs overstated the bootstrap
limit of one subgroup (1.4 million replicates: 1.28 million).
"""
from __future__ import annotations

import itertools
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import fastbias
import fastbias.dask  # noqa: F401

warnings.simplefilter("ignore")


def _frame(seed=1, n=400, k=6):
    """Rows whose batches hold different combinations: the first 100 rows only groups 3..5,
    the next 200 only groups 0..2, the rest any."""
    rng = np.random.default_rng(seed)
    member = np.zeros((n, k), dtype=np.int64)
    for i in range(n):
        pool = [3, 4, 5] if i < 100 else ([0, 1, 2] if i < 300 else list(range(k)))
        for j in rng.choice(pool, size=rng.integers(0, 4), replace=False):
            member[i, j] = 1
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "s": rng.integers(0, 50, n) / 50.0})
    for j in range(k):
        df[f"g{j}"] = member[:, j]
    return df


def _expected(df, subs, order, ms):
    """Subgroups then the intersections: pairs then triples, lexicographic, kept where each
    class has >= ms rows; with brute-force subgroup AUC (Fraction)."""
    y, s = df["y"].to_numpy(), df["s"].to_numpy()
    out = []
    for name in subs:
        out.append((name, df[name].to_numpy() == 1))
    for r in range(2, order + 1):
        for combo in itertools.combinations(range(len(subs)), r):
            m = np.logical_and.reduce([df[subs[j]].to_numpy() == 1 for j in combo])
            if (y[m] == 1).sum() >= ms and (y[m] == 0).sum() >= ms:
                out.append((" & ".join(subs[j] for j in combo), m))
    rows = []
    for name, m in out:
        neg, pos = s[m & (y == 0)], s[m & (y == 1)]
        if len(neg) and len(pos):
            tw = sum(2 if b > a else (1 if b == a else 0) for a in neg for b in pos)
            auc = float(Fraction(tw, 2 * len(neg) * len(pos)))
        else:
            auc = float("nan")
        rows.append((name, int(m.sum()), auc))
    return rows


def _got(res):
    t = res.table
    return list(zip(t["subgroup"], t["subgroup_size"].astype(int), t["subgroup_auc"]))


def _same(got, want):
    assert [g[0] for g in got] == [w[0] for w in want]
    assert [g[1] for g in got] == [w[1] for w in want]
    for g, w in zip(got, want):
        assert (np.isnan(g[2]) and np.isnan(w[2])) or abs(g[2] - w[2]) < 1e-12, (g, w)


@pytest.mark.parametrize("ms", [1, 2, 3, 4, 6, 50])
def test_intersections_in_memory_and_csv_batches_with_different_keys(tmp_path, ms):
    df = _frame()
    subs = [f"g{j}" for j in range(6)]
    want = _expected(df, subs, 3, ms)
    mem = fastbias.evaluate(df, label="y", scores="s", subgroups=subs, intersections=3,
                            min_subgroup_size=ms)
    _same(_got(mem), want)
    p = tmp_path / "a.csv"
    df.to_csv(p, index=False)
    for batch in (37, 100, 1000):
        csv = fastbias.evaluate_csv(p, label="y", scores="s", subgroups=subs,
                                    intersections=3, min_subgroup_size=ms, batch_rows=batch,
                                    temp_dir=tmp_path)
        _same(_got(csv), want)


@pytest.mark.parametrize("ms", [1, 4])
def test_intersections_parquet_and_dask_partitions_with_different_keys(tmp_path, ms):
    dd = pytest.importorskip("dask.dataframe")
    df = _frame(seed=2)
    subs = [f"g{j}" for j in range(6)]
    want = _expected(df, subs, 3, ms)
    ddf = dd.from_pandas(df, npartitions=5)
    _same(_got(fastbias.dask.evaluate(ddf, label="y", scores="s", subgroups=subs,
                                      intersections=3, min_subgroup_size=ms)), want)
    p = tmp_path / "a.parquet"
    df.to_parquet(p, row_group_size=60)
    _same(_got(fastbias.evaluate_parquet(p, label="y", scores="s", subgroups=subs,
                                         intersections=3, min_subgroup_size=ms)), want)


# --- bootstrap memory refusal ------------------------------------------------------------

def _per_replicate(n_groups):
    return 1_500 + max(n_groups, 1) * 7 * 8 * 3


@pytest.mark.parametrize("groups", [1, 3, 200, 12_000])
def test_bootstrap_memory_boundary(groups):
    from fastbias.intervals.bootstrap import check_bootstrap_memory
    most = 2 ** 31 // _per_replicate(groups)
    check_bootstrap_memory(most, groups)  # exactly at the limit: accepted
    with pytest.raises(ValueError, match=f"n_boot={most + 1:,}"):
        check_bootstrap_memory(most + 1, groups)


def test_bootstrap_docs_claim_one_point_four_million_replicates_of_one_subgroup():
    # Was (docs/validation.md, n_boot row): "1,000 replicates of 12,000 subgroups, or 1.4
    # million of 1" are within the 2 GiB limit. For one subgroup the code's limit is
    # 2**31 // (1500 + 168) = 1,287,484 replicates, so n_boot=1,400,000 of one subgroup is
    # refused. Correct: the docs should say about 1.29 million (or the code agree with them).
    from fastbias.intervals.bootstrap import check_bootstrap_memory
    check_bootstrap_memory(1_000, 12_000)
    check_bootstrap_memory(1_280_000, 1)
    with pytest.raises(ValueError, match=r"n_boot=1,290,000 replicates of 1 subgroup would "):
        check_bootstrap_memory(1_290_000, 1)


def test_bootstrap_refusal_counts_the_intersections(tmp_path):
    # 2 subgroups and their intersection are 3 rows of the table: n_boot between the limit of
    # 3 groups (1,071,586) and of 2 groups (1,169,655) must be refused naming 3 subgroups
    import subprocess
    import sys
    n_boot = 1_100_000
    assert 2 ** 31 // _per_replicate(3) < n_boot <= 2 ** 31 // _per_replicate(2)
    code = ("import warnings; warnings.simplefilter('ignore')\n"
            "import numpy as np, fastbias\n"
            "y = np.array([0, 1] * 10); s = np.arange(20) / 20\n"
            "a = np.arange(20) % 3 == 0; b = np.arange(20) % 5 == 0\n"
            "try:\n"
            f"    fastbias.bias_metrics(y, s, {{'a': a, 'b': b}}, intersections=2, ci='bootstrap', n_boot={n_boot})\n"
            "    print('RAN')\n"
            "except ValueError as e:\n"
            "    print('REFUSED', e)\n")
    try:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=60)
        out = r.stdout
    except subprocess.TimeoutExpired:
        out = "TIMEOUT (replicates were being drawn)"
    assert out.startswith("REFUSED") and "of 3 subgroups" in out, out


# --- DeLong: weights of 0 and of several magnitudes ----------------------------------------

def _delong_exact(xs, wx, ys, wy):
    """Exact weighted DeLong (AUC of X above Y, ties 1/2): sum_i w_i (V_i - A)^2 / (W (W-1))
    over both samples, V the placement as a share of the other sample's weight."""
    xs, wx, ys, wy = ([Fraction(float(v)) for v in a] for a in (xs, wx, ys, wy))

    def place(v, others, wo, above):
        t = Fraction(0)
        for o, w in zip(others, wo):
            if (v > o) if above else (v < o):
                t += w
            elif v == o:
                t += w / 2
        return t / sum(wo)
    px = [place(v, ys, wy, True) for v in xs]
    py = [place(v, xs, wx, False) for v in ys]
    auc = sum(w * p for w, p in zip(wx, px)) / sum(wx)
    var = (sum(w * (p - auc) ** 2 for w, p in zip(wx, px)) / (sum(wx) * (sum(wx) - 1))
           + sum(w * (p - auc) ** 2 for w, p in zip(wy, py)) / (sum(wy) * (sum(wy) - 1)))
    return auc, var


@pytest.mark.parametrize("seed", range(3))
def test_delong_weighted_se_exact_or_nan(seed):
    """Weights 0 and 1e-40 .. 1e40 (double-double prefix sums lose a third magnitude): the
    subgroup AUC's DeLong SE is the exact one (1e-6 relative) or NaN, never a wrong number;
    an exact variance of 0 is 0."""
    rng = np.random.default_rng(seed)
    checked = 0
    for _ in range(250):
        n = int(rng.integers(4, 9))
        y = rng.integers(0, 2, n)
        s = rng.integers(0, 4, n).astype(float)
        w = rng.choice([0.0, 1e40, 1.0, 1e-40, 3e20, 2.0, 1e13, 1e-13, 0.1], n)
        pos, neg = y == 1, y == 0
        if w[pos].sum() <= 1 or w[neg].sum() <= 1:
            continue
        g = rng.random(n) < 0.5
        g[:] = True  # the subgroup AUC over all rows; a second subgroup beside it
        try:
            t = fastbias.bias_metrics(y, s, {"g": g, "h": rng.random(n) < 0.5},
                                      sample_weight=w, ci="delong").iloc[0]
        except ValueError as exc:  # a clear refusal of weights DeLong cannot resolve
            assert "sample_weight" in str(exc) and "position" in str(exc)
            continue
        auc, var = _delong_exact(s[pos], w[pos], s[neg], w[neg])
        assert abs(t["subgroup_auc"] - float(auc)) <= 1e-12
        se = t["subgroup_auc_se"]
        if np.isnan(se):
            continue
        checked += 1
        if var == 0:
            assert se == 0
        else:
            assert abs(se - float(var) ** 0.5) <= 1e-6 * float(var) ** 0.5, (y, s, w, se)
    assert checked > 10


def test_delong_zero_weight_row_between_classes_exact_zero():
    # the subgroup's weighted rows: negatives at 0, positives at 2; a weight-0 row at 1 of
    # each class: the exact variance is 0 (every weighted placement equal)
    y = np.array([0, 0, 0, 1, 1, 1])
    s = np.array([0.0, 0.0, 1.0, 1.0, 2.0, 2.0])
    w = np.array([1.0, 2.0, 0.0, 0.0, 3.0, 1.0])
    t = fastbias.bias_metrics(y, s, {"g": np.ones(6, bool), "h": np.arange(6) % 2 == 0},
                              sample_weight=w, ci="delong").iloc[0]
    auc, var = _delong_exact(s[y == 1], w[y == 1], s[y == 0], w[y == 0])
    assert var == 0 and auc == 1
    assert t["subgroup_auc"] == 1.0 and t["subgroup_auc_se"] == 0.0


def test_delong_class_weight_just_above_one_se_exact_or_nan():
    # Was: the positives weigh 1 + 1e-13 (rows of weight 1 and 1e-13). The exact weighted
    # DeLong SE (Fraction, sum w (V - A)^2 / (W (W - 1)) per class) is 0.49999999999995;
    # fastbias gives 0.5002 without a sign: W - 1 is computed as float(1 + 1e-13) - 1.0 =
    # 1.0000889e-13 (fastbias/intervals/delong.py `_deviations`: sqrt(sum(own) *
    # (sum(own) - 1.0)), and _deviation_errors likewise), a 9e-5 relative error that the
    # NaN test (_known_sum) does not see. Correct: the exact SE, or NaN.
    y = np.array([1, 1, 0, 1, 0])
    s = np.array([0.0, 2.0, 2.0, 3.0, 3.0])
    w = np.array([0.0, 1e-13, 1e13, 1.0, 1.0])
    t = fastbias.bias_metrics(y, s, {"g": np.ones(5, bool), "h": np.arange(5) < 2},
                              sample_weight=w, ci="delong").iloc[0]
    auc, var = _delong_exact(s[y == 1], w[y == 1], s[y == 0], w[y == 0])
    assert abs(t["subgroup_auc"] - float(auc)) <= 1e-12
    se = t["subgroup_auc_se"]
    assert np.isnan(se) or abs(se - float(var) ** 0.5) <= 1e-6 * float(var) ** 0.5, se


def test_bootstrap_memory_bound_is_a_calls_not_a_models(monkeypatch):
    """The 2 GiB bound held per model: evaluate's models run in threads, so ten models at
    once could keep ten times it (noted in the thirty-third session). Now a call runs only
    as many models at once as keep their replicates within the bound together (at least
    one), by the same count of bytes a replicate keeps (_per_replicate, by hand)."""
    import fastbias.frame as frame
    from fastbias.intervals.bootstrap import models_at_once
    per_model = 250_000 * _per_replicate(3)  # 0.47 GiB a model: 4 fit in 2 GiB
    assert 2 ** 31 // per_model == 4
    assert models_at_once(250_000, 3, 16) == 4
    assert models_at_once(250_000, 3, 2) == 2
    assert models_at_once(1_000_000, 3, 8) == 1  # (1.9 GiB: one at a time)
    assert models_at_once(1_000, 3, 8) == 8
    seen = []
    real = frame.map_in_threads

    def recording(function, items, workers):
        seen.append(workers)
        return real(function, items, workers)

    monkeypatch.setattr(frame, "map_in_threads", recording)
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"y": rng.random(60) < 0.5, "a": rng.random(60), "b": rng.random(60),
                       "c": rng.random(60), "g": rng.random(60) < 0.5})
    # 3 models, 2 GiB // (n_boot x one subgroup's replicate) = 1 at once at n_boot = 1.2M
    # would take long: the bound is checked with a small n_boot beside models_at_once above,
    # and here only that evaluate asks for models_at_once's count
    monkeypatch.setattr(frame, "models_at_once", lambda n_boot, n_groups, threads: 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fastbias.evaluate(df, label="y", scores=["a", "b", "c"], subgroups=["g"],
                          ci="bootstrap", n_boot=20, random_state=0, n_jobs=3)
    assert seen == [1]
