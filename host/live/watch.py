"""What one stream watches: a projection, with the reader's row conditions on it."""

from __future__ import annotations

from dataclasses import dataclass

from host.graph.model import CompiledProjection
from host.query.conditions import Condition

__all__ = ["Watch"]


@dataclass(frozen=True, slots=True)
class Watch:
    """One projection a stream watches, with the reader's row conditions on it."""

    projection: CompiledProjection
    scope: tuple[Condition, ...]

    @property
    def key(self) -> tuple[object, ...]:
        """Streams with equal keys see the same rows (one cohort)."""
        return (
            self.projection.fqn,
            tuple((c.column.name, c.operator, c.values) for c in self.scope),
        )

    @property
    def entity(self) -> str:
        return self.projection.entity.fqn
