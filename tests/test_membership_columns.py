"""Identity columns become memberships the same way on every entry point (brute force).

Pins the step the suite was thinnest on: how a subgroup column of any dtype
(bool, every integer width, float16/32/64, pandas nullable, pyarrow-backed,
object, polars) turns into members, background and unannotated rows, with
every threshold, both ``missing_subgroup`` policies and every byte value of a
uint8 column. The expected memberships are computed here element by element
from the Python values the column holds:

* a missing value (NaN, None, pd.NA) is never a member; it is not annotated
  (``missing_subgroup="exclude"`` leaves the row out of the background);
* a boolean column (numpy bool, nullable ``boolean``, pyarrow/polars bool, or
  an object column of Python bools) is a membership as it is: True is a member,
  whatever the threshold;
* any numeric column: member iff ``value >= threshold``, compared exactly.

The metrics are then the O(n^2) brute force of ``tests.reference`` on those
memberships.
"""
import json
import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.validate.errors import UndefinedMetricWarning
from tests.reference import brute_force_metrics, pair_probability

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
THRESHOLDS = [0.5, 1, 2, 0, -1, 2.5, 255, 256]
N = 512


def _column_cases(rng):
    """name -> (pandas Series, is_boolean) over N rows; every byte value in the uint8 ones."""
    byte_values = rng.permutation(np.arange(N) % 256).astype(np.uint8)
    small = rng.integers(-3, 6, N)
    missing = rng.random(N) < 0.15
    flags = rng.random(N) < 0.3

    def with_na(values, dtype):
        return pd.Series(pd.array([None if m else v for v, m in zip(values.tolist(), missing)],
                                  dtype=dtype))

    floats = np.where(missing, np.nan, small / 2.0)
    cases = {
        "bool": (pd.Series(flags), True),
        "uint8": (pd.Series(byte_values), False),
        "int8": (pd.Series(small.astype(np.int8)), False),
        "int16": (pd.Series((small * 100).astype(np.int16)), False),
        "int32": (pd.Series(small.astype(np.int32)), False),
        "int64": (pd.Series(small.astype(np.int64)), False),
        "uint16": (pd.Series(np.abs(small).astype(np.uint16) * 64), False),
        "uint64": (pd.Series(np.abs(small).astype(np.uint64)), False),
        "float16": (pd.Series((small / 4.0).astype(np.float16)), False),
        "float32": (pd.Series(floats.astype(np.float32)), False),
        "float64": (pd.Series(floats), False),
        "boolean-NA": (with_na(flags, "boolean"), True),
        "Int8-NA": (with_na(small, "Int8"), False),
        "UInt8-NA": (with_na(byte_values, "UInt8"), False),
        "Int64-NA": (with_na(small, "Int64"), False),
        "Float32-NA": (with_na(small / 2.0, "Float32"), False),
        "uint8-pyarrow": (with_na(byte_values, "uint8[pyarrow]"), False),
        "bool-pyarrow": (with_na(flags, "bool[pyarrow]"), True),
        "double-pyarrow": (with_na(small / 2.0, "double[pyarrow]"), False),
        "object-bool": (pd.Series([None if m else bool(v) for v, m in zip(flags, missing)],
                                  dtype=object), True),
        "object-int": (pd.Series([None if m else int(v) for v, m in zip(small, missing)],
                                 dtype=object), False),
    }
    return cases


def _python_value(value):
    if value is None or value is pd.NA:
        return None
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return None if math.isnan(value) else float(value)
    return value


def naive_membership(series: pd.Series, is_boolean: bool, threshold):
    """(member, annotated) boolean arrays, one Python value at a time."""
    member, annotated = [], []
    for raw in series.astype(object).tolist():
        value = _python_value(raw)
        if value is None:
            member.append(False)
            annotated.append(False)
        else:
            annotated.append(True)
            member.append(bool(value) if is_boolean else value >= threshold)
    return np.array(member, dtype=bool), np.array(annotated, dtype=bool)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(20261123)
    cases = _column_cases(rng)
    df = pd.DataFrame({name: series for name, (series, _) in cases.items()})
    df.insert(0, "label", rng.random(N) < 0.4)
    df.insert(1, "score", rng.integers(0, 12, N) / 11.0)  # heavy ties
    return df, {name: boolean for name, (_, boolean) in cases.items()}


def expected_table(df, booleans, threshold, missing_subgroup):
    y = df["label"].to_numpy(dtype=bool)
    s = df["score"].to_numpy(dtype=np.float64)
    out = {}
    for name, boolean in booleans.items():
        member, annotated = naive_membership(df[name], boolean, threshold)
        rows = annotated if missing_subgroup == "exclude" else np.ones(N, dtype=bool)
        g, yy, ss = member[rows], y[rows], s[rows]
        out[name] = {"subgroup_negatives": int(np.sum(g & ~yy)),
                     "subgroup_positives": int(np.sum(g & yy)),
                     "background_negatives": int(np.sum(~g & ~yy)),
                     "background_positives": int(np.sum(~g & yy)),
                     **brute_force_metrics(yy, ss, g)}
    return out


def assert_matches(table, expected, what):
    for name, want in expected.items():
        for key, value in want.items():
            got = table.loc[name, key]
            if key in METRICS:
                if np.isnan(value):
                    assert np.isnan(got), f"{what} {name} {key}: {got} (expected NaN)"
                else:
                    assert abs(got - value) <= 1e-12, f"{what} {name} {key}: {got} != {value}"
            else:
                assert int(got) == value, f"{what} {name} {key}: {got} != {value}"


def quietly(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return function(*args, **kwargs)


# ------------------------------------------------------------------ DataFrame entry points

@pytest.mark.parametrize("missing_subgroup", ["background", "exclude"])
@pytest.mark.parametrize("threshold", THRESHOLDS)
def test_evaluate_reads_every_dtype_like_the_brute_force(data, threshold, missing_subgroup):
    df, booleans = data
    res = quietly(fastbias.evaluate, df, label="label", scores="score", subgroups=list(booleans),
                  subgroup_threshold=threshold, missing_subgroup=missing_subgroup)
    assert_matches(res.for_model(), expected_table(df, booleans, threshold, missing_subgroup),
                   f"evaluate threshold={threshold} {missing_subgroup}")


@pytest.mark.parametrize("missing_subgroup", ["background", "exclude"])
@pytest.mark.parametrize("threshold", [0.5, 2, 255])
def test_evaluate_parquet_reads_every_dtype_like_the_brute_force(data, tmp_path, threshold,
                                                                  missing_subgroup):
    pytest.importorskip("pyarrow")
    from fastbias.streaming import evaluate_parquet

    df, booleans = data
    path = tmp_path / "data.parquet"
    df.to_parquet(path)
    res = quietly(evaluate_parquet, path, label="label", scores="score", subgroups=list(booleans),
                  subgroup_threshold=threshold, missing_subgroup=missing_subgroup,
                  bucket_rows=100)
    assert_matches(res.for_model(), expected_table(df, booleans, threshold, missing_subgroup),
                   f"evaluate_parquet threshold={threshold} {missing_subgroup}")


@pytest.mark.parametrize("missing_subgroup", ["background", "exclude"])
@pytest.mark.parametrize("threshold", [0.5, 2])
def test_dask_evaluate_reads_every_dtype_like_the_brute_force(data, threshold, missing_subgroup):
    dd = pytest.importorskip("dask.dataframe")
    import dask

    import fastbias.dask

    df, booleans = data
    with dask.config.set({"scheduler": "synchronous", "dataframe.convert-string": False}):
        res = quietly(fastbias.dask.evaluate, dd.from_pandas(df, npartitions=3), label="label",
                      scores="score", subgroups=list(booleans), subgroup_threshold=threshold,
                      missing_subgroup=missing_subgroup)
    assert_matches(res.for_model(), expected_table(df, booleans, threshold, missing_subgroup),
                   f"dask threshold={threshold} {missing_subgroup}")


@pytest.mark.parametrize("threshold", [0.5, 2])
def test_cli_on_parquet_reads_every_dtype_like_the_brute_force(data, tmp_path, threshold):
    pytest.importorskip("pyarrow")
    from fastbias.cli import main

    df, booleans = data
    path = tmp_path / "data.parquet"
    df.to_parquet(path)
    out = tmp_path / "out.json"
    assert main(["report", str(path), "--label", "label", "--scores", "score", "--subgroups",
                 *booleans, "--subgroup-threshold", str(threshold), "--missing-subgroup",
                 "exclude", "--out", str(out), "--quiet"]) == 0
    rows = json.loads(out.read_text())["models"][0]["subgroups"]
    table = pd.DataFrame(rows).set_index("subgroup").astype(float)
    assert_matches(table, expected_table(df, booleans, threshold, "exclude"),
                   f"cli threshold={threshold}")


def test_polars_frame_reads_like_the_brute_force(data):
    pl = pytest.importorskip("polars")
    df, _ = data
    frame = pl.DataFrame({
        "label": df["label"].to_numpy(),
        "score": df["score"].to_numpy(),
        "votes": pl.Series(df["uint8"].to_numpy(), dtype=pl.UInt8),
        "flag": pl.Series(df["bool"].to_numpy(), dtype=pl.Boolean),
        "count": pl.Series([None if v is pd.NA else int(v) for v in df["Int64-NA"]],
                           dtype=pl.Int64),
    })
    reference = pd.DataFrame({"label": df["label"], "score": df["score"], "votes": df["uint8"],
                              "flag": df["bool"], "count": df["Int64-NA"]})
    booleans = {"votes": False, "flag": True, "count": False}
    for threshold in (0.5, 2, 200):
        for policy in ("background", "exclude"):
            res = quietly(fastbias.evaluate, frame, label="label", scores="score",
                          subgroups=list(booleans), subgroup_threshold=threshold,
                          missing_subgroup=policy)
            assert_matches(res.for_model(), expected_table(reference, booleans, threshold, policy),
                           f"polars threshold={threshold} {policy}")


# ------------------------------------------------------------------ array entry points

NO_NA = ["bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint64", "float16"]


@pytest.mark.parametrize("threshold", THRESHOLDS)
def test_bias_metrics_and_evaluator_read_every_dtype_like_the_brute_force(data, threshold):
    df, booleans = data
    names = [*NO_NA, "float64", "Int64-NA", "boolean-NA", "uint8-pyarrow", "object-int"]
    chosen = {name: booleans[name] for name in names}
    expected = expected_table(df, chosen, threshold, "background")
    table = quietly(fastbias.bias_metrics, df["label"], df["score"], df[names],
                    subgroup_threshold=threshold)
    assert_matches(table, expected, f"bias_metrics threshold={threshold}")
    evaluator = fastbias.BiasEvaluator(df["label"], df[names], subgroup_threshold=threshold)
    assert_matches(quietly(evaluator.metrics, df["score"]), expected,
                   f"BiasEvaluator threshold={threshold}")


def test_bias_metrics_without_threshold_takes_binary_columns_of_any_dtype(data):
    df, booleans = data
    y, s = df["label"], df["score"]
    binary = {
        "uint8": (df["uint8"] % 2).astype(np.uint8),
        "int64": (df["int64"] > 0).astype(np.int64),
        "float16": (df["int64"] > 0).astype(np.float16),
        "UInt8": pd.Series(pd.array((df["int64"] > 1).astype(int), dtype="UInt8")),
        "boolean": df["bool"].astype("boolean"),
    }
    table = quietly(fastbias.bias_metrics, y, s, binary)
    for name, column in binary.items():
        want = brute_force_metrics(y.to_numpy(), s.to_numpy(), column.to_numpy(dtype=float) == 1)
        for metric in METRICS:
            got, value = table.loc[name, metric], want[metric]
            assert (np.isnan(got) and np.isnan(value)) or abs(got - value) <= 1e-12, (name, metric)


def test_report_histograms_add_up_to_the_table_for_every_dtype(data):
    from fastbias.report import score_histograms

    df, booleans = data
    for threshold in (0.5, 2):
        for policy in ("background", "exclude"):
            res = quietly(fastbias.evaluate, df, label="label", scores="score",
                          subgroups=list(booleans), subgroup_threshold=threshold,
                          missing_subgroup=policy)
            hist = score_histograms(df, res, bins=7)
            expected = expected_table(df, booleans, threshold, policy)
            for g, name in enumerate(booleans):
                sums = hist.counts[0, g].sum(axis=1)
                want = expected[name]
                assert sums.tolist() == [want["subgroup_negatives"], want["subgroup_positives"],
                                         want["background_negatives"],
                                         want["background_positives"]], (name, threshold, policy)


def test_overall_auc_unaffected_by_identity_dtypes(data):
    df, booleans = data
    res = quietly(fastbias.evaluate, df, label="label", scores="score", subgroups=list(booleans),
                  subgroup_threshold=2, missing_subgroup="exclude")
    y = df["label"].to_numpy()
    s = df["score"].to_numpy()
    assert abs(res.overall_auc["score"] - pair_probability(s[y], s[~y])) <= 1e-12


# ------------------------------------------------------------------ integers beyond 2**53

B = 2 ** 53
#: float64 thresholds next to integers it cannot hold: 2**53 + 3 rounds up to 2**53 + 4 and
#: -2**53 - 1 up to -2**53, so comparing such columns in float64 makes them members wrongly
HUGE_THRESHOLDS = [B + 4.0, B + 2.0, -float(B), 2.0 ** 63, 2.0 ** 64, 2.0 ** 62 + 2.0 ** 10]


@pytest.fixture(scope="module")
def huge():
    """Integer identity columns of values around +-2**53 and 2**62, int64 and uint64 near
    their ends, with and without NA; the threshold's neighbours in every column."""
    rng = np.random.default_rng(53)
    near = np.array([B - 1, B, B + 1, B + 2, B + 3, B + 4, B + 5, B + 7,
                     2 ** 62 + 2 ** 10 - 1, 2 ** 62 + 2 ** 10, 2 ** 63 - 1])
    signed = rng.choice(np.concatenate([near, [-B - 3, -B - 1, -B, -B + 1, -2 ** 63]]), N)
    unsigned = rng.choice(np.array([*near.tolist(), 2 ** 63, 2 ** 64 - 1, 0], dtype=np.uint64),
                          N)
    missing = rng.random(N) < 0.2
    cases = {
        "int64": (pd.Series(signed.astype(np.int64)), False),
        "uint64": (pd.Series(unsigned), False),
        "Int64-NA": (pd.Series(pd.array([None if m else int(v) for v, m
                                         in zip(signed.tolist(), missing)], dtype="Int64")),
                     False),
        "UInt64-NA": (pd.Series(pd.array([None if m else int(v) for v, m
                                          in zip(unsigned.tolist(), missing)], dtype="UInt64")),
                      False),
    }
    df = pd.DataFrame({name: series for name, (series, _) in cases.items()})
    df.insert(0, "label", rng.random(N) < 0.4)
    df.insert(1, "score", rng.integers(0, 12, N) / 11.0)
    return df, {name: boolean for name, (_, boolean) in cases.items()}


@pytest.mark.parametrize("threshold", HUGE_THRESHOLDS)
def test_integers_beyond_2_53_are_compared_as_integers(huge, threshold):
    """Python compares an int with a float exactly: the brute force's membership is the real
    one. Every entry point in memory, both policies."""
    df, booleans = huge
    names = list(booleans)
    for policy in ("background", "exclude"):
        expected = expected_table(df, booleans, threshold, policy)
        res = quietly(fastbias.evaluate, df, label="label", scores="score", subgroups=names,
                      subgroup_threshold=threshold, missing_subgroup=policy)
        assert_matches(res.for_model(), expected, f"evaluate {threshold} {policy}")
    expected = expected_table(df, {"int64": False, "uint64": False}, threshold, "background")
    table = quietly(fastbias.bias_metrics, df["label"], df["score"], df[["int64", "uint64"]],
                    subgroup_threshold=threshold)
    assert_matches(table, expected, f"bias_metrics {threshold}")
    evaluator = fastbias.BiasEvaluator(df["label"], df[["int64", "uint64"]],
                                       subgroup_threshold=threshold)
    assert_matches(quietly(evaluator.metrics, df["score"]), expected, f"evaluator {threshold}")
    # pyarrow tables and polars frames: their own to_pandas makes integers with nulls floats
    pa = pytest.importorskip("pyarrow")
    frames = {"pyarrow": pa.Table.from_pandas(df, preserve_index=False)}
    try:
        import polars as pl
    except ImportError:
        pass
    else:
        frames["polars"] = pl.from_arrow(frames["pyarrow"])
    expected = expected_table(df, booleans, threshold, "exclude")
    for kind, frame in frames.items():
        res = quietly(fastbias.evaluate, frame, label="label", scores="score", subgroups=names,
                      subgroup_threshold=threshold, missing_subgroup="exclude")
        assert_matches(res.for_model(), expected, f"{kind} {threshold}")


@pytest.mark.parametrize("threshold", [B + 4.0, -float(B)])
def test_integers_beyond_2_53_out_of_core_and_on_the_cli(huge, tmp_path, threshold, capsys):
    from tests.every_path import evaluate_on_every_path

    df, booleans = huge
    names = list(booleans)
    expected = expected_table(df, booleans, threshold, "exclude")
    kw = dict(label="label", scores="score", subgroup_threshold=threshold,
              missing_subgroup="exclude")
    _, got = evaluate_on_every_path(tmp_path, df, bucket_rows=100, npartitions=2, csv=False,
                                    subgroups=names, **kw)
    for res in got:
        assert_matches(res.for_model(), expected, f"out of core {threshold}")
    from fastbias.cli import main

    out = tmp_path / "out.json"
    assert main(["report", str(tmp_path / "d.parquet"), "--label", "label", "--scores", "score",
                 "--subgroups", *names, "--subgroup-threshold", repr(threshold),
                 "--missing-subgroup", "exclude", "--out", str(out), "--quiet"]) == 0
    rows = json.loads(out.read_text())["models"][0]["subgroups"]
    assert_matches(pd.DataFrame(rows).set_index("subgroup").astype(float), expected,
                   f"cli {threshold}")
    # text files: integer columns without a missing value read as integers, exactly ...
    cli = ["--label", "label", "--scores", "score", "--subgroup-threshold", repr(threshold),
           "--missing-subgroup", "exclude", "--quiet", "--subgroups"]
    whole = ["int64", "uint64"]
    for fmt in ("csv", "jsonl"):
        path = tmp_path / f"t.{fmt}"
        if fmt == "csv":
            df[["label", "score", *whole]].to_csv(path, index=False)
            res = quietly(fastbias.evaluate_csv, path, bucket_rows=100, subgroups=whole, **kw)
            assert_matches(res.for_model(), {k: expected[k] for k in whole}, f"csv {threshold}")
        else:
            df[["label", "score", *whole]].to_json(path, orient="records", lines=True)
        out = tmp_path / f"{fmt}.json"
        assert main(["report", str(path), "--out", str(out), *cli, *whole]) == 0
        rows = json.loads(out.read_text())["models"][0]["subgroups"]
        assert_matches(pd.DataFrame(rows).set_index("subgroup").astype(float),
                       {k: expected[k] for k in whole}, f"cli {fmt} {threshold}")
    # ... but pandas reads integers beside a missing value as float64, rounded: refused,
    # naming the column, the value and the row
    refusal = (r"column 'Int64-NA' of .* holds whole numbers and a missing value, read as "
               r"float64, and -?9\d{15}\.0 at row \d+: .* write the data as Parquet")
    for fmt in ("csv", "jsonl"):
        path = tmp_path / f"na.{fmt}"
        if fmt == "csv":
            df[["label", "score", "Int64-NA"]].to_csv(path, index=False)
            with pytest.raises(ValueError, match=refusal):
                fastbias.evaluate_csv(path, bucket_rows=100, subgroups=["Int64-NA"], **kw)
        else:
            df[["label", "score", "Int64-NA"]].to_json(path, orient="records", lines=True)
        capsys.readouterr()
        assert main(["report", str(path), "--out", str(tmp_path / f"na-{fmt}.json"), *cli,
                     "Int64-NA"]) != 0
        assert re.search(refusal, " ".join(capsys.readouterr().err.split())), fmt


def test_a_threshold_float64_cannot_hold_is_refused(huge, capsys):
    """An integer or a fraction given as the threshold would be rounded to a float64 and
    that float compared: refused, naming the argument and what it would become."""
    from fractions import Fraction

    from fastbias.cli import main

    df, _ = huge
    for threshold, shown in [(B + 3, "9007199254740996.0"), (np.int64(B + 1), "9007199254740992.0"),
                             (Fraction(1, 3), "0.3333333333333333")]:
        with pytest.raises(ValueError, match=rf"subgroup_threshold .* is not a float64: it "
                                             rf"would become {shown}"):
            fastbias.bias_metrics(df["label"], df["score"], df[["int64"]],
                                  subgroup_threshold=threshold)
    for fine in (B + 2, Fraction(1, 2), 3):  # held exactly
        quietly(fastbias.bias_metrics, df["label"], df["score"], df[["int64"]],
                subgroup_threshold=fine)
    with pytest.raises(SystemExit):
        main(["report", "x.parquet", "--label", "label", "--scores", "score", "--subgroups",
              "int64", "--subgroup-threshold", str(B + 3)])
    assert "'9007199254740995' is not a float64 (it would become 9007199254740996.0)" \
        in capsys.readouterr().err


def test_text_columns_that_may_hold_rounded_integers_are_told_apart():
    """Refused: read as floats, every value whole, one at 2**53 or more, and a missing value
    (as pandas gives a column of integers with a gap) or one beyond int64 (as its JSON
    reader gives negative integers beside ones beyond 2**63). Kept: columns of floats (a
    decimal among them), columns without a missing value within int64, whole numbers below
    2**53, infinities (the scores' readers refuse those), JSON objects that are Python ints."""
    from fastbias.validate.textfile import DataFileError, _refuse_rounded_integers

    nan = float("nan")
    refused = {"gap": ([1.0, nan, float(B)], 12), "negative": ([nan, -float(B), 3.0], 11),
               "object": (pd.Series([None, 1.0, float(B + 2)], dtype=object), 12),
               "beyond int64": ([-1.0, 2.0 ** 63, 5.0], 11)}
    json_only = {"beyond int64"}
    kept = {"decimal": [0.5, nan, float(B)], "no gap": [1.0, 2.0, float(B + 2)],
            "small": [nan, float(B - 1), -float(B - 1)], "infinite": [nan, np.inf, 2.0],
            "ints": pd.Series([None, B + 3, 1], dtype=object), "text": ["a", None, "b"]}
    for name, (values, row) in refused.items():
        frame = pd.DataFrame({"ok": [1.0, 2.0, 3.0], name: values})
        with pytest.raises(DataFileError, match=rf"column {name!r} of 'f.csv' .* at row {row}:"):
            _refuse_rounded_integers(frame, "f.csv", 10, json=True)
        if name in json_only:  # (CSV reads such integers as text, which is refused later;
            # a float such as 1e70 is then one of floats)
            _refuse_rounded_integers(frame, "f.csv", 10, json=False)
        else:
            with pytest.raises(DataFileError, match=rf"column {name!r}"):
                _refuse_rounded_integers(frame, "f.csv", 10, json=False)
    for name, values in kept.items():
        _refuse_rounded_integers(pd.DataFrame({name: values}), "f.csv", 0)  # no error
    # the hint to fill missing values only where one is missing (found by review)
    for values, hint in (([1.0, nan, float(B)], True), ([5e19, 1.0, 2.0], False)):
        with pytest.raises(DataFileError) as error:
            _refuse_rounded_integers(pd.DataFrame({"w": values}), "f.jsonl", 0, json=True)
        assert ("fill the missing values" in str(error.value)) == hint


def test_arrow_and_polars_integers_with_one_null_stay_exact():
    """pyarrow's and polars' own to_pandas turn an integer column with a null into float64,
    rounded; ``from_foreign`` keeps such columns pandas' nullable integers, signed or not,
    and leaves columns without nulls (and other types) as their to_pandas gives them."""
    pa = pytest.importorskip("pyarrow")
    from fastbias.validate.columns import from_foreign

    values = [B + 3, None, 5]
    table = pa.table({"i": pa.array(values, pa.int64()), "u": pa.array(values, pa.uint64()),
                      "f": pa.array([0.5, None, 1.5]), "full": pa.array([B + 3, 1, 2])})
    frame = from_foreign(table)
    assert frame["i"].tolist()[::2] == [B + 3, 5] and frame["i"].isna().tolist() == [0, 1, 0]
    assert str(frame["i"].dtype) == "Int64" and str(frame["u"].dtype) == "UInt64"
    assert frame["f"].dtype == np.float64 and frame["full"].tolist() == [B + 3, 1, 2]
    for container in (table.column("i"), table.column("i").combine_chunks(),
                      pa.record_batch({"i": pa.array(values)})):
        converted = from_foreign(container)
        column = converted["i"] if isinstance(converted, pd.DataFrame) else converted
        assert column.tolist()[0] == B + 3, type(container)
    assert from_foreign(pa.array([B + 3, 2])).dtype == np.int64  # no null: as before
    try:
        import polars as pl
    except ImportError:
        return
    assert from_foreign(pl.Series(values, dtype=pl.Int64)).tolist()[0] == B + 3
    assert from_foreign(pl.DataFrame({"i": values}))["i"].tolist()[0] == B + 3


def test_text_files_whose_integers_pandas_rounds_are_refused_and_scans_pass_them(tmp_path,
                                                                                  capsys):
    """JSON lines: negative integers beside ones beyond 2**63 read as float64 without a gap
    (scores 2**63 + 1 and 2**63 tied: an AUC of 0.625 for 0.75); refused. A scan for 0/1
    columns (``--subgroups-all-boolean``) reads past a column of large integers with a gap,
    which is no 0/1 column (found by review: it refused the file)."""
    from fastbias.cli import main

    lines = ['{"label":1,"score":9223372036854775809,"g":1}',
             '{"label":0,"score":9223372036854775808,"g":1}',
             '{"label":0,"score":-1,"g":0}', '{"label":1,"score":5,"g":0}']
    (tmp_path / "big.jsonl").write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(["report", str(tmp_path / "big.jsonl"), "--label", "label", "--scores",
                 "score", "--subgroups", "g", "--out", str(tmp_path / "big.json"),
                 "--quiet"]) != 0
    err = capsys.readouterr().err  # (read as the integers written, each named as float64
    assert "column 'score'" in err and "9223372036854775809" in err, err  # cannot hold it)
    frame = pd.DataFrame({"label": [1, 0] * 20, "score": np.linspace(0, 1, 40),
                          "g": [True, False, False, True] * 10,
                          "user_id": pd.array([None] + [2 ** 60 + i for i in range(39)],
                                              dtype="Int64")})
    frame.to_csv(tmp_path / "ids.csv", index=False)
    frame.to_json(tmp_path / "ids.jsonl", orient="records", lines=True)
    for path in ("ids.csv", "ids.jsonl"):
        out = tmp_path / f"{path}.json"
        assert main(["report", str(tmp_path / path), "--label", "label", "--scores", "score",
                     "--subgroups-all-boolean", "--out", str(out), "--quiet"]) == 0, path
        rows = json.loads(out.read_text())["models"][0]["subgroups"]
        assert [row["subgroup"] for row in rows] == ["g"], path


def test_categorical_integer_identity_columns_beyond_2_53_are_exact(huge):
    """A pandas Categorical (or an Arrow dictionary) of integers with a missing value, as a
    numeric identity column under a threshold: read by its codes, not as objects (which
    made the integers floats, rounded: found by review)."""
    df, _ = huge
    categorical = df[["label", "score"]].assign(g=df["Int64-NA"].astype("category"),
                                                u=df["UInt64-NA"].astype("category"))
    frames = {"pandas": categorical}
    try:
        import pyarrow as pa
    except ImportError:
        pass
    else:
        frames["arrow dictionary"] = pa.table({
            "label": df["label"].to_numpy(), "score": df["score"].to_numpy(),
            "g": pa.array(df["Int64-NA"], pa.int64()).dictionary_encode(),
            "u": pa.array(df["UInt64-NA"], pa.uint64()).dictionary_encode()})
    reference = df[["label", "score"]].assign(g=df["Int64-NA"], u=df["UInt64-NA"])
    for threshold in (B + 4.0, -float(B), 2.0 ** 63):
        for policy in ("background", "exclude"):
            expected = expected_table(reference, {"g": False, "u": False}, threshold, policy)
            for kind, frame in frames.items():
                res = quietly(fastbias.evaluate, frame, label="label", scores="score",
                              subgroups=["g", "u"], subgroup_threshold=threshold,
                              missing_subgroup=policy)
                assert_matches(res.for_model(), expected, f"{kind} {threshold} {policy}")


def test_categorical_numbers_under_a_threshold_are_one_column_on_every_entry_point(huge):
    """A Categorical of numbers (a Parquet vote column, dictionary-encoded) with a
    ``subgroup_threshold``: thresholded by ``bias_metrics`` and ``BiasEvaluator`` as
    ``evaluate`` thresholds it (they made it one subgroup per value and ignored the
    threshold: the same column gave other subgroups by entry point; found by review).
    Without a threshold it is still one subgroup per value."""
    df, _ = huge
    groups = pd.DataFrame({"g": df["Int64-NA"].astype("category"),
                           "u": df["UInt64-NA"].astype("category")})
    reference = df[["label", "score"]].assign(g=df["Int64-NA"], u=df["UInt64-NA"])
    y, s = df["label"].to_numpy(), df["score"].to_numpy()
    for threshold in (B + 4.0, -float(B)):
        expected = expected_table(reference, {"g": False, "u": False}, threshold, "background")
        table = quietly(fastbias.bias_metrics, y, s, groups, subgroup_threshold=threshold)
        assert_matches(table, expected, f"bias_metrics {threshold}")
        evaluator = quietly(fastbias.BiasEvaluator, y, groups, subgroup_threshold=threshold)
        assert_matches(quietly(evaluator.metrics, s), expected, f"BiasEvaluator {threshold}")
    values = groups["g"].cat.categories
    table = quietly(fastbias.bias_metrics, y, s, groups[["g"]])
    assert list(table.index) == [f"g={v}" for v in values]


def test_big_endian_columns_read_like_native_ones(data):
    """Arrays in the other byte order (``>i8``, as read from some files) were handed to the
    kernels as they were: a Numba TypingError (found by review). Now copied to native order,
    on every container: the brute force's numbers."""
    df, booleans = data
    names = ["int64", "uint16", "float64", "bool"]
    swapped = {name: df[name].to_numpy().astype(df[name].to_numpy().dtype.newbyteorder(">"))
               for name in names}
    expected = expected_table(df, {name: booleans[name] for name in names}, 2, "background")
    y, s = df["label"].to_numpy(), df["score"].to_numpy().astype(">f8")
    for container in (swapped, pd.DataFrame(swapped),
                      {name: pd.Series(values) for name, values in swapped.items()}):
        table = quietly(fastbias.bias_metrics, y, s, container, subgroup_threshold=2)
        assert_matches(table, expected, type(container).__name__)
    frame = pd.DataFrame({"label": y, "score": s, **swapped})
    res = quietly(fastbias.evaluate, frame, label="label", scores="score", subgroups=names,
                  subgroup_threshold=2)
    assert_matches(res.for_model(), expected, "evaluate")
    matrix = np.column_stack([df["bool"].to_numpy(), df["int64"].to_numpy() > 0]).astype(">i4")
    table = quietly(fastbias.bias_metrics, y, s, matrix)
    for j, member in enumerate(matrix.T.astype(bool)):
        want = brute_force_metrics(y, df["score"].to_numpy(), member)
        assert abs(table.iloc[j]["subgroup_auc"] - want["subgroup_auc"]) <= 1e-12 or \
            np.isnan(want["subgroup_auc"])
