"""Calibration of significance="holm"/"bh": false flags on null data, power on planted bias.

Null data: scores depend on the label only (``y + N(0, 1)``, optionally rounded so that
ties are heavy), memberships are independent of both, so every subgroup's AUCs equal the
overall AUC and every AEG is 0 in the population. For each replicate the script records

* the per-test rate of raw p-values below alpha and below 0.001 (should be close to
  them), split by the smaller cell of the test: below PERMUTATION_BELOW rows the p-values
  are permutation ones, above it DeLong z-tests (whose far tails, which a Holm or BH
  adjustment reads, are poor for small cells);
* the family-wise rate: the share of replicates with any Holm flag, and with any BH flag
  (under a complete null the FDR is the family-wise rate), which should be <= alpha.

The permutation draws of the library are seeded by each test's own cell
(``significance.draw_seed``: reproducible p-values, other data drawing other subsets), so the
replicates' small-cell tests draw independently as the library runs them. (Until the
thirty-sixth session one seed served every data set, and this script set its own per
replicate; that measured the test over draws, not as shipped.)

Planted bias: subgroup g0's negatives get ``+delta`` on their scores; the share of
replicates in which g0's BPSN AUC is flagged, and in which any other subgroup is.

Run: ``python benchmarks/significance_calibration.py [--replicates 400] [--rows 20000]``.
Prints one table; RESULTS.md records a run.
"""
from __future__ import annotations

import argparse
import platform
import time
import warnings

import numpy as np

import fastbias
from fastbias.intervals.significance import PERMUTATION_BELOW, PERMUTATION_DRAWS_BELOW
from fastbias.metrics import METRIC_COLUMNS
from fastbias.metrics.definitions import METRIC_SAMPLES
from fastbias.validate.errors import UndefinedMetricWarning

CELL_COLUMNS = {("subgroup", 0): "subgroup_negatives", ("subgroup", 1): "subgroup_positives",
                ("background", 0): "background_negatives",
                ("background", 1): "background_positives"}
BINS = [(1, 10), (10, 30), (30, 100), (100, 300), (300, np.inf)]


def simulate(rng, rows, n_groups, ties, delta=0.0):
    y = rng.random(rows) < 0.3
    prevalence = np.geomspace(0.002, 0.3, n_groups)  # cells from a handful of rows to thousands
    groups = {f"g{j}": rng.random(rows) < p for j, p in enumerate(prevalence)}
    s = y + rng.normal(0, 1, rows)
    s = s + delta * (groups["g0"] & ~y)
    if ties:
        s = np.round(s, 1)
    return y, s, groups


def run(replicates, rows, n_groups, ties, alpha, seed):
    rng = np.random.default_rng(seed)
    raw_hits = {b: [0, 0, 0] for b in BINS}
    any_holm = any_bh = 0
    for _ in range(replicates):
        y, s, groups = simulate(rng, rows, n_groups, ties)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            holm = fastbias.bias_metrics(y, s, groups, significance="holm",
                                         confidence=1 - alpha)
            bh = fastbias.bias_metrics(y, s, groups, significance="bh", confidence=1 - alpha)
        for metric in METRIC_COLUMNS:
            x_cell, y_cell = METRIC_SAMPLES[metric]
            small = np.minimum(holm[CELL_COLUMNS[x_cell]], holm[CELL_COLUMNS[y_cell]])
            p = holm[f"{metric}_pvalue"].to_numpy()
            for lo, hi in BINS:
                sel = (small >= lo) & (small < hi) & np.isfinite(p)
                raw_hits[(lo, hi)][0] += int((p[sel] < alpha).sum())
                raw_hits[(lo, hi)][1] += int(sel.sum())
                raw_hits[(lo, hi)][2] += int((p[sel] < 0.001).sum())
        sig = [f"{m}_significant" for m in METRIC_COLUMNS]
        any_holm += bool(holm[sig].to_numpy().any())
        any_bh += bool(bh[sig].to_numpy().any())
    return raw_hits, any_holm / replicates, any_bh / replicates


def power(replicates, rows, n_groups, ties, alpha, delta, seed):
    rng = np.random.default_rng(seed)
    found = other = 0
    for _ in range(replicates):
        y, s, groups = simulate(rng, rows, n_groups, ties, delta)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            t = fastbias.bias_metrics(y, s, groups, significance="holm", confidence=1 - alpha)
        found += bool(t.loc["g0", "bpsn_auc_significant"])
        sig = t.drop(index="g0")[[f"{m}_significant" for m in METRIC_COLUMNS]]
        other += bool(sig.to_numpy().any())
    return found / replicates, other / replicates


def binomial_upper(k, n, z=1.96):
    """Wilson upper bound of a proportion (to judge 'rate <= alpha' against noise)."""
    if n == 0:
        return float("nan")
    p = k / n
    centre = p + z * z / (2 * n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre + half) / (1 + z * z / n)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=400)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--groups", type=int, default=12)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    print(f"# significance calibration: {args.replicates} replicates x {args.rows} rows x "
          f"{args.groups} subgroups (prevalence 0.2%..30%), alpha={args.alpha}; "
          f"{platform.machine()}, numpy {np.__version__}")
    for ties in (False, True):
        raw, holm, bh = run(args.replicates, args.rows, args.groups, ties, args.alpha, args.seed)
        label = "scores rounded to 0.1 (heavy ties)" if ties else "continuous scores"
        print(f"\nnull, {label}")
        print("| smaller cell of the test | test | tests | raw p < alpha | Wilson 95% upper "
              "| raw p < 0.001 | Wilson 95% upper |")
        print("|---|---|---|---|---|---|---|")
        for (lo, hi), (k, n, k3) in raw.items():
            name = f"{lo}+" if not np.isfinite(hi) else f"{lo}-{int(hi) - 1}"
            test = ("DeLong z" if lo >= PERMUTATION_BELOW else "permutation, exact moments"
                    if lo >= PERMUTATION_DRAWS_BELOW else "permutation, drawn")
            rate = k / n if n else float("nan")
            rate3 = k3 / n if n else float("nan")
            print(f"| {name} | {test} | {n} | {rate:.4f} | {binomial_upper(k, n):.4f} | "
                  f"{rate3:.4f} | {binomial_upper(k3, n):.4f} |")
        n = args.replicates
        print(f"family-wise false flag rate: Holm {holm:.4f} (Wilson upper "
              f"{binomial_upper(round(holm * n), n):.4f}), BH {bh:.4f} (Wilson upper "
              f"{binomial_upper(round(bh * n), n):.4f})")
    print("\nplanted bias: g0 (0.2% of rows) negatives shifted by delta; share of replicates")
    print("| delta | g0 BPSN AUC flagged (Holm) | any other subgroup flagged |")
    print("|---|---|---|")
    for delta in (0.5, 1.0, 2.0):
        found, other = power(max(args.replicates // 4, 20), args.rows, args.groups, False,
                             args.alpha, delta, args.seed + 1)
        print(f"| {delta} | {found:.3f} | {other:.3f} |")
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
