"""Words for people (plugin API 1.10): the labels a renderer shows for a plugin, an entity, a
projection and an action.

Declare them as ``label=`` on :class:`~plugin_api.definitions.Entity`,
:class:`~plugin_api.definitions.Projection` and the actions, and for the plugin itself as a
module attribute beside ``TESSERA_PLUGIN_API``::

    TESSERA_PLUGIN_LABEL = "Helpdesk"

A label is one line of at most :data:`MAX_LABEL_LENGTH` characters, not blank. Without one,
renderers get the humanised last part of the name (``helpdesk.ticket.queue`` -> ``Queue``,
``billing`` -> ``Billing``). Labels are shown in the console, in the ViewSchema 1.5.0
``labels`` and as the OpenAPI operations' summaries; they change no stored data and no
answer of an older ViewSchema version.
"""

from __future__ import annotations

from typing import Final

__all__ = ["LABEL_ATTRIBUTE", "MAX_LABEL_LENGTH"]

LABEL_ATTRIBUTE: Final = "TESSERA_PLUGIN_LABEL"
"""The plugin module's attribute naming the plugin for people."""

MAX_LABEL_LENGTH: Final = 80
"""The longest label the host accepts (a longer one refuses the graph)."""
