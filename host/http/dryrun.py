"""The ``dryRun`` query parameter of ``POST {prefix}/actions/{fqn}`` (docs/http.md, "Dry
runs")."""

from __future__ import annotations

from typing import Final

from host.query.params import Args
from plugin_api.errors import BadRequest

__all__ = ["DRY_RUN", "dry_run_requested"]

DRY_RUN: Final = "dryRun"


def dry_run_requested(args: Args) -> bool:
    """Whether the request asks for a dry run: ``dryRun=true`` (``false`` or absent: no).

    :raises BadRequest: any other value, or the parameter given twice.
    """
    values = args.getlist(DRY_RUN)
    if not values:
        return False
    if len(values) > 1 or values[0] not in ("true", "false"):
        raise BadRequest(f"Parameter '{DRY_RUN}' must be given once, as true or false")
    return values[0] == "true"
