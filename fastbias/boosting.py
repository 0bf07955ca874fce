"""Bias-aware evaluation metrics for gradient boosting (LightGBM, XGBoost).

Both libraries call a custom metric on every evaluation set after every
boosting round. The callables here report the Jigsaw final metric and the
worst subgroup's BPSN AUC (or any of :data:`fastbias.evaluator.SCORE_NAMES`)
from one sort and sweep per call, using a :class:`~fastbias.BiasEvaluator`
prepared once per evaluation set, so that early stopping can follow them.

Neither library is a dependency of fastbias; nothing here imports them.

Which evaluator serves which evaluation set is decided once per evaluation
set and then kept, bound to that set's object (the LightGBM ``Dataset`` or
XGBoost ``DMatrix``, or the label array the scikit-learn APIs pass): the
evaluator with the same number of rows whose labels equal the set's labels.
When several evaluators fit and they would give different numbers (two
evaluation sets of the same size and labels but different subgroups), the
choice cannot be made from the data and is an error; bind them explicitly by
passing ``(eval_set, evaluator)`` pairs, as the error says, with the ``Dataset`` or
``DMatrix`` objects given to ``lightgbm.train`` / ``xgboost.train``. (The
scikit-learn APIs, ``LGBMClassifier.fit`` and ``XGBClassifier.fit``, hand the
metric copies of the labels, not the sets: there such sets cannot be told apart,
and the error says so; use ``train`` for them.) The training set
needs an evaluator too if it is among the evaluation sets. An evaluator serves one live
set at a time: another live set of the same size and labels takes it over with a
``UserWarning`` (right for the same rows built again), and the first set, evaluated
again, is refused (two sets taking turns). Where the scikit-learn APIs hand label copies,
two evaluated sets of the same size and labels with one evaluator between them cannot be
told apart at all: both are scored with its subgroups; give each its own evaluator, or use
``train``. Row weights come
from the evaluator: weights attached to the evaluation data are not used
(bias metrics are usually reported unweighted even when training is weighted).
"""
from __future__ import annotations

import warnings
import weakref

import numpy as np

from .evaluator import BiasEvaluator, _check_score_name
from .validate.values import as_labels

DEFAULT_METRICS = ("final", "min_bpsn_auc")
#: XGBoost's early stopping follows the *last* metric: the final metric goes last.
XGBOOST_DEFAULT_METRICS = ("min_bpsn_auc", "final")


def _same_evaluation(a: BiasEvaluator, b: BiasEvaluator) -> bool:
    """Whether two evaluators give the same numbers for any scores (same rows, memberships,
    weights and final-metric settings)."""
    if a is b:
        return True
    ma, mb = a._full.memberships, b._full.memberships
    same = (ma.names == mb.names and np.array_equal(ma.labels, mb.labels)
            and np.array_equal(ma.identity_rows, mb.identity_rows)
            and np.array_equal(ma.row_ptr, mb.row_ptr)
            and np.array_equal(ma.row_groups, mb.row_groups)
            and (a.power, a.overall_weight, a.undefined) == (b.power, b.overall_weight,
                                                              b.undefined))
    wa, wb = a.sample_weight, b.sample_weight
    return same and (wa is None) == (wb is None) and (wa is None or np.array_equal(wa, wb))


def _labels_fit(labels: np.ndarray, evaluator: BiasEvaluator) -> tuple:
    """``(whether an evaluation set's labels are the evaluator's, the labels thresholded as
    given (None where they are not labels))``.

    LightGBM's ``Dataset.get_label()`` and XGBoost's ``DMatrix.get_label()`` are float32
    copies of the labels, so a fraction the evaluator's ``label_threshold`` reaches may be
    just below it there (float32(0.7) < 0.7: found by review, the set's own evaluator was
    refused). Float32 labels therefore fit where every row's class is that of some float64
    value that rounds to its float32 label: positives' largest such value reaches the
    threshold, negatives' smallest is below it (the midpoints with the float32 neighbours,
    exact in float64).
    """
    try:
        binary = as_labels(labels, "labels", threshold=evaluator.label_threshold)
    except (TypeError, ValueError):
        return False, None
    if np.array_equal(binary, evaluator.labels):
        return True, binary
    threshold = evaluator.label_threshold
    if labels.dtype != np.float32 or threshold is None:
        return False, binary
    value = labels.astype(np.float64)
    highest = (value + np.nextafter(labels, np.float32(np.inf)).astype(np.float64)) / 2
    lowest = (value + np.nextafter(labels, np.float32(-np.inf)).astype(np.float64)) / 2
    fits = np.where(evaluator.labels, highest >= threshold, lowest < threshold)
    return bool(fits.all()), binary


def _labels_reversed(labels: np.ndarray, evaluator: BiasEvaluator) -> bool:
    """Whether an evaluation set's labels are the evaluator's with the classes swapped (its
    positive class the library's 0)."""
    binary = _labels_fit(labels, evaluator)[1]
    return binary is not None and np.array_equal(binary, ~evaluator.labels)


class _BoostingBiasMetric:
    """Shared part: pick the evaluator of an evaluation set and compute the scores."""

    def __init__(self, evaluators, metrics, name_index=0):
        # id(evaluation set) -> (weak reference to it, its evaluator, whether given as a pair)
        self._bound = {}
        self._displaced = {}  # id -> weak reference of a set whose evaluator went to another
        pairs = []
        if isinstance(evaluators, BiasEvaluator):
            evaluators = [evaluators]
        elif isinstance(evaluators, dict):
            pairs = list(evaluators.items())
            evaluators = []
        else:
            evaluators = list(evaluators)
            if evaluators and all(isinstance(e, tuple) and len(e) == 2 for e in evaluators):
                pairs, evaluators = evaluators, []
        for _, evaluator in pairs:
            evaluators.append(evaluator)
        if not evaluators or not all(isinstance(e, BiasEvaluator) for e in evaluators):
            raise TypeError("evaluators must be a BiasEvaluator, a non-empty sequence of them "
                            "(one per evaluation set), or (evaluation set, BiasEvaluator) pairs")
        metrics = [metrics] if isinstance(metrics, str) else list(metrics)
        if not metrics:
            raise ValueError("metrics is empty")
        for metric in metrics:
            _check_score_name(metric)
        if len(set(metrics)) != len(metrics):
            raise ValueError(f"metrics has duplicates: {metrics}")
        self.evaluators = evaluators
        self.metrics = metrics
        self._pairs = pairs
        for data, evaluator in pairs:
            self._bind(data, evaluator, explicit=True)
        # the metric a one-number API reports; XGBoost's scikit-learn wrapper uses the name
        self.__name__ = metrics[name_index]

    def __getstate__(self) -> dict:
        """Pickled (and copied) without its bindings: they are weak references to this
        process's evaluation sets, which cannot be pickled (a fitted XGBoost model holding a
        used metric could not be saved, found by review) and name nothing elsewhere. The copy
        binds each set again by its size and labels on first use (an ambiguous one, two sets
        alike whose evaluators differ, is refused as it is here)."""
        state = dict(self.__dict__)
        state["_bound"] = {}
        state["_displaced"] = {}
        return state

    def _bind(self, data, evaluator, explicit: bool = False) -> None:
        try:
            self._bound[id(data)] = (weakref.ref(data), evaluator, explicit)
        except TypeError:  # not weakly referenceable: no binding, matched by labels each call
            pass

    def _bound_to(self, data):
        """``(evaluator, given as a pair)`` bound to this very object (identity, while it
        lives), or None."""
        entry = self._bound.get(id(data))
        if entry is None:
            return None
        if entry[0]() is not data:  # another object now has that id: the old one is gone
            del self._bound[id(data)]
            return None
        return entry[1], entry[2]

    def _evaluator_for(self, labels, data=None) -> BiasEvaluator:
        """The evaluator of the evaluation set ``data`` (bound on first use) with ``labels``."""
        labels = np.asarray(labels)
        n = labels.shape[0]
        if data is not None:
            self._refuse_displaced(data, n)
        entry = self._bound_to(data) if data is not None else None
        if entry is not None:
            # its size and labels checked every call (found by review: a pair given with
            # another set's evaluator, or a set relabelled since, had the bound evaluator's
            # numbers): a set bound by its labels is matched again, a pair is refused
            bound, explicit = entry
            binary = None
            if bound.n_rows == n:
                fits, binary = _labels_fit(labels, bound)
                if fits:
                    return bound
            if explicit:
                what = (f"now has {n} rows" if bound.n_rows != n else
                        "has labels that are not its own" if binary is None else
                        f"differs from its labels in "
                        f"{int(np.count_nonzero(binary != bound.labels))} of {n} rows")
                raise ValueError(f"the evaluation set paired with a BiasEvaluator of "
                                 f"{bound.n_rows} rows {what} (paired with another set's "
                                 f"evaluator, or changed since?); build the evaluator from the "
                                 f"same rows, in the same order")
            del self._bound[id(data)]  # (bound by its labels, now other: matched again)
        same_size = [e for e in self.evaluators if e.n_rows == n]
        if not same_size:
            raise ValueError(f"no BiasEvaluator for an evaluation set of {n} rows (the "
                             f"evaluators have {[e.n_rows for e in self.evaluators]} rows); give "
                             f"one per evaluation set, the training set too if it is evaluated")
        matching = []
        for evaluator in same_size:
            if _labels_fit(labels, evaluator)[0]:
                matching.append(evaluator)
        if not matching:
            if any(_labels_reversed(labels, e) for e in same_size):
                # (found by review: "differ" said of the same rows, the classes reversed)
                raise ValueError(
                    f"the labels of an evaluation set of {n} rows are those of a BiasEvaluator "
                    f"of that size with the classes reversed: the boosting library's positive "
                    f"class (its label 1; the scikit-learn APIs encode the classes in sorted "
                    f"order, the second one 1) is the evaluator's negative class, and the "
                    f"model's scores are of the other class. Build the evaluator with the "
                    f"library's positive class (pos_label= the second class in sorted order, "
                    f"or labels as the library sees them)")
            raise ValueError(f"the labels of an evaluation set of {n} rows differ from those of "
                             f"every BiasEvaluator of that size; build the evaluator from the "
                             f"same rows, in the same order")
        if any(not _same_evaluation(matching[0], other) for other in matching[1:]):
            raise ValueError(
                f"{len(matching)} BiasEvaluators fit an evaluation set of {n} rows (same size, "
                f"same labels) but would give different numbers, so which one serves it cannot "
                f"be told from the data. Bind each evaluation set to its evaluator: pass "
                f"(eval_set, evaluator) pairs, e.g. lightgbm_metric([(dvalid_a, ev_a), "
                f"(dvalid_b, ev_b)]) with the Dataset/DMatrix objects given to lightgbm.train "
                f"or xgboost.train. The scikit-learn APIs (LGBMClassifier.fit, "
                f"XGBClassifier.fit) pass the metric copies of the labels, not the sets, so "
                f"there such sets cannot be bound: use train() for them")
        if data is not None:
            self._take_over(data, matching[0], n)
            self._bind(data, matching[0])
        return matching[0]

    def _take_over(self, data, evaluator, n: int) -> None:
        """Before ``data`` is bound to ``evaluator`` by its labels: an evaluator paired with
        another live set does not serve this one; one bound by labels to another live set
        leaves it with a UserWarning (right for a set of the same rows built again, the first
        no longer evaluated: a continued training, a search), and that set, if evaluated
        again, is refused (found by
        review: a training set of the validation set's size and labels, with no evaluator of
        its own, was scored with the validation set's subgroups, silently)."""
        for key, (ref, bound, explicit) in list(self._bound.items()):
            other = ref()
            if bound is not evaluator or other is None or other is data:
                continue
            if explicit:
                raise ValueError(
                    f"an evaluation set of {n} rows has the size and labels of a BiasEvaluator "
                    f"paired with another evaluation set, so it may not hold that evaluator's "
                    f"subgroups: pair this set with its own evaluator too (the training set as "
                    f"well if it is evaluated), or leave it out of the evaluated sets")
            del self._bound[key]
            self._displaced[key] = ref
            # (said at once: with a single round, or sets evaluated once each, the refusal
            # of the next turn never comes; found by review)
            warnings.warn(
                f"an evaluation set of {n} rows with the size and labels of another one still "
                f"alive takes over its BiasEvaluator: right if it holds the same rows (a set "
                f"built again), but if both are evaluated in one training one of them is scored "
                f"with the other's subgroups (the next turn of the first is refused); give each "
                f"evaluated set its own evaluator as (eval_set, evaluator) pairs",
                UserWarning, stacklevel=4)

    def _refuse_displaced(self, data, n: int) -> None:
        """A set whose evaluator went to another live set of the same size and labels, seen
        again: the two take turns, so which rows the evaluator holds cannot be told."""
        ref = self._displaced.get(id(data))
        if ref is None:
            return
        if ref() is not data:  # (another object now has that id)
            del self._displaced[id(data)]
            return
        raise ValueError(
            f"two evaluation sets of {n} rows with the same labels take turns with one "
            f"BiasEvaluator (e.g. the training set evaluated beside the validation set without "
            f"an evaluator of its own), so which rows it holds cannot be told (a number of "
            f"the round before was made with the other set's subgroups): give each set "
            f"its own evaluator as (eval_set, evaluator) pairs, e.g. lightgbm_metric([(dtrain, "
            f"ev_train), (dvalid, ev_valid)]), or leave the training set out of the evaluated "
            f"sets")

    def _values(self, labels, preds, data=None) -> dict:
        preds = np.asarray(preds)
        if preds.ndim == 2 and preds.shape[1] == 1:
            preds = preds.reshape(-1)
        if preds.ndim != 1:
            raise ValueError(f"bias metrics need one score per row (binary classification); got "
                             f"predictions of shape {preds.shape}")
        return self._evaluator_for(labels, data).scores(preds, self.metrics)

    def __deepcopy__(self, memo):
        # the evaluators are read-only after preparation: copies share them
        # (LightGBM deep-copies its fit arguments); explicit bindings are kept
        return type(self)(self._pairs or self.evaluators, self.metrics)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(metrics={self.metrics}, "
                f"{len(self.evaluators)} evaluator(s))")


class LightGBMBiasMetric(_BoostingBiasMetric):
    """LightGBM custom metric: ``feval`` of ``lightgbm.train`` / ``eval_metric`` of ``fit``.

    Called as ``(preds, eval_data)`` by ``lightgbm.train`` and
    ``(y_true, y_pred)`` by the scikit-learn estimators; returns a list of
    ``(name, value, True)`` (higher is better), one per metric.
    """

    def __call__(self, preds, eval_data):
        if hasattr(eval_data, "get_label") and hasattr(eval_data, "num_data"):
            # lightgbm.train(feval=...): the Dataset identifies the evaluation set
            values = self._values(eval_data.get_label(), preds, eval_data)
        else:
            # LGBMModel.fit(eval_metric=...): (y_true, y_pred); LightGBM hands each evaluation
            # set's own label array every round, so the array identifies the set
            values = self._values(preds, eval_data, preds)
        return [(name, value, True) for name, value in values.items()]


class XGBoostBiasMetric(_BoostingBiasMetric):
    """XGBoost custom metric: ``custom_metric`` of ``xgboost.train`` / ``eval_metric``.

    Called as ``(predt, dmatrix)`` by ``xgboost.train``: returns a list of
    ``(name, value)``, one per metric. Called as ``(y_true, y_score)`` by the
    scikit-learn estimators (``XGBClassifier(eval_metric=...)``): returns the
    *last* metric's value only (that API takes one number; XGBoost's early
    stopping follows the last metric too).
    """

    def __init__(self, evaluators, metrics):
        super().__init__(evaluators, metrics, name_index=-1)

    def __call__(self, predt, dmatrix, sample_weight=None):
        if hasattr(dmatrix, "get_label") and hasattr(dmatrix, "num_row"):
            values = self._values(dmatrix.get_label(), predt, dmatrix)
            return [(name, value) for name, value in values.items()]
        return self._values(predt, dmatrix, predt)[self.__name__]


def lightgbm_metric(evaluators, *, metrics=DEFAULT_METRICS) -> LightGBMBiasMetric:
    """A LightGBM eval metric reporting bias-aware scores each boosting round.

    Parameters
    ----------
    evaluators : BiasEvaluator, sequence of BiasEvaluator, or (eval_set, BiasEvaluator) pairs
        One per evaluation set, matched by row count and labels on first use
        and bound to the set from then on; pairs (or a dict) bind them
        explicitly, which is needed when two sets share their size and labels.
    metrics : sequence of str, default ("final", "min_bpsn_auc")
        Names from :data:`fastbias.evaluator.SCORE_NAMES`; all higher-is-better.
        Early stopping with ``lightgbm.early_stopping(..., first_metric_only=True)``
        follows the first metric LightGBM evaluates: set ``"metric": "None"`` in the
        booster's parameters (``metric="None"`` for ``LGBMClassifier``), or LightGBM's own
        metric for the objective (``binary_logloss``) comes first and early stopping
        follows it (found by review).

    Returns
    -------
    LightGBMBiasMetric
        Pass it as ``feval=`` to ``lightgbm.train`` or ``eval_metric=`` to
        ``LGBMClassifier.fit``.

    Examples
    --------
    >>> import numpy as np, fastbias
    >>> from fastbias.boosting import lightgbm_metric
    >>> y = np.array([0, 0, 1, 1, 0, 1])
    >>> ev = fastbias.BiasEvaluator(y, {"g": [1, 1, 1, 0, 0, 0]})
    >>> feval = lightgbm_metric(ev)
    >>> feval(y, np.array([0.1, 0.4, 0.35, 0.8, 0.7, 0.9]))  # the scikit-learn API's call
    [('final', 0.5694444444444444, True), ('min_bpsn_auc', 1.0, True)]
    """
    return LightGBMBiasMetric(evaluators, metrics)


def xgboost_metric(evaluators, *, metrics=XGBOOST_DEFAULT_METRICS) -> XGBoostBiasMetric:
    """An XGBoost custom metric reporting bias-aware scores each boosting round.

    XGBoost minimises custom metrics unless told otherwise: pass
    ``maximize=True`` to ``xgboost.train``, or, with the scikit-learn API,
    ``callbacks=[xgboost.callback.EarlyStopping(rounds=..., metric_name=...,
    maximize=True)]`` instead of ``early_stopping_rounds`` (which would stop
    on the *lowest* score). Early stopping follows the *last* metric (the
    final metric, by default) unless ``metric_name`` says otherwise. XGBoost
    records custom metric values with six decimals.

    Parameters
    ----------
    evaluators : BiasEvaluator, sequence of BiasEvaluator, or (eval_set, BiasEvaluator) pairs
        One per evaluation set, matched by row count and labels on first use
        and bound to the set from then on; pairs (or a dict) bind them
        explicitly, which is needed when two sets share their size and labels.
    metrics : sequence of str, default ("min_bpsn_auc", "final")
        Names from :data:`fastbias.evaluator.SCORE_NAMES`. The scikit-learn
        API reports only the last.

    Returns
    -------
    XGBoostBiasMetric
        Pass it as ``custom_metric=`` to ``xgboost.train`` or ``eval_metric=``
        to ``XGBClassifier``.

    Examples
    --------
    >>> import numpy as np, fastbias
    >>> from fastbias.boosting import xgboost_metric
    >>> y = np.array([0, 0, 1, 1, 0, 1])
    >>> ev = fastbias.BiasEvaluator(y, {"g": [1, 1, 1, 0, 0, 0]})
    >>> metric = xgboost_metric(ev, metrics=["min_subgroup_auc"])
    >>> metric(y, np.array([0.1, 0.4, 0.35, 0.8, 0.7, 0.9]))  # the scikit-learn API's call
    0.5
    """
    return XGBoostBiasMetric(evaluators, metrics)


__all__ = ["lightgbm_metric", "xgboost_metric", "LightGBMBiasMetric", "XGBoostBiasMetric",
           "DEFAULT_METRICS", "XGBOOST_DEFAULT_METRICS"]
