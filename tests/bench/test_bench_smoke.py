"""The benchmark harness must keep working: ``python bench/run.py --smoke`` end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# The smoke runs use SQLite whatever the run's backend: the pg environment leaves them out.
pytestmark = pytest.mark.backend_neutral

REPO = Path(__file__).resolve().parents[2]
THROUGHPUT = ("create", "transition", "update", "detail", "list100")


@pytest.mark.slow
def test_bench_smoke_produces_every_scenario(tmp_path: Path) -> None:
    output = tmp_path / "smoke.json"
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "run.py"), "--smoke", "--output", str(output)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(output.read_text())

    measured = {(e["scenario"], e["target"]) for e in result["throughput"]}
    for scenario in THROUGHPUT:
        for target in ("host", "baseline"):
            assert (scenario, target) in measured, f"{scenario} for {target} missing"
    assert all(e["count"] > 0 for e in result["throughput"]), result["throughput"]
    assert all(e["non_2xx"] == 0 and e["errors"] == 0 for e in result["throughput"])
    assert result["ceiling"] and result["ceiling"][0]["rps"] > 0
    assert {e["target"] for e in result["scaling"]} == {"host", "baseline"}
    assert all(e["status"] == 200 and e["bytes"] > 0 for e in result["scaling"])
    assert {e["target"] for e in result["startup"]} == {"host", "baseline", "ceiling"}
    assert result["compile"] and result["compile"][0]["compile_median_s"] > 0
    assert result["parity"] and all(p["identical"] for p in result["parity"]), result["parity"]
    assert "| sqlite | 1 | create |" in done.stdout


@pytest.mark.slow
def test_read_tail_bench_compares_two_trees_in_one_run() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "readtail.py"),
            "--before",
            "HEAD",
            "--rounds",
            "1",
            "--duration",
            "2",
            "--warmup",
            "0.5",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    rows = [
        line
        for line in done.stdout.splitlines()
        if line.startswith("| detail") or line.startswith("| list100")
    ]
    assert len(rows) == 4, done.stdout
    assert all(row.rstrip(" |").endswith("| 0") for row in rows), done.stdout
