"""Progress of the long steps of a schema evolution, and their interruption.

The evolution calls :meth:`Progress.start` before a step that reads or writes every row of a
table (checking or converting the values of a type change, mapping removed options), then
:meth:`Progress.advance` after each page of rows. :class:`StreamProgress` (``tessera migrate
--apply``) writes to a stream: on a terminal one line rewritten in place at most ten times a
second, otherwise a plain line every ``interval`` seconds; both end each step with a summary
line. Both check the interruption flag at every page: once :meth:`StreamProgress.interrupt`
was called (from a SIGINT or SIGTERM handler), the next ``advance`` raises
:class:`Interrupted`, and the transaction the evolution runs in is rolled back.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final, TextIO

__all__ = ["NO_PROGRESS", "Interrupted", "Progress", "StreamProgress"]

TTY_REFRESH_S: Final = 0.1


class Interrupted(Exception):
    """The evolution was asked to stop (SIGINT, SIGTERM); its transaction is rolled back."""


class Progress:
    """Reports nothing; the base of reporters."""

    def start(self, label: str, total: int) -> None:
        """A step over ``total`` rows begins."""

    def advance(self, rows: int) -> None:
        """``rows`` more rows are done. :raises Interrupted: when asked to stop."""

    def finish(self) -> None:
        """The current step is done."""


NO_PROGRESS: Final = Progress()


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class StreamProgress(Progress):
    """Rows done, rate and time left of each step, written to ``stream``."""

    def __init__(
        self,
        stream: TextIO,
        *,
        interval: float = 5.0,
        tty: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self.interval = TTY_REFRESH_S if self.tty else interval
        self.clock = clock
        self.label = ""
        self.total = 0
        self.done = 0
        self.started = 0.0
        self.shown = 0.0
        self.stop_requested = False

    def interrupt(self) -> None:
        """Ask the evolution to stop at the next page (safe to call from a signal handler)."""
        self.stop_requested = True

    def start(self, label: str, total: int) -> None:
        self.label, self.total, self.done = label, total, 0
        self.started = self.shown = self.clock()
        self._write(self._status(self.started))
        self._check()

    def advance(self, rows: int) -> None:
        self.done += rows
        now = self.clock()
        if now - self.shown >= self.interval:
            self.shown = now
            self._write(self._status(now))
        self._check()

    def finish(self) -> None:
        elapsed = self.clock() - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        self._write(f"{self.label}: {self.done:,} rows in {elapsed:.1f}s ({rate:,.0f} rows/s)")
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()

    def _check(self) -> None:
        if self.stop_requested:
            if self.tty:
                self.stream.write("\n")
            raise Interrupted(f"interrupted during {self.label} ({self.done:,} rows done)")

    def _status(self, now: float) -> str:
        elapsed = now - self.started
        rate = self.done / elapsed if elapsed > 0 and self.done else 0.0
        share = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        left = (
            f", {_duration((self.total - self.done) / rate)} left"
            if rate > 0 and self.total
            else ""
        )
        return f"{self.label}: {self.done:,}/{self.total:,} rows{share}, {rate:,.0f} rows/s{left}"

    def _write(self, line: str) -> None:
        if self.tty:
            self.stream.write(f"\r\x1b[2K{line}")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
