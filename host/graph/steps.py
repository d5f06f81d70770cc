"""The steps of an action's chain and the errors each may refuse with.

The compiler gives every action the steps its chain runs (:attr:`CompiledAction.steps
<host.graph.model.CompiledAction.steps>`, in chain order); the engine runs a step only when
the action has it (:mod:`host.runtime.engine`), and the OpenAPI document lists the errors of
exactly those steps (:meth:`CompiledAction.refusals
<host.graph.model.CompiledAction.refusals>`), so what an action can answer is asked of the
action itself, in one place.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

from plugin_api import errors as e
from plugin_api.definitions import (
    Action,
    CreateAction,
    Entity,
    FieldType,
    Transition,
    TransitionAction,
)
from plugin_api.errors import ALL_ERRORS, EXTENDED_ERRORS, TesseraError
from plugin_api.requirements import Requirement

__all__ = ["ALWAYS", "ANY_ERROR", "STEP_ERRORS", "Step", "declared_refusals", "steps_of"]

Errors = tuple[type[TesseraError], ...]


class Step(enum.Enum):
    """One step of an action's chain (in chain order)."""

    ROLES = "roles"
    """The role check: the actor holds one of the action's roles."""
    SUBJECT = "subject"
    """The subject: given, of the active tenant, existing."""
    POLICIES = "policies"
    """The action's custom policies."""
    REFERENCES = "references"
    """Every reference value written names an existing row of the tenant."""
    WORKFLOW = "workflow"
    """The workflow gate: the subject is in a source state of the transition."""
    CONDITIONS = "conditions"
    """The action's declared conditions, ``requires`` (:func:`declared_refusals`)."""
    EFFECT = "effect"
    """The custom effect (and what it writes: other plugins' owned fields are refused)."""
    INVARIANTS = "invariants"
    """The entity's declared invariants, on the row as it will be written."""
    VALIDATORS = "validators"
    """The entity's validators, on the row as it will be written."""


ANY_ERROR: Final[Errors] = (*ALL_ERRORS, *EXTENDED_ERRORS)
"""What a plugin's handler may raise and the client then receives: any error of
:mod:`plugin_api.errors`."""

ALWAYS: Final[Errors] = (
    e.BadRequest,
    e.ConcurrencyConflict,
    e.AuditEmissionFailed,
    e.InternalError,
)
"""What every action can answer: a value that does not fit, a lost race, a failed audit
record, a bug."""

STEP_ERRORS: Final[Mapping[Step, Errors]] = {
    Step.ROLES: (e.PolicyDenied,),
    Step.SUBJECT: (e.PolicySubjectRequired, e.TenantBoundaryViolation, e.NotFound),
    Step.POLICIES: ANY_ERROR,
    Step.REFERENCES: (e.BadRequest,),
    Step.WORKFLOW: (e.WorkflowStateMismatch,),
    Step.CONDITIONS: (),  # each action's own: declared_refusals
    Step.EFFECT: (*ANY_ERROR, e.EffectFailed, e.OwnershipDenied),
    Step.INVARIANTS: (),  # the entity's own: declared_refusals
    Step.VALIDATORS: ANY_ERROR,
}
"""The errors each step may refuse with."""


def declared_refusals(action: Action, entity: Entity | None = None) -> Errors:
    """The errors ``action``'s declared conditions (``requires``) and, given its ``entity``,
    the entity's invariants refuse with (plugin API 1.10), each class once."""
    declared = (*action.requires, *(entity.invariants if entity is not None else ()))
    return tuple(dict.fromkeys(r.refuse for r in declared if isinstance(r, Requirement)))


def steps_of(action: Action, entity: Entity, transition: Transition | None) -> tuple[Step, ...]:
    """The steps the chain of ``action`` on ``entity`` runs (``transition``: the workflow
    transition of a transition action)."""
    steps: list[Step] = []
    if action.roles:
        steps.append(Step.ROLES)
    if not isinstance(action, CreateAction):
        steps.append(Step.SUBJECT)
    if action.policies:
        steps.append(Step.POLICIES)
    if any(getattr(field, "type", None) is FieldType.REFERENCE for field in entity.fields):
        steps.append(Step.REFERENCES)
    if isinstance(action, TransitionAction) and transition is not None:
        steps.append(Step.WORKFLOW)
    if action.requires:
        steps.append(Step.CONDITIONS)
    if action.effect is not None:
        steps.append(Step.EFFECT)
    if entity.invariants:
        steps.append(Step.INVARIANTS)
    if entity.validators:
        steps.append(Step.VALIDATORS)
    return tuple(steps)
