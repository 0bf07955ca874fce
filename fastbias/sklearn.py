"""scikit-learn integration: bias-aware scorers for cross-validation and hyper-parameter search.

:func:`make_bias_scorer` returns a scorer usable as ``scoring=`` in
``cross_val_score``, ``cross_validate``, ``GridSearchCV`` and
``RandomizedSearchCV``. The scorer needs each evaluated fold's subgroup
memberships, which scikit-learn does not hand to scorers by default. Three ways
to get them:

1. **Metadata routing** (recommended; scikit-learn >= 1.4). Enable it with
   ``sklearn.set_config(enable_metadata_routing=True)``, build the scorer, and
   pass the memberships as ``subgroups`` (a DataFrame or an (n, k) array, one
   row per sample): ``GridSearchCV(...).fit(X, y, subgroups=S)`` or
   ``cross_val_score(..., params={"subgroups": S})``. scikit-learn slices them
   to each fold.
2. **Columns of X** (routing off): ``make_bias_scorer(subgroup_columns=[...])``
   reads the memberships from those columns of the fold's ``X`` (a
   DataFrame); the model must ignore them (e.g. a ``ColumnTransformer`` that
   selects the feature columns).
3. **Aligned by X's index** (routing off): ``make_bias_scorer(subgroups=S)``
   with ``S`` a DataFrame indexed like ``X``; the scorer looks up the fold's
   rows by ``X.index`` labels.

All scores are "higher is better" (see :data:`fastbias.evaluator.SCORE_NAMES`).
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from .evaluator import SCORE_NAMES, BiasEvaluator, _check_score_name
from .validate.errors import UndefinedMetricWarning
from .validate.settings import check_undefined

_RESPONSE_METHODS = ("decision_function", "predict_proba", "predict")


def bias_score(y_true, y_score, *, subgroups, metric: str = "final", sample_weight=None,
               pos_label=None, label_threshold: float | None = None,
               subgroup_threshold: float | None = None, power: float = -5,
               overall_weight: float = 0.25, undefined: str = "propagate",
               nan_policy: str | None = None) -> float:
    """A bias-aware score with scikit-learn's metric convention.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels (bool or 0/1; other values with ``pos_label``, or
        fractional with ``label_threshold``).
    y_score : array-like of shape (n,)
        Scores of the positive class (probabilities or decision values).
    subgroups : DataFrame, dict of masks or (n, k) array
        Subgroup memberships of the same rows (keyword-only, so that it can be
        routed as metadata).
    metric : {"final", "overall_auc", "min_subgroup_auc", "min_bpsn_auc", "min_bnsp_auc"}
        See :meth:`fastbias.BiasEvaluator.score`.
    sample_weight : array-like of shape (n,), optional
    pos_label : optional
        The positive class when ``y_true`` is not 0/1 or boolean.
    label_threshold, subgroup_threshold : float, optional
        Binarise fractional labels / memberships (``>=``).
    power, overall_weight, undefined
        Settings of the final metric (see :func:`fastbias.final_metric`).
    nan_policy : deprecated
        The former name of ``undefined``.

    Returns
    -------
    float

    Examples
    --------
    >>> from fastbias.sklearn import bias_score
    >>> y = [0, 0, 1, 1, 0, 1, 0, 1]
    >>> s = [0.1, 0.4, 0.35, 0.8, 0.7, 0.9, 0.2, 0.6]
    >>> groups = {"a": [1, 1, 1, 1, 0, 0, 0, 0], "b": [0, 0, 1, 0, 1, 1, 1, 1]}
    >>> round(bias_score(y, s, subgroups=groups), 4)
    0.8247
    >>> bias_score(y, s, subgroups=groups, metric="min_subgroup_auc")
    0.6666666666666666
    """
    return _fold_score(y_true, y_score, subgroups, metric, sample_weight, pos_label,
                       label_threshold, subgroup_threshold, power, overall_weight,
                       check_undefined(undefined, nan_policy, where="bias_score"))


def _fold_score(y_true, y_score, subgroups, metric, sample_weight, pos_label, label_threshold,
                subgroup_threshold, power, overall_weight, undefined, notes=None) -> float:
    """One fold's score. Why it is NaN goes to ``notes`` when a list is given (the scorers
    say it once), otherwise to one warning."""
    _check_score_name(metric)
    if pos_label is not None:
        y_true, pos_label = _one_class_fold(y_true, pos_label)
    # (the labels as given: a pandas y_true's index is checked against the subgroups')
    evaluator = BiasEvaluator(y_true, subgroups, sample_weight=sample_weight,
                              label_threshold=label_threshold,
                              subgroup_threshold=subgroup_threshold, power=power,
                              overall_weight=overall_weight, undefined=undefined,
                              fold_cache_size=0, pos_label=pos_label)
    return evaluator._values(evaluator._counts(y_score, None), [metric], notes)[metric]


def _one_class_fold(y_true, pos_label) -> tuple:
    """``(y_true, pos_label)`` of a fold, a fold of one class other than ``pos_label`` made
    all negatives (found by review: such a fold of text labels was refused, one of 0/1
    labels scored NaN, warned, as a fold without positives is); otherwise as given, for the
    labels' own checks (a ``pos_label`` in no row of two classes stays an error, and so does
    a fold whose one value reads as ``pos_label`` but is not it: ``"1"`` for 1, refused as in
    a fold of two classes; found by review, it was taken for a fold of negatives)."""
    values = y_true.to_numpy() if isinstance(y_true, pd.Series) else np.asarray(y_true)
    if values.ndim != 1 or values.shape[0] == 0:
        return y_true, pos_label
    distinct = pd.unique(values)
    if len(distinct) != 1 or pd.isna(distinct[0]) or bool(np.any(values == pos_label)) \
            or str(distinct[0]) == str(pos_label):
        return y_true, pos_label
    negatives = np.zeros(values.shape[0], dtype=bool)
    if isinstance(y_true, pd.Series):
        return pd.Series(negatives, index=y_true.index, name=y_true.name), None
    return negatives, None


class _FirstUndefinedFold:
    """Says once per scorer object why a fold's score is NaN (a later search with the same
    scorer stays silent: a scorer cannot tell one search from the next).

    A search scores every candidate on the same folds, and whether a subgroup's AUC is
    defined on a fold depends only on the fold's labels and memberships, so the same
    explanation would otherwise be printed candidates x folds times. Under
    ``undefined="omit"`` there is nothing to say."""

    def __init__(self, metric: str):
        self.metric = metric
        self.reported = False

    def __call__(self, notes: list, n_rows: int) -> None:
        if notes and not self.reported:
            self.reported = True
            warnings.warn(
                f"make_bias_scorer({self.metric!r}) scored a fold of {n_rows:,} rows NaN: "
                f"{'; '.join(notes)}. This scorer says so once, in this search or a later "
                f"one (make a new scorer to hear it again); other NaN folds show in the "
                f"results (cv_results_). Shuffled stratified folds "
                f"(StratifiedKFold(shuffle=True)) keep a rare subgroup in both classes more "
                f"often", UndefinedMetricWarning, stacklevel=3)


class _RoutedScore:
    """The score function of a routed scorer (``make_scorer`` calls it with the fold's
    labels, scores, subgroups and the settings), reporting a NaN fold once."""

    __name__ = "bias_score"

    def __init__(self, metric: str, predicts: bool = False):
        self.first_undefined = _FirstUndefinedFold(metric)
        self.predicts = predicts  # (response_method "predict": y_score holds classes)

    def __call__(self, y_true, y_score, *, subgroups, metric="final", sample_weight=None,
                 pos_label=None, label_threshold=None, subgroup_threshold=None, power=-5,
                 overall_weight=0.25, undefined="propagate"):
        if self.predicts:
            y_score = _predicted_class_scores(y_score, pos_label)
        notes = []
        value = _fold_score(y_true, y_score, subgroups, metric, sample_weight, pos_label,
                            label_threshold, subgroup_threshold, power, overall_weight,
                            undefined, notes)
        self.first_undefined(notes, len(y_score))
        return value


def final_metric_score(y_true, y_score, *, subgroups, sample_weight=None, pos_label=None,
                       label_threshold: float | None = None,
                       subgroup_threshold: float | None = None, power: float = -5,
                       overall_weight: float = 0.25, undefined: str = "propagate",
                       nan_policy: str | None = None) -> float:
    """The Jigsaw final metric with scikit-learn's metric convention.

    Same as ``bias_score(..., metric="final")``; parameters as in
    :func:`bias_score`.

    Examples
    --------
    >>> from fastbias.sklearn import final_metric_score
    >>> y = [0, 0, 1, 1, 0, 1, 0, 1]
    >>> s = [0.1, 0.4, 0.35, 0.8, 0.7, 0.9, 0.2, 0.6]
    >>> groups = {"a": [1, 1, 1, 1, 0, 0, 0, 0], "b": [0, 0, 1, 0, 1, 1, 1, 1]}
    >>> round(final_metric_score(y, s, subgroups=groups), 4)
    0.8247
    """
    return bias_score(y_true, y_score, subgroups=subgroups, metric="final",
                      sample_weight=sample_weight, pos_label=pos_label,
                      label_threshold=label_threshold, subgroup_threshold=subgroup_threshold,
                      power=power, overall_weight=overall_weight,
                      undefined=check_undefined(undefined, nan_policy,
                                                where="final_metric_score"))


def _response_methods(response_method) -> tuple:
    methods = (response_method,) if isinstance(response_method, str) else tuple(response_method)
    bad = [m for m in methods if m not in _RESPONSE_METHODS]
    if not methods or bad:
        raise ValueError(f"response_method must be one of {_RESPONSE_METHODS} or a tuple of "
                         f"them, got {response_method!r}")
    return methods


def _predicted_class_scores(predicted, positive):
    """Scores from ``predict``'s classes: 1.0 where the positive class is predicted (found by
    review: with ``pos_label`` the first class, the classes taken as scores ranked the
    negatives first, every AUC reversed); ``positive`` None leaves numbers (0/1 classes, a
    regressor's predictions) as they are, and makes booleans 1.0 where True (found by
    review: a routed scorer refused every fold of a model fitted on boolean labels).
    Predictions of more than one value besides ``positive`` are refused: they are no binary
    classifier's classes (a regressor's numbers)."""
    predicted = predicted.to_numpy() if isinstance(predicted, pd.Series) else np.asarray(predicted)
    if positive is not None:
        hits = np.asarray(predicted == positive, dtype=bool).reshape(predicted.shape)
        others = pd.unique(predicted[~hits].ravel())
        if len(others) > 1:
            # (found by review: a regressor's numbers compared with pos_label scored every row
            # 0.0, an AUC of 0.5 for any model, without a word)
            flat = predicted.ravel()
            like_first = pd.isna(flat) if pd.isna(others[0]) else (flat == others[0])
            second = int(np.flatnonzero(~hits.ravel() & ~np.asarray(like_first, dtype=bool))[0])
            shown = [v.item() if isinstance(v, np.generic) else v
                     for v in (others[0], flat[second])]
            raise ValueError(
                f"response_method='predict' gave {len(others):,} distinct values besides "
                f"pos_label={positive!r} (e.g. {shown[0]!r} and, at row {second}, "
                f"{shown[1]!r}): with pos_label, predictions are read as the classifier's "
                f"classes (1.0 where it predicts pos_label), and a binary classifier predicts "
                f"one other class at most. A regressor's predictions are scores: score them "
                f"without pos_label (labels 0/1 or boolean), or use a classifier's "
                f"decision_function or predict_proba")
        return hits.astype(np.float64)
    if predicted.dtype.kind == "b":
        return predicted.astype(np.float64)
    if predicted.dtype.kind not in "biuf":
        example = f" (e.g. {predicted.flat[0]!r})" if predicted.size else ""
        raise ValueError(f"response_method='predict' gave classes of dtype "
                         f"{predicted.dtype}{example}; pass pos_label= to say which class is "
                         f"positive")
    return predicted


def positive_class_scores(estimator, X, response_method=("decision_function", "predict_proba"),
                          pos_label=None) -> np.ndarray:
    """Scores of the positive class from the first available response method.

    ``predict_proba`` gives the column of ``pos_label`` (default: the second
    class, ``classes_[1]``); ``decision_function`` is negated when
    ``pos_label`` is the first class; a classifier's ``predict`` gives 1.0 where
    it predicts that class, 0.0 elsewhere (a regressor's predictions stay as
    they are; with ``pos_label`` they are refused, being no classes). Used by
    the routing-free scorers.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from fastbias.sklearn import positive_class_scores
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> model = LogisticRegression().fit(X, ["no", "no", "yes", "yes"])
    >>> bool(np.all(np.diff(positive_class_scores(model, X, "predict_proba")) > 0))
    True
    >>> bool(np.all(np.diff(positive_class_scores(model, X, "predict_proba", "no")) < 0))
    True
    """
    methods = _response_methods(response_method)
    classes = getattr(estimator, "classes_", None)
    if pos_label is not None and classes is not None and pos_label not in list(classes):
        # (found by review: the decision function's branch took any other value for the
        # second class, a typo unnoticed)
        raise ValueError(f"pos_label={pos_label!r} is not one of the estimator's classes "
                         f"{list(classes)}")
    for name in methods:
        method = getattr(estimator, name, None)
        if method is not None:
            break
    else:
        raise AttributeError(f"{type(estimator).__name__} has none of the response methods "
                             f"{methods}")
    out = np.asarray(method(X))
    if classes is not None and len(classes) != 2:
        raise ValueError(f"bias metrics need a binary classifier; the estimator has "
                         f"{len(classes)} classes")
    if name == "predict_proba":
        if out.ndim == 2:
            column = 1
            if pos_label is not None:
                if classes is None:
                    raise ValueError(f"pos_label={pos_label!r} needs the estimator's classes "
                                     f"(classes_) to find its column of predict_proba")
                column = list(classes).index(pos_label)
            out = out[:, column]
    elif name == "decision_function":
        if out.ndim == 2:
            raise ValueError("decision_function returned 2-D output; a binary classifier is needed")
        if pos_label is not None and classes is not None and pos_label == classes[0]:
            out = -out
    elif name == "predict" and classes is not None:  # (a classifier: its classes, not scores)
        out = _predicted_class_scores(out, classes[1] if pos_label is None else pos_label)
    elif name == "predict" and pos_label is not None:
        out = _predicted_class_scores(out, pos_label)
    return out


#: scikit-learn's word for "leave this request as it is" (``metadata_routing.UNCHANGED``)
_UNCHANGED = "$UNCHANGED$"


class _FoldScorer:
    """Scorer reading a fold's subgroups from X (columns or index labels); no routing needed.

    With metadata routing on, it takes part in it as scikit-learn's own scorers do: a
    ``sample_weight`` routed to it is an error (scikit-learn's) until
    :meth:`set_score_request` says whether to take it (found by review: it was ignored
    without a word, so a weighted search was scored unweighted)."""

    def __init__(self, metric, subgroups, subgroup_columns, response_method, settings):
        self.metric = metric
        self.subgroups = subgroups
        self.subgroup_columns = subgroup_columns
        self.response_method = response_method
        self.settings = settings
        self.first_undefined = _FirstUndefinedFold(metric)
        self.sample_weight_request = None  # (not set: a routed weight is refused)

    def set_score_request(self, *, sample_weight=_UNCHANGED) -> "_FoldScorer":
        """Whether a ``sample_weight`` routed to the scorer (metadata routing on) is taken:
        True (or an alias: the name it is routed under), False (not taken), None (not set:
        scikit-learn refuses a routed one); left out, the request stays as it is, as
        scikit-learn's own ``set_score_request``. Returns the scorer."""
        if sample_weight != _UNCHANGED:
            self.sample_weight_request = sample_weight
        return self

    def get_metadata_routing(self):
        """The scorer's metadata request (``score``: ``sample_weight`` as set by
        :meth:`set_score_request`), for scikit-learn's metadata routing."""
        from sklearn.utils.metadata_routing import MetadataRequest

        request = MetadataRequest(owner=type(self).__name__)
        request.score.add_request(param="sample_weight", alias=self.sample_weight_request)
        return request

    def _fold_subgroups(self, X):
        if self.subgroup_columns is not None:
            if not isinstance(X, pd.DataFrame):
                raise TypeError(f"subgroup_columns needs X to be a pandas DataFrame holding "
                                f"those columns, got {type(X).__name__}")
            missing = [c for c in self.subgroup_columns if c not in X.columns]
            if missing:
                raise KeyError(f"subgroup_columns {missing} are not columns of X "
                               f"(columns are {list(X.columns)[:20]})")
            return X[self.subgroup_columns]
        if not isinstance(X, (pd.DataFrame, pd.Series)):
            raise TypeError(f"subgroups= (aligned by index) needs X to be a pandas DataFrame or "
                            f"Series whose index labels identify the rows, got "
                            f"{type(X).__name__}")
        if not X.index.is_unique:  # (found by review: rows took another row's subgroups)
            twice = X.index[X.index.duplicated()]
            raise ValueError(f"X has duplicate index labels (e.g. {twice[0]!r}, "
                             f"{twice.size} repeats); subgroups= finds a fold's rows by "
                             f"X.index, so each row needs its own label (X.reset_index(drop="
                             f"True), with subgroups indexed alike)")
        try:
            positions = self.subgroups.index.get_indexer(X.index)
        except pd.errors.InvalidIndexError as exc:
            raise ValueError("subgroups has duplicate index labels; rows cannot be looked up "
                             "by X.index") from exc
        if (positions < 0).any():
            missing = X.index[positions < 0]
            raise KeyError(f"{missing.size} row(s) of X are not in the index of subgroups "
                           f"(e.g. {missing[0]!r})")
        return self.subgroups.iloc[positions]

    def __call__(self, estimator, X, y_true, sample_weight=None):
        subgroups = self._fold_subgroups(X)
        # the fold's subgroups are in X's row order; scikit-learn pairs y with X by position,
        # whatever y's own index (found by review: a y with a default index had every fold
        # refused, NaN under error_score=nan)
        if isinstance(y_true, pd.Series):
            y_true = y_true.to_numpy()
        scores = positive_class_scores(estimator, X, self.response_method,
                                       self.settings.get("pos_label"))
        notes = []
        value = _fold_score(y_true, scores, subgroups, self.metric, sample_weight,
                            notes=notes, **self.settings)
        self.first_undefined(notes, len(scores))
        return value

    def __repr__(self) -> str:
        where = (f"subgroup_columns={self.subgroup_columns!r}" if self.subgroup_columns is not None
                 else f"subgroups=<{type(self.subgroups).__name__} aligned by X.index>")
        return f"make_bias_scorer(metric={self.metric!r}, {where})"


def make_bias_scorer(metric: str = "final", *, subgroups=None, subgroup_columns=None,
                     response_method=("decision_function", "predict_proba"), pos_label=None,
                     label_threshold: float | None = None,
                     subgroup_threshold: float | None = None, power: float = -5,
                     overall_weight: float = 0.25, undefined: str = "propagate",
                     nan_policy: str | None = None):
    """A scikit-learn scorer for a bias-aware metric (higher is better).

    Parameters
    ----------
    metric : {"final", "overall_auc", "min_subgroup_auc", "min_bpsn_auc", "min_bnsp_auc"}
        ``"final"`` is the Jigsaw competition metric.
    subgroups : pandas DataFrame or Series, optional
        Routing-free fallback: memberships of all rows, indexed like ``X``
        (the scorer selects the fold's rows by ``X.index`` labels).
    subgroup_columns : list of str, optional
        Routing-free fallback: memberships are these columns of ``X``.
    response_method : str or tuple of str, default ("decision_function", "predict_proba")
        The first available method gives the scores (AUC only uses their order).
        ``"predict"`` scores a classifier's predicted classes: 1.0 where it predicts
        the positive class (``pos_label``, default the second class); a routed
        scorer takes it alone (it cannot tell predictions from scores in a tuple).
    pos_label : optional
        Positive class, when the labels are not 0/1 or boolean.
    label_threshold, subgroup_threshold : float, optional
        Binarise fractional labels / memberships (``>=``).
    power, overall_weight, undefined
        Settings of the final metric (see :func:`fastbias.final_metric`); with
        small folds, ``undefined="omit"`` skips subgroups a fold leaves
        one-class instead of scoring the fold NaN.
    nan_policy : deprecated
        The former name of ``undefined``.

    Returns
    -------
    callable
        ``scorer(estimator, X, y)``. Without ``subgroups``/``subgroup_columns``
        this is a scikit-learn scorer that requests the ``subgroups`` metadata
        (metadata routing must be enabled); to route ``sample_weight`` too, call
        ``.set_score_request(subgroups=True, sample_weight=True)`` on it
        (scikit-learn replaces the whole request on each call). With routing on,
        every such scorer, as scikit-learn's own, refuses a routed ``sample_weight``
        until ``.set_score_request(sample_weight=True)`` (or False: unweighted) says
        whether to take it.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.model_selection import cross_val_score
    >>> from fastbias.sklearn import make_bias_scorer
    >>> rng = np.random.default_rng(0)
    >>> X = pd.DataFrame({"x": rng.normal(size=600)})
    >>> y = (X["x"] + rng.normal(size=600) > 0).to_numpy()
    >>> S = pd.DataFrame({"a": rng.random(600) < 0.3, "b": rng.random(600) < 0.3})
    >>> scorer = make_bias_scorer("final", subgroups=S)  # routing-free: rows found by X.index
    >>> cross_val_score(LogisticRegression(), X, y, scoring=scorer, cv=3).round(3)
    array([0.869, 0.891, 0.84 ])
    """
    _check_score_name(metric)
    _response_methods(response_method)
    # check the final-metric settings now rather than at the first fold
    undefined = check_undefined(undefined, nan_policy, where="make_bias_scorer")
    BiasEvaluator([0, 1], {"g": [True, False]}, power=power, overall_weight=overall_weight,
                  undefined=undefined)
    settings = {"pos_label": pos_label, "label_threshold": label_threshold,
                "subgroup_threshold": subgroup_threshold, "power": power,
                "overall_weight": overall_weight, "undefined": undefined}
    if subgroups is not None and subgroup_columns is not None:
        raise ValueError("give subgroups or subgroup_columns, not both")
    if subgroup_columns is not None:
        columns = ([subgroup_columns] if isinstance(subgroup_columns, str)
                   else list(subgroup_columns))
        if not columns:
            raise ValueError("subgroup_columns is empty")
        return _FoldScorer(metric, None, columns, response_method, settings)
    if subgroups is not None:
        if not isinstance(subgroups, (pd.DataFrame, pd.Series)):
            raise TypeError(f"subgroups must be a pandas DataFrame or Series indexed like X "
                            f"(the rows are looked up by X.index), got {type(subgroups).__name__}; "
                            f"with arrays, enable metadata routing and pass them at fit time")
        return _FoldScorer(metric, subgroups.to_frame() if isinstance(subgroups, pd.Series)
                           else subgroups, None, response_method, settings)

    try:
        import sklearn
        from sklearn.metrics import make_scorer
    except ImportError:
        raise ImportError("make_bias_scorer needs scikit-learn (>= 1.4 for metadata routing): "
                          "pip install scikit-learn") from None

    if not sklearn.get_config().get("enable_metadata_routing", False):
        raise RuntimeError(
            "make_bias_scorer() without subgroups/subgroup_columns routes the subgroups of each "
            "fold as metadata, which needs sklearn.set_config(enable_metadata_routing=True) "
            "before the scorer is made. Without routing, pass subgroups=<DataFrame indexed like "
            "X> or subgroup_columns=[columns of X].")
    methods = _response_methods(response_method)
    if "predict" in methods and len(methods) > 1:
        raise ValueError(f"response_method {response_method!r} mixes 'predict' with scores: "
                         f"a routed scorer cannot tell which it was given (classes are not "
                         f"scores); give 'predict' alone, or the score methods")
    kwargs = {k: v for k, v in settings.items() if v is not None}
    scorer = make_scorer(_RoutedScore(metric, predicts=methods == ("predict",)),
                         response_method=response_method, greater_is_better=True,
                         metric=metric, **kwargs)
    # (sample_weight unset, as in scikit-learn's own scorers: a weight routed to it is refused
    # until set_score_request says whether to take it; a routed scorer left it out, so a
    # weighted fit was scored unweighted without a word; found by review)
    return scorer.set_score_request(subgroups=True, sample_weight=None)


__all__ = ["make_bias_scorer", "bias_score", "final_metric_score", "positive_class_scores",
           "SCORE_NAMES"]
