"""A plugin may require a plugin API version; the host checks it when it loads plugins."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from host.config import Settings
from host.graph import GraphError, build_graph
from host.plugins import load_plugins
from plugin_api import PLUGIN_API_VERSION, hookimpl
from plugin_api.version import parse_version, provides


def plugin(required: object) -> SimpleNamespace:
    @hookimpl
    def tessera_entities() -> tuple[()]:
        return ()

    return SimpleNamespace(TESSERA_PLUGIN_API=required, tessera_entities=tessera_entities)


def errors(required: object) -> tuple[str, ...]:
    return load_plugins(Settings(), extra=[("future", plugin(required))], entry_points=False).errors


def test_the_rule() -> None:
    major, minor = parse_version(PLUGIN_API_VERSION)
    assert provides(f"{major}.0") and provides(PLUGIN_API_VERSION)
    assert not provides(f"{major}.{minor + 1}")
    assert not provides(f"{major + 1}.0") and not provides(f"{major - 1}.0")
    for bad in ("1", "1.x", "v1.1", "1.1.0", "\u0661.\u0661"):  # Arabic-Indic digits
        with pytest.raises(ValueError, match=r"MAJOR\.MINOR"):
            parse_version(bad)


def test_a_plugin_that_fits_loads() -> None:
    assert errors(PLUGIN_API_VERSION) == ()
    assert errors("1.0") == ()


def test_a_newer_requirement_is_refused_naming_plugin_and_versions() -> None:
    major, minor = parse_version(PLUGIN_API_VERSION)
    newer = f"{major}.{minor + 1}"
    assert errors(newer) == (
        f"plugin 'future' requires plugin API {newer}, but this host provides plugin API "
        f"{PLUGIN_API_VERSION}: install a tessera-host that provides {newer} (same major "
        f"version, same or later minor), or a release of the plugin made for "
        f"{PLUGIN_API_VERSION}",
    )
    with pytest.raises(GraphError) as refused:
        build_graph(Settings(), extra=[("future", plugin(newer))], entry_points=False)
    assert f"requires plugin API {newer}" in str(refused.value.errors)


@pytest.mark.parametrize("declared", ["2", 1.1, ("1", "1")])
def test_a_malformed_requirement_is_refused(declared: object) -> None:
    (error,) = errors(declared)
    assert error.startswith("plugin 'future': invalid TESSERA_PLUGIN_API")
