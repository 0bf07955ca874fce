"""Honest uncertainty for bias metrics: Bernstein bounds, DeLong and the Poisson bootstrap.

Three kinds of interval, all computed from the same sorted sweep as the
metrics themselves (see ``docs/intervals.md`` for what each one bounds and
assumes):

* **Bernstein** (Ethayarajh 2020): :func:`bernstein_halfwidth`,
  :func:`bernstein_min_samples` and :func:`bernstein_interval` for a groupwise
  disparity of costs; :func:`ustatistic_bernstein_interval` and
  :func:`ustatistic_min_samples` give the rigorous (finite-sample, distribution
  free) version for the five threshold-agnostic metrics, each a two-sample
  U-statistic with a kernel in [0, 1].
* **DeLong** (1988) variances of every AUC-type metric from placement values,
  normal intervals and standard errors, and :func:`delong_paired_test` for two
  models scored on the same rows.
* **Poisson bootstrap**: each replicate weights every row by a Poisson(1)
  count; the sort order never changes, so a replicate is one weighted sweep.

:func:`add_intervals` attaches any of them to a table of
:func:`fastbias.bias_metrics`. :mod:`.significance` tests every gap ("no bias",
DeLong or permutation) and :func:`adjust_pvalues` adjusts them (Holm, BH); see
``significance=`` on the entry points.
"""
from .attach import CI_METHODS, add_intervals
from .bernstein import (
                        BernsteinInterval,
                        bernstein_halfwidth,
                        bernstein_interval,
                        bernstein_min_samples,
                        demographic_parity_cost,
                        equal_opportunity_cost,
)
from .bootstrap import (
                        BootstrapReplicates,
                        bootstrap_replicates,
                        replicate_counts,
                        replicate_weights,
)
from .delong import delong_standard_errors
from .paired import delong_paired_test
from .significance import SIGNIFICANCE_METHODS, adjust_pvalues
from .ustatistic import (
                        BERNSTEIN_VARIANCES,
                        ustatistic_bernstein_interval,
                        ustatistic_min_samples,
)

__all__ = [
    "BERNSTEIN_VARIANCES",
    "BernsteinInterval",
    "CI_METHODS",
    "SIGNIFICANCE_METHODS",
    "BootstrapReplicates",
    "add_intervals",
    "adjust_pvalues",
    "bernstein_halfwidth",
    "bernstein_interval",
    "bernstein_min_samples",
    "bootstrap_replicates",
    "delong_paired_test",
    "delong_standard_errors",
    "demographic_parity_cost",
    "equal_opportunity_cost",
    "replicate_counts",
    "replicate_weights",
    "ustatistic_bernstein_interval",
    "ustatistic_min_samples",
]
