"""``tessera new-plugin NAME``: a new plugin project from the template beside this module.

The project is an installable distribution ``tessera-NAME`` (package ``tessera_NAME``) with
an entity ``NAME.item``, its workflow, create/update/transition actions, list and detail
projections, tests on the host's pytest harness (pytest-asyncio's mode set in its own
``pyproject.toml``), a tox file and a README. Its tests pass on first run.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from plugin_api.version import PLUGIN_API_VERSION

__all__ = ["NAME_PATTERN", "new_plugin"]

NAME_PATTERN: Final = re.compile(r"[a-z][a-z0-9]{0,30}")
"""A plugin name: the FQN domain of its definitions, so one lower-case word."""

TEMPLATE: Final = Path(__file__).with_name("template")
SUFFIX: Final = ".tmpl"


def _render(text: str, name: str) -> str:
    return (
        text.replace("{{name}}", name)
        .replace("{{Name}}", name.capitalize())
        .replace("{{api}}", PLUGIN_API_VERSION)
    )


def new_plugin(name: str, parent: Path) -> Path:
    """Write the project ``tessera-<name>`` under ``parent`` and return its directory.

    :raises ValueError: for a name that is not one lower-case word, or an existing target.
    """
    if NAME_PATTERN.fullmatch(name) is None:
        raise ValueError(
            f"plugin name {name!r}: use one lower-case word of letters and digits "
            "(it becomes the domain of every FQN, such as 'NAME.item.create')"
        )
    target = parent / f"tessera-{name}"
    if target.exists():
        raise ValueError(f"{target} already exists")
    for source in sorted(TEMPLATE.rglob("*" + SUFFIX)):
        relative = source.relative_to(TEMPLATE).with_suffix("")
        parts = [f"tessera_{name}" if part == "package" else part for part in relative.parts]
        destination = target.joinpath(*parts)
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_text(_render(source.read_text(encoding="utf-8"), name), "utf-8")
    (target / f"tessera_{name}" / "py.typed").touch()
    return target
