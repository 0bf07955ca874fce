"""First use: import + the first call of each kind in a fresh process, cold and warm cache.

For each variant (float32 scores, float64 scores, sample weights, ``ci="delong"``,
``ci="bootstrap"`` with 20 replicates, or ``--n-boot``, ``significance="holm"``, and the
same with ``intersections=2``, whose small cells get drawn permutation tests) it starts a
new Python process with an empty private ``NUMBA_CACHE_DIR`` and measures, on the Jigsaw-sized synthetic arrays
(1.8M x 24 unless ``--rows``): the import, the first call (time to the answer),
and how long the kernels go on compiling in the background after the answer
(the script waits for them here, so that they are cached; a script need not);
then the same in further processes on the now warm cache (median of ``--warm-repeats``).
Prints a Markdown table, and whether numba imported scipy on the way: with scipy
installed, numba's first dispatch checks its BLAS (``import scipy.linalg``), about
0.13 s that an environment with only fastbias's core dependencies does not pay.
fastbias's own bytecode is compiled first (``compileall``), as ``pip install`` does: in a
development checkout under ``PYTHONDONTWRITEBYTECODE=1`` every process would otherwise
compile its sources again (about 0.05 s), which no installed copy pays.

Usage::

    python benchmarks/bench_first_use.py
    python benchmarks/bench_first_use.py --rows 200000 --variants float32 delong
"""
from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = """
import json, sys, time
t0 = time.perf_counter()
import numpy as np, fastbias
t1 = time.perf_counter()
from fastbias.synthetic import make_jigsaw_like, to_arrays
rows, variant, n_boot = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
y, s, g = to_arrays(make_jigsaw_like(n_rows=rows))
kwargs = {}
if variant == "float64":
    s = s.astype(np.float64)
elif variant == "weighted":
    kwargs["sample_weight"] = np.random.default_rng(0).random(rows)
elif variant == "delong":
    kwargs["ci"] = "delong"
elif variant == "bootstrap":
    kwargs.update(ci="bootstrap", n_boot=n_boot, random_state=0)
elif variant == "weighted-bootstrap":
    kwargs.update(ci="bootstrap", n_boot=n_boot, random_state=0,
                  sample_weight=np.random.default_rng(0).random(rows))
elif variant == "significance":
    kwargs["significance"] = "holm"
elif variant == "significance-pairs":  # every pair of identities too: small cells, drawn tests
    kwargs.update(significance="holm", intersections=2)
t2 = time.perf_counter()
fastbias.bias_metrics(y, s, g, **kwargs)
t3 = time.perf_counter()
from fastbias.sweep.first_call import wait_until_compiled
wait_until_compiled()  # (a script need not: its last child outlives it)
t4 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "first_call": t3 - t2, "compiling": t4 - t3,
                  "scipy": "scipy" in sys.modules}), flush=True)
"""

VARIANTS = ["float32", "float64", "weighted", "delong", "bootstrap", "weighted-bootstrap",
            "significance", "significance-pairs"]


def run_child(rows: int, variant: str, cache: str, n_boot: int = 20) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, str(rows), variant, str(n_boot)], env=env,
                         capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["process"] = time.perf_counter() - start
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_804_875)
    parser.add_argument("--variants", nargs="+", default=VARIANTS, choices=VARIANTS)
    parser.add_argument("--n-boot", type=int, default=20, help="replicates of the bootstrap")
    parser.add_argument("--warm-repeats", type=int, default=5,
                        help="warm-cache processes per variant (median)")
    args = parser.parse_args(argv)
    package = os.path.dirname(importlib.util.find_spec("fastbias").origin)
    compileall.compile_dir(package, quiet=1)  # (what pip does at install)
    print(f"# {args.rows:,} rows x 24 subgroups, load average {os.getloadavg()[0]:.2f}\n")
    print("| first call | cold: import + first call | cold: compiling after the answer | "
          "warm: import + first call (median, min-max) | scipy imported |")
    print("|---|---:|---:|---:|---|")
    for variant in args.variants:
        with tempfile.TemporaryDirectory() as cache:
            os.chmod(cache, 0o700)
            cold = run_child(args.rows, variant, cache, args.n_boot)
            warm = [run_child(args.rows, variant, cache, args.n_boot)
                    for _ in range(max(1, args.warm_repeats))]
        totals = [w["import"] + w["first_call"] for w in warm]
        print(f"| {variant} | {cold['import'] + cold['first_call']:.2f} s | "
              f"{cold['compiling']:.1f} s | {statistics.median(totals):.2f} s "
              f"({min(totals):.2f}-{max(totals):.2f}) | {'yes' if warm[0]['scipy'] else 'no'} |",
              flush=True)


if __name__ == "__main__":
    main()
