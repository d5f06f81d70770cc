"""The library plugin: books, and loans of them to members.

A librarian adds books and lends them; a loan references its book, the lend effect refuses a
book already out and marks it on loan, returning shelves it again. Members read their own
loans; the desk shows librarians the loans still out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from plugin_api import (
    Action,
    CreateAction,
    EffectHandler,
    Entity,
    Field,
    FieldType,
    Filter,
    FilterOperator,
    ListOptions,
    PolicyHandler,
    Projection,
    ReadAccess,
    ReadPolicyHandler,
    RowScope,
    Stamp,
    Transition,
    TransitionAction,
    UpdateAction,
    Workflow,
    hookimpl,
)
from tessera_library.lending import BOOK, LOAN, lend, open_loans, own_loan, shelve

TESSERA_PLUGIN_API = "1.3"
"""The plugin API this plugin requires: ctx.data and reference fields."""

book = Entity(
    fqn=BOOK,
    fields=(
        Field(name="title", type=FieldType.STRING, max_length=200),
        Field(name="author", type=FieldType.STRING, max_length=120),
        Field(name="summary", type=FieldType.STRING, nullable=True),
        Field(name="shelf", type=FieldType.ENUM, options=("fiction", "science", "history", "kids")),
        Field(name="on_loan", type=FieldType.BOOLEAN, default=False),
    ),
)

loan = Entity(
    fqn=LOAN,
    fields=(
        Field(name="book", type=FieldType.REFERENCE, target=BOOK),
        Field(name="borrower", type=FieldType.STRING),
        Field(name="due_at", type=FieldType.DATETIME),
        Field(name="returned_at", type=FieldType.DATETIME, nullable=True),
        Field(name="lent_by", type=FieldType.STRING, nullable=True),
        Field(name="state", type=FieldType.ENUM, options=("out", "returned", "lost")),
    ),
    workflow=Workflow(
        state_field="state",
        initial="out",
        transitions=(
            Transition(
                name="give_back",
                sources=("out",),
                target="returned",
                stamps=(Stamp.now("returned_at"),),
            ),
            Transition(name="lose", sources=("out",), target="lost"),
        ),
    ),
)

BOOK_FIELDS = ("title", "author", "summary", "shelf")

ACTIONS: tuple[Action, ...] = (
    CreateAction(fqn=f"{BOOK}.add", entity=BOOK, inputs=BOOK_FIELDS, roles=("librarian",)),
    UpdateAction(fqn=f"{BOOK}.edit", entity=BOOK, patchable=BOOK_FIELDS, roles=("librarian",)),
    CreateAction(
        fqn=f"{LOAN}.lend",
        entity=LOAN,
        inputs=("book", "borrower", "due_at"),
        stamps=(Stamp.actor("lent_by"),),
        roles=("librarian",),
        effect="library.lend",
    ),
    TransitionAction(
        fqn=f"{LOAN}.give_back",
        entity=LOAN,
        transition="give_back",
        stampable=(),
        roles=("librarian", "member"),
        policies=("library.own_loan",),
        effect="library.shelve",
    ),
    TransitionAction(
        fqn=f"{LOAN}.lose", entity=LOAN, transition="lose", stampable=(), roles=("librarian",)
    ),
)

PROJECTIONS: tuple[Projection, ...] = (
    Projection(
        fqn=f"{BOOK}.catalogue",
        entity=BOOK,
        fields=("id", "title", "author", "shelf", "on_loan"),
        actions=(f"{BOOK}.add",),
        listing=ListOptions(
            filters=(
                Filter(field="shelf", operators=(FilterOperator.EQ, FilterOperator.IN)),
                Filter(field="on_loan"),
                Filter(field="author", operators=("eq", "contains")),
            ),
            sortable=("title", "author"),
            default_sort=("title",),
            search=("title", "author", "summary"),
            default_page_size=20,
        ),
    ),
    Projection(
        fqn=f"{BOOK}.detail",
        entity=BOOK,
        fields=(
            "id",
            "title",
            "author",
            "summary",
            "shelf",
            "on_loan",
            "created_at",
            "updated_at",
            "_version",
        ),
        actions=(f"{BOOK}.edit",),
    ),
    # "My loans": a member sees theirs, a librarian every loan.
    Projection(
        fqn=f"{LOAN}.mine",
        entity=LOAN,
        fields=("id", "book", "borrower", "due_at", "state", "returned_at"),
        actions=(f"{LOAN}.give_back",),
        listing=ListOptions(
            filters=(
                Filter(field="state"),
                Filter(field="book"),
                Filter(field="due_at", operators=("lt", "gte")),
            ),
            sortable=("due_at",),
            default_sort=("due_at",),
        ),
        access=ReadAccess(
            roles=("member", "librarian"),
            scope=RowScope(field="borrower", exempt=("librarian",)),
        ),
    ),
    # The desk: loans still out (the head librarian sees every loan).
    Projection(
        fqn=f"{LOAN}.desk",
        entity=LOAN,
        fields=("id", "book", "borrower", "due_at", "state", "lent_by"),
        actions=(f"{LOAN}.give_back", f"{LOAN}.lose"),
        access=ReadAccess(roles=("librarian",), policies=("library.open_loans",)),
    ),
)


@hookimpl
def tessera_entities() -> Sequence[Entity]:
    return (book, loan)


@hookimpl
def tessera_actions() -> Sequence[Action]:
    return ACTIONS


@hookimpl
def tessera_projections() -> Sequence[Projection]:
    return PROJECTIONS


@hookimpl
def tessera_policies() -> Mapping[str, PolicyHandler]:
    return {"library.own_loan": own_loan}


@hookimpl
def tessera_effects() -> Mapping[str, EffectHandler]:
    return {"library.lend": lend, "library.shelve": shelve}


@hookimpl
def tessera_read_policies() -> Mapping[str, ReadPolicyHandler]:
    return {"library.open_loans": open_loans}
