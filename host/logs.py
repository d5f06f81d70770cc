"""Logging for a served process: the ``tessera`` loggers write to stderr unless the
deployer configured logging already."""

from __future__ import annotations

import contextvars
import logging
import sys

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
"""The id of the request being served (``-`` outside one), for log lines of every layer."""

FORMAT = "%(asctime)s [%(process)d] [%(levelname)s] %(name)s: %(message)s"


def configure_logging(level: int = logging.INFO) -> None:
    """Attach a stderr handler to the ``tessera`` logger if nothing handles it yet."""
    logger = logging.getLogger("tessera")
    if logger.handlers or logging.getLogger().handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(FORMAT))
    logger.addHandler(handler)
    logger.setLevel(level)
