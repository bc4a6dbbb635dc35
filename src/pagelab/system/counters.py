"""Counters around a trial: before/after snapshots and their deltas, and an optional 10 Hz
time series whose own CPU cost is measured and recorded.

Sources: /proc/vmstat (every field), /proc/meminfo, /sys/block/<dev>/stat for the devices in
play, a memory cgroup's memory.stat, zram mm_stat and io_stat, PSI (/proc/pressure/*) where
enabled, free page reporting's count of memory handed back to the hypervisor where the VM has
that module, and any extra source a trial adds (e.g. the emulator's stats file).
Not for: changing anything (pagelab.system.state does that).
"""

from __future__ import annotations

import resource
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BLOCK_STAT_FIELDS = [
    "read_ios", "read_merges", "read_sectors", "read_ticks", "write_ios", "write_merges",
    "write_sectors", "write_ticks", "in_flight", "io_ticks", "time_in_queue", "discard_ios",
    "discard_merges", "discard_sectors", "discard_ticks", "flush_ios", "flush_ticks",
]
MM_STAT_FIELDS = ["orig_data_size", "compr_data_size", "mem_used_total", "mem_limit",
                  "mem_used_max", "same_pages", "pages_compacted", "huge_pages", "huge_pages_since"]
IO_STAT_FIELDS = ["failed_reads", "failed_writes", "invalid_io", "notify_free"]

Source = Callable[[], dict[str, float]]


def _kv_file(path: Path | str, scale: int = 1) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in Path(path).read_text().splitlines():
        parts = line.replace(":", " ").split()
        if len(parts) >= 2:
            try:
                out[parts[0]] = float(parts[1]) * scale
            except ValueError:
                continue
    return out


def vmstat() -> dict[str, float]:
    return _kv_file("/proc/vmstat")


def meminfo() -> dict[str, float]:
    """Bytes (meminfo's kB fields scaled; HugePages_* counts are left as counts)."""
    out = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts:
            out[key] = float(parts[0]) * (1024 if len(parts) > 1 and parts[1] == "kB" else 1)
    return out


# Free page reporting: what it does is at its knob, state.KNOBS["page_reporting.min_free_ms"].
PAGE_REPORTING = Path("/sys/module/page_reporting/parameters")


def page_reporting() -> dict[str, float]:
    """KiB of free memory handed back to the hypervisor since boot (reported_kib)."""
    return {"reported_kib": float((PAGE_REPORTING / "reported_kib").read_text())}


def block_stat(dev: str) -> dict[str, float]:
    vals = Path(f"/sys/block/{dev}/stat").read_text().split()
    return {f: float(v) for f, v in zip(BLOCK_STAT_FIELDS, vals, strict=False)}


def zram_stat(dev: str = "zram0") -> dict[str, float]:
    base = Path("/sys/block") / dev
    out = {f"mm_{f}": float(v) for f, v in zip(MM_STAT_FIELDS, (base / "mm_stat").read_text().split(),
                                                  strict=False) if v.lstrip("-").isdigit()}
    out.update({f"io_{f}": float(v) for f, v in zip(IO_STAT_FIELDS, (base / "io_stat").read_text().split(),
                                                     strict=False)})
    return out


def psi() -> dict[str, float]:
    """PSI totals (microseconds stalled) for cpu, memory and io; empty where PSI is off."""
    out: dict[str, float] = {}
    for res in ("cpu", "memory", "io"):
        try:
            text = Path(f"/proc/pressure/{res}").read_text()
        except OSError:
            continue  # not compiled in, or psi=0 on the command line
        for line in text.splitlines():
            kind, *fields = line.split()
            for f in fields:
                k, _, v = f.partition("=")
                if k == "total":
                    out[f"{res}_{kind}_total_us"] = float(v)
    return out


def memcg_stat(cgroup_dir: Path | str) -> dict[str, float]:
    return _kv_file(Path(cgroup_dir) / "memory.stat")


def rusage_children() -> dict[str, float]:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"utime_s": ru.ru_utime, "stime_s": ru.ru_stime, "minflt": ru.ru_minflt,
            "majflt": ru.ru_majflt, "inblock": ru.ru_inblock, "oublock": ru.ru_oublock,
            "nvcsw": ru.ru_nvcsw, "nivcsw": ru.ru_nivcsw}


class Counters:
    """Named sources; `snapshot()` reads them all; `delta(a, b)` is b - a per field."""

    def __init__(self, block_devices: list[str] | None = None, memcg: Path | str | None = None,
                 zram: list[str] | None = None, extra: dict[str, Source] | None = None):
        self.sources: dict[str, Source] = {"vmstat": vmstat, "meminfo": meminfo, "psi": psi,
                                           "rusage_children": rusage_children}
        if (PAGE_REPORTING / "reported_kib").exists():
            self.sources["page_reporting"] = page_reporting
        for dev in block_devices or []:
            self.sources[f"block.{dev}"] = lambda d=dev: block_stat(d)
        if memcg is not None:
            self.sources["memcg"] = lambda: memcg_stat(memcg)
        for dev in zram or []:
            self.sources[f"zram.{dev}"] = lambda d=dev: zram_stat(d)
        self.sources.update(extra or {})

    def snapshot(self) -> dict[str, dict[str, float]]:
        snap = {}
        for name, read in self.sources.items():
            try:
                snap[name] = read()
            except OSError:
                snap[name] = {}  # a device or group that is gone now reads as empty
        return snap

    @staticmethod
    def delta(before: dict[str, dict[str, float]], after: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        return {src: {k: v - before.get(src, {}).get(k, 0.0) for k, v in vals.items()}
                for src, vals in after.items()}


class Sampler:
    """Samples chosen fields every `interval` seconds in a thread; records its own CPU time
    (thread CPU clock), so the cost of watching is part of the record."""

    def __init__(self, counters: Counters, fields: dict[str, list[str]], interval: float = 0.1):
        self.counters = counters
        self.fields = fields
        self.interval = interval
        self.samples: list[dict[str, float]] = []
        self.cpu_seconds = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        t0 = time.monotonic()
        cpu0 = time.thread_time()
        next_t = t0
        while not self._stop.is_set():
            row = {"t": time.monotonic() - t0}
            for src, names in self.fields.items():
                try:
                    vals = self.counters.sources[src]()
                except OSError:
                    vals = {}
                row.update({f"{src}.{n}": vals.get(n, float("nan")) for n in names})
            self.samples.append(row)
            next_t += self.interval
            self._stop.wait(max(0.0, next_t - time.monotonic()))
        self.cpu_seconds = time.thread_time() - cpu0

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()

    def record(self) -> dict[str, Any]:
        span = self.samples[-1]["t"] if self.samples else 0.0
        return {"interval_s": self.interval, "n": len(self.samples), "cpu_seconds": self.cpu_seconds,
                "cpu_fraction": self.cpu_seconds / span if span > 0 else 0.0, "samples": self.samples}
