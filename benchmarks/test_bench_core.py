"""pytest-benchmark suites for the core (run: ``python -m pytest benchmarks/test_bench_core.py``).

Size follows FASTBIAS_BENCH_ROWS (default: the Jigsaw size, 1,804,875 rows, 24 identities).
The sklearn/scipy reference is benchmarked on the same data for a side-by-side ratio
(skip it with FASTBIAS_BENCH_SKIP_REFERENCE=1).
"""
import os
import warnings

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.synthetic import (
    JIGSAW_IDENTITIES,
    JIGSAW_ROWS,
    make_jigsaw_like,
    to_arrays,
)

ROWS = int(os.environ.get("FASTBIAS_BENCH_ROWS", JIGSAW_ROWS))


@pytest.fixture(scope="module")
def jigsaw():
    df = make_jigsaw_like(n_rows=ROWS, random_state=0)
    y, s, groups = to_arrays(df)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fastbias.bias_metrics(y[:1000], s[:1000], groups[:1000])  # compile / load the cache
    return df, y, s, groups


def test_bias_metrics_arrays(benchmark, jigsaw):
    _, y, s, groups = jigsaw
    table = benchmark(fastbias.bias_metrics, y, s, groups)
    assert table.shape[0] == groups.shape[1]


def test_bias_metrics_weighted(benchmark, jigsaw):
    _, y, s, groups = jigsaw
    w = np.random.default_rng(0).random(len(y))
    table = benchmark(fastbias.bias_metrics, y, s, groups, sample_weight=w)
    assert table.shape[0] == groups.shape[1]


def test_evaluate_dataframe(benchmark, jigsaw):
    df = jigsaw[0]
    res = benchmark(fastbias.evaluate, df, label="toxicity", scores="model_fair",
                    subgroups=JIGSAW_IDENTITIES)
    assert len(res.table) == len(JIGSAW_IDENTITIES)


def test_evaluate_two_models(benchmark, jigsaw):
    df = jigsaw[0]
    res = benchmark(fastbias.evaluate, df, label="toxicity", scores=["model_fair", "model_biased"],
                    subgroups=JIGSAW_IDENTITIES)
    assert len(res.table) == 2 * len(JIGSAW_IDENTITIES)


def test_overall_auc(benchmark, jigsaw):
    _, y, s, _ = jigsaw
    assert 0.5 < benchmark(fastbias.overall_auc, y, s) < 1.0


@pytest.mark.skipif(os.environ.get("FASTBIAS_BENCH_SKIP_REFERENCE") == "1",
                    reason="reference loop skipped")
def test_reference_sklearn_scipy_loop(benchmark, jigsaw):
    import sys

    sys.path.insert(0, os.path.dirname(__file__))
    from compare_reference import reference_loop

    _, y, s, groups = jigsaw
    frame = pd.DataFrame({"toxicity": y, "model_fair": s})
    for j, g in enumerate(JIGSAW_IDENTITIES):
        frame[g] = groups[:, j]
    out = benchmark.pedantic(reference_loop, args=(frame, "toxicity", "model_fair", JIGSAW_IDENTITIES),
                             rounds=1, iterations=1)
    assert out.shape[0] == len(JIGSAW_IDENTITIES)
