"""Every error kind lives in ``plugin_api.errors``: each error class the host can answer with
is defined there and listed in the spec's table (``ALL_ERRORS``) or the host's additions
(``EXTENDED_ERRORS``), and the additions keep their wire status and kind."""

from __future__ import annotations

import importlib
import pkgutil

import host
import plugin_api
from plugin_api import errors
from plugin_api.errors import ALL_ERRORS, EXTENDED_ERRORS, TesseraError

# Importing these runs something: the ``tessera`` command, a Hypercorn worker's app.
RUN_ON_IMPORT = {"host.__main__", "host.asgi"}


def subclasses(cls: type[TesseraError]) -> set[type[TesseraError]]:
    found = set(cls.__subclasses__())
    for sub in tuple(found):
        found |= subclasses(sub)
    return found


def test_every_error_class_is_defined_and_listed_in_plugin_api_errors() -> None:
    for module in pkgutil.walk_packages(host.__path__, "host."):
        if module.name not in RUN_ON_IMPORT:
            importlib.import_module(module.name)
    defined = subclasses(TesseraError)
    assert sorted(c.__qualname__ for c in defined if c.__module__ != errors.__name__) == []
    assert defined == {*ALL_ERRORS, *EXTENDED_ERRORS}
    assert not set(ALL_ERRORS) & set(EXTENDED_ERRORS)


def test_the_additions_keep_their_status_and_kind() -> None:
    assert [(e.__name__, e.status, e.kind) for e in EXTENDED_ERRORS] == [
        ("UnsupportedMediaType", 415, "BadRequest"),
        ("IdempotencyKeyReused", 422, "IdempotencyKeyReused"),
        ("DryRunUnsupported", 422, "DryRunUnsupported"),
        ("ServiceUnavailable", 503, "ServiceUnavailable"),
        ("Unauthenticated", 401, "Unauthenticated"),
        ("OwnershipDenied", 403, "PolicyDenied"),
    ]
    assert {e.__name__ for e in (*ALL_ERRORS, *EXTENDED_ERRORS)} <= set(plugin_api.__all__)
