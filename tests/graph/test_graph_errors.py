"""Every validation of the compiler: each error names the plugin and the FQN at fault."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from host.graph import GraphError
from plugin_api import (
    CreateAction,
    Entity,
    Field,
    FieldType,
    Projection,
    Stamp,
    StampSource,
    Transition,
    TransitionAction,
    UpdateAction,
    Workflow,
)
from plugin_api.version import PLUGIN_API_VERSION

ORD = "shop.order"
SHOP = "plugin 'shop'"
TAG = Entity(fqn="shop.tag", fields=(Field(name="name", type=FieldType.STRING),))


def _field(d: Any, entity: str, field: Field) -> Any:
    return d.with_entity(entity, fields=(*d.entity(entity).fields, field))


def _tag_field(d: Any, **kwargs: Any) -> Any:
    return _field(d, "shop.tag", Field(**{"name": "extra", **kwargs}))


# (mutation of the baseline, substrings one single error message must contain)
CASES: dict[str, tuple[Callable[[Any], Any], tuple[str, ...]]] = {
    # duplicates within one plugin
    "entity twice": (lambda d: d.add(TAG), ("entity 'shop.tag'", "defined twice")),
    "action twice": (
        lambda d: d.add(d.actions[1]),
        ("action 'shop.order.edit'", "defined twice"),
    ),
    "projection twice": (
        lambda d: d.add(d.projections[0]),
        ("projection 'shop.order.list'", "defined twice"),
    ),
    # names and FQNs
    "entity fqn upper case": (
        lambda d: d.add(dataclasses.replace(TAG, fqn="Shop.Thing")),
        ("entity 'Shop.Thing'", "lower snake case"),
    ),
    "entity fqn one segment": (
        lambda d: d.add(dataclasses.replace(TAG, fqn="thing")),
        ("entity 'thing'", "2 or more names"),
    ),
    "action fqn double underscore": (
        lambda d: d.with_action("shop.order.edit", fqn="shop.order.bad__name"),
        ("action 'shop.order.bad__name'", "segment 'bad__name'"),
    ),
    "projection fqn empty segment": (
        lambda d: d.with_projection("shop.order.brief", fqn="shop..brief"),
        ("projection 'shop..brief'", "segment ''"),
    ),
    "table name too long": (
        lambda d: d.add(dataclasses.replace(TAG, fqn="a" * 30 + "." + "b" * 20)),
        ("entity '" + "a" * 30, "table name", "longer than 50"),
    ),
    "field name too long": (
        lambda d: _tag_field(d, name="f" * 64, type=FieldType.STRING, nullable=True),
        ("entity 'shop.tag'", "field '" + "f" * 64, "longer than 63"),
    ),
    "field name malformed": (
        lambda d: _tag_field(d, name="Bad", type=FieldType.STRING, nullable=True),
        ("entity 'shop.tag' field 'Bad'", "lower snake case"),
    ),
    "reserved system field": (
        lambda d: _tag_field(d, name="created_at", type=FieldType.STRING, nullable=True),
        ("entity 'shop.tag' field 'created_at'", "reserved system field"),
    ),
    "duplicate field": (
        lambda d: _tag_field(d, name="name", type=FieldType.STRING),
        ("entity 'shop.tag'", "field 'name' is declared twice"),
    ),
    # type options
    "max_length on integer": (
        lambda d: _tag_field(d, type=FieldType.INTEGER, nullable=True, max_length=3),
        ("field 'extra'", "max_length is only allowed on string"),
    ),
    "max_length zero": (
        lambda d: _tag_field(d, type=FieldType.STRING, nullable=True, max_length=0),
        ("field 'extra'", "max_length must be a positive integer"),
    ),
    "options on string": (
        lambda d: _tag_field(d, type=FieldType.STRING, nullable=True, options=("a",)),
        ("field 'extra'", "options are only allowed on enum"),
    ),
    "enum without options": (
        lambda d: _tag_field(d, type=FieldType.ENUM, nullable=True),
        ("field 'extra'", "at least one option"),
    ),
    "enum duplicate option": (
        lambda d: _tag_field(d, type=FieldType.ENUM, nullable=True, options=("a", "a")),
        ("field 'extra'", "option 'a' is listed twice"),
    ),
    "enum empty option": (
        lambda d: _tag_field(d, type=FieldType.ENUM, nullable=True, options=("a", "")),
        ("field 'extra'", "option '' must be a non-empty string"),
    ),
    "money without currency": (
        lambda d: _tag_field(d, type=FieldType.MONEY, nullable=True),
        ("field 'extra'", "needs a currency"),
    ),
    "money lower-case currency": (
        lambda d: _tag_field(d, type=FieldType.MONEY, nullable=True, currency="eur"),
        ("field 'extra'", "3 upper-case letters", "'eur'"),
    ),
    "currency on string": (
        lambda d: _tag_field(d, type=FieldType.STRING, nullable=True, currency="EUR"),
        ("field 'extra'", "currency is only allowed on money"),
    ),
    # defaults (validated by host.fieldtypes.coerce_write)
    "enum default not an option": (
        lambda d: _tag_field(d, type=FieldType.ENUM, options=("a", "b"), default="c"),
        ("entity 'shop.tag' field 'extra'", "default 'c' does not fit"),
    ),
    "null default on non-nullable": (
        lambda d: _tag_field(d, type=FieldType.STRING, default=None),
        ("entity 'shop.tag' field 'extra'", "default None does not fit"),
    ),
    "integer default not a number": (
        lambda d: _tag_field(d, type=FieldType.INTEGER, default="abc"),
        ("entity 'shop.tag' field 'extra'", "default 'abc' does not fit"),
    ),
    # workflows
    "state field missing": (
        lambda d: d.with_workflow(ORD, state_field="stage"),
        ("entity 'shop.order'", "state field 'stage' is not a declared field"),
    ),
    "state field not enum": (
        lambda d: d.with_workflow(ORD, state_field="title"),
        ("entity 'shop.order'", "state field 'title' must be an enum"),
    ),
    "state field nullable": (
        lambda d: d.with_field(ORD, "status", nullable=True),
        ("entity 'shop.order'", "state field 'status' must not be nullable"),
    ),
    "state options differ from states": (
        lambda d: d.with_field(ORD, "status", options=("new", "open", "done", "lost")),
        ("entity 'shop.order'", "must equal the workflow's states", "'lost'"),
    ),
    "initial not an option": (
        lambda d: d.with_workflow(ORD, initial="limbo"),
        ("entity 'shop.order'", "initial state 'limbo' is not an option"),
    ),
    "transition twice": (
        lambda d: d.with_workflow(
            ORD,
            transitions=(
                *d.entity(ORD).workflow.transitions,
                d.entity(ORD).workflow.transitions[0],
            ),
        ),
        ("entity 'shop.order'", "transition 'open' is defined twice"),
    ),
    "transition name malformed": (
        lambda d: d.with_transition(ORD, "reopen", name="Re-open"),
        ("entity 'shop.order'", "transition 'Re-open'", "lower snake case"),
    ),
    "transition without sources": (
        lambda d: d.with_transition(ORD, "reopen", sources=()),
        ("entity 'shop.order'", "transition 'reopen'", "at least one source"),
    ),
    "stamp of undeclared field": (
        lambda d: d.with_transition(ORD, "reopen", stamps=(Stamp.now("gone_at"),)),
        ("entity 'shop.order'", "transition 'reopen'", "'gone_at', which is not a declared"),
    ),
    "stamp of system field": (
        lambda d: d.with_transition(ORD, "reopen", stamps=(Stamp.now("updated_at"),)),
        ("entity 'shop.order'", "transition 'reopen'", "system field 'updated_at'"),
    ),
    "stamp of state field": (
        lambda d: d.with_transition(ORD, "reopen", stamps=(Stamp.literal("status", "new"),)),
        ("entity 'shop.order'", "transition 'reopen'", "state field 'status'"),
    ),
    "now on a string": (
        lambda d: d.with_transition(ORD, "reopen", stamps=(Stamp.now("owner"),)),
        ("entity 'shop.order'", "'owner' with now", "needs datetime"),
    ),
    "actor on an integer": (
        lambda d: d.with_transition(ORD, "reopen", stamps=(Stamp.actor("qty"),)),
        ("entity 'shop.order'", "'qty' with the actor", "needs string"),
    ),
    "literal that does not fit": (
        lambda d: d.with_transition(ORD, "reopen", stamps=(Stamp.literal("qty", "many"),)),
        ("entity 'shop.order'", "stamps 'qty' with 'many', which does not fit"),
    ),
    "now with a value": (
        lambda d: d.with_transition(
            ORD, "reopen", stamps=(Stamp(field="closed_at", source=StampSource.NOW, value=1),)
        ),
        ("entity 'shop.order'", "must not carry a value"),
    ),
    "field stamped twice": (
        lambda d: d.with_transition(
            ORD, "reopen", stamps=(Stamp.now("closed_at"), Stamp.literal("closed_at", None))
        ),
        ("entity 'shop.order'", "stamps 'closed_at' more than once"),
    ),
    # actions
    "dangling entity": (
        lambda d: d.with_action("shop.order.edit", entity="shop.nothing"),
        ("action 'shop.order.edit'", "entity 'shop.nothing', which no installed plugin"),
    ),
    "create input undeclared": (
        lambda d: d.with_action("shop.order.create", inputs=("title", "colour")),
        ("action 'shop.order.create'", "'colour', which is not a field of entity 'shop.order'"),
    ),
    "create input system field": (
        lambda d: d.with_action("shop.order.create", inputs=("title", "id")),
        ("action 'shop.order.create'", "'id'", "system field"),
    ),
    "create input twice": (
        lambda d: d.with_action("shop.order.create", inputs=("title", "title")),
        ("action 'shop.order.create'", "inputs name 'title' twice"),
    ),
    "create input state field": (
        lambda d: d.with_action("shop.order.create", inputs=("title", "status")),
        ("action 'shop.order.create'", "workflow state field 'status'"),
    ),
    "create stamp invalid": (
        lambda d: d.with_action("shop.order.create", stamps=(Stamp.actor("qty"),)),
        ("action 'shop.order.create'", "'qty' with the actor"),
    ),
    "create misses a required field": (
        lambda d: d.with_action("shop.order.create", inputs=("note",)),
        ("action 'shop.order.create'", "required field 'title'", "neither an input nor stamped"),
    ),
    "transition action without workflow": (
        lambda d: d.add(TransitionAction(fqn="shop.tag.close", entity="shop.tag", transition="x")),
        ("action 'shop.tag.close'", "entity 'shop.tag' has no workflow"),
    ),
    "unknown transition": (
        lambda d: d.with_action("shop.order.reopen", transition="explode"),
        ("action 'shop.order.reopen'", "transition 'explode' is not a transition"),
    ),
    "stampable undeclared": (
        lambda d: d.with_action("shop.order.reopen", stampable=("colour",)),
        ("action 'shop.order.reopen'", "stampable name 'colour', which is not a field"),
    ),
    "stampable system field": (
        lambda d: d.with_action("shop.order.reopen", stampable=("created_at",)),
        ("action 'shop.order.reopen'", "stampable name 'created_at'", "a system field"),
    ),
    "stampable twice": (
        lambda d: d.with_action("shop.order.reopen", stampable=("note", "note")),
        ("action 'shop.order.reopen'", "stampable name 'note' twice"),
    ),
    "stampable state field": (
        lambda d: d.with_action("shop.order.reopen", stampable=("status",)),
        ("action 'shop.order.reopen'", "workflow state field 'status'"),
    ),
    "patchable undeclared": (
        lambda d: d.with_action("shop.order.edit", patchable=("colour",)),
        ("action 'shop.order.edit'", "patchable name 'colour', which is not a field"),
    ),
    "patchable twice": (
        lambda d: d.with_action("shop.order.edit", patchable=("note", "note")),
        ("action 'shop.order.edit'", "patchable name 'note' twice"),
    ),
    "patchable state field": (
        lambda d: d.with_action("shop.order.edit", patchable=("status",)),
        ("action 'shop.order.edit'", "workflow state field 'status'"),
    ),
    "empty role": (
        lambda d: d.with_action("shop.order.edit", roles=("",)),
        ("action 'shop.order.edit'", "role ''"),
    ),
    "role with spaces": (
        lambda d: d.with_action("shop.order.edit", roles=(" clerk",)),
        ("action 'shop.order.edit'", "role ' clerk'"),
    ),
    "role with a space inside": (
        lambda d: d.with_action("shop.order.edit", roles=("team lead",)),
        ("action 'shop.order.edit'", "role 'team lead'"),
    ),
    "role with a no-break space": (
        lambda d: d.with_action("shop.order.edit", roles=("clerk\u00a0",)),
        ("action 'shop.order.edit'", "role 'clerk\\xa0'"),
    ),
    "role too long": (
        lambda d: d.with_action("shop.order.edit", roles=("r" * 65,)),
        ("action 'shop.order.edit'", "not a role name"),
    ),
    "role with comma": (
        lambda d: d.with_action("shop.order.edit", roles=("a,b",)),
        ("action 'shop.order.edit'", "role 'a,b'"),
    ),
    "policy not implemented": (
        lambda d: d.with_action("shop.order.edit", policies=("shop.ghost",)),
        (
            "custom policy 'shop.ghost' used by action 'shop.order.edit' of plugin 'shop' "
            "is implemented by no installed plugin",
        ),
    ),
    "effect not implemented": (
        lambda d: d.with_action("shop.order.edit", effect="shop.ghost"),
        (
            "custom effect 'shop.ghost' used by action 'shop.order.edit' of plugin 'shop' "
            "is implemented by no installed plugin",
        ),
    ),
    # projections
    "projection dangling entity": (
        lambda d: d.with_projection("shop.order.brief", entity="shop.nothing"),
        ("projection 'shop.order.brief'", "entity 'shop.nothing', which no installed"),
    ),
    "projection unknown field": (
        lambda d: d.with_projection("shop.order.brief", fields=("id", "colour")),
        ("projection 'shop.order.brief'", "'colour', which is not a field"),
    ),
    "projection field twice": (
        lambda d: d.with_projection("shop.order.brief", fields=("id", "id")),
        ("projection 'shop.order.brief'", "field 'id' twice"),
    ),
    "projection unknown action": (
        lambda d: d.with_projection("shop.order.brief", actions=("shop.order.fly",)),
        ("projection 'shop.order.brief'", "action 'shop.order.fly', which no installed"),
    ),
    "projection action twice": (
        lambda d: d.with_projection("shop.order.brief", actions=("shop.order.open",) * 2),
        ("projection 'shop.order.brief'", "action 'shop.order.open' twice"),
    ),
    "projection action of another entity": (
        lambda d: d.with_projection("shop.order.brief", entity="shop.copy", fields=("id",)),
        ("projection 'shop.order.brief'", "no error expected")[:1],
    ),
    # defensive: definitions that are not what the contract says
    "fields not a tuple": (
        lambda d: d.add(Entity(fqn="shop.odd", fields="name")),  # type: ignore[arg-type]
        ("entity 'shop.odd'", "fields must be a tuple of Field"),
    ),
    "field type as unknown string": (
        lambda d: _tag_field(d, type="text", nullable=True),
        ("entity 'shop.tag' field 'extra'", "type must be a FieldType"),
    ),
    "inputs as a bare string": (
        lambda d: d.with_action("shop.order.create", inputs="title"),
        ("action 'shop.order.create'", "inputs must be a tuple of strings"),
    ),
    "workflow not a Workflow": (
        lambda d: d.with_entity("shop.tag", workflow="yes"),
        ("entity 'shop.tag'", "workflow must be a Workflow"),
    ),
}
del CASES["projection action of another entity"]  # covered below, needs two entities


def _assert_reported(errors: tuple[str, ...], expected: tuple[str, ...]) -> None:
    assert any(all(part in error for part in expected) for error in errors), (
        f"no error contains all of {expected!r}:\n" + "\n".join(errors)
    )


@pytest.mark.parametrize("name", list(CASES))
def test_error_names_plugin_and_fqn(kit: SimpleNamespace, name: str) -> None:
    mutate, expected = CASES[name]
    plugin = mutate(kit.baseline()).plugin()
    # Every rule applies to a plugin requiring this plugin API (older plugins are spared the
    # rules added since theirs: tests/graph/test_graph_compat.py).
    plugin.TESSERA_PLUGIN_API = PLUGIN_API_VERSION
    errors = kit.graph_errors(("shop", plugin))
    _assert_reported(errors, expected)
    assert all(SHOP in error for error in errors)


def test_error_names_distribution_and_version(kit: SimpleNamespace) -> None:
    from host.graph.compiler import compile_graph
    from host.plugins import LoadedPlugins, PluginInfo, load_plugins

    defs = kit.baseline().with_action("shop.order.edit", entity="shop.nothing")
    loaded = load_plugins(extra=[("shop", defs.plugin())], entry_points=False)
    info = PluginInfo(name="shop", distribution="shop-dist", version="1.2.3")
    relabelled = LoadedPlugins(
        manager=loaded.manager, plugins=((info, loaded.plugins[0][1]),), errors=()
    )
    with pytest.raises(GraphError) as caught:
        compile_graph(relabelled)
    assert "plugin 'shop' (shop-dist 1.2.3): action 'shop.order.edit'" in str(caught.value)


def test_projection_action_of_another_entity(kit: SimpleNamespace) -> None:
    defs = kit.baseline().with_projection(
        "shop.order.list", entity="shop.copy", fields=("id",), actions=("shop.order.open",)
    )
    errors = kit.graph_errors(("shop", defs.plugin()))
    _assert_reported(
        errors,
        (SHOP, "projection 'shop.order.list'", "action 'shop.order.open' of entity 'shop.order'"),
    )


def test_system_fields_allowed_in_projection(kit: SimpleNamespace) -> None:
    fields = ("id", "tenant_id", "created_at", "updated_at", "_version")
    defs = kit.baseline().with_projection("shop.order.brief", fields=fields)
    graph = kit.compile_plugins(("shop", defs.plugin()))
    assert graph.projections["shop.order.brief"].definition.fields == fields


# ---------------------------------------------------------------------------------------------
# Across plugins
# ---------------------------------------------------------------------------------------------


def test_duplicates_across_plugins_name_both(kit: SimpleNamespace) -> None:
    base = kit.baseline()
    other = kit.make_plugin(
        entities=[TAG],
        actions=[base.actions[1]],
        projections=[base.projections[1]],
        policies={"shop.vip": lambda ctx: True},
        effects={"shop.notify": lambda ctx: None},
    )
    errors = kit.graph_errors(("shop", base.plugin()), ("other", other))
    for subject in (
        "entity 'shop.tag'",
        "action 'shop.order.edit'",
        "projection 'shop.order.brief'",
    ):
        _assert_reported(errors, ("plugin 'other'", subject, "also defined by plugin 'shop'"))
    _assert_reported(errors, ("policy 'shop.vip'", "both plugin 'shop' and plugin 'other'"))
    _assert_reported(errors, ("effect 'shop.notify'", "both plugin 'shop' and plugin 'other'"))


def test_handler_names_are_validated(kit: SimpleNamespace) -> None:
    other = kit.make_plugin(policies={"Bad Name": lambda ctx: True})
    errors = kit.graph_errors(("other", other))
    _assert_reported(errors, ("plugin 'other'", "policy 'Bad Name'", "segment"))


def test_actions_may_target_another_plugins_entity(kit: SimpleNamespace) -> None:
    base = kit.baseline()
    entities_only = kit.make_plugin(entities=base.entities)
    rest = dataclasses.replace(base, entities=())
    graph = kit.compile_plugins(("rest", rest.plugin()), ("model", entities_only))
    assert graph.actions["shop.order.create"].plugin.name == "rest"
    assert graph.entities[ORD].plugin.name == "model"
    assert graph.policies["shop.vip"].plugin.name == "rest"


def test_every_error_is_reported_at_once(kit: SimpleNamespace) -> None:
    defs = (
        kit.baseline()
        .with_action("shop.order.edit", entity="shop.nothing")
        .with_action("shop.order.reopen", transition="explode")
        .with_projection("shop.order.brief", fields=("colour",))
        .with_field(ORD, "size", default="xxl")
    )
    with pytest.raises(GraphError) as caught:
        kit.compile_plugins(("shop", defs.plugin()))
    assert len(caught.value.errors) == 4
    assert str(caught.value).splitlines() == list(caught.value.errors)


# ---------------------------------------------------------------------------------------------
# Loader and hook errors (pluggy's validation turned into our messages)
# ---------------------------------------------------------------------------------------------


def _entities() -> list[Entity]:
    return [TAG]


HOOK_CASES: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "misspelt hook": ({"tessera_entitys": _entities}, ("unknown hook 'tessera_entitys'",)),
    "hook raises": (
        {"tessera_entities": lambda: 1 / 0},
        ("tessera_entities raised ZeroDivisionError",),
    ),
    "entities not a sequence": (
        {"tessera_entities": lambda: TAG},
        ("tessera_entities must return a sequence of an Entity, got Entity",),
    ),
    "entities a string": (
        {"tessera_entities": lambda: "shop.tag"},
        ("tessera_entities must return a sequence", "got str"),
    ),
    "entities returns None": (
        {"tessera_entities": lambda: None},
        ("tessera_entities must return a sequence", "got NoneType"),
    ),
    "wrong item class": (
        {"tessera_actions": lambda: [TAG]},
        ("tessera_actions item 0 is not an action but Entity",),
    ),
    "projection hook with action": (
        {"tessera_projections": lambda: [CreateAction(fqn="a.b", entity="a", inputs=())]},
        ("tessera_projections item 0 is not a Projection",),
    ),
    "policies not a mapping": (
        {"tessera_policies": lambda: [("x.y", print)]},
        ("tessera_policies must return a mapping of name to callable, got list",),
    ),
    "effect not callable": (
        {"tessera_effects": lambda: {"x.y": 42}},
        ("tessera_effects entry 'x.y' must map a name (str) to a callable",),
    ),
    "handler name not a string": (
        {"tessera_effects": lambda: {3: print}},
        ("tessera_effects entry 3 must map a name",),
    ),
    "hook argument not in spec": (
        {"tessera_entities": lambda registry: []},
        ("invalid hook implementation",),
    ),
}


@pytest.mark.parametrize("name", list(HOOK_CASES))
def test_hook_errors_name_the_plugin(kit: SimpleNamespace, name: str) -> None:
    hooks, expected = HOOK_CASES[name]
    errors = kit.graph_errors(("bad", kit.make_plugin(**hooks)))
    _assert_reported(errors, ("plugin 'bad'", *expected))


def test_unmarked_hook_function_is_reported(kit: SimpleNamespace) -> None:
    plugin = SimpleNamespace(tessera_entities=_entities)
    errors = kit.graph_errors(("lazy", plugin))
    _assert_reported(errors, ("plugin 'lazy'", "tessera_entities is not marked with @hookimpl"))


def test_wrapper_hooks_are_refused(kit: SimpleNamespace) -> None:
    from plugin_api import hookimpl

    def tessera_entities() -> Any:
        yield
        return None

    plugin = SimpleNamespace(tessera_entities=hookimpl(wrapper=True)(tessera_entities))
    errors = kit.graph_errors(("wrap", plugin))
    _assert_reported(errors, ("plugin 'wrap'", "may not be a hook wrapper"))


def test_same_name_registered_twice(kit: SimpleNamespace) -> None:
    errors = kit.graph_errors(("shop", kit.baseline().plugin()), ("shop", kit.make_plugin()))
    _assert_reported(errors, ("plugin 'shop'", "cannot be registered"))


def test_valid_items_survive_a_bad_sibling(kit: SimpleNamespace) -> None:
    from host.plugins import contributions, load_plugins

    plugin = kit.make_plugin(entities=[TAG, "junk"], policies={"a.b": print, "c.d": None})
    [contribution] = contributions(load_plugins(extra=[("p", plugin)], entry_points=False))
    assert contribution.entities == (TAG,)
    assert list(contribution.policies) == ["a.b"]
    assert len(contribution.errors) == 2


def test_unused_definitions_compile(kit: SimpleNamespace) -> None:
    wf = Workflow(
        state_field="s",
        initial="a",
        transitions=(Transition(name="go", sources=("a",), target="b"),),
    )
    entity = Entity(
        fqn="x.y",
        fields=(Field(name="s", type=FieldType.ENUM, options=("b", "a")),),
        workflow=wf,
    )
    plugin = kit.make_plugin(
        entities=[entity],
        actions=[
            CreateAction(fqn="x.y.new", entity="x.y", inputs=()),
            UpdateAction(fqn="x.y.touch", entity="x.y", patchable=()),
        ],
        projections=[Projection(fqn="x.y.all", entity="x.y", fields=())],
    )
    graph = kit.compile_plugins(("x", plugin))
    assert graph.entities["x.y"].transitions["go"].target == "b"
    assert graph.actions["x.y.new"].kind == "create"
