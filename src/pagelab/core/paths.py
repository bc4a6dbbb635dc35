"""Where the repository is: the directory holding config/schema.yaml.

The pipeline runs from the repository root, so that is the current directory when it holds
the config; PAGELAB_ROOT overrides; otherwise the checkout this package was installed from.
Resolved at call time, so a copy of the repository (as the pipeline test makes) uses its own
files.
"""

from __future__ import annotations

import os
from pathlib import Path


def root() -> Path:
    env = os.environ.get("PAGELAB_ROOT")
    if env:
        return Path(env).resolve()
    cwd = Path.cwd()
    if (cwd / "config" / "schema.yaml").is_file():
        return cwd
    return Path(__file__).resolve().parents[3]
