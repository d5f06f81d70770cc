"""``docs/writing-plugins.md`` is checked against the code: every Python or TOML block is a
marked region of a tested source file (``# docs:start NAME`` ... ``# docs:end NAME``), every
region is shown, and every hook, public name, definition parameter, context member, error and
harness entry point is documented."""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import pytest

import plugin_api
import plugin_api.definitions as definitions
import plugin_api.hookspecs as hookspecs
import plugin_api.testing as testing
from plugin_api.errors import ALL_ERRORS, EXTENDED_ERRORS

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "docs" / "writing-plugins.md").read_text()
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
DECLARATION = re.compile(r"# (\S+): ([a-z0-9-]+)$")
MARKER = re.compile(r"^# docs:(start|end) ([a-z0-9-]+)$", re.MULTILINE)
SOURCES = sorted(
    path
    for pattern in ("sample_plugins/*/pyproject.toml", "sample_plugins/**/*.py")
    for path in ROOT.glob(pattern)
)


def regions(path: Path) -> dict[str, str]:
    """The marked regions of a file, without the markers and surrounding blank lines."""
    text = path.read_text()
    found: dict[str, str] = {}
    open_at: dict[str, int] = {}
    for marker in MARKER.finditer(text):
        kind, name = marker.groups()
        if kind == "start":
            assert name not in open_at and name not in found, f"{path}: region {name} twice"
            open_at[name] = marker.end()
        else:
            found[name] = text[open_at.pop(name) : marker.start()].strip("\n")
    assert not open_at, f"{path}: unclosed regions {sorted(open_at)}"
    return found


def code_blocks() -> list[tuple[str, str]]:
    return [(lang, body) for lang, body in FENCE.findall(GUIDE) if lang in ("python", "toml")]


def mentioned(name: str) -> bool:
    """``name`` appears inside a code span of the guide."""
    return re.search(rf"`[^`\n]*\b{re.escape(name)}\b[^`\n]*`", GUIDE) is not None


@pytest.mark.parametrize("block", range(len(code_blocks())))
def test_code_block_is_a_tested_region(block: int) -> None:
    _, body = code_blocks()[block]
    first, _, code = body.partition("\n")
    declared = DECLARATION.fullmatch(first)
    assert declared, f"code block {block} does not name its region: {first!r}"
    path, name = declared.groups()
    assert code.rstrip("\n") == regions(ROOT / path)[name], f"{path}: {name} drifted"


def test_every_region_is_shown() -> None:
    shown = {DECLARATION.fullmatch(body.partition("\n")[0]).groups() for _, body in code_blocks()}  # type: ignore[union-attr]
    marked = {(str(p.relative_to(ROOT)), name) for p in SOURCES for name in regions(p)}
    assert marked and marked == shown


def test_every_hook_has_a_section() -> None:
    hooks = [name for name, _ in inspect.getmembers(hookspecs, inspect.isfunction)
             if name.startswith(plugin_api.PROJECT_NAME + "_")]  # fmt: skip
    assert len(hooks) == 11
    for hook in hooks:
        assert f"\n### `{hook}`\n" in GUIDE, hook
        assert "Result rule" in GUIDE.split(f"### `{hook}`")[1].split("\n### ")[0], hook


def test_every_public_name_is_documented() -> None:
    assert [name for name in plugin_api.__all__ if not mentioned(name)] == []


def test_definitions_field_types_and_context_are_documented() -> None:
    classes = [cls for cls in vars(definitions).values() if dataclasses.is_dataclass(cls)]
    assert len(classes) == 9
    parameters = {f.name for cls in classes for f in dataclasses.fields(cls)}
    members = {m.name for m in definitions.FieldType} | {m.value for m in definitions.FieldType}
    members |= {m.name for m in definitions.StampSource}
    members |= {n for n in vars(plugin_api.ActionContext) if not n.startswith("_")}
    members |= {n for n in vars(plugin_api.QueryHandle) if not n.startswith("_")}
    members |= {"literal", "actor", "now", *definitions.SYSTEM_FIELDS}
    assert sorted(name for name in parameters | members if not mentioned(name)) == []


def test_every_error_is_in_the_table() -> None:
    for error in (*ALL_ERRORS, *EXTENDED_ERRORS):
        assert f"| `{error.__name__}` | {error.status} |" in GUIDE, error.__name__


def test_the_harness_is_documented() -> None:
    api = {"tessera", "tessera_database_url", "TESSERA_TEST_BACKEND", "TESSERA_TEST_POSTGRES_URL"}
    for cls in (testing.TesseraHarness, testing.Host, testing.Client, testing.Result):
        api |= {name for name in vars(cls) if not name.startswith("_")}
    api -= {"app", "database_url", "tenant", "actor", "roles"}  # attributes, not API
    assert sorted(name for name in api if not mentioned(name)) == []
