"""The Python code passes ruff (pyflakes, pycodestyle, isort, bugbear, pyupgrade)."""

import subprocess

from conftest import REPO, VENV_BIN


def test_ruff_is_clean():
    out = subprocess.run([str(VENV_BIN / "ruff"), "check", "src", "tests", "workflow"],
                         cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_snakemake_lint_is_clean(env):
    """Snakemake's own linter finds nothing: every shell rule names its software
    (environment.yml), no long run blocks, no absolute paths, no functions among rules."""
    out = subprocess.run(["snakemake", "--lint"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    text = out.stdout + out.stderr
    assert "Lints for" not in text, text[-3000:]
