"""Peak extra memory of one ``bias_metrics`` call, by kind of call, kernels and first-call tier.

Each measurement runs in a new process that loads the Jigsaw-sized synthetic arrays
(1.8M x 24 unless ``--rows``) from ``.npy`` files, makes the same kind of call on the first
1,000 rows (so that imports and kernel loading are done), resets its peak resident memory
(Linux ``/proc/self/clear_refs``), makes the call, and reads the peak (``VmHWM``). The extra
memory is that peak minus the resident memory before the call, which counts every allocation
(numpy's, numba's and the interpreter's alike), as a multiple of the input arrays (labels,
scores, memberships, and the weights where there are weights).

``--tier kernels`` (default) runs on a warm Numba cache (the kernels, after compiling them once),
and makes the measured call once before measuring it (a call on 1,000 rows may take another
path and load other kernels, whose loading would count); ``--tier numpy`` on an empty one, so
that the call is answered by the first-call tier in numpy.

Each process runs with ``MALLOC_MMAP_THRESHOLD_=131072`` (unless the environment sets it):
glibc then returns every freed array of more than 128 KiB at once, so that the resident peak
follows the call's live arrays rather than what the allocator kept from earlier calls (with
its default, dynamic threshold, the figure moves by 10-20 MB with the process's history).

Usage::

    python benchmarks/peak_memory.py
    python benchmarks/peak_memory.py --tier numpy --variants weighted
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

from fastbias.synthetic import JIGSAW_ROWS, make_jigsaw_like, to_arrays

CHILD = """
import sys, warnings, numpy as np, fastbias
d, variant, n_boot = sys.argv[1], sys.argv[2], int(sys.argv[3])
y, s, g, w = (np.load(f"{d}/{k}.npy") for k in "ysgw")
kwargs, inputs = {}, y.nbytes + s.nbytes + g.nbytes
if variant == "float64":
    s = s.astype(np.float64)
    inputs += s.nbytes // 2
elif variant == "weighted":
    kwargs["sample_weight"] = w
    inputs += w.nbytes
elif variant == "delong":
    kwargs["ci"] = "delong"
elif variant == "bootstrap":
    kwargs.update(ci="bootstrap", n_boot=n_boot, random_state=0)
elif variant == "weighted-bootstrap":
    kwargs.update(ci="bootstrap", n_boot=n_boot, random_state=0, sample_weight=w)
    inputs += w.nbytes
elif variant == "significance":
    kwargs["significance"] = "holm"
elif variant == "significance-pairs":  # every pair of identities too: drawn tests
    kwargs.update(significance="holm", intersections=2)
elif variant == "weighted-significance":
    kwargs.update(significance="holm", sample_weight=w)
    inputs += w.nbytes
def small(a):
    return a[:1000]
warnings.simplefilter("ignore")
fastbias.bias_metrics(y[:1000], s[:1000], g[:1000],
                      **{k: small(v) if k == "sample_weight" else v for k, v in kwargs.items()})
if sys.argv[4] == "kernels":
    from fastbias.sweep.first_call import wait_until_compiled
    wait_until_compiled()
    # the measured call itself once: every kernel it takes is loaded (a call on fewer rows may
    # take another path, e.g. drawn permutation tests for its small cells, and load others)
    fastbias.bias_metrics(y, s, g, **kwargs)
def status_kb(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field))
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset the peak RSS (VmHWM) to the current RSS
base = status_kb("VmRSS:")
fastbias.bias_metrics(y, s, g, **kwargs)
peak = status_kb("VmHWM:")
print(inputs / 2**20, (peak - base) / 1024, flush=True)
from fastbias.sweep.first_call import wait_until_compiled
wait_until_compiled()  # before the empty cache directory is removed
"""

VARIANTS = ["float32", "float64", "weighted", "delong", "bootstrap", "weighted-bootstrap",
            "significance", "significance-pairs", "weighted-significance"]


def save_inputs(directory: str, y, s, g, w=None) -> None:
    """Write the arrays a measurement loads (``w``: random weights when not given)."""
    if w is None:
        w = np.random.default_rng(0).random(y.shape[0])
    for k, a in zip("ysgw", (y, s, g, w)):
        np.save(os.path.join(directory, f"{k}.npy"), a)


def measure(directory: str, variant: str, tier: str = "kernels", n_boot: int = 20,
            cache: str | None = None) -> tuple:
    """(input arrays MB, peak extra MB) of one call of ``variant`` in a new process, on the
    arrays of :func:`save_inputs` in ``directory`` (``cache``: the Numba cache directory; by
    default the usual one)."""
    env = dict(os.environ) if cache is None else dict(os.environ, NUMBA_CACHE_DIR=cache)
    env.setdefault("MALLOC_MMAP_THRESHOLD_", "131072")
    out = subprocess.run([sys.executable, "-c", CHILD, directory, variant, str(n_boot), tier],
                         env=env, capture_output=True, text=True, check=True)
    inputs, extra = out.stdout.split()[:2]
    return float(inputs), float(extra)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=JIGSAW_ROWS)
    parser.add_argument("--variants", nargs="+", default=VARIANTS, choices=VARIANTS)
    parser.add_argument("--tier", choices=["kernels", "numpy"], default="kernels")
    parser.add_argument("--n-boot", type=int, default=20)
    args = parser.parse_args(argv)
    y, s, g = to_arrays(make_jigsaw_like(n_rows=args.rows, random_state=0))
    w = np.random.default_rng(0).random(args.rows)
    print(f"# {args.rows:,} rows x {g.shape[1]} subgroups, {args.tier}\n")
    print("| call | inputs | peak extra | ratio |")
    print("|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as d, tempfile.TemporaryDirectory() as warm_cache:
        os.chmod(warm_cache, 0o700)
        save_inputs(d, y, s, g, w)
        for variant in args.variants:
            if args.tier == "numpy":
                with tempfile.TemporaryDirectory() as cold_cache:
                    os.chmod(cold_cache, 0o700)
                    inputs, extra = measure(d, variant, args.tier, args.n_boot, cold_cache)
            else:
                inputs, extra = measure(d, variant, args.tier, args.n_boot, warm_cache)
            print(f"| {variant} | {inputs:.0f} MB | {extra:.0f} MB | {extra / inputs:.2f}x |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
