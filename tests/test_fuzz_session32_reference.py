"""An independent review's tests (2026-11-27): the seeded cross-path fuzz of
tests/_fuzz_harness.py run on new seeds (20000-21xxx, 90000-90xxx), and extended with new
inputs: identity values and scores of 2**53 or more (a sensitive feature of int64 ids beyond
2**53, a model of exact even integers >= 2**53, an identity column whose members hold
2**53 + 1), JSON lines through the CLI (in memory and streamed, keys written as numbers too),
a Parquet directory holding `_temporary/`, `.hidden`, `_name` and `_SUCCESS` files beside a
nested folder, pyarrow dictionary sensitive features, and integer column names (evaluate and
fastbias.dask.evaluate). Expected values come from the harness's exact (Fraction) brute force
or from hand-written brute force below, never from fastbias.

Found by review (each of these tests fails before its fix):
* JSON lines: a sensitive feature written as JSON strings of digits ("01234", "1234") is
  read by pandas' dtype inference as numbers, so "01234" and "1234" become one subgroup
  "zip=1234" (CSV, Parquet and a DataFrame keep them apart); and where the column holds text
  too ("1.0", "1", "x"), the subgroups depend on how the file is cut into batches
  (in memory: "1.0" and "1" apart; streamed in batches of 2: merged into "1").
* BiasReport.from_result / bias_report on a result whose sensitive feature is named by an
  integer (evaluate accepts it: subgroups "5=p", "5=q") raises a bare KeyError: '5'.
* evaluate_csv (and the CLI on a CSV file) lists a sensitive feature's integer values in
  text order (site=10 before site=9; ids beyond 2**53: 4611686018427387905 before
  9007199254740992) where every other path sorts them by value, as the docs say.
* evaluate(df, sample_weight=<integer column name>) is refused as "not array-like" although
  label=, scores= and subgroups= take integer column names and fastbias.dask.evaluate takes
  the same sample_weight.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import os
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.validate.errors import OmittedRowsWarning, UndefinedMetricWarning
from tests import _fuzz_harness as H
from tests.reference import pair_probability

pytest.importorskip("pyarrow")
pytest.importorskip("dask.dataframe")

B = 2 ** 53


# ------------------------------------------------------------------ helpers

def _auc(neg, pos):
    """P(pos > neg) + 1/2 P(=), exactly (unweighted)."""
    if not neg or not pos:
        return math.nan
    num = sum(Fraction(1) if p > n else Fraction(1, 2) if p == n else Fraction(0)
              for n in neg for p in pos)
    return float(num / (len(neg) * len(pos)))


def _cli_json(path, args, tmp_path, stream_batch=None):
    """The CLI's JSON report of ``path`` (in memory, or streamed in batches of
    ``stream_batch`` rows), as {subgroup: record}."""
    import fastbias.cli as cli

    out = tmp_path / f"o{stream_batch}.json"
    argv = ["report", str(path), *args, "--out", str(out), "--force", "--progress", "never"]
    err = io.StringIO()
    with H.cli_streaming(stream_batch or None) as extra:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            status = cli.main(argv + extra)
    assert status == 0, err.getvalue()
    assert ("streaming it" in err.getvalue()) == bool(stream_batch)
    data = json.loads(out.read_text())
    return {r["subgroup"]: r for r in data["models"][0]["subgroups"]}


def _write_jsonl(rows, path):
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def _text_groups_reference(rows, feature):
    """{f"{feature}={text}": (size, subgroup_auc, bpsn_auc)} grouping rows by the JSON text."""
    y = np.array([r["y"] for r in rows])
    s = np.array([r["s"] for r in rows])
    vals = np.array([r[feature] for r in rows], dtype=object)
    ref = {}
    for v in sorted(set(vals)):
        m = vals == v
        ref[f"{feature}={v}"] = (int(m.sum()),
                                 _auc(list(s[m & (y == 0)]), list(s[m & (y == 1)])),
                                 _auc(list(s[m & (y == 0)]), list(s[~m & (y == 1)])))
    return ref


def _same(a, b):
    a = math.nan if a is None else float(a)
    return (math.isnan(a) and math.isnan(b)) or a == b


# ------------------------------------------------------------------ found by review

ZIPS = ["01234", "1234", "01234", "1234", "01234", "1234", "00042", "42"]


def _zip_rows(values):
    return [{"y": i % 2, "s": (i * 7 % 10) / 10, "g": i % 3 == 0, "zip": z}
            for i, z in enumerate(values)]


def test_jsonl_sensitive_feature_strings_of_digits_stay_text(tmp_path):
    """A JSON string is text: "01234" and "1234" are two zip codes, as they are when the same
    data comes as CSV, Parquet or a DataFrame (four subgroups). The CLI reads the JSON-lines
    column through pandas' dtype inference (read_json(dtype=True): only flag columns are read
    as objects, fastbias/validate/textfile.py iter_text_batches), so the strings become the
    integers 1234 and 42: two subgroups, "zip=1234" of 6 rows holding both codes."""
    rows = _zip_rows(ZIPS)
    path = tmp_path / "z.jsonl"
    _write_jsonl(rows, path)
    ref = _text_groups_reference(rows, "zip")
    assert set(ref) == {"zip=00042", "zip=01234", "zip=1234", "zip=42"}
    # the DataFrame path agrees with the text reference (passes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        res = fastbias.evaluate(pd.DataFrame(rows), label="y", scores="s", subgroups=["g"],
                                sensitive_features=["zip"])
    t = res.table.set_index("subgroup")
    assert {k: int(t.loc[k, "subgroup_size"]) for k in ref} == {k: v[0] for k, v in ref.items()}
    got = _cli_json(path, ["--label", "y", "--scores", "s", "--subgroups", "g",
                           "--sensitive-features", "zip"], tmp_path)
    # fails: ['g', 'zip=1234', 'zip=42'] with zip=1234 of size 6
    assert sorted(k for k in got if k != "g") == sorted(ref)
    for k, (size, sub, bpsn) in ref.items():
        assert got[k]["subgroup_size"] == size
        assert _same(got[k]["subgroup_auc"], sub) and _same(got[k]["bpsn_auc"], bpsn)


def test_jsonl_sensitive_feature_subgroups_do_not_depend_on_batch_size(tmp_path):
    """The column holds "1.0", "1", "1.50", "1.5" and "x" (JSON strings). Read in one batch
    (in memory, or streamed in batches of 11) the text is kept: five subgroups. Streamed in
    batches of 2 or 3, a batch holding only strings of digits is read as numbers, so "1.0"
    joins "1" (size 4) and "1.50" joins "1.5": the report hangs on the batch size."""
    rows = _zip_rows(["1.0", "1", "1.0", "1", "1.50", "1.5", "x", "x"])
    path = tmp_path / "z2.jsonl"
    _write_jsonl(rows, path)
    ref = _text_groups_reference(rows, "zip")
    args = ["--label", "y", "--scores", "s", "--subgroups", "g", "--sensitive-features", "zip"]
    in_memory = _cli_json(path, args, tmp_path)
    assert sorted(k for k in in_memory if k != "g") == sorted(ref)  # passes
    streamed = _cli_json(path, args, tmp_path, stream_batch=2)
    # fails: ['zip=1', 'zip=1.5', 'zip=x'], zip=1 of size 4
    assert sorted(k for k in streamed if k != "g") == sorted(ref)
    for k, (size, sub, bpsn) in ref.items():
        assert streamed[k]["subgroup_size"] == size
        assert _same(streamed[k]["subgroup_auc"], sub) and _same(streamed[k]["bpsn_auc"], bpsn)


def test_csv_sensitive_values_in_one_order_on_every_path_that_reads_the_file(tmp_path):
    """The fuzz found evaluate_csv listing site=10 before site=9 where evaluate(pd.read_csv())
    lists site=9 first (pandas guesses numbers; ids beyond 2**53 too: seeds 91012, 91014).
    A first fix ordered such text by its number out of core only, which split the CLI in
    memory from the CLI streamed (a later review), so the documented rule stands: a CSV
    file's feature is read as text, in code point order, on every path that reads the file
    (evaluate_csv, the CLI in memory and streamed), named as written."""
    rows = [{"y": i % 2, "s": (i * 7 % 10) / 10, "g": i % 3 == 0, "site": v}
            for i, v in enumerate([9, 10, 9, 10, 9, 10, 9, 10])]
    path = tmp_path / "o.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    kw = dict(label="y", scores="s", subgroups=["g"], sensitive_features=["site"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        out_of_core = fastbias.evaluate_csv(path, **kw).table["subgroup"].tolist()
    assert out_of_core == ["g", "site=10", "site=9"]
    args = ["--label", "y", "--scores", "s", "--subgroups", "g", "--sensitive-features", "site"]
    for stream in (None, 3):
        assert list(_cli_json(path, args, tmp_path, stream)) == out_of_core


def _int_named_frame():
    rng = np.random.default_rng(2)
    n = 40
    return pd.DataFrame({0: rng.integers(0, 2, n), 1: rng.integers(0, 5, n) / 4,
                         2: rng.random(n) < .5, 5: rng.choice(["p", "q"], n)})


def test_report_from_result_with_integer_named_sensitive_feature():
    """evaluate takes integer column names (label=0, scores=1, subgroups=[2],
    sensitive_features=[5]) and names the subgroups "5=p" and "5=q"; the report of that result
    must draw their histograms. from_result raises KeyError: '5': the settings'
    sensitive_members store the feature as the text '5' (fastbias/frame.py,
    feature_codes[f].name) and reports/histograms.py _value_membership reads df['5']."""
    df = _int_named_frame()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        res = fastbias.evaluate(df, label=0, scores=1, subgroups=[2], sensitive_features=[5])
    assert res.table["subgroup"].tolist() == [2, "5=p", "5=q"]
    report = fastbias.BiasReport.from_result(df, res)  # fails: KeyError '5'
    h = report.histograms
    y = df[0].to_numpy() == 1
    for j, name in enumerate(h.subgroups):
        if name == 2:
            continue
        m = (df[5] == name.split("=")[1]).to_numpy()
        assert h.counts[0, j].sum(axis=1).tolist() == [int((m & ~y).sum()), int((m & y).sum()),
                                                        int((~m & ~y).sum()),
                                                        int((~m & y).sum())]


def _weighted_frame():
    y = np.array([0, 1, 0, 1, 0, 1])
    s = np.array([.1, .4, .35, .8, .7, .9])
    g = np.array([1, 1, 1, 0, 0, 0])
    w = np.array([1., 2., 1., 1., 3., 1.])
    return pd.DataFrame({0: y, 1: s, 2: g, 3: w})


def _weighted_overall_reference(df):
    y, s, w = df[0].to_numpy(), df[1].to_numpy(), df[3].to_numpy()
    return pair_probability(s[y == 1], s[y == 0], w[y == 1], w[y == 0])  # 0.7


def test_dask_takes_an_integer_named_weight_column():
    """fastbias.dask.evaluate reads sample_weight=3 as the column 3 (passes)."""
    import dask
    import dask.dataframe as dd

    import fastbias.dask as fdask

    df = _weighted_frame()
    with dask.config.set(scheduler="synchronous"):
        res = fdask.evaluate(dd.from_pandas(df, npartitions=2), label=0, scores=1,
                             subgroups=[2], sample_weight=3)
    assert float(res.overall_auc[1]) == _weighted_overall_reference(df) == 0.7


def test_evaluate_takes_an_integer_named_weight_column():
    """evaluate reads label=0, scores=1, subgroups=[2] as columns of integer names, and
    fastbias.dask.evaluate reads sample_weight=3 as the column 3 (overall AUC 0.7, exact);
    evaluate itself raises "sample_weight must be an array-like ... got int" (frame.py:
    `isinstance(sample_weight, str)` decides what a column name is)."""
    df = _weighted_frame()
    res = fastbias.evaluate(df, label=0, scores=1, subgroups=[2], sample_weight=3)  # fails
    assert float(res.overall_auc[1]) == _weighted_overall_reference(df)


# ------------------------------------------------------------------ passing regression draws

def _quiet(fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            warnings.simplefilter("ignore", OmittedRowsWarning)
            return fn()
    except Exception as exc:  # noqa: BLE001
        return exc


def draw_ext(seed):
    """tests._fuzz_harness.draw plus values of 2**53 or more."""
    spec, df = H.draw(seed)
    rng = np.random.default_rng(seed + 7_000_000)
    n = len(df)
    if rng.random() < 0.5:  # a sensitive feature of int64 ids beyond 2**53
        vals = np.array([B, B + 1, B + 2, -B - 1, 2 ** 62 + 1], dtype=np.int64)
        df["site"] = vals[rng.integers(0, int(rng.integers(2, 6)), n)]
        spec["sensitive"] = spec["sensitive"] + ["site"]
    if rng.random() < 0.4:  # a model of exact large numbers (int64 even, or float64)
        k = rng.integers(0, 4, n)
        df["mbig"] = (np.int64(B) + 2 * k).astype(np.int64) if rng.random() < .5 else \
            (np.float64(B) * 2 + 4.0 * k)
        spec["models"] = spec["models"] + ["mbig"]
    if rng.random() < 0.4:  # an identity column whose members hold 2**53 + 1
        df["gbig"] = np.where(rng.random(n) < .4, B + 1, 0).astype(np.int64)
        spec["subgroups"] = spec["subgroups"] + ["gbig"]
    return spec, df


def _jsonable(v):
    if v is None or v is pd.NA:
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        v = float(v)
        return None if math.isnan(v) else v
    return v


def write_jsonl(df, path):
    cols = list(df.columns)
    data = {c: df[c].astype(object).tolist() for c in cols}
    with open(path, "w") as f:
        for i in range(len(df)):
            f.write(json.dumps({str(c): _jsonable(data[c][i]) for c in cols}) + "\n")


def write_parquet_dir(df, d, rng):
    """Three parts (one in a sub-folder) and copies that readers skip."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(os.path.join(d, "sub"))
    os.makedirs(os.path.join(d, "_temporary", "0"))
    cuts = sorted(rng.choice(np.arange(1, len(df)), 2, replace=False).tolist())
    table = pa.Table.from_pandas(df, preserve_index=False)
    for piece, name in zip([df.iloc[:cuts[0]], df.iloc[cuts[0]:cuts[1]], df.iloc[cuts[1]:]],
                           ["part-0.parquet", "part-1.parquet", "sub/part-2.parquet"]):
        pq.write_table(pa.Table.from_pandas(piece, schema=table.schema, preserve_index=False),
                       os.path.join(d, name))
    pq.write_table(table, os.path.join(d, "_temporary", "0", "part-0.parquet"))
    pq.write_table(table, os.path.join(d, ".part-0.parquet"))
    pq.write_table(table, os.path.join(d, "_hidden.parquet"))
    open(os.path.join(d, "_SUCCESS"), "w").close()


def to_dictionary(df, spec):
    import pyarrow as pa

    out = df.copy()
    for c in spec["sensitive"]:
        if out[c].dtype.kind not in "iub":
            arr = pa.array([v if isinstance(v, str) else None for v in out[c].tolist()],
                           type=pa.string())
        else:
            arr = pa.array(out[c].tolist())
        out[c] = pd.Series(pd.arrays.ArrowExtensionArray(arr.dictionary_encode()),
                           index=out.index)
    return out


def _renamer(back):
    def nm(x):
        parts = []
        for p in str(x).split(" & "):
            if "=" in p:
                c, v = p.split("=", 1)
                parts.append(back.get(c, c) + "=" + v)
            else:
                parts.append(back.get(p, p))
        return " & ".join(parts)

    def unname(tidy):
        tab, ov, th = tidy
        return ({(back.get(str(m), m), nm(s)): r for (m, s), r in tab.items()},
                {back.get(str(m), m): v for m, v in ov.items()},
                {(back.get(str(m), m), t, nm(s)): r for (m, t, s), r in th.items()})
    return unname


def _renamed_spec(spec, num):
    s2 = dict(spec)
    s2["label"] = num[spec["label"]]
    s2["models"] = [num[m] for m in spec["models"]]
    s2["subgroups"] = [num[g] for g in spec["subgroups"]]
    s2["weight"] = num[spec["weight"]] if spec["weight"] else None
    s2["sensitive"] = [num[c] for c in spec["sensitive"]]
    return s2


def run_ext(spec, df, tmp, rng):
    """{path: tidy result or exception} of the new inputs."""
    import dask
    import dask.dataframe as dd

    import fastbias.dask as fdask

    out = {}
    kw = H._kw(spec)
    omit = spec["nan_policy"] == "omit"
    # JSON lines through the CLI, in memory and streamed
    j = os.path.join(tmp, f"d{spec['seed']}.jsonl")
    write_jsonl(df, j)
    out["cli_jsonl"] = _quiet(lambda: H._cli(spec, df, tmp, j, stream=False))
    if not omit:
        out["cli_jsonl_stream"] = _quiet(lambda: H._cli(spec, df, tmp, j, stream=True))
    # a Parquet directory with what readers skip
    d = os.path.join(tmp, f"dir{spec['seed']}")
    write_parquet_dir(df, d, rng)
    if not omit:
        out["parquet_dir"] = _quiet(lambda: H._tidy_from_result(
            fastbias.evaluate_parquet(d, bucket_rows=7, **kw)))
    # pyarrow dictionary sensitive features
    if spec["sensitive"]:
        dd_ = to_dictionary(df, spec)
        out["evaluate_dict"] = _quiet(lambda: H._tidy_from_result(fastbias.evaluate(
            dd_, nan_policy=spec["nan_policy"], **kw)))
        if spec["missing"] == "background" and not spec["intersections"] \
                and "site" not in spec["sensitive"]:
            out["bias_metrics_dict"] = _quiet(lambda: H._bias_metrics(spec, dd_))
            if not omit and spec["ci"] is None and not spec["thresholds"]:
                out["BiasEvaluator_dict"] = _quiet(lambda: H._evaluator(spec, dd_))
    # integer column names (evaluate, Dask)
    num = {c: i + 100 for i, c in enumerate(df.columns)}
    back = {str(v): k for k, v in num.items()}
    unname = _renamer(back)
    di = df.rename(columns=num)
    s2 = _renamed_spec(spec, num)
    kwi = H._kw(s2)
    kwe = dict(kwi)
    if spec["weight"]:  # (an integer name is refused: test above)
        kwe["sample_weight"] = di[num[spec["weight"]]]
    out["evaluate_intnames"] = _quiet(lambda: unname(H._tidy_from_result(fastbias.evaluate(
        di, nan_policy=spec["nan_policy"], **kwe))))
    if not omit:
        def on_dask():
            with dask.config.set(scheduler="synchronous"):
                return unname(H._tidy_from_result(
                    fdask.evaluate(dd.from_pandas(di, npartitions=3), **kwi)))
        out["dask_intnames"] = _quiet(on_dask)
    # JSON lines whose keys are written as numbers ("100"), through the CLI
    nums = {c: str(i + 100) for i, c in enumerate(df.columns)}
    unname_s = _renamer({v: k for k, v in nums.items()})
    s3 = _renamed_spec(spec, nums)
    s3["seed"] = f"{spec['seed']}k"
    dk = df.rename(columns=nums)
    jk = os.path.join(tmp, f"k{spec['seed']}.jsonl")
    write_jsonl(dk, jk)
    for stream in (False, True):
        if stream and omit:
            continue
        r = _quiet(lambda: H._cli(s3, dk, tmp, jk, stream=stream))
        out["cli_jsonl_numkeys" + ("_stream" if stream else "")] = \
            r if isinstance(r, Exception) else unname_s(r)
    return out


# new seeds, run clean in this review (the full runs: base paths on seeds 20000-22014, 2,012
# clean and 3 the harness's false alarm below; base and new paths on 90000-90014 and
# 91000-91506, clean but for evaluate_csv's order above (58 seeds) and the same false alarm
# (91455)); a handful kept, chosen to cover
# the new inputs and every option
BASE_SEEDS = [20034, 20049, 20066, 20149]
EXT_SEEDS = [91005, 91016, 91030, 91104]


@pytest.mark.parametrize("seed", BASE_SEEDS)
def test_new_seed_every_path_matches_brute_force(tmp_path, seed):
    spec, df = H.draw(seed)
    problems = H.compare(spec, df, H.run_paths(spec, df, str(tmp_path)))
    assert not problems, "\n".join(problems[:20])


@pytest.mark.parametrize("seed", EXT_SEEDS)
def test_new_inputs_every_path_matches_brute_force(tmp_path, seed):
    spec, df = draw_ext(seed)
    results = H.run_paths(spec, df, str(tmp_path))
    if "site" in spec["sensitive"]:  # (a groups dict cannot say that an int column is a feature)
        results.pop("bias_metrics", None)
        results.pop("BiasEvaluator", None)
    results.update(run_ext(spec, df, str(tmp_path), np.random.default_rng(seed)))
    assert {"cli_jsonl", "evaluate_intnames", "cli_jsonl_numkeys"} <= set(results)
    problems = H.compare(spec, df, results)
    assert not problems, "\n".join(problems[:20])


# seeds where tests/_fuzz_harness.compare reports "threshold rows ... differ" for
# nan_policy='omit': a combination of two sensitive features is dropped for the model whose
# NaN scores were omitted (fewer than min_subgroup_size rows of a class left) and kept for the
# others; compare's expected threshold rows take the subgroups of every model together, so
# this is the harness's false alarm. fastbias is consistent: per model, the threshold table
# holds exactly the AUC table's subgroups, and every value matches the brute force.
OMIT_SEEDS = [20765, 21684, 21731]


@pytest.mark.parametrize("seed", OMIT_SEEDS)
def test_omit_drops_a_combination_per_model_in_both_tables(tmp_path, seed):
    spec, df = H.draw(seed)
    assert spec["nan_policy"] == "omit" and len(spec["sensitive"]) == 2 and spec["thresholds"]
    results = H.run_paths(spec, df, str(tmp_path))
    problems = H.compare(spec, df, results)
    assert problems and all("threshold rows" in p for p in problems)
    for name, got in results.items():
        assert not isinstance(got, Exception), (name, got)
        tab, _, th = got
        if name in ("BiasEvaluator", "bias_metrics") or not th:
            continue  # (bias_metrics' thresholds come from threshold_metrics, a call apart)
        for m in spec["models"]:
            names = {k[1] for k in tab if k[0] == m}
            assert {(t, k[2]) for k in th if k[0] == m for t in [k[1]]} == \
                {(float(t), s) for t in spec["thresholds"] for s in names}, (name, m)
    # the model with omitted scores has fewer subgroups than another
    tab = results["evaluate"][0]
    sizes = [len([k for k in tab if k[0] == m]) for m in spec["models"]]
    assert min(sizes) < max(sizes)
    # and that combination is short of a class among the rows kept for that model
    m0 = spec["models"][0]
    dropped = {k[1] for k in tab} - {k[1] for k in tab if k[0] == m0}
    ref, _, _ = H.brute(spec, df, sorted(dropped))
    for s in dropped:
        r = ref[(m0, s)]
        assert min(r["subgroup_negatives"], r["subgroup_positives"]) < spec["min_subgroup_size"]
