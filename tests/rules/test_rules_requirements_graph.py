"""The compiler's checks of declared requirements (plugin API 1.10): a declaration that cannot
be evaluated is refused at startup naming the plugin, and a graph without requirements keeps
its hash."""

from __future__ import annotations

from typing import Any

import pytest

from plugin_api import (
    ACTOR_ID,
    Condition,
    Entity,
    Field,
    FieldType,
    Requirement,
    UpdateAction,
    input_value,
    row_field,
)

from .test_rules_graph import Other, compile_plugins, errors_of

THING = "other.thing"
FIELDS = (
    Field(name="owner", type=FieldType.STRING, nullable=True),
    Field(name="size", type=FieldType.INTEGER, default=1),
)


def _plugin(requires: Any = (), invariants: Any = ()) -> tuple[str, object]:
    entity = Entity(fqn=THING, fields=FIELDS, invariants=invariants)
    action = UpdateAction(fqn=f"{THING}.edit", entity=THING, patchable=("size",), requires=requires)
    return ("other", Other(entities=(entity,), actions=(action,)))


def _rule(**given: Any) -> Requirement:
    return Requirement(
        **{"when": Condition(field="size", operator="gt", value=0), "message": "m", **given}
    )


@pytest.mark.parametrize(
    ("requires", "invariants", "said"),
    [
        ((_rule(when=Condition(field="nope", value=1)),), (), "condition field 'nope'"),
        ((), (_rule(when=Condition(field="size", value=row_field("gone"))),), "row_field 'gone'"),
        ((_rule(refuse=ValueError),), (), "refuse must be an error class"),
        ((_rule(message=""),), (), "message must be a non-empty string"),
        ((_rule(when=()),), (), "when names no condition"),
        (("not a rule",), (), "must be a Requirement"),
        ((_rule(when=Condition(field="size", operator="bogus", value=1)),), (), "unknown operator"),
    ],
)
def test_incoherent_requirements_are_refused(requires: Any, invariants: Any, said: str) -> None:
    message = errors_of(_plugin(requires, invariants))
    assert "plugin 'other'" in message and said in message, message


def test_coherent_requirements_compile_and_enter_the_hash() -> None:
    rules = (
        _rule(when=Condition(field="owner", operator="ne", value=ACTOR_ID)),
        _rule(when=Condition(field="size", operator="lte", value=input_value("size"))),
    )
    ruled = compile_plugins(_plugin(rules, rules[:1]))
    plain = compile_plugins(_plugin())
    assert ruled.hash != plain.hash
    assert b"requires" not in plain.canonical and b"invariants" not in plain.canonical
    assert b'"refuse":"PolicyDenied"' in ruled.canonical
