"""``fastbias.dask.evaluate`` on a real ``dask.distributed.LocalCluster``.

Two worker processes on loopback, started and stopped by this module. The
reference is the in-memory ``fastbias.evaluate`` (itself tested against the
brute force, sklearn and scipy) and, on small data, the brute force of
tests/reference.py. Unweighted counts are integers, so the metrics must agree
bit for bit; weighted sums are added in another order, hence 1e-12.
"""
import re
import warnings

import dask
import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias import UndefinedMetricWarning

from .reference import brute_force_metrics, pair_probability

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
fdask = pytest.importorskip("fastbias.dask")

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
TOL = 1e-12


def quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        warnings.simplefilter("ignore", UserWarning)  # Dask's "large graph" notice
        return function(*args, **kwargs)


def assert_same_result(result, reference, exact):
    tol = {} if exact else {"rtol": TOL, "atol": TOL}
    pd.testing.assert_frame_equal(result.table, reference.table, check_exact=exact, **tol)
    pd.testing.assert_series_equal(result.overall_auc, reference.overall_auc, check_exact=exact,
                                   **tol)


@pytest.fixture(scope="module")
def jigsaw():
    """Jigsaw-like rows: NaN identities, heavy ties (two-decimal scores) spread over partitions."""
    df = fastbias.make_jigsaw_like(n_rows=40_000, n_identities=4, random_state=7,
                                   score_decimals=2)
    df["weight"] = np.random.default_rng(8).integers(1, 17, len(df)) / 4.0
    df["model_int"] = np.random.default_rng(9).integers(0, 5, len(df))  # five scores only
    return df


@pytest.mark.parametrize("missing_subgroup,weighted,models",
                         [("background", False, ["model_fair", "model_biased", "model_int"]),
                          ("exclude", True, ["model_biased", "model_int"])])
def test_cluster_equals_in_memory_evaluate(client, jigsaw, missing_subgroup, weighted, models):
    kwargs = dict(label="toxicity", scores=models, subgroups=list(jigsaw.columns[1:5]),
                  missing_subgroup=missing_subgroup, sample_weight="weight" if weighted else None)
    ddf = dd.from_pandas(jigsaw, npartitions=7)
    result = quiet(fdask.evaluate, ddf, npartitions=12, **kwargs)
    reference = quiet(fastbias.evaluate, jigsaw, **kwargs)
    assert_same_result(result, reference, exact=not weighted)
    assert result.settings["engine"] == "dask"


@pytest.mark.parametrize("missing_subgroup,weighted", [("background", False), ("exclude", True)])
def test_cluster_intersections_equal_in_memory_evaluate(client, jigsaw, tmp_path,
                                                        missing_subgroup, weighted):
    """The pairs and triples (chosen over all partitions) and their numbers, from a Dask
    DataFrame and from Parquet files, equal fastbias.evaluate(intersections=3)."""
    kwargs = dict(label="toxicity", scores=["model_biased", "model_int"],
                  subgroups=list(jigsaw.columns[1:5]), missing_subgroup=missing_subgroup,
                  sample_weight="weight" if weighted else None, intersections=3,
                  min_subgroup_size=2)
    reference = quiet(fastbias.evaluate, jigsaw, **kwargs)
    chosen = reference.for_model("model_int").attrs["intersections"]
    assert len(chosen) >= 3 and all(" & " in name for name in chosen)
    for k in range(3):
        jigsaw.iloc[k::3].to_parquet(tmp_path / f"part-{k}.parquet", index=False)
    for data in (dd.from_pandas(jigsaw, npartitions=7), str(tmp_path)):
        result = quiet(fdask.evaluate, data, npartitions=9, **kwargs)
        assert_same_result(result, reference, exact=not weighted)
        assert result.for_model("model_int").attrs == reference.for_model("model_int").attrs
        assert result.final_metric().equals(reference.final_metric())


def test_empty_partitions_and_given_divisions(client, jigsaw):
    ddf = dd.from_pandas(jigsaw, npartitions=5)
    # scores have two decimals: (0.001, 0.009) and others hold no row at all
    divisions = [0.0, 0.001, 0.009, 0.02, 0.0201, 0.5, 0.5001, 0.93, 1.0]
    ranged = ddf[["model_fair"]].set_index("model_fair", divisions=divisions)
    sizes = ranged.map_partitions(len).compute().tolist()
    assert 0 in sizes and sum(sizes) == len(jigsaw)
    subgroups = list(jigsaw.columns[1:5])
    result = quiet(fdask.evaluate, ddf, label="toxicity", scores="model_fair",
                   subgroups=subgroups, divisions=divisions)
    reference = quiet(fastbias.evaluate, jigsaw, label="toxicity", scores="model_fair",
                      subgroups=subgroups)
    assert_same_result(result, reference, exact=True)


def test_small_data_equals_brute_force(client):
    rng = np.random.default_rng(12)
    n = 300
    df = pd.DataFrame({"y": rng.random(n) < 0.4,
                       "s": rng.integers(0, 6, n).astype(np.float32) / 5,
                       "a": rng.random(n) < 0.3,
                       "b": np.where(rng.random(n) < 0.2, np.nan, rng.random(n) < 0.4),
                       "w": rng.integers(0, 9, n) / 8.0})
    ddf = dd.from_pandas(df, npartitions=9)
    result = fdask.evaluate(ddf, label="y", scores="s", subgroups=["a", "b"],
                            missing_subgroup="exclude", npartitions=6, sample_weight="w")
    table = result.for_model("s")
    y, s, w = df["y"].to_numpy(), df["s"].to_numpy(), df["w"].to_numpy()
    for name in ["a", "b"]:
        kept = ~df[name].isna().to_numpy()
        member = df[name].to_numpy() == 1
        expected = brute_force_metrics(y[kept], s[kept], member[kept], w[kept])
        for metric in METRICS:
            assert table.loc[name, metric] == pytest.approx(expected[metric], abs=TOL)
    assert result.overall_auc["s"] == pytest.approx(pair_probability(s[y], s[~y], w[y], w[~y]),
                                                    abs=TOL)


@pytest.mark.jit_heavy
def test_more_than_64_subgroups(client):
    """Memberships travel as 64-bit words; 70 subgroups need two words per row."""
    rng = np.random.default_rng(13)
    n, k = 3_000, 70
    data = {f"g{j}": np.where(rng.random(n) < 0.2, np.nan, rng.random(n) < 0.1)
            for j in range(k)}
    df = pd.DataFrame({"y": rng.random(n) < 0.3, "s": np.round(rng.random(n), 2), **data})
    subgroups = [f"g{j}" for j in range(k)]
    result = quiet(fdask.evaluate, dd.from_pandas(df, npartitions=3), label="y", scores="s",
                   subgroups=subgroups, missing_subgroup="exclude", npartitions=4)
    reference = quiet(fastbias.evaluate, df, label="y", scores="s", subgroups=subgroups,
                      missing_subgroup="exclude")
    assert_same_result(result, reference, exact=True)


def test_divisions_that_miss_scores_are_refused(client, jigsaw):
    ddf = dd.from_pandas(jigsaw, npartitions=4)
    with pytest.raises(RuntimeError, match="overlap in score"):
        fdask.evaluate(ddf, label="toxicity", scores="model_fair", subgroups=["male"],
                       divisions=[0.2, 0.5, 0.8])


@pytest.mark.parametrize("divisions, error, match", [
    ([0.5], ValueError, r"divisions must hold at least two distinct score boundaries"),
    ([], ValueError, r"at least two distinct"),
    ("abc", TypeError, r"divisions must be a sequence of numbers.*'abc'"),
    (5, TypeError, r"divisions must be a sequence of numbers.*5"),
    ([0.0, "x", 1.0], TypeError, r"divisions must hold numbers, got 'x' at position 1"),
    ([0.0, float("nan"), 1.0], ValueError, r"divisions must not hold NaN \(position 1\)"),
    ([0.0, 0.5, 0.5, 1.0], ValueError, r"holds 0.5 twice \(position 2\)"),
    ({"model_fair": [0.5]}, ValueError, r"divisions\['model_fair'\] must hold at least two"),
    ({"nope": [0.0, 1.0]}, ValueError, r"divisions names 'nope', which is not a model"),
])
def test_bad_divisions_are_named(divisions, error, match):
    """``divisions=`` is checked before Dask sees it: each bad value named (Dask's own
    errors were a ZeroDivisionError, "'int' object is not iterable" and the like, and a
    misspelt model in a dict was ignored; found by review)."""
    ddf = dd.from_pandas(small_frame(2_000), npartitions=2)
    with pytest.raises(error, match=match):
        fdask.evaluate(ddf, label="toxicity", scores="model_fair", subgroups=["male"],
                       divisions=divisions)

@pytest.mark.parametrize("name, value", [("compute", "no"), ("persist", "yes"),
                                         ("progress", 1), ("compute", None)])
def test_flags_must_be_booleans(name, value):
    """compute="no" was taken as true (a string is truthy) and computed; found by review."""
    ddf = dd.from_pandas(small_frame(2_000), npartitions=2)
    with pytest.raises(TypeError, match=rf"{name} must be True or False.*got {value!r}"):
        fdask.evaluate(ddf, label="toxicity", scores="model_fair", subgroups=["male"],
                       **{name: value})


def test_bad_input_is_named(client):
    df = pd.DataFrame({"y": [0, 1, 0, 1], "s": [0.1, np.nan, 0.3, 0.2], "g": [1, 0, 1, 0],
                       "text": ["a", "b", "c", "d"]})
    ddf = dd.from_pandas(df, npartitions=2)
    with pytest.raises(ValueError, match=r"score column 's' has 1 NaN.*Dask partition"):
        fdask.evaluate(ddf, label="y", scores="s", subgroups=["g"])
    with pytest.raises(KeyError, match=r"scores: column\(s\) \['t'\] not in the Dask DataFrame"):
        fdask.evaluate(ddf, label="y", scores="t", subgroups=["g"])
    with pytest.raises(TypeError, match="score column 'text' must be numeric"):
        fdask.evaluate(ddf, label="y", scores="text", subgroups=["g"])
    with pytest.raises(TypeError, match="must be a dask.dataframe.DataFrame"):
        fdask.evaluate(df, label="y", scores="s", subgroups=["g"])


# ------------------------------------------------------------------ what a cluster user meets

def small_frame(n=20_000, seed=0):
    return fastbias.make_jigsaw_like(n_rows=n, n_identities=2, random_state=seed)


SMALL = dict(label="toxicity", scores=["model_fair", "model_biased"], subgroups=["male", "female"])


def test_compute_false_gives_a_delayed_for_dask_and_distributed(client, capsys):
    df = small_frame()
    reference = quiet(fastbias.evaluate, df, **SMALL)
    lazy = quiet(fdask.evaluate, dd.from_pandas(df, npartitions=4), **SMALL, compute=False)
    assert type(lazy).__name__ == "Delayed"
    (computed,) = quiet(dask.compute, lazy)
    assert_same_result(computed, reference, exact=True)
    future = client.compute(lazy)
    distributed.progress(future, notebook=False)
    assert "100% Completed" in capsys.readouterr().out
    assert_same_result(future.result(), reference, exact=True)


def test_dask_notes_stay_out_of_the_terminal(client, capfd):
    df = small_frame()
    quiet(fdask.evaluate, dd.from_pandas(df, npartitions=4), **SMALL, progress=False)
    err = capfd.readouterr().err
    assert "distributed.shuffle" not in err and "Shuffle" not in err
    # the filter is gone afterwards: Dask's own logging is as it was
    handlers = fdask._terminal_handlers()
    assert all(fdask._QUIET not in h.filters for h in handlers)


def test_progress_bar_when_asked(client, capsys):
    quiet(fdask.evaluate, dd.from_pandas(small_frame(), npartitions=4), **SMALL, progress=True)
    assert "% Completed" in capsys.readouterr().out


def test_a_worker_killed_mid_run_gives_the_exact_result(client, caplog):
    import os
    import signal
    import threading

    df = fastbias.make_jigsaw_like(n_rows=400_000, n_identities=2, random_state=3)
    reference = quiet(fastbias.evaluate, df, **SMALL)
    ddf = dd.from_pandas(df, npartitions=16)
    victim = sorted(client.run(os.getpid).values())[0]
    killer = threading.Timer(0.4, os.kill, (victim, signal.SIGKILL))
    killer.start()
    try:
        with caplog.at_level("WARNING", logger="fastbias"):
            result = quiet(fdask.evaluate, ddf, **SMALL, progress=False)
    finally:
        killer.join()
    assert_same_result(result, reference, exact=True)
    client.wait_for_workers(2, timeout=60)  # the nanny restarts it for the next tests
    lost = [r.getMessage() for r in caplog.records if "left during the run" in r.getMessage()]
    named = [re.search(r"Dask worker (\S+) left", line).group(1) for line in lost]
    # One line per worker that left, each naming a worker that really is gone. Not "at most
    # one line": on a loaded machine (CI, 2 cores, stop 62) the nanny's restarted worker can
    # leave too before the run ends, and that is a worker lost, reported truly.
    assert len(set(named)) == len(named), lost
    assert not set(named) & set(client.scheduler_info(n_workers=-1)["workers"]), lost


class _Answers:
    """A stand-in client for ``_check_workers``: two workers, and ``replies`` (a callable)
    as every ``client.run``'s answer."""

    def __init__(self, replies):
        import types

        self.replies, self.asked = replies, 0
        self.scheduler = types.SimpleNamespace(address="tcp://scheduler:1")

    def scheduler_info(self, n_workers):
        return {"workers": {"tcp://a:1": {}, "tcp://b:2": {}}}

    def run(self, function, on_error):
        assert on_error == "return"
        self.asked += 1
        return self.replies()


def _fine():
    return {"version": fastbias.__version__, "error": None}


def _lost_lines(caplog):
    return [r.getMessage() for r in caplog.records if "left during the run" in r.getMessage()]


def test_a_worker_lost_as_it_is_asked_is_named_lost_not_unable_to_run(caplog):
    """A worker whose connection closed as it was asked whether it can import fastbias left;
    it is not a worker without fastbias (stop 62's CI: a kill at that moment was refused with
    "cannot run fastbias ... Install fastbias")."""
    from distributed.comm.core import CommClosedError

    answers = _Answers(lambda: {"tcp://a:1": CommClosedError("in <TCP (closed)>"),
                                "tcp://b:2": _fine()})
    cluster = fdask._Cluster(answers, False, 5.0, 5.0)
    with caplog.at_level("WARNING", logger="fastbias"):
        fdask._check_workers(cluster)
        cluster.worker_left("tcp://a:1")  # the watch of a later pass sees it gone: no 2nd line
    assert answers.asked == 1 and cluster.lost == {"tcp://a:1"}
    assert _lost_lines(caplog) == [
        "fastbias: the Dask worker tcp://a:1 left during the run (as it was asked whether it "
        "can import fastbias: CommClosedError); Dask redoes its work elsewhere and the result "
        "stays exact"]


def test_a_lost_worker_does_not_hide_one_that_cannot_run_fastbias():
    answers = _Answers(lambda: {"tcp://a:1": OSError("reset"),
                                "tcp://b:2": {"version": None, "error": "ImportError: no"}})
    with pytest.raises(RuntimeError, match=r"^1 of 2 Dask worker\(s\) cannot run fastbias "
                                           r"\S+: tcp://b:2: ImportError: no\. Install"):
        fdask._check_workers(fdask._Cluster(answers, False, 5.0, 5.0))


def test_every_worker_lost_as_it_is_asked_is_asked_again_until_worker_timeout(caplog):
    answers = _Answers(lambda: {"tcp://a:1": OSError("reset"), "tcp://b:2": OSError("reset")})
    with caplog.at_level("WARNING", logger="fastbias"), pytest.raises(
            RuntimeError, match=r"no Dask worker of tcp://scheduler:1 stayed connected to "
                                r"answer whether it can import fastbias within 0\.5 s"):
        fdask._check_workers(fdask._Cluster(answers, False, 0.5, 5.0))
    assert answers.asked >= 2  # asked again, then refused at the deadline
    assert len(_lost_lines(caplog)) == 2  # one line each, however often they were asked


def test_a_cluster_that_answers_after_losing_every_worker_once_runs():
    from distributed.comm.core import CommClosedError

    rounds = iter([{"tcp://a:1": CommClosedError("x"), "tcp://b:2": OSError("y")},
                   {"tcp://a:1": _fine()}])
    answers = _Answers(lambda: next(rounds))
    fdask._check_workers(fdask._Cluster(answers, False, 30.0, 5.0))
    assert answers.asked == 2


def _probe_that_ends_the_first_worker_asked(marker):
    """A worker probe under which the first worker asked exits at once (as a killed one)."""

    def probe():
        import os

        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            import fastbias

            return {"version": fastbias.__version__, "error": None}
        os._exit(1)

    probe.__module__ = "__main__"  # sent by value, as the real probe
    return probe


def test_a_worker_killed_as_it_is_asked_gives_the_exact_result(own_cluster, tmp_path, caplog,
                                                               monkeypatch):
    _, dask_client = own_cluster(n_workers=2)
    dask_client.wait_for_workers(2, timeout=60)
    df = small_frame(20_000)
    reference = quiet(fastbias.evaluate, df, **SMALL)
    monkeypatch.setattr(fdask, "_worker_probe",
                        _probe_that_ends_the_first_worker_asked(str(tmp_path / "asked")))
    with caplog.at_level("WARNING", logger="fastbias"):
        result = quiet(fdask.evaluate, dd.from_pandas(df, npartitions=4), **SMALL,
                       progress=False)
    assert_same_result(result, reference, exact=True)
    lost = _lost_lines(caplog)
    assert len(set(lost)) == len(lost)
    assert sum("as it was asked whether it can import fastbias" in line for line in lost) == 1


def test_score_dtypes_that_differ_between_files_are_named(client, tmp_path):
    df = small_frame(4_000)
    df["model_fair"] = df["model_fair"].astype(np.float32)
    df.iloc[:2_000].to_parquet(tmp_path / "a.parquet")
    wide = df.iloc[2_000:].copy()
    wide["model_fair"] = wide["model_fair"].astype(np.float64) + 1e-9
    wide.to_parquet(tmp_path / "b.parquet")
    with pytest.raises(TypeError, match=r"score column 'model_fair' is float32 in .*a\.parquet "
                                        r"but number in .*b\.parquet"):
        fdask.evaluate(str(tmp_path), **SMALL)
    ddf = dd.read_parquet([str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")])
    if ddf["model_fair"].dtype == np.float32:  # Dask took the first file's type as the meta
        with pytest.raises(TypeError, match=r"score column 'model_fair' reads as float64 in "
                                            r"Dask partition 1 but as float32"):
            quiet(fdask.evaluate, ddf, **SMALL)


@pytest.fixture
def own_cluster():
    """A cluster of its own, for tests that break its workers."""
    made = []

    def make(**kwargs):
        cluster = distributed.LocalCluster(threads_per_worker=1, processes=True,
                                           dashboard_address=None, host="127.0.0.1", **kwargs)
        made.append((cluster, distributed.Client(cluster)))
        return made[-1]

    try:
        yield make
    finally:
        for cluster, dask_client in made:
            dask_client.close()
            cluster.close()


def test_a_worker_that_cannot_import_fastbias_is_named_at_once(own_cluster, tmp_path):
    import os
    import subprocess
    import sys
    import time

    shadow = tmp_path / "shadow" / "fastbias"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('fastbias is not installed here')\n")
    cluster, dask_client = own_cluster(n_workers=1)
    env = dict(os.environ, PYTHONPATH=str(shadow.parent))
    worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker",
                               cluster.scheduler_address, "--nthreads", "1", "--no-nanny",
                               "--no-dashboard"], env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        dask_client.wait_for_workers(2, timeout=60)
        started = time.monotonic()
        with pytest.raises(RuntimeError, match=r"1 of 2 Dask worker\(s\) cannot run fastbias "
                                               r".*ImportError: fastbias is not installed here"):
            fdask.evaluate(dd.from_pandas(small_frame(2_000), npartitions=2), **SMALL)
        assert time.monotonic() - started < 30
    finally:
        worker.kill()
        worker.wait()


def test_no_worker_is_an_error_not_a_hang(own_cluster):
    import time

    own_cluster(n_workers=0)
    started = time.monotonic()
    with pytest.raises(RuntimeError, match=r"no Dask worker connected to .* within 2 s"):
        fdask.evaluate(dd.from_pandas(small_frame(2_000), npartitions=2), **SMALL,
                       worker_timeout=2)
    assert time.monotonic() - started < 30


def _pause(dask_worker):
    from distributed.core import Status

    dask_worker.memory_manager.memory_pause_fraction = False  # the monitor must not resume it
    dask_worker.status = Status.paused


def test_workers_paused_for_memory_are_an_error_not_a_hang(own_cluster):
    import time

    _, dask_client = own_cluster(n_workers=2, memory_limit="2GiB")
    dask_client.run(_pause)
    started = time.monotonic()
    with pytest.raises(RuntimeError, match=r"every Dask worker has been paused for memory for "
                                           r"2 s .*memory limit 2,048 MiB per worker"):
        fdask.evaluate(dd.from_pandas(small_frame(2_000), npartitions=2), **SMALL,
                       stall_timeout=2)
    assert time.monotonic() - started < 30


@pytest.mark.jit_heavy
def test_the_localcluster_example_of_the_docs_runs_as_written(tmp_path):
    """docs/distributed.md's LocalCluster script, run verbatim as a file (spawned workers)."""
    import re
    import subprocess
    import sys
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "distributed.md").read_text()
    section = text.split("### On one machine", 1)[1]
    script = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert 'if __name__ == "__main__":' in script
    (tmp_path / "dask_example.py").write_text(script)
    done = subprocess.run([sys.executable, "dask_example.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "bpsn_auc" in done.stdout and "other_gender" in done.stdout
    assert "Traceback" not in done.stderr and "distributed.shuffle" not in done.stderr


@pytest.mark.parametrize("subgroups", [None, []])
def test_no_identity_columns_names_both_ways(tmp_path, subgroups):
    """Out of core, no subgroups said "subgroups is required" (or "... is empty"), not that
    sensitive_features would do, as fastbias.evaluate says (found by review)."""
    df = small_frame(2_000)
    df.to_csv(tmp_path / "d.csv", index=False)
    for call in (lambda: fdask.evaluate(dd.from_pandas(df, npartitions=2), label="toxicity",
                                        scores="model_fair", subgroups=subgroups),
                 lambda: fastbias.evaluate_csv(tmp_path / "d.csv", label="toxicity",
                                               scores="model_fair", subgroups=subgroups)):
        with pytest.raises(ValueError, match=r"give subgroups or sensitive_features \(or both\)"):
            call()


@pytest.mark.parametrize("missing", ["g", "s", "y"])
def test_a_partition_lacking_a_column_is_named_with_its_position(missing):
    """Partitions of ``dd.from_delayed(..., verify_meta=False)`` may lack a column the meta
    lists: Dask's own error was a bare KeyError; now a ValueError names the column and the
    first partition that lacks it."""
    a = pd.DataFrame({"y": [0, 1] * 20, "s": np.linspace(0, 1, 40),
                      "g": [True, False, False, True] * 10})
    parts = [dask.delayed(lambda x: x)(frame) for frame in (a, a, a.drop(columns=[missing]))]
    ddf = dd.from_delayed(parts, meta=a.iloc[:0], verify_meta=False)
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(ValueError, match=rf"column '{missing}' is missing from Dask "
                                             rf"partition 2, although"):
            fdask.evaluate(ddf, label="y", scores="s", subgroups=["g"])
