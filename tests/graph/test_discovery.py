"""Discovery of real, pip-installed plugin distributions, observed through ``python -m host``.

Each test runs the CLI in a subprocess whose ``PYTHONPATH`` holds only the chosen install
targets (the environment's own plugins are disabled), so installing and uninstalling a
distribution is a matter of which target directories are on the path.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from host.config import Settings
from host.plugins import load_plugins

# Discovery and the graph need no database: the pg environment leaves these out.
pytestmark = [pytest.mark.slow, pytest.mark.backend_neutral]

Cli = Callable[..., subprocess.CompletedProcess[str]]
Dists = dict[str, Path]
ALPHA = "plugin 'alpha' (tessera-test-alpha 1.0.0)"


def _hash(cli: Cli, *paths: Path, env: dict[str, str] | None = None) -> str:
    result = cli("graph", "--hash", paths=paths, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_discovered_by_entry_point_alone(cli: Cli, plugin_dists: Dists) -> None:
    result = cli("plugins", paths=[plugin_dists["alpha"], plugin_dists["beta"]])
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "alpha: tessera-test-alpha 1.0.0" in out
    assert "beta: tessera-test-beta 2.0.0" in out
    assert "entities (1): alpha.note" in out
    assert "actions (3): alpha.note.create, alpha.note.edit, alpha.note.finish" in out
    assert "projections (1): alpha.note.list" in out
    assert "policies (1): alpha.always" in out
    assert "effects (1): alpha.nothing" in out
    check = cli("check", paths=[plugin_dists["alpha"], plugin_dists["beta"]])
    assert check.returncode == 0, check.stderr
    assert check.stdout.startswith("ok ")


def test_uninstalling_removes_the_plugin_and_changes_the_hash(
    cli: Cli, plugin_dists: Dists
) -> None:
    both = _hash(cli, plugin_dists["alpha"], plugin_dists["beta"])
    alpha_only = _hash(cli, plugin_dists["alpha"])
    nothing = _hash(cli)
    assert len({both, alpha_only, nothing}) == 3
    listing = cli("plugins", paths=[plugin_dists["alpha"]]).stdout
    assert "alpha:" in listing
    assert "beta" not in listing


def test_hash_is_equal_across_processes_and_path_orders(cli: Cli, plugin_dists: Dists) -> None:
    alpha, beta = plugin_dists["alpha"], plugin_dists["beta"]
    hashes = {
        _hash(cli, alpha, beta, env={"PYTHONHASHSEED": "1"}),
        _hash(cli, alpha, beta, env={"PYTHONHASHSEED": "2"}),
        _hash(cli, beta, alpha, env={"PYTHONHASHSEED": "3"}),
    }
    assert len(hashes) == 1


def test_graph_prints_canonical_json_and_hash(cli: Cli, plugin_dists: Dists) -> None:
    result = cli("graph", paths=[plugin_dists["alpha"]])
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    compact = json.dumps(
        document["graph"], sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    assert hashlib.sha256(compact.encode()).hexdigest() == document["hash"]
    assert document["hash"] == _hash(cli, plugin_dists["alpha"])
    assert document["graph"]["policies"] == ["alpha.always"]


def test_broken_plugin_set_fails_check_listing_every_error(cli: Cli, plugin_dists: Dists) -> None:
    result = cli("check", paths=[plugin_dists["alpha"], plugin_dists["broken"]])
    assert result.returncode == 1
    assert result.stdout == ""
    errors = result.stderr
    broken = "plugin 'broken' (tessera-test-broken 0.3.0)"
    expected = [
        "plugin 'importfail' (tessera-test-importfail 0.0.1): cannot import "
        "'tessera_test_importfail': RuntimeError: boom at import time",
        f"{broken}: entity 'broken.thing' field 'size': default 'xl' does not fit",
        f"{broken}: action 'broken.ghost.create': refers to entity 'broken.ghost'",
        f"{broken}: action 'broken.thing.create': required field 'name'",
        f"{broken}: action 'broken.thing.close': is a transition action, but entity "
        "'broken.thing' has no workflow",
        f"custom effect 'broken.fx' used by action 'broken.thing.close' of {broken} "
        "is implemented by no installed plugin",
        f"{broken}: projection 'broken.thing.list': shows 'colour'",
    ]
    for message in expected:
        assert message in errors
    assert "7 error(s)" in errors
    assert "alpha" not in errors


def test_two_distributions_declaring_one_name_are_reported(cli: Cli, plugin_dists: Dists) -> None:
    paths = [plugin_dists["alpha"], plugin_dists["clash"]]
    for command in ("check", "plugins"):
        result = cli(command, paths=paths)
        assert result.returncode == 1
        assert "plugin 'alpha': entry point declared by 2 distributions" in result.stderr
        assert "tessera-test-alpha 1.0.0" in result.stderr
        assert "tessera-test-clash 9.9.9" in result.stderr


def test_the_same_distribution_twice_is_loaded_once(cli: Cli, plugin_dists: Dists) -> None:
    result = cli("check", paths=[plugin_dists["alpha"], plugin_dists["alpha_copy"]])
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok " + _hash(cli, plugin_dists["alpha"])
    listing = cli("plugins", paths=[plugin_dists["alpha"], plugin_dists["alpha_copy"]]).stdout
    assert listing.count("alpha: tessera-test-alpha") == 1


def test_allow_and_block_lists(cli: Cli, plugin_dists: Dists) -> None:
    paths = [plugin_dists["alpha"], plugin_dists["beta"]]
    only = cli("plugins", paths=paths, env={"TESSERA_PLUGINS_ONLY": "beta"})
    assert only.returncode == 0, only.stderr
    assert "beta:" in only.stdout
    assert "alpha" not in only.stdout
    blocked = cli(
        "plugins",
        paths=[*paths, plugin_dists["broken"]],
        env={"TESSERA_PLUGINS_DISABLED": "broken,importfail,helpdesk,billing"},
    )
    assert blocked.returncode == 0, blocked.stderr
    assert "alpha:" in blocked.stdout
    assert "broken" not in blocked.stdout
    unknown = cli("check", paths=paths, env={"TESSERA_PLUGINS_ONLY": "alpha,gamma"})
    assert unknown.returncode == 1
    assert "TESSERA_PLUGINS_ONLY names plugin 'gamma'" in unknown.stderr


def test_in_process_load_records_provenance() -> None:
    installed = load_plugins(Settings())
    for info, _plugin in installed.plugins:
        assert info.distribution is not None
        assert info.version is not None
    names = [info.name for info, _ in installed.plugins]
    if names:
        first = names[0]
        only = load_plugins(Settings(plugins_only=(first,)))
        assert [info.name for info, _ in only.plugins] == [first]
        without = load_plugins(Settings(plugins_disabled=(first,)))
        assert first not in [info.name for info, _ in without.plugins]
