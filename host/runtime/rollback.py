"""A unit of work that is always rolled back: what availability (custom policies reading
the database) and dry runs run in."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from host.storage import Closing, Storage, Tx

__all__ = ["rolled_back"]

T = TypeVar("T")


class _RollBack(Exception):
    """Raised out of the unit of work to roll it back; carries the work's result."""

    def __init__(self, result: Any) -> None:
        super().__init__("rolled back on purpose")
        self.result = result


async def rolled_back(storage: Storage, work: Callable[[Tx], Awaitable[T]]) -> T:
    """Run ``work`` in one transaction of ``storage`` and roll it back, whatever happens;
    return what ``work`` returned (or raise what it raised). Nothing is committed: on SQLite
    the writer's ``BEGIN IMMEDIATE`` is only sent if ``work`` runs a statement."""

    async def unit(tx: Tx) -> Closing[T]:
        raise _RollBack(await work(tx))

    try:
        await storage.unit_of_work(unit)
    except _RollBack as done:
        result: T = done.result
        return result
    raise AssertionError("unreachable: the unit of work always raises")  # pragma: no cover
