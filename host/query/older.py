"""``ctx.data.find`` as plugin API 1.3 to 1.5 answered it, for the plugins that require one of
those (docs/compatibility.md).

Plugin API 1.6 made a data-API condition name what a list filter may name: ``_version`` is no
condition field, and ``null`` (``eq``/``ne`` ``None``) does not apply to ``id``,
``created_at`` and ``updated_at``, which are never null. Before, ``_version`` compared as
text (it is a ULID) and ``null`` on a never-null field matched no row (``True``) or every row
(``False``); an older plugin keeps those answers.
"""

from __future__ import annotations

from typing import Final

from host.fieldtypes import IDENTITY
from host.query.conditions import Condition
from host.query.spec import Column

__all__ = ["VERSION_COLUMN", "never_null"]

VERSION_COLUMN: Final = Column(
    name="_version", type=IDENTITY, field=IDENTITY.stand_in("_version"), nullable=False
)
"""``_version`` as an older plugin's condition names it: a ULID compared as text."""


def never_null(column: Column, is_null: bool) -> Condition | None:
    """``null`` on a ``column`` that is never null: ``True`` matches no row (an empty ``in``),
    ``False`` every row (no condition: ``None``)."""
    return Condition(column, "in", ()) if is_null else None
