"""``python bench/evolution.py`` must keep working (tiny row count, one run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# The smoke run uses SQLite whatever the run's backend: the pg environment leaves it out.
pytestmark = pytest.mark.backend_neutral

REPO = Path(__file__).resolve().parents[2]
STEPS = (
    "unchanged",
    "metadata",
    "additive",
    "plan type-change",
    "apply type-change",
    "plan converted type-change",
    "apply converted type-change",
)


@pytest.mark.slow
def test_bench_evolution_reports_every_step() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "evolution.py"), "--rows", "50", "--runs", "1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    for step in STEPS:
        assert f"| {step} | " in done.stdout, done.stdout
