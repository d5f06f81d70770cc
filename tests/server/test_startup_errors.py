"""Startup failures: one line naming the setting, its value (password masked) and the fix, and
a non-zero exit status, from ``tessera check``, ``migrate``, ``serve`` and plain Hypercorn."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from plugin_api.testing import DEFAULT_POSTGRES_URL

from .conftest import free_port

# Each case names its own database URL (a SQLite file, or the local PostgreSQL server made
# unreachable or missing) whatever the run's backend: the module runs once, in the SQLite
# environments.
pytestmark = [pytest.mark.slow, pytest.mark.backend_neutral]

PG = os.environ.get("TESSERA_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)


def _pg(*, user: str | None = None, database: str | None = None, password: str = "") -> str:
    parts = urlsplit(PG)
    netloc = f"{user or parts.username or 'postgres'}"
    if password:
        netloc += f":{password}"
    netloc += f"@{parts.hostname}:{parts.port or 5432}"
    return urlunsplit(parts._replace(netloc=netloc, path="/" + (database or "test")))


CASES = {
    "scheme": ("mysql://db/app", "TESSERA_DATABASE_URL=mysql://db/app: unsupported scheme"),
    "sqlite-directory": (
        "sqlite:////nonexistent/dir/app.db",
        "the directory /nonexistent/dir of the SQLite file does not exist; create it",
    ),
    "closed-port": (
        "postgresql://postgres:s3cret@127.0.0.1:1/app",
        "TESSERA_DATABASE_URL=postgresql://postgres:***@127.0.0.1:1/app: nothing listens on "
        "127.0.0.1:1 (connection refused); start the database",
    ),
    "unknown-host": ("postgresql://postgres@nohost.invalid/app", "unknown host 'nohost.invalid'"),
    "missing-database": (
        _pg(database="tessera_no_such_db", password="s3cret"),
        "database 'tessera_no_such_db' does not exist; create it (createdb tessera_no_such_db)",
    ),
    "missing-role": (_pg(user="tessera_no_such_role"), "refused the role or its password"),
}


def run(args: list[str], env: dict[str, str], cwd: Path, timeout: float = 60) -> tuple[int, str]:
    full = {**os.environ, "TESSERA_ACCESS_LOG": "0", **env}
    done = subprocess.run(
        [sys.executable, *args], env=full, cwd=cwd, capture_output=True, timeout=timeout
    )
    return done.returncode, done.stderr.decode() + done.stdout.decode()


def assert_one_line(output: str, expected: str, password: str = "s3cret") -> None:
    """``expected`` is in one line (each Hypercorn worker prints it once), with no traceback."""
    assert "Traceback" not in output, output
    assert password not in output, output
    lines = {line for line in output.splitlines() if expected in line}
    assert len(lines) == 1, output


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("command", [["check"], ["migrate", "--plan"], ["serve"]])
def test_cli_startup_errors_are_one_line(tmp_path: Path, case: str, command: list[str]) -> None:
    url, expected = CASES[case]
    if command == ["serve"]:
        command = ["serve", "--bind", f"127.0.0.1:{free_port()}"]
    status, output = run(["-m", "host", *command], {"TESSERA_DATABASE_URL": url}, tmp_path)
    assert status == 1, output
    assert_one_line(output, expected)
    assert output.startswith("error: ") and output.count("\n") == 1, output


@pytest.mark.parametrize("case", ["scheme", "sqlite-directory", "closed-port", "missing-database"])
def test_a_plain_hypercorn_worker_that_cannot_start_exits_non_zero_with_one_line(
    tmp_path: Path, case: str
) -> None:
    url, expected = CASES[case]
    bind = f"127.0.0.1:{free_port()}"
    status, output = run(
        ["-m", "hypercorn", "host.asgi:app", "--bind", bind, "--workers", "2"],
        {"TESSERA_DATABASE_URL": url},
        tmp_path,
    )
    assert status != 0, output
    assert_one_line(output, expected)
    assert output.startswith("tessera: cannot start: TESSERA_DATABASE_URL="), output


def test_a_bad_setting_is_one_line_everywhere(tmp_path: Path) -> None:
    env = {"TESSERA_MAX_BODY_BYTES": "lots"}
    expected = "TESSERA_MAX_BODY_BYTES: invalid literal"
    hypercorn = ["-m", "hypercorn", "host.asgi:app", "--bind", f"127.0.0.1:{free_port()}"]
    for args in (["-m", "host", "check"], ["-m", "host", "migrate", "--plan"], hypercorn):
        status, output = run(args, env, tmp_path)
        assert status != 0, output
        assert_one_line(output, expected)


def test_a_missing_driver_names_the_extra_to_install(tmp_path: Path) -> None:
    script = "import sys; sys.modules['asyncpg'] = None; from host.cli import main; "
    for command in (["check"], ["migrate", "--plan"]):
        args = ["-c", script + f"sys.exit(main({command!r}))"]
        status, output = run(args, {"TESSERA_DATABASE_URL": _pg(password="s3cret")}, tmp_path)
        assert status == 1, output
        assert_one_line(output, "pip install 'tessera-host[postgresql]'")


def test_serve_on_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        env = {"TESSERA_DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}"}
        status, output = run(["-m", "host", "serve", "--bind", f"127.0.0.1:{port}"], env, tmp_path)
    assert status == 1, output
    assert_one_line(output, f"--bind 127.0.0.1:{port}: Address already in use")


def test_check_reports_a_reachable_database(tmp_path: Path) -> None:
    db = tmp_path / "there.db"
    env = {"TESSERA_DATABASE_URL": f"sqlite:///{db}"}
    status, output = run(["-m", "host", "check"], env, tmp_path)
    assert status == 0 and "a new SQLite file" in output and not db.exists(), output
    run(["-m", "host", "migrate", "--apply"], env, tmp_path)
    status, output = run(["-m", "host", "check"], env, tmp_path)
    assert status == 0 and "reachable (sqlite)" in output, output
