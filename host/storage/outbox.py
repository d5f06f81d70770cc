"""The transactional outbox: what an action adds to its own transaction so that its event
exists exactly when it commits.

The event itself is the action's audit record (``tessera_audit``, written anyway; the
records the typed data API writes for other rows are not events). The outbox adds one
statement: a single multi-row ``INSERT`` of one delivery per subscriber that wants the
action (``tessera_deliveries``, state ``pending``), built once per action at startup (on
PostgreSQL the engine chains it to the audit INSERT, one round trip: ``Dialect.chained``). An
action nobody subscribes to adds nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Final

from host.storage.dialects import Dialect
from host.storage.tx import Statement

__all__ = ["PENDING", "Outbox", "now_ms"]

PENDING: Final = "pending"
_COLUMNS: Final = (
    "event_id",
    "subscriber",
    "tenant_id",
    "entity",
    "subject_id",
    "next_at",
    "created_at",
)


def now_ms() -> int:
    """Wall-clock time in Unix milliseconds (the unit of every time in the delivery table)."""
    return time.time_ns() // 1_000_000


def _insert(dialect: Dialect, table: str, count: int) -> str:
    columns = ", ".join(dialect.quote(name) for name in (*_COLUMNS, "state", "attempts"))
    marks = dialect.placeholders(count * len(_COLUMNS))
    width = len(_COLUMNS)
    rows = ", ".join(
        "(" + ", ".join(marks[i * width : (i + 1) * width]) + f", '{PENDING}', 0)"
        for i in range(count)
    )
    return f"INSERT INTO {dialect.quote(table)} ({columns}) VALUES {rows}"


class Outbox:
    """The delivery rows each action writes, by action FQN."""

    def __init__(
        self,
        dialect: Dialect,
        table: str,
        routes: Mapping[str, Iterable[str]],
        states: Mapping[str, Iterable[str]] | None = None,
    ) -> None:
        """``routes``: action FQN -> the names of the subscribers that want its events;
        ``states``: entity FQN -> those that follow its state changes."""
        self.routes = _routes(routes)
        self.states = _routes(states or {})
        counts = {len(names) for names in (*self.routes.values(), *self.states.values())}
        self._sql = {count: _insert(dialect, table, count) for count in counts}

    def statement(
        self, action: str, event_id: str, tenant_id: str, entity: str, subject_id: str
    ) -> Statement | None:
        """The INSERT of the deliveries of one event, or ``None`` when nobody wants it."""
        return self._deliveries(self.routes.get(action), event_id, tenant_id, entity, subject_id)

    def state_change(
        self, event_id: str, tenant_id: str, entity: str, subject_id: str
    ) -> Statement | None:
        """The INSERT of the deliveries of a data-API transition's event, or ``None``."""
        return self._deliveries(self.states.get(entity), event_id, tenant_id, entity, subject_id)

    def _deliveries(
        self,
        names: tuple[str, ...] | None,
        event_id: str,
        tenant_id: str,
        entity: str,
        subject_id: str,
    ) -> Statement | None:
        if names is None:
            return None
        now = now_ms()
        args: list[object] = []
        for name in names:
            args.extend((event_id, name, tenant_id, entity, subject_id, now, now))
        return self._sql[len(names)], args


def _routes(routes: Mapping[str, Iterable[str]]) -> Mapping[str, tuple[str, ...]]:
    return MappingProxyType({key: tuple(names) for key, names in routes.items() if names})
