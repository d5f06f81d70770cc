"""An in-test plugin with every declared constraint of every field type (issue 40): the entity
``rules.thing`` and its create action take one field of each kind, so each value can be sent
alone (every field but ``title`` is optional)."""

from __future__ import annotations

from collections.abc import Sequence

from plugin_api import Action, CreateAction, Entity, Field, FieldType, hookimpl

THING = "rules.thing"
TARGET = "rules.target"
CREATE = "rules.thing.create"
TARGET_CREATE = "rules.target.create"


def _optional(name: str, kind: FieldType, **options: object) -> Field:
    return Field(name=name, type=kind, nullable=True, **options)  # type: ignore[arg-type]


FIELDS = (
    Field(name="title", type=FieldType.STRING),  # required: not nullable, no default
    _optional("short", FieldType.STRING, max_length=5, enforce_max_length=True),
    _optional("long", FieldType.STRING, min_length=2),
    _optional("code", FieldType.STRING, pattern=r"[A-Z]{2}-[0-9]{3}"),
    _optional("hint", FieldType.STRING, max_length=3),  # advisory
    _optional("stars", FieldType.INTEGER, minimum=1, maximum=5),
    _optional("below", FieldType.INTEGER, minimum=-3, maximum=-1),
    _optional("count", FieldType.INTEGER),
    _optional("price", FieldType.MONEY, currency="EUR", minimum="0.01", maximum="100.50"),
    _optional("debt", FieldType.MONEY, currency="EUR", minimum=-10, maximum="-0.5"),
    _optional("amount", FieldType.MONEY, currency="EUR"),
    _optional("level", FieldType.ENUM, options=("low", "high")),
    _optional("flag", FieldType.BOOLEAN),
    _optional("due", FieldType.DATETIME),
    _optional("target", FieldType.REFERENCE, target=TARGET),
    Field(name="size", type=FieldType.INTEGER, default=3, minimum=0, maximum=9),
)


class RulesPlugin:
    """Never mutated: one module-level object for every test of the shared host."""

    TESSERA_PLUGIN_API = "1.8"

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        return (
            Entity(fqn=TARGET, fields=(Field(name="name", type=FieldType.STRING),)),
            Entity(fqn=THING, fields=FIELDS),
        )

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return (
            CreateAction(fqn=TARGET_CREATE, entity=TARGET, inputs=("name",)),
            CreateAction(fqn=CREATE, entity=THING, inputs=tuple(f.name for f in FIELDS)),
        )


RULES = RulesPlugin()
