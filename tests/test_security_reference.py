"""The outputs, messages and the numba cache against an attacker: an independent security
review's tests (2026-11-27) of --out, CSV/terminal escaping and the cache directory.

Tests whose docstring starts with ``found by review`` failed before their fix; the others
pin behaviour the review verified.
"""
import csv
import os
import re
import stat
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pandas as pd
import pytest

from fastbias import _numba_cache
from fastbias.cli import DEMO_OUTPUT, _check_outputs, main
from fastbias.reports import report as report_module
from fastbias.reports.report import write_atomically

ARGS = ["--label", "y", "--scores", "s", "--subgroups", "g", "-q", "--progress", "never"]
DATA = "y,s,g\n0,0.1,1\n1,0.9,1\n0,0.4,0\n1,0.2,0\n0,0.3,1\n1,0.8,0\n"
POSIX = pytest.mark.skipif(not hasattr(os, "symlink") or os.name != "posix", reason="POSIX only")


def _data(tmp_path, name="d.csv"):
    path = tmp_path / name
    path.write_text(DATA)
    return path


def _refused(argv, capsys, needle):
    assert main(argv) == 1
    assert needle in capsys.readouterr().err


# ------------------------------------------------------------ found by review: outputs

@POSIX
def test_concurrent_writes_keep_the_umask(tmp_path, monkeypatch):
    """found by review: write_atomically reads the umask by setting it (os.umask(0o022)) and putting
    it back. Two writes in threads (or any other thread creating a file meanwhile) see 0o022:
    with umask 0o077 the second report comes out 0o644, world-readable, and the process is
    left with umask 0o022 for good."""
    real = os.umask

    def slow_umask(mask):  # widens the window between set and restore; same semantics
        old = real(mask)
        if mask == 0o022:
            time.sleep(0.2)
        return old

    old_mask = real(0o077)
    try:
        monkeypatch.setattr(os, "umask", slow_umask)
        threads = [threading.Thread(target=write_atomically, args=(tmp_path / f"r{i}.csv", "x"))
                   for i in range(2)]
        threads[0].start()
        time.sleep(0.05)
        threads[1].start()
        for thread in threads:
            thread.join()
        monkeypatch.setattr(os, "umask", real)
        left = real(0o077)
    finally:
        real(old_mask)
    modes = [stat.S_IMODE(os.stat(tmp_path / f"r{i}.csv").st_mode) for i in range(2)]
    assert modes == [0o600, 0o600], [oct(m) for m in modes]
    assert left == 0o077, f"process umask left at {oct(left)}"


@POSIX
def test_temporary_file_swapped_for_a_link_does_not_chmod_its_target(tmp_path, monkeypatch):
    """found by review: the temporary file's mode is set with os.chmod(name), which follows a symbolic
    link. Whoever can replace entries in the output folder (a group-shared folder) can swap
    the temporary file for a link to a private file of the user's: write_atomically then makes
    that file 0644 (readable by all) and moves the link into place as the report. os.fchmod
    on the open descriptor is immune."""
    secret = tmp_path / "id_rsa"
    secret.write_text("private key")
    secret.chmod(0o600)
    folder = tmp_path / "shared"
    folder.mkdir()
    real_fsync = os.fsync

    def attacker(fd):  # runs between mkstemp and chmod, as another user could
        real_fsync(fd)
        [temporary] = [p for p in folder.iterdir() if p.name.endswith(".tmp")]
        temporary.unlink()
        temporary.symlink_to(secret)

    monkeypatch.setattr(report_module.os, "fsync", attacker)
    old = os.umask(0o022)
    try:
        write_atomically(folder / "r.csv", "report")
    except OSError:
        pass  # refusing is fine; changing the secret's mode is not
    finally:
        os.umask(old)
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert secret.read_text() == "private key"


@POSIX
def test_a_link_planted_after_the_link_check_does_not_make_the_report_world_writable(
        tmp_path, monkeypatch):
    """found by review (same root cause as above: path-based steps in a folder others may write): the
    mode to keep is read with os.lstat(path) after the link check; a link planted at the path
    in between has mode 0777, so the report is written 0777, writable by every user."""
    out = tmp_path / "r.csv"
    real_lstat = os.lstat

    def plant(path, *args, **kwargs):  # the look at the path, then a link planted there
        try:
            return real_lstat(path, *args, **kwargs)
        finally:
            if str(path) == str(out) and not planted:
                planted.append(True)
                os.symlink(tmp_path / "elsewhere", out)

    planted = []

    monkeypatch.setattr(report_module.os, "lstat", plant)
    old = os.umask(0o077)
    try:
        write_atomically(out, "report")
    except (OSError, ValueError):
        return  # refusing is fine
    finally:
        os.umask(old)
    assert not os.path.islink(out) and not os.path.exists(tmp_path / "elsewhere")
    assert stat.S_IMODE(os.lstat(out).st_mode) & 0o022 == 0, oct(os.lstat(out).st_mode)


def test_a_long_but_valid_output_name_is_written_or_refused_before_work(tmp_path, capsys):
    """found by review: an output name of 250 characters is valid (NAME_MAX is 255) and passes every
    --out check, but the temporary file ('.' + name + random part + '.tmp') is longer than
    NAME_MAX: the run does all its work, then fails with 'File name too long'."""
    name = "a" * 250 + ".csv"
    (tmp_path / name).write_text("")  # the name itself is fine
    (tmp_path / name).unlink()
    write_atomically(tmp_path / name, "x")  # OSError: [Errno 36] File name too long
    assert (tmp_path / name).read_text() == "x"


@POSIX
def test_demo_does_not_hang_on_a_fifo_at_its_default_output(tmp_path, monkeypatch):
    """found by review: `fastbias demo` looks inside an existing fastbias-demo-report.html to see if
    it is its own earlier report (_is_fastbias_report, documented as "a regular file") by
    opening it: a FIFO there (anyone who can write the folder can make one) blocks the
    command forever, before any work."""
    monkeypatch.chdir(tmp_path)
    os.mkfifo(DEMO_OUTPUT)
    outcome = []

    def check():
        try:
            _check_outputs([DEMO_OUTPUT], replaceable=[DEMO_OUTPUT])
            outcome.append("accepted")
        except Exception as exc:  # noqa: BLE001 (a CLIError is the right answer)
            outcome.append(type(exc).__name__)

    thread = threading.Thread(target=check, daemon=True)
    thread.start()
    thread.join(3)
    hung = thread.is_alive()
    if hung:  # let the blocked open() return
        fd = os.open(DEMO_OUTPUT, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        thread.join(3)
    assert not hung, "the check blocked on the FIFO"
    assert outcome == ["CLIError"]


# ----------------------------------------------------------- found by review: messages

def test_usage_errors_show_unrecognized_arguments_escaped(tmp_path, capsys):
    """found by review (low): argparse's 'unrecognized arguments: ...' prints the argument raw, so a
    column name taken from data that starts with '-' (scripts pass header names through)
    puts its escape sequences on the terminal; every other message escapes them."""
    data = _data(tmp_path)
    name = "-x\x1b]0;owned\x07\x1b[31m"
    with pytest.raises(SystemExit) as exit_info:
        main(["report", str(data), *ARGS, "--out", str(tmp_path / "r.csv"), name])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f]", err), repr(err)


# -------------------------------------------------------- found by review: numba cache

@POSIX
def test_cache_directory_reached_through_a_link_others_can_replace_is_not_trusted(tmp_path):
    """found by review: is_private_directory judges a path by its realpath only. NUMBA_CACHE_DIR =
    shared/cache, a link in a folder anyone can write (not sticky) to a private directory,
    is trusted, and configure() keeps it; numba opens its cache files through the link, which
    another user can re-point after the check at a directory of planted pickles."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    home.chmod(0o700)
    private = home / "cache"
    private.mkdir(mode=0o700)
    private.chmod(0o700)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    link = shared / "cache"
    link.symlink_to(private, target_is_directory=True)
    assert _numba_cache.is_private_directory(private)
    assert not _numba_cache.is_private_directory(link)


@POSIX
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs lchown")
def test_cache_link_owned_by_another_user_in_a_sticky_folder_is_not_trusted(tmp_path):
    """found by review: the same with a link in a sticky folder (as /tmp) that another user owns
    (sticky protects only what is yours): its owner can re-point it at any time."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    private.chmod(0o700)
    os.chown(private, 1234, 1234)
    sticky = tmp_path / "tmp"
    sticky.mkdir()
    sticky.chmod(0o1777)
    link = sticky / "fastbias-cache"
    link.symlink_to(private, target_is_directory=True)
    os.lchown(link, 4321, 4321)
    assert _numba_cache.is_private_directory(private, uid=1234)
    assert not _numba_cache.is_private_directory(link, uid=1234)


# ------------------------------------------------------------------ verified: inputs kept

@POSIX
def test_no_other_name_of_an_input_is_written(tmp_path, capsys):
    """Verified: x/../d.csv, the data named through a symlink or /proc/self/fd, an --out
    folder reached through a symlink, and the --subgroups-file through a hard link are all
    refused before work, inputs untouched."""
    data = _data(tmp_path)
    (tmp_path / "x").mkdir()
    (tmp_path / "alias.csv").symlink_to(data)
    (tmp_path / "dirlink").symlink_to(tmp_path, target_is_directory=True)
    names = tmp_path / "names.txt"
    names.write_text("g\n")
    os.link(names, tmp_path / "names.csv")
    fd = os.open(data, os.O_RDONLY)
    try:
        cases = [
            ([str(data)], str(tmp_path / "x" / ".." / "d.csv"), "input data file"),
            ([str(tmp_path / "alias.csv")], str(data), "input data file"),
            ([f"/proc/self/fd/{fd}"], str(data), "input data file"),
            ([str(data)], str(tmp_path / "dirlink" / "d.csv"), "input data file"),
        ]
        for data_args, out, needle in cases:
            _refused(["report", *data_args, *ARGS, "--out", out, "--force"], capsys, needle)
        _refused(["report", str(data), "--label", "y", "--scores", "s", "--subgroups-file",
                  str(names), "-q", "--out", str(tmp_path / "names.csv"), "--force"],
                 capsys, "--subgroups-file")
    finally:
        os.close(fd)
    assert data.read_text() == DATA and names.read_text() == "g\n"


@POSIX
def test_links_and_folders_at_the_output_are_refused_by_the_library(tmp_path):
    """Verified: save/to_csv/to_json/to_html(path) (write_atomically) refuse a dangling link,
    a link to another file and a folder, leaving the target as it was; a hard link to
    another file is replaced as a name only (the other file keeps its contents)."""
    victim = tmp_path / "passwd"
    victim.write_text("root:x:0:0\n")
    (tmp_path / "to_victim.json").symlink_to(victim)
    (tmp_path / "dangling.html").symlink_to(tmp_path / "nothing")
    (tmp_path / "folder.csv").mkdir()
    for name in ("to_victim.json", "dangling.html", "folder.csv"):
        with pytest.raises(ValueError):
            write_atomically(tmp_path / name, "report")
    assert victim.read_text() == "root:x:0:0\n" and not (tmp_path / "nothing").exists()
    os.link(victim, tmp_path / "hard.csv")
    write_atomically(tmp_path / "hard.csv", "report")
    assert victim.read_text() == "root:x:0:0\n" and (tmp_path / "hard.csv").read_text() == "report"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


@POSIX
def test_a_write_over_the_file_size_limit_leaves_the_old_file_and_no_temporary(tmp_path):
    """Verified: a write that fails (RLIMIT_FSIZE in a child) raises, keeps the old file and
    its mode, and leaves no temporary file behind; the CLI says so in one line."""
    old = tmp_path / "r.csv"
    old.write_text("old report")
    old.chmod(0o640)
    code = textwrap.dedent("""
        import resource, sys
        from fastbias.reports.report import write_atomically
        resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
        try:
            write_atomically(sys.argv[1], "x" * 5000)
        except OSError as exc:
            print("OSError", exc.errno)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", code, str(old)], capture_output=True,
                          text=True, env=env, timeout=60, check=False)
    assert done.stdout.startswith("OSError"), (done.stdout, done.stderr[-500:])
    assert old.read_text() == "old report"
    assert stat.S_IMODE(old.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["r.csv"]


# ------------------------------------------------------------------ verified: CSV cells

def test_model_and_sensitive_value_names_are_neutralised_in_both_csv_outputs(tmp_path):
    """Verified: score column names and sensitive-feature values that start like a formula
    get a ' in both the table CSV and the --thresholds CSV; intersections starting with a
    plain name stay as they are."""
    rng = np.random.default_rng(0)
    n = 200
    values = ["=1+1", "@x", "-2", "\tz", "ok"]
    frame = pd.DataFrame({"y": rng.integers(0, 2, n), "=s": rng.random(n),
                          "-2": rng.random(n), "g": rng.integers(0, 2, n),
                          "+f": rng.choice(values, n)})
    frame.to_csv(tmp_path / "d.csv", index=False, quoting=csv.QUOTE_NONNUMERIC)
    assert main(["report", str(tmp_path / "d.csv"), "--label", "y", "--scores", "=s", "-2",
                 "--subgroups", "g", "--sensitive-features", "+f", "--thresholds", "0.5",
                 "--out", str(tmp_path / "r.csv"), "-q", "--progress", "never"]) == 0
    for name in ("r.csv", "r.thresholds.csv"):
        with open(tmp_path / name, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        assert {r["model"] for r in rows} == {"'=s", "'-2"}
        assert "'+f==1+1" in {r["subgroup"] for r in rows}
        for row in rows:
            for key in ("model", "subgroup"):
                assert not row[key].startswith(("=", "+", "-", "@", "\t", "\r", "\n")), row[key]
