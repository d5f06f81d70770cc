"""Labels for people (plugin API 1.10, :mod:`plugin_api.labels`): the declared ``label`` of
plugins, entities, projections and actions, checked at compile time, else the humanised last
part of the name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from host.plugins import LoadedPlugins, PluginInfo
from plugin_api.labels import LABEL_ATTRIBUTE, MAX_LABEL_LENGTH

__all__ = ["check_label", "humanised", "label_of", "plugin_labels"]


def humanised(name: str) -> str:
    """The last part of a dotted name in words: ``helpdesk.ticket.due_soon`` -> ``Due soon``."""
    words = name.rsplit(".", 1)[-1].strip("_").replace("_", " ")
    return words[:1].upper() + words[1:]


def label_of(definition: Any) -> str:
    """The declared ``label`` of a definition (an entity, projection or action), else its
    FQN humanised."""
    declared = getattr(definition, "label", None)
    return declared if isinstance(declared, str) else humanised(definition.fqn)


def check_label(value: object, say: Callable[[str], None]) -> None:
    """Refuse a label that is not one non-blank line of at most MAX_LABEL_LENGTH characters."""
    if value is None:
        return
    if not isinstance(value, str) or not value.strip() or "\n" in value or "\r" in value:
        say(f"label {value!r} must be one line of text, not blank")
    elif len(value) > MAX_LABEL_LENGTH:
        say(f"label {value[:20]!r}... is longer than {MAX_LABEL_LENGTH} characters")


def plugin_labels(
    loaded: LoadedPlugins, say: Callable[[PluginInfo], Callable[[str], None]]
) -> Mapping[str, str]:
    """Plugin name -> its label (``TESSERA_PLUGIN_LABEL``, else the name humanised);
    ``say(plugin)`` reports a bad one."""
    labels = {}
    for info, plugin in loaded.plugins:
        declared = getattr(plugin, LABEL_ATTRIBUTE, None)
        check_label(declared, say(info))
        labels[info.name] = declared if isinstance(declared, str) else humanised(info.name)
    return labels
