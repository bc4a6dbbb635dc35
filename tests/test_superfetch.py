"""The Superfetch analogue (native/superfetch) and the kernel facts it rests on, on the real
kernel: swap, a memory cgroup, process_madvise(MADV_WILLNEED), and the emulated disk behind FUSE.

Kernel facts (mm/memory.c should_try_to_free_swap, mm/vmscan.c shrink_folio_list): a page read
back from swap keeps its slot while swap is under half full, so when it is reclaimed again
untouched it is dropped without a write; a dirtied one is written."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pagelab.experiments import recovery
from pagelab.run.superfetch import Agent, swap_devices
from pagelab.run.victim import Victim
from pagelab.system import config, counters, mm, state

PAGE = os.sysconf("SC_PAGE_SIZE")
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (swap, a memory cgroup, process_madvise)")


def vm(name: str) -> float:
    return counters.vmstat().get(name, 0.0)


def agent_options(**changes: Any) -> dict[str, Any]:
    """superfetch's options as the harness passes them (readyboost's agent settings at the
    schema's defaults: --poll, --group, --depth, --priority have no default in the tool), with
    `changes`."""
    cfg = config.resolve(config.validate({"profile": "quick"}))["readyboost"]
    return {**recovery.agent_options(cfg), **changes}


def drain(cg: state.Cgroup, limit: int) -> None:
    """Reclaim the group down to a few hundred KiB and give it `limit` again: shrink_folio_list
    runs over every reclaimable page, as it would for a hog's allocation (a write of the limit
    reclaims before it returns; the kernel gives up with EBUSY when a pass frees nothing, e.g.
    while the pages are still being written, or only moved just-touched pages to the inactive
    list, so the limit steps down and the steps are tried again)."""
    usage = cg.path("memory") / "memory.usage_in_bytes"
    for _ in range(100):
        for low in (4 << 20, 1 << 20, 512 << 10):
            try:
                cg.set("memory", cg.limit_file(), str(low), expect_rounded=True)
            except state.StateError:
                pass   # EBUSY: the next, lower step goes on from what this one reclaimed
        if int(usage.read_text()) <= 1 << 20:
            break
        time.sleep(0.05)   # pages still being written cannot be reclaimed yet
    cg.set("memory", cg.limit_file(), str(limit), expect_rounded=True)
    assert int(usage.read_text()) <= 1 << 20, "the group could not be reclaimed down to 1 MiB"


def swapped_out(cg: state.Cgroup, v: Victim, limit: int) -> int:
    """Pushes the victim's whole working set to swap and out of RAM (MADV_PAGEOUT, then the swap
    cache reclaimed); returns the pages only in swap (memory.stat swap)."""
    mm.pageout(v.pid, int(v.info["address"]), int(v.info["size"]))
    drain(cg, limit)
    return int(cg.stat()["swap"]) // PAGE


def swap_used_pages(path: Path) -> int:
    """Slots in use on the swap area at `path` (/proc/swaps, in KiB)."""
    for line in Path("/proc/swaps").read_text().splitlines()[1:]:
        f = line.split()
        if Path(f[0]).resolve() == Path(path).resolve():
            return int(f[3]) * 1024 // PAGE
    raise AssertionError(f"{path} is not swap")


@pytest.fixture
def session(tmp_path, monkeypatch, disk_tmp):
    """A state session around the test. It asks for disk_tmp, so that directory is made before
    the session and removed after the session has undone the devices the test made in it."""
    monkeypatch.setenv("PAGELAB_JOURNAL", str(tmp_path / "journal.jsonl"))
    from conftest import build_native

    build_native()
    before = state.show()
    with state.session() as st:
        yield st
    assert state.show() == before


@root_only
@pytest.mark.parametrize("swap_mib", [64, 12])
def test_a_swapped_in_page_keeps_its_slot_only_while_swap_is_under_half_full(session, disk_tmp, swap_mib):
    """8 MiB (2048 pages) pushed to swap, read back by faults (process_vm_readv: read faults,
    nothing written), reclaimed again. With 64 MiB of swap (25 % used) every page kept its slot and
    is dropped without a write: only the victim's own stack and heap are written (~50 pages).
    With 12 MiB (3071 slots, 67 % used) each fault freed its page's slot and marked it dirty as
    long as swap was at least half full (vm_swap_full), so reclaim writes at least the pages read
    back before usage fell to half: 2048 - 3071 / 2 = 512, again with the ~50. It may write more,
    up to every page read back: reclaim also frees the slot of a swap-cache page it activates
    while swap is at least half full (shrink_folio_list), and which pages it activates depends on
    their reference bits at that moment. With 64 MiB swap is never half full and neither path
    frees a slot."""
    st = session
    st.swap_file(disk_tmp / "swapfile", swap_mib << 20)
    limit = 64 << 20
    cg = st.cgroup("sftest", memory_limit=limit)
    with Victim(8 << 20, "ratio:0.5", 3, disk_tmp / "victim", cg, retouch_order="seq", timeout=120) as v:
        pages = int(v.info["size"]) // PAGE
        assert swapped_out(cg, v, limit) >= 0.95 * pages
        used = swap_used_pages(disk_tmp / "swapfile")   # every slot in use, the victim's stack too
        in0 = vm("pswpin")
        mm.touch(v.pid, int(v.info["address"]), int(v.info["size"]))
        assert vm("pswpin") - in0 >= 0.95 * pages
        out0 = vm("pswpout")
        drain(cg, limit)
        written = vm("pswpout") - out0
        assert int(cg.stat()["swap"]) // PAGE >= 0.95 * pages   # out of RAM again either way
        slots = (swap_mib << 20) // PAGE - 1
        freed_on_fault = max(0, used - slots // 2)
        if swap_mib == 12:
            assert freed_on_fault <= written <= 1.05 * pages, (written, freed_on_fault)
            assert written >= 400   # the rule is at work, not the noise of a few stray pages
        else:
            assert freed_on_fault == 0 and written <= 0.05 * pages, (written, freed_on_fault)
        assert v.retouch()["verify"]["ok"]


def restore_all(v: Victim, cg: state.Cgroup, disk, disk_tmp) -> dict:
    """The agent in mode after on the victim, started at once (the hogs gone) and run to the
    end of its restore; its report."""
    with Agent(v.pid, cg.path("memory"), disk_tmp / "agent",
               agent_options(mode="after", devices=",".join(swap_devices(disk.loop)), poll=0.02)) as agent:
        agent.hogs_gone()
        assert agent.wait_done(60), "the agent did not finish its restore"
        return agent.stop()


@root_only
def test_the_agent_reads_swapped_pages_into_the_swap_cache_and_they_are_dropped_not_rewritten(session, disk_tmp):
    """Swap on the emulated 2008 disk (FUSE), 8 MiB of a victim out of RAM. After --go the agent
    (process_madvise MADV_WILLNEED) reads >= 90 % of them into the swap cache: pswpin rises,
    nothing is left only in swap, and it says so (--done). Reclaimed again, the untouched pages
    cost no page-out; half of them dirtied first (process_vm_writev of the same bytes: a write
    fault frees the slot) are written again, and only those. The victim's re-touch of pages in
    the swap cache is minor faults only."""
    from pagelab.run.devices import emulated_swap

    st = session
    disk = emulated_swap(st, "hdd5400-2008", disk_tmp / "dev", 64 << 20)
    limit = 32 << 20
    cg = st.cgroup("sftest", memory_limit=limit)
    with Victim(8 << 20, "ratio:0.5", 4, disk_tmp / "victim", cg, retouch_order="seq", timeout=120) as v:
        addr, size = int(v.info["address"]), int(v.info["size"])
        pages = size // PAGE
        out = swapped_out(cg, v, limit)
        assert out >= 0.95 * pages
        # what is only in swap comes from the page counters, exact at once: a read of a few pages
        # shows before memory.stat, whose per-CPU statistics wait for 64 updates per CPU, would
        o0, in1 = recovery.out_of_ram(cg), vm("pswpin")
        mm.touch(v.pid, addr, 4 * PAGE)
        got = vm("pswpin") - in1
        assert 0 < got <= 16 and o0 - recovery.out_of_ram(cg) == got * PAGE, (o0, recovery.out_of_ram(cg), got)
        out -= got
        in0 = vm("pswpin")
        report = restore_all(v, cg, disk, disk_tmp)
        read = vm("pswpin") - in0
        assert read >= 0.9 * out and report["restore"]["swapins"] >= 0.9 * out
        # every page was out at --go and nothing swapped out after it: one pass asked for all of
        # them, and the done check saw them back at once after its last read (it reads the page
        # counters; memory.stat swap, flushed by each of the agent's looks, kept a residue that
        # only its 2 s flush cleared). Timed from the last read, not from --go: the reads take
        # the emulated disk's time (0.55-0.9 s for 8 MiB here and in recorded readyboost trials).
        last_read_s = (max(w["end_ns"] for w in report["windows"] if w["phase"] == "restore")
                       - report["t0_ns"]) / 1e9
        assert report["passes"] == 1 and 0 <= report["swap_done_s"] - last_read_s < 0.5, (last_read_s, report)
        # left only in swap: what the agent did not read (the victim's stack and libc pages are
        # in `out` too), and up to 2 % of the set that reclaim may drop again, clean, between the
        # agent's last read and this count (22 pages seen against 7 unread, in a fresh clone)
        left = int(recovery.out_of_ram(cg)) // PAGE
        assert left <= out - report["restore"]["swapins"] + 0.02 * pages, (left, out, report["restore"])
        assert int(cg.stat()["swapcached"]) >= 0.9 * size
        assert report["rewritten_pages"] == 0 and report["priority"] == {"nice": "19", "sched": "batch",
                                                                         "ioprio": "idle"}
        # untouched: dropped without a write
        out0 = vm("pswpout")
        drain(cg, limit)
        assert vm("pswpout") - out0 <= 0.05 * pages
        assert int(cg.stat()["swap"]) >= 0.95 * size
        # read back again, half dirtied: those, and only those, are written
        restore_all(v, cg, disk, disk_tmp)
        mm.touch(v.pid, addr, size // 2, write=True)
        out0 = vm("pswpout")
        drain(cg, limit)
        written = vm("pswpout") - out0
        # every dirtied page that left RAM was written, and no clean one; the drain may leave up
        # to its 1 MiB of the group resident, dirtied pages among them (898 of 1024 seen written)
        resident = int((cg.path("memory") / "memory.usage_in_bytes").read_text()) // PAGE
        assert pages // 2 - resident <= written <= 0.55 * pages, (written, resident)
        # and once more: the re-touch finds every page the agent read in the swap cache
        swapped = int(cg.stat()["swap"]) // PAGE
        report = restore_all(v, cg, disk, disk_tmp)
        assert report["restore"]["swapins"] >= 0.9 * swapped, (report["restore"], swapped)
        rep = v.retouch()
        # a page read from swap only where the agent read none (2 of 2048 seen); a page still
        # mapped needs no fault at all, so the minor faults are at most one per page
        missed = max(0, swapped - report["restore"]["swapins"])
        assert rep["retouch"]["majflt"] <= missed, (rep["retouch"], swapped, report["restore"])
        assert rep["retouch"]["minflt"] <= pages + 64 and rep["verify"]["ok"]


@root_only
def test_the_agent_stops_within_one_poll_interval_when_a_hog_allocates(session, disk_tmp):
    """A 24 MiB restore from the emulated disk (a few seconds); half a second in, a hog takes the
    group's free memory and holds it for 2 s. From the moment the group's free memory falls below
    the agent's stop threshold, the agent issues no group after one poll interval (and the one
    group in flight), and starts none while the hog holds; when the hog exits it resumes and
    finishes."""
    from pagelab.run.devices import emulated_swap
    from pagelab.run.tools import hog_run_cmd

    st = session
    disk = emulated_swap(st, "hdd5400-2008", disk_tmp / "dev", 96 << 20)
    limit = 48 << 20
    cg = st.cgroup("sftest", memory_limit=limit)
    poll_s, free_stop = 0.05, 2 << 20
    with Victim(24 << 20, "ratio:0.5", 5, disk_tmp / "victim", cg, retouch_order="seq", timeout=120) as v:
        assert swapped_out(cg, v, limit) >= 0.95 * (24 << 20) // PAGE
        with Agent(v.pid, cg.path("memory"), disk_tmp / "agent",
                   agent_options(mode="after", devices=",".join(swap_devices(disk.loop)), poll=poll_s,
                                 free_start=3 << 20, free_stop=free_stop)) as agent:
            agent.hogs_gone()
            time.sleep(0.5)
            hog = subprocess.Popen(hog_run_cmd(40 << 20, 1) + ["--hold", "2s"], stdout=subprocess.DEVNULL,
                                   preexec_fn=cg.preexec())
            full_at = None
            mem = cg.path("memory")
            while hog.poll() is None:
                free = (int((mem / "memory.limit_in_bytes").read_text())
                        - int((mem / "memory.usage_in_bytes").read_text()))
                if full_at is None and free < free_stop:
                    full_at = time.monotonic_ns()
                time.sleep(0.002)
            hog_end = time.monotonic_ns()
            assert hog.returncode == 0 and full_at is not None
            assert agent.wait_done(60)
            report = agent.stop()
        windows = report["windows"]
        assert report["restore"]["pressure_stops"] >= 1
        slack = int(poll_s * 1e9) + 200_000_000   # one poll, and the group in flight on a 2008 disk
        during = [w for w in windows if w["end_ns"] > full_at + slack and w["start_ns"] < hog_end]
        assert not during, (full_at, hog_end, during)
        assert any(w["start_ns"] >= hog_end for w in windows)   # resumed after the hog
        assert int(cg.stat()["swap"]) <= 0.02 * (24 << 20)


# A process that touches every page of `size` bytes over and over (in a small memory cgroup: its
# pages go out to swap and come back in).
RETOUCH = """b = bytearray({size})
while True:
    for i in range(0, len(b), {page}):
        b[i] = (b[i] + 1) & 255
"""


def nice19(then):
    """A preexec_fn: `then` (joining a cgroup), and nice 19."""
    def run():
        then()
        os.nice(19)
    return run


@root_only
def test_a_swap_out_or_in_outside_the_agents_group_neither_stops_nor_holds_its_reads(session, disk_tmp):
    """The agent's pressure check is its own memory cgroup's: 16 MiB of a victim out on the
    emulated 2008 disk (a restore of some seconds), while two hogs in another memory cgroup
    (16 MiB for 2 x 128 MiB of allocations, round after round) swap out to a faster swap file.
    The hogs run at nice 19, the agent's own: at nice 0 they took both cores from it (weights
    1024 against 15), and it once asked for 1792 of 4096 pages in a minute.
    The machine's pswpout rises in most of the agent's poll intervals, so a check on it (the
    machine's /proc/vmstat pswpout) would stop the agent at most looks and read at the few others
    (an agent with that check read none of its 128 groups in a minute here); the agent's own
    group does not swap out, so its restore runs to the end, with no look that found its group
    swapping out and no pressure stop.
    A third process in the other group re-touches 24 MiB over and over, so its pages come back
    in from the swap file all the while. The agent counts its own reads by the machine's pswpin,
    which these raise too, and no watched device completes them: it takes them back out once its
    devices are idle (the report's swapins_elsewhere), so its restore's active time stays within
    3x the emulated disk's time for the reads plus a second. An agent that kept them waited on
    them at every later group (up to 10 s each): 9 of 128 groups in 70 s."""
    from pagelab.run.devices import emulated_swap
    from pagelab.run.tools import hog_run_cmd

    st = session
    disk = emulated_swap(st, "hdd5400-2008", disk_tmp / "dev", 64 << 20)
    limit, ws = 48 << 20, 16 << 20
    cg = st.cgroup("sftest", memory_limit=limit)
    other = st.cgroup("sfother", memory_limit=16 << 20)
    poll_s = 0.02
    with Victim(ws, "ratio:0.5", 6, disk_tmp / "victim", cg, retouch_order="seq", timeout=120) as v:
        out = swapped_out(cg, v, limit)
        assert out >= 0.95 * ws // PAGE
        # the other group's pages go to this file (the highest priority), not to the victim's disk
        st.swap_file(disk_tmp / "swapfile", 512 << 20, priority=10)
        hogs = [subprocess.Popen(hog_run_cmd(128 << 20, 1_000_000), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, preexec_fn=nice19(other.preexec())) for _ in range(2)]
        hogs.append(subprocess.Popen([sys.executable, "-c", RETOUCH.format(size=24 << 20, page=PAGE)],
                                     preexec_fn=nice19(other.preexec())))
        try:
            out0 = vm("pswpout")
            deadline = time.monotonic() + 30
            while vm("pswpout") - out0 < (32 << 20) // PAGE and time.monotonic() < deadline:
                time.sleep(0.05)
            assert vm("pswpout") - out0 >= (32 << 20) // PAGE, "the other group's hog swapped out too little"
            in0 = vm("pswpin")
            dev0 = disk.flat_stats()
            with Agent(v.pid, cg.path("memory"), disk_tmp / "agent",
                       agent_options(mode="after", devices=",".join(swap_devices(disk.loop)), poll=poll_s)) as agent:
                agent.hogs_gone()
                samples, last = [], vm("pswpout")
                deadline = time.monotonic() + 60
                while not agent.is_done() and time.monotonic() < deadline and all(h.poll() is None for h in hogs):
                    time.sleep(poll_s)
                    now = vm("pswpout")
                    samples.append(now > last)
                    last = now
                done = agent.is_done()
                still_swapping = all(h.poll() is None for h in hogs)
                report = agent.stop()
                swapins = vm("pswpin") - in0
            # what the emulated disk did meanwhile (requests, modelled and backing time, late
            # replies), for a restore that did not finish
            dev = {k: round(x, 3) for k, x in
                   counters.Counters.delta({"disk": dev0}, {"disk": disk.flat_stats()})["disk"].items() if x}
        finally:
            for h in hogs:
                h.terminate()
                h.wait()
        left = int(cg.stat()["swap"])   # the victim's pages still only in swap
    assert still_swapping, "a hog of the other group ended before the restore did"
    assert done, (f"the agent did not finish its restore while another group swapped out and in: {report['restore']}; "
                  f"the emulated disk meanwhile: {dev}")
    # the machine swapped out in most poll intervals of the restore: a machine-wide check stops
    assert len(samples) >= 10 and sum(samples) >= 0.8 * len(samples), (sum(samples), len(samples))
    restore = report["restore"]
    assert restore["swapins"] >= 0.9 * out and restore["pressure_looks"] > 0, restore
    assert restore["swapping_looks"] == 0 and restore["pressure_stops"] == 0, restore
    assert left <= 0.02 * ws, left
    # the other group's swap-ins (the machine's less the emulated disk's reads, the victim's): at
    # least a MiB while the agent read. Whether some fell inside the agent's count (the report's
    # swapins_elsewhere) is chance: with two busy loops beside, none did in one run of three.
    elsewhere = swapins - dev.get("by_op.read.bytes", 0) // PAGE
    assert elsewhere >= (1 << 20) // PAGE, (swapins, elsewhere, restore)
    disk_s = dev.get("by_op.read.time_ns.measured", 0) / 1e9
    assert restore["active_s"] <= 3 * disk_s + 1, (restore, dev)


def test_bad_options_are_refused_with_the_key_named(native_build: Path, tmp_path):
    """A cgroup directory without memory files, a device with no /sys/class/block entry, a
    group below a page, or one of the options whose value is the schema's left off: exit 2, one
    line naming the option, nothing started."""
    from pagelab.run import tools

    schema = agent_options()   # poll, group, depth, priority, from the schema's agent settings
    assert set(schema) == {"poll", "group", "depth", "priority"}

    def cmd(*words: str, leave_out: str | None = None) -> list[str]:
        values = {k: v for k, v in {**schema, "mode": "after"}.items() if k != leave_out}
        return [*tools.command("superfetch", pid=os.getpid(), go=tmp_path / "go", **values), *words]

    out = subprocess.run(cmd("--cgroup", str(tmp_path)), capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "--cgroup" in out.stderr.splitlines()[0]
    cg = "/sys/fs/cgroup/memory" if Path("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists() else "/sys/fs/cgroup"
    out = subprocess.run(cmd("--cgroup", cg, "--devices", "nosuchdisk"), capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "--devices: nosuchdisk" in out.stderr.splitlines()[0]
    out = subprocess.run(cmd("--cgroup", cg, "--group", "100"), capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "--group" in out.stderr.splitlines()[0]
    for name in [*schema, "mode"]:
        out = subprocess.run(cmd("--cgroup", cg, leave_out=name), capture_output=True, text=True, timeout=30)
        assert out.returncode == 2 and out.stderr.splitlines()[0] == f"superfetch: missing --{name}", out.stderr
    assert not (tmp_path / "go").exists()
