"""readyboost (seed 000): how long a working set takes to come back after memory hogs, with swap
on a 2008 laptop disk, with and without a ReadyBoost-like flash cache, with and without a
Superfetch-like agent prefetching between the hog rounds; and today's alternatives.

The seed's method, scaled: a memory cgroup plays the 3 GB of RAM; a `hog victim` working set
of a third of it is built (at the seed's own scale: 1.4 GB of working set and 1.6 GB of file
cache); two hogs run side by side `hog_rounds` times in the same cgroup (each holds a round's
memory until the other has written its own: `victim.push_out`) and push the victim out. The
seed's explanation of its 35 s is a mechanism: during the hog rounds Superfetch keeps reading the
evicted working set back, ReadyBoost copies those reads to the stick, the pages are clean, so the
next hog drops them without a write and the copies stay valid; after the hogs, Superfetch's
restore is served by the stick. The agent (native/superfetch, `pagelab.run.superfetch`) is that
Superfetch: process_madvise(MADV_WILLNEED) of the victim's swapped pages, most recently evicted
first, at low priority, then the file cache the group had.

Arms (the swap device x what the agent does):
  hdd           the emulated hdd5400-2008, no agent (plain Linux: nothing comes back until used)
  hdd_after     the same disk, the agent restoring once the hogs are gone (the sensitivity twin
                of the seed's "without ReadyBoost": SENSITIVITY_NONE)
  hdd_between   the same disk, the agent also reading while the hogs run (Vista always ran
                Superfetch, and the seed timed all three results after the same repeated
                launches: the seed's "without ReadyBoost", SEED_ARMS)
  tier_after    swap behind the emulated flash tier (tiered-readyboost, empty at the start),
                the agent restoring after the hogs: the tier holds what its copy queue took of
                the page-outs (the seed's "without much pre-population")
  tier_between  the same tier with the agent also reading between the rounds: its reads pass
                through the tier, which copies them (the seed's "with enough pre-population")
  zswap, zram, own
                today's alternatives (zswap in front of the emulated disk, zram, a swap file on
                this machine's disk), each with the agent as in hdd_after (their rounds are too
                short for reading between them to matter)
Every arm has the seed's one system disk (`pagelab.run.systemdisk`): one emulated device holding
a swap area (the arm's swap for hdd, tier and zswap) and an ext4 with the file set, both behind
the flash tier in the tier arms; the file set is read inside the cgroup before the hogs and
refilled by the agent after them, from that disk.
The four hdd/tier x after/between arms are a 2 x 2 factorial: the seed's explanation predicts
that prefetching between rounds shortens recovery behind the tier and not on the bare disk
(an interaction).

Recovery (seed 000: "wait until disk activity becomes normal (average disk time <= 30%... or
cached >= 300MB as seen in Task Manager)") is timed from the hogs' end, with nothing touching
the victim: `settle_s`, the start of the first window of `settle_window_s` in which the system
disk (the whole device) was busy at most 30 % of the time; `cached_s`, when the group's page
cache and the victim's pages in the swap cache (Task Manager's "Cached", the standby and
modified pages: `victim_cached`) reached 10 % of its RAM (the seed's 300 MB of 3 GB);
`recovery_s`, the first of the two (what the seed timed); `back_s`, when at most 1 % of the
working set was still only in swap (memory.stat swap); `file_back_s`, when the group's page cache
was back to FILE_BACK_SHARE of what it was before the hogs. The seed's premise is measured beside
them: the page-in rate during the restore and the re-touch (`pagein_mbps`, MB/s) and the share
of the system disk's reads that needed a seek (`seek_share_restore`, `seek_share_retouch`). Then
the victim re-touches its whole working set (`retouch_s`, what a user returning to the program
waits, every page verified). The analysis adds `total_s`, the hogs' rounds plus `back_s`. A
criterion already met when the clock starts (0 s) is censored "at the start", one not met within
the watch (NaN) "> watch" (`coded`): neither is a value inside a median, and a claim censored in
more than half its trials is not measurable here.

A trial is valid only when its manipulation happened (`validity`): the hogs pushed out at least
90 % of the share of the working set the design pushes out (smaps_rollup Swap) without being
killed; without the agent the re-touch read at least 90 % of that back from swap, with it the
agent brought the working set back into RAM within the watch (`back_s`); the tier started
empty; with the agent between the rounds, it read pages back from swap while the hogs ran, and
at most 1 % of the pages it asked for were written out again (rather than dropped). How much of
the working set it reached while they ran (`agent_coverage`) is a result, not a condition: a
low-priority reader under two hogs' page-outs reaches what it reaches, and the tier's hit share
during the restore shows what of it the flash kept.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pagelab.core import plots
from pagelab.core.latex import escape, fmt
from pagelab.core.prose import comparison_rows, finding
from pagelab.core.stats import (
    AT_START,
    OVER_WATCH,
    Estimate,
    censored_median_ci,
    censored_ratio,
    interval_name,
)
from pagelab.core.units import parse_size
from pagelab.experiments import harness
from pagelab.experiments.harness import entry
from pagelab.run import sequential, trials
from pagelab.run.devices import EmulatedDisk, profile_value
from pagelab.run.superfetch import Agent, swap_devices
from pagelab.run.systemdisk import IMAGE, SystemDisk, layout, prepare_image, system_disk
from pagelab.run.tools import cacheflood_cmd, run_json
from pagelab.run.victim import Victim, out_and_back_reason, push_out
from pagelab.system import counters, mm, state
from pagelab.system.config import ConfigError

NAME = "readyboost"


@dataclass(frozen=True)
class Arm:
    swap: str              # hdd, tier, zswap, zram, own
    agent: str | None      # None, "after" (restore once the hogs are gone), "between" (also during them)


ARM = {"hdd": Arm("hdd", None), "hdd_after": Arm("hdd", "after"), "hdd_between": Arm("hdd", "between"),
       "tier_after": Arm("tier", "after"), "tier_between": Arm("tier", "between"),
       "zswap": Arm("zswap", "after"), "zram": Arm("zram", "after"), "own": Arm("own", "after")}
ARMS = list(ARM)
EMULATED = ("hdd", "tier", "zswap")  # swap devices on the emulator (FUSE)
REQUIRED_COLUMNS = ["result.recovery_s", "result.evicted_share", "result.retouch_s",
                    "result.counters.retouch.vmstat.pgmajfault"]
SCALARS = ["recovery_s", "settle_s", "cached_s", "back_s", "file_back_s", "retouch_s", "restore_window_s",
           "pagein_mbps", "pagein_mbps_retouch", "seek_share_restore", "seek_share_retouch",
           "swap_area_read_bytes_restore", "fs_area_read_bytes_restore", "file_back_bytes",
           "evicted_share", "readback_share", "restore_share", "out_at_end_pages",
           "hogs_killed", "oom_kills", "oom_wait_s", "hog_s", "pswpout_hogs",
           "majflt", "minflt", "pswpin", "zswpin",
           "agent_rounds_requested", "agent_rounds_swapins", "agent_rounds_active_s",
           "agent_restore_requested", "agent_restore_swapins", "agent_restore_active_s",
           "agent_restore_s", "agent_file_bytes", "agent_cpu_s", "agent_coverage", "agent_rewritten",
           "agent_pressure_stops",
           "tier_loaded_at_start", "tier_blocks_end_rounds", "tier_offered_rounds", "tier_dropped_rounds",
           "tier_hit_share_rounds", "tier_hit_share_restore", "tier_prefetches",
           "device_read_bytes_restore", "device_cache_hit_bytes_restore",
           "working_set", "ram", "hog_size", "file_cache", "intended_share", "cache_before_hogs",
           "cache_dropped_share"]
MIN_SHARE = 0.9          # the manipulation's threshold: 90 % of what the design asks for
MAX_REWRITTEN = 0.01     # of the pages the agent asked for while the hogs ran
BUSY_THRESHOLD = 0.3     # seed 000: "average disk time <= 30%"
CACHED_SHARE = 0.1       # seed 000: "cached >= 300MB" of its 3 GB
BACK_SHARE = 0.01        # the working set is back when at most 1 % of it is still out of RAM
FILE_BACK_SHARE = 0.9    # the file cache is back when the group's page cache is 90 % of what it was before the hogs
SEED_FILE_SHARE = 1600 / 3072   # the seed profile's 1600M of files in its 3G: the file set unless set
PAGE = os.sysconf("SC_PAGE_SIZE")


HOGS = 2  # the seed's two memory hogs, side by side


@dataclass(frozen=True)
class Design:
    """One trial's sizes: the cgroup's RAM, the victim's working set, the file cache read in
    before the hogs, each hog; and the share of the working set the design pushes out."""
    ram: int
    working_set: int
    file_cache: int
    hog: int
    order: str = "seq"  # the victim's re-touch: seq (address order) or random (seed 000's worst case)

    @property
    def intended_share(self) -> float:
        """What of the working set cannot stay while the hogs run: the hogs take HOGS x hog of
        the RAM, the file cache goes first (clean pages cost no write), the rest comes out of
        the working set. 1 in the scaled design (the hogs alone ask for more than the RAM); at
        the seed's scale (1.4 GB of working sets, 2 x 1 GB hogs, 3 GB) about 0.3: "the 1.6GB
        cache and 0.4GB working sets" out of RAM."""
        return min(1.0, max(0.0, (self.working_set + HOGS * self.hog - self.ram) / self.working_set))

    @property
    def intended_cache_share(self) -> float:
        """What of the file cache read before the hogs cannot stay while they run (it goes
        first): 1 whenever the working set is pushed out at all; below 1 only where the RAM
        holds the working set, the hogs and part of the cache (payoff's larger RAM levels)."""
        if not self.file_cache:
            return float("nan")
        over = self.working_set + HOGS * self.hog + self.file_cache - self.ram
        return min(1.0, max(0.0, over / self.file_cache))


def design(cfg: dict[str, Any]) -> Design:
    """The profile's sizes; unset ones follow the scaled design: a working set of a third of
    the RAM, hogs of two thirds each, a file set in the seed profile's proportion, 1600M in 3G
    (SEED_FILE_SHARE of the RAM, whole pages), the re-touch in address order."""
    ram = parse_size(cfg["ram"])
    d = Design(ram=ram,
               working_set=parse_size(cfg["working_set"]) if cfg.get("working_set") else ram // 3,
               file_cache=(parse_size(cfg["file_cache"]) if cfg.get("file_cache")
                           else int(SEED_FILE_SHARE * ram) // PAGE * PAGE),
               hog=parse_size(cfg["hog_size"]) if cfg.get("hog_size") else 2 * (ram // 3),
               order=cfg.get("retouch_order") or "seq")
    where = f"{NAME}.{cfg.get('profile', 'quick')}"
    if d.intended_share <= 0:
        raise ConfigError(f"{where}: working set {cfg.get('working_set')} and {HOGS} hogs of {d.hog} bytes fit in "
                          f"ram {cfg['ram']}: the hogs would push nothing out")
    return d


def memory_needed(ram: int) -> int:
    """What a trial takes from the machine: the cgroup's RAM, and half as much again for what
    lives outside it (zram's and zswap's compressed pools, the emulator, the harness)."""
    return ram + ram // 2


def preflight(cfg: dict[str, Any], available: float | None = None) -> Design:
    """Checks, before anything changes, that this machine can hold the profile's memory cgroup
    (`make PROFILE=seed` asks for 3 GiB of it); ConfigError (exit 2) otherwise."""
    avail = counters.meminfo().get("MemAvailable", 0.0) if available is None else available
    need = memory_needed(parse_size(cfg["ram"]))
    if avail < need:
        raise ConfigError(
            f"{NAME}.{cfg.get('profile', 'quick')}.ram: {cfg['ram']} of cgroup RAM needs {need / 2**30:.1f} GiB of "
            f"available memory (the cgroup, and half as much again for zram's and zswap's pools and the "
            f"emulator); this machine has {avail / 2**30:.1f} GiB available (MemAvailable). Run a smaller profile "
            f"(make PROFILE=quick or full) or free memory; nothing was changed")
    return design(cfg)


# --------------------------------------------------------------------------------------------
# The seed's recovery criteria, on samples taken from the hogs' end.


def settle_time(samples: list[tuple[float, float]], window_s: float, threshold: float = BUSY_THRESHOLD) -> float:
    """Seed 000's end of recovery: "wait until disk activity becomes normal (average disk time
    <= 30 %)". `samples` are (seconds since the hogs ended, the device's busy seconds so far)
    in time order; the answer is the start of the first window of `window_s` seconds in which
    the device was busy at most `threshold` of the time, or NaN when none ends within them."""
    for i, (t0, b0) in enumerate(samples):
        for t1, b1 in samples[i + 1:]:
            if t1 - t0 >= window_s - 1e-9:
                if (b1 - b0) / (t1 - t0) <= threshold:
                    return t0
                break
    return float("nan")


def first_time(samples: list[tuple[float, float]], ok: Callable[[float], bool]) -> float:
    """The first sample time whose value satisfies `ok`, or NaN when none does."""
    for t, value in samples:
        if ok(value):
            return t
    return float("nan")


def cached_time(samples: list[tuple[float, float]], ram: int, share: float = CACHED_SHARE) -> float:
    """Seed 000's other end of recovery, "cached >= 300MB as seen in Task Manager" (300 MB of
    its 3 GB): the first time the group's page cache and swap cache reached `share` of `ram`.
    `samples` are (seconds since the hogs ended, cached bytes)."""
    return first_time(samples, lambda cached: cached >= share * ram)


def back_time(samples: list[tuple[float, float]], working_set: float, share: float = BACK_SHARE) -> float:
    """When the working set was back in RAM: the first time the group's bytes only in swap
    (`out_of_ram`) were at most `share` of the working set. `samples` are (seconds since the
    hogs ended, bytes)."""
    return first_time(samples, lambda out: out <= share * working_set)


def file_back_time(samples: list[tuple[float, float]], before: float, share: float = FILE_BACK_SHARE) -> float:
    """When the file cache was back: the first time the group's page cache (memory.stat file)
    was at least `share` of `before`, what it was before the hogs (NaN without a file cache).
    `samples` are (seconds since the hogs ended, bytes)."""
    if not before:
        return float("nan")
    return first_time(samples, lambda cache: cache >= share * before)


def value_at(samples: list[tuple[float, float]], t: float) -> float:
    """The first sample's value at or after `t` (the last one's if none is that late)."""
    for ts, value in samples:
        if ts >= t - 1e-9:
            return value
    return samples[-1][1] if samples else float("nan")


def pagein_rate(samples: list[tuple[float, float]], back: float, watch: float) -> float:
    """The page-in rate during the restore in MB/s (1e6 B/s, the seed's "below 2MB per second"):
    the swap area's bytes read from the hogs' end until the working set was back (`back`, s),
    over that time; over the whole watch when it never came back (NaN `back`); NaN when it was
    back at the start (nothing to read). `samples` are (seconds since the hogs ended, bytes read
    from the swap area so far)."""
    if not samples or back == 0:
        return float("nan")
    until = back if back == back else watch
    if not until > 0:
        return float("nan")
    return (value_at(samples, until) - samples[0][1]) / until / 1e6


def seek_share(device: dict[str, float]) -> float:
    """Of the emulated disk's reads in a phase (its counters' delta), the share that needed a
    seek: the model moved the head by at least one track (simdisk's by_op.read.seeks; a read
    the drive's track buffer or the flash tier served needs none). NaN without reads."""
    reads = device.get("by_op.read.ios", 0.0)
    return device.get("by_op.read.seeks", float("nan")) / reads if reads else float("nan")


def recovery_time(settle: float, cached: float) -> float:
    """The seed's recovery: whichever of its two criteria is met first (NaN: neither)."""
    met = [t for t in (settle, cached) if t == t]
    return min(met) if met else float("nan")


class RecoverySampler:
    """While open, every `period_s` seconds records (seconds since it opened, value) for each
    named source (busy seconds of the swap device, the group's cached bytes, its bytes out of
    RAM); its `stop()` ends the sampling (the caller decides how long recovery is watched)."""

    def __init__(self, sources: dict[str, Callable[[], float]], period_s: float):
        self.sources, self.period_s = sources, period_s
        self.samples: dict[str, list[tuple[float, float]]] = {k: [] for k in sources}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _take(self, t0: float) -> None:
        t = round(time.monotonic() - t0, 3)  # to the millisecond: the first sample is at 0
        for name, read in self.sources.items():
            try:
                self.samples[name].append((t, read()))
            except OSError:
                pass

    def _run(self) -> None:
        t0 = time.monotonic()
        self._take(t0)
        while not self._stop.wait(self.period_s):
            self._take(t0)
        self._take(t0)

    def __enter__(self) -> RecoverySampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def elapsed(self) -> float:
        """Seconds covered so far (the last sample's time)."""
        return max((s[-1][0] for s in self.samples.values() if s), default=0.0)


def modelled(profile: str) -> bool:
    """Whether a disk profile has modelled device time (every model but `zero`, whose requests
    cost only the backing file's real IO: payoff's `today`, this machine's disk)."""
    return profile_value(profile, "model") != "zero"


def busy_source(sd: SystemDisk | None, modelled_time: bool, swap_path: Path | None) -> Callable[[], float] | None:
    """The system disk's busy seconds so far: the whole emulated device's service time, page-ins
    and file reads alike (what Resource Monitor's disk time is drawn from); a disk with no
    modelled time is busy as its loop devices are (io_ticks, both areas); without a system disk
    (no file set) the swap device's io_ticks (zram, this machine's disk)."""
    if sd is not None and modelled_time:
        disk = sd.device
        return lambda: float(disk.stats().get("time_ns", {}).get("service", 0)) / 1e9
    loops = [Path(p).name for p in (sd.swap, sd.fs_loop) if p is not None] if sd is not None else []
    devs = loops or (swap_devices(swap_path) if swap_path else [])
    if not devs:
        return None
    return lambda: sum(counters.block_stat(d).get("io_ticks", 0.0) for d in devs) / 1e3


def swapin_source(sd: SystemDisk | None) -> Callable[[], float]:
    """Bytes read from swap so far: the system disk's swap area (its loop device's counters),
    else the kernel's pages swapped in from a device (vmstat pswpin: zram, a swap file)."""
    if sd is not None and sd.swap is not None:
        return lambda: sd.area_reads()["swap"]
    return lambda: counters.vmstat().get("pswpin", 0.0) * PAGE


def out_of_ram(cg: state.Cgroup) -> float:
    """Bytes of the group's memory that are only in swap. cgroup v1's memory.stat swap counts a
    page when it leaves the swap cache and uncounts it when it is read back into it
    (mm/memcontrol-v1.c mem_cgroup_swapout, mm/memcontrol.c mem_cgroup_swapin_uncharge_swap);
    v2 counts swap slots (swap-cache pages too), so its swap cache is taken off."""
    if cg.v2:
        cur = float((cg.path("memory") / "memory.swap.current").read_text())
        return max(0.0, cur - float(cg.stat().get("swapcached", 0)))
    return float(cg.stat().get("swap", 0))


def victim_cached(cg: state.Cgroup, pid: int) -> float:
    """The group's page cache and the victim's pages in the swap cache: Task Manager's
    "Cached" counts the standby list, where Windows keeps both. The victim's swap-cache pages
    are its swap entries (smaps_rollup Swap) less the group's pages only in swap (`out_of_ram`:
    the victim is the group's only task with anonymous memory after the hogs); the swap cache
    the exited hogs left behind (pages still under writeback when they exited) is no one's and
    is not counted."""
    stat = cg.stat()
    swap_ptes = float(mm.swapped_bytes(pid))
    return float(stat.get("cache", stat.get("file", 0))) + max(0.0, swap_ptes - out_of_ram(cg))


# --------------------------------------------------------------------------------------------
# One trial.


def configurations(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"arm": a} for a in cfg["arms"]]


def skip_reason(cfg: dict[str, Any]) -> str | None:
    if os.geteuid() != 0:
        return "skipped: needs root to swap on the emulated disk and make a memory cgroup"
    if any(ARM[a].swap in EMULATED for a in cfg["arms"]) and not Path("/dev/fuse").exists():
        return "skipped: no /dev/fuse (FUSE is needed for the emulated disk)"
    if "zram" in cfg["arms"] and not Path("/sys/block/zram0").exists():
        return "skipped: no zram0 (modprobe zram, or drop the zram arm)"
    return None


def system_image(scratch: Path, size: int, file_set: int, seed: int) -> tuple[Path, Path]:
    """The file set (made once on this machine's disk by cacheflood, kept across the run) and a
    backing image holding it in the system disk's file system area for a swap area of `size`
    bytes (systemdisk.prepare_image, one per layout, kept across the run): (image, file set)."""
    lay = layout(size, file_set)
    files = file_set_dir(scratch) / "files"
    files.parent.mkdir(parents=True, exist_ok=True)
    run_json(cacheflood_cmd(files, file_set, PAGE, seed=seed), timeout=3600)
    image = file_set_dir(scratch) / f"{lay.swap_bytes}-{lay.fs_bytes}-{IMAGE}"
    prepare_image(image, lay, files)
    return image, files


def swap_for(st: state.State, cfg: dict[str, Any], arm: Arm, work: Path, scratch: Path, size: int,
             file_set: int, seed: int, tier_overrides: dict[str, Any] | None = None
             ) -> tuple[SystemDisk | None, Path]:
    """The seed machine's one system disk and swap of `size` bytes for the arm: (the system disk,
    the swap device or file). The system disk (systemdisk.system_disk) is the emulated
    hdd5400-2008, behind the flash tier in the tier arms, holding a swap area (the arm's swap
    for hdd, tier and zswap) and the file set of `file_set` bytes; zram and this machine's own
    disk swap elsewhere while the files stay on the system disk. Without a file set those two
    arms have no system disk (None). The tier starts empty in every trial: what it holds at the
    recovery it earned during the trial's own hog rounds. `tier_overrides` replaces keys of the
    tier's profile (its disk_profile and cache_profile: payoff's disk and stick)."""
    on_disk = arm.swap in ("hdd", "tier", "zswap")
    sd = None
    if on_disk or file_set:
        image, _ = system_image(scratch, size, file_set, seed)
        profile, overrides = ((cfg["tier_profile"], tier_overrides) if arm.swap == "tier"
                              else (cfg["disk_profile"], None))
        sd = system_disk(st, profile, work / "dev", layout(size, file_set), image, swap=on_disk,
                         overrides=overrides)
    if arm.swap == "zram":
        dev = st.zram(size, cfg["zram_algorithm"])
        st.swapon(dev)
        return sd, dev
    if arm.swap == "own":
        return sd, st.swap_file(work / "swapfile", size)
    if arm.swap == "zswap":
        st.set_knob("zswap.compressor", cfg["zswap_compressor"])
        st.set_knob("zswap.enabled", "Y")
    assert sd is not None and sd.swap is not None
    return sd, sd.swap


def swap_bytes(ram: int) -> int:
    """The swap area: four times the group's RAM. What the hogs push out stays far below half
    of it, so a page read back keeps its slot (mm/memory.c should_try_to_free_swap:
    vm_swap_full) and is dropped, not written, when pushed out again."""
    return 4 * ram


def agent_options(cfg: dict[str, Any]) -> dict[str, Any]:
    """The agent's settings in a block (agent_poll_ms, agent_group, agent_max_rate, agent_depth,
    agent_priority) as `Agent`'s arguments, the superfetch command line's flags."""
    return {"poll_ms": float(cfg["agent_poll_ms"]), "group": parse_size(cfg["agent_group"]),
            "max_rate": parse_size(str(cfg["agent_max_rate"])) if cfg.get("agent_max_rate") else 0,
            "depth": int(cfg["agent_depth"]), "priority": cfg["agent_priority"]}


def settle_window(cfg: dict[str, Any]) -> float:
    return float(cfg.get("settle_window_s") or 0)


def watch_recovery(cfg: dict[str, Any], agent: Agent | None, sampler: RecoverySampler) -> float:
    """Watches until the agent's restore is done (no agent: at once) and then one settle window
    more, or `restore_timeout_s`; returns the seconds the agent took (NaN without one, or when
    it did not finish)."""
    timeout = float(cfg["restore_timeout_s"])
    t0 = time.monotonic()
    done = agent.wait_done(timeout) if agent else False
    took = time.monotonic() - t0 if done else float("nan")
    tail = settle_window(cfg) * 1.2
    time.sleep(max(0.0, min(tail, timeout - (time.monotonic() - t0))))
    sampler.stop()
    return took


def run_trial(st: state.State, cfg: dict[str, Any], trial: trials.Trial, scratch: Path,
              d: Design | None = None, tier_overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """One trial of the arm `trial.params["arm"]` at the profile's sizes, or at the sizes `d`
    (payoff's RAM levels, where the hogs may push nothing out) with the tier's profile keys
    `tier_overrides` (payoff's disk and stick)."""
    name = trial.params["arm"]
    arm = ARM[name]
    d = d or design(cfg)
    ram, ws = d.ram, d.working_set
    swap_size = swap_bytes(ram)
    with harness.work_dir(scratch / f"{NAME}-{trial.trial_id}") as work, st.scope():
        sd, swap_dev = swap_for(st, cfg, arm, work, scratch, swap_size, d.file_cache, trial.seed, tier_overrides)
        disk = sd.device if sd else None
        tier0 = disk.stats().get("device", {}) if disk and arm.swap == "tier" else {}
        cg = st.cgroup(NAME, memory_limit=ram)
        extra = {"device": disk.flat_stats} if disk else {}
        c = counters.Counters(memcg=cg.path("memory"), zram=["zram0"] if arm.swap == "zram" else [], extra=extra)
        window = settle_window(cfg)
        with Victim(ws, f"ratio:{cfg['fill_ratio']}", trial.seed, work / "victim", cg, order=d.order,
                    timeout=3600) as v:
            files = sd.files if sd else None
            cache0 = read_file_cache(cg, d.file_cache, files, trial.seed) if files else 0
            agent = (Agent(v.pid, cg.path("memory"), work / "agent", mode=arm.agent,
                           devices=swap_devices(swap_dev), files=files,
                           done_below=int(BACK_SHARE * ws), **agent_options(cfg))
                     if arm.agent else None)
            with agent or nullcontext():
                s0 = c.snapshot()
                hogs_run = push_out(cg, d.hog, rounds=cfg["hog_rounds"], count=HOGS)
                s1 = c.snapshot()
                cache1 = file_bytes(cg)
                # smaps' Swap also counts the process's own stack and heap: capped at the whole set
                evicted = min(1.0, mm.swapped_bytes(v.pid) / ws)
                out_end = out_of_ram(cg)
                sources = {"cached": lambda: victim_cached(cg, v.pid), "out": lambda: out_of_ram(cg),
                           "file": lambda: float(file_bytes(cg)), "swapin": swapin_source(sd)}
                if sd is not None and sd.fs_loop is not None:
                    sources["fsread"] = lambda: sd.area_reads()["fs"]
                # a disk with no modelled time is busy as its loop devices are (io_ticks), on both arms
                busy = busy_source(sd, modelled(cfg["disk_profile"]), swap_dev)
                if busy:
                    sources["busy"] = busy
                with RecoverySampler(sources, period_s=max(0.02, window / 5)) as sampler:
                    if agent:
                        agent.hogs_gone()
                    agent_s = watch_recovery(cfg, agent, sampler)
                s2 = c.snapshot()
                report = agent.stop() if agent else {}
            swapin = swapin_source(sd)
            in2 = swapin()
            rep = v.retouch()
            in3 = swapin()
            s3 = c.snapshot()
        hogs, restore, retouch = c.delta(s0, s1), c.delta(s1, s2), c.delta(s2, s3)
        settle = settle_time(sampler.samples.get("busy", []), window) if window else float("nan")
        cached = cached_time(sampler.samples["cached"], ram)
        back = back_time(sampler.samples["out"], ws)
        retouch_s = rep["retouch"]["ns"] / 1e9

        def area_read(name: str) -> float:
            got = sampler.samples.get(name, [])
            return got[-1][1] - got[0][1] if got else float("nan")

        result = {
            "arm": name, "swap": arm.swap, "agent": arm.agent or "none", "ram": ram, "working_set": ws,
            "command": v.command, "agent_command": agent.command if agent else None,
            "effective": dict(st.effective), "hog_size": d.hog, "file_cache": d.file_cache,
            "intended_share": d.intended_share, "intended_cache_share": d.intended_cache_share,
            "evicted_share": evicted,
            "hogs_killed": hogs_run.killed, "oom_kills": hogs_run.oom_kills, "killed": hogs_run.invalid_reason(),
            "oom_wait_s": hogs_run.longest_oom_wait_s, "hog_s": hogs_run.seconds,
            "pswpout_hogs": hogs["vmstat"].get("pswpout", 0) + hogs["vmstat"].get("zswpout", 0),
            "cache_before_hogs": cache0,
            "cache_dropped_share": (1 - cache1 / cache0) if cache0 else float("nan"),
            # the seed's recovery, from the hogs' end, nothing touching the victim
            "settle_s": settle, "cached_s": cached, "recovery_s": recovery_time(settle, cached),
            "back_s": back, "restore_window_s": sampler.elapsed(),
            # the file cache the group had before the hogs, back (its share FILE_BACK_SHARE)
            "file_back_s": file_back_time(sampler.samples["file"], cache0),
            "file_back_bytes": FILE_BACK_SHARE * cache0,
            # the seed's premise: the page-in rate during the restore, and how scattered the reads were
            "pagein_mbps": pagein_rate(sampler.samples["swapin"], back, sampler.elapsed()),
            "pagein_mbps_retouch": (in3 - in2) / retouch_s / 1e6 if retouch_s > 0 else float("nan"),
            "seek_share_restore": seek_share(restore.get("device", {})),
            "seek_share_retouch": seek_share(retouch.get("device", {})),
            "swap_area_read_bytes_restore": area_read("swapin"),
            "fs_area_read_bytes_restore": area_read("fsread"),
            "system_disk": ({"swap_bytes": sd.layout.swap_bytes, "fs_offset": sd.layout.fs_offset,
                             "fs_bytes": sd.layout.fs_bytes, "swap_on_it": sd.swap is not None} if sd else None),
            "out_at_end_pages": out_end / PAGE,
            # the victim's re-touch after the restore: what a user returning to it waits
            "retouch_s": retouch_s, "majflt": rep["retouch"]["majflt"],
            "minflt": rep["retouch"]["minflt"],
            "pswpin": retouch["vmstat"].get("pswpin", 0), "zswpin": retouch["vmstat"].get("zswpin", 0),
            # Pages the re-touch read from swap (disk, tier, zram or zswap): a page smaps counts as
            # swapped may sit in the swap cache, in RAM, and come back as a minor fault.
            "readback_share": min(1.0, (retouch["vmstat"].get("pswpin", 0) + retouch["vmstat"].get("zswpin", 0))
                                  * PAGE / ws),
            **agent_columns(report, out_end, agent_s),
            **tier_columns(arm, tier0, hogs, restore, disk),
            "counters": {"hogs": hogs, "restore": restore, "retouch": retouch},
            "samples": {k: [[round(t, 3), v_] for t, v_ in s] for k, s in sampler.samples.items()},
            "agent_report": report,
        }
    return result


def agent_columns(report: dict[str, Any], out_end: float, agent_s: float) -> dict[str, float]:
    """The agent's counters for trials.csv: pages it asked for and read from swap while the hogs
    ran and after, its active and CPU seconds, the file bytes it read back, the share of the
    pages out at the hogs' end it had asked for while they ran, the pages written out again."""
    nan = float("nan")
    if not report:
        return {k: nan for k in ("agent_rounds_requested", "agent_rounds_swapins", "agent_rounds_active_s",
                                 "agent_restore_requested", "agent_restore_swapins", "agent_restore_active_s",
                                 "agent_restore_s", "agent_file_bytes", "agent_cpu_s", "agent_coverage",
                                 "agent_rewritten", "agent_pressure_stops", "restore_share")}
    r, s = report["rounds"], report["restore"]
    at_go = report["swapped_at_go"]
    return {
        "agent_rounds_requested": r["requested_pages"], "agent_rounds_swapins": r["swapins"],
        "agent_rounds_active_s": r["active_s"],
        "agent_restore_requested": s["requested_pages"], "agent_restore_swapins": s["swapins"],
        "agent_restore_active_s": s["active_s"], "agent_restore_s": agent_s,
        "agent_file_bytes": report["files"]["reread_bytes"], "agent_cpu_s": report["cpu_s"],
        "agent_coverage": report["asked_in_rounds_of_swapped_at_go"] / at_go if at_go else nan,
        "agent_rewritten": report["rewritten_pages"],
        "agent_pressure_stops": r["pressure_stops"] + s["pressure_stops"],
        # of the pages out of RAM at the hogs' end, the share the restore read back
        "restore_share": min(1.0, s["swapins"] * PAGE / out_end) if out_end else nan,
    }


def tier_columns(arm: Arm, tier0: dict[str, Any], hogs: dict[str, dict[str, float]],
                 restore: dict[str, dict[str, float]], disk: EmulatedDisk | None) -> dict[str, float]:
    """The emulated device's view: the flash tier's blocks at the end of the rounds, copies
    offered and dropped during them, the share of read bytes its flash served during the rounds
    and during the restore."""
    nan = float("nan")
    dev_h, dev_r = hogs.get("device", {}), restore.get("device", {})

    def share(d: dict[str, float]) -> float:
        read = d.get("read_bytes", 0.0)
        return d.get("cache_hit_bytes", 0.0) / read if read else nan

    tier = arm.swap == "tier"
    end_blocks = nan
    if tier and disk is not None:
        end_blocks = float(tier0.get("cache_blocks", 0)) + dev_h.get("device.inserts", 0) \
            - dev_h.get("device.evictions", 0) - dev_h.get("device.invalidations", 0)
    return {
        "tier_loaded_at_start": float(tier0.get("loaded_blocks", nan)) if tier else nan,
        "tier_blocks_end_rounds": end_blocks,
        "tier_offered_rounds": dev_h.get("device.copies_offered", nan) if tier else nan,
        "tier_dropped_rounds": dev_h.get("device.copies_dropped", nan) if tier else nan,
        "tier_prefetches": (dev_h.get("device.prefetches", 0) + dev_r.get("device.prefetches", 0)) if tier else nan,
        "tier_hit_share_rounds": share(dev_h) if tier else nan,
        "tier_hit_share_restore": share(dev_r) if tier else nan,
        "device_read_bytes_restore": dev_r.get("read_bytes", nan),
        "device_cache_hit_bytes_restore": dev_r.get("cache_hit_bytes", nan),
    }


def file_bytes(cg: state.Cgroup) -> int:
    """The page cache charged to the group (v1 memory.stat cache, v2 file)."""
    stat = cg.stat()
    return int(stat.get("cache", stat.get("file", 0)))


def file_set_dir(scratch: Path) -> Path:
    """The files whose pages play the seed machine's file cache (files/, made on this machine's
    disk) and the system disk's images holding them (swap_for), kept across the trials of a run."""
    return Path(scratch).resolve() / f"{NAME}-file-cache"


def read_file_cache(cg: state.Cgroup, size: int, where: Path, seed: int) -> int:
    """Reads `size` bytes of the file set in `where` (the system disk's file system) through the
    page cache from inside the group (cacheflood, the set made cold first), as the seed
    machine's "1.6GB cache" of pages read before the hogs; returns the group's page cache
    afterwards."""
    run_json(cacheflood_cmd(where, size, size, seed=seed, cold=True), timeout=1800, preexec_fn=cg.preexec())
    return file_bytes(cg)


def validity(params: dict[str, Any], result: dict[str, Any]) -> str | None:
    """The hogs evicted the working set without being killed; it was read back from swap (by
    the re-touch, or by the agent's restore); the tier started empty; an agent reading between
    the rounds read pages back while the hogs ran, and they were dropped, not rewritten."""
    if result.get("killed"):
        return result["killed"]
    if result.get("hogs_killed"):
        return f"{result['hogs_killed']} hog(s) killed by the memory cgroup's OOM killer"
    arm = ARM[params["arm"]]
    # the share of the working set this profile's sizes push out (1 when the hogs alone ask
    # for more than the RAM; about 0.3 at the seed's scale)
    need = MIN_SHARE * float(result.get("intended_share", 1.0))
    if arm.agent is None:
        if reason := out_and_back_reason(result["evicted_share"], result["readback_share"], need):
            return reason
    else:
        if reason := out_and_back_reason(result["evicted_share"], 1.0, need):
            return reason
        back = result.get("back_s", float("nan"))
        if not back == back:
            return (f"the working set was not back in RAM within {result.get('restore_window_s', 0):.0f} s of "
                    f"the hogs' end: the agent's restore did not bring it back")
    dropped = result.get("cache_dropped_share", float("nan"))
    cache_share = result.get("intended_cache_share", 1.0)
    cache_need = MIN_SHARE * (1.0 if cache_share != cache_share else float(cache_share))
    if result.get("file_cache") and not dropped >= cache_need:
        return (f"the hogs dropped {100 * dropped:.0f} % of the file cache read before them; the design "
                f"needs >= {100 * cache_need:.0f} %")
    loaded = result.get("tier_loaded_at_start", float("nan"))
    if arm.swap == "tier" and not loaded == 0:
        return f"the tier loaded {loaded:.0f} cached blocks from an earlier run; it must start empty"
    if arm.agent == "between" and float(result.get("intended_share", 1.0)) > 0:
        read = float(result.get("agent_rounds_swapins", 0) or 0)
        if not read >= 1:
            return "the agent read nothing back from swap while the hogs ran: nothing was prefetched between the rounds"
        asked = float(result.get("agent_rounds_requested", 0) or 0)
        rewritten = float(result.get("agent_rewritten", 0) or 0)
        if asked and rewritten > MAX_REWRITTEN * asked:
            return (f"{rewritten:.0f} of the {asked:.0f} pages the agent read while the hogs ran were written to "
                    f"swap again rather than dropped (the design allows {100 * MAX_REWRITTEN:.0f} %)")
    return None


# --------------------------------------------------------------------------------------------
# Analysis.

FACTORIAL = ("hdd_after", "hdd_between", "tier_after", "tier_between")
# The claims' arms, the seed's three conditions, each with the agent (Vista always ran Superfetch).
# Without ReadyBoost is the bare disk with the agent also reading between the hog rounds: the seed
# timed all three results after the same "20~30" repeated launches, and reads Superfetch's
# prefetching during them as what repeated launches do ("when memory hog programs repeatedly
# launch ... Superfetch will try to prefetch them"), with or without a stick; the stick only keeps
# what it reads ("Then, the 0.4GB has a certain chance to be stored into ReadyBoost cache").
# ReadyBoost with little pre-population is the tier with the agent restoring only after the hogs;
# with enough, the tier and the agent also between the rounds.
SEED_ARMS = {"none": "hdd_between", "little": "tier_after", "enough": "tier_between"}
# The other reading of "without ReadyBoost", the bare disk with the agent restoring only after the
# hogs (the same agent as the little-pre-population arm): the claims' sensitivity rows.
SENSITIVITY_NONE = "hdd_after"
# The criteria timed from the hogs' end, which can be censored: met when the clock started ("at
# the start") or never within the watch ("> watch").
CRITERIA = ("settle_s", "cached_s", "recovery_s", "back_s", "file_back_s")
# Every time the table and figure show per arm: the criteria, the hogs' rounds, the total (hogs
# and the restore of the working set), the victim's re-touch.
TIMES = ("settle_s", "cached_s", "recovery_s", "back_s", "file_back_s", "hog_s", "total_s", "retouch_s")
WORDS = {"settle_s": "disk quiet", "cached_s": "cached", "recovery_s": "recovery (the seed's criteria)",
         "back_s": "working set back", "file_back_s": "file cache back",
         "hog_s": "the hogs' rounds", "total_s": "total (hogs + working set back)",
         "retouch_s": "the victim's re-touch"}
HEADERS = {"settle_s": "Disk quiet (s)", "cached_s": "Cached (s)", "recovery_s": "Recovery (s)",
           "back_s": "Back in RAM (s)", "file_back_s": "Files back (s)",
           "hog_s": "Hogs (s)", "total_s": "Total (s)", "retouch_s": "Re-touch (s)"}


def by_construction(frame: pd.DataFrame) -> pd.Series:
    """Trials whose sizes push nothing out (the working set and the hogs fit in the RAM: payoff's
    larger RAM levels): their zeros follow from the sizes, not from a measurement."""
    share = frame["intended_share"].astype(float) if "intended_share" in frame else pd.Series(1.0, frame.index)
    return share.fillna(1.0) <= 0


def coded(frame: pd.DataFrame, col: str) -> pd.Series:
    """`col` per trial in stats.censored_median_ci's coding: a criterion met when the clock
    started (0 s where the sizes push something out) is AT_START, one never met within the watch
    (NaN) OVER_WATCH; `total_s` is the hogs' time plus the working set's return (the hogs' time
    alone when it was back at their end, OVER_WATCH when it never was)."""
    if col == "total_s":
        back = coded(frame, "back_s")
        hog = frame["hog_s"].astype(float)
        return pd.Series([h + (b if np.isfinite(b) else 0.0) if b != OVER_WATCH else OVER_WATCH
                          for h, b in zip(hog, back, strict=True)], index=frame.index, dtype=float)
    v = frame[col].astype(float) if col in frame else pd.Series(np.nan, frame.index)
    if col not in CRITERIA:
        return v
    built = by_construction(frame)
    out = v.where(~((v == 0) & ~built), AT_START)
    return out.where(v.notna(), OVER_WATCH)


def censoring(values: pd.Series, what: str, watch: float) -> str:
    """Why values are censored, in words: "at the start in 5 of 5 trials" of `what`."""
    start, over, unknown = int((values == AT_START).sum()), int((values == OVER_WATCH).sum()), \
        int(values.isna().sum())
    parts = ([f"met at the hogs' end (at the start) in {start}"] if start else []) + \
        ([f"not met within the watch (> {fmt(watch)} s) in {over}"] if over else []) + \
        ([f"not ordered in {unknown}"] if unknown else [])
    return f"{what}: " + ", ".join(parts) + f" of {len(values)} trials" if parts else ""


def summarise(frame: pd.DataFrame) -> pd.DataFrame:
    """Per arm: each time's median with its order-statistic interval, censored values kept in
    their place (a criterion met when the clock started below every measured value, one never
    met within the watch above them: `<col>_start`, `<col>_over`, `<col>_censored`), the
    interval's exact coverage, the watch; and the agent's and the tier's counters (medians)."""
    rows = []
    for arm in [a for a in ARMS if a in set(frame["arm"])]:
        g = frame[frame["arm"] == arm]

        def med(col: str, g: pd.DataFrame = g) -> float:
            return float(np.nanmedian(g[col])) if col in g and g[col].notna().any() else float("nan")

        row: dict[str, Any] = {"arm": arm, "n": len(g), "watch_s": med("restore_window_s")}
        for col in TIMES:
            vals = coded(g, col) if col in g or col == "total_s" and "back_s" in g and "hog_s" in g \
                else pd.Series(dtype=float)
            if col not in CRITERIA and col != "total_s":
                vals = vals.dropna()
            e = censored_median_ci(vals.to_numpy(float)) if len(vals) else None
            row[col] = e.value if e else float("nan")
            row[f"{col}_lo"] = e.ci_low if e else float("nan")
            row[f"{col}_hi"] = e.ci_high if e else float("nan")
            row[f"{col}_n"] = e.n if e else 0
            row[f"{col}_coverage"] = e.coverage if e else float("nan")
            row[f"{col}_start"] = int((vals == AT_START).sum())
            row[f"{col}_over"] = int((vals == OVER_WATCH).sum())
            row[f"{col}_censored"] = e.censored if e else 0
            row[f"{col}_censoring"] = censoring(vals, f"{arm.replace('_', ' ')}'s {WORDS[col]}", row["watch_s"])
        row["ended_by"] = ended_by(g)
        for col in ("evicted_share", "majflt", "agent_rounds_requested", "agent_rounds_swapins",
                    "agent_restore_requested", "agent_restore_swapins", "agent_coverage", "agent_rewritten",
                    "agent_file_bytes", "agent_cpu_s", "tier_hit_share_rounds", "tier_hit_share_restore",
                    "tier_blocks_end_rounds", "out_at_end_pages", "pswpout_hogs", "cache_before_hogs"):
            row[col] = med(col)
        for col in PREMISE:
            vals = g[col].astype(float).dropna() if col in g else pd.Series(dtype=float)
            e = censored_median_ci(vals.to_numpy(float)) if len(vals) else None
            row[col], row[f"{col}_lo"], row[f"{col}_hi"] = (e.value, e.ci_low, e.ci_high) if e else (np.nan,) * 3
            row[f"{col}_n"] = e.n if e else 0
        rows.append(row)
    return pd.DataFrame(rows)


# The seed's premise, measured per arm: the page-in rate during the restore and during the
# re-touch (MB/s, 1e6 B/s: "below 2MB per second"), the share of the emulated disk's reads that
# needed a seek in each ("quite random, reads").
PREMISE = ("pagein_mbps", "pagein_mbps_retouch", "seek_share_restore", "seek_share_retouch")
PREMISE_HEADERS = {"pagein_mbps": "Page-in, restore (MB/s)", "pagein_mbps_retouch": "Page-in, re-touch (MB/s)",
                   "seek_share_restore": "Reads with a seek, restore",
                   "seek_share_retouch": "Reads with a seek, re-touch"}
SEED_PAGEIN_MBPS = 2.0   # seed 000: "below 2MB per second"


def premise_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Per arm, the seed's premise measured: the page-in rate (MB/s) and the share of the system
    disk's reads that needed a seek (the model moved the head a whole track), during the
    restore and the re-touch: median [interval]; -- where nothing was read (no swap on the
    emulated disk: zram, this machine's disk)."""
    def cell(r: pd.Series, col: str) -> str:
        if not r[f"{col}_n"] or r[col] != r[col]:
            return "--"
        pct = col.startswith("seek")
        f = (lambda x: f"{100 * x:.0f}" + r"\,\%") if pct else (lambda x: fmt(x))
        return f"{f(r[col])} [{f(r[f'{col}_lo'])}, {f(r[f'{col}_hi'])}]"
    return pd.DataFrame({"Arm": summary["arm"].str.replace("_", " "),
                         **{PREMISE_HEADERS[c]: [cell(r, c) for _, r in summary.iterrows()] for c in PREMISE}})


def ended_by(g: pd.DataFrame) -> dict[str, int]:
    """Per trial, which of the seed's two criteria ended its recovery (the first met): "disk
    quiet", "cached" or both, "at the start" when it was met when the clock started, "neither
    within the watch" when none was; counted over the trials."""
    out: dict[str, int] = {}
    for _, r in g.iterrows():
        rec = float(r.get("recovery_s", float("nan")))
        if rec != rec:
            label = "neither within the watch"
        else:
            which = [w for c, w in (("settle_s", "disk quiet"), ("cached_s", "cached"))
                     if float(r.get(c, np.nan)) == rec]
            label = " and ".join(which) + (" at the start" if rec == 0 else "")
        out[label] = out.get(label, 0) + 1
    return out


def ended_sentence(row: pd.Series) -> str:
    """One arm's sentence: which criterion ended its recovery, in how many trials."""
    counts = sorted(row["ended_by"].items(), key=lambda kv: -kv[1])
    parts = [f"{what} in {k} of {int(row['n'])} trial{'s' if row['n'] != 1 else ''}" for what, k in counts]
    tail = ""
    if any("at the start" in w for w, _ in counts) and row["recovery_s_censored"] * 2 > row["recovery_s_n"]:
        tail = " (censored)"   # the section says once what that means for the arm
    return f"{escape(row['arm'].replace('_', ' '))}: recovery ended by " + ", ".join(parts) + tail


def paired_censored(frame: pd.DataFrame, col: str, a: str, b: str) -> tuple[list[float], int]:
    """The per-round ratios of arm `a` over arm `b` of coded `col` (stats.censored_ratio: a round
    with a censored member has its place where it is certain, none otherwise), and how many
    rounds were paired."""
    sub = frame[frame["arm"].isin([a, b])]
    ca = coded(sub, col)
    xa = ca[sub["arm"] == a].loc[sub[sub["arm"] == a].sort_values("order").index].tolist()
    xb = ca[sub["arm"] == b].loc[sub[sub["arm"] == b].sort_values("order").index].tolist()
    n = min(len(xa), len(xb))
    return [censored_ratio(x, y) for x, y in zip(xa[:n], xb[:n], strict=True)], n


def ratio_estimate(r: list[float], method: str) -> Estimate | None:
    """A paired ratio's median and interval over rounds, some censored (censored_median_ci)."""
    if not r:
        return None
    e = censored_median_ci(r)
    return Estimate(e.value, e.ci_low, e.ci_high, e.n, method, e.coverage, e.censored)


def ratio_pairs() -> list[tuple[str, str, str]]:
    """(criterion, arm, over arm) of every ratio the section and the claims read."""
    none, sens = SEED_ARMS["none"], SENSITIVITY_NONE
    rec = [("tier_after", none), ("tier_between", none), ("tier_after", sens), ("tier_between", sens),
           ("tier_between", "tier_after"), ("hdd_between", "hdd_after"),
           ("zswap", "hdd_after"), ("zram", "hdd_after"), ("own", "hdd_after")]
    back = [("tier_between", "tier_after"), ("tier_after", "hdd_after"), ("hdd_between", "hdd_after"),
            ("tier_between", "hdd_between"), ("tier_between", "hdd_after")]
    return [("recovery_s", a, b) for a, b in rec] + [("back_s", a, b) for a, b in back] + \
        [("total_s", a, b) for a, b in back] + [("retouch_s", "hdd_after", "hdd")]


def ratio_key(col: str, a: str, b: str) -> str:
    return f"{a}_vs_{b}" if col == "recovery_s" else f"{col.removesuffix('_s')}.{a}_vs_{b}"


def ratios(frame: pd.DataFrame) -> dict[str, Estimate]:
    """Per-round ratios (the arms run interleaved) of the seed's recovery (`<a>_vs_<b>`: the
    claims' pairs, the seed's little and enough pre-population over each reading of its
    no-ReadyBoost arm, SEED_ARMS and SENSITIVITY_NONE; the factorial's simple effects; the modern
    arms over the bare disk with the same agent), of the working set back and of the total
    (back.<pair>, total.<pair>), of the re-touch with the agent over without
    (retouch.hdd_after_vs_hdd), and the factorial's interaction (interaction, back.interaction).
    A censored round keeps its place where it is certain (stats.censored_ratio) and is counted in
    the estimate's `censored`."""
    out: dict[str, Estimate] = {}
    arms = set(frame["arm"])
    for col, a, b in ratio_pairs():
        if a in arms and b in arms and (col in frame or col == "total_s"):
            r, _ = paired_censored(frame, col, a, b)
            if e := ratio_estimate(r, "paired ratio, order statistics"):
                out[ratio_key(col, a, b)] = e
    for col in ("recovery_s", "back_s"):
        if col in frame and (inter := interaction(frame, col)):
            out["interaction" if col == "recovery_s" else f"{col.removesuffix('_s')}.interaction"] = inter
    return out


def interaction(frame: pd.DataFrame, metric: str = "recovery_s") -> Estimate | None:
    """The 2 x 2 factorial's interaction, round by round: (tier_between / hdd_between) /
    (tier_after / hdd_after), the factor by which prefetching between the rounds changes the
    tier's effect. Below 1: prefetching helps behind the tier more than on the bare disk (the
    seed's explanation); 1: the two do not interact. A round with any of the four censored has no
    place in the order and is counted censored."""
    if not set(FACTORIAL) <= set(frame["arm"]):
        return None
    cols = []
    for a in FACTORIAL:
        g = frame[frame["arm"] == a].sort_values("order")
        cols.append(coded(g, metric).tolist())
    n = min(len(c) for c in cols)
    r = []
    for ha, hb, ta, tb in zip(*(c[:n] for c in cols), strict=True):
        ok = all(np.isfinite(v) and v > 0 for v in (ha, hb, ta, tb))
        r.append((tb / hb) / (ta / ha) if ok else float("nan"))
    return ratio_estimate(r, "paired interaction ratio, order statistics")


def _bound(x: float) -> float:
    """A censored value as a bound a reader can hold: AT_START is 0 s (or a ratio of 0), the
    least a time or ratio can be; OVER_WATCH stays infinite."""
    return 0.0 if x == AT_START else float(x)


def censored_entry(e: Estimate, unit: str, method: str, why: str) -> dict[str, Any]:
    """A measurements.json entry with its censoring: `censored` of `n`, and why in words; the
    judge calls a claim whose measurement is censored in more than half its trials not
    measurable here."""
    out = entry(_bound(e.value), _bound(e.ci_low), _bound(e.ci_high), unit, e.n, method)
    out["coverage"] = e.coverage
    out["censored"] = int(e.censored)
    if e.censored:
        out["censoring"] = why
    return out


def ratio_censoring(frame: pd.DataFrame, key: str) -> str:
    """Why a ratio's rounds are censored: each member arm's censoring of its criterion."""
    col = "recovery_s"
    body = key
    if "." in key:
        col, body = key.split(".", 1)
        col += "_s"
    arms = FACTORIAL if body == "interaction" else body.split("_vs_")
    parts = []
    for arm in arms:
        g = frame[frame["arm"] == arm]
        if len(g) and (text := censoring(coded(g, col), f"{arm.replace('_', ' ')}'s {WORDS[col]}",
                                         float(np.nanmedian(g["restore_window_s"]))
                                         if "restore_window_s" in g and g["restore_window_s"].notna().any()
                                         else float("nan"))):
            parts.append(text)
    return "; ".join(parts)


def measurements(summary: pd.DataFrame, rat: dict[str, Estimate], frame: pd.DataFrame | None = None) -> dict[str, Any]:
    """readyboost.<arm>.<time> (real seconds at this profile's scale; RB1-RB3 read the recovery
    only at the seed profile), readyboost.ratio.<a>_vs_<b> (RBR2, RBR3, RBO and their sensitivity
    rows), readyboost.ratio.interaction (RBX); each with its censoring (`frame`, the trials, says
    why a ratio's rounds are censored)."""
    out: dict[str, Any] = {}
    for _, r in summary.iterrows():
        for col in TIMES:
            if r[f"{col}_n"]:
                e = Estimate(r[col], r[f"{col}_lo"], r[f"{col}_hi"], int(r[f"{col}_n"]), "",
                             r[f"{col}_coverage"], int(r[f"{col}_censored"]))
                out[f"{NAME}.{r['arm']}.{col}"] = censored_entry(e, "s", f"median, order statistics ({WORDS[col]})",
                                                                 r[f"{col}_censoring"])
        for col in PREMISE:
            if r[f"{col}_n"]:
                out[f"{NAME}.{r['arm']}.{col}"] = entry(r[col], r[f"{col}_lo"], r[f"{col}_hi"],
                                                        "share" if col.startswith("seek") else "MB/s",
                                                        int(r[f"{col}_n"]), "median, order statistics")
        out[f"{NAME}.{r['arm']}.evicted_share"] = entry(r["evicted_share"], r["evicted_share"], r["evicted_share"],
                                                        "share", int(r["n"]), "median")
    for k, e in rat.items():
        why = ratio_censoring(frame, k) if frame is not None and e.censored else \
            f"{e.censored} of {e.n} rounds censored"
        out[f"{NAME}.ratio.{k}"] = censored_entry(e, "ratio", e.method, why)
    return out


def time_text(v: float, lo: float, hi: float, n: int, censored: int, start: int, over: int, watch: float) -> str:
    """One cell of the table: "22.5 [20.5, 23.8]", a censored bound named ("at the start", "> 36
    s"); a value censored in more than half its trials is named by its censoring, never a number."""
    if not n:
        return "--"
    if censored * 2 > n:
        parts = ([f"at the start {start}/{n}"] if start else []) + \
            ([f"> {fmt(watch)} {over}/{n}"] if over else [])
        return "; ".join(parts) or f"censored {censored}/{n}"

    def one(x: float) -> str:
        return "at the start" if x == AT_START else f"> {fmt(watch)}" if x == OVER_WATCH else fmt(x)

    text = f"{one(v)} [{one(lo)}, {one(hi)}]"
    return text + (f" ({censored} cens.)" if censored else "")


def value_text(row: pd.Series, col: str) -> str:
    """One arm's median of `col` for the text, with its unit: "22.5\\,s"; censored in more than
    half its trials, what happened instead ("censored: met at the hogs' end in 5 of 5 trials")."""
    n, cens = int(row[f"{col}_n"]), int(row[f"{col}_censored"])
    if not n:
        return "n/a"
    if cens * 2 > n:
        watch = row["watch_s"] + (row["hog_s"] if col == "total_s" else 0.0)
        parts = ([f"met at the hogs' end in {int(row[f'{col}_start'])}"] if row[f"{col}_start"] else []) + \
            ([f"not met within {fmt(watch)}\\,s in {int(row[f'{col}_over'])}"] if row[f"{col}_over"] else [])
        return "censored: " + " and ".join(parts) + f" of {n} trials"
    return f"{fmt(row[col])}\\,s" + (f" ({cens} of {n} censored)" if cens else "")


def table(summary: pd.DataFrame, rejected: pd.DataFrame | None = None) -> pd.DataFrame:
    """The factorial table: per arm, counted and rejected trials, each criterion as its own
    column (disk quiet, cached, the seed's recovery, the working set back), the hogs' time, the
    total (hogs + working set back), the re-touch; censored values named; the pages the agent
    asked for while the hogs ran and the tier's hit share during the restore."""

    def n_rejected(arm: str) -> int:
        if rejected is None or rejected.empty:
            return 0
        return int(rejected.loc[rejected["arm"] == arm, "rejected"].sum())

    def count(v: float) -> str:
        return "--" if v != v else f"{v:.0f}"

    def col(c: str) -> list[str]:
        # the total's watch ends the watch after the hogs' rounds
        return [time_text(r[c], r[f"{c}_lo"], r[f"{c}_hi"], int(r[f"{c}_n"]), int(r[f"{c}_censored"]),
                          int(r[f"{c}_start"]), int(r[f"{c}_over"]),
                          r["watch_s"] + (r["hog_s"] if c == "total_s" else 0.0)) for _, r in summary.iterrows()]

    return pd.DataFrame({
        "Arm": summary["arm"].str.replace("_", " "), "Trials": summary["n"].astype(int),
        "Rejected": [n_rejected(a) for a in summary["arm"]],
        **{HEADERS[c]: col(c) for c in TIMES},
        "Prefetched in rounds": summary["agent_rounds_requested"].map(count),
        "Tier hit share": summary["tier_hit_share_restore"].map(lambda v: "--" if v != v else f"{v:.2f}"),
    })


def table_format(table: pd.DataFrame) -> str:
    """The table's column alignment: text columns left, counts and shares right."""
    text = ("Arm", *HEADERS.values())
    return "".join("l" if c in text else "r" for c in table.columns)


def arm_row(summary: pd.DataFrame, arm: str) -> pd.Series | None:
    """The summary's row of one arm, or None when the arm did not run."""
    rows = summary[summary["arm"] == arm] if len(summary) else summary
    return rows.iloc[0] if len(rows) else None


def measurable(e: Estimate | None) -> bool:
    """An estimate the text may compare: present, censored in at most half its rounds."""
    return e is not None and e.censored * 2 <= e.n and np.isfinite(e.value)


def not_measurable_text(key: str, e: Estimate | None, frame: pd.DataFrame | None) -> str:
    if e is None:
        return "no round had both arms"
    why = ratio_censoring(frame, key) if frame is not None else ""
    return f"not measurable here: {e.censored} of {e.n} rounds censored" + (f" ({why})" if why else "")


def macros(summary: pd.DataFrame, rat: dict[str, Estimate], cfg: dict[str, Any] | None, profile: str,
           skipped: str | None, rejected: pd.DataFrame | None = None,
           frame: pd.DataFrame | None = None) -> dict[str, str]:
    """Every number and every comparative sentence of the section, from the data."""
    m = {"ReadyboostProfile": profile, "ReadyboostStatus": escape(skipped or "ran")}
    if cfg:
        d = design(cfg)
        m["ReadyboostRamMiB"] = fmt(d.ram / 2**20)
        m["ReadyboostHogRounds"] = str(cfg["hog_rounds"])
        m["ReadyboostWorkingSetMiB"] = fmt(d.working_set / 2**20)
        m["ReadyboostHogMiB"] = fmt(d.hog / 2**20)
        m["ReadyboostIntendedPct"] = f"{100 * d.intended_share:.0f}"
        m["ReadyboostFileCache"] = (rf"after {fmt(d.file_cache / 2**20)}\,MiB of files on the same emulated disk "
                                    "were read through the page cache inside it (the seed machine's file cache), "
                                    if d.file_cache else "")
        m["ReadyboostFileBackPct"] = f"{100 * FILE_BACK_SHARE:.0f}"
        m["ReadyboostSeedPageinMBps"] = fmt(SEED_PAGEIN_MBPS)
        lay = layout(swap_bytes(d.ram), d.file_cache)
        m["ReadyboostSwapAreaMiB"] = fmt(lay.swap_bytes / 2**20)
        m["ReadyboostFsAreaMiB"] = fmt(lay.fs_bytes / 2**20)
        m["ReadyboostOrder"] = {"seq": "address order", "random": "random order"}[d.order]
        m["ReadyboostSettleWindow"] = fmt(settle_window(cfg))
        m["ReadyboostCachedMiB"] = fmt(CACHED_SHARE * d.ram / 2**20)
        m["ReadyboostAgentPollMs"] = fmt(float(cfg["agent_poll_ms"]))
        m["ReadyboostAgentGroupKiB"] = fmt(parse_size(cfg["agent_group"]) / 1024)
    for arm in ARMS:
        w = "".join(p.capitalize() for p in arm.split("_"))
        row = arm_row(summary, arm)
        for col, suffix in (("recovery_s", "S"), ("retouch_s", "RetouchS"), ("back_s", "BackS"), ("hog_s", "HogS"),
                            ("total_s", "TotalS"), ("file_back_s", "FileBackS")):
            m[f"Readyboost{w}{suffix}"] = value_text(row, col) if row is not None else "n/a"
        for col, suffix in (("pagein_mbps", "PageinMBps"), ("pagein_mbps_retouch", "RetouchPageinMBps")):
            m[f"Readyboost{w}{suffix}"] = (fmt(row[col]) if row is not None and row[col] == row[col] else "n/a")
        for col, suffix in (("seek_share_restore", "SeekPct"), ("seek_share_retouch", "RetouchSeekPct")):
            m[f"Readyboost{w}{suffix}"] = (f"{100 * row[col]:.0f}" if row is not None and row[col] == row[col]
                                           else "n/a")
        for col, suffix in (("agent_rounds_requested", "Prefetched"), ("agent_rewritten", "Rewritten")):
            m[f"Readyboost{w}{suffix}"] = (f"{row[col]:.0f}" if row is not None and row[col] == row[col] else "n/a")
        m[f"Readyboost{w}HitShare"] = (f"{row['tier_hit_share_restore']:.2f}" if row is not None and
                                       row["tier_hit_share_restore"] == row["tier_hit_share_restore"] else "n/a")
        m[f"Readyboost{w}Coverage"] = (f"{100 * row['agent_coverage']:.0f}" if row is not None and
                                       row["agent_coverage"] == row["agent_coverage"] else "n/a")
    m["ReadyboostRejected"] = str(int(rejected["rejected"].sum())) if rejected is not None and len(rejected) else "0"
    m["ReadyboostEvictedPct"] = (f"{100 * float(summary['evicted_share'].min()):.0f}"
                                 if len(summary) and "evicted_share" in summary else "n/a")
    m["ReadyboostIntervals"] = interval_name(summary["n"].tolist() if len(summary) else [], latex=True)
    m["ReadyboostEndedSentences"] = ("; ".join(ended_sentence(r) for _, r in summary.iterrows())
                                     if len(summary) else "n/a")
    m["ReadyboostJudged"] = (
        "At this, the seed's own scale, the seed's seconds (RB1--RB3) are judged, as are the ratios and the "
        "order of its three conditions." if profile == "seed" else
        "Times are as measured: the seed's seconds (RB1--RB3) are judged only at the seed's own scale "
        "(\\texttt{make PROFILE=seed}); at this scale the claims are the ratios and the order of its three "
        "conditions.")
    none, sens = SEED_ARMS["none"], SENSITIVITY_NONE
    word = {none: "the bare disk with the agent also between the rounds (the primary twin of the seed's "
                  "``without ReadyBoost'')",
            sens: "the bare disk with the agent restoring only after them (the sensitivity twin)"}
    # One finding per comparison, in words; its ratio, interval and rounds are a row of the
    # section's comparison table (ReadyboostComparisons), never repeated in the sentence.
    findings = {
        "ReadyboostLittleSentence": (f"tier_after_vs_{none}", "tier after / bare between (RBR2)",
                                     "behind the tier with the agent restoring only after the hogs, recovery was",
                                     f"than on {word[none]}"),
        "ReadyboostEnoughSentence": (f"tier_between_vs_{none}", "tier between / bare between (RBR3)",
                                     "behind the tier with the agent also prefetching between the rounds, recovery "
                                     "was", f"than on {word[none]}"),
        "ReadyboostLittleSensSentence": (f"tier_after_vs_{sens}", "tier after / bare after (RBR2S)",
                                         "behind the tier with the agent restoring only after the hogs, recovery was",
                                         f"than on {word[sens]}"),
        "ReadyboostEnoughSensSentence": (f"tier_between_vs_{sens}", "tier between / bare after (RBR3S)",
                                         "behind the tier with the agent also prefetching between the rounds, "
                                         "recovery was", f"than on {word[sens]}"),
        "ReadyboostPrefetchTierSentence": ("tier_between_vs_tier_after", "tier between / tier after",
                                           "behind the tier, with prefetching between the rounds recovery was",
                                           "than with the agent restoring only after them"),
        "ReadyboostPrefetchHddSentence": ("hdd_between_vs_hdd_after", "bare between / bare after",
                                          "on the bare disk, with prefetching between the rounds recovery was",
                                          "than with the agent restoring only after them"),
        "ReadyboostBackTierSentence": ("back.tier_between_vs_tier_after", "working set back: tier between / "
                                       "tier after", "behind the tier, with prefetching between the rounds the "
                                       "restore of the working set was", "than with the agent restoring only "
                                       "after them"),
        "ReadyboostBackEnoughSentence": ("back.tier_between_vs_hdd_between", "working set back: tier between / "
                                         "bare between", "by the working set back, the tier with the agent between "
                                         "the rounds was", "than the bare disk with the agent between the rounds"),
        "ReadyboostTotalEnoughSentence": ("total.tier_between_vs_hdd_between", "hogs and working set back: tier "
                                          "between / bare between", "counting the hogs' rounds, the tier with the "
                                          "agent between the rounds was", "than the bare disk with it"),
        "ReadyboostAgentSentence": ("retouch.hdd_after_vs_hdd", "re-touch: bare after / bare without the agent",
                                    "on the bare disk, after the agent's restore the victim's re-touch was",
                                    "than without the agent (plain Linux)"),
        "ReadyboostZswapSentence": ("zswap_vs_hdd_after", "zswap / bare after",
                                    "with zswap in front of the disk, recovery was", "than on the bare disk"),
        "ReadyboostZramSentence": ("zram_vs_hdd_after", "zram / bare after", "on zram, recovery was",
                                   "than on the bare disk"),
    }
    rows: list[tuple[str, Estimate | None, str]] = []
    for key, (r, label, subject, than) in findings.items():
        e = rat.get(r)
        rows.append((escape(label), e, ""))   # which arm was censored, and how: the ended item and the arm table
        if measurable(e):
            assert e is not None
            m[key] = finding(e, subject[:1].upper() + subject[1:], "slower", "faster", than)  # a sentence
        else:
            m[key] = (f"Whether {subject} slower or faster {than} is not measurable here: "
                      + (f"{e.censored} of {e.n} rounds censored" if e else "no round had both arms"))
    m["ReadyboostFavoursSentence"] = favours_sentence(rat)
    m["ReadyboostExplanationVerdict"] = explanation_verdict(rat)
    for key, col, name in (("interaction", "recovery_s", "ReadyboostInteractionSentence"),
                           ("back.interaction", "back_s", "ReadyboostBackInteractionSentence")):
        inter = rat.get(key)
        what = "recovery" if key == "interaction" else "the restore of the working set"
        if measurable(inter):
            assert inter is not None
            m[name] = interaction_sentence(inter, what)
        else:
            start = [arm.replace("_", " ") for arm in FACTORIAL
                     if (row := arm_row(summary, arm)) is not None and row[f"{col}_start"] * 2 > row[f"{col}_n"]]
            m[name] = (f"for {what}, the interaction of tier and prefetching between the rounds is not measurable "
                       "here" + (f": {inter.censored} of {inter.n} rounds had an arm censored" if inter else "")
                       + (f" (met at the hogs' end in most trials of {' and '.join(start)})" if start else ""))
    for key, label in (("interaction", "interaction, recovery (RBX)"),
                       ("back.interaction", "interaction, working set back")):
        e = rat.get(key)
        rows.append((label, e, ""))
    m["ReadyboostComparisons"] = comparison_rows(rows)
    return m


def explanation_held(inter: Estimate | None, enough: Estimate | None) -> str:
    """Whether the seed's explanation held by one measure, as RBX judges it: the interaction and
    the tier with the agent between the rounds over the no-ReadyBoost twin, both below 1."""
    if not (measurable(inter) and measurable(enough)):
        return "could not be judged, as that measure was already met when the clock started in most rounds"
    assert inter is not None and enough is not None
    if inter.ci_high < 1 and enough.ci_high < 1:
        return "held"
    failed = [w for e, w in ((inter, "the interaction"), (enough, "the tier with prefetching between the rounds "
                                                                     "over the bare disk with it")) if e.ci_low > 1]
    if failed:
        return f"did not hold ({' and '.join(failed)} above 1)"
    return "neither held nor failed (an interval contains 1)"


def explanation_verdict(rat: dict[str, Estimate]) -> str:
    """In plain words, for the abstract, the section and the conclusion: whether the seed's
    explanation held on this twin of "without ReadyBoost" (SEED_ARMS), by the seed's own
    recovery and by the working set back in RAM; a clause whose subject is the explanation."""
    none = SEED_ARMS["none"]
    by_rec = explanation_held(rat.get("interaction"), rat.get(f"tier_between_vs_{none}"))
    by_back = explanation_held(rat.get("back.interaction"), rat.get(f"back.tier_between_vs_{none}"))
    return ("taking the bare disk with the agent also between the rounds as the seed's ``without ReadyBoost'', "
            f"by the seed's own recovery criterion the explanation {by_rec}, and by the time until the working set "
            f"was back in RAM it {by_back}")


def favours_sentence(rat: dict[str, Estimate]) -> str:
    """Whether the seed's own criterion favours an arm that prefetched while the hogs ran: the
    ratio between and after behind the tier by the seed's recovery and by the working set back
    (both rows of the comparison table), in words."""
    rec, back = rat.get("tier_between_vs_tier_after"), rat.get("back.tier_between_vs_tier_after")
    if not (measurable(rec) and measurable(back)):
        return ("behind the tier, the seed's criterion and the working set back cannot both be compared between "
                "prefetching between the rounds and restoring after them (one of them is censored)")
    assert rec is not None and back is not None
    if rec.ci_high < back.ci_low:
        return ("the seed's criterion favours the arm that prefetched while the hogs ran, beyond what the working "
                "set's return shows")
    if rec.ci_low > back.ci_high:
        return "the seed's criterion disfavours the arm that prefetched while the hogs ran"
    return ("the two ratios' intervals overlap, so the seed's criterion is not shown to favour either arm beyond "
            "what the working set's return shows")


def interaction_sentence(e: Estimate, what: str = "recovery") -> str:
    """The factorial's verdict on the seed's explanation, from the interaction's CI, in words
    (the interaction, (tier between / bare between) / (tier after / bare after), is a row of the
    comparison table)."""
    if e.ci_high < 1:
        return (f"for {what}, prefetching between the rounds shortened it behind the tier beyond its effect on the "
                "bare disk, as the seed's explanation says")
    if e.ci_low > 1:
        return (f"for {what}, prefetching between the rounds did less behind the tier than on the bare disk, "
                "against the seed's explanation")
    return f"for {what}, the interaction's interval contains 1, so the data show no interaction"


FIGURE_TIMES = ("settle_s", "cached_s", "back_s", "file_back_s", "hog_s", "total_s")


def figure(summary: pd.DataFrame, profile: str) -> plots.plt.Figure:
    """One panel per criterion (disk quiet, cached, working set back, file cache back, the hogs,
    the total), the arms along x: the median with its interval; a value censored in more than
    half its trials is drawn hollow at its bound (0 for "at the start", the watch for "> watch", with an arrow up),
    never as a measured point."""
    plots.theme()
    fig, axes = plots.plt.subplots(1, len(FIGURE_TIMES), figsize=(2.6 * len(FIGURE_TIMES), 3.4), sharey=False)
    xs = np.arange(len(summary))
    for ax, col in zip(axes, FIGURE_TIMES, strict=True):
        for x, (_, r) in zip(xs, summary.iterrows(), strict=True):
            n, cens = int(r[f"{col}_n"]), int(r[f"{col}_censored"])
            if not n:
                continue
            if cens * 2 > n:
                over = r[f"{col}_over"] >= r[f"{col}_start"]
                y = (r["watch_s"] + (r["hog_s"] if col == "total_s" else 0.0)) if over else 0.0
                ax.plot([x], [y], "^" if over else "o", mfc="none", color="0.4")
                continue
            lo = r[f"{col}_lo"] if np.isfinite(r[f"{col}_lo"]) else 0.0
            hi = r[f"{col}_hi"] if np.isfinite(r[f"{col}_hi"]) else r["watch_s"]
            ax.errorbar([x], [r[col]], yerr=[[max(r[col] - lo, 0)], [max(hi - r[col], 0)]], fmt="o", capsize=3,
                        color=plots.sns.color_palette()[0])
        ax.set_title(WORDS[col].split(" (")[0], fontsize="small")
        ax.set_xticks(xs, summary["arm"].str.replace("_", " "), rotation=60, fontsize="x-small")
        ax.set_ylabel("s from the hogs' end" if col in CRITERIA else "s")
    fig.suptitle(f"recovery after memory hogs by criterion, {profile} profile; hollow: censored "
                 "(circle at 0: at the start; triangle at the watch: > watch)", fontsize="small")
    fig.tight_layout()
    return fig


def _prepare(cfg: dict[str, Any], scratch: Path) -> dict[str, Any]:
    preflight(cfg)  # before anything changes: exit 2 when the machine cannot hold the cgroup
    return {}


def _cleanup(cfg: dict[str, Any], scratch: Path) -> None:
    if file_set_dir(scratch).exists():
        harness.clean_dir(file_set_dir(scratch))


def analyse(results_dir: Path | str, profile: str) -> harness.Analysis:
    """Recovery by arm and criterion, the ratios and the interaction, the figure and macros."""
    res = harness.open_results(results_dir)
    out, trials_, skipped, cfg = res.out, res.trials, res.skipped, res.cfg
    summary = summarise(trials_) if len(trials_) else trials_
    rat = ratios(trials_) if len(trials_) else {}
    rejected = harness.rejected(out, ["arm"]) if not skipped else None
    tab = table(summary, rejected) if len(summary) else None

    def figure_() -> plots.plt.Figure:
        return figure(summary, profile)

    return harness.Analysis(
        res, res.describe(profile), summary,
        measurements(summary, rat, trials_) if len(summary) else {},
        macros(summary, rat, cfg, profile, skipped, rejected, trials_ if len(trials_) else None),
        harness.Table(tab, table_format(tab)) if tab is not None else None, {NAME: figure_},
        tables={"premise.tex": harness.Table(premise_table(summary), "l" + "r" * len(PREMISE))} if len(summary) else {},
        shown={"ratios and the factorial's interaction (value, CI named by its coverage, n, censored rounds)":
               pd.DataFrame([{"ratio": k, "value": e.value, "ci_low": e.ci_low, "ci_high": e.ci_high,
                              "interval": e.label, "n": e.n, "censored": e.censored} for k, e in rat.items()]),
               "rejected trials": harness.rejected(out)[["trial_id", "arm", "invalid_reason"]]
               if not skipped else skipped,
               "outliers (Tukey)": harness.outliers(trials_, ["arm"], "recovery_s") if len(trials_) else trials_})


def measures(cfg: dict[str, Any]) -> dict[str, sequential.Measure]:
    """The claims' keys as `analyse` computes them, from the trials so far (the verdict stopping
    rule): each arm's seed recovery (coded) and the per-round ratios of the recovery
    (paired_censored); the interaction is left to width."""
    out = {f"{NAME}.{a}.recovery_s": sequential.Measure((a,), lambda f, a=a: coded(f[f["arm"] == a], "recovery_s")
                                                         .tolist()) for a in cfg["arms"]}
    for col, a, b in ratio_pairs():
        if col == "recovery_s":
            out[f"{NAME}.ratio.{ratio_key(col, a, b)}"] = sequential.Measure(
                (a, b), lambda f, a=a, b=b: paired_censored(f, "recovery_s", a, b)[0])
    return out


EXPERIMENT = harness.Experiment(
    own_hardware={"readyboost.own.": "this machine's disk", "readyboost.zswap.": "this machine's CPU",
                  "readyboost.zram.": "this machine's CPU"},
    name=NAME, analyse=analyse, paper_order=60, seeds=("000",), configurations=configurations, trial=run_trial,
    metric=lambda r: r["recovery_s"], columns=tuple(SCALARS), required_columns=tuple(REQUIRED_COLUMNS),
    tools=lambda cfg: ["hog", "simdisk", "cacheflood", "superfetch"], skip_reason=skip_reason, validity=validity,
    warmups=lambda cfg: [{"arm": cfg["arms"][0]}],
    prepare=_prepare, cleanup=_cleanup, measures=measures,
    requires=harness.Requirements(root=True, fuse=True, zram=True))
run = EXPERIMENT.run
