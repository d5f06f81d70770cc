"""``tessera timers``: list armed timers, fire one now, cancel one, purge settled ones
(docs/timers.md).

They work on the database alone (no host needs to run): ``fire`` makes a pending timer due
now, so the next pass of any running worker's timer loop fires it as an ordinary action (or
records its refusal). Exit statuses: 0 done; 1 the database cannot be reached, has no timers
table yet, or the timer is not pending; 2 bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import asdict

from host.config import Settings, parse_duration_or_off
from host.errors import StartupError
from host.startup import check_database_url, reachable
from host.storage import Storage
from host.storage.timers import CANCELLED, FAILED, FIRED, PENDING, TIMERS_TABLE
from host.timers.queries import (
    cancel_timer,
    list_timers,
    make_due,
    purge_settled,
    settled_before,
)
from host.timers.scheduler import PURGE_BATCH

__all__ = ["add_parser", "timers"]

EXIT_FAILED = 1
STATES = (PENDING, FIRED, FAILED, CANCELLED)


def add_parser(command: Callable[[str, str], argparse.ArgumentParser]) -> None:
    """Declare ``tessera timers`` and its subcommands."""
    parser = command("timers", "list armed timers, fire one now, cancel one, purge settled ones")
    sub = parser.add_subparsers(dest="timers_command", required=True, metavar="SUBCOMMAND")

    def subcommand(name: str, text: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")

    listing = subcommand("list", "list timers, earliest due first")
    listing.add_argument(
        "--state", action="append", choices=STATES, help="only this state (default: pending)"
    )
    listing.add_argument("--tenant", help="only this tenant's")
    listing.add_argument("--limit", type=int, default=100, help="default: %(default)s")
    listing.add_argument("--json", action="store_true", help="print JSON lines")
    for name, text in (
        ("fire", "make a pending timer due now: the next pass of a running worker fires it"),
        ("cancel", "cancel a pending timer"),
    ):
        one = subcommand(name, text)
        one.add_argument("--tenant", required=True, help="the timer's tenant")
        one.add_argument("timer_id", help="the timer's id (tessera timers list)")
    purge = subcommand(
        "purge", "delete settled timers (fired, failed, cancelled) older than the retention"
    )
    purge.add_argument(
        "--older-than",
        type=parse_duration_or_off,
        help="30d, 12h, 45m or seconds (default: TESSERA_TIMERS_RETENTION)",
    )


def timers(settings: Settings, args: argparse.Namespace) -> int:
    """Run ``tessera timers <subcommand>``."""

    async def work(storage: Storage) -> int:
        if args.timers_command == "list":
            return await _list(storage, args)
        if args.timers_command == "purge":
            return await _purge(storage, settings, args)
        act = make_due if args.timers_command == "fire" else cancel_timer
        if await act(storage, args.tenant, args.timer_id):
            verb = "due now" if args.timers_command == "fire" else "cancelled"
            print(f"timer {args.timer_id}: {verb}")
            return 0
        print(f"timer {args.timer_id}: no such pending timer in tenant {args.tenant!r}")
        return EXIT_FAILED

    return asyncio.run(_run(settings, work))


async def _list(storage: Storage, args: argparse.Namespace) -> int:
    rows = await list_timers(
        storage, tenant=args.tenant, states=tuple(args.state or (PENDING,)), limit=args.limit
    )
    for row in rows:
        if args.json:
            print(json.dumps(asdict(row), sort_keys=True))
            continue
        outcome = f"  {row.outcome}" if row.outcome else ""
        tenant = row.tenant_id or "<clock>"  # a cron job's clock (CLOCK_TENANT, the empty one)
        print(
            f"{row.id}  {tenant}  {row.timer}  {row.state}  due={row.due_at}  "
            f"{row.action}  {row.entity} {row.subject_id}{outcome}"
        )
    if not rows and not args.json:
        print("no timers")
    return 0


async def _purge(storage: Storage, settings: Settings, args: argparse.Namespace) -> int:
    retention = settings.timers_retention if args.older_than is None else args.older_than
    if retention <= 0:
        print("retention off (TESSERA_TIMERS_RETENTION=off): nothing purged")
        return 0
    before = settled_before(retention)
    purged = await purge_settled(storage, before, PURGE_BATCH, sys.maxsize)
    print(f"purged {purged} settled timers settled before {before}")
    return 0


async def _connected(settings: Settings) -> Storage:
    """The database of ``settings``, connected (a SQLite file must exist already)."""
    check_database_url(settings)
    storage = Storage(settings)
    if storage.is_new_file():
        url = settings.database_url
        raise StartupError(f"TESSERA_DATABASE_URL={url}: no such SQLite file (no timers)")
    await reachable(storage.connect(), settings)
    return storage


async def _run(settings: Settings, work: Callable[[Storage], Awaitable[int]]) -> int:
    storage = await _connected(settings)
    try:
        return await work(storage)
    except Exception as exc:
        if TIMERS_TABLE in str(exc):
            hint = "start the host once (tessera serve) to create it"
            raise StartupError(f"the database has no {TIMERS_TABLE} table yet: {hint}") from exc
        raise
    finally:
        await storage.disconnect()
