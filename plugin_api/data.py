"""The typed data API: how custom policies and effects read and write any entity's rows.

Reached through :attr:`plugin_api.ActionContext.data`. Every call is scoped to the action's
tenant (a plugin never names a tenant and never sees another tenant's rows), runs inside the
action's transaction, and uses the read and write shapes of the HTTP surface (spec 2.6):

* rows come back in read shape, system fields included (``id``, ``tenant_id``,
  ``created_at``, ``updated_at``, ``_version``);
* values are given in write shape and validated exactly as an action's inputs are
  (400 ``BadRequest`` naming the field when one does not fit).

Writes (effects only; :meth:`DataAccess.increment`, plugin API 1.8, adds to a counter
without a version guard) give the row a new ``_version`` and ``updated_at`` and write an audit
record naming the action that caused them. They follow the entity's rules (plugin API 1.8):
field constraints (400 ``BadRequest``), the entity's validators (what they raise) and field
ownership: a value for a field another plugin owns, or a transition of an entity whose state
field another plugin owns, is refused with 403 :class:`~plugin_api.errors.OwnershipDenied`;
run the owner's action instead (:meth:`DataAccess.run`).

A write to a row this action has read is guarded by the version read: if another transaction
changed the row since, the whole action fails with 409 ``ConcurrencyConflict`` (never a lost
update). Policies get the same object but may only read; a write from a policy raises
:class:`RuntimeError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeAlias

from plugin_api.conditions import OPERATORS, Condition, Operator

__all__ = [
    "MAX_RUN_DEPTH",
    "OPERATORS",
    "Condition",
    "DataAccess",
    "HistoryRecord",
    "Operator",
    "Row",
]

MAX_RUN_DEPTH: Final = 4
"""How deep :meth:`DataAccess.run` may nest: an action run from an effect is level 1, an
action its effect runs level 2, ... (plugin API 1.8)."""

Row: TypeAlias = Mapping[str, Any]
"""A row in read shape, system fields included."""


@dataclass(frozen=True, kw_only=True, slots=True)
class HistoryRecord:
    """One write of a row, from its audit record (:meth:`DataAccess.history`)."""

    seq: int
    """The record's number: give it as ``before`` to read older records."""
    event_id: str
    action: str
    """The action that caused the write (for a data-API write: the action whose effect made
    it)."""
    actor_id: str
    roles: tuple[str, ...]
    at: str
    """When (RFC 3339, UTC)."""
    version_before: str | None
    """The row's ``_version`` before the write (``None`` for its creation, and on records
    written before Tessera kept it)."""
    version_after: str | None
    changes: Mapping[str, tuple[Any, Any]] | None
    """``{field: (before, after)}`` in read shapes for every field the write changed
    (``before`` is ``None`` for the creation); ``None`` on records written before Tessera
    kept them."""


class DataAccess(Protocol):
    """Rows of any entity of the graph, in the action's tenant and transaction."""

    async def get(self, entity: str, id: str) -> Row | None:
        """The row ``id`` of ``entity`` (an FQN such as ``helpdesk.ticket``), or ``None``
        when the tenant has no such row."""
        ...

    async def find(
        self,
        entity: str,
        *conditions: Condition,
        where: Mapping[str, Any] | None = None,
        limit: int = 100,
    ) -> Sequence[Row]:
        """The rows of ``entity`` matching every condition (and every ``where`` item,
        shorthand for an ``eq`` condition), in ``id`` order, at most ``limit`` (1 to 1000).

        A condition follows the rules of list filters (:mod:`plugin_api.conditions`); here
        ``eq``/``ne`` with the value ``None`` mean ``null`` ``True``/``False``, and ``in``
        takes at most 1000 values.

        :raises BadRequest: a value does not fit its field.
        :raises ValueError: an unknown entity, field or operator.
        """
        ...

    async def create(self, entity: str, values: Mapping[str, Any]) -> Row:
        """Create a row of ``entity`` from ``values`` (declared fields, write shape; the
        defaults and the workflow's initial state apply as for a create action); return it.

        :raises BadRequest: a value does not fit, or a required field is missing.
        """
        ...

    async def patch(self, entity: str, id: str, values: Mapping[str, Any]) -> Row:
        """Change the ``values`` of the row ``id`` (partial patch; not the workflow state
        field, which only transitions change); return the row as written.

        :raises NotFound: the tenant has no such row.
        :raises ConcurrencyConflict: the row changed since this action read it.
        :raises ValueError: the row is the action's own subject (use
            :meth:`~plugin_api.ActionContext.set` for that one).
        """
        ...

    async def transition(
        self,
        entity: str,
        id: str,
        transition: str,
        inputs: Mapping[str, Any] | None = None,
    ) -> Row:
        """Run workflow ``transition`` on the row ``id``: check its source state, stamp
        ``inputs`` (declared fields other than the state field) and the transition's
        stamps, move it to the target state; return the row as written.

        :raises WorkflowStateMismatch: the row is not in a source state of the transition.
        :raises NotFound: the tenant has no such row.
        :raises ConcurrencyConflict: the row changed since this action read it.
        """
        ...

    async def run(
        self,
        action: str,
        *,
        subject: str | None = None,
        inputs: Mapping[str, Any] | None = None,
    ) -> Mapping[str, Any]:
        """Run the action ``action`` (any plugin's; plugin API 1.8) as the current actor,
        inside this transaction, and return its outputs: its whole chain runs (role check,
        custom policies, subject lookup, workflow gate, inputs, stamps, effect, entity
        validators, audit record, event), as if the actor had invoked it over HTTP, and it
        writes as its own plugin (so it may set the fields its plugin owns). ``subject``:
        the row's id (``None`` for a create). Effects only; nested runs are bounded
        (:data:`MAX_RUN_DEPTH` levels).

        :raises TesseraError: what the action answers with over HTTP (``UnknownAction``,
            ``PolicyDenied``, ``WorkflowStateMismatch``, ``BadRequest``...); the caller's
            whole action is then rolled back unless it catches it.
        :raises ValueError: ``subject`` is the calling action's own subject.
        :raises RuntimeError: called from a policy or a validator, or nested too deep.
        """
        ...

    async def increment(self, entity: str, id: str, field: str, by: int = 1) -> Row:
        """Add ``by`` (negative: subtract) to the integer ``field`` of the row ``id`` in one
        statement, and return the row as written (plugin API 1.8). A null counts as 0.

        Unlike :meth:`patch` it is not guarded by a version: concurrent increments of one
        row wait for each other and all apply, none is a 409. Like any write it gives the
        row a new ``_version`` and ``updated_at`` and an audit record (the field's value
        before and after). A later guarded write of the row in this action uses the version
        the increment returned, unless another transaction changed the row between this
        action's read of it and the increment (then that write is a 409, as it would be
        without the increment).

        It follows the entity's rules like any write: the field's constraints hold for the
        sum, a field another plugin owns is refused, and the entity's validators see an
        ``update`` of the field.

        :raises BadRequest: ``field`` is not an integer field, ``by`` not an integer, or
            the sum would leave the 64-bit range or the field's ``minimum``/``maximum``.
        :raises OwnershipDenied: another plugin owns ``field``.
        :raises NotFound: the tenant has no such row.
        :raises ValueError: an unknown entity or field, or the action's own subject.
        """
        ...

    async def history(
        self, entity: str, id: str, *, limit: int = 100, before: int | None = None
    ) -> Sequence[HistoryRecord]:
        """The row's history: at most ``limit`` (1 to 1,000) of its audit records, newest
        first, older than the record numbered ``before`` (``None``: from the newest). Reads
        only; the writes of this action so far are included (docs/history.md).

        :raises ValueError: ``limit`` is out of range.
        """
        ...
