"""The list and detail documents of a list request, at ViewSchema 1.0.0, 1.1.0 or 1.3.0.

Built on :class:`host.http.viewschema.ViewSchemaTemplate`: a 1.0.0 document is the template's
with the page's ``pagination``; a 1.1.0 document adds ``filters`` descriptors, ``sort``,
``search`` and ``pagination.maxPageSize`` (docs/http.md, "ViewSchema 1.1.0"); a 1.3.0 document
adds ``workflow`` (:mod:`host.http.workflow`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from host import jsonio
from host.http.labels import with_labels
from host.http.viewschema import ViewSchemaTemplate, column_descriptor, followed_keys
from host.http.workflow import workflow_descriptor
from host.query.params import SCHEMA_1_1, SCHEMA_1_3, SCHEMA_1_4, SCHEMA_1_5, ListQuery, at_least
from host.query.spec import ListSpec
from host.systemfields import SYSTEM

__all__ = ["detail_document", "list_document", "list_stream", "offer"]

Rows = list[dict[str, Any]]


def _filters(spec: ListSpec) -> list[dict[str, Any]]:
    descriptors = []
    for name, declared in spec.filters.items():
        field = declared.column.field
        system = name in SYSTEM
        label = declared.label or column_descriptor(spec.projection.entity, name)["label"]
        descriptor: dict[str, Any] = {
            "field": name,
            "label": label,
            "type": SYSTEM[name].view_type if system else field.type.value,
            "operators": list(declared.operators),
        }
        if not system and field.options:
            descriptor["options"] = list(field.options)
        descriptors.append(descriptor)
    return descriptors


def _upgrade(
    document: dict[str, Any],
    spec: ListSpec,
    query: ListQuery | None,
    version: str,
    template: ViewSchemaTemplate,
) -> dict[str, Any]:
    """The keys of ``version`` (1.1.0 or later), in place; ``data`` stays the last key."""
    data = document.pop("data")
    document["schemaVersion"] = version
    document["filters"] = _filters(spec)
    sort = spec.default_sort if query is None else query.sort
    document["sort"] = {
        "fields": list(spec.sortable),
        "default": [key.text for key in spec.default_sort],
        "active": [key.text for key in sort],
    }
    if spec.search:
        document["search"] = {
            "fields": [column.name for column in spec.search],
            "active": None if query is None else query.q,
        }
    if at_least(version, SCHEMA_1_3):
        document["workflow"] = workflow_descriptor(template.projection)
    if at_least(version, SCHEMA_1_4):
        entity = template.projection.entity
        document["fields"] = [
            {**descriptor, **followed_keys(entity, descriptor["name"])}
            for descriptor in document["fields"]
        ]
    if at_least(version, SCHEMA_1_5):
        with_labels(document, template)
    document["data"] = data
    return document


def _pagination(spec: ListSpec, version: str, size: int, cursor: str | None) -> dict[str, Any]:
    pagination: dict[str, Any] = {"pageSize": size, "nextCursor": cursor}
    if at_least(version, SCHEMA_1_1):
        pagination["maxPageSize"] = spec.max_page_size
    return pagination


def offer(document: dict[str, Any], offered: frozenset[str] | None) -> dict[str, Any]:
    """Keep only the ``offered`` actions of a 1.1.0 document (``None``: all of them)."""
    if offered is not None:
        document["actions"] = [a for a in document["actions"] if a["fqn"] in offered]
    return document


def _head(
    template: ViewSchemaTemplate,
    spec: ListSpec,
    query: ListQuery,
    version: str,
    tenant: str,
    generated_at: str,
) -> dict[str, Any]:
    document = template.render_list(tenant, generated_at, [])
    if not at_least(version, SCHEMA_1_1):
        return document
    return offer(_upgrade(document, spec, query, version, template), query.offered)


def list_document(
    template: ViewSchemaTemplate,
    spec: ListSpec,
    query: ListQuery,
    version: str,
    tenant: str,
    generated_at: str,
    items: Sequence[dict[str, Any]],
    cursor: str | None,
) -> dict[str, Any]:
    """A page (``query.page_size`` set) or a whole list that fits in one chunk, at ViewSchema
    ``version``."""
    document = _head(template, spec, query, version, tenant, generated_at)
    size = len(items) if query.page_size is None else query.page_size
    document["data"] = {"items": items, "pagination": _pagination(spec, version, size, cursor)}
    return document


def list_stream(
    template: ViewSchemaTemplate,
    spec: ListSpec,
    query: ListQuery,
    version: str,
    tenant: str,
    generated_at: str,
    first: Rows,
    rest: AsyncIterator[Rows],
    counts: dict[str, Any] | None = None,
) -> AsyncIterator[bytes]:
    """Every matching row, serialised chunk by chunk (the bytes of :func:`list_document`);
    ``counts`` (``count``, ``facets``) follow ``pagination`` in ``data``."""
    document = _head(template, spec, query, version, tenant, generated_at)
    del document["data"]
    head = jsonio.dumps(document)[:-1] + b',"data":{"items":['

    async def stream() -> AsyncIterator[bytes]:
        yield head + jsonio.dumps(first)[1:-1]
        count = len(first)
        try:
            async for chunk in rest:
                yield b"," + jsonio.dumps(chunk)[1:-1]
                count += len(chunk)
        finally:
            aclose = getattr(rest, "aclose", None)
            if aclose is not None:
                await aclose()
        pagination = jsonio.dumps(_pagination(spec, version, count, None))
        tail = jsonio.dumps(counts)[1:-1] if counts else b""
        yield b'],"pagination":' + pagination + (b"," + tail if tail else b"") + b"}}"

    return stream()


def detail_document(
    document: dict[str, Any], spec: ListSpec, version: str, template: ViewSchemaTemplate
) -> dict[str, Any]:
    """A detail document at ``version`` (1.1.0 or later): the projection's list
    declarations, nothing active."""
    return _upgrade(document, spec, None, version, template)
