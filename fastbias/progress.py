"""Progress on stderr: one display at a time, drawn by tqdm (the ``cli`` extra).

Two kinds of display share the terminal's last line:

* :class:`Status`, a line of text that changes (``reading data.csv: 45% (1,200,000
  rows)``) or, with :meth:`Status.ticking`, a step with its elapsed time;
* :class:`Bar`, a counted bar (``bootstrap: 2462/6000 replicates``), shared by every
  model and universe of one call so that it only ever counts up.

Only the newest open display is drawn: an older one is hidden while a newer one is open
and comes back when it closes (the CLI's ``evaluating ...`` line gives way to the
bootstrap bar, then returns). Nothing is drawn unless the display is enabled, which by
default means stderr is a terminal; :func:`shown` sets that default for a block (the
CLI's ``--progress``/``-q``). Without tqdm nothing live is drawn (the CLI then prints
each step on a line of its own, as when its output is piped).
"""
from __future__ import annotations

import sys
import threading
from contextlib import contextmanager

_LOCK = threading.RLock()
_OPEN: list = []          # the open, drawn displays, newest last; only the last one draws
_DEFAULT: list = [None]   # shown()'s setting: None = "stderr is a terminal"


def _tqdm():
    """tqdm's class, or None when the ``cli`` extra is not installed."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


def stderr_is_terminal() -> bool:
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def enabled(setting: bool | None = None) -> bool:
    """Whether to draw: ``setting`` if given, else :func:`shown`'s, else stderr is a terminal."""
    if setting is None:
        setting = _DEFAULT[-1]
    if setting is None:
        setting = stderr_is_terminal()
    return bool(setting)


def live_available() -> bool:
    """Whether a live display can be drawn at all (tqdm is installed)."""
    return _tqdm() is not None


@contextmanager
def shown(setting: bool | None):
    """Within the block, displays not told otherwise are drawn iff ``setting`` (None: when
    stderr is a terminal). The setting is process-wide, like the terminal it is about: use
    it around a whole run, not in threads that run concurrently."""
    with _LOCK:
        _DEFAULT.append(setting)
    try:
        yield
    finally:
        with _LOCK:
            _DEFAULT.pop()


class _Display:
    """One tqdm instance in the stack of open displays (or nothing when not drawn)."""

    def __init__(self, make):
        self._bar = None
        if make is None:
            return
        with _LOCK:
            if _OPEN:
                _OPEN[-1]._bar.clear()
            self._bar = make()
            _OPEN.append(self)

    @property
    def drawn(self) -> bool:
        return self._bar is not None

    def _on_top(self) -> bool:
        return bool(_OPEN) and _OPEN[-1] is self

    def close(self) -> None:
        """Take the display away (its line is cleared); the one beneath comes back."""
        with _LOCK:
            if self._bar is None:
                return
            bar, self._bar = self._bar, None
            _OPEN.remove(self)
            bar.close()
            if _OPEN:
                _OPEN[-1]._bar.refresh()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class Bar(_Display):
    """A counted progress bar of ``total`` steps on stderr (thread-safe :meth:`update`).

    Drawn (after ``delay`` seconds, at most every ``mininterval``) when :func:`enabled`
    and tqdm is installed; otherwise it only counts. Several threads may update one bar.
    """

    def __init__(self, total: int, desc: str, *, unit: str = "it", setting=None,
                 delay: float = 0.5, mininterval: float = 0.1):
        self.done = 0
        tqdm = _tqdm() if enabled(setting) else None
        super().__init__(None if tqdm is None else lambda: tqdm(
            total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, delay=delay,
            position=0, miniters=1, mininterval=mininterval, dynamic_ncols=True))

    def update(self, k: int = 1) -> None:
        with _LOCK:
            self.done += k
            if self._bar is None:
                return
            if self._on_top():
                self._bar.update(k)
            else:  # hidden under a newer display: count without drawing
                self._bar.n += k


class Status(_Display):
    """One line of changing text on stderr (no bar), drawn when :func:`enabled` and tqdm
    is installed; :meth:`ticking` adds the elapsed time of a step."""

    def __init__(self, text: str = "", *, setting=None, elapsed: bool = False):
        tqdm = _tqdm() if enabled(setting) else None
        fmt = "{desc} {elapsed}" if elapsed else "{desc}"
        super().__init__(None if tqdm is None else lambda: tqdm(
            total=None, desc=text, bar_format=fmt, file=sys.stderr, leave=False, position=0,
            miniters=1, mininterval=0.1, dynamic_ncols=True))
        self._stop = None

    def update(self, text: str) -> None:
        with _LOCK:
            if self._bar is not None:
                self._bar.set_description_str(text, refresh=self._on_top())

    def tick(self, every: float = 0.2) -> None:
        """Redraw every ``every`` seconds (its elapsed time moves) until closed."""
        if self._bar is None:
            return
        self._stop = threading.Event()

        def run(stop=self._stop):
            while not stop.wait(every):
                with _LOCK:
                    if self._bar is not None and self._on_top():
                        self._bar.refresh()

        threading.Thread(target=run, name="fastbias-progress", daemon=True).start()

    def close(self) -> None:
        if self._stop is not None:
            self._stop.set()
        super().close()


def open_displays() -> int:
    """How many displays are open now (see :func:`close_displays`)."""
    with _LOCK:
        return len(_OPEN)


def close_displays(keep: int = 0) -> None:
    """Close the displays opened after the first ``keep`` (newest first): what an error
    left open, so that its message starts on a clean line and no stale line comes back."""
    while True:
        with _LOCK:
            if len(_OPEN) <= keep:
                return
            display = _OPEN[-1]
        display.close()


@contextmanager
def ticking(text: str, setting=None):
    """``text`` and the time since it started, redrawn until the block ends."""
    status = Status(text, setting=setting, elapsed=True)
    status.tick()
    try:
        yield status
    finally:
        status.close()


def bootstrap_bar(progress, total: int, desc: str = "bootstrap"):
    """``(bar, owned)``: ``progress`` itself when it is a :class:`Bar` (a bar shared by
    several runs), else a new bar it owns and closes (``progress``: True, False, or None
    for :func:`enabled`'s default)."""
    if isinstance(progress, Bar):
        return progress, False
    return Bar(total, desc, unit="replicate", setting=progress), True


__all__ = ["Bar", "Status", "bootstrap_bar", "close_displays", "enabled", "live_available",
           "open_displays", "shown", "stderr_is_terminal", "ticking"]
