"""Pressure makes programs wait, never die: a memory cgroup made by `State.cgroup` (on_oom="wait")
lets its tasks wait for reclaim instead of being OOM-killed, a wait that nothing can end is ended
by the watchdog (and counted as a kill), and the kernel's own kill is counted when asked for.
Real cgroups, real hogs, real swap on the emulated 2008 disk."""

import os
from pathlib import Path

import pytest

from pagelab.run.devices import emulated_swap
from pagelab.run.victim import push_out
from pagelab.system import state

MiB = 1 << 20

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for memory cgroups and swap"),
    pytest.mark.skipif(not Path("/sys/fs/cgroup/memory").is_dir(),
                       reason="the OOM wait is tested on cgroup v1 (memory.oom_control)"),
]


def test_the_kernel_kills_when_asked_and_the_kill_is_counted(journal):
    """on_oom="kill", no swap for the group (swappiness 0): a hog of twice the limit is killed by
    the memory cgroup's OOM killer, and push_out reports it instead of raising."""
    with state.session() as st:
        cg = st.cgroup("oomtest", memory_limit=32 * MiB, swappiness=0, on_oom="kill")
        run = push_out(cg, 64 * MiB, timeout=120)
    assert run.killed == 1 and run.oom_kills >= 1, run
    assert not run.watchdog_fired
    assert "OOM killer" in run.invalid_reason()


def test_a_hog_the_oom_killer_ends_stops_its_partner_at_the_barrier_at_once(journal):
    """on_oom="kill", no swap for the group: two hogs of 32 MiB side by side in a 48 MiB group
    cannot both hold their round, so the OOM killer ends one; the other, at the barrier of
    round 1 or 2, finds it gone and stops at once (exit 3) instead of waiting out the barrier's
    timeout (300 s). push_out counts the kill and the stop, and the trial's reason names both."""
    for _ in range(3):
        with state.session() as st:
            cg = st.cgroup("oomtest", memory_limit=48 * MiB, swappiness=0, on_oom="kill")
            run = push_out(cg, 32 * MiB, rounds=3, count=2, timeout=240)
        if run.killed != 2:
            break
        # the kernel killed both (the second hog ran out of memory before the first one's was
        # freed: 1 run of 8 on an Intel VM): both kills counted, no barrier reached; run again
        assert run.oom_kills >= 2 and not run.partner_gone, run
    assert run.killed == 1 and run.oom_kills >= 1, run
    assert len(run.partner_gone) == 1 and "is gone (killed or exited)" in run.partner_gone[0], run
    assert run.seconds < 60, run
    why = run.invalid_reason()
    assert why.startswith("1 task(s) killed (the memory cgroup's OOM killer); 1 hog(s) stopped at once: "), why


def test_a_waiting_group_that_nothing_can_free_is_ended_by_the_watchdog(journal):
    """on_oom="wait" (the default), no swap for the group: the hog waits (under_oom) instead of
    dying; nothing can free memory, so after the watchdog's limit it re-enables the kill, the
    kernel kills the hog, and the run says why. Without the wait the hog dies at once (the
    watchdog never fires); without the watchdog it waits until the timeout."""
    with state.session() as st:
        cg = st.cgroup("oomtest", memory_limit=32 * MiB, swappiness=0)
        assert cg.oom_control()["oom_kill_disable"] == 1
        run = push_out(cg, 64 * MiB, timeout=120, oom_wait_limit_s=2.0)
        assert cg.oom_control()["oom_kill_disable"] == 1      # waiting again afterwards
    assert run.watchdog_fired and run.longest_oom_wait_s >= 2.0, run
    assert run.killed == 1 and run.oom_kills >= 1, run
    assert "nothing freed" in run.invalid_reason()


def test_hogs_wait_for_the_slow_disk_and_finish(journal, disk_tmp):
    """Two hogs of 64 MiB side by side in a 96 MiB group, six rounds, swap on the emulated
    5400 rpm disk (~50 MB/s): reclaim cannot keep up with their allocation. With the kernel's
    OOM killer (on_oom="kill") one hog was killed in each of 4 runs on the reference machine
    (as in the full profile's readyboost); here they wait for page-outs and every
    round of both completes with no task killed. In such a group hog faults its pages in one
    by one (a failed MADV_POPULATE_WRITE there is a SIGSEGV, not ENOMEM, on Linux 6.18)."""
    with state.session() as st:
        emulated_swap(st, "hdd5400-2008", disk_tmp / "dev", 256 * MiB)
        cg = st.cgroup("oomtest", memory_limit=96 * MiB)
        run = push_out(cg, 64 * MiB, rounds=6, count=2, timeout=600)
    assert run.invalid_reason() is None, run
    assert [len(r["rounds"]) for r in run.reports] == [6, 6]
    assert all(r["prefaulted_pages"] == 0 for rep in run.reports for r in rep["rounds"])
