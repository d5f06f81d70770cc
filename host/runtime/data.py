"""The typed data API of the action context (:class:`plugin_api.data.DataAccess`), and the
existence check of reference fields.

Every statement runs on the action's transaction (:class:`~host.storage.Tx`), filtered by
the action's tenant. A write is one guarded ``UPDATE ... RETURNING`` (or an ``INSERT``) and
one audit record naming the action that caused it; values go through the same coercion as
HTTP inputs (:func:`host.fieldtypes.coerce_write`) and come back rendered like HTTP rows.
A write follows the entity's rules (plugin API 1.8): field ownership for the writing plugin
(:func:`~host.runtime.writerules.ownership_refusal`) and the entity's validators
(:mod:`host.runtime.validation`), run before its statement by the write planner
(:mod:`host.runtime.writes`), whose plan it runs in the action's transaction; ``run`` hands
another action to the action runtime (:attr:`DataRuntime.runner`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Protocol, TypeVar

from host.fieldtypes import coerce_write, now_db
from host.graph.compat import FIND_CONDITIONS, older_than
from host.graph.model import CompiledAction, CompiledEntity, Graph
from host.plugins import PluginInfo
from host.query.conditions import Clause, ConditionError, column_of, from_value
from host.query.conditions import Condition as ListCondition
from host.query.older import VERSION_COLUMN, never_null
from host.query.spec import ID_COLUMN
from host.runtime.actor import Actor
from host.runtime.authority import Authorities
from host.runtime.history import public_record
from host.runtime.requirements import Checked, Reader, checked, refusals
from host.runtime.timers import Arming
from host.runtime.validation import validate, validators_of
from host.runtime.writerules import (
    missing_required,
    ownership_refusal,
    seed_new_row,
    state_mismatch,
    transition_row,
)
from host.runtime.writes import Announce, Incremented, Staged, audited, close_within, plan, stage
from host.storage import Closing, NothingMatched, Statement, StatementFailed, Tx, is_transient
from host.storage.auditlog import row_history
from host.storage.outbox import Outbox
from host.storage.store import EntityStore
from host.storage.store import Runner as Runner_
from plugin_api.conditions import Condition, Operator
from plugin_api.data import MAX_RUN_DEPTH, HistoryRecord, Row
from plugin_api.definitions import FieldType, Transition
from plugin_api.errors import (
    AuditEmissionFailed,
    BadRequest,
    ConcurrencyConflict,
    NotFound,
    TesseraError,
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
        self.timers: Arming | None = None
        """Timers the writes arm (issue 41; set by the action runtime)."""
        self.authorities = Authorities(graph)
        self._older_seen: set[tuple[str, str]] = set()
        self.requires = {fqn: _compiled(a.entity, a.definition.requires, a.plugin, fqn)
                         for fqn, a in graph.actions.items()}  # fmt: skip
        """Each action's declared conditions, compiled (plugin API 1.10)."""
        self.invariants = {fqn: _compiled(e, e.definition.invariants, e.plugin, fqn)
                           for fqn, e in graph.entities.items()}  # fmt: skip
        """Each entity's declared invariants, compiled (plugin API 1.10)."""

    def reader(self, runner: Runner_, unit: ActionData | None = None) -> Reader:
        """Reads rows by id on ``runner`` (a transaction or the storage), for the
        references a requirement reads through (:mod:`host.runtime.requirements`).

        ``unit``: the data API of the unit of work that checks, which notes each row's
        version as read (:meth:`ActionData.note_read`): a later write of that row in the unit
        is then guarded by the version the requirement held on, so a commit in between is a
        ``ConcurrencyConflict``, not a write past a requirement that no longer holds."""

        async def read(
            entity: str, tenant_id: str, ids: Sequence[str]
        ) -> Sequence[Mapping[str, Any]]:
            render = self.store.renderer(entity)
            by_id = (ListCondition(ID_COLUMN, "in", tuple(ids)),)
            found = await run_read(self.store.find(runner, entity, tenant_id, by_id, len(ids)))
            rows = [dict(zip(render.columns, row, strict=True)) for row in found]
            if unit is not None:
                for row in rows:
                    unit.note_read(entity, row["id"], row["_version"])
            return rows

        return read

    async def check_requirements(
        self,
        runner: Runner_,
        entity: CompiledEntity,
        requirements: Sequence[Checked],
        row: Mapping[str, Any],
        actor: Actor,
        inputs: Mapping[str, Any] | None = None,
        unit: ActionData | None = None,
    ) -> None:
        """Raise the refusal of the first of ``requirements`` ``row`` (database values)
        does not meet (:mod:`host.runtime.requirements`); ``unit``: see :meth:`reader`."""
        (refusal,) = await refusals(
            entity, requirements, (row,), actor, self.reader(runner, unit), inputs
        )
        if refusal is not None:
            raise refusal

    def older_used(self, plugin: PluginInfo, declared: str, use: str) -> None:
        """Log, once per plugin and kind, that a plugin got the older answer of
        ``ctx.data.find`` (:mod:`host.query.older`)."""
        if (plugin.name, use) in self._older_seen:
            return
        self._older_seen.add((plugin.name, use))
        rule = FIND_CONDITIONS
        logger.warning(
            "%s: ctx.data.find with %s; rule %r (plugin API %s): %s. The plugin requires "
            "plugin API %s, so it gets the answer of that version. Fix: %s",
            plugin.describe(), use, rule.name, rule.since, rule.reason, declared, rule.fix,
        )  # fmt: skip

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
        ``before``, ``changes`` and ``after`` are database values, ``after`` a whole row.
        The entity's declared invariants (plugin API 1.10) are checked first, on ``after``."""
        invariants = self.invariants[entity.fqn]
        if invariants:
            await self.check_requirements(tx, entity, invariants, after, actor)
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

    def note_read(self, entity: str, id: str, version: str) -> None:
        """Note that the unit read row ``id`` of ``entity`` at ``version`` (unless it read
        the row before): a write of the row through this API is guarded by that version."""
        self._seen.setdefault((entity, id), version)

    # -- reads ------------------------------------------------------------------------------

    async def get(self, entity: str, id: str) -> Row | None:
        compiled = self._entity(entity)
        row = await self._read_floored(compiled, id, await self._floor(compiled))
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
        older = self._older_find()
        for condition in every:
            if not isinstance(condition, Condition):
                raise ValueError(f"not a Condition: {condition!r}")
            one = _typed(compiled, condition, older)
            if one is not None:
                typed.append(one)
        if any(c.operator == "in" and not c.values for c in typed):
            return []  # in an empty set: nothing matches
        scope = await self._floor(compiled)
        if scope is None:
            return []
        store = self._rt.store
        rows = await run_read(
            store.find(self._tx, entity, self._actor.tenant_id, tuple(typed), limit, scope)
        )
        for row in rows:
            self._seen.setdefault((entity, row[0]), store.version_of(entity, row))
        return store.renderer(entity).many(rows)

    async def _floor(self, entity: CompiledEntity) -> tuple[Clause, ...] | None:
        """The rows of ``entity`` this code may read (plugin API 1.9: the entity's read floor
        for the acting identity unless the plugin owns it or declares a system read;
        ``None``: none)."""
        return await self._rt.authorities.read_scope(self.plugin, entity, self._actor, self._cause)

    async def _read_floored(
        self, entity: CompiledEntity, id: str, scope: tuple[Clause, ...] | None
    ) -> Sequence[Any] | None:
        """The row ``id`` if it exists and ``scope`` (:meth:`_floor`) admits it."""
        if scope is None or not scope:
            if not isinstance(id, str):
                raise ValueError(f"a row id is a string, got {type(id).__name__}")
            return None if scope is None else await self._read(entity.fqn, id)
        store, tenant = self._rt.store, self._actor.tenant_id
        by_id = (ListCondition(ID_COLUMN, "eq", (id,)),)
        rows = await run_read(store.find(self._tx, entity.fqn, tenant, by_id, 1, scope))
        if rows:
            self._seen.setdefault((entity.fqn, id), store.version_of(entity.fqn, rows[0]))
        return rows[0] if rows else None

    def _older_find(self) -> Callable[[str], None] | None:
        """For a plugin requiring a plugin API older than 1.6, the reporter of each older
        condition it uses (:mod:`host.query.older`); ``None`` for any other caller."""
        plugin = self.plugin
        declared = None if plugin is None else self._rt.graph.plugin_apis.get(plugin.name)
        if plugin is None or declared is None or not older_than(declared, FIND_CONDITIONS):
            return None
        return lambda use: self._rt.older_used(plugin, declared, use)

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
        compiled = self._entity(entity)
        if type(limit) is not int or not 1 <= limit <= MAX_FIND_LIMIT:
            raise ValueError(f"limit must be an integer from 1 to {MAX_FIND_LIMIT}")
        if before is not None and type(before) is not int:
            raise ValueError("before must be the seq of a history record, or None")
        if not isinstance(id, str):
            raise ValueError(f"a row id is a string, got {type(id).__name__}")
        scope = await self._floor(compiled)
        if scope is None or (scope and await self._read_floored(compiled, id, scope) is None):
            return []  # a row the read floor does not admit has no history for this reader
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
        staged = await self._stage(compiled, None, pending, now_db())
        rendered = self._render(entity, staged.written.values)
        outputs = {"id": staged.written.id, **{name: rendered[name] for name in changes}}
        await self._close(staged, rendered, changes, outputs, None)
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
        actor = self._rt.authorities.nested_actor(self.plugin, self._actor, self._cause, action)
        outputs = await runner(
            self._tx,
            action,
            actor,
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
            by = f"Transition '{transition.name}' of {entity.fqn}"
            refusal = state_mismatch(entity, transition, current, by)
            if refusal is not None:
                raise refusal
            changes = {}
            transition_row(
                entity,
                transition,
                values,
                lambda name, value, _output: _put(changes, name, value),
                self._actor,
                now,
            )
        staged = await self._stage(entity, current, changes, now, transition)
        after = staged.after
        rendered = self._render(entity.fqn, after)
        outputs = {name: rendered[name] for name in changes}
        outputs["_version"] = staged.written.version
        state = _state_change if transition is not None else None
        await self._close(staged, rendered, given, outputs, state)
        return rendered

    async def _stage(
        self,
        entity: CompiledEntity,
        before: Mapping[str, Any] | None,
        changes: Mapping[str, Any],
        now: str,
        transition: Transition | None = None,
    ) -> Staged:
        """The write's checks and statement (:func:`host.runtime.writes.stage`)."""
        return await stage(
            self._rt,
            self._tx,
            entity,
            self._actor,
            before=before,
            changes=changes,
            now=now,
            cause=self._cause,
            plugin=self.plugin,
            transition=None if transition is None else transition.name,
        )

    async def _close(
        self,
        staged: Staged,
        rendered: Mapping[str, Any],
        given: Mapping[str, Any],
        outputs: Mapping[str, Any],
        announce: Announce | None,
    ) -> None:
        """Run a staged write's plan (:func:`host.runtime.writes.plan`) in the action's
        transaction: the row's write (a lost race is a 409), its audit record (``inputs``:
        the values ``given``, in read shape; none inserted in a dry run), its event's
        deliveries and its timers."""
        entity, written = staged.entity, staged.written
        inputs = {name: rendered[name] for name in given}
        planned = plan(self._rt, staged, inputs, outputs, announce=announce,
                       rehearsal=self.rehearsal)  # fmt: skip
        guarded = staged.before is not None
        closing = Closing(None, planned.statements(self._rt.store), guarded=guarded)
        try:
            await close_within(self._tx, closing, rehearsal=self.rehearsal)
        except NothingMatched:
            raise _conflict(entity, written.id) from None
        except StatementFailed as exc:
            if is_transient(exc.error):
                raise ConcurrencyConflict() from exc.error
            if exc.index != 1:  # the row's write, or a timer's
                raise exc.error from None
            raise _audit_failed(entity, written.id, exc.error) from exc.error
        self._seen[(entity.fqn, written.id)] = written.version

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
        validated = bool(self._rt.validators[entity] or compiled.definition.invariants)
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
            await self._rt.validate(
                self._tx,
                compiled,
                kind="update",
                transition=None,
                before=earlier,
                changes={field: after[field]},
                after=after,
                actor=self._actor,
                cause=self._cause,
                plugin=self.plugin,
            )
        version = store.version_of(entity, row)
        seen = self._seen.get((entity, id), version_before)
        self._seen[(entity, id)] = version if seen == version_before else _STALE
        made = {field: [before, rendered[field]], "_version": [version_before, version]}
        outputs = {field: rendered[field], "_version": version}
        incremented = Incremented(entity=compiled, actor=self._actor, cause=self._cause, now=now)
        _, audit = audited(store, incremented, id, {field: by}, outputs, made)
        await self._audit(compiled, id, audit)
        return rendered

    # -- helpers ----------------------------------------------------------------------------

    def _check_writable(self) -> None:
        if not self.writable:
            raise RuntimeError("only a custom effect may change data; policies must not")

    def _check_owner(self, entity: CompiledEntity, names: Iterable[str]) -> None:
        refusal = ownership_refusal(entity, self.plugin, names)
        if refusal is not None:
            raise refusal

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
        self, entity: CompiledEntity, record_id: str, audit: Statement | Exception
    ) -> None:
        """Insert a write's audit record (not in a dry run: its records are built only);
        one that cannot be built or inserted is a 500 ``AuditEmissionFailed``."""
        if self.rehearsal:
            return
        try:
            if isinstance(audit, Exception):
                raise audit
            await run(self._tx, audit)
        except ConcurrencyConflict:
            raise
        except Exception as exc:
            raise _audit_failed(entity, record_id, exc) from exc


def _compiled(
    entity: CompiledEntity, requirements: tuple[Any, ...], plugin: PluginInfo, where: str
) -> tuple[Checked, ...]:
    """``requirements`` compiled, or a start-up failure naming the plugin and the mistake."""
    try:
        return checked(entity, requirements)
    except (ValueError, TesseraError) as error:
        message = getattr(error, "message", None) or str(error)
        raise ValueError(
            f"{plugin.describe()}: {where}: a declared requirement: {message}"
        ) from None


def _put(values: dict[str, Any], name: str, value: Any) -> None:
    values[name] = value


def _state_change(outbox: Outbox, *event: str) -> Statement | None:
    """The deliveries of a data-API transition's event to the subscribers that follow the
    entity's states (plugin API 1.8)."""
    return outbox.state_change(*event)


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


def _audit_failed(entity: CompiledEntity, id: str, error: Exception) -> AuditEmissionFailed:
    logger.error("audit record of %s on %s failed", entity.fqn, id, exc_info=error)
    return AuditEmissionFailed()


def _conflict(entity: CompiledEntity, id: str) -> ConcurrencyConflict:
    return ConcurrencyConflict(
        f"{entity.fqn} '{id}' was modified concurrently; read it again and retry"
    )


def _typed(
    entity: CompiledEntity, condition: Condition, older: Callable[[str], None] | None
) -> ListCondition | None:
    """A data-API condition in the one condition language (:mod:`host.query.conditions`);
    ``eq``/``ne`` ``None`` are ``null`` ``True``/``False``. With ``older`` (the caller
    requires a plugin API older than 1.6), the conditions of that version too (reported
    through it; ``None``: a condition every row matches)."""
    try:
        if older is not None and condition.field == "_version":
            older("a condition on '_version'")
            column = VERSION_COLUMN
        else:
            column = column_of(entity, condition.field)
        if column.via is not None:
            raise ConditionError(
                f"{condition.field!r} follows a reference: ctx.data.find names the fields of "
                f"{entity.fqn} itself (find the referenced rows first)"
            )
        operator, value = condition.operator, condition.value
        if value is None and operator in (Operator.EQ, Operator.NE):
            operator, value = Operator.NULL, operator is Operator.EQ
        never = operator == Operator.NULL and not column.nullable and isinstance(value, bool)
        if older is not None and never:
            older(f"null on {condition.field!r}, which is never null")
            return never_null(column, value is True)
        return from_value(column, operator, value, in_max=MAX_FIND_LIMIT)
    except ConditionError as error:
        raise ValueError(str(error)) from None
