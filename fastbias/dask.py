"""Exact bias metrics on a Dask cluster (optional extra: ``pip install fastbias[distributed]``).

:func:`evaluate` runs the one-machine decomposition on Dask's own machinery:

1. one ``map_partitions`` binarises labels and subgroups once for all models
   (a compact frame: label, subgroup memberships packed in 64-bit words, weight, scores);
2. per model, Dask's ``set_index`` on the score range-partitions the rows
   (one shuffle; equal scores always land in the same partition);
3. one task per partition runs the Numba sweep on its rows and returns its
   cell counts and its within-partition pair counts (a few numbers per subgroup);
4. the driver combines them: the pairs between partitions are products of
   each partition's counts with the cumulative counts of all lower partitions
   (``O(partitions x subgroups)``).

The numbers are those of :func:`fastbias.evaluate` on the same rows: integer
counts are equal, so unweighted metrics are identical.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .prepare import _kernels as PK
from .prepare.encoded import encode_frame
from .sweep.chunks import chunk_counts
from .tables.result import EvaluationResult, result_from_chunks
from .validate.spec import ColumnSpec, column_spec, score_dtype

__all__ = ["evaluate"]

_LABEL = "label"
_WEIGHT = "weight"


def _word_columns(n_groups: int, exclude_missing: bool) -> list:
    """Columns of the packed subgroup codes: member bits, then unannotated bits."""
    n_words = (n_groups + 63) // 64
    names = [f"member{w}" for w in range(n_words)]
    if exclude_missing:
        names += [f"unannotated{w}" for w in range(n_words)]
    return names


def _score_column(k: int) -> str:
    return f"s{k}"


def _encode_partition(frame: pd.DataFrame, spec: ColumnSpec, partition_info=None) -> pd.DataFrame:
    """Compact, validated columns of one input partition (runs on the workers)."""
    where = ""
    if partition_info is not None and partition_info.get("number") is not None:
        where = f"in Dask partition {partition_info['number']}"
    rows = encode_frame(frame, spec, where)
    data = {_LABEL: rows.labels}
    if spec.weighted:
        data[_WEIGHT] = rows.weights
    member, missing = PK.pack_codes(rows.codes)
    words = [member] + ([missing] if spec.exclude_missing else [])
    names = _word_columns(len(spec.subgroups), spec.exclude_missing)
    for name, column in zip(names, (w[:, k] for w in words for k in range(w.shape[1]))):
        data[name] = column
    for k, values in enumerate(rows.scores):
        data[_score_column(k)] = values
    return pd.DataFrame(data, index=frame.index)


def _encoded_meta(spec: ColumnSpec, dtypes: pd.Series) -> pd.DataFrame:
    data = {_LABEL: np.zeros(0, np.bool_)}
    if spec.weighted:
        data[_WEIGHT] = np.zeros(0, np.float64)
    for name in _word_columns(len(spec.subgroups), spec.exclude_missing):
        data[name] = np.zeros(0, np.uint64)
    for k, model in enumerate(spec.models):
        data[_score_column(k)] = np.zeros(0, score_dtype(dtypes[model]))
    return pd.DataFrame(data)


def _partition_counts(frame: pd.DataFrame, n_groups: int, weighted: bool, exclude_missing: bool):
    """ChunkCounts of one score-range partition (its index holds the scores)."""
    if frame.shape[0] == 0:
        return None
    names = _word_columns(n_groups, exclude_missing)
    n_words = (n_groups + 63) // 64
    member = np.ascontiguousarray(frame[names[:n_words]].to_numpy(dtype=np.uint64))
    missing = (np.ascontiguousarray(frame[names[n_words:]].to_numpy(dtype=np.uint64))
               if exclude_missing else np.zeros((0, n_words), dtype=np.uint64))
    codes = PK.unpack_codes(member, missing, n_groups)
    weights = frame[_WEIGHT].to_numpy(dtype=np.float64) if weighted else None
    return chunk_counts(np.ascontiguousarray(frame.index.to_numpy()),
                        frame[_LABEL].to_numpy(dtype=np.bool_), codes, weights)


def evaluate(ddf, *, label: str, scores, subgroups, label_threshold: float = 0.5,
             subgroup_threshold: float = 0.5, missing_subgroup: str = "background",
             sample_weight: str | None = None, npartitions: int | None = None,
             divisions=None, persist: bool | None = None) -> EvaluationResult:
    """Bias metrics of a Dask DataFrame, exact and tie-aware, computed on the cluster.

    Uses the active scheduler: a ``dask.distributed.Client`` if one is
    connected, otherwise Dask's local default. The driver receives only a few
    numbers per partition and subgroup.

    Parameters
    ----------
    ddf : dask.dataframe.DataFrame
        One row per example (e.g. from ``dask.dataframe.read_parquet``).
    label, scores, subgroups, label_threshold, subgroup_threshold, missing_subgroup
        As in :func:`fastbias.evaluate`.
    sample_weight : str, optional
        Name of a column of non-negative row weights.
    npartitions : int, optional
        Partitions of the score-sorted data (passed to ``set_index``; default:
        as many as Dask chooses). More partitions mean smaller tasks; all
        rows with one score value always share a partition.
    divisions : sequence of float, or dict of model -> sequence, optional
        Score boundaries for ``set_index``; given, Dask skips its quantile
        pass over the data. They must cover every score (for scores in
        [0, 1], e.g. ``numpy.linspace(0, 1, 65)``); if they do not, the
        partitions overlap and a RuntimeError says so.
    persist : bool, optional
        Keep the compact encoded frame in cluster memory so that several
        models reuse it (default: only when there are several models).

    Returns
    -------
    EvaluationResult
        Laid out as from :func:`fastbias.evaluate`; ``settings["engine"]`` is ``"dask"``.

    Examples
    --------
    >>> import dask.dataframe as dd, fastbias
    >>> import fastbias.dask
    >>> df = fastbias.make_jigsaw_like(n_rows=20_000, n_identities=2, random_state=0)
    >>> ddf = dd.from_pandas(df, npartitions=4)
    >>> res = fastbias.dask.evaluate(ddf, label="toxicity", scores="model_fair",
    ...                              subgroups=["male", "female"])
    >>> ref = fastbias.evaluate(df, label="toxicity", scores="model_fair",
    ...                         subgroups=["male", "female"])
    >>> bool((res.table["subgroup_auc"] == ref.table["subgroup_auc"]).all())
    True
    """
    try:
        import dask
        import dask.dataframe as dd
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("fastbias.dask needs Dask: pip install 'fastbias[distributed]'") from error
    if not isinstance(ddf, dd.DataFrame):
        raise TypeError(f"ddf must be a dask.dataframe.DataFrame, got {type(ddf).__name__} "
                        f"(use fastbias.evaluate for a pandas DataFrame)")
    spec = column_spec(ddf.columns, label=label, scores=scores, subgroups=subgroups,
                       label_threshold=label_threshold, subgroup_threshold=subgroup_threshold,
                       missing_subgroup=missing_subgroup, sample_weight=sample_weight,
                       source="the Dask DataFrame")
    dtypes = ddf.dtypes
    for model in spec.models:
        dtype = dtypes[model]
        if pd.api.types.is_bool_dtype(dtype) or not pd.api.types.is_numeric_dtype(dtype):
            raise TypeError(f"score column {model!r} must be numeric scores, got dtype {dtype}")
    if npartitions is not None and (not isinstance(npartitions, (int, np.integer))
                                    or npartitions < 1):
        raise ValueError(f"npartitions must be a positive integer, got {npartitions!r}")

    if spec.weighted:  # one power-of-two scale for the weights of every partition
        weights = ddf[spec.sample_weight]
        if pd.api.types.is_numeric_dtype(dtypes[spec.sample_weight]) and \
                not pd.api.types.is_bool_dtype(dtypes[spec.sample_weight]):
            smallest, largest = dask.compute(weights.where(weights > 0).min(), weights.max())
            spec = spec.with_weight_range(float(smallest), float(largest))
    encoded = ddf[spec.columns].map_partitions(_encode_partition, spec,
                                               meta=_encoded_meta(spec, dtypes))
    if persist is None:
        persist = len(spec.models) > 1
    if persist:
        encoded = encoded.persist()

    n_groups = len(spec.subgroups)
    shared = [_LABEL, *([_WEIGHT] if spec.weighted else []),
              *_word_columns(n_groups, spec.exclude_missing)]
    per_model_tasks = []
    for k, model in enumerate(spec.models):
        model_divisions = divisions.get(model) if isinstance(divisions, dict) else divisions
        options = {}
        if npartitions is not None:
            options["npartitions"] = int(npartitions)
        if model_divisions is not None:
            options["divisions"] = sorted(float(x) for x in model_divisions)
        ranged = encoded[[*shared, _score_column(k)]].set_index(_score_column(k), **options)
        per_model_tasks.append([dask.delayed(_partition_counts)(part, n_groups, spec.weighted,
                                                                spec.exclude_missing)
                                for part in ranged.to_delayed()])
    per_model_chunks = dask.compute(*per_model_tasks)
    return result_from_chunks(spec, per_model_chunks, "dask")
