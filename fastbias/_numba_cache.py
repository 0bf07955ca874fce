"""Where numba keeps fastbias's compiled kernels: never a directory another user can write.

Numba caches each ``@njit(cache=True)`` kernel as files it later loads with
``pickle``: whoever can write into the cache directory can make the process
that loads it run their code. So before any kernel module is imported,
:func:`configure` finds the directory numba would use (``NUMBA_CACHE_DIR``,
the package's ``__pycache__``, or the user cache) and keeps it only if it is
private: a real directory owned by this user (or root), writable by nobody
else, below ancestors that nobody else can rename things in (owned by this
user or root, and not writable by others unless sticky, as ``/tmp`` is).
Otherwise numba is pointed at a private directory: the user's cache directory
(``$XDG_CACHE_HOME`` or ``~/.cache``, then ``fastbias-numba``), else
``$TMPDIR/fastbias-numba-cache-<uid>``, each created owner-only (0700) and
verified before use, else a fresh ``tempfile.mkdtemp`` (safe, but the cache
then lasts only as long as the process). Import never fails for this: when no
directory can be written at all, the kernels still compile, uncached.
"""
from __future__ import annotations

import logging
import os
import stat
import tempfile
import threading

PRIVATE_FALLBACK = "fastbias-numba"


def _uid():
    return os.getuid() if hasattr(os, "getuid") else None


def is_private_directory(path, uid=None) -> bool:
    """Whether no user but ``uid`` (default: this one) or root can write into ``path`` or
    replace it (see the module docstring)."""
    uid = _uid() if uid is None else uid
    try:
        real = os.path.realpath(path)
        info = os.stat(real)
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode):
        return False
    if uid is None:  # no POSIX owners to check (Windows): the user's own profile decides
        return True
    if info.st_uid not in (uid, 0) or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return False
    if not _links_trusted(path, uid):
        return False
    parent = os.path.dirname(real)
    while True:
        try:
            info = os.stat(parent)
        except OSError:
            return False
        if info.st_uid not in (uid, 0):
            return False
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX:
            return False
        if os.path.dirname(parent) == parent:
            return True
        parent = os.path.dirname(parent)


def _links_trusted(path, uid) -> bool:
    """Whether every symbolic link on the way to ``path`` as given (numba reads the cache
    through it, not through its resolved form) is owned by ``uid`` or root, in a directory
    owned by them that no other user can write into: another user could otherwise point a
    link elsewhere after the check (found by review: a private directory reached through a
    link in a world-writable folder was trusted)."""
    current = os.path.abspath(path)
    parts = []
    while True:
        head, tail = os.path.split(current)
        if not tail:
            break
        parts.append(tail)
        current = head
    for part in reversed(parts):
        current = os.path.join(current, part)
        try:
            info = os.lstat(current)
        except OSError:
            return False
        if not stat.S_ISLNK(info.st_mode):
            continue
        try:
            folder = os.stat(os.path.dirname(current))
        except OSError:
            return False
        # (its folder's owner can replace it, and so can everyone where others may write
        # into the folder, unless it is sticky: there only the link's owner and root can)
        if info.st_uid not in (uid, 0) or folder.st_uid not in (uid, 0) \
                or (folder.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
                    and not folder.st_mode & stat.S_ISVTX):
            return False
        current = os.path.realpath(current)  # (the rest of the way from where it points)
    return True


def _private_directory(path) -> str | None:
    """``path`` created owner-only (or found private) and verified; None if it cannot be.

    A directory that already exists is never "repaired": if others could
    write into it, they may already have.
    """
    try:
        parent = os.path.dirname(os.path.abspath(path))
        os.makedirs(parent, mode=0o700, exist_ok=True)
        try:
            os.mkdir(path, 0o700)
            os.chmod(path, 0o700)  # ours, just made: no umask may widen it
        except FileExistsError:
            pass
    except OSError:
        return None
    if not is_private_directory(path) or not os.access(path, os.W_OK | os.X_OK):
        return None
    return path


def private_cache_directory() -> str:
    """A directory for the cache that only this user can write (created if needed)."""
    user_cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                  ".cache")
    candidates = [os.path.join(user_cache, PRIVATE_FALLBACK)]
    uid = _uid()
    candidates.append(os.path.join(tempfile.gettempdir(),
                                   f"fastbias-numba-cache-{'user' if uid is None else uid}"))
    for candidate in candidates:
        chosen = _private_directory(candidate)
        if chosen is not None:
            return chosen
    return tempfile.mkdtemp(prefix="fastbias-numba-")  # 0700, fresh: nobody planted anything


#: the modules that hold compiled kernels (each directory has its own in-tree cache; a test
#: checks that every module with ``cache=True`` kernels is here: found by review,
#: validate's CSV kernel was not, and its folder was never checked)
KERNEL_MODULES = ("prepare/_kernels.py", "sort/_kernels.py", "sweep/_kernels.py",
                  "intervals/_kernels.py", "validate/_kernels.py")


def _numba_cache_paths() -> list | None:
    """The directories numba would cache this package's kernels in (None: not everywhere).

    Asked of numba for a stand-in function "defined" in each kernel module,
    without importing (and so compiling or loading) anything.
    """
    from numba.core.caching import FunctionCache

    package = os.path.dirname(os.path.abspath(__file__))
    paths = []
    for module in KERNEL_MODULES:
        code = _numba_cache_paths.__code__.replace(co_filename=os.path.join(package, module))
        probe = type(_numba_cache_paths)(code, {})
        try:
            paths.append(FunctionCache(probe)._cache_path)
        except RuntimeError:  # "cannot cache function ...: no locator available"
            return None
    return paths


def _close_below(path: str, top: str) -> None:
    """Remove group/other write access from ``path`` and its parents below ``top`` (ours only)."""
    top = os.path.realpath(top)
    path = os.path.realpath(path)
    while path.startswith(top + os.sep):
        try:
            info = os.stat(path)
            if info.st_uid == _uid():
                os.chmod(path, stat.S_IMODE(info.st_mode) & ~(stat.S_IWGRP | stat.S_IWOTH))
        except OSError:
            return
        path = os.path.dirname(path)


def configure() -> None:
    """Point numba at a private cache directory unless the one it would use already is."""
    try:
        import numba

        if numba.config.DISABLE_JIT:
            return
        given = numba.config.CACHE_DIR
        # a NUMBA_CACHE_DIR is judged before numba touches it (it creates directories there)
        trusted = not given or (_private_directory(given) if not os.path.exists(given)
                                else is_private_directory(given))
        paths = _numba_cache_paths() if trusted else None
        if paths is not None and all(is_private_directory(path) for path in paths):
            return
        safe = private_cache_directory()
        os.environ["NUMBA_CACHE_DIR"] = safe  # survives numba.config reloads
        numba.config.CACHE_DIR = safe
        for path in _numba_cache_paths() or []:  # numba adds subdirectories: private too
            if not is_private_directory(path):
                _close_below(path, safe)
            if not is_private_directory(path):
                safe = tempfile.mkdtemp(prefix="fastbias-numba-")
                os.environ["NUMBA_CACHE_DIR"] = safe
                numba.config.CACHE_DIR = safe
                break
    except Exception:  # never let the check itself break the import
        pass


# ---------------------------------------------------------------------- first use

#: about how long one kernel takes to compile (measured on a 2-core EPYC VM: 0.1-2 s each)
SECONDS_PER_KERNEL = 0.5


logger = logging.getLogger("fastbias")
_ready: set = set()  # the kernel sets known compiled (or cached) in this process
_announce_lock = threading.Lock()


def read_only(values):
    """A read-only view of the array ``values`` (its memory, no copy). Numba compiles a
    kernel once per argument type, and a read-only array is another type than a writable
    one: a kernel that only reads an input the caller may hand in either way, given it so
    always, compiles once instead of once per combination of its inputs' flags."""
    view = values.view()
    view.flags.writeable = False
    return view


def _needs_compiling(dispatcher, kind=None) -> bool:
    """Whether a call of this kernel must compile it: nothing compiled in this process and
    no cache index for its current source on disk. ``kind``: a test of a compiled version's
    argument types, for a call that needs a version of its own (the exact walks'): none of
    that kind compiled in this process nor in the cache's index (read where numba lets it
    be; where not, nothing is said)."""
    signatures = getattr(dispatcher, "signatures", None)
    if signatures is None:  # a plain function (no JIT)
        return False
    if kind is not None:
        if any(kind(signature) for signature in signatures):
            return False
        try:
            index = dispatcher._cache._cache_file._load_index()
            return not any(kind(key[0]) for key in index)
        except Exception:  # (numba's cache internals: not known)
            return False
    if signatures:  # compiled already
        return False
    cache = getattr(dispatcher, "_cache", None)
    index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
    return not (index and os.path.exists(index))


def announce_compiling(name: str, dispatchers, note: str = "",
                       seconds_each: float | None = None, kind=None,
                       in_place: bool | None = None) -> int:
    """Log one line (``logging``, logger ``"fastbias"``, INFO) for a call that must
    compile kernels: which, about how long, and that they are cached afterwards.

    ``name`` names the set (e.g. ``"counting"``); a set is checked once a process (ready
    or not: a set still compiling is the caller's to follow), so this costs nothing on
    later calls. Returns how many of the
    kernels must compile (0 when all are ready); ``note`` ends the line; ``seconds_each``:
    about how long one of them compiles (default SECONDS_PER_KERNEL); ``kind``: the
    version the call needs (see :func:`_needs_compiling`).

    ``in_place`` (default: no ``note``, which only a call that computes in numpy meanwhile
    gives): the call compiles the kernels itself, as it needs them. Which of the set it
    needs depends on its data (a small call sorts without the bucket kernels), so the line
    is logged only as one of them starts compiling (Numba's ``numba:compile`` event), never
    for a set the call finds in the cache after all. Otherwise it is logged now (a
    background process compiles them all).
    """
    with _announce_lock:  # models evaluated in threads: one line, not one per model
        if name in _ready:
            return 0
        missing = [d for d in dispatchers
                   if (_needs_compiling(d) if kind is None else _needs_compiling(d, kind))]
        _ready.add(name)
        seconds = max(1, round((seconds_each or SECONDS_PER_KERNEL) * len(missing)))
        if missing and (not note if in_place is None else in_place):
            # (how many of them the call compiles is not known: the line does not say)
            _log_when_compiled(missing, kind, (
                "compiling kernels for first use (%s: about %d s, cached afterwards)%s",
                name, seconds, note))
            return len(missing)
    if missing:
        logger.info("compiling kernels for first use (%s: %d kernel%s, about %d s, cached "
                    "afterwards)%s", name, len(missing), "" if len(missing) == 1 else "s",
                    seconds, note)
    return len(missing)


#: id(dispatcher) -> [(its version's test or None, line)] of the lines still to log as one of
#: their kernels starts compiling (see :func:`announce_compiling`'s ``in_place``)
_pending: dict = {}
_listening = [False]


def _log_when_compiled(dispatchers, kind, line: tuple) -> None:
    """Keep ``line`` until one of ``dispatchers`` (a version of ``kind``, if given) starts
    compiling. Called under _announce_lock."""
    if not _listening[0]:
        from numba.core import event

        event.register("numba:compile", _compile_listener())
        _listening[0] = True
    for dispatcher in dispatchers:
        _pending.setdefault(id(dispatcher), []).append((kind, line))


def _compiling(dispatcher, signature) -> None:
    """Log the first line kept for ``dispatcher`` whose version is the one compiling now
    (``signature``: its argument types, or None), and forget that line for its other
    kernels."""
    with _announce_lock:
        entries = _pending.get(id(dispatcher), [])
        due = next((line for kind, line in entries
                    if kind is None or signature is None or kind(signature)), None)
        if due is None:
            return
        for key in list(_pending):
            kept = [entry for entry in _pending[key] if entry[1] is not due]
            if kept:
                _pending[key] = kept
            else:
                del _pending[key]
    logger.info(*due)


def _compile_listener():
    """A listener of Numba's ``numba:compile`` events (a version not found in the cache
    starts compiling), made on first use: this module is imported before numba's config is
    set."""
    from numba.core import event

    class CompileListener(event.Listener):
        def on_start(self, event):
            data = event.data or {}
            dispatcher, args = data.get("dispatcher"), data.get("args")
            if dispatcher is not None and id(dispatcher) in _pending:
                _compiling(dispatcher, tuple(args) if args is not None else None)

        def on_end(self, event):
            pass

    return CompileListener()
