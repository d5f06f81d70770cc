"""The checks that decide whether an actor may run an action on a row, in the order the
action chain runs them: the role check, the custom policies, the workflow gate.

One implementation serves the running action (:mod:`host.runtime.engine`, one row) and the
availability a reader is shown (:mod:`host.runtime.availability`, many rows): each check
answers the refusal (an error of the taxonomy) or ``None``, and the custom policies are
asked about every row still allowed at once (a :class:`~plugin_api.BatchPolicy` in one
call, a plain policy once per row).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from host.graph.model import CompiledAction, Graph
from host.runtime.actor import Actor
from host.runtime.writerules import state_mismatch
from plugin_api.context import ActionContext
from plugin_api.errors import InternalError, PolicyDenied, TesseraError
from plugin_api.policies import BatchPolicy

__all__ = ["policy_refusals", "role_refusal", "state_refusal"]

logger = logging.getLogger("tessera.runtime")

Refusal = TesseraError | None


def role_refusal(action: CompiledAction, actor: Actor) -> Refusal:
    """403 ``PolicyDenied`` when ``actor`` holds none of the action's roles."""
    required = action.definition.roles
    if required and actor.roles.isdisjoint(required):
        return PolicyDenied(
            f"Action '{action.fqn}' requires one of the roles: {', '.join(required)}"
        )
    return None


def state_refusal(action: CompiledAction, row: Mapping[str, Any]) -> Refusal:
    """409 ``WorkflowStateMismatch`` when ``row`` (database values) is not in a source state
    of the action's transition; ``None`` for actions that are not transitions."""
    transition = action.transition
    entity = action.entity
    if action.kind != "transition" or transition is None or entity.workflow is None:
        return None
    return state_mismatch(entity, transition, row, f"Action '{action.fqn}'")


async def policy_refusals(
    graph: Graph, action: CompiledAction, contexts: Sequence[ActionContext]
) -> list[Refusal]:
    """Each context's refusal by the action's custom policies, asked in declaration order;
    a context refused by one policy is not asked about by the next."""
    refusals: list[Refusal] = [None] * len(contexts)
    for name in action.definition.policies:
        waiting = [i for i, refusal in enumerate(refusals) if refusal is None]
        if not waiting:
            break
        registered = graph.policies[name]
        asked = [contexts[i] for i in waiting]
        answers = await _ask(name, registered.handler, registered.plugin.describe(), asked)
        for i, answer in zip(waiting, answers, strict=True):
            if isinstance(answer, TesseraError):
                refusals[i] = answer
            elif answer is not True:
                refusals[i] = PolicyDenied(f"Policy '{name}' denied action '{action.fqn}'")
    return refusals


async def _ask(
    name: str, handler: Any, plugin: str, contexts: Sequence[ActionContext]
) -> Sequence[object]:
    """The policy's verdict on each context (an error of the taxonomy for a refusal with a
    reason). A policy that raises anything else is a bug: 500 ``InternalError``."""
    if isinstance(handler, BatchPolicy):
        try:
            return await handler.verdicts(contexts)
        except TesseraError as error:
            return [error] * len(contexts)
        except Exception as exc:
            return [_bug(name, plugin, exc)] * len(contexts)
    answers: list[object] = []
    for context in contexts:
        try:
            verdict = handler(context)
            if inspect.isawaitable(verdict):
                verdict = await verdict
        except TesseraError as error:
            verdict = error
        except Exception as exc:
            verdict = _bug(name, plugin, exc)
        answers.append(verdict)
    return answers


def _bug(name: str, plugin: str, exc: Exception) -> InternalError:
    logger.error("custom policy %r of %s raised", name, plugin, exc_info=exc)
    error = InternalError()
    error.__cause__ = exc
    return error
