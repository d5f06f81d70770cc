"""What lending does to books, and who may read and return which loan."""

from __future__ import annotations

from plugin_api import (
    ANONYMOUS_ACTOR,
    ActionContext,
    Condition,
    ReadContext,
    ReadPolicyResult,
    RowCondition,
    WorkflowStateMismatch,
)

BOOK = "library.book"
LOAN = "library.loan"


async def lend(ctx: ActionContext) -> None:
    """Lend a book that is on the shelf, and mark it on loan."""
    book_id = ctx.changes["book"]  # the host checked it is a book of this tenant
    book = await ctx.data.get(BOOK, book_id)
    assert book is not None
    out = await ctx.data.find(
        LOAN, Condition(field="book", op="eq", value=book_id), where={"returned_at": None}
    )
    if book["on_loan"] or any(row["state"] == "out" for row in out):
        raise WorkflowStateMismatch(f"{book['title']!r} is already on loan")
    await ctx.data.patch(BOOK, book_id, {"on_loan": True})


async def shelve(ctx: ActionContext) -> None:
    """A returned book is back on the shelf."""
    assert ctx.subject is not None
    await ctx.data.patch(BOOK, ctx.subject["book"], {"on_loan": False})


def own_loan(ctx: ActionContext) -> bool:
    """Librarians take back any loan; a member only their own (anonymous callers none)."""
    if "librarian" in ctx.roles:
        return True
    if ctx.actor_id == ANONYMOUS_ACTOR or ctx.subject is None:
        return False
    return bool(ctx.subject["borrower"] == ctx.actor_id)


def open_loans(ctx: ReadContext) -> ReadPolicyResult:
    """The desk shows the loans still out; the head librarian sees every loan."""
    if "head" in ctx.roles:
        return True
    return RowCondition(field="state", operator="eq", value="out")
