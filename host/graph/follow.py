"""Followed fields: ``"<reference>.<field>"`` names a field of the row a reference field points
at, one hop (docs/writing-plugins.md, "Relations")."""

from __future__ import annotations

from typing import Final

from host.graph.model import CompiledEntity

__all__ = ["FOLLOWABLE_SYSTEM", "follow", "is_followed"]

FOLLOWABLE_SYSTEM: Final = ("id", "created_at", "updated_at")
"""The system fields of a target a followed field may name."""


def is_followed(name: object) -> bool:
    """Whether ``name`` is spelt as a followed field (one dot)."""
    return isinstance(name, str) and name.count(".") == 1


def follow(entity: CompiledEntity, name: str) -> tuple[str, CompiledEntity, str] | None:
    """``(reference, target entity, target field name)`` of the followed field ``name`` of
    ``entity``; ``None`` when ``name`` is not one (the target field is not checked here)."""
    if not is_followed(name):
        return None
    reference, _, field = name.partition(".")
    target = entity.targets.get(reference)
    return None if target is None else (reference, target, field)
