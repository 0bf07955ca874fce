"""An independent review's tests (2026-11-27): security of the Numba cache, the outputs,
the escaping of names and bounded memory.

Found by review (each fails before its fix): validate's cached CSV kernel was left out of
the cache guard's modules, so a pickle planted in a world-writable fastbias/validate/
__pycache__ ran; the CLI's memory budget ignored the process's own limits (an address-space
rlimit, a cgroup's), so a 1.3 MB .csv.gz of 30M rows failed to allocate under
``prlimit --as`` where streaming runs. The others pin properties that held.
"""
from __future__ import annotations

import csv
import gzip
import json
import os
import pickle
import re
import shutil
import stat
import subprocess
import sys
import textwrap

import pytest

from . import cli_runner

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "fastbias")


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["FASTBIAS_FIRST_CALL"] = "0"
    env.update(extra)
    return env


_SHARED_CACHE = []  # (one private cache for this file's subprocesses: each compiled anew)


def _cache(tmp_path):
    if os.environ.get("NUMBA_CACHE_DIR"):
        return os.environ["NUMBA_CACHE_DIR"]
    if not _SHARED_CACHE:
        import tempfile
        _SHARED_CACHE.append(tempfile.mkdtemp(prefix="fastbias-sec-"))  # (mode 0700)
    return _SHARED_CACHE[0]


class _Planted:
    """A pickle that, once loaded, makes the directory ``marker``: proof that it ran."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.makedirs, (self.marker, 0o777, True))  # (may be loaded twice)


def _plant(path, marker):
    with open(path, "wb") as handle:
        pickle.dump(_Planted(marker), handle)


# ------------------------------------------------------------------ the Numba cache


def _kernel_modules_with_cache():
    found = []
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py") and name != "_numba_cache.py":  # (its docstring)
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as handle:
                    if re.search(r"@n?jit\([^)]*cache=True", handle.read()):
                        found.append(os.path.relpath(path, PACKAGE).replace(os.sep, "/"))
    return sorted(found)


def test_every_module_with_cached_kernels_is_checked_by_the_cache_guard():
    """Was: fastbias/validate/_kernels.py has an @njit(cache=True) kernel (csv_records) but
    _numba_cache.KERNEL_MODULES lists only prepare, sort, sweep and intervals, so configure()
    never checks the directory numba caches csv_records in (validate/__pycache__ when no
    NUMBA_CACHE_DIR is set). Right: every module holding cached kernels is checked."""
    from fastbias._numba_cache import KERNEL_MODULES

    missing = [m for m in _kernel_modules_with_cache() if m not in KERNEL_MODULES]
    assert missing == []


def _package_copy(tmp_path, open_folder):
    """A copy of the package whose ``open_folder``/__pycache__ anybody can write (0777),
    the other kernel folders' __pycache__ private (0755, ours)."""
    top = tmp_path / "pkg"
    shutil.copytree(PACKAGE, top / "fastbias",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for folder in ("prepare", "sort", "sweep", "intervals", "validate"):
        cache = top / "fastbias" / folder / "__pycache__"
        cache.mkdir()
        os.chmod(cache, 0o777 if folder == open_folder else 0o755)
    xdg = tmp_path / "xdg"
    xdg.mkdir(mode=0o700)
    return top, xdg


def test_planted_csv_records_cache_in_a_world_writable_pycache_is_not_loaded(tmp_path):
    """Was: with no NUMBA_CACHE_DIR, a pickle planted (by anyone: the folder is 0777) as
    the index of validate/_kernels.csv_records is loaded, and so runs, the first time a CSV
    with a quote is read. Right: configure() sees that this cache folder is not private and
    points numba at a private directory (as it does for sort/ etc.), so nothing planted runs.
    Cause: _numba_cache.KERNEL_MODULES omits "validate/_kernels.py"."""
    import fastbias.validate._kernels as K

    top, xdg = _package_copy(tmp_path, "validate")
    line = K.csv_records.py_func.__code__.co_firstlineno
    tag = "py%d%d" % sys.version_info[:2]
    marker = str(tmp_path / "PLANTED_CODE_RAN")
    _plant(top / "fastbias" / "validate" / "__pycache__" / f"_kernels.csv_records-{line}.{tag}.nbi",
           marker)
    code = textwrap.dedent("""
        import numpy as np, fastbias, numba
        import fastbias.validate._kernels as K
        print("CACHE_DIR=" + repr(numba.config.CACHE_DIR))
        data = np.frombuffer(b'a,"b"\\n1,2\\n', dtype=np.uint8)
        K.csv_records(data, 44, 2, np.zeros(K.N_STATE, np.int64), np.zeros(8, np.int64))
    """)
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300,
                         env=_env(PYTHONPATH=str(top), XDG_CACHE_HOME=str(xdg)))
    assert not os.path.exists(marker), ("a pickle planted in a world-writable cache folder "
                                        "was loaded: " + run.stdout)
    assert run.returncode == 0, run.stderr[-2000:]


def test_world_writable_in_tree_cache_of_a_checked_module_is_not_used(tmp_path):
    """Holds: sort/__pycache__ 0777 -> numba pointed at the private user cache directory."""
    top, xdg = _package_copy(tmp_path, "sort")
    code = "import fastbias, numba; print(numba.config.CACHE_DIR)"
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120,
                         env=_env(PYTHONPATH=str(top), XDG_CACHE_HOME=str(xdg)))
    assert run.stdout.strip() == str(xdg / "fastbias-numba")
    assert stat.S_IMODE(os.stat(xdg / "fastbias-numba").st_mode) == 0o700


def _unsafe_cache_dir(tmp_path, kind):
    base = tmp_path / "c"
    base.mkdir(mode=0o700)
    target = base / "cache"
    if kind in ("0777", "0757", "1777", "0770"):
        target.mkdir()
        os.chmod(target, int(kind, 8))
    elif kind == "other-owner":
        if os.geteuid() != 0:
            pytest.skip("needs root to make a directory of another uid")
        target.mkdir(mode=0o700)
        os.chown(target, 54321, -1)
    elif kind == "file":
        target.write_text("x")
    elif kind == "dangling-link":
        os.symlink(base / "nowhere", target)
    elif kind == "world-writable-parent":
        open_parent = base / "open"
        open_parent.mkdir()
        os.chmod(open_parent, 0o777)
        target = open_parent / "cache"
        target.mkdir(mode=0o700)
    elif kind == "other-owned-parent":
        if os.geteuid() != 0:
            pytest.skip("needs root to make a directory of another uid")
        parent = base / "theirs"
        parent.mkdir(mode=0o755)
        target = parent / "cache"
        target.mkdir(mode=0o700)
        os.chown(parent, 54321, -1)
    return target


@pytest.mark.parametrize("kind", ["0777", "0757", "1777", "0770", "other-owner", "file",
                                  "dangling-link", "world-writable-parent",
                                  "other-owned-parent"])
def test_unsafe_numba_cache_dir_is_replaced_by_a_private_one(tmp_path, kind):
    """Holds: an unsafe NUMBA_CACHE_DIR is never used (a private one instead, silently)."""
    given = _unsafe_cache_dir(tmp_path, kind)
    xdg = tmp_path / "xdg"
    xdg.mkdir(mode=0o700)
    code = "import fastbias, numba, os; print(numba.config.CACHE_DIR)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env=_env(PYTHONPATH=ROOT, NUMBA_CACHE_DIR=str(given),
                                               XDG_CACHE_HOME=str(xdg)))
    chosen = run.stdout.strip()
    assert chosen == str(xdg / "fastbias-numba"), (chosen, run.stderr[-1000:])
    assert not os.path.exists(tmp_path / "c" / "nowhere")  # (nothing made through the link)


# ------------------------------------------------------------------ outputs


def _data(tmp_path):
    rows = ["y,s,g"] + [f"{i % 2},{(i * 37 % 101) / 101:.4f},{i % 3 == 0:d}" for i in range(200)]
    path = tmp_path / "d.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def _cli(tmp_path, *argv, umask=None):
    """``fastbias report ARGV -q`` in ``tmp_path``: in this process (tests/cli_runner.py), or,
    with a ``umask``, in a process of its own started under it."""
    if umask is None:
        return cli_runner.run_cli(["report", *argv, "-q"], tmp_path)

    def pre():
        os.umask(umask)
    return subprocess.run([sys.executable, "-m", "fastbias", "report", *argv, "-q"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=_env(PYTHONPATH=ROOT, NUMBA_CACHE_DIR=_cache(tmp_path)),
                          preexec_fn=pre)


def test_outputs_never_replace_an_input_or_follow_a_link(tmp_path):
    data = _data(tmp_path)
    before = data.read_bytes()
    os.link(data, tmp_path / "hard.csv")
    os.symlink("d.csv", tmp_path / "sym.csv")
    os.symlink("nowhere.csv", tmp_path / "dangling.csv")
    (tmp_path / "sub").mkdir()
    os.symlink(str(tmp_path), tmp_path / "sub" / "up")
    base = ["d.csv", "--label", "y", "--scores", "s", "--subgroups", "g", "--force"]
    for out in ["./d.csv", str(tmp_path / "sub" / ".." / "d.csv"), "hard.csv", "sym.csv",
                "dangling.csv", "sub/up/d.csv"]:
        run = _cli(tmp_path, *base, "--out", out)
        assert run.returncode != 0 and "error" in run.stderr, out
    assert data.read_bytes() == before
    assert not os.path.exists(tmp_path / "nowhere.csv")
    run = _cli(tmp_path, *base, "--out", "r.csv", "--out", "./r.csv")
    assert run.returncode != 0 and "given twice" in run.stderr
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".fastbias-")]


def test_output_modes_follow_the_umask_and_keep_a_replaced_files_mode(tmp_path):
    _data(tmp_path)
    base = ["d.csv", "--label", "y", "--scores", "s", "--subgroups", "g"]
    assert _cli(tmp_path, *base, "--out", "new.json", umask=0o077).returncode == 0
    assert stat.S_IMODE(os.stat(tmp_path / "new.json").st_mode) == 0o600
    (tmp_path / "old.csv").write_text("x")
    os.chmod(tmp_path / "old.csv", 0o640)
    assert _cli(tmp_path, *base, "--out", "old.csv", "--force").returncode == 0
    assert stat.S_IMODE(os.stat(tmp_path / "old.csv").st_mode) == 0o640
    assert (tmp_path / "old.csv").read_text().startswith("model,subgroup")


# ------------------------------------------------------------------ escaping


def test_hostile_names_are_neutral_in_csv_html_and_terminal(tmp_path):
    pd = pytest.importorskip("pandas")
    np = pytest.importorskip("numpy")
    pytest.importorskip("pyarrow")
    rng = np.random.default_rng(1)
    n = 400
    names = ["<script>alert(1)</script>", '=HYPERLINK("http://x")', "+1+2", "@SUM(1)",
             "red\x1b[31mX\x1b]0;t\x07", "a\rb\bc", "abc\u202edcba", "x\ny", "\tz"]
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "=m": rng.random(n),
                       '<b onmouseover="alert(1)">m': rng.random(n)})
    for name in names:
        df[name] = rng.integers(0, 2, n)
    df["=feat"] = rng.choice(["=a", "<i>b</i>", "@c"], n)
    df.to_parquet(tmp_path / "h.parquet")
    run = _cli(tmp_path, "h.parquet", "--label", "y", "--scores", "=m",
               '<b onmouseover="alert(1)">m', "--sensitive-features", "=feat",
               "--thresholds", "0.5", "--out", "h.html", "--out", "h.csv", "--wide",
               "--subgroups", *names)
    assert run.returncode == 0, run.stderr[-2000:]
    shown = run.stdout + run.stderr
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f\u202a-\u202e]", shown)
    for path in ("h.csv", "h.thresholds.csv"):
        with open(tmp_path / path, newline="", encoding="utf-8") as handle:
            for row in csv.reader(handle):
                for cell in row:
                    if cell[:1] in ("=", "+", "@", "\t", "\r", "\n", "-"):
                        assert re.fullmatch(r"[-+][0-9.e+-]+|-?inf", cell), (path, cell)
    page = (tmp_path / "h.html").read_text(encoding="utf-8")
    assert "<script" not in page and "<b onmouseover" not in page and "<i>b</i>" not in page
    visible_text = re.sub(r'data-model="[^"]*"', "", page)
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f\u202a-\u202e]", visible_text)


# ------------------------------------------------------------------ bounded memory


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_an_endless_compressed_line_is_refused_within_bounded_memory(tmp_path, fmt):
    """Holds: a line longer than 16 MiB is a named error, not a read of the whole line."""
    import resource

    path = tmp_path / f"line.{fmt}.gz"
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(b"y,s,g\n1,0.5," if fmt == "csv" else b'{"y":1,"s":0.5,"g":"')
        block = b"7" * (1 << 20)
        for _ in range(64):
            out.write(block)
        out.write(b"\n" if fmt == "csv" else b'"}\n')

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, 1_500_000_000))

    run = subprocess.run([sys.executable, "-m", "fastbias", "report", path.name, "--label",
                          "y", "--scores", "s", "--subgroups", "g", "--out", "o.json"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env=_env(PYTHONPATH=ROOT, NUMBA_CACHE_DIR=_cache(tmp_path)),
                         preexec_fn=limit)
    assert run.returncode == 1 and "longer than 16 MiB" in run.stderr
    assert "Traceback" not in run.stderr and not os.path.exists(tmp_path / "o.json")


def test_a_file_too_big_for_the_address_space_limit_is_streamed(tmp_path):
    """Was: under an address-space limit (ulimit -v / prlimit --as 1.5 GB) the default
    memory budget is half of MemAvailable (cli._memory_limit, _available_memory), blind to
    RLIMIT_AS (and to a cgroup's memory.max): a 1.3 MB .csv.gz of 30M rows is read in
    memory and stops with numpy's "Unable to allocate 229. MiB ..." (no word of
    --max-memory). The same file under --max-memory streams in ~300 MB, as the 3 GB bomb
    does. Right: the budget is at most the process's limit, so the run streams (or at
    least the error names --max-memory)."""
    import resource

    path = tmp_path / "mid.csv.gz"
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(b"y,s,g\n")
        block = b"1,0.9,1\n0,0.1,0\n1,0.4,0\n0,0.6,1\n" * 250_000
        for _ in range(30):  # 30M rows, 240 MB of text
            out.write(block)

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, 1_500_000_000))

    run = subprocess.run([sys.executable, "-m", "fastbias", "report", path.name, "--label",
                          "y", "--scores", "s", "--subgroups", "g", "--out", "o.json"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=500,
                         env=_env(PYTHONPATH=ROOT, NUMBA_CACHE_DIR=_cache(tmp_path)),
                         preexec_fn=limit)
    assert run.returncode == 0, run.stderr[-1500:]
    # (streamed, and right: the subgroup's 7.5M positives at 0.9 above its negatives at 0.6,
    # which lie above the background's positives at 0.4)
    report = json.loads((tmp_path / "o.json").read_text())
    assert report["settings"]["engine"] == "streaming"
    row = report["models"][0]["subgroups"][0]
    assert (row["subgroup_negatives"], row["subgroup_positives"]) == (7_500_000, 7_500_000)
    assert (row["subgroup_auc"], row["bpsn_auc"], row["bnsp_auc"]) == (1.0, 0.0, 1.0)
