"""Coverage study: how often each interval method covers the true metric value.

Scores are simulated from known normal distributions, so every metric's true
value is known in closed form (for independent X ~ N(a, 1), Y ~ N(b, 1),
P(X > Y) = Phi((a - b) / sqrt 2)):

* background negatives ~ N(0, 1), background positives ~ N(MU_POS, 1);
* subgroup negatives ~ N(SHIFT_NEG, 1) (the model over-scores the subgroup's
  non-toxic rows), subgroup positives ~ N(MU_POS + SHIFT_POS, 1).

For each subgroup size (one data set per size, background fixed) we draw
``reps`` data sets, compute the 95% (``--confidence``) interval of each method
for the five metrics and the overall AUC, and report the empirical coverage
and the mean width. Expected: DeLong and the bootstrap close to nominal on
large subgroups (they are asymptotic), the Bernstein interval at or above
nominal everywhere (it is a finite-sample bound) and wider.

Run:  python benchmarks/coverage_study.py [--reps 1000] [--n-boot 500]
"""
from __future__ import annotations

import argparse
import math
import sys
import time
import warnings

import numpy as np
import pandas as pd

import fastbias
from fastbias.intervals import add_intervals
from fastbias.metrics import METRIC_COLUMNS
from fastbias.validate.errors import UndefinedMetricWarning

MU_POS = 1.5
SHIFT_NEG = 0.5
SHIFT_POS = -0.3
METHODS = ("delong", "bootstrap", "bernstein")
TARGETS = [*METRIC_COLUMNS, "overall_auc"]


def _p_above(mean_x: float, mean_y: float) -> float:
    """P(X > Y) for independent X ~ N(mean_x, 1), Y ~ N(mean_y, 1)."""
    return 0.5 * (1.0 + math.erf((mean_x - mean_y) / 2.0))  # Phi(d / sqrt 2) = (1 + erf(d/2)) / 2


def true_values(n_background: int, n_subgroup: int, prevalence: float) -> dict:
    """Closed-form truth of the five metrics (and the overall AUC's expectation)."""
    sub_neg, sub_pos = SHIFT_NEG, MU_POS + SHIFT_POS
    truth = {
        "subgroup_auc": _p_above(sub_pos, sub_neg),
        "bpsn_auc": _p_above(MU_POS, sub_neg),
        "bnsp_auc": _p_above(sub_pos, 0.0),
        "negative_aeg": 0.5 - _p_above(0.0, sub_neg),
        "positive_aeg": 0.5 - _p_above(MU_POS, sub_pos),
    }
    # overall AUC: positives and negatives are mixtures (background, subgroup) with
    # expected proportions n_background : n_subgroup in both classes
    f_sub = n_subgroup / (n_background + n_subgroup)
    pos = [(1 - f_sub, MU_POS), (f_sub, sub_pos)]
    neg = [(1 - f_sub, 0.0), (f_sub, sub_neg)]
    truth["overall_auc"] = sum(wp * wn * _p_above(mp, mn) for wp, mp in pos for wn, mn in neg)
    return truth


def simulate(rng: np.random.Generator, n_background: int, n_subgroup: int, prevalence: float):
    """One data set: labels, scores and the subgroup mask."""
    n = n_background + n_subgroup
    y = rng.random(n) < prevalence
    g = np.zeros(n, dtype=bool)
    g[n_background:] = True
    shift = np.where(g, np.where(y, SHIFT_POS, SHIFT_NEG), 0.0)
    s = rng.normal(size=n) + MU_POS * y + shift
    return y, s, g


def run_study(reps: int = 1000, n_boot: int = 500, sizes=(("small", 40), ("large", 2000)),
              n_background: int = 4000, prevalence: float = 0.5, confidence: float = 0.95,
              methods=METHODS, seed: int = 0, progress: bool = False) -> pd.DataFrame:
    """Coverage and mean width per (subgroup size, method, metric).

    Returns a tidy DataFrame with columns ``size``, ``subgroup_rows``,
    ``method``, ``metric``, ``coverage``, ``mean_width``, ``defined`` (the
    number of replications where the interval was defined) and ``reps``.
    """
    seeds = np.random.SeedSequence(seed).spawn(len(sizes))
    records = []
    for (label, n_subgroup), size_seed in zip(sizes, seeds):
        rng = np.random.default_rng(size_seed)
        truth = true_values(n_background, n_subgroup, prevalence)
        hits = {(m, t): 0 for m in methods for t in TARGETS}
        width = {(m, t): 0.0 for m in methods for t in TARGETS}
        defined = {(m, t): 0 for m in methods for t in TARGETS}
        start = time.perf_counter()
        for rep in range(reps):
            y, s, g = simulate(rng, n_background, n_subgroup, prevalence)
            boot_seed = int(rng.integers(2 ** 32))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UndefinedMetricWarning)
                table = fastbias.bias_metrics(y, s, {"g": g})
                for method in methods:
                    out = add_intervals(table, y, s, {"g": g}, method=method,
                                        confidence=confidence, n_boot=n_boot,
                                        random_state=boot_seed, progress=False)
                    for target in TARGETS:
                        if target == "overall_auc":
                            low, high = out.attrs["overall_auc_low"], out.attrs["overall_auc_high"]
                        else:
                            low = out.at["g", f"{target}_low"]
                            high = out.at["g", f"{target}_high"]
                        if np.isfinite(low) and np.isfinite(high):
                            key = (method, target)
                            defined[key] += 1
                            hits[key] += low <= truth[target] <= high
                            width[key] += high - low
            if progress and (rep + 1) % max(1, reps // 10) == 0:
                print(f"  {label}: {rep + 1}/{reps} ({time.perf_counter() - start:.0f}s)",
                      file=sys.stderr, flush=True)
        for (method, target), count in defined.items():
            records.append({
                "size": label, "subgroup_rows": n_subgroup, "method": method, "metric": target,
                "coverage": hits[(method, target)] / count if count else np.nan,
                "mean_width": width[(method, target)] / count if count else np.nan,
                "defined": count, "reps": reps,
            })
    return pd.DataFrame.from_records(records)


def summary_table(results: pd.DataFrame) -> pd.DataFrame:
    """Coverage and width side by side: index (size, metric), columns (quantity, method)."""
    wide = results.pivot_table(index=["size", "metric"], columns="method",
                               values=["coverage", "mean_width"], sort=False)
    return wide.reindex(columns=[(q, m) for q in ("coverage", "mean_width")
                                 for m in METHODS if (q, m) in wide.columns])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000, help="simulated data sets per size")
    parser.add_argument("--n-boot", type=int, default=500, help="bootstrap replicates")
    parser.add_argument("--small", type=int, default=40, help="rows of the small subgroup")
    parser.add_argument("--large", type=int, default=2000, help="rows of the large subgroup")
    parser.add_argument("--background", type=int, default=4000, help="background rows")
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    results = run_study(reps=args.reps, n_boot=args.n_boot,
                        sizes=(("small", args.small), ("large", args.large)),
                        n_background=args.background, confidence=args.confidence,
                        seed=args.seed, progress=True)
    se = math.sqrt(args.confidence * (1 - args.confidence) / args.reps)
    with pd.option_context("display.width", 200, "display.max_rows", 200,
                           "display.float_format", "{:.3f}".format):
        print(f"Coverage of {args.confidence:.0%} intervals over {args.reps} simulated data sets "
              f"(Monte Carlo standard error of a coverage near nominal: {se:.3f}); "
              f"bootstrap with {args.n_boot} replicates; background {args.background} rows.")
        print(summary_table(results))
    print(f"total {time.perf_counter() - start:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
