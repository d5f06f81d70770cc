"""The response of a list request with list parameters or at ViewSchema 1.1.0."""

from __future__ import annotations

from quart import Response

from host import jsonio
from host.graph.model import CompiledProjection
from host.http.availability import Annotate, annotated_chunks
from host.http.document import list_document, list_stream
from host.http.envelope import JSON
from host.http.export import export_response
from host.http.viewschema import ViewSchemaTemplate
from host.query.params import ListQuery
from host.storage.reads import ProjectionReads

__all__ = ["list_response"]


async def list_response(
    lists: ProjectionReads,
    template: ViewSchemaTemplate,
    projection: CompiledProjection,
    query: ListQuery,
    version: str,
    tenant: str,
    generated_at: str,
    chunk_rows: int,
    annotate: Annotate | None = None,
    count_limit: int = 0,
) -> Response:
    """A page (one statement), or every matching row (streamed when longer than a chunk), or
    the list as a file (``format``), at ViewSchema ``version``; with the counts asked for
    (``count``, ``facet``), each reading at most ``count_limit`` rows. ``annotate``
    (ViewSchema 1.2.0) adds each row's availability, chunk by chunk (not to a file)."""
    if query.export is not None:
        return await export_response(lists, projection, query, tenant, chunk_rows)
    spec = lists.spec(projection.fqn)
    counts = (
        await lists.counts(projection, tenant, query, count_limit)
        if query.count or query.facets
        else {}
    )
    if query.page_size is not None:
        items, cursor = await lists.page(projection, tenant, query, query.page_size)
        if annotate is not None:
            await annotate(items)
        document = list_document(
            template, spec, query, version, tenant, generated_at, items, cursor
        )
        document["data"].update(counts)
        return Response(jsonio.dumps(document), content_type=JSON)
    listing = await lists.every_row(projection, tenant, query, chunk_rows)
    rest = listing.rest
    if annotate is not None:
        await annotate(listing.first)
        if rest is not None:
            rest = annotated_chunks(rest, annotate)
    if rest is None:
        items = listing.first
        document = list_document(template, spec, query, version, tenant, generated_at, items, None)
        document["data"].update(counts)
        return Response(jsonio.dumps(document), content_type=JSON)
    stream = list_stream(
        template, spec, query, version, tenant, generated_at, listing.first, rest, counts
    )
    return Response(stream, content_type=JSON)
