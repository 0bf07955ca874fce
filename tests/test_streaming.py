"""The chunked decomposition and the out-of-core Parquet path (``fastbias.streaming``).

References: the O(n^2) brute-force pair counts of tests/reference.py (exact
decomposition on small data, any chunking, heavy ties, weights, unannotated
rows) and the in-memory ``fastbias.evaluate`` (itself tested against the
brute force, sklearn and scipy) on larger Parquet data. Unweighted counts are
integers, so metrics must agree bit for bit; weighted sums are added in a
different order, hence 1e-12 (absolute: the AEGs are differences near 0).
"""
import json
import math
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastbias
from fastbias import UndefinedMetricWarning
from fastbias.metrics.table import table_from_chunks
from fastbias.prepare import _kernels as CK
from fastbias.sort.buckets import bucket_edges as _bucket_edges
from fastbias.sort.buckets import tied_buckets as _tied_buckets
from fastbias.streaming import evaluate_parquet
from fastbias.sweep.chunks import chunk_counts, tied_chunk

from .reference import brute_force_metrics, pair_probability

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
TOL = 1e-12


# ----------------------------------------------------------------------------- helpers

def brute_force_table(y, s, codes, w=None):
    """Per-subgroup metrics by brute force; code -1 rows are outside that subgroup's universe."""
    out = {}
    for j in range(codes.shape[1]):
        kept = codes[:, j] >= 0
        out[j] = brute_force_metrics(y[kept], s[kept], codes[kept, j] == 1,
                                     None if w is None else w[kept])
    return pd.DataFrame(out).T[METRICS]


def split_at_score_cuts(s, cut_values):
    """Row index arrays of the chunks (-inf, c0), [c0, c1), ... (ties never split)."""
    chunk_of_row = np.searchsorted(np.sort(cut_values), s, side="right")
    return [np.flatnonzero(chunk_of_row == c) for c in range(len(cut_values) + 1)]


def quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return function(*args, **kwargs)


def assert_same_result(result, reference, exact):
    tol = {"rtol": 0, "atol": 0} if exact else {"rtol": TOL, "atol": TOL}
    pd.testing.assert_frame_equal(result.table, reference.table, check_exact=exact,
                                  **({} if exact else tol))
    pd.testing.assert_series_equal(result.overall_auc, reference.overall_auc, check_exact=exact,
                                   **({} if exact else tol))


# ----------------------------------------------------------------------------- decomposition

@st.composite
def chunked_data(draw):
    n = draw(st.integers(2, 60))
    n_groups = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    n_values = draw(st.sampled_from([1, 2, 3, 5, 50]))
    weighted = draw(st.booleans())
    exclude = draw(st.booleans())
    n_cuts = draw(st.integers(0, 6))
    rng = np.random.default_rng(seed)
    s = rng.integers(0, n_values, n).astype(np.float64) / 4
    y = rng.random(n) < rng.uniform(0.05, 0.95)
    codes = (rng.random((n, n_groups)) < rng.uniform(0.05, 0.7)).astype(np.int8)
    if exclude:
        codes[rng.random((n, n_groups)) < 0.3] = -1
    w = rng.integers(0, 9, n) / 8.0 if weighted else None  # dyadic: exact sums
    cuts = rng.uniform(-0.2, n_values / 4 + 0.2, n_cuts)
    return y, s, codes, w, cuts


@settings(max_examples=150, deadline=None)
@given(chunked_data())
def test_combined_chunks_equal_brute_force(data):
    y, s, codes, w, cuts = data
    chunks = []
    for rows in split_at_score_cuts(s, cuts):
        chunks.append(chunk_counts(s[rows], y[rows], np.ascontiguousarray(codes[rows]),
                                   None if w is None else w[rows]))
    table, auc = quiet(table_from_chunks, chunks, ["a", "b", "c", "d"][:codes.shape[1]],
                       w is not None)
    expected = brute_force_table(y, s, codes, w)
    np.testing.assert_allclose(table[METRICS].to_numpy(float), expected.to_numpy(float),
                               rtol=0, atol=TOL)
    expected_auc = pair_probability(s[y], s[~y], None if w is None else w[y],
                                    None if w is None else w[~y])
    np.testing.assert_allclose(auc, expected_auc, rtol=0, atol=TOL)
    # the counts are those of the in-memory path
    for j in range(codes.shape[1]):
        kept = codes[:, j] >= 0
        assert table["subgroup_size"].iloc[j] == int((codes[:, j] == 1).sum())
        assert table["background_negatives"].iloc[j] == int((kept & (codes[:, j] == 0) & ~y).sum())


@settings(max_examples=100, deadline=None)
@given(chunked_data())
def test_single_score_chunks_from_totals_equal_sweep(data):
    """A chunk whose rows share one score: counts from cell totals alone equal its sweep."""
    y, s, codes, w, _ = data
    value = float(s[0])
    chunk_rows = np.flatnonzero(s == value)
    yc, cc = y[chunk_rows], codes[chunk_rows]
    wc = np.ones(chunk_rows.size) if w is None else w[chunk_rows]
    labels = np.stack([~yc, yc], axis=1)  # (n, 2) one-hot class
    class_rows = labels.sum(axis=0).astype(np.int64)
    cell_rows = np.einsum("ng,nc->gc", (cc == 1).astype(np.int64), labels.astype(np.int64))
    background_rows = np.einsum("ng,nc->gc", (cc == 0).astype(np.int64),
                                labels.astype(np.int64))

    def as_pairs(totals):  # exact sums as double-double (high, low) pairs on a last axis
        return np.stack([totals, np.zeros_like(totals)], axis=-1)

    def fsum_by_class(mask):
        return np.array([[math.fsum(wc[mask[:, g] & labels[:, c]]) for c in range(2)]
                         for g in range(mask.shape[1])]).reshape(mask.shape[1], 2)

    if w is None:
        tied = tied_chunk(value, class_rows, cell_rows, background_rows)
    else:
        tied = tied_chunk(value, class_rows, cell_rows, background_rows,
                          as_pairs(np.array([math.fsum(wc[~yc]), math.fsum(wc[yc])])),
                          as_pairs(fsum_by_class(cc == 1)), as_pairs(fsum_by_class(cc == 0)))
    swept = chunk_counts(s[chunk_rows], yc, np.ascontiguousarray(cc),
                         None if w is None else w[chunk_rows])
    if w is None:
        np.testing.assert_array_equal(tied.counts, swept.counts)
        np.testing.assert_array_equal(tied.backgrounds, swept.backgrounds)
        assert tied.twice_u == swept.twice_u
    else:  # double-double sums in different orders: equal to ~2**-106, compared at 1e-15
        np.testing.assert_allclose(tied.counts + tied.low.counts,
                                   swept.counts + swept.low.counts, rtol=1e-15, atol=0)
        np.testing.assert_allclose(tied.backgrounds, swept.backgrounds, rtol=1e-15, atol=0)
        assert math.isclose(tied.twice_u, swept.twice_u, rel_tol=1e-15)
    np.testing.assert_array_equal(tied.cell_rows, swept.cell_rows)
    np.testing.assert_array_equal(tied.universe_rows, swept.universe_rows)
    np.testing.assert_array_equal(tied.class_rows, swept.class_rows)
    assert tied.min_score == tied.max_score == swept.min_score == swept.max_score


def test_chunks_in_any_order_and_empty_chunks():
    rng = np.random.default_rng(3)
    n = 400
    s = np.round(rng.random(n), 1)
    y = rng.random(n) < 0.4
    codes = (rng.random((n, 3)) < 0.3).astype(np.int8)
    parts = split_at_score_cuts(s, np.array([0.05, 0.3, 0.3, 0.55, 2.0, 3.0]))
    assert any(p.size == 0 for p in parts)
    chunks = [chunk_counts(s[p], y[p], np.ascontiguousarray(codes[p])) for p in parts]
    assert any(c is None for c in chunks)
    table, auc = table_from_chunks(chunks[::-1], ["a", "b", "c"], False)
    reference = fastbias.bias_metrics(y, s, {k: codes[:, j] == 1 for j, k in enumerate("abc")})
    pd.testing.assert_frame_equal(table, reference, check_exact=True)
    assert auc == reference.attrs["overall_auc"]


def test_overlapping_chunks_are_refused():
    s = np.array([0.1, 0.2, 0.3, 0.4])
    y = np.array([False, True, False, True])
    codes = np.array([[1], [0], [1], [0]], dtype=np.int8)
    split_tie = [chunk_counts(s[:2], y[:2], codes[:2]), chunk_counts(s[1:], y[1:], codes[1:])]
    with pytest.raises(RuntimeError, match="overlap in score"):
        table_from_chunks(split_tie, ["g"], False)
    with pytest.raises(ValueError, match="no rows"):
        table_from_chunks([None, None], ["g"], False)


def test_bucket_edges_isolate_heavy_values():
    rng = np.random.default_rng(0)
    sample = np.concatenate([rng.random(9_000), np.full(3_000, 0.25), np.full(700, 0.75)])
    edges = _bucket_edges(sample, 10)
    assert np.all(np.diff(edges) > 0)
    tied = _tied_buckets(edges)
    isolated = {float(edges[b - 1]) for b in tied}
    assert isolated == {0.25, 0.75}  # each holds at least half a bucket (>= 635 of 12,700 draws)
    for b in tied:
        bucket = np.searchsorted(edges, sample, side="right") == b
        assert np.unique(sample[bucket]).size == 1
    assert _bucket_edges(sample, 1).size == 0


def test_weighted_bucket_edges_are_the_quantiles_of_the_rows_sampled():
    """Pieces sampled at different rates: each value stands for 1/rate rows."""
    rng = np.random.default_rng(1)
    low, high = rng.random(1_000) * 0.5, 0.5 + rng.random(1_000) * 0.5
    # 1,000 values of 1,000 rows of [0, 0.5) and 1,000 of 9,000 rows of [0.5, 1): 90% are high
    sample = np.concatenate([low, high])
    weights = np.concatenate([np.full(1_000, 1.0), np.full(1_000, 9.0)])
    edges = _bucket_edges(sample, 10, weights)
    assert edges.size == 9
    assert np.sum(edges < 0.5) == 0 and edges[0] == pytest.approx(0.5, abs=0.01)
    # with equal weights, the unweighted edges exactly
    assert np.array_equal(_bucket_edges(sample, 10, np.full(2_000, 3.0)), _bucket_edges(sample, 10))
    expected = np.sort(sample)[(np.arange(1, 10) * 2_000) // 10]
    assert np.array_equal(_bucket_edges(sample, 10), expected)


@pytest.mark.parametrize("n_groups", [1, 64, 70])
def test_packed_codes_round_trip(n_groups):
    rng = np.random.default_rng(n_groups)
    codes = rng.integers(-1, 2, (500, n_groups)).astype(np.int8)
    member, missing = CK.pack_codes(codes)
    assert member.shape == missing.shape == (500, (n_groups + 63) // 64)
    np.testing.assert_array_equal(CK.unpack_codes(member, missing, n_groups), codes)
    no_missing = np.maximum(codes, 0)
    np.testing.assert_array_equal(
        CK.unpack_codes(CK.pack_codes(no_missing)[0], np.zeros((0, member.shape[1]), np.uint64),
                        n_groups), no_missing)


# ----------------------------------------------------------------------------- Parquet

@pytest.fixture(scope="module")
def jigsaw_parquet(tmp_path_factory):
    """120k Jigsaw-like rows (NaN identities, two-decimal float32 scores) in three files."""
    df = fastbias.make_jigsaw_like(n_rows=120_000, n_identities=5, random_state=4,
                                   score_decimals=2)
    df["weight"] = np.random.default_rng(5).integers(1, 17, len(df)) / 4.0
    df["model_f64"] = np.round(np.random.default_rng(6).random(len(df)) ** 3, 3)
    directory = tmp_path_factory.mktemp("jigsaw")
    bounds = [0, 50_000, 50_001, 120_000]
    for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
        df.iloc[a:b].to_parquet(directory / f"part-{i}.parquet", row_group_size=20_000)
    return df, directory


@pytest.mark.jit_heavy
@pytest.mark.parametrize("missing_subgroup", ["background", "exclude"])
@pytest.mark.parametrize("weighted", [False, True])
def test_parquet_equals_in_memory_evaluate(jigsaw_parquet, missing_subgroup, weighted):
    df, directory = jigsaw_parquet
    kwargs = dict(label="toxicity", scores=["model_fair", "model_biased", "model_f64"],
                  subgroups=list(df.columns[1:6]), missing_subgroup=missing_subgroup,
                  sample_weight="weight" if weighted else None)
    result = quiet(evaluate_parquet, directory, batch_rows=15_000, bucket_rows=9_000,
                   n_jobs=2, **kwargs)
    reference = quiet(fastbias.evaluate, df, **kwargs)
    assert_same_result(result, reference, exact=not weighted)
    assert result.settings["engine"] == "streaming"


def test_parquet_heavy_ties_use_single_score_buckets(jigsaw_parquet):
    df, directory = jigsaw_parquet
    scores = df["model_fair"].to_numpy().astype(np.float64)
    # the bucketing the evaluation below uses does isolate heavy score values
    assert _tied_buckets(_bucket_edges(scores, 14)).size > 0
    files = sorted(directory.glob("*.parquet"))
    result = evaluate_parquet(files, label="toxicity", scores="model_fair",
                              subgroups=["male", "female"], bucket_rows=9_000, n_jobs=1)
    reference = fastbias.evaluate(df, label="toxicity", scores="model_fair",
                                  subgroups=["male", "female"])
    assert_same_result(result, reference, exact=True)


@pytest.mark.parametrize("bucket_rows", [1, 7, 10_000])
def test_tiny_parquet_equals_brute_force(tmp_path, bucket_rows):
    rng = np.random.default_rng(11)
    n = 150
    codes = (rng.random((n, 3)) < 0.3).astype(np.int8)
    df = pd.DataFrame({"y": rng.random(n) < 0.35,
                       "s": rng.integers(0, 4, n).astype(np.float32) / 2,
                       "g0": codes[:, 0].astype(bool), "g1": codes[:, 1].astype(float),
                       "g2": codes[:, 2]})
    df.to_parquet(tmp_path / "tiny.parquet")
    result = evaluate_parquet(tmp_path / "tiny.parquet", label="y", scores="s",
                              subgroups=["g0", "g1", "g2"], batch_rows=13, bucket_rows=bucket_rows)
    expected = brute_force_table(df["y"].to_numpy(), df["s"].to_numpy(), codes)
    np.testing.assert_allclose(result.for_model("s")[METRICS].to_numpy(float),
                               expected.to_numpy(float), rtol=0, atol=TOL)
    y, s = df["y"].to_numpy(), df["s"].to_numpy()
    assert result.overall_auc["s"] == pytest.approx(pair_probability(s[y], s[~y]), abs=TOL)


def test_parquet_errors_name_the_problem(tmp_path):
    df = pd.DataFrame({"y": [0, 1, 0, 1], "s": [0.1, np.nan, 0.3, 0.2], "g": [1, 0, 1, 0]})
    path = tmp_path / "bad.parquet"
    df.to_parquet(path)
    with pytest.raises(ValueError, match=r"score column 's' has 1 NaN.*rows 0\.\.3 of"):
        evaluate_parquet(path, label="y", scores="s", subgroups=["g"])
    with pytest.raises(KeyError, match=r"subgroups: column\(s\) \['h'\] not in the Parquet file"):
        evaluate_parquet(path, label="y", scores="s", subgroups=["g", "h"])
    with pytest.raises(TypeError, match="sample_weight must be a column name"):
        evaluate_parquet(path, label="y", scores="s", subgroups=["g"], sample_weight=[1, 2, 3, 4])
    with pytest.raises(ValueError, match="bucket_rows must be a positive integer"):
        evaluate_parquet(path, label="y", scores="s", subgroups=["g"], bucket_rows=0)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        evaluate_parquet(tmp_path / "absent.parquet", label="y", scores="s", subgroups=["g"])
    with pytest.raises(FileNotFoundError, match=r"no \*\.parquet file"):
        (tmp_path / "empty").mkdir()
        evaluate_parquet(tmp_path / "empty", label="y", scores="s", subgroups=["g"])


# ----------------------------------------------------------------------------- bounded memory

ROWS_20M = 20_000_000
GENERATE_BATCH = 2_000_000


def _write_20m_rows(path):
    """20M Jigsaw-like rows written batch by batch (never all in memory)."""
    schema = pa.schema([("toxicity", pa.float32()), ("male", pa.float32()),
                        ("female", pa.float32()), ("black", pa.float32()),
                        ("muslim", pa.float32()), ("score", pa.float32())])
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, ROWS_20M, GENERATE_BATCH):
            rng = np.random.default_rng(start)
            n = GENERATE_BATCH
            annotated = rng.random(n) < 0.3
            columns = {"toxicity": (rng.random(n) < 0.1).astype(np.float32)}
            logit = -2.5 + 3.0 * columns["toxicity"]
            for j, name in enumerate(["male", "female", "black", "muslim"]):
                member = annotated & (rng.random(n) < 0.05 * (j + 1))
                values = np.where(annotated, member.astype(np.float32), np.float32(np.nan))
                columns[name] = values.astype(np.float32)
                logit = logit + 0.4 * member
            score = 1 / (1 + np.exp(-(logit + rng.normal(0, 1, n))))
            columns["score"] = np.round(score, 3).astype(np.float32)  # heavy ties
            writer.write_table(pa.table(columns, schema=schema), row_group_size=500_000)


@pytest.mark.slow  # 10-45 s on 2 cores: writes 20M rows, streams them, checks vs in memory
@pytest.mark.jit_heavy
def test_20m_rows_with_peak_memory_under_2gb(tmp_path):
    path = tmp_path / "rows20m.parquet"
    _write_20m_rows(path)
    script = textwrap.dedent(f"""
        import json, warnings
        import pyarrow.parquet as pq
        from fastbias.streaming import evaluate_parquet
        warnings.simplefilter("ignore")
        kwargs = dict(label="toxicity", scores="score",
                      subgroups=["male", "female", "black", "muslim"],
                      missing_subgroup="exclude", n_jobs=2, temp_dir={str(tmp_path)!r})
        # warm-up on a small file: Numba compilation (on a cold cache) is not what is measured
        small = {str(tmp_path / "small.parquet")!r}
        pq.write_table(pq.ParquetFile({str(path)!r}).read_row_group(0), small)
        evaluate_parquet(small, batch_rows=100_000, bucket_rows=200_000, **kwargs)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the peak RSS (VmHWM) to the current RSS
        res = evaluate_parquet({str(path)!r}, batch_rows=500_000, bucket_rows=4_000_000, **kwargs)
        with open("/proc/self/status") as f:
            peak_kib = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
        res.table.to_pickle({str(tmp_path / "table.pkl")!r})
        print(json.dumps({{"peak_kib": peak_kib, "auc": float(res.overall_auc["score"])}}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    out = json.loads(done.stdout.strip().splitlines()[-1])
    peak_gib = out["peak_kib"] / 2 ** 20
    assert peak_gib < 2.0, f"peak memory {peak_gib:.2f} GiB"
    assert not list(tmp_path.glob("fastbias-*")), "spill files were left behind"
    (tmp_path / "small.parquet").unlink()

    table = pd.read_pickle(tmp_path / "table.pkl")
    df = pd.read_parquet(path)
    reference = quiet(fastbias.evaluate, df, label="toxicity", scores="score",
                      subgroups=["male", "female", "black", "muslim"], missing_subgroup="exclude")
    del df
    assert table["subgroup_size"].sum() == reference.table["subgroup_size"].sum()
    np.testing.assert_array_equal(table[["subgroup_negatives", "subgroup_positives",
                                         "background_negatives", "background_positives"]],
                                  reference.table[["subgroup_negatives", "subgroup_positives",
                                                   "background_negatives", "background_positives"]])
    np.testing.assert_array_equal(table[METRICS].to_numpy(float),
                                  reference.table[METRICS].to_numpy(float))
    assert out["auc"] == reference.overall_auc["score"]


def test_thinned_sample_keeps_the_weights_resolution_check(tmp_path, monkeypatch):
    """The first pass thins its score sample as the rows grow (past 400,000 rows at the
    default sizes): the thinned summary had lost the class weights, so a row too light for
    the significance tests' running sums passed unchecked in a large file and was refused
    in a small one. Small sample sizes make a 3,000-row file thin it several times."""
    from fastbias import streaming

    monkeypatch.setattr(streaming, "SAMPLE_LEAST", 100)
    monkeypatch.setattr(streaming, "SAMPLE_MOST", 100)
    rng = np.random.default_rng(3)
    n = 3_000
    df = pd.DataFrame({"y": rng.random(n) < 0.3, "s": rng.random(n), "g": rng.random(n) < 0.2,
                       "w": rng.uniform(0.5, 2.0, n)})
    df.loc[100, "w"] = 1e-40  # below 2**-90 of its class's weight, in the first batch
    path = tmp_path / "light.csv"
    df.to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"weight 1e-40 at row 100 .*below 2\*\*-90"):
        streaming.evaluate_csv(path, label="y", scores="s", subgroups=["g"], sample_weight="w",
                               significance="holm", batch_rows=500)


def test_a_label_read_as_booleans_in_one_batch_and_numbers_in_another_is_refused(tmp_path):
    """pandas reads each batch of a CSV file on its own: "True"/"False" labels in the first
    batches, fractions in the later ones. Read at once the column is refused; batch by
    batch the booleans were taken as classes and the fractions thresholded, silently."""
    rng = np.random.default_rng(0)
    n = 400
    y = np.where(rng.random(n) < 0.4, "True", "False").astype(object)
    y[200:] = np.round(rng.random(200), 1).astype(str)
    pd.DataFrame({"y": y, "s": rng.random(n), "g": rng.random(n) < 0.3}).to_csv(
        tmp_path / "d.csv", index=False)
    with pytest.raises(TypeError, match=r"label column 'y' holds numeric values in rows "
                                        r"200\.\.399 of .* but boolean values in rows 0\.\.199"):
        fastbias.evaluate_csv(tmp_path / "d.csv", label="y", scores="s", subgroups=["g"],
                              batch_rows=200)


@pytest.mark.parametrize("random_state, error", [(-1, ValueError), (1.5, TypeError),
                                                 ("seed", TypeError), (False, TypeError)])
def test_random_state_is_checked_by_name(tmp_path, random_state, error):
    pd.DataFrame({"y": [0, 1, 0, 1], "s": [0.1, 0.4, 0.35, 0.8], "g": [1, 0, 1, 0]}).to_csv(
        tmp_path / "d.csv", index=False)
    with pytest.raises(error, match=r"random_state must be None or a non-negative int"):
        fastbias.evaluate_csv(tmp_path / "d.csv", label="y", scores="s", subgroups=["g"],
                              random_state=random_state)


@pytest.mark.jit_heavy
def test_spill_kernels_compile_one_version_whatever_the_labels_flags(tmp_path):
    """The spill kernels read their inputs through read-only views: boolean labels (read
    read-only from the file) and 0/1 labels (made writable by the threshold) use the same
    compiled version of each, instead of one each."""
    from fastbias.sort import _kernels as SK
    from fastbias.sweep import _kernels as K

    rng = np.random.default_rng(4)
    n = 3_000
    scores = np.round(rng.random(n), 2)
    scores[rng.random(n) < 0.5] = 0.5  # a score of more rows than a bucket: a tied bucket
    y = rng.random(n) < 0.3
    frame = pd.DataFrame({"s": scores, "g": rng.random(n) < 0.3})
    seen = {}
    for kind, labels in (("bool", y), ("int", y.astype(np.int8))):
        frame.assign(y=labels).to_csv(tmp_path / f"{kind}.csv", index=False)
        fastbias.evaluate_csv(tmp_path / f"{kind}.csv", label="y", scores="s", subgroups=["g"],
                              batch_rows=500, bucket_rows=400)
        seen[kind] = (len(SK.gather_records.signatures), len(K.accumulate_tied_rows.signatures))
    assert seen["int"] == seen["bool"], seen
