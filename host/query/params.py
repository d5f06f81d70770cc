"""The list query parameters of ``GET {prefix}/projections/{fqn}`` (docs/http.md, "Lists").

:func:`parse_list_query` turns ``pageSize``, ``cursor``, ``sort``, ``filter.*`` and ``q`` into a
validated :class:`ListQuery` whose values are already in their database form, or refuses the
request with a 400 ``BadRequest`` naming what is allowed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from host.query.conditions import Clause, Condition, clause_key, fold, from_text
from host.query.cursor import CursorCodec, KeysetValue
from host.query.folding import search_fold
from host.query.spec import Facet, ListSpec, SortKey
from plugin_api.errors import BadRequest

__all__ = [
    "LIST_PARAMETERS",
    "ListQuery",
    "at_least",
    "binding",
    "negotiate",
    "parse_filters",
    "parse_list_query",
    "plain_query",
]

SCHEMA_1_0: Final = "1.0.0"
SCHEMA_1_1: Final = "1.1.0"
SCHEMA_1_2: Final = "1.2.0"
"""1.1.0 and per-row action availability (docs/http.md, "Availability")."""
SCHEMA_1_3: Final = "1.3.0"
"""1.2.0 and the entity's workflow (docs/console.md, "ViewSchema 1.3.0")."""
SCHEMA_1_4: Final = "1.4.0"
"""1.3.0 and relations: display fields, followed field descriptors, each row's ``_display``
(docs/http.md, "ViewSchema 1.4.0")."""
SCHEMA_1_5: Final = "1.5.0"
"""1.4.0 and this round's additions: each availability verdict's ``certain`` (docs/http.md,
"Availability"), the labels of the plugin, entity, projection and actions (docs/http.md,
"ViewSchema 1.5.0"), and a detail's pending timers (docs/timers.md)."""
NEGOTIABLE: Final = (SCHEMA_1_5, SCHEMA_1_4, SCHEMA_1_3, SCHEMA_1_2, SCHEMA_1_1)
"""The versions beyond 1.0.0 a client may ask for, newest first."""
LIST_PARAMETERS: Final = ("pageSize", "cursor", "sort", "q", "count", "facet", "format")
EXPORT_FORMATS: Final = ("csv", "ndjson")
"""The values of ``format``: the whole list as a file (docs/http.md, "Export")."""
FILTER_PREFIX: Final = "filter."
IN_MAX_VALUES: Final = 100
_DIGITS: Final = re.compile(r"[0-9]{1,9}", re.ASCII)


class Args(Protocol):
    """The request's query arguments (a werkzeug ``MultiDict``)."""

    def getlist(self, key: str) -> list[str]: ...

    def keys(self) -> Iterable[str]: ...


@dataclass(frozen=True, kw_only=True, slots=True)
class ListQuery:
    """A validated list request."""

    conditions: tuple[Condition, ...]
    sort: tuple[SortKey, ...]
    """The sort in force (requested, else declared default); ``id`` follows implicitly."""
    q: str | None
    """The search text as sent (``None`` without a search)."""
    page_size: int | None
    """Rows per page; ``None``: every matching row (no page)."""
    after: tuple[KeysetValue, ...] | None
    """The keyset values of the cursor: the sort keys' stored values, then ``id``."""
    binding: bytes
    """What a cursor of this request is bound to (see :mod:`host.query.cursor`)."""
    scope: tuple[Clause, ...] = ()
    """The reader's row conditions (:mod:`host.runtime.access`), applied with the filters,
    and what the reader reads through references (:class:`~host.query.conditions.Floor`)."""
    offered: frozenset[str] | None = None
    """The FQNs of the actions a 1.1.0 document offers (``None``: every declared action)."""
    count: bool = False
    """``count=true``: the document says how many rows match."""
    facets: tuple[Facet, ...] = ()
    """``facet=<field>`` (``<field>.<bucket>``): the document counts the matching rows per
    value (per bucket) of each."""
    export: str | None = None
    """``format=csv|ndjson``: every matching row as a file instead of a document."""
    text_index: bool = True
    """Whether the text index may drive the read of ``q`` (the storage decides, see
    :mod:`host.storage.search`); the rows are the same either way."""
    displays: bool = False
    """Read each row's display texts (``_display``) with it: the HTTP layer asks for them
    when the ViewSchema version it answers shows them."""

    @property
    def needle(self) -> str | None:
        """The search text as compared (:func:`~host.query.folding.search_fold`)."""
        return None if self.q is None else search_fold(self.q)


def plain_query(
    scope: tuple[Clause, ...] = (),
    *,
    conditions: tuple[Condition, ...] = (),
    limit: int | None = None,
    displays: bool = False,
) -> ListQuery:
    """Every row of the tenant (in ``scope``) in id order, as v0.1 lists; ``conditions``
    narrow it (a detail read is the plain query of one id), ``limit`` makes it one page,
    ``displays`` reads the rows' display texts."""
    return ListQuery(
        conditions=conditions,
        sort=(),
        q=None,
        page_size=limit,
        after=None,
        binding=b"",
        scope=scope,
        displays=displays,
    )


def negotiate(values: Sequence[str]) -> str:
    """The ViewSchema version for ``acceptSchemaVersions`` (comma-separated, possibly
    repeated): the newest of :data:`NEGOTIABLE` listed, otherwise ``1.0.0`` as in v0.1."""
    listed = {token.strip() for value in values for token in value.split(",")}
    return next((version for version in NEGOTIABLE if version in listed), SCHEMA_1_0)


def at_least(version: str, floor: str) -> bool:
    """Whether ViewSchema ``version`` carries everything ``floor`` does (each version
    extends the ones before it)."""
    return _number(version) >= _number(floor)


def _number(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def binding(
    tenant: str,
    spec: ListSpec,
    conditions: Sequence[Condition],
    sort: Sequence[SortKey],
    q: str | None,
    scope: Sequence[Clause] = (),
) -> bytes:
    """The canonical bytes a cursor is bound to (with the reader's row scope, if any, so a
    cursor cannot be replayed by a reader of another scope). The sort keys' field types are
    in it: a cursor made before a migration changed one is refused (400), not compared
    with values of another type."""
    document: list[object] = [
        tenant,
        spec.fqn,
        sorted([c.column.name, c.operator, list(c.values)] for c in conditions),
        [[key.text, key.column.type.name] for key in sort],
        None if q is None else fold(q),
    ]
    if scope:
        document.append([clause_key(clause) for clause in scope])
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False, default=str).encode()


def _one(args: Args, name: str) -> str | None:
    values = args.getlist(name)
    if len(values) > 1:
        raise BadRequest(f"Parameter {name!r} is given more than once")
    return values[0] if values else None


def _page_size(text: str, spec: ListSpec) -> int:
    number = int(text) if _DIGITS.fullmatch(text) else 0
    if not 1 <= number <= spec.max_page_size:
        shown = text if len(text) <= 20 else text[:20] + "..."
        raise BadRequest(
            f"Parameter 'pageSize' must be an integer from 1 to {spec.max_page_size}, got {shown!r}"
        )
    return number


def _sort(text: str, spec: ListSpec) -> tuple[SortKey, ...]:
    allowed = ", ".join(spec.sortable) or "none (the projection declares no sortable field)"
    keys: list[SortKey] = []
    for raw in text.split(","):
        key = raw.strip()
        name = key.removeprefix("-")
        if name not in spec.sortable:
            raise BadRequest(
                f"Parameter 'sort': {key!r} is not a sortable field of projection "
                f"{spec.fqn!r}; sortable fields: {allowed} (prefix '-' for descending)"
            )
        if any(k.column.name == name for k in keys):
            raise BadRequest(f"Parameter 'sort' names {name!r} twice")
        keys.append(SortKey(spec.sortable[name], key.startswith("-")))
    return tuple(keys)


def _split(rest: str, spec: ListSpec) -> tuple[str, str, str]:
    """``field.op`` -> (field, ".", op); a declared field may hold a dot itself (a followed
    field, ``project.key`` and ``project.key.in``)."""
    if rest in spec.filters:
        return rest, "", ""
    head, dot, operator = rest.rpartition(".")
    if dot and head in spec.filters:
        return head, dot, operator
    return rest.partition(".")


def _condition(parameter: str, text: str, spec: ListSpec) -> Condition:
    name, dot, operator = _split(parameter[len(FILTER_PREFIX) :], spec)
    if dot and not operator:
        raise BadRequest(
            f"Parameter {parameter!r}: the operator after {name!r} is empty; "
            f"write filter.{name}=v or filter.{name}.<op>=v"
        )
    declared = spec.filters.get(name)
    if declared is None:
        allowed = ", ".join(spec.filters) or "none (the projection declares no filter)"
        raise BadRequest(
            f"Parameter {parameter!r}: {name!r} is not a filterable field of projection "
            f"{spec.fqn!r}; filterable fields: {allowed}"
        )
    operator = operator or "eq"
    if operator not in declared.operators:
        raise BadRequest(
            f"Parameter {parameter!r}: operator {operator!r} is not allowed on {name!r}; "
            f"allowed: {', '.join(declared.operators)}"
        )
    return from_text(declared.column, operator, text, parameter=parameter, in_max=IN_MAX_VALUES)


def _search(text: str, spec: ListSpec) -> str | None:
    if not spec.search:
        raise BadRequest(f"Parameter 'q': projection {spec.fqn!r} declares no search")
    # The text rules of a string value (no NUL...).
    from_text(spec.search[0], "contains", text, parameter="q", in_max=1)
    return text or None


def _count(text: str | None) -> bool:
    if text is None or text == "false":
        return False
    if text == "true":
        return True
    raise BadRequest(f"Parameter 'count' must be 'true' or 'false', got {text[:20]!r}")


def _facets(names: list[str], spec: ListSpec) -> tuple[Facet, ...]:
    facetable = spec.facetable
    chosen: dict[str, Facet] = {}
    for name in names:
        facet = facetable.get(name)
        if facet is None:
            allowed = ", ".join(facetable) or "none (the projection filters no enum, boolean "
            allowed += "" if facetable else "or reference field with eq, and no datetime field)"
            raise BadRequest(
                f"Parameter 'facet': {name!r} is not a facet of projection {spec.fqn!r}; "
                f"facets: {allowed}"
            )
        if name in chosen:
            raise BadRequest(f"Parameter 'facet' names {name!r} twice")
        chosen[name] = facet
    return tuple(chosen.values())


def _export(text: str | None, page: bool) -> str | None:
    if text is None:
        return None
    if text not in EXPORT_FORMATS:
        raise BadRequest(
            f"Parameter 'format' must be one of {', '.join(EXPORT_FORMATS)}, got {text[:20]!r}"
        )
    if page:
        raise BadRequest(
            "Parameter 'format' exports every matching row: send it without pageSize and cursor"
        )
    return text


def parse_filters(args: Args, spec: ListSpec) -> tuple[Condition, ...]:
    """The conditions of the ``filter.<field>[.<op>]`` parameters of ``args`` (a list's, or a
    live stream's: docs/live.md, "Rows leaving a list").

    :raises BadRequest: naming the parameter and what is allowed.
    """
    names = [name for name in dict.fromkeys(args.keys()) if name.startswith(FILTER_PREFIX)]
    return tuple(_condition(name, text, spec) for name in names for text in args.getlist(name))


def parse_list_query(
    args: Args,
    spec: ListSpec,
    version: str,
    tenant: str,
    cursors: CursorCodec,
    scope: tuple[Clause, ...] = (),
) -> ListQuery | None:
    """The list query of a request, or ``None`` when the request is answered as in v0.1
    (ViewSchema 1.0.0 and none of the list parameters). ``scope`` holds the reader's row
    conditions, applied inside the same ``WHERE`` and bound into the cursor.

    :raises BadRequest: naming the parameter and what is allowed.
    """
    names = [name for name in dict.fromkeys(args.keys())]
    filters = [name for name in names if name.startswith(FILTER_PREFIX)]
    present = any(name in LIST_PARAMETERS for name in names) or bool(filters)
    if not present and version == SCHEMA_1_0:
        return None
    conditions = parse_filters(args, spec)
    sort_text = _one(args, "sort")
    sort = spec.default_sort if sort_text is None else _sort(sort_text, spec)
    q_text = _one(args, "q")
    q = None if q_text is None else _search(q_text, spec)
    size_text = _one(args, "pageSize")
    token = _one(args, "cursor")
    page_size: int | None
    if size_text is not None:
        page_size = _page_size(size_text, spec)
    elif token is not None:
        page_size = spec.default_page_size or spec.max_page_size
    elif at_least(version, SCHEMA_1_1):
        page_size = spec.default_page_size
    else:
        page_size = None
    bound = binding(tenant, spec, conditions, sort, q, scope)
    after: tuple[KeysetValue, ...] | None = None
    if token is not None:
        values = cursors.decode(token, bound, len(sort) + 1)
        if values is None:
            raise BadRequest(
                "Parameter 'cursor' is not a cursor of this request: it was altered, or it "
                "was issued for another tenant, projection, reader, filter set, sort or "
                "search; send the nextCursor of the previous page with the same filter.*, sort "
                "and q"
            )
        after = tuple(values)
    export = _export(_one(args, "format"), size_text is not None or token is not None)
    return ListQuery(
        conditions=conditions,
        sort=sort,
        q=q,
        page_size=None if export else page_size,
        after=after,
        binding=bound,
        scope=scope,
        count=_count(_one(args, "count")),
        facets=_facets(args.getlist("facet"), spec),
        export=export,
    )
