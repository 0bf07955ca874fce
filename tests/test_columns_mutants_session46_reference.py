"""A mutation audit of how input columns are read (``validate/columns.py``, ``spec.py``,
``rows.py``), by an independent reviewer (forty-sixth session): 58 hand mutants. 37 are
killed by existing tests (35 by fourteen validation, input, omit, name and limit files; 2
more by tests/test_sensitive_features.py and the Dask audit), 19 only by the tests here
(each checked in a worktree of main to fail with its mutant): Arrow unsigned integers with a
null read as signed, one null in a Polars integer column beyond 2**53 unseen, the position
of a too-big integer or an inexact Decimal counted among the present values, Decimal
("1e400") as inf, Python ints above 2**63 not read as uint64, a nullable Float32 widened,
an iterator with a length read, the alignment message's rows swapped, ``label=None``,
``sample_weight=7``, a boolean array taken for names, ``subgroups=[]`` with features, an
empty frame, ``column_spec``'s checks (missing_subgroup, the weight column, a threshold
named wrongly, a column listed twice) and omit's warning one frame too deep. 2 are
equivalent (an odd part compared with ``>=`` or ``>`` against 2**53, which is even; the
value left at a missing position, never read). The review also found a name equal to a
column's but written otherwise (``True`` for the column 1) evaluated that column under the
other name; now refused (the last test).

Every expected number is the brute force of tests/reference.py on hand-built labels,
scores and memberships; every expected message names the argument, the value and the
position written out here by hand.
"""
import warnings
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.validate.columns import read_column
from fastbias.validate.errors import OmittedRowsWarning
from fastbias.validate.spec import column_spec, score_dtype
from tests.test_membership_mutants import _assert_table, _quietly

# 12 rows: labels, scores with ties, one subgroup (both classes in and out of it)
Y = np.array([1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 1], dtype=bool)
S = np.array([0.9, 0.1, 0.4, 0.4, 0.7, 0.8, 0.3, 0.2, 0.6, 0.6, 0.5, 0.5])
G = np.array([1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 1, 0], dtype=bool)


def _metrics(y, s, groups, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OmittedRowsWarning)
        return _quietly(fastbias.bias_metrics, y, s, groups, **kwargs)


# ---------------------------------------------------------------- foreign containers --------

def test_arrow_unsigned_integers_with_a_null_keep_their_values():
    """uint8 scores 200..255 with a null: read as UInt8, not Int8 (which cannot hold them)."""
    pa = pytest.importorskip("pyarrow")
    s = [250, 3, None, 255, 200, 201, 3, 254, 250, 7, 9, 200]
    keep = np.array([v is not None for v in s])
    table = _metrics(Y, pa.array(s, type=pa.uint8()), {"g": G}, nan_policy="omit")
    s_ref = np.array([0 if v is None else v for v in s], dtype=np.float64)
    _assert_table(table, Y[keep], s_ref[keep], {"g": G[keep]}, "arrow uint8")


@pytest.mark.parametrize("maker", ["pyarrow", "polars"])
def test_foreign_integer_scores_with_one_null_beyond_2_53_are_refused(maker):
    """One null in a column of integers beyond 2**53: not a float64 column that rounds
    2**53 + 1 onto 2**53 (a tie that is not one); refused, naming the value."""
    big = [2 ** 53 + 1, 2 ** 53, None, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    if maker == "pyarrow":
        pa = pytest.importorskip("pyarrow")
        column = pa.array(big, type=pa.int64())
    else:
        pl = pytest.importorskip("polars")
        column = pl.Series("s", big, dtype=pl.Int64)
    with pytest.raises(ValueError, match=r"beyond 2\*\*53.*9007199254740993 at position 0"):
        _metrics(Y, column, {"g": G}, nan_policy="omit")


# ---------------------------------------------------------------- exact float conversion ----

def test_integer_scores_at_the_edges_of_2_53():
    """2**53 + 1 is refused (float64 holds it as 2**53); its negative too; 2**53 + 2 and
    -(2**53 + 2) are exact (an even number: 53 bits once its trailing zero is dropped)."""
    for bad in (2 ** 53 + 1, -(2 ** 53 + 1)):
        s = np.arange(12, dtype=np.int64)
        s[3] = bad
        with pytest.raises(ValueError, match=rf"beyond 2\*\*53 .*\(e\.g\. {bad} at position 3\)"):
            _metrics(Y, s, {"g": G})
    s = np.array([2 ** 53 + 2, 2 ** 53, -(2 ** 53 + 2), -(2 ** 53), 2 ** 60, 2 ** 53 + 2,
                  0, 1, 2 ** 53, -(2 ** 53 + 2), 5, 2 ** 62 + 2 ** 10], dtype=np.int64)
    table = _metrics(Y, s, {"g": G})
    # the reference's float64 holds each of these exactly (checked here, not assumed)
    assert all(int(float(v)) == int(v) for v in s)
    _assert_table(table, Y, s.astype(np.float64), {"g": G}, "exact ints near 2**53")


def test_big_integer_message_counts_and_places_them_among_missing_rows():
    """Int64 scores with missing rows before two integers beyond 2**53: the count is 2 and
    the position is the input's (2), not one among the present values (0)."""
    s = pd.array([None, None, 2 ** 53 + 1, 4, 2 ** 53 + 3, 1, 2, 3, 5, 6, 7, 8], dtype="Int64")
    with pytest.raises(ValueError, match=r"y_score has 2 integer\(s\) beyond 2\*\*53 .*"
                                         r"9007199254740993 at position 2\)"):
        _metrics(Y, s, {"g": G}, nan_policy="omit")


def test_nullable_int64_scores_beyond_2_53_are_not_rounded():
    s = pd.Series([2 ** 53 + 1, 2 ** 53, None] + list(range(9)), dtype="Int64")
    with pytest.raises(ValueError, match=r"beyond 2\*\*53"):
        _metrics(Y, s, {"g": G}, nan_policy="omit")


def test_decimal_beyond_float64_is_refused_not_infinite():
    s = np.array([Decimal("1e400")] + [Decimal(i) for i in range(11)], dtype=object)
    with pytest.raises(ValueError, match=r"cannot hold exactly: Decimal\('1E\+400'\) at "
                                         r"position 0"):
        _metrics(Y, s, {"g": G})


def test_inexact_decimal_named_at_its_input_position_among_missing():
    s = np.array([None, 0.5, Decimal("0.1")] + [0.25] * 9, dtype=object)
    with pytest.raises(ValueError, match=r"Decimal\('0\.1'\) at position 2 "):
        _metrics(Y, s, {"g": G}, nan_policy="omit")


def test_exact_decimals_are_scores():
    s_ref = np.array([0.5, 0.25, 0.75, 0.125, 0.5, 0.25, 1.0, 0.0, 0.375, 0.5, 0.625, 0.25])
    s = np.array([Decimal(str(v)) for v in s_ref], dtype=object)
    _assert_table(_metrics(Y, s, {"g": G}), Y, s_ref, {"g": G}, "decimals")


def test_mixed_objects_with_an_inexact_integer_are_refused():
    s = np.array([2 ** 53 + 1, 0.5] + [0.25] * 10, dtype=object)
    with pytest.raises(ValueError, match=r"cannot hold exactly: 9007199254740993 at position 0"):
        _metrics(Y, s, {"g": G})


@pytest.mark.skipif(np.finfo(np.longdouble).nmant <= 52, reason="long double is float64 here")
def test_long_doubles_that_float64_would_round_are_refused():
    s = np.array([np.longdouble(1) + np.longdouble(2) ** -60] + [np.longdouble(1)] * 11,
                 dtype=object)
    with pytest.raises(ValueError, match="cannot hold exactly"):
        _metrics(Y, s, {"g": G})


def test_object_integers_above_int64_read_exactly_as_uint64():
    """Python ints in [2**63, 2**64) that float64 holds exactly are scores; one it does not
    hold is refused as an integer beyond 2**53 (uint64), at its position."""
    base = 2 ** 63
    s_ref = [base + k * 2 ** 11 for k in (5, 1, 3, 3, 4, 0, 2, 1, 6, 6, 2, 2)]
    s = np.array(s_ref, dtype=object)
    _assert_table(_metrics(Y, s, {"g": G}), Y, np.array(s_ref, dtype=np.float64), {"g": G},
                  "uint64 objects")
    s[4] = base + 1
    with pytest.raises(ValueError, match=r"1 integer\(s\) beyond 2\*\*53 .*"
                                         r"9223372036854775809 at position 4"):
        _metrics(Y, s, {"g": G})


# ---------------------------------------------------------------- pandas ------------------

def test_integer_categorical_labels_and_scores():
    """Integer categories are read by their codes: the first category (code 0) is a value,
    not a missing one."""
    y = pd.Series(pd.Categorical(Y.astype(int), categories=[0, 1]))
    s_ref = np.array([3, 1, 2, 2, 3, 1, 2, 1, 3, 3, 2, 1])
    s = pd.Series(pd.Categorical(s_ref, categories=[1, 2, 3]))
    _assert_table(_metrics(y, s, {"g": G}), Y, s_ref.astype(float), {"g": G}, "categoricals")


def test_integer_categorical_with_missing_identity_column():
    """An integer categorical identity column with a missing value (code -1): members are
    values >= 1 compared one by one; the missing row is no member (and under 'exclude' not
    annotated)."""
    col = pd.Series(pd.Categorical([0, 5, None, 1, 0, 5, 1, None, 0, 1, 5, 0],
                                   categories=[0, 1, 5]))
    member = np.array([0, 1, 0, 1, 0, 1, 1, 0, 0, 1, 1, 0], dtype=bool)
    annotated = np.array([v is not None for v in [0, 5, None, 1, 0, 5, 1, None, 0, 1, 5, 0]])
    _assert_table(_metrics(Y, S, {"g": col}, subgroup_threshold=1), Y, S, {"g": member}, "cat")
    df = pd.DataFrame({"y": Y, "s": S, "g": col})
    res = _quietly(fastbias.evaluate, df, label="y", scores="s", subgroups=["g"],
                   subgroup_threshold=1, missing_subgroup="exclude")
    table = res.table if hasattr(res, "table") else res
    table = table.set_index("subgroup") if "subgroup" in table.columns else table
    keep = annotated
    _assert_table(table, Y[keep], S[keep], {"g": member[keep]}, "cat exclude")


def test_nullable_float32_keeps_its_width():
    """'floats keep their width': a nullable Float32 column reads as float32 (ties decided in
    float32, as for a numpy float32 column)."""
    arr, missing = read_column(pd.Series([0.5, None, 0.25], dtype="Float32"), "x")
    assert arr.dtype == np.float32
    assert missing.tolist() == [False, True, False]
    assert score_dtype(np.float32) == np.float32
    assert score_dtype(pd.Float32Dtype()) == np.float32
    assert score_dtype(np.int64) == np.float64


def test_nullable_boolean_identity_with_missing_rows():
    values = [True, None, False, True, None, True, False, False, True, None, True, False]
    col = pd.array(values, dtype="boolean")
    member = np.array([v is True for v in values])
    annotated = np.array([v is not None for v in values])
    _assert_table(_metrics(Y, S, {"g": col}, subgroup_threshold=0.5), Y, S, {"g": member},
                  "nullable bool")
    df = pd.DataFrame({"y": Y, "s": S, "g": col})
    res = _quietly(fastbias.evaluate, df, label="y", scores="s", subgroups=["g"],
                   missing_subgroup="exclude")
    table = res.table if hasattr(res, "table") else res
    table = table.set_index("subgroup") if "subgroup" in table.columns else table
    _assert_table(table, Y[annotated], S[annotated], {"g": member[annotated]}, "bool exclude")


# ---------------------------------------------------------------- shapes and masks --------

def test_masked_scores_are_missing_not_their_hidden_values():
    mask = np.zeros(12, dtype=bool)
    mask[[2, 7]] = True
    hidden = S.copy()
    hidden[[2, 7]] = [1e20, -1.0]  # what numpy would read under the mask
    s = np.ma.array(hidden, mask=mask)
    keep = ~mask
    with pytest.warns(OmittedRowsWarning, match="dropped 2 of 12"):
        table = _quietly(fastbias.bias_metrics, Y, s, {"g": G}, nan_policy="omit")
    _assert_table(table, Y[keep], S[keep], {"g": G[keep]}, "masked scores")
    y = np.ma.array(Y.astype(int), mask=mask)
    table = _metrics(y, S, {"g": G}, nan_policy="omit")
    _assert_table(table, Y[keep], S[keep], {"g": G[keep]}, "masked labels")


def test_two_column_frame_and_n_by_2_arrays_are_refused():
    with pytest.raises(ValueError, match="y_score must be one-dimensional, got a DataFrame "
                                         "with 2 columns"):
        _metrics(Y, pd.DataFrame({"a": S, "b": S}), {"g": G})
    y2 = np.stack([Y, Y], axis=1)
    s2 = np.stack([S, S], axis=1)
    with pytest.raises(ValueError, match=r"one-dimensional, got shape \(12, 2\)"):
        _metrics(y2, s2, {"g": np.concatenate([G, G])})


def test_nan_label_and_weight_beyond_the_first_64_rows_are_missing():
    n = 100
    rng = np.random.default_rng(5)
    y = (np.arange(n) % 2).astype(float)
    s = rng.integers(0, 7, n) / 4
    g = (np.arange(n) % 3) == 0
    w = rng.integers(1, 4, n).astype(float)
    y[80] = np.nan
    w[90] = np.nan
    keep = np.ones(n, dtype=bool)
    keep[[80, 90]] = False
    with pytest.warns(OmittedRowsWarning, match=r"dropped 2 of 100 rows \(y_true: 1 missing; "
                                                r"sample_weight: 1 NaN or missing\)"):
        table = _quietly(fastbias.bias_metrics, y, s, {"g": g}, sample_weight=w,
                         nan_policy="omit")
    _assert_table(table, y[keep].astype(bool), s[keep], {"g": g[keep]}, "weighted", w[keep])


def test_one_shot_iterator_is_refused():
    with pytest.raises(TypeError, match=r"y_score must be .*got a list_iterator; pass list"):
        _metrics(Y, iter(S.tolist()), {"g": G})


def test_lengths_named_each_way():
    with pytest.raises(ValueError, match="y_score has 11 rows but y_true has 12"):
        _metrics(Y, S[:11], {"g": G})
    with pytest.raises(ValueError, match="sample_weight has 11 rows but y_true has 12"):
        _metrics(Y, S, {"g": G}, sample_weight=np.ones(11))


# ---------------------------------------------------------------- index alignment ---------

def test_permuted_index_is_refused_everywhere():
    index = list(range(12))
    shuffled = index[::-1]
    ys = pd.Series(Y, index=index)
    with pytest.raises(ValueError, match=r"y_true and y_score are pandas objects with different "
                                         r"indexes \(e\.g\. position 0 is row 0 in one and 11 "
                                         r"in the other\)"):
        _metrics(ys, pd.Series(S, index=shuffled), {"g": G})
    with pytest.raises(ValueError, match=r"different indexes"):
        _metrics(ys, S, {"g": pd.Series(G, index=shuffled)})
    with pytest.raises(ValueError, match=r"different indexes"):
        _metrics(ys, S, pd.DataFrame({"g": G}, index=shuffled))


# ---------------------------------------------------------------- column names ------------

def _frame():
    return pd.DataFrame({"y": Y, "s": S, "g": G, "race": np.where(G, "black", "white")})


def test_a_name_carried_by_two_columns_is_named():
    df = pd.concat([_frame(), pd.DataFrame({"s": S})], axis=1)
    with pytest.raises(ValueError, match="scores: the DataFrame has 2 columns named 's'"):
        fastbias.evaluate(df, label="y", scores="s", subgroups=["g"])


def test_none_label_is_required():
    with pytest.raises(ValueError, match="label is required"):
        fastbias.evaluate(_frame(), label=None, scores="s", subgroups=["g"])


def test_a_number_naming_no_column_is_a_missing_sample_weight_column():
    with pytest.raises(KeyError, match=r"sample_weight: column\(s\) \[7\] not in the DataFrame"):
        fastbias.evaluate(_frame(), label="y", scores="s", subgroups=["g"], sample_weight=7)


def test_duplicate_and_alike_names_are_refused():
    with pytest.raises(ValueError, match=r"scores has duplicate names: \['s'\]"):
        fastbias.evaluate(_frame(), label="y", scores=["s", "s"], subgroups=["g"])
    df = _frame().assign(**{"1": G})
    df[1] = ~G
    with pytest.raises(ValueError, match="subgroups has names that read alike"):
        fastbias.evaluate(df, label="y", scores="s", subgroups=[1, "1"])


def test_boolean_array_is_not_taken_for_column_names():
    df = pd.DataFrame({0: G, 1: ~G, "y": Y, "s": S})
    with pytest.raises(TypeError, match="subgroups names columns of the data"):
        fastbias.evaluate(df, label="y", scores="s", subgroups=np.array([True, False]))


def test_empty_subgroups_with_sensitive_features():
    res = _quietly(fastbias.evaluate, _frame(), label="y", scores="s", subgroups=[],
                   sensitive_features="race")
    table = res.table if hasattr(res, "table") else res
    table = table.set_index("subgroup") if "subgroup" in table.columns else table
    _assert_table(table, Y, S, {"race=black": G, "race=white": ~G}, "features only")


def test_empty_frame_and_missing_subgroup_column_are_named():
    with pytest.raises(ValueError, match=r"df is empty \(0 rows\)"):
        fastbias.evaluate(_frame().iloc[:0], label="y", scores="s", subgroups=["g"])
    with pytest.raises(KeyError, match=r"subgroups: column\(s\) \['nope'\]"):
        fastbias.evaluate(_frame(), label="y", scores="s", subgroups=["nope"])


# ---------------------------------------------------------------- column_spec -------------

@pytest.fixture
def csv_path(tmp_path):
    path = tmp_path / "scored.csv"
    _frame().assign(y=Y.astype(int), g=G.astype(int),
                    lab=np.where(Y, "yes", "no"), w=np.arange(1, 13)).to_csv(path, index=False)
    return str(path)


def test_csv_column_arguments_are_checked_by_name(csv_path):
    from fastbias.streaming import evaluate_csv
    with pytest.raises(ValueError, match="missing_subgroup must be one of"):
        evaluate_csv(csv_path, label="y", scores="s", subgroups=["g"], missing_subgroup="bogus")
    with pytest.raises(KeyError, match=r"sample_weight: column\(s\) \['nope'\] not in the CSV"):
        evaluate_csv(csv_path, label="y", scores="s", subgroups=["g"], sample_weight="nope")
    with pytest.raises(TypeError, match="^subgroup_threshold must be a number"):
        evaluate_csv(csv_path, label="y", scores="s", subgroups=["g"], subgroup_threshold="x")


def test_csv_with_pos_label(csv_path):
    from fastbias.streaming import evaluate_csv
    res = _quietly(evaluate_csv, csv_path, label="lab", scores="s", subgroups=["g"],
                   pos_label="yes")
    table = res.table.set_index("subgroup") if "subgroup" in res.table.columns else res.table
    _assert_table(table, Y, S, {"g": G}, "pos_label csv")


def test_column_spec_lists_each_column_once():
    spec = column_spec(["y", "s", "g", "w"], label="y", scores=["s"], subgroups=["g", "y"],
                       label_threshold=0.5, subgroup_threshold=0.5,
                       missing_subgroup="background", sample_weight="s")
    assert spec.columns == ["y", "s", "g"]
    spec = column_spec(["y", "s", "g"], label="y", scores=["s"], subgroups=["g"],
                       label_threshold=0.5, subgroup_threshold=0.5,
                       missing_subgroup="background", sample_weight=None, pos_label=1)
    assert spec.label_threshold is None and spec.pos_label == 1


def test_identity_column_named_like_a_feature_value():
    df = _frame().assign(**{"race=black": G})
    with pytest.raises(ValueError, match="subgroup name 'race=black' appears twice"):
        fastbias.evaluate(df, label="y", scores="s", subgroups=["race=black"],
                          sensitive_features="race")


# ---------------------------------------------------------------- nan_policy="omit" -------

def test_omit_drops_the_union_of_missing_rows_and_says_how_many():
    y = Y.astype(float)
    y[1] = np.nan
    s = S.copy()
    s[3] = np.nan
    s[6] = np.inf
    s[9] = -np.inf
    keep = np.ones(12, dtype=bool)
    keep[[1, 3, 6, 9]] = False
    with pytest.warns(OmittedRowsWarning) as record:
        table = fastbias.bias_metrics(y, s, {"g": G}, nan_policy="omit")  # (called from here)
    record = [r for r in record if issubclass(r.category, OmittedRowsWarning)]
    assert len(record) == 1
    message = str(record[0].message)
    assert message == ("nan_policy='omit' dropped 4 of 12 rows (y_true: 1 missing; y_score: 3 "
                       "(1 NaN or missing, 2 infinite))")
    assert record[0].filename == __file__
    _assert_table(table, Y[keep], S[keep], {"g": G[keep]}, "union")


def test_omit_leaving_no_rows_is_refused():
    with pytest.raises(ValueError, match="nan_policy='omit' leaves no rows: all 12 rows"):
        _metrics(Y, np.full(12, np.nan), {"g": G}, nan_policy="omit")


def test_omit_keeps_weights_with_their_rows():
    w = np.arange(1, 13, dtype=float)
    s = S.copy()
    s[0] = np.nan
    keep = np.arange(12) != 0
    table = _metrics(Y, s, {"g": G}, sample_weight=w, nan_policy="omit")
    _assert_table(table, Y[keep], S[keep], {"g": G[keep]}, "weighted", w[keep])


def test_messages_after_omit_name_the_input_row():
    s = S.copy()
    s[0] = np.nan
    y = Y.astype(float)
    y[5] = 7
    with pytest.raises(ValueError, match=r"7.* at position 5"):
        _metrics(y, s, {"g": G}, nan_policy="omit")


class _OneShot:
    """An iterator that also says its length (a reader of rows might): still one-shot."""

    def __init__(self, values):
        self._values = list(values)
        self._i = 0

    def __len__(self):
        return len(self._values)

    def __iter__(self):
        return self

    def __next__(self):
        if self._i >= len(self._values):
            raise StopIteration
        self._i += 1
        return self._values[self._i - 1]


def test_one_shot_iterator_with_a_length_is_refused():
    with pytest.raises(TypeError, match=r"y_score must be .*got a _OneShot; pass list"):
        _metrics(Y, _OneShot(S.tolist()), {"g": G})


def test_a_name_equal_to_a_column_but_written_otherwise_is_refused():
    """Found by this review: ``True`` (or 1.0) where the frame's column is 1 found that
    column (``True == 1``) while the table showed the name given, ``True``. Each argument
    now refuses it, naming the argument, the name and the column; the column's own name and
    a column really named ``True`` are read (its row the brute force)."""
    y = Y.astype(int)
    df = pd.DataFrame({"y": y, "s": S, 1: G.astype(int), "m": S[::-1].copy()})
    for kwargs, argument in (({"subgroups": [True]}, "subgroups"),
                             ({"subgroups": [1.0]}, "subgroups"),
                             ({"scores": [1.0], "subgroups": ["m"]}, "scores")):
        call = {"label": "y", "scores": "s", **kwargs}
        with pytest.raises(ValueError, match=rf"^{argument}: .* names the column 1 "):
            _quietly(fastbias.evaluate, df, **call)
    with pytest.raises(ValueError, match=r"^label: True names the column 1 "):
        _quietly(fastbias.evaluate, df, label=True, scores="s", subgroups=["m"])
    table = _quietly(fastbias.evaluate, df, label="y", scores="s", subgroups=[1]).for_model("s")
    assert list(table.index) == [1]
    _assert_table(table, Y, S, {1: G}, "column 1")
    named_true = pd.DataFrame({"y": y, "s": S, True: G})
    table = _quietly(fastbias.evaluate, named_true, label="y", scores="s",
                     subgroups=[True]).for_model("s")
    assert list(table.index) == [True]
    _assert_table(table, Y, S, {True: G}, "column True")
    # (a column named NaN is found by NaN, as pandas finds it; it is no other column's)
    named_nan = pd.DataFrame({"y": y, "s": S, np.nan: G, 1: ~G})
    table = _quietly(fastbias.evaluate, named_nan, label="y", scores="s",
                     subgroups=[float("nan")]).for_model("s")
    assert len(table.index) == 1 and np.isnan(table.index[0])
    _assert_table(table.reset_index(drop=True).rename(index={0: "nan"}), Y, S, {"nan": G},
                  "column NaN")
