"""``tessera audit``: seal, verify, export and prune the audit log (docs/history.md).

Works on the database alone (no host needs to run), with the settings of the host:
``TESSERA_AUDIT_CHECKPOINTS`` and ``TESSERA_AUDIT_KEY_FILE`` (or their defaults in the data
directory) name the signed checkpoints, ``TESSERA_AUDIT_SEAL_S`` how long a record may wait
for its seal. Exit statuses: 0 done (verify: every tenant verified, only records younger
than the sealing interval left unsealed); 1 a difference found, records left unsealed too
long, or the database cannot be reached; 2 bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TypeVar

from host.config import Settings
from host.errors import StartupError
from host.fieldtypes import format_datetime, parse_datetime
from host.graph import GraphError, build_graph
from host.startup import check_database_url, reachable
from host.storage import Schema, Storage, Tx, build_schema
from host.storage.auditchain import (
    Checkpoint,
    CheckpointError,
    configured_checkpoints,
    prune,
    sealer_of,
    verify,
)
from host.storage.auditexport import FORMATS, export_lines
from host.storage.auditlog import AuditLog, Position, missing_audit_columns
from host.storage.dialect import EvolutionDialect

__all__ = ["add_parser", "audit"]

T = TypeVar("T")
EXIT_FAILED = 1
EXIT_USAGE = 2


def add_parser(command: Callable[[str, str], argparse.ArgumentParser]) -> None:
    """Declare ``tessera audit`` and its subcommands."""
    parser = command("audit", "seal, verify, export and prune the audit log")
    sub = parser.add_subparsers(dest="audit_command", required=True, metavar="SUBCOMMAND")

    def subcommand(name: str, text: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")

    subcommand("seal", "chain and seal every tenant's new audit records now; write checkpoints")
    check = subcommand(
        "verify", "recompute each tenant's hash chain against its seals and checkpoints"
    )
    check.add_argument("--tenant", action="append", help="only this tenant (repeatable)")
    check.add_argument("--json", action="store_true", help="print JSON lines")
    check.add_argument("--checkpoints", help="checkpoint file (default: TESSERA_AUDIT_CHECKPOINTS)")
    export = subcommand("export", "print a tenant's audit records as NDJSON or CSV")
    export.add_argument("--tenant", required=True)
    export.add_argument("--format", choices=FORMATS, default="ndjson")
    export.add_argument("--since", help="RFC 3339 instant: records written at or after it")
    export.add_argument("--until", help="RFC 3339 instant: records written before it")
    export.add_argument("--after", help="resume after this position (the last line's)")
    cut = subcommand(
        "prune", "remove sealed, checkpointed records older than the retention; keep the chain"
    )
    cut.add_argument("--older-than-days", type=float, required=True, metavar="DAYS")
    cut.add_argument("--tenant", action="append", help="only this tenant (repeatable)")
    cut.add_argument("--checkpoints", help="checkpoint file (default: TESSERA_AUDIT_CHECKPOINTS)")


def _instant(text: str | None, name: str) -> str | None:
    if text is None:
        return None
    parsed = parse_datetime(text)
    if parsed is None:
        raise ValueError(f"{name}: not an RFC 3339 date-time: {text!r}")
    return format_datetime(parsed)


def _checkpoints(settings: Settings, given: str | None = None) -> list[Checkpoint]:
    """The checkpoints of ``given`` (a file named on the command line; it must exist) or of
    the settings' checkpoint file (none while that file does not exist yet)."""
    return configured_checkpoints(settings, Path(given) if given else None)


async def _open(settings: Settings, work: Callable[[Storage, Schema], Awaitable[T]]) -> T:
    check_database_url(settings)
    storage = Storage(settings)
    schema = build_schema(build_graph(settings), storage.dialect)
    if storage.is_new_file():
        raise StartupError(f"TESSERA_DATABASE_URL={settings.database_url}: no such SQLite file")
    await reachable(storage.connect(), settings)
    try:
        await _audit_log_is_current(storage, schema)
        return await work(storage, schema)
    finally:
        await storage.disconnect()


async def _audit_log_is_current(storage: Storage, schema: Schema) -> None:
    """Refuse, in one line, an audit log that lacks columns this version writes: the service
    adds them when it starts; this command only reads (it may run on a read-only replica)."""

    async def lacking(tx: Tx) -> list[str]:
        found = await missing_audit_columns(tx, EvolutionDialect(storage.dialect), schema)
        return [column.name for column in found]

    missing = await storage.transaction(lacking)
    if missing:
        raise StartupError(
            f"the audit log of this database predates this version of Tessera (no column "
            f"{', '.join(missing)}): start the service once with this version, which adds "
            "them, then run this command again"
        )


async def _verify(settings: Settings, args: argparse.Namespace) -> int:
    checkpoints = _checkpoints(settings, args.checkpoints)

    async def work(storage: Storage, schema: Schema) -> int:
        sealer = sealer_of(storage, schema, settings)
        tenants = args.tenant or sorted({*await sealer.tenants(), *(c.tenant for c in checkpoints)})
        failed = 0
        for tenant in tenants:
            finding = await verify(
                storage, schema, tenant, checkpoints, interval=settings.audit_seal_s
            )
            failed += not finding.ok
            if args.json:
                print(json.dumps(finding.as_json(), sort_keys=True), flush=True)
            else:
                print(f"{tenant}: {finding.verdict}: {finding.message}", flush=True)
        return EXIT_FAILED if failed else 0

    return await _open(settings, work)


async def _export(settings: Settings, args: argparse.Namespace) -> int:
    since, until = _instant(args.since, "--since"), _instant(args.until, "--until")
    after = Position.parse(args.after) if args.after else None

    async def work(storage: Storage, schema: Schema) -> int:
        log = AuditLog(storage, schema)
        lines = export_lines(
            log, args.tenant, fmt=args.format, since=since, until=until, after=after
        )
        async for line in lines:
            sys.stdout.write(line)
        sys.stdout.flush()
        return 0

    return await _open(settings, work)


async def _prune(settings: Settings, args: argparse.Namespace) -> int:
    checkpoints = _checkpoints(settings, args.checkpoints)
    if not checkpoints:
        print("error: no checkpoints (TESSERA_AUDIT_CHECKPOINTS): nothing may be pruned")
        return EXIT_FAILED
    cutoff = datetime.now(timezone.utc) - timedelta(days=args.older_than_days)

    async def work(storage: Storage, schema: Schema) -> int:
        tenants = args.tenant or sorted({c.tenant for c in checkpoints})
        before = format_datetime(cutoff)
        for tenant in tenants:
            await prune(
                storage,
                schema,
                tenant,
                before,
                checkpoints,
                progress=lambda line: print(line, file=sys.stderr, flush=True),
            )
        return 0

    return await _open(settings, work)


async def _seal(settings: Settings) -> int:
    async def work(storage: Storage, schema: Schema) -> int:
        for checkpoint in await sealer_of(storage, schema, settings).seal_all():
            print(f"{checkpoint.tenant}: sealed up to #{checkpoint.count}", flush=True)
        return 0

    return await _open(settings, work)


def audit(settings: Settings, args: argparse.Namespace) -> int:
    """Run ``tessera audit SUBCOMMAND``."""
    command = args.audit_command
    try:
        if command == "seal":
            return asyncio.run(_seal(settings))
        if command == "verify":
            return asyncio.run(_verify(settings, args))
        if command == "export":
            return asyncio.run(_export(settings, args))
        return asyncio.run(_prune(settings, args))
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except (ValueError, CheckpointError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE if not isinstance(exc, CheckpointError) else EXIT_FAILED
    except GraphError as exc:
        for error in exc.errors:
            print(f"error: {error}", file=sys.stderr)
        return EXIT_FAILED
