"""Peak memory of `fastbias report` on a CSV larger than memory allows, and its exactness.

Writes a CSV of ``--rows`` rows (default 100M, about 3.3 GiB): a 0/1 label, one model's
scores rounded to 4 decimals (heavy ties, as real scores often are), and 24 identity columns
in the Jigsaw style (mostly empty; an annotated value is a fraction in tenths). Then

1. runs ``python -m fastbias report FILE ... --out result.json`` in a child process
   (``--max-memory`` as given, default: none, so half the available memory) and records
   its peak resident memory (``ru_maxrss`` of the child) and wall time;
2. computes the same metrics in memory with ``fastbias.bias_metrics`` on the arrays the
   CSV was written from, and checks that every metric in the CLI's JSON equals it exactly.

Run: ``python benchmarks/bounded_memory.py [--rows 100000000] [--max-memory 4G]``.
Needs pyarrow (the CSV is written with pyarrow.csv, which is fast) and disk for the file
and the spill files (about 2 x the file). RESULTS.md records a run.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time

import numpy as np

from fastbias.synthetic import JIGSAW_IDENTITIES

CHUNK = 2_000_000
WRAPPER = """
import atexit, json, runpy, sys
def peak():
    with open("/proc/self/status") as status:
        print(next(line for line in status if line.startswith("VmHWM:")).strip(),
              file=sys.stderr)
atexit.register(peak)
sys.argv = json.loads(sys.argv[1])
runpy.run_module("fastbias", run_name="__main__", alter_sys=True)
"""


def write_csv(path: str, rows: int, seed: int, write: bool = True):
    """Write the file in chunks; return (labels, scores, memberships) as written (with
    ``write=False`` only the arrays, for a file written before with the same arguments)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    rng = np.random.default_rng(seed)
    names = list(JIGSAW_IDENTITIES[:24])
    labels = np.empty(rows, dtype=bool)
    scores = np.empty(rows, dtype=np.float64)
    members = {name: np.zeros(rows, dtype=bool) for name in names}
    prevalence = np.geomspace(0.002, 0.05, len(names))
    writer = None
    with open(path, "wb" if write else "rb") as handle:
        for start in range(0, rows, CHUNK):
            n = min(CHUNK, rows - start)
            y = rng.random(n) < 0.08
            s = np.round(np.clip(0.5 * y + rng.normal(0.25, 0.15, n), 0, 1), 4)
            columns = {"toxicity": y.astype(np.int8), "score": s}
            for name, p in zip(names, prevalence):
                annotated = rng.random(n) < 4 * p
                value = np.round(rng.random(n) * (rng.random(n) < 0.5), 1)
                columns[name] = (value, ~annotated)
                members[name][start:start + n] = annotated & (value >= 0.5)
            biased = members[names[0]][start:start + n] & ~y  # one subgroup's negatives score high
            s = np.where(biased, np.round(np.clip(s + 0.1, 0, 1), 4), s)
            columns["score"] = s
            labels[start:start + n] = y
            scores[start:start + n] = s
            if not write:
                continue
            table = pa.table({k: pa.array(v[0], mask=v[1]) if isinstance(v, tuple) else
                              pa.array(v) for k, v in columns.items()})
            if writer is None:
                writer = pacsv.CSVWriter(handle, table.schema)
            writer.write_table(table)
        if writer is not None:
            writer.close()
    return labels, scores, members


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--max-memory", default=None)
    parser.add_argument("--dir", default=None, help="where the CSV goes (default: a temp dir)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reuse", action="store_true",
                        help="keep a big.csv already in --dir (written with the same --rows "
                             "and --seed)")
    parser.add_argument("--extra", default="",
                        help="more arguments for the report command, one string split "
                             "as a shell would, e.g. \"--ci delong --significance holm\"")
    args = parser.parse_args()
    directory = args.dir or tempfile.mkdtemp(prefix="fastbias-bench-")
    path = os.path.join(directory, "big.csv")
    start = time.perf_counter()
    write = not (args.reuse and os.path.exists(path))
    labels, scores, members = write_csv(path, args.rows, args.seed, write)
    print(f"# {args.rows:,} rows, {os.path.getsize(path) / 2**30:.2f} GiB CSV "
          f"{'written' if write else 'rebuilt (arrays only)'} in "
          f"{time.perf_counter() - start:.0f} s; {platform.machine()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()}, numpy {np.__version__}")
    out = os.path.join(directory, "result.json")
    argv = ["fastbias", "report", path, "--label", "toxicity", "--scores", "score",
            "--subgroups", *members, "--out", out, "--force", "--progress", "never"]
    if args.max_memory:
        argv += ["--max-memory", args.max_memory]
    extra = shlex.split(args.extra)
    argv += extra
    # the child reports its own high-water mark (VmHWM: reset by exec, unlike ru_maxrss,
    # which would count the pages it shared with this process, arrays included, after fork)
    command = [sys.executable, "-c", WRAPPER, json.dumps(argv)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode:
        print(done.stderr)
        raise SystemExit(done.returncode)
    lines = done.stderr.splitlines()
    peak = int(next(line for line in lines if line.startswith("VmHWM:")).split()[1]) * 1024
    notes = [line for line in lines if line.strip() and not line.startswith("VmHWM:")]
    print(f"fastbias report (--max-memory {args.max_memory or 'default'}"
          f"{' ' + shlex.join(extra) if extra else ''}): peak RSS "
          f"{peak / 2**30:.2f} GiB, {wall:.0f} s")
    for line in notes:
        print("  stderr:", line)
    report = json.loads(open(out).read())
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        reference = __import__("fastbias").bias_metrics(labels, scores, members)
        in_memory = time.perf_counter() - start
    got = {row["subgroup"]: row for row in report["models"][0]["subgroups"]}
    metrics = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
    differ = [(g, m, got[g][m], reference.loc[g, m]) for g in members for m in metrics
              if not (got[g][m] == reference.loc[g, m]
                      or (got[g][m] is None and np.isnan(reference.loc[g, m])))]
    overall = report["models"][0]["overall_auc"]
    print(f"in-memory bias_metrics on the arrays: {in_memory:.1f} s; "
          f"{len(members) * len(metrics)} metrics compared, {len(differ)} differ; overall AUC "
          f"{overall!r} vs {reference.attrs['overall_auc']!r}")
    for item in differ[:10]:
        print("  differs:", item)
    # with --ci / --significance the rows carry more columns (intervals, p-values): not
    # compared above (no in-memory reference computed here), only counted where missing
    extras = [k for row in got.values() for k in row
              if k.endswith(("_low", "_high", "_se", "_pvalue", "_pvalue_adjusted"))]
    if extras:
        missing = [(g, k) for g, row in got.items() for k in row
                   if k.endswith(("_low", "_high", "_se", "_pvalue", "_pvalue_adjusted"))
                   and (row[k] is None or (isinstance(row[k], float) and np.isnan(row[k])))]
        print(f"interval/test columns: {len(extras)} values, {len(missing)} missing/NaN")
        for item in missing[:10]:
            print("  missing:", item)
    if not args.dir:
        os.remove(path)
        os.remove(out)


if __name__ == "__main__":
    main()
