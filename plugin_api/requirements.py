"""Declared conditions of actions and invariants of entities (plugin API 1.10).

A :class:`Requirement` is a rule written once: the conditions (in the one condition language
of :mod:`plugin_api.conditions`) a write must meet, and the error, status and message it is
refused with otherwise. The host evaluates it in one place, wherever it applies:

* in an action's ``requires``: before the action's effect, inside its transaction, whoever
  runs it (a request, a dry run, another plugin's ``ctx.data.run``), and in the per-row
  availability a renderer reads before the click (without running anything). The row it
  reads is the subject as it stands before the action; for a create, the row its inputs and
  defaults make.
* in an entity's ``invariants``: on every write of a row of the entity, by any action or any
  plugin's data API (create, patch, transition, increment, a subscriber's write), on the row
  as it will be written, where the entity's validators run. Availability foresees it on the
  row a transition would write (its target state and stamps).

A condition names a field of the row, or of the row one of its references points at
(``"ticket.billable"``; null when the reference is null); its value is a literal in the
field's write shape, or a value known only when the rule is checked: :data:`ACTOR_ID` (the
acting actor's id), :func:`row_field` (another field of the row) or :func:`input_value` (an
input of the action; absent inputs are null). All conditions of a requirement must hold
(give :class:`~plugin_api.conditions.AnyOf` for "or")::

    Requirement(
        when=(Condition(field="requested_by", operator="ne", value=ACTOR_ID),),
        refuse=PolicyDenied,
        message="An approver may not approve their own request",
    )
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal, TypeVar

from plugin_api._base import _as_tuples
from plugin_api.conditions import AnyOf, Condition
from plugin_api.errors import PolicyDenied, TesseraError

__all__ = [
    "ACTOR_ID",
    "Requirement",
    "RuleValue",
    "effect_refusals",
    "input_value",
    "refuses",
    "row_field",
]

H = TypeVar("H")
_REFUSES: Final = "__tessera_refuses__"


@dataclass(frozen=True, kw_only=True, slots=True)
class RuleValue:
    """A value a requirement's condition compares with, known only when it is checked.

    :param source: ``"actor"`` (``name`` ``"id"``: the acting actor's id), ``"row"`` (the
        field ``name`` of the row, in the field's write shape) or ``"input"`` (the action's
        input ``name``, as given; ``None`` when absent).
    :param name: what is read from the source.
    """

    source: Literal["actor", "row", "input"]
    name: str


ACTOR_ID: Final = RuleValue(source="actor", name="id")
"""The acting actor's id (``X-Actor-Id``, a token's subject, a subscriber's name)."""


def row_field(name: str) -> RuleValue:
    """The value of the row's field ``name`` (a declared field or ``ref.field``)."""
    return RuleValue(source="row", name=name)


def input_value(name: str) -> RuleValue:
    """The value of the action's input ``name`` (``None`` when absent, or for an invariant)."""
    return RuleValue(source="input", name=name)


@dataclass(frozen=True, kw_only=True, slots=True)
class Requirement:
    """A declared rule: ``when`` must hold, or the write is refused with ``refuse``.

    :param when: the conditions that must all hold (a :class:`Condition` or
        :class:`AnyOf`, or a tuple of them).
    :param refuse: the error class of :mod:`plugin_api.errors` the refusal is answered with
        (its status and kind); :class:`~plugin_api.errors.PolicyDenied` unless given.
    :param message: the refusal's message, as the client and the availability answer read it.
    :param exempt: roles the requirement does not apply to.
    """

    when: Condition | AnyOf | tuple[Condition | AnyOf, ...]
    message: str
    refuse: type[TesseraError] = PolicyDenied
    exempt: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.when, (Condition, AnyOf)):
            object.__setattr__(self, "when", (self.when,))
        _as_tuples(self, "when", "exempt")

    def items(self) -> tuple[Condition | AnyOf, ...]:
        """``when`` as a tuple (a single condition given is stored as a one-item tuple)."""
        when = self.when
        return when if isinstance(when, tuple) else (when,)

    def conditions(self) -> tuple[Condition, ...]:
        """Every condition it names (those inside an ``AnyOf`` too)."""
        found: list[Condition] = []
        for item in self.items():
            found += item.conditions if isinstance(item, AnyOf) else (item,)
        return tuple(found)


def refuses(*errors: type[TesseraError]) -> Callable[[H], H]:
    """Declare what an effect may refuse with beyond its action's declared requirements
    (decorator; ``@refuses()``: nothing). An effect declared so lets availability say a row
    is enabled for certain (ViewSchema 1.5.0 ``certain``); an effect without it may refuse in
    code nothing declared, so availability says it cannot be sure. Returns ``handler``
    itself, marked."""

    def mark(handler: H) -> H:
        setattr(handler, _REFUSES, tuple(errors))
        return handler

    return mark


def effect_refusals(handler: object) -> tuple[type[TesseraError], ...] | None:
    """What ``handler`` was declared to refuse with (:func:`refuses`); ``None``: undeclared."""
    declared = getattr(handler, _REFUSES, None)
    return declared if isinstance(declared, tuple) else None
