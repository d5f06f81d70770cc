"""The action runtime: policy -> subject -> custom policies -> workflow gate -> effect ->
audit, in one transaction.

Per action the database sees one transaction of a bounded number of statements, whatever the
number of fields or rows: create = INSERT row + INSERT audit; transition and update = SELECT
subject + UPDATE ... RETURNING (guarded by ``_version``) + INSERT audit; plus, when some event
subscriber wants the action, one INSERT of its deliveries (the outbox,
:mod:`host.storage.outbox`).
A custom effect adds only the statements it runs itself (``next_sequence`` is one upsert;
the typed data API, :mod:`host.runtime.data`, one per read and two per write), and each
reference value written one existence check.

Rows are read and written through the entity store (:mod:`host.storage.store`), with the
write rules the data API follows too (:mod:`host.runtime.writerules`), and the write is
planned by the one write planner (:mod:`host.runtime.writes`). The row's write and its
audit record are not run here: the unit of work returns the plan as its
:class:`~host.storage.Closing` (:meth:`EntityStore.closing`), and the storage runs them and
commits (one round trip on SQLite; the audit record and the deliveries as one statement on
PostgreSQL). The request body is read by the HTTP layer (:mod:`host.http.bodies`).
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
from collections.abc import Callable, Mapping
from typing import Any

from host.fieldtypes import coerce_write, now_db
from host.graph.model import CompiledAction, CompiledEntity, Graph
from host.graph.rules import stampable_fields
from host.graph.steps import Step
from host.runtime.actor import Actor
from host.runtime.availability import Availability
from host.runtime.context import InvocationContext
from host.runtime.data import DataRuntime
from host.runtime.dryrun import DryRun, dry_run_answer, refuse_unsafe, run_subscribers
from host.runtime.gate import policy_refusals, role_refusal, state_refusal
from host.runtime.rollback import rolled_back
from host.runtime.timers import Arming, scheduled
from host.runtime.writerules import missing_required, seed_new_row, transition_row
from host.runtime.writes import Announce, close_within, plan, stage
from host.storage import (
    Closing,
    NothingMatched,
    Schema,
    Statement,
    StatementFailed,
    Storage,
    TransientConflict,
    Tx,
    is_transient,
)
from host.storage.outbox import Outbox
from host.storage.store import AuditRecord, EntityStore, Written
from plugin_api.definitions import (
    CreateAction,
    TransitionAction,
    UpdateAction,
)
from plugin_api.errors import (
    AuditEmissionFailed,
    BadRequest,
    ConcurrencyConflict,
    EffectFailed,
    NotFound,
    PolicySubjectRequired,
    TesseraError,
    UnknownAction,
)

logger = logging.getLogger("tessera.runtime")

Outputs = dict[str, Any]
Record = Callable[[Outputs], Statement]
"""A statement the caller adds after the audit record and the event's deliveries, built from
the outputs (the idempotency key's record: :mod:`host.runtime.idempotency`)."""


class _Attempt:
    """What a failed unit of work is reported with: the row it wrote (the subject's id, or
    the id given to a created row) and the value that did not render, if one did not."""

    __slots__ = ("audit", "before", "record_id", "record_index", "unrenderable", "written")

    def __init__(self, subject_id: str | None) -> None:
        self.record_id = subject_id or ""
        self.unrenderable: Exception | None = None
        self.record_index = -1
        """Where the caller's ``record`` statement went (-1: none)."""
        self.written: Written | None = None
        """The row's write (what a dry run reports)."""
        self.audit: AuditRecord | None = None
        """The audit record (what a dry run reports)."""
        self.before: dict[str, Any] | None = None
        """The subject's row as read (database values; a dry run's timers)."""


# -- inputs (pure, before any database work) ---------------------------------------------------


def _reject_unknown(
    action: CompiledAction, inputs: Mapping[str, Any], allowed: tuple[str, ...]
) -> None:
    unknown = [key for key in inputs if key not in allowed]
    if unknown:
        listed = ", ".join(allowed) if allowed else "none"
        raise BadRequest(
            f"Action '{action.fqn}' does not accept input(s) {', '.join(map(repr, unknown))}; "
            f"accepted: {listed}"
        )


def validate_inputs(action: CompiledAction, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Coerce the inputs the action writes into database values (400 on any misfit)."""
    definition = action.definition
    fields = action.entity.fields
    if isinstance(definition, CreateAction):
        _reject_unknown(action, inputs, definition.inputs)
        return {name: coerce_write(fields[name], value) for name, value in inputs.items()}
    if isinstance(definition, UpdateAction):
        _reject_unknown(action, inputs, definition.patchable)
        return {name: coerce_write(fields[name], value) for name, value in inputs.items()}
    # Transition: inputs naming a stampable field are stamped; any other key is accepted
    # and only kept in the audit record.
    stampable = stampable_fields(action)
    return {
        name: coerce_write(fields[name], value)
        for name, value in inputs.items()
        if name in stampable
    }


# -- the runtime -------------------------------------------------------------------------------


class ActionRuntime:
    """Runs actions of a compiled graph against a storage."""

    def __init__(
        self,
        graph: Graph,
        storage: Storage,
        schema: Schema,
        outbox: Outbox | None = None,
        store: EntityStore | None = None,
        data: DataRuntime | None = None,
    ) -> None:
        """``store``: the entity store of ``graph`` (built here when not given); ``data``:
        the data runtime to share (the event dispatcher's), whose nested actions this
        runtime runs."""
        self._graph = graph
        self._outbox = outbox
        self._storage = storage
        self._schema = schema
        self._store = store or EntityStore(graph, schema, storage.dialect)
        self._data = data or DataRuntime(graph, self._store, outbox)
        self._data.runner = self.run_nested
        self.timers = self._data.timers = Arming(graph, storage.dialect)
        """The timers a write arms and cancels (issue 41, :mod:`host.runtime.timers`)."""
        self.availability = Availability(graph, storage, schema, self._store, self._data)
        """Which actions an actor may run on which rows (:mod:`host.runtime.availability`)."""

    def permitted(self, fqn: str, actor: Actor) -> CompiledAction:
        """Action ``fqn``, if ``actor`` holds one of its roles.

        :raises UnknownAction: no such action.
        :raises PolicyDenied: the actor lacks every role the action requires.
        """
        action = self._graph.actions.get(fqn)
        if action is None:
            raise UnknownAction(f"Unknown action '{fqn}'")
        refusal = role_refusal(action, actor)
        if refusal is not None:
            raise refusal
        return action

    async def invoke(
        self,
        fqn: str,
        actor: Actor,
        subject_id: str | None = None,
        inputs: Mapping[str, Any] | None = None,
    ) -> Outputs:
        """:meth:`permitted`, then :meth:`run`."""
        return await self.run(self.permitted(fqn, actor), actor, subject_id, inputs or {})

    async def run(
        self,
        action: CompiledAction,
        actor: Actor,
        subject_id: str | None,
        inputs: Mapping[str, Any],
        *,
        record: Record | None = None,
    ) -> Outputs:
        """Run a permitted ``action`` for ``actor`` on the row ``subject_id`` (``None`` for a
        create) with ``inputs``; return its outputs.

        Raises an error of the taxonomy for every refusal; the database is unchanged then.
        ``record``: one more statement in the same transaction, after the audit record; if
        it fails, :class:`~host.storage.StatementFailed` is raised as it is.
        """
        if action.kind == "create":
            if subject_id is not None:
                raise ValueError(f"action '{action.fqn}' creates a row: it takes no subject")
        elif subject_id is None:
            raise PolicySubjectRequired(f"Action '{action.fqn}' requires a subject; got null")
        values = validate_inputs(action, inputs)
        attempt = _Attempt(subject_id)

        async def unit_of_work(tx: Tx) -> Closing[Outputs]:
            closing = await self._run(tx, action, actor, subject_id, attempt, inputs, values)
            if record is None or attempt.unrenderable is not None:
                return closing
            attempt.record_index = len(closing.statements)
            return Closing(
                closing.result,
                (*closing.statements, record(closing.result)),
                guarded=closing.guarded,
            )

        try:
            return await self._storage.unit_of_work(unit_of_work)
        except (TransientConflict, NothingMatched, StatementFailed) as exc:
            failure = _failure(exc, action, attempt)
            raise failure from failure.__cause__

    async def dry_run(
        self,
        action: CompiledAction,
        actor: Actor,
        subject_id: str | None,
        inputs: Mapping[str, Any],
    ) -> DryRun:
        """:meth:`run`, in a transaction that is always rolled back (docs/http.md, "Dry
        runs"): the same chain and the row's write, the audit record built but not inserted,
        no event deliveries but the transactional subscribers run in the transaction; answer
        the outputs, the row as it would be written, the audit record and the subscribers'
        outcomes.

        :raises DryRunUnsupported: the action's effect, or one of its transactional
            subscribers, is not declared dry-run safe.
        """
        refuse_unsafe(self._graph, action)
        if action.kind != "create" and subject_id is None:
            raise PolicySubjectRequired(f"Action '{action.fqn}' requires a subject; got null")
        values = validate_inputs(action, inputs)
        attempt = _Attempt(subject_id)
        delivered: dict[str, str] = {}
        schedule: dict[str, list[dict[str, Any]]] = {}

        async def rehearse(tx: Tx) -> Outputs:
            closing = await self._run(
                tx, action, actor, subject_id, attempt, inputs, values, rehearsal=True
            )
            # The row's write runs (its constraints and its guard apply); the audit record
            # is built but not inserted: its table's ``seq`` is a database sequence, which
            # a rollback does not give back.
            await close_within(tx, closing, rehearsal=True)
            assert attempt.audit is not None
            delivered.update(
                await run_subscribers(self._graph, self._data, tx, action, attempt.audit)
            )
            assert attempt.written is not None
            schedule.update(
                await scheduled(
                    self.timers,
                    tx,
                    action.entity,
                    actor.tenant_id,
                    attempt.before,
                    attempt.written,
                    attempt.audit.at,
                )
            )
            return closing.result

        try:
            outputs = await rolled_back(self._storage, rehearse)
        except (TransientConflict, NothingMatched, StatementFailed) as exc:
            failure = _failure(exc, action, attempt)
            raise failure from failure.__cause__
        assert attempt.written is not None and attempt.audit is not None
        written, audit = attempt.written, attempt.audit
        answer = dry_run_answer(self._store, action, outputs, written, audit, delivered)
        return dataclasses.replace(answer, timers=schedule)

    async def _run(
        self,
        tx: Tx,
        action: CompiledAction,
        actor: Actor,
        subject_id: str | None,
        attempt: _Attempt,
        inputs: Mapping[str, Any],
        values: dict[str, Any],
        *,
        rehearsal: bool = False,
        depth: int = 0,
    ) -> Closing[Outputs]:
        """Policy -> subject -> custom policies -> workflow gate -> effect -> validators;
        the row and its audit record (and the event's deliveries, unless a ``rehearsal``: a
        dry run) are the statements the unit of work ends with. ``depth``: how many
        ``ctx.data.run`` calls this run is nested in."""
        entity = action.entity
        store = self._store
        render = store.renderer(entity.fqn)
        row: dict[str, Any] | None = None
        subject: dict[str, Any] | None = None
        if subject_id is not None:
            found = await self._data.authorities.subject_row(store, tx, entity, actor, subject_id)
            if found is None:
                raise NotFound(f"No {entity.fqn} with id '{subject_id}' in this tenant")
            row = attempt.before = dict(zip(render.columns, found, strict=True))
            subject = render(found)
        data = self._data.bind(tx, action, actor, subject_id, rehearsal=rehearsal, depth=depth)
        ctx = InvocationContext(
            action=action,
            actor=actor,
            subject=subject,
            inputs=inputs,
            tx=tx,
            storage=self._storage,
            schema=self._schema,
            data=data,
        )
        steps = action.steps  # the chain's steps, as the compiler found them
        if Step.POLICIES in steps:
            await self._check_policies(action, ctx)
        if Step.REFERENCES in steps:
            await self._data.check_references(tx, actor.tenant_id, entity, values)
        now = now_db()
        definition = action.definition
        if isinstance(definition, CreateAction):
            seed_new_row(entity, values, ctx.write, stamps=definition.stamps, actor=actor, now=now)
            missing = missing_required(entity, ctx.pending)
            if missing:
                raise BadRequest(
                    f"Action '{action.fqn}' requires input(s): {', '.join(map(repr, missing))}"
                )
        elif isinstance(definition, TransitionAction):
            transition = action.transition
            assert row is not None and transition is not None
            refusal = state_refusal(action, row)
            if refusal is not None:
                raise refusal
            transition_row(entity, transition, values, ctx.write, actor, now)
        else:
            for name, value in values.items():
                ctx.write(name, value, True)
        if Step.CONDITIONS in steps:  # the row before the action (a create: as seeded)
            # The rows read through references are noted in the unit's data API: its write of
            # one of them is guarded by the version the requirement held on.
            await self._data.check_requirements(
                tx, entity, self._data.requires[action.fqn], row or ctx.pending, actor, inputs,
                data,
            )  # fmt: skip
        if Step.EFFECT in steps:
            await self._run_effect(action, ctx)
        staged = await stage(
            self._data,
            tx,
            entity,
            actor,
            before=row,
            changes=ctx.pending,
            now=now,
            cause=action.fqn,
            plugin=action.plugin,
            transition=None if action.transition is None else action.transition.name,
            checked=values,  # the inputs' references are checked above
        )
        written = attempt.written = staged.written
        attempt.record_id = written.id
        # The row, then its audit record. A value that does not render, or an audit record
        # that cannot be built, fails in the audit record's place: after the row's write,
        # so that a lost race is still reported first.
        try:
            outputs = self._outputs(action, ctx, written.id, written.version)
        except Exception as exc:
            attempt.unrenderable = exc
            return Closing({}, (written.statement, exc), guarded=subject_id is not None)
        planned = plan(
            self._data,
            staged,
            inputs,
            outputs,
            announce=self._announce(action),
            rehearsal=rehearsal,
        )
        attempt.audit = planned.record
        return Closing(outputs, planned.statements(store), guarded=subject_id is not None)

    @staticmethod
    def _announce(action: CompiledAction) -> Announce:
        """The deliveries of ``action``'s event to the subscribers that want it."""
        return lambda outbox, *event: outbox.statement(action.fqn, *event)

    async def run_nested(
        self,
        tx: Tx,
        fqn: str,
        actor: Actor,
        subject_id: str | None,
        inputs: Mapping[str, Any],
        *,
        depth: int,
        rehearsal: bool,
    ) -> Outputs:
        """Run action ``fqn``'s whole chain inside ``tx`` (``ctx.data.run``, plugin API
        1.8): its role check and the rest as :meth:`run`, its row's write, audit record and
        event deliveries run at once in ``tx`` (a ``rehearsal``: only the row's write, as in
        a dry run). Return its outputs."""
        action = self.permitted(fqn, actor)
        if action.kind == "create" and subject_id is not None:
            raise ValueError(f"action '{action.fqn}' creates a row: it takes no subject")
        if action.kind != "create" and subject_id is None:
            raise PolicySubjectRequired(f"Action '{action.fqn}' requires a subject; got null")
        values = validate_inputs(action, inputs)
        attempt = _Attempt(subject_id)
        closing = await self._run(
            tx, action, actor, subject_id, attempt, inputs, values, rehearsal=rehearsal, depth=depth
        )
        try:
            await close_within(tx, closing, rehearsal=rehearsal)
        except (NothingMatched, StatementFailed) as exc:
            if isinstance(exc, StatementFailed) and is_transient(exc.error):
                raise ConcurrencyConflict() from exc.error
            failure = _failure(exc, action, attempt)
            raise failure from failure.__cause__
        return closing.result

    # -- chain steps ----------------------------------------------------------------------

    async def _check_policies(self, action: CompiledAction, ctx: InvocationContext) -> None:
        (refusal,) = await policy_refusals(self._graph, action, (ctx,))
        if refusal is not None:
            raise refusal

    async def _run_effect(self, action: CompiledAction, ctx: InvocationContext) -> None:
        name = action.definition.effect
        if name is None:
            return
        registered = self._graph.effects[name]
        ctx.writable = True
        try:
            result = registered.handler(ctx)
            if inspect.isawaitable(result):
                await result
        except TesseraError:
            raise
        except Exception as exc:
            logger.exception("custom effect %r of %s raised", name, registered.plugin.describe())
            raise EffectFailed() from exc
        finally:
            ctx.writable = False

    def _outputs(
        self, action: CompiledAction, ctx: InvocationContext, record_id: str, version: str
    ) -> Outputs:
        renderers = self._store.renderer(action.entity.fqn).renderers
        pending = ctx.pending
        outputs: Outputs = {"id": record_id} if action.kind == "create" else {}
        for name in ctx.output_fields:
            outputs[name] = renderers[name](pending[name])
        if action.kind != "create":
            outputs["_version"] = version
        return outputs


def _failure(
    exc: TransientConflict | NothingMatched | StatementFailed,
    action: CompiledAction,
    attempt: _Attempt,
) -> Exception:
    """What a unit of work's failure is answered with (its cause as ``__cause__``)."""
    if isinstance(exc, TransientConflict):
        conflict = ConcurrencyConflict()
        conflict.__cause__ = exc
        return conflict
    if isinstance(exc, NothingMatched):
        return _lost_race(action.entity, attempt.record_id)
    if exc.index == 0 or exc.error is attempt.unrenderable:
        return exc.error
    if exc.index == attempt.record_index:
        return exc
    failed = _audit_failed(action, attempt.record_id, exc.error)
    failed.__cause__ = exc.error
    return failed


def _audit_failed(action: CompiledAction, record_id: str, exc: Exception) -> AuditEmissionFailed:
    logger.error("audit record for %s on %s failed", action.fqn, record_id, exc_info=exc)
    return AuditEmissionFailed()


def _lost_race(entity: CompiledEntity, record_id: str) -> ConcurrencyConflict:
    return ConcurrencyConflict(
        f"{entity.fqn} '{record_id}' was modified concurrently; read it again and retry"
    )
