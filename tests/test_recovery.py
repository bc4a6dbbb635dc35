"""After a crash, `make` recovers by itself: kill -9 of the whole pipeline while a trial holds
an emulated disk (a FUSE daemon and its mount) leaves the journal and Snakemake's lock; the
next run of the Makefile's runner restores the paging state, removes the stale lock, and
finishes, with the machine's paging state as it was before. The test holds the machine-wide
state lock (`state_lock`): both runs and their `pagelab state recover` are its children and run
under it, and while a real run holds the lock the test skips, naming it, before either starts."""

import os
import shutil
import signal
import subprocess
import time

import pytest
import yaml

from conftest import REPO, copy_native, copy_repo
from pagelab.system import state

pytestmark = pytest.mark.pipeline


def _journal_kinds(path):
    if not path.exists():
        return []
    import json

    return [json.loads(ln).get("kind") for ln in path.read_text().splitlines() if ln.strip()]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the trial mounts an emulated disk")
def test_make_recovers_after_kill_minus_9(tmp_path_factory, env, state_lock):
    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse")
    base = REPO / ".pytest-scratch" / f"recovery-{tmp_path_factory.getbasetemp().name}"
    shutil.rmtree(base, ignore_errors=True)
    repo = copy_repo(base / "repo")
    copy_native(repo)   # the run's trial starts without a build first
    cfg = yaml.safe_load((repo / "config/config.yaml").read_text())
    cfg["seekmodel"]["disk_profiles"] = ["hdd5400-2008"]
    cfg["seekmodel"]["block_sizes"] = ["4K", "64K"]
    cfg["seekmodel"]["spans"] = []
    (repo / "config/config.yaml").write_text(yaml.safe_dump(cfg))
    journal = base / "journal.jsonl"
    e = {**env, "PAGELAB_JOURNAL": str(journal)}
    before = state.show()
    cmd = ["bash", "workflow/scripts/run_pipeline.sh", "--workflow-profile", "workflow/profiles/default",
           "results/seekmodel/trials.csv"]
    proc = subprocess.Popen(cmd, cwd=repo, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while "daemon_pid" not in _journal_kinds(journal):
            assert proc.poll() is None, "the run ended before the emulated disk was up"
            assert time.monotonic() < deadline, "no emulated disk within 300 s"
            time.sleep(0.2)
        time.sleep(1.0)  # inside a trial
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    # The crash left its traces: the journal, Snakemake's lock, a FUSE mount.
    assert "daemon_pid" in _journal_kinds(journal)
    assert any((repo / ".snakemake" / "locks").iterdir())
    mounts = open("/proc/mounts").read()
    assert str(repo) in mounts or str(repo.resolve()) in mounts
    try:
        again = subprocess.run(cmd, cwd=repo, env=e, capture_output=True, text=True, timeout=900)
    finally:  # whatever happened, leave nothing behind
        if _journal_kinds(journal):
            state.restore(state.Journal(journal))
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-3000:]
    assert "restored" in again.stdout + again.stderr
    assert "removing the lock an interrupted run left" in again.stderr
    assert (repo / "results/seekmodel/trials.csv").stat().st_size > 0
    assert _journal_kinds(journal) == []
    assert str(repo.resolve()) not in open("/proc/mounts").read()
    assert state.show() == before
    shutil.rmtree(base, ignore_errors=True)


def test_a_second_make_while_one_runs_is_refused(tmp_path):
    """A second run waits for the first's lock (10 s by default; 1 s here) and is then refused,
    having started nothing."""
    import fcntl

    repo = copy_repo(tmp_path / "repo")
    (repo / "results").mkdir()
    with open(repo / "results/.make.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        t0 = time.monotonic()
        out = subprocess.run(["bash", "workflow/scripts/run_pipeline.sh", "-n", "results/paper.pdf"], cwd=repo,
                             capture_output=True, text=True, timeout=60,
                             env={**os.environ, "PAGELAB_MAKE_LOCK_WAIT_S": "1"})
        waited = time.monotonic() - t0
    assert out.returncode == 1, out.stderr
    assert "another make is running" in out.stderr and "(results/.make.lock is held for 1 s)" in out.stderr
    assert waited >= 1, waited
    assert not (repo / ".snakemake").exists()


@pytest.mark.parametrize("value", ["ten", "1.5", "-1", ""])
def test_a_lock_wait_that_is_not_whole_seconds_is_refused_before_anything(tmp_path, value):
    """PAGELAB_MAKE_LOCK_WAIT_S other than a whole number of seconds (set but empty included):
    one line naming it, exit 2, and no results directory or lock made."""
    repo = copy_repo(tmp_path / "repo")
    out = subprocess.run(["bash", "workflow/scripts/run_pipeline.sh", "-n", "results/paper.pdf"], cwd=repo,
                         capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PAGELAB_MAKE_LOCK_WAIT_S": value})
    assert out.returncode == 2, out.stderr
    assert out.stderr == f"make: PAGELAB_MAKE_LOCK_WAIT_S must be a whole number of seconds, not '{value}'\n"
    assert not (repo / "results").exists() and not (repo / ".snakemake").exists()
