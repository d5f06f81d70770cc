"""ViewSchema 1.5.0 labels (plugin API 1.10): the words a person reads for the plugin, the
entity, the projection and each action of a document (docs/http.md, "ViewSchema 1.5.0")."""

from __future__ import annotations

from typing import Any

from host.graph.labels import humanised, label_of
from host.http.viewschema import ViewSchemaTemplate

__all__ = ["labelled_summary", "with_labels"]


def with_labels(document: dict[str, Any], template: ViewSchemaTemplate) -> None:
    """Add ``labels`` (plugin, entity, projection, and the entity's display field: the
    field whose value names a row, ``null`` without one) and give each action its label
    (declared, else humanised), in place (the action descriptors are copied: the
    template's stay as they are)."""
    projection = template.projection
    document["labels"] = {
        "plugin": template.plugin_label or humanised(projection.plugin.name),
        "entity": label_of(projection.entity.definition),
        "projection": label_of(projection.definition),
        "displayField": projection.entity.definition.display,
    }
    words = {action.fqn: label_of(action.definition) for action in projection.actions}
    document["actions"] = [
        {**descriptor, "label": words[descriptor["fqn"]]} for descriptor in document["actions"]
    ]


def labelled_summary(definition: Any, entity: Any, verb: str) -> str:
    """An OpenAPI operation's summary: the labels a person reads, then what it does, e.g.
    ``Ticket queue (Ticket): render helpdesk.ticket.queue``."""
    return f"{label_of(definition)} ({label_of(entity)}): {verb} {definition.fqn}"
