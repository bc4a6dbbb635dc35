"""The C unit tests (histogram, RNG, option tables, JSON writer), once as built and once under
ASan and UBSan, so a memory or UB bug in the shared library fails `make test`."""

import subprocess

import pytest

from conftest import REPO
from pagelab.run import tools
from pagelab.system import provenance


@pytest.mark.parametrize("target", ["test", "asan"])
def test_native_unit_tests(target):
    out = subprocess.run(["make", "-s", "-C", str(REPO / "native"), target],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "not ok" not in out.stdout
    assert out.stdout.count("ok ") >= 50, out.stdout[-2000:]


def test_the_tools_are_found_where_native_makefile_finds_them(native_build):
    """pagelab.run.tools.names() (the pipeline's native rule, the appendix) lists exactly the tools
    native/Makefile builds, and each built tool answers --version with its name."""
    out = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(REPO / "native"), "names"],
                         capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == tools.names()
    for name in tools.names():
        assert provenance.tool_version(tools.tool_path(name)).startswith(f"{name}-"), name
