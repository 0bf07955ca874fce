"""Bad Parquet files are errors that name the file, on both out-of-core paths.

``fastbias.evaluate_parquet`` (streaming) and ``fastbias.dask.evaluate`` given
paths read files through ``fastbias.validate.parquet``: every footer is checked
first, a type that differs between files names both, and a read error names the
file and the rows. Dask runs here on its local threaded scheduler (no cluster:
seconds); tests/test_dask.py runs the same code on a LocalCluster.
"""
import os

import numpy as np
import pandas as pd
import pytest

import fastbias

from . import cli_runner

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
dd = pytest.importorskip("dask.dataframe")
fdask = pytest.importorskip("fastbias.dask")
from fastbias.streaming import evaluate_parquet  # noqa: E402

SUBGROUPS = ["male", "female", "black"]
ARGS = dict(label="toxicity", scores="score", subgroups=SUBGROUPS)


def frame(seed: int, n: int = 2_000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "toxicity": (rng.random(n) < 0.3).astype(np.float32),
        "male": rng.random(n) < 0.2, "female": rng.random(n) < 0.2,
        "black": np.where(rng.random(n) < 0.1, np.nan, rng.random(n) < 0.3),
        "score": np.round(rng.random(n), 2).astype(np.float32)})


def write(df: pd.DataFrame, path, **options):
    options.setdefault("row_group_size", 500)
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path, **options)


@pytest.fixture
def files(tmp_path):
    """Four good files; a test spoils one of them."""
    paths = []
    for k in range(4):
        path = tmp_path / f"part{k}.parquet"
        write(frame(k), path)
        paths.append(path)
    return paths


def both_paths(source, **kwargs):
    """Run the streaming path and the Dask path on ``source``; return both results."""
    args = {**ARGS, **kwargs}
    return (evaluate_parquet(source, bucket_rows=1_500, **args),
            fdask.evaluate(source, piece_rows=1_000, npartitions=3, **args))


ENTRY_POINTS = {
    "streaming": lambda source, **kw: evaluate_parquet(source, bucket_rows=1_500, **{**ARGS, **kw}),
    "dask": lambda source, **kw: fdask.evaluate(source, piece_rows=1_000, **{**ARGS, **kw}),
}


@pytest.fixture(params=list(ENTRY_POINTS))
def run(request):
    return ENTRY_POINTS[request.param]


def test_directory_glob_and_list_equal_in_memory(files, tmp_path):
    reference = fastbias.evaluate(pd.concat([pd.read_parquet(p) for p in files]), **ARGS)
    for source in (tmp_path, str(tmp_path / "part*.parquet"), [str(p) for p in files]):
        for result in both_paths(source):
            pd.testing.assert_frame_equal(result.table, reference.table, check_exact=True)
    pieces = fdask.evaluate(files, piece_rows=1_000, **ARGS, compute=False)
    assert type(pieces).__name__ == "Delayed"


def test_which_files_a_directory_and_a_glob_give(tmp_path):
    """A directory gives its *.parquet files at any depth but those in a file or folder named
    ``.*`` or ``_*`` (as pd.read_parquet: a Spark attempt's ``_temporary`` copy is not read
    twice); a glob's ``*`` stays within one folder, ``**`` reaches any depth."""
    from fastbias.validate.parquet import parquet_files

    layout = ["a.parquet", "sub/b.parquet", "sub/deeper/c.parquet", "_temporary/0/a.parquet",
              ".a.parquet", "sub/_SUCCESS.parquet", "sub/.hidden/d.parquet", "notes.txt"]
    for name in layout:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"")

    def found(source):
        return sorted(os.path.relpath(p, tmp_path) for p in parquet_files(source)[1])

    assert found(tmp_path) == ["a.parquet", "sub/b.parquet", "sub/deeper/c.parquet"]
    assert found(str(tmp_path / "*.parquet")) == ["a.parquet"]
    assert found(str(tmp_path / "*" / "*.parquet")) == ["sub/b.parquet"]
    assert found(str(tmp_path / "**" / "*.parquet")) == ["a.parquet", "sub/b.parquet",
                                                         "sub/deeper/c.parquet"]
    assert found(str(tmp_path / ".*.parquet")) == [".a.parquet"]  # (asked for by name)
    assert found(str(tmp_path / "_temporary" / "*" / "*.parquet")) == ["_temporary/0/a.parquet"]
    only = tmp_path / "uncommitted"
    (only / "_temporary").mkdir(parents=True)
    (only / "_temporary" / "a.parquet").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match="names starting with '.' or '_' are skipped"):
        parquet_files(only)
@pytest.mark.parametrize("heavy_share", [1.0, 0.9, 0.0])
def test_partition_boundaries_from_the_sample_with_heavy_ties(heavy_share):
    """One score for every row, one score for 90% of them, or none: still exact."""
    rng = np.random.default_rng(4)
    df = frame(6, 3_000)
    df["score"] = np.where(rng.random(3_000) < heavy_share, np.float32(0.5), df["score"])
    reference = fastbias.evaluate(df, **ARGS)
    for npartitions in (1, 3, 16):
        result = fdask.evaluate(dd.from_pandas(df, npartitions=3), **ARGS,
                                npartitions=npartitions)
        pd.testing.assert_frame_equal(result.table, reference.table, check_exact=True)


def test_truncated_file_is_named(run, files):
    data = files[2].read_bytes()
    files[2].write_bytes(data[:-200])
    with pytest.raises((OSError, ValueError), match=rf"footer of {files[2]}.*truncated"):
        run(files[0].parent)


def test_corrupt_page_is_named_with_its_rows(run, files):
    write(frame(2), files[2], compression="none", write_page_checksum=True)
    data = bytearray(files[2].read_bytes())
    middle = len(data) // 3
    data[middle:middle + 64] = bytes(64)  # zero a run of bytes inside the column chunks
    files[2].write_bytes(bytes(data))
    with pytest.raises((OSError, ValueError), match=rf"could not read .*{files[2]}"):
        run(files[0].parent)


def test_missing_column_names_the_file(run, files):
    write(frame(1).drop(columns="black"), files[1])
    with pytest.raises(KeyError, match=rf"subgroups: column\(s\) \['black'\] not in the "
                                       rf"Parquet file {files[1]}"):
        run(files[0].parent)


def test_score_type_drift_names_both_files(run, files):
    df = frame(3)
    df["score"] = df["score"].astype(np.float64)
    write(df, files[3])
    with pytest.raises(TypeError, match=rf"score column 'score' is float32 in {files[0]} but "
                                        rf"number in {files[3]}"):
        run(files[0].parent)


def test_label_type_drift_names_both_files(run, files):
    df = frame(1)
    df["toxicity"] = df["toxicity"] > 0.5
    write(df, files[1])
    with pytest.raises(TypeError, match=rf"label column 'toxicity' is float32 in {files[0]} "
                                        rf"but boolean in {files[1]}"):
        run(files[0].parent)


@pytest.mark.parametrize("statistics", [True, False])
@pytest.mark.parametrize("dtype,bad", [(np.float32, 2.0), (np.float16, 2.0), (np.float16, -0.5)])
def test_labels_outside_0_1_are_refused_with_the_file(run, files, statistics, dtype, bad):
    # float16 statistics come from pyarrow as two raw bytes: they are decoded
    df = frame(2)
    df["toxicity"] = df["toxicity"].astype(dtype)
    df.loc[1_234, "toxicity"] = bad
    write(df, files[2], write_statistics=statistics)
    # with statistics: from the footer, naming the row group (rows 1000..1499);
    # without: when the rows are read, naming the rows read
    where = r"row group 2, rows 1000\.\.1499 of" if statistics else r"rows .* of"
    with pytest.raises(ValueError, match=rf"label column 'toxicity' .*outside \[0, 1\].*"
                                         rf"{where} {files[2]}"):
        run(files[0].parent)


def test_fractional_labels_need_a_threshold(run, files):
    df = frame(0)
    df.loc[7, "toxicity"] = 0.25
    write(df, files[0])
    with pytest.raises(ValueError, match=rf"label column 'toxicity' is not binary.*0\.25 at "
                                         rf"(position|row) 7.*{files[0]}"):
        run(files[0].parent, label_threshold=None)
    result = run(files[0].parent)  # 0.25 < 0.5: a negative under the default threshold
    assert np.isfinite(result.table["subgroup_auc"]).all()


def test_bad_sources_are_named(files, tmp_path):
    with pytest.raises(FileNotFoundError, match="no file matches the pattern"):
        fdask.evaluate(str(tmp_path / "nothing*.parquet"), **ARGS)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        fdask.evaluate(str(tmp_path / "absent.parquet"), **ARGS)
    with pytest.raises(TypeError, match="data must be a dask.dataframe.DataFrame or Parquet "
                                        "paths, got a pandas DataFrame"):
        fdask.evaluate(pd.read_parquet(files[0]), **ARGS)
    with pytest.raises(TypeError, match="data must be a dask.dataframe.DataFrame or Parquet "
                                        "paths, got int"):
        fdask.evaluate(3, **ARGS)
    with pytest.raises(FileNotFoundError, match="temp_dir .* is not an existing directory"):
        evaluate_parquet(files[0], **ARGS, temp_dir=tmp_path / "no" / "such")


# ----------------------------------------------------------- labels {0, 1, 2}: every path says so

def labels_with_a_two(tmp_path):
    df = frame(5, 600)
    df.loc[321, "toxicity"] = 2.0
    path = tmp_path / "two.parquet"
    write(df, path, write_statistics=False)
    df.to_csv(tmp_path / "two.csv", index=False)
    return df, path


LABEL_PATHS = {
    "arrays": lambda df, path: fastbias.bias_metrics(
        df["toxicity"].to_numpy(), df["score"].to_numpy(), df[["male", "female"]]),
    "arrays with threshold": lambda df, path: fastbias.bias_metrics(
        df["toxicity"].to_numpy(), df["score"].to_numpy(), df[["male", "female"]],
        label_threshold=0.5),
    "DataFrame": lambda df, path: fastbias.evaluate(df, **ARGS),
    "DataFrame, threshold None": lambda df, path: fastbias.evaluate(df, **ARGS,
                                                                    label_threshold=None),
    "evaluator": lambda df, path: fastbias.BiasEvaluator(
        df["toxicity"].to_numpy(), df[["male", "female"]], label_threshold=0.5),
    "streaming": lambda df, path: evaluate_parquet(path, **ARGS),
    "dask paths": lambda df, path: fdask.evaluate(path, **ARGS),
    "dask DataFrame": lambda df, path: fdask.evaluate(dd.read_parquet(path), **ARGS),
    "dask, threshold None": lambda df, path: fdask.evaluate(dd.from_pandas(df, npartitions=2),
                                                            **ARGS, label_threshold=None),
}


@pytest.mark.parametrize("entry", list(LABEL_PATHS))
def test_a_label_of_2_is_refused_on_every_path(entry, tmp_path):
    df, path = labels_with_a_two(tmp_path)
    # a file's pieces name the file's row; a DataFrame's, its position (in a Dask partition:
    # the partition's, which the message names)
    with pytest.raises(ValueError, match=r"(outside \[0, 1\]|not binary).*2\.0 at "
                                         r"(position|row) \d+"):
        LABEL_PATHS[entry](df, path)


def test_a_label_of_2_is_refused_by_the_cli(tmp_path):
    _, path = labels_with_a_two(tmp_path)
    for data in (path, tmp_path / "two.csv"):
        done = cli_runner.run_cli(["report", data, "--label", "toxicity", "--scores", "score",
                                   "--subgroups", "male", "female", "--out",
                                   tmp_path / "r.html"])
        assert done.returncode != 0
        assert "outside [0, 1]" in done.stderr and "2.0 at position 321" in done.stderr
        assert not (tmp_path / "r.html").exists()


def test_out_of_core_messages_name_the_rows_of_the_file(tmp_path):
    """A bad value deep in a file is named by its row in the file (0-based, as the batch's
    'in rows a..b' range), not by its position within the batch or piece read."""
    df = frame(5, 1_200)
    df.loc[737, "score"] = np.inf
    path, csv = tmp_path / "s.parquet", tmp_path / "s.csv"
    write(df, path, write_statistics=False)  # row groups of 500
    df.to_csv(csv, index=False)
    calls = {
        "csv": lambda: fastbias.evaluate_csv(csv, **ARGS, batch_rows=100),
        "parquet": lambda: fastbias.evaluate_parquet(path, **ARGS, batch_rows=100),
        "dask pieces": lambda: fdask.evaluate(path, piece_rows=300, **ARGS),
    }
    for name, call in calls.items():
        with pytest.raises(ValueError, match=r"score column 'score' has 0 NaN and 1 infinite "
                                             r"value\(s\) \(first at row 737\)"):
            call()
    with pytest.raises(ValueError, match=r"\(first at position 737\)"):  # in memory: position
        fastbias.evaluate(df, **ARGS)
    # the sensitive features' pass reads the labels first: a bad one is named by its row too
    df.loc[737, "score"] = 0.5
    df["toxicity"] = df["toxicity"].astype(np.float64)
    df.loc[738, "toxicity"] = 7.0
    df["race"] = np.where(np.arange(len(df)) % 3 == 0, "a", "b")
    write(df, path, write_statistics=False)
    df.to_csv(csv, index=False)
    features = dict(label="toxicity", scores="score", sensitive_features=["race"])
    for call in (lambda: fastbias.evaluate_csv(csv, **features, batch_rows=100),
                 lambda: fdask.evaluate(path, piece_rows=300, **features)):
        with pytest.raises(ValueError, match=r"7\.0 at row 738\).*\(in .*rows .*s\."):
            call()
