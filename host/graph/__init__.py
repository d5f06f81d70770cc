"""The compiled metadata graph: model, compiler and canonical hash.

:func:`build_graph` is the one call the rest of the host needs: discover and load the
plugins, then compile them.
"""

from __future__ import annotations

from collections.abc import Sequence

from host.config import Settings
from host.graph.compiler import GraphError, compile_graph
from host.graph.model import Graph
from host.plugins import load_plugins

__all__ = ["Graph", "GraphError", "build_graph", "compile_graph"]


def build_graph(
    settings: Settings | None = None,
    *,
    extra: Sequence[tuple[str, object]] = (),
    entry_points: bool = True,
) -> Graph:
    """Load the plugins (see :func:`host.plugins.load_plugins`) and compile their graph.

    :raises GraphError: listing every problem found, loader errors included.
    """
    return compile_graph(load_plugins(settings, extra=extra, entry_points=entry_points))
