"""What the metrics are: their names, the two cells each compares, the count columns.

For a subgroup g with D-/D+ the background (rows not in g) negatives and
positives and Dg-/Dg+ the subgroup's, ties counting 1/2 (Borkan et al. 2019,
Definitions 3.3/3.4 and Table 2):

=================  ===========================================
``subgroup_auc``   AUC(Dg- vs Dg+)
``bpsn_auc``       AUC(Dg- vs D+)   background positive, subgroup negative
``bnsp_auc``       AUC(D- vs Dg+)   background negative, subgroup positive
``negative_aeg``   1/2 - P(s(D-) > s(Dg-))
``positive_aeg``   1/2 - P(s(D+) > s(Dg+))
=================  ===========================================

A positive AEG means the subgroup is scored *higher* than the background. The
paper's integral form (its Definition 4, the area between the curves) has the
opposite sign; fastbias follows Definitions 3.3/3.4, Table 2 and the authors'
reference code.

Every metric is ``P(X > Y) + 1/2 P(X = Y)`` (an AEG: 1/2 minus it) of an
"above" cell X and a "below" cell Y: :data:`METRIC_SAMPLES` is the one map of
metric to cells, which tables, undefined-value messages and intervals read.
"""
from __future__ import annotations

METRIC_COLUMNS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
AUC_METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc"]
AEG_METRICS = ["negative_aeg", "positive_aeg"]
COUNT_COLUMNS = ["subgroup_size", "subgroup_negatives", "subgroup_positives",
                 "background_negatives", "background_positives"]
WEIGHT_COLUMNS = ["subgroup_negative_weight", "subgroup_positive_weight",
                  "background_negative_weight", "background_positive_weight"]

#: (above cell X, below cell Y) of each metric; a cell is (part, label) with part
#: "subgroup" or "background" and label 0 (negatives) or 1 (positives)
METRIC_SAMPLES = {
    "subgroup_auc": (("subgroup", 1), ("subgroup", 0)),
    "bpsn_auc": (("background", 1), ("subgroup", 0)),
    "bnsp_auc": (("subgroup", 1), ("background", 0)),
    "negative_aeg": (("background", 0), ("subgroup", 0)),
    "positive_aeg": (("background", 1), ("subgroup", 1)),
}

#: the count column of a cell
CELL_COLUMNS = {("subgroup", 0): "subgroup_negatives", ("subgroup", 1): "subgroup_positives",
                ("background", 0): "background_negatives",
                ("background", 1): "background_positives"}

#: which two count columns each metric compares (explains an undefined value), negatives
#: first, the background first within a class
METRIC_CELLS = {metric: tuple(CELL_COLUMNS[cell] for cell in sorted(
    cells, key=lambda cell: (cell[1], cell[0] == "subgroup")))
    for metric, cells in METRIC_SAMPLES.items()}

#: the range of each metric
METRIC_RANGE = {m: ((-0.5, 0.5) if m in AEG_METRICS else (0.0, 1.0)) for m in METRIC_COLUMNS}
