"""The recovery trial readyboost and payoff share (seed 000's method; docs/readyboost.md): a
memory cgroup plays the RAM, a `hog victim` working set and the file set on the seed machine's
one system disk (`pagelab.run.systemdisk`) are read in, two hogs push them out, the agent
(native/superfetch) restores them, and the seed's recovery criteria are timed from the hogs' end,
each its own measurement: `run_trial` for one arm (`ARM`) at a design's sizes (`Design`), its
validity, and the criteria's arithmetic. readyboost runs it over its arms at its profile's sizes;
payoff over its cells (a disk and stick in the tier, a RAM level, the agent's mode), each block's
own settings (`agent_options`).
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

from pagelab.core.units import parse_size
from pagelab.experiments import harness
from pagelab.run import devices, progress, trials
from pagelab.run.devices import EmulatedDisk, profile_value, tier_overrides
from pagelab.run.superfetch import Agent, swap_devices
from pagelab.run.systemdisk import IMAGE, SystemDisk, layout, prepare_image, system_disk
from pagelab.run.tools import cacheflood_cmd, run_json, schema_options
from pagelab.run.victim import Victim, out_and_back_reason, push_out
from pagelab.system import counters, mm, state
from pagelab.system.config import TIER_MODEL, ConfigError

PREFIX = "readyboost"  # the trial's scratch directories, file set and memory cgroup are named so
TOOLS = ["hog", "simdisk", "cacheflood", "superfetch"]


@dataclass(frozen=True)
class Arm:
    swap: str              # hdd, tier, zswap, zram, own
    agent_mode: str | None  # None, "after" (restore once the hogs are gone), "between" (also during them)


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
           "cache_dropped_share", *devices.timing_names("restore", "retouch")]
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
    retouch_order: str  # the victim's re-touch: seq (address order) or random (seed 000's worst case)

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
    the RAM, hogs of two thirds each (whole pages: the hog maps pages), a file set in the seed
    profile's proportion, 1600M in 3G (SEED_FILE_SHARE of the RAM, whole pages). The re-touch
    order is the block's retouch_order, which every profile sets (the schema)."""
    ram = parse_size(cfg["ram"])
    third = ram // 3 // PAGE * PAGE
    d = Design(ram=ram,
               working_set=parse_size(cfg["working_set"]) if cfg.get("working_set") else third,
               file_cache=(parse_size(cfg["file_cache"]) if cfg.get("file_cache")
                           else int(SEED_FILE_SHARE * ram) // PAGE * PAGE),
               hog=parse_size(cfg["hog_size"]) if cfg.get("hog_size") else 2 * third,
               retouch_order=cfg["retouch_order"])
    where = f"{PREFIX}.{cfg.get('profile', 'quick')}"
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
            f"{PREFIX}.{cfg.get('profile', 'quick')}.ram: {cfg['ram']} of cgroup RAM needs {need / 2**30:.1f} GiB of "
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
    """Bytes of the group's memory that are only in swap. cgroup v1: memory+swap less memory, two
    page counters, exact at every read (the memsw charge of a page moves to its swap entry when
    it leaves the swap cache and back when it is read into it: mm/memcontrol-v1.c
    mem_cgroup_swapout, mm/memcontrol.c mem_cgroup_swapin_uncharge_swap). memory.stat's swap
    counts the same from per-CPU statistics, which a read flushes only once more than 64 updates
    per CPU are pending, so a sampler reading it often can see it up to that many pages late
    until the flush every 2 s. v2 counts swap slots (swap-cache pages too), so its swap cache is
    taken off."""
    memory = cg.path("memory")
    if cg.v2:
        cur = float((memory / "memory.swap.current").read_text())
        return max(0.0, cur - float(cg.stat().get("swapcached", 0)))
    memsw = float((memory / "memory.memsw.usage_in_bytes").read_text())
    return max(0.0, memsw - float((memory / "memory.usage_in_bytes").read_text()))


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
             file_set: int, seed: int) -> tuple[SystemDisk | None, Path]:
    """The seed machine's one system disk and swap of `size` bytes for the arm: (the system disk,
    the swap device or file). The system disk (systemdisk.system_disk) is the block's
    disk_profile, in the tier arms behind the flash tier (the tier model, TIER_MODEL, with that
    disk and the block's cache_profile as its stick), holding a swap area (the arm's swap for
    hdd, tier and zswap) and the file set of `file_set` bytes; zram and this machine's own disk
    swap elsewhere while the files stay on the system disk. Without a file set those two arms
    have no system disk (None). The tier starts empty in every trial: what it holds at the
    recovery it earned during the trial's own hog rounds."""
    on_disk = arm.swap in ("hdd", "tier", "zswap")
    sd = None
    if on_disk or file_set:
        image, _ = system_image(scratch, size, file_set, seed)
        profile, overrides = ((TIER_MODEL, tier_overrides(cfg["disk_profile"], cfg["cache_profile"]))
                              if arm.swap == "tier" else (cfg["disk_profile"], None))
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
    agent_priority) as superfetch's options (`Agent`'s `options`), by the schema's map to them
    (pagelab.run.tools.SCHEMA_OPTIONS). poll, group, depth and priority have their defaults in
    the schema alone (superfetch requires them); agent_max_rate left unset keeps the tool's "no
    cap"."""
    return schema_options("readyboost", cfg, "superfetch")


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
              d: Design | None = None) -> dict[str, Any]:
    """One trial of the arm `trial.params["arm"]` at the profile's sizes, or at the sizes `d`
    (payoff's RAM levels, where the hogs may push nothing out), on the block's disk_profile and,
    in the tier arms, its cache_profile (payoff: the cell's disk and stick)."""
    name = trial.params["arm"]
    arm = ARM[name]
    d = d or design(cfg)
    ram, ws = d.ram, d.working_set
    swap_size = swap_bytes(ram)
    with harness.work_dir(scratch / f"{PREFIX}-{trial.trial_id}") as work, st.scope():
        sd, swap_dev = swap_for(st, cfg, arm, work, scratch, swap_size, d.file_cache, trial.seed)
        disk = sd.device if sd else None
        tier0 = disk.stats().get("device", {}) if disk and arm.swap == "tier" else {}
        cg = st.cgroup(PREFIX, memory_limit=ram)
        extra = {"device": disk.flat_stats} if disk else {}
        c = counters.Counters(memcg=cg.path("memory"), zram=["zram0"] if arm.swap == "zram" else [], extra=extra)
        window = settle_window(cfg)
        with Victim(ws, f"ratio:{cfg['fill_ratio']}", trial.seed, work / "victim", cg, retouch_order=d.retouch_order,
                    timeout=3600) as v:
            files = sd.files if sd else None
            cache0 = 0
            if files:
                # the seed machine's cache was filled by its use before the test: set-up, untimed
                with sd.device.setup():
                    cache0 = read_file_cache(cg, d.file_cache, files, trial.seed)
            agent = (Agent(v.pid, cg.path("memory"), work / "agent",
                           {"mode": arm.agent_mode, "devices": ",".join(swap_devices(swap_dev)) or None,
                            "files": files, "done_below": int(BACK_SHARE * ws), **agent_options(cfg)})
                     if arm.agent_mode else None)
            with agent or nullcontext():
                s0 = c.snapshot()
                hogs_run = push_out(cg, d.hog, rounds=cfg["hog_rounds"], count=HOGS, workdir=work)
                s1 = c.snapshot()
                cache1 = file_bytes(cg)
                # smaps' Swap also counts the process's own stack and heap: capped at the whole set
                evicted = min(1.0, mm.swapped_bytes(v.pid) / ws)
                out_end = out_of_ram(cg)
                # "out" also shows the restore's progress, the share of out_end back in RAM
                sources = {"cached": lambda: victim_cached(cg, v.pid),
                           "out": progress.watching_restore(lambda: out_of_ram(cg), out_end),
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
        # the emulator's timing over the restore's and the re-touch's reads, and since the
        # trial's own mount
        timing = {**devices.timing_columns("restore", devices.read_timing(restore["device"])),
                  **devices.timing_columns("retouch", devices.read_timing(retouch["device"])),
                  **devices.mount_timing(disk)} if disk else {}
        settle = settle_time(sampler.samples.get("busy", []), window) if window else float("nan")
        cached = cached_time(sampler.samples["cached"], ram)
        back = back_time(sampler.samples["out"], ws)
        retouch_s = rep["retouch"]["ns"] / 1e9

        def area_read(name: str) -> float:
            got = sampler.samples.get(name, [])
            return got[-1][1] - got[0][1] if got else float("nan")

        result = {
            "arm": name, "swap": arm.swap, "agent_mode": arm.agent_mode or "none", "ram": ram, "working_set": ws,
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
            **timing,
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
    return Path(scratch).resolve() / f"{PREFIX}-file-cache"


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
    if arm.agent_mode is None:
        if reason := out_and_back_reason(result["evicted_share"], result["readback_share"], need):
            return reason
    else:
        if reason := out_and_back_reason(result["evicted_share"], 1.0, need):
            return reason
        back = result.get("back_s", float("nan"))
        if not back == back:
            said = result.get("agent_restore_s", float("nan"))
            agent = (f"the agent said it was done after {said:.2f} s" if said == said
                     else "the agent never said it was done")
            return (f"the working set was not back in RAM within {result.get('restore_window_s', 0):.1f} s of "
                    f"the hogs' end ({agent}): the agent's restore did not bring it back")
    dropped = result.get("cache_dropped_share", float("nan"))
    cache_share = result.get("intended_cache_share", 1.0)
    cache_need = MIN_SHARE * (1.0 if cache_share != cache_share else float(cache_share))
    if result.get("file_cache") and not dropped >= cache_need:
        return (f"the hogs dropped {100 * dropped:.0f} % of the file cache read before them; the design "
                f"needs >= {100 * cache_need:.0f} %")
    loaded = result.get("tier_loaded_at_start", float("nan"))
    if arm.swap == "tier" and not loaded == 0:
        return f"the tier loaded {loaded:.0f} cached blocks from an earlier run; it must start empty"
    if arm.agent_mode == "between" and float(result.get("intended_share", 1.0)) > 0:
        read = float(result.get("agent_rounds_swapins", 0) or 0)
        if not read >= 1:
            return "the agent read nothing back from swap while the hogs ran: nothing was prefetched between the rounds"
        asked = float(result.get("agent_rounds_requested", 0) or 0)
        rewritten = float(result.get("agent_rewritten", 0) or 0)
        if asked and rewritten > MAX_REWRITTEN * asked:
            return (f"{rewritten:.0f} of the {asked:.0f} pages the agent read while the hogs ran were written to "
                    f"swap again rather than dropped (the design allows {100 * MAX_REWRITTEN:.0f} %)")
    return None


def cleanup(scratch: Path) -> None:
    """Remove the file set and the system disk's images a run kept in `scratch`."""
    if file_set_dir(scratch).exists():
        harness.clean_dir(file_set_dir(scratch))
