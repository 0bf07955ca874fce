"""Bias-aware scores as cheap to call as accuracy: prepare once, score many times.

:class:`BiasEvaluator` validates the labels and the subgroup memberships once
and keeps everything that does not depend on the scores (the identity rows and
their subgroups, the rows of each class). Every later call costs one sort of
the scores and one sweep over the subgroup rows, which is what model-selection
loops need: hundreds of checkpoints, folds and hyper-parameter settings scored
with the Jigsaw final metric or a worst-subgroup AUC.

The class scores are ordered with a least-significant-digit radix sort on the
order-preserving integer image of the floats (three passes of 11 bits for
float32, six for float64), several times faster than a comparison sort. Ties
are kept exactly (``-0.0`` is first mapped to ``+0.0``), so the counts are the
same exact integers :func:`fastbias.bias_metrics` produces.

A cross-validation fold is scored through ``index=``: the fold's memberships
are derived from the prepared ones in ``O(fold rows + fold memberships)``
(through a row -> identity-row map built once) and cached per index.
"""
from __future__ import annotations

import numbers
import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .intervals.significance import attach_significance, check_significance
from .metrics.aggregates import (
    final_metric,
    final_metric_noted,
    identity_subgroup_rows,
    worst_auc,
)
from .metrics.definitions import AUC_METRICS
from .metrics.table import (
    metrics_from_counts,
    overall_auc_from_counts,
    table_from_counts,
    warn_undefined,
)
from .prepare.folds import fold_memberships, identity_positions
from .prepare.memberships import (
    Memberships,
    check_categories_alone,
    check_intersections,
    prepare_subgroups,
    with_intersections,
)
from .sort.order import SortedScores, sorted_scores
from .sweep.counts import SweepCounts, count_sorted, sweep_counts
from .sweep.parallel import announce_first_use, map_in_threads
from .tables.result import evaluation_result
from .validate.columns import (
    _to_numpy,
    booleans_and_numbers,
    check_aligned,
    column_values,
    refuse_sparse,
)
from .validate.errors import UndefinedMetricWarning
from .validate.settings import (
    check_confidence,
    check_undefined,
    resolve_n_jobs,
    resolve_workers,
)
from .validate.values import as_labels, as_sample_weight, as_scores

#: Names accepted by :meth:`BiasEvaluator.score` (and the scikit-learn and
#: boosting helpers built on it). All are "higher is better".
SCORE_NAMES = ("final", "overall_auc", "min_subgroup_auc", "min_bpsn_auc", "min_bnsp_auc")


# --------------------------------------------------------------------------- prepared rows

@dataclass(frozen=True)
class _PreparedRows:
    """Score-independent state of one set of rows (all rows, or one fold)."""

    memberships: Memberships
    sample_weight: np.ndarray | None

    @property
    def n_rows(self) -> int:
        return self.memberships.n_rows


def _prepared(memberships: Memberships, sample_weight) -> _PreparedRows:
    return _PreparedRows(memberships, sample_weight)


def _sweep(scores: np.ndarray, prep: _PreparedRows, workers: int = 1) -> SweepCounts:
    """One sort and one sweep of the prepared rows, on up to ``workers`` threads (see
    :func:`fastbias.sweep.counts.sweep_counts`)."""
    return sweep_counts(scores, prep.memberships, prep.sample_weight, workers=workers)


# --------------------------------------------------------------------------- helpers

def _check_score_name(metric) -> str:
    if metric not in SCORE_NAMES:
        raise ValueError(f"metric must be one of {SCORE_NAMES}, got {metric!r}")
    return metric


class BiasEvaluator:
    """Prepare labels and subgroups once; then score any number of models cheaply.

    Each call of :meth:`metrics`, :meth:`final_metric`, :meth:`score` or
    :meth:`metrics_many` costs one sort of the scores and one sweep over the
    subgroup rows: no per-call work or memory grows with rows x subgroups,
    and repeated calls do not grow memory. A subset of the rows (a CV fold)
    is scored with ``index=`` without rebuilding the evaluator.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels (bool or 0/1), or fractional with ``label_threshold``.
    subgroups : DataFrame of boolean columns, dict of name -> mask, or (n, k) array
        Subgroup memberships, as in :func:`fastbias.bias_metrics`. With
        ``subgroup_threshold``, numeric columns are binarised and NaN (not
        annotated) counts as background, as in the Jigsaw competition.
    sample_weight : array-like of shape (n,), optional
        Non-negative row weights, fixed for every call.
    label_threshold : float, optional
        Positive iff ``y_true >= label_threshold`` (0.5 for Jigsaw's
        ``target``).
    subgroup_threshold : float, optional
        Member iff ``mask >= subgroup_threshold``.
    power : float, default -5
        Power of the generalized mean in the final metric.
    overall_weight : float, default 0.25
        Weight of the overall AUC in the final metric.
    undefined : {"propagate", "omit", "raise"}, default "propagate"
        What an undefined per-subgroup AUC (empty or one-class cell, frequent
        in small folds) does to the final metric and the ``min_*`` scores: see
        :func:`fastbias.final_metric`.
    nan_policy : deprecated
        The former name of ``undefined``.
    n_jobs : int, optional
        Threads (None or -1: every CPU the process may use). A one-model
        call shares its sorts and walk out among them (inputs too small to
        gain use one); :meth:`metrics_many` runs the models side by side
        and gives each its share. Results do not depend on it.
    fold_cache_size : int, default 16
        How many prepared folds (distinct ``index`` arrays) to keep.
    pos_label : object, optional
        The positive class when ``y_true`` holds strings or categories.
    intersections : {None, 2, 3}, optional
        Also every pair (or pair and triple) of subgroups, as in
        :func:`fastbias.bias_metrics`, chosen once on all rows with
        ``min_subgroup_size``; folds keep the same rows of the table (a
        fold where one is one-class gives NaN). The ``min_*`` scores then
        cover the intersections too; the final metric stays the
        competition's, over the subgroups alone.
    min_subgroup_size : int, default 1
        Rows of each class an intersection needs (on all rows) to be kept.

    Attributes
    ----------
    subgroup_names : list of str
    n_rows : int

    Examples
    --------
    >>> import numpy as np, fastbias
    >>> rng = np.random.default_rng(0)
    >>> y = rng.random(10_000) < 0.3
    >>> groups = {"a": rng.random(10_000) < 0.1, "b": rng.random(10_000) < 0.05}
    >>> ev = fastbias.BiasEvaluator(y, groups)
    >>> scores = np.where(y, 0.6, 0.4) + rng.normal(0, 0.2, 10_000)
    >>> round(ev.final_metric(scores), 4)
    0.7712
    >>> round(ev.score(scores, "min_bpsn_auc"), 4)
    0.7737
    >>> int(ev.metrics(scores).loc["a", "subgroup_size"])
    1001
    >>> fold = np.arange(0, 10_000, 2)
    >>> round(ev.final_metric(scores[fold], index=fold), 4)
    0.7725
    """

    def __init__(self, y_true, subgroups, *, sample_weight=None,
                 label_threshold: float | None = None, subgroup_threshold: float | None = None,
                 power: float = -5, overall_weight: float = 0.25, undefined: str = "propagate",
                 n_jobs: int | None = None, fold_cache_size: int = 16, pos_label=None,
                 nan_policy: str | None = None, intersections: int | None = None,
                 min_subgroup_size: int = 1):
        undefined = check_undefined(undefined, nan_policy, where="BiasEvaluator")
        # the final metric checks its own settings: fail now, not on the first score
        final_metric(pd.DataFrame({m: [1.0] for m in AUC_METRICS}), 1.0, power=power,
                     overall_weight=overall_weight, undefined=undefined)
        if isinstance(fold_cache_size, bool) or not isinstance(fold_cache_size, numbers.Integral) \
                or fold_cache_size < 0:
            raise ValueError(f"fold_cache_size must be a non-negative int, got {fold_cache_size!r}")
        resolve_n_jobs(n_jobs, 1)
        # pandas inputs must agree on their rows; later scores are checked against these labels
        self._row_index = check_aligned([("y_true", y_true), ("subgroups", subgroups),
                                         ("sample_weight", sample_weight)])
        # (copies: the evaluator outlives the call, and the readers may return the caller's
        # own array, which the caller may then change in place: found by review, a bool y
        # flipped after construction changed later scores, and a weight array so changed
        # disagreed with the folds already cached)
        labels = np.array(as_labels(y_true, "y_true", threshold=label_threshold,
                                    pos_label=pos_label), copy=True)
        weights = as_sample_weight(sample_weight, labels.shape[0])
        weights = None if weights is None else np.array(weights, copy=True)
        announce_first_use(weights is not None)
        order, min_size = check_intersections(intersections, min_subgroup_size)
        check_categories_alone(subgroups, order, subgroup_threshold)
        self._full = _prepared(with_intersections(
            prepare_subgroups(labels, subgroups, subgroup_threshold,
                              workers=resolve_workers(n_jobs), min_subgroup_size=min_size),
            order, min_size), weights)
        self.label_threshold = label_threshold
        self.subgroup_threshold = subgroup_threshold
        self.power = power
        self.overall_weight = overall_weight
        self.undefined = undefined
        self.n_jobs = n_jobs
        self.fold_cache_size = int(fold_cache_size)
        self._folds: OrderedDict = OrderedDict()
        self._identity_position = None
        self._lock = threading.Lock()

    def __getstate__(self):
        # picklable (joblib workers, copies): the lock and the caches are rebuilt
        state = self.__dict__.copy()
        del state["_lock"]
        state["_folds"] = OrderedDict()
        state["_identity_position"] = None
        return state

    def __setstate__(self, state):
        if "nan_policy" in state:  # pickled before undefined= had its name
            state["undefined"] = state.pop("nan_policy")
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ properties

    @property
    def subgroup_names(self) -> list:
        return list(self._full.memberships.names)

    @property
    def n_rows(self) -> int:
        return self._full.n_rows

    @property
    def labels(self) -> np.ndarray:
        """The binary labels (read-only view), True = positive."""
        view = self._full.memberships.labels.view()
        view.flags.writeable = False
        return view

    @property
    def sample_weight(self):
        """The row weights (a read-only view; None unweighted)."""
        weights = self._full.sample_weight
        if weights is None:
            return None
        view = weights.view()
        view.flags.writeable = False
        return view

    @property
    def nan_policy(self) -> str:
        """Deprecated name of :attr:`undefined` (read-only)."""
        return self.undefined

    def __repr__(self) -> str:
        neg, pos = self._full.memberships.class_rows
        return (f"BiasEvaluator({self.n_rows} rows: {neg} negative, {pos} positive; "
                f"{len(self.subgroup_names)} subgroups; "
                f"{'weighted' if self.sample_weight is not None else 'unweighted'})")

    # ------------------------------------------------------------------ folds

    def _index_array(self, index) -> np.ndarray:
        if isinstance(index, (list, tuple)) or getattr(index, "dtype", None) == object:
            mixed = booleans_and_numbers(np.asarray(index, dtype=object))
            if mixed is not None:  # ([True, 3] read as positions 1 and 3: found by review)
                raise TypeError(f"index holds both booleans and numbers ({mixed}): a boolean "
                                f"mask, or integer row positions")
        arr, missing = column_values(index, "index")
        if missing is not None:
            first = int(np.flatnonzero(missing)[0])
            raise ValueError(f"index has {int(missing.sum())} missing value(s) (first at "
                             f"position {first}): a mask says True or False of every row, and "
                             f"row positions are whole numbers")
        self._check_index_rows(index, arr.dtype == np.bool_)
        if arr.dtype == np.bool_:
            if arr.shape[0] != self.n_rows:
                raise ValueError(f"index is a boolean mask of {arr.shape[0]} rows but the "
                                 f"evaluator has {self.n_rows}")
            return np.flatnonzero(arr)
        if arr.shape[0] == 0:  # (before the type: numpy reads [] as float64)
            raise ValueError("index is empty: a fold needs at least one row")
        # (timedelta64 is an integer type to numpy: not row positions; found by review)
        if arr.dtype.kind not in "iu":
            raise TypeError(f"index must hold integer row positions or be a boolean mask, "
                            f"got dtype {arr.dtype}")
        # (compared in their own type: 2**64 - 1 as int64 would read as -1)
        bad = (arr < 0) | (arr >= self.n_rows) if arr.dtype.kind == "i" else arr >= self.n_rows
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            raise ValueError(f"index has {int(bad.sum())} value(s) outside [0, {self.n_rows}) "
                             f"(e.g. {arr[first].item()} at position {first}); it takes row "
                             f"positions of the evaluator's rows")
        return np.ascontiguousarray(arr, dtype=np.int64)  # (every value below n_rows: exact)

    def _check_index_rows(self, index, is_mask: bool) -> None:
        """``index`` takes row positions or a mask over the rows by position; where the
        evaluator's rows carry labels (pandas inputs, a default index too), a mask given as a
        pandas Series must carry them too, in the same order, and a pandas Index (row labels,
        not positions) is refused unless the labels are the positions (a default index)."""
        rows = self._row_index
        if rows is None:
            return
        if isinstance(index, pd.Index) and not rows.equals(pd.RangeIndex(len(rows))):
            raise TypeError(
                "index is a pandas Index, but index= takes row positions (or a boolean mask) "
                "and the evaluator's rows carry other labels; for rows given by label, pass "
                "their positions: y_true.index.get_indexer(labels)")
        if is_mask and isinstance(index, (pd.Series, pd.DataFrame)):
            check_aligned([("index", index)],
                          expected=("the evaluator's rows (its y_true)", rows))

    def _rows(self, index) -> _PreparedRows:
        """The prepared state of all rows (index None) or of one fold (cached)."""
        if index is None:
            return self._full
        arr = self._index_array(index)
        key = (arr.shape[0], hash(arr.tobytes()))
        with self._lock:
            cached = self._folds.get(key)
            if cached is not None and np.array_equal(cached[0], arr):
                self._folds.move_to_end(key)
                return cached[1]
            if self._identity_position is None:
                self._identity_position = identity_positions(self._full.memberships)
            identity_position = self._identity_position
        memberships = fold_memberships(self._full.memberships, arr, identity_position)
        weights = None if self._full.sample_weight is None else self._full.sample_weight[arr]
        prep = _prepared(memberships, weights)
        if self.fold_cache_size:
            with self._lock:
                self._folds[key] = (arr.copy(), prep)
                while len(self._folds) > self.fold_cache_size:
                    self._folds.popitem(last=False)
        return prep

    def _scores(self, y_score, prep: _PreparedRows, name: str = "y_score") -> np.ndarray:
        arr = _to_numpy(y_score, name)
        if arr.shape[0] != prep.n_rows:
            where = "the evaluator has" if prep is self._full else "index selects"
            raise ValueError(f"{name} has {arr.shape[0]} rows but {where} {prep.n_rows}")
        return as_scores(arr, name)

    def _check_score_rows(self, scores, index, name: str) -> None:
        """Pandas scores must carry the row labels of the rows they score (if those have any)."""
        if self._row_index is None or not isinstance(scores, (pd.Series, pd.DataFrame)):
            return
        if index is None:
            expected = ("the evaluator's rows (its y_true)", self._row_index)
        else:
            expected = ("the evaluator's rows at index", self._row_index[self._index_array(index)])
        check_aligned([(name, scores)], expected=expected)

    def _counts(self, y_score, index) -> SweepCounts:
        self._check_score_rows(y_score, index, "y_score")
        prep = self._rows(index)
        # one model: its sorts and walk share out the evaluator's threads
        return _sweep(self._scores(y_score, prep), prep, resolve_workers(self.n_jobs))

    # ------------------------------------------------------------------ one model

    def metrics(self, y_score, *, index=None, significance: str | None = None,
                confidence: float = 0.95) -> pd.DataFrame:
        """The per-subgroup table of :func:`fastbias.bias_metrics` for one model.

        Parameters
        ----------
        y_score : array-like of shape (n,) or (len(index),)
            Finite scores, one per evaluated row (in ``index`` order).
        index : array-like of int or bool mask, optional
            Row positions (or a mask over all rows) of the subset to score
            (a mask given as a pandas Series must carry the evaluator's row
            labels, in its order, where its inputs had labels),
            e.g. a CV fold's test rows. Values must be unique and in
            ``[0, n_rows)``.
        significance : {None, "holm", "bh"}, optional
            Add p-values and flags of "no bias" tests, adjusted over all
            subgroups x metrics, as :func:`fastbias.bias_metrics` does.
        confidence : float, default 0.95
            ``1 - confidence`` is the level of the adjusted tests.

        Returns
        -------
        pandas.DataFrame
            Same columns as :func:`fastbias.bias_metrics`;
            ``attrs["overall_auc"]`` holds the overall AUC.

        Examples
        --------
        >>> import fastbias
        >>> ev = fastbias.BiasEvaluator([0, 0, 1, 1, 0, 1],
        ...                             {"g": [True, True, True, False, False, False]})
        >>> t = ev.metrics([0.1, 0.4, 0.35, 0.8, 0.7, 0.9])
        >>> float(t.loc["g", "subgroup_auc"]), float(t.loc["g", "bpsn_auc"])
        (0.5, 1.0)
        """
        check_significance(significance)
        confidence = check_confidence(confidence)
        if significance is None:
            sc = self._counts(y_score, index)
        else:  # the tests read the sorts, so keep them
            self._check_score_rows(y_score, index, "y_score")
            prep = self._rows(index)
            ordered = SortedScores(self._scores(y_score, prep), prep.memberships,
                                   workers=resolve_workers(self.n_jobs))
            sc = count_sorted(ordered, prep.sample_weight)
        table = self._table(sc)
        warn_undefined(table)
        if significance is not None:
            table = attach_significance(table, method=significance, sorted_scores=ordered,
                                        sample_weight=prep.sample_weight, confidence=confidence)
        return table

    def _table(self, sc: SweepCounts) -> pd.DataFrame:
        """The per-subgroup table of one sweep, with the ``attrs`` the aggregates read: the
        overall AUC, and which rows are intersections (left out of the final metric)."""
        table = table_from_counts(sc, warn=False)
        table.attrs["overall_auc"] = overall_auc_from_counts(sc)
        if self._full.memberships.intersections:
            table.attrs["intersections"] = list(self._full.memberships.intersections)
        return table

    def _values(self, sc: SweepCounts, metrics, notes: list | None = None) -> dict:
        """The named scores from one sweep's counts. Why a score is NaN (under
        ``undefined="propagate"``) goes to ``notes`` when a list is given (a scorer shows
        it once per scorer); otherwise one warning says it for all the scores asked."""
        out = {}
        said = []
        per_group = None
        for metric in metrics:
            if metric == "overall_auc":
                out[metric] = overall_auc_from_counts(sc)
                if np.isnan(out[metric]):  # (a fold of one class; found by review: silent)
                    n_neg, n_pos = sc.class_rows
                    text = (f"overall AUC is NaN: undefined (negatives={n_neg}, "
                            f"positives={n_pos})")
                    if self.undefined == "raise":
                        raise ValueError(text)
                    said.append(text)
                continue
            if per_group is None:
                per_group = metrics_from_counts(sc)
            if metric == "final":
                table = pd.DataFrame({m: per_group[m] for m in AUC_METRICS},
                                     index=pd.Index(sc.names, name="subgroup"))
                table.attrs["intersections"] = list(self._full.memberships.intersections)
                out[metric], note = final_metric_noted(
                    identity_subgroup_rows(table), overall_auc_from_counts(sc), self.power,
                    self.overall_weight, self.undefined)
            else:
                auc = metric[len("min_"):]
                out[metric], note = worst_auc(per_group[auc], sc.names, auc, self.undefined)
            if note:
                said.append(note)
        if notes is not None:
            notes.extend(said)
        elif said:
            warnings.warn("; ".join(said), UndefinedMetricWarning, stacklevel=4)
        return out

    def final_metric(self, y_score, *, index=None) -> float:
        """The Jigsaw competition score of one model (see :func:`fastbias.final_metric`).

        Uses the evaluator's ``power``, ``overall_weight`` and ``undefined``.

        Parameters
        ----------
        y_score : array-like of shape (n,) or (len(index),)
            Finite scores.
        index : array-like of int or bool mask, optional
            Rows to score (see :meth:`metrics`).

        Returns
        -------
        float

        Examples
        --------
        >>> import fastbias
        >>> groups = {"a": [1, 1, 1, 1, 0, 0, 0, 0], "b": [0, 0, 1, 0, 1, 1, 1, 1]}
        >>> ev = fastbias.BiasEvaluator([0, 0, 1, 1, 0, 1, 0, 1], groups)
        >>> round(ev.final_metric([0.1, 0.4, 0.35, 0.8, 0.7, 0.9, 0.2, 0.6]), 4)
        0.8247
        """
        return self.score(y_score, "final", index=index)

    def score(self, y_score, metric: str = "final", *, index=None) -> float:
        """One bias-aware score of one model; higher is better for all of them.

        Parameters
        ----------
        y_score : array-like of shape (n,) or (len(index),)
            Finite scores.
        metric : {"final", "overall_auc", "min_subgroup_auc", "min_bpsn_auc", "min_bnsp_auc"}
            ``"final"``: the Jigsaw final metric; ``"min_<auc>"``: the worst
            subgroup's value of that AUC (NaN handling by ``undefined``).
        index : array-like of int or bool mask, optional
            Rows to score (see :meth:`metrics`).

        Returns
        -------
        float

        Examples
        --------
        >>> import fastbias
        >>> ev = fastbias.BiasEvaluator([0, 0, 1, 1, 0, 1], {"g": [1, 1, 1, 0, 0, 0]})
        >>> ev.score([0.1, 0.4, 0.35, 0.8, 0.7, 0.9], "min_subgroup_auc")
        0.5
        """
        return self.scores(y_score, (_check_score_name(metric),), index=index)[metric]

    def scores(self, y_score, metrics=SCORE_NAMES, *, index=None) -> dict:
        """Several scores of one model from a single sort and sweep.

        Parameters
        ----------
        y_score : array-like
            Finite scores.
        metrics : sequence of str, default all of :data:`SCORE_NAMES`
        index : array-like of int or bool mask, optional

        Returns
        -------
        dict
            metric name -> float, in the order asked for.

        Examples
        --------
        >>> import fastbias
        >>> ev = fastbias.BiasEvaluator([0, 0, 1, 1, 0, 1], {"g": [1, 1, 1, 0, 0, 0]})
        >>> ev.scores([0.1, 0.4, 0.35, 0.8, 0.7, 0.9], ["overall_auc", "min_bpsn_auc"])
        {'overall_auc': 0.7777777777777778, 'min_bpsn_auc': 1.0}
        """
        metrics = [metrics] if isinstance(metrics, str) else list(metrics)
        if not metrics:
            raise ValueError("metrics is empty: name at least one of " + str(SCORE_NAMES))
        for metric in metrics:
            _check_score_name(metric)
        return self._values(self._counts(y_score, index), metrics)

    # ------------------------------------------------------------------ many models

    def _score_columns(self, score_matrix, prep: _PreparedRows, model_names):
        """Normalise the accepted many-model inputs to (names, list of 1-D columns)."""
        n = prep.n_rows
        if isinstance(score_matrix, pd.DataFrame):
            names = [str(c) for c in score_matrix.columns]
            columns = [score_matrix.iloc[:, j] for j in range(score_matrix.shape[1])]
        elif isinstance(score_matrix, dict):
            names = [str(k) for k in score_matrix]
            columns = list(score_matrix.values())
        elif isinstance(score_matrix, (list, tuple)):
            names = None
            columns = list(score_matrix)
        else:
            refuse_sparse(score_matrix, "score_matrix")
            arr = (score_matrix if isinstance(score_matrix, np.ma.MaskedArray)  # (its masks:
                   else np.asarray(score_matrix))                          # missing scores)
            if arr.ndim != 2:
                raise ValueError(f"score_matrix must be 2-D (rows x models), a DataFrame, a dict "
                                 f"or a list of score arrays; got shape {arr.shape}")
            if arr.shape[0] != n:
                hint = " (transpose it: rows x models is expected)" if arr.shape[1] == n else ""
                where = "the evaluator has" if prep is self._full else "index selects"
                raise ValueError(f"score_matrix has {arr.shape[0]} rows but {where} {n}{hint}")
            names = None
            columns = [arr[:, j] for j in range(arr.shape[1])]
        if not columns:
            raise ValueError("score_matrix has no models")
        if model_names is not None:
            if isinstance(model_names, (str, bytes)):  # ("ab" was the names "a" and "b")
                raise TypeError(f"model_names must be a list of names, got the string "
                                f"{model_names!r}")
            model_names = [str(x) for x in model_names]
            if len(model_names) != len(columns):
                raise ValueError(f"model_names has {len(model_names)} names for "
                                 f"{len(columns)} models")
            names = model_names
        if names is None:
            names = [f"model_{j}" for j in range(len(columns))]
        if len(set(names)) != len(names):
            raise ValueError(f"model names are not unique: "
                             f"{sorted({x for x in names if names.count(x) > 1})}")
        return names, columns

    def _many(self, score_matrix, index, model_names, n_jobs, task):
        prep = self._rows(index)
        names, columns = self._score_columns(score_matrix, prep, model_names)
        self._check_score_rows(score_matrix, index, "score_matrix")
        for name, column in zip(names, columns):
            self._check_score_rows(column, index, f"scores of model {name!r}")
        if self._row_index is None:  # (rows without labels: the models' must agree among them;
            # found by review: two Series in other row orders were scored by position)
            check_aligned([(f"scores of model {name!r}", column)
                           for name, column in zip(names, columns)])

        def run(j):
            values = self._scores(columns[j], prep, f"scores of model {names[j]!r}")
            return task(_sweep(values, prep, model_workers))

        n_jobs = self.n_jobs if n_jobs is None else n_jobs
        workers = resolve_n_jobs(n_jobs, len(names))
        model_workers = max(1, resolve_workers(n_jobs) // workers)  # the models share the threads
        return names, map_in_threads(run, range(len(names)), workers)

    def metrics_many(self, score_matrix, *, index=None, model_names=None, n_jobs=None):
        """The per-subgroup tables of many models, scored in parallel threads.

        Parameters
        ----------
        score_matrix : (n, n_models) array, DataFrame, dict or list of 1-D arrays
            One score column per model (a DataFrame's or dict's names are the
            model names).
        index : array-like of int or bool mask, optional
            Rows to score (see :meth:`metrics`).
        model_names : list of str, optional
            Names for the models (default: the column names, or ``model_0``...).
        n_jobs : int, optional
            Threads (default: the evaluator's ``n_jobs``).

        Returns
        -------
        fastbias.EvaluationResult
            ``.table`` (tidy: model, subgroup, counts, metrics),
            ``.overall_auc`` per model, ``.wide()``, ``.for_model()`` and
            ``.final_metric()``.

        Examples
        --------
        >>> import numpy as np, fastbias
        >>> ev = fastbias.BiasEvaluator([0, 0, 1, 1, 0, 1], {"g": [1, 1, 1, 0, 0, 0]})
        >>> s = np.array([[0.1, 0.2], [0.4, 0.1], [0.35, 0.9], [0.8, 0.7], [0.7, 0.3], [0.9, 0.8]])
        >>> res = ev.metrics_many(s, model_names=["m1", "m2"])
        >>> res.wide(["subgroup_auc"]).round(3).values.tolist()
        [[0.5, 1.0]]
        >>> res.overall_auc.round(3).tolist()
        [0.778, 1.0]
        """
        def task(sc):
            table = self._table(sc)
            return table, overall_auc_from_counts(sc)

        names, results = self._many(score_matrix, index, model_names, n_jobs, task)
        # (the result's final_metric() takes the evaluator's settings, as its final_metric does:
        # found by review, it had taken the defaults, and the intersections' rows too)
        return evaluation_result(
            names, [table for table, _ in results], [auc for _, auc in results], label="y_true",
            subgroups=self.subgroup_names,
            settings={"label_threshold": self.label_threshold,
                      "subgroup_threshold": self.subgroup_threshold,
                      "weighted": self.sample_weight is not None,
                      "rows": "all" if index is None else "index",
                      "final_metric": {"power": self.power,
                                       "overall_weight": self.overall_weight,
                                       "undefined": self.undefined}})

    def scores_many(self, score_matrix, metrics=("final",), *, index=None, model_names=None,
                    n_jobs=None) -> pd.DataFrame:
        """Bias-aware scores of many models (one row each), scored in parallel threads.

        Parameters
        ----------
        score_matrix : (n, n_models) array, DataFrame, dict or list of 1-D arrays
            As in :meth:`metrics_many`.
        metrics : sequence of str, default ("final",)
            Names from :data:`SCORE_NAMES`.
        index, model_names, n_jobs
            As in :meth:`metrics_many`.

        Returns
        -------
        pandas.DataFrame
            Index ``model``, one column per metric.

        Examples
        --------
        >>> import numpy as np, fastbias
        >>> ev = fastbias.BiasEvaluator([0, 0, 1, 1, 0, 1], {"g": [1, 1, 1, 0, 0, 0]})
        >>> s = {"m1": [0.1, 0.4, 0.35, 0.8, 0.7, 0.9], "m2": [0.2, 0.1, 0.9, 0.7, 0.3, 0.8]}
        >>> table = ev.scores_many(s, ["overall_auc", "min_subgroup_auc"])
        >>> list(table.index), table.round(3).values.tolist()
        (['m1', 'm2'], [[0.778, 0.5], [1.0, 1.0]])
        """
        metrics = [metrics] if isinstance(metrics, str) else list(metrics)
        if not metrics:
            raise ValueError("metrics is empty: name at least one of " + str(SCORE_NAMES))
        for metric in metrics:
            _check_score_name(metric)
        if len(set(metrics)) < len(metrics):  # (two columns of one name: found by review)
            raise ValueError(f"metrics names {next(m for m in metrics if metrics.count(m) > 1)!r} "
                             f"twice")
        names, results = self._many(score_matrix, index, model_names, n_jobs,
                                    lambda sc: self._values(sc, metrics))
        return pd.DataFrame(results, index=pd.Index(names, name="model"), columns=metrics)


__all__ = ["BiasEvaluator", "SCORE_NAMES", "sorted_scores"]
