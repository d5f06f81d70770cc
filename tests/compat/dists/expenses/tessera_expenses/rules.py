"""Who may do what with a claim, and what paying one does."""

from __future__ import annotations

from collections.abc import Sequence

from plugin_api import (
    ActionContext,
    Condition,
    Operator,
    PolicyDenied,
    PolicyVerdict,
    WorkflowStateMismatch,
    batch_policy,
    dry_run_safe,
)

CLAIM = "expenses.claim"
OPEN_CLAIMS = 3
"""At most this many submitted claims per employee wait for a manager."""


def own_draft(ctx: ActionContext) -> bool:
    """An employee changes and submits only their own claims."""
    if ctx.subject is None or ctx.subject["claimant"] != ctx.actor_id:
        raise PolicyDenied("Only the employee who filed a claim may change or submit it")
    return True


@batch_policy
async def monthly_cap(contexts: Sequence[ActionContext]) -> Sequence[PolicyVerdict]:
    """At most OPEN_CLAIMS submitted claims per employee; one read for the whole page."""
    claimants = sorted({c.subject["claimant"] for c in contexts if c.subject is not None})
    waiting = await contexts[0].data.find(
        CLAIM,
        Condition(field="claimant", operator=Operator.IN, value=claimants),
        Condition(field="state", operator=Operator.EQ, value="submitted"),
        limit=1000,
    )
    count = {name: 0 for name in claimants}
    for row in waiting:
        count[row["claimant"]] += 1
    verdicts: list[PolicyVerdict] = []
    for ctx in contexts:
        claimant = ctx.subject["claimant"] if ctx.subject is not None else None
        if claimant is not None and count[claimant] >= OPEN_CLAIMS:
            verdicts.append(PolicyDenied(f"{claimant} already has {OPEN_CLAIMS} claims waiting"))
        else:
            verdicts.append(True)
    return verdicts


def not_own(ctx: ActionContext) -> bool:
    """Nobody approves or rejects their own claim."""
    if ctx.subject is not None and ctx.subject["claimant"] == ctx.actor_id:
        raise PolicyDenied("A manager does not decide on their own claim")
    return True


@dry_run_safe  # a reference drawn in a dry run is rolled back with it
async def pay(ctx: ActionContext) -> None:
    """Give the paid claim its reference, once a manager approved it (as its history says)."""
    assert ctx.subject is not None
    history = await ctx.data.history(CLAIM, ctx.subject["id"])
    if not any(record.action == f"{CLAIM}.approve" for record in history):
        raise WorkflowStateMismatch("The claim was never approved")
    number = await ctx.next_sequence("expenses.reference")
    ctx.set("reference", f"EXP-{number:05d}")
