"""Model-selection loop benchmarks: BiasEvaluator on the Jigsaw-sized synthetic set.

Targets (issue 5; 2 cores, 1,804,875 rows x 24 subgroups): ``final_metric``
<= 60 ms a call after preparation, 100 calls in a loop <= 6 s, ``metrics_many``
on 10 models <= 0.8 s.

Two ways to run it::

    python benchmarks/bench_evaluator.py                 # script: medians over repeats
    python benchmarks/bench_evaluator.py --rows 200000 --repeats 5
    python -m pytest benchmarks/bench_evaluator.py       # pytest-benchmark suite

The script prints wall-clock medians (and the minimum) and, for single calls,
the calling thread's CPU time, which is less disturbed by other processes on a
shared machine. The load average is printed alongside.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings

import numpy as np
import pytest

import fastbias
from fastbias.evaluator import BiasEvaluator
from fastbias.synthetic import JIGSAW_ROWS, make_jigsaw_like, to_arrays

ROWS = int(os.environ.get("FASTBIAS_BENCH_ROWS", JIGSAW_ROWS))


def model_scores(df, n_models: int, seed: int = 0) -> list:
    """``n_models`` float32 score vectors with ties: the two synthetic models and noisy variants."""
    rng = np.random.default_rng(seed)
    base = [df["model_fair"].to_numpy(), df["model_biased"].to_numpy()]
    out = []
    for j in range(n_models):
        s = base[j % 2].astype(np.float64)
        if j >= 2:
            s = np.clip(s + rng.normal(0.0, 0.02 * j, s.size), 0.0, 1.0)
        out.append(np.round(s, 3).astype(np.float32))
    return out


def prepare(rows: int = ROWS, n_models: int = 10):
    df = make_jigsaw_like(n_rows=rows, random_state=0)
    y, _, groups = to_arrays(df)
    return y, groups, model_scores(df, n_models)


# --------------------------------------------------------------------------- pytest-benchmark

@pytest.fixture(scope="module")
def jigsaw():
    y, groups, scores = prepare()
    evaluator = BiasEvaluator(y, groups)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        evaluator.final_metric(scores[0])  # load the compiled kernels
    return y, groups, scores, evaluator


def test_prepare(benchmark, jigsaw):
    y, groups, _, _ = jigsaw
    ev = benchmark.pedantic(BiasEvaluator, args=(y, groups), rounds=3, iterations=1)
    assert ev.n_rows == y.shape[0]


def test_final_metric(benchmark, jigsaw):
    _, _, scores, ev = jigsaw
    value = benchmark(ev.final_metric, scores[0])
    assert 0.5 < value < 1.0


def test_final_metric_100_calls(benchmark, jigsaw):
    _, _, scores, ev = jigsaw

    def loop():
        for i in range(100):
            ev.final_metric(scores[i % len(scores)])

    benchmark.pedantic(loop, rounds=3, iterations=1)


def test_metrics_many_10_models(benchmark, jigsaw):
    _, _, scores, ev = jigsaw
    res = benchmark.pedantic(ev.metrics_many, args=(scores,), rounds=5, iterations=1)
    assert len(res.models) == 10


def test_final_metric_on_a_fold(benchmark, jigsaw):
    y, _, scores, ev = jigsaw
    fold = np.arange(0, y.shape[0], 5)
    fold_scores = scores[0][fold]
    ev.final_metric(fold_scores, index=fold)  # prepare the fold once
    benchmark(ev.final_metric, fold_scores, index=fold)


# --------------------------------------------------------------------------- script

def _median_times(fn, repeats: int, clock=time.perf_counter):
    times = []
    for _ in range(repeats):
        start = clock()
        fn()
        times.append(clock() - start)
    return statistics.median(times), min(times)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=ROWS)
    parser.add_argument("--repeats", type=int, default=21)
    args = parser.parse_args(argv)

    t0 = time.perf_counter()
    y, groups, scores = prepare(args.rows)
    print(f"data: {args.rows:,} rows x {groups.shape[1]} subgroups, 10 float32 models "
          f"(generated in {time.perf_counter() - t0:.1f} s); cpus={os.cpu_count()}; "
          f"load average {os.getloadavg()[0]:.1f}")
    t0 = time.perf_counter()
    ev = BiasEvaluator(y, groups)
    print(f"BiasEvaluator(...) preparation: {time.perf_counter() - t0:.2f} s (first call in the "
          f"process, includes loading the compiled kernels)")
    ev.final_metric(scores[0])
    ev.metrics_many(scores[:2])

    rows = []

    def record(name, fn, repeats, target=None, cpu=False):
        wall_med, wall_min = _median_times(fn, repeats)
        line = f"{name:<44} median {wall_med * 1e3:9.1f} ms   min {wall_min * 1e3:9.1f} ms"
        if cpu:
            cpu_med, _ = _median_times(fn, repeats, time.thread_time)
            line += f"   thread CPU median {cpu_med * 1e3:7.1f} ms"
        if target is not None:
            line += f"   target <= {target * 1e3:.0f} ms"
        rows.append(line)
        print(line, flush=True)

    r = args.repeats
    record("final_metric(y_score)", lambda: ev.final_metric(scores[0]), r, 0.060, cpu=True)
    record("score(y_score, 'min_bpsn_auc')", lambda: ev.score(scores[1], "min_bpsn_auc"), r,
           cpu=True)
    record("metrics(y_score) (the table)", lambda: ev.metrics(scores[0]), r, cpu=True)

    def loop():
        for i in range(100):
            ev.final_metric(scores[i % len(scores)])

    record("100 x final_metric in a loop", loop, max(3, r // 7), 6.0)
    record("metrics_many(10 models)", lambda: ev.metrics_many(scores), max(3, r // 3), 0.8)
    record("scores_many(10 models, ['final'])", lambda: ev.scores_many(scores), max(3, r // 3))
    fold = np.arange(0, args.rows, 5)
    fold_scores = scores[0][fold]
    t0 = time.perf_counter()
    ev.final_metric(fold_scores, index=fold)
    elapsed = time.perf_counter() - t0
    print(f"first call on a 1/5 fold (prepares the fold): {elapsed * 1e3:.1f} ms")
    record("final_metric(fold scores, index=fold) (1/5)",
           lambda: ev.final_metric(fold_scores, index=fold), r, cpu=True)
    s64 = scores[0].astype(np.float64)
    record("final_metric(float64 scores)", lambda: ev.final_metric(s64), r, cpu=True)
    weights = np.random.default_rng(0).uniform(0.5, 2.0, args.rows)
    ev_w = BiasEvaluator(y, groups, sample_weight=weights)
    ev_w.final_metric(scores[0])
    record("weighted final_metric", lambda: ev_w.final_metric(scores[0]), max(3, r // 3), cpu=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        record("for comparison: bias_metrics + final_metric",
               lambda: fastbias.final_metric(fastbias.bias_metrics(y, scores[0], groups)),
               max(3, r // 3), cpu=True)
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
