"""The second half of a mutation audit of the in-memory entry points (fastbias.evaluate,
bias_metrics, threshold_metrics, overall_auc, pinned_auc and the validate/ helpers they
call): an independent review's tests (2026-11-28, fortieth session). Of the 31 mutants run
here, 29 were killed by the entry points' tests (the first half's included), one is
equivalent; the one survivor (categorical subgroups with ``intersections=`` no longer
refused by ``bias_metrics``) is killed here, with a second kill of a row named among the
kept rows under ``nan_policy="omit"``. Expected values come from brute-force pair counts in
fractions.Fraction, sklearn, or the documented message, never from fastbias itself. No
defect was found."""
import warnings

import numpy as np
import pandas as pd
import pytest

import fastbias


def _quiet(f, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*args, **kwargs)


def test_bias_metrics_delong_light_weight_after_omit_names_input_position():
    """Kills 'bias_metrics: interval weight message positions among kept rows' (#31,
    ``rows_kept(kept)`` -> ``rows_kept(None)``): rows 0-2 have NaN scores and are omitted;
    the positive row at input position 9 weighs 1e-30 against 1e40 rows, below 2**-90 of
    its class, so DeLong refuses it. The message must name input position 9, not its
    position 6 among the kept rows."""
    n = 12
    y = np.array([0, 1] * 6, float)
    s = np.linspace(0, 1, n)
    s[[0, 1, 2]] = np.nan
    w = np.full(n, 1e40)
    w[9] = 1e-30
    g = {"g": np.arange(n) % 3 == 0}
    with pytest.raises(ValueError, match=r"positive row of weight 1e-30 at position 9\b"):
        _quiet(fastbias.bias_metrics, y, s, g, sample_weight=w, nan_policy="omit",
               ci="delong")


def test_bias_metrics_intersections_with_a_categorical_column_refused():
    """Kills 'bias_metrics: categorical + intersections check dropped' (#30; also killed by
    tests/test_sensitive_features.py, outside the audit's list): the bias_metrics docstring
    says intersections= combines boolean subgroups, and a categorical column (which already
    adds every combination of its values) with intersections= is a ValueError."""
    y = np.array([0, 1] * 6, float)
    s = np.linspace(0.05, 0.95, 12)
    groups = pd.DataFrame({"race": pd.Categorical(list("abc") * 4),
                           "gender": pd.Categorical(list("mf") * 6)})
    with pytest.raises(ValueError, match="intersections= combines boolean subgroups"):
        _quiet(fastbias.bias_metrics, y, s, groups, intersections=2)
