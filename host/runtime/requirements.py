"""The one evaluator of declared requirements (plugin API 1.10, docs/conditions.md).

An action's ``requires`` and an entity's ``invariants``
(:class:`plugin_api.requirements.Requirement`) are checked here and nowhere else: by the
action chain before the effect (:mod:`host.runtime.engine`, which a dry run and another
plugin's ``ctx.data.run`` run too), by every write's validation step
(:meth:`host.runtime.data.DataRuntime.validate`: invariants on every write path) and by
availability, per row, without running anything (:mod:`host.runtime.availability`).

Rows are database values (as the store reads them). A condition through a reference
(``ticket.billable``) reads the referenced rows once per reference field for all the rows
asked about (one statement), without a read floor: the rule is the plugin's declaration,
not a reader's view. A condition is the one condition language of row scopes and list
filters (:mod:`host.query.conditions`), evaluated in Python on those values.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from host.graph.model import CompiledEntity
from host.query.conditions import column_of, fold, from_value
from host.query.spec import Column
from host.runtime.actor import Actor
from plugin_api.conditions import AnyOf, Condition, Operator
from plugin_api.errors import TesseraError
from plugin_api.requirements import Requirement, RuleValue

__all__ = [
    "Checked",
    "Followed",
    "Reader",
    "checked",
    "compile_requirement",
    "first_refusal",
    "follow_rows",
    "refusals",
]

Row = Mapping[str, Any]
Reader = Callable[[str, str, Sequence[str]], Awaitable[Sequence[Row]]]
"""Reads rows of an entity by id (entity FQN, tenant, ids) -> rows as database values."""
Followed = dict[str, dict[str, Row]]
"""Reference field -> referenced row id -> that row (database values)."""


@dataclass(frozen=True, slots=True)
class _Test:
    """One condition, compiled: the column, the operator, literal operands in database form
    (``None`` when the value is a :class:`RuleValue`, resolved when checked)."""

    column: Column
    operator: str
    operands: tuple[object, ...] | None
    value: RuleValue | None


@dataclass(frozen=True, slots=True)
class Checked:
    """A requirement compiled against its entity: every group must hold (a group holds when
    one of its tests does)."""

    requirement: Requirement
    groups: tuple[tuple[_Test, ...], ...]

    @property
    def follows(self) -> frozenset[str]:
        """The reference fields its conditions read through."""
        return frozenset(
            name
            for group in self.groups
            for test in group
            for name in (test.column.via, _via(test.value))
            if name is not None
        )

    @property
    def reads(self) -> frozenset[str]:
        """The fields of the row it reads (a followed field: its reference field)."""
        names = set(self.follows)
        for group in self.groups:
            for test in group:
                if test.column.via is None:
                    names.add(test.column.name)
                if test.value is not None and test.value.source == "row":
                    names.add(test.value.name.partition(".")[0])
        return frozenset(names)

    @property
    def uses_inputs(self) -> bool:
        """Whether a condition compares with an input of the action."""
        return any(
            t.value is not None and t.value.source == "input" for g in self.groups for t in g
        )


def _via(value: RuleValue | None) -> str | None:
    if value is None or value.source != "row" or "." not in value.name:
        return None
    return value.name.partition(".")[0]


def _test(entity: CompiledEntity, condition: Condition) -> _Test:
    column = column_of(entity, condition.field)
    value = condition.value
    if isinstance(value, RuleValue):
        operator = Operator(condition.operator).value
        if operator not in column.type.operators or operator in ("in", "null", "contains"):
            raise ValueError(f"operator {operator!r} does not compare {column.name!r} with a value")
        if value.source == "row":
            column_of(entity, value.name)  # it exists
        return _Test(column, operator, None, value)
    typed = from_value(column, condition.operator, value, in_max=1000)
    return _Test(column, typed.operator, typed.values, None)


def compile_requirement(entity: CompiledEntity, requirement: Requirement) -> Checked:
    """``requirement`` compiled against ``entity``.

    :raises ValueError: a condition names no field, or an operator or value that does not fit
        (the compiler reports it, naming the plugin).
    :raises BadRequest: a literal value that does not fit its field.
    """
    groups: list[tuple[_Test, ...]] = []
    for item in requirement.items():
        if isinstance(item, AnyOf):
            groups.append(tuple(_test(entity, c) for c in item.conditions))
        elif isinstance(item, Condition):
            groups.append((_test(entity, item),))
        else:
            raise ValueError(f"a requirement's 'when' holds conditions, got {item!r}")
    return Checked(requirement, tuple(groups))


def checked(entity: CompiledEntity, requirements: Sequence[Requirement]) -> tuple[Checked, ...]:
    """``requirements`` of (or about) ``entity``, compiled."""
    return tuple(compile_requirement(entity, r) for r in requirements)


async def follow_rows(
    entity: CompiledEntity,
    requirements: Sequence[Checked],
    rows: Sequence[Row],
    tenant_id: str,
    read: Reader,
) -> Followed:
    """The rows ``rows``' references point at, for the references ``requirements`` read
    through: one read per reference field."""
    followed: Followed = {}
    for name in sorted({via for r in requirements for via in r.follows}):
        field = entity.fields[name]
        assert field.target is not None
        ids = sorted({str(row[name]) for row in rows if row.get(name) is not None})
        found = await read(field.target, tenant_id, ids) if ids else ()
        followed[name] = {str(row["id"]): row for row in found}
    return followed


def _value_of(name: str, row: Row, followed: Followed) -> Any:
    reference, dot, source = name.partition(".")
    if not dot:
        return row.get(name)
    target = row.get(reference)
    if target is None:
        return None
    referenced = followed.get(reference, {}).get(str(target))
    return None if referenced is None else referenced.get(source)


def _resolve(test: _Test, row: Row, followed: Followed, actor: Actor, inputs: Row) -> object:
    value = test.value
    assert value is not None
    if value.source == "actor":
        return actor.actor_id
    if value.source == "row":
        return _value_of(value.name, row, followed)
    given = inputs.get(value.name)
    if given is None:
        return None
    try:
        return test.column.type.operand(test.column.field, given)
    except TesseraError:
        return _MISFIT


_MISFIT = object()
"""An input that does not fit the field it is compared with: no condition holds on it."""


def _rank(column: Column, value: object) -> object:
    options = column.field.options
    if options and isinstance(value, str):
        return options.index(value) if value in options else None
    return value


def _holds(test: _Test, row: Row, followed: Followed, actor: Actor, inputs: Row) -> bool:
    have = _value_of(test.column.name, row, followed)
    operator = test.operator
    if test.operands is None:
        operands: tuple[object, ...] = (_resolve(test, row, followed, actor, inputs),)
        if operands[0] is _MISFIT:
            return False
        if operands[0] is None and operator in ("eq", "ne"):
            operator, operands = "null", (operator == "eq",)
    else:
        operands = test.operands
    if operator == "null":
        return (have is None) is operands[0]
    if operator == "ne":
        return have is None or have != operands[0]
    if have is None:
        return False
    if operator == "eq":
        return bool(have == operands[0])
    if operator == "in":
        return have in operands
    if operator == "contains":
        return str(operands[0]) in fold(str(have))
    left, right = _rank(test.column, have), _rank(test.column, operands[0])
    if left is None or right is None:
        return False
    try:
        return bool(_COMPARE[operator](left, right))
    except TypeError:
        return False


_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "lt": lambda a, b: a < b,
    "lte": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "gte": lambda a, b: a >= b,
}


def first_refusal(
    requirements: Sequence[Checked],
    row: Row,
    followed: Followed,
    actor: Actor,
    inputs: Row | None = None,
) -> TesseraError | None:
    """The refusal of the first requirement ``row`` does not meet (in declaration order),
    or ``None``. ``inputs``: the action's inputs as given (``None``: none known)."""
    given = inputs or {}
    for requirement in requirements:
        declared = requirement.requirement
        if declared.exempt and not actor.roles.isdisjoint(declared.exempt):
            continue
        for group in requirement.groups:
            if not any(_holds(test, row, followed, actor, given) for test in group):
                return declared.refuse(declared.message)
    return None


async def refusals(
    entity: CompiledEntity,
    requirements: Sequence[Checked],
    rows: Sequence[Row],
    actor: Actor,
    read: Reader,
    inputs: Row | None = None,
) -> list[TesseraError | None]:
    """Each row's refusal by ``requirements`` (``None``: it meets them all), the referenced
    rows read once for all of them."""
    if not requirements:
        return [None] * len(rows)
    followed = await follow_rows(entity, requirements, rows, actor.tenant_id, read)
    return [first_refusal(requirements, row, followed, actor, inputs) for row in rows]
