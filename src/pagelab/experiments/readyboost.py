"""readyboost (seed 000): how long a working set takes to come back after memory hogs, with swap
on a 2008 laptop disk, behind a ReadyBoost-like flash cache (cold and warm), and on today's
alternatives (zswap, zram, this machine's own disk).

The seed's method, scaled: a memory cgroup plays the 3 GB of RAM; a `hog victim` working set
of a third of it is built; two hogs of two thirds of it each run side by side `hog_rounds`
times in the same cgroup (each holds a round's memory until the other has written its own:
`victim.push_out`) and push the victim out (together they ask for more than the "RAM",
so the victim must go, as the seed's two 1 GB hogs did on a 3 GB machine whose system and
applications held the rest); the recovery time is the victim's re-touch of its whole
working set (random order, every page verified). Arms:
  hdd        swap on the emulated hdd5400-2008
  tier_cold  swap on tiered-readyboost (the disk behind a flash cache on the emulated USB
             stick, policy readyboost), cache empty at the start: page-outs and random-read
             misses are copied to it through a bounded queue drained at the stick's 7 MB/s,
             the rest dropped; sequential read streams bypass it; a Superfetch-like agent
             copies blocks used more than once when the disk is idle
  tier_warm  the same, starting from the cache state the previous tier_warm trial left on the
             same disk image (kept across trials: simdisk loads a state only for its own image)
  zswap      swap on the emulated disk with zswap in front
  zram       swap on zram
  own        a swap file on this machine's disk
Times are reported as measured, never scaled: the seed's seconds are judged only at its own
scale; at this scale the claims are the ratios to the bare disk (per-round, paired) and the
order of the arms.

A trial is valid only when its manipulation happened (`validity`): the hogs pushed at least
90 % of the working set out (the victim's own smaps_rollup Swap) and the re-touch read at least
90 % of it back from swap (so it was out of RAM, not in the swap cache), no hog was killed, the cold
tier started empty and the warm tier started with the state its previous trial left (cached
blocks > 0; how much it holds is what the tier earned).
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pagelab import counters, experiment, mm, state, trials
from pagelab.config import ConfigError
from pagelab.devices import BusySampler, emulated_swap
from pagelab.experiment import entry
from pagelab.prose import ratio_sentence
from pagelab.stats import Estimate, median_ci, paired_ratio_ci
from pagelab.units import parse_size
from pagelab.victim import Victim, out_and_back_reason, push_out

NAME = "readyboost"
ARMS = ["hdd", "tier_cold", "tier_warm", "zswap", "zram", "own"]
REQUIRED_COLUMNS = ["result.recovery_s", "result.evicted_share", "result.majflt",
                    "result.counters.retouch.vmstat.pgmajfault"]
SCALARS = ["recovery_s", "evicted_share", "readback_share", "hogs_killed", "oom_kills", "oom_wait_s",
           "tier_blocks_at_start", "tier_loaded_at_start", "majflt",
           "minflt", "pswpin",
           "zswpin", "pswpout_hogs", "hog_s", "device_reads", "device_cache_hit_bytes", "device_read_bytes",
           "working_set", "ram", "hog_size", "file_cache", "intended_share", "settle_s", "cache_before_hogs",
           "cache_dropped_share", "tier_offered_hogs", "tier_dropped_hogs", "tier_bailed_retouch",
           "tier_prefetches"]
MIN_SHARE = 0.9
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
    order: str = "random"  # the victim's re-touch: random (seed 000's worst case) or seq (its best)

    @property
    def intended_share(self) -> float:
        """What of the working set cannot stay while the hogs run: the hogs take HOGS x hog of
        the RAM, the file cache goes first (clean pages cost no write), the rest comes out of
        the working set. 1 in the scaled design (the hogs alone ask for more than the RAM); at
        the seed's scale (1.4 GB of working sets, 2 x 1 GB hogs, 3 GB) about 0.3: "the 1.6GB
        cache and 0.4GB working sets" out of RAM."""
        return min(1.0, max(0.0, (self.working_set + HOGS * self.hog - self.ram) / self.working_set))


def design(cfg: dict[str, Any]) -> Design:
    """The profile's sizes; unset ones follow the scaled design: a working set of a third of
    the RAM, hogs of two thirds each, no file cache."""
    ram = parse_size(cfg["ram"])
    d = Design(ram=ram,
               working_set=parse_size(cfg["working_set"]) if cfg.get("working_set") else ram // 3,
               file_cache=parse_size(cfg["file_cache"]) if cfg.get("file_cache") else 0,
               hog=parse_size(cfg["hog_size"]) if cfg.get("hog_size") else 2 * (ram // 3),
               order=cfg.get("retouch_order") or "random")
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


def settle_time(samples: list[tuple[float, float]], window_s: float, threshold: float = 0.3) -> float:
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


def configurations(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"arm": a} for a in cfg["arms"]]


def skip_reason(cfg: dict[str, Any]) -> str | None:
    if os.geteuid() != 0:
        return "skipped: needs root to swap on the emulated disk and make a memory cgroup"
    if any(a in cfg["arms"] for a in ("hdd", "tier_cold", "tier_warm", "zswap")) and not Path("/dev/fuse").exists():
        return "skipped: no /dev/fuse (FUSE is needed for the emulated disk)"
    if "zram" in cfg["arms"] and not Path("/sys/block/zram0").exists():
        return "skipped: no zram0 (modprobe zram, or drop the zram arm)"
    return None


def run_trial(st: state.State, cfg: dict[str, Any], trial: trials.Trial, scratch: Path) -> dict[str, Any]:
    arm = trial.params["arm"]
    d = design(cfg)
    ram, ws = d.ram, d.working_set
    swap_size = 2 * ram
    disk = None
    tier_blocks = tier_loaded = float("nan")
    with experiment.work_dir(scratch / f"{NAME}-{trial.trial_id}") as work, st.scope():
        if arm in ("hdd", "zswap"):
            disk = emulated_swap(st, cfg["disk_profile"], work / "dev", swap_size)
        elif arm in ("tier_cold", "tier_warm"):
            # The warm arm keeps one disk image and its tier state across trials (simdisk loads a
            # saved state only for the image it was saved with); the cold arm starts empty.
            dev_dir = warm_dir(scratch) if arm == "tier_warm" else work / "dev"
            warm_state = warm_dir(scratch) / "tier.state" if arm == "tier_warm" else None
            disk = emulated_swap(st, cfg["tier_profile"], dev_dir, swap_size, cache_state=warm_state)
            tier = disk.stats().get("device", {})
            tier_blocks = float(tier.get("cache_blocks", float("nan")))
            tier_loaded = float(tier.get("loaded_blocks", float("nan")))
        elif arm == "zram":
            st.swapon(st.zram(swap_size, cfg["zram_algorithm"]))
        else:
            st.swap_file(work / "swapfile", swap_size)
        if arm == "zswap":
            st.set_knob("zswap.compressor", cfg["zswap_compressor"])
            st.set_knob("zswap.enabled", "Y")
        cg = st.cgroup(NAME, memory_limit=ram)
        extra = {"device": disk.flat_stats} if disk else {}
        c = counters.Counters(memcg=cg.path("memory"), zram=["zram0"] if arm == "zram" else [], extra=extra)
        settle_window = float(cfg.get("settle_window_s") or 0)
        with Victim(ws, f"ratio:{cfg['fill_ratio']}", trial.seed, work / "victim", cg,
                    order=d.order,
                    timeout=3600) as v:
            cache0 = read_file_cache(cg, d.file_cache, file_set_dir(scratch), trial.seed) if d.file_cache else 0
            s0 = c.snapshot()
            hogs_run = push_out(cg, d.hog, repeat=cfg["hog_rounds"], count=HOGS)
            s1 = c.snapshot()
            cache1 = file_bytes(cg) if d.file_cache else 0
            # smaps' Swap also counts the process's own stack and heap: capped at the whole set
            evicted = min(1.0, mm.swapped_bytes(v.pid) / ws)
            sampler = BusySampler(disk, tail_s=settle_window) if disk and settle_window else None
            with sampler or nullcontext():
                rep = v.retouch()
            s2 = c.snapshot()
        delta, hogs = c.delta(s1, s2), c.delta(s0, s1)
        recovery = rep["retouch"]["ns"] / 1e9
        dev = delta.get("device", {})
        result = {
            "arm": arm, "ram": ram, "working_set": ws, "command": v.command, "effective": dict(st.effective),
            "hog_size": d.hog, "file_cache": d.file_cache, "intended_share": d.intended_share,
            "recovery_s": recovery, "evicted_share": evicted, "hogs_killed": hogs_run.killed,
            "oom_kills": hogs_run.oom_kills, "killed": hogs_run.invalid_reason(),
            "oom_wait_s": hogs_run.longest_oom_wait_s,
            # seed 000's own end of recovery: the disk busy at most 30 % of a window
            "settle_s": settle_time(sampler.samples, settle_window) if sampler else float("nan"),
            "cache_before_hogs": cache0, "cache_dropped_share": (1 - cache1 / cache0) if cache0 else float("nan"),
            # Pages the re-touch read from swap (disk, tier, zram or zswap): a page smaps counts as
            # swapped may still sit in the swap cache, in RAM, and come back as a minor fault.
            "readback_share": min(1.0, (delta["vmstat"].get("pswpin", 0) + delta["vmstat"].get("zswpin", 0))
                                  * PAGE / ws),
            "tier_blocks_at_start": tier_blocks, "tier_loaded_at_start": tier_loaded,
            "majflt": rep["retouch"]["majflt"], "minflt": rep["retouch"]["minflt"],
            "pswpin": delta["vmstat"].get("pswpin", 0), "zswpin": delta["vmstat"].get("zswpin", 0),
            "pswpout_hogs": hogs["vmstat"].get("pswpout", 0), "hog_s": hogs_run.seconds,
            "device_reads": dev.get("reads", float("nan")),
            "device_read_bytes": dev.get("read_bytes", float("nan")),
            "device_cache_hit_bytes": dev.get("cache_hit_bytes", float("nan")),
            # the tier's own view: copies of page-outs offered and dropped (queue full) while the
            # hogs ran, reads of the re-touch that bailed to the disk (sequential), agent copies
            "tier_offered_hogs": hogs.get("device", {}).get("device.copies_offered", float("nan")),
            "tier_dropped_hogs": hogs.get("device", {}).get("device.copies_dropped", float("nan")),
            "tier_bailed_retouch": dev.get("device.bailed", float("nan")),
            "tier_prefetches": (hogs.get("device", {}).get("device.prefetches", float("nan"))
                                + dev.get("device.prefetches", float("nan"))),
            "counters": {"hogs": hogs, "retouch": delta},
        }
    return result


def file_bytes(cg: state.Cgroup) -> int:
    """The page cache charged to the group (v1 memory.stat cache, v2 file)."""
    stat = cg.stat()
    return int(stat.get("cache", stat.get("file", 0)))


def file_set_dir(scratch: Path) -> Path:
    """The files whose pages play the seed machine's file cache, kept across the trials of a run."""
    return Path(scratch).resolve() / f"{NAME}-file-cache"


def read_file_cache(cg: state.Cgroup, size: int, where: Path, seed: int) -> int:
    """Reads `size` bytes of files through the page cache from inside the group (cacheflood,
    the set made cold first), as the seed machine's "1.6GB cache" of pages read before the
    hogs; returns the group's page cache afterwards."""
    from pagelab.tools import cacheflood_cmd, run_json

    run_json(cacheflood_cmd(where, size, size, seed=seed, cold=True), timeout=1800, preexec_fn=cg.preexec())
    return file_bytes(cg)


def warm_dir(scratch: Path) -> Path:
    """Where the warm tier's disk image and cache state live across the trials of one run."""
    return Path(scratch).resolve() / f"{NAME}-tier_warm"


def validity(params: dict[str, Any], result: dict[str, Any]) -> str | None:
    """The hogs evicted the working set without being killed; the tier was as cold or as warm
    as the arm says."""
    if result.get("killed"):
        return result["killed"]
    if result.get("hogs_killed"):
        return f"{result['hogs_killed']} hog(s) killed by the memory cgroup's OOM killer"
    # the share of the working set this profile's sizes push out (1 when the hogs alone ask
    # for more than the RAM; about 0.3 at the seed's scale); records from before it existed: 1
    need = MIN_SHARE * float(result.get("intended_share", 1.0))
    if reason := out_and_back_reason(result["evicted_share"], result["readback_share"], need):
        return reason
    dropped = result.get("cache_dropped_share", float("nan"))
    if result.get("file_cache") and not dropped >= MIN_SHARE:
        return (f"the hogs dropped {100 * dropped:.0f} % of the file cache read before them; the design "
                f"needs >= {100 * MIN_SHARE:.0f} %")
    # Cold: nothing loaded from an earlier run (the tier copies mkswap's own writes as any others);
    # warm: the state the previous trial left on this image loaded (how much it holds is earned).
    loaded = result.get("tier_loaded_at_start", float("nan"))
    if params["arm"] == "tier_cold" and not loaded == 0:
        return f"the cold tier loaded {loaded:.0f} cached blocks from an earlier run; it must start empty"
    if params["arm"] == "tier_warm" and not loaded > 0:
        return "the warm tier loaded no cached blocks: its saved state did not load"
    return None


load = experiment.load


def summarise(frame: pd.DataFrame) -> pd.DataFrame:
    """Per arm: the median recovery with its order-statistic 95 % CI, the evicted share and the
    flash tier's share of the disk's read bytes."""
    rows = []
    for arm in [a for a in ARMS if a in set(frame["arm"])]:
        g = frame[frame["arm"] == arm]
        e = median_ci(g["recovery_s"])
        hit = g["device_cache_hit_bytes"] / g["device_read_bytes"]

        def med(col: str, g: pd.DataFrame = g) -> float:
            return float(np.nanmedian(g[col])) if col in g and g[col].notna().any() else float("nan")

        kept = (1 - g["tier_dropped_hogs"] / g["tier_offered_hogs"]) if "tier_offered_hogs" in g else None
        settled = g["settle_s"].dropna() if "settle_s" in g else pd.Series(dtype=float)
        se = median_ci(settled) if len(settled) else None
        rows.append({"settle_s": se.value if se else float("nan"), "settle_lo": se.ci_low if se else float("nan"),
                     "settle_hi": se.ci_high if se else float("nan"),
                     "cache_dropped_share": med("cache_dropped_share"),
                     "copied_share": float(np.nanmedian(kept)) if kept is not None and kept.notna().any()
                     else float("nan"),
                     "bailed": med("tier_bailed_retouch"), "prefetches": med("tier_prefetches"),
                     "arm": arm, "n": e.n, "recovery_s": e.value, "lo": e.ci_low, "hi": e.ci_high,
                     "evicted_share": float(np.median(g["evicted_share"])) if "evicted_share" in g else float("nan"),
                     "majflt": float(np.median(g["majflt"])), "pswpin": float(np.median(g["pswpin"])),
                     "hit_fraction": float(np.nanmedian(hit)) if hit.notna().any() else float("nan")})
    return pd.DataFrame(rows)


def ratios(frame: pd.DataFrame) -> dict[str, Estimate]:
    """Each arm's recovery over the bare disk's, round by round (the arms run interleaved), and
    the warm tier's over the cold one's."""
    out = {}
    pairs = [(arm, "hdd") for arm in ("tier_cold", "tier_warm", "zswap", "zram", "own")] + [("tier_warm", "tier_cold")]
    for a, b in pairs:
        xa, xb = experiment.pairs(frame, "arm", "recovery_s", a, b)
        if xa:
            out[f"{a}_vs_{b}"] = paired_ratio_ci(xa, xb)
    return out


def measurements(summary: pd.DataFrame, rat: dict[str, Estimate]) -> dict[str, Any]:
    """readyboost.<arm>.recovery_s (real seconds at this profile's scale; RB1-RB3 read them
    only at the seed profile) and readyboost.ratio.<arm>_vs_hdd (RBR2, RBR3)."""
    out: dict[str, Any] = {}
    for _, r in summary.iterrows():
        out[f"{NAME}.{r['arm']}.recovery_s"] = entry(r["recovery_s"], r["lo"], r["hi"], "s", int(r["n"]),
                                                     "median, order statistics")
        if np.isfinite(r.get("settle_s", float("nan"))):
            out[f"{NAME}.{r['arm']}.settle_s"] = entry(r["settle_s"], r["settle_lo"], r["settle_hi"], "s", int(r["n"]),
                                                       "median, order statistics (disk busy <= 30 %)")
        out[f"{NAME}.{r['arm']}.evicted_share"] = entry(r["evicted_share"], r["evicted_share"], r["evicted_share"],
                                                        "share", int(r["n"]), "median")
    for k, e in rat.items():
        out[f"{NAME}.ratio.{k}"] = entry(e.value, e.ci_low, e.ci_high, "ratio", e.n, e.method)
    return out


def table(summary: pd.DataFrame, rejected: pd.DataFrame | None = None) -> pd.DataFrame:
    from pagelab.latex import fmt

    def n_rejected(arm: str) -> int:
        if rejected is None or rejected.empty:
            return 0
        return int(rejected.loc[rejected["arm"] == arm, "rejected"].sum())

    return pd.DataFrame({
        "Arm": summary["arm"].str.replace("_", " "), "Trials": summary["n"].astype(int),
        "Rejected": [n_rejected(a) for a in summary["arm"]],
        "Evicted": summary["evicted_share"].map(lambda v: "n/a" if v != v else f"{100 * v:.0f}\\,\\%"),
        "Recovery (s)": [f"{fmt(v)} [{fmt(a)}, {fmt(b)}]" for v, a, b in
                         zip(summary["recovery_s"], summary["lo"], summary["hi"], strict=True)],
        # seed 000's own criterion (seed profile): the disk busy <= 30 % over a window
        **({"Disk settled (s)": [f"{fmt(v)} [{fmt(a)}, {fmt(b)}]" if np.isfinite(v) else "--" for v, a, b in
                                 zip(summary["settle_s"], summary["settle_lo"], summary["settle_hi"], strict=True)]}
           if "settle_s" in summary and summary["settle_s"].notna().any() else {}),
        "Major faults": summary["majflt"].map(lambda v: f"{v:.0f}"),
        "Cache hit share": summary["hit_fraction"].map(lambda v: "--" if not np.isfinite(v) else fmt(v)),
        "Copies kept": summary.get("copied_share", pd.Series([float("nan")] * len(summary))).map(
            lambda v: "--" if not np.isfinite(v) else f"{100 * v:.0f}\\,\\%"),
    })


def table_format(table: pd.DataFrame) -> str:
    """The table's column alignment: text columns left, counts and shares right."""
    return "".join("l" if c in ("Arm", "Recovery (s)", "Disk settled (s)") else "r" for c in table.columns)


def macros(summary: pd.DataFrame, rat: dict[str, Estimate], cfg: dict[str, Any] | None, profile: str,
           skipped: str | None, rejected: pd.DataFrame | None = None) -> dict[str, str]:
    """Every number and every comparative sentence of the section, from the data."""
    from pagelab.latex import escape, fmt

    words = {"hdd": "Hdd", "tier_cold": "TierCold", "tier_warm": "TierWarm", "zswap": "Zswap", "zram": "Zram",
             "own": "Own"}
    m = {"ReadyboostProfile": profile, "ReadyboostStatus": escape(skipped or "ran")}
    if cfg:
        d = design(cfg)
        m["ReadyboostRamMiB"] = fmt(d.ram / 2**20)
        m["ReadyboostHogRounds"] = str(cfg["hog_rounds"])
        m["ReadyboostWorkingSetMiB"] = fmt(d.working_set / 2**20)
        m["ReadyboostHogMiB"] = fmt(d.hog / 2**20)
        m["ReadyboostIntendedPct"] = f"{100 * d.intended_share:.0f}"
        m["ReadyboostFileCache"] = (rf"after {fmt(d.file_cache / 2**20)}\,MiB of files were read through the page "
                                    "cache inside it (the seed machine's file cache), " if d.file_cache else "")
        m["ReadyboostOrder"] = {"seq": "address order (the seed's best case: swap read-ahead hits)",
                                "random": "random order (the seed's worst case: every page a seek)"}[d.order]
    for arm, w in words.items():
        row = arm_row(summary, arm)
        m[f"Readyboost{w}S"] = fmt(row["recovery_s"]) if row is not None else "n/a"
    for arm in ("tier_cold", "tier_warm"):
        r = rat.get(f"{arm}_vs_hdd")
        m[f"Readyboost{words[arm]}Ratio"] = fmt(r.value) if r else "n/a"
    m["ReadyboostRejected"] = str(int(rejected["rejected"].sum())) if rejected is not None and len(rejected) else "0"
    for arm in ("tier_cold", "tier_warm"):
        r = arm_row(summary, arm)
        w = words[arm]
        m[f"Readyboost{w}CopiedPct"] = (f"{100 * r['copied_share']:.0f}" if r is not None and
                                        np.isfinite(r.get("copied_share", float("nan"))) else "n/a")
        m[f"Readyboost{w}Bailed"] = (f"{r['bailed']:.0f}" if r is not None and
                                     np.isfinite(r.get("bailed", float("nan"))) else "n/a")
        m[f"Readyboost{w}Prefetches"] = (f"{r['prefetches']:.0f}" if r is not None and
                                         np.isfinite(r.get("prefetches", float("nan"))) else "n/a")
    m["ReadyboostEvictedPct"] = (f"{100 * float(summary['evicted_share'].min()):.0f}"
                                 if len(summary) and "evicted_share" in summary else "n/a")
    m["ReadyboostJudged"] = (
        "At this, the seed's own scale, the seed's seconds (RB1--RB3) are judged, as are the ratios to the bare "
        "disk and the order of the three arms." if profile == "seed" else
        "Times are as measured: the seed's seconds (RB1--RB3) are judged only at the seed's own scale "
        "(\\texttt{make PROFILE=seed}); at this scale the claims are the ratios to the bare disk and the order "
        "of the three arms.")
    m["ReadyboostWarmCaveat"] = warm_caveat(summary, rat) if profile == "seed" else ""
    sentences = {
        "ReadyboostColdSentence": ("tier_cold_vs_hdd", "behind the empty flash tier, recovery took",
                                   "as long as on the bare disk", "it was slower", "it was faster"),
        "ReadyboostWarmSentence": ("tier_warm_vs_hdd", "behind the warm flash tier, recovery took",
                                   "as long as on the bare disk", "it was slower", "it was faster"),
        "ReadyboostWarmColdSentence": ("tier_warm_vs_tier_cold", "the warm tier's recovery took",
                                       "the empty tier's", "warm was slower than cold", "warm was faster than cold"),
        "ReadyboostZswapSentence": ("zswap_vs_hdd", "with zswap in front of the disk, recovery took",
                                    "as long as on the bare disk", "it was slower", "it was faster"),
        "ReadyboostZramSentence": ("zram_vs_hdd", "on zram, recovery took", "as long as on the bare disk",
                                   "it was slower", "it was faster"),
    }
    for name, (key, subject, other, above, below) in sentences.items():
        m[name] = ratio_sentence(rat[key], subject, other, above.split(" ", 1)[1], below.split(" ", 1)[1],
                                 above.split(" ", 1)[0]) if key in rat else "n/a"
    return m


def arm_row(summary: pd.DataFrame, arm: str) -> pd.Series | None:
    """The summary's row of one arm, or None when the arm did not run."""
    rows = summary[summary["arm"] == arm] if len(summary) else summary
    return rows.iloc[0] if len(rows) else None


def warm_caveat(summary: pd.DataFrame, rat: dict[str, Estimate], claims_path: Path | None = None) -> str:
    """At the seed's scale: when the warm tier's recovery lies in the window around RB3's 35 s
    while the tier made recovery no faster than the bare disk (the ratio's interval not below
    1), the seconds agree without the seed's effect; the sentence says so, from the data."""
    from pagelab.latex import fmt
    from pagelab.published import load_claims, window

    w = arm_row(summary, "tier_warm")
    r = rat.get("tier_warm_vs_hdd")
    if w is None or r is None:
        return ""
    claim = load_claims(claims_path).set_index("id").loc["RB3"].to_dict()
    low, high = window(claim)
    if not (low <= w["lo"] and w["hi"] <= high and r.ci_low >= 1):
        return ""
    return (f"The warm tier's {fmt(w['recovery_s'])}\\,s lie in the window around the seed's RB3, "
            f"{fmt(low)}--{fmt(high)}\\,s, but the tier did not shorten recovery (warm over bare "
            f"{fmt(r.value)}, 95\\,\\% CI {fmt(r.ci_low)}--{fmt(r.ci_high)}): the seconds agree without the seed's "
            "effect, which RBR3 and the order RBO judge.")


def _prepare(cfg: dict[str, Any], scratch: Path) -> dict[str, Any]:
    preflight(cfg)  # before anything changes: exit 2 when the machine cannot hold the cgroup
    return {}


def _cleanup(cfg: dict[str, Any], scratch: Path) -> None:
    for kept in (warm_dir(scratch), file_set_dir(scratch)):
        if kept.exists():
            experiment.clean_dir(kept)


EXPERIMENT = experiment.Experiment(
    name=NAME, paper_order=60, seeds=("000",), configurations=configurations, trial=run_trial,
    metric=lambda r: r["recovery_s"], columns=tuple(SCALARS), required_columns=tuple(REQUIRED_COLUMNS),
    tools=lambda cfg: ["hog", "simdisk", "cacheflood"], skip_reason=skip_reason, validity=validity,
    warmups=lambda cfg: [{"arm": "tier_warm"}] if "tier_warm" in cfg["arms"] else [{"arm": cfg["arms"][0]}],
    prepare=_prepare, cleanup=_cleanup,
    requires=experiment.Requirements(root=True, fuse=True, zram=True, memory_keys=("ram",),
                                     device_keys=("disk_profile", "tier_profile")))
run = EXPERIMENT.run
