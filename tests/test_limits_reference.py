"""An independent review's tests (2026-11-27): what happens at scale limits a user or hostile
data can reach.

Found by review (each fails before its fix): intersections= built every one of the C(k, r)
combinations of the subgroups (a MemoryError with 2,000 subgroups and one row in three of
them; out of core too, and a dense k**r look-up table there); n_boot had no bound (a
MemoryError making 10**9 seeds, or after 74 s of replicates).

Contract checked (docs/validation.md, docs/intersections.md): every input either gives the
exact numbers within memory proportional to the inputs, or is refused up front with a clear
ValueError naming the argument and the limit; never a bare MemoryError after seconds of work.

Tests that could exhaust memory run in a subprocess under RLIMIT_AS (about 1.1 GB of
address space: the small control cases fit in it comfortably) and a timeout, so a failing
test stays cheap (a few seconds) and safe. Expected values come from brute-force pair
counts in fractions.Fraction, never from fastbias.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import fastbias

LIMIT_BYTES = 1_100_000_000  # address space of the subprocess


def _run_limited(body: str, timeout: float = 20.0):
    """Run ``body`` in a fresh interpreter limited to LIMIT_BYTES of address space.

    Returns (returncode, stdout, stderr); a timeout is reported as returncode None."""
    code = (f"import resource, sys\n"
            f"resource.setrlimit(resource.RLIMIT_AS, ({LIMIT_BYTES}, {LIMIT_BYTES}))\n"
            f"import warnings; warnings.simplefilter('ignore')\n"
            f"import numpy as np, pandas as pd, fastbias\n" + textwrap.dedent(body))
    try:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "", "timed out"
    return r.returncode, r.stdout, r.stderr


def _assert_exact_or_refused(result, argument: str, ok_prefix: str = "OK"):
    rc, out, err = result
    assert rc is not None, "hung past the timeout instead of refusing up front"
    assert "MemoryError" not in err, (
        f"bare MemoryError instead of a ValueError naming {argument!r}: ...{err[-400:]}")
    assert rc == 0, err[-800:]
    if out.startswith("VALUEERROR"):
        assert argument in out, out  # a refusal must name the argument
    else:
        assert out.startswith(ok_prefix), out


def _twice_u(neg, pos):
    return sum(2 if b > a else (1 if b == a else 0) for a in neg for b in pos)


def _auc(neg, pos):
    return Fraction(_twice_u(neg, pos), 2 * len(neg) * len(pos))


# ---------------------------------------------------------------------------------------
# Defect 1: intersections= costs O(C(k, r)) time and memory (all combinations of the k
# subgroups are built as Python tuples and int64 keys, prepare/memberships.py
# `_all_combinations`, called from `_combination_entries` / `combination_cells`), not the
# "memberships produced" the docs promise. With k = 2,000 sparse subgroups and ONE triple
# occurring, intersections=3 builds C(2000, 3) = 1.3e9 tuples: a bare MemoryError (measured
# under a 4 GB limit: 12 s, 3.5 GB; unlimited it would take ~100 GB).
# Correct: compute the few combinations that occur (2,004 rows), or refuse up front with a
# ValueError naming intersections= and the limit.
# ---------------------------------------------------------------------------------------

_SPARSE_SUBGROUPS = """
k = {k}; n = 200
y = np.arange(n) % 2 == 1
s = np.linspace(0, 1, n)
M = np.zeros((n, k), bool)
M[np.arange(n), np.arange(n) % k] = True
M[:4, :3] = True       # rows 0..3 (labels 0, 1, 0, 1) are in subgroups 0, 1 and 2
try:
    tab = fastbias.bias_metrics(y, s, M, intersections={order})
    name = " & ".join(f"subgroup_{{j}}" for j in range({order}))
    print("OK", len(tab), repr(float(tab.loc[name, "subgroup_auc"])))
except ValueError as e:
    print("VALUEERROR", e)
"""


def test_control_intersections_small_k_fits_in_the_limit():
    rc, out, err = _run_limited(_SPARSE_SUBGROUPS.format(k=20, order=3))
    assert rc == 0, err[-600:]
    fields = out.split()
    # 20 subgroups + 3 pairs + 1 triple (the only combinations with both classes)
    assert fields[:2] == ["OK", "24"]
    s = np.linspace(0, 1, 200)
    assert float(fields[2]) == float(_auc([s[0], s[2]], [s[1], s[3]]))  # 3/4


def test_intersections3_with_2000_sparse_subgroups_exact_or_refused():
    # one triple and three pairs occur; C(2000, 3) = 1.3e9 combinations are enumerated
    result = _run_limited(_SPARSE_SUBGROUPS.format(k=2000, order=3))
    _assert_exact_or_refused(result, "intersections")
    s = np.linspace(0, 1, 200)
    if result[1].startswith("OK"):
        _, rows, value = result[1].split()
        assert int(rows) == 2000 + 3 + 1
        assert float(value) == float(_auc([s[0], s[2]], [s[1], s[3]]))


def test_intersections2_with_20000_sparse_subgroups_exact_or_refused():
    # three pairs occur; C(20000, 2) = 2e8 combinations are enumerated
    result = _run_limited(_SPARSE_SUBGROUPS.format(k=20000, order=2))
    _assert_exact_or_refused(result, "intersections")
    if result[1].startswith("OK"):
        assert int(result[1].split()[1]) == 20000 + 3


def test_out_of_core_intersections3_600_columns_exact_or_refused(tmp_path):
    # evaluate_csv: 600 identity columns, 100 rows, no row in more than one subgroup, so no
    # intersection exists at all; still C(600, 3) = 3.6e7 tuples per batch plus a
    # (600, 600, 600) int64 look-up table (encoded.py `_combination_tables`, 1.7 GB) are built.
    # Measured (Parquet, 2,000 rows, 4 GB limit): MemoryError after 8 s.
    k, n = 600, 100
    M = np.zeros((n, k), np.int8)
    M[np.arange(n), np.arange(n) % k] = 1
    df = pd.DataFrame(M, columns=[f"g{j}" for j in range(k)])
    df["y"] = np.arange(n) % 2
    df["s"] = np.linspace(0, 1, n)
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    result = _run_limited(f"""
        try:
            res = fastbias.evaluate_csv({str(path)!r}, label="y", scores="s",
                                        subgroups=[f"g{{j}}" for j in range({k})],
                                        intersections=3, temp_dir={str(tmp_path)!r})
            print("OK", len(res.for_model()))
        except ValueError as e:
            print("VALUEERROR", e)
    """)
    _assert_exact_or_refused(result, "intersections")
    if result[1].startswith("OK"):
        assert int(result[1].split()[1]) == k  # no intersection has both classes


# ---------------------------------------------------------------------------------------
# Defect 2: n_boot has no upper bound and no up-front check: n_boot=10**9 spawns 1e9
# SeedSequence objects (intervals/bootstrap.py `replicates`: `.spawn(n_boot)`) and dies
# with a bare MemoryError (n_boot=1e7, k=3, 1,000 rows under 4 GB: MemoryError after 30 s;
# n_boot=1e5 with 200 subgroups: 74 s of replicates, then `np.abs(counts)` raises
# "_ArrayMemoryError: Unable to allocate 1.04 GiB" at the very end).
# Correct: refuse up front with a ValueError naming n_boot (or the memory it would need).
# ---------------------------------------------------------------------------------------

_BOOT = """
y = np.arange(40) % 2 == 1
s = np.linspace(0, 1, 40)
M = (np.arange(40) % 4 < 2)[:, None]
try:
    tab = fastbias.bias_metrics(y, s, M, ci="bootstrap", n_boot={n_boot}, random_state=0)
    print("OK", repr(float(tab["subgroup_auc"].iloc[0])))
except ValueError as e:
    print("VALUEERROR", e)
"""


def test_control_bootstrap_small_n_boot_fits_in_the_limit():
    rc, out, err = _run_limited(_BOOT.format(n_boot=200))
    assert rc == 0 and out.startswith("OK"), err[-600:]
    s = np.linspace(0, 1, 40)
    g = np.arange(40) % 4 < 2
    y = np.arange(40) % 2 == 1
    assert float(out.split()[1]) == float(_auc(s[g & ~y], s[g & y]))


def test_huge_n_boot_refused_up_front_not_memory_error():
    _assert_exact_or_refused(_run_limited(_BOOT.format(n_boot=10 ** 9)), "n_boot")


# ---------------------------------------------------------------------------------------
# Properties that held (pinned, cheap)
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["evaluate", "bias_metrics", "csv"])
def test_id_column_as_sensitive_feature_refused_naming_column_and_limit(where, tmp_path):
    n = 1500  # 1,500 distinct values > the documented 1,000
    df = pd.DataFrame({"uid": [f"u{i}" for i in range(n)], "y": np.arange(n) % 2,
                       "s": np.linspace(0, 1, n)})
    with pytest.raises(ValueError, match=r"'uid' has 1,500 distinct values.*1,000"):
        if where == "evaluate":
            fastbias.evaluate(df, label="y", scores="s", sensitive_features=["uid"])
        elif where == "bias_metrics":
            fastbias.bias_metrics(df.y, df.s, df[["uid"]])
        else:
            path = tmp_path / "d.csv"
            df.to_csv(path, index=False)
            # batches of 500 rows: each batch alone is under the limit, the union is not
            fastbias.evaluate_csv(path, label="y", scores="s", sensitive_features=["uid"],
                                  batch_rows=500, temp_dir=tmp_path)


def test_two_features_many_combinations_exact():
    # 2 features of 50 values -> 500 combinations of 2 rows (one of each class)
    n = 1000
    i = np.arange(n)
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"a": (i // 2) % 50, "b": (i // 100) % 50, "y": i % 2,
                       "s": np.round(rng.random(n), 1)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tab = fastbias.evaluate(df, label="y", scores="s",
                                sensitive_features=["a", "b"]).for_model()
    assert len(tab) == 50 + 10 + 500
    y = df.y.to_numpy().astype(bool)
    s = df.s.to_numpy()
    for a, b in [(0, 0), (17, 3), (49, 9)]:
        g = (df.a.to_numpy() == a) & (df.b.to_numpy() == b)
        row = tab.loc[f"a={a} & b={b}"]
        assert row["subgroup_auc"] == float(_auc(s[g & ~y], s[g & y]))
        assert row["bpsn_auc"] == float(_auc(s[g & ~y], s[~g & y]))
        assert row["bnsp_auc"] == float(_auc(s[~g & ~y], s[g & y]))


def test_2000_subgroups_of_few_rows_exact():
    k, n = 2000, 8000
    rng = np.random.default_rng(2)
    y = rng.random(n) < 0.5
    s = np.round(rng.random(n), 2)
    M = np.zeros((n, k), bool)
    M[np.arange(n), np.arange(n) % k] = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tab = fastbias.bias_metrics(y, s, M)
    assert len(tab) == k
    for j in [0, 777, k - 1]:
        g = M[:, j]
        row = tab.iloc[j]
        for metric, neg, pos in [("subgroup_auc", s[g & ~y], s[g & y]),
                                 ("bpsn_auc", s[g & ~y], s[~g & y])]:
            if len(neg) and len(pos):
                assert row[metric] == float(_auc(neg, pos))
            else:
                assert np.isnan(row[metric])


def test_10000_thresholds_exact_counts():
    n, T = 5000, 10_000
    rng = np.random.default_rng(3)
    y = rng.random(n) < 0.4
    s = np.round(rng.random(n), 3)
    g = rng.random(n) < 0.2
    th = np.linspace(0, 1, T)
    tab = fastbias.threshold_metrics(y, s, {"g": g}, thresholds=th)
    assert len(tab) == T
    for t in [0, 1234, 5000, T - 1]:
        row = tab.iloc[t]
        pred = s >= th[t]
        assert row["subgroup_fp"] == int((g & ~y & pred).sum())
        assert row["background_tp"] == int((~g & y & pred).sum())
        assert row["subgroup_fpr"] == (g & ~y & pred).sum() / (g & ~y).sum()
