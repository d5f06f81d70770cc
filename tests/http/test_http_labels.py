"""Labels for people (plugin API 1.10): declared or humanised, checked at compile time, in the
ViewSchema 1.5.0 ``labels`` and the actions' labels, and in the OpenAPI summaries; older
versions answer as before."""

from __future__ import annotations

from typing import Any

import pytest

from host.graph import GraphError, build_graph
from plugin_api import CreateAction, Entity, Field, FieldType, Projection, hookimpl
from plugin_api.testing import SharedHarness, TenantHost

QUEUE = "helpdesk.ticket.queue"
V14 = {"acceptSchemaVersions": "1.4.0"}
V15 = {"acceptSchemaVersions": "1.5.0"}


class Notes:
    """A plugin that declares no label at all (or the given bad ones)."""

    def __init__(self, entity_label: Any = None, plugin_label: Any = None) -> None:
        self.entity_label = entity_label
        if plugin_label is not None:
            self.TESSERA_PLUGIN_LABEL = plugin_label

    @hookimpl
    def tessera_entities(self) -> tuple[Entity, ...]:
        text = Field(name="text", type=FieldType.STRING)
        return (Entity(fqn="notes.sticky_note", fields=(text,), label=self.entity_label),)

    @hookimpl
    def tessera_actions(self) -> tuple[CreateAction, ...]:
        return (
            CreateAction(
                fqn="notes.sticky_note.jot_down", entity="notes.sticky_note", inputs=("text",)
            ),
        )

    @hookimpl
    def tessera_projections(self) -> tuple[Projection, ...]:
        return (
            Projection(
                fqn="notes.sticky_note.all_notes",
                entity="notes.sticky_note",
                fields=("id", "text"),
                actions=("notes.sticky_note.jot_down",),
            ),
        )


NOTES = Notes()


async def test_the_samples_declared_labels_at_1_5_0(samples: TenantHost) -> None:
    document = (await samples.client().projection(QUEUE, query=V15)).json
    assert document["schemaVersion"] == "1.5.0"
    assert document["labels"] == {
        "plugin": "Helpdesk",
        "entity": "Ticket",
        "projection": "Ticket queue",
        "displayField": "title",
    }
    labels = {a["name"]: a["label"] for a in document["actions"]}
    assert labels == {"create": "New ticket", "start": "Start", "escalate": "Escalate to urgent"}
    older = (await samples.client().projection(QUEUE, query=V14)).json
    assert "labels" not in older
    assert [a["label"] for a in older["actions"]] == ["Create", "Start", "Escalate"]  # as before
    again = (await samples.client().projection(QUEUE, query=V14)).json
    assert again["actions"] == older["actions"]  # the template's descriptors were not changed


async def test_undeclared_labels_are_humanised(tessera_shared: SharedHarness) -> None:
    host = await tessera_shared.start(plugins=[], extra=[("sticky_notes", NOTES)])
    fqn = "notes.sticky_note.all_notes"
    document = (await host.client().projection(fqn, query=V15)).json
    assert document["labels"] == {
        "plugin": "Sticky notes",
        "entity": "Sticky note",
        "projection": "All notes",
        "displayField": None,
    }
    assert [a["label"] for a in document["actions"]] == ["Jot down"]  # 1.4.0: "Jot_down"
    openapi = (await host.client().request("GET", "/openapi.json")).json
    summaries = [op["summary"] for path in openapi["paths"].values() for op in path.values()]
    assert "All notes (Sticky note): render notes.sticky_note.all_notes" in summaries
    assert "Jot down (Sticky note): invoke notes.sticky_note.jot_down" in summaries


async def test_openapi_summaries_name_the_declared_labels(samples: TenantHost) -> None:
    openapi = (await samples.client().request("GET", "/openapi.json")).json
    summaries = [op.get("summary") for path in openapi["paths"].values() for op in path.values()]
    assert "Ticket queue (Ticket): render helpdesk.ticket.queue" in summaries
    assert "Escalate to urgent (Ticket): invoke helpdesk.ticket.escalate" in summaries


@pytest.mark.parametrize(
    ("notes", "expected"),
    [
        (Notes(entity_label=""), "'notes.sticky_note': label '' must be one line of text"),
        (Notes(entity_label="a\nb"), "must be one line of text, not blank"),
        (Notes(entity_label="x" * 81), "is longer than 80 characters"),
        (Notes(plugin_label=7), "TESSERA_PLUGIN_LABEL: label 7 must be one line of text"),
    ],
)
def test_a_bad_label_refuses_the_graph_naming_it(notes: Notes, expected: str) -> None:
    with pytest.raises(GraphError) as caught:
        build_graph(extra=[("sticky_notes", notes)], entry_points=False)
    assert expected in str(caught.value)
