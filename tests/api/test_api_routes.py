"""One table routes the app and describes it (issue 40): every URL rule the Quart app has under
the prefix is an endpoint of :data:`host.http.routes.ENDPOINTS` and appears in the served
OpenAPI document with its method (and its ``OPTIONS``), and every operation of the document is
routed; the live stream and the operator's audit routes are among them."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from quart import Quart
from werkzeug.routing import Rule

from host.config import Settings
from host.http import create_app
from host.http.routes import ENDPOINTS
from host.http.site import Site

SAMPLES = ("helpdesk", "billing", "billing_helpdesk")


def _document(app: Quart) -> Any:
    """The document the app serves (no database needed: it is built with the app)."""
    site: Site = app.extensions["tessera.site"]
    return json.loads(site.openapi)


def _pattern(rule: str) -> re.Pattern[str]:
    """A rule (``/projections/<fqn>/history``) as a pattern of the concrete paths it serves."""
    parts = re.split(r"(<[^>]+>)", rule)
    return re.compile("".join("[^/]+" if p.startswith("<") else re.escape(p) for p in parts))


def _under(app: Quart, prefix: str) -> list[Rule]:
    return [rule for rule in app.url_map.iter_rules() if rule.rule.startswith(prefix + "/")]


@pytest.mark.parametrize("prefix", ["/api", "/v1/tessera"])
def test_every_url_rule_under_the_prefix_is_in_the_document(prefix: str) -> None:
    settings = Settings(plugins_only=SAMPLES, api_prefix=prefix, console="on")
    app = create_app(settings)
    document = _document(app)
    paths: dict[str, dict[str, Any]] = document["paths"]
    rules = _under(app, prefix)
    assert {rule.endpoint for rule in rules} == {endpoint.name for endpoint in ENDPOINTS}
    for rule in rules:
        pattern = _pattern(rule.rule[len(prefix) :])
        served = [path for path in paths if pattern.fullmatch(path)]
        assert served, f"{rule.rule} is routed but not in the document"
        for path in served:
            for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
                assert method.lower() in paths[path], (rule.rule, path, method)
            assert "options" in paths[path], path
    # ... and every operation of the document is routed, to the endpoint that describes it.
    adapter = app.url_map.bind("localhost")
    for path, item in paths.items():
        for method in item:
            if method != "options":
                endpoint, _ = adapter.match(prefix + path, method=method.upper())
                assert endpoint in {e.name for e in ENDPOINTS}, (path, method)
    # The console's pages are not under the prefix, and the document says it leaves them out.
    assert any(rule.rule.startswith("/-/console/") for rule in app.url_map.iter_rules())
    assert "console" in document["info"]["description"]


def test_the_live_stream_and_the_audit_routes_are_described() -> None:
    app = create_app(Settings(plugins_only=SAMPLES))
    paths = _document(app)["paths"]
    changes = paths["/changes"]["get"]
    stream = changes["responses"]["200"]
    assert list(stream["content"]) == ["text/event-stream"]
    events = stream["content"]["text/event-stream"]["schema"]["oneOf"]
    assert [event["$ref"].rsplit("/", 1)[1] for event in events] == [
        "ChangeEvent",
        "LeftEvent",
        "ResetEvent",
        "EndEvent",
    ]
    assert stream["headers"]["X-Accel-Buffering"]["schema"] == {"const": "no"}
    names = [p.get("name") or p["$ref"].rsplit("/", 1)[1] for p in changes["parameters"]]
    assert "projection" in names and "shown" in names and "Last-Event-ID" in names
    assert sorted(changes["responses"]) == ["200", "400", "403", "404", "500", "503"]
    for path in ("/_audit/verify", "/_audit/export"):
        audit = paths[path]["get"]
        assert audit["x-tessera-operator"] is True and audit["tags"] == ["operator"]
        assert "PolicyDenied" in json.dumps(audit["responses"]["403"])
    export = paths["/_audit/export"]["get"]["responses"]["200"]["content"]
    assert set(export) == {"application/x-ndjson", "text/csv"}
    assert not any(
        "x-tessera-operator" in op for path, item in paths.items() if not path.startswith("/_audit")
        for op in item.values()
    )  # fmt: skip
