"""Workflow diagrams: ``tessera graph --format mermaid|dot``, and the diagrams shown in the
guide and the sample plugins' READMEs are the ones the current graph draws."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from host import cli
from host.config import Settings
from host.diagrams import render, render_entity
from host.graph import build_graph
from host.graph.model import Graph

ROOT = Path(__file__).resolve().parents[2]
SHOWN = ("docs/writing-plugins.md", "sample_plugins/helpdesk/README.md",
         "sample_plugins/billing/README.md")  # fmt: skip
DIAGRAM = re.compile(r"<!-- diagram (\S+) -->\n(.*?)<!-- /diagram -->", re.S)


@pytest.fixture(scope="module")
def graph() -> Graph:
    return build_graph(Settings(plugins_only=("helpdesk", "billing")))


@pytest.mark.parametrize("path", SHOWN)
def test_shown_diagrams_are_current(graph: Graph, path: str) -> None:
    shown = DIAGRAM.findall((ROOT / path).read_text())
    assert shown, f"{path} shows no diagram"
    for fqn, block in shown:
        expected = f"```mermaid\n{render_entity(graph, fqn, 'mermaid')}```\n"
        assert block == expected, f"{path}: the {fqn} diagram is stale; it is now:\n{expected}"


def test_mermaid_draws_states_transitions_actions_and_roles(graph: Graph) -> None:
    text = render_entity(graph, "helpdesk.ticket", "mermaid")
    lines = text.splitlines()
    assert lines[:6] == ["---", "title: helpdesk.ticket", "---", "stateDiagram-v2",
                         "    direction LR", "    [*] --> open"]  # fmt: skip
    # cancel has two sources: one edge each
    assert "    open --> closed: cancel (agent)" in lines
    assert "    in_progress --> closed: cancel (agent)" in lines
    assert "    resolved --> closed: close (agent, requester)" in lines
    assert lines[-1] == "    closed --> [*]"


def test_dot(graph: Graph) -> None:
    text = render_entity(graph, "billing.invoice", "dot")
    assert text.startswith('digraph "billing.invoice" {\n') and text.endswith("}\n")
    assert '    "[*]" -> "draft";' in text
    assert '    "issued" -> "paid" [label="pay (clerk, accountant)"];' in text
    assert '    "void" [label="void", peripheries=2];' in text


def test_cli(
    graph: Graph, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TESSERA_PLUGINS_ONLY", "helpdesk,billing")
    for fmt in ("mermaid", "dot"):
        assert cli.main(["graph", "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert out == render(graph, fmt)
        assert out.index("billing.invoice") < out.index("helpdesk.ticket")
