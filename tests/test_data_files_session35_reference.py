"""An independent review's tests (2026-11-27) of data files as other tools export them
(CSV with a BOM, CRLF, quoted newlines, other separators and compressions, numbers in text
forms; Parquet dictionary-encoded, nullable, float16/float32, all-null row groups; sensitive
features' text groups; --subgroups-file, --csv-raw, --top), through the CLI in memory and
streamed. Every expected number comes from an independent reference (brute-force pair counts
for small data, sklearn's roc_auc_score for larger), never from fastbias. The review found
them alike; these tests pin what held, and the refusals (naming the column, value and row).
"""
import csv
import gzip
import json

import numpy as np
import pandas as pd
import pytest

from fastbias.cli import main
from tests.test_bounded_memory import _four_mib_for_data

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _auc(neg, pos):
    neg = np.asarray(neg, float)
    pos = np.asarray(pos, float)
    if len(neg) * len(pos) > 4_000_000:
        from sklearn.metrics import roc_auc_score
        return roc_auc_score(np.r_[np.zeros(len(neg)), np.ones(len(pos))], np.r_[neg, pos])
    gt = (pos[:, None] > neg[None, :]).sum()
    eq = (pos[:, None] == neg[None, :]).sum()
    return (gt + 0.5 * eq) / (len(neg) * len(pos))


def _reference(y, s, member):
    y = np.asarray(y, bool)
    s = np.asarray(s, float)
    m = np.asarray(member, bool)
    gn, gp, bn, bp = s[m & ~y], s[m & y], s[~m & ~y], s[~m & y]
    return {"subgroup_negatives": len(gn), "subgroup_positives": len(gp),
            "background_negatives": len(bn), "background_positives": len(bp),
            "subgroup_auc": _auc(gn, gp), "bpsn_auc": _auc(gn, bp), "bnsp_auc": _auc(bn, gp),
            # 1/2 - P(s(D-) > s(Dg-)) = P(s(Dg-) > s(D-)) + ties/2 - 1/2
            "negative_aeg": _auc(bn, gn) - 0.5, "positive_aeg": _auc(bp, gp) - 0.5,
            "overall": _auc(s[~y], s[y]), "n_rows": len(y)}


def _run(path, out, *args):
    status = main(["report", str(path), "--label", "y", "--scores", "s", "--out", str(out),
                   "--progress", "never", "-q", "--force", *args])
    assert status == 0
    return json.loads(open(out).read())


def _assert_matches(report, ref, row=0):
    assert report["n_rows"] == ref["n_rows"]
    model = report["models"][0]
    assert model["overall_auc"] == pytest.approx(ref["overall"], abs=1e-12)
    got = model["subgroups"][row]
    for key, value in ref.items():
        if key not in ("overall", "n_rows"):
            assert got[key] == pytest.approx(value, abs=1e-12), key


N = 50_000  # enough for the CLI to stream within the 4 MiB left for data


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(4)
    return (rng.integers(0, 2, N), np.round(rng.random(N), 3), rng.integers(0, 2, N))


def _csv_text(y, s, g, *, sep=",", nl="\n", fy=str, fs=str, fg=str, note=lambda i: "x"):
    out = [sep.join(["id", "y", "s", "g", "note"])]
    for i in range(len(y)):
        out.append(sep.join([str(i), fy(y[i]), fs(s[i]), fg(g[i]), note(i)]))
    return nl.join(out) + nl


CSV_CASES = {
    "bom_crlf.csv": dict(prefix="\ufeff", nl="\r\n"),
    "trailing_blank.csv": dict(suffix="\n"),
    "semicolon.csv": dict(sep=";"),
    "tab.tsv": dict(sep="\t"),
    "quoted_newlines.csv.gz": dict(note=lambda i: '"a,b\nc;d ""q"""' if i % 100 == 0 else "x"),
    "labels_as_0.0_1.0.csv": dict(fy=lambda v: f"{v}.0"),
    "identity_True_False.csv": dict(fg=lambda v: "True" if v else "False"),
    "identity_1.0_0.csv": dict(fg=lambda v: "1.0" if v else "0"),
    "scores_exponent.csv": dict(fs=lambda v: f"{v:e}"),
    "scores_plus.csv": dict(fs=lambda v: f"+{v}"),
}


@pytest.mark.jit_heavy
@pytest.mark.parametrize("name", sorted(CSV_CASES))
def test_csv_exports_in_memory_and_streamed_equal_the_reference(name, data, tmp_path,
                                                                 monkeypatch):
    y, s, g = data
    kw = dict(CSV_CASES[name])
    prefix, suffix = kw.pop("prefix", ""), kw.pop("suffix", "")
    text = (prefix + _csv_text(y, s, g, **kw) + suffix).encode()
    path = tmp_path / name
    path.write_bytes(gzip.compress(text) if name.endswith(".gz") else text)
    extra = ["--subgroups", "g"] + (["--sep", ";"] if kw.get("sep") == ";" else [])
    ref = _reference(y == 1, s, g == 1)
    _assert_matches(_run(path, tmp_path / "m.json", *extra), ref)
    streamed = _run(path, tmp_path / "s.json", *extra, "--max-memory",
                    str(_four_mib_for_data(monkeypatch, batch_rows=4_000)))
    assert streamed["settings"]["engine"] == "streaming"
    _assert_matches(streamed, ref)


def _parquet_cases(y, s, g):
    nulls = [None if i % 3 == 0 else int(v) for i, v in enumerate(g)]
    member_nulls = np.array([v == 1 for v in nulls])
    return {
        "dictionary_score": (pa.table({"y": y, "s": pa.array(s).dictionary_encode(), "g": g}),
                             s, g == 1),
        "categorical_reversed": (pa.Table.from_pandas(pd.DataFrame({
            "y": pd.Categorical(y, categories=[1, 0]),
            "s": pd.Categorical(s, categories=np.sort(np.unique(s))[::-1]),
            "g": pd.Categorical(g, categories=[1, 0])})), s, g == 1),
        "nullable_int64_identity": (pa.table({"y": pa.array(y, pa.int8()), "s": s,
                                              "g": pa.array(nulls, pa.int64())}), s,
                                    member_nulls),
        "nullable_bool_identity": (pa.table({"y": pa.array(y == 1), "s": s, "g": pa.array(
            [None if v is None else v == 1 for v in nulls], pa.bool_())}), s, member_nulls),
        "float32_score": (pa.table({"y": y, "s": s.astype(np.float32), "g": g}),
                          s.astype(np.float32).astype(float), g == 1),
        "float16_score": (pa.table({"y": y, "s": s.astype(np.float16), "g": g}),
                          s.astype(np.float16).astype(float), g == 1),
    }


@pytest.mark.jit_heavy
@pytest.mark.parametrize("case", ["dictionary_score", "categorical_reversed",
                                  "nullable_int64_identity", "nullable_bool_identity",
                                  "float32_score", "float16_score"])
def test_parquet_exports_in_memory_and_streamed_equal_the_reference(case, data, tmp_path,
                                                                     monkeypatch):
    y, s, g = data
    table, scores, member = _parquet_cases(y, s, g)[case]
    path = tmp_path / f"{case}.parquet"
    pq.write_table(table, path, row_group_size=7_000)
    ref = _reference(y == 1, scores, member)
    _assert_matches(_run(path, tmp_path / "m.json", "--subgroups", "g"), ref)
    streamed = _run(path, tmp_path / "s.json", "--subgroups", "g", "--max-memory",
                    str(_four_mib_for_data(monkeypatch, batch_rows=4_000)))
    assert streamed["settings"]["engine"] == "streaming"
    _assert_matches(streamed, ref)


def test_parquet_identity_all_null_in_one_row_group_is_background(tmp_path):
    rng = np.random.default_rng(2)
    n, h = 2_000, 1_000
    y, s, g = rng.integers(0, 2, n), np.round(rng.random(n), 2), rng.integers(0, 2, n)
    path = tmp_path / "rg.parquet"
    schema = pa.schema([("y", pa.int64()), ("s", pa.float64()), ("g", pa.int64())])
    with pq.ParquetWriter(path, schema) as w:
        w.write_table(pa.table({"y": y[:h], "s": s[:h], "g": g[:h]}, schema=schema))
        w.write_table(pa.table({"y": y[h:], "s": s[h:], "g": pa.nulls(n - h, pa.int64())},
                               schema=schema))
    member = np.r_[g[:h] == 1, np.zeros(n - h, bool)]
    _assert_matches(_run(path, tmp_path / "m.json", "--subgroups", "g"),
                    _reference(y == 1, s, member))


def test_text_sensitive_features_NA_None_commas_quotes(tmp_path):
    rng = np.random.default_rng(6)
    n = 2_000
    y, s = rng.integers(0, 2, n), np.round(rng.random(n), 3)
    values = np.array(["NA", "None", "", "a,b", 'say "hi"', "null", "0", "1.0"], dtype=object)
    race = values[rng.integers(0, len(values), n)]
    path = tmp_path / "sf.csv"
    pd.DataFrame({"y": y, "s": s, "race": race}).to_csv(path, index=False,
                                                        quoting=csv.QUOTE_MINIMAL)
    report = _run(path, tmp_path / "m.json", "--sensitive-features", "race")
    rows = {r["subgroup"]: r for r in report["models"][0]["subgroups"]}
    # in a CSV text column only the empty field is missing: every other text is a group
    assert set(rows) == {f"race={v}" for v in values if v != ""}
    for v in values:
        if v == "":
            continue
        ref = _reference(y == 1, s, race == v)
        for key in ("subgroup_negatives", "subgroup_positives", "subgroup_auc", "bpsn_auc",
                    "bnsp_auc", "negative_aeg", "positive_aeg"):
            assert rows[f"race={v}"][key] == pytest.approx(ref[key], abs=1e-12)


def test_subgroups_file_with_bom_and_crlf(tmp_path):
    rng = np.random.default_rng(8)
    n = 300
    y, s = rng.integers(0, 2, n), np.round(rng.random(n), 2)
    g, h = rng.integers(0, 2, n), rng.integers(0, 2, n)
    data = tmp_path / "d.csv"
    pd.DataFrame({"y": y, "s": s, "african american": g, "male": h}).to_csv(data, index=False)
    names = tmp_path / "names.txt"
    names.write_bytes("\ufeffafrican american\r\nmale\r\n".encode())
    report = _run(data, tmp_path / "m.json", "--subgroups-file", str(names))
    assert [r["subgroup"] for r in report["models"][0]["subgroups"]] == ["african american",
                                                                         "male"]
    _assert_matches(report, _reference(y == 1, s, g == 1), row=0)
    _assert_matches(report, _reference(y == 1, s, h == 1), row=1)


def test_duplicate_header_names_are_refused_by_name(tmp_path, capsys):
    path = tmp_path / "dup.csv"
    path.write_text("y,s,g,g\n1,0.5,1,0\n0,0.2,0,1\n")
    status = main(["report", str(path), "--label", "y", "--scores", "s", "--subgroups", "g",
                   "--progress", "never"])
    assert status == 1
    assert "several columns named 'g'" in capsys.readouterr().err


def test_integer_scores_beyond_2_53_are_refused_not_tied(tmp_path, capsys):
    path = tmp_path / "big.csv"
    path.write_text("y,s,g\n0,9007199254740993,1\n1,9007199254740992,0\n")
    status = main(["report", str(path), "--label", "y", "--scores", "s", "--subgroups", "g",
                   "--progress", "never"])
    assert status == 1
    err = capsys.readouterr().err
    assert "'s'" in err and "9007199254740993" in err


def test_csv_output_escapes_formula_names_unless_raw(tmp_path):
    rng = np.random.default_rng(12)
    n = 400
    y, s, g = rng.integers(0, 2, n), np.round(rng.random(n), 2), rng.integers(0, 2, n)
    data = tmp_path / "names.csv"
    pd.DataFrame({"y": y, "s": s, "=cmd": g, "+x\ny": 1 - g}).to_csv(data, index=False)
    for raw, expected in (([], ["'=cmd", "'+x\ny"]), (["--csv-raw"], ["=cmd", "+x\ny"])):
        out = tmp_path / f"o{len(raw)}.csv"
        assert main(["report", str(data), "--label", "y", "--scores", "s", "--subgroups",
                     "=cmd", "+x\ny", "--out", str(out), "--progress", "never", "-q",
                     *raw]) == 0
        rows = list(csv.DictReader(open(out, newline="")))
        assert [r["subgroup"] for r in rows] == expected
        for r, member in zip(rows, (g == 1, g == 0)):
            assert float(r["subgroup_auc"]) == pytest.approx(
                _reference(y == 1, s, member)["subgroup_auc"], abs=1e-12)
