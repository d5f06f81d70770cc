"""Batch policies and dry-run safety (plugin API 1.7; docs/writing-plugins.md, "Availability
and dry runs").

**Batch policies.** The host asks a custom policy about many rows at once when it tells a
reader which actions each row of a page allows (ViewSchema 1.2.0 availability, the
``POST /availability`` question). A plain policy (:data:`plugin_api.PolicyHandler`) is then
called once per row, in order. A policy that reads other rows should be a batch policy, so
that a 50-row page costs one read, not 50::

    @batch_policy
    async def same_team(contexts: Sequence[ActionContext]) -> Sequence[PolicyVerdict]:
        ids = [ctx.subject["team"] for ctx in contexts if ctx.subject is not None]
        teams = await contexts[0].data.find(
            "acme.team", Condition(field="id", operator="in", value=ids), limit=1000
        )
        members = {t["id"]: t["members"] for t in teams}
        return [ctx.actor_id in members.get(ctx.subject["team"], "") for ctx in contexts]

    @hookimpl
    def tessera_policies():
        return {"acme.same_team": same_team}

The handler gets the contexts of the rows still allowed (one actor, one action, one
transaction: any context's ``data`` reads for all of them) and returns one verdict per
context, in the same order: ``True`` allows; an error of the taxonomy (an instance, not
raised) refuses that row with that error; anything else refuses with 403 ``PolicyDenied``.
Raising an error of the taxonomy refuses every row of the batch with it. A running action
calls the same handler with a one-element list, so the answer a reader is shown and the
answer of the action itself come from one implementation.

**Dry-run safety.** ``POST /actions/{fqn}?dryRun=true`` runs the whole chain inside a
transaction that is always rolled back. Everything a handler does through the runtime
(``set``, ``data``, ``next_sequence``, SQL through ``db``) is rolled back with it; what a
handler sends elsewhere (mail, HTTP calls, files) is not. So an effect, and a transactional
subscriber (a dry run runs those of the action in its transaction, on the event the action
would have had), must declare that it is safe to dry-run with :func:`dry_run_safe`; a dry run
of an action whose effect or transactional subscriber does not is refused with 422
``DryRunUnsupported`` before anything runs. Policies must not change anything in the first
place, so they need no declaration.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, TypeAlias, TypeVar

from plugin_api.context import ActionContext
from plugin_api.errors import TesseraError

__all__ = [
    "BatchPolicy",
    "BatchPolicyHandler",
    "PolicyVerdict",
    "batch_policy",
    "dry_run_safe",
    "is_dry_run_safe",
]

PolicyVerdict: TypeAlias = bool | TesseraError
"""A batch policy's answer for one context: ``True`` allows, an error refuses with it,
anything else (``False``) refuses with 403 ``PolicyDenied``."""

BatchPolicyHandler: TypeAlias = Callable[
    [Sequence[ActionContext]], Sequence[PolicyVerdict] | Awaitable[Sequence[PolicyVerdict]]
]
"""A batch policy (sync or async): one verdict per context, in order."""

DRY_RUN_SAFE: Final = "__tessera_dry_run_safe__"
"""The attribute :func:`dry_run_safe` sets on a handler."""

H = TypeVar("H")


class BatchPolicy:
    """A custom policy asked about many rows at once (see the module's documentation).

    Register it in ``tessera_policies`` like any policy; it is also callable with one
    context (``True`` or the refusal raised), so it works wherever a plain policy does.
    """

    __slots__ = ("handler",)

    def __init__(self, handler: BatchPolicyHandler) -> None:
        self.handler = handler

    async def verdicts(self, contexts: Sequence[ActionContext]) -> Sequence[PolicyVerdict]:
        """The handler's verdicts on ``contexts`` (one each, checked)."""
        answer: Any = self.handler(contexts)
        if isinstance(answer, Awaitable):
            answer = await answer
        verdicts = list(answer)
        if len(verdicts) != len(contexts):
            raise ValueError(
                f"batch policy answered {len(verdicts)} verdict(s) for {len(contexts)} context(s)"
            )
        return verdicts

    async def __call__(self, context: ActionContext) -> bool:
        (verdict,) = await self.verdicts([context])
        if isinstance(verdict, TesseraError):
            raise verdict
        return verdict is True


def batch_policy(handler: BatchPolicyHandler) -> BatchPolicy:
    """Mark ``handler`` as a batch policy (decorator)."""
    return BatchPolicy(handler)


def dry_run_safe(handler: H) -> H:
    """Declare an effect or a transactional subscriber's handler safe to dry-run
    (decorator): it changes nothing outside the transaction it is given. Returns ``handler``
    itself, marked."""
    setattr(handler, DRY_RUN_SAFE, True)
    return handler


def is_dry_run_safe(handler: object) -> bool:
    """Whether ``handler`` was declared with :func:`dry_run_safe`."""
    return getattr(handler, DRY_RUN_SAFE, False) is True
