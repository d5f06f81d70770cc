"""Logging for a served process: one format for Tessera's and Hypercorn's lines, as text or
as one JSON object per line (``TESSERA_LOG_FORMAT=json``), on stderr, unless the deployer
configured logging already."""

from __future__ import annotations

import contextvars
import logging
import sys
from datetime import datetime, timezone
from typing import Any, Final

import orjson

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
"""The id of the request being served (``-`` outside one), for log lines of every layer."""

FORMAT = "%(asctime)s [%(process)d] [%(levelname)s] %(name)s: %(message)s"
FORMATS: Final = ("text", "json")
HYPERCORN_LOGGERS: Final = ("hypercorn.error", "hypercorn.access")

_STANDARD: Final = frozenset(
    logging.LogRecord("", 0, "", 0, "", None, None).__dict__.keys() | {"message", "asctime"}
)


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time (UTC, ISO 8601), level, logger, pid, message, the
    request id when inside a request, every ``extra`` field, and ``exc`` for a traceback."""

    def format(self, record: logging.LogRecord) -> str:
        when = datetime.fromtimestamp(record.created, timezone.utc)
        line: dict[str, Any] = {
            "time": when.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "pid": record.process,
            "message": record.getMessage(),
        }
        request_id = request_id_var.get()
        if request_id != "-":
            line["request_id"] = request_id
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                line[key] = value
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


def formatter(log_format: str = "text") -> logging.Formatter:
    """The formatter of ``TESSERA_LOG_FORMAT``."""
    return JsonFormatter() if log_format == "json" else logging.Formatter(FORMAT)


def configure_logging(level: int = logging.INFO, log_format: str = "text") -> None:
    """Attach a stderr handler to the ``tessera`` logger if nothing handles it yet, and give
    Hypercorn's loggers the same format once Hypercorn creates their handlers."""
    chosen = formatter(log_format)
    _adopt_hypercorn(chosen)
    logger = logging.getLogger("tessera")
    if logger.handlers or logging.getLogger().handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(chosen)
    logger.addHandler(handler)
    logger.setLevel(level)


def _adopt_hypercorn(chosen: logging.Formatter) -> None:
    """Hypercorn's worker creates its own handlers (with its own format) after the app is
    imported; wrap its logger class so that they get ``chosen`` as soon as they exist."""
    hypercorn_logging = sys.modules.get("hypercorn.logging")
    if hypercorn_logging is None:
        return
    cls = hypercorn_logging.Logger
    original = getattr(cls.__init__, "__wrapped__", cls.__init__)

    def init(self: Any, config: Any) -> None:
        original(self, config)
        for name in HYPERCORN_LOGGERS:
            for handler in logging.getLogger(name).handlers:
                handler.setFormatter(chosen)

    init.__wrapped__ = original  # type: ignore[attr-defined]
    cls.__init__ = init
