"""The column arguments of the DataFrame-like entry points, checked against the columns present."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from .categories import value_text
from .columns import column_name, column_values, name_list, subgroup_names
from .settings import MISSING_POLICIES, check_label_options, check_threshold
from .subgroups import BatchKinds
from .values import (
    INTERVAL_RESOLUTION_BITS,
    THRESHOLD_RESOLUTION_BITS,
    LabelClasses,
    as_labels,
    as_scores,
    check_interval_weights,
    check_weight_resolution,
    check_weight_spread,
    check_weight_total,
    power_of_two_scale,
)


@dataclass(frozen=True)
class ColumnSpec:
    """The columns to evaluate and how they are binarised (the same for every chunk)."""

    label: str
    models: list
    subgroups: list
    sample_weight: str | None
    label_threshold: float | None
    subgroup_threshold: float
    missing_subgroup: str
    #: power of two every weight is divided by, the same for all chunks (see with_weight_range)
    weight_scale: float = 1.0
    #: ``intersections=`` asked for (None, 2 or 3) and its ``min_subgroup_size``
    intersections: int | None = None
    min_subgroup_size: int = 1
    #: the intersections chosen on the whole data (see with_combinations): subgroup index
    #: tuples, evaluated as more subgroups after the given ones, named "a & b"
    combinations: tuple = ()
    #: ``significance=`` (None, "holm" or "bh") and the ``confidence`` that sets its level
    significance: str | None = None
    confidence: float = 0.95
    #: ``ci=`` (None, "delong" or "bernstein": the intervals made from the chunks' sums and
    #: counts; the bootstrap needs the rows)
    ci: str | None = None
    #: ``sensitive_features=``: categorical columns; the values each holds (in order) and the
    #: combinations of one value of each kept (value indexes), both found on the whole data
    features: tuple = ()
    feature_values: tuple = ()
    feature_combos: tuple = ()
    #: ``thresholds=`` (sorted, each once, or None) and the intervals of their rates and gaps
    thresholds: tuple | None = None
    threshold_interval: str | None = "wilson"
    gap_interval: str | None = None
    #: ``pos_label=``: the label value of the positive class (the other value is the
    #: negative one; ``label_threshold`` is then None), or None
    pos_label: object = None

    def piece_labels(self, frame) -> np.ndarray:
        """The validated labels (True = positive) of one piece of the rows; with
        ``pos_label``, the piece may lack it (:meth:`label_classes` and
        :class:`~fastbias.validate.values.LabelClasses` check all the pieces together)."""
        return as_labels(frame[self.label], f"label column {self.label!r}",
                         threshold=self.label_threshold, pos_label=self.pos_label, piece=True)

    def label_classes(self, frame, where: str = "") -> LabelClasses | None:
        """What :class:`~fastbias.validate.values.LabelClasses` needs of one piece's labels
        (already validated by :meth:`piece_labels`), or None without ``pos_label``."""
        if self.pos_label is None:
            return None
        return LabelClasses.of_piece(column_values(frame[self.label], "label")[0],
                                     self.pos_label, where)

    def batch_kinds(self) -> BatchKinds:
        """The check that the label and the identity columns read as one kind in every batch
        or partition (with ``pos_label`` too: a batch of booleans beside one of numbers is
        refused, as True == 1 would make them one class)."""
        roles = {self.label: "label"}
        roles.update((name, "subgroup") for name in self.subgroups if name not in roles)
        return BatchKinds(roles)

    def check_label_classes(self, classes: LabelClasses | None) -> None:
        """With ``pos_label``: a ValueError unless the label values of all the pieces
        (``classes``, joined) are at most two, ``pos_label`` one of them."""
        if self.pos_label is not None:
            (classes or LabelClasses()).check(self.pos_label, f"label column {self.label!r}")

    def check_extras(self) -> ColumnSpec:
        """The extras that cannot go with the columns: Bernstein intervals of weighted rows
        (a ValueError before any row is read); returns ``self``."""
        if self.ci == "bernstein" and self.weighted:
            raise ValueError("the Bernstein interval needs unweighted rows (it counts "
                             "independent examples); use ci='delong' with sample_weight")
        if self.thresholds is not None and self.gap_interval is not None and self.weighted:
            raise ValueError("gap_interval='bernstein' needs unweighted rows (its bound counts "
                             "examples); threshold_interval= gives the rates' intervals")
        return self

    def chunk_extras(self) -> dict:
        """What each chunk adds to its counts (``fastbias.intervals.chunked.counted_chunk``)."""
        return {"weight_scale": self.weight_scale, "with_sums": self.with_sums,
                "all_rows_sums": self.ci == "delong" and self.exclude_missing,
                "thresholds": None if self.thresholds is None
                else np.asarray(self.thresholds, dtype=np.float64)}

    @property
    def with_sums(self) -> bool:
        """Whether each chunk carries its placement sums (significance tests, DeLong
        intervals)."""
        return self.significance is not None or self.ci == "delong"

    @property
    def combination_names(self) -> list:
        return [" & ".join(str(self.subgroups[j]) for j in combo) for combo in self.combinations]

    @property
    def feature_labels(self) -> list:
        """Per sensitive feature, the names of its values' subgroups (``"race=black"``)."""
        return [[f"{feature}={value_text(v)}" for v in values]
                for feature, values in zip(self.features, self.feature_values)]

    @property
    def feature_names(self) -> list:
        """The sensitive features' subgroups: each value, then the combinations kept."""
        labels = self.feature_labels
        return ([name for names in labels for name in names]
                + [" & ".join(labels[f][v] for f, v in enumerate(combo))
                   for combo in self.feature_combos])

    @property
    def row_names(self) -> list:
        """The rows of the tables: the subgroups, the chosen intersections, then the
        sensitive features' values and their combinations."""
        return list(self.subgroups) + self.combination_names + self.feature_names

    def with_features(self, values, combos) -> "ColumnSpec":
        """This spec with the sensitive features' values and kept combinations (found by a
        pass over the data: ``fastbias.validate.categories.chosen_features``); a name that
        would appear twice among the rows is a ValueError."""
        out = replace(self, feature_values=tuple(tuple(v) for v in values),
                      feature_combos=tuple(tuple(int(j) for j in c) for c in combos))
        check_unique_names(out.row_names)
        return out

    @property
    def extra_columns(self) -> int:
        """Membership codes a row carries beyond one per subgroup column."""
        return len(self.row_names) - len(self.subgroups)

    def with_combinations(self, combinations) -> "ColumnSpec":
        return replace(self, combinations=tuple(tuple(int(j) for j in c) for c in combinations))

    @property
    def weighted(self) -> bool:
        return self.sample_weight is not None

    @property
    def exclude_missing(self) -> bool:
        return self.missing_subgroup == "exclude"

    @property
    def columns(self) -> list:
        """Every column needed, each once, in a stable order."""
        wanted = [self.label, *self.models, *self.subgroups, *self.features]
        if self.sample_weight is not None:
            wanted.append(self.sample_weight)
        return list(dict.fromkeys(wanted))

    def resolution_check(self) -> tuple | None:
        """``(what, bits)`` of :func:`~fastbias.validate.values.check_weight_resolution` for
        what this spec computes from running sums of weights (significance tests, threshold
        metrics), or None (nothing to check: unweighted, or only the certified metrics)."""
        if not self.weighted:
            return None
        if self.significance is not None:
            return "significance tests", INTERVAL_RESOLUTION_BITS
        if self.ci == "delong":
            return "DeLong intervals", INTERVAL_RESOLUTION_BITS
        if self.thresholds is not None:
            return "threshold metrics", THRESHOLD_RESOLUTION_BITS
        return None

    def with_weight_range(self, smallest_positive: float, largest: float,
                          class_weights: tuple | None = None, smallest_at: str = "",
                          largest_at: str = "") -> "ColumnSpec":
        """This spec with the weight scale of weights in that range (refusing too wide a one;
        with ``class_weights``, see ``ScoreSummary``, too fine a one for
        :meth:`resolution_check`); ``smallest_at``/``largest_at`` say where those rows are
        (" at row 7 of ...", default " in the data")."""
        if not self.weighted:
            return self
        name = f"sample_weight column {self.sample_weight!r}"
        check = self.resolution_check()
        if check is not None and class_weights is not None:
            if self.thresholds is not None:
                check_weight_total(sum(class_weights[0]), name, "threshold metrics")
            check_weight_resolution(*class_weights, name, *check)
        if np.isfinite(largest) and largest > 0:
            check_weight_spread(smallest_positive, largest, name, smallest_at or " in the data",
                                largest_at or " in the data")
            if self.with_sums:
                check_interval_weights(largest, name, largest_at or " in the data",
                                       "significance tests" if self.significance is not None
                                       else "DeLong intervals")
            return replace(self, weight_scale=power_of_two_scale(np.array([largest])))
        return self

    def settings(self, engine: str) -> dict:
        out = {"label_threshold": self.label_threshold,
               "subgroup_threshold": self.subgroup_threshold,
               "missing_subgroup": self.missing_subgroup, "ci": self.ci,
               "weighted": self.weighted, "nan_policy": "raise", "pos_label": self.pos_label,
               "intersections": self.intersections,
               "min_subgroup_size": self.min_subgroup_size,
               "significance": self.significance, "engine": engine}
        if self.features:
            out["sensitive_features"] = list(self.features)
            # what each row of a feature's value or combination is, as in memory (a report
            # made from the rows reads them so)
            labels = self.feature_labels
            members = {name: [[feature, name]] for feature, names in zip(self.features, labels)
                       for name in names}
            for combo in self.feature_combos:
                parts = [[self.features[f], labels[f][v]] for f, v in enumerate(combo)]
                members[" & ".join(label for _, label in parts)] = parts
            out["sensitive_members"] = members
        out["confidence"] = self.confidence  # (always, as in memory: a review found it absent)
        if self.thresholds is not None:
            out.update(thresholds=list(self.thresholds),
                       threshold_interval=self.threshold_interval, gap_interval=self.gap_interval)
        if self.intersections is not None:  # (empty when none qualifies, as in memory)
            out["intersection_members"] = {
                name: [self.subgroups[j] for j in combo]
                for name, combo in zip(self.combination_names, self.combinations)}
        return out


def check_unique_names(names: list) -> None:
    """A ValueError naming the first subgroup name that appears twice (the tables are
    indexed by name): an identity column named like an intersection ("a & b") or like a
    sensitive feature's value ("race=black")."""
    seen = set()
    for name in names:
        if name in seen:
            raise ValueError(f"subgroup name {name!r} appears twice (an identity column named "
                             f"like an intersection or like a sensitive feature's value, or two "
                             f"features whose names and values read alike?): rename the "
                             f"column")
        seen.add(name)


def column_spec(available, *, label, scores, subgroups, label_threshold, subgroup_threshold,
                missing_subgroup, sample_weight, source: str = "the data",
                sensitive_features=None, pos_label=None) -> ColumnSpec:
    """Validate the column arguments against the ``available`` column names (``subgroups``
    may be None or empty where ``sensitive_features`` are given). With ``pos_label`` the
    ``label_threshold`` is not used (as in :func:`fastbias.evaluate`)."""
    if missing_subgroup not in MISSING_POLICIES:
        raise ValueError(f"missing_subgroup must be one of {MISSING_POLICIES}, "
                         f"got {missing_subgroup!r}")
    # (names as a DataFrame's columns carry them, 0 too, as fastbias.evaluate reads them:
    # found by review, a Dask frame's integer names were refused as "not a column name")
    available = list(available)
    label = column_name(label, "label")
    if sample_weight is not None:
        try:
            column_name(sample_weight, "sample_weight")
        except TypeError:
            raise TypeError("sample_weight must be a column name here (an array cannot follow "
                            "the rows of partitioned or out-of-core data), got "
                            f"{type(sample_weight).__name__}") from None
    models = name_list(scores, "scores", available)
    features = ([] if sensitive_features is None else
                name_list(sensitive_features, "sensitive_features", available))
    names = subgroup_names(subgroups, features, available)
    present = set(available)
    for argument, wanted in (("label", [label]), ("scores", models), ("subgroups", names),
                             ("sample_weight", [] if sample_weight is None else [sample_weight]),
                             ("sensitive_features", features)):
        missing = [c for c in wanted if c not in present]
        if missing:
            shown = available[:20]
            raise KeyError(f"{argument}: column(s) {missing} not in {source} (columns are "
                           f"{shown}{' ...' if len(available) > 20 else ''})")
    check_label_options(pos_label, label_threshold)
    return ColumnSpec(label, models, names, sample_weight,
                      None if label_threshold is None or pos_label is not None
                      else check_threshold(label_threshold, "label_threshold"),
                      check_threshold(subgroup_threshold, "subgroup_threshold"), missing_subgroup,
                      features=tuple(features), pos_label=pos_label)


def score_dtype(dtype) -> np.dtype:
    """The dtype ``as_scores`` gives a column of ``dtype`` (float32 stays float32, so ties
    are decided in float32; other numbers become float64), found by asking it."""
    try:
        return as_scores(pd.Series([1], dtype=dtype), "probe").dtype
    except (TypeError, ValueError):
        return np.dtype(np.float64)
