"""The OpenAPI description of actions: the request body (subject and inputs as JSON
Schema), the outputs, the statuses and error kinds, the links to what may follow on the same
row, and the operation ``POST /actions/<fqn>``."""

from __future__ import annotations

from typing import Any

from host.graph.model import CompiledAction, Graph
from host.graph.rules import stampable_fields
from host.graph.steps import Step
from host.http.jsonschema import Schema, column_schema, nullable, object_schema, write_schema
from host.http.labels import labelled_summary
from host.http.openapi_availability import dry_run_success
from host.http.openapi_parts import (
    IDENTITY_HEADERS,
    error_kinds,
    error_responses,
    json_answer,
    ref,
)
from host.runtime.dryrun import subscribers_of
from plugin_api import errors as e
from plugin_api.definitions import CreateAction, TransitionAction, UpdateAction
from plugin_api.errors import IdempotencyKeyReused, UnsupportedMediaType
from plugin_api.policies import is_dry_run_safe

__all__ = [
    "action_errors",
    "action_links",
    "action_operation",
    "inputs_schema",
    "output_fields",
    "outputs_schema",
    "request_schema",
]


def inputs_schema(action: CompiledAction) -> Schema:
    """The ``inputs`` object an action accepts (absent or null means ``{}``)."""
    fields = action.entity.fields
    definition = action.definition
    if isinstance(definition, TransitionAction):
        names = stampable_fields(action)
        schema = object_schema({n: write_schema(fields[n]) for n in names}, [], closed=False)
        schema["description"] = (
            "Keys naming a stampable field are validated and written; any other key is "
            "accepted and kept only in the audit record."
        )
        return nullable(schema)
    filled = set()
    if isinstance(definition, CreateAction):
        filled = {stamp.field for stamp in definition.stamps}
        if action.entity.workflow is not None:
            filled.add(action.entity.workflow.state_field)
    required = [
        field.name
        for field in action.input_fields
        if isinstance(definition, CreateAction) and field.required and field.name not in filled
    ]
    properties = {field.name: write_schema(field) for field in action.input_fields}
    schema = object_schema(properties, required)
    schema["description"] = (
        "Partial patch: only the keys sent change; any other key is refused (400)."
        if isinstance(definition, UpdateAction)
        else "The new row's values; any other key is refused (400)."
    )
    return schema if required else nullable(schema)


def request_schema(action: CompiledAction) -> Schema:
    """The request body of ``POST /actions/<fqn>``."""
    if action.kind == "create":
        subject: Schema = {"type": "null", "description": "Ignored by create actions."}
        required: list[str] = []
    else:
        subject = {
            "allOf": [
                ref("schemas", "SubjectReference"),
                {"properties": {"entityFqn": {"const": action.entity.fqn}}},
            ]
        }
        required = ["subject"]
    inputs = inputs_schema(action)
    schema = object_schema({"subject": subject, "inputs": inputs}, required, closed=False)
    if "required" in inputs or "required" in inputs.get("anyOf", [{}])[0]:
        schema["required"] = [*required, "inputs"]
    return schema


def output_fields(action: CompiledAction) -> tuple[list[str], list[str]]:
    """The field names an action's outputs may hold, and those they always hold."""
    entity = action.entity
    definition = action.definition
    state = [entity.workflow.state_field] if entity.workflow is not None else []
    if definition.effect is not None:
        possible = list(entity.fields)
    elif isinstance(definition, CreateAction):
        possible = [*definition.inputs, *state]
    elif isinstance(definition, UpdateAction):
        possible = list(definition.patchable)
    else:
        assert action.transition is not None
        stamped = [stamp.field for stamp in action.transition.stamps]
        possible = [*state, *stamped, *stampable_fields(action)]
    if isinstance(definition, CreateAction):
        return ["id", *_unique(possible)], ["id", *state]
    always = ["_version"]
    if isinstance(definition, TransitionAction) and action.transition is not None:
        always = [*state, *(stamp.field for stamp in action.transition.stamps), "_version"]
    return [*_unique(possible), "_version"], _unique(always)


def _unique(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


def outputs_schema(action: CompiledAction) -> Schema:
    fields = action.entity.fields
    possible, always = output_fields(action)
    return object_schema({name: column_schema(fields, name) for name in possible}, always)


def _dry_run_refused(action: CompiledAction, graph: Graph) -> bool:
    """Whether a dry run of ``action`` is refused: its effect or one of its transactional
    subscribers is not declared safe to dry-run (:func:`host.runtime.dryrun.refuse_unsafe`)."""
    name = action.definition.effect
    handlers: list[object] = [] if name is None else [graph.effects[name].handler]
    handlers += [subscriber.handler for subscriber in subscribers_of(graph, action)]
    return not all(is_dry_run_safe(handler) for handler in handlers)


def action_errors(action: CompiledAction, graph: Graph) -> dict[int, set[str]]:
    """Every status and error kind ``POST /actions/<fqn>`` can answer with: what the
    action's chain can refuse with (:meth:`CompiledAction.refusals`, asked of the action),
    and the request's own refusals (413, 415, a reused Idempotency-Key, a dry run the
    action's handlers do not allow)."""
    kinds = error_kinds(*action.refusals())
    kinds.setdefault(413, set()).add("BadRequest")
    kinds.setdefault(UnsupportedMediaType.status, set()).add(UnsupportedMediaType.kind)
    kinds.setdefault(IdempotencyKeyReused.status, set()).add(IdempotencyKeyReused.kind)
    if _dry_run_refused(action, graph):
        kinds.setdefault(e.DryRunUnsupported.status, set()).add(e.DryRunUnsupported.kind)
    return kinds


def _action_description(action: CompiledAction) -> str:
    definition = action.definition
    lines = [f"A {action.kind} action on {action.entity.fqn}."]
    if isinstance(definition, TransitionAction) and action.transition is not None:
        sources = ", ".join(action.transition.sources)
        lines.append(
            f"Transition `{definition.transition}`: {sources} -> {action.transition.target}."
        )
    roles = ", ".join(definition.roles)
    lines.append(f"Roles (any of): {roles}." if roles else "No role required.")
    if definition.policies:
        lines.append(f"Custom policies: {', '.join(definition.policies)}.")
    if definition.effect is not None:
        lines.append(f"Custom effect: {definition.effect}.")
    validators = action.entity.definition.validators
    if validators:
        lines.append(f"Entity validators: {', '.join(validators)}.")
    if Step.REFERENCES in action.steps:
        lines.append("A reference written must name an existing row of the tenant (400).")
    declared = (*definition.requires, *action.entity.definition.invariants)
    for rule in declared:  # plugin API 1.10: docs/conditions.md
        lines.append(f"Refuses with {rule.refuse.status} {rule.refuse.kind}: {rule.message}")
    return " ".join(lines)


def action_operation(action: CompiledAction, graph: Graph) -> dict[str, Any]:
    """``POST /actions/<fqn>``."""
    links = action_links(action, graph)
    outputs = outputs_schema(action)
    success = json_answer(
        "The action ran; `outputs` as in spec 2.9. With `dryRun=true`: what it would have "
        "done, nothing changed.",
        {
            "oneOf": [
                object_schema({"ok": {"const": True}, "outputs": outputs}, ["ok", "outputs"]),
                dry_run_success(outputs),
            ]
        },
    )
    if links:
        success["links"] = dict(links)
    operation: dict[str, Any] = {
        "operationId": f"invoke.{action.fqn}",
        "summary": labelled_summary(action.definition, action.entity.definition, "invoke"),
        "description": _action_description(action),
        "tags": [action.entity.fqn],
        "parameters": [
            *(ref("parameters", name) for name in IDENTITY_HEADERS),
            ref("parameters", "Idempotency-Key"),
            ref("parameters", "dryRun"),
            ref("parameters", "dryRunSchemaVersions"),
        ],
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": request_schema(action)}},
        },
        "responses": {"200": success, **error_responses(action_errors(action, graph))},
        "x-tessera-steps": [step.value for step in action.steps],
    }
    return operation


def _reaches(other: CompiledAction, state: str | None) -> bool:
    """Whether ``other`` can act on a row in ``state`` (``None``: no workflow)."""
    if other.kind == "create":
        return False
    return other.transition is None or state in other.transition.sources


def action_links(action: CompiledAction, graph: Graph) -> dict[str, Any]:
    """Links from a create or a transition to what can follow it on the same row: the
    actions whose workflow gate the row's new state passes, and the projections in detail
    form (the stateful fuzzing follows them)."""
    entity = action.entity
    workflow = entity.workflow
    if action.kind == "create":
        row = "$response.body#/outputs/id"
        state = workflow.initial if workflow is not None else None
    elif action.transition is not None:
        row = "$request.body#/subject/identityHandle"
        state = action.transition.target
    else:
        return {}
    tenant = "$request.header.X-Tenant-ID"
    links: dict[str, Any] = {}
    for other in sorted(graph.actions.values(), key=lambda a: a.fqn):
        if other.entity.fqn == entity.fqn and _reaches(other, state):
            links[other.name] = {
                "operationId": f"invoke.{other.fqn}",
                "parameters": {"header.X-Tenant-ID": tenant},
                "requestBody": {
                    "subject": {"tenantId": tenant, "entityFqn": entity.fqn, "identityHandle": row},
                    "inputs": {},
                },
                "description": f"{other.fqn} on the same {entity.fqn}",
            }
    for projection in sorted(graph.projections.values(), key=lambda p: p.fqn):
        if projection.entity.fqn == entity.fqn:
            links[f"render_{projection.fqn.rsplit('.', 1)[-1]}"] = {
                "operationId": f"render.{projection.fqn}",
                "parameters": {"header.X-Tenant-ID": tenant, "query.subject": row},
                "description": f"The same {entity.fqn} in {projection.fqn}",
            }
    return links
