"""The Python code passes ruff (pyflakes, pycodestyle, isort, bugbear, pyupgrade)."""

import subprocess

from conftest import REPO, VENV_BIN


def test_ruff_is_clean():
    out = subprocess.run([str(VENV_BIN / "ruff"), "check", "src", "tests", "workflow"],
                         cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
