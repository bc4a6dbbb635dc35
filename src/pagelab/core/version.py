"""The one version of pagelab and of every native tool, from the release tags.

A release is an annotated tag `vX.Y.Z`. In a git checkout the version is the newest such tag
reachable from HEAD (`git describe`), without its `v`: `X.Y.Z` at the tagged commit, `X.Y.Z+dev`
on any later one. Without git, or before the first tag, it is pyproject.toml's `version` (the
installed package's metadata when the source tree is not there).

The version names a release, not a commit: a commit on top of a release does not change it, so
the native tools, which carry it compiled in, are not rebuilt (and the trials measured with
them not re-run) at every commit. Each record's provenance names the exact commit.

This file imports nothing from pagelab, so that native/Makefile can run it with any Python 3.11+
(`python3 src/pagelab/core/version.py` prints the version), and both sides get one value from
one rule.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

TAG = re.compile(r"v(\d+\.\d+\.\d+)(?:-(\d+)-g[0-9a-f]+)?")
DEV = "+dev"  # the suffix of a version past its release tag


def source_root() -> Path | None:
    """The source tree this file belongs to (holding pagelab's pyproject.toml), or None when
    the package is installed elsewhere."""
    top = Path(__file__).resolve().parents[3]
    pyproject = top / "pyproject.toml"
    if pyproject.is_file() and (top / "src" / "pagelab").is_dir():
        return top
    return None


def declared(top: Path | None = None) -> str:
    """pyproject.toml's version (the installed metadata's without a source tree)."""
    top = top if top is not None else source_root()
    if top is None:
        from importlib.metadata import version as installed

        return installed("pagelab")
    with open(top / "pyproject.toml", "rb") as f:
        return str(tomllib.load(f)["project"]["version"])


def from_describe(described: str) -> str | None:
    """`git describe --tags --match 'v[0-9]*'` output as a version: v1.2.0 -> 1.2.0,
    v1.2.0-3-gabc1234 -> 1.2.0+dev; None for anything else."""
    m = TAG.fullmatch(described.strip())
    if not m:
        return None
    return m.group(1) + (DEV if m.group(2) else "")


def described(top: Path) -> str | None:
    """What `git describe` says of the checkout at `top`, or None without git or a tag."""
    if not (top / ".git").exists():
        return None
    try:
        out = subprocess.run(["git", "-C", str(top), "describe", "--tags", "--match", "v[0-9]*"],
                             capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def version(top: Path | None = None) -> str:
    """The version: from the newest release tag in a git checkout, else pyproject.toml's."""
    top = top if top is not None else source_root()
    if top is not None:
        tag = described(top)
        if tag is not None and from_describe(tag) is not None:
            return str(from_describe(tag))
    return declared(top)


if __name__ == "__main__":
    print(version(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else None))
