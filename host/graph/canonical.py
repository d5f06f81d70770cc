"""The canonical form of a graph and its hash.

The canonical form is UTF-8 JSON with sorted keys and compact separators. It holds a format
tag, every definition (sorted by kind, then FQN) with every one of its attributes, and the
names of the custom policies and effects. Declaration orders that carry meaning (fields,
inputs, options, projection fields and actions, stamps, transitions) are kept as lists. Which
plugin or distribution version contributed what is left out: two processes serving the same
semantic content get the same hash.

An attribute is encoded generically from the dataclass fields of the definition, so a new
attribute of the plugin API enters the hash without a change here. A field without a default
has no ``default`` key, which keeps it distinct from a default of ``None``. A projection
without list declarations (``listing=None``) has no ``listing`` key, so graphs that declare
none keep the hash they had before declarations existed.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Final

from plugin_api.definitions import (
    NO_DEFAULT,
    Action,
    CreateAction,
    Entity,
    Projection,
    TransitionAction,
    UpdateAction,
)
from plugin_api.errors import TesseraError

__all__ = ["FORMAT", "canonical_document", "canonical_form", "graph_hash"]

FORMAT: Final = "tessera.graph/1"
"""Tag of the canonical form; bump it when the encoding changes."""

_ACTION_KINDS: Final[Mapping[type, str]] = {
    CreateAction: "create",
    TransitionAction: "transition",
    UpdateAction: "update",
}

JSONObject = dict[str, object]


_SCALARS: Final = (str, int, float, bool, type(None))
_ADDED_LATER: Final[Mapping[str, object]] = {
    "target": None,
    "display": None,
    "fields": None,
    "min_length": None,
    "enforce_max_length": False,
    "pattern": None,
    "minimum": None,
    "maximum": None,
    "written_by": None,
    "validators": (),
    "accepts_delegation": False,
    "requires": (),
    "invariants": (),
}
"""Attributes added after v0.1 (``Field.target``; plugin API 1.8: ``Entity.display``,
``RowScope.fields``, the field constraints, ``Field.written_by``, ``Entity.validators``; 1.9:
the actions' ``accepts_delegation``; 1.10: the actions' ``requires``, ``Entity.invariants``),
left
out while at their default, so the hash of a graph that does not use them is the one it had
before they existed (``Entity.fields`` and ``Projection.fields`` are never ``None``: kept)."""


@functools.cache
def _attribute_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def _is_default(attribute: object, default: object) -> bool:
    return type(attribute) is type(default) and attribute == default


def _encode(value: object) -> object:
    if type(value) in _SCALARS:  # the common case first: this runs for every attribute
        return value
    if isinstance(value, (tuple, list)):
        return [item if type(item) in _SCALARS else _encode(item) for item in value]
    if isinstance(value, enum.Enum):
        return _encode(value.value)
    if isinstance(value, type) and issubclass(value, TesseraError):
        return value.kind  # a requirement's error (plugin API 1.10)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        encoded = {}
        for name in _attribute_names(type(value)):
            attribute = getattr(value, name)
            if name in _ADDED_LATER and _is_default(attribute, _ADDED_LATER[name]):
                continue  # absent as before it existed: the hash of older graphs holds
            if type(attribute) in _SCALARS:
                encoded[name] = attribute
            elif attribute is not NO_DEFAULT:
                encoded[name] = _encode(attribute)
        return encoded
    if isinstance(value, Mapping):
        return {str(key): _encode(item) for key, item in value.items()}
    return value


def _definition(kind: str, definition: Entity | Action | Projection) -> JSONObject:
    encoded = _encode(definition)
    assert isinstance(encoded, dict)
    if encoded.get("label", False) is None:
        del encoded["label"]  # plugin API 1.10: an unlabelled definition hashes as before
    if kind == "entity" and encoded.get("access", False) is None:
        del encoded["access"]  # an entity without a read floor hashes as before it existed
    for optional in ("listing", "access"):
        if kind == "projection" and encoded.get(optional, False) is None:
            # A projection without list or access declarations hashes as it did before
            # they existed.
            del encoded[optional]
    document: JSONObject = {"kind": kind, "attributes": encoded}
    if kind == "action":
        document["actionKind"] = _ACTION_KINDS[type(definition)]
    return document


def canonical_document(
    *,
    entities: Iterable[Entity],
    actions: Iterable[Action],
    projections: Iterable[Projection],
    policies: Iterable[str],
    effects: Iterable[str],
    read_policies: Iterable[str] = (),
    validators: Iterable[str] = (),
) -> JSONObject:
    """The canonical form as a JSON-ready dict (see the module docstring)."""
    definitions = [
        *(_definition("action", a) for a in actions),
        *(_definition("entity", e) for e in entities),
        *(_definition("projection", p) for p in projections),
    ]
    definitions.sort(key=lambda d: (d["kind"], d["attributes"]["fqn"]))  # type: ignore[index]
    document: JSONObject = {
        "format": FORMAT,
        "definitions": definitions,
        "policies": sorted(policies),
        "effects": sorted(effects),
    }
    if read := sorted(read_policies):  # absent when empty: earlier graphs keep their hash
        document["readPolicies"] = read
    if named := sorted(validators):  # plugin API 1.8, absent when empty as above
        document["validators"] = named
    return document


def canonical_form(
    *,
    entities: Iterable[Entity],
    actions: Iterable[Action],
    projections: Iterable[Projection],
    policies: Iterable[str],
    effects: Iterable[str],
    read_policies: Iterable[str] = (),
    validators: Iterable[str] = (),
) -> bytes:
    """The canonical serialisation (UTF-8 JSON bytes) the graph hash is computed over.

    :raises ValueError: if a value cannot be represented exactly in JSON (NaN, infinity).
    :raises TypeError: if a value is not JSON data.
    """
    document = canonical_document(
        entities=entities,
        actions=actions,
        projections=projections,
        policies=policies,
        effects=effects,
        read_policies=read_policies,
        validators=validators,
    )
    text = json.dumps(
        document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return text.encode("utf-8")


def graph_hash(canonical: bytes) -> str:
    """Lower-case hex SHA-256 of a canonical form."""
    return hashlib.sha256(canonical).hexdigest()
