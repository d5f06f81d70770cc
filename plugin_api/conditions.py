"""Row conditions: one type and one operator set for every place a plugin names rows.

A :class:`Condition` says ``field <operator> value``. The same condition, with the same
operators and the same rules per field type, is what

* a list filter accepts (``filter.<field>.<operator>=value``, declared with
  :class:`~plugin_api.listing.Filter`),
* a read policy returns (:mod:`plugin_api.access`), and
* the data API's :meth:`~plugin_api.data.DataAccess.find` takes.

Which operators fit which field type (docs/writing-plugins.md, "Conditions"):

==================================  =====================================================
field type                          operators
==================================  =====================================================
string                              eq ne in lt lte gt gte contains null
integer, datetime, enum, money      eq ne in lt lte gt gte null
boolean                             eq ne null
reference                           eq ne in null
``id``, ``created_at``, ...         eq ne in lt lte gt gte
==================================  =====================================================

Text compares in code-point order, an enum by the position of its option, money by amount.

Deprecated spellings, kept working: :class:`plugin_api.listing.FilterOperator` (the same enum
as :class:`Operator`), :class:`plugin_api.access.RowCondition` (the same class as
:class:`Condition`) and ``Condition(..., op=...)`` (the ``operator`` argument's old name, and
the ``op`` property). They will go in plugin API 2.0.
"""

from __future__ import annotations

import contextlib
import enum
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["OPERATORS", "AnyOf", "Condition", "Operator"]


class Operator(str, enum.Enum):
    """The operators of a condition (and of ``filter.<field>.<op>=value`` query parameters)."""

    EQ = "eq"
    """Equal (``filter.<field>=value`` is the same as ``filter.<field>.eq=value``)."""
    NE = "ne"
    """Not equal; rows whose value is null match too."""
    IN = "in"
    """One of several values (a tuple; in a query parameter, a comma-separated list)."""
    LT = "lt"
    LTE = "lte"
    GT = "gt"
    GTE = "gte"
    CONTAINS = "contains"
    """Case-insensitive substring (string fields; ASCII letters fold, see docs/http.md)."""
    NULL = "null"
    """``True``: the value is null; ``False``: it is not (nullable declared fields)."""


OPERATORS: Final[tuple[str, ...]] = tuple(member.value for member in Operator)
"""Every operator's name, in :class:`Operator` order."""


@dataclass(frozen=True, slots=True, init=False)
class Condition:
    """``field <operator> value``: which rows match.

    :param field: a declared field of the entity, or the system field ``id``,
        ``created_at`` or ``updated_at``; in a read policy's condition (plugin API 1.8) also
        a field of the row a reference points at, ``"project.owner"`` (null when the
        reference is null or the reader may not read that row).
    :param operator: an :class:`Operator` (or its name) that fits the field's type.
    :param value: in the field's write shape (a datetime as RFC 3339 text, a reference as
        the row id, money as ``{"amount", "currency"}`` or its amount alone); a tuple (or
        list) of them for ``in``; ``True`` or ``False`` for ``null``. Never SQL.
    :param op: deprecated name of ``operator`` (plugin API 1.3's data-API spelling).
    """

    field: str
    operator: Operator | str
    value: Any

    def __init__(
        self,
        *,
        field: str,
        operator: Operator | str = Operator.EQ,
        value: Any = None,
        op: Operator | str | None = None,
    ) -> None:
        if op is not None:
            if operator is not Operator.EQ and operator != op:
                raise TypeError("give the condition's operator once (operator=, or the old op=)")
            operator = op
        with contextlib.suppress(ValueError, TypeError):
            operator = Operator(operator)
        object.__setattr__(self, "field", field)
        object.__setattr__(self, "operator", operator)
        object.__setattr__(self, "value", tuple(value) if isinstance(value, list) else value)

    @property
    def op(self) -> str:
        """Deprecated: the operator's name (use :attr:`operator`)."""
        operator = self.operator
        return operator.value if isinstance(operator, Operator) else str(operator)

    @staticmethod
    def any_of(*conditions: Condition) -> AnyOf:
        """Rows matching at least one of ``conditions`` (plugin API 1.8)."""
        return AnyOf(conditions=conditions)


@dataclass(frozen=True, kw_only=True, slots=True)
class AnyOf:
    """Rows matching at least one of ``conditions``: what a read policy returns to say "or"
    (plugin API 1.8). ``Condition.any_of(a, b)`` is the same.

    :param conditions: one or more :class:`Condition` (not another ``AnyOf``).
    """

    conditions: tuple[Condition, ...]

    def __post_init__(self) -> None:
        if isinstance(self.conditions, list):
            object.__setattr__(self, "conditions", tuple(self.conditions))
