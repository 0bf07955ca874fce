"""Coarse sorting for out-of-core data: bucket edges by score range, single-score buckets."""
from __future__ import annotations

import numpy as np


def bucket_edges(sample: np.ndarray, n_buckets: int) -> np.ndarray:
    """Increasing bucket edges from a score sample; bucket b holds [edges[b-1], edges[b]).

    Edges are sample quantiles. A value that holds half a bucket's share of the
    sample or more is isolated in a single-score bucket [v, nextafter(v)).
    """
    if n_buckets <= 1 or sample.shape[0] == 0:
        return np.zeros(0)
    sample = np.sort(sample)
    m = sample.shape[0]
    quantiles = sample[(np.arange(1, n_buckets) * m) // n_buckets]
    values, counts = np.unique(sample, return_counts=True)
    heavy = values[counts * 2 * n_buckets >= m]
    return np.unique(np.concatenate([quantiles, heavy, np.nextafter(heavy, np.inf)]))


def tied_buckets(edges: np.ndarray) -> np.ndarray:
    """Indices of the buckets that can hold only one score value."""
    if edges.shape[0] < 2:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.nextafter(edges[:-1], np.inf) == edges[1:]) + 1


def byte_rows(values: np.ndarray) -> np.ndarray:
    """(n, bytes per row) uint8 view of a C-contiguous 1-D or 2-D array."""
    values = np.ascontiguousarray(values)
    return values.view(np.uint8).reshape(values.shape[0], -1)
