"""Progress displays: one at a time, drawn by tqdm, counting up, quiet when not asked for.

The library's bootstrap bar and the CLI's status line share one terminal line
(fastbias.progress); these tests record what tqdm is asked to draw.
"""
import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias import progress
from fastbias.cli import main

tqdm = pytest.importorskip("tqdm").tqdm
REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def nothing_left_open():
    """Every test leaves no display open (and a failing one does not spill into the next)."""
    yield
    left = list(progress._OPEN)
    progress.close_displays(0)
    assert left == []


@pytest.fixture
def recorded(monkeypatch):
    """Every tqdm the library opens, drawn at once (no delay), with the counts it showed."""
    opened = []

    class Recording(tqdm):
        def __init__(self, *args, **kwargs):
            kwargs.update(delay=0, mininterval=0)
            self.counts = []
            super().__init__(*args, **kwargs)
            opened.append(self)

        def update(self, n=1):
            out = super().update(n)
            self.counts.append(self.n)
            return out

    monkeypatch.setattr(progress, "_tqdm", lambda: Recording)
    return opened


def test_a_bar_draws_only_when_enabled_and_counts_without_tqdm(capsys, monkeypatch):
    bar = progress.Bar(3, "bootstrap", unit="replicate", setting=True, delay=0, mininterval=0)
    for _ in range(3):
        bar.update()
    bar.close()
    assert "3/3" in capsys.readouterr().err
    quiet = progress.Bar(3, "bootstrap", setting=False, delay=0)
    quiet.update(3)
    quiet.close()
    assert capsys.readouterr().err == "" and quiet.done == 3 and not quiet.drawn
    monkeypatch.setattr(progress, "_tqdm", lambda: None)   # no cli extra
    bare = progress.Bar(3, "bootstrap", setting=True, delay=0, mininterval=0)
    bare.update(2)
    bare.close()
    assert capsys.readouterr().err == "" and bare.done == 2 and not progress.live_available()


def test_the_default_follows_shown_then_the_terminal(capsys):
    assert progress.enabled() is False                  # captured stderr is no terminal
    with progress.shown(True):
        assert progress.enabled() and not progress.enabled(False)
        with progress.shown(False):
            assert not progress.enabled()
        assert progress.enabled()
    assert progress.enabled() is False


def test_one_display_at_a_time(capsys):
    status = progress.Status("evaluating 2 models ...", setting=True)
    bar = progress.Bar(4, "bootstrap", setting=True, delay=0, mininterval=0)
    status.update("text written while hidden")
    bar.update(4)
    before_close = capsys.readouterr().err
    bar.close()
    after_close = capsys.readouterr().err
    status.close()
    assert "evaluating 2 models" in before_close and "4/4" in before_close
    # the hidden status drew nothing while the bar was up; it comes back when the bar closes
    assert "text written while hidden" not in before_close
    assert "text written while hidden" in after_close
    assert progress._OPEN == []


def test_a_bar_hidden_under_a_newer_one_counts_silently(capsys):
    outer = progress.Bar(10, "outer", setting=True, delay=0, mininterval=0)
    inner = progress.Bar(2, "inner", setting=True, delay=0, mininterval=0)
    outer.update(7)
    inner.update(2)
    shown_while_inner = capsys.readouterr().err
    inner.close()
    outer.close()
    assert "7/10" not in shown_while_inner and "2/2" in shown_while_inner
    assert "7/10" in capsys.readouterr().err and outer.done == 7


def _frame(n=1_000, seed=4):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.3
    g = rng.random(n) < 0.3
    h = np.where(rng.random(n) < 0.1, np.nan, (rng.random(n) < 0.2).astype(float))
    return pd.DataFrame({"y": y.astype(float), "g": g.astype(float), "h": h,
                         "a": np.round(rng.random(n) + 0.3 * y, 2),
                         "b": np.round(rng.random(n) + 0.2 * y - 0.2 * g, 2)})


def test_one_bootstrap_bar_for_every_model_and_universe_counts_up(recorded):
    """Two models in two threads, and 'exclude' splits the rows into two universes: one
    bar of 2 x 2 x n_boot replicates that never counts backwards (it used to be one bar
    per run, overwriting each other: 2462/3000 -> 2789 -> 2489)."""
    df = _frame(1_000)
    kwargs = dict(label="y", scores=["a", "b"], subgroups=["g", "h"], ci="bootstrap",
                  n_boot=10, random_state=3, missing_subgroup="exclude", n_jobs=2)
    with progress.shown(True):
        shown = fastbias.evaluate(df, **kwargs)
    bars = [t for t in recorded if t.total is not None]
    assert len(bars) == 1
    assert bars[0].total == 2 * 2 * 10
    assert bars[0].counts == sorted(bars[0].counts) and bars[0].counts[-1] == 40
    assert progress._OPEN == []
    with progress.shown(False):
        quiet = fastbias.evaluate(df, **kwargs)
    assert len(recorded) == 1                    # nothing drawn when not shown
    pd.testing.assert_frame_equal(shown.table, quiet.table)   # and the numbers do not change


CLI_ARGS = ["--label", "y", "--scores", "a", "b", "--subgroups", "g", "h",
            "--missing-subgroup", "exclude", "--ci", "bootstrap", "--n-boot", "4"]


def test_cli_bootstrap_bar_follows_progress_flag(recorded, tmp_path, capsys):
    path = tmp_path / "data.csv"
    _frame().to_csv(path, index=False)
    assert main(["report", str(path), *CLI_ARGS, "--out", str(tmp_path / "a.json"),
                 "--progress", "always"]) == 0
    bars = [t for t in recorded if t.total is not None]
    statuses = [t.desc for t in recorded if t.total is None]
    assert [b.total for b in bars] == [2 * 2 * 4]
    assert any(d.startswith("evaluating 2 model(s) x 2 subgroups with 4 bootstrap") for d in
               statuses), statuses
    assert "\r" in capsys.readouterr().err
    recorded.clear()
    assert main(["report", str(path), *CLI_ARGS, "--out", str(tmp_path / "b.json"),
                 "--progress", "never"]) == 0
    assert recorded == [] and capsys.readouterr().err.count("\r") == 0


def test_cli_without_tqdm_prints_each_step_on_a_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(progress, "_tqdm", lambda: None)
    path = tmp_path / "data.csv"
    _frame().to_csv(path, index=False)
    assert main(["report", str(path), *CLI_ARGS, "--out", str(tmp_path / "a.json"),
                 "--progress", "always"]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err
    assert "fastbias: reading data.csv ...\nfastbias: evaluating 2 model(s)" in err


@pytest.mark.jit_heavy  # a bootstrap of 20,000 rows in a fresh process
def test_cli_on_a_terminal_draws_one_status_line(tmp_path):
    """A real terminal (a pty of 100 columns): the status line is drawn by tqdm, in place,
    and any bootstrap counts shown only go up, out of 2 models x 2 universes x n_boot."""
    path = tmp_path / "data.csv"
    _frame(20_000).to_csv(path, index=False)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    args = [sys.executable, "-m", "fastbias.cli", "report", str(path), *CLI_ARGS[:-1], "400",
            "--out", str(tmp_path / "r.json")]
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=slave, env=env)
    os.close(slave)
    chunks = []

    def read():
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert proc.wait(timeout=240) == 0
    reader.join(timeout=10)
    os.close(master)
    err = b"".join(chunks).decode("utf-8", "replace")
    assert "\rreading data.csv" in err
    assert "\revaluating 2 model(s) x 2 subgroups with 400 bootstrap replicates ..." in err
    assert "fastbias: reading" not in err            # no plain step lines on a terminal
    counts = [(int(k), int(n)) for k, n in re.findall(r"(\d+)/(\d+) \[", err)]
    assert all(n == 2 * 2 * 400 for _, n in counts)
    assert [k for k, _ in counts] == sorted(k for k, _ in counts)
    assert (tmp_path / "r.json").exists()


def test_an_error_while_reading_leaves_no_status_line_behind(recorded, tmp_path, capsys,
                                                            monkeypatch):
    """A data error raised while the 'reading' line is up: the line is cleared before the
    error is printed, and no stale display comes back on the next run in this process."""
    import fastbias.cli as cli

    path = tmp_path / "data.csv"
    _frame().to_csv(path, index=False)
    real = cli.iter_text_batches

    def failing(*args, **kwargs):
        for item in real(*args, **kwargs):
            yield item
            raise ValueError("score column 'a' is broken in rows 1-1000")

    monkeypatch.setattr(cli, "iter_text_batches", failing)
    assert main(["report", str(path), *CLI_ARGS, "--out", str(tmp_path / "a.json"),
                 "--progress", "always"]) == 1
    err = capsys.readouterr().err
    assert progress._OPEN == []
    assert recorded and all(t.disable for t in recorded)   # tqdm marks a closed bar disabled
    last = err.rstrip("\n").split("\n")[-1]
    assert last.split("\r")[-1].startswith("fastbias: error: score column 'a' is broken")
