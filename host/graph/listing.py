"""Validation of a projection's list declarations (:mod:`plugin_api.listing`).

Which fields can be filtered or sorted, and with which operators (those of the field's type in
the registry, :attr:`host.fieldtypes.ValueType.operators`), is decided here once; the query
parser (:mod:`host.query`) and the index planner use the same rules.
"""

from __future__ import annotations

from collections.abc import Sequence

from host.fieldtypes import ValueType, of
from host.graph.checks import Say, duplicates, names_of
from host.graph.follow import follow, is_followed
from host.graph.model import CompiledEntity
from host.systemfields import SYSTEM
from plugin_api.definitions import FieldType
from plugin_api.listing import MAX_PAGE_SIZE, Filter, FilterOperator, ListOptions

__all__ = ["check_listing", "hidden_uses", "listed_type", "operator_names"]

_VERBS = {"filter": "filters on", "sort": "sorts on", "search": "searches"}


def listed_type(entity: CompiledEntity, name: str) -> ValueType | None:
    """The value type of column ``name`` of ``entity``; ``None`` when it cannot be filtered or
    sorted on (its type has no operators: ``tenant_id``, ``_version``; unknown names). A
    followed name (``project.key``) has the type of the target's field."""
    followed = follow(entity, name)
    if followed is not None:
        return listed_type(followed[1], followed[2]) if "." not in followed[2] else None
    system = SYSTEM.get(name)
    if system is not None:
        value_type = system.type
    else:
        field = entity.fields.get(name)
        if field is None or not isinstance(field.type, FieldType):
            return None
        value_type = of(field)
    return value_type if value_type.operators else None


def operator_names(declared: Filter, value_type: ValueType) -> tuple[str, ...]:
    """The operators a (valid) filter allows, in canonical order."""
    if declared.operators is None:
        return value_type.operators
    wanted = {FilterOperator(op).value for op in declared.operators}
    return tuple(op for op in value_type.operators if op in wanted)


def _column(entity: CompiledEntity, name: str, what: str, say: Say) -> ValueType | None:
    value_type = listed_type(entity, name)
    if value_type is None:
        if name in entity.fields or name in ("tenant_id", "_version"):
            say(f"{what} {name!r}: this field cannot be filtered or sorted on")
        else:
            say(f"{what} {name!r} is not a field of entity {entity.fqn!r}")
    return value_type


def _check_filter(declared: object, entity: CompiledEntity, say: Say) -> str | None:
    if not isinstance(declared, Filter):
        say(f"listing.filters holds {declared!r}, which is not a Filter")
        return None
    if not isinstance(declared.field, str):
        say(f"listing filter field must be a string, got {declared.field!r}")
        return None
    value_type = _column(entity, declared.field, "filter on", say)
    if declared.label is not None and not isinstance(declared.label, str):
        say(f"filter on {declared.field!r}: label must be a string")
    if value_type is None or declared.operators is None:
        return declared.field
    if not isinstance(declared.operators, (tuple, list)) or not declared.operators:
        say(f"filter on {declared.field!r}: operators must be a non-empty tuple or None")
        return declared.field
    names: list[str] = []
    for op in declared.operators:
        try:
            names.append(FilterOperator(op).value)
        except ValueError:
            allowed = ", ".join(m.value for m in FilterOperator)
            say(f"filter on {declared.field!r}: unknown operator {op!r} (operators: {allowed})")
            continue
        if names[-1] not in value_type.operators:
            say(
                f"filter on {declared.field!r}: operator {names[-1]!r} does not fit its "
                f"type {value_type.name!r} (which allows {', '.join(value_type.operators)})"
            )
    for op in duplicates(tuple(names)):
        say(f"filter on {declared.field!r}: operator {op!r} given twice")
    return declared.field


def _check_page_sizes(listing: ListOptions, say: Say) -> None:
    maximum = listing.max_page_size
    if type(maximum) is not int or not 1 <= maximum <= MAX_PAGE_SIZE:
        say(f"listing.max_page_size must be an integer from 1 to {MAX_PAGE_SIZE}, got {maximum!r}")
        return
    default = listing.default_page_size
    if default is not None and (type(default) is not int or not 1 <= default <= maximum):
        say(
            f"listing.default_page_size must be None or an integer from 1 to max_page_size "
            f"({maximum}), got {default!r}"
        )


def hidden_uses(
    shown: Sequence[str], kinds: Sequence[tuple[str, Sequence[str | None]]]
) -> dict[str, list[str]]:
    """The names a listing filters, sorts or searches (``kinds``: what, names) that the
    projection does not show (``id`` excepted: it travels in every cursor), each with what
    the listing does with it."""
    visible = {*shown, "id"}
    hidden: dict[str, list[str]] = {}
    for what, names in kinds:
        for name in dict.fromkeys(names):
            if isinstance(name, str) and name not in visible:
                hidden.setdefault(name, []).append(what)
    return hidden


def check_listing(
    listing: object,
    entity: CompiledEntity,
    say: Say,
    shown: Sequence[str] | None = None,
    hidden: dict[str, list[str]] | None = None,
) -> None:
    """Report every problem of a projection's ``listing`` declarations. With ``shown``, the
    projection's fields, a filter, sort or search on another field would reveal its values
    (substring probes, the order of rows): an error, or with ``hidden`` (a plugin older than
    the rule, :mod:`host.graph.hidden`) collected there by name."""
    if listing is None:
        return
    if not isinstance(listing, ListOptions):
        say(f"listing must be a ListOptions or None, got {type(listing).__name__}")
        return
    filters = listing.filters if isinstance(listing.filters, (tuple, list)) else ()
    if filters is not listing.filters:
        say("listing.filters must be a tuple of Filter")
    declared = [_check_filter(item, entity, say) for item in filters]
    for name in duplicates(tuple(name for name in declared if name is not None)):
        say(f"listing filters field {name!r} twice")
    sortable = names_of(listing.sortable, "listing.sortable", say)
    for name in sortable:
        _column(entity, name, "sort on", say)
    for name in duplicates(sortable):
        say(f"listing.sortable names {name!r} twice")
    default_sort = names_of(listing.default_sort, "listing.default_sort", say)
    for key in default_sort:
        if key.removeprefix("-") not in sortable:
            say(f"listing.default_sort key {key!r} does not name a sortable field")
    for name in duplicates(tuple(key.removeprefix("-") for key in default_sort)):
        say(f"listing.default_sort names {name!r} twice")
    searched = names_of(listing.search, "listing.search", say)
    for name in searched:
        value_type = listed_type(entity, name)  # search is contains over each field
        if is_followed(name):
            say(f"listing.search names {name!r}: a followed field cannot be searched")
        elif value_type is None or "contains" not in value_type.operators:
            say(f"listing.search names {name!r}, which is not a string field of {entity.fqn!r}")
    _check_page_sizes(listing, say)
    if shown is not None:
        kinds: tuple[tuple[str, Sequence[str | None]], ...] = (
            ("filter", declared),
            ("sort", sortable),
            ("search", searched),
        )
        found = hidden_uses(shown, kinds)
        if hidden is not None:
            hidden.update(found)
            found = {}
        for what, names in kinds:
            for hidden_name in dict.fromkeys(names):
                if isinstance(hidden_name, str) and what in found.get(hidden_name, ()):
                    say(
                        f"listing {_VERBS[what]} {hidden_name!r}, which the projection does not "
                        "show (it would reveal the field's values); show the field or leave it out"
                    )
    usable = {*sortable, *(name for name in declared if name is not None)}
    indexes = listing.indexes if isinstance(listing.indexes, (tuple, list)) else None
    if indexes is None:
        say("listing.indexes must be a tuple of tuples of field names")
        return
    for index in indexes:
        names = names_of(index, "listing.indexes entry", say)
        if len(names) < 2 or duplicates(names) or "id" in names:
            say(f"listing.indexes entry {index!r} must name two or more distinct fields, not id")
        for name in names:
            if is_followed(name):
                say(
                    f"listing.indexes entry {index!r}: {name!r} is a followed field (it has "
                    "an index of its own on its entity's table)"
                )
            elif name not in usable:
                say(f"listing.indexes entry {index!r}: {name!r} is not filterable or sortable")
