"""Factories for in-memory test plugins and a valid baseline set of definitions.

Test modules get the helpers through the ``kit`` fixture (tests are imported with
``--import-mode=importlib``, so they cannot import this module by name).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from types import FunctionType, SimpleNamespace
from typing import Any

import pytest

from host.config import Settings
from host.graph import Graph, GraphError, compile_graph
from host.plugins import load_plugins
from plugin_api import (
    ENTRY_POINT_GROUP,
    Action,
    CreateAction,
    Entity,
    Field,
    FieldType,
    Projection,
    Stamp,
    Transition,
    TransitionAction,
    UpdateAction,
    Workflow,
    hookimpl,
)


def _allow(ctx: object) -> bool:
    return True


def _noop(ctx: object) -> None:
    return None


def make_plugin(
    *,
    entities: Sequence[object] | None = None,
    actions: Sequence[object] | None = None,
    projections: Sequence[object] | None = None,
    policies: Mapping[object, object] | None = None,
    effects: Mapping[object, object] | None = None,
    **raw_hooks: Callable[[], object],
) -> object:
    """A plugin object implementing only the hooks given (``raw_hooks`` are marked as is)."""
    hooks: dict[str, Callable[[], object]] = dict(raw_hooks)
    given = {
        "tessera_entities": entities,
        "tessera_actions": actions,
        "tessera_projections": projections,
        "tessera_policies": policies,
        "tessera_effects": effects,
    }
    for name, value in given.items():
        if value is not None:
            hooks[name] = lambda value=value: value  # type: ignore[misc]
    return SimpleNamespace(**{name: hookimpl(_copy(fn)) for name, fn in hooks.items()})


def _copy(fn: Callable[..., object]) -> Callable[..., object]:
    """A fresh function object: ``hookimpl`` marks the function it is given."""
    assert isinstance(fn, FunctionType)
    return FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


@dataclasses.dataclass(frozen=True)
class Defs:
    """A set of definitions that becomes one plugin (or several, split by kind)."""

    entities: tuple[Entity, ...]
    actions: tuple[Action, ...]
    projections: tuple[Projection, ...]
    policies: tuple[str, ...]
    effects: tuple[str, ...]

    def plugin(self) -> object:
        return make_plugin(
            entities=self.entities,
            actions=self.actions,
            projections=self.projections,
            policies=dict.fromkeys(self.policies, _allow),
            effects=dict.fromkeys(self.effects, _noop),
        )

    def split(self) -> list[object]:
        """One plugin per kind of contribution."""
        return [
            make_plugin(entities=self.entities),
            make_plugin(actions=self.actions),
            make_plugin(projections=self.projections),
            make_plugin(policies=dict.fromkeys(self.policies, _allow)),
            make_plugin(effects=dict.fromkeys(self.effects, _noop)),
        ]

    # --- editing helpers (every definition is frozen) ---------------------------------

    def entity(self, fqn: str) -> Entity:
        return next(e for e in self.entities if e.fqn == fqn)

    def with_entity(self, fqn: str, /, **changes: Any) -> Defs:
        entities = tuple(
            dataclasses.replace(e, **changes) if e.fqn == fqn else e for e in self.entities
        )
        return dataclasses.replace(self, entities=entities)

    def with_field(self, entity: str, name: str, /, **changes: Any) -> Defs:
        fields = tuple(
            dataclasses.replace(f, **changes) if f.name == name else f
            for f in self.entity(entity).fields
        )
        return self.with_entity(entity, fields=fields)

    def with_workflow(self, entity: str, /, **changes: Any) -> Defs:
        workflow = self.entity(entity).workflow
        assert workflow is not None
        return self.with_entity(entity, workflow=dataclasses.replace(workflow, **changes))

    def with_transition(self, entity: str, name: str, /, **changes: Any) -> Defs:
        workflow = self.entity(entity).workflow
        assert workflow is not None
        transitions = tuple(
            dataclasses.replace(t, **changes) if t.name == name else t for t in workflow.transitions
        )
        return self.with_workflow(entity, transitions=transitions)

    def with_action(self, fqn: str, /, **changes: Any) -> Defs:
        actions = tuple(
            dataclasses.replace(a, **changes) if a.fqn == fqn else a for a in self.actions
        )
        return dataclasses.replace(self, actions=actions)

    def with_projection(self, fqn: str, /, **changes: Any) -> Defs:
        projections = tuple(
            dataclasses.replace(p, **changes) if p.fqn == fqn else p for p in self.projections
        )
        return dataclasses.replace(self, projections=projections)

    def add(self, *definitions: Entity | Action | Projection) -> Defs:
        result = self
        for d in definitions:
            if isinstance(d, Entity):
                result = dataclasses.replace(result, entities=(*result.entities, d))
            elif isinstance(d, Projection):
                result = dataclasses.replace(result, projections=(*result.projections, d))
            else:
                result = dataclasses.replace(result, actions=(*result.actions, d))
        return result


ORDER = "shop.order"


def baseline() -> Defs:
    """A valid plugin exercising every kind of definition and attribute.

    ``shop.copy`` mirrors ``shop.order`` so an action can be retargeted validly; ``remark``,
    ``aux``, the ``reopen`` transition, the ``shop.order.reopen`` action, the
    ``shop.order.brief`` projection and the ``shop.spare*`` handlers are referenced by
    nothing, so each can be changed alone.
    """
    order = Entity(
        fqn=ORDER,
        fields=(
            Field(name="title", type=FieldType.STRING, max_length=80),
            Field(name="note", type=FieldType.STRING, nullable=True),
            Field(name="qty", type=FieldType.INTEGER, default=1),
            Field(name="due_at", type=FieldType.DATETIME, nullable=True),
            Field(name="size", type=FieldType.ENUM, options=("s", "m", "l"), default="m"),
            Field(name="price", type=FieldType.MONEY, currency="EUR", nullable=True),
            Field(name="paid", type=FieldType.BOOLEAN, default=False),
            Field(
                name="status", type=FieldType.ENUM, options=("new", "open", "done"), default="new"
            ),
            Field(
                name="phase", type=FieldType.ENUM, options=("new", "open", "done"), default="new"
            ),
            Field(name="owner", type=FieldType.STRING, nullable=True),
            Field(name="closed_at", type=FieldType.DATETIME, nullable=True),
            Field(name="remark", type=FieldType.STRING, nullable=True, default="x"),
            Field(name="aux", type=FieldType.BOOLEAN, nullable=True),
        ),
        workflow=Workflow(
            state_field="status",
            initial="new",
            transitions=(
                Transition(
                    name="open", sources=("new",), target="open", stamps=(Stamp.actor("owner"),)
                ),
                Transition(
                    name="finish",
                    sources=("new", "open"),
                    target="done",
                    stamps=(Stamp.now("closed_at"), Stamp.literal("paid", True)),
                ),
                Transition(
                    name="reopen",
                    sources=("done",),
                    target="open",
                    stamps=(Stamp.literal("closed_at", None),),
                ),
            ),
        ),
    )
    return Defs(
        entities=(
            order,
            dataclasses.replace(order, fqn="shop.copy"),
            Entity(fqn="shop.tag", fields=(Field(name="name", type=FieldType.STRING),)),
        ),
        actions=(
            CreateAction(
                fqn="shop.order.create",
                entity=ORDER,
                inputs=("title", "note", "qty", "due_at", "size", "price"),
                stamps=(Stamp.actor("owner"),),
                roles=("clerk", "boss"),
                policies=("shop.vip",),
                effect="shop.notify",
            ),
            UpdateAction(
                fqn="shop.order.edit",
                entity=ORDER,
                patchable=("title", "note"),
                roles=("clerk",),
                policies=("shop.vip",),
                effect="shop.notify",
            ),
            TransitionAction(fqn="shop.order.open", entity=ORDER, transition="open"),
            TransitionAction(fqn="shop.order.finish", entity=ORDER, transition="finish"),
            TransitionAction(
                fqn="shop.order.reopen",
                entity=ORDER,
                transition="reopen",
                roles=("boss",),
                policies=("shop.vip",),
                effect="shop.notify",
            ),
        ),
        projections=(
            Projection(
                fqn="shop.order.list",
                entity=ORDER,
                fields=("id", "title", "status", "created_at"),
                actions=("shop.order.open", "shop.order.finish"),
            ),
            Projection(fqn="shop.order.brief", entity=ORDER, fields=("id", "title")),
        ),
        policies=("shop.vip", "shop.spare"),
        effects=("shop.notify", "shop.spare_fx"),
    )


def compile_plugins(*plugins: tuple[str, object]) -> Graph:
    """Compile exactly these plugins (no entry points, no environment)."""
    return compile_graph(load_plugins(Settings(), extra=plugins, entry_points=False))


def graph_errors(*plugins: tuple[str, object]) -> tuple[str, ...]:
    """The errors compiling these plugins reports (fails the test if it compiles)."""
    with pytest.raises(GraphError) as caught:
        compile_plugins(*plugins)
    return caught.value.errors


@pytest.fixture
def kit() -> SimpleNamespace:
    """The helpers of this module, for test modules."""
    return SimpleNamespace(
        make_plugin=make_plugin,
        baseline=baseline,
        compile_plugins=compile_plugins,
        graph_errors=graph_errors,
        Defs=Defs,
        ORDER=ORDER,
    )


# ---------------------------------------------------------------------------------------------
# Real plugin distributions, installed with pip into per-session target directories
# ---------------------------------------------------------------------------------------------

DISTS = Path(__file__).parent / "dists"
TARGETS: dict[str, tuple[str, ...]] = {
    "alpha": ("alpha",),
    "beta": ("beta",),
    "broken": ("broken", "importfail"),
    "clash": ("clash",),
}
"""Target directory -> the source trees under ``dists/`` installed into it."""


@pytest.fixture(scope="session")
def plugin_dists(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Install the test distributions (in parallel, once per session); name -> target dir.

    ``alpha_copy`` is a second copy of the ``alpha`` install (the same distribution twice).
    """
    root = tmp_path_factory.mktemp("plugin-dists")
    targets = {name: root / name for name in TARGETS}
    processes = {
        name: subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-deps",
                "--no-build-isolation",
                "--disable-pip-version-check",
                "--no-input",
                "--target",
                str(targets[name]),
                *(str(DISTS / source) for source in sources),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for name, sources in TARGETS.items()
    }
    for name, process in processes.items():
        output, _ = process.communicate(timeout=300)
        assert process.returncode == 0, f"pip install of {name} failed:\n{output}"
    targets["alpha_copy"] = root / "alpha_copy"
    shutil.copytree(targets["alpha"], targets["alpha_copy"])
    return targets


def installed_plugin_names() -> tuple[str, ...]:
    """Entry-point names installed in this environment (the sample plugins, typically)."""
    return tuple(sorted({ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)}))


def run_cli(
    *args: str, paths: Sequence[Path] = (), env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m host ARGS`` in a subprocess that sees only the plugins under ``paths``."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TESSERA_")}
    environment["PYTHONPATH"] = os.pathsep.join(str(p) for p in paths)
    environment["TESSERA_PLUGINS_DISABLED"] = ",".join(installed_plugin_names())
    # ``check`` plans the database: never the default ./tessera.db of whoever runs the tests
    # (a served checkout has one); a file that does not exist is reported, not created.
    unused = Path(tempfile.gettempdir()) / f"tessera-cli-{uuid.uuid4().hex}.db"
    environment["TESSERA_DATABASE_URL"] = f"sqlite:///{unused}"
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "host", *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """:func:`run_cli`."""
    return run_cli
