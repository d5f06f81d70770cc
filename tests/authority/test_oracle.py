"""One answer for "not yours" and "not there" (issue 39), through HTTP on the backend of the
run: for a row of another tenant, a row the reader's read floor does not admit and an id
that does not exist, every route that names a row answers the same status, kind and message
(the id aside): detail, history, ``asOf``, the availability question, the action (and its
dry run). Live streams name no row (docs/live.md): nothing to tell there."""

from __future__ import annotations

import json
import re
from typing import Any

from plugin_api.testing import Client, SharedHarness, TenantHost

from ._plugins import PLUGINS, REQUEST

_GENERATED = re.compile(r'"generatedAt": "[^"]*"')


def _json(value: Any) -> dict[str, Any]:
    return {"body": json.dumps(value).encode(), "headers": {"Content-Type": "application/json"}}


async def answers(client: Client, row: str) -> list[tuple[int, str]]:
    """What each route answers ``client`` about ``row``, the id replaced by ``<id>``."""
    detail, cancel = f"{REQUEST}.detail", f"{REQUEST}.cancel"
    subject = {"tenantId": client.tenant, "entityFqn": REQUEST, "identityHandle": row}
    found = [
        await client.projection(detail, subject=row),
        await client.history(detail, row),
        await client.projection(detail, subject=row, query={"asOf": "2030-01-01T00:00:00Z"}),
        await client.request(
            "POST", "/availability", **_json({"subjects": [row], "actions": [cancel]})
        ),
        await client.action(cancel, subject=row),
        await client.request(
            "POST",
            f"/actions/{cancel}",
            query={"dryRun": "true"},
            **_json({"subject": subject, "inputs": {}}),
        ),
    ]
    texts = [json.dumps(r.json, sort_keys=True).replace(row, "<id>") for r in found]
    return [(r.status, _GENERATED.sub("", text)) for r, text in zip(found, texts, strict=True)]


async def made(host: TenantHost, client: Client) -> str:
    done = await client.action(f"{REQUEST}.create", inputs={"title": "Laptop"})
    assert done.status == 200, done.json
    return str(done.outputs["id"])


async def test_not_yours_and_not_there_answer_alike(tessera_shared: SharedHarness) -> None:
    host = await tessera_shared.start(plugins=[], extra=PLUGINS, entry_points=False)
    bob = host.client(actor="bob", roles=["buyer"])
    elsewhere = await made(
        host, host.client(tenant=host.new_tenant(), actor="bob", roles=["buyer"])
    )
    not_readable = await made(host, host.client(actor="alice", roles=["buyer"]))
    own = await made(host, bob)
    missing = own[:-4] + ("0000" if not own.endswith("0000") else "1111")

    expected = await answers(bob, missing)
    assert expected[0][0] == 200 and '"item": null' in expected[0][1]
    assert expected[4][0] == 404 and '"NotFound"' in expected[4][1]
    assert await answers(bob, elsewhere) == expected
    assert await answers(bob, not_readable) == expected
    assert (await answers(bob, own))[4][0] == 200  # the reader's own row: the action runs
