"""simdisk's fault injection on real swap, through the harness: each fault kind on swap over
the emulated disk (real FUSE, a loop device with direct IO, swap in a memory cgroup, all through
pagelab.system.state), in a run of `harness.execute` whose first trial meets the fault and whose
later trials do not. The faulty trial is recorded as invalid with what the device did as the
reason, the state is restored after it, and the run goes on to valid trials.

What the kernel does (Linux 6.18 here), checked below: a swap-in read that fails (error_reads,
bad_blocks, or a stalled device timing out) kills the victim with SIGBUS; a swap-out write that
fails leaves the page dirty in memory and the kernel writes it again, so the run completes; a
delayed or stalled device only makes the re-touch slower. A device that stops answering for good
fails its requests after command_timeout_ms and is offline from then on, so neither the trial
nor the restore (swapoff reads what is still in swap) can hang.
"""

from __future__ import annotations

import errno
import json
import mmap
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pagelab.experiments import harness
from pagelab.run import devices, trials
from pagelab.run.victim import Victim, push_out
from pagelab.system import state
from test_simdisk import mounted, run, trace_rows

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/fuse"),
                                reason="needs root and /dev/fuse (FUSE mount, loop, swap)")

MiB = 1 << 20
WS = 16 * MiB              # the victim's working set
HEADROOM = 4 * MiB         # the cgroup holds WS + HEADROOM; the hog asks for as much
SWAP = 64 * MiB
PROFILE = "zero"           # no device time: the trial takes what the kernel and FUSE take
STALL_UP_S, STALL_DOWN_S = 1.0, 0.5
TIMEOUT_MS = 1000

# Each fault kind: the profile keys, whether the faults are enabled before the hogs push the
# victim out (write faults) or after (read faults), and what the device's counters must show.
FAULTS: dict[str, dict[str, Any]] = {
    "read-errors": {"keys": {"error_reads": 1}, "before_pushout": False, "counter": "read_errors"},
    "bad-blocks": {"keys": {"bad_blocks": f"1-{SWAP // 4096 - 1}"}, "before_pushout": False,
                   "counter": "bad_block_errors"},
    "write-errors": {"keys": {"error_writes": 0.5}, "before_pushout": True, "counter": "write_errors"},
    "latency-spikes": {"keys": {"read_delay_ms": 5, "delay_share": 0.05}, "before_pushout": False,
                       "counter": "delayed"},
    "stall-for-a-time": {"keys": {"stall": "true", "up_interval_s": STALL_UP_S,
                                  "down_interval_s": STALL_DOWN_S},
                         "before_pushout": False, "counter": "stalled"},
    "stall-for-good": {"keys": {"stall": "true", "command_timeout_ms": TIMEOUT_MS},
                       "before_pushout": False, "counter": "timeouts"},
}


# --- the faults on a plain mount (no swap) -----------------------------------------------------

BAD_FAULT_KEYS = [
    ("error_reads=1.5", "--set error_reads: must be <= 1"),
    ("bad_blocks=7-3", "bad_blocks: expected block numbers or ranges"),
    ("bad_blocks=x", "bad_blocks: expected block numbers or ranges"),
    ("bad_blocks=999999999999", "bad_blocks: a block lies beyond the capacity"),
    ("bad_block_bytes=3000", "bad_block_bytes: must be a power of two"),
    ("command_timeout_ms=0", "--set command_timeout_ms: must be > 0"),
    ("down_interval_s=2", "down_interval_s: no fault to schedule"),
    ("stall=maybe", "--set stall: expected true or false"),
]


@pytest.mark.parametrize("setting,named", BAD_FAULT_KEYS, ids=[s for s, _ in BAD_FAULT_KEYS])
def test_bad_fault_keys_are_refused_naming_the_key(simdisk: Path, tmp_path: Path, setting, named) -> None:
    done = run(simdisk, "model", "--profile", "zero", "--rw", "read", "--bs", "4k", "--set", setting)
    assert done.returncode == 2 and named in done.stderr, done.stderr
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    done = run(simdisk, "mount", mnt, "--profile", "zero", "--backing", tmp_path / "b", "--set", setting)
    assert done.returncode == 2 and named in done.stderr, done.stderr
    assert not (tmp_path / "b").exists()


def test_fault_keys_belong_in_the_mounted_profile(simdisk: Path, tmp_path: Path) -> None:
    for name in ("tiered-readyboost", "hdd5400-2008", "usbstick-2008"):
        (tmp_path / f"{name}.yaml").write_text((devices.profiles_dir() / f"{name}.yaml").read_text())
    with open(tmp_path / "usbstick-2008.yaml", "a") as f:
        f.write("error_reads: 1\n")
    done = run(simdisk, "model", "--profile", tmp_path / "tiered-readyboost.yaml", "--rw", "read", "--bs", "4k")
    assert done.returncode == 2 and "cache_profile:" in done.stderr and "error_reads:" in done.stderr
    # in the mounted profile itself they are fine, and `model` describes the device without them
    plain = run(simdisk, "model", "--profile", "zero", "--rw", "randread", "--bs", "4k")
    faulty = run(simdisk, "model", "--profile", "zero", "--rw", "randread", "--bs", "4k", "--set",
                 "error_reads=1,read_delay_ms=5")
    assert faulty.returncode == 0 and faulty.stdout == plain.stdout


@pytest.fixture(scope="module")
def simdisk(native_build: Path) -> Path:
    return native_build / "simdisk"


def direct_io(disk: Path, offset: int, size: int, write: bool) -> int:
    """One O_DIRECT read or write: 0, or the errno it failed with."""
    fd = os.open(disk, (os.O_WRONLY if write else os.O_RDONLY) | os.O_DIRECT)
    try:
        (os.pwritev if write else os.preadv)(fd, [mmap.mmap(-1, size)], offset)
        return 0
    except OSError as exc:
        return exc.errno
    finally:
        try:
            os.close(fd)
        except OSError:
            pass     # the mount is gone (the stalled daemon was stopped)


def pread(disk: Path, offset: int, size: int = 4096) -> int:
    return direct_io(disk, offset, size, write=False)


def pwrite(disk: Path, offset: int, size: int = 4096) -> int:
    return direct_io(disk, offset, size, write=True)


needs_fuse = pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/fuse"),
                                reason="needs root and /dev/fuse")


@needs_fuse
def test_bad_blocks_fail_reads_until_written_and_only_once_enabled(simdisk: Path, disk_tmp: Path) -> None:
    """dm-dust: reads touching a bad block fail with EIO while the faults are enabled; a write
    remaps the blocks it covers; `enable` and `disable` arm and disarm (MOUNTPOINT/control)."""
    with mounted(simdisk, disk_tmp, "zero", "--size", "64M", "--set",
                 "bad_blocks=2 10-11,faults_enabled=false") as m:
        assert pread(m.disk, 2 * 4096) == 0                  # not yet enabled
        (m.dir / "control").write_text("enable\n")
        assert [pread(m.disk, b * 4096) for b in (1, 2, 3, 10, 11, 12)] == [0, errno.EIO, 0, errno.EIO, errno.EIO, 0]
        assert pread(m.disk, 0, 16384) == errno.EIO          # a read that touches block 2
        assert pwrite(m.disk, 10 * 4096) == 0                # remaps block 10
        assert pread(m.disk, 10 * 4096) == 0 and pread(m.disk, 11 * 4096) == errno.EIO
        (m.dir / "control").write_text("disable\n")
        assert pread(m.disk, 2 * 4096) == 0
        with pytest.raises(OSError) as bad:
            (m.dir / "control").write_text("explode\n")
        assert bad.value.errno == errno.EINVAL
        with pytest.raises(PermissionError):
            (m.dir / "control").read_text()
        faults = m.stats()["faults"]
    assert faults["bad_block_errors"] == 5 and faults["remapped_blocks"] == 1
    assert faults["bad_blocks_left"] == 2 and faults["errors"] == 5 and not faults["enabled"]
    rows = trace_rows(m.trace)
    assert [r["fault"] for r in rows if r["fault"] != "-"] == ["bad_block"] * 5


@needs_fuse
def test_error_shares_are_drawn_from_the_seed(simdisk: Path, disk_tmp: Path) -> None:
    """error_reads: a share of the reads fails, the same ones for the same seed."""
    failed = {}
    for run_id, seed in (("a", 5), ("b", 5), ("c", 6)):
        with mounted(simdisk, disk_tmp / run_id, "zero", "--size", "64M", "--set",
                     f"error_reads=0.3,fault_seed={seed}") as m:
            failed[run_id] = [pread(m.disk, i * 4096) == errno.EIO for i in range(300)]
            faults = m.stats()["faults"]
        assert faults["read_errors"] == sum(failed[run_id])
    assert failed["a"] == failed["b"] != failed["c"]
    assert 0.2 < np.mean(failed["a"]) < 0.4


@needs_fuse
def test_delays_add_to_the_service_time_and_the_trace_says_so(simdisk: Path, disk_tmp: Path) -> None:
    """dm-delay: 30 ms before each read; write_delay_ms for writes; the model's time follows.
    The same reads with the faults disarmed and armed, in one run: each armed read waits at
    least its 30 ms (the reply is not sent before it), and the median armed read takes less
    than 45 ms more than the median disarmed one: a delay applied twice (60 ms more) fails
    it, while a load that slows every read alike moves both medians."""
    n = 5
    with mounted(simdisk, disk_tmp, "zero", "--size", "64M", "--set",
                 "read_delay_ms=30,write_delay_ms=10,faults_enabled=false") as m:
        def timed_reads() -> list[float]:
            took = []
            for i in range(n):
                t0 = time.monotonic()
                assert pread(m.disk, i * 4096) == 0
                took.append(time.monotonic() - t0)
            return took

        plain = timed_reads()
        (m.dir / "control").write_text("enable\n")
        delayed = timed_reads()
        assert pwrite(m.disk, 0) == 0
        stats = m.stats()
    assert min(delayed) >= 0.03, delayed
    assert np.median(delayed) - np.median(plain) < 0.045, (delayed, plain)
    rows = trace_rows(m.trace)
    assert [(r["op"], r["fault"], int(r["fault_ns"])) for r in rows] == [
        *[("read", "-", 0)] * n, *[("read", "delay", 30_000_000)] * n, ("write", "delay", 10_000_000)]
    assert all(int(r["service_ns"]) == int(r["fault_ns"]) for r in rows)   # zero: nothing else
    assert stats["faults"]["delayed"] == n + 1 and stats["faults"]["delay_ns"] == n * 30_000_000 + 10_000_000
    assert stats["time_ns"]["fault"] == n * 30_000_000 + 10_000_000


@needs_fuse
def test_a_stalled_daemon_still_stops_at_once(simdisk: Path, disk_tmp: Path) -> None:
    """A device stalled for good (a 60 s command timeout): SIGTERM ends the daemon at once
    (exit 0, unmounted); the waiting read fails instead of waiting out the timeout."""
    with mounted(simdisk, disk_tmp, "zero", "--size", "64M", "--set",
                 "stall=true,command_timeout_ms=60000") as m:
        result: list[int] = []
        reader = threading.Thread(target=lambda: result.append(pread(m.disk, 0)))
        reader.start()
        time.sleep(0.3)
        assert reader.is_alive()                             # the device answers nothing
        t0 = time.monotonic()
        os.kill(m.pid, signal.SIGTERM)
        assert m.process.wait(timeout=10) == 0
        reader.join(timeout=10)
        # at once: far below the 60 s the read would otherwise wait, whatever the load
        assert time.monotonic() - t0 < 10
    assert result and result[0] in (errno.EIO, errno.ENOTCONN)


def into_a_down_interval(armed_lo: float, armed_hi: float, min_left: float = 0.3) -> None:
    """Sleeps into a down interval of the up/down schedule the device armed between armed_lo
    and armed_hi (the control write's call and return), with at least min_left s of it left;
    a sleep that overshoots that (a loaded machine) waits for the next cycle's."""
    cycle = STALL_UP_S + STALL_DOWN_S
    k = 0
    while True:
        time.sleep(max(0.0, armed_hi + k * cycle + STALL_UP_S + 0.02 - time.monotonic()))
        if time.monotonic() <= armed_lo + k * cycle + STALL_UP_S + STALL_DOWN_S - min_left:
            return
        k += 1


def fault_trial(kind: str, seen: dict[str, Any]):
    """A pagein-like trial: swap on the emulated disk, a victim in a memory cgroup pushed out by
    a hog and re-touched; the first repetition's device has `kind`'s faults."""
    spec = FAULTS[kind]

    def run_trial(st: state.State, t: trials.Trial, scratch: Path) -> dict[str, Any]:
        faulty = t.repetition == 0
        keys = {**spec["keys"], "faults_enabled": "false"} if faulty else None
        with harness.work_dir(scratch / f"faults-{t.trial_id}") as work, st.scope():
            disk = devices.emulated_swap(st, PROFILE, work / "dev", SWAP, overrides=keys)
            cg = st.cgroup("faults", memory_limit=WS + HEADROOM)
            try:
                with Victim(WS, "ratio:0.5", t.seed, work / "victim", cg, retouch_order="random", timeout=60) as v:
                    if faulty and spec["before_pushout"]:
                        disk.control("enable")
                    hog = push_out(cg, WS + HEADROOM)
                    if faulty and not spec["before_pushout"]:
                        armed_lo = time.monotonic()
                        disk.control("enable")
                        if "up_interval_s" in spec["keys"]:
                            into_a_down_interval(armed_lo, time.monotonic())
                    t0 = time.monotonic()
                    try:
                        rep = v.retouch()
                    finally:
                        seen.setdefault("retouch_s", []).append(time.monotonic() - t0)
                        seen.setdefault("victim_rc", []).append(v.proc.returncode)
            finally:   # read beside the harness (disk.stats() would note the faults for it)
                seen.setdefault("faults", []).append(json.loads((disk.mountpoint / "stats").read_text())["faults"])
        return {"retouch_s": rep["retouch"]["ns"] / 1e9, "majflt": rep["retouch"]["majflt"],
                "killed": hog.invalid_reason()}

    return run_trial


@pytest.mark.parametrize("kind", list(FAULTS))
def test_a_failed_paging_device_makes_its_trial_invalid_and_the_run_goes_on(journal, disk_tmp, native_build,
                                                                            kind):
    before = state.show()
    seen: dict[str, Any] = {}
    out = disk_tmp / "out"
    cfg = {"repetitions": {"n_min": 2, "n_max": 2, "ci_pct": 50}, "rng_seed": 7}
    t0 = time.monotonic()
    frame = harness.execute("faults", cfg, out, disk_tmp / "scratch", [{"fault": kind}],
                            lambda c: c["fault"], fault_trial(kind, seen), lambda r: r["retouch_s"],
                            ["retouch_s", "majflt"], tools=["hog", "simdisk"],
                            validity=lambda p, r: r.get("killed"))
    took = time.monotonic() - t0
    assert state.show() == before                       # every trial's scope restored it all
    assert not list((disk_tmp / "scratch").glob("faults-*"))
    frame = frame.sort_values("order")
    first, rest = frame.iloc[0], frame.iloc[1:]
    assert first["trial_id"] == f"{kind}-r00" and first["status"] == "ok"
    assert not first["valid"], frame
    reason = first["invalid_reason"]
    assert reason.startswith(f"the paging device failed: simdisk {PROFILE} injected"), reason
    assert len(rest) >= 2 and rest["valid"].all() and (rest["status"] == "ok").all(), frame
    records = {r.stem: json.loads(r.read_text()) for r in (out / "trials").glob("*.json")}
    assert records[f"{kind}-r00"]["invalid_reason"] == reason
    assert pd.read_csv(out / "trials.csv")["valid"].tolist() == frame["valid"].tolist()

    counter = FAULTS[kind]["counter"]
    rc = seen["victim_rc"][0]
    if kind in ("read-errors", "bad-blocks", "stall-for-good"):
        # the kernel's answer to a swap-in read error: SIGBUS to the task that faulted
        assert rc == -7, seen
        assert "victim killed by SIGBUS" in reason, reason
    else:
        assert rc == 0, seen                            # the re-touch completed, every page verified
    if kind == "stall-for-good":
        assert "offline" in reason
        assert seen["retouch_s"][0] >= TIMEOUT_MS / 1e3      # the read waited for the timeout ...
        assert seen["retouch_s"][0] < TIMEOUT_MS / 1e3 + 5   # ... and no longer
    faults = seen["faults"][0]
    if kind == "stall-for-a-time":
        # each stalled request waited for the end of its down interval (stall_ns adds up these
        # waits); the re-touch waited for the first of them, which arrived first in its
        # interval and so waited longest: at least the mean
        assert faults["stalled"] > 0 and seen["retouch_s"][0] >= faults["stall_ns"] / faults["stalled"] / 1e9, seen
    if kind == "latency-spikes":
        # The device serves one request at a time, so the delays (delay_ns, the sum) pass
        # one after another within the re-touch, which waits on its swap-ins: all but those of
        # the readahead still in flight when it ends (a few of hundreds). Half of them leaves
        # room for that, and fails a delay that is counted but never waited.
        assert seen["retouch_s"][0] >= 0.5 * faults["delay_ns"] / 1e9, (seen, faults)
    # the counters of the faulty device (read at the end of its trial, before the restore)
    assert seen["faults"][0][counter] > 0, seen["faults"][0]
    assert all(f["errors"] == f["delayed"] == f["stalled"] == 0 for f in seen["faults"][1:])
    assert took < 60, took


def process_state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_a_restore_while_the_device_stopped_answering_ends_within_the_command_timeout(
        journal, disk_tmp, native_build):
    """The harness stops (its session ends) while the victim waits in a swap-in on a device that
    stopped answering for good: swapoff, the first undo, must read what is still in swap. The
    daemon fails the waiting read after command_timeout_ms and every later one at once (offline),
    so the restore ends within that timeout, leaves nothing behind, and the victim, whose page
    never came back, is gone: the restore undoes the cgroup (made after the swap) first and ends
    its tasks with SIGKILL, which takes effect when the failed read returns; a victim whose read
    failed before that signal was sent dies of the swap-in error's SIGBUS instead."""
    timeout_s = 2.0
    before = state.show()
    victim = Victim(WS, "ratio:0.5", 3, disk_tmp / "victim", None, retouch_order="random", timeout=60)
    with state.session() as st:
        disk = devices.emulated_swap(st, PROFILE, disk_tmp / "dev", SWAP, overrides={
            "stall": "true", "command_timeout_ms": int(timeout_s * 1000), "faults_enabled": "false"})
        cg = st.cgroup("faults", memory_limit=WS + HEADROOM)
        victim.cgroup = cg
        victim.__enter__()
        push_out(cg, WS + HEADROOM)
        disk.control("enable")
        t_go = time.monotonic()
        victim.go.touch()                             # the re-touch starts; its first swap-in waits
        deadline = time.monotonic() + 5
        while process_state(victim.pid) != "D":
            assert time.monotonic() < deadline, "the victim never waited on the device"
            time.sleep(0.01)
        t0 = time.monotonic()
    took = time.monotonic() - t0
    try:
        out, _ = victim.proc.communicate(timeout=30)
        # The cgroup's undo reaps the tasks it kills (waitpid on those that are this process's
        # children, as the victim is); Popen then finds no status to collect and says 0. A
        # victim that ended its re-touch would have written its report: none was written.
        assert victim.proc.returncode in (-signal.SIGKILL, -signal.SIGBUS) or (
            victim.proc.returncode == 0 and out == ""), (victim.proc.returncode, out[-500:])
    finally:
        victim.__exit__(None, None, None)
    assert state.show() == before
    # swapoff waited for the stalled read, which arrived after go and failed timeout_s after
    # its arrival, and no longer (the offline device fails every later read at once)
    assert took + (t0 - t_go) >= timeout_s and took < timeout_s + 10, (took, t0 - t_go)
