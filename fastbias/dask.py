"""Exact bias metrics on a Dask cluster (optional extra: ``pip install fastbias[distributed]``).

:func:`evaluate` runs the one-machine decomposition on Dask's own machinery:

0. before any work, with a ``dask.distributed`` client: every worker must
   import fastbias at the client's version (a clear error names the workers
   otherwise); Parquet sources given as paths have every file's footer
   checked against the others (columns, types, label statistics);
1. a first pass reads the score (weight and label) columns, validates them
   and samples the scores; the sample's quantiles become the score boundaries
   (``divisions``) of the partitions, so Dask never runs its own quantile pass;
2. one ``map_partitions`` (or, for paths, one read per piece of row groups)
   binarises labels and subgroups once for all models (a compact frame:
   label, subgroup memberships packed in 64-bit words, weight, scores);
3. per model, Dask's ``set_index`` on the score range-partitions the rows
   (one shuffle; equal scores always land in the same partition);
4. one task per partition runs the Numba sweep on its rows and returns its
   cell counts and its within-partition pair counts (a few numbers per subgroup);
5. the driver combines them: the pairs between partitions are products of
   each partition's counts with the cumulative counts of all lower partitions
   (``O(partitions x subgroups)``).

While the cluster works, the client watches it: no worker for
``worker_timeout`` seconds, or every worker paused for memory for
``stall_timeout`` seconds, is an error rather than a hang; a lost worker
whose work Dask redoes is one line on the "fastbias" logger.

The numbers are those of :func:`fastbias.evaluate` on the same rows: integer
counts are equal, so unweighted metrics are identical.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import math
import numbers
import os
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ._version import __version__
from .intervals.chunked import counted_chunk
from .prepare import _kernels as PK
from .prepare.encoded import encode_frame, piece_labels
from .prepare.memberships import (
    add_combination_cells,
    check_intersections,
    choose_combinations,
    code_combination_cells,
)
from .sort.buckets import bucket_edges, merge_summaries, summarize_scores
from .tables.result import EvaluationResult, checked_extras, result_from_chunks
from .validate.categories import (
    chosen_features,
    feature_summary,
    merge_feature_summaries,
)
from .validate.columns import PieceWhere, booleans_and_numbers, first_non_numeric
from .validate.errors import collected_warnings
from .validate.parquet import ParquetPiece, ParquetSource, open_parquet, read_piece
from .validate.settings import check_sample_seed
from .validate.spec import ColumnSpec, column_spec, score_dtype
from .validate.subgroups import column_kinds, dtype_kind

__all__ = ["evaluate"]

logger = logging.getLogger("fastbias")

_LABEL = "label"
_WEIGHT = "weight"
#: rows of the score sample that sets the partition boundaries (at least; 2,000 per partition)
_SAMPLE_ROWS = 200_000
#: seconds between two looks at the cluster while it works
_POLL_SECONDS = 0.5


def _word_columns(n_groups: int, exclude_missing: bool) -> list:
    """Columns of the packed subgroup codes: member bits, then unannotated bits."""
    n_words = (n_groups + 63) // 64
    names = [f"member{w}" for w in range(n_words)]
    if exclude_missing:
        names += [f"unannotated{w}" for w in range(n_words)]
    return names


def _score_column(k: int) -> str:
    return f"s{k}"


def _encoded(frame, spec: ColumnSpec, where: str, index) -> pd.DataFrame:
    """Compact, validated columns of one piece of the input (runs on the workers)."""
    rows = encode_frame(frame, spec, where)
    data = {_LABEL: rows.labels}
    if spec.weighted:
        data[_WEIGHT] = rows.weights
    member, missing = PK.pack_codes(rows.codes)
    words = [member] + ([missing] if spec.exclude_missing else [])
    names = _word_columns(len(spec.row_names), spec.exclude_missing)
    for name, column in zip(names, (w[:, k] for w in words for k in range(w.shape[1]))):
        data[name] = column
    for k, values in enumerate(rows.scores):
        data[_score_column(k)] = values
    return pd.DataFrame(data, index=index)


def _check_score_dtypes(frame, spec: ColumnSpec, score_dtypes: list, where: str) -> None:
    """A partition whose scores read with another dtype than the DataFrame's meta (files that
    differ) would tie differently: refuse it, naming the partition."""
    for model, expected in zip(spec.models, score_dtypes):
        found = score_dtype(frame[model].dtype)
        if found != expected:
            raise TypeError(f"score column {model!r} reads as {found} {where} but as {expected} "
                            f"in the Dask DataFrame's meta (its files store different types?); "
                            f"give it one type first, e.g. ddf[{model!r}] = "
                            f"ddf[{model!r}].astype('float64')")


#: partitions read for an example of a column refused by its dtype (an error's path only)
EXAMPLE_PARTITIONS = 4


def _example_of(column) -> str:
    """`` (e.g. <value> at position <i> of Dask partition <p>)`` for a Dask column refused by
    its dtype alone: the first value that is not a number in the first partitions that hold
    one (as evaluate names one in memory; found by review: the message had no value), a
    number written as text only where none holds another value, or nothing where those
    partitions hold none."""
    as_text = ""  # (numbers written as text: named only where no partition holds a word)
    for number in range(min(column.npartitions, EXAMPLE_PARTITIONS)):
        values = column.partitions[number].compute()
        example = first_non_numeric(np.asarray(values.to_numpy(dtype=object, na_value=None),
                                               dtype=object))
        if example == "a non-numeric value":  # (none in this partition)
            continue
        if not example.endswith("(numbers written as text)"):
            return f" (e.g. {example} of Dask partition {number})"
        as_text = as_text or f" (e.g. {example} of Dask partition {number})"
    return as_text


def _refuse_duplicate_columns(columns, spec: ColumnSpec) -> None:
    """A column asked for that the Dask DataFrame holds twice is a ValueError naming the
    argument and the name, as :func:`fastbias.evaluate` says it (found by review: "the truth
    value of a Series is ambiguous")."""
    counts = pd.Index(columns).value_counts()
    asked = [("label", spec.label), *(("scores", m) for m in spec.models),
             *(("subgroups", g) for g in spec.subgroups),
             *(("sensitive_features", f) for f in spec.features),
             *([("sample_weight", spec.sample_weight)] if spec.weighted else [])]
    for argument, name in asked:
        if counts.get(name, 0) > 1:
            raise ValueError(f"{argument}: the DataFrame has {int(counts[name])} columns named "
                             f"{name!r}; rename them so that each name says which one is meant")


class _Failure:
    """A refusal of one partition or piece, kept until every one has run (:func:`_in_order`)."""

    def __init__(self, error: BaseException):
        self.error = error


def _captured(function, *args):
    """``function(*args)``, or its ValueError/TypeError/KeyError as a :class:`_Failure`: the
    partitions' checks run in the scheduler's order, and the first refusal met there need
    not be the first bad row (found by review: a NaN score in partition 2 was named where
    partition 1 held an earlier one)."""
    try:
        return function(*args)
    except (ValueError, TypeError, KeyError) as error:
        return _Failure(error)


def _in_order(results: list) -> list:
    """The partitions' results, or the refusal of the first partition (in the frame's order)
    that refused."""
    for result in results:
        if isinstance(result, _Failure):
            raise result.error
    return results


def _meta_kinds(spec: ColumnSpec, dtypes) -> tuple:
    """What the Dask DataFrame's meta (``dtypes``) says of the label and identity columns
    (``ColumnSpec.batch_kinds``): ``(name -> "boolean" or "numeric" of each column typed so,
    the columns whose values say it: object and categorical)``."""
    typed, by_values = {}, []
    for name in spec.batch_kinds().names:
        dtype = dtypes[name]
        kind = dtype_kind(dtype)
        if kind is not None:
            typed[name] = kind
        elif dtype == object or isinstance(dtype, pd.CategoricalDtype):
            by_values.append(name)
    return typed, by_values


#: where a partition's kinds are compared to, in messages
_META = "in the Dask DataFrame's meta (do its partitions or files store different types?)"


def _encode_partition(frame: pd.DataFrame, spec: ColumnSpec, score_dtypes: list,
                      meta_kinds: dict, partition_info=None) -> pd.DataFrame:
    where = ""
    if partition_info is not None and partition_info.get("number") is not None:
        where = f"in Dask partition {partition_info['number']}"
    _check_score_dtypes(frame, spec, score_dtypes, where)
    # a partition read with another type than the meta's (a file that differs: booleans in
    # one, numbers in another) would mean two things: refused, as in memory
    spec.batch_kinds().seeded(meta_kinds, _META).check(frame, where or "in a Dask partition")
    return _encoded(frame, spec, where, frame.index)


def _piece_where(piece: ParquetPiece) -> PieceWhere:
    """Where a piece lies, for messages, which then name the rows of its file."""
    return PieceWhere(f"in {piece.where()}", piece.first_row)


def _read_and_encode(piece: ParquetPiece, parquet: ParquetSource, spec: ColumnSpec):
    frame = read_piece(parquet, piece, spec.columns)
    return _encoded(frame, spec, _piece_where(piece), pd.RangeIndex(len(frame)))


def _encoded_meta(spec: ColumnSpec, score_dtypes: list) -> pd.DataFrame:
    data = {_LABEL: np.zeros(0, np.bool_)}
    if spec.weighted:
        data[_WEIGHT] = np.zeros(0, np.float64)
    for name in _word_columns(len(spec.row_names), spec.exclude_missing):
        data[name] = np.zeros(0, np.uint64)
    for k, dtype in enumerate(score_dtypes):
        data[_score_column(k)] = np.zeros(0, dtype)
    return pd.DataFrame(data)


def _frame_summary(frame, spec: ColumnSpec, sample_rows: int, seed: int, where: str,
                   score_dtypes: list | None = None, kind_columns=()):
    """``(ScoreSummary or None for no rows, column_kinds of kind_columns)`` of one piece."""
    if score_dtypes is not None:
        _check_score_dtypes(frame, spec, score_dtypes, where)
    for name in kind_columns:  # (one partition of both: named as in memory, found by review)
        if name in frame and frame[name].dtype == object:
            mixed = booleans_and_numbers(frame[name].to_numpy())
            if mixed is not None:
                raise TypeError(f"column {name!r} holds both booleans and numbers ({mixed}) "
                                f"{where}; write it one way")
    kinds = column_kinds(frame, kind_columns)
    if len(frame) == 0:
        return None, kinds
    return summarize_scores(frame, spec, list(range(len(spec.models))), None,
                            np.random.default_rng(seed), where, sample_rows,
                            check_labels=True), kinds


def _piece_summary(piece: ParquetPiece, parquet: ParquetSource, spec: ColumnSpec,
                   sample_rows: int, seed: int):
    columns = list(dict.fromkeys([spec.label, *spec.models,
                                  *([spec.sample_weight] if spec.weighted else [])]))
    frame = read_piece(parquet, piece, columns)
    return _frame_summary(frame, spec, sample_rows, seed, _piece_where(piece))


def _counting_spec(spec: ColumnSpec) -> ColumnSpec:
    """The columns that choose the intersections: the label and the identity columns."""
    return replace(spec, models=[], sample_weight=None, combinations=(), features=(),
                   feature_values=(), feature_combos=())


def _frame_cells(frame, spec: ColumnSpec, where: str):
    """Class row counts of every combination the rows of one partition hold."""
    rows = encode_frame(frame, _counting_spec(spec), where)
    return code_combination_cells(rows.labels, rows.codes, spec.intersections)


def _piece_cells(piece: ParquetPiece, parquet: ParquetSource, spec: ColumnSpec):
    counting = _counting_spec(spec)
    frame = read_piece(parquet, piece, counting.columns)
    return _frame_cells(frame, spec, _piece_where(piece))


def _frame_features(frame, spec: ColumnSpec, where: str):
    """What one partition holds of the sensitive features (values, combinations by class);
    nothing for an empty one (a filtered frame's: its labels were refused as empty, found by
    review)."""
    if len(frame) == 0:
        return {"values": [set() for _ in spec.features], "cells": {}}
    return feature_summary(frame, list(spec.features), piece_labels(frame, spec, where), where)


def _piece_features(piece: ParquetPiece, parquet: ParquetSource, spec: ColumnSpec):
    frame = read_piece(parquet, piece, list(dict.fromkeys([spec.label, *spec.features])))
    return _frame_features(frame, spec, _piece_where(piece))


def _partition_counts(frame: pd.DataFrame, n_groups: int, weighted: bool, exclude_missing: bool,
                      extras: dict | None = None):
    """ChunkCounts of one score-range partition (its index holds the scores), with what
    ``extras`` (``ColumnSpec.chunk_extras``) asks it to add."""
    if frame.shape[0] == 0:
        return None
    names = _word_columns(n_groups, exclude_missing)
    n_words = (n_groups + 63) // 64
    words = frame[names].to_numpy(dtype=np.uint64)
    scores = frame.index.to_numpy()
    labels = frame[_LABEL].to_numpy(dtype=np.bool_)
    weights = frame[_WEIGHT].to_numpy(dtype=np.float64) if weighted else None
    if weighted and (extras or {}).get("with_sums"):
        order = _weights_order(scores, weights)
        if order is not None:
            words, scores, labels, weights = (a[order] for a in (words, scores, labels, weights))
    member = np.ascontiguousarray(words[:, :n_words])
    missing = (np.ascontiguousarray(words[:, n_words:]) if exclude_missing
               else np.zeros((0, n_words), dtype=np.uint64))
    codes = PK.unpack_codes(member, missing, n_groups)
    return counted_chunk(np.ascontiguousarray(scores), labels, codes, weights,
                         **(extras or {}))


def _weights_order(scores, weights):
    """The order that puts a score-range partition's rows of equal scores (``scores``
    ascending) in the order of their weights, or None where no two scores are equal.

    Dask's shuffle hands them over in an order that changes from run to run (with Python's
    hash seed), and the significance tests' float sums of weights would move in their last
    bits with it. Every such sum adds, over the rows of a class or of a subgroup's cell, a
    term made of a row's weight and score; two rows of one score and the same weight add
    the same term, so that the order of their weights is enough: rows whose score and
    weight are equal may come in any order (the sort is not stable), and -0.0 and 0.0
    weigh the same (the sums start from 0.0). (The counts, exact in any order, need none.)
    Only the rows that share their score with another are sorted; each block of them stays
    where it is. The partitions' score ranges come from a sample of the rows: the same
    rows given in another order may draw another sample, other ranges, and so sums grouped
    otherwise (a few ulps apart)."""
    same = scores[1:] == scores[:-1]
    if not same.any():
        return None
    tied = np.zeros(scores.shape[0], dtype=np.bool_)
    tied[1:] |= same
    tied[:-1] |= same
    rows = np.flatnonzero(tied)
    order = np.arange(scores.shape[0])
    # complex numbers sort by their real parts, then their imaginary parts: one sort by
    # (score, weight), three times as fast as np.lexsort of the two
    key = np.empty(rows.shape[0], dtype=np.complex128)
    key.real, key.imag = scores[rows], weights[rows]
    order[rows] = rows[np.argsort(key)]
    return order


def _combine(spec: ColumnSpec, per_model_chunks) -> EvaluationResult:
    return result_from_chunks(spec, per_model_chunks, "dask")


def _combine_lazily(spec: ColumnSpec, per_model_chunks) -> EvaluationResult:
    """:func:`_combine` for ``compute=False``, where it runs on a worker: its warnings
    (undefined metrics) are warned there and kept on the result, which warns them again
    where it is unpickled, in the client (they had stayed in the worker's log; found by
    review)."""
    with collected_warnings() as caught:  # (no catch_warnings: see there)
        result = _combine(spec, per_model_chunks)
    for message, category in caught:  # (a scheduler of this process: warned here, as
        warnings.warn(message, category, stacklevel=2)  # compute=True does)
    result._replay = (os.getpid(), caught)
    return result


def _divisions(lowest: float, highest: float, sample, weights, n_partitions: int) -> list:
    """Score boundaries of ``n_partitions`` ranges of about equal rows, covering
    [lowest, highest]."""
    edges = bucket_edges(sample, n_partitions, weights)
    inner = edges[(edges > lowest) & (edges < highest)]
    return [float(lowest), *(float(e) for e in inner), float(highest)]


# --- the cluster: who works, and watching it work ---------------------------------------------

def _active_client():
    """The connected ``dask.distributed`` client, or None (Dask's local schedulers)."""
    try:
        from distributed import default_client
    except ImportError:  # pragma: no cover - depends on the environment
        return None
    try:
        return default_client()
    except ValueError:
        return None


def _worker_probe():
    """Runs on every worker: can it import fastbias, and which version? (Sent by value.)"""
    try:
        import fastbias

        return {"version": fastbias.__version__, "error": None}
    except BaseException as error:  # noqa: BLE001 - reported to the client, named
        return {"version": None, "error": f"{type(error).__name__}: {error}"}


# the probe must reach workers that cannot import fastbias: pickle it by value, not by name
_worker_probe.__module__ = "__main__"
_worker_probe.__qualname__ = "_fastbias_worker_probe"


@dataclass
class _Cluster:
    """The connected client of one call and how its work is watched; ``lost`` holds the
    workers already named as lost, so that each is named once, whichever pass saw it go."""

    client: object
    show: bool
    worker_timeout: float
    stall_timeout: float
    lost: set = field(default_factory=set)

    def worker_left(self, address: str, how: str = "") -> None:
        if address not in self.lost:
            self.lost.add(address)
            logger.warning("fastbias: the Dask worker %s left during the run%s; Dask redoes its "
                           "work elsewhere and the result stays exact", address, how)


def _check_workers(cluster: _Cluster) -> None:
    """Refuse to start unless some worker is connected and every worker imports fastbias at
    this version; within ``worker_timeout`` seconds, whatever the workers do. A worker whose
    connection closes as it is asked (an OSError: it left, e.g. killed) is named as lost, not
    as unable to run fastbias; the others answer for the cluster."""
    client, timeout = cluster.client, cluster.worker_timeout
    address = getattr(client.scheduler, "address", "the scheduler")
    deadline = time.monotonic() + timeout
    while True:
        # any worker counts, paused ones too (client.wait_for_workers counts running ones
        # only; a paused cluster is the stall watch's to report)
        while not client.scheduler_info(n_workers=-1)["workers"]:
            if time.monotonic() > deadline:
                raise RuntimeError(f"no Dask worker connected to {address} within {timeout:g} "
                                   f"s (worker_timeout); start workers, or pass a longer "
                                   f"worker_timeout")
            time.sleep(_POLL_SECONDS / 5)
        pool = concurrent.futures.ThreadPoolExecutor(1)
        try:  # (an infinite timeout waits without one: Python's timed waits refuse inf)
            replies = pool.submit(client.run, _worker_probe, on_error="return").result(
                timeout if math.isfinite(timeout) else None)
        except concurrent.futures.TimeoutError:
            raise RuntimeError(f"the Dask workers of {address} did not answer within "
                               f"{timeout:g} s (worker_timeout) whether they can import "
                               f"fastbias") from None
        finally:
            pool.shutdown(wait=False)
        broken, left = {}, 0
        for worker, reply in sorted(replies.items()):
            if isinstance(reply, OSError):  # (the probe itself returns every error it meets)
                left += 1
                cluster.worker_left(worker, f" (as it was asked whether it can import "
                                            f"fastbias: {type(reply).__name__})")
            elif isinstance(reply, BaseException):
                broken[worker] = f"{type(reply).__name__}: {reply}"
            elif reply["error"] is not None:
                broken[worker] = reply["error"]
            elif reply["version"] != __version__:
                broken[worker] = f"fastbias {reply['version']} (this client has {__version__})"
        if broken:
            shown = "; ".join(f"{worker}: {why}" for worker, why in list(broken.items())[:5])
            more = f" (and {len(broken) - 5} more)" if len(broken) > 5 else ""
            raise RuntimeError(
                f"{len(broken)} of {len(replies)} Dask worker(s) cannot run fastbias "
                f"{__version__}: {shown}{more}. Install fastbias[distributed]=={__version__} in "
                f"the workers' environment (the client and every worker need the same version)")
        if left < len(replies):
            return  # some worker answered, and every one that answered can run fastbias
        if time.monotonic() > deadline:  # every worker asked left as it was asked
            raise RuntimeError(f"no Dask worker of {address} stayed connected to answer "
                               f"whether it can import fastbias within {timeout:g} s "
                               f"(worker_timeout): every one left as it was asked")
        time.sleep(_POLL_SECONDS / 5)


class _QuietDask(logging.Filter):
    """Keeps Dask's notes on a healthy run out of the terminal (they stay in Dask's own logs):
    p2p shuffle notices, failed-task reports (the client raises the error itself) and
    the traces of a worker loss that Dask recovers from (one fastbias line says it)."""

    NOTICES = ("Compute Failed", "caused the cluster to lose", "Restarting worker",
               "Async instruction for", "Worker process", "Nanny asking worker to close",
               "Removing worker")

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith("distributed.shuffle") and record.levelno < logging.ERROR:
            return False
        if record.levelno >= logging.CRITICAL:
            return True
        message = str(record.msg)
        return not any(message.startswith(n) or n in message[:200] for n in self.NOTICES)


_QUIET = _QuietDask()


def _terminal_handlers() -> list:
    handlers = []
    for name in ("distributed", ""):
        handlers += [h for h in logging.getLogger(name).handlers
                     if isinstance(h, logging.StreamHandler)
                     and not isinstance(h, logging.FileHandler)]
    return handlers


def _quiet_worker_logs(on: bool) -> None:
    """On a worker process that shares this terminal (a LocalCluster): filter as above."""
    for handler in _terminal_handlers():
        (handler.addFilter if on else handler.removeFilter)(_QUIET)


@contextlib.contextmanager
def _quiet_dask():
    """Dask's notes filtered in this process while fastbias runs."""
    handlers = _terminal_handlers()
    for handler in handlers:
        handler.addFilter(_QUIET)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(_QUIET)


@contextlib.contextmanager
def _quiet_local_workers(client):
    """The same on the LocalCluster workers of this process (whose stderr is this terminal);
    workers elsewhere log as they are set up to."""
    local = client is not None and type(client.cluster).__name__ == "LocalCluster"
    if local:
        with contextlib.suppress(Exception):
            client.run(_quiet_worker_logs, True)
    try:
        yield
    finally:
        if local and client.status == "running":
            with contextlib.suppress(Exception):
                client.run(_quiet_worker_logs, False)


def _show_progress(progress) -> bool:
    if progress is None:
        return bool(getattr(sys.stdout, "isatty", lambda: False)())
    return bool(progress)


def _start_progress_bar(client, futures):
    """Dask's own text progress bar of these futures, drawn from a helper thread."""
    from distributed.diagnostics.progressbar import TextProgressBar

    def draw():
        with contextlib.suppress(Exception):
            TextProgressBar(futures, scheduler=client.scheduler.address, loop=client.loop,
                            complete=True)

    thread = threading.Thread(target=draw, name="fastbias-dask-progress", daemon=True)
    thread.start()
    return thread


def _watch(cluster: _Cluster, futures: list) -> list:
    """Wait for ``futures``; an error rather than a hang when no worker is left or every
    worker stays paused for memory; one line per worker lost on the way."""
    from distributed import wait

    client, worker_timeout = cluster.client, cluster.worker_timeout
    seen = set(client.scheduler_info(n_workers=-1)["workers"])
    no_worker_since = paused_since = None
    while True:
        try:
            wait(futures, timeout=_POLL_SECONDS)
            break
        except TimeoutError:
            pass
        failed = [f for f in futures if f.status == "error"]
        if failed:
            break  # result() below raises the task's own exception
        workers = client.scheduler_info(n_workers=-1)["workers"]
        for address in sorted(seen - set(workers)):
            cluster.worker_left(address)
        seen = set(workers)
        now = time.monotonic()
        if not workers:
            no_worker_since = no_worker_since or now
            if now - no_worker_since > worker_timeout:
                client.cancel(futures)
                raise RuntimeError(
                    f"no Dask worker has been connected for {worker_timeout:g} s "
                    f"(worker_timeout): every worker left or died (out of memory, killed?); "
                    f"the run was cancelled")
        else:
            no_worker_since = None
        if workers and all(w.get("status") == "paused" for w in workers.values()):
            paused_since = paused_since or now
            if now - paused_since > cluster.stall_timeout:
                client.cancel(futures)
                limits = sorted({_megabytes(w.get("memory_limit")) for w in workers.values()})
                raise RuntimeError(
                    f"every Dask worker has been paused for memory for "
                    f"{cluster.stall_timeout:g} s "
                    f"(stall_timeout; memory limit {', '.join(limits)} per worker): the "
                    f"partitions do not fit. Give the workers more memory, or more workers, "
                    f"or more partitions (npartitions=); docs/distributed.md gives the memory "
                    f"per million rows; the run was cancelled")
        else:
            paused_since = None
    return client.gather(futures)


def _megabytes(limit) -> str:
    return "no limit" if not limit else f"{limit / 2 ** 20:,.0f} MiB"


def _compute(cluster: _Cluster, tasks: list) -> list:
    """Compute Dask objects: watched on a distributed cluster, plainly on local schedulers."""
    import dask

    client = cluster.client
    if client is None:
        if cluster.show:
            from dask.diagnostics import ProgressBar

            with ProgressBar():
                return list(dask.compute(*tasks))
        return list(dask.compute(*tasks))
    futures = client.compute(tasks)
    bar = _start_progress_bar(client, futures) if cluster.show else None
    try:
        return _watch(cluster, futures)
    except BaseException:
        client.cancel(futures)
        raise
    finally:
        if bar is not None:
            bar.join(timeout=2)
        # (released now: the futures could outlive the call in a reference cycle, their
        # results held on the workers until the client's garbage collector ran; found by
        # review: 100-240 keys left)
        for future in futures:
            future.release()


def evaluate(data, *, label: str, scores, subgroups=None,
             label_threshold: float | None = 0.5,
             subgroup_threshold: float = 0.5, missing_subgroup: str = "background",
             sample_weight: str | None = None, npartitions: int | None = None,
             divisions=None, persist: bool | None = None, compute: bool = True,
             progress: bool | None = None, piece_rows: int = 1_000_000,
             worker_timeout: float = 30.0, stall_timeout: float = 120.0,
             random_state: int = 0, intersections: int | None = None,
             min_subgroup_size: int = 1, significance: str | None = None,
             confidence: float = 0.95, thresholds=None, threshold_interval: str | None = "wilson",
             gap_interval: str | None = None, sensitive_features=None,
             ci: str | None = None, pos_label=None):
    """Bias metrics of a Dask DataFrame or of Parquet files, exact and tie-aware, on the cluster.

    Uses the active scheduler: a ``dask.distributed.Client`` if one is
    connected, otherwise Dask's local default. The driver receives only a few
    numbers per partition and subgroup.

    Parameters
    ----------
    data : dask.dataframe.DataFrame, or str, path, or list of them
        One row per example: a Dask DataFrame (e.g. from
        ``dask.dataframe.read_parquet``), or Parquet files read here: a file, a
        directory (every ``*.parquet`` below it), a glob pattern or a list,
        local or a URI pyarrow can open (``s3://bucket/scored/*.parquet``). Paths
        are better: every footer is checked first (a truncated file, a missing
        column, a label or score type that differs between files, labels
        outside [0, 1] are errors naming the file), and a read error names the
        file and row groups.
    label, scores, subgroups, label_threshold, subgroup_threshold, missing_subgroup
        As in :func:`fastbias.evaluate`; ``label_threshold=None`` insists on
        labels that are exactly 0/1 or boolean.
    sample_weight : str, optional
        Name of a column of non-negative row weights.
    npartitions : int, optional
        Partitions of the score-sorted data (default: as many as the input
        has). All rows with one score value always share a partition.
    divisions : sequence of float, or dict of model -> sequence, optional
        Score boundaries of those partitions; given, the first pass does not
        sample that model's scores. They must cover every score (for scores
        in [0, 1], e.g. ``numpy.linspace(0, 1, 65)``); if they do not, the
        partitions overlap and a RuntimeError says so. At least two distinct
        numbers, none NaN; a dict names models only (else a ValueError or
        TypeError names the value).
    persist : bool, optional
        Keep the compact encoded frame in cluster memory so that several
        models reuse it (default: only when there are several models and
        ``compute=True``).
    compute : bool, default True
        False returns a ``dask.delayed.Delayed`` whose value is the result,
        for ``dask.compute``, ``client.compute`` with ``distributed.progress``,
        or the dashboard. The first pass (score boundaries, weight range)
        still runs now unless ``divisions`` are given and there are neither weights
        nor ``pos_label`` nor object or categorical label or identity columns (whose
        partitions' kinds it compares), and so does the pass that chooses ``intersections``.
    progress : bool, optional
        Dask's progress bar on stdout while the cluster works (default: when
        stdout is a terminal).
    piece_rows : int, default 1,000,000
        For Parquet paths: rows per input partition (whole row groups of one
        file; a larger row group is one partition).
    worker_timeout : float, default 30
        Seconds to wait for a first worker, for the workers' answer to "can
        you import fastbias?", and with no worker left during the run, before
        a RuntimeError (instead of waiting forever).
    stall_timeout : float, default 120
        Seconds every worker may stay paused for memory before a RuntimeError
        (instead of waiting forever).
    random_state : int or None, default 0
        Seed of the score sample that sets the partition boundaries (the
        result does not depend on it, only the partitions' sizes do); None draws one.
    intersections : {None, 2, 3}, default None
        Also every pair (and triple) of the subgroups with at least
        ``min_subgroup_size`` rows of each class, named ``"a & b"``, as in
        :func:`fastbias.evaluate`; one more pass over the label and identity
        columns chooses them.
    min_subgroup_size : int, default 1
    significance : {None, "holm", "bh"}, default None
        Test every subgroup's metrics for "no bias" (docs/significance.md): each
        partition's count task also returns its placement sums, joined on the driver.
        As in :func:`fastbias.streaming.evaluate_parquet`, a test of a cell under 30 rows
        gets Hoeffding's bound on its permutation p-value (weighted: not tested).
    ci : {None, "delong", "bernstein"}, default None
        Intervals of every metric and of the overall AUC, as :func:`fastbias.evaluate`
        gives them (``<metric>_low``/``_high``, DeLong's also ``_se``; docs/intervals.md,
        "Out of core"): DeLong's from placement sums each partition's count task adds to its counts (the
        same sums as ``significance=``; no more passes), Bernstein's (unweighted) from the
        counts. A standard error that the sums cannot tell from their rounding (which in
        memory the cells' own rows settle) is NaN, said in the one warning; under
        ``missing_subgroup="exclude"`` the overall AUC's DeLong interval is of all the
        rows, as in memory. The bootstrap needs the rows in memory.
    confidence : float, default 0.95
        The tests' level is ``1 - confidence``, and the intervals' confidence.
    thresholds, threshold_interval, gap_interval
        The threshold metrics of :func:`fastbias.evaluate` (``result.thresholds``): each
        partition's count task also counts its rows at every threshold.
    sensitive_features : list of str, optional
        Categorical columns, as in :func:`fastbias.evaluate`; one more pass over the label
        and these columns finds their values (sorted) and combinations.
    pos_label : scalar, optional
        The label value of the positive class, for two-valued labels of any type, as in
        :func:`fastbias.evaluate` (``label_threshold`` is then not used). Each partition
        is checked where it is read, and the values of all of them together after the
        first pass (which then always runs): a third value is a ValueError naming it and
        the partition where it first occurs, and so is a ``pos_label`` that no row holds.

    Returns
    -------
    EvaluationResult or dask.delayed.Delayed
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
        import dask.dataframe as dd
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("fastbias.dask needs Dask: pip install "
                          "'fastbias[distributed]'") from error
    for name, value in (("npartitions", npartitions), ("piece_rows", piece_rows)):
        if value is not None and (isinstance(value, bool) or
                                  not isinstance(value, (int, np.integer)) or value < 1):
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    for name, value, none in (("persist", persist, True), ("compute", compute, False),
                              ("progress", progress, True)):
        if not (isinstance(value, (bool, np.bool_)) or (none and value is None)):
            raise TypeError(f"{name} must be True or False{' (or None)' if none else ''}, "
                            f"got {value!r}")
    if persist and not compute:  # (found by review: "lost dependencies" when computed)
        raise ValueError("persist=True needs compute=True: the frame persisted for the models "
                         "would be released as this call returns, before the lazy result is "
                         "computed; persist the input yourself (data.persist()) instead")
    seconds = []
    for name, value in (("worker_timeout", worker_timeout), ("stall_timeout", stall_timeout)):
        # (numpy's numbers too: found by review, np.int64(30) was refused as not a number)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) \
                or not value > 0:
            raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
        seconds.append(_float_or_infinity(value))  # (a huge int: longer than any wait)
    order, min_size = check_intersections(intersections, min_subgroup_size)
    random_state = check_sample_seed(random_state)
    tests = checked_extras(significance, confidence, thresholds, threshold_interval,
                           gap_interval, ci)
    settings = dict(label=label, scores=scores, subgroups=subgroups,
                    label_threshold=label_threshold, subgroup_threshold=subgroup_threshold,
                    missing_subgroup=missing_subgroup, sample_weight=sample_weight,
                    pos_label=pos_label)
    parquet = pieces = None
    if isinstance(data, dd.DataFrame):
        spec = column_spec(data.columns, **settings, source="the Dask DataFrame",
                           sensitive_features=sensitive_features)
        _refuse_duplicate_columns(data.columns, spec)
        dtypes = data.dtypes
        for model in spec.models:
            dtype = dtypes[model]
            if pd.api.types.is_bool_dtype(dtype) or not pd.api.types.is_numeric_dtype(dtype):
                raise TypeError(f"score column {model!r} must be numeric scores, got dtype "
                                f"{dtype}{_example_of(data[model])}")
        score_dtypes = [score_dtype(dtypes[m]) for m in spec.models]
        meta_kinds = _meta_kinds(spec, dtypes)
        n_input = data.npartitions
    elif isinstance(data, pd.DataFrame):
        raise TypeError("data must be a dask.dataframe.DataFrame or Parquet paths, got a pandas "
                        "DataFrame (use fastbias.evaluate for a pandas DataFrame)")
    else:
        try:
            spec, parquet = open_parquet(data, **settings, sensitive_features=sensitive_features)
        except TypeError as error:
            if "source must be" not in str(error):
                raise
            raise TypeError(f"data must be a dask.dataframe.DataFrame or Parquet paths, got "
                            f"{type(data).__name__}") from None
        if parquet.n_rows == 0:
            raise ValueError("data has no rows")
        pieces = parquet.pieces(int(piece_rows))
        score_dtypes = parquet.score_dtypes
        meta_kinds = None  # (open_parquet checked the files' types against each other)
        n_input = len(pieces)
    spec = replace(spec, intersections=order, min_subgroup_size=min_size, **tests).check_extras()
    n_out = int(npartitions) if npartitions is not None else max(1, n_input)
    given = _checked_divisions(divisions, spec.models)
    client = _active_client()
    cluster = _Cluster(client, _show_progress(progress), *seconds)

    with _quiet_dask():
        if client is not None:
            _check_workers(cluster)
        with _quiet_local_workers(client):
            try:
                return _run(data, parquet, pieces, spec, given, score_dtypes, meta_kinds,
                            n_input, n_out, persist, compute, cluster, random_state)
            except KeyError as error:
                lacking = None if parquet is not None else _lacking_column(data, spec.columns)
                if lacking is None:
                    raise
                raise lacking from error


def _lacking_column(data, columns: list) -> ValueError | None:
    """The error for a column the Dask DataFrame's meta lists but a partition lacks (a
    ``dd.from_delayed(..., verify_meta=False)`` of frames that differ, or a
    ``dd.read_parquet`` of files that differ), whose own error is Dask's bare KeyError; None
    where every partition holds ``columns``. Only on that error path: it reads the
    partitions again, one at a time, to name the first that lacks one."""
    import dask

    for number in range(data.npartitions):
        try:
            held = dask.compute(data.partitions[number])[0].columns
        except KeyError as error:  # (the reader itself: "['a'] not in index")
            named = [name for name in columns if repr(name) in str(error)]
            if not named:
                return None
            lacking = named
        except Exception:  # noqa: BLE001 (the partition cannot be read again: Dask's error)
            return None
        else:
            lacking = [name for name in columns if name not in held]
        if lacking:
            return ValueError(f"column {lacking[0]!r} is missing from Dask partition {number}, "
                              f"although the Dask DataFrame's meta lists it: every partition "
                              f"must hold the meta's columns (dd.read_parquet of files that "
                              f"differ, dd.from_delayed(..., verify_meta=False) and from_map "
                              f"do not check them)")
    return None


def _checked_divisions(divisions, models: list) -> list:
    """``divisions=`` as one list of score boundaries (or None) per model, each checked: at
    least two distinct numbers, none NaN; a dict names models only. A ValueError or
    TypeError names the argument, the model and the bad value (Dask's own errors named
    none of them)."""
    if isinstance(divisions, dict):
        unknown = [key for key in divisions if key not in models]
        if unknown:
            raise ValueError(f"divisions names {unknown[0]!r}, which is not a model (the "
                             f"models: {list(models)!r})")
        return [_checked_boundaries(divisions.get(model), f"divisions[{model!r}]")
                for model in models]
    checked = _checked_boundaries(divisions, "divisions")
    return [checked for _ in models]


def _float_or_infinity(value: numbers.Real) -> float:
    """``float(value)``, an int beyond a float's range as the infinity of its sign (``float``
    raises OverflowError for it; found by review: a bare OverflowError reached the user)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _checked_boundaries(values, name: str) -> list | None:
    """One model's score boundaries (see :func:`_checked_divisions`), as floats."""
    if values is None:
        return None
    if isinstance(values, (str, bytes, numbers.Number)) or not np.iterable(values):
        raise TypeError(f"{name} must be a sequence of numbers (score boundaries), got "
                        f"{values!r}")
    values = list(values)
    out = []
    for j, value in enumerate(values):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real,
                                                                        np.number)):
            raise TypeError(f"{name} must hold numbers, got {value!r} at position {j}")
        number = _float_or_infinity(value)  # (a huge int bounds the scores as inf does)
        if math.isnan(number):
            raise ValueError(f"{name} must not hold NaN (position {j})")
        out.append(number)
    if len(set(out)) < 2:
        raise ValueError(f"{name} must hold at least two distinct score boundaries (the "
                         f"partitions lie between them), got {values!r}")
    if len(set(out)) < len(out):
        repeated = next(j for j, v in enumerate(out) if v in out[:j])
        raise ValueError(f"{name} holds {out[repeated]!r} twice (position {repeated}): "
                         f"boundaries must be distinct")
    return out


def _run(data, parquet, pieces, spec, given, score_dtypes, meta_kinds, n_input, n_out, persist,
         compute, cluster, random_state):
    """The passes of :func:`evaluate` on checked arguments (``meta_kinds``: see
    :func:`_meta_kinds`, for a Dask DataFrame)."""
    import dask
    import dask.dataframe as dd

    def each_piece(columns, on_frame, on_piece):
        """``on_frame(partition, spec, where)`` of every partition of the Dask DataFrame
        (only ``columns``), or ``on_piece(piece, parquet, spec)`` of every Parquet piece."""
        if parquet is None:
            return [dask.delayed(_captured)(on_frame, part, spec, f"in Dask partition {i}")
                    for i, part in enumerate(data[list(dict.fromkeys(columns))].to_delayed())]
        return [dask.delayed(_captured)(on_piece, piece, parquet, spec) for piece in pieces]

    # 0. the intersections, chosen on all rows (each piece counts its rows' combinations)
    if spec.intersections is not None:
        total = None
        for cells in _in_order(_compute(cluster, each_piece([spec.label, *spec.subgroups],
                                                            _frame_cells, _piece_cells))):
            total = add_combination_cells(total, cells)
        spec = spec.with_combinations(choose_combinations(total, list(spec.subgroups),
                                                          spec.min_subgroup_size))

    # 0b. the sensitive features' values and combinations, found on all rows
    if spec.features:
        summary = None
        for part in _in_order(_compute(cluster, each_piece([spec.label, *spec.features],
                                                           _frame_features, _piece_features))):
            summary = merge_feature_summaries(summary, part)
        spec = spec.with_features(*chosen_features(summary, list(spec.features),
                                                   spec.min_subgroup_size))

    # 1. first pass: validate scores, weights and labels; sample the scores. Object and
    # categorical label or identity columns (no kind in the meta: typed ones are compared
    # with it as each partition is encoded) are read too: each partition's values say
    # whether they are booleans or numbers, and all must agree
    need_sample = any(d is None for d in given)
    by_values = meta_kinds[1] if parquet is None else []
    if need_sample or spec.weighted or spec.pos_label is not None or by_values:
        sample_rows = math.ceil(max(_SAMPLE_ROWS, 2_000 * n_out) / max(n_input, 1))
        if parquet is None:
            columns = list(dict.fromkeys([spec.label, *spec.models, *by_values,
                                          *([spec.sample_weight] if spec.weighted else [])]))
            tasks = [dask.delayed(_captured)(_frame_summary, part, spec, sample_rows,
                                             random_state + i, f"in Dask partition {i}",
                                             score_dtypes, by_values)
                     for i, part in enumerate(data[columns].to_delayed())]
        else:
            tasks = [dask.delayed(_captured)(_piece_summary, piece, parquet, spec, sample_rows,
                                             random_state + i)
                     for i, piece in enumerate(pieces)]
        found = _in_order(_compute(cluster, tasks))
        checker = spec.batch_kinds()
        for i, (_, kinds) in enumerate(found):
            checker.check_kinds(kinds, f"in Dask partition {i}")
        summary = merge_summaries([part for part, _ in found])
        spec.check_label_classes(summary.label_classes)
        spec = spec.with_weight_range(*summary.weight_range, summary.class_weights,
                                       *summary.weight_places)
        given = [d if d is not None else
                 _divisions(summary.lowest[k], summary.highest[k], summary.samples[k],
                            summary.sample_weights[k], n_out)
                 for k, d in enumerate(given)]

    # 2. the compact encoded frame
    meta = _encoded_meta(spec, score_dtypes)
    if parquet is None:
        encoded = data[spec.columns].map_partitions(_encode_partition, spec, score_dtypes,
                                                   meta_kinds[0], meta=meta)
    else:
        encoded = dd.from_map(_read_and_encode, pieces, parquet=parquet, spec=spec,
                              meta=meta, label="fastbias-read", enforce_metadata=False)
    if persist is None:
        persist = len(spec.models) > 1 and compute
    if persist:
        encoded = encoded.persist()

    # 3. per model: the range partitioning, then one count task per partition
    n_groups = len(spec.row_names)  # subgroups, intersections, sensitive features' groups
    shared = [_LABEL, *([_WEIGHT] if spec.weighted else []),
              *_word_columns(n_groups, spec.exclude_missing)]
    per_model_tasks = []
    for k in range(len(spec.models)):
        bounds = sorted(float(x) for x in given[k])
        ranged = encoded[[*shared, _score_column(k)]].set_index(_score_column(k),
                                                               divisions=bounds)
        per_model_tasks.append([dask.delayed(_partition_counts)(
            part, n_groups, spec.weighted, spec.exclude_missing, spec.chunk_extras())
            for part in ranged.to_delayed()])
    if not compute:
        return dask.delayed(_combine_lazily)(spec, per_model_tasks)
    flat = [task for tasks in per_model_tasks for task in tasks]
    try:
        chunks = iter(_compute(cluster, flat))
    except (ValueError, TypeError):
        # a partition refused as it was encoded (no first pass looked at it: divisions given):
        # the first that refuses, in the frame's order, is named (found by review; a lacking
        # column's KeyError is named by evaluate, reading the partitions once more)
        if parquet is None:
            tasks = [dask.delayed(_captured)(_encode_partition, part, spec, score_dtypes,
                                             meta_kinds[0], {"number": i})
                     for i, part in enumerate(data[spec.columns].to_delayed())]
        else:
            tasks = [dask.delayed(_captured)(_read_and_encode, piece, parquet, spec)
                     for piece in pieces]
        _in_order(_compute(cluster, tasks))
        raise
    finally:
        if persist and cluster.client is not None:  # (the persisted frame's memory, freed now)
            from distributed import futures_of

            for future in futures_of(encoded):
                future.release()
    per_model_chunks = [[next(chunks) for _ in tasks] for tasks in per_model_tasks]
    return _combine(spec, per_model_chunks)
