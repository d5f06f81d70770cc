"""Lists as a person uses them: the facets beside a list (each value a link that filters by
it), and the export of what the list shows (docs/lists-search.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from host.console.navigation import list_url

__all__ = ["EXPORTS", "facet_fields", "facet_links", "query_params"]

FACET_TYPES = frozenset({"enum", "boolean", "reference"})
EXPORTS = ("csv", "ndjson")
"""The API's export formats (``format=``), offered beside every list."""


def facet_fields(filters: Sequence[Mapping[str, Any]]) -> list[str]:
    """The fields the API counts per value: declared ``eq`` filters of an enum, boolean or
    reference field."""
    return [f["field"] for f in filters if f["type"] in FACET_TYPES and "eq" in f["operators"]]


def facet_links(
    fqn: str,
    facets: Mapping[str, Any],
    filters: Sequence[Mapping[str, Any]],
    kept: Sequence[tuple[str, str]],
    display: Mapping[str, str],
) -> list[dict[str, Any]]:
    """Per facet: its label and each value's text, count, link (the list filtered by it,
    other parameters kept) and whether it is the active filter."""
    labels = {f["field"]: f["label"] for f in filters}
    shown = []
    for field, facet in facets.items():
        key = f"f.{field}.v"
        others = [(k, v) for k, v in kept if k not in (key, f"f.{field}.op")]
        active = dict(kept).get(key)
        values = []
        for entry in facet["values"]:
            value = entry["value"]
            if value is None:
                continue  # "none" is not an eq filter value
            text = "yes" if value is True else "no" if value is False else str(value)
            values.append(
                {
                    "text": display.get(text, text),
                    "count": entry["count"],
                    "url": list_url(
                        fqn, [*others, (key, text.lower() if isinstance(value, bool) else text)]
                    ),
                    "active": active == (str(value).lower() if isinstance(value, bool) else text),
                }
            )
        shown.append(
            {
                "label": labels.get(field, field),
                "choices": values,
                "exact": facet["exact"],
                "clear": list_url(fqn, others) if active else None,
            }
        )
    return shown


def query_params(
    args: Mapping[str, str], api_filters: list[tuple[str, str]]
) -> list[tuple[str, str]]:
    """The API parameters of what a list shows, whole (for an export): sort, search and
    filters, no page."""
    params = [(k, args[k]) for k in ("sort", "q") if args.get(k, "").strip()]
    return params + api_filters
