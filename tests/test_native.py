"""The C unit tests (histogram, RNG, option tables, JSON writer), once as built and once under
ASan and UBSan, so a memory or UB bug in the shared library fails `make test`."""

import subprocess

import pytest

from conftest import REPO


@pytest.mark.parametrize("target", ["test", "asan"])
def test_native_unit_tests(target):
    out = subprocess.run(["make", "-s", "-C", str(REPO / "native"), target],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "not ok" not in out.stdout
    assert out.stdout.count("ok ") >= 50, out.stdout[-2000:]
