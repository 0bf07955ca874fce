"""An independent review's tests (2026-11-27) of the command line across its options.

Found by review (each fails before its fix): --n-boot beside --ci delong, --sep of a
Parquet file and --min-subgroup-size without intersections or sensitive features were
dropped without a word (now usage errors naming them); an error showed --positive as
np.int64(1), another said ci='delong' where the CLI says --ci delong.

Every expected number comes from an independent brute-force reference (pair counts as
fractions.Fraction, sklearn's roc_auc_score for unweighted AUCs, direct counting for the
threshold metrics); fastbias is only run through its CLI (``fastbias.cli.main``)."""
import contextlib
import csv
import io
import json
import math
import os
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from fastbias import cli
from tests._fuzz_harness import cli_streaming

KEYS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
COUNTS = ["subgroup_size", "subgroup_negatives", "subgroup_positives",
          "background_negatives", "background_positives"]


# ----------------------------------------------------------------- independent reference

def _p_greater(a, wa, b, wb):
    """P(s(a) > s(b)), ties 1/2, frequency weights; a Fraction (None when a side is empty)."""
    if not len(a) or not len(b):
        return None
    num2 = 0
    for x, u in zip(a, wa):
        for y, v in zip(b, wb):
            num2 += u * v * (2 if x > y else 1 if x == y else 0)
    return Fraction(num2, 2 * sum(wa) * sum(wb))


def _reference(y, s, member, w):
    """member[i]: True (in the subgroup), False (background) or None (in neither)."""
    def part(m, cls):
        rows = [i for i in range(len(y)) if member[i] is m and y[i] is cls]
        return [s[i] for i in rows], [w[i] for i in rows]
    sgn, sgp, bgn, bgp = part(True, False), part(True, True), part(False, False), part(False, True)
    neg = lambda p: None if p is None else Fraction(1, 2) - p  # noqa: E731
    return dict(subgroup_size=len(sgn[0]) + len(sgp[0]), subgroup_negatives=len(sgn[0]),
                subgroup_positives=len(sgp[0]), background_negatives=len(bgn[0]),
                background_positives=len(bgp[0]),
                subgroup_auc=_p_greater(*sgp, *sgn), bpsn_auc=_p_greater(*bgp, *sgn),
                bnsp_auc=_p_greater(*sgp, *bgn), negative_aeg=neg(_p_greater(*bgn, *sgn)),
                positive_aeg=neg(_p_greater(*bgp, *sgp)))


def _data(n=240, seed=1):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "y": rng.integers(0, 2, n),
        "s1": np.round(rng.random(n), 1),          # many ties
        "s2": np.round(rng.random(n), 2),
        "gb": rng.random(n) < 0.3,                 # boolean identity
        "gi": (rng.random(n) < 0.4).astype(int),   # 0/1 identity
        "gf": np.round(rng.random(n), 2),          # fraction identity, two NaN
        "w": rng.integers(1, 4, n).astype(float),
        "race": rng.choice(["a", "b", "c"], n),
    })
    df.loc[[3, 17], "gf"] = np.nan
    return df


def _write(df, tmp_path, fmt):
    path = tmp_path / f"d.{fmt}"
    if fmt == "csv":
        df.to_csv(path, index=False)
    elif fmt == "parquet":
        df.to_parquet(path, index=False)
    else:
        df.to_json(path, orient="records", lines=True)
    return str(path)


def _cli(argv, stream=False):
    """Run the CLI in process: (status, stdout, stderr). ``stream`` forces the out-of-core
    path in tiny batches and buckets (as tests/_fuzz_harness.py does)."""
    out, err = io.StringIO(), io.StringIO()
    with cli_streaming(11 if stream else None) as extra:
        if stream:
            argv = [a for a in argv if a != "-q"] + extra + ["--progress", "never"]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = cli.main(argv)
    if stream and status == 0:
        assert "streaming it" in err.getvalue()
    return status, out.getvalue(), err.getvalue()


def _member(col, thr, missing):
    res = []
    for v in col:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            res.append(False if missing == "background" else None)
        else:
            res.append(bool(float(v) >= thr))
    return res


def _same(got, exp):
    if exp is None:
        return got is None or (isinstance(got, float) and math.isnan(got))
    return got is not None and abs(float(got) - float(exp)) <= 1e-12


CASES = [
    ([], dict()),
    (["--subgroup-threshold", "0.7"], dict(thr=0.7)),
    (["--missing-subgroup", "exclude", "--weight", "w"], dict(missing="exclude", weight="w")),
    (["--weight", "w", "--subgroup-threshold", "0.3"], dict(weight="w", thr=0.3)),
]


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
@pytest.mark.parametrize("stream", [False, True], ids=["memory", "streamed"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_every_number_written_equals_brute_force(tmp_path, fmt, stream, case):
    """Property (held): JSON, CSV and the terminal table of every identity kind (bool, 0/1,
    fraction with NaN) equal the brute-force reference, in memory and streamed."""
    extra, kw = CASES[case]
    thr, missing, weight = kw.get("thr", 0.5), kw.get("missing", "background"), kw.get("weight")
    df = _data()
    data = _write(df, tmp_path, fmt)
    js, cs = str(tmp_path / "o.json"), str(tmp_path / "o.csv")
    status, out, err = _cli(["report", data, "--label", "y", "--scores", "s1", "s2",
                             "--subgroups", "gb", "gi", "gf", "--out", js, "--out", cs, "-q",
                             *extra], stream=stream)
    assert status == 0, err
    rep = json.load(open(js))
    rows = list(csv.DictReader(open(cs)))
    y = [bool(v) for v in df["y"]]
    w = [int(v) for v in df[weight]] if weight else [1] * len(df)
    assert len(rows) == 6
    for m in rep["models"]:
        s = list(df[m["name"]])
        ov = _p_greater([a for a, t in zip(s, y) if t], [u for u, t in zip(w, y) if t],
                        [a for a, t in zip(s, y) if not t], [u for u, t in zip(w, y) if not t])
        assert _same(m["overall_auc"], ov)
        if not weight:
            from sklearn.metrics import roc_auc_score
            assert m["overall_auc"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
        for r in m["subgroups"]:
            ref = _reference(y, s, _member(df[r["subgroup"]], thr, missing), w)
            line = next(x for x in rows if x["model"] == m["name"] and x["subgroup"] == r["subgroup"])
            for k in COUNTS:
                assert r[k] == ref[k] and int(line[k]) == ref[k], (k, r, ref)
            for k in KEYS:
                assert _same(r[k], ref[k]) and _same(float(line[k]), ref[k]), (k, r, ref)
                # terminal table: 4 decimals of the same number
                shown = f"{float(ref[k]):+.4f}" if "aeg" in k else f"{float(ref[k]):.4f}"
                block = out.split(f"{m['name']}  overall AUC", 1)[1].split("overall AUC")[0]
                table_line = next(t for t in block.splitlines()
                                  if t.startswith(r["subgroup"] + " "))
                assert shown in table_line, (k, shown, table_line)


def test_intersections_and_sensitive_features_match_brute_force(tmp_path):
    """Property (held): '--intersections 2' and '--sensitive-features race' rows, in memory
    and streamed, equal the reference; '--min-subgroup-size' drops the small intersections."""
    df = _data()
    data = _write(df, tmp_path, "csv")
    y = [bool(v) for v in df["y"]]
    results = []
    for stream in (False, True):
        js = str(tmp_path / f"o{stream}.json")
        status, _, err = _cli(["report", data, "--label", "y", "--scores", "s1", "--subgroups",
                               "gb", "gi", "gf", "--sensitive-features", "race",
                               "--intersections", "3", "--min-subgroup-size", "12",
                               "--out", js, "-q"], stream=stream)
        assert status == 0, err
        results.append(json.load(open(js)))

    def member(name):
        res = []
        for i in range(len(df)):
            ok = True
            for p in name.split(" & "):
                if "=" in p:
                    c, v = p.split("=", 1)
                    ok = ok and str(df[c][i]) == v
                else:
                    v = df[p][i]
                    ok = ok and not (isinstance(v, float) and math.isnan(v)) and float(v) >= 0.5
            res.append(bool(ok))
        return res

    s = list(df["s1"])
    names = set()
    for r in results[0]["models"][0]["subgroups"]:
        ref = _reference(y, s, member(r["subgroup"]), [1] * len(df))
        for k in COUNTS + KEYS:
            assert _same(r[k], ref[k]), (r["subgroup"], k, r[k], ref[k])
        names.add(r["subgroup"])
    # every pair/triple of identities with >= 12 rows of each class, and only those
    from itertools import combinations
    expected = {"gb", "gi", "gf", "race=a", "race=b", "race=c"}
    for k in (2, 3):
        for combo in combinations(["gb", "gi", "gf"], k):
            ref = _reference(y, s, member(" & ".join(combo)), [1] * len(df))
            if min(ref["subgroup_negatives"], ref["subgroup_positives"]) >= 12:
                expected.add(" & ".join(combo))
    assert names == expected
    assert results[0]["models"][0]["subgroups"] == results[1]["models"][0]["subgroups"]


def test_threshold_metrics_match_direct_counts_memory_and_streamed(tmp_path):
    """Property (held): X.thresholds.csv (weighted) equals direct weight sums at score >= T."""
    df = _data()
    data = _write(df, tmp_path, "parquet")
    y = np.asarray(df["y"], bool)
    w = np.asarray(df["w"])
    for stream in (False, True):
        cs = str(tmp_path / f"o{stream}.csv")
        status, _, err = _cli(["report", data, "--label", "y", "--scores", "s1", "--subgroups",
                               "gb", "gf", "--thresholds", "0.3", "0.5", "--weight", "w",
                               "--out", cs, "-q"], stream=stream)
        assert status == 0, err
        rows = list(csv.DictReader(open(cs[:-4] + ".thresholds.csv")))
        assert len(rows) == 4
        for r in rows:
            t = float(r["threshold"])
            col = df[r["subgroup"]]
            m = np.array([not (isinstance(v, float) and math.isnan(v)) and float(v) >= 0.5
                          for v in col])
            pred = np.asarray(df["s1"]) >= t
            for side, mask in (("subgroup", m), ("background", ~m)):
                tp = Fraction(int((w * (mask & y & pred)).sum()))
                fp = Fraction(int((w * (mask & ~y & pred)).sum()))
                pos = Fraction(int((w * (mask & y)).sum()))
                neg = Fraction(int((w * (mask & ~y)).sum()))
                assert float(r[f"{side}_tp"]) == tp and float(r[f"{side}_fp"]) == fp
                assert float(r[f"{side}_tpr"]) == pytest.approx(float(tp / pos), abs=1e-15)
                assert float(r[f"{side}_fpr"]) == pytest.approx(float(fp / neg), abs=1e-15)
                assert float(r[f"{side}_positive_rate"]) == pytest.approx(
                    float((tp + fp) / (pos + neg)), abs=1e-15)
                assert float(r[f"{side}_precision"]) == pytest.approx(float(tp / (tp + fp)),
                                                                      abs=1e-15)


def test_text_label_positive_and_fraction_label_threshold(tmp_path):
    """Property (held): --positive on a text label and --label-threshold on a fraction label,
    each streamed and in memory, equal the reference."""
    rng = np.random.default_rng(5)
    n = 200
    df = pd.DataFrame({"lab": rng.choice(["toxic", "ok"], n), "frac": np.round(rng.random(n), 1),
                       "s": np.round(rng.random(n), 1), "g": rng.random(n) < 0.4})
    data = _write(df, tmp_path, "csv")
    s = list(df["s"])
    for j, (argv, y) in enumerate(((["--label", "lab", "--positive", "toxic"], [v == "toxic" for v in df["lab"]]),
                    (["--label", "frac", "--label-threshold", "0.7"], [v >= 0.7 for v in df["frac"]]))):
        for stream in (False, True):
            js = str(tmp_path / f"o{j}{stream}.json")
            status, _, err = _cli(["report", data, *argv, "--scores", "s", "--subgroups", "g",
                                   "--out", js, "-q"], stream=stream)
            assert status == 0, err
            r = json.load(open(js))["models"][0]["subgroups"][0]
            ref = _reference([bool(v) for v in y], s, [bool(v) for v in df["g"]], [1] * n)
            for k in COUNTS + KEYS:
                assert _same(r[k], ref[k]), (argv, stream, k)


# ----------------------------------------------------------------- output files

def _base(data):
    return ["report", data, "--label", "y", "--scores", "s1", "--subgroups", "gb", "-q"]


def test_outputs_never_replace_an_input_or_follow_a_link(tmp_path):
    """Property (held): the input itself, a link to it, a dangling link, a hard link, the
    input as the X.thresholds.csv sibling, and the --subgroups-file are all refused (exit 1)
    and every file is unchanged."""
    df = _data()
    data = _write(df, tmp_path, "csv")
    before = open(data, "rb").read()
    os.symlink(data, tmp_path / "link.csv")
    os.symlink(tmp_path / "nowhere.json", tmp_path / "dangling.json")
    os.link(data, tmp_path / "hard.csv")
    sib = tmp_path / "r.thresholds.csv"
    df.to_csv(sib, index=False)
    names = tmp_path / "names.txt"
    names.write_text("gb\n")
    for argv in (_base(data) + ["--out", data, "--force"],
                 _base(data) + ["--out", str(tmp_path / "link.csv"), "--force"],
                 _base(data) + ["--out", str(tmp_path / "dangling.json"), "--force"],
                 _base(data) + ["--out", str(tmp_path / "hard.csv"), "--force"],
                 _base(str(sib)) + ["--thresholds", "0.5", "--out", str(tmp_path / "r.csv"),
                                    "--force"],
                 ["report", data, "--label", "y", "--scores", "s1", "--subgroups-file",
                  str(names), "--out", str(names.with_suffix(".csv")), "--out", str(names),
                  "--force", "-q"]):
        status, _, err = _cli(argv)
        assert status == 1 and "fastbias: error: --out" in err, (argv, err)
        assert "Traceback" not in err
    assert open(data, "rb").read() == before
    assert not (tmp_path / "nowhere.json").exists()
    assert names.read_text() == "gb\n"
    assert not (tmp_path / "r.csv").exists()


# ----------------------------------------------------------------- found by review

def test_n_boot_without_bootstrap_is_refused(tmp_path):
    """Was: '--n-boot 50 --ci delong' (or --n-boot without --ci) is silently dropped: exit 0
    and a report with DeLong intervals. --gap-interval and --report-threshold without
    --thresholds are refused by name (cmd_report); --n-boot (and --seed) asked for where no
    bootstrap runs should be refused the same way: exit != 0 naming --n-boot and --ci."""
    data = _write(_data(), tmp_path, "csv")
    status, _, err = _cli(_base(data) + ["--ci", "delong", "--n-boot", "50"])
    assert status != 0 and "--n-boot" in err, (status, err)


def test_sep_with_parquet_is_refused(tmp_path):
    """Was: '--sep ;' with a Parquet input (a CSV-only option) is silently ignored (exit 0).
    Correct: a usage error naming --sep (it applies to CSV/TSV only)."""
    data = _write(_data(), tmp_path, "parquet")
    status, _, err = _cli(_base(data) + ["--sep", ";"])
    assert status != 0 and "--sep" in err, (status, err)


def test_min_subgroup_size_without_intersections_is_refused(tmp_path):
    """Was: '--min-subgroup-size 1000' without --intersections or --sensitive-features
    changes nothing and is dropped silently (every subgroup, however small, is reported).
    A user who meant 'hide the small subgroups' is not told. Correct: a usage error naming
    --min-subgroup-size and --intersections/--sensitive-features."""
    data = _write(_data(), tmp_path, "csv")
    status, out, err = _cli(_base(data) + ["--min-subgroup-size", "1000"])
    assert status != 0 and "--min-subgroup-size" in err, (status, err)


def test_positive_with_label_threshold_message_shows_the_value_as_typed(tmp_path):
    """Was: '--positive 1 --label-threshold 0.3' (numeric label) says
    "got --positive=np.int64(1)": a numpy repr, not what the user typed. Correct: the value
    as given, '--positive 1' (cause: _PYTHON_TO_CLI rewrites the library's
    "pos_label=np.int64(1)" wording, evaluation's check of pos_label with label_threshold)."""
    data = _write(_data(), tmp_path, "csv")
    status, _, err = _cli(_base(data) + ["--positive", "1", "--label-threshold", "0.3"])
    assert status == 1 and "--positive" in err and "--label-threshold" in err
    assert "np." not in err, err


def test_bernstein_with_weight_message_speaks_cli(tmp_path):
    """Was: '--ci bernstein --weight w' is refused with "use ci='delong' or 'bootstrap'
    with --weight": Python keyword syntax in a CLI message. Correct: '--ci delong' or
    '--ci bootstrap' (cause: _PYTHON_TO_CLI has no entry for "ci='...'")."""
    data = _write(_data(), tmp_path, "csv")
    status, _, err = _cli(_base(data) + ["--ci", "bernstein", "--weight", "w"])
    assert status == 1 and "--weight" in err
    assert "ci='" not in err, err



def test_bootstrap_options_are_taken_with_a_bootstrap_and_refused_without(tmp_path):
    """--seed of a report without --ci bootstrap is refused as --n-boot is; with it, both are
    taken (the same seed gives the same intervals twice, another seed others); the demo's
    --n-boot without --ci bootstrap is refused too, before anything is written."""
    data = _write(_data(), tmp_path, "csv")
    status, _, err = _cli(_base(data) + ["--seed", "3"])
    assert status != 0 and "--seed" in err and "--ci bootstrap" in err, (status, err)
    tables = []
    for run, seed in enumerate(("3", "3", "4")):
        out = tmp_path / f"b{run}.csv"
        status, _, err = _cli(_base(data) + ["--ci", "bootstrap", "--n-boot", "30", "--seed",
                                             seed, "--out", str(out)])
        assert status == 0, err
        tables.append(pd.read_csv(out))
    assert "subgroup_auc_low" in tables[0]
    pd.testing.assert_frame_equal(tables[0], tables[1])
    assert not tables[0]["subgroup_auc_low"].equals(tables[2]["subgroup_auc_low"])
    status, _, err = _cli(["demo", "--rows", "500", "--n-boot", "20", "--out",
                           str(tmp_path / "d.json"), "--progress", "never"])
    assert status != 0 and "--n-boot" in err and not (tmp_path / "d.json").exists()


@pytest.mark.parametrize("shift", [0, 1])
def test_min_subgroup_size_with_intersections_is_taken(tmp_path, shift):
    """--min-subgroup-size beside --intersections keeps the pair only with that many rows of
    each class (counted here from the rows): at the smaller class's count it is kept, one
    more and it is not."""
    df = _data()
    data = _write(df, tmp_path, "csv")
    both = df["gb"] & (df["gi"] == 1)
    smaller = int(min((both & (df["y"] == 0)).sum(), (both & (df["y"] == 1)).sum()))
    assert smaller >= 2
    out = tmp_path / "r.csv"
    status, _, err = _cli(_base(data)[:-1] + ["gi", "-q", "--intersections", "2",
                                               "--min-subgroup-size", str(smaller + shift),
                                               "--out", str(out)])
    assert status == 0, err
    assert set(pd.read_csv(out)["subgroup"]) == ({"gb", "gi", "gb & gi"} if shift == 0
                                                 else {"gb", "gi"})


@pytest.mark.parametrize("threshold", ["0.5", "0.3"])
def test_positive_with_any_label_threshold_is_refused(tmp_path, threshold):
    """--positive beside --label-threshold, even the default's 0.5 (which the library cannot
    tell from its default), is refused naming both; --positive alone, or the threshold
    alone, is taken."""
    df = _data()
    df["t"] = np.where(df["y"] == 1, "toxic", "ok")
    data = _write(df, tmp_path, "csv")
    argv = ["report", data, "--label", "t", "--scores", "s1", "--subgroups", "gb", "-q"]
    status, _, err = _cli(argv + ["--positive", "toxic", "--label-threshold", threshold])
    assert status == 1 and "--positive toxic" in err and f"--label-threshold {threshold}" in err
    status, out, err = _cli(argv + ["--positive", "toxic"])
    assert status == 0, err
    status, out, err = _cli(["report", data, "--label", "y", "--scores", "s1", "--subgroups",
                             "gb", "-q", "--label-threshold", threshold])
    assert status == 0, err
