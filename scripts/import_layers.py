"""Which host modules import each layer, as the import-linter contract declares the layers.

    python scripts/import_layers.py [SOURCE_TREE]

The layers are read from this repository's ``pyproject.toml`` (the ``layers`` contract whose
container is ``host``); the imports from the ``host`` and ``plugin_api`` packages of
``SOURCE_TREE`` (default: this repository), so an older checkout can be measured against
today's layering. Every import counts, as for ``lint-imports``: those inside functions and
under ``TYPE_CHECKING`` too. For each layer, bottom up: the host modules of other layers that
import it, by their layer; an importer from a lower layer (an upward import, which the
contract forbids) is marked ``UP``. ``plugin_api`` (the public contract, below every layer of
the host) is listed first; a host module no layer declares is reported at the end.

Standard library only (``tomllib``: Python 3.11 or later).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("host", "plugin_api")
PUBLIC = "plugin_api"
LABELS = {"config": "ground", "fieldtypes": "values", "service": "service", "http": "http+cli"}
"""Short names of the layers of several modules, by a module they hold."""


def declared_layers(pyproject: Path) -> list[tuple[str, ...]]:
    """The host layers bottom up, each the module names (tails under ``host``) it holds."""
    config = tomllib.loads(pyproject.read_text())["tool"]["importlinter"]
    for contract in config["contracts"]:
        if contract["type"] == "layers" and contract.get("containers") == ["host"]:
            layers = []
            for layer in reversed(contract["layers"]):
                separator = "|" if "|" in layer else ":"
                layers.append(tuple(t.strip().strip("()") for t in layer.split(separator)))
            return layers
    raise SystemExit(f"{pyproject}: no layers contract with containers = ['host']")


def modules(tree: Path) -> dict[str, Path]:
    """Module name -> file, for every module of the packages in ``tree``."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((tree / package).rglob("*.py")):
            parts = path.relative_to(tree).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def imported(name: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """The modules of ``known`` that module ``name`` imports (anywhere in its body)."""

    def resolve(target: str) -> str | None:
        while target and target not in known:
            target = target.rpartition(".")[0]
        return target or None

    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            if target.split(".")[0] in PACKAGES and (found := resolve(target)) is not None:
                yield found


def main(argv: list[str]) -> int:
    tree = Path(argv[1]).resolve() if len(argv) > 1 else ROOT
    layers = declared_layers(ROOT / "pyproject.toml")
    known = modules(tree)

    def layer_of(module: str) -> int | None:
        """0 for plugin_api, 1.. for the host layers bottom up, None when undeclared."""
        top, _, rest = module.partition(".")
        if top == PUBLIC:
            return 0
        tail = rest.split(".")[0]
        return next((i for i, tails in enumerate(layers, 1) if tail in tails), None)

    names = ["plugin_api", *(" : ".join(tails) for tails in layers)]
    short = [PUBLIC, *(next((LABELS[t] for t in ts if t in LABELS), ts[0]) for ts in layers)]
    importers: dict[int, dict[str, set[str]]] = {i: {} for i in range(len(names))}
    for module, path in known.items():
        if not module.startswith("host.") or (source := layer_of(module)) is None:
            continue
        for target in imported(module, path, known):
            layer = layer_of(target)
            if layer is not None and layer != source:
                importers[layer].setdefault(module, set()).add(target)

    print(f"imports between layers in {tree} (layers from {ROOT / 'pyproject.toml'})")
    for index, name in enumerate(names):
        found = importers[index]
        upward = sorted(m for m in found if (layer_of(m) or 0) < index)
        print(f"\n{index} {name}: imported by {len(found)} host modules", end="")
        print(f", {len(upward)} of them from below (UP)" if upward else "")
        by_layer: dict[int, list[str]] = {}
        for module in found:
            by_layer.setdefault(layer_of(module) or 0, []).append(module)
        for layer in sorted(by_layer):
            mark = "  UP" if layer < index else ""
            listed = ", ".join(m.removeprefix("host.") for m in sorted(by_layer[layer]))
            print(f"  from {layer} {short[layer]}{mark}: {listed}")
    undeclared = sorted(m for m in known if m.startswith("host.") and layer_of(m) is None)
    if undeclared:
        print(f"\nin no layer: {', '.join(undeclared)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
