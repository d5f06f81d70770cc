"""A first start's schema creation in one INFO line (each change at DEBUG).

The startup evolution (:mod:`host.storage.migrate`) logs one line per change. On a database
that was never prepared every change is a creation (tables, indexes, text indexes: some thirty
lines for the two samples), which says nothing an operator must act on; those lines go to
DEBUG and one INFO line counts them by kind. A later start that evolves a prepared database
keeps its lines at INFO, and a breaking change stays a WARNING."""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
from collections.abc import Iterator

from host.storage.migrate import Evolution

__all__ = ["EVOLUTION_LOGGER", "summarised"]

EVOLUTION_LOGGER = "tessera.storage.evolution"
logger = logging.getLogger("tessera.service")


class _Creation(logging.Filter):
    """Re-logs the evolution's INFO lines at DEBUG while the plan is a first creation."""

    def __init__(self, evolution: Evolution) -> None:
        super().__init__()
        self.evolution = evolution

    def filter(self, record: logging.LogRecord) -> bool:
        plan = self.evolution.plan
        if record.levelno != logging.INFO or plan is None or plan.database_hash is not None:
            return True
        logging.getLogger(record.name).debug("%s", record.getMessage())
        return False


@contextlib.contextmanager
def summarised(evolution: Evolution) -> Iterator[None]:
    """Around ``storage.prepare(schema, evolve=evolution)``: on a first creation, each change
    at DEBUG and one INFO summary line after it."""
    source = logging.getLogger(EVOLUTION_LOGGER)
    creation = _Creation(evolution)
    source.addFilter(creation)
    try:
        yield
    finally:
        source.removeFilter(creation)
    plan = evolution.plan
    if plan is None or plan.database_hash is not None or not plan.changes:
        return
    kinds = Counter(change.kind for change in plan.changes)
    counted = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
    logger.info(
        "schema: created for graph %s (%s; each at DEBUG)",
        plan.graph_hash[:12],
        counted,
        extra={"event": "schema_created", "changes": dict(kinds)},
    )
