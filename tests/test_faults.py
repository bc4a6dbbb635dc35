"""simdisk's fault injection on real swap, through the harness: each fault kind on swap over
the emulated disk (real FUSE, a loop device with direct IO, swap in a memory cgroup, all through
pagelab.state), in a run of `experiment.execute` whose first trial meets the fault and whose
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

import json
import os
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from pagelab import devices, experiment, state, trials
from pagelab.victim import Victim, push_out

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


@pytest.fixture
def journal(tmp_path, monkeypatch):
    monkeypatch.setenv("PAGELAB_JOURNAL", str(tmp_path / "journal.jsonl"))
    yield
    state.restore()


def fault_trial(kind: str, seen: dict[str, Any]):
    """A pagein-like trial: swap on the emulated disk, a victim in a memory cgroup pushed out by
    a hog and re-touched; the first repetition's device has `kind`'s faults."""
    spec = FAULTS[kind]

    def run_trial(st: state.State, t: trials.Trial, scratch: Path) -> dict[str, Any]:
        faulty = t.repetition == 0
        keys = {**spec["keys"], "faults_enabled": "false"} if faulty else None
        with experiment.work_dir(scratch / f"faults-{t.trial_id}") as work, st.scope():
            disk = devices.emulated_swap(st, PROFILE, work / "dev", SWAP, overrides=keys)
            cg = st.cgroup("faults", memory_limit=WS + HEADROOM)
            try:
                with Victim(WS, "ratio:0.5", t.seed, work / "victim", cg, order="random", timeout=60) as v:
                    if faulty and spec["before_pushout"]:
                        disk.control("enable")
                    hog = push_out(cg, WS + HEADROOM)
                    if faulty and not spec["before_pushout"]:
                        disk.control("enable")
                        if "up_interval_s" in spec["keys"]:
                            time.sleep(STALL_UP_S + 0.05)     # into the first down interval
                    t0 = time.monotonic()
                    try:
                        rep = v.retouch()
                    finally:
                        seen.setdefault("retouch_s", []).append(time.monotonic() - t0)
                        seen.setdefault("victim_rc", []).append(v.proc.returncode)
            finally:
                seen.setdefault("faults", []).append(disk.stats()["faults"])
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
    frame = experiment.execute("faults", cfg, out, disk_tmp / "scratch", [{"fault": kind}],
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
    if kind == "stall-for-a-time":
        assert seen["retouch_s"][0] >= STALL_DOWN_S - 0.1
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
    never came back, is killed by SIGBUS."""
    timeout_s = 2.0
    before = state.show()
    victim = Victim(WS, "ratio:0.5", 3, disk_tmp / "victim", None, order="random", timeout=60)
    with state.session() as st:
        disk = devices.emulated_swap(st, PROFILE, disk_tmp / "dev", SWAP, overrides={
            "stall": "true", "command_timeout_ms": int(timeout_s * 1000), "faults_enabled": "false"})
        cg = st.cgroup("faults", memory_limit=WS + HEADROOM)
        victim.cgroup = cg
        victim.__enter__()
        push_out(cg, WS + HEADROOM)
        disk.control("enable")
        victim.go.touch()                             # the re-touch starts; its first swap-in waits
        deadline = time.monotonic() + 5
        while process_state(victim.pid) != "D":
            assert time.monotonic() < deadline, "the victim never waited on the device"
            time.sleep(0.01)
        t0 = time.monotonic()
    took = time.monotonic() - t0
    try:
        assert victim.proc.wait(timeout=30) == -7
    finally:
        victim.__exit__(None, None, None)
    assert state.show() == before
    assert timeout_s - 1 < took < timeout_s + 5, took   # swapoff waited for the stalled read, no longer
