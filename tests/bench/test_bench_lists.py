"""``python bench/lists.py`` must keep working (tiny tenants, a few pages, a few samples)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bench_lists_measures_every_scenario(tmp_path: Path) -> None:
    backend = "postgresql" if os.environ.get("TESSERA_TEST_BACKEND") == "postgresql" else "sqlite"
    output = tmp_path / "lists.json"
    command = [
        sys.executable,
        str(REPO / "bench" / "lists.py"),
        *("--backend", backend, "--big", "1200", "--small", "300", "--noise", "300"),
        *(
            "--pages",
            "4",
            "--page-size",
            "20",
            "--samples",
            "3",
            "--q-samples",
            "2",
            "--output",
            str(output),
        ),
    ]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    (result,) = json.loads(output.read_text())
    assert result["backend"] == backend
    assert result["rows"] == {
        "big": 1200,
        "small": 300,
        "noise0": 100,
        "noise1": 100,
        "noise2": 100,
    }
    seen = {(m["scenario"], m["tenant"], m["page"]) for m in result["measurements"]}
    assert ("open, newest first", "big", 4) in seen and ("open, newest first", "small", 1) in seen
    assert ("q=nomatch (no row)", "big", 1) in seen
    assert all(m["server_p50_ms"] > 0 for m in result["measurements"])
    # every benchmarked query of the big tenant has its plan, through the list index
    assert "open, newest first / page 4" in result["explain"]
    assert (
        "helpdesk__ticket___state__created_at___lst_"
        in result["explain"]["open, newest first / page 4"]
    )
