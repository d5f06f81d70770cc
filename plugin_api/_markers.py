"""The pluggy markers and names that tie plugins to the host."""

from __future__ import annotations

import pluggy

PROJECT_NAME = "tessera"
"""The pluggy project name: every hook is called ``tessera_<something>``."""

ENTRY_POINT_GROUP = "tessera.plugins"
"""The entry-point group through which installed distributions register plugins."""

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
"""Marker for hook specifications (used by the host only)."""

hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
"""Marker a plugin puts on each of its hook implementations."""
