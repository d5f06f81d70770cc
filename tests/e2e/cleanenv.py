"""A Python environment without the sample plugins: the host and its dependencies only, for
installing a plugin for real and running it (``python -S`` plus a view of site-packages)."""

from __future__ import annotations

import os
import site
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

import host

SAMPLE_PREFIXES = ("tessera_sample", "_tessera_sample", "__editable___tessera_sample",
                   "tessera_helpdesk", "tessera_billing")  # fmt: skip


def _is_sample(name: str) -> bool:
    return name.lower().replace("-", "_").startswith(SAMPLE_PREFIXES)


@pytest.fixture(scope="module")
def clean_path(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Path entries with the host and its dependencies and no sample plugin distribution."""
    view = tmp_path_factory.mktemp("site-view")
    site_dirs = [Path(d) for d in site.getsitepackages() if Path(d).is_dir()]
    for site_dir in site_dirs:
        for entry in site_dir.iterdir():
            if entry.suffix == ".pth" or _is_sample(entry.name) or (view / entry.name).exists():
                continue
            (view / entry.name).symlink_to(entry)
    paths = [str(view)]
    host_root = Path(host.__file__).resolve().parent.parent
    if host_root not in site_dirs:  # an editable install of the host: add its source tree
        paths.insert(0, str(host_root))
    return paths


def run(
    args: list[str],
    path: list[str],
    tmp_path: Path,
    database: str = "install.db",
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """Run ``python -S args`` in ``cwd`` (default ``tmp_path``) with exactly ``path`` and no
    other ``TESSERA_*`` setting than a SQLite ``database`` in ``tmp_path`` and ``env``."""
    environment = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join(path),
        "PYTHONNOUSERSITE": "1",
        "HOME": str(tmp_path),
        "TESSERA_DATABASE_URL": f"sqlite:///{tmp_path / database}",
        # A pytest run inside keeps its temporary directories in the test's own (pytest
        # sessions sharing a root remove each other's at exit, and such removals race).
        "PYTEST_DEBUG_TEMPROOT": str(tmp_path),
        **{k: v for k, v in os.environ.items() if k.startswith("TESSERA_TEST_")},
        **(env or {}),
    }
    done = subprocess.run(
        [sys.executable, "-S", *args],
        env=environment,
        cwd=cwd or tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-10000:] + done.stderr[-10000:]
    return done.stdout.strip()
