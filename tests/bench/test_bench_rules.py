"""``python bench/rules.py`` must keep working (few creates, one round)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bench_rules_measures_a_create_with_and_without_a_validator() -> None:
    backend = "postgresql" if os.environ.get("TESSERA_TEST_BACKEND") == "postgresql" else "sqlite"
    command = [
        sys.executable,
        str(REPO / "bench" / "rules.py"),
        *("--backend", backend, "--creates", "5", "--rounds", "1"),
    ]
    # On PostgreSQL the bench makes a database of its own and drops it: the test session's
    # database is shared with the tests that start real servers after this one.
    env = {k: v for k, v in os.environ.items() if k != "TESSERA_BENCH_POSTGRES_URL"}
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    lines = done.stdout.splitlines()
    for kind in ("plain", "checked", "reading"):
        [line] = [line for line in lines if f"bench.{kind}.create" in line]
        assert "median" in line and "ratio" in line and "(5 creates)" in line
