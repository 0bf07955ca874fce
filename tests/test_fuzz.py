"""Property-based fuzzing of every entry point with hostile inputs.

Two properties, for every entry point that exists:

1. *Never a crash*: whatever the input, fastbias returns a result or raises one
   of the documented error types: ``ValueError`` (bad value or shape),
   ``TypeError`` (bad type or dtype) or ``KeyError`` (a column named that is
   not there).
2. *Never silently wrong*: the inputs are generated from plain float64 values
   (NaN = missing) and then dressed in a random container (list, numpy of
   several dtypes, pandas Series, nullable and object arrays). An independent
   oracle written from the documentation decides whether the input is valid;
   if it is, the result must equal the O(n^2) brute force on the values the
   container represents, and if it is not, a documented error must be raised.
"""
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

import fastbias
from fastbias.validate.errors import OmittedRowsWarning, UndefinedMetricWarning
from tests.reference import brute_force_metrics, pair_probability

DOCUMENTED_ERRORS = (ValueError, TypeError, KeyError)
METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
FUZZ = settings(max_examples=120, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FUZZ_MORE = settings(FUZZ, max_examples=300)  # most hostile inputs are (rightly) rejected
NAN = float("nan")
INF = float("inf")


# ------------------------------------------------------------------ value strategies

SPECIAL_SCORES = [0.0, -0.0, 0.5, 1.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1e-310,
                  1e308, -1e308, 3.4e38, 7e4, 65504.0, 0.1, 0.1 + 1e-9]
label_values = st.sampled_from([0.0, 1.0])
junk_label_values = st.sampled_from([0.0, 1.0, NAN, 2.0, 0.5, -1.0])
score_values = st.one_of(st.sampled_from(SPECIAL_SCORES),
                         st.floats(allow_nan=False, allow_infinity=False),
                         st.integers(-3, 3).map(float))
junk_score_values = st.one_of(score_values, st.sampled_from([NAN, INF, -INF]))
weight_values = st.one_of(st.sampled_from([0.0, -0.0, 1.0, 2.5, 1e-3, 1e3]),
                          st.floats(1e-3, 1e3))
junk_weight_values = st.one_of(weight_values, st.sampled_from([NAN, INF, -1.0, -1e-300]))
member_values = st.sampled_from([0.0, 1.0])
junk_member_values = st.sampled_from([0.0, 1.0, NAN, 2.0, 0.5])


def values_of(n, clean, junk):
    """n values; one argument in six draws from the junk values too."""
    return st.integers(0, 5).flatmap(lambda k: st.lists(junk if k == 0 else clean,
                                                        min_size=n, max_size=n))


def _is_integral(values):
    v = np.asarray(values, dtype=float)
    return bool(np.all(np.isfinite(v)) and np.all(v == np.round(v)) and np.all(np.abs(v) < 2 ** 53))


def _in(values, allowed):
    v = np.asarray(values, dtype=float)
    return bool(np.all(np.isin(v, allowed)))


# Each "dress" turns a list of floats (NaN = missing) into some container and
# returns (container, the float64 values it represents) or None if it cannot.
def dress(values, how):
    v = np.asarray(values, dtype=np.float64)
    has_nan = bool(np.isnan(v).any())
    with np.errstate(over="ignore", invalid="ignore"):
        if how == "f64":
            return v.copy(), v
        if how == "f32":
            x = v.astype(np.float32)
            return x, x.astype(np.float64)
        if how == "f16":
            x = v.astype(np.float16)
            return x, x.astype(np.float64)
        if how == "list":
            return v.tolist(), v
        if how == "list-none":
            return [None if math.isnan(x) else x for x in v.tolist()], v
        if how == "series":
            return pd.Series(v, index=np.arange(v.size)[::-1]), v
        if how == "series-range":
            return pd.Series(v), v
        if how == "series-dup":  # duplicated labels
            return pd.Series(v, index=np.arange(v.size) // 2), v
        if how == "series-perm":  # a permuted index, as after df.sample(frac=1)
            return pd.Series(v, index=np.roll(np.arange(v.size), 1)), v
        if how == "object":
            return np.array([None if math.isnan(x) else x for x in v.tolist()], dtype=object), v
        if how == "Float64":
            return pd.array([None if math.isnan(x) else x for x in v.tolist()], dtype="Float64"), v
        if how == "int" and _is_integral(v):
            return v.astype(np.int64), v
        if how == "uint8" and _is_integral(v) and np.all((v >= 0) & (v <= 255)):
            return v.astype(np.uint8), v
        if how == "int8" and _is_integral(v) and np.all((v >= -128) & (v <= 127)):
            return v.astype(np.int8), v
        if how == "Int64" and _is_integral(np.nan_to_num(v)):
            return pd.array([None if math.isnan(x) else int(x) for x in v.tolist()],
                            dtype="Int64"), v
        if how == "bool" and not has_nan and _in(v, [0, 1]):
            return v.astype(bool), v
        if how == "boolean" and _in(v[~np.isnan(v)], [0, 1]):
            return pd.array([None if math.isnan(x) else bool(x) for x in v.tolist()],
                            dtype="boolean"), v
    return None


SERIES_DRESSES = ["series", "series-range", "series-dup", "series-perm"]
LABEL_DRESSES = ["f64", "f32", "list", "list-none", "object", "int", "Int64", "bool",
                 "boolean", *SERIES_DRESSES]
SCORE_DRESSES = ["f64", "f32", "f16", "list", "list-none", "object", "Float64", "int",
                 *SERIES_DRESSES]
WEIGHT_DRESSES = ["f64", "list", "int", "Float64", *SERIES_DRESSES]
MEMBER_DRESSES = ["bool", "f64", "int", "list", "boolean", "Float64", "object", "series-range",
                  "series-perm"]


def dressed(values_strategy, dresses):
    """(container, represented float64 values); falls back to float64 when a dress cannot apply."""
    return st.tuples(values_strategy, st.sampled_from(dresses)).map(
        lambda vh: dress(vh[0], vh[1]) or dress(vh[0], "f64"))


@st.composite
def array_cases(draw):
    n = draw(st.integers(0, 40))
    n_score = n if draw(st.integers(0, 19)) else draw(st.integers(0, 41))  # 5%: wrong length
    y, y_values = draw(dressed(values_of(n, label_values, junk_label_values), LABEL_DRESSES))
    s, s_values = draw(dressed(values_of(n_score, score_values, junk_score_values), SCORE_DRESSES))
    w = w_values = None
    if draw(st.booleans()):
        n_weight = n if draw(st.integers(0, 19)) else draw(st.integers(0, 41))
        scale = 10.0 ** draw(st.sampled_from([-300, -170, -20, 0, 20, 160, 300]))
        raw = [x * scale if math.isfinite(x) else x
               for x in draw(values_of(n_weight, weight_values, junk_weight_values))]
        w, w_values = draw(dressed(st.just(raw), WEIGHT_DRESSES))
    n_groups = draw(st.integers(1, 3))
    groups, group_values = {}, {}
    for k in range(n_groups):
        n_member = n if draw(st.integers(0, 19)) else draw(st.integers(0, 41))
        g, g_values = draw(dressed(values_of(n_member, member_values, junk_member_values),
                                   MEMBER_DRESSES))
        groups[f"g{k}"], group_values[f"g{k}"] = g, g_values
    container = draw(st.sampled_from(["dict", "frame", "frame-like-y", "matrix"]))
    if container.startswith("frame") and len({len(v) for v in group_values.values()}) == 1:
        groups = pd.DataFrame({k: pd.Series(v) if not isinstance(v, pd.Series) else
                               v.reset_index(drop=True) for k, v in groups.items()})
        if container == "frame-like-y" and isinstance(y, pd.Series) and len(y) == len(groups):
            groups.index = y.index  # the same rows: accepted
    elif container == "matrix" and len({len(v) for v in group_values.values()}) == 1:
        groups = np.column_stack([v for v in group_values.values()])
        group_values = {f"subgroup_{j}": v for j, v in enumerate(group_values.values())}
    nan_policy = draw(st.sampled_from(["raise", "omit"]))
    return dict(y=y, s=s, w=w, groups=groups, y_values=y_values, s_values=s_values,
                w_values=w_values, group_values=group_values, nan_policy=nan_policy)


# ------------------------------------------------------------------ the oracle

def oracle(case, nan_policy=None, check_groups=True):
    """None if the documented rules say the input is invalid, else the rows kept.

    Rules (docs/validation.md): non-empty; equal lengths; labels 0/1; scores
    finite; weights finite and >= 0; masks 0/1 without NaN. Missing labels,
    scores or weights, and infinite scores, are dropped with
    ``nan_policy="omit"`` (everything else still raises).
    """
    nan_policy = nan_policy or case["nan_policy"]
    y, s, w = case["y_values"], case["s_values"], case["w_values"]
    n = y.size
    if n == 0 or s.size != n or (w is not None and w.size != n):
        return None
    if indexes_disagree(case, check_groups):
        return None
    if check_groups:
        for g in case["group_values"].values():
            if g.size != n or np.isnan(g).any() or not _in(g, [0, 1]):
                return None
    keep = np.ones(n, dtype=bool)
    if nan_policy == "omit":
        keep &= ~np.isnan(y) & np.isfinite(s)
        if w is not None:
            keep &= ~np.isnan(w)
        if not keep.any():
            return None
    if np.isnan(y[keep]).any() or not _in(y[keep], [0, 1]) or not np.isfinite(s[keep]).all():
        return None
    if w is not None and (np.isnan(w[keep]).any() or np.isinf(w[keep]).any()
                          or (w[keep] < 0).any()):
        return None
    return keep


def indexes_disagree(case, check_groups=True):
    """Two pandas inputs of the same length with unequal indexes: a documented ValueError."""
    values = [case["y"], case["s"], case["w"]]
    groups = case.get("groups")
    if check_groups and isinstance(groups, pd.DataFrame):
        values.append(groups)
    elif check_groups and isinstance(groups, dict):
        values.extend(groups.values())
    indexes = [v.index for v in values if isinstance(v, (pd.Series, pd.DataFrame))]
    return any(len(a) == len(b) and not a.equals(b) for a in indexes for b in indexes)


def assert_close(got, want, tol, what):
    if np.isnan(want):
        assert np.isnan(got), f"{what}: expected NaN (undefined), got {got}"
    else:
        assert abs(got - want) <= tol, f"{what}: got {got!r}, brute force {want!r}"


def check_table(table, case, keep):
    event("valid input (compared with brute force)")
    y = case["y_values"][keep] == 1
    s = case["s_values"][keep]
    w = None if case["w_values"] is None else case["w_values"][keep]
    tol = 1e-12
    for name, g in case["group_values"].items():
        member = g[keep] == 1
        expected = brute_force_metrics(y, s, member, w)
        for metric in METRICS:
            assert_close(table.loc[name, metric], expected[metric], tol, f"{name} {metric}")
        assert table.loc[name, "subgroup_negatives"] == np.sum(member & ~y)
        assert table.loc[name, "background_positives"] == np.sum(~member & y)
    overall = pair_probability(s[y], s[~y], *(None, None) if w is None else (w[y], w[~y]))
    assert_close(table.attrs["overall_auc"], overall, tol, "overall_auc")


def call_quietly(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        warnings.simplefilter("ignore", OmittedRowsWarning)
        return function(*args, **kwargs)


# ------------------------------------------------------------------ array entry points

@FUZZ_MORE
@given(array_cases())
def test_bias_metrics_fuzz(case):
    keep = oracle(case)
    try:
        table = call_quietly(fastbias.bias_metrics, case["y"], case["s"], case["groups"],
                             sample_weight=case["w"], nan_policy=case["nan_policy"])
    except DOCUMENTED_ERRORS as error:
        assert keep is None, f"valid input rejected: {type(error).__name__}: {error}"
        return
    assert keep is not None, "invalid input accepted"
    check_table(table, case, keep)


@FUZZ
@given(array_cases())
def test_overall_auc_fuzz(case):
    keep = oracle(case, check_groups=False)
    try:
        value = call_quietly(fastbias.overall_auc, case["y"], case["s"], sample_weight=case["w"],
                             nan_policy=case["nan_policy"])
    except DOCUMENTED_ERRORS as error:
        assert keep is None, f"valid input rejected: {type(error).__name__}: {error}"
        return
    assert keep is not None, "invalid input accepted"
    event("valid input (compared with brute force)")
    y = case["y_values"][keep] == 1
    s = case["s_values"][keep]
    w = None if case["w_values"] is None else case["w_values"][keep]
    expected = pair_probability(s[y], s[~y], *(None, None) if w is None else (w[y], w[~y]))
    assert_close(value, expected, 1e-12, "overall_auc")


@FUZZ_MORE
@given(array_cases())
def test_bias_evaluator_fuzz(case):
    keep = oracle(case, nan_policy="raise")
    try:
        evaluator = call_quietly(fastbias.BiasEvaluator, case["y"], case["groups"],
                                 sample_weight=case["w"])
        table = call_quietly(evaluator.metrics, case["s"])
    except DOCUMENTED_ERRORS as error:
        assert keep is None, f"valid input rejected: {type(error).__name__}: {error}"
        return
    assert keep is not None, "invalid input accepted"
    check_table(table, case, keep)


@FUZZ
@given(array_cases())
def test_sklearn_bias_score_fuzz(case):
    bias_score = pytest.importorskip("fastbias.sklearn").bias_score
    keep = oracle(case, nan_policy="raise")
    try:
        value = call_quietly(bias_score, case["y"], case["s"], subgroups=case["groups"],
                             sample_weight=case["w"], metric="min_bpsn_auc")
    except DOCUMENTED_ERRORS as error:
        assert keep is None, f"valid input rejected: {type(error).__name__}: {error}"
        return
    assert keep is not None, "invalid input accepted"
    event("valid input (compared with brute force)")
    y = case["y_values"] == 1
    w = case["w_values"]
    bpsn = [brute_force_metrics(y, case["s_values"], g == 1, w)["bpsn_auc"]
            for g in case["group_values"].values()]
    defined = [b for b in bpsn if not np.isnan(b)]
    if defined and len(defined) == len(bpsn):
        assert_close(value, min(defined), 1e-12, "min_bpsn_auc")


@FUZZ
@given(n=st.integers(1, 150), seed=st.integers(0, 2 ** 32 - 1),
       zero_cells=st.sets(st.sampled_from(["sp", "sn", "bp", "bn"])),
       levels=st.integers(1, 12))
def test_zero_weight_cells_are_undefined_not_rounding_noise(n, seed, zero_cells, levels):
    # a cell whose rows all weigh 0 must give NaN (undefined), never a number made of
    # the rounding remainder of "class total minus subgroup total"
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.5
    s = rng.integers(0, levels, n) / levels  # ties: sums run over rows in different orders
    g = rng.random(n) < 0.7
    w = rng.uniform(0.1, 1.0, n) * 10.0 ** rng.integers(-3, 4, n)
    cells = {"sp": g & y, "sn": g & ~y, "bp": ~g & y, "bn": ~g & ~y}
    for cell in zero_cells:
        w[cells[cell]] = 0.0
    case = dict(y_values=y.astype(float), s_values=s, w_values=w,
                group_values={"g": g.astype(float)})
    keep = np.ones(n, bool)
    check_table(call_quietly(fastbias.bias_metrics, y, s, {"g": g}, sample_weight=w), case, keep)
    evaluator = call_quietly(fastbias.BiasEvaluator, y, {"g": g}, sample_weight=w)
    check_table(call_quietly(evaluator.metrics, s), case, keep)


# ------------------------------------------------------------------ anything at all

anything = st.one_of(
    st.none(), st.integers(), st.floats(), st.text(max_size=5), st.booleans(),
    st.lists(st.one_of(st.floats(), st.integers(), st.text(max_size=3), st.none(),
                       st.booleans()), max_size=8),
    st.lists(st.lists(st.floats(), max_size=3), max_size=4),
    st.dictionaries(st.text(max_size=3), st.lists(st.booleans(), max_size=8), max_size=3),
    st.builds(lambda v: np.array(v, dtype=object), st.lists(st.floats(), max_size=8)),
    st.builds(lambda v: pd.Series(v, dtype="string"), st.lists(st.text(max_size=2), max_size=8)),
    st.builds(lambda v: pd.Categorical(v), st.lists(st.sampled_from(["a", "b", None]),
                                                     max_size=8)),
    st.builds(lambda v: np.array(v, dtype="datetime64[s]"), st.lists(st.integers(0, 10 ** 9),
                                                                      max_size=8)),
    st.builds(lambda v: np.array(v, dtype=complex), st.lists(st.floats(-1, 1), max_size=8)),
)


@FUZZ
@given(y=anything, s=anything, groups=anything, w=st.one_of(st.none(), anything),
       threshold=st.one_of(st.none(), st.floats(), st.text(max_size=2)),
       pos_label=st.one_of(st.none(), st.sampled_from(["a", 1, True])))
def test_anything_raises_only_documented_errors(y, s, groups, w, threshold, pos_label):
    calls = [
        lambda: fastbias.bias_metrics(y, s, groups, sample_weight=w, label_threshold=threshold,
                                      pos_label=pos_label),
        lambda: fastbias.bias_metrics(y, s, groups, subgroup_threshold=threshold,
                                      nan_policy="omit"),
        lambda: fastbias.overall_auc(y, s, sample_weight=w, pos_label=pos_label),
        lambda: fastbias.BiasEvaluator(y, groups, sample_weight=w).metrics(s),
    ]
    for call in calls:
        try:
            result = call_quietly(call)
        except DOCUMENTED_ERRORS:
            continue
        if isinstance(result, pd.DataFrame):  # accepted: the numbers must be probabilities
            values = result[METRICS[:3]].to_numpy(dtype=float)
            assert np.all(np.isnan(values) | ((values >= 0) & (values <= 1)))
        else:
            assert np.isnan(result) or 0 <= result <= 1


# ------------------------------------------------------------------ DataFrame entry point

@st.composite
def frame_cases(draw):
    n = draw(st.integers(0, 30))
    label = draw(values_of(n, st.sampled_from([0.0, 1.0, 0.2, 0.7, 0.5]),
                           st.sampled_from([0.0, 1.0, 0.3, NAN, 2.0, -1.0])))
    models = {m: draw(values_of(n, score_values, junk_score_values)) for m in ["m1", "m2"]}
    identities = {}
    for g in ["g1", "g2"]:
        if draw(st.booleans()):  # annotator fractions
            identities[g] = draw(values_of(n, st.sampled_from([0.0, 1.0, 0.5, 0.2]),
                                           st.sampled_from([0.0, 1.0, 0.6, NAN])))
        else:  # annotator vote counts
            identities[g] = draw(values_of(n, st.sampled_from([0.0, 1.0, 2.0, 3.0, 4.0]),
                                           st.sampled_from([0.0, 2.0, NAN])))
    weights = draw(st.one_of(st.none(), values_of(n, weight_values, junk_weight_values)))
    if weights is not None:  # any overall scale: the metrics must not depend on it
        scale = 10.0 ** draw(st.sampled_from([-300, -150, -20, 0, 20, 150, 300]))
        weights = [x * scale if math.isfinite(x) else x for x in weights]
    df = pd.DataFrame({"label": label, **models, **identities})
    dress_label = draw(st.sampled_from(["f64", "Float64", "object"]))
    df["label"] = dress(label, dress_label)[0] if n else df["label"]
    for g in identities:
        how = draw(st.sampled_from(["f64", "f32", "f16", "Float64", "object", "int", "uint8",
                                    "int8", "Int64"]))
        dressed_values = dress(identities[g], how)
        df[g] = (dressed_values or dress(identities[g], "f64"))[0] if n else df[g]
    for m in models:
        how = draw(st.sampled_from(["f64", "f32", "Float64"]))
        dressed_scores, represented = dress(models[m], how)
        df[m] = dressed_scores if n else df[m]
        models[m] = represented
    if weights is not None:
        df["w"] = weights
    return dict(df=df, label=np.asarray(label, float), models=models,
                identities={g: np.asarray(v, float) for g, v in identities.items()},
                weights=None if weights is None else np.asarray(weights, float),
                nan_policy=draw(st.sampled_from(["raise", "omit"])),
                missing=draw(st.sampled_from(["background", "exclude"])),
                subgroup_threshold=draw(st.sampled_from([0.5, 1.0, 2.0, 2.5, 0.0])))


def frame_oracle(case, model):
    """Rows kept for one model, or None when the documented rules say: error."""
    n = case["label"].size
    if n == 0:
        return None
    label, scores, w = case["label"], case["models"][model], case["weights"]
    keep = np.ones(n, dtype=bool)
    if case["nan_policy"] == "omit":
        keep = ~np.isnan(label) & np.isfinite(scores)
        if w is not None:
            keep &= ~np.isnan(w)
        if not keep.any():
            return None
    if np.isnan(label[keep]).any() or not np.isfinite(scores[keep]).all():
        return None
    if ((label[keep] < 0) | (label[keep] > 1)).any():  # a label is 0/1 or a fraction
        return None
    if w is not None and (~np.isfinite(w[keep]) | (w[keep] < 0)).any():
        return None
    return keep


@FUZZ
@given(frame_cases())
def test_evaluate_fuzz(case):
    outcomes = {m: frame_oracle(case, m) for m in ["m1", "m2"]}
    try:
        res = call_quietly(fastbias.evaluate, case["df"], label="label", scores=["m1", "m2"],
                           subgroups=["g1", "g2"], sample_weight=None if case["weights"] is None
                           else "w", nan_policy=case["nan_policy"],
                           missing_subgroup=case["missing"],
                           subgroup_threshold=case["subgroup_threshold"])
    except DOCUMENTED_ERRORS as error:
        assert any(k is None for k in outcomes.values()), \
            f"valid input rejected: {type(error).__name__}: {error}"
        return
    assert all(k is not None for k in outcomes.values()), "invalid input accepted"
    event("valid input (compared with brute force)")
    for model, keep in outcomes.items():
        y = case["label"][keep] >= 0.5
        s = case["models"][model][keep]
        w = None if case["weights"] is None else case["weights"][keep]
        tol = 1e-12
        table = res.for_model(model)
        for g, values in case["identities"].items():
            v = values[keep]
            rows = np.ones(v.size, bool) if case["missing"] == "background" else ~np.isnan(v)
            expected = brute_force_metrics(y[rows], s[rows],
                                           v[rows] >= case["subgroup_threshold"],
                                           None if w is None else w[rows])
            for metric in METRICS:
                assert_close(table.loc[g, metric], expected[metric], tol, f"{model} {g} {metric}")
        overall = pair_probability(s[y], s[~y], *(None, None) if w is None else (w[y], w[~y]))
        assert_close(res.overall_auc[model], overall, tol, f"{model} overall")


@FUZZ
@given(frame_cases(), st.sampled_from(["label", "m1", "g1", "nope"]))
def test_evaluate_wrong_columns_raise_key_error(case, missing_column):
    df = case["df"].drop(columns=[missing_column]) if missing_column in case["df"] else case["df"]
    with pytest.raises(KeyError, match=repr(missing_column)):
        fastbias.evaluate(df, label="label" if missing_column != "nope" else "nope",
                          scores=["m1"], subgroups=["g1"])


@FUZZ
@given(frame_cases())
def test_compat_fuzz(case):
    compat = pytest.importorskip("fastbias.compat")
    df = case["df"]
    try:
        table = call_quietly(compat.compute_bias_metrics_for_model, df, ["g1", "g2"], "m1",
                             "label")
    except DOCUMENTED_ERRORS:
        return
    assert isinstance(table, pd.DataFrame)
    assume(len(table) > 0)


# ------------------------------------------------------------------ out-of-core entry points

FUZZ_FEW = settings(FUZZ, max_examples=12)  # each call starts a scheduler / writes files


def check_frame_result(res, case):
    for model in ["m1", "m2"]:
        keep = frame_oracle(case, model)
        y = case["label"][keep] >= 0.5
        s = case["models"][model][keep]
        w = None if case["weights"] is None else case["weights"][keep]
        tol = 1e-12
        table = res.for_model(model)
        for g, values in case["identities"].items():
            v = values[keep]
            rows = np.ones(v.size, bool) if case["missing"] == "background" else ~np.isnan(v)
            expected = brute_force_metrics(y[rows], s[rows],
                                           v[rows] >= case["subgroup_threshold"],
                                           None if w is None else w[rows])
            for metric in METRICS:
                assert_close(table.loc[g, metric], expected[metric], tol, f"{model} {g} {metric}")


def _run_out_of_core(function, case, source):
    case = dict(case, nan_policy="raise")  # these entry points have no nan_policy
    valid = all(frame_oracle(case, m) is not None for m in ["m1", "m2"])
    try:
        res = call_quietly(function, source, label="label", scores=["m1", "m2"],
                           subgroups=["g1", "g2"],
                           sample_weight=None if case["weights"] is None else "w",
                           missing_subgroup=case["missing"],
                           subgroup_threshold=case["subgroup_threshold"])
    except DOCUMENTED_ERRORS as error:
        assert not valid, f"valid input rejected: {type(error).__name__}: {error}"
        return
    assert valid, "invalid input accepted"
    event("valid input (compared with brute force)")
    check_frame_result(res, case)


@FUZZ_FEW
@given(frame_cases())
def test_dask_evaluate_fuzz(case):
    dd = pytest.importorskip("dask.dataframe")
    fastbias_dask = pytest.importorskip("fastbias.dask")
    assume(len(case["df"]) > 0)  # dask cannot partition an empty frame meaningfully
    import dask

    # dask turns object columns into strings by default (then a documented TypeError);
    # keep them as the objects (numbers and None) they are
    with dask.config.set({"scheduler": "synchronous", "dataframe.convert-string": False}):
        _run_out_of_core(fastbias_dask.evaluate, case, dd.from_pandas(case["df"], npartitions=2))


@FUZZ_FEW
@given(case=frame_cases())
def test_evaluate_parquet_fuzz(case, tmp_path_factory):
    pytest.importorskip("pyarrow")
    streaming = pytest.importorskip("fastbias.streaming")
    path = tmp_path_factory.mktemp("fuzz") / "data.parquet"
    case["df"].to_parquet(path)
    _run_out_of_core(streaming.evaluate_parquet, case, str(path))


# ------------------------------------------------------------------ three or more label values

@st.composite
def many_label_cases(draw):
    """Labels with at least three distinct values that no rule makes two classes."""
    kind = draw(st.sampled_from(["numbers", "strings"]))
    if kind == "numbers":  # 0/1 plus at least one value outside [0, 1]
        pool = [0.0, 1.0, draw(st.sampled_from([2.0, -1.0, 5.0, 1.5]))]
    else:  # a typo, other casing, "unknown"
        pool = ["toxic", "fine", draw(st.sampled_from(["Toxic", "unknown", "toxci", "n/a"]))]
    n = draw(st.integers(6, 30))
    labels = draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n))
    labels[:3] = pool  # every value occurs
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    return kind, labels, rng.random(n), rng.random(n) < 0.4


@settings(FUZZ, max_examples=25)
@given(case=many_label_cases())
def test_three_label_values_are_refused_everywhere(case, tmp_path_factory):
    kind, labels, scores, member = case
    y = np.array(labels, dtype=object if kind == "strings" else float)
    positive = "toxic" if kind == "strings" else 1.0
    groups = {"g": member}
    df = pd.DataFrame({"label": y, "s": scores, "g": member})
    calls = {
        "bias_metrics": lambda: fastbias.bias_metrics(y, scores, groups, pos_label=positive),
        "bias_metrics threshold": lambda: fastbias.bias_metrics(y, scores, groups,
                                                                label_threshold=0.5),
        "overall_auc": lambda: fastbias.overall_auc(y, scores, pos_label=positive),
        "BiasEvaluator": lambda: fastbias.BiasEvaluator(y, groups, pos_label=positive),
        "evaluate": lambda: fastbias.evaluate(df, label="label", scores="s", subgroups=["g"],
                                              pos_label=positive),
        "evaluate threshold": lambda: fastbias.evaluate(df, label="label", scores="s",
                                                        subgroups=["g"]),
    }
    if kind == "numbers":
        path = tmp_path_factory.mktemp("labels") / "data.parquet"
        df.to_parquet(path)
        from fastbias.streaming import evaluate_parquet

        calls["evaluate_parquet"] = lambda: evaluate_parquet(path, label="label", scores="s",
                                                             subgroups=["g"])
        dd = pytest.importorskip("dask.dataframe")
        import dask

        from fastbias import dask as fastbias_dask

        def on_dask():
            with dask.config.set({"scheduler": "synchronous"}):
                return fastbias_dask.evaluate(dd.from_pandas(df, npartitions=2), label="label",
                                              scores="s", subgroups=["g"])

        calls["dask"] = on_dask
    for name, call in calls.items():
        with pytest.raises((ValueError, TypeError)):
            call_quietly(call)
    from fastbias.cli import main

    path = tmp_path_factory.mktemp("cli") / "data.csv"
    df.to_csv(path, index=False)
    args = ["report", str(path), "--label", "label", "--scores", "s", "--subgroups", "g", "-q"]
    if kind == "strings":
        args += ["--positive", "toxic"]
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        assert main(args) == 1
    assert err.getvalue().startswith("fastbias: error: ")
