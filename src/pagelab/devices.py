"""Swap on an emulated device: mount `simdisk`, attach a loop device with direct IO over
MOUNTPOINT/disk, mkswap, swapon; every step journaled through state.py, so teardown (and
recovery after kill -9) runs in reverse: swapoff, detach, unmount, end the daemon.

The daemon is started by the harness, outside any memory cgroup under test, and mlocks itself
(simdisk does mlockall and asks for PR_SET_IO_FLUSHER), which is what keeps swap over FUSE
from deadlocking under memory pressure.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pagelab import state
from pagelab.paths import root
from pagelab.tools import simdisk_model_cmd, simdisk_mount_cmd


def profiles_dir() -> Path:
    return root() / "config" / "devices"


def profile_names() -> list[str]:
    return sorted(p.stem for p in profiles_dir().glob("*.yaml"))


@dataclass
class EmulatedDisk:
    profile: str
    mountpoint: Path
    pid: int
    loop: Path | None = None

    @property
    def disk(self) -> Path:
        return self.mountpoint / "disk"

    def stats(self) -> dict[str, Any]:
        """The emulator's running counters (MOUNTPOINT/stats)."""
        return json.loads((self.mountpoint / "stats").read_text())

    def flat_stats(self) -> dict[str, float]:
        from pagelab.tidy import flatten

        return {k: float(v) for k, v in flatten(self.stats()).items()
                if isinstance(v, int | float) and not isinstance(v, bool)}


class BusySampler:
    """While open, reads the emulator's busy time (the sum of its requests' service times,
    MOUNTPOINT/stats time_ns.service) every `period_s` seconds: `samples` are (seconds since
    the sampler opened, busy seconds since then), what Resource Monitor's disk active time
    is drawn from. Stays open `tail_s` seconds after the caller's work ends (a window after
    the last IO)."""

    def __init__(self, disk: EmulatedDisk, period_s: float = 0.25, tail_s: float = 0.0):
        import threading

        self.disk, self.period_s, self.tail_s = disk, period_s, tail_s
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _busy_s(self) -> float:
        return float(self.disk.stats().get("time_ns", {}).get("service", 0)) / 1e9

    def _run(self) -> None:
        import time

        t0, b0 = time.monotonic(), self._busy_s()
        self.samples.append((0.0, 0.0))
        while not self._stop.wait(self.period_s):
            self.samples.append((time.monotonic() - t0, self._busy_s() - b0))

    def __enter__(self) -> BusySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        import time

        if exc[0] is None and self.tail_s:
            time.sleep(self.tail_s)
        self._stop.set()
        self._thread.join()


def emulated_disk(st: state.State, profile: str, workdir: Path, size: int | None = None,
                  overrides: dict[str, Any] | None = None, cache_state: Path | None = None,
                  trace: Path | None = None) -> EmulatedDisk:
    """Mount the emulated device `profile` (the first `size` bytes; default: its capacity) in
    `workdir` (sparse backing file, mountpoint); journaled, so the session or scope unmounts it."""
    if profile not in profile_names():
        raise state.StateError(f"no device profile {profile!r} in {profiles_dir()} "
                               f"(have: {', '.join(profile_names())})")
    workdir = Path(workdir).resolve()
    mnt = workdir / "mnt"
    mnt.mkdir(parents=True, exist_ok=True)
    ready = workdir / "simdisk-ready.json"
    ready.unlink(missing_ok=True)
    cmd = simdisk_mount_cmd(mnt, profile, profiles_dir(), workdir / "backing.img", ready, size=size,
                            overrides=overrides, cache_state=cache_state, trace=trace)
    proc = st.daemon(cmd, mountpoint=mnt, ready=ready)
    return EmulatedDisk(profile, mnt, proc.pid)


def emulated_swap(st: state.State, profile: str, workdir: Path, size: int, priority: int | None = None,
                  **kwargs: Any) -> EmulatedDisk:
    """Swap on `size` bytes of the emulated device `profile` (see emulated_disk), through a
    loop device with direct IO. Returns the device; the session or scope undoes everything."""
    disk = emulated_disk(st, profile, workdir, size, **kwargs)
    disk.loop = st.loop(disk.disk, direct_io=True)
    out = subprocess.run(["mkswap", str(disk.loop)], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise state.StateError(f"mkswap {disk.loop} failed: {out.stderr.strip()}")
    st.swapon(disk.loop, priority)
    return disk


def profile_value(profile: str, key: str) -> Any:
    """One key of a device profile (config/devices/<profile>.yaml), e.g. the disk's rpm."""
    import yaml

    doc = yaml.safe_load((profiles_dir() / f"{profile}.yaml").read_text()) or {}
    if key not in doc:
        raise KeyError(f"{profile}: no key {key!r} in {profiles_dir() / (profile + '.yaml')}")
    return doc[key]


def capacity(profile: str) -> int | None:
    """The profile's capacity_bytes (None when it has none, e.g. a tiered profile)."""
    import yaml

    value = (yaml.safe_load((profiles_dir() / f"{profile}.yaml").read_text()) or {}).get("capacity_bytes")
    return int(value) if value else None


def model(profile: str, rw: str, bs: int, span: int | None = None) -> dict[str, Any]:
    """`simdisk model`: the device model's expected mean service time, computed analytically."""
    from pagelab.tools import run_json

    return run_json(simdisk_model_cmd(profile, profiles_dir(), rw, bs, span), timeout=120)
