"""The baseline: the helpdesk ticket operations written by hand, with no metadata layer.

Same stack and same connection strategy as the host (see ``host/storage/database.py``):

* SQLite: one long-lived writer connection per process behind an ``asyncio.Lock``, each unit
  of work in ``BEGIN IMMEDIATE`` ... ``COMMIT``; WAL; two long-lived read-only connections for
  the projections.
* PostgreSQL: the ``databases``/asyncpg pool (2..10), one pooled connection and one
  transaction per unit of work.
* Every unit of work runs in its own task behind ``asyncio.shield`` (cancellation safety).

Same statements as the host, written as SQL text: create = INSERT row + INSERT audit;
transition and update = SELECT row + ``UPDATE ... WHERE _version = :read RETURNING _version``
+ INSERT audit; detail = SELECT one row; list = SELECT a tenant's rows ORDER BY id. The
responses have the same JSON documents as the host's (the static parts of the ViewSchema are
constants here). Tables are the host's (``helpdesk__ticket``, ``tessera_audit``); the bench
runner creates them.

Served like the host: ``TESSERA_DATABASE_URL=... python -m hypercorn apps.baseline:app``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from decimal import Decimal, InvalidOperation
from typing import Any, TypeVar

import orjson
from databases import Database
from databases.core import Connection
from quart import Quart, Response, request
from ulid import ULID

T = TypeVar("T")

ENTITY = "helpdesk.ticket"
GRAPH_HASH = "0" * 64
JSON = "application/json"
CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
    "Access-Control-Allow-Headers": "Content-Type, X-Tenant-ID, X-Actor-Id, X-Actor-Roles",
    "Access-Control-Max-Age": "600",
}
PRIORITIES = ("low", "normal", "high", "urgent")
STATES = ("open", "in_progress", "resolved", "closed")
EDITABLE = ("title", "description", "priority", "estimate_hours", "due_at", "billable", "budget")
DETAIL_COLUMNS = (
    "id, title, description, priority, estimate_hours, due_at, billable, budget, state, "
    "requester, assignee, resolution, resolved_at, created_at, updated_at, _version"
)
ALL_COLUMNS = "tenant_id, " + DETAIL_COLUMNS

SQL_INSERT = (
    "INSERT INTO helpdesk__ticket (tenant_id, id, created_at, updated_at, _version, title, "
    "description, priority, estimate_hours, due_at, billable, budget, state, requester) "
    "VALUES (:tenant_id, :id, :created_at, :updated_at, :_version, :title, :description, "
    ":priority, :estimate_hours, :due_at, :billable, :budget, :state, :requester)"
)
SQL_AUDIT = (
    "INSERT INTO tessera_audit (id, tenant_id, actor_id, roles, action, entity, subject_id, "
    "inputs, outputs, graph_hash, created_at) VALUES (:id, :tenant_id, :actor_id, :roles, "
    ":action, :entity, :subject_id, :inputs, :outputs, :graph_hash, :created_at)"
)
SQL_SUBJECT = (
    f"SELECT {ALL_COLUMNS} FROM helpdesk__ticket WHERE tenant_id = :tenant_id AND id = :id"
)
SQL_START = (
    "UPDATE helpdesk__ticket SET updated_at = :now, _version = :version, state = :state, "
    "assignee = :assignee WHERE tenant_id = :tenant_id AND id = :id AND _version = :read "
    "RETURNING _version"
)
SQL_DETAIL = (
    f"SELECT {DETAIL_COLUMNS} FROM helpdesk__ticket WHERE tenant_id = :tenant_id AND id = :id"
)
SQL_QUEUE = (
    "SELECT id, title, priority, state, assignee, due_at, created_at FROM helpdesk__ticket "
    "WHERE tenant_id = :tenant_id ORDER BY id"
)


# -- the static parts of the two ViewSchema documents --------------------------------------


def _f(name: str, kind: str, label: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
    field: dict[str, Any] = {"name": name, "type": kind, "label": label}
    if options is not None:
        field["typeOptions"] = options
    return field


def _input(field: dict[str, Any], required: bool, nullable: bool, **default: Any) -> dict:
    return {**field, "required": required, "nullable": nullable, **default}


F = {
    "id": _f("id", "identity", "Id"),
    "title": _f("title", "string", "Title", {"maxLength": 120}),
    "description": _f("description", "string", "Description", {}),
    "priority": _f("priority", "enum", "Priority", {"options": list(PRIORITIES)}),
    "estimate_hours": _f("estimate_hours", "integer", "Estimate (h)"),
    "due_at": _f("due_at", "datetime", "Due at"),
    "billable": _f("billable", "boolean", "Billable"),
    "budget": _f("budget", "money", "Budget", {"currency": "EUR"}),
    "state": _f("state", "enum", "State", {"options": list(STATES)}),
    "requester": _f("requester", "string", "Requester", {}),
    "assignee": _f("assignee", "string", "Assignee", {}),
    "resolution": _f("resolution", "string", "Resolution", {}),
    "resolved_at": _f("resolved_at", "datetime", "Resolved at"),
    "created_at": _f("created_at", "system_string", "Created at"),
    "updated_at": _f("updated_at", "system_string", "Updated at"),
    "_version": _f("_version", "version", "Version"),
}
INPUTS = [
    _input(F["title"], True, False),
    _input(F["description"], False, True),
    _input(F["priority"], False, False, default="normal"),
    _input(F["estimate_hours"], False, True),
    _input(F["due_at"], False, True),
    _input(F["billable"], False, False, default=False),
    _input(F["budget"], False, True),
]


def _action(name: str, inputs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "fqn": f"{ENTITY}.{name}",
        "name": name,
        "label": name.capitalize(),
        "subjectRequired": name != "create",
        "inputs": inputs or [],
    }


QUEUE_FIELDS = [F[n] for n in ("id", "title", "priority", "state", "assignee", "due_at")]
QUEUE_FIELDS.append(F["created_at"])
QUEUE_ACTIONS = [_action("create", INPUTS), _action("start"), _action("escalate")]
DETAIL_FIELDS = [F[name] for name in DETAIL_COLUMNS.split(", ")]
DETAIL_TRANSITIONS = [_action(n) for n in ("start", "resolve", "close", "reopen", "cancel")]


def _document(projection: str, tenant: str) -> dict[str, Any]:
    return {
        "schemaVersion": "1.0.0",
        "targetProfile": "react.web.v1",
        "metadata": {
            "projection": f"{ENTITY}.{projection}",
            "entity": ENTITY,
            "tenant": tenant,
            "locale": "en-US",
            "generatedAt": render_dt(now_db()),
        },
    }


# -- values ------------------------------------------------------------------------------


class Refused(Exception):
    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


def bad(message: str) -> Refused:
    return Refused(400, "BadRequest", message)


def now_db() -> str:
    value = datetime.now(timezone.utc)
    return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def render_dt(value: str | None) -> str | None:
    if value is None:
        return None
    fraction = value[20:26].rstrip("0")
    return value[:19] + "Z" if not fraction else f"{value[:20]}{fraction}Z"


def render_money(value: str | None) -> dict[str, str] | None:
    return None if value is None or value == "" else {"amount": value, "currency": "EUR"}


def render_bool(value: Any) -> bool | None:
    return None if value is None else bool(value)


def write_value(name: str, value: Any) -> Any:
    """Validate one input of the ticket and return its database value."""
    if value is None:
        if name in ("title", "priority", "billable"):
            raise bad(f"Field {name!r} is required and cannot be null")
        return None
    if name in ("title", "description"):
        if not isinstance(value, str) or "\x00" in value:
            raise bad(f"Field {name!r} expects a string")
        return value
    if name == "priority":
        if value not in PRIORITIES:
            raise bad("Field 'priority' expects one of " + ", ".join(PRIORITIES))
        return value
    if name == "estimate_hours":
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad("Field 'estimate_hours' expects an integer")
        return value
    if name == "billable":
        if not isinstance(value, bool):
            raise bad("Field 'billable' expects a boolean")
        return value
    if name == "due_at":
        try:
            # Python 3.10's fromisoformat takes neither "Z" nor every fraction width.
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except (TypeError, ValueError):
            raise bad("Field 'due_at' expects an RFC 3339 date-time") from None
        if parsed.tzinfo is not None:
            parsed = parsed.astimezone(timezone.utc)
        return parsed.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if name == "budget":
        if not isinstance(value, dict) or value.get("currency") != "EUR":
            raise bad("Field 'budget' expects {amount, currency: EUR}")
        amount = value.get("amount")
        try:
            Decimal(amount)
        except (TypeError, InvalidOperation):
            raise bad("Field 'budget' expects a decimal amount") from None
        return amount
    raise bad(f"Unknown input {name!r}")


def read_value(name: str, value: Any) -> Any:
    if name in ("due_at", "resolved_at", "created_at", "updated_at"):
        return render_dt(value)
    if name == "billable":
        return render_bool(value)
    if name == "budget":
        return render_money(value)
    return value


# -- storage: the host's connection strategy, by hand ---------------------------------------


class Store:
    def __init__(self, url: str) -> None:
        self.sqlite = url.startswith("sqlite")
        self.db = Database(url) if self.sqlite else Database(url, min_size=2, max_size=10)
        self.lock = asyncio.Lock()
        self.writer: Connection | None = None
        self.readers: asyncio.Queue[Connection] = asyncio.Queue()
        self.opened: list[Connection] = []
        self.inflight: set[asyncio.Task[Any]] = set()

    async def connect(self) -> None:
        await self.db.connect()
        if self.sqlite:
            self.writer = await self._open(writer=True)
            for _ in range(2):
                self.readers.put_nowait(await self._open(writer=False))

    async def _open(self, *, writer: bool) -> Connection:
        async def open_connection() -> Connection:
            conn = self.db.connection()
            await conn.__aenter__()
            await conn.execute("PRAGMA busy_timeout = 30000")
            if writer:
                await conn.fetch_one("PRAGMA journal_mode = WAL")
                await conn.execute("PRAGMA synchronous = NORMAL")
            else:
                await conn.execute("PRAGMA query_only = 1")
            self.opened.append(conn)
            return conn

        return await asyncio.create_task(open_connection())

    async def disconnect(self) -> None:
        if self.inflight:
            await asyncio.wait(set(self.inflight), timeout=10)
        for conn in self.opened:
            await conn.__aexit__()
        await self.db.disconnect()

    async def transaction(self, work: Callable[[Connection], Awaitable[T]]) -> T:
        task = asyncio.ensure_future(self._run(work))
        self.inflight.add(task)
        task.add_done_callback(self.inflight.discard)
        return await asyncio.shield(task)

    async def _run(self, work: Callable[[Connection], Awaitable[T]]) -> T:
        if not self.sqlite:
            async with self.db.connection() as conn, conn.transaction():
                return await work(conn)
        conn = self.writer
        assert conn is not None
        async with self.lock:
            await conn.execute("BEGIN IMMEDIATE")
            try:
                result = await work(conn)
                await conn.execute("COMMIT")
            except BaseException:
                await conn.execute("ROLLBACK")
                raise
            return result

    async def fetch_all(self, query: str, values: dict[str, Any]) -> list[Any]:
        if not self.sqlite:
            return await self.db.fetch_all(query, values)
        conn = await self.readers.get()
        try:
            return await conn.fetch_all(query, values)
        finally:
            self.readers.put_nowait(conn)


# -- the app -----------------------------------------------------------------------------

app = Quart("baseline")
app.config["PROVIDE_AUTOMATIC_OPTIONS"] = False
state: dict[str, Store] = {}


@app.before_serving
async def start() -> None:
    store = Store(os.environ["TESSERA_DATABASE_URL"])
    await store.connect()
    state["store"] = store


@app.after_serving
async def stop() -> None:
    await state.pop("store").disconnect()


def reply(payload: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(payload), status=status, content_type=JSON, headers=CORS)


@app.errorhandler(Refused)
async def refused(error: Refused) -> Response:
    return reply(
        {"ok": False, "error": {"kind": error.kind, "message": error.message}}, error.status
    )


def identity() -> tuple[str, str, list[str]]:
    headers = request.headers
    tenant = headers.get("X-Tenant-ID")
    if not tenant or not tenant.strip():
        raise bad("Missing required header X-Tenant-ID")
    actor = headers.get("X-Actor-Id") or "anon"
    roles = sorted({r.strip() for r in headers.get("X-Actor-Roles", "").split(",") if r.strip()})
    return tenant, actor, roles


def require(roles: list[str], *allowed: str) -> None:
    if not any(role in allowed for role in roles):
        raise Refused(403, "PolicyDenied", "Action requires one of: " + ", ".join(allowed))


async def read_body(tenant: str, subject: bool) -> tuple[str | None, dict[str, Any]]:
    try:
        body = orjson.loads(await request.get_data(cache=False))
    except orjson.JSONDecodeError:
        raise bad("Request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise bad("Request body must be a JSON object")
    inputs = body.get("inputs") or {}
    if not isinstance(inputs, dict):
        raise bad("inputs must be an object")
    if not subject:
        return None, inputs
    ref = body.get("subject")
    if not isinstance(ref, dict) or not isinstance(ref.get("identityHandle"), str):
        raise bad("subject must be an object {tenantId, entityFqn, identityHandle}")
    if ref.get("tenantId") != tenant:
        raise Refused(403, "TenantBoundaryViolation", "subject.tenantId differs")
    return ref["identityHandle"], inputs


def audit(
    tenant: str,
    actor: str,
    roles: list[str],
    action: str,
    subject: str,
    inputs: dict[str, Any],
    outputs: dict[str, Any],
    now: str,
) -> dict[str, Any]:
    return {
        "id": str(ULID()),
        "tenant_id": tenant,
        "actor_id": actor,
        "roles": orjson.dumps(roles).decode(),
        "action": f"{ENTITY}.{action}",
        "entity": ENTITY,
        "subject_id": subject,
        "inputs": orjson.dumps(inputs).decode(),
        "outputs": orjson.dumps(outputs).decode(),
        "graph_hash": GRAPH_HASH,
        "created_at": now,
    }


@app.get("/api/_health")
async def health() -> Response:
    return reply({"ok": True, "service": "baseline", "graphHash": GRAPH_HASH})


@app.post("/api/actions/helpdesk.ticket.create")
async def create() -> Response:
    tenant, actor, roles = identity()
    require(roles, "requester", "agent")
    _, inputs = await read_body(tenant, subject=False)
    values = {name: write_value(name, value) for name, value in inputs.items()}
    if values.get("title") is None:
        raise bad("Action requires input(s): 'title'")
    now = now_db()
    row = {
        "tenant_id": tenant,
        "id": str(ULID()),
        "created_at": now,
        "updated_at": now,
        "_version": str(ULID()),
        "title": None,
        "description": None,
        "priority": "normal",
        "estimate_hours": None,
        "due_at": None,
        "billable": False,
        "budget": None,
        **values,
        "state": "open",
        "requester": actor,
    }
    outputs = {"id": row["id"]}
    outputs.update((name, read_value(name, value)) for name, value in values.items())
    outputs["state"] = "open"

    async def work(conn: Connection) -> None:
        await conn.execute(SQL_INSERT, row)
        await conn.execute(
            SQL_AUDIT, audit(tenant, actor, roles, "create", row["id"], inputs, outputs, now)
        )

    await state["store"].transaction(work)
    return reply({"ok": True, "outputs": outputs})


async def load_subject(conn: Connection, tenant: str, subject: str) -> Any:
    row = await conn.fetch_one(SQL_SUBJECT, {"tenant_id": tenant, "id": subject})
    if row is None:
        raise Refused(404, "NotFound", f"No {ENTITY} with id '{subject}' in this tenant")
    return row


@app.post("/api/actions/helpdesk.ticket.start")
async def start_ticket() -> Response:
    tenant, actor, roles = identity()
    require(roles, "agent")
    subject, inputs = await read_body(tenant, subject=True)
    assert subject is not None

    async def work(conn: Connection) -> dict[str, Any]:
        row = await load_subject(conn, tenant, subject)
        if row["state"] != "open":
            raise Refused(409, "WorkflowStateMismatch", f"The subject is '{row['state']}'")
        now, version = now_db(), str(ULID())
        written = await conn.fetch_one(
            SQL_START,
            {
                "now": now,
                "version": version,
                "state": "in_progress",
                "assignee": actor,
                "tenant_id": tenant,
                "id": subject,
                "read": row["_version"],
            },
        )
        if written is None:
            raise Refused(409, "ConcurrencyConflict", "modified concurrently")
        outputs = {"state": "in_progress", "assignee": actor, "_version": version}
        await conn.execute(
            SQL_AUDIT, audit(tenant, actor, roles, "start", subject, inputs, outputs, now)
        )
        return outputs

    outputs = await state["store"].transaction(work)
    return reply({"ok": True, "outputs": outputs})


@app.post("/api/actions/helpdesk.ticket.edit")
async def edit_ticket() -> Response:
    tenant, actor, roles = identity()
    require(roles, "agent")
    subject, inputs = await read_body(tenant, subject=True)
    assert subject is not None
    unknown = [key for key in inputs if key not in EDITABLE]
    if unknown:
        raise bad(f"Action does not accept input(s) {unknown}")
    values = {name: write_value(name, value) for name, value in inputs.items()}
    assignments = "".join(f", {name} = :{name}" for name in values)
    sql = (
        f"UPDATE helpdesk__ticket SET updated_at = :now, _version = :version{assignments} "
        "WHERE tenant_id = :tenant_id AND id = :id AND _version = :read RETURNING _version"
    )

    async def work(conn: Connection) -> dict[str, Any]:
        row = await load_subject(conn, tenant, subject)
        now, version = now_db(), str(ULID())
        params = {
            "now": now,
            "version": version,
            "tenant_id": tenant,
            "id": subject,
            "read": row["_version"],
            **values,
        }
        if await conn.fetch_one(sql, params) is None:
            raise Refused(409, "ConcurrencyConflict", "modified concurrently")
        outputs = {name: read_value(name, value) for name, value in values.items()}
        outputs["_version"] = version
        await conn.execute(
            SQL_AUDIT, audit(tenant, actor, roles, "edit", subject, inputs, outputs, now)
        )
        return outputs

    outputs = await state["store"].transaction(work)
    return reply({"ok": True, "outputs": outputs})


@app.get("/api/projections/helpdesk.ticket.queue")
async def queue() -> Response:
    tenant, _, _ = identity()
    rows = await state["store"].fetch_all(SQL_QUEUE, {"tenant_id": tenant})
    items = [
        {
            "id": row[0],
            "title": row[1],
            "priority": row[2],
            "state": row[3],
            "assignee": row[4],
            "due_at": render_dt(row[5]),
            "created_at": render_dt(row[6]),
        }
        for row in rows
    ]
    document = _document("queue", tenant)
    document["fields"] = QUEUE_FIELDS
    document["actions"] = QUEUE_ACTIONS
    document["filters"] = []
    document["data"] = {"items": items, "pagination": {"pageSize": len(items), "nextCursor": None}}
    return reply(document)


@app.get("/api/projections/helpdesk.ticket.detail")
async def detail() -> Response:
    tenant, _, _ = identity()
    subject = request.args.get("subject")
    if subject is None:
        raise bad("this baseline serves the detail projection with a subject only")
    rows = await state["store"].fetch_all(SQL_DETAIL, {"tenant_id": tenant, "id": subject})
    item = None
    if rows:
        mapping = rows[0]._mapping
        item = {name: read_value(name, mapping[name]) for name in DETAIL_FIELDS_NAMES}
    document = _document("detail", tenant)
    document["fields"] = DETAIL_FIELDS
    edit = _action("edit", INPUTS)
    edit["initialValues"] = {name: (item.get(name) if item else None) for name in EDITABLE}
    escalate = _action("escalate")
    escalate["initialValues"] = {}
    document["actions"] = [edit, *DETAIL_TRANSITIONS, escalate]
    document["filters"] = []
    document["data"] = {"item": item}
    return reply(document)


DETAIL_FIELDS_NAMES = tuple(DETAIL_COLUMNS.split(", "))
