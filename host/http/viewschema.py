"""Building the ViewSchema document of spec 2.4 to 2.8 (pure functions, no I/O)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from host import jsonio
from host.fieldtypes import of
from host.graph.follow import follow
from host.graph.model import CompiledAction, CompiledEntity, CompiledProjection
from host.systemfields import SYSTEM
from plugin_api.definitions import Field

SCHEMA_VERSION = "1.0.0"
TARGET_PROFILE = "react.web.v1"
LOCALE = "en-US"


def humanise(name: str) -> str:
    """``due_at`` -> ``Due at``; ``_version`` -> ``Version``."""
    words = name.strip("_").replace("_", " ")
    return words[:1].upper() + words[1:]


def field_descriptor(field: Field, *, as_input: bool = False) -> dict[str, Any]:
    """A FieldDescriptor; ``required``/``nullable``/``default`` only inside action inputs.

    ``typeOptions`` is present for the types it applies to (string, enum, money,
    reference: :meth:`host.fieldtypes.ValueType.type_options`)."""
    descriptor: dict[str, Any] = {
        "name": field.name,
        "type": field.type.value,
        "label": field.label if field.label is not None else humanise(field.name),
    }
    options = of(field).type_options(field)
    if options is not None:
        descriptor["typeOptions"] = options
    if as_input:
        descriptor["required"] = field.required
        descriptor["nullable"] = field.nullable
        if field.has_default:
            descriptor["default"] = field.default
    return descriptor


def system_descriptor(name: str) -> dict[str, Any]:
    """A FieldDescriptor of a system field."""
    return {"name": name, "type": SYSTEM[name].view_type, "label": humanise(name)}


def column_descriptor(entity: CompiledEntity, name: str) -> dict[str, Any]:
    """The FieldDescriptor of a projection field: a system, declared or followed field (the
    last with the type of its target field and a label naming the reference, ``Project
    key``; its ViewSchema 1.4.0 keys are :func:`followed_keys`)."""
    followed = follow(entity, name)
    if followed is None:
        return system_descriptor(name) if name in SYSTEM else field_descriptor(entity.fields[name])
    reference, target, source = followed
    descriptor = column_descriptor(target, source)
    label = str(descriptor["label"])
    descriptor["name"] = name
    descriptor["label"] = f"{_label(entity, reference)} {label[:1].lower()}{label[1:]}"
    return descriptor


def _label(entity: CompiledEntity, name: str) -> str:
    field = entity.fields[name]
    return field.label if field.label is not None else humanise(name)


def followed_keys(entity: CompiledEntity, name: str) -> dict[str, Any]:
    """What a ViewSchema 1.4.0 field descriptor adds: a followed field is ``readOnly`` and
    says what it ``follows``; a reference whose target declares a display field names it
    (``display``, the row's text in ``_display``); other fields add nothing."""
    followed = follow(entity, name)
    if followed is not None:
        reference, target, source = followed
        follows = {"reference": reference, "entity": target.fqn, "field": source}
        return {"readOnly": True, "follows": follows}
    pointed = entity.targets.get(name)
    if pointed is not None and pointed.definition.display is not None:
        return {"display": pointed.definition.display}
    return {}


def action_descriptor(
    action: CompiledAction, item: Mapping[str, Any] | None, *, detail: bool
) -> dict[str, Any]:
    """An ActionDescriptor; ``initialValues`` only for update actions on a detail render."""
    descriptor: dict[str, Any] = {
        "fqn": action.fqn,
        "name": action.name,
        "label": action.name[:1].upper() + action.name[1:],
        "subjectRequired": action.kind != "create",
        "inputs": [field_descriptor(field, as_input=True) for field in action.input_fields],
    }
    if detail and action.kind == "update":
        descriptor["initialValues"] = {
            field.name: (item.get(field.name) if item is not None else None)
            for field in action.input_fields
        }
    return descriptor


class ViewSchemaTemplate:
    """The parts of a projection's ViewSchema that do not depend on the request."""

    __slots__ = ("_detail_actions", "fields", "list_actions", "plugin_label", "projection")

    def __init__(self, projection: CompiledProjection, plugin_label: str | None = None) -> None:
        self.projection = projection
        self.plugin_label = plugin_label
        """The label of the projection's plugin (plugin API 1.10; ViewSchema 1.5.0)."""
        entity = projection.entity
        self.fields = [column_descriptor(entity, name) for name in projection.definition.fields]
        self.list_actions = [
            action_descriptor(action, None, detail=False) for action in projection.actions
        ]
        # A detail render differs only by the ``initialValues`` of update actions: keep each
        # descriptor with the names of those values (``None`` when there are none).
        self._detail_actions = tuple(
            (
                descriptor,
                tuple(field.name for field in action.input_fields)
                if action.kind == "update"
                else None,
            )
            for action, descriptor in zip(projection.actions, self.list_actions, strict=True)
        )

    def _document(self, tenant: str, generated_at: str) -> dict[str, Any]:
        return {
            "schemaVersion": SCHEMA_VERSION,
            "targetProfile": TARGET_PROFILE,
            "metadata": {
                "projection": self.projection.fqn,
                "entity": self.projection.entity.fqn,
                "tenant": tenant,
                "locale": LOCALE,
                "generatedAt": generated_at,
            },
            "fields": self.fields,
        }

    def render_list(
        self, tenant: str, generated_at: str, items: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        """The list shape: every row, ``pageSize`` = item count, ``nextCursor`` null."""
        document = self._document(tenant, generated_at)
        document["actions"] = self.list_actions
        document["filters"] = []
        document["data"] = {
            "items": items,
            "pagination": {"pageSize": len(items), "nextCursor": None},
        }
        return document

    def list_stream(
        self,
        tenant: str,
        generated_at: str,
        first: list[dict[str, Any]],
        rest: AsyncIterator[list[dict[str, Any]]],
    ) -> AsyncIterator[bytes]:
        """The list shape serialised piece by piece from chunks of rows: the same bytes as
        ``dumps(render_list(...))`` without holding every row at once."""
        document = self._document(tenant, generated_at)
        document["actions"] = self.list_actions
        document["filters"] = []
        head = jsonio.dumps(document)[:-1] + b',"data":{"items":['

        async def stream() -> AsyncIterator[bytes]:
            yield head + jsonio.dumps(first)[1:-1]
            count = len(first)
            async for chunk in rest:
                yield b"," + jsonio.dumps(chunk)[1:-1]
                count += len(chunk)
            yield b'],"pagination":{"pageSize":%d,"nextCursor":null}}}' % count

        return stream()

    def render_detail(
        self, tenant: str, generated_at: str, item: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        """The detail shape ``{"item": row | null}``, with ``initialValues`` on updates."""
        document = self._document(tenant, generated_at)
        document["actions"] = [
            descriptor
            if initial is None
            else {
                **descriptor,
                "initialValues": {
                    name: (item.get(name) if item is not None else None) for name in initial
                },
            }
            for descriptor, initial in self._detail_actions
        ]
        document["filters"] = []
        document["data"] = {"item": item}
        return document
