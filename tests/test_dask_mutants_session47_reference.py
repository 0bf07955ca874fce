"""Mutation audit, forty-seventh session (an independent reviewer's tests): fastbias/dask.py's
cluster machinery and argument checks: ``_Cluster``, ``_check_workers``, ``_watch``,
``_compute``, ``_show_progress``, evaluate's checks of npartitions / piece_rows / persist /
timeouts, ``_checked_divisions``, ``_divisions``, ``_captured``, ``_in_order`` and
``_weights_order``.

Of 43 hand mutants, the six related existing files (tests/test_dask.py,
test_dask_cluster_reference.py, test_dask_messages_reference.py,
test_dask_mutants_session43_reference.py, test_dask_session36_reference.py,
test_late_changes_review.py) killed 13 (one of them, the stall timer restarted on every
look, by hanging test_workers_paused_for_memory_are_an_error_not_a_hang); this file kills
the other 27, each checked again on this file as landed (the mutant applied in a worktree of
main, this file run, the mutant reverted) and run on those six files without it; 3 are
equivalent (np.bool_ boundaries refused by the same check
either way; the sample weights and the per-partition seeds only move the partition
boundaries, which the result does not depend on). Most of the cluster machinery had no test
of its own: the probe's naming of broken workers, the watch's timers, a cluster of more
than five workers. Two defects found and fixed: NumPy-number timeouts refused as not
numbers, and an integer boundary beyond a float's range a bare OverflowError.

No real cluster: the cluster machinery runs on stand-in clients (``_Answers`` of
tests/test_dask.py for the probe; :class:`_Script` here for the watch) and on a stand-in clock
(``fastbias.dask.time`` replaced), so that every timeout is counted in looks, not in seconds,
and no assertion depends on how fast the machine is. Expected values are hand counts, the
docs (docs of evaluate), the brute force of tests/reference.py, or Python's own sorting.
"""
import re
import sys
import threading
import types

import dask
import numpy as np
import pandas as pd
import pytest

import fastbias

from .test_dask import _Answers, _fine, _lost_lines
from .test_dask_reference import quiet, synchronous  # noqa: F401 (the autouse fixture)
from .test_membership_mutants import _assert_table

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
fdask = pytest.importorskip("fastbias.dask")

POLL = 0.5  # seconds the stand-in clock moves per look (fastbias.dask._POLL_SECONDS)


class _Clock:
    """A stand-in for the ``time`` module of fastbias.dask: ``monotonic`` moves only when
    asked (a sleep, or one look of the watch)."""

    def __init__(self):
        self.now = 1000.0  # (not 0: 0.0 is falsy)

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


class _Future:
    def __init__(self, status="pending"):
        self.status, self.released = status, 0

    def release(self):
        self.released += 1


class _Script:
    """A stand-in client (and ``distributed.wait``) for ``_watch``: ``looks[k]`` is what
    ``scheduler_info`` lists after ``k`` waits (``looks[0]`` before the first); the wait
    after the last look returns (the futures are done). ``n_workers`` is honoured as
    Dask's scheduler_info does: a non-negative number lists that many workers only."""

    def __init__(self, looks, clock):
        self.looks, self.clock, self.step = looks, clock, 0
        self.waits = self.cancelled = self.gathered = 0

    def scheduler_info(self, n_workers=-1):
        workers = self.looks[min(self.step, len(self.looks) - 1)]
        if n_workers >= 0:
            workers = dict(list(workers.items())[:n_workers])
        return {"workers": dict(workers)}

    def wait(self, futures, timeout):
        assert timeout == POLL
        self.waits += 1
        self.clock.sleep(timeout)
        self.step += 1
        if self.step >= len(self.looks):
            return
        raise TimeoutError

    def cancel(self, futures):
        self.cancelled += 1

    def gather(self, futures):
        self.gathered += 1
        return ["done"] * len(futures)


def _running(*names, status="running", limit=None):
    return {name: {"status": status, "memory_limit": limit} for name in names}


@pytest.fixture
def clock(monkeypatch):
    fake = _Clock()
    monkeypatch.setattr(fdask, "time", types.SimpleNamespace(monotonic=fake.monotonic,
                                                             sleep=fake.sleep))
    return fake


def watch(looks, clock, monkeypatch, worker_timeout=30.0, stall_timeout=120.0, futures=None):
    script = _Script(looks, clock)
    monkeypatch.setattr(distributed, "wait", script.wait)
    cluster = fdask._Cluster(script, False, worker_timeout, stall_timeout)
    futures = futures if futures is not None else [_Future(), _Future()]
    return script, cluster, lambda: fdask._watch(cluster, futures)


# ------------------------------------------------------------------------------- _watch

def test_watch_names_each_worker_that_left_once_also_one_that_joined_on_the_way(
        clock, monkeypatch, caplog):
    """a and b work; c joins, then b leaves, then c leaves: b and c are named, in that order,
    once each (a worker that joined during the run and left is a worker lost too)."""
    looks = [_running("tcp://a", "tcp://b"), _running("tcp://a", "tcp://b", "tcp://c"),
             _running("tcp://a", "tcp://c"), _running("tcp://a"), _running("tcp://a")]
    script, cluster, run = watch(looks, clock, monkeypatch)
    with caplog.at_level("WARNING", logger="fastbias"):
        assert run() == ["done", "done"]
    named = [re.search(r"worker (\S+) left", line).group(1) for line in _lost_lines(caplog)]
    assert named == ["tcp://b", "tcp://c"]
    assert cluster.lost == {"tcp://b", "tcp://c"} and script.cancelled == 0


def test_watch_sees_every_worker_of_a_cluster_of_more_than_five(clock, monkeypatch, caplog):
    """Seven workers (Dask's scheduler_info listed five by default in older versions): none is
    named lost while all stay, and the seventh is named when it leaves, also when it leaves
    before the watch's first look (it was there when the watch began)."""
    seven = _running(*[f"tcp://w{k}" for k in range(7)])
    six = {name: info for name, info in seven.items() if name != "tcp://w6"}
    for looks in ([seven, seven, seven, six, six], [seven, six, six]):
        caplog.clear()
        script, cluster, run = watch(looks, clock, monkeypatch)
        with caplog.at_level("WARNING", logger="fastbias"):
            run()
        assert [re.search(r"worker (\S+) left", line).group(1)
                for line in _lost_lines(caplog)] == ["tcp://w6"], looks


def test_watch_no_worker_for_worker_timeout_is_an_error_and_cancels(clock, monkeypatch):
    """No worker from the first look on: the error comes at the first look more than
    worker_timeout (1 s) after the first empty one, i.e. the 4th look (0.5 s apart)."""
    looks = [_running("tcp://a")] + [{}] * 20
    script, cluster, run = watch(looks, clock, monkeypatch, worker_timeout=1.0,
                                 stall_timeout=1e9)
    with pytest.raises(RuntimeError, match=r"^no Dask worker has been connected for 1 s "
                                           r"\(worker_timeout\).*the run was cancelled$"):
        run()
    assert script.waits == 4 and script.cancelled == 1 and script.gathered == 0
    assert cluster.lost == {"tcp://a"}


def test_watch_no_worker_timer_starts_again_when_workers_come_back(clock, monkeypatch):
    """Gaps of 0.5 s without workers, twice, with workers in between: never 1 s in a row."""
    a = _running("tcp://a")
    looks = [a, {}, {}, a, {}, {}, a, a]
    script, _, run = watch(looks, clock, monkeypatch, worker_timeout=1.0, stall_timeout=1e9)
    assert run() == ["done", "done"]
    assert script.cancelled == 0 and script.gathered == 1


def test_watch_no_worker_is_not_a_stall(clock, monkeypatch):
    """No worker for 1.5 s, within worker_timeout (10 s) but beyond stall_timeout (0.2 s): no
    worker is not 'every worker paused', and the run goes on when one comes back."""
    a = _running("tcp://a")
    script, _, run = watch([a, {}, {}, {}, {}, a, a], clock, monkeypatch,
                           worker_timeout=10.0, stall_timeout=0.2)
    assert run() == ["done", "done"]
    assert script.cancelled == 0


def test_watch_every_worker_paused_for_stall_timeout_is_an_error(clock, monkeypatch):
    paused = {**_running("tcp://a", status="paused", limit=2 ** 30),
              **_running("tcp://b", status="paused", limit=None)}
    script, _, run = watch([paused] * 20, clock, monkeypatch, worker_timeout=1e9,
                           stall_timeout=1.0)
    with pytest.raises(RuntimeError, match=r"^every Dask worker has been paused for memory for "
                                           r"1 s \(stall_timeout; memory limit 1,024 MiB, no "
                                           r"limit per worker\)"):
        run()
    # paused from the 1st look (0.5 s) on: 1.5 s > 1 s at the 4th
    assert script.waits == 4 and script.cancelled == 1


def test_watch_one_paused_worker_of_two_is_not_a_stall(clock, monkeypatch):
    mixed = {**_running("tcp://a", status="paused"), **_running("tcp://b")}
    script, _, run = watch([mixed] * 12, clock, monkeypatch, stall_timeout=0.2)
    assert run() == ["done", "done"]
    assert script.cancelled == 0


def test_watch_a_failed_task_ends_the_watch_at_once(clock, monkeypatch):
    """One task failed while the other still runs: the watch stops at the next look (the
    gather raises the task's own error), it does not wait for the others."""
    futures = [_Future("error"), _Future("pending")]
    script, _, run = watch([_running("tcp://a")] * 50, clock, monkeypatch, futures=futures)
    run()
    assert script.waits == 1 and script.gathered == 1


# --------------------------------------------------------------------------- _compute

class _ComputingClient(_Script):
    def __init__(self, clock):
        super().__init__([_running("tcp://a")], clock)
        self.futures = []

    def compute(self, tasks):
        self.futures = [_Future() for _ in tasks]
        return self.futures


def test_compute_releases_every_future(clock, monkeypatch):
    client = _ComputingClient(clock)
    monkeypatch.setattr(distributed, "wait", client.wait)
    got = fdask._compute(fdask._Cluster(client, False, 5.0, 5.0), ["t1", "t2", "t3"])
    assert got == ["done"] * 3
    assert [f.released for f in client.futures] == [1, 1, 1]


def test_compute_on_the_local_scheduler_draws_the_progress_bar_when_asked(capsys):
    tasks = [dask.delayed(sum)([k, 1]) for k in range(3)]
    assert fdask._compute(fdask._Cluster(None, True, 5.0, 5.0), tasks) == [1, 2, 3]
    assert "100% Completed" in capsys.readouterr().out
    assert fdask._compute(fdask._Cluster(None, False, 5.0, 5.0), tasks) == [1, 2, 3]
    assert "Completed" not in capsys.readouterr().out


@pytest.mark.parametrize("tty", [True, False])
def test_progress_none_follows_whether_stdout_is_a_terminal(monkeypatch, tty):
    """docs: progress "default: when stdout is a terminal"."""
    monkeypatch.setattr(sys, "stdout", types.SimpleNamespace(isatty=lambda: tty))
    assert fdask._show_progress(None) is tty
    assert fdask._show_progress(True) is True and fdask._show_progress(False) is False


# ---------------------------------------------------------------------- _check_workers

def test_workers_that_cannot_run_fastbias_are_named_in_address_order():
    answers = _Answers(lambda: {"tcp://b:2": {"version": None, "error": "ImportError: b"},
                                "tcp://a:1": {"version": None, "error": "ImportError: a"}})
    with pytest.raises(RuntimeError, match=r"^2 of 2 Dask worker\(s\) cannot run fastbias \S+: "
                                           r"tcp://a:1: ImportError: a; tcp://b:2: "
                                           r"ImportError: b\. Install"):
        fdask._check_workers(fdask._Cluster(answers, False, 5.0, 5.0))


@pytest.mark.parametrize("n_broken, more", [(5, ""), (6, " (and 1 more)"),
                                            (8, " (and 3 more)")])
def test_at_most_five_workers_are_named_and_the_others_counted(n_broken, more):
    names = [f"tcp://w{k}:1" for k in range(n_broken)]
    answers = _Answers(lambda: {name: {"version": None, "error": f"ImportError: {k}"}
                                for k, name in enumerate(names)})
    with pytest.raises(RuntimeError) as caught:
        fdask._check_workers(fdask._Cluster(answers, False, 5.0, 5.0))
    message = str(caught.value)
    shown = "; ".join(f"{name}: ImportError: {k}" for k, name in enumerate(names[:5]))
    assert message.startswith(f"{n_broken} of {n_broken} Dask worker(s) cannot run fastbias "
                              f"{fastbias.__version__}: {shown}{more}. Install"), message


def test_a_worker_with_another_fastbias_version_is_named():
    answers = _Answers(lambda: {"tcp://a:1": _fine(),
                                "tcp://b:2": {"version": "0.0.0-other", "error": None}})
    with pytest.raises(RuntimeError, match=rf"^1 of 2 Dask worker\(s\) cannot run fastbias "
                                           rf"\S+: tcp://b:2: fastbias 0\.0\.0-other \(this "
                                           rf"client has {re.escape(fastbias.__version__)}\)"):
        fdask._check_workers(fdask._Cluster(answers, False, 5.0, 5.0))


class _LateWorkers(_Answers):
    """No worker for the first ``empty`` looks of scheduler_info, then two."""

    def __init__(self, empty):
        super().__init__(lambda: {"tcp://a:1": _fine(), "tcp://b:2": _fine()})
        self.empty = empty

    def scheduler_info(self, n_workers):
        assert n_workers == -1
        self.empty -= 1
        return {"workers": {}} if self.empty >= 0 else super().scheduler_info(n_workers)


def test_check_workers_waits_for_a_first_worker_within_worker_timeout(clock):
    answers = _LateWorkers(empty=3)  # three looks 0.1 s apart: well within 5 s
    fdask._check_workers(fdask._Cluster(answers, False, 5.0, 5.0))
    assert answers.asked == 1


def test_check_workers_without_a_worker_refuses_after_worker_timeout(clock):
    answers = _LateWorkers(empty=10 ** 6)
    start = clock.now
    with pytest.raises(RuntimeError, match=r"^no Dask worker connected to tcp://scheduler:1 "
                                           r"within 2 s \(worker_timeout\)"):
        fdask._check_workers(fdask._Cluster(answers, False, 2.0, 5.0))
    assert 2.0 < clock.now - start <= 2.0 + 0.2 and answers.asked == 0


def test_workers_that_do_not_answer_the_probe_are_an_error_after_worker_timeout():
    """client.run never answers within worker_timeout (0.3 s): a RuntimeError, not a wait
    for the answer (which comes after 20 s, or when the test ends)."""
    release = threading.Event()

    class Silent(_Answers):
        def run(self, function, on_error):
            release.wait(20)
            return super().run(function, on_error)

    answers = Silent(lambda: {"tcp://a:1": _fine()})
    try:
        with pytest.raises(RuntimeError, match=r"^the Dask workers of tcp://scheduler:1 did not "
                                               r"answer within 0\.3 s \(worker_timeout\)"):
            fdask._check_workers(fdask._Cluster(answers, False, 0.3, 5.0))
    finally:
        release.set()


# ------------------------------------------------------------- evaluate's argument checks

def tiny(n=24):
    rng = np.random.default_rng(47)
    return pd.DataFrame({"y": np.arange(n) % 3 == 0, "s": np.round(rng.random(n), 1),
                         "t": np.round(rng.random(n), 1) * 4 - 1,
                         "g": np.arange(n) % 4 == 1})


ARGS = dict(label="y", scores="s", subgroups=["g"])


@pytest.mark.parametrize("name, value", [("piece_rows", 0), ("piece_rows", True),
                                         ("npartitions", True), ("npartitions", False)])
def test_piece_rows_and_npartitions_must_be_positive_integers(name, value):
    with pytest.raises(ValueError, match=rf"^{name} must be a positive integer, got {value!r}$"):
        fdask.evaluate(dd.from_pandas(tiny(), npartitions=2), **ARGS, **{name: value})


def test_piece_rows_zero_refused_for_parquet_paths(tmp_path):
    tiny().to_parquet(tmp_path / "d.parquet")
    with pytest.raises(ValueError, match=r"^piece_rows must be a positive integer, got 0$"):
        fdask.evaluate(str(tmp_path / "d.parquet"), **ARGS, piece_rows=0)


def test_numpy_true_persist_with_compute_false_is_refused():
    with pytest.raises(ValueError, match=r"persist=True needs compute=True"):
        fdask.evaluate(dd.from_pandas(tiny(), npartitions=2), **ARGS, persist=np.True_,
                       compute=False)


@pytest.mark.parametrize("name", ["worker_timeout", "stall_timeout"])
@pytest.mark.parametrize("value", [0, 0.0, -1, float("nan"), True, "5"])
def test_timeouts_must_be_positive_numbers_of_seconds(name, value):
    with pytest.raises(ValueError, match=rf"^{name} must be a positive number of seconds, "
                                         rf"got {re.escape(repr(value))}$"):
        fdask.evaluate(dd.from_pandas(tiny(), npartitions=2), **ARGS, **{name: value})


def _documented_default(name):
    doc = fdask.evaluate.__doc__
    return float(re.search(rf"\n    {name} : float, default (\S+)\n", doc).group(1))


def test_timeouts_reach_the_cluster_watch_each_as_given_and_by_default(monkeypatch):
    """worker_timeout and stall_timeout are the _Cluster's own two (not swapped), and their
    defaults are the documented 30 s and 120 s."""
    seen = []
    monkeypatch.setattr(fdask, "_active_client", lambda: None)
    monkeypatch.setattr(fdask, "_run", lambda *args: seen.append(args[-2]) or "ran")
    ddf = dd.from_pandas(tiny(), npartitions=2)
    assert fdask.evaluate(ddf, **ARGS, worker_timeout=7, stall_timeout=11.5) == "ran"
    assert fdask.evaluate(ddf, **ARGS) == "ran"
    (given, default) = seen
    assert (given.worker_timeout, given.stall_timeout) == (7.0, 11.5)
    assert (default.worker_timeout, default.stall_timeout) == (
        _documented_default("worker_timeout"), _documented_default("stall_timeout")) == (
        30.0, 120.0)


# ------------------------------------------------------------------------------ divisions

def test_dict_divisions_for_some_models_sample_the_others():
    """docs: "a dict names models only"; a model it does not name is sampled as without
    divisions. Every number against the brute force."""
    df = tiny(40)
    result = quiet(fdask.evaluate, dd.from_pandas(df, npartitions=3), label="y",
                   scores=["s", "t"], subgroups=["g"], divisions={"s": [0.0, 0.5, 1.0]})
    y, g = df["y"].to_numpy(), df["g"].to_numpy()
    for model in ["s", "t"]:
        _assert_table(result.for_model(model), y, df[model].to_numpy(), {"g": g}, model)


def test_dict_divisions_name_the_first_unknown_model():
    with pytest.raises(ValueError, match=r"^divisions names 'nope', which is not a model"):
        fdask.evaluate(dd.from_pandas(tiny(), npartitions=2), **ARGS,
                       divisions={"nope": [0, 1], "s": [0, 1], "zap": [0, 1]})


@pytest.mark.parametrize("lowest, sample", [(0.0, [0.0] * 90 + [1.0] * 10),
                                            (0.25, [0.25] * 50 + [0.5] * 30 + [0.75] * 20)])
def test_computed_divisions_are_distinct_and_span_lowest_to_highest(lowest, sample):
    """Heavy ties at the lowest score: boundaries strictly increasing (Dask's partitions lie
    between distinct ones), the first the lowest score, the last the highest."""
    got = fdask._divisions(lowest, 1.0, np.asarray(sample), None, 4)
    assert got[0] == lowest and got[-1] == 1.0
    assert all(a < b for a, b in zip(got, got[1:])), got


# ------------------------------------------------------------ _captured, _in_order, order

def test_captured_keeps_value_type_and_key_errors_for_in_order():
    for error in (ValueError("v"), TypeError("t"), KeyError("k")):
        def refuse(error=error):
            raise error

        kept = fdask._captured(refuse)
        assert isinstance(kept, fdask._Failure) and kept.error is error
    assert fdask._captured(divmod, 7, 2) == (3, 1)
    with pytest.raises(ZeroDivisionError):  # (other errors are Dask's to report at once)
        fdask._captured(divmod, 1, 0)


def test_in_order_raises_the_first_refusal_in_the_frames_order():
    first, second = ValueError("partition 1"), TypeError("partition 2")
    with pytest.raises(ValueError, match="partition 1"):
        fdask._in_order([1, fdask._Failure(first), fdask._Failure(second), 4])
    assert fdask._in_order([1, 2]) == [1, 2]


def test_weights_order_sorts_each_tied_block_by_weight_in_place():
    """Scores 0.1 | 0.2 0.2 0.2 | 0.3 0.3 with weights 5 | 9 3 8 | 1 2: the block at 0.2 in
    the order of its weights (rows 2, 3, 1), the other rows where they were; no tie: None."""
    scores = np.array([0.1, 0.2, 0.2, 0.2, 0.3, 0.3])
    weights = np.array([5.0, 9.0, 3.0, 8.0, 1.0, 2.0])
    assert fdask._weights_order(scores, weights).tolist() == [0, 2, 3, 1, 4, 5]
    flipped = np.array([5.0, 9.0, 3.0, 8.0, 2.0, 1.0])
    assert fdask._weights_order(scores, flipped).tolist() == [0, 2, 3, 1, 5, 4]
    assert fdask._weights_order(np.array([0.1, 0.2, 0.3]), np.array([3.0, 2.0, 1.0])) is None


# ------------------------------------- found by this audit (each failed before its fix)

@pytest.mark.parametrize("name, value", [("worker_timeout", np.int64(30)),
                                         ("stall_timeout", np.int64(60)),
                                         ("worker_timeout", np.float32(30.0)),
                                         ("stall_timeout", 10 ** 400)])
def test_numpy_number_and_huge_int_timeouts_are_taken(monkeypatch, name, value):
    """worker_timeout=np.int64(30) (or np.float32(30.0)) was refused with "worker_timeout
    must be a positive number of seconds, got np.int64(30)" (the check took Python int and
    float only), where npartitions and piece_rows take NumPy integers; an int beyond a
    float's range was a bare OverflowError. Now the seconds as given (the huge one: inf,
    longer than any wait, as float('inf') is taken)."""
    seen = []
    monkeypatch.setattr(fdask, "_active_client", lambda: None)
    monkeypatch.setattr(fdask, "_run", lambda *args: seen.append(args[-2]) or "ran")
    assert fdask.evaluate(dd.from_pandas(tiny(), npartitions=2), **ARGS,
                          **{name: value}) == "ran"
    want = float("inf") if isinstance(value, int) else float(value)
    assert getattr(seen[0], name) == want


@pytest.mark.parametrize("divisions", [[0, 10 ** 400], [-(10 ** 400), 0.35, 10 ** 400]])
def test_a_boundary_beyond_a_float_bounds_the_scores_as_an_infinity_does(divisions):
    """divisions=[0, 10**400] raised a bare OverflowError ("int too large to convert to
    float"), naming neither divisions nor the value; float('inf') was taken. Such a
    boundary lies beyond every score as an infinity does: the result is the brute force's."""
    df = tiny()
    got = quiet(fdask.evaluate, dd.from_pandas(df, npartitions=2), **ARGS,
                divisions=divisions)
    _assert_table(got.for_model("s"), df["y"].to_numpy(), df["s"].to_numpy(),
                  {"g": df["g"].to_numpy()}, "a boundary beyond a float")


def test_a_boundary_beyond_a_float_beside_an_infinity_is_named_twice():
    with pytest.raises(ValueError, match=r"^divisions holds inf twice \(position 1\): "
                                         r"boundaries must be distinct$"):
        fdask.evaluate(dd.from_pandas(tiny(), npartitions=2), **ARGS,
                       divisions=[float("inf"), 10 ** 400, 0.0])
