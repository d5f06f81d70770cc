"""What the definition modules share (:mod:`plugin_api.definitions`, :mod:`plugin_api.listing`,
:mod:`plugin_api.access`), kept below all three so none imports another for it: the JSON
scalar type and the list-to-tuple step of every frozen definition. Private; ``JSONScalar`` is
public as :data:`plugin_api.definitions.JSONScalar`."""

from __future__ import annotations

from typing import TypeAlias

JSONScalar: TypeAlias = str | int | float | bool | None


def _as_tuples(definition: object, *names: str) -> None:
    """Replace each list attribute among ``names`` by a tuple (definitions hold tuples)."""
    for name in names:
        value = getattr(definition, name)
        if isinstance(value, list):
            object.__setattr__(definition, name, tuple(value))
