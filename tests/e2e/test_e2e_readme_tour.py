"""The README's tour runs: every ``curl`` command of its "Tour" section is run against a real
server, and its output must match the one the README shows (ids, versions and timestamps are
compared by shape; an id or a page cursor the README shows is mapped to the one this run
got)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from plugin_api.errors import ALL_ERRORS

from ..server.conftest import run_server

pytestmark = pytest.mark.slow

README = Path(__file__).resolve().parents[2] / "README.md"
README_BASE = "http://127.0.0.1:8000"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
ULID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
STATUS = {error.kind: error.status for error in ALL_ERRORS}
EVENTUAL = "helpdesk.notification.inbox"
"""Steps showing what a subscriber wrote after a commit."""


def tour_steps() -> list[tuple[str, Any]]:
    """(command, shown output) pairs of the README's Tour section, in order."""
    text = README.read_text()
    section = text[text.index("\n## Tour\n") :]
    section = section[: section.index("\n## ", 1)]
    blocks = FENCE.findall(section)
    steps = []
    for (lang, command), (out_lang, output) in zip(blocks[::2], blocks[1::2], strict=True):
        assert (lang, out_lang) == ("sh", "json"), "each sh block is followed by its output"
        assert command.startswith("curl -s "), command
        steps.append((command.strip(), json.loads(output)))
    return steps


def match(expected: Any, actual: Any, ids: dict[str, str], where: str = "$") -> None:
    """``actual`` equals ``expected`` except for ULIDs and cursors (mapped through ``ids``)
    and timestamps."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and list(actual) == list(expected), (where, actual)
        for key, value in expected.items():
            match(value, actual[key], ids, f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), (where, actual)
        for index, (value, got) in enumerate(zip(expected, actual, strict=True)):
            match(value, got, ids, f"{where}[{index}]")
    elif isinstance(expected, str) and where.endswith(".nextCursor"):
        # an opaque cursor: mapped like an id, so the next command sends this run's cursor
        assert isinstance(actual, str) and actual, (where, actual)
        assert ids.setdefault(expected, actual) == actual, (where, actual)
    elif isinstance(expected, str) and ULID.match(expected):
        assert isinstance(actual, str) and ULID.match(actual), (where, actual)
        assert ids.setdefault(expected, actual) == actual, (where, actual)
    elif isinstance(expected, str) and TIMESTAMP.match(expected):
        assert isinstance(actual, str) and TIMESTAMP.match(actual), (where, actual)
    else:
        assert actual == expected, (where, actual)


def test_the_tour_covers_the_ticket_lifecycle() -> None:
    commands = " ".join(command for command, _ in tour_steps())
    for path in (
        "actions/helpdesk.ticket.create",
        "projections/helpdesk.ticket.queue",
        "actions/helpdesk.ticket.start",
        "actions/helpdesk.ticket.resolve",
        "actions/billing.charge.create",
        "projections/helpdesk.ticket.billing",
    ):
        assert f"{README_BASE}/api/{path}" in commands
    # one filtered, sorted page, then the next one through its cursor
    assert "filter.state=open&sort=-created_at&pageSize=" in commands
    assert "&cursor=" in commands


def test_readme_tour_runs(tmp_path: Path, tessera_database_url: str) -> None:
    if not (shutil.which("curl") and shutil.which("jq") and shutil.which("bash")):
        pytest.skip("the tour needs curl, jq and bash")
    ids: dict[str, str] = {}
    with run_server(tmp_path, database=tessera_database_url) as server:
        for command, shown in tour_steps():
            runnable = command.replace(README_BASE, server.base_url)
            for readme_id, real_id in ids.items():
                runnable = runnable.replace(readme_id, real_id)
            runnable = runnable.replace("curl -s ", "curl -s -w '%{stderr}%{http_code}' ", 1)
            # An event's effect shows after the commit: such a step may need a moment.
            deadline = time.monotonic() + (20 if EVENTUAL in command else 0)
            while True:
                done = subprocess.run(
                    ["bash", "-o", "pipefail", "-c", runnable], capture_output=True, text=True
                )
                assert done.returncode == 0, (command, done.stderr)
                failed = isinstance(shown, dict) and shown.get("ok") is False
                status = STATUS[shown["error"]["kind"]] if failed else 200
                assert done.stderr == str(status), (command, done.stderr)
                try:
                    match(shown, json.loads(done.stdout), ids)
                    break
                except AssertionError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
    assert len(set(ids.values())) == len(ids) >= 3  # the ticket and two versions at least
