"""``fastbias.dask.evaluate`` on a real ``dask.distributed.LocalCluster``.

Two worker processes on loopback, started and stopped by this module. The
reference is the in-memory ``fastbias.evaluate`` (itself tested against the
brute force, sklearn and scipy) and, on small data, the brute force of
tests/reference.py. Unweighted counts are integers, so the metrics must agree
bit for bit; weighted sums are added in another order, hence 1e-12.
"""
import warnings

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias import UndefinedMetricWarning

from .reference import brute_force_metrics, pair_probability

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
fdask = pytest.importorskip("fastbias.dask")

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
TOL = 1e-12


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, host="127.0.0.1")
    dask_client = distributed.Client(cluster)
    try:
        yield dask_client
    finally:
        dask_client.close()
        cluster.close()


def quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        warnings.simplefilter("ignore", UserWarning)  # Dask's "large graph" notice
        return function(*args, **kwargs)


def assert_same_result(result, reference, exact):
    tol = {} if exact else {"rtol": TOL, "atol": TOL}
    pd.testing.assert_frame_equal(result.table, reference.table, check_exact=exact, **tol)
    pd.testing.assert_series_equal(result.overall_auc, reference.overall_auc, check_exact=exact,
                                   **tol)


@pytest.fixture(scope="module")
def jigsaw():
    """Jigsaw-like rows: NaN identities, heavy ties (two-decimal scores) spread over partitions."""
    df = fastbias.make_jigsaw_like(n_rows=40_000, n_identities=4, random_state=7,
                                   score_decimals=2)
    df["weight"] = np.random.default_rng(8).integers(1, 17, len(df)) / 4.0
    df["model_int"] = np.random.default_rng(9).integers(0, 5, len(df))  # five scores only
    return df


@pytest.mark.parametrize("missing_subgroup,weighted,models",
                         [("background", False, ["model_fair", "model_biased", "model_int"]),
                          ("exclude", True, ["model_biased", "model_int"])])
def test_cluster_equals_in_memory_evaluate(client, jigsaw, missing_subgroup, weighted, models):
    kwargs = dict(label="toxicity", scores=models, subgroups=list(jigsaw.columns[1:5]),
                  missing_subgroup=missing_subgroup, sample_weight="weight" if weighted else None)
    ddf = dd.from_pandas(jigsaw, npartitions=7)
    result = quiet(fdask.evaluate, ddf, npartitions=12, **kwargs)
    reference = quiet(fastbias.evaluate, jigsaw, **kwargs)
    assert_same_result(result, reference, exact=not weighted)
    assert result.settings["engine"] == "dask"


def test_empty_partitions_and_given_divisions(client, jigsaw):
    ddf = dd.from_pandas(jigsaw, npartitions=5)
    # scores have two decimals: (0.001, 0.009) and others hold no row at all
    divisions = [0.0, 0.001, 0.009, 0.02, 0.0201, 0.5, 0.5001, 0.93, 1.0]
    ranged = ddf[["model_fair"]].set_index("model_fair", divisions=divisions)
    sizes = ranged.map_partitions(len).compute().tolist()
    assert 0 in sizes and sum(sizes) == len(jigsaw)
    subgroups = list(jigsaw.columns[1:5])
    result = quiet(fdask.evaluate, ddf, label="toxicity", scores="model_fair",
                   subgroups=subgroups, divisions=divisions)
    reference = quiet(fastbias.evaluate, jigsaw, label="toxicity", scores="model_fair",
                      subgroups=subgroups)
    assert_same_result(result, reference, exact=True)


def test_small_data_equals_brute_force(client):
    rng = np.random.default_rng(12)
    n = 300
    df = pd.DataFrame({"y": rng.random(n) < 0.4,
                       "s": rng.integers(0, 6, n).astype(np.float32) / 5,
                       "a": rng.random(n) < 0.3,
                       "b": np.where(rng.random(n) < 0.2, np.nan, rng.random(n) < 0.4),
                       "w": rng.integers(0, 9, n) / 8.0})
    ddf = dd.from_pandas(df, npartitions=9)
    result = fdask.evaluate(ddf, label="y", scores="s", subgroups=["a", "b"],
                            missing_subgroup="exclude", npartitions=6, sample_weight="w")
    table = result.for_model("s")
    y, s, w = df["y"].to_numpy(), df["s"].to_numpy(), df["w"].to_numpy()
    for name in ["a", "b"]:
        kept = ~df[name].isna().to_numpy()
        member = df[name].to_numpy() == 1
        expected = brute_force_metrics(y[kept], s[kept], member[kept], w[kept])
        for metric in METRICS:
            assert table.loc[name, metric] == pytest.approx(expected[metric], abs=TOL)
    assert result.overall_auc["s"] == pytest.approx(pair_probability(s[y], s[~y], w[y], w[~y]),
                                                    abs=TOL)


@pytest.mark.jit_heavy
def test_more_than_64_subgroups(client):
    """Memberships travel as 64-bit words; 70 subgroups need two words per row."""
    rng = np.random.default_rng(13)
    n, k = 3_000, 70
    data = {f"g{j}": np.where(rng.random(n) < 0.2, np.nan, rng.random(n) < 0.1)
            for j in range(k)}
    df = pd.DataFrame({"y": rng.random(n) < 0.3, "s": np.round(rng.random(n), 2), **data})
    subgroups = [f"g{j}" for j in range(k)]
    result = quiet(fdask.evaluate, dd.from_pandas(df, npartitions=3), label="y", scores="s",
                   subgroups=subgroups, missing_subgroup="exclude", npartitions=4)
    reference = quiet(fastbias.evaluate, df, label="y", scores="s", subgroups=subgroups,
                      missing_subgroup="exclude")
    assert_same_result(result, reference, exact=True)


def test_divisions_that_miss_scores_are_refused(client, jigsaw):
    ddf = dd.from_pandas(jigsaw, npartitions=4)
    with pytest.raises(RuntimeError, match="overlap in score"):
        fdask.evaluate(ddf, label="toxicity", scores="model_fair", subgroups=["male"],
                       divisions=[0.2, 0.5, 0.8])


def test_bad_input_is_named(client):
    df = pd.DataFrame({"y": [0, 1, 0, 1], "s": [0.1, np.nan, 0.3, 0.2], "g": [1, 0, 1, 0],
                       "text": ["a", "b", "c", "d"]})
    ddf = dd.from_pandas(df, npartitions=2)
    with pytest.raises(ValueError, match=r"score column 's' has 1 NaN.*Dask partition"):
        fdask.evaluate(ddf, label="y", scores="s", subgroups=["g"])
    with pytest.raises(KeyError, match=r"scores: column\(s\) \['t'\] not in the Dask DataFrame"):
        fdask.evaluate(ddf, label="y", scores="t", subgroups=["g"])
    with pytest.raises(TypeError, match="score column 'text' must be numeric"):
        fdask.evaluate(ddf, label="y", scores="text", subgroups=["g"])
    with pytest.raises(TypeError, match="must be a dask.dataframe.DataFrame"):
        fdask.evaluate(df, label="y", scores="s", subgroups=["g"])
