"""The deprecated spellings of the plugin API that a graph's plugins use.

A deprecated name keeps working until the major version named for its removal; a plugin
using one gets no Python warning (a plugin's own tests often turn warnings into errors), but
``tessera check`` and the start log list each use, with the version that removes it. The
plugin's source is read, not run: every module of its package (tests excepted), parsed once
per file version. docs/compatibility.md lists the deprecations.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Final

from host.plugins import LoadedPlugins

__all__ = ["DEPRECATED", "Deprecated", "deprecation_warnings", "uses_in"]

MAX_FILES: Final = 200
MAX_BYTES: Final = 1_000_000


@dataclass(frozen=True, kw_only=True, slots=True)
class Deprecated:
    """A spelling of the plugin API that still works and will go."""

    spelling: str
    since: str
    """The plugin API that deprecated it."""
    removal: str
    """The plugin API that will no longer have it."""
    instead: str


ROW_CONDITION: Final = Deprecated(
    spelling="RowCondition", since="1.6", removal="2.0", instead="Condition (the same class)"
)
FILTER_OPERATOR: Final = Deprecated(
    spelling="FilterOperator", since="1.6", removal="2.0", instead="Operator (the same enum)"
)
OP_KEYWORD: Final = Deprecated(
    spelling="Condition(op=...)", since="1.6", removal="2.0", instead="Condition(operator=...)"
)
DEPRECATED: Final = (ROW_CONDITION, FILTER_OPERATOR, OP_KEYWORD)
"""Every deprecated spelling (``condition.op``, read as an attribute, cannot be told from
other ``.op`` attributes in source: docs/compatibility.md lists it without a check)."""

_NAMES: Final = {ROW_CONDITION.spelling: ROW_CONDITION, FILTER_OPERATOR.spelling: FILTER_OPERATOR}
_CONDITIONS: Final = frozenset({"Condition", "RowCondition"})


def _imports_plugin_api(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("plugin_api"):
            return True
        if isinstance(node, ast.Import) and any(
            alias.name.startswith("plugin_api") for alias in node.names
        ):
            return True
    return False


def _named(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.alias):
        return node.name
    return None


def uses_in(source: str) -> tuple[tuple[Deprecated, int], ...]:
    """Each deprecated spelling a module's ``source`` uses, with its first line (none for a
    module that imports nothing of ``plugin_api``, or does not parse)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ()
    if not _imports_plugin_api(tree):
        return ()
    found: dict[Deprecated, int] = {}
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        deprecated = _NAMES.get(_named(node) or "")
        if (
            deprecated is None
            and isinstance(node, ast.Call)
            and _named(node.func) in _CONDITIONS
            and any(k.arg == "op" for k in node.keywords)
        ):
            deprecated = OP_KEYWORD
        if deprecated is not None and (deprecated not in found or line < found[deprecated]):
            found[deprecated] = line
    return tuple(sorted(found.items(), key=lambda item: (item[1], item[0].spelling)))


@functools.lru_cache(maxsize=1024)
def _file_uses(path: str, _mtime: int, _size: int) -> tuple[tuple[Deprecated, int], ...]:
    try:
        return uses_in(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return ()


def _module_of(plugin: object) -> ModuleType | None:
    if isinstance(plugin, ModuleType):
        return plugin
    return sys.modules.get(getattr(type(plugin), "__module__", ""))


def _files(plugin: object) -> Iterator[Path]:
    """The source files of ``plugin``: every module of its top-level package (outside
    ``tests`` folders), or its own module's file."""
    module = _module_of(plugin)
    if module is None or module.__name__.partition(".")[0] in sys.stdlib_module_names:
        return
    top = sys.modules.get(module.__name__.partition(".")[0])
    root = getattr(top, "__file__", None)
    if top is not None and root and hasattr(top, "__path__"):
        folder = Path(root).parent
        found = (
            path
            for path in sorted(folder.rglob("*.py"))
            if not {"tests", "test"} & set(path.relative_to(folder).parts[:-1])
        )
        for count, path in enumerate(found):
            if count == MAX_FILES:
                return
            yield path
    elif getattr(module, "__file__", None):
        yield Path(str(module.__file__))


def deprecation_warnings(loaded: LoadedPlugins) -> tuple[str, ...]:
    """One line per deprecated spelling an installed plugin (one loaded from a distribution)
    uses, naming the file and line, the plugin API that removes it and what to use
    instead."""
    lines: list[str] = []
    for info, plugin in loaded.plugins:
        if info.distribution is None:
            continue  # not an installed distribution (a test's plugin object)
        seen: set[Deprecated] = set()
        for path in _files(plugin):
            try:
                stat = path.stat()
            except OSError:
                continue
            if stat.st_size > MAX_BYTES:
                continue
            for deprecated, line in _file_uses(str(path), stat.st_mtime_ns, stat.st_size):
                if deprecated in seen:
                    continue
                seen.add(deprecated)
                lines.append(
                    f"{info.describe()}: {path.name}:{line} uses {deprecated.spelling}, "
                    f"deprecated since plugin API {deprecated.since}: it will be removed in "
                    f"plugin API {deprecated.removal}; use {deprecated.instead}"
                )
    return tuple(lines)
