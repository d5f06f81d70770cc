"""Schemathesis against a real Hypercorn process serving both sample plugins, driven by the
service's own OpenAPI document: no server error, status codes, content types, response
headers and response bodies as documented, in every phase (coverage, fuzzing, and stateful
sequences following the document's links). The budget is fixed and small for CI; set
``TESSERA_FUZZ_EXAMPLES`` (for example 500) for the longer run before a release
(docs/openapi.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..server.conftest import run_server

pytestmark = pytest.mark.slow

CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
)
EXAMPLES = int(os.environ.get("TESSERA_FUZZ_EXAMPLES", "25"))
STATEFUL_SCENARIOS = 2 * EXAMPLES
SEED = os.environ.get("TESSERA_FUZZ_SEED", "1")
ROLES = "agent,requester,clerk,accountant,auditor"
CONFIG = Path(__file__).with_name("schemathesis.toml")


def test_schemathesis_finds_nothing(tmp_path: Path) -> None:
    pytest.importorskip("schemathesis")
    config = tmp_path / "schemathesis.toml"
    config.write_text(
        CONFIG.read_text()
        + f"\n[phases.stateful.generation]\nmax-examples = {STATEFUL_SCENARIOS}\n"
    )
    report = tmp_path / "report.json"
    env = {"TESSERA_PLUGINS_ONLY": "helpdesk,billing"}
    with run_server(tmp_path, env=env) as server:
        api = f"{server.base_url}/api"
        done = subprocess.run(
            [sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "run",
             f"{api}/openapi.json", "--url", api, "--checks", ",".join(CHECKS),
             "--max-examples", str(EXAMPLES), "--seed", SEED, "--workers", "1",
             "--generation-database", "none", "--no-color",
             # Every role: the actions run, so the links reach past the role check (and
             # the operator's audit routes answer).
             "--header", f"X-Actor-Roles: {ROLES}",
             "--report", "json", "--report-json-path", str(report)],
            capture_output=True, text=True, cwd=tmp_path, timeout=900,
        )  # fmt: skip
        log = server.log.read_text()
    assert done.returncode == 0, done.stdout[-20000:] + done.stderr[-5000:]
    result = json.loads(report.read_text())
    operations, cases = result["operations"], result["test_cases"]
    figures = (
        f"schemathesis {result['schemathesis_version']}: {operations['tested']} operations, "
        f"{cases['generated']} test cases, {cases['with_failures']} failing, "
        f"{len(result['errors'])} errors, {result['running_time']:.0f}s"
    )
    print(figures)
    assert result["failures"] == [] and result["errors"] == [], figures
    # Every operation (the 22 paths' GET or POST, and their OPTIONS) was tested: the
    # live stream and the audit routes among them.
    assert operations["tested"] == operations["selected"] == operations["total"] >= 44, figures
    assert cases["generated"] > 44 * EXAMPLES // 2, figures
    phases = {name: phase["status"] for name, phase in result["phases"].items()}
    assert phases == {"examples": "skip", "coverage": "success", "fuzzing": "success",
                      "stateful": "success"}, figures  # fmt: skip
    assert "Traceback" not in log, log[-5000:]
