"""One version everywhere: `pagelab --version`, every native tool's `--version`, pyproject.toml,
CITATION.cff and the CHANGELOG's newest release (pagelab.core.version)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

import pagelab
from conftest import REPO
from pagelab.core import version
from pagelab.run import tools
from pagelab.system import provenance


@pytest.mark.parametrize("described, expected", [
    ("v1.2.0", "1.2.0"),
    ("v1.2.0-3-gabc1234", "1.2.0+dev"),
    ("v10.0.12-140-g0123456789ab", "10.0.12+dev"),
    ("1.2.0", None),            # not a release tag: no v
    ("v1.2", None),
    ("vnext-3-gabc1234", None),
    ("abc1234", None),
])
def test_describe_output_becomes_a_version(described, expected):
    assert version.from_describe(described) == expected


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                   capture_output=True)


def test_the_version_follows_the_release_tag_and_falls_back_to_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "pagelab"\nversion = "2.3.4"\n')
    assert version.version(tmp_path) == "2.3.4"  # no git at all
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "pyproject.toml")
    _git(tmp_path, "commit", "-q", "-m", "first")
    assert version.version(tmp_path) == "2.3.4"  # git, no tag
    _git(tmp_path, "tag", "-a", "draft", "-m", "not a release")
    assert version.version(tmp_path) == "2.3.4"  # a tag that is no release
    _git(tmp_path, "tag", "-a", "v2.4.0", "-m", "release 2.4.0")
    assert version.version(tmp_path) == "2.4.0"
    _git(tmp_path, "commit", "-q", "--allow-empty", "-m", "second")
    assert version.version(tmp_path) == "2.4.0+dev"


def test_the_script_prints_what_the_package_says():
    out = subprocess.run(["python3", str(REPO / "src/pagelab/core/version.py")], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == pagelab.__version__


def test_pagelab_and_every_native_tool_print_one_version(native_build):
    out = subprocess.run([str(REPO / ".venv/bin/pagelab"), "--version"], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout == f"pagelab {pagelab.__version__}\n"
    assert (native_build / "version.h").read_text() == f'#define PAGELAB_VERSION "{pagelab.__version__}"\n'
    for name in tools.names():
        assert provenance.tool_version(tools.tool_path(name)) == f"{name}-{pagelab.__version__}", name


def test_citation_licence_and_changelog_name_the_declared_version():
    declared = version.declared(REPO)
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    assert {"message", "title", "authors"} <= set(cff)
    assert str(cff["version"]) == declared
    assert cff["license"] == "MIT"
    assert "MIT License" in (REPO / "LICENSE").read_text().splitlines()[0]
    releases = [line.split()[1] for line in (REPO / "CHANGELOG.md").read_text().splitlines()
                if line.startswith("## ") and line.split()[1][0].isdigit()]
    assert releases and releases[0] == declared, releases
