"""``python bench/counters.py`` must keep working (few clients and rows, one run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# The smoke run uses SQLite whatever the run's backend: the pg environment leaves it out.
pytestmark = pytest.mark.backend_neutral

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bench_counters_reports_both_parts() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "counters.py"),
            *("--clients", "5", "--runs", "1"),
            *("--rows", "50"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    for line in ("increment: 5 concurrent counts", "read-then-patch: 5 concurrent counts"):
        assert line in done.stdout, done.stdout
    assert "50 rows mapped, versioned" in done.stdout and "50 rows mapped, in place" in done.stdout
