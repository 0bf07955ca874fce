"""Threshold metrics: 100 thresholds against the point estimates alone, and the loop users
would write (sklearn's confusion_matrix per subgroup and background at each threshold).

Times ``fastbias.evaluate`` on a Jigsaw-sized synthetic set (1.8M rows, 24 identities),
interleaved run by run in one process, without thresholds, with one, and with a grid of
100 (``numpy.linspace(0, 1, 100)``, Wilson intervals), and prints medians and ratios. The
issue's target is 100 thresholds <= 1.5x the point estimates.

Usage::

    python benchmarks/bench_thresholds.py [--rows 1804875] [--repeat 5] [--reference-thresholds 2]
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
from benchmarks.bench_intersections import interleaved, print_medians  # noqa: E402
from fastbias.synthetic import JIGSAW_IDENTITIES  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_804_875)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--reference-thresholds", type=int, default=2)
    args = parser.parse_args()
    warnings.simplefilter("ignore")

    df = fastbias.make_jigsaw_like(n_rows=args.rows, n_identities=24, random_state=0)
    identities = list(JIGSAW_IDENTITIES)
    kwargs = dict(label="toxicity", scores="model_biased", subgroups=identities)
    grid = np.linspace(0, 1, 100)
    settings = {"point estimates": None, "1 threshold": [0.5], "100 thresholds": grid}
    for setting in settings.values():  # compile and warm up
        fastbias.evaluate(df, **kwargs, thresholds=setting)
    times = interleaved(settings, lambda setting: fastbias.evaluate(
        df, **kwargs, thresholds=setting), args.repeat)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()}; {args.rows:,} rows, 24 identities, "
          f"median of {args.repeat} interleaved runs of evaluate()\n")
    print_medians(times, "{:.3f}", what="evaluate(...)", base_name="the point estimates")

    if args.reference_thresholds:
        from sklearn.metrics import confusion_matrix
        y = (df["toxicity"] >= 0.5).to_numpy()
        s = df["model_biased"].to_numpy()
        masks = [(df[c] >= 0.5).to_numpy() for c in identities]
        start = time.perf_counter()
        for t in grid[:args.reference_thresholds]:
            predicted = s >= t
            for member in masks:
                confusion_matrix(y[member], predicted[member], labels=[False, True])
                confusion_matrix(y[~member], predicted[~member], labels=[False, True])
        per = (time.perf_counter() - start) / args.reference_thresholds
        added = statistics.median(times["100 thresholds"]) - statistics.median(
            times["point estimates"])
        print(f"\nreference loop (sklearn confusion_matrix per subgroup and background): "
              f"{per:.2f} s per threshold, so {100 * per:.0f} s for the grid; fastbias adds "
              f"{added:.3f} s for it ({100 * per / max(added, 1e-9):.0f}x)")


if __name__ == "__main__":
    main()
