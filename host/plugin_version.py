"""The startup check of the plugin API version each plugin requires."""

from __future__ import annotations

from plugin_api.version import PLUGIN_API_VERSION, REQUIRES_ATTRIBUTE, parse_version, provides

OLDEST = "1.0"
"""The plugin API a plugin that requires nothing was written for: it gets the rules of 1.0."""


def declared_version(plugin: object) -> str:
    """The plugin API version ``plugin`` requires, or :data:`OLDEST` when it requires nothing
    (or something unreadable, which the loader refuses anyway)."""
    required = getattr(plugin, REQUIRES_ATTRIBUTE, None)
    try:
        if isinstance(required, str):
            parse_version(required)
            return required
    except ValueError:
        pass
    return OLDEST


def requires_at_least(plugin: object, version: str) -> bool:
    """Whether ``plugin`` requires plugin API ``version`` or a later one (a plugin that
    requires nothing, or something unreadable, does not)."""
    required = getattr(plugin, REQUIRES_ATTRIBUTE, None)
    try:
        return isinstance(required, str) and parse_version(required) >= parse_version(version)
    except ValueError:
        return False


def api_version_error(plugin_name: str, plugin: object) -> str | None:
    """Why ``plugin`` (described as ``plugin_name``, such as ``plugin 'x' (dist 1.0)``)
    cannot run on this plugin API, naming it and both versions; ``None`` when it can (or
    requires nothing)."""
    required = getattr(plugin, REQUIRES_ATTRIBUTE, None)
    if required is None:
        return None
    try:
        if not isinstance(required, str):
            raise ValueError(f"expected a string such as {PLUGIN_API_VERSION!r}")
        if provides(required):
            return None
    except ValueError as exc:
        return f"{plugin_name}: invalid {REQUIRES_ATTRIBUTE} {required!r}: {exc}"
    return (
        f"{plugin_name} requires plugin API {required}, but this host provides plugin "
        f"API {PLUGIN_API_VERSION}: install a tessera-host that provides {required} "
        "(same major version, same or later minor), or a release of the plugin made for "
        f"{PLUGIN_API_VERSION}"
    )
