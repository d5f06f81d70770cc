"""``python bench/relations.py`` must keep working (few rows, few samples)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bench_relations_measures_followed_and_baseline(tmp_path: Path) -> None:
    backend = "postgresql" if os.environ.get("TESSERA_TEST_BACKEND") == "postgresql" else "sqlite"
    output = tmp_path / "relations.json"
    command = [
        sys.executable,
        str(REPO / "bench" / "relations.py"),
        *("--backend", backend, "--projects", "6", "--issues", "60"),
        *("--samples", "3", "--output", str(output)),
    ]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    (result,) = json.loads(output.read_text())
    assert result["backend"] == backend and result["issues"] == 60
    assert [cell["scenario"] for cell in result["cells"]] == [
        "by title + project.key",
        "sorted by project.key",
        "filter project.key=P7",
        "followed under a read floor",
    ]
    assert all(cell["ratio_p50"] > 0 for cell in result["cells"])
