"""The command line run as a test runs it: in this process through ``fastbias.cli.main``
(what ``python -m fastbias`` calls; its output and exit status captured), or in a process
of its own where the test is about the process (pipes, signals, the installed command).

In process, a run costs no interpreter start and no import (two to six seconds each on
CI's machine, most of the CLI tests' time when each started a process)."""
import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_cli(args, cwd=None, *, process=False, timeout=300):
    """Run ``fastbias`` with ``args`` (any objects; made text) in the folder ``cwd``; returns a
    ``subprocess.CompletedProcess`` with the exit status and the text of stdout and stderr."""
    args = [str(a) for a in args]
    if process:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
        return subprocess.run([sys.executable, "-m", "fastbias", *args], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=timeout)
    from fastbias.cli import main

    out, err, here = io.StringIO(), io.StringIO(), os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(args)
            except SystemExit as stop:  # (argparse's usage errors)
                status = stop.code
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(args, status, out.getvalue(), err.getvalue())
