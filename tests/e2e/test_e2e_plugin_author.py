"""The plugin author's path, from an empty folder outside this repository: the guide's
testing section used verbatim, and the project ``tessera new-plugin`` makes, each installed
for real and run with its own configuration (not this repository's pytest settings), in a
Python environment that has the host and no sample plugin."""

from __future__ import annotations

import configparser
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .cleanenv import run

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "docs" / "writing-plugins.md").read_text()
BLOCK = re.compile(r"^```(?:python|toml)\n# (\S+): ([a-z0-9-]+)\n(.*?)^```$", re.M | re.S)


def guide_blocks(path: str) -> list[str]:
    """The guide's code blocks taken from ``path``, in the guide's order."""
    return [code for source, _, code in BLOCK.findall(GUIDE) if source == path]


def install(project: Path, target: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
         "--no-build-isolation", "--target", str(target), str(project)],
        check=True,
    )  # fmt: skip


def test_the_guides_testing_section_works_in_an_empty_folder(
    clean_path: list[str], tmp_path: Path
) -> None:
    pytest.importorskip("hatchling", reason="--no-build-isolation builds with hatchling")
    project = tmp_path / "helpdesk"
    (project / "tests").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        "\n\n".join(guide_blocks("sample_plugins/helpdesk/pyproject.toml"))
    )
    # The plugin itself is the one the guide walks through, piece by piece.
    shutil.copytree(ROOT / "sample_plugins/helpdesk/tessera_helpdesk", project / "tessera_helpdesk")
    test_file = "sample_plugins/helpdesk/tests/test_helpdesk_plugin.py"
    (project / "tests" / "test_helpdesk_plugin.py").write_text("\n\n".join(guide_blocks(test_file)))
    target = tmp_path / "site"
    install(project, target)
    out = run(["-m", "pytest", "-p", "no:cacheprovider"], [str(target), *clean_path],
              tmp_path, cwd=project)  # fmt: skip
    assert re.search(r"=+ 2 passed in ", out.splitlines()[-1]), out
    assert f"rootdir: {project}" in out and "configfile: pyproject.toml" in out, out


def test_new_plugin_passes_its_own_tests_and_tox_commands(
    clean_path: list[str], tmp_path: Path
) -> None:
    pytest.importorskip("hatchling", reason="--no-build-isolation builds with hatchling")
    work = tmp_path / "fresh"
    work.mkdir()
    path = [str(tmp_path / "site"), *clean_path]
    assert run(["-m", "host", "new-plugin", "gadgets"], path, tmp_path, cwd=work).startswith(
        "created"
    )
    project = work / "tessera-gadgets"
    install(project, tmp_path / "site")
    listing = run(["-m", "host", "plugins"], path, tmp_path, cwd=project)
    assert listing.splitlines()[0] == "gadgets: tessera-gadgets 0.1.0", listing
    # The tox file's commands, as tox would run them in the project's folder.
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(project / "tox.ini")
    env = dict(line.split("=", 1) for line in tox["testenv"]["set_env"].strip().splitlines())
    env = {key.strip(): value.strip() for key, value in env.items()}
    outputs = []
    for line in tox["testenv"]["commands"].strip().splitlines():
        argv = shlex.split(line.replace("{posargs}", "-p no:cacheprovider"))
        # ``python ...`` as it is; a console script (``pytest``) as its module.
        argv = argv[1:] if argv[0] == "python" else ["-m", *argv]
        outputs.append(run(argv, path, tmp_path, cwd=project, env=env))
    assert outputs[0].startswith("ok "), outputs
    assert re.search(r"=+ 5 passed in ", outputs[1].splitlines()[-1]), outputs[1]
