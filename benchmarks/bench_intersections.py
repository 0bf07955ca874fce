"""Intersections: the cost of every pair (and triple) of 24 identities against the 24 alone.

Times, side by side in one process and interleaved run by run,
``fastbias.evaluate`` on a Jigsaw-sized synthetic set (1.8M rows, 24
identities, identity columns NaN on 75% of the rows) with
``intersections=None``, ``2`` and ``3`` (and ``2`` with ``significance="holm"``),
and prints medians and ratios.
The issue's target is 276 pairs <= 3x the 24 alone. A reference for a few
pairs (sklearn ``roc_auc_score`` + scipy ``mannwhitneyu`` on the AND of two
columns, the loop users would write) gives the per-pair ratio.

Usage::

    python benchmarks/bench_intersections.py [--rows 1804875] [--repeat 5] [--reference-pairs 3]
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fastbias  # noqa: E402
from fastbias.synthetic import JIGSAW_IDENTITIES  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_804_875)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--reference-pairs", type=int, default=3)
    parser.add_argument("--streaming-repeat", type=int, default=3,
                        help="runs of evaluate_parquet with and without intersections (0: none)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")

    df = fastbias.make_jigsaw_like(n_rows=args.rows, n_identities=24, random_state=0)
    identities = list(JIGSAW_IDENTITIES)
    kwargs = dict(label="toxicity", scores="model_biased", subgroups=identities,
                  missing_subgroup="exclude")
    settings = {"24 alone": (None, None), "pairs": (2, None), "pairs and triples": (3, None),
                "pairs, significance='holm'": (2, "holm")}
    results = {}
    for name, (order, test) in settings.items():  # compile and warm up
        results[name] = fastbias.evaluate(df, **kwargs, intersections=order,
                                          significance=test).for_model()
    times = interleaved(settings, lambda setting: fastbias.evaluate(
        df, **kwargs, intersections=setting[0], significance=setting[1]), args.repeat)

    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()}; {args.rows:,} rows, 24 identities, "
          f"median of {args.repeat} interleaved runs\n")
    print("| subgroups | rows of the table | member rows | seconds (median) | x the 24 alone |")
    print("|---|---:|---:|---:|---:|")
    base = statistics.median(times["24 alone"])
    for name in settings:
        table = results[name]
        median = statistics.median(times[name])
        print(f"| {name} | {len(table)} | {int(table['subgroup_size'].sum()):,} | "
              f"{median:.3f} | {median / base:.2f} |")

    # the array entry point (masks already binary; unannotated rows count as background)
    y = (df["toxicity"] >= 0.5).to_numpy()
    s = df["model_biased"].to_numpy()
    masks = {c: (df[c] >= 0.5).to_numpy() for c in identities}
    def arrays(setting):
        return fastbias.bias_metrics(y, s, masks, intersections=setting[0],
                                     significance=setting[1])

    for setting in settings.values():  # warm up
        arrays(setting)
    array_times = interleaved(settings, arrays, args.repeat)
    print("\n`bias_metrics(y, s, dict of 24 masks, intersections=...)`:\n")
    print_medians(array_times, "{:.3f}")

    if args.streaming_repeat:
        streaming(df, kwargs, args.streaming_repeat)

    if args.reference_pairs:
        from scipy.stats import mannwhitneyu
        from sklearn.metrics import roc_auc_score

        pairs = [p for p in results["pairs"].index if " & " in p][:args.reference_pairs]
        start = time.perf_counter()
        for pair in pairs:
            a, b = pair.split(" & ")
            annotated = df[a].notna().to_numpy() & df[b].notna().to_numpy()
            g = (df[a].to_numpy() >= 0.5) & (df[b].to_numpy() >= 0.5)
            yk, sk, gk = y[annotated], s[annotated], g[annotated]
            roc_auc_score(yk[gk], sk[gk])
            roc_auc_score(np.r_[np.zeros((gk & ~yk).sum()), np.ones((~gk & yk).sum())],
                          np.r_[sk[gk & ~yk], sk[~gk & yk]])
            roc_auc_score(np.r_[np.zeros((~gk & ~yk).sum()), np.ones((gk & yk).sum())],
                          np.r_[sk[~gk & ~yk], sk[gk & yk]])
            mannwhitneyu(sk[~gk & ~yk], sk[gk & ~yk])
            mannwhitneyu(sk[~gk & yk], sk[gk & yk])
        per_pair = (time.perf_counter() - start) / len(pairs)
        n_pairs = sum(" & " in p for p in results["pairs"].index)
        pairs_only = statistics.median(times["pairs"]) - base
        print(f"\nreference loop (sklearn + scipy on the AND of two columns): {per_pair:.3f} s "
              f"per pair, so {per_pair * n_pairs:.0f} s for the {n_pairs} pairs kept; fastbias "
              f"adds {pairs_only:.3f} s for them: {per_pair * n_pairs / max(pairs_only, 1e-9):.0f}x")



def interleaved(settings: dict, call, repeat: int) -> dict:
    """Seconds of ``call(setting)`` for each named setting, the settings interleaved run by
    run (so a slow spell of a shared machine hits them alike)."""
    times = {name: [] for name in settings}
    for _ in range(repeat):
        for name, setting in settings.items():
            start = time.perf_counter()
            call(setting)
            times[name].append(time.perf_counter() - start)
    return times


def print_medians(times: dict, seconds: str, rows: dict | None = None, what: str = "subgroups",
                  base_name: str = "the 24 alone") -> None:
    """A Markdown table of the median seconds of each setting and its ratio to the first
    (``what`` heads the settings' column, ``base_name`` names the first)."""
    print(f"| {what} |" + (" rows of the table |" if rows else "")
          + f" seconds (median) | x {base_name} |")
    print("|---|" + ("---:|" if rows else "") + "---:|---:|")
    base = statistics.median(next(iter(times.values())))
    for name, values in times.items():
        median = statistics.median(values)
        shown = f" {rows[name]} |" if rows else ""
        print(f"| {name} |{shown} {seconds.format(median)} | {median / base:.2f} |")


def streaming(df, kwargs, repeat: int) -> None:
    """The out-of-core path on the same rows as 8 Parquet files: evaluate_parquet with
    intersections=None, 2 and 3 (one more reading pass chooses them; each spilled row
    carries one more byte per intersection kept) and 2 with significance="holm" (each bucket
    adds its placement sums), interleaved, medians."""
    import tempfile

    from fastbias.streaming import evaluate_parquet

    settings = {"24 alone": (None, None), "pairs": (2, None), "pairs and triples": (3, None),
                "pairs, significance='holm'": (2, "holm")}
    with tempfile.TemporaryDirectory() as directory:
        columns = ["toxicity", "model_biased", *kwargs["subgroups"]]
        for k in range(8):
            df[columns].iloc[k::8].to_parquet(os.path.join(directory, f"part-{k}.parquet"),
                                              index=False)
        rows = {name: len(evaluate_parquet(directory, **kwargs, intersections=order,
                                           significance=test).table)
                for name, (order, test) in settings.items()}   # compile and warm up
        times = interleaved(settings, lambda setting: evaluate_parquet(
            directory, **kwargs, intersections=setting[0], significance=setting[1]), repeat)
    print(f"\n`evaluate_parquet` (streaming, 8 files, default batch and bucket sizes), median "
          f"of {repeat}:\n")
    print_medians(times, "{:.2f}", rows)


if __name__ == "__main__":
    main()
