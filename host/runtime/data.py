"""The typed data API of the action context (:class:`plugin_api.data.DataAccess`), and the
existence check of reference fields.

Every statement runs on the action's transaction (:class:`~host.storage.Tx`), filtered by
the action's tenant. A write is one guarded ``UPDATE ... RETURNING`` (or an ``INSERT``) and
one audit record naming the action that caused it; values go through the same coercion as
HTTP inputs (:func:`host.fieldtypes.coerce_write`) and come back rendered like HTTP rows.
A write follows the entity's rules (plugin API 1.8): field ownership for the writing plugin
(:func:`~host.runtime.writerules.ownership_refusal`) and the entity's validators
(:mod:`host.runtime.validation`), run before its statement; ``run`` hands another action to
the action runtime (:attr:`DataRuntime.runner`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from typing import Any, Final, Protocol, TypeVar

from host.fieldtypes import coerce_write, now_db
from host.graph.model import CompiledAction, CompiledEntity, Graph
from host.plugins import PluginInfo
from host.query.conditions import Condition as ListCondition
from host.query.conditions import ConditionError, column_of, from_value
from host.runtime.actor import Actor
from host.runtime.history import public_record
from host.runtime.validation import validate, validators_of
from host.runtime.writerules import (
    audit_record,
    field_changes,
    missing_required,
    ownership_refusal,
    seed_new_row,
    state_mismatch,
    transition_row,
)
from host.storage import Statement, Tx, is_transient
from host.storage.auditlog import row_history
from host.storage.outbox import Outbox
from host.storage.store import EntityStore
from plugin_api.conditions import Condition, Operator
from plugin_api.data import MAX_RUN_DEPTH, HistoryRecord, Row
from plugin_api.definitions import FieldType, Transition
from plugin_api.errors import (
    AuditEmissionFailed,
    BadRequest,
    ConcurrencyConflict,
    NotFound,
    WorkflowStateMismatch,
)

__all__ = ["ActionData", "DataRuntime", "Runner"]

logger = logging.getLogger("tessera.runtime")
T = TypeVar("T")

MAX_FIND_LIMIT: Final = 1000
_STALE: Final = "(changed since this action read it)"
"""The version kept for a row another transaction changed between this action's read of it
and its increment: no version equals it, so a later guarded write is a 409."""


class Runner(Protocol):
    """Runs an action's whole chain inside a transaction (``ctx.data.run``): the action
    runtime's :meth:`~host.runtime.engine.ActionRuntime.run_nested`, handed down."""

    async def __call__(
        self,
        tx: Tx,
        fqn: str,
        actor: Actor,
        subject_id: str | None,
        inputs: Mapping[str, Any],
        *,
        depth: int,
        rehearsal: bool,
    ) -> dict[str, Any]:
        """The action's outputs."""
        ...


class DataRuntime:
    """What the data API needs of one graph, built once: the entity store, the reference
    fields and the validators of each entity, and the runner of nested actions (set by
    the action runtime; ``None``: ``run`` is not available)."""

    def __init__(self, graph: Graph, store: EntityStore, outbox: Outbox | None = None) -> None:
        """``outbox``: where a data-API transition's event goes (``None``: nowhere)."""
        self.graph = graph
        self.store = store
        self.outbox = outbox
        self.references = {
            fqn: tuple(f for f in entity.fields.values() if f.type is FieldType.REFERENCE)
            for fqn, entity in graph.entities.items()
        }
        self.validators = validators_of(graph)
        self.runner: Runner | None = None

    async def validate(
        self,
        tx: Tx,
        entity: CompiledEntity,
        *,
        kind: str,
        transition: str | None,
        before: Mapping[str, Any] | None,
        changes: Mapping[str, Any],
        after: Mapping[str, Any],
        actor: Actor,
        cause: str,
        plugin: PluginInfo | None,
    ) -> None:
        """Run the entity's validators on one write (:mod:`host.runtime.validation`);
        ``before``, ``changes`` and ``after`` are database values, ``after`` a whole row."""
        validators = self.validators[entity.fqn]
        if not validators:
            return
        render = self.store.renderer(entity.fqn)
        renderers = render.renderers

        def row(values: Mapping[str, Any]) -> dict[str, Any]:
            return render(tuple(values.get(name) for name in render.columns))

        await validate(
            validators,
            entity,
            kind=kind,
            transition=transition,
            before=None if before is None else row(before),
            changes={name: renderers[name](value) for name, value in changes.items()},
            after=row(after),
            actor=actor,
            cause=cause,
            plugin=None if plugin is None else plugin.name,
            reader=ActionData(self, tx, cause, actor, None),
        )

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
            if not await run_read(self.store.exists(tx, field.target, tenant_id, value)):
                raise BadRequest(
                    f"Field {field.name!r} references {field.target} {value!r}, "
                    "which does not exist in this tenant"
                )

    def bind(
        self,
        tx: Tx,
        action: CompiledAction,
        actor: Actor,
        subject_id: str | None,
        *,
        rehearsal: bool = False,
        depth: int = 0,
    ) -> ActionData:
        """The data API of one invocation (``rehearsal``: of a dry run, whose audit records
        are built but not inserted, see :mod:`host.runtime.dryrun`; ``depth``: how many
        ``run`` calls it is nested in). It writes as the plugin of the action's effect."""
        subject = (action.entity.fqn, subject_id) if subject_id is not None else None
        effect = action.definition.effect
        plugin = self.graph.effects[effect].plugin if effect is not None else action.plugin
        data = ActionData(self, tx, action.fqn, actor, subject, plugin=plugin, depth=depth)
        data.rehearsal = rehearsal
        return data


class ActionData:
    """:class:`plugin_api.data.DataAccess` for one action invocation: a facade over the
    entity store (:mod:`host.storage.store`) and the write rules
    (:mod:`host.runtime.writerules`) that the action chain follows too."""

    __slots__ = (
        "_actor",
        "_cause",
        "_rt",
        "_seen",
        "_subject",
        "_tx",
        "depth",
        "plugin",
        "rehearsal",
        "writable",
    )

    def __init__(
        self,
        runtime: DataRuntime,
        tx: Tx,
        cause: str,
        actor: Actor,
        subject: tuple[str, str] | None,
        *,
        plugin: PluginInfo | None = None,
        depth: int = 0,
    ) -> None:
        """``cause``: the action FQN the audit records name; ``subject``: (entity FQN, id)
        of the row only the action itself may change, if any; ``plugin``: the plugin that
        writes (whose owned fields it may write); ``depth``: how many ``run`` calls deep."""
        self.plugin = plugin
        self.depth = depth
        self._rt = runtime
        self._tx = tx
        self._cause = cause
        self._actor = actor
        self._subject = subject
        self._seen: dict[tuple[str, str], str] = {}
        """The ``_version`` of every row this action read or wrote, by (entity, id)."""
        self.writable = False
        self.rehearsal = False
        """A dry run's: audit records are built, not inserted."""

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
        typed: list[ListCondition] = []
        for condition in every:
            if not isinstance(condition, Condition):
                raise ValueError(f"not a Condition: {condition!r}")
            typed.append(_typed(compiled, condition))
        if any(c.operator == "in" and not c.values for c in typed):
            return []  # in an empty set: nothing matches
        store = self._rt.store
        rows = await run_read(
            store.find(self._tx, entity, self._actor.tenant_id, tuple(typed), limit)
        )
        for row in rows:
            self._seen.setdefault((entity, row[0]), store.version_of(entity, row))
        return store.renderer(entity).many(rows)

    async def _read(self, entity: str, id: str) -> Sequence[Any] | None:
        if not isinstance(id, str):
            raise ValueError(f"a row id is a string, got {type(id).__name__}")
        store = self._rt.store
        row = await run_read(store.get(self._tx, entity, self._actor.tenant_id, id))
        if row is not None:
            self._seen.setdefault((entity, id), store.version_of(entity, row))
        return row

    async def history(
        self, entity: str, id: str, *, limit: int = 100, before: int | None = None
    ) -> Sequence[HistoryRecord]:
        self._entity(entity)
        if type(limit) is not int or not 1 <= limit <= MAX_FIND_LIMIT:
            raise ValueError(f"limit must be an integer from 1 to {MAX_FIND_LIMIT}")
        if before is not None and type(before) is not int:
            raise ValueError("before must be the seq of a history record, or None")
        if not isinstance(id, str):
            raise ValueError(f"a row id is a string, got {type(id).__name__}")
        store = self._rt.store
        entries = await run_read(
            row_history(
                self._tx,
                store.dialect,
                store.schema.audit.name,
                self._actor.tenant_id,
                entity,
                id,
                before,
                limit,
            )
        )
        return [public_record(entry) for entry in entries]

    # -- writes -----------------------------------------------------------------------------

    async def create(self, entity: str, values: Mapping[str, Any]) -> Row:
        self._check_writable()
        compiled = self._entity(entity)
        changes = self._coerce(compiled, values)
        self._check_owner(compiled, changes)
        pending: dict[str, Any] = {}
        seed_new_row(compiled, changes, lambda name, value, _output: _put(pending, name, value))
        missing = missing_required(compiled, pending)
        if missing:
            raise BadRequest(f"Creating a {entity} requires: {', '.join(map(repr, missing))}")
        await self._rt.check_references(self._tx, self._actor.tenant_id, compiled, pending)
        now = now_db()
        written = self._rt.store.insert(entity, self._actor.tenant_id, pending, now)
        await self._validate(compiled, "create", None, None, pending, written.values)
        await run(self._tx, written.statement)
        self._seen[(entity, written.id)] = written.version
        rendered = self._render(entity, written.values)
        outputs = {"id": written.id, **{name: rendered[name] for name in changes}}
        made = field_changes(self._rt.store.renderer(entity), None, pending, written.version)
        await self._audit(compiled, written.id, rendered, changes, outputs, now, made)
        return rendered

    async def patch(self, entity: str, id: str, values: Mapping[str, Any]) -> Row:
        self._check_writable()
        compiled = self._entity(entity)
        changes = self._coerce(compiled, values)
        self._check_owner(compiled, changes)
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
        workflow = compiled.workflow
        if move is None or workflow is None:
            raise ValueError(f"entity {entity!r} has no workflow transition {transition!r}")
        stamped = self._coerce(compiled, inputs or {})
        self._check_owner(compiled, (workflow.state_field, *stamped))
        return await self._update(compiled, id, stamped, stamped, move)

    async def run(
        self,
        action: str,
        *,
        subject: str | None = None,
        inputs: Mapping[str, Any] | None = None,
    ) -> Mapping[str, Any]:
        self._check_writable()
        runner = self._rt.runner
        if runner is None:
            raise RuntimeError("running an action is not available here")
        if self.depth >= MAX_RUN_DEPTH:
            raise RuntimeError(
                f"ctx.data.run nested more than {MAX_RUN_DEPTH} levels deep (at {action!r})"
            )
        compiled = self._rt.graph.actions.get(action) if isinstance(action, str) else None
        if compiled is not None and self._subject == (compiled.entity.fqn, subject):
            raise ValueError(f"{subject!r} is this action's subject: change it with ctx.set()")
        outputs = await runner(
            self._tx,
            action,
            self._actor,
            subject,
            dict(inputs or {}),
            depth=self.depth + 1,
            rehearsal=self.rehearsal,
        )
        if compiled is not None and subject is not None:
            self._seen.pop((compiled.entity.fqn, subject), None)  # read it again if needed
        return outputs

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
        after = {**current, **written.values}
        kind = "update" if transition is None else "transition"
        name = None if transition is None else transition.name
        await self._validate(entity, kind, name, current, changes, after)
        if not await run(self._tx, written.statement):
            raise _conflict(entity, id)
        self._seen[(entity.fqn, id)] = written.version
        made = field_changes(store.renderer(entity.fqn), current, changes, written.version)
        rendered = self._render(entity.fqn, after)
        outputs = {name: rendered[name] for name in changes}
        outputs["_version"] = written.version
        event_id = await self._audit(entity, id, rendered, given, outputs, now, made)
        if transition is not None:
            await self._announce(entity, id, event_id)
        return rendered

    async def _announce(self, entity: CompiledEntity, id: str, event_id: str) -> None:
        """The deliveries of a state change's event (its audit record) to the subscribers
        that follow the entity's states (plugin API 1.8); none in a dry run."""
        outbox = self._rt.outbox
        if outbox is None or self.rehearsal:
            return
        statement = outbox.state_change(event_id, self._actor.tenant_id, entity.fqn, id)
        if statement is not None:
            await run(self._tx, statement)

    async def increment(self, entity: str, id: str, field: str, by: int = 1) -> Row:
        """Add ``by`` to an integer field in one unguarded statement (plugin API 1.8):
        concurrent increments never conflict. A version this action read before, if the
        row changed since, stays stale: a later guarded write of the row is still a 409."""
        self._check_writable()
        compiled = self._entity(entity)
        declared = compiled.fields.get(field) if isinstance(field, str) else None
        if declared is None:
            raise ValueError(f"{field!r} is not a declared field of {entity}")
        if declared.type is not FieldType.INTEGER or type(by) is not int:
            raise BadRequest(
                f"Field {field!r} of {entity} cannot be incremented by {by!r}: "
                "only an integer field, by an integer"
            )
        if self._subject == (entity, id):
            raise ValueError(f"{entity} {id!r} is this action's subject: change it with ctx.set()")
        if not isinstance(id, str):
            raise ValueError(f"a row id is a string, got {type(id).__name__}")
        self._check_owner(compiled, (field,))
        store, tenant, now = self._rt.store, self._actor.tenant_id, now_db()
        validated = bool(self._rt.validators[entity])
        current = await run_read(store.get(self._tx, entity, tenant, id)) if validated else None
        done = await run_read(store.increment(self._tx, entity, tenant, id, field, by, now))
        if done is None:
            if await run_read(store.exists(self._tx, entity, tenant, id)):
                raise BadRequest(f"Incrementing {field!r} by {by} leaves the 64-bit range")
            raise NotFound(f"No {entity} with id '{id}' in this tenant")
        version_before, before, row = done
        rendered = store.renderer(entity)(row)
        coerce_write(declared, rendered[field])  # the field's constraints hold for the sum
        if validated:  # the statement is in this transaction: a refusal rolls it back
            after = dict(zip(store.renderer(entity).columns, row, strict=True))
            earlier = dict(zip(store.renderer(entity).columns, current or row, strict=True))
            earlier.update({field: before, "_version": version_before})
            await self._validate(compiled, "update", None, earlier, {field: after[field]}, after)
        version = store.version_of(entity, row)
        seen = self._seen.get((entity, id), version_before)
        self._seen[(entity, id)] = version if seen == version_before else _STALE
        made = {field: [before, rendered[field]], "_version": [version_before, version]}
        outputs = {field: rendered[field], "_version": version}
        await self._audit(compiled, id, rendered, {field: by}, outputs, now, made)
        return rendered

    # -- helpers ----------------------------------------------------------------------------

    def _check_writable(self) -> None:
        if not self.writable:
            raise RuntimeError("only a custom effect may change data; policies must not")

    def _check_owner(self, entity: CompiledEntity, names: Iterable[str]) -> None:
        refusal = ownership_refusal(entity, self.plugin, names)
        if refusal is not None:
            raise refusal

    async def _validate(
        self,
        entity: CompiledEntity,
        kind: str,
        transition: str | None,
        before: Mapping[str, Any] | None,
        changes: Mapping[str, Any],
        after: Mapping[str, Any],
    ) -> None:
        await self._rt.validate(
            self._tx,
            entity,
            kind=kind,
            transition=transition,
            before=before,
            changes=changes,
            after=after,
            actor=self._actor,
            cause=self._cause,
            plugin=self.plugin,
        )

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
        changes: Mapping[str, Any],
    ) -> str:
        """The audit record of one write (its event id returned): ``action`` names the
        action that caused it, ``entity`` and ``subject_id`` the row written; ``inputs`` are
        the values given (in read shape), ``outputs`` what an action would answer."""
        inputs = {name: rendered[name] for name in given}
        built = audit_record(
            self._actor,
            self._cause,
            entity.fqn,
            record_id,
            inputs,
            outputs,
            now,
            version=changes["_version"][1],
            changes=changes,
        )
        if self.rehearsal:
            return built.event_id
        try:
            await run(self._tx, self._rt.store.audit(built))
        except ConcurrencyConflict:
            raise
        except Exception as exc:
            logger.error("audit record of %s on %s failed", entity.fqn, record_id, exc_info=exc)
            raise AuditEmissionFailed() from exc
        return built.event_id


def _put(values: dict[str, Any], name: str, value: Any) -> None:
    values[name] = value


async def run_read(read: Awaitable[T]) -> T:
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


def _typed(entity: CompiledEntity, condition: Condition) -> ListCondition:
    """A data-API condition in the one condition language (:mod:`host.query.conditions`);
    ``eq``/``ne`` ``None`` are ``null`` ``True``/``False``."""
    try:
        column = column_of(entity, condition.field)
        if column.via is not None:
            raise ConditionError(
                f"{condition.field!r} follows a reference: ctx.data.find names the fields of "
                f"{entity.fqn} itself (find the referenced rows first)"
            )
        operator, value = condition.operator, condition.value
        if value is None and operator in (Operator.EQ, Operator.NE):
            operator, value = Operator.NULL, operator is Operator.EQ
        return from_value(column, operator, value, in_max=MAX_FIND_LIMIT)
    except ConditionError as error:
        raise ValueError(str(error)) from None
