"""What one stream watches: a projection, with the reader's row conditions on it."""

from __future__ import annotations

from dataclasses import dataclass, field

from host.graph.model import CompiledProjection
from host.query.conditions import Clause, clause_key

__all__ = ["Watch"]


@dataclass(frozen=True, slots=True)
class Watch:
    """One projection a stream watches, with the reader's row conditions on it."""

    projection: CompiledProjection
    scope: tuple[Clause, ...]
    key: tuple[object, ...] = field(init=False, compare=False)
    """Streams with equal keys see the same rows (one cohort)."""
    entity: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        conditions = tuple(clause_key(clause) for clause in self.scope)
        object.__setattr__(self, "key", (self.projection.fqn, conditions))
        object.__setattr__(self, "entity", self.projection.entity.fqn)
