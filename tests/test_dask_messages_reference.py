"""An independent review's tests (2026-11-27): fastbias.dask.evaluate's refusals and warnings
against fastbias.evaluate's on the same data.

Every expected value comes from the test's own count (pandas/numpy on the rows, fractions.Fraction
pair counts), never from fastbias. Dask's synchronous scheduler throughout.

Found by review (each fails before its fix):
* the partition (and position) named for a bad value is not that of the first bad row of the
  frame: it is whichever partition's task Dask's scheduler happened to run first (often the
  last partition), so rows 14 and 25 bad gives "position 5 (in Dask partition 2)" = row 25;
* duplicate column names in a Dask DataFrame: "The truth value of a Series is ambiguous" (label
  or subgroup) or a TypeError printing a dtype Series (score) instead of memory's ValueError
  naming the column;
* an object identity column holding booleans and one number in one partition: the message says
  the partition "holds numeric values" and names neither the value nor its row.
"""
import re
import warnings
from fractions import Fraction

import dask
import numpy as np
import pandas as pd
import pytest

import fastbias

dd = pytest.importorskip("dask.dataframe")
fdask = pytest.importorskip("fastbias.dask")

pytestmark = pytest.mark.jit_heavy


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def base(n=30, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"y": (np.arange(n) % 3 == 0).astype(float),
                         "s": np.round(rng.random(n), 2),
                         "g": rng.random(n) < 0.4,
                         "w": np.ones(n)})


def message_of(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises((ValueError, TypeError, KeyError)) as info:
            function(*args, **kwargs)
    return info.type, str(info.value)


def caught(function, *args, **kwargs):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        result = function(*args, **kwargs)
    return result, [(w.category, str(w.message)) for w in record]


# ------------------------------------------------------------------ defect 1: which row is named

def _set_bad(df, kind, rows):
    d = df.copy()
    extra = {}
    if kind == "nan score":
        d.loc[rows, "s"] = np.nan
    elif kind == "inf score":
        d.loc[rows, "s"] = np.inf
    elif kind == "label 2":
        d.loc[rows, "y"] = 2.0
    elif kind == "missing label":
        d.loc[rows, "y"] = np.nan
    elif kind == "negative weight":
        d.loc[rows, "w"] = -0.5
        extra = dict(sample_weight="w")
    elif kind == "nan weight":
        d.loc[rows, "w"] = np.nan
        extra = dict(sample_weight="w")
    elif kind == "third class":
        d["y"] = np.where(d.y == 1, "tox", "ok")
        d.loc[rows, "y"] = "maybe"
        extra = dict(pos_label="tox", label_threshold=None)
    return d, extra


PLACEMENTS = [(3, 14), (14, 25), (3, 25), (3, 14, 25), (12, 27)]
KINDS = ["nan score", "inf score", "label 2", "missing label", "negative weight", "nan weight",
         "third class"]


@pytest.mark.parametrize("kind", KINDS)
def test_error_names_first_bad_row_of_the_frame(kind):
    """Was: Three equal partitions of 10 rows. The first bad row r lies in partition r // 10
    at position r % 10; docs/validation.md: "gives ... the first offending position ... a Dask
    DataFrame's partition names its own positions, and the partition"; for pos_label the
    docstring says "the partition where it first occurs". fastbias.evaluate names row r itself.
    The Dask message instead names whichever partition Dask ran first (cause: _run's
    ``_compute(... tasks ...)`` / ``dask.compute`` raises the first exception met in the
    scheduler's order, not the lowest partition's; the fix is to catch per partition and raise
    the lowest-numbered one)."""
    wrong = []
    for rows in PLACEMENTS:
        d, extra = _set_bad(base(), kind, list(rows))
        first = min(rows)
        _, in_memory = message_of(fastbias.evaluate, d, label="y", scores="s", subgroups=["g"],
                                  **extra)
        assert f"position {first}" in in_memory  # the reference behaviour
        ddf = dd.from_pandas(d, npartitions=3, sort=False)
        assert [len(p) for p in ddf.partitions] == [10, 10, 10]
        _, text = message_of(fdask.evaluate, ddf, label="y", scores="s", subgroups=["g"],
                             **extra)
        want = (first // 10, first % 10)
        found = re.search(r"position (\d+).*Dask partition (\d+)", text)
        got = (int(found.group(2)), int(found.group(1))) if found else None
        if kind == "third class" and got is not None and got[0] == want[0]:
            # a partition holding all three values names the one third in its own order
            # (its classes from earlier partitions are not known there): the partition, and
            # the three values, are the first bad ones
            assert "'maybe'" in text and "'tox'" in text and "'ok'" in text, text
            continue
        if got != want:
            wrong.append((rows, want, got))
    assert not wrong, f"(rows, (partition, position) wanted, named): {wrong}"


def test_error_names_first_bad_row_with_divisions_given():
    """Was: With ``divisions=`` (no first pass) the encode step finds the bad values; NaN
    scores in rows 14 and 25 are named as partition 2 position 5 (row 25), not partition 1
    position 4 (row 14)."""
    d = base()
    d.loc[[14, 25], "s"] = np.nan
    ddf = dd.from_pandas(d, npartitions=3, sort=False)
    _, text = message_of(fdask.evaluate, ddf, label="y", scores="s", subgroups=["g"],
                         divisions=[0, 0.5, 1])
    assert "position 4" in text and "Dask partition 1" in text, text


def test_error_names_first_bad_row_of_read_parquet(tmp_path):
    """Was: dd.read_parquet of three files of 50, 1 and 249 rows; NaN scores at rows 20
    (file 0) and 280 (file 2, position 229): Dask names partition 2, position 229. The first is
    partition 0, position 20 (evaluate_parquet and fastbias.dask.evaluate on the paths name
    row 20 of p0.parquet)."""
    d = base(300, 1)
    d.loc[[20, 280], "s"] = np.nan
    for k, (a, b) in enumerate([(0, 50), (50, 51), (51, 300)]):
        d.iloc[a:b].to_parquet(tmp_path / f"p{k}.parquet", index=False)
    ddf = dd.read_parquet(str(tmp_path))
    assert [len(p) for p in ddf.partitions] == [50, 1, 249]
    _, text = message_of(fdask.evaluate, ddf, label="y", scores="s", subgroups=["g"])
    assert "position 20" in text and "Dask partition 0" in text, text


# -------------------------------------------------------------- defect 2: duplicate column names

@pytest.mark.parametrize("names, role, column", [
    (["y", "s", "g", "g"], "subgroups", "g"),
    (["y", "y", "s", "g"], "label", "y"),
    (["y", "s", "s", "g"], "scores", "s"),
])
def test_duplicate_column_names_refused_by_name(names, role, column):
    """Was: docs/validation.md: "a DataFrame ... with two columns of the name asked for:
    ValueError: subgroups: the DataFrame has 2 columns named 'g'; rename them". In memory that
    holds; the same frame as a Dask DataFrame gives "The truth value of a Series is ambiguous"
    (label, subgroup: _meta_kinds does ``dtypes[name] == object`` on a Series) or "TypeError:
    score column 's' must be numeric scores, got dtype s float64 / s bool" (evaluate's
    ``dtypes[model]``). column_spec(data.columns, ...) never checks for duplicates."""
    b = base()
    columns = {"y": b["y"], "s": b["s"], "g": b["g"], "w": b["w"] > 0.5}
    d = pd.concat([columns[name] if name not in names[:k] else columns["w"]
                   for k, name in enumerate(names)], axis=1)
    d.columns = names
    kwargs = dict(label="y", scores="s", subgroups=["g"])
    mem_type, mem_text = message_of(fastbias.evaluate, d, **kwargs)
    assert mem_type is ValueError and f"2 columns named {column!r}" in mem_text
    ddf = dd.from_pandas(d, npartitions=3)
    dask_type, dask_text = message_of(fdask.evaluate, ddf, **kwargs)
    assert dask_type is ValueError and f"2 columns named {column!r}" in dask_text, dask_text


# ------------------------------------------------- defect 3: booleans and a number in a partition

def test_mixed_booleans_and_number_names_value_and_row():
    """Was: An object identity column of booleans with one 0.7 at row 14 (partition 1,
    position 4); dataframe.convert-string off, so Dask keeps the objects. Memory: "holds both
    booleans and numbers (False at position 0 and 0.7 at position 14)". Dask: "holds numeric
    values in Dask partition 1 but boolean values in Dask partition 0": partition 1 holds nine
    booleans, and neither 0.7 nor its position is named (the first pass's per-partition
    ``identity_kind`` calls a mixed partition "numeric" instead of refusing it as the encode
    step would; BatchKinds.check_kinds then compares kinds only)."""
    d = base()
    d["g"] = d["g"].astype(object)
    d.loc[14, "g"] = 0.7
    _, mem_text = message_of(fastbias.evaluate, d, label="y", scores="s", subgroups=["g"])
    assert "0.7 at position 14" in mem_text
    with dask.config.set({"dataframe.convert-string": False}):
        ddf = dd.from_pandas(d, npartitions=3, sort=False)
        dask_type, text = message_of(fdask.evaluate, ddf, label="y", scores="s",
                                     subgroups=["g"])
    assert dask_type is TypeError and "'g'" in text
    assert "0.7 at position 4" in text and "Dask partition 1" in text, text


# ------------------------------------------------------------------------ properties that held

@pytest.mark.parametrize("kind", KINDS)
def test_same_type_column_and_value_as_memory(kind):
    """Holds: one bad row (row 14): same exception type, same column, same value, and the
    position within partition 1 (14 - 10) plus the partition."""
    d, extra = _set_bad(base(), kind, [14])
    mem_type, mem_text = message_of(fastbias.evaluate, d, label="y", scores="s",
                                    subgroups=["g"], **extra)
    ddf = dd.from_pandas(d, npartitions=3, sort=False)
    dask_type, text = message_of(fdask.evaluate, ddf, label="y", scores="s", subgroups=["g"],
                                 **extra)
    assert dask_type is mem_type
    column = re.search(r"column '(\w+)'", mem_text).group(1)
    assert f"column {column!r}" in text
    assert "position 4" in text and "Dask partition 1" in text
    value = {"nan score": "NaN", "inf score": "infinite", "label 2": "2.0",
             "missing label": "missing", "negative weight": "-0.5", "nan weight": "NaN",
             "third class": "'maybe'"}[kind]
    assert value in text and value in mem_text


def test_column_and_pos_label_refusals_match():
    d = base()
    for kwargs, error in [(dict(subgroups=["g", "martian"]), "['martian']"),
                          (dict(label="yy"), "['yy']"), (dict(scores="ss"), "['ss']")]:
        kw = dict(dict(label="y", scores="s", subgroups=["g"]), **kwargs)
        for function, data in ((fastbias.evaluate, d), (fdask.evaluate, dd.from_pandas(d, 3))):
            kind, text = message_of(function, data, **kw)
            assert kind is KeyError and error in text
    d["lab"] = np.where(d.y == 1, "tox", "ok")
    for function, data in ((fastbias.evaluate, d), (fdask.evaluate, dd.from_pandas(d, 3))):
        kind, text = message_of(function, data, label="lab", scores="s", subgroups=["g"],
                                pos_label="toxic", label_threshold=None)
        assert kind is ValueError and "pos_label 'toxic' does not occur" in text


def test_text_and_boolean_scores_refused_by_name():
    d = base()
    for score in (d["s"] > 0.5, d["s"].astype(str).astype("string[pyarrow]")):
        e = d.assign(s=score)
        for function, data in ((fastbias.evaluate, e), (fdask.evaluate, dd.from_pandas(e, 3))):
            kind, text = message_of(function, data, label="y", scores="s", subgroups=["g"])
            assert kind is TypeError and "score column 's' must be numeric" in text


def test_weight_span_across_partitions_named():
    """Holds: the smallest and largest weights lie in different partitions, each alone within
    2**480; Dask merges them and names both with their partitions."""
    d = base()
    d.loc[3, "w"] = 1e-100
    d.loc[25, "w"] = 1e100
    kind, text = message_of(fdask.evaluate, dd.from_pandas(d, 3, sort=False), label="y",
                            scores="s", subgroups=["g"], sample_weight="w")
    assert kind is ValueError
    assert "1e-100 at position 3 in Dask partition 0" in text
    assert "1e+100 at position 5 in Dask partition 2" in text


def test_tiny_weight_row_named_in_its_partition():
    d = base()
    d.loc[27, "w"] = 1e-30
    d.loc[3, "w"] = 1e40  # both positives (rows % 3 == 0)
    for extra in (dict(thresholds=[0.5]), dict(ci="delong")):
        kind, text = message_of(fdask.evaluate, dd.from_pandas(d, 3, sort=False), label="y",
                                scores="s", subgroups=["g"], sample_weight="w", **extra)
        assert kind is ValueError and "1e-30 at position 7 in Dask partition 2" in text


@pytest.mark.parametrize("dtype", ["int64", "uint64", "Int64"])
@pytest.mark.parametrize("offset", [0, 2, 4])
def test_big_integer_identity_threshold(dtype, offset):
    """Identity values 2**53 + 1, + 2, + 3 (and NA for Int64) against threshold 2**53 + offset:
    members counted as Python integers."""
    big = 2 ** 53
    d = base(60, 3)
    values = [big + 1 + (k % 3) for k in range(60)]
    d["g"] = pd.array(values, dtype=dtype)
    if dtype == "Int64":
        d.loc[[5, 40], "g"] = pd.NA
    own = sum(1 for k, v in enumerate(values)
              if v >= big + offset and not (dtype == "Int64" and k in (5, 40)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fdask.evaluate(dd.from_pandas(d, 3), label="y", scores="s", subgroups=["g"],
                             subgroup_threshold=float(big + offset))
    assert int(res.table["subgroup_size"].iloc[0]) == own


def test_all_missing_sensitive_feature_warns_alike():
    d = base()
    d["f"] = np.nan
    _, mem = caught(fastbias.evaluate, d, label="y", scores="s", subgroups=["g"],
                    sensitive_features=["f"])
    _, got = caught(fdask.evaluate, dd.from_pandas(d, 3), label="y", scores="s",
                    subgroups=["g"], sensitive_features=["f"])
    assert got == mem and any("'f'" in text and "every value missing" in text
                              for _, text in got)


def _pairs(x_scores, x_w, y_scores, y_w):
    """Twice-U fraction of pairs with the Y row above the X row (ties 1/2), weighted."""
    num = Fraction(0)
    den = Fraction(0)
    for a, wa in zip(x_scores, x_w):
        for b, wb in zip(y_scores, y_w):
            w = Fraction(wa) * Fraction(wb)
            den += w
            num += w * (1 if b > a else Fraction(1, 2) if b == a else 0)
    return num / den if den else None


def _reference(df, weighted, exclude):
    w = df["w"] if weighted else pd.Series(1.0, index=df.index)
    y = df["y"] >= 0.5
    g = df["g"]
    annotated = g.notna()
    member = annotated & (g >= 0.5)
    bg = ~member & (annotated if exclude else True)

    def cell(mask):
        return list(df["s"][mask]), list(w[mask])
    sn, sp = cell(member & ~y), cell(member & y)
    bn, bp = cell(bg & ~y), cell(bg & y)
    return {"subgroup_auc": _pairs(*sn, *sp), "bpsn_auc": _pairs(*sn, *bp),
            "bnsp_auc": _pairs(*bn, *sp),
            "negative_aeg": Fraction(1, 2) - (1 - _pairs(*bn, *sn)),
            "positive_aeg": Fraction(1, 2) - (1 - _pairs(*bp, *sp)),
            "overall": _pairs(*cell(~y), *cell(y))}


def _frames(tmp_path):
    rng = np.random.default_rng(4)
    n = 240
    df = pd.DataFrame({"y": np.round(rng.random(n), 1), "s": np.round(rng.random(n), 1),
                       "g": np.where(rng.random(n) < 0.2, np.nan, rng.random(n)),
                       "w": (np.arange(n) % 4) + 0.5, "x": np.arange(n)})
    unequal = dd.from_pandas(df, npartitions=1).repartition(divisions=[0, 5, 200, n - 1])
    filtered = dd.from_pandas(df, npartitions=3)
    filtered = filtered[(filtered.x < 80) | (filtered.x >= 160)]
    kept = df[(df.x < 80) | (df.x >= 160)]
    for k, (a, b) in enumerate([(0, 50), (50, 51), (51, n)]):
        df.iloc[a:b].to_parquet(tmp_path / f"p{k}.parquet", index=False)
    return [(df, unequal), (kept, filtered), (df, dd.read_parquet(str(tmp_path))),
            (df, str(tmp_path))]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("exclude", [False, True])
def test_numbers_equal_memory_and_fractions(tmp_path, weighted, exclude):
    """Holds: unequal partitions (5/195/39 rows), an empty partition (filtered), a frame read
    back from a Parquet folder and the folder's paths: every metric equal to memory's and to
    the Fraction pair count (exactly unweighted, 2**-50 relative weighted)."""
    kw = dict(label="y", scores="s", subgroups=["g"],
              missing_subgroup="exclude" if exclude else "background",
              **(dict(sample_weight="w") if weighted else {}))
    for rows, data in _frames(tmp_path):
        if isinstance(data, dd.DataFrame) and data is not None:
            sizes = [len(p) for p in data.partitions]
            assert sum(sizes) == len(rows)
        ref = _reference(rows, weighted, exclude)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mem = fastbias.evaluate(rows, **kw)
            got = fdask.evaluate(data, **kw)
        pd.testing.assert_frame_equal(got.table, mem.table, check_exact=not weighted,
                                      rtol=2 ** -50, atol=2 ** -70)
        row = got.table.iloc[0]
        for name in ("subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"):
            if weighted:
                assert row[name] == pytest.approx(float(ref[name]), rel=2 ** -50, abs=2 ** -70)
            else:
                assert row[name] == float(ref[name]), name
        assert float(got.overall_auc.iloc[0]) == pytest.approx(float(ref["overall"]),
                                                               rel=0 if not weighted
                                                               else 2 ** -50)


def test_filtered_frame_has_an_empty_partition(tmp_path):
    _, filtered = _frames(tmp_path)[1]
    assert 0 in [len(p) for p in filtered.partitions]


def test_undefined_metric_warnings_match():
    """Holds: the same UndefinedMetricWarning text (cells and counts) in memory and on Dask,
    and the counts named are our own."""
    d = base(60, 3)
    d["h"] = (d.y == 1) & (np.arange(60) < 30)  # positives only
    d["z"] = False
    ddf = dd.from_pandas(d, npartitions=1).repartition(divisions=[0, 2, 3, 59])
    _, mem = caught(fastbias.evaluate, d, label="y", scores="s", subgroups=["g", "h", "z"])
    _, got = caught(fdask.evaluate, ddf, label="y", scores="s", subgroups=["g", "h", "z"])
    assert got == mem
    (category, text), = [w for w in got if w[0].__name__ == "UndefinedMetricWarning"]
    sp = int(((d.h) & (d.y == 1)).sum())
    bp = int(((~d.h) & (d.y == 1)).sum())
    assert f"h: subgroup_auc (subgroup_negatives=0, subgroup_positives={sp})" in text
    assert f"h: bpsn_auc (subgroup_negatives=0, background_positives={bp})" in text
    assert "z: subgroup_auc (subgroup_negatives=0, subgroup_positives=0)" in text


def test_omit_counts_in_memory_match_own_count():
    """nan_policy='omit' (in memory; Dask refuses the argument, as documented): rows kept per
    model and result.settings['omitted_rows'] equal our own count."""
    d = base(40, 2)
    d["t"] = np.round(np.random.default_rng(5).random(40), 2)
    d["y"] = d["y"].astype(object)
    d.loc[1, "y"] = None
    d.loc[2, "y"] = np.nan
    d["s"] = d["s"].astype("Float64")
    d.loc[3, "s"] = pd.NA
    d.loc[[5, 6], "t"] = [np.inf, -np.inf]
    d.loc[[7, 1], "t"] = np.nan
    d["w"] = d["w"].astype(object)
    d.loc[8, "w"] = None
    d.loc[3, "w"] = np.nan
    res, record = caught(fastbias.evaluate, d, label="y", scores=["s", "t"], subgroups=["g"],
                         sample_weight="w", nan_policy="omit")
    common = d["y"].isna() | pd.to_numeric(d["w"]).isna()
    own = {m: int((common | ~np.isfinite(d[m].astype(float).fillna(np.nan))).sum())
           for m in ("s", "t")}
    assert res.settings["omitted_rows"] == own
    text = [t for c, t in record if c.__name__ == "OmittedRowsWarning"][0]
    assert f"'s': {40 - own['s']}, 't': {40 - own['t']} of 40" in text
    assert "score column 't': 4 (2 NaN or missing, 2 infinite)" in text
    with pytest.raises(TypeError, match="nan_policy"):
        fdask.evaluate(dd.from_pandas(d, 3), label="y", scores="s", subgroups=["g"],
                       nan_policy="omit")


def test_score_column_refused_by_dtype_names_a_value():
    """A Dask score column of text (string[pyarrow]) or booleans is refused from its dtype
    before any partition is read; the message now names a value and its place, as memory's
    does (found by review: it gave the dtype alone). Where the first partition holds no
    value, the next that holds one is named; none at all: the dtype alone."""
    y = [0, 1, 0, 1] * 3
    g = [True, False] * 6
    cases = [(["0.1", "0.9", "0.3", "x"] * 3, r"\(e\.g\. 'x' at position 3 of Dask partition 0\)"),
             ([None] * 4 + ["0.1", "0.9", "x", "0.3"] * 2,
              r"\(e\.g\. 'x' at position 2 of Dask partition 1\)"),
             ([None] * 12, r"$")]
    for values, message in cases:
        frame = pd.DataFrame({"y": y, "s": pd.array(values, dtype="string"), "g": g})
        with pytest.raises(TypeError, match=r"score column 's' must be numeric scores, got "
                                            r"dtype string" + (message if message == "$" else " " + message)):
            fdask.evaluate(dd.from_pandas(frame, npartitions=3), label="y", scores="s",
                           subgroups=["g"])
    frame = pd.DataFrame({"y": y, "s": [False, True] * 6, "g": g})
    with pytest.raises(TypeError, match=r"got dtype bool \(e\.g\. False at position 0 of Dask "
                                        r"partition 0\)"):
        fdask.evaluate(dd.from_pandas(frame, npartitions=3), label="y", scores="s",
                       subgroups=["g"])
