"""``pip install sample_plugins/helpdesk`` is the only step that makes ``helpdesk.*`` exist;
removing the distribution removes them and changes the graph hash.

The plugin is built and installed for real (``pip install --target``) into a directory that is
put on the path of a subprocess which sees the host and its dependencies but none of the sample
plugins installed in the test environment: ``python -S`` (no site-packages) plus a view of the
site-packages directories without the sample distributions.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .cleanenv import run

# Every run here has a SQLite database of its own: the pg environment leaves these out.
pytestmark = [pytest.mark.slow, pytest.mark.backend_neutral]

ROOT = Path(__file__).resolve().parents[2]

CREATE_TICKET = """
import asyncio
from host.http import create_app

async def main():
    app = create_app()
    async with app.test_app() as test_app:
        response = await test_app.test_client().post(
            "/api/actions/helpdesk.ticket.create",
            json={"subject": None, "inputs": {"title": "Installed"}},
            headers={"X-Tenant-ID": "t1", "X-Actor-Id": "rita", "X-Actor-Roles": "requester"},
        )
        print(response.status_code, (await response.get_json())["ok"])

asyncio.run(main())
"""


def graph_hash(env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "host", "graph", "--hash"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_plugin_set_changes_the_graph_hash() -> None:
    everything = graph_hash({"TESSERA_PLUGINS_DISABLED": ""})
    # billing_helpdesk references helpdesk tickets: without the helpdesk it goes too.
    without_helpdesk = graph_hash({"TESSERA_PLUGINS_DISABLED": "helpdesk,billing_helpdesk"})
    only_helpdesk = graph_hash({"TESSERA_PLUGINS_ONLY": "helpdesk"})
    assert len({everything, without_helpdesk, only_helpdesk}) == 3
    assert graph_hash({"TESSERA_PLUGINS_ONLY": "billing"}) == without_helpdesk


def test_pip_install_is_the_only_step(clean_path: list[str], tmp_path: Path) -> None:
    pytest.importorskip("hatchling", reason="--no-build-isolation builds with hatchling")
    assert run(["-m", "host", "plugins"], clean_path, tmp_path) == "no plugins loaded"
    bare_hash = run(["-m", "host", "graph", "--hash"], clean_path, tmp_path)

    target = tmp_path / "target"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
         "--no-build-isolation", "--target", str(target), str(ROOT / "sample_plugins/helpdesk")],
        check=True,
    )  # fmt: skip
    dist_info = target / "tessera_sample_helpdesk-0.1.0.dist-info"
    assert (
        "[tessera.plugins]\nhelpdesk = tessera_helpdesk.plugin"
        in (dist_info / "entry_points.txt").read_text()
    )
    assert (target / "tessera_helpdesk" / "plugin.py").is_file()  # a real copy, not editable

    installed = [str(target), *clean_path]
    listing = run(["-m", "host", "plugins"], installed, tmp_path)
    assert listing.splitlines()[0] == "helpdesk: tessera-sample-helpdesk 0.1.0"
    assert "helpdesk.ticket.create" in listing and "helpdesk.own_ticket" in listing
    installed_hash = run(["-m", "host", "graph", "--hash"], installed, tmp_path)
    assert installed_hash != bare_hash
    assert run(["-m", "host", "check"], installed, tmp_path) == f"ok {installed_hash}"
    assert installed_hash == graph_hash({"TESSERA_PLUGINS_ONLY": "helpdesk"})
    assert run(["-c", CREATE_TICKET], installed, tmp_path) == "200 True"

    # Uninstall the way pip does: remove every file the distribution's RECORD lists.
    for line in (dist_info / "RECORD").read_text().splitlines():
        (target / line.split(",")[0]).unlink(missing_ok=True)
    shutil.rmtree(dist_info, ignore_errors=True)
    assert run(["-m", "host", "plugins"], installed, tmp_path) == "no plugins loaded"
    assert run(["-m", "host", "graph", "--hash"], installed, tmp_path) == bare_hash
    # (A fresh database: the first one holds a ticket, and the host refuses to start on a
    # database whose tables no installed plugin declares any more.)
    assert run(["-c", CREATE_TICKET], installed, tmp_path, "after.db") == "404 False"
