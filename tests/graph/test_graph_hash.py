"""The canonical form and hash: stable across order and provenance, sensitive to content."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from host.graph.canonical import FORMAT
from plugin_api import NO_DEFAULT, FieldType, Stamp, StampSource

ORD = "shop.order"
Mutation = Callable[[Any], Any]


def _swap_fields(d: Any) -> Any:
    fields = d.entity(ORD).fields
    return d.with_entity(ORD, fields=(fields[1], fields[0], *fields[2:]))


def _swap_transitions(d: Any) -> Any:
    transitions = d.entity(ORD).workflow.transitions
    return d.with_workflow(ORD, transitions=tuple(reversed(transitions)))


def _rename_policy(d: Any) -> Any:
    return dataclasses.replace(d, policies=("shop.vip", "shop.other"))


def _rename_effect(d: Any) -> Any:
    return dataclasses.replace(d, effects=("shop.notify", "shop.other_fx"))


# Each mutation changes exactly one attribute and leaves a valid graph.
MUTATIONS: dict[str, Mutation] = {
    # fields
    "field name": lambda d: d.with_field(ORD, "remark", name="comment"),
    "field type": lambda d: d.with_field(ORD, "aux", type=FieldType.STRING),
    "field label": lambda d: d.with_field(ORD, "remark", label="Remark"),
    "field nullable": lambda d: d.with_field(ORD, "remark", nullable=False),
    "field default value": lambda d: d.with_field(ORD, "remark", default="y"),
    "field default removed": lambda d: d.with_field(ORD, "remark", default=NO_DEFAULT),
    "field default None vs none": lambda d: d.with_field(ORD, "aux", default=None),
    "field max_length": lambda d: d.with_field(ORD, "title", max_length=81),
    "field max_length added": lambda d: d.with_field(ORD, "remark", max_length=10),
    "field options order": lambda d: d.with_field(ORD, "size", options=("m", "s", "l")),
    "field options added": lambda d: d.with_field(ORD, "size", options=("s", "m", "l", "xl")),
    "field currency": lambda d: d.with_field(ORD, "price", currency="USD"),
    "field order": _swap_fields,
    # entities
    "entity fqn": lambda d: d.with_entity("shop.tag", fqn="shop.label"),
    "entity added": lambda d: d.add(dataclasses.replace(d.entity("shop.tag"), fqn="shop.x")),
    # workflow
    "workflow state_field": lambda d: d.with_workflow(ORD, state_field="phase"),
    "workflow initial": lambda d: d.with_workflow(ORD, initial="open"),
    "workflow transition order": _swap_transitions,
    "transition name": lambda d: d.with_transition("shop.copy", "reopen", name="revive"),
    "transition sources": lambda d: d.with_transition(ORD, "reopen", sources=("done", "open")),
    "transition sources order": lambda d: d.with_transition(ORD, "finish", sources=("open", "new")),
    "transition target": lambda d: d.with_transition(ORD, "reopen", target="new"),
    "stamp source": lambda d: d.with_transition(
        ORD, "open", stamps=(Stamp(field="owner", source=StampSource.LITERAL, value=None),)
    ),
    "stamp field": lambda d: d.with_transition(
        ORD, "finish", stamps=(Stamp.now("due_at"), Stamp.literal("paid", True))
    ),
    "stamp value": lambda d: d.with_transition(
        ORD, "finish", stamps=(Stamp.now("closed_at"), Stamp.literal("paid", False))
    ),
    "stamp order": lambda d: d.with_transition(
        ORD, "finish", stamps=(Stamp.literal("paid", True), Stamp.now("closed_at"))
    ),
    "stamps removed": lambda d: d.with_transition(ORD, "reopen", stamps=()),
    # create action
    "create fqn": lambda d: d.with_action("shop.order.create", fqn="shop.order.add"),
    "create entity": lambda d: d.with_action("shop.order.create", entity="shop.copy"),
    "create inputs": lambda d: d.with_action(
        "shop.order.create", inputs=("title", "qty", "due_at", "size", "price")
    ),
    "create inputs order": lambda d: d.with_action(
        "shop.order.create", inputs=("note", "title", "qty", "due_at", "size", "price")
    ),
    "create stamps": lambda d: d.with_action("shop.order.create", stamps=()),
    "create stamp value": lambda d: d.with_action(
        "shop.order.create", stamps=(Stamp.literal("owner", "bob"),)
    ),
    "create roles": lambda d: d.with_action("shop.order.create", roles=("clerk",)),
    "create roles order": lambda d: d.with_action("shop.order.create", roles=("boss", "clerk")),
    "create policies": lambda d: d.with_action("shop.order.create", policies=()),
    "create effect": lambda d: d.with_action("shop.order.create", effect=None),
    "create effect name": lambda d: d.with_action("shop.order.create", effect="shop.spare_fx"),
    # update action
    "update fqn": lambda d: d.with_action("shop.order.edit", fqn="shop.order.change"),
    "update entity": lambda d: d.with_action("shop.order.edit", entity="shop.copy"),
    "update patchable": lambda d: d.with_action("shop.order.edit", patchable=("title",)),
    "update patchable order": lambda d: d.with_action(
        "shop.order.edit", patchable=("note", "title")
    ),
    "transition stampable none to empty": lambda d: d.with_action(
        "shop.order.reopen", stampable=()
    ),
    "transition stampable": lambda d: d.with_action("shop.order.reopen", stampable=("note",)),
    "transition stampable order": lambda d: d.with_action(
        "shop.order.reopen", stampable=("title", "note")
    ),
    "update roles": lambda d: d.with_action("shop.order.edit", roles=("boss",)),
    "update policies": lambda d: d.with_action(
        "shop.order.edit", policies=("shop.vip", "shop.spare")
    ),
    "update effect": lambda d: d.with_action("shop.order.edit", effect=None),
    # transition action
    "transition action fqn": lambda d: d.with_action("shop.order.reopen", fqn="shop.order.redo"),
    "transition action entity": lambda d: d.with_action("shop.order.reopen", entity="shop.copy"),
    "transition action transition": lambda d: d.with_action(
        "shop.order.reopen", transition="finish"
    ),
    "transition action roles": lambda d: d.with_action("shop.order.reopen", roles=()),
    "transition action policies": lambda d: d.with_action(
        "shop.order.reopen", policies=("shop.spare",)
    ),
    "transition action effect": lambda d: d.with_action("shop.order.reopen", effect=None),
    # projections
    "projection fqn": lambda d: d.with_projection("shop.order.brief", fqn="shop.order.short"),
    "projection entity": lambda d: d.with_projection("shop.order.brief", entity="shop.copy"),
    "projection fields": lambda d: d.with_projection("shop.order.brief", fields=("id",)),
    "projection fields order": lambda d: d.with_projection(
        "shop.order.brief", fields=("title", "id")
    ),
    "projection actions": lambda d: d.with_projection(
        "shop.order.list", actions=("shop.order.open",)
    ),
    "projection actions order": lambda d: d.with_projection(
        "shop.order.list", actions=("shop.order.finish", "shop.order.open")
    ),
    # named handlers
    "policy name": _rename_policy,
    "effect name": _rename_effect,
}


def _hash(kit: SimpleNamespace, defs: Any) -> str:
    graph = kit.compile_plugins(("shop", defs.plugin()))
    return str(graph.hash)


def test_baseline_compiles(kit: SimpleNamespace) -> None:
    graph = kit.compile_plugins(("shop", kit.baseline().plugin()))
    assert graph.hash == hashlib.sha256(graph.canonical).hexdigest()
    assert list(graph.entities) == sorted(graph.entities)
    assert list(graph.actions) == sorted(graph.actions)
    assert graph.entities[ORD].table_name == "shop__order"


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_every_attribute_changes_the_hash(kit: SimpleNamespace, name: str) -> None:
    base = kit.baseline()
    changed = MUTATIONS[name](base)
    assert changed != base
    assert _hash(kit, changed) != _hash(kit, base)


def test_mutations_give_distinct_hashes(kit: SimpleNamespace) -> None:
    base = kit.baseline()
    hashes = {name: _hash(kit, mutate(base)) for name, mutate in MUTATIONS.items()}
    assert len(set(hashes.values())) == len(hashes)


def test_hash_ignores_registration_order_and_provenance(kit: SimpleNamespace) -> None:
    base = kit.baseline()
    one = _hash(kit, base)
    parts = base.split()
    forward = kit.compile_plugins(*[(f"part{i}", p) for i, p in enumerate(parts)])
    backward = kit.compile_plugins(*[(f"other{i}", p) for i, p in enumerate(reversed(parts))])
    assert forward.hash == backward.hash == one
    assert [p.name for p in backward.plugins] == [f"other{i}" for i in range(len(parts))]


def test_hash_ignores_definition_order_within_a_plugin(kit: SimpleNamespace) -> None:
    base = kit.baseline()
    shuffled = dataclasses.replace(
        base,
        entities=tuple(reversed(base.entities)),
        actions=tuple(reversed(base.actions)),
        projections=tuple(reversed(base.projections)),
        policies=tuple(reversed(base.policies)),
        effects=tuple(reversed(base.effects)),
    )
    assert _hash(kit, shuffled) == _hash(kit, base)


def test_canonical_form_shape(kit: SimpleNamespace) -> None:
    graph = kit.compile_plugins(("shop", kit.baseline().plugin()))
    text = graph.canonical.decode("utf-8")
    document = json.loads(text)
    assert json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False) == text
    assert document["format"] == FORMAT
    keys = [(d["kind"], d["attributes"]["fqn"]) for d in document["definitions"]]
    assert keys == sorted(keys)
    assert document["policies"] == ["shop.spare", "shop.vip"]
    assert document["effects"] == ["shop.notify", "shop.spare_fx"]
    assert "shop" not in {p for p in text.split('"') if p == "shop"}  # no plugin names
    order = next(d for d in document["definitions"] if d["attributes"]["fqn"] == ORD)
    fields = {f["name"]: f for f in order["attributes"]["fields"]}
    assert "default" not in fields["aux"]  # NO_DEFAULT: no key at all
    assert fields["qty"]["default"] == 1
    assert fields["title"]["type"] == "string"


def test_non_ascii_is_kept_as_utf8(kit: SimpleNamespace) -> None:
    defs = kit.baseline().with_field(ORD, "remark", label="Bemerkung für Ärger")
    graph = kit.compile_plugins(("shop", defs.plugin()))
    assert "Bemerkung für Ärger".encode() in graph.canonical
