"""Mutation audit of the thirty-second session's library changes: an independent review's
tests (2026-11-27) killing mutants that survived the rest of the suite. Expected values are
written by hand (the file's own integers, counts of files on disk, hand-made indicator
scores), never from fastbias.

Found by the audit (each fails before its fix): a JSON-lines sensitive feature's
9007199254740993 joined 9007199254740992's group (text columns were left out of the rounded
integers' check, but JSON lines reads them as numbers); the warning of a sensitive feature
missing on every row named a line of fastbias for bias_metrics (now the caller's line on
every entry point).
"""
import os
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.validate import parquet as pqmod
from fastbias.validate.textfile import (
    DataFileError,
    iter_text_batches,
    open_text_source,
)

B = 9007199254740993  # 2**53 + 1: float64 reads it as 2**53


def _read(tmp_path, name, text, batch_rows=10, columns=("s",)):
    p = tmp_path / name
    p.write_text(text)
    frames = [f for f, _ in iter_text_batches(open_text_source(str(p)), list(columns),
                                              batch_rows)]
    return [v for f in frames for v in f["s"].tolist()]


# ------------------------------------------------------------ textfile: _rounded_integer

def test_exact_309_digit_integer_beside_a_decimal_is_read_exactly(tmp_path):
    # the largest double written as an integer (309 digits) and 2**100 (31 digits) are held
    # exactly by float64: nothing to refuse (kills _MOST_DIGITS lowered below 309)
    biggest = int(sys.float_info.max)
    assert len(str(biggest)) == 309
    values = _read(tmp_path, "big.csv", "s\n0.5\n%d\n%d\n" % (biggest, 2 ** 100))
    assert values == [0.5, float(biggest), 2.0 ** 100]


def test_exact_integer_after_400_leading_zeros_is_read_exactly(tmp_path):
    # "000...0001152921504606846976" is 2**60 (exact in float64); the zeros do not make it
    # a 400-digit integer (kills the regex without its 0*)
    values = _read(tmp_path, "zeros.csv", "s\n0.5\n%s%d\n" % ("0" * 400, 2 ** 60))
    assert values == [0.5, 2.0 ** 60]


def test_negative_exact_integer_is_read_and_negative_rounded_one_refused(tmp_path):
    # -2**60 is exact: read as -1152921504606846976.0 (kills the sign dropped in the
    # comparison); -9007199254740993 is rounded: refused naming it
    values = _read(tmp_path, "neg.csv", "s\n0.5\n-%d\n" % 2 ** 60)
    assert values == [0.5, -(2.0 ** 60)]
    with pytest.raises(DataFileError, match="'s'.*-9007199254740993"):
        _read(tmp_path, "neg2.csv", "s\n0.5\n-%d\n" % B)


def test_json_negative_whole_floats_made_int64_do_not_hide_a_rounded_integer(tmp_path):
    # {"s":-2.0},{"s":-9007199254740993}: pandas reads floats, then int64 -2**53; the file's
    # integer is -(2**53 + 1): refused (kills the check of int64 rows for >= 2**53 only)
    with pytest.raises(DataFileError, match="'s'.*-9007199254740993"):
        _read(tmp_path, "neg.jsonl", '{"s":-2.0}\n{"s":-%d}\n' % B)


def test_batches_under_eight_rows_still_check(tmp_path):
    # batch_rows 3 gives pieces of one row (not 0: pandas refuses chunksize 0)
    with pytest.raises(DataFileError, match="'s'.*9007199254740993 at row 1"):
        _read(tmp_path, "small.csv", "s\n0.5\n%d\n" % B, batch_rows=3)


def _many_rows(rounded_at=None):
    # every 5th row a decimal (each batch read as floats), the others even integers of
    # [2**53, 2**54): exact in float64
    rows = ["0.5" if i % 5 == 0 else str(2 ** 53 + 2 * i) for i in range(50)]
    if rounded_at is not None:
        rows[rounded_at] = str(2 ** 53 + 2 * rounded_at + 1)
    return rows


@pytest.mark.parametrize("batch_rows", [7, 16, 17, 50])
def test_many_batches_and_pieces_exact_integers_read_exactly(tmp_path, batch_rows):
    rows = _many_rows()
    values = _read(tmp_path, "many.csv", "s\n" + "\n".join(rows) + "\n", batch_rows)
    assert values == [float(r) for r in rows]


@pytest.mark.parametrize("batch_rows", [7, 16, 17, 50])
@pytest.mark.parametrize("at", [1, 15, 16, 37, 49])
def test_many_batches_and_pieces_rounded_integer_refused_at_its_row(tmp_path, batch_rows, at):
    # (a batch of integers alone is read as exact int64: nothing rounded there)
    rows = _many_rows(at)
    first = at // batch_rows * batch_rows
    if any(i % 5 == 0 for i in range(first, min(first + batch_rows, 50))):
        with pytest.raises(DataFileError, match=f"'s'.*integer {rows[at]} at row {at},"):
            _read(tmp_path, "many.csv", "s\n" + "\n".join(rows) + "\n", batch_rows)
    else:
        values = _read(tmp_path, "many.csv", "s\n" + "\n".join(rows) + "\n", batch_rows)
        assert values[at] == int(rows[at]) and type(values[at]) is int


def test_cli_joined_batches_name_the_files_row(tmp_path, monkeypatch):
    # the CLI reads in batches and joins them: batch 1 (rows 0-2) holds a decimal, batch 2
    # (rows 3-5) integers only, 9007199254740993 at the file's row 4 (kills starts taken
    # as the batch's end)
    from fastbias import cli
    monkeypatch.setattr(cli, "CSV_CHUNK_ROWS", 3)
    p = tmp_path / "j.csv"
    p.write_text("s\n0.5\n0.25\n0.125\n1\n%d\n3\n" % B)
    with pytest.raises(DataFileError, match=r"'s'.*9007199254740993 at row 4,"):
        cli._read_data(str(p), ["s"])


def test_cli_json_lines_feature_of_integers_beyond_2_53_not_merged(tmp_path):
    # A JSON-lines sensitive feature 'g' holding
    # 9007199254740993 (6 rows), 9007199254740992 (6 rows) and 0.5 (6 rows): pandas reads the
    # column as float64 (0.5 is a decimal), so 9007199254740993 becomes 9007199254740992 and
    # the report shows g=9007199254740992 with 12 rows, silently. Right: three groups of 6
    # (or a refusal naming 'g' and the integer, as a score column gets). Cause:
    # _WrittenIntegers.__init__ drops text_columns from its check, but in JSON lines a
    # "text" column is read by pandas as numbers (only CSV reads it as text).
    from fastbias import cli
    rows = [(1, 0.9, B), (0, 0.1, B - 1), (1, 0.8, 0.5),
            (0, 0.3, B), (1, 0.7, B - 1), (0, 0.2, 0.5)] * 3
    path = tmp_path / "f.jsonl"
    path.write_text("".join('{"y":%d,"s":%s,"g":%s}\n' % r for r in rows))
    out = tmp_path / "o.csv"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = cli.main(["report", str(path), "--label", "y", "--scores", "s",
                       "--sensitive-features", "g", "--out", str(out), "--quiet"])
    if rc != 0:  # a refusal is right too
        return
    table = pd.read_csv(out, dtype={"subgroup": str})
    sizes = dict(zip(table["subgroup"], table["subgroup_size"]))
    assert sizes == {"g=0.5": 6, "g=9007199254740992": 6, "g=9007199254740993": 6}, sizes


# ------------------------------------------------------------ parquet: files of a location

def _parquet(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"s": [0.5]}).to_parquet(path)
    return str(path)


def test_glob_star_does_not_reach_files_in_folders(tmp_path):
    # as a shell: "d/*" is d's own entries, not d/sub/b.parquet (kills a pattern that ends
    # before the path counted as a match)
    a = _parquet(tmp_path / "d" / "a.parquet")
    _parquet(tmp_path / "d" / "sub" / "b.parquet")
    _, files = pqmod.parquet_files(str(tmp_path / "d" / "*"))
    assert files == [a]
    _, files = pqmod.parquet_files(str(tmp_path / "d" / "sub"))
    assert files == [str(tmp_path / "d" / "sub" / "b.parquet")]


def test_directory_below_an_underscore_folder_is_read(tmp_path):
    # only names BELOW the directory given are skipped: a directory that itself lies in
    # "_runs" or ".cache" gives its files
    for top in ("_runs", ".cache"):
        a = _parquet(tmp_path / top / "scored" / "a.parquet")
        _, files = pqmod.parquet_files(str(tmp_path / top / "scored"))
        assert files == [a], top
        _, files = pqmod.parquet_files(str(tmp_path / top / "scored" / "*.parquet"))
        assert files == [a], top


def test_glob_files_sorted_by_path(tmp_path):
    # the docs: sorted. os.walk lists a folder's own files before its subfolders': b.parquet
    # before a/x.parquet; sorted is a/x.parquet, b.parquet
    b = _parquet(tmp_path / "d" / "b.parquet")
    x = _parquet(tmp_path / "d" / "a" / "x.parquet")
    _, files = pqmod.parquet_files(str(tmp_path / "d" / "**" / "*.parquet"))
    assert files == sorted([b, x]) == [x, b]


# ------------------------------------------------------------ synthetic: argument checks

def test_make_jigsaw_like_boundaries_accepted():
    # the least rows and identities, a range of one share, a range up to the annotated share,
    # every row annotated: all valid
    assert len(fastbias.make_jigsaw_like(n_rows=1, n_identities=0, random_state=0)) == 1
    df = fastbias.make_jigsaw_like(n_rows=50, n_identities=2, random_state=0,
                                   identity_fraction_range=(0.01, 0.01))
    assert len(df) == 50
    df = fastbias.make_jigsaw_like(n_rows=50, n_identities=2, random_state=0,
                                   annotated_fraction=0.25, identity_fraction_range=(0.1, 0.25))
    assert len(df) == 50
    df = fastbias.make_jigsaw_like(n_rows=50, n_identities=2, random_state=0,
                                   annotated_fraction=1, identity_fraction_range=(0.1, 1.0))
    assert len(df) == 50 and not df["male"].isna().any()


@pytest.mark.parametrize("kwargs, name", [
    (dict(n_rows=0), "n_rows"), (dict(n_rows=True), "n_rows"), (dict(n_rows=10.0), "n_rows"),
    (dict(n_identities=-1), "n_identities"), (dict(n_identities=False), "n_identities"),
    (dict(toxic_fraction=0), "toxic_fraction"), (dict(toxic_fraction=1), "toxic_fraction"),
    (dict(toxic_fraction=True), "toxic_fraction"), (dict(toxic_fraction="x"), "toxic_fraction"),
    (dict(toxic_fraction=float("nan")), "toxic_fraction"),
    (dict(annotated_fraction=0), "annotated_fraction"),
    (dict(annotated_fraction=True), "annotated_fraction"),
    (dict(annotated_fraction=1.5), "annotated_fraction"),
    (dict(identity_fraction_range=(0, 0.01)), "identity_fraction_range"),
    (dict(identity_fraction_range=(0.02, 0.01)), "identity_fraction_range"),
    (dict(annotated_fraction=0.25, identity_fraction_range=(0.1, 0.3)),
     "identity_fraction_range"),
    (dict(bias_shift=float("inf")), "bias_shift"),
])
def test_make_jigsaw_like_refuses_by_name(kwargs, name):
    with pytest.raises(ValueError, match=name):
        fastbias.make_jigsaw_like(**{"n_rows": 50, "n_identities": 2, "random_state": 0,
                                     **kwargs})


def test_make_jigsaw_like_refuses_a_string_of_identities():
    with pytest.raises(TypeError, match="biased_identities"):
        fastbias.make_jigsaw_like(n_rows=50, n_identities=2, biased_identities="male")


# ------------------------------------------------------------ sklearn: predicted classes

def _text_model():
    from sklearn.linear_model import LogisticRegression
    rng = np.random.default_rng(3)
    X = pd.DataFrame({"x": rng.normal(size=60)})
    y = np.where(X.x + rng.normal(size=60) > 0, "yes", "no")
    return LogisticRegression().fit(X, y), X, y


def test_positive_class_scores_predict_text_classes_default_second_class():
    # classes_ ['no', 'yes']: without pos_label the positive class is the second, 'yes':
    # scores are 1.0 where 'yes' is predicted (hand indicator of the predictions)
    pytest.importorskip("sklearn")
    from fastbias.sklearn import positive_class_scores
    model, X, _ = _text_model()
    assert list(model.classes_) == ["no", "yes"]
    pred = model.predict(X)
    want = [1.0 if p == "yes" else 0.0 for p in pred]
    got = positive_class_scores(model, X, response_method="predict")
    assert [float(v) for v in got] == want
    got = positive_class_scores(model, X, response_method="predict", pos_label="no")
    assert [float(v) for v in got] == [1.0 - w for w in want]


class _Labeller:
    """predicts text classes but has no classes_ (not a fitted sklearn classifier)"""

    def predict(self, X):
        return np.where(np.asarray(X)[:, 0] > 0, "yes", "no")


def test_positive_class_scores_predict_without_classes_uses_pos_label():
    from fastbias.sklearn import positive_class_scores
    X = np.array([[1.0], [-1.0], [2.0]])
    got = positive_class_scores(_Labeller(), X, response_method="predict", pos_label="yes")
    assert [float(v) for v in got] == [1.0, 0.0, 1.0]


def test_all_missing_labels_with_pos_label_stay_an_error():
    # a fold of missing labels is no one-class fold: the labels' own error, never a NaN
    from fastbias.sklearn import bias_score
    with pytest.raises(ValueError):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bias_score(np.array([None] * 4, dtype=object), [.1, .2, .3, .4],
                       subgroups={"g": [1, 1, 0, 0]}, pos_label="yes")


# ------------------------------------------------------------ categories: pyarrow dictionaries

def _arrow_dict(values, value_type):
    pa = pytest.importorskip("pyarrow")
    return pd.Series(pd.array(values, dtype=pd.ArrowDtype(pa.dictionary(pa.int8(), value_type))))


def test_arrow_dictionary_of_booleans_with_threshold_is_one_membership():
    # rows 0, 3, 5 hold True: with a subgroup threshold the column is one membership 'g' of
    # 3 rows (as a Categorical of booleans is); without one, one subgroup per value
    import pyarrow as pa
    y = np.array([0, 1, 0, 1, 0, 1])
    s = np.array([.1, .2, .3, .4, .5, .6])
    col = _arrow_dict([True, False, None, True, False, True], pa.bool_())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = fastbias.bias_metrics(y, s, {"g": col}, subgroup_threshold=0.5)
        assert dict(zip(t.index, t.subgroup_size.astype(int))) == {"g": 3}
        t = fastbias.bias_metrics(y, s, {"g": col})
    assert dict(zip(t.index, t.subgroup_size.astype(int))) == {"g=False": 2, "g=True": 3}


def test_arrow_dictionary_of_decimals_exact_or_named_error():
    # a dictionary<decimal128> column (Parquet's dictionary-encoded decimals) with a
    # threshold: the membership 'g' of rows 0, 3, 5 (is_categorical counts decimals as
    # numbers), or a ValueError/TypeError naming 'g'. (The review first saw pyarrow's bare
    # "DictionaryArray converter ... not implemented": raised by pd.array building such a
    # column, not by fastbias.)
    import decimal

    import pyarrow as pa
    D = decimal.Decimal
    y = np.array([0, 1, 0, 1, 0, 1])
    s = np.array([.1, .2, .3, .4, .5, .6])
    col = pd.Series(pd.arrays.ArrowExtensionArray(
        pa.array([D(1), D(0), None, D(1), D(0), D(1)], pa.decimal128(5, 0)).dictionary_encode()))
    assert col.dtype.pyarrow_dtype.value_type == pa.decimal128(5, 0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = fastbias.bias_metrics(y, s, {"g": col}, subgroup_threshold=0.5)
    except (ValueError, TypeError) as exc:
        assert "'g'" in str(exc), exc
        return
    assert dict(zip(t.index, t.subgroup_size.astype(int))) == {"g": 3}


def test_directory_with_two_links_back_up_is_walked_once(tmp_path):
    # d holds a.parquet, sub/b.parquet and two links to itself: each folder walked once,
    # the 2 files listed once, at once (walking on through the links is 2**40 folders
    # before the system's link limit). Run in a child process, timed out at 60 s.
    import subprocess
    import textwrap
    d = tmp_path / "d"
    a = _parquet(d / "a.parquet")
    b = _parquet(d / "sub" / "b.parquet")
    os.symlink(str(d), str(d / "up1"))
    os.symlink(str(d), str(d / "sub" / "up2"))
    code = textwrap.dedent(f"""
        from fastbias.validate.parquet import parquet_files
        print(parquet_files({str(d)!r})[1])
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == repr([a, b])


# ------------------------------------------------------------ names made visible; the CLI

def test_visible_escapes_by_hand():
    from fastbias.validate.errors import listed, visible
    assert visible("a\x85b\u2028c\u2029d\u061ce\u202ef\nf") == \
        "a\\x85b\\u2028c\\u2029d\\u061ce\\u202ef\\x0af"
    # keep_newlines keeps "\n" alone: the Unicode separators are escaped still
    assert visible("a\nb\u2028c\u2029d\x0be", keep_newlines=True) == \
        "a\nb\\u2028c\\u2029d\\x0be"
    assert listed(["x\ny", "z"], 1) == "x\\x0ay; ... 1 more"


def test_cli_status_line_naming_an_output_with_a_newline_stays_one_line(tmp_path, capsys):
    # "wrote <path>": the path's newline would forge a line "fastbias: done" of its own;
    # shown as the escape \\x0a instead
    from fastbias import cli
    data = tmp_path / "d.csv"
    data.write_text("y,s,g\n" + "".join(f"{i % 2},{i / 10},{i % 3 == 0}\n" for i in range(10)))
    out = str(tmp_path / "o\nfastbias: done.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = cli.main(["report", str(data), "--label", "y", "--scores", "s", "--subgroups", "g",
                       "--out", out])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "\nfastbias: done" not in err and "o\\x0afastbias: done" in err, err


def test_demo_seed_help_says_it_seeds_the_data():
    from fastbias import cli
    demo = next(a for a in cli.build_parser()._actions
                if getattr(a, "choices", None) and "demo" in a.choices).choices["demo"]
    seed = next(a for a in demo._actions if "--seed" in a.option_strings)
    assert "generated data" in seed.help and "bootstrap" in seed.help


def test_file_reached_twice_by_a_link_is_listed_once(tmp_path):
    # d/b.parquet is a link to d/a.parquet: one real file, its rows read once
    d = tmp_path / "d"
    a = _parquet(d / "a.parquet")
    os.symlink(a, str(d / "b.parquet"))
    _, files = pqmod.parquet_files(str(d))
    assert files == [a]


# ------------------------------------------------------------ memberships: the warning

@pytest.mark.parametrize("entry", ["bias_metrics", "BiasEvaluator"])
def test_feature_missing_on_every_row_warned_once_at_the_callers_line(entry):
    # 'h' is missing on every row: one warning naming it, pointing at this file (the
    # caller's line), as a warning of the user's input should
    n = 40
    y = np.array([True, True, False, False] * (n // 4))
    s = np.linspace(0, 1, n)
    frame = pd.DataFrame({"f": ["a", "b"] * (n // 2),
                          "h": pd.Categorical([None] * n, categories=["p", "q"])})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if entry == "bias_metrics":
            fastbias.bias_metrics(y, s, frame)
        else:
            fastbias.BiasEvaluator(y, frame).metrics(s)
    about = [w for w in caught if "'h'" in str(w.message)]
    assert len(about) == 1, [str(w.message) for w in caught]
    assert os.path.samefile(about[0].filename, __file__), about[0].filename


def test_final_metric_warning_counts_the_names_left_out():
    # every label 0: each of 5 subgroups' 3 AUCs undefined, 15 entries; the warning shows
    # 12 and says "... 3 more"
    from fastbias.sklearn import bias_score
    groups = {f"g{k}": [(i >> k) & 1 for i in range(32)] for k in range(5)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = bias_score([0] * 32, np.linspace(0, 1, 32), subgroups=groups)
    assert np.isnan(value)
    text = " ".join(str(w.message) for w in caught)
    assert "15 per-subgroup AUC(s) undefined" in text, text
    assert text.count(" (subgroup_auc)") + text.count(" (bpsn_auc)") \
        + text.count(" (bnsp_auc)") == 12, text
    assert ", ... 3 more" in text, text
