"""Swap on an emulated device: mount `simdisk`, attach a loop device with direct IO over
MOUNTPOINT/disk, mkswap, swapon; every step journaled through pagelab.system.state, so teardown (and
recovery after kill -9) runs in reverse: swapoff, detach, unmount, end the daemon.

The daemon is started by the harness, outside any memory cgroup under test, and mlocks itself
(simdisk does mlockall and asks for PR_SET_IO_FLUSHER), which is what keeps swap over FUSE
from deadlocking under memory pressure.

A paging device that failed (simdisk's fault injection: docs/devices.md) makes its trial
invalid: `watched` runs a trial while noting the fault counters of every emulated device it
mounts (read while they are still mounted: by `poll_faults`, which the victim and the hogs call
when they are done, and by `EmulatedDisk.stats`), and turns the trial's result, or its failure,
into an invalid trial whose reason says what the device did. What the kernel does meanwhile: a
swap-in whose read fails kills the task that faulted with SIGBUS (do_swap_page: a folio that is
not uptodate after the read gives VM_FAULT_SIGBUS; seen on Linux 6.18 by tests/test_faults.py),
and "Read-error on swap-device" goes to the kernel log; a swap-out whose write fails leaves the
page dirty in memory ("Write-error on swap-device"), so it is written again later or never leaves.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pagelab.core.paths import root
from pagelab.data.tidy import flatten
from pagelab.run.tools import ToolError, run_json, simdisk_model_cmd, simdisk_mount_cmd
from pagelab.run.trials import TrialFailed, Validity
from pagelab.system import state


def profiles_dir() -> Path:
    return root() / "config" / "devices"


def tier_overrides(disk: str, stick: str) -> dict[str, str]:
    """The keys of the tier model that an experiment fills: the disk behind the tier and the
    stick its cache is on."""
    return {"disk_profile": disk, "cache_profile": stick}


def profile_names() -> list[str]:
    return sorted(p.stem for p in profiles_dir().glob("*.yaml"))


# simdisk's stats that summarise a distribution since the mount rather than count (flat_stats)
SUMMARIES = ("timing.error_ns.", "timing.start_late_ns.")


@dataclass
class EmulatedDisk:
    profile: str
    mountpoint: Path
    pid: int
    loop: Path | None = None

    faults: dict[str, Any] = field(default_factory=dict)   # the fault counters last read

    @property
    def disk(self) -> Path:
        return self.mountpoint / "disk"

    def stats(self) -> dict[str, Any]:
        """The emulator's running counters (MOUNTPOINT/stats); notes its fault counters."""
        doc = json.loads((self.mountpoint / "stats").read_text())
        self.faults = doc.get("faults", {})
        return doc

    def control(self, message: str) -> None:
        """A message to simdisk's fault injection (MOUNTPOINT/control): `enable` arms the
        faults of a profile with faults_enabled false (their up/down schedule starts then),
        `disable` disarms them (dm-dust's messages)."""
        (self.mountpoint / "control").write_text(message + "\n")

    @contextmanager
    def setup(self) -> Iterator[None]:
        """While open, the emulator answers every request as soon as its backing file has served
        it: the model still serves the request, back to back on a clock of its own (so a tier's copy
        queue drains as in a timed fill), but no fault applies, the device is not busy for it
        and only the stats' `setup` and the model's own counters count it. For filling a page
        cache from the disk before a trial's clock starts, which measures nothing. Timed again
        on exit, whatever happened inside."""
        self.control("setup")
        try:
            yield
        finally:
            self.control("timed")

    def flat_stats(self) -> dict[str, float]:
        """The emulator's counters, flat (`by_op.read.ios`), for a trial's counters to take
        differences of: the summaries of its timing distributions (SUMMARIES: a mean, percentiles
        and a largest value since the mount) are left out, since the difference of two is no
        summary of the IO between them; `stats()` has them."""
        return {k: float(v) for k, v in flatten(self.stats()).items()
                if isinstance(v, int | float) and not isinstance(v, bool) and not k.startswith(SUMMARIES)}


def read_timing(delta: dict[str, float]) -> dict[str, float]:
    """How the emulator kept time over a phase's reads, from the difference of its counters
    (flat_stats) across the phase: the reads, their mean modelled service time (ms), and their
    mean reply error (us), the time the emulator took to answer a read less the model's service
    time for it (positive: late). NaN where the phase read nothing."""
    ios = delta.get("by_op.read.ios", 0.0)
    service = delta.get("by_op.read.time_ns.service", 0.0)
    measured = delta.get("by_op.read.time_ns.measured", 0.0)
    nan = float("nan")
    return {"reads": ios, "service_ms": service / ios / 1e6 if ios else nan,
            "error_us": (measured - service) / ios / 1e3 if ios else nan}


def timing_summary(stats: dict[str, Any]) -> dict[str, float]:
    """How the emulator kept time since its mount (its stats): the share of replies later than
    the model's service time, and the 99th percentile and the largest of the replies' absolute
    errors (us). A trial that mounts its own device gets the trial's."""
    t = stats.get("timing", {})
    ios, err = float(t.get("ios", 0)), t.get("error_ns", {})
    nan = float("nan")
    return {"late_share": float(t.get("late_ios", 0)) / ios if ios else nan,
            "error_p99_us": float(err.get("p99", nan)) / 1e3, "error_max_us": float(err.get("max", nan)) / 1e3}


def timing_columns(prefix: str, values: dict[str, float]) -> dict[str, float]:
    """read_timing's or timing_summary's values as a trial's result columns: `<prefix>_emulator_<key>`
    (`retouch_emulator_error_us`), or `emulator_<key>` for the prefix ""."""
    return {f"{prefix + '_' if prefix else ''}emulator_{k}": v for k, v in values.items()}


def mount_timing(disk: EmulatedDisk) -> dict[str, float]:
    """timing_summary of the disk's stats as result columns (`emulator_late_share`, ...): the
    trial's own where the trial mounted the disk."""
    return timing_columns("", timing_summary(disk.stats()))


def timing_names(*phases: str) -> list[str]:
    """The result columns of read_timing for each phase, then of timing_summary (the mount's),
    as timing_columns names them: an experiment's trials.csv columns."""
    return [*(c for p in phases for c in timing_columns(p, read_timing({}))),
            *timing_columns("", timing_summary({}))]


class BusySampler:
    """While open, reads the emulator's busy time (the sum of its requests' service times,
    MOUNTPOINT/stats time_ns.service) every `period_s` seconds: `samples` are (seconds since
    the sampler opened, busy seconds since then), what Resource Monitor's disk active time
    is drawn from. Stays open `tail_s` seconds after the caller's work ends (a window after
    the last IO)."""

    def __init__(self, disk: EmulatedDisk, period_s: float = 0.25, tail_s: float = 0.0):
        self.disk, self.period_s, self.tail_s = disk, period_s, tail_s
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _busy_s(self) -> float:
        return float(self.disk.stats().get("time_ns", {}).get("service", 0)) / 1e9

    def _run(self) -> None:
        t0, b0 = time.monotonic(), self._busy_s()
        self.samples.append((0.0, 0.0))
        while not self._stop.wait(self.period_s):
            self.samples.append((time.monotonic() - t0, self._busy_s() - b0))

    def __enter__(self) -> BusySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None and self.tail_s:
            time.sleep(self.tail_s)
        self._stop.set()
        self._thread.join()


def emulated_disk(st: state.State, profile: str, workdir: Path, size: int | None = None,
                  overrides: dict[str, Any] | None = None, cache_state: Path | None = None,
                  trace: Path | None = None, backing: Path | None = None) -> EmulatedDisk:
    """Mount the emulated device `profile` (the first `size` bytes; default: its capacity) in
    `workdir` (sparse backing file `backing`, default workdir/backing.img; mount point
    mnt-<owner>: the owner's id in the name, so no other run counts it as an orphan while its
    owner lives); journaled, so the session or scope unmounts it."""
    if profile not in profile_names():
        raise state.StateError(f"no device profile {profile!r} in {profiles_dir()} "
                               f"(have: {', '.join(profile_names())})")
    workdir = Path(workdir).resolve()
    mnt = workdir / f"mnt-{st.owner}"
    mnt.mkdir(parents=True, exist_ok=True)
    ready = workdir / "simdisk-ready.json"
    ready.unlink(missing_ok=True)
    cmd = simdisk_mount_cmd(mnt, profile, profiles_dir(), Path(backing or workdir / "backing.img"), ready, size=size,
                            overrides=overrides, cache_state=cache_state, trace=trace)
    proc = st.daemon(cmd, mountpoint=mnt, ready=ready)
    disk = EmulatedDisk(profile, mnt, proc.pid)
    _MOUNTED.append(disk)
    for watch in _WATCHES:
        watch.disks.append(disk)
    return disk


def emulated_swap(st: state.State, profile: str, workdir: Path, size: int, priority: int | None = None,
                  **kwargs: Any) -> EmulatedDisk:
    """Swap on `size` bytes of the emulated device `profile` (see emulated_disk), through a
    loop device with direct IO. Returns the device; the session or scope undoes everything."""
    disk = emulated_disk(st, profile, workdir, size, **kwargs)
    with noting_faults(disk):
        disk.loop = st.loop(disk.disk, direct_io=True)
        swap_on(st, disk.loop, priority)
    return disk


@contextmanager
def noting_faults(disk: EmulatedDisk) -> Iterator[EmulatedDisk]:
    """The set-up steps on a mounted emulated device (a loop device, mkswap, swapon, a file
    system): if one fails, the device's fault counters are read while it is still mounted (the
    trial's scope unmounts it before `watched` could), then the failure goes on, so the trial's
    reason names what the device did (say the read errors mkswap met), not only the step."""
    try:
        yield disk
    except (state.StateError, OSError, subprocess.SubprocessError):
        try:
            disk.stats()
        except (OSError, ValueError):
            pass
        raise


def swap_on(st: state.State, device: Path, priority: int | None = None) -> None:
    """mkswap `device` (a loop device over an emulated disk), then swapon it (journaled)."""
    out = subprocess.run(["mkswap", str(device)], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise state.StateError(f"mkswap {device} failed: {out.stderr.strip()}")
    st.swapon(device, priority)


def profile_value(profile: str, key: str) -> Any:
    """One key of a device profile (config/devices/<profile>.yaml), e.g. the disk's rpm."""
    doc = yaml.safe_load((profiles_dir() / f"{profile}.yaml").read_text()) or {}
    if key not in doc:
        raise KeyError(f"{profile}: no key {key!r} in {profiles_dir() / (profile + '.yaml')}")
    return doc[key]


def half_revolution_s(rpm: float) -> float:
    """A disk's average rotational wait: half a revolution at `rpm`, in seconds."""
    return 30.0 / rpm


def capacity(profile: str) -> int | None:
    """The profile's capacity_bytes (None when it has none, e.g. a tiered profile)."""
    value = (yaml.safe_load((profiles_dir() / f"{profile}.yaml").read_text()) or {}).get("capacity_bytes")
    return int(value) if value else None


def model(profile: str, rw: str, bs: int, span: int | None = None) -> dict[str, Any]:
    """`simdisk model`: the device model's expected mean service time, computed analytically."""
    return run_json(simdisk_model_cmd(profile, profiles_dir(), rw, bs, span), timeout=120)


# --------------------------------------------------------------------------------------------
# A paging device that failed: the trial is invalid, with what the device did as the reason.

# simdisk's fault counters (MOUNTPOINT/stats "faults") and how a reason names them.
FAULT_WORDS = {
    "read_errors": "read(s) failed (error_reads)",
    "bad_block_errors": "read(s) of bad blocks failed (bad_blocks)",
    "write_errors": "write(s) failed (error_writes)",
    "timeouts": "request(s) unanswered for command_timeout_ms, the device then offline (stall)",
    "offline_errors": "request(s) failed while offline",
    "stalled": "request(s) held while it stopped answering (stall)",
    "delayed": "request(s) delayed (read/write/flush_delay_ms)",
}


def fault_reason(profile: str, faults: dict[str, Any]) -> str | None:
    """What an emulated device's fault counters say it did, in words, or None if nothing."""
    parts = [f"{int(faults[k])} {words}" for k, words in FAULT_WORDS.items() if faults.get(k)]
    if not parts:
        return None
    extra = []
    if faults.get("stall_ns"):
        extra.append(f"{faults['stall_ns'] / 1e9:.2f} s held")
    if faults.get("delay_ns"):
        extra.append(f"{faults['delay_ns'] / 1e9:.2f} s of delays")
    return (f"the paging device failed: simdisk {profile} injected " + ", ".join(parts)
            + (f" ({', '.join(extra)})" if extra else ""))


def faults_since(now: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    """Fault counters gained since `before` (a device kept across trials counts from zero at
    its mount, so a trial judges only what it added)."""
    return {k: v - before.get(k, 0) if isinstance(v, int | float) and not isinstance(v, bool) else v
            for k, v in now.items()}


@dataclass
class FaultWatch:
    """The emulated devices a trial uses: those mounted while it is open, and those mounted
    before it and still mounted (seekmodel keeps its devices for the whole run); `reason` says
    what they did while it was open, each against its counters when it opened."""
    disks: list[EmulatedDisk] = field(default_factory=list)
    before: dict[int, dict[str, Any]] = field(default_factory=dict)

    def poll(self) -> None:
        """Read each still-mounted device's fault counters (a gone mount keeps its last)."""
        for disk in self.disks:
            try:
                disk.stats()
            except (OSError, ValueError):
                pass

    def reason(self) -> str | None:
        reasons = [r for d in self.disks
                   if (r := fault_reason(d.profile, faults_since(d.faults, self.before.get(id(d), {}))))]
        return "; ".join(reasons) or None


_WATCHES: list[FaultWatch] = []
_MOUNTED: list[EmulatedDisk] = []   # the devices this process mounted, until they are found gone


def poll_faults() -> None:
    """Note the fault counters of the devices every open watch holds, while they are mounted
    (the victim and the hogs call it when they are done, before the trial's state is restored)."""
    for watch in _WATCHES:
        watch.poll()


@contextmanager
def fault_watch() -> Iterator[FaultWatch]:
    watch = FaultWatch()
    for disk in list(_MOUNTED):
        try:
            disk.stats()
        except (OSError, ValueError):
            _MOUNTED.remove(disk)            # unmounted since: its trial's scope ended
            continue
        watch.disks.append(disk)
        watch.before[id(disk)] = dict(disk.faults)
    _WATCHES.append(watch)
    try:
        yield watch
    finally:
        _WATCHES.remove(watch)


DEVICE_FAILED = "paging_device_failed"   # the result key `watched` sets
TRIAL_BROKE = "trial_failed"             # ... for a native tool or the state failing inside a trial

# What a trial's tools and devices raise when they fail: a native tool's exit status, a missing
# or unreadable output (ToolError), a change the kernel refused or did not take, say a swapon
# on a device that answers with EIO (StateError), an IO error of the device itself (OSError),
# a tool killed by a signal (TrialFailed).
TRIAL_FAILURES: tuple[type[BaseException], ...] = (TrialFailed, ToolError, state.StateError, OSError,
                                                   subprocess.SubprocessError)


def watched(run: Callable[[], dict[str, Any]], restored: Callable[[], bool] = lambda: True) -> dict[str, Any]:
    """Run one trial, noting the fault counters of the emulated devices it mounts. If they
    injected faults, the result carries the reason under DEVICE_FAILED (see `device_first`).
    A trial that fails (TRIAL_FAILURES) on such a device becomes a result holding only that
    reason and the failure; a native tool or a state change that fails on a device that injected
    nothing becomes one holding the failure (TRIAL_BROKE); either way the trial is invalid and
    the run goes on with the next one. That needs the trial's state restored: its own scope
    has restored it by the time the failure arrives here, which `restored` checks (the session's
    journal back where it was before the trial, or put back there); otherwise the failure stops
    the run. A TrialFailed on a device that injected nothing stays a failed trial (its run stops
    after the round)."""
    with fault_watch() as watch:
        try:
            result = run()
        except TRIAL_FAILURES as exc:
            if not restored():
                raise
            watch.poll()                     # the devices kept across trials
            reason = watch.reason()
            failure = f"{type(exc).__name__}: {exc}" if not isinstance(exc, TrialFailed) else str(exc)
            if reason is not None:
                return {DEVICE_FAILED: f"{reason}; {failure}"}
            if isinstance(exc, TrialFailed):
                raise
            return {TRIAL_BROKE: f"the trial failed: {failure}"}
        watch.poll()
    reason = watch.reason()
    if reason is not None:
        result[DEVICE_FAILED] = reason
    return result


def device_first(validity: Validity | None) -> Validity:
    """A trial's validity: invalid when its paging device or a tool failed (`watched`), else
    `validity`'s."""
    def judge(params: dict[str, Any], result: dict[str, Any]) -> str | None:
        for key in (DEVICE_FAILED, TRIAL_BROKE):
            if result.get(key):
                return str(result[key])
        return validity(params, result) if validity else None
    return judge
