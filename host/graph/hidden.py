"""What a plugin older than plugin API 1.7 gets for a list that filters, sorts or searches a
field it does not show: the rule of 1.7 refuses that (it reveals the field's values), an
older plugin keeps its list in a safe form, with a warning (:mod:`host.graph.compat`).

* A field another projection of the entity shows to every reader of this list (one without
  ``access`` of its own, or with the same ``access`` and no read policy) is no secret from
  them: the list keeps its filter, sort and search as declared. So are ``created_at`` (every
  row's ``id`` is a ULID carrying its creation instant to the millisecond, and a list always
  shows ids) and ``updated_at`` in a list showing ``_version`` (a ULID made at each write).
* Otherwise the list still sorts on the field (its rows in the declared order; the value
  never leaves the server: rows and documents do not carry it, a cursor is encrypted and
  padded, :mod:`host.query.cursor`), but its filter and search are *withheld*: not offered
  (a request naming them is the 400 of an undeclared filter, the documents do not list
  them), since a filter or search answers questions about the value itself (range and
  substring probes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from host.graph.checks import Legacy
from plugin_api.access import ReadAccess
from plugin_api.definitions import Projection

__all__ = ["DERIVED", "withheld_fields"]

DERIVED: Final = {"created_at": "id", "updated_at": "_version"}
"""A system time -> the ULID a list shows that carries the same instant (``id`` always)."""


def _names(fields: object) -> tuple[str, ...]:
    return fields if isinstance(fields, tuple) else ()


def _shown_by(name: str, projection: Projection, others: Sequence[Projection]) -> str | None:
    """A projection of the same entity that shows ``name`` to every reader of
    ``projection`` (its rows included), if any."""
    access = projection.access
    for other in others:
        if other.fqn == projection.fqn or other.entity != projection.entity:
            continue
        if name not in _names(other.fields):
            continue
        mine = other.access
        if mine is None or (isinstance(mine, ReadAccess) and mine == access and not mine.policies):
            return other.fqn
    return None


def withheld_fields(
    hidden: Mapping[str, Sequence[str]],
    projection: Projection,
    others: Sequence[Projection],
    report: Legacy,
) -> frozenset[str]:
    """The fields of ``hidden`` (name -> the listing's uses of it: ``filter``, ``sort``,
    ``search``) whose filter and search ``projection`` may not offer; each is reported
    with what the list does instead."""
    withheld: set[str] = set()
    for name, uses in hidden.items():
        breach = (
            f"listing declares {' and '.join(f'a {use}' for use in uses)} on {name!r}, which "
            "the projection does not show"
        )
        source = DERIVED.get(name)
        if source is not None and (source == "id" or source in _names(projection.fields)):
            report(
                breach,
                f"the list shows {source!r}, a ULID carrying the same instant to the "
                "millisecond, so the listing works as declared",
            )
            continue
        shown_by = _shown_by(name, projection, others)
        if shown_by is not None:
            report(
                breach,
                f"projection {shown_by!r} shows the field to every reader of this list, so the "
                "listing works as declared",
            )
            continue
        instead = []
        if "sort" in uses:
            instead.append(
                "the list sorts on it, and its value never leaves the server (rows, documents "
                "and cursors do not carry it)"
            )
        probes = [use for use in uses if use != "sort"]
        if probes:
            withheld.add(name)
            instead.append(
                f"its {' and '.join(probes)} {'is' if len(probes) == 1 else 'are'} not offered "
                "(a request naming it is a 400, as for any undeclared filter), since no "
                "projection shows the field to every reader of this list"
            )
        report(breach, "; ".join(instead))
    return frozenset(withheld)
