"""The progress of ``migrate --apply``: a live line on a terminal, plain periodic lines
otherwise, and the interruption it carries (a clock the test moves, no timing)."""

from __future__ import annotations

import io

import pytest

from host.storage.progress import Interrupted, StreamProgress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_every_interval_and_a_summary() -> None:
    clock, stream = Clock(), io.StringIO()
    progress = StreamProgress(stream, interval=5, clock=clock)
    assert not progress.tty
    progress.start("converting t.qty", 1000)
    clock.now += 1
    progress.advance(200)  # within the interval: nothing
    clock.now += 4
    progress.advance(300)
    clock.now += 5
    progress.advance(500)
    progress.finish()
    assert stream.getvalue().splitlines() == [
        "converting t.qty: 0/1,000 rows (0%), 0 rows/s",
        "converting t.qty: 500/1,000 rows (50%), 100 rows/s, 5s left",
        "converting t.qty: 1,000/1,000 rows (100%), 100 rows/s, 0s left",
        "converting t.qty: 1,000 rows in 10.0s (100 rows/s)",
    ]


def test_a_terminal_gets_one_line_rewritten_in_place() -> None:
    clock, stream = Clock(), Terminal()
    progress = StreamProgress(stream, interval=5, clock=clock)
    assert progress.tty
    progress.start("checking t.qty", 90_000)
    clock.now += 0.5
    progress.advance(30_000)
    clock.now += 100
    progress.advance(30_000)
    progress.finish()
    text = stream.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n")
    assert text.count("\r\x1b[2K") == 4
    assert "30,000/90,000 rows (33%), 60,000 rows/s, 1s left" in text
    assert "60,000/90,000 rows (67%), 597 rows/s, 50s left" in text


def test_an_interruption_stops_at_the_next_page() -> None:
    clock, stream = Clock(), io.StringIO()
    progress = StreamProgress(stream, interval=5, clock=clock)
    progress.start("converting t.qty", 1000)
    progress.advance(500)
    progress.interrupt()
    with pytest.raises(Interrupted, match=r"interrupted during converting t.qty \(1,000 rows"):
        progress.advance(500)
