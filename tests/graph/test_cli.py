"""The ``tessera`` command, in process (entry points limited through the environment)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from host import cli
from host.config import SETTINGS, Settings
from host.graph import compile_graph
from host.plugins import load_plugins

# The graph commands read no database of the run: the pg environment leaves these out.
pytestmark = pytest.mark.backend_neutral


@pytest.fixture
def no_installed_plugins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in [s.env_var for s in SETTINGS]:
        monkeypatch.delenv(name, raising=False)
    # ``check`` plans the database: not the default ./tessera.db of a served checkout.
    monkeypatch.setenv("TESSERA_DATABASE_URL", f"sqlite:///{tmp_path / 'unused.db'}")
    names = [info.name for info, _ in load_plugins(Settings()).plugins]
    monkeypatch.setenv("TESSERA_PLUGINS_DISABLED", ",".join(names))


@pytest.mark.usefixtures("no_installed_plugins")
def test_check_prints_ok_and_hash(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check"]) == 0
    empty = compile_graph(load_plugins(Settings(), entry_points=False))
    assert capsys.readouterr().out == f"ok {empty.hash}\n"


@pytest.mark.usefixtures("no_installed_plugins")
def test_graph_hash_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["graph", "--hash"]) == 0
    out = capsys.readouterr().out.strip()
    assert len(out) == 64
    assert int(out, 16) >= 0


@pytest.mark.usefixtures("no_installed_plugins")
def test_plugins_with_nothing_installed(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["plugins"]) == 0
    assert capsys.readouterr().out == "no plugins loaded\n"


def test_check_reports_every_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], kit: SimpleNamespace
) -> None:
    defs = (
        kit.baseline()
        .with_action("shop.order.edit", entity="shop.nothing")
        .with_projection("shop.order.brief", fields=("colour",))
    )
    plugin = defs.plugin()

    def load(settings: Settings) -> object:
        return load_plugins(settings, extra=[("shop", plugin)], entry_points=False)

    monkeypatch.setattr(cli, "load_plugins", load)
    assert cli.main(["check"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert lines[0] == "2 error(s) in the plugin graph:"
    assert "action 'shop.order.edit'" in lines[1]
    assert "projection 'shop.order.brief'" in lines[2]
    assert cli.main(["graph"]) == 1


def test_config_lists_every_setting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TESSERA_API_PREFIX", "/v1/")
    assert cli.main(["config"]) == 0
    out = capsys.readouterr().out
    for setting in SETTINGS:
        assert f"{setting.env_var}=" in out
        assert setting.help in out
    assert "TESSERA_API_PREFIX='/v1'" in out


def test_malformed_setting_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TESSERA_MAX_BODY_BYTES", "lots")
    assert cli.main(["config"]) == 2
    assert "TESSERA_MAX_BODY_BYTES" in capsys.readouterr().err


def test_serve_execs_hypercorn(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[tuple[str, list[str]]] = []
    binds: list[str] = []

    def execvp(file: str, args: list[str]) -> None:
        calls.append((file, args))
        binds.append(os.environ["TESSERA_SERVE_BIND"])
        assert len(os.environ["TESSERA_CONSOLE_SECRET"]) == 64

    monkeypatch.setattr(os, "execvp", execvp)
    monkeypatch.setattr(cli, "check_bind", lambda bind: None)  # the ports may be taken here
    monkeypatch.delenv("TESSERA_SERVE_BIND", raising=False)  # restored after the test
    monkeypatch.delenv("TESSERA_CONSOLE", raising=False)
    monkeypatch.delenv("TESSERA_CONSOLE_SECRET", raising=False)
    cli.main(["serve"])
    assert capsys.readouterr().out == "console: http://127.0.0.1:8000/-/console/\n"
    cli.main(["serve", "--bind", "0.0.0.0:9000", "--workers", "4", "--", "--access-logfile", "-"])
    assert capsys.readouterr().out == ""  # the console is off by default off loopback
    cli.main(["serve", "--port", "8001"])
    cli.main(["serve", "--host", "::1", "--port", "8002"])
    cli.main(["serve", "--host", "0.0.0.0"])
    assert binds == [
        "127.0.0.1:8000", "0.0.0.0:9000", "127.0.0.1:8001", "[::1]:8002", "0.0.0.0:8000",
    ]  # fmt: skip
    python = sys.executable
    assert calls == [
        (python, [python, "-m", "host.supervisor", "--bind", "127.0.0.1:8000", "--workers", "1",
                  "host.asgi:app"]),
        (python, [python, "-m", "host.supervisor", "--bind", "0.0.0.0:9000", "--workers", "4",
                  "--access-logfile", "-", "host.asgi:app"]),
        (python, [python, "-m", "host.supervisor", "--bind", "127.0.0.1:8001", "--workers", "1",
                  "host.asgi:app"]),
        (python, [python, "-m", "host.supervisor", "--bind", "[::1]:8002", "--workers", "1",
                  "host.asgi:app"]),
        (python, [python, "-m", "host.supervisor", "--bind", "0.0.0.0:8000", "--workers", "1",
                  "host.asgi:app"]),
    ]  # fmt: skip


def test_unknown_arguments_are_refused_outside_serve() -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["check", "--bogus"])
    assert exited.value.code == 2


@pytest.mark.slow
def test_python_dash_m_host(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "host", "--version"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0
    assert result.stdout.startswith("tessera ")


@pytest.mark.parametrize("command", ["plugins", "graph", "check", "config", "serve", "migrate"])
def test_every_subcommand_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main([command, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: tessera {command}")
    description = out.split("\n\n")[1]  # after the usage (which may wrap)
    assert len(description) > 20, out  # a description line, not just the usage


def test_the_version_is_declared_once() -> None:
    from importlib.metadata import version

    import host

    assert version("tessera-host") == host.__version__


@pytest.mark.slow
def test_a_closed_pipe_is_no_traceback(tmp_path: Path) -> None:
    """``tessera graph | head``: the reader is gone before the output is written."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        writer = subprocess.run(
            [sys.executable, "-m", "host", "graph"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            cwd=tmp_path,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert writer.stderr == b"", writer.stderr.decode()
    assert writer.returncode == 141


def test_graph_lists_the_subscribers_outside_the_hash(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TESSERA_PLUGINS_ONLY", "helpdesk")
    assert cli.main(["graph"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["subscribers"] == [
        {
            "name": "helpdesk.notify_requester",
            "plugin": "helpdesk",
            "actions": ["helpdesk.ticket.resolve"],
            "entities": [],
            "states": [],
            "transactional": True,
            "timeoutS": 2.0,
        }
    ]
    compact = json.dumps(document["graph"], sort_keys=True, separators=(",", ":"))
    assert hashlib.sha256(compact.encode()).hexdigest() == document["hash"]
    assert "subscriber" not in compact
