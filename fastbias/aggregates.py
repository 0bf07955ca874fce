"""Published aggregates: the Jigsaw final metric, the power mean and Pinned AUC.

* :func:`final_metric` is the score of the Kaggle "Jigsaw Unintended Bias in
  Toxicity Classification" competition: a weighted mix of the overall AUC and
  the power (generalized) means of the three per-subgroup AUCs.
* :func:`pinned_auc` is Pinned AUC (Dixon et al. 2018), kept for reproducing
  published numbers. Borkan et al. ("Limitations of Pinned AUC for Measuring
  Unintended Bias", 2019) show it moves with the class balance of a subgroup;
  prefer Subgroup, BPSN and BNSP AUC (:func:`fastbias.bias_metrics`).
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np
import pandas as pd

from . import _kernels as K
from ._core import SweepCounts, prepare_memberships, sweep_counts
from ._validation import (UndefinedMetricWarning, as_labels, as_scores, check_aligned,
                          subgroup_rows)
from .metrics import AUC_METRICS

NAN_POLICIES = ("propagate", "omit", "raise")
PINNED_METHODS = ("sample", "dixon", "expected", "expected_dixon")


def power_mean(values, p: float) -> float:
    """Generalized (power) mean ``(sum(x**p) / n) ** (1/p)`` of non-negative values.

    The helper of the Jigsaw competition metric. ``p = 0`` gives the geometric
    mean and ``p = -inf``/``+inf`` the minimum/maximum (the limits). With
    ``p < 0`` a zero value makes the mean 0. A NaN value makes the result NaN.

    Parameters
    ----------
    values : array-like of shape (n,)
        Non-negative numbers (e.g. one AUC per subgroup).
    p : float
        The power; the competition used ``-5``, which pulls the mean toward
        the worst (lowest) values.

    Returns
    -------
    float

    Examples
    --------
    >>> from fastbias import power_mean
    >>> power_mean([0.5, 1.0], 1)
    0.75
    >>> round(power_mean([0.5, 1.0], -5), 4)
    0.5708
    >>> power_mean([0.5, 1.0], float("-inf"))
    0.5
    """
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or np.isnan(p):
        raise TypeError(f"p must be a real number (not NaN), got {p!r}")
    x = np.asarray(values.to_numpy() if isinstance(values, (pd.Series, pd.Index)) else values)
    if x.ndim == 2 and 1 in x.shape:
        x = x.reshape(-1)
    if x.ndim != 1:
        raise ValueError(f"values must be one-dimensional, got shape {x.shape}")
    if x.size == 0:
        raise ValueError("values is empty: the power mean of no values is undefined")
    if x.dtype == np.bool_ or not np.issubdtype(x.dtype, np.number):
        raise TypeError(f"values must be numeric, got dtype {x.dtype}")
    x = x.astype(np.float64)
    if np.isnan(x).any():
        return float("nan")
    if (x < 0).any():
        first = int(np.flatnonzero(x < 0)[0])
        raise ValueError(f"values must be non-negative for a power mean, got {x[first]} at "
                         f"position {first}")
    p = float(p)
    if p == float("-inf"):
        return float(x.min())
    if p == float("inf"):
        return float(x.max())
    with np.errstate(divide="ignore"):
        if p == 0:
            return float(np.exp(np.mean(np.log(x))))
        # x**p is inf for x = 0 and p < 0; inf ** (1/p) = 0, the limit
        return float(np.mean(np.power(x, p)) ** (1.0 / p))


def final_metric(table, overall_auc=None, *, power: float = -5, overall_weight: float = 0.25,
                 nan_policy: str = "propagate") -> float:
    """The Jigsaw Unintended Bias competition metric.

    ``overall_weight * overall_auc + (1 - overall_weight) * bias_score``, where
    ``bias_score`` is the plain mean, over ``subgroup_auc``, ``bpsn_auc`` and
    ``bnsp_auc``, of each metric's :func:`power_mean` across subgroups.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per subgroup with columns ``subgroup_auc``, ``bpsn_auc`` and
        ``bnsp_auc``: what :func:`fastbias.bias_metrics` returns (or
        ``EvaluationResult.for_model()``, or the frame of
        ``fastbias.compat.compute_bias_metrics_for_model``).
    overall_auc : float, optional
        AUC of the model over all rows. Default: ``table.attrs["overall_auc"]``,
        which :func:`fastbias.bias_metrics` sets.
    power : float, default -5
        Power of the generalized mean (see :func:`power_mean`).
    overall_weight : float, default 0.25
        Weight of the overall AUC, in [0, 1].
    nan_policy : {"propagate", "omit", "raise"}, default "propagate"
        What an undefined (NaN) per-subgroup AUC does. ``"propagate"``: the
        result is NaN, as in the competition code (with an
        :class:`~fastbias.UndefinedMetricWarning` naming the groups).
        ``"omit"``: each power mean runs over the subgroups where that metric
        is defined, with a warning naming the groups left out. ``"raise"``: a
        ``ValueError`` naming them.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np, fastbias
    >>> y = np.array([0, 0, 1, 1, 0, 1, 0, 1])
    >>> s = np.array([0.1, 0.4, 0.35, 0.8, 0.7, 0.9, 0.2, 0.6])
    >>> groups = {"a": np.array([1, 1, 1, 1, 0, 0, 0, 0], bool),
    ...           "b": np.array([0, 0, 1, 0, 1, 1, 1, 1], bool)}
    >>> t = fastbias.bias_metrics(y, s, groups)
    >>> round(fastbias.final_metric(t), 4)
    0.8247
    >>> round(fastbias.final_metric(t, 0.8, power=1, overall_weight=0.5), 4)
    0.8167
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table must be a pandas DataFrame with columns {AUC_METRICS}, "
                        f"got {type(table).__name__}")
    missing = [c for c in AUC_METRICS if c not in table.columns]
    if missing:
        raise ValueError(f"table lacks column(s) {missing}; it needs {AUC_METRICS} "
                         f"(the table fastbias.bias_metrics returns)")
    if "model" in table.columns and table["model"].nunique() > 1:
        raise ValueError(f"table holds {table['model'].nunique()} models; pass one model's rows "
                         f"(EvaluationResult.for_model(name)) or use "
                         f"EvaluationResult.final_metric()")
    if overall_auc is None:
        if "overall_auc" not in table.attrs:
            raise ValueError("overall_auc not given and table.attrs has no 'overall_auc'; "
                             "pass the model's overall AUC")
        overall_auc = table.attrs["overall_auc"]
    if isinstance(overall_auc, bool) or not isinstance(overall_auc, numbers.Real):
        raise TypeError(f"overall_auc must be a number, got {overall_auc!r}")
    if not np.isnan(overall_auc) and not 0.0 <= overall_auc <= 1.0:
        raise ValueError(f"overall_auc must be in [0, 1], got {overall_auc}")
    if isinstance(overall_weight, bool) or not isinstance(overall_weight, numbers.Real) \
            or not 0.0 <= overall_weight <= 1.0:
        raise ValueError(f"overall_weight must be a number in [0, 1], got {overall_weight!r}")
    if nan_policy not in NAN_POLICIES:
        raise ValueError(f"nan_policy must be one of {NAN_POLICIES}, got {nan_policy!r}")
    if len(table) == 0:
        raise ValueError("table has no rows (no subgroups)")

    names = [str(x) for x in (table["subgroup"] if "subgroup" in table.columns else table.index)]
    undefined = []
    means = []
    for metric in AUC_METRICS:
        values = pd.to_numeric(table[metric], errors="raise").to_numpy(dtype=np.float64)
        nan = np.isnan(values)
        undefined += [f"{names[i]} ({metric})" for i in np.flatnonzero(nan)]
        if nan_policy == "omit":
            values = values[~nan]
        means.append(power_mean(values, power) if values.size else float("nan"))
    if undefined:
        shown = ", ".join(undefined[:12]) + (f", ... {len(undefined) - 12} more"
                                             if len(undefined) > 12 else "")
        if nan_policy == "raise":
            raise ValueError(f"{len(undefined)} per-subgroup AUC(s) undefined: {shown}")
        if nan_policy == "omit":
            message = (f"final metric: {len(undefined)} undefined per-subgroup AUC(s) left out "
                       f"of the power means: {shown}")
        else:
            message = (f"final metric is NaN: {len(undefined)} per-subgroup AUC(s) undefined: "
                       f"{shown}; pass nan_policy='omit' to leave them out")
        warnings.warn(message, UndefinedMetricWarning, stacklevel=2)
    bias_score = float(np.mean(means))
    return float(overall_weight * overall_auc + (1.0 - overall_weight) * bias_score)


# --------------------------------------------------------------------------- Pinned AUC

def _random_state(random_state):
    """What ``DataFrame.sample(random_state=...)`` draws with, and whether it is fresh per call."""
    if random_state is None:
        return np.random, False  # the global state, like pandas
    if isinstance(random_state, (np.random.RandomState, np.random.Generator)):
        return random_state, False
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return None, True
    raise TypeError(f"random_state must be an int, None, a numpy RandomState or Generator, "
                    f"got {random_state!r}")


def _pinned_population_size(method: str, n_rows: int, n_subgroup: int) -> int:
    return n_rows - n_subgroup if method in ("sample", "expected") else n_rows


def _check_population(name: str, method: str, n_subgroup: int, n_population: int,
                      replace: bool) -> None:
    if n_subgroup == 0:
        return
    if n_population == 0:
        raise ValueError(f"subgroup {name!r} covers every row: there is no background to pin it "
                         f"against")
    if not replace and n_subgroup > n_population:
        raise ValueError(f"subgroup {name!r} has {n_subgroup} rows but its background only "
                         f"{n_population}: the pinned set needs as many background rows as "
                         f"subgroup rows; pass replace=True to sample with replacement")


def _sampled_pinned_auc(labels, scores, group, method, rng, replace):
    """AUC of one drawn pinned set (subgroup rows + as many drawn rows); NaN if one-class."""
    n_rows = labels.shape[0]
    n_g = group.shape[0]
    if method == "sample":
        positions = np.asarray(rng.choice(n_rows - n_g, size=n_g, replace=replace),
                               dtype=np.int64)
        # background position p is row p + #{subgroup rows before it}; the subgroup row
        # group[j] has group[j] - j background rows before it
        drawn = positions + np.searchsorted(group - np.arange(n_g), positions, side="right")
    else:
        drawn = np.asarray(rng.choice(n_rows, size=n_g, replace=replace), dtype=np.int64)
    rows = np.concatenate([group, drawn])
    y = labels[rows]
    s = scores[rows]
    neg = np.sort(s[~y])
    pos = np.sort(s[y])
    if neg.size == 0 or pos.size == 0:
        return float("nan")
    return float(K.twice_auc_numerator_sorted(neg, pos)) / (2.0 * neg.size * pos.size)


def _expected_pinned_terms(sc: SweepCounts, method: str, replace: bool) -> dict:
    """Expected pair counts and twice-U of the four blocks of the pinned set (equation 3).

    The pinned set of subgroup g is Dg plus a sample S of m = |Dg| rows drawn
    uniformly from a population P (the background for ``"expected"``, all rows
    for ``"expected_dixon"``), with P-/P+ its negatives/positives and N = |P|.
    A given row of P is drawn f1 = m/N times in expectation, and a given
    (negative, positive) pair of distinct rows of P is drawn together
    f2 = m(m-1)/(N(N-1)) times (m(m-1)/N**2 with replacement). So

    * within the sample:   E[U(S+ > S-)]  = f2 U(P+ > P-),  E[pairs] = f2 |P-||P+|
    * sample +, subgroup -: E[U(S+ > Dg-)] = f1 U(P+ > Dg-), E[pairs] = f1 |P+||Dg-|
    * subgroup +, sample -: E[U(Dg+ > S-)] = f1 U(Dg+ > P-), E[pairs] = f1 |Dg+||P-|
    * within the subgroup: U(Dg+ > Dg-) and |Dg-||Dg+|, fixed.

    With P the background, U(P+ > P-) is the overall U minus the subgroup,
    BPSN and BNSP U; with P all rows, U(P+ > Dg-) is BPSN + subgroup U and
    U(Dg+ > P-) is BNSP + subgroup U. Returns arrays (one entry per subgroup).
    """
    c = sc.counts.astype(np.float64)
    g_neg = c[:, K.CELL_SUBGROUP_NEG]
    g_pos = c[:, K.CELL_SUBGROUP_POS]
    u_sub = c[:, K.TWICE_SUBGROUP_U]
    u_bpsn = c[:, K.TWICE_BPSN_U]
    u_bnsp = c[:, K.TWICE_BNSP_U]
    total_neg = float(sc.total_neg)
    total_pos = float(sc.total_pos)
    overall = float(sc.twice_overall_u)
    if method == "expected":
        p_neg, p_pos = total_neg - g_neg, total_pos - g_pos
        u_pp = overall - u_sub - u_bpsn - u_bnsp
        u_p_over_g = u_bpsn
        u_g_over_p = u_bnsp
    else:
        p_neg = np.full_like(g_neg, total_neg)
        p_pos = np.full_like(g_pos, total_pos)
        u_pp = np.full_like(u_sub, overall)
        u_p_over_g = u_bpsn + u_sub
        u_g_over_p = u_bnsp + u_sub
    m = g_neg + g_pos
    n_pop = p_neg + p_pos
    with np.errstate(divide="ignore", invalid="ignore"):
        f1 = np.where(n_pop > 0, m / n_pop, 0.0)
        pair_den = n_pop * n_pop if replace else n_pop * (n_pop - 1)
        f2 = np.where(pair_den > 0, m * (m - 1) / pair_den, 0.0)
    return {
        "within_subgroup_pairs": g_neg * g_pos,
        "within_subgroup_twice_u": u_sub,
        "within_sample_pairs": f2 * p_neg * p_pos,
        "within_sample_twice_u": f2 * u_pp,
        "sample_positive_subgroup_negative_pairs": f1 * p_pos * g_neg,
        "sample_positive_subgroup_negative_twice_u": f1 * u_p_over_g,
        "subgroup_positive_sample_negative_pairs": f1 * g_pos * p_neg,
        "subgroup_positive_sample_negative_twice_u": f1 * u_g_over_p,
    }


def _expected_pinned_auc(terms: dict) -> np.ndarray:
    twice_u = sum(v for k, v in terms.items() if k.endswith("_twice_u"))
    pairs = sum(v for k, v in terms.items() if k.endswith("_pairs"))
    out = np.full(pairs.shape, np.nan)
    np.divide(twice_u, 2.0 * pairs, out=out, where=pairs > 0)
    return out


def pinned_auc(y_true, y_score, subgroups, *, method: str = "sample", random_state=25,
               replace: bool = False, label_threshold: float | None = None,
               subgroup_threshold: float | None = None) -> pd.Series:
    """Pinned AUC (Dixon et al. 2018) of every subgroup: sampled or in expectation.

    The pinned set of a subgroup g is all rows of g plus as many other rows,
    drawn at random; Pinned AUC is the ROC AUC of that set. It depends on the
    class balance of g, not only on how the model scores g (Borkan et al.
    2019, "Limitations of Pinned AUC"); Subgroup, BPSN and BNSP AUC
    (:func:`fastbias.bias_metrics`) do not, and are the recommended metrics.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels (bool or 0/1), or fractional with ``label_threshold``.
    y_score : array-like of shape (n,)
        Finite scores.
    subgroups : DataFrame of boolean columns, dict of name -> mask, or (n, k) array
        Subgroup memberships, as in :func:`fastbias.bias_metrics`.
    method : {"sample", "dixon", "expected", "expected_dixon"}, default "sample"
        ``"sample"`` reproduces the authors' reference implementation exactly:
        the drawn half is ``df[~df[g]].sample(len(df[df[g]]), random_state=25)``,
        i.e. the first ``|g|`` entries of
        ``np.random.RandomState(random_state).permutation(n_background)`` over
        the background rows in their given order.
        ``"dixon"``: the original definition, the drawn half comes from all
        rows (the subgroup included; a subgroup row drawn again counts twice).
        ``"expected"`` / ``"expected_dixon"``: no sampling. Pinned AUC is the
        pair-weighted mix of four AUCs (equation 3 of the Limitations report:
        the drawn set's AUC, Subgroup AUC, BPSN and BNSP AUC); these evaluate it
        with the *expected* number of pairs and the expected U of every block
        over the draws of ``"sample"`` / ``"dixon"``, from the counts of one
        sort-and-sweep. This is a ratio of expectations, E[U] / E[pairs], which
        approximates the mean of the sampled Pinned AUC with an error of order
        1/|g| (exact when the whole background is drawn). Deterministic.
    random_state : int, None, numpy RandomState or Generator, default 25
        The sampling seed, as in ``DataFrame.sample``: an int seeds a fresh
        ``RandomState`` for every subgroup (what the reference code does, since
        it passes ``random_state=25`` on each call); a RandomState/Generator is
        drawn from in subgroup order; None uses numpy's global state. Ignored
        by the expected methods.
    replace : bool, default False
        Draw with replacement. Without replacement a subgroup larger than its
        background is an error (the reference code cannot build its pinned set).
    label_threshold : float, optional
        Positive iff ``y_true >= label_threshold``.
    subgroup_threshold : float, optional
        Member iff ``mask >= subgroup_threshold``.

    Returns
    -------
    pandas.Series
        Pinned AUC per subgroup (index ``subgroup``, name ``pinned_auc``). An
        empty subgroup or a one-class pinned set gives NaN with an
        :class:`~fastbias.UndefinedMetricWarning`.

    Examples
    --------
    >>> import numpy as np, fastbias
    >>> rng = np.random.default_rng(0)
    >>> y = rng.random(400) < 0.5
    >>> s = rng.random(400) + 0.5 * y
    >>> g = {"g": np.arange(400) < 100}
    >>> sampled = fastbias.pinned_auc(y, s, g)
    >>> expected = fastbias.pinned_auc(y, s, g, method="expected")
    >>> round(float(sampled["g"]), 3), round(float(expected["g"]), 3)
    (0.884, 0.891)
    """
    if method not in PINNED_METHODS:
        raise ValueError(f"method must be one of {PINNED_METHODS}, got {method!r}")
    if not isinstance(replace, (bool, np.bool_)):
        raise TypeError(f"replace must be True or False, got {replace!r}")
    check_aligned([("y_true", y_true), ("y_score", y_score), ("subgroups", subgroups)])
    labels = as_labels(y_true, "y_true", threshold=label_threshold)
    n = labels.shape[0]
    scores = as_scores(y_score, "y_score", n)
    names, rows = subgroup_rows(subgroups, n, threshold=subgroup_threshold)
    for name, group in zip(names, rows):
        _check_population(name, method, group.shape[0],
                          _pinned_population_size(method, n, group.shape[0]), replace)

    if method.startswith("expected"):
        sc = sweep_counts(scores, prepare_memberships(labels, rows, names))
        values = _expected_pinned_auc(_expected_pinned_terms(sc, method, replace))
    else:
        shared_rng, fresh = _random_state(random_state)
        values = np.empty(len(names))
        for j, group in enumerate(rows):
            rng = np.random.RandomState(random_state) if fresh else shared_rng
            values[j] = _sampled_pinned_auc(labels, scores, group, method, rng, replace)

    result = pd.Series(values, index=pd.Index(names, name="subgroup"), name="pinned_auc")
    undefined = [f"{name} ({len(group)} rows)" for name, group, v in zip(names, rows, values)
                 if np.isnan(v)]
    if undefined:
        warnings.warn(f"pinned AUC undefined (empty subgroup or one-class pinned set), set to "
                      f"NaN for {len(undefined)} subgroup(s): {', '.join(undefined[:12])}",
                      UndefinedMetricWarning, stacklevel=2)
    return result
