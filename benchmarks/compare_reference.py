"""fastbias against the per-subgroup sklearn/scipy loop, side by side in one run.

Builds the Jigsaw-sized synthetic set (1,804,875 rows, 24 identities, float32
scores with ties), checks both give the same numbers, and prints medians over
repeats and the ratio measured in this same run. Also measures a fresh
process's import + first call (Numba cache warm), a cold compile (empty cache)
and peak memory.

Usage::

    python benchmarks/compare_reference.py                # full size
    python benchmarks/compare_reference.py --rows 200000  # quicker
    python benchmarks/compare_reference.py --skip-reference --repeats 21
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import pandas as pd
from peak_memory import measure, save_inputs

import fastbias
from fastbias.sweep.first_call import wait_until_compiled
from fastbias.synthetic import JIGSAW_ROWS, make_jigsaw_like, to_arrays

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]


def reference_loop(df: pd.DataFrame, label: str, model: str, subgroups: list) -> pd.DataFrame:
    """What users run today: pandas subsets + sklearn.roc_auc_score + scipy.mannwhitneyu."""
    from scipy.stats import mannwhitneyu
    from sklearn.metrics import roc_auc_score

    def auc(frame):
        try:
            return roc_auc_score(frame[label], frame[model])
        except ValueError:
            return np.nan

    def normalized_mwu(background, subgroup):
        a = background[model].astype(np.float64)
        b = subgroup[model].astype(np.float64)
        if len(a) == 0 or len(b) == 0:
            return np.nan
        u, _ = mannwhitneyu(a, b, alternative="less")
        return u / (len(a) * len(b))

    records = []
    for g in subgroups:
        in_g = df[g]
        pos = df[label]
        records.append({
            "subgroup": g,
            "subgroup_auc": auc(df[in_g]),
            "bpsn_auc": auc(pd.concat([df[in_g & ~pos], df[~in_g & pos]])),
            "bnsp_auc": auc(pd.concat([df[in_g & pos], df[~in_g & ~pos]])),
            "negative_aeg": 0.5 - normalized_mwu(df[~in_g & ~pos], df[in_g & ~pos]),
            "positive_aeg": 0.5 - normalized_mwu(df[~in_g & pos], df[in_g & pos]),
        })
    return pd.DataFrame(records).set_index("subgroup")


def timed(fn, repeats: int):
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), times, out


def fresh_process_seconds(cache_dir: str | None) -> float:
    """Wall time of `import fastbias` + one bias_metrics call in a new process."""
    code = ("import time; t=time.perf_counter(); import numpy as np, fastbias; "
            "rng=np.random.default_rng(0); y=rng.random(1000)<0.3; "
            "s=rng.random(1000).astype(np.float32); g=rng.random((1000,3))<0.2; "
            "fastbias.bias_metrics(y,s,g); print(time.perf_counter()-t)")
    env = dict(os.environ)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = cache_dir
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    return float(out.stdout.strip().splitlines()[-1])


def peak_memory_mb(y, s, groups) -> tuple:
    """(input arrays MB, extra peak RSS MB of one bias_metrics call), in a fresh process
    (``benchmarks/peak_memory.py``: the child resets its peak RSS just before the call)."""
    with tempfile.TemporaryDirectory() as d:
        save_inputs(d, y, s, groups)
        return measure(d, "float32")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=JIGSAW_ROWS)
    p.add_argument("--identities", type=int, default=24)
    p.add_argument("--score-decimals", default="3",
                   help="round scores to this many decimals (ties), or 'none' for continuous scores")
    p.add_argument("--repeats", type=int, default=11, help="fastbias repeats (median reported)")
    p.add_argument("--reference-repeats", type=int, default=1)
    p.add_argument("--models", type=int, default=10, help="models for the multi-model timing")
    p.add_argument("--skip-reference", action="store_true")
    p.add_argument("--skip-subprocess", action="store_true",
                   help="skip fresh-process, cold-compile and memory measurements")
    args = p.parse_args(argv)

    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()}, numpy {np.__version__}, pandas {pd.__version__}")
    decimals = None if args.score_decimals.lower() == "none" else int(args.score_decimals)
    df = make_jigsaw_like(n_rows=args.rows, n_identities=args.identities, score_decimals=decimals,
                          random_state=0)
    subgroups = list(df.columns[1:1 + args.identities])
    y, s, groups = to_arrays(df, subgroups=subgroups)
    print(f"data: {len(df):,} rows, {len(subgroups)} subgroups, {y.mean():.1%} positive, "
          f"{groups.any(axis=1).sum():,} identity rows, {len(np.unique(s)):,} distinct scores "
          f"({s.dtype})")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fastbias.bias_metrics(y, s, groups)  # compile / load cache
        fastbias.evaluate(df, label="toxicity", scores="model_fair", subgroups=subgroups)
        # on an empty cache those calls counted in numpy while a child compiles the kernels:
        # time the kernels, not that first-call tier
        wait_until_compiled()
        fastbias.bias_metrics(y, s, groups)
        rows = []
        t_arr, _, table = timed(lambda: fastbias.bias_metrics(y, s, groups), args.repeats)
        rows.append(("fastbias.bias_metrics, arrays in", t_arr))
        t_df, _, res = timed(lambda: fastbias.evaluate(df, label="toxicity", scores="model_fair",
                                                       subgroups=subgroups), args.repeats)
        rows.append(("fastbias.evaluate, Jigsaw-layout DataFrame", t_df))
        shifted = [s + np.float32(0.001 * i) for i in range(args.models)]
        scores = {f"model_{i}": (v if decimals is None else np.round(v, decimals)).astype(np.float32)
                  for i, v in enumerate(shifted)}
        many = pd.concat([df[["toxicity", *subgroups]], pd.DataFrame(scores)], axis=1)
        t_many, _, _ = timed(lambda: fastbias.evaluate(many, label="toxicity", scores=list(scores),
                                                       subgroups=subgroups),
                             max(3, args.repeats // 3))
        rows.append((f"fastbias.evaluate, {args.models} models", t_many))

    for name, t in rows:
        print(f"{name:<48} median {t * 1e3:9.1f} ms")

    if not args.skip_reference:
        bool_df = pd.DataFrame({"toxicity": y, "model_fair": s})
        for j, g in enumerate(subgroups):
            bool_df[g] = groups[:, j]
        t_ref, _, ref = timed(lambda: reference_loop(bool_df, "toxicity", "model_fair", subgroups),
                              args.reference_repeats)
        diff = np.nanmax(np.abs(ref[METRICS].to_numpy() - table[METRICS].to_numpy()))
        print(f"{'sklearn/scipy per-subgroup loop':<48} median {t_ref * 1e3:9.1f} ms")
        print(f"max |fastbias - reference| over all metrics: {diff:.2e}")
        print(f"ratio reference / fastbias (arrays)    : {t_ref / t_arr:8.0f}x")
        print(f"ratio reference / fastbias (DataFrame) : {t_ref / t_df:8.0f}x")

    if not args.skip_subprocess:
        warm = [fresh_process_seconds(None) for _ in range(3)]
        print(f"fresh process, import + first call (1,000 rows), cache warm: median {np.median(warm):.2f} s")
        with tempfile.TemporaryDirectory() as cold_dir:
            cold = fresh_process_seconds(cold_dir)
        print(f"fresh process, import + first call (1,000 rows), empty cache: {cold:.2f} s "
              "(benchmarks/bench_first_use.py: at full size)")
        in_mb, extra_mb = peak_memory_mb(y, s, groups)
        print(f"peak extra memory of bias_metrics: {extra_mb:.0f} MB for {in_mb:.0f} MB of input "
              f"arrays ({extra_mb / in_mb:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
