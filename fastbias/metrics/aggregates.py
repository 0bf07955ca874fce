"""Aggregates of the per-subgroup metrics: power means, the Jigsaw final metric, Pinned AUC terms.

One implementation of the final metric serves a table (:func:`final_metric`)
and many bootstrap replicates at once (:func:`final_metric_values`).
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np
import pandas as pd

from ..sweep import _kernels as K
from ..sweep.counts import SweepCounts
from ..validate.errors import UndefinedMetricWarning, visible
from ..validate.settings import check_undefined
from .definitions import AUC_METRICS


def power_mean(values, p: float) -> float:
    """Generalized (power) mean ``(sum(x**p) / n) ** (1/p)`` of non-negative values.

    The helper of the Jigsaw competition metric. ``p = 0`` gives the geometric
    mean and ``p = -inf``/``+inf`` the minimum/maximum (the limits). With
    ``p < 0`` a zero value makes the mean 0. A NaN value makes the result NaN.
    Where a power leaves the floats (``0.45 ** -1000``, ``1e200 ** 2``), the values are
    first divided by their largest (``p > 0``) or smallest (``p < 0``), so a power of any
    size gives the mean, not 0 or inf, and a power near 0 (below 2**-4) goes through
    ``expm1``/``log1p``; elsewhere the formula is the kernel's, bit for bit.

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
    return float(power_means(x, float(p)))


def power_means(x: np.ndarray, p: float):
    """Power means of non-negative ``x`` along its last axis (NaN propagates): the one
    formula behind :func:`power_mean`, :func:`final_metric` and the bootstrap's final metric."""
    if p == float("-inf"):
        return np.min(x, axis=-1)
    if p == float("inf"):
        return np.max(x, axis=-1)
    with np.errstate(divide="ignore", over="ignore", under="ignore", invalid="ignore"):
        if p == 0:
            return np.exp(np.mean(np.log(x), axis=-1))
        near = _power_means_near_zero(x, p) if abs(p) < _SMALL_POWER else None
        if near is not None and np.all(near[1]):
            return near[0]
        means = _power_means_of_floats(x, p)
        return means if near is None else np.where(near[1], near[0], means)


def _power_means_near_zero(x: np.ndarray, p: float) -> tuple:
    """``(means, good)``: the power means as ``exp(log1p(mean(expm1(p ln x))) / p)``
    (``x**p - 1``, all the mean needs where x**p is near 1, kept by expm1), and where that
    is the better formula: every ``|p ln(x / 2**k)|`` at most 1, ``2**k`` a power of two near
    the values' geometric mean that divides them first (exactly, through their logs), so
    that the last exp's argument is small (exp(345) would carry 345 times the rounding of
    its argument). Elsewhere the powers are far from 1 and the plain formula is exact
    enough."""
    # (x = fraction x 2**exponent exactly: ln x less k ln 2 as ln(fraction) plus a small
    # multiple of ln 2, not as a difference of two numbers near 690)
    fraction, exponent = np.frexp(x)
    logs = np.where((x > 0) & np.isfinite(x), exponent + np.log2(fraction), np.nan)
    # the mean of each row's finite logs (a row of none: NaN), without np.nanmean, whose
    # warning for such a row would need warnings.catch_warnings: process-wide state, which
    # calls in threads undo for each other (found by review: UndefinedMetricWarning, a
    # RuntimeWarning, was then ignored for good)
    finite = np.isfinite(logs)
    centre = np.sum(np.where(finite, logs, 0.0), axis=-1) / np.sum(finite, axis=-1)
    k = np.clip(np.round(np.nan_to_num(centre)), -1022, 1023)
    centred = p * (np.log(fraction) + (exponent - np.expand_dims(k, -1)) * _LN2)
    good = ~(np.abs(np.where(finite, centred, 0.0)) > 1.0).any(axis=-1)
    t = np.log1p(np.mean(np.expm1(centred), axis=-1)) / p  # ln(mean / 2**k)
    # 2**k e**t with the power of two of e**t taken out first: e**t alone may leave the
    # floats where the mean does not (e**-948 x 2**346, a mean of 2.2e-308)
    whole = np.round(np.where(np.isfinite(t), t, 0.0) / _LN2)
    means = np.where(np.isfinite(t),
                     np.ldexp(np.exp(t - whole * _LN2), (k + whole).astype(np.int64)),
                     np.exp2(k) * np.exp(t))
    return means, good


def _power_means_of_floats(x: np.ndarray, p: float):
    """The power means by the plain formula, ``mean(x**p) ** (1/p)``, and, where a power
    left the floats, on values scaled by their largest (p > 0) or smallest (p < 0)."""
    # x**p is inf for x = 0 and p < 0; inf ** (1/p) = 0, the limit
    powered = np.power(x, p)
    mean = np.mean(powered, axis=-1)
    means = mean ** (1.0 / p)
    # where a positive value's power overflowed or fell below the normal floats (or their
    # sum overflowed), the plain formula is wrong (0 or inf for a mean of 0.5): those rows
    # again, each scaled by its largest value (p > 0) or its smallest (p < 0), so that every
    # power is at most 1 and one of them is 1
    zero_below = (x == 0).any(axis=-1) & (p < 0)  # (the mean is then 0)
    # (an infinite value's mean is its limit, inf or by it 0: the formula's)
    lost = (((x > 0) & ~((powered >= _SMALLEST_NORMAL) & (powered < np.inf))).any(axis=-1)
            | ~np.isfinite(mean)) & ~zero_below & ~np.isnan(x).any(axis=-1) \
        & ~np.isinf(x).any(axis=-1)
    if not np.any(lost):
        return means
    rows = x.reshape(-1, x.shape[-1])[np.ravel(lost)]
    m = rows.min(axis=-1) if p < 0 else rows.max(axis=-1)
    again = m * np.mean(np.power(rows / m[:, None], p), axis=-1) ** (1.0 / p)
    if np.ndim(means) == 0:
        return again[0]
    means = np.array(means, dtype=np.float64)
    means[lost] = again
    return means


_SMALLEST_NORMAL = np.finfo(np.float64).tiny

_LN2 = float(np.log(2.0))

#: below this |p| the power mean is taken as exp(log1p(mean(expm1(p ln x))) / p): x**p is
#: then 1 plus a little, and (x**p - 1) / p, what the mean needs, would lose its digits (a
#: review: 1.4% off at p = 1e-15, 58% at 1e-300)
_SMALL_POWER = 2.0 ** -4


def final_metric(table, overall_auc=None, *, power: float = -5, overall_weight: float = 0.25,
                 undefined: str = "propagate", nan_policy: str | None = None,
                 context: str = "") -> float:
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
        ``fastbias.compat.compute_bias_metrics_for_model``). Each AUC is in
        [0, 1], or NaN where undefined; any other value is a ``ValueError``.
    overall_auc : float, optional
        AUC of the model over all rows. Default: ``table.attrs["overall_auc"]``,
        which :func:`fastbias.bias_metrics` sets.
    power : float, default -5
        Power of the generalized mean (see :func:`power_mean`).
    overall_weight : float, default 0.25
        Weight of the overall AUC, in [0, 1].
    undefined : {"propagate", "omit", "raise"}, default "propagate"
        What an undefined (NaN) per-subgroup AUC does. ``"propagate"``: the
        result is NaN, as in the competition code (with an
        :class:`~fastbias.UndefinedMetricWarning` naming the groups).
        ``"omit"``: each power mean runs over the subgroups where that metric
        is defined, silently (you asked for it; the table shows which values
        are NaN). ``"raise"``: a ``ValueError`` naming them.
    nan_policy : deprecated
        The former name of ``undefined``.
    context : str, optional
        What the warning of a NaN result names first (``EvaluationResult.final_metric``
        passes the model: ``"model 'm': final metric is NaN ..."``).

    Returns
    -------
    float

    Notes
    -----
    The competition's metric is defined over the identity subgroups: rows
    that are intersections of them (listed in ``table.attrs["intersections"]``
    by ``bias_metrics``/``evaluate`` with ``intersections=``) are left out.

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
    value, note = final_metric_and_note(table, overall_auc, power=power,
                                        overall_weight=overall_weight, undefined=undefined,
                                        nan_policy=nan_policy)
    lead = f"{context}: " if context else ""
    if note:
        warnings.warn(lead + note, UndefinedMetricWarning, stacklevel=2)
    return value


def final_metric_and_note(table, overall_auc=None, *, power: float = -5,
                          overall_weight: float = 0.25, undefined: str = "propagate",
                          nan_policy: str | None = None) -> tuple:
    """``(value, note)``: :func:`final_metric` checked and computed, and the sentence its
    warning would say (None: no warning), for a caller that shows it its own way (a report
    of several models: no ``warnings.catch_warnings``, whose process-wide filters calls in
    threads undo for each other)."""
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
    if isinstance(power, bool) or not isinstance(power, numbers.Real) or np.isnan(power):
        raise TypeError(f"power must be a real number (not NaN), got {power!r}")
    undefined_policy = check_undefined(undefined, nan_policy, where="final_metric")
    if len(table) == 0:
        raise ValueError("table has no rows (no subgroups)")
    _check_auc_range(table)
    table = identity_subgroup_rows(table)
    return final_metric_noted(table, overall_auc, power, overall_weight, undefined_policy)


def _check_auc_range(table: pd.DataFrame) -> None:
    """Refuses a per-subgroup AUC outside [0, 1] (NaN, undefined, is let through): a table of
    AUCs in percent, or one edited by hand, would otherwise give a final metric that looks
    like one (81 and 90 gave 61.3)."""
    names = np.asarray(table["subgroup"] if "subgroup" in table.columns else table.index)
    for metric in AUC_METRICS:
        values = pd.to_numeric(table[metric], errors="raise").to_numpy(dtype=np.float64)
        with np.errstate(invalid="ignore"):
            bad = np.flatnonzero(~np.isnan(values) & ~((values >= 0.0) & (values <= 1.0)))
        if bad.size:
            i = int(bad[0])
            hint = " (AUCs in percent? divide them by 100)" if (values[bad] > 1.0).any() else ""
            raise ValueError(f"table column {metric!r} holds {float(values[i])!r} for subgroup "
                             f"{str(names[i])!r} (row {i}){_and_more(bad.size)}; a per-subgroup "
                             f"AUC must be in [0, 1], or NaN where undefined{hint}")


def _and_more(count: int) -> str:
    return f" and {count - 1} more value(s) outside [0, 1]" if count > 1 else ""


def identity_subgroup_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of the identity subgroups: intersections (``table.attrs["intersections"]``)
    are left out of the competition's metric."""
    if table.attrs.get("intersections"):
        labels = table["subgroup"] if "subgroup" in table.columns else table.index
        table = table[~pd.Index(labels).isin(table.attrs["intersections"])]
        if len(table) == 0:
            raise ValueError("table has only intersections (table.attrs['intersections']); the "
                             "final metric is defined over the identity subgroups")
    return table


def final_metric_noted(table: pd.DataFrame, overall_auc: float, power: float,
                       overall_weight: float, undefined_policy: str):
    """``(value, note)``: the final metric of a checked table (identity subgroups only) and,
    under ``"propagate"``, the sentence that says which AUCs made it NaN (``None`` when none
    did or under ``"omit"``); ``"raise"`` raises. The caller decides whether and how often
    the note is shown (a scorer shows it once)."""
    names = [str(x) for x in (table["subgroup"] if "subgroup" in table.columns else table.index)]
    undefined = []
    means = []
    for metric in AUC_METRICS:
        values = pd.to_numeric(table[metric], errors="raise").to_numpy(dtype=np.float64)
        nan = np.isnan(values)
        undefined += [f"{names[i]} ({metric})" for i in np.flatnonzero(nan)]
        if undefined_policy == "omit":
            values = values[~nan]
        means.append(float(power_means(values, float(power))) if values.size else float("nan"))
    note = None
    if undefined:
        shown = _listed(undefined)
        if undefined_policy == "raise":
            raise ValueError(f"{len(undefined)} per-subgroup AUC(s) undefined: {shown}")
        if undefined_policy == "propagate":
            note = (f"final metric is NaN: {len(undefined)} per-subgroup AUC(s) undefined: "
                    f"{shown}; pass undefined='omit' to leave them out")
    value = float(_combined(overall_auc, np.array(means), overall_weight))
    if note is None and np.isnan(value):  # (whatever the policy: a NaN is always said)
        why = ("the overall AUC is NaN (undefined: one class only)" if np.isnan(overall_auc)
               else "a per-subgroup AUC is undefined in every subgroup, so undefined='omit' "
                    "leaves no value to average")
        note = f"final metric is NaN: {why}"
        if undefined_policy == "raise":
            raise ValueError(note)
    return value, note


def _combined(overall_auc, power_means_of_aucs, overall_weight: float):
    """The competition's weighting of the overall AUC and the mean of the three power means
    (the last axis of ``power_means_of_aucs``)."""
    return (overall_weight * np.asarray(overall_auc)
            + (1.0 - overall_weight) * np.mean(power_means_of_aucs, axis=-1))



def identity_mask(names, intersections) -> np.ndarray:
    """Which of the rows ``names`` are identities, not ``intersections``: the rows the final
    metric is over (see :func:`identity_subgroup_rows`, which reads a table's ``attrs``)."""
    return ~pd.Index(list(names)).isin(list(intersections or ()))


def final_metric_values(overall, metrics: dict, power: float = -5.0,
                         overall_weight: float = 0.25):
    """Jigsaw final metric, vectorised over leading axes (NaN propagates).

    ``metrics[name]`` has the subgroups on the last axis.
    """
    means = np.stack([power_means(np.asarray(metrics[name], dtype=np.float64), float(power))
                      for name in AUC_METRICS], axis=-1)
    return _combined(overall, means, overall_weight)



def _listed(names: list, most: int = 12) -> str:
    """The first ``most`` names, comma-separated, and how many more there are (control
    characters shown as escapes: a newline in a name forged a line, found by review)."""
    more = len(names) - most
    return ", ".join(visible(name) for name in names[:most]) + (f", ... {more} more" if more > 0 else "")


def worst_auc(values: np.ndarray, names: list, metric: str, undefined_policy: str):
    """``(value, note)``: the minimum over subgroups of one AUC metric, with the final
    metric's ``undefined`` policy, and under ``"propagate"`` the sentence that says which
    subgroups made it NaN (``None`` otherwise; ``"omit"`` is silent, ``"raise"`` raises)."""
    nan = np.isnan(values)
    if not nan.any():
        return float(values.min()), None
    undefined = [names[i] for i in np.flatnonzero(nan)]
    shown = _listed(undefined)
    if undefined_policy == "raise":
        raise ValueError(f"min {metric}: undefined for {len(undefined)} subgroup(s): {shown}")
    if undefined_policy == "omit":
        if (~nan).any():
            return float(values[~nan].min()), None
        return float("nan"), (f"min {metric} is NaN: undefined in every subgroup, so "
                              f"undefined='omit' leaves no value")
    return float("nan"), (f"min {metric} is NaN: undefined for {len(undefined)} subgroup(s): "
                          f"{shown}; use undefined='omit' to leave them out")



PINNED_METHODS = ("sample", "dixon", "expected", "expected_dixon")


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
