"""``ctx.data.find`` keeps the answers of plugin API 1.3 to 1.5 for the plugins requiring one
of them (docs/compatibility.md, the rule of 1.6): a condition on ``_version``, and ``null``
on a field that is never null, answer as they did, with a warning in the log; a plugin
requiring 1.6 or later gets the refusal (a ``ValueError``: 500 ``EffectFailed``)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import pytest

from plugin_api import (
    Action,
    ActionContext,
    Condition,
    CreateAction,
    EffectHandler,
    Entity,
    Field,
    FieldType,
    Projection,
    UpdateAction,
    hookimpl,
)
from plugin_api.testing import SharedHarness


class Probe:
    """A plugin whose ``look`` effect asks ``ctx.data.find`` what plugin API 1.3 allowed."""

    def __init__(self, domain: str, api: str) -> None:
        self.TESSERA_PLUGIN_API = api
        self.row = f"{domain}.row"
        self.effect = f"{domain}.look"

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        fields = (
            Field(name="name", type=FieldType.STRING),
            Field(name="seen", type=FieldType.STRING, nullable=True),
        )
        return (Entity(fqn=self.row, fields=fields),)

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return (
            CreateAction(fqn=f"{self.row}.create", entity=self.row, inputs=("name",)),
            UpdateAction(fqn=f"{self.row}.look", entity=self.row, patchable=(), effect=self.effect),
        )

    @hookimpl
    def tessera_projections(self) -> Sequence[Projection]:
        return (Projection(fqn=f"{self.row}.detail", entity=self.row, fields=("id", "seen")),)

    @hookimpl
    def tessera_effects(self) -> Mapping[str, EffectHandler]:
        return {self.effect: self.look}

    async def look(self, ctx: ActionContext) -> None:
        """What plugin API 1.3 allowed, chosen by the row's name."""
        assert ctx.subject is not None
        asked = {
            "version": Condition(field="_version", op="eq", value=ctx.subject["_version"]),
            "created": Condition(field="created_at", op="eq", value=None),
            "id": Condition(field="id", op="null", value=False),
        }
        found = await ctx.data.find(self.row, asked[ctx.subject["name"]])
        ctx.set("seen", str(len(found)))


OLD = Probe("olden", "1.5")
NEW = Probe("modern", "1.6")


async def test_find_answers_an_older_plugin_as_its_version_did(
    tessera_shared: SharedHarness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="tessera.runtime")
    host = await tessera_shared.start(plugins=[], extra=[("olden", OLD), ("modern", NEW)])
    client = host.client(actor="ann")
    for probe in (OLD, NEW):
        rows = {
            name: (await client.action(f"{probe.row}.create", inputs={"name": name})).outputs
            for name in ("version", "created", "id")
        }
        seen = {}
        for name, row in rows.items():
            looked = await client.action(f"{probe.row}.look", subject=row["id"])
            seen[name] = looked.outputs["seen"] if looked.status == 200 else looked.error_kind
        if probe is OLD:  # the row itself; no row; every row
            assert seen == {"version": "1", "created": "0", "id": "3"}
        else:  # a ValueError of the effect
            assert seen == dict.fromkeys(rows, "EffectFailed")
    logged = [r.getMessage() for r in caplog.records if "ctx.data.find with" in r.getMessage()]
    assert [line.split("; ")[0].rpartition("with ")[2] for line in logged] == [
        "a condition on '_version'",
        "null on 'created_at', which is never null",
        "null on 'id', which is never null",
    ]
    assert all(
        line.startswith("plugin 'olden': ctx.data.find with ")
        and "rule 'ctx.data.find names what a list filter may name' (plugin API 1.6)" in line
        and "requires plugin API 1.5" in line
        for line in logged
    ), logged
