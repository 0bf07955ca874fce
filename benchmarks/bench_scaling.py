"""Rows per second of the paths beyond one in-memory DataFrame, and how the cost grows.

For each (rows, subgroups) it writes a Jigsaw-like Parquet data set batch by
batch (never all in memory; float32 label fraction, float32 identity columns
that are NaN where unannotated, a float32 score rounded to 3 decimals, so
heavy ties) as files of 2M rows under ``--workdir`` (reused when present), and
times, each in a fresh process so that peak memory is its own:

* ``streaming``: :func:`fastbias.streaming.evaluate_parquet` (``n_jobs`` = cores);
* ``dask``: :func:`fastbias.dask.evaluate` of ``dask.dataframe.read_parquet``
  on a ``LocalCluster`` (``--dask-workers`` processes, one thread each);
* ``dask-paths``: the same given the Parquet directory (fastbias reads the
  files itself: footers checked first, errors name the file);
* ``memory``: ``pandas.read_parquet`` + :func:`fastbias.evaluate` (the
  reference path), for the sizes that fit in memory.

Every timing includes reading the Parquet data. Results are printed as a
Markdown table and appended as JSON lines to ``--out``.

Usage::

    python benchmarks/bench_scaling.py --rows 20000000 --subgroups 4 24
    python benchmarks/bench_scaling.py --rows 2000000 20000000 100000000 --subgroups 24 \\
        --paths streaming dask
    python benchmarks/bench_scaling.py --rows 1000000 5000000 20000000 --subgroups 24 \\
        --files 32 --paths streaming dask dask-paths
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

FILE_ROWS = 2_000_000


def write_dataset(directory: Path, n_rows: int, n_subgroups: int,
                  file_rows: int = FILE_ROWS) -> Path:
    """Parquet files of ``file_rows`` rows each; skipped when the directory is complete."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    done = directory / "_complete"
    if done.exists():
        return directory
    directory.mkdir(parents=True, exist_ok=True)
    names = [f"identity_{j}" for j in range(n_subgroups)]
    schema = pa.schema([("toxicity", pa.float32()), *[(n, pa.float32()) for n in names],
                        ("score", pa.float32())])
    for index, start in enumerate(range(0, n_rows, file_rows)):
        n = min(file_rows, n_rows - start)
        rng = np.random.default_rng(index)
        annotated = rng.random(n) < 0.25
        toxic = rng.random(n) < 0.08
        columns = {"toxicity": np.where(toxic, rng.uniform(0.5, 1, n),
                                        rng.uniform(0, 0.45, n) * (rng.random(n) < 0.3))}
        logit = -2.6 + 3.0 * toxic + rng.normal(0, 1, n)
        shares = np.exp(np.linspace(np.log(0.002), np.log(0.04), n_subgroups))
        for j, name in enumerate(names):
            member = annotated & (rng.random(n) < shares[j] / 0.25)
            columns[name] = np.where(annotated, member.astype(np.float32), np.nan)
            logit = logit + 0.3 * member * (j % 2)
        columns["score"] = np.round(1 / (1 + np.exp(-logit)), 3)
        table = pa.table({k: np.asarray(v, dtype=np.float32) for k, v in columns.items()},
                         schema=schema)
        pq.write_table(table, directory / f"part-{index:05d}.parquet", row_group_size=500_000)
    done.touch()
    return directory


# a LocalCluster (its start and the worker imports not timed), then fastbias.dask.evaluate of
# {data}: a Dask DataFrame of the Parquet files, or their directory (fastbias reads the files)
_DASK_RUN = """
        import logging
        import dask.dataframe as dd
        from distributed import Client, LocalCluster
        import fastbias.dask
        logging.getLogger("distributed").setLevel(logging.ERROR)
        cluster = LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True,
                               dashboard_address=None, local_directory=TEMP)
        client = Client(cluster)
        client.run(lambda: __import__("fastbias.streaming"))  # worker imports are not timed
        start = time.perf_counter()
        result = fastbias.dask.evaluate({data}, label="toxicity", scores="score",
                                        subgroups=SUBGROUPS, progress=False)
        EXTRA["worker_peak_gib"] = max(client.run(
            lambda: __import__("resource").getrusage(0).ru_maxrss).values()) / 2**20
"""

RUNNERS = {
    "streaming": """
        from fastbias.streaming import evaluate_parquet
        result = evaluate_parquet(DATA, label="toxicity", scores="score", subgroups=SUBGROUPS,
                                  n_jobs=os.cpu_count(), temp_dir=TEMP)
    """,
    "dask": _DASK_RUN.format(
        data="""dd.read_parquet(DATA, columns=["toxicity", "score", *SUBGROUPS])"""),
    "dask-paths": _DASK_RUN.format(data="DATA"),
    "memory": """
        import pandas as pd
        import fastbias
        df = pd.read_parquet(DATA)
        result = fastbias.evaluate(df, label="toxicity", scores="score", subgroups=SUBGROUPS)
    """,
}


def run_path(path: str, data: Path, n_subgroups: int, temp: Path, workers: int) -> dict:
    """Run one path in a fresh process; returns seconds, peak RSS (this process) and the AUC."""
    body = textwrap.dedent(RUNNERS[path])
    script = "\n".join([
        "import json, os, resource, time, warnings",
        "warnings.simplefilter('ignore')",
        f"DATA, TEMP, WORKERS = {str(data)!r}, {str(temp)!r}, {workers}",
        f"SUBGROUPS = [f'identity_{{j}}' for j in range({n_subgroups})]",
        "import fastbias.streaming  # imports and Numba cache loads are not timed",
        "EXTRA = {}",
        "start = time.perf_counter()",
        body,
        "seconds = time.perf_counter() - start",
        "peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20",
        "print(json.dumps({'seconds': seconds, 'peak_gib': peak,",
        "                  'auc': float(result.overall_auc['score']),",
        "                  'bpsn': result.table['bpsn_auc'].round(12).tolist(), **EXTRA}))",
    ])
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr else "failed"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[20_000_000])
    parser.add_argument("--subgroups", type=int, nargs="+", default=[4, 24])
    parser.add_argument("--paths", nargs="+", default=["streaming", "dask", "memory"],
                        choices=sorted(RUNNERS))
    parser.add_argument("--memory-max-rows", type=int, default=20_000_000,
                        help="largest size run on the in-memory path")
    parser.add_argument("--files", type=int, default=None,
                        help="files per data set (default: files of 2M rows)")
    parser.add_argument("--dask-workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/fastbias-bench-scaling"))
    parser.add_argument("--out", type=Path, default=Path("bench_scaling.jsonl"))
    args = parser.parse_args()

    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"
    print(f"machine: {machine}; python {platform.python_version()}\n")
    print("| rows | subgroups | path | seconds | Mrows/s | peak GiB (driver / each worker) |")
    print("|---:|---:|---|---:|---:|---:|")
    for n_rows in args.rows:
        for n_subgroups in args.subgroups:
            file_rows = FILE_ROWS if args.files is None else -(-n_rows // args.files)
            data = write_dataset(args.workdir / f"rows{n_rows}_groups{n_subgroups}"
                                 f"_files{-(-n_rows // file_rows)}",
                                 n_rows, n_subgroups, file_rows)
            answers = {}
            for path in args.paths:
                if path == "memory" and n_rows > args.memory_max_rows:
                    continue
                temp = args.workdir / "tmp"
                temp.mkdir(exist_ok=True)
                out = run_path(path, data, n_subgroups, temp, args.dask_workers)
                record = {"rows": n_rows, "subgroups": n_subgroups, "path": path,
                          "machine": machine, "time": time.strftime("%Y-%m-%d %H:%M"), **out}
                with open(args.out, "a") as handle:
                    handle.write(json.dumps(record) + "\n")
                if "error" in out:
                    print(f"| {n_rows:,} | {n_subgroups} | {path} | error: {out['error']} | | |")
                    continue
                answers[path] = (out["auc"], out["bpsn"])
                peak = f"{out['peak_gib']:.2f}"
                if "worker_peak_gib" in out:
                    peak += f" / {out['worker_peak_gib']:.2f}"
                print(f"| {n_rows:,} | {n_subgroups} | {path} | {out['seconds']:.1f} | "
                      f"{n_rows / out['seconds'] / 1e6:.2f} | {peak} |", flush=True)
            if len({json.dumps(a) for a in answers.values()}) > 1:
                print(f"  WARNING: the paths disagree for {n_rows} rows, {n_subgroups} subgroups")


if __name__ == "__main__":
    main()
