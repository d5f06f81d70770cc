"""Timers: time moves workflows (plugin API 1.10; docs/timers.md).

A timer is declared in metadata and fired by the host as an ordinary action (policy ->
gate -> effect -> audit) run by a *system actor*, never a human's identity. Two kinds:

* :class:`StateTimer`: ``after`` a duration in state ``state`` of an entity's workflow, run
  ``action`` on the row (``after 7 days in resolved -> close``); leaving the state cancels it;
* :class:`FieldTimer`: when the instant in datetime field ``field`` passes while the row is
  in one of ``states``, run ``action`` (``when due_at passes while open -> escalate``); a new
  value re-arms it, each value fires at most once, a value already past when written arms
  nothing, leaving ``states`` cancels it.

Declare them with the ``tessera_timers`` hook::

    @hookimpl
    def tessera_timers():
        sla = SystemActor(name="helpdesk.sla", roles=("agent",))
        return [
            FieldTimer(name="helpdesk.ticket.overdue", entity="helpdesk.ticket",
                       field="due_at", states=("open", "in_progress"),
                       action="helpdesk.ticket.escalate", actor=sla),
            StateTimer(name="helpdesk.ticket.autoclose", entity="helpdesk.ticket",
                       state="resolved", after=timedelta(days=7),
                       action="helpdesk.ticket.close", actor=sla),
        ]

A third kind, :class:`CronJob` (plugin API 1.12), runs a *create* action with fixed inputs
on a cron schedule, once per occurrence in each tenant the database knows::

    CronJob(name="helpdesk.daily_digest", schedule="0 2 * * *",
            action="helpdesk.digest.create", inputs={"period": "day"}, actor=sla)

A firing's audit record is the action's, done by ``system:<actor name>`` with the declared
roles; its ``via`` names the timer (``{"action": "timer:<timer name>", "plugin": ...}``).
A refusal (the row moved on, a policy says no) is the timer's outcome: it is not retried.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Final, TypeAlias

from plugin_api._base import _as_tuples

__all__ = [
    "SYSTEM_TIMER_ACTOR_PREFIX",
    "CronJob",
    "FieldTimer",
    "StateTimer",
    "SystemActor",
    "Timer",
]

SYSTEM_TIMER_ACTOR_PREFIX: Final = "system:"
"""A timer's system actor acts as ``system:<name>``."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SystemActor:
    """The identity a timer's action runs as.

    :param name: a dotted name (``helpdesk.sla``); the actor id is ``system:<name>``.
    :param roles: the roles it holds (the action's role check and policies see them).
    """

    name: str
    roles: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _as_tuples(self, "roles")

    @property
    def actor_id(self) -> str:
        """``system:<name>``."""
        return SYSTEM_TIMER_ACTOR_PREFIX + self.name


@dataclass(frozen=True, kw_only=True, slots=True)
class StateTimer:
    """Run ``action`` on a row that has been in ``state`` for ``after``.

    :param name: the timer's dotted name, unique across plugins (``helpdesk.ticket.autoclose``).
    :param entity: the FQN of an entity with a workflow.
    :param state: one of its workflow's states.
    :param after: how long in the state (positive); each entry into the state arms it anew.
    :param action: a transition or update action of ``entity``, run with no inputs.
    :param actor: who runs it (:class:`SystemActor`).
    """

    name: str
    entity: str
    state: str
    after: timedelta
    action: str
    actor: SystemActor


@dataclass(frozen=True, kw_only=True, slots=True)
class FieldTimer:
    """Run ``action`` on a row when the instant in its datetime ``field`` passes while the
    row is in one of ``states``.

    :param name: the timer's dotted name, unique across plugins.
    :param entity: the FQN of the entity.
    :param field: a ``datetime`` field of the entity.
    :param states: the workflow states in which it is armed; empty: any state (or an entity
        without a workflow).
    :param action: a transition or update action of ``entity``, run with no inputs.
    :param actor: who runs it (:class:`SystemActor`).
    """

    name: str
    entity: str
    field: str
    action: str
    actor: SystemActor
    states: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _as_tuples(self, "states")


@dataclass(frozen=True, kw_only=True, slots=True)
class CronJob:
    """Run the create ``action`` with ``inputs`` at each occurrence of ``schedule`` (UTC),
    once per occurrence in each tenant that has written anything (plugin API 1.12).

    :param name: the job's dotted name, unique across plugins and timers.
    :param schedule: a cron expression of five fields (minute, hour, day of month, month,
        day of week: ``0 2 * * *`` is 02:00 UTC every day) or six (a sixth field of seconds),
        as the ``croniter`` library reads them (names, ranges, steps and lists).
    :param action: the FQN of a create action, run with ``inputs``.
    :param actor: who runs it (:class:`SystemActor`).
    :param inputs: the action's inputs, JSON values (each a declared input of the action).

    An occurrence missed while no host ran fires once when one runs again; the ones between
    are skipped (as a Kubernetes CronJob or anacron would).
    """

    name: str
    schedule: str
    action: str
    actor: SystemActor
    inputs: Mapping[str, Any] = field(default_factory=dict)


Timer: TypeAlias = StateTimer | FieldTimer | CronJob
"""What ``tessera_timers`` returns items of."""
