"""First use out of core: `fastbias report` streaming a CSV in a fresh environment.

Writes the CSV of ``bounded_memory.py`` (``--rows``, default 2M, 24 identity columns), then
runs ``python -m fastbias report FILE ... --max-memory M`` in new processes, each with an
empty Numba cache (``NUMBA_CACHE_DIR`` a new private directory) and the first-call tier as
a user has it (``FASTBIAS_FIRST_CALL`` unset), then once more on the warm cache; prints the
wall times. With ``--trees A B``, each tree's fastbias (``PYTHONPATH``) in alternating
processes, so that two versions are compared side by side on the same machine.

Run: ``python benchmarks/streamed_first_use.py [--rows 2000000] [--repeats 2]
[--extra "--ci delong"] [--trees /tmp/base .]``.
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bounded_memory import write_csv  # noqa: E402


def run(tree: str, argv: list, cache: str) -> float:
    env = {k: v for k, v in os.environ.items() if k != "FASTBIAS_FIRST_CALL"}
    env.update(NUMBA_CACHE_DIR=cache, PYTHONPATH=os.path.abspath(tree))
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "fastbias", *argv], env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode:
        print(done.stderr)
        raise SystemExit(done.returncode)
    return wall


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--max-memory", default="450M")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--extra", default="")
    parser.add_argument("--trees", nargs="+", default=["."])
    args = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="fastbias-bench-")
    path = os.path.join(directory, "big.csv")
    _, _, members = write_csv(path, args.rows, 0)
    argv = ["report", path, "--label", "toxicity", "--scores", "score", "--subgroups",
            *members, "--out", os.path.join(directory, "r.json"), "--force", "--progress",
            "never", "--max-memory", args.max_memory, *shlex.split(args.extra)]
    print(f"# {args.rows:,} rows x {len(members)} identities, CSV "
          f"{os.path.getsize(path) / 2**20:.0f} MiB, --max-memory {args.max_memory} "
          f"{args.extra}; {os.cpu_count()} CPUs")
    cold = {tree: [] for tree in args.trees}
    warm = {tree: [] for tree in args.trees}
    for _ in range(args.repeats):
        for tree in args.trees:
            cache = tempfile.mkdtemp(prefix="fastbias-cache-")
            os.chmod(cache, 0o700)
            cold[tree].append(run(tree, argv, cache))
            warm[tree].append(run(tree, argv, cache))
            shutil.rmtree(cache, ignore_errors=True)
    for tree in args.trees:
        print(f"{tree}: empty cache {statistics.median(cold[tree]):.1f} s "
              f"({', '.join(f'{t:.1f}' for t in cold[tree])}); warm "
              f"{statistics.median(warm[tree]):.1f} s "
              f"({', '.join(f'{t:.1f}' for t in warm[tree])})")
    shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
