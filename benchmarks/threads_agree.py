"""Every kind of call gives the same table on every thread count: a check for a machine with
more cores than CI's two (issue 16's engines run only from 8 threads).

For each kind of call (plain, weighted, ``ci="delong"``, ``ci="bootstrap"``, weighted
bootstrap, ``significance="holm"``, thresholds, identity pairs, ``missing_subgroup=
"exclude"`` with missing identities) on Jigsaw-like arrays with heavy ties
(:func:`bench_threads.jigsaw_like_arrays`, scores rounded to 3 decimals), it runs
``fastbias.evaluate`` with ``n_jobs`` 1, 2, 8 and the usable CPUs, and says whether every
table (and overall AUC) equals the one-thread table bit for bit; the unweighted plain call
is also checked against scikit-learn's ``roc_auc_score`` for each subgroup's AUC (to 1e-12).
The kernels are compiled first (``FASTBIAS_FIRST_CALL=0``). Prints one line per kind and
exits 1 if any differs.

Usage::

    python benchmarks/threads_agree.py --rows 1000000
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

os.environ.setdefault("FASTBIAS_FIRST_CALL", "0")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import fastbias  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_threads import jigsaw_like_arrays  # noqa: E402

KINDS = {
    "plain": {},
    "weighted": {"sample_weight": "w"},
    "delong": {"ci": "delong"},
    "bootstrap": {"ci": "bootstrap", "n_boot": 20, "random_state": 0},
    "weighted bootstrap": {"ci": "bootstrap", "n_boot": 10, "random_state": 0,
                           "sample_weight": "w"},
    "significance": {"significance": "holm"},
    "weighted significance": {"significance": "holm", "sample_weight": "w"},
    "thresholds": {"thresholds": [0.1, 0.5]},
    "pairs": {"intersections": 2},
    "exclude": {"missing_subgroup": "exclude"},
}


def frame(rows: int, k: int) -> pd.DataFrame:
    y, s, groups = jigsaw_like_arrays(rows, k)
    rng = np.random.default_rng(1)
    df = pd.DataFrame(groups.astype(np.float64), columns=[f"g{j}" for j in range(k)])
    df.iloc[rng.integers(0, rows, rows // 50), 0] = np.nan  # missing identities in g0
    df["y"], df["s"] = y, np.round(s, 3)  # heavy ties
    df["w"] = rng.integers(1, 5, rows) * 0.25
    return df


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--subgroups", type=int, default=8)
    args = parser.parse_args(argv)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    jobs = sorted({1, 2, min(8, cpus), cpus})
    df = frame(args.rows, args.subgroups)
    subgroups = [c for c in df.columns if c.startswith("g")]
    warnings.simplefilter("ignore")
    print(f"# {args.rows:,} rows x {len(subgroups)} subgroups, n_jobs {jobs}, layer "
          f"{os.environ.get('NUMBA_THREADING_LAYER', 'default')}, "
          f"LD_LIBRARY_PATH={'set' if os.environ.get('LD_LIBRARY_PATH') else 'unset'}")
    failed = 0
    for kind, options in KINDS.items():
        start = time.perf_counter()
        results = [fastbias.evaluate(df, label="y", scores="s", subgroups=subgroups, n_jobs=n,
                                     **options) for n in jobs]
        same = all(r.table.equals(results[0].table)
                   and r.overall_auc.equals(results[0].overall_auc) for r in results[1:])
        if kind == "plain":
            from sklearn.metrics import roc_auc_score

            table = results[0].table.set_index("subgroup")
            for g in subgroups:
                member = (df[g] >= 0.5).to_numpy()
                ref = roc_auc_score(df["y"][member], df["s"][member])
                same &= abs(table.at[g, "subgroup_auc"] - ref) <= 1e-12
        failed += not same
        print(f"{kind:24s} {'same' if same else 'DIFFERENT'}  ({time.perf_counter() - start:.1f} s)",
              flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
