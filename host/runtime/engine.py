"""The action runtime: policy -> subject -> custom policies -> workflow gate -> effect ->
audit, in one transaction.

Per action the database sees one transaction of a bounded number of statements, whatever the
number of fields or rows: create = INSERT row + INSERT audit; transition and update = SELECT
subject + UPDATE ... RETURNING (guarded by ``_version``) + INSERT audit. A custom effect adds
only the statements it runs itself (``next_sequence`` is one upsert).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from ulid import ULID

from host import jsonio
from host.graph.model import CompiledAction, CompiledEntity, Graph
from host.runtime.actor import Actor
from host.runtime.context import InvocationContext
from host.runtime.rows import RowRenderer, all_columns, field_renderer
from host.storage import Schema, Storage, TransientConflict, Tx
from host.values import coerce_default, coerce_write, now_db
from plugin_api.definitions import (
    CreateAction,
    Field,
    Stamp,
    StampSource,
    TransitionAction,
    UpdateAction,
)
from plugin_api.errors import (
    AuditEmissionFailed,
    BadRequest,
    ConcurrencyConflict,
    EffectFailed,
    InternalError,
    NotFound,
    PolicyDenied,
    PolicySubjectRequired,
    TenantBoundaryViolation,
    TesseraError,
    UnknownAction,
    WorkflowStateMismatch,
)

logger = logging.getLogger("tessera.runtime")

Outputs = dict[str, Any]


def new_ulid() -> str:
    """A new ULID as its canonical 26-character string."""
    return str(ULID())


# -- request parsing (pure, before any database work) -----------------------------------------


def parse_subject_id(action: CompiledAction, actor: Actor, body: Mapping[str, Any]) -> str | None:
    """The subject's id for transition and update actions (``None`` for create)."""
    if action.kind == "create":
        return None
    if "subject" not in body:
        raise BadRequest(f"Action '{action.fqn}' requires a subject; the body has none")
    subject = body["subject"]
    if subject is None:
        raise PolicySubjectRequired(f"Action '{action.fqn}' requires a subject; got null")
    if not isinstance(subject, dict):
        raise BadRequest("subject must be an object {tenantId, entityFqn, identityHandle}")
    tenant = subject.get("tenantId")
    if not isinstance(tenant, str):
        raise BadRequest("subject.tenantId must be a string")
    if tenant != actor.tenant_id:
        raise TenantBoundaryViolation("subject.tenantId differs from the active tenant")
    entity_fqn = subject.get("entityFqn", action.entity.fqn)
    if entity_fqn != action.entity.fqn:
        raise BadRequest(
            f"subject.entityFqn must be '{action.entity.fqn}' for action '{action.fqn}'"
        )
    handle = subject.get("identityHandle")
    if not isinstance(handle, str) or not handle:
        raise BadRequest("subject.identityHandle must be a non-empty string")
    return handle


def parse_inputs(body: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``inputs`` object (absent or null means no inputs)."""
    inputs = body.get("inputs")
    if inputs is None:
        return {}
    if not isinstance(inputs, dict):
        raise BadRequest("inputs must be an object")
    return inputs


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
    # Transition: inputs naming a stampable field are stamped (by default every declared
    # field but the state field); any other key is accepted and only kept in the audit record.
    assert isinstance(definition, TransitionAction)
    stampable = definition.stampable
    if stampable is None:
        workflow = action.entity.workflow
        state_field = workflow.state_field if workflow else None
        stampable = tuple(name for name in fields if name != state_field)
    return {
        name: coerce_write(fields[name], value)
        for name, value in inputs.items()
        if name in stampable
    }


# -- the runtime -------------------------------------------------------------------------------


class ActionRuntime:
    """Runs actions of a compiled graph against a storage."""

    def __init__(self, graph: Graph, storage: Storage, schema: Schema) -> None:
        self._graph = graph
        self._storage = storage
        self._schema = schema
        self._subject_renderers = {
            fqn: RowRenderer(entity, all_columns(entity)) for fqn, entity in graph.entities.items()
        }

    async def invoke(self, fqn: str, actor: Actor, body: Mapping[str, Any]) -> Outputs:
        """Run action ``fqn`` for ``actor`` with a decoded request body; return its outputs.

        Raises an error of the taxonomy for every refusal; the database is unchanged then.
        """
        action = self._graph.actions.get(fqn)
        if action is None:
            raise UnknownAction(f"Unknown action '{fqn}'")
        required = action.definition.roles
        if required and actor.roles.isdisjoint(required):
            raise PolicyDenied(f"Action '{fqn}' requires one of the roles: {', '.join(required)}")
        subject_id = parse_subject_id(action, actor, body)
        inputs = parse_inputs(body)
        values = validate_inputs(action, inputs)

        async def unit_of_work(tx: Tx) -> Outputs:
            return await self._run(tx, action, actor, subject_id, inputs, values)

        try:
            return await self._storage.transaction(unit_of_work)
        except TransientConflict as exc:
            raise ConcurrencyConflict() from exc

    async def _run(
        self,
        tx: Tx,
        action: CompiledAction,
        actor: Actor,
        subject_id: str | None,
        inputs: Mapping[str, Any],
        values: dict[str, Any],
    ) -> Outputs:
        entity = action.entity
        table = self._schema.entities[entity.fqn]
        row = None
        if subject_id is not None:
            row = await tx.fetch_one(
                sa.select(table).where(
                    table.c.tenant_id == actor.tenant_id, table.c.id == subject_id
                )
            )
            if row is None:
                raise NotFound(f"No {entity.fqn} with id '{subject_id}' in this tenant")
        ctx = InvocationContext(
            action=action,
            actor=actor,
            subject=None if row is None else self._subject_renderers[entity.fqn](row),
            inputs=inputs,
            tx=tx,
            storage=self._storage,
            schema=self._schema,
        )
        await self._check_policies(action, ctx)
        now = now_db()
        if isinstance(action.definition, CreateAction):
            self._prepare_create(action, actor, ctx, values, now)
        elif isinstance(action.definition, TransitionAction):
            assert row is not None
            self._prepare_transition(action, actor, ctx, row, values, now)
        else:
            for name, value in values.items():
                ctx.write(name, value, output=True)
        await self._run_effect(action, ctx)

        version = new_ulid()
        if subject_id is None:
            record_id = new_ulid()
            await self._insert(tx, entity, actor, ctx, record_id, version, now)
        else:
            assert row is not None
            record_id = subject_id
            await self._update(tx, entity, actor, ctx, record_id, row["_version"], version, now)
        outputs = self._outputs(action, ctx, record_id, version)
        await self._audit(tx, action, actor, record_id, inputs, outputs, now)
        return outputs

    # -- chain steps ----------------------------------------------------------------------

    async def _check_policies(self, action: CompiledAction, ctx: InvocationContext) -> None:
        for name in action.definition.policies:
            registered = self._graph.policies[name]
            try:
                verdict = registered.handler(ctx)
                if inspect.isawaitable(verdict):
                    verdict = await verdict
            except TesseraError:
                raise
            except Exception as exc:
                logger.exception(
                    "custom policy %r of %s raised", name, registered.plugin.describe()
                )
                raise InternalError() from exc
            if verdict is not True:
                raise PolicyDenied(f"Policy '{name}' denied action '{action.fqn}'")

    def _prepare_create(
        self,
        action: CompiledAction,
        actor: Actor,
        ctx: InvocationContext,
        values: dict[str, Any],
        now: str,
    ) -> None:
        definition = action.definition
        assert isinstance(definition, CreateAction)
        entity = action.entity
        workflow = entity.workflow
        for field in entity.fields.values():
            if field.has_default:
                ctx.write(field.name, coerce_default(field), output=False)
        for name, value in values.items():
            ctx.write(name, value, output=True)
        if workflow is not None:
            ctx.write(workflow.state_field, workflow.initial, output=True)
        for stamp in definition.stamps:
            ctx.write(stamp.field, _stamp_value(entity, stamp, actor, now), output=False)
        missing = [
            field.name
            for field in entity.fields.values()
            if field.required and field.name not in ctx.pending
        ]
        if missing:
            raise BadRequest(
                f"Action '{action.fqn}' requires input(s): {', '.join(map(repr, missing))}"
            )

    def _prepare_transition(
        self,
        action: CompiledAction,
        actor: Actor,
        ctx: InvocationContext,
        row: Mapping[str, Any],
        values: dict[str, Any],
        now: str,
    ) -> None:
        transition = action.transition
        workflow = action.entity.workflow
        assert transition is not None and workflow is not None
        current = row[workflow.state_field]
        if current not in transition.sources:
            raise WorkflowStateMismatch(
                f"Action '{action.fqn}' applies to {workflow.state_field} in "
                f"{', '.join(transition.sources)}; the subject is '{current}'"
            )
        for name, value in values.items():
            ctx.write(name, value, output=True)
        ctx.write(workflow.state_field, transition.target, output=True)
        for stamp in transition.stamps:
            ctx.write(stamp.field, _stamp_value(action.entity, stamp, actor, now), output=True)

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

    async def _insert(
        self,
        tx: Tx,
        entity: CompiledEntity,
        actor: Actor,
        ctx: InvocationContext,
        record_id: str,
        version: str,
        now: str,
    ) -> None:
        table = self._schema.entities[entity.fqn]
        await tx.execute(
            table.insert().values(
                tenant_id=actor.tenant_id,
                id=record_id,
                created_at=now,
                updated_at=now,
                _version=version,
                **ctx.pending,
            )
        )

    async def _update(
        self,
        tx: Tx,
        entity: CompiledEntity,
        actor: Actor,
        ctx: InvocationContext,
        record_id: str,
        read_version: str,
        version: str,
        now: str,
    ) -> None:
        table = self._schema.entities[entity.fqn]
        written = await tx.fetch_one(
            sa.update(table)
            .where(
                table.c.tenant_id == actor.tenant_id,
                table.c.id == record_id,
                table.c._version == read_version,
            )
            .values(updated_at=now, _version=version, **ctx.pending)
            .returning(table.c._version)
        )
        if written is None:
            raise ConcurrencyConflict(
                f"{entity.fqn} '{record_id}' was modified concurrently; read it again and retry"
            )

    def _outputs(
        self, action: CompiledAction, ctx: InvocationContext, record_id: str, version: str
    ) -> Outputs:
        entity = action.entity
        pending = ctx.pending
        outputs: Outputs = {"id": record_id} if action.kind == "create" else {}
        for name in ctx.output_fields:
            outputs[name] = field_renderer(entity, name)(pending[name])
        if action.kind != "create":
            outputs["_version"] = version
        return outputs

    async def _audit(
        self,
        tx: Tx,
        action: CompiledAction,
        actor: Actor,
        record_id: str,
        inputs: Mapping[str, Any],
        outputs: Outputs,
        now: str,
    ) -> None:
        try:
            await tx.execute(
                self._schema.audit.insert().values(
                    id=new_ulid(),
                    tenant_id=actor.tenant_id,
                    actor_id=actor.actor_id,
                    roles=jsonio.dumps(sorted(actor.roles)).decode(),
                    action=action.fqn,
                    entity=action.entity.fqn,
                    subject_id=record_id,
                    inputs=jsonio.dumps(inputs).decode(),
                    outputs=jsonio.dumps(outputs).decode(),
                    graph_hash=self._graph.hash,
                    created_at=now,
                )
            )
        except Exception as exc:
            logger.exception("audit record for %s on %s failed", action.fqn, record_id)
            raise AuditEmissionFailed() from exc


def _stamp_value(entity: CompiledEntity, stamp: Stamp, actor: Actor, now: str) -> Any:
    field: Field = entity.fields[stamp.field]
    if stamp.source is StampSource.NOW:
        return now
    if stamp.source is StampSource.ACTOR:
        return coerce_write(field, actor.actor_id)
    return coerce_write(field, stamp.value)
