"""``python bench/availability.py`` must keep working (few rows, few samples)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bench_availability_measures_both_versions(tmp_path: Path) -> None:
    backend = "postgresql" if os.environ.get("TESSERA_TEST_BACKEND") == "postgresql" else "sqlite"
    output = tmp_path / "availability.json"
    command = [
        sys.executable,
        str(REPO / "bench" / "availability.py"),
        *("--backend", backend, "--rows", "60", "--samples", "3", "--output", str(output)),
    ]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    (result,) = json.loads(output.read_text())
    assert result["backend"] == backend
    assert [cell["scenario"] for cell in result["cells"]] == [
        "queue (no custom policy)",
        "mine (custom policy helpdesk.own_ticket)",
        "limits (batch policy reading the database)",
    ]
    assert all(cell["ratio_p50"] > 0 for cell in result["cells"])
