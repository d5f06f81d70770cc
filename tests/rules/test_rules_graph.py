"""The graph compiler and entity rules (plugin API 1.8): incoherent declarations are refused
at startup naming the plugin and the definition; the new attributes enter the hash only when
used; a transition's stampable fields default to none for plugins requiring 1.8."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from host.config import Settings
from host.graph.compiler import GraphError, compile_graph
from host.graph.model import Graph
from host.plugins import load_plugins
from plugin_api import (
    Action,
    Entity,
    Field,
    FieldType,
    TransitionAction,
    UpdateAction,
    ValidatorHandler,
    hookimpl,
)

from ._tracker import ISSUE, PROJECT, Tracker


class Other:
    """A plugin contributing what a test gives it."""

    def __init__(
        self,
        *,
        entities: Sequence[Entity] = (),
        actions: Sequence[Action] = (),
        validators: Mapping[str, ValidatorHandler] | None = None,
        api: str | None = None,
    ) -> None:
        self._entities = tuple(entities)
        self._actions = tuple(actions)
        self._validators = dict(validators or {})
        if api is not None:
            self.TESSERA_PLUGIN_API = api

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        return self._entities

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return self._actions

    @hookimpl
    def tessera_validators(self) -> Mapping[str, ValidatorHandler]:
        return self._validators


def compile_plugins(*plugins: tuple[str, object]) -> Graph:
    return compile_graph(load_plugins(extra=list(plugins), entry_points=False))


def errors_of(*plugins: tuple[str, object]) -> str:
    with pytest.raises(GraphError) as caught:
        compile_plugins(*plugins)
    return str(caught.value)


def entity_with(*fields: Field, **more: Any) -> Entity:
    return Entity(fqn="other.thing", fields=fields, **more)


FIELD_CASES = {
    "bad pattern": (
        Field(name="code", type=FieldType.STRING, pattern="(["),
        "field 'code': pattern '([' is not a regular expression",
    ),
    "min above max": (
        Field(name="code", type=FieldType.STRING, min_length=5, max_length=3),
        "min_length 5 is greater than max_length 3",
    ),
    "negative min_length": (
        Field(name="code", type=FieldType.STRING, min_length=-1),
        "min_length must be a non-negative integer",
    ),
    "pattern on an integer": (
        Field(name="count", type=FieldType.INTEGER, pattern="[0-9]+"),
        "pattern is only allowed on string fields",
    ),
    "minimum on a string": (
        Field(name="code", type=FieldType.STRING, minimum=1),
        "minimum is only allowed on integer and money fields",
    ),
    "minimum above maximum": (
        Field(name="count", type=FieldType.INTEGER, minimum=10, maximum=1),
        "minimum 10 is greater than maximum 1",
    ),
    "decimal bound on an integer": (
        Field(name="count", type=FieldType.INTEGER, maximum="1.5"),
        "maximum must be an integer",
    ),
    "bad money bound": (
        Field(name="price", type=FieldType.MONEY, currency="EUR", minimum="cheap"),
        "minimum must be an int or decimal text",
    ),
    "enforced max without max": (
        Field(name="code", type=FieldType.STRING, enforce_max_length=True),
        "enforce_max_length needs a max_length",
    ),
    "default breaking a rule": (
        Field(name="code", type=FieldType.STRING, min_length=3, default="x"),
        "default 'x' does not fit the field",
    ),
    "written_by not a WrittenBy": (
        Field(name="code", type=FieldType.STRING, written_by="everyone"),  # type: ignore[arg-type]
        "written_by must be a WrittenBy or None",
    ),
}


@pytest.mark.parametrize("name", list(FIELD_CASES))
def test_incoherent_constraints_are_refused_at_startup(name: str) -> None:
    field, expected = FIELD_CASES[name]
    errors = errors_of(("other", Other(entities=(entity_with(field),))))
    assert "plugin 'other': entity 'other.thing'" in errors
    assert expected in errors


def test_an_unknown_validator_is_refused() -> None:
    entity = entity_with(Field(name="code", type=FieldType.STRING), validators=("other.nope",))
    errors = errors_of(("other", Other(entities=(entity,))))
    assert "entity 'other.thing': validator 'other.nope' is implemented by no installed" in errors


def test_another_plugins_actions_may_not_write_owned_fields_or_the_owned_state() -> None:
    foreign = Other(
        actions=(
            UpdateAction(fqn="other.issue.steal", entity=ISSUE, patchable=("reporter",)),
            TransitionAction(fqn="other.issue.finish", entity=ISSUE, transition="finish"),
        )
    )
    errors = errors_of(("tracker", Tracker()), ("other", foreign))
    assert (
        "plugin 'other': action 'other.issue.steal': takes as input field 'reporter' of entity "
        "'tracker.issue', which only plugin 'tracker' writes (written_by=owner)"
    ) in errors
    assert "action 'other.issue.finish': moves the workflow of entity 'tracker.issue'" in errors


def test_the_owner_may_not_take_an_effect_only_field_as_input() -> None:
    tracker = Tracker()
    own = Other(
        actions=(UpdateAction(fqn="tracker.issue.fix", entity=ISSUE, patchable=("done_by",)),)
    )
    errors = errors_of(("tracker", tracker), ("other", own))
    assert "field 'done_by' of entity 'tracker.issue', which only plugin 'tracker'" in errors

    class Greedy(Tracker):
        @hookimpl
        def tessera_actions(self) -> Sequence[Action]:
            fix = UpdateAction(fqn="tracker.issue.fix", entity=ISSUE, patchable=("done_by",))
            return (*super().tessera_actions(), fix)

    errors = errors_of(("tracker", Greedy()))
    assert "which only stamps and effects write (written_by=owner_effects)" in errors


def _unspecified_transition(api: str | None) -> Other:
    entity = Entity(
        fqn="other.thing",
        fields=(
            Field(name="note", type=FieldType.STRING, nullable=True, default=None),
            Field(name="state", type=FieldType.ENUM, options=("a", "b")),
        ),
        workflow=__import__("plugin_api").Workflow(
            state_field="state",
            initial="a",
            transitions=(
                __import__("plugin_api").Transition(name="go", sources=("a",), target="b"),
            ),
        ),
    )
    action = TransitionAction(fqn="other.thing.go", entity="other.thing", transition="go")
    return Other(entities=(entity,), actions=(action,), api=api)


def test_stampable_defaults_to_nothing_from_plugin_api_1_8() -> None:
    tracker = compile_plugins(("tracker", Tracker()))
    done = tracker.actions["tracker.issue.done"].definition
    reopen = tracker.actions["tracker.issue.reopen"].definition
    assert isinstance(done, TransitionAction) and done.stampable == ()
    assert isinstance(reopen, TransitionAction) and reopen.stampable is None  # ANY_FIELD
    for api in (None, "1.7"):
        older = compile_plugins(("other", _unspecified_transition(api)))
        definition = older.actions["other.thing.go"].definition
        assert isinstance(definition, TransitionAction) and definition.stampable is None
    newer = compile_plugins(("other", _unspecified_transition("1.8")))
    assert newer.hash != compile_plugins(("other", _unspecified_transition("1.7"))).hash


def test_unused_rules_leave_the_canonical_form_and_the_hash_as_before() -> None:
    settings = dataclasses.replace(Settings(), plugins_only=("helpdesk", "billing"))
    samples = compile_graph(load_plugins(settings))
    for key in ("min_length", "pattern", "minimum", "written_by", "validators", "enforce_max"):
        assert key.encode() not in samples.canonical
    plain = Field(name="code", type=FieldType.STRING)
    explicit = Field(name="code", type=FieldType.STRING, min_length=None, enforce_max_length=False)
    assert compile_plugins(("other", Other(entities=(entity_with(plain),)))).hash == (
        compile_plugins(("other", Other(entities=(entity_with(explicit),)))).hash
    )
    ruled = Field(name="code", type=FieldType.STRING, min_length=1)
    assert compile_plugins(("other", Other(entities=(entity_with(ruled),)))).hash != (
        compile_plugins(("other", Other(entities=(entity_with(plain),)))).hash
    )
    tracker = compile_plugins(("tracker", Tracker()))
    assert b'"validators":["tracker.open_project","tracker.record"]' in tracker.canonical
    assert PROJECT in tracker.entities
