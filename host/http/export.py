"""A list projection as a file: ``format=csv`` or ``format=ndjson`` (docs/http.md, "Export").

Every row matching the filters, sort and search, under the reader's row scope, streamed chunk
by chunk as long lists are (:meth:`host.storage.reads.ProjectionReads.every_row`: one
statement per chunk, no connection held between chunks, memory bounded by one chunk).

* NDJSON: one line per row, the row exactly as a JSON list shows it.
* CSV (RFC 4180, UTF-8 without BOM, CRLF line ends): a header row of the field names, then
  one row per row. Empty cell: null; booleans ``true``/``false``; integers in decimal;
  datetimes as in JSON (RFC 3339, UTC, ``Z``); money as its amount, a space and its currency
  (``10.50 EUR``). A cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
  return gets a leading ``'`` so a spreadsheet does not run it as a formula (``'-1 EUR``),
  except an integer (``-5``: a spreadsheet reads it as the number it is).
"""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Final

from quart import Response

from host import jsonio
from host.graph.follow import follow
from host.graph.model import CompiledEntity, CompiledProjection
from host.query.params import ListQuery
from host.storage.reads import ListRead, ProjectionReads, Rows, projection_columns
from plugin_api.definitions import FieldType

__all__ = ["CSV", "NDJSON", "csv_cell", "export_response"]

CSV: Final = "text/csv; charset=utf-8"
NDJSON: Final = "application/x-ndjson"
_FORMULA: Final = ("=", "+", "-", "@", "\t", "\r")

Cell = Callable[[Any], str]


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value if value.startswith(_FORMULA) else value
    if isinstance(value, int):
        return str(value)
    return _text(jsonio.dumps(value).decode())


def _money(value: Any) -> str:
    if not isinstance(value, dict):
        return _text(value)
    return _text(f"{value['amount']} {value['currency']}")


def csv_cell(field_type: FieldType | None) -> Cell:
    """How a rendered value of ``field_type`` is written in a CSV cell."""
    return _money if field_type is FieldType.MONEY else _text


async def _chunks(listing: ListRead) -> AsyncIterator[Rows]:
    yield listing.first
    if listing.rest is None:
        return
    try:
        async for chunk in listing.rest:
            yield chunk
    finally:
        aclose = getattr(listing.rest, "aclose", None)
        if aclose is not None:
            await aclose()


async def _ndjson(listing: ListRead) -> AsyncIterator[bytes]:
    async for chunk in _chunks(listing):
        if chunk:
            yield b"".join(jsonio.dumps(item) + b"\n" for item in chunk)


async def _csv(
    listing: ListRead, columns: Sequence[str], cells: Sequence[Cell]
) -> AsyncIterator[bytes]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(columns)
    async for chunk in _chunks(listing):
        for item in chunk:
            writer.writerow([cell(item[name]) for name, cell in zip(columns, cells, strict=True)])
        yield buffer.getvalue().encode()
        buffer.seek(0)
        buffer.truncate()


async def export_response(
    lists: ProjectionReads,
    projection: CompiledProjection,
    query: ListQuery,
    tenant: str,
    chunk_rows: int,
) -> Response:
    """The whole list as ``query.export`` (``csv`` or ``ndjson``), streamed."""
    listing = await lists.every_row(projection, tenant, query, chunk_rows)
    filename = f"{projection.fqn}.{query.export}"
    headers = {"Content-Disposition": f'attachment; filename="{filename}"'}
    if query.export == "ndjson":
        return Response(_ndjson(listing), content_type=NDJSON, headers=headers)
    columns = projection_columns(projection)
    cells = [csv_cell(_field_type(projection.entity, name)) for name in columns]
    return Response(_csv(listing, columns, cells), content_type=CSV, headers=headers)


def _field_type(entity: CompiledEntity, name: str) -> FieldType | None:
    """The declared type of column ``name`` (a followed field's is its target's)."""
    followed = follow(entity, name)
    if followed is not None:
        entity, name = followed[1], followed[2]
    field = entity.fields.get(name)
    return None if field is None else field.type
