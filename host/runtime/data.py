"""The typed data API of the action context (:class:`plugin_api.data.DataAccess`), and the
existence check of reference fields.

Every statement runs on the action's transaction (:class:`~host.storage.Tx`), filtered by
the action's tenant. A write is one guarded ``UPDATE ... RETURNING`` (or an ``INSERT``) and
one audit record naming the action that caused it; values go through the same coercion as
HTTP inputs (:func:`host.fieldtypes.coerce_write`) and come back rendered like HTTP rows.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, Final, TypeVar

from host.fieldtypes import Ordering, coerce_write, format_datetime, now_db, of, parse_datetime
from host.graph.model import CompiledAction, CompiledEntity, Graph
from host.runtime.actor import Actor
from host.runtime.writerules import missing_required, seed_new_row, state_mismatch, transition_row
from host.storage import Statement, Tx, is_transient, sql
from host.storage.store import AuditRecord, EntityStore
from host.systemfields import SYSTEM, new_ulid
from plugin_api.data import OPERATORS, Condition, Row
from plugin_api.definitions import Field, FieldType, Transition
from plugin_api.errors import (
    AuditEmissionFailed,
    BadRequest,
    ConcurrencyConflict,
    NotFound,
    WorkflowStateMismatch,
)

__all__ = ["ActionData", "DataRuntime"]

logger = logging.getLogger("tessera.runtime")
T = TypeVar("T")

MAX_FIND_LIMIT: Final = 1000
_ASCII_LOWER: Final = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_QUERYABLE_SYSTEM: Final = ("id", "created_at", "updated_at", "_version")


class DataRuntime:
    """What the data API needs of one graph, built once: the entity store and the reference
    fields of each entity."""

    def __init__(self, graph: Graph, store: EntityStore) -> None:
        self.graph = graph
        self.store = store
        self.dialect = store.dialect
        self.references = {
            fqn: tuple(f for f in entity.fields.values() if f.type is FieldType.REFERENCE)
            for fqn, entity in graph.entities.items()
        }

    def table(self, entity: CompiledEntity) -> str:
        return self.store.schema.entities[entity.fqn].name

    async def check_references(
        self,
        tx: Tx,
        tenant_id: str,
        entity: CompiledEntity,
        values: Mapping[str, Any],
    ) -> None:
        """Every reference among ``values`` (database values) names an existing row of its
        target entity in the tenant; otherwise 400 ``BadRequest`` naming the field."""
        for field in self.references[entity.fqn]:
            value = values.get(field.name)
            if value is None:
                continue
            assert field.target is not None
            if not await _transient_is_conflict(
                self.store.exists(tx, field.target, tenant_id, value)
            ):
                raise BadRequest(
                    f"Field {field.name!r} references {field.target} {value!r}, "
                    "which does not exist in this tenant"
                )

    def bind(
        self, tx: Tx, action: CompiledAction, actor: Actor, subject_id: str | None
    ) -> ActionData:
        """The data API of one invocation."""
        subject = (action.entity.fqn, subject_id) if subject_id is not None else None
        return ActionData(self, tx, action.fqn, actor, subject)


class ActionData:
    """:class:`plugin_api.data.DataAccess` for one action invocation: a facade over the
    entity store (:mod:`host.storage.store`) and the write rules
    (:mod:`host.runtime.writerules`) that the action chain follows too."""

    __slots__ = ("_actor", "_cause", "_rt", "_seen", "_subject", "_tx", "writable")

    def __init__(
        self,
        runtime: DataRuntime,
        tx: Tx,
        cause: str,
        actor: Actor,
        subject: tuple[str, str] | None,
    ) -> None:
        """``cause``: the action FQN the audit records name; ``subject``: (entity FQN, id)
        of the row only the action itself may change, if any."""
        self._rt = runtime
        self._tx = tx
        self._cause = cause
        self._actor = actor
        self._subject = subject
        self._seen: dict[tuple[str, str], str] = {}
        """The ``_version`` of every row this action read or wrote, by (entity, id)."""
        self.writable = False

    # -- reads ------------------------------------------------------------------------------

    async def get(self, entity: str, id: str) -> Row | None:
        self._entity(entity)
        row = await self._read(entity, id)
        return None if row is None else self._rt.store.renderer(entity)(row)

    async def find(
        self,
        entity: str,
        *conditions: Condition,
        where: Mapping[str, Any] | None = None,
        limit: int = 100,
    ) -> Sequence[Row]:
        compiled = self._entity(entity)
        if type(limit) is not int or not 1 <= limit <= MAX_FIND_LIMIT:
            raise ValueError(f"limit must be an integer from 1 to {MAX_FIND_LIMIT}")
        every = [*conditions, *(Condition(field=k, value=v) for k, v in (where or {}).items())]
        shape: list[tuple[str, str, int, bool]] = []
        args: list[Any] = [self._actor.tenant_id]
        for condition in every:
            if not isinstance(condition, Condition):
                raise ValueError(f"not a Condition: {condition!r}")
            op, values = _condition_values(compiled, condition)
            if op == "in" and not values:
                return []  # in an empty set: nothing matches
            field = compiled.fields.get(condition.field)
            text = field is None or of(field).ordering is Ordering.TEXT
            shape.append((condition.field, op, len(values), text))
            args.extend(values)
        render = self._rt.store.renderer(entity)
        statement = sql.select_where(
            self._rt.dialect, self._rt.table(compiled), render.columns, tuple(shape)
        )
        rows = await run(self._tx, (statement, (*args, limit)))
        id_at, version_at = render.columns.index("id"), render.columns.index("_version")
        for row in rows:
            self._seen.setdefault((entity, row[id_at]), row[version_at])
        return render.many(rows)

    async def _read(self, entity: str, id: str) -> Sequence[Any] | None:
        if not isinstance(id, str):
            raise ValueError(f"a row id is a string, got {type(id).__name__}")
        store = self._rt.store
        row = await _transient_is_conflict(store.get(self._tx, entity, self._actor.tenant_id, id))
        if row is not None:
            self._seen.setdefault((entity, id), store.version_of(entity, row))
        return row

    # -- writes -----------------------------------------------------------------------------

    async def create(self, entity: str, values: Mapping[str, Any]) -> Row:
        self._check_writable()
        compiled = self._entity(entity)
        changes = self._coerce(compiled, values)
        pending: dict[str, Any] = {}
        seed_new_row(compiled, changes, lambda name, value, _output: _put(pending, name, value))
        missing = missing_required(compiled, pending)
        if missing:
            raise BadRequest(f"Creating a {entity} requires: {', '.join(map(repr, missing))}")
        await self._rt.check_references(self._tx, self._actor.tenant_id, compiled, pending)
        now = now_db()
        written = self._rt.store.insert(entity, self._actor.tenant_id, pending, now)
        await run(self._tx, written.statement)
        self._seen[(entity, written.id)] = written.version
        rendered = self._render(entity, written.values)
        outputs = {"id": written.id, **{name: rendered[name] for name in changes}}
        await self._audit(compiled, written.id, rendered, changes, outputs, now)
        return rendered

    async def patch(self, entity: str, id: str, values: Mapping[str, Any]) -> Row:
        self._check_writable()
        compiled = self._entity(entity)
        changes = self._coerce(compiled, values)
        return await self._update(compiled, id, changes, changes, None)

    async def transition(
        self,
        entity: str,
        id: str,
        transition: str,
        inputs: Mapping[str, Any] | None = None,
    ) -> Row:
        self._check_writable()
        compiled = self._entity(entity)
        move = compiled.transitions.get(transition)
        if move is None or compiled.workflow is None:
            raise ValueError(f"entity {entity!r} has no workflow transition {transition!r}")
        stamped = self._coerce(compiled, inputs or {})
        return await self._update(compiled, id, stamped, stamped, move)

    async def _update(
        self,
        entity: CompiledEntity,
        id: str,
        values: dict[str, Any],
        given: Mapping[str, Any],
        transition: Transition | None,
    ) -> Row:
        if self._subject == (entity.fqn, id):
            raise ValueError(
                f"{entity.fqn} {id!r} is this action's subject: change it with ctx.set()"
            )
        row = await self._read(entity.fqn, id)
        if row is None:
            raise NotFound(f"No {entity.fqn} with id '{id}' in this tenant")
        store = self._rt.store
        current = dict(zip(store.renderer(entity.fqn).columns, row, strict=True))
        read_version = self._seen[(entity.fqn, id)]
        if current["_version"] != read_version:
            raise _conflict(entity, id)
        now = now_db()
        changes = values
        if transition is not None:
            state = state_mismatch(entity, transition, current)
            if state is not None:
                workflow = entity.workflow
                assert workflow is not None
                raise WorkflowStateMismatch(
                    f"{entity.fqn} {id!r} is '{state}'; the transition applies to "
                    f"{workflow.state_field} in {', '.join(transition.sources)}"
                )
            changes = {}
            transition_row(
                entity,
                transition,
                values,
                lambda name, value, _output: _put(changes, name, value),
                self._actor,
                now,
            )
        await self._rt.check_references(self._tx, self._actor.tenant_id, entity, changes)
        written = store.update(entity.fqn, self._actor.tenant_id, id, read_version, changes, now)
        if not await run(self._tx, written.statement):
            raise _conflict(entity, id)
        self._seen[(entity.fqn, id)] = written.version
        current.update(written.values)
        rendered = self._render(entity.fqn, current)
        outputs = {name: rendered[name] for name in changes}
        outputs["_version"] = written.version
        await self._audit(entity, id, rendered, given, outputs, now)
        return rendered

    # -- helpers ----------------------------------------------------------------------------

    def _check_writable(self) -> None:
        if not self.writable:
            raise RuntimeError("only a custom effect may change data; policies must not")

    def _entity(self, fqn: str) -> CompiledEntity:
        entity = self._rt.graph.entities.get(fqn) if isinstance(fqn, str) else None
        if entity is None:
            raise ValueError(f"no entity {fqn!r} in the graph")
        return entity

    def _coerce(self, entity: CompiledEntity, values: Mapping[str, Any]) -> dict[str, Any]:
        """Write-shape ``values`` of declared fields (not the state field) -> database values."""
        workflow = entity.workflow
        state_field = workflow.state_field if workflow is not None else None
        changes: dict[str, Any] = {}
        for name, value in values.items():
            field = entity.fields.get(name)
            if field is None or name == state_field:
                why = "the workflow state field" if field is not None else "not a declared field"
                raise ValueError(f"{name!r} of {entity.fqn} cannot be written: {why}")
            changes[name] = coerce_write(field, value)
        return changes

    def _render(self, entity: str, values: Mapping[str, Any]) -> dict[str, Any]:
        """A whole row in read shape from its column values (absent columns are null)."""
        render = self._rt.store.renderer(entity)
        return render(tuple(values.get(name) for name in render.columns))

    async def _audit(
        self,
        entity: CompiledEntity,
        record_id: str,
        rendered: Mapping[str, Any],
        given: Mapping[str, Any],
        outputs: Mapping[str, Any],
        now: str,
    ) -> None:
        """The audit record of one write: ``action`` names the action that caused it,
        ``entity`` and ``subject_id`` the row written; ``inputs`` are the values given (in
        read shape), ``outputs`` what an action would answer."""
        actor = self._actor
        record = self._rt.store.audit(
            AuditRecord(
                event_id=new_ulid(),
                tenant_id=actor.tenant_id,
                actor_id=actor.actor_id,
                roles=actor.roles,
                action=self._cause,
                entity=entity.fqn,
                subject_id=record_id,
                inputs={name: rendered[name] for name in given},
                outputs=dict(outputs),
                at=now,
            )
        )
        try:
            await run(self._tx, record)
        except ConcurrencyConflict:
            raise
        except Exception as exc:
            logger.error("audit record of %s on %s failed", entity.fqn, record_id, exc_info=exc)
            raise AuditEmissionFailed() from exc


def _put(values: dict[str, Any], name: str, value: Any) -> None:
    values[name] = value


async def _transient_is_conflict(read: Awaitable[T]) -> T:
    """A read on the action's transaction; a concurrent transaction that made the database
    abort this one is a 409 (as in :func:`run`)."""
    try:
        return await read
    except Exception as exc:
        if is_transient(exc):
            raise ConcurrencyConflict() from exc
        raise


async def run(tx: Tx, statement: Statement) -> Sequence[Sequence[Any]]:
    """Run one statement on the action's transaction; a concurrent transaction that made the
    database abort this one (PostgreSQL: deadlock, serialization failure) is a 409."""
    try:
        return await tx.rows(*statement)
    except Exception as exc:
        if is_transient(exc):
            raise ConcurrencyConflict() from exc
        raise


def _conflict(entity: CompiledEntity, id: str) -> ConcurrencyConflict:
    return ConcurrencyConflict(
        f"{entity.fqn} '{id}' was modified concurrently; read it again and retry"
    )


def _condition_values(entity: CompiledEntity, condition: Condition) -> tuple[str, list[Any]]:
    """The operator to run and its database values (validated like inputs)."""
    name, op, value = condition.field, condition.op, condition.value
    if op not in OPERATORS:
        raise ValueError(f"unknown operator {op!r}; known: {', '.join(OPERATORS)}")
    field = entity.fields.get(name) if isinstance(name, str) else None
    if field is None and name not in _QUERYABLE_SYSTEM:
        raise ValueError(f"{entity.fqn} has no queryable field {name!r}")
    if op == "null":
        if value is not True and value is not False:
            raise ValueError(f"operator null on {name!r} takes True or False")
        return ("null" if value else "notnull"), []
    if value is None and op in ("eq", "ne"):
        return ("null" if op == "eq" else "notnull"), []
    if field is not None and of(field).ordering is Ordering.NUMERIC_TEXT:
        # Amounts are stored as written ("10.50" is not "10.5"): only null is meaningful.
        raise ValueError(
            f"{field.type.value} field {name!r} can only be matched with operator null"
        )
    if op == "contains":
        if field is None or "contains" not in of(field).operators:
            raise ValueError(f"operator contains applies to string fields, not {name!r}")
        return op, [str(_value(field, name, value)).translate(_ASCII_LOWER)]
    ordered = op in ("lt", "lte", "gt", "gte")
    if ordered and field is not None and not of(field).data_api_ordered:
        raise ValueError(f"operator {op} does not apply to {field.type.value} field {name!r}")
    if op == "in":
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
            raise ValueError(f"operator in on {name!r} takes a sequence of values")
        if len(value) > MAX_FIND_LIMIT:
            raise ValueError(f"operator in on {name!r} takes at most {MAX_FIND_LIMIT} values")
        return op, [_value(field, name, item) for item in value]
    return op, [_value(field, name, value)]


def _value(field: Field | None, name: str, value: object) -> Any:
    if field is not None:
        if value is None:
            raise BadRequest(f"Field {name!r}: null is matched with op 'null', not a value")
        return coerce_write(field, value)
    if not isinstance(value, str):
        raise BadRequest(f"Field {name!r} expects a string, got {type(value).__name__}")
    if SYSTEM[name].datetime:
        parsed = parse_datetime(value)
        if parsed is None:
            raise BadRequest(f"Field {name!r} expects an RFC 3339 date-time, got {value!r}")
        return format_datetime(parsed)
    return value
