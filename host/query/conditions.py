"""One condition language: list filters, read-policy conditions and data-API conditions.

Whoever names rows (a ``filter.<field>.<op>=value`` query parameter, a read policy's
:class:`plugin_api.Condition`, a plugin's ``ctx.data.find``), the host turns it into the same
:class:`Condition`: a column, an operator that fits the column's type (one operator table,
:data:`host.graph.listing.OPERATORS`) and its values in database form. The storage turns a
condition into SQL in one place (:mod:`host.storage.listsql`).

Each source reports its mistakes its own way (a 400 naming the query parameter, a 500 for a
read policy's bug, a ``ValueError`` to a plugin's effect); the rules are the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from host.graph.model import CompiledEntity
from host.query.spec import Column, entity_column
from plugin_api.conditions import Operator
from plugin_api.errors import BadRequest

__all__ = [
    "AnyOf",
    "Clause",
    "Condition",
    "ConditionError",
    "Floor",
    "clause_key",
    "column_of",
    "fold",
    "from_text",
    "from_value",
    "matching",
]

_ASCII_LOWER: Final = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


@dataclass(frozen=True, slots=True)
class Condition:
    """``column <operator> values`` in database form (``in`` has several values, ``null``
    one boolean, ``contains`` the folded text)."""

    column: Column
    operator: str
    values: tuple[object, ...]


@dataclass(frozen=True, slots=True)
class AnyOf:
    """Rows matching at least one of ``alternatives`` (a row scope over several fields, a
    read policy's :class:`plugin_api.AnyOf`)."""

    alternatives: tuple[Condition, ...]


@dataclass(frozen=True, slots=True)
class Floor:
    """What a reader may read through the reference field ``via``: the target's rows
    matching every one of ``conditions`` (its read floor for this reader), none when
    ``denied``. A followed value of a row the floor does not admit reads as null."""

    via: str
    conditions: tuple[Condition | AnyOf, ...] = ()
    denied: bool = False


Clause = Condition | AnyOf | Floor
"""One of the reader's row conditions (``ListQuery.scope``): a :class:`Floor` does not narrow
the rows, it says what the reader reads through a reference."""


def matching(clauses: tuple[Clause, ...]) -> tuple[Condition | AnyOf, ...]:
    """The clauses that narrow the rows (every one but the floors)."""
    return tuple(clause for clause in clauses if not isinstance(clause, Floor))


def clause_key(clause: Clause) -> tuple[object, ...]:
    """A hashable, JSON-ready spelling of ``clause`` (cursor bindings, live cohorts); a plain
    condition's is ``(column, operator, values)`` as before clauses existed."""
    if isinstance(clause, Condition):
        return (clause.column.name, clause.operator, clause.values)
    if isinstance(clause, AnyOf):
        return ("any", tuple(clause_key(c) for c in clause.alternatives))
    return ("floor", clause.via, clause.denied, tuple(clause_key(c) for c in clause.conditions))


class ConditionError(ValueError):
    """A condition that cannot be asked: no such column, or an operator that does not fit
    its type. (A value that does not fit is a :class:`~plugin_api.errors.BadRequest`.)"""


def fold(text: str) -> str:
    """Case folding of ``contains`` and ``q``: ASCII ``A-Z`` to ``a-z``, nothing else (the
    same on SQLite and PostgreSQL, see docs/http.md)."""
    return text.translate(_ASCII_LOWER)


def column_of(entity: CompiledEntity, name: object) -> Column:
    """The column ``name`` of ``entity`` that conditions may name.

    :raises ConditionError: not a field that can be filtered on.
    """
    column = entity_column(entity, name) if isinstance(name, str) else None
    if column is None:
        raise ConditionError(f"{entity.fqn} has no field {name!r} that conditions may name")
    return column


def _operator(column: Column, operator: object) -> str:
    try:
        name = Operator(operator).value
    except (ValueError, TypeError):
        known = ", ".join(member.value for member in Operator)
        raise ConditionError(f"unknown operator {operator!r}; operators: {known}") from None
    allowed = column.type.operators
    if name not in allowed:
        raise ConditionError(
            f"operator {name!r} does not fit {column.name!r}, a {column.type.name} field "
            f"(which allows {', '.join(allowed)})"
        )
    return name


def _operand(column: Column, value: object) -> object:
    """A value in write shape -> the database value compared (its type's
    :meth:`~host.fieldtypes.ValueType.operand`: booleans strictly true or false, money as
    its compound object or its amount alone)."""
    if value is None:
        raise BadRequest(f"Field {column.name!r}: null is matched with operator 'null'")
    return column.type.operand(column.field, value)


def from_value(column: Column, operator: object, value: object, *, in_max: int) -> Condition:
    """A condition whose value is given in write shape (a read policy's, the data API's);
    ``in`` takes a sequence of at most ``in_max`` values (an empty one matches nothing).

    :raises ConditionError: the operator does not fit the column.
    :raises BadRequest: a value does not fit the field.
    """
    name = _operator(column, operator)
    if name == "null":
        if not isinstance(value, bool):
            raise BadRequest(f"Field {column.name!r}: operator 'null' expects true or false")
        return Condition(column, name, (value,))
    if name == "in":
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
            values: Sequence[object] = (value,)
        else:
            values = value
        if len(values) > in_max:
            raise BadRequest(f"Field {column.name!r}: operator 'in' takes at most {in_max} values")
        return Condition(column, name, tuple(dict.fromkeys(_operand(column, v) for v in values)))
    operand = _operand(column, value)
    if name == "contains":
        operand = fold(str(operand))
    return Condition(column, name, (operand,))


def _parse(column: Column, text: str, parameter: str) -> object:
    try:
        return column.type.parse_text(column.field, text)
    except BadRequest as error:
        raise BadRequest(f"Parameter {parameter!r}: {error.message}") from None


def from_text(
    column: Column, operator: str, text: str, *, parameter: str, in_max: int
) -> Condition:
    """A condition as the query parameter ``parameter`` spells it: ``text`` is one value, a
    comma-separated list for ``in`` (at most ``in_max``), ``true``/``false`` for ``null``.

    :raises ConditionError: the operator does not fit the column.
    :raises BadRequest: the text does not fit the field (the message names ``parameter``).
    """
    name = _operator(column, operator)
    if name == "null":
        if text not in ("true", "false"):
            raise BadRequest(f"Parameter {parameter!r} expects true or false, got {text!r}")
        return Condition(column, name, (text == "true",))
    if name == "in":
        parts = text.split(",")
        if len(parts) > in_max:
            raise BadRequest(f"Parameter {parameter!r} lists more than {in_max} values")
        values = dict.fromkeys(_parse(column, part, parameter) for part in parts)
        return Condition(column, name, tuple(values))
    operand = _parse(column, text, parameter)
    if name == "contains":
        operand = fold(str(operand))
    return Condition(column, name, (operand,))
