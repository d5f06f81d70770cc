"""The rules every write of an entity row follows, whoever writes it: a create action, a
transition or update action, or a plugin through the data API (:mod:`host.runtime.data`).

* a new row gets its fields' defaults, then the values given, then the workflow's initial
  state, then the stamps of the action that creates it (if any); every required field must
  then hold a value;
* a transition applies only to a row in one of its source states; it writes the values
  given, the target state and its stamps;
* every write leaves an audit record naming the actor and the action that caused it
  (built by the write planner, :mod:`host.runtime.writes`);
* a field another plugin owns (``Field.written_by``, plugin API 1.8) is not written
  (:func:`ownership_refusal`), nor one only effects write from a request's inputs.

The values are database values (already coerced); the system fields are set by the entity
store (:mod:`host.storage.store`). Each rule reports through ``write(field, value, output)``
so the action chain can tell which values its outputs show.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from host.fieldtypes import coerce_default
from host.graph.model import CompiledEntity
from host.graph.rules import may_write
from host.plugins import PluginInfo
from host.runtime.actor import Actor
from host.runtime.stamps import stamp_value
from host.storage.rows import RowRenderer
from host.systemfields import SYSTEM
from plugin_api.definitions import Stamp, Transition
from plugin_api.errors import OwnershipDenied, WorkflowStateMismatch

__all__ = [
    "Write",
    "field_changes",
    "missing_required",
    "ownership_refusal",
    "seed_new_row",
    "state_mismatch",
    "transition_row",
]

Write = Callable[[str, Any, bool], None]
"""``write(field, database value, output)``: record a value to write; ``output`` says whether
an action reports it in its outputs."""


def seed_new_row(
    entity: CompiledEntity,
    values: Mapping[str, Any],
    write: Write,
    *,
    stamps: Iterable[Stamp] = (),
    actor: Actor | None = None,
    now: str = "",
) -> None:
    """The values of a new row: defaults, ``values``, the initial state, ``stamps``."""
    for field in entity.fields.values():
        if field.has_default:
            write(field.name, coerce_default(field), False)
    for name, value in values.items():
        write(name, value, True)
    workflow = entity.workflow
    if workflow is not None:
        write(workflow.state_field, workflow.initial, True)
    for stamp in stamps:
        assert actor is not None
        write(stamp.field, stamp_value(entity, stamp, actor, now), False)


def ownership_refusal(
    entity: CompiledEntity,
    plugin: PluginInfo | None,
    names: Iterable[str],
    *,
    from_inputs: bool = False,
) -> OwnershipDenied | None:
    """403 ``OwnershipDenied`` naming the first of the fields ``names`` that ``plugin`` may
    not write (:func:`may_write`), or ``None``."""
    for name in names:
        field = entity.fields.get(name)
        if field is None or may_write(entity, field, plugin, from_inputs=from_inputs):
            continue
        owner = entity.plugin.name
        if plugin is not None and plugin.name == owner:
            return OwnershipDenied(
                f"Field {name!r} of {entity.fqn} is written only by stamps and effects of "
                f"plugin {owner!r}, not from inputs"
            )
        writer = "no plugin" if plugin is None else f"plugin {plugin.name!r}"
        return OwnershipDenied(
            f"Field {name!r} of {entity.fqn} is owned by plugin {owner!r}; {writer} may not "
            "write it (run one of the owner's actions instead: ctx.data.run)"
        )
    return None


def missing_required(entity: CompiledEntity, values: Mapping[str, Any]) -> list[str]:
    """The required fields of ``entity`` that ``values`` (a new row's) leaves without one."""
    return [f.name for f in entity.fields.values() if f.required and f.name not in values]


def state_mismatch(
    entity: CompiledEntity, transition: Transition, row: Mapping[str, Any], by: str
) -> WorkflowStateMismatch | None:
    """409 ``WorkflowStateMismatch`` when ``transition`` does not apply to ``row``
    (database values): the one message of the workflow gate, for an action (``by``:
    ``Action '<fqn>'``) and a data-API transition alike; ``None`` when it applies."""
    workflow = entity.workflow
    assert workflow is not None
    current = row[workflow.state_field]
    if current in transition.sources:
        return None
    return WorkflowStateMismatch(
        f"{by} applies to {workflow.state_field} in {', '.join(transition.sources)}; "
        f"the subject is '{current}'"
    )


def transition_row(
    entity: CompiledEntity,
    transition: Transition,
    values: Mapping[str, Any],
    write: Write,
    actor: Actor,
    now: str,
) -> None:
    """The values a transition writes: ``values``, the target state, the stamps."""
    workflow = entity.workflow
    assert workflow is not None
    for name, value in values.items():
        write(name, value, True)
    write(workflow.state_field, transition.target, True)
    for stamp in transition.stamps:
        write(stamp.field, stamp_value(entity, stamp, actor, now), True)


def field_changes(
    render: RowRenderer,
    before: Mapping[str, Any] | None,
    written: Mapping[str, Any],
    version: str,
) -> dict[str, list[Any]]:
    """What a write changed, for its audit record: ``{field: [before, after]}`` in read
    shapes for every declared field ``written`` (database values) sets to a new value, and
    ``_version``'s pair. ``before``: the row's database values (``None`` for a new row)."""
    renderers = render.renderers
    changes: dict[str, list[Any]] = {}
    for name, value in written.items():
        if name in SYSTEM:
            continue
        old = None if before is None else before.get(name)
        if old == value:
            continue  # unchanged (a new row's null: nothing to tell)
        changes[name] = [None if old is None else renderers[name](old), renderers[name](value)]
    changes["_version"] = [None if before is None else before.get("_version"), version]
    return changes
