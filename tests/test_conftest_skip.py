"""The suite's own rule that a test does not change paging state beside a real run: StateBusy
(the state lock held by a real run) skips the test with its message, whether the test's body,
a fixture's set-up or a fixture's teardown raised it (tests/conftest.py). Checked on a small
generated test file run by pytest in a subprocess with tests/conftest.py as its plugin; each
StateBusy is raised directly, so no lock is taken and nothing on the machine changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import REPO

TESTS = '''
import pytest
from pagelab.system.state import StateBusy


def busy(where):
    return StateBusy(f"a pagelab run (pid 1: make) holds the paging state lock ({where})", None)


@pytest.fixture
def busy_setup():
    raise busy("setup")
    yield


@pytest.fixture
def busy_teardown():
    yield
    raise busy("teardown")


@pytest.fixture
def busy_teardown_too():
    yield
    raise busy("teardown too")


@pytest.fixture(scope="module")
def busy_module():
    raise busy("module setup")
    yield


@pytest.fixture
def broken_teardown():
    yield
    raise ValueError("not the lock")


@pytest.fixture
def broken_setup():
    raise ValueError("not the lock")


def test_setup(busy_setup):
    pass


def test_teardown(busy_teardown):
    pass


def test_two_teardowns(busy_teardown, busy_teardown_too):
    pass


def test_module_first(busy_module):
    pass


def test_module_second(busy_module):
    pass


def test_body():
    raise busy("call")


def test_busy_beside_another_error(busy_teardown, broken_teardown):
    pass


def test_another_error(broken_setup):
    pass
'''

# each report of the inner run: (test, phase) -> [outcome, the skip's reason or None]
RECORD = '''
import json, os


def pytest_runtest_logreport(report):
    reason = report.longrepr[2] if report.skipped and isinstance(report.longrepr, tuple) else None
    with open(os.environ["REPORTS"], "a") as fh:
        fh.write(json.dumps([report.nodeid.split("::")[-1], report.when, report.outcome, reason]) + "\\n")
'''


def test_state_busy_in_a_fixture_or_the_body_is_a_skip_with_its_reason(tmp_path):
    (tmp_path / "test_busy.py").write_text(TESTS)
    (tmp_path / "record.py").write_text(RECORD)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    reports = tmp_path / "reports.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), str(tmp_path)]),
           "REPORTS": str(reports)}
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-p", "record", "-p", "no:cacheprovider",
                          "-q", "--rootdir", str(tmp_path), "test_busy.py"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    rows = [json.loads(line) for line in reports.read_text().splitlines()]
    got = {(t, when): (outcome, reason) for t, when, outcome, reason in rows}

    def skipped(where: str) -> tuple[str, str]:
        return "skipped", f"Skipped: a pagelab run (pid 1: make) holds the paging state lock ({where})"

    text = out.stdout + out.stderr
    assert got[("test_setup", "setup")] == skipped("setup"), text
    assert got[("test_teardown", "call")] == ("passed", None), text
    assert got[("test_teardown", "teardown")] == skipped("teardown"), text
    assert got[("test_two_teardowns", "teardown")][0] == "skipped", text
    assert got[("test_module_first", "setup")] == skipped("module setup"), text
    assert got[("test_module_second", "setup")] == skipped("module setup"), text   # the set-up's cached error
    assert got[("test_body", "call")] == skipped("call"), text
    # anything but the lock is still an error, beside StateBusy too
    assert got[("test_busy_beside_another_error", "teardown")][0] == "failed", text
    assert got[("test_another_error", "setup")][0] == "failed", text
    assert [k for k, (outcome, _) in got.items() if outcome == "failed"] == \
        [("test_busy_beside_another_error", "teardown"), ("test_another_error", "setup")], text
    assert out.returncode == 1 and "2 errors" in out.stdout, text
