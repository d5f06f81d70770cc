"""The SSE messages of live streams (docs/live.md, "Messages"), encoded once per batch and
shared by every stream that is told the same."""

from __future__ import annotations

from dataclasses import dataclass

from host import jsonio
from host.live.feed import Change
from host.storage.auditlog import Position

__all__ = ["Message", "event"]


def event(name: str, position: Position | None, data: object) -> bytes:
    """One SSE message (``data`` as one line of JSON)."""
    head = f"id: {position}\n" if position is not None else ""
    return f"{head}event: {name}\ndata: {jsonio.dumps(data).decode()}\n\n".encode()


@dataclass(frozen=True, slots=True)
class Message:
    """A change a stream is told of, with the watched projections that show the row, and
    its ``change`` message as sent; or (:meth:`left`) the watched projections the row left
    with this change, and its ``left`` message."""

    change: Change
    projections: tuple[str, ...]
    sse: bytes

    @classmethod
    def of(cls, change: Change, projections: tuple[str, ...], name: str = "change") -> Message:
        data = {
            "entity": change.entity,
            "id": change.id,
            "version": change.version,
            "action": change.action,
            "projections": list(projections),
        }
        return cls(change, projections, event(name, change.position, data))

    @classmethod
    def left(cls, change: Change, projections: tuple[str, ...]) -> Message:
        """The row of ``change`` is no longer in ``projections`` as the reader reads them
        (docs/live.md, "Rows leaving a list")."""
        return cls.of(change, projections, "left")
