"""The compatibility corpus: plugins published for older plugin APIs keep working.

``dists/`` holds four plugins written as an outsider would, against docs/writing-plugins.md
as it stood at plugin API 1.0 (``chores``), 1.3 (``library``), 1.5 (``tracker``, the board
of issue 37) and 1.7 (``expenses``); each is a distribution of its own with its own tests on
the harness. They are frozen: a change that breaks one is wrong, or needs plugin API 2.0
(docs/compatibility.md). Installed once per session with pip (``corpus_site``), each must
pass its own tests, compile with ``tessera check`` (the warnings and deprecations it earns
listed) and be served by a real ``tessera serve``, on the run's backend.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import CORPUS, DISTS, Caller, Served, corpus_env

pytestmark = pytest.mark.slow

LISTS = {"acceptSchemaVersions": "1.1.0"}
SHOWN_RULE = "rule 'a list filters, sorts and searches only fields it shows' (plugin API 1.7)"
READERS = {
    "chores": ("smiths", "mum", "parent"),
    "library": ("town", "lisa", "librarian,head"),
    "tracker": ("acme", "ada", "admin,member"),
    "expenses": ("corp", "meg", "manager,finance,employee"),
}
"""Per plugin: a tenant and an identity that may read every projection of it."""


def _host(served: Served, *args: str) -> subprocess.CompletedProcess[str]:
    env = corpus_env(
        served.site,
        TESSERA_DATABASE_URL=served.database,
        TESSERA_PLUGINS_ONLY=",".join(CORPUS),
    )
    return subprocess.run(
        [sys.executable, "-m", "host", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_each_corpus_plugin_passes_its_own_tests(corpus_site: Path, tmp_path: Path) -> None:
    """Each plugin's tests, with its own pytest configuration, against the installed
    distribution, all four at once. Each run has a temporary root of its own: pytest
    sessions sharing one remove each other's old directories at exit, and a removal that
    races another fails the session (stop 47's CI)."""
    for name in CORPUS:
        (tmp_path / name).mkdir()
    runs = {
        name: subprocess.Popen(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "."],
            cwd=DISTS / name / "tests",
            env=corpus_env(corpus_site, PYTEST_DEBUG_TEMPROOT=str(tmp_path / name)),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for name in CORPUS
    }
    for name, run in runs.items():
        output, _ = run.communicate(timeout=600)
        assert run.returncode == 0, f"{name}:\n{output[-8000:]}"
        assert f"rootdir: {DISTS / name}" in output and "configfile: pyproject.toml" in output
        assert re.search(r"=+ \d+ passed in ", output.splitlines()[-1]), output[-2000:]


def test_check_lists_what_each_plugin_is_warned_of(served: Served) -> None:
    done = _host(served, "check")
    assert done.returncode == 0, done.stderr
    health = httpx.get(f"{served.base_url}/api/_health", timeout=10).json()
    assert done.stdout.strip() == f"ok {health['graphHash']}"
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning: ")]
    by_plugin = {name: [w for w in warnings if f"plugin {name!r}" in w] for name in CORPUS}
    # The board of issue 37 and its neighbours: seven filters, sorts and searches on five
    # fields the lists do not show (one warning per list and field), each still working.
    tracker = by_plugin["tracker"]
    assert len(tracker) == 5 and all(SHOWN_RULE in w for w in tracker), tracker
    assert all(w.endswith("then require plugin API 1.7 or later") for w in tracker)
    assert all("so the listing works as declared" in w for w in tracker), tracker
    declared = [re.search(r"listing declares (.+?) on '", w) for w in tracker]
    assert sum(len(re.findall(r"\ba (filter|sort|search)\b", d[1])) for d in declared if d) == 7
    library = by_plugin["library"]
    (summary,) = [w for w in library if SHOWN_RULE in w]
    assert "a search on 'summary'" in summary and "'library.book.detail' shows" in summary
    deprecated = sorted(
        re.sub(r"\.py:\d+", ".py", w.split(": ", 2)[2]) for w in library if w not in (summary,)
    )
    assert deprecated == [
        "lending.py uses Condition(op=...), deprecated since plugin API 1.6: it will be "
        "removed in plugin API 2.0; use Condition(operator=...)",
        "lending.py uses RowCondition, deprecated since plugin API 1.6: it will be removed in "
        "plugin API 2.0; use Condition (the same class)",
        "plugin.py uses FilterOperator, deprecated since plugin API 1.6: it will be removed in "
        "plugin API 2.0; use Operator (the same enum)",
    ]
    assert by_plugin["chores"] == [] and by_plugin["expenses"] == []


REQUIRING_1_8 = """
import tessera_tracker.plugin as tracker
from host.graph import GraphError, build_graph

tracker.TESSERA_PLUGIN_API = "1.8"
try:
    build_graph(extra=[("tracker", tracker)], entry_points=False)
except GraphError as error:
    print("\\n".join(error.errors))
"""


def test_the_tracker_requiring_1_8_is_refused_with_the_current_errors(corpus_site: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", REQUIRING_1_8],
        env=corpus_env(corpus_site), capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    errors = done.stdout.splitlines()
    assert len(errors) == 7, done.stdout + done.stderr
    assert all(
        e.startswith("plugin 'tracker': projection 'tracker.")
        and e.endswith(
            "which the projection does not show (it would reveal the field's values); show the "
            "field or leave it out"
        )
        for e in errors
    ), errors


def _ok(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _act(caller: Caller, fqn: str, subject: str | None = None, **inputs: Any) -> Any:
    ref = None
    if subject is not None:
        entity = fqn.rsplit(".", 1)[0]
        ref = {"tenantId": caller.tenant, "entityFqn": entity, "identityHandle": subject}
    return _ok(caller.post(f"/actions/{fqn}", {"subject": ref, "inputs": inputs}))["outputs"]


def _chores(served: Served) -> None:
    mum = served.caller("smiths", "mum", "parent")
    tom = served.caller("smiths", "tom", "kid")
    chore = _act(mum, "chores.chore.add", title="Mow the lawn", outdoor=True)["id"]
    assert _act(tom, "chores.chore.take", chore, notes="saturday")["notes"] == "saturday"
    assert _act(tom, "chores.chore.finish", chore)["receipt"] == "R-0001"
    _act(mum, "chores.chore.double", _act(mum, "chores.chore.add", title="Dishes")["id"])


def _library(served: Served) -> None:
    lisa = served.caller(*READERS["library"])
    max_ = served.caller("town", "max", "member")
    book = _act(
        lisa,
        "library.book.add",
        title="Castles",
        author="B. Stone",
        shelf="history",
        summary="Dragons guard the keep",
    )["id"]
    loan = _act(lisa, "library.loan.lend", book=book, borrower="max", due_at="2031-01-01T00:00:00Z")
    assert _act(max_, "library.loan.give_back", loan["id"])["state"] == "returned"
    found = _ok(lisa.get("/projections/library.book.catalogue", params={**LISTS, "q": "dragon"}))
    assert [row["title"] for row in found["data"]["items"]] == ["Castles"]


def _tracker(served: Served) -> None:
    ada = served.caller(*READERS["tracker"])
    project = _act(ada, "tracker.project.create", key="OPS", name="Operations")["id"]
    issue = _act(ada, "tracker.issue.open", project=project, title="Disk full")["id"]
    _act(ada, "tracker.comment.add", issue=issue, text="Cleaned /tmp")
    deadline = time.monotonic() + 30  # the server's dispatcher counts it after the commit
    detail = f"/projections/tracker.issue.detail?subject={issue}"
    while _ok(ada.get(detail))["data"]["item"]["comments"] != 1:
        assert time.monotonic() < deadline, "the comment was never counted"
        time.sleep(0.1)
    _act(ada, "tracker.issue.start", issue)
    since = _ok(ada.get(detail))["data"]["item"]["created_at"]
    board = ada.get(
        "/projections/tracker.issue.board",
        params={**LISTS, "filter.created_at.gte": since, "sort": "-updated_at"},
    )
    assert [row["id"] for row in _ok(board)["data"]["items"]] == [issue]


def _expenses(served: Served) -> None:
    eve = served.caller("corp", "eve", "employee")
    meg = served.caller("corp", "meg", "manager")
    fin = served.caller("corp", "fin", "finance")
    claim = _act(
        eve,
        "expenses.claim.file",
        title="Hotel",
        category="travel",
        amount={"amount": "120.00", "currency": "EUR"},
        spent_at="2031-05-01T20:00:00Z",
    )["id"]
    _act(eve, "expenses.claim.submit", claim)
    _act(meg, "expenses.claim.approve", claim)
    ref = {"tenantId": "corp", "entityFqn": "expenses.claim", "identityHandle": claim}
    rehearsal = fin.post(
        "/actions/expenses.claim.pay", {"subject": ref, "inputs": {}}, params={"dryRun": "true"}
    )
    assert _ok(rehearsal)["outputs"]["reference"] == "EXP-00001"
    assert _act(fin, "expenses.claim.pay", claim)["reference"] == "EXP-00001"


FLOWS: dict[str, Callable[[Served], None]] = {
    "chores": _chores,
    "library": _library,
    "tracker": _tracker,
    "expenses": _expenses,
}


def test_the_corpus_is_served_over_http(served: Served) -> None:
    """Each plugin's actions through a real ``tessera serve``, then every projection of the
    graph in list form (v0.1 and 1.1.0) and in detail form of a row it lists."""
    for flow in FLOWS.values():
        flow(served)
    graph = json.loads(_host(served, "graph").stdout)["graph"]["definitions"]
    projections = [d["attributes"] for d in graph if d["kind"] == "projection"]
    assert {p["fqn"].split(".")[0] for p in projections} == set(CORPUS)
    for projection in projections:
        fqn = projection["fqn"]
        reader = served.caller(*READERS[fqn.split(".")[0]])
        plain = _ok(reader.get(f"/projections/{fqn}"))
        assert plain["schemaVersion"] == "1.0.0" and plain["data"]["items"], fqn
        listed = _ok(reader.get(f"/projections/{fqn}", params=LISTS))
        assert {row["id"] for row in listed["data"]["items"]} == {
            row["id"] for row in plain["data"]["items"]
        }
        first = plain["data"]["items"][0]["id"]
        assert _ok(reader.get(f"/projections/{fqn}", params={"subject": first}))["data"]["item"]
    assert "Traceback" not in served.log.read_text()
