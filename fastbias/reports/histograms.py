"""Binned scores of every model and subgroup, split into the four cells (for the figures)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..validate.categories import category_codes
from ..validate.columns import from_foreign, names_column
from ..validate.rows import rows_digest
from ..validate.settings import as_score_range, check_bins
from ..validate.subgroups import identity_values
from ..validate.values import as_labels

#: The four cells of a subgroup, in the order of ``ScoreHistograms.counts[..., cell, :]``.
HISTOGRAM_CELLS = ("subgroup_negatives", "subgroup_positives", "background_negatives",
                   "background_positives")


@dataclass(frozen=True)
class ScoreHistograms:
    """Binned scores of every model and subgroup, split into the four cells.

    Attributes
    ----------
    edges : ndarray of float64, shape (bins + 1,)
        Common bin edges (scores outside are put in the end bins).
    counts : ndarray of int64, shape (n_models, n_subgroups, 4, bins)
        Rows per bin; the third axis follows :data:`HISTOGRAM_CELLS`
        (subgroup negatives, subgroup positives, background negatives,
        background positives). Background = the rows the evaluation compared
        the subgroup with (it leaves out unannotated rows under
        ``missing_subgroup="exclude"``).
    models, subgroups : list of str
    n_rows, n_negatives, n_positives : int
        Rows of the data set, and its negatives and positives (rows with a label and,
        where ``nan_policy="omit"`` left out rows of missing weight, a weight).
    n_without_weight : int
        Rows with a label left out for a missing weight (``nan_policy="omit"``).
    absent : frozenset
        ``(model, subgroup)`` pairs of subgroups a model does not have (each model keeps
        the intersections and combinations of values large enough on its own rows): their
        counts are of those rows, but no metric of the model is.
    """

    edges: np.ndarray
    counts: np.ndarray
    models: list
    subgroups: list
    n_rows: int
    n_negatives: int
    n_positives: int
    n_without_weight: int = 0
    absent: frozenset = frozenset()

    def cells(self, model: str, subgroup: str) -> dict:
        """The four histograms of one (model, subgroup), keyed by cell name."""
        try:
            m = self.models.index(model)
        except ValueError:
            raise KeyError(f"model {model!r} has no histograms; models are {self.models}") from None
        try:
            g = self.subgroups.index(subgroup)
        except ValueError:
            raise KeyError(f"subgroup {subgroup!r} has no histograms; subgroups are "
                           f"{self.subgroups}") from None
        return {name: self.counts[m, g, c] for c, name in enumerate(HISTOGRAM_CELLS)}


def _membership(column: pd.Series, threshold: float):
    """(member, annotated) boolean arrays of one identity column, as evaluate() reads it."""
    values = identity_values(column, str(column.name), threshold)
    annotated = (np.ones(values.values.shape[0], dtype=bool) if values.missing is None
                 else ~values.missing)
    return values.member_mask(), annotated


def score_histograms(df: pd.DataFrame, result, *, bins: int = 40,
                     score_range=None, sample_weight=None) -> ScoreHistograms:
    """Bin every model's scores per subgroup and background, negatives and positives apart.

    The memberships, labels and backgrounds follow ``result.settings``
    (thresholds and missing-identity policy), so every histogram adds up to
    the matching count in ``result.table``. Backgrounds are the class totals
    minus the subgroup, so the cost is one pass over the rows per model plus
    one over each subgroup's rows.

    Parameters
    ----------
    df : pandas.DataFrame
        The frame that was evaluated.
    result : fastbias.EvaluationResult
    bins : int, default 40
    score_range : (float, float), optional
        Default: [0, 1] when all scores lie there, else the scores' range. Two finite
        numbers, the low end first (else a ValueError naming it); scores outside it are
        counted in the end bins.
    sample_weight : str or array-like, optional
        The weights given to :func:`fastbias.evaluate` (a column of ``df`` or an
        array): needed where ``nan_policy="omit"`` left out rows of missing weight,
        so that the histograms leave them out too.

    Returns
    -------
    ScoreHistograms

    Examples
    --------
    >>> import fastbias
    >>> from fastbias.report import score_histograms
    >>> df = fastbias.make_jigsaw_like(n_rows=20_000, n_identities=2, random_state=0)
    >>> res = fastbias.evaluate(df, label="toxicity", scores="model_fair",
    ...                         subgroups=["male", "female"])
    >>> h = score_histograms(df, res, bins=10)
    >>> h.counts.shape
    (1, 2, 4, 10)
    >>> int(h.cells("model_fair", "male")["subgroup_positives"].sum()) == int(
    ...     res.table.loc[0, "subgroup_positives"])
    True
    """
    bins = check_bins(bins)
    if score_range is not None:
        score_range = as_score_range(score_range)
    df = from_foreign(df)  # (a polars or pyarrow frame, as evaluate took it: found by review)
    settings = result.settings
    n = df.shape[0]
    # rows evaluate() left out under nan_policy="omit" (missing label or weight, non-finite
    # score) are left out here too: they go to a discard bin
    label_column = df[result.label]
    label_ok = ~label_column.isna().to_numpy()
    n_without_weight = 0  # rows with a label left out for a missing weight
    if sample_weight is not None and settings.get("weighted") is False:
        # (the weights would be read for nothing: the report would look weighted while its
        # table is not; found by review)
        raise ValueError(f"sample_weight={sample_weight!r} was given, but the result was "
                         "evaluated without weights: leave sample_weight out, or evaluate "
                         "with it")
    recorded = settings.get("weight_column")
    if (recorded is not None and sample_weight is not None
            and isinstance(sample_weight, str) and sample_weight != recorded):
        raise ValueError(f"sample_weight={sample_weight!r}, but the result was evaluated "
                         f"with the weight column {recorded!r}")
    if settings.get("missing_weight_rows"):
        # (rows of missing weight were left out of every model: found by review, they were
        # drawn in the figures of cells the table calls empty)
        sample_weight = settings.get("weight_column") if sample_weight is None \
            else sample_weight
        if sample_weight is None:
            raise ValueError("the result left out rows of missing weight (nan_policy='omit'): "
                             "pass sample_weight= (the weights given to evaluate) so that the "
                             "histograms leave out the same rows")
        weights = df[sample_weight] if names_column(df, sample_weight) else sample_weight
        missing = np.asarray(pd.isna(pd.Series(np.asarray(weights, dtype=object)
                                               if not isinstance(weights, pd.Series)
                                               else weights)), dtype=bool)
        if missing.shape != label_ok.shape or int(missing.sum()) != settings[
                "missing_weight_rows"]:
            raise ValueError(f"sample_weight has {int(missing.sum())} missing value(s) in "
                             f"{missing.shape[0]} rows, but the result left out "
                             f"{settings['missing_weight_rows']} row(s) of missing weight in "
                             f"{n}: pass the weights given to evaluate")
        recorded_rows = settings.get("missing_weight_digest")
        if recorded_rows is not None and rows_digest(missing) != recorded_rows:
            # (as many missing, on other rows: found by review, drawn in cells the table
            # counts without them)
            raise ValueError(f"sample_weight is missing on {int(missing.sum())} row(s), as "
                             f"many as the result left out, but not on the same rows: pass "
                             f"the weights given to evaluate")
        n_without_weight = int(np.count_nonzero(label_ok & missing))
        label_ok &= ~missing
    labels = np.zeros(n, dtype=bool)
    pos_label = settings.get("pos_label")
    labels[label_ok] = as_labels(label_column[label_ok], f"label column {result.label!r}",
                                 threshold=None if pos_label is not None
                                 else settings.get("label_threshold", 0.5),
                                 pos_label=pos_label)
    scores = [df[m].to_numpy(dtype=np.float64, na_value=np.nan) for m in result.models]
    finite = [np.isfinite(s) & label_ok for s in scores]
    if score_range is None:
        lo = min((float(np.min(s[ok])) for s, ok in zip(scores, finite) if ok.any()), default=0.0)
        hi = max((float(np.max(s[ok])) for s, ok in zip(scores, finite) if ok.any()), default=1.0)
        edges = histogram_edges(lo, hi, bins)
    else:
        edges = histogram_edges(*score_range, bins, widen=False)
    exclude = settings.get("missing_subgroup", "background") == "exclude"
    threshold = settings.get("subgroup_threshold", 0.5)
    members, universes = [], []
    parts_of = settings.get("intersection_members") or {}
    values_of = settings.get("sensitive_members") or {}
    codes = {}  # each sensitive feature read once, by the reader evaluate used

    def membership(name):
        if name in values_of:
            return _value_membership(df, values_of[name], codes)
        if name in parts_of:
            return _intersection_membership(df, parts_of[name], threshold)
        return _membership(df[name], threshold)

    for name in result.subgroups:
        member, annotated = membership(name)
        members.append(np.flatnonzero(member))
        universes.append(None if not exclude or annotated.all()
                         else np.packbits(annotated).tobytes())
    annotated_rows = {}
    if exclude:
        for name, key in zip(result.subgroups, universes):
            if key is not None and key not in annotated_rows:
                annotated_rows[key] = np.flatnonzero(membership(name)[1])

    counts = np.zeros((len(result.models), len(result.subgroups), 4, bins), dtype=np.int64)
    label_offset = labels.astype(np.intp) * bins
    discard = 2 * bins
    for m, (s, ok) in enumerate(zip(scores, finite)):
        key = _bin_keys(s, edges, label_offset)
        key[~ok] = discard
        totals = {None: np.bincount(key, minlength=discard + 1)}
        for u, rows in annotated_rows.items():
            totals[u] = np.bincount(key[rows], minlength=discard + 1)
        for g, rows in enumerate(members):
            sub = np.bincount(key[rows], minlength=discard + 1)
            background = totals[universes[g]] - sub
            counts[m, g] = [sub[:bins], sub[bins:discard], background[:bins],
                            background[bins:discard]]
    n_pos = int(labels[label_ok].sum())
    n_labelled = int(label_ok.sum())
    return ScoreHistograms(edges=edges, counts=counts, models=list(result.models),
                           subgroups=list(result.subgroups), n_rows=n,
                           n_negatives=n_labelled - n_pos, n_positives=n_pos,
                           n_without_weight=n_without_weight, absent=absent_subgroups(result))


def histogram_edges(lo: float, hi: float, bins: int, *, widen: bool = True) -> np.ndarray:
    """``bins + 1`` edges over the scores' range ``[lo, hi]``: [0, 1] when the scores lie there
    (``widen``), half a unit either side of a single value."""
    if widen and lo >= 0.0 and hi <= 1.0:
        lo, hi = 0.0, 1.0
    if not hi > lo:  # (a value so large that 0.5 is below its spacing: a share of it)
        largest = float(np.finfo(np.float64).max)
        pad = max(0.5, abs(lo) * 2.0 ** -30)
        lo, hi = max(lo - pad, -largest), min(hi + pad, largest)
    if np.isfinite(hi - lo):
        return np.linspace(lo, hi, bins + 1)
    # (a range past the largest double, -1e308 to 1e308: found by review, the edges were
    # NaN and inf; halves span it, and doubling them back is exact)
    edges = np.linspace(lo / 2, hi / 2, bins + 1) * 2
    edges[0], edges[-1] = lo, hi
    return edges


def _bin_keys(scores: np.ndarray, edges: np.ndarray, label_offset) -> np.ndarray:
    """Each row's bin (``[e_k, e_k+1)``, the last closed, as numpy.histogram; scores outside
    go to the end bins) plus ``label_offset`` (bins for positives)."""
    bins = edges.shape[0] - 1
    position = np.searchsorted(edges, scores, side="right") - 1
    return np.clip(position, 0, bins - 1).astype(np.intp) + label_offset


class HistogramCounter:
    """The histograms of :func:`score_histograms` for rows that arrive in pieces (the
    out-of-core paths), from each piece's labels, membership codes and scores.

    ``codes[:, g]`` is 1 for a member of subgroup g, 0 for background, -1 for an
    unannotated row left out of the background (``missing_subgroup="exclude"``).
    """

    def __init__(self, models: list, subgroups: list, edges: np.ndarray):
        self.models, self.subgroups, self.edges = list(models), list(subgroups), edges
        self.bins = edges.shape[0] - 1
        self.counts = np.zeros((len(self.models), len(self.subgroups), 4, self.bins), np.int64)
        self.n_rows = self.n_positives = 0

    def add(self, labels: np.ndarray, codes: np.ndarray, scores: list) -> None:
        bins = self.bins
        offset = labels.astype(np.intp) * bins
        member = [np.flatnonzero(codes[:, g] == 1) for g in range(codes.shape[1])]
        left_out = [np.flatnonzero(codes[:, g] == -1) for g in range(codes.shape[1])]
        for m, s in enumerate(scores):
            key = _bin_keys(s, self.edges, offset)
            total = np.bincount(key, minlength=2 * bins)
            for g in range(codes.shape[1]):
                sub = np.bincount(key[member[g]], minlength=2 * bins)
                background = total - sub
                if left_out[g].shape[0]:
                    background = background - np.bincount(key[left_out[g]], minlength=2 * bins)
                self.counts[m, g] += [sub[:bins], sub[bins:], background[:bins],
                                      background[bins:]]
        self.n_rows += labels.shape[0]
        self.n_positives += int(labels.sum())

    def histograms(self) -> ScoreHistograms:
        return ScoreHistograms(edges=self.edges, counts=self.counts, models=self.models,
                               subgroups=self.subgroups, n_rows=self.n_rows,
                               n_negatives=self.n_rows - self.n_positives,
                               n_positives=self.n_positives)


def absent_subgroups(result) -> frozenset:
    """The ``(model, subgroup)`` pairs of ``result`` whose model does not have the subgroup
    (found by review: a figure drew a model's scores in a subgroup it did not keep)."""
    return frozenset((m, g) for m in result.models
                     for g in set(result.subgroups) - set(result.subgroups_of([m])))


def _value_membership(df, parts: list, codes: dict):
    """(member, annotated) of a sensitive-feature subgroup: rows whose value of each feature
    is the named one (``parts``: ``[feature, "feature=value"]`` pairs), annotated where no
    feature is missing. Each feature is read by ``category_codes``, as evaluate read it."""
    member = annotated = None
    for feature, label in parts:
        if feature not in codes:
            # (the settings name a feature as text: a column named 5 is "5", found by review)
            column = feature if feature in df.columns else next(
                (c for c in df.columns if str(c) == feature), feature)
            codes[feature] = category_codes(df[column], feature)
        read = codes[feature]
        here = read.codes == read.labels.index(label)
        known = read.codes >= 0
        member = here if member is None else member & here
        annotated = known if annotated is None else annotated & known
    return member, annotated


def _intersection_membership(df, parts: list, threshold) -> tuple:
    """(member, annotated) of an intersection: in every one of ``parts``, annotated for all."""
    member, annotated = _membership(df[parts[0]], threshold)
    for name in parts[1:]:
        m, a = _membership(df[name], threshold)
        member, annotated = member & m, annotated & a
    return member, annotated
