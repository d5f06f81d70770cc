"""The ``tessera`` command: inspect plugins and the graph, check, show config, serve, migrate,
events.

The web stack (Quart, the console, the OpenAPI builder, the service) is imported only by the
commands that use it: a command that reads the database starts in about half the time."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import secrets
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from host import __version__, cli_audit, cli_events, cli_migrate, cli_timers, diagrams, scaffold
from host.config import Settings
from host.errors import StartupError
from host.graph import GraphError, compile_graph
from host.graph.grants import describe_grants
from host.graph.model import Graph
from host.plugins import PluginContribution, contributions, load_plugins
from host.startup import check_bind, probe_database

__all__ = ["main", "serve_bind", "serve_command"]

DEFAULT_BIND = "127.0.0.1:8000"

ASGI_APP = "host.asgi:app"
EXIT_STARTUP = 1
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a command killed by it


def _names(kind: str, names: Sequence[str], out: TextIO) -> None:
    if names:
        print(f"  {kind} ({len(names)}): {', '.join(names)}", file=out)


def _print_contribution(contribution: PluginContribution, out: TextIO) -> None:
    plugin = contribution.plugin
    origin = f"{plugin.distribution} {plugin.version}" if plugin.distribution else "(not installed)"
    print(f"{plugin.name}: {origin}", file=out)
    _names("entities", [e.fqn for e in contribution.entities], out)
    _names("actions", [a.fqn for a in contribution.actions], out)
    _names("projections", [p.fqn for p in contribution.projections], out)
    _names("policies", sorted(contribution.policies), out)
    _names("effects", sorted(contribution.effects), out)
    _names("subscribers", [s.name for s in contribution.subscribers], out)


def _cmd_plugins(settings: Settings) -> int:
    loaded = load_plugins(settings)
    contribs = contributions(loaded)
    for contribution in contribs:
        _print_contribution(contribution, sys.stdout)
    if not contribs:
        print("no plugins loaded")
    errors = [*loaded.errors, *(e for c in contribs for e in c.errors)]
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    return 1 if errors else 0


def _compile(settings: Settings) -> Graph | None:
    try:
        return compile_graph(load_plugins(settings))
    except GraphError as exc:
        print(f"{len(exc.errors)} error(s) in the plugin graph:", file=sys.stderr)
        for error in exc.errors:
            print(f"error: {error}", file=sys.stderr)
        return None


def _cmd_graph(settings: Settings, *, hash_only: bool, fmt: str) -> int:
    graph = _compile(settings)
    if graph is None:
        return 1
    if hash_only:
        print(graph.hash)
    elif fmt != "json":
        print(diagrams.render(graph, fmt), end="")
    else:
        document = {
            "hash": graph.hash,
            "graph": json.loads(graph.canonical),
            "subscribers": _subscribers(graph),
            "grants": describe_grants(graph.grants),
        }
        print(json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False))
    return 0


def _subscribers(graph: Graph) -> list[dict[str, object]]:
    """The event subscribers, by name: beside the hashed graph, never part of it."""
    return [
        {
            "name": name,
            "plugin": registered.plugin.name,
            "actions": list(registered.handler.actions),
            "entities": list(registered.handler.entities),
            "states": list(registered.handler.states),
            "transactional": registered.handler.transactional,
            "timeoutS": registered.handler.timeout_s,
        }
        for name, registered in sorted(graph.subscribers.items())
    ]


def _cmd_check(settings: Settings, *, distributed: bool = False) -> int:
    graph = _compile(settings)
    if graph is None:
        return 1
    found = asyncio.run(probe_database(settings))
    print(found, file=sys.stderr)
    if asyncio.run(cli_migrate.check_schema(settings, graph)):
        return 1  # a start would refuse the database's schema: the report is on stderr
    for warning in graph.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if distributed and asyncio.run(cli_migrate.check_distributed(settings)):
        return 1  # the live schema breaks a rule of distribution: the lines are on stderr
    print(f"ok {graph.hash}")
    return 0


def _cmd_openapi(settings: Settings) -> int:
    from host.http.openapi import openapi_text  # the web stack, only for this command

    graph = _compile(settings)
    if graph is not None:
        print(openapi_text(graph, settings.api_prefix))
    return 0 if graph is not None else 1


def _cmd_new_plugin(name: str, parent: Path) -> int:
    try:
        target = scaffold.new_plugin(name, parent)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"created {target}\nnext: cd {target} && pip install -e '.[test]' && pytest")
    return 0


def _cmd_config(settings: Settings) -> int:
    for variable, value, help_text in settings.describe():
        print(f"{variable}={value}\n    {help_text}")
    return 0


def serve_command(bind: str, workers: int, extra: Sequence[str] = ()) -> list[str]:
    """The Hypercorn command line ``tessera serve`` runs (``extra`` is passed through), with
    the master of :mod:`host.supervisor` (a lost worker ends the server non-zero)."""
    return [
        sys.executable,
        "-m",
        "host.supervisor",
        "--bind",
        bind,
        "--workers",
        str(workers),
        *extra,
        ASGI_APP,
    ]


def serve_bind(bind: str, host: str | None, port: int | None) -> str:
    """The Hypercorn ``--bind`` of ``tessera serve``: ``--bind`` with its host and port
    replaced by ``--host`` and ``--port`` when given."""
    if host is None and port is None:
        return bind
    old_host, _, old_port = bind.rpartition(":") if ":" in bind else (bind, "", "8000")
    host = old_host if host is None else host
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 address
    return f"{host}:{old_port if port is None else port}"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tessera", description=__doc__)
    parser.add_argument("--version", action="version", version=f"tessera {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, text: str) -> argparse.ArgumentParser:
        # ``help`` is the line in ``tessera --help``; ``description`` heads ``tessera NAME -h``.
        return commands.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")

    command("plugins", "list discovered plugins and what they contribute")
    graph = command("graph", "print the canonical graph and its hash")
    graph.add_argument("--hash", action="store_true", help="print only the hash")
    graph.add_argument(
        "--format",
        choices=("json", *diagrams.FORMATS),
        default="json",
        help="json (the canonical graph, default), or each entity's workflow as a "
        "mermaid or dot diagram",
    )
    command("openapi", "print the OpenAPI 3.1 document of the graph")
    new_plugin = command(
        "new-plugin", "create the project of a new plugin, tests and tox file included"
    )
    new_plugin.add_argument("name", help="the plugin's name: one lower-case word")
    new_plugin.add_argument("--directory", default=".", help="parent folder (default: .)")
    check = command(
        "check",
        "compile the graph, reach the database and plan its schema as a start would; "
        "print 'ok <hash>', or every error and exit 1 when the host would not start",
    )
    check.add_argument(
        "--distributed",
        action="store_true",
        help="also check the live PostgreSQL schema against the rules of a database "
        "distributed by tenant_id (Citus): every table keyed by tenant or a reference table "
        "(docs/deploy.md); exit 1 naming each table that breaks one",
    )
    command("config", "print every TESSERA_* setting with value and help")
    serve = command(
        "serve", "run Hypercorn on host.asgi:app (unknown options are passed to Hypercorn)"
    )
    serve.add_argument("--bind", default=DEFAULT_BIND, help="default: %(default)s")
    serve.add_argument("--host", help="the address to listen on (replaces the --bind host)")
    serve.add_argument("--port", type=int, help="the port to listen on (replaces the --bind port)")
    serve.add_argument("--workers", type=int, default=1, help="default: %(default)s")
    migrate = command("migrate", "plan or apply the schema changes the installed plugins need")
    mode = migrate.add_mutually_exclusive_group(required=True)
    mode.add_argument("--plan", action="store_true", help="print the plan; change nothing")
    mode.add_argument("--apply", action="store_true", help="apply the plan")
    migrate.add_argument(
        "--allow",
        action="append",
        default=[],
        choices=cli_migrate.ALLOWABLE_KINDS,
        metavar="KIND",
        help="apply breaking changes of this kind (repeatable): "
        + ", ".join(cli_migrate.ALLOWABLE_KINDS),
    )
    migrate.add_argument("--json", action="store_true", help="print the plan as JSON")
    migrate.add_argument(
        "--progress-interval",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="--apply: seconds between progress lines on stderr when it is not a terminal "
        "(default: %(default)s; a terminal gets one live line)",
    )
    cli_events.add_parser(command)
    cli_audit.add_parser(command)
    cli_timers.add_parser(command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``tessera`` command; return the exit status."""
    try:
        return _main(argv)
    except BrokenPipeError:
        # The reader went away (``tessera graph | head``): no traceback. Python would
        # complain again when flushing stdout at exit, so point it at /dev/null.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _main(argv: Sequence[str] | None) -> int:
    parser = _parser()
    args, rest = parser.parse_known_args(argv)
    if rest and args.command != "serve":
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.command == "new-plugin":
        return _cmd_new_plugin(args.name, Path(args.directory))
    try:
        settings = Settings.from_env()
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        return _run(args, rest, settings)
    except StartupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_STARTUP


def _run(args: argparse.Namespace, rest: Sequence[str], settings: Settings) -> int:
    if args.command == "plugins":
        return _cmd_plugins(settings)
    if args.command == "graph":
        return _cmd_graph(settings, hash_only=args.hash, fmt=args.format)
    if args.command == "openapi":
        return _cmd_openapi(settings)
    if args.command == "check":
        return _cmd_check(settings, distributed=args.distributed)
    if args.command == "config":
        return _cmd_config(settings)
    if args.command == "migrate":
        return cli_migrate.migrate(
            settings,
            execute=args.apply,
            allow=args.allow,
            as_json=args.json,
            interval=args.progress_interval,
        )
    if args.command == "events":
        return cli_events.events(settings, args)
    if args.command == "audit":
        return cli_audit.audit(settings, args)
    if args.command == "timers":
        return cli_timers.timers(settings, args)
    bind = serve_bind(args.bind, args.host, args.port)
    check_bind(bind)
    status = cli_migrate.preflight(settings)  # Hypercorn exits 0 when the app cannot start
    if status:
        return status
    command = serve_command(bind, args.workers, [a for a in rest if a != "--"])
    os.environ["TESSERA_SERVE_BIND"] = bind
    # One key for every worker, so a console cookie signed by one is read by the others.
    os.environ.setdefault("TESSERA_CONSOLE_SECRET", secrets.token_hex(32))
    served = dataclasses.replace(settings, serve_bind=bind)
    from host.console.settings import console_enabled, console_url  # imports the web stack

    if console_enabled(served):
        print(f"console: {console_url(bind)}", flush=True)
    sys.stdout.flush()
    os.execvp(command[0], command)
    return 0  # pragma: no cover - execvp does not return
