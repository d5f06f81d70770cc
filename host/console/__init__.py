"""The console: the ViewSchema documents rendered as HTML pages (docs/console.md)."""

from __future__ import annotations

from typing import Any

from quart import Quart, redirect
from werkzeug.wrappers import Response

from host.config import Settings
from host.console.documents import Answers
from host.console.settings import CONSOLE_PATH, console_enabled, console_url
from host.console.views import console_blueprint

__all__ = ["CONSOLE_PATH", "Answers", "console_enabled", "console_url", "mount_console"]


def mount_console(app: Quart, settings: Settings, answers: Answers[Any]) -> None:
    """Serve the console at :data:`CONSOLE_PATH` (call only when it is enabled)."""
    app.jinja_env.trim_blocks = True
    app.jinja_env.lstrip_blocks = True
    app.register_blueprint(console_blueprint(settings, answers))
    app.add_url_rule("/", "console_root", _to_console, methods=["GET"])


async def _to_console() -> Response:
    """``/`` leads to the console when it is on (off, it stays the host's ordinary 404)."""
    return redirect(f"{CONSOLE_PATH}/", 302)
