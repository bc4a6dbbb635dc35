"""readyboost (seed 000): how long a working set takes to come back after memory hogs, with swap
on a 2008 laptop disk, behind a ReadyBoost-like flash cache (cold and warm), and on today's
alternatives (zswap, zram, this machine's own disk).

The seed's method, scaled: a memory cgroup plays the 3 GB of RAM; a `hog victim` working set
of a third of it is built; two hogs of two thirds of it each run side by side `hog_rounds`
times in the same cgroup and push the victim out (together they ask for more than the "RAM",
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
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pagelab import counters, experiment, mm, state, trials
from pagelab.devices import emulated_swap
from pagelab.experiment import entry
from pagelab.prose import ratio_sentence
from pagelab.stats import Estimate, median_ci, paired_ratio_ci
from pagelab.units import parse_size
from pagelab.victim import Victim, push_out

NAME = "readyboost"
ARMS = ["hdd", "tier_cold", "tier_warm", "zswap", "zram", "own"]
REQUIRED_COLUMNS = ["result.recovery_s", "result.evicted_share", "result.majflt",
                    "result.counters.retouch.vmstat.pgmajfault"]
SCALARS = ["recovery_s", "evicted_share", "readback_share", "hogs_killed", "oom_kills", "oom_wait_s",
           "tier_blocks_at_start", "tier_loaded_at_start", "majflt",
           "minflt", "pswpin",
           "zswpin", "pswpout_hogs", "hog_s", "device_reads", "device_cache_hit_bytes", "device_read_bytes",
           "working_set", "ram", "tier_offered_hogs", "tier_dropped_hogs", "tier_bailed_retouch",
           "tier_prefetches"]
MIN_SHARE = 0.9
PAGE = os.sysconf("SC_PAGE_SIZE")


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
    ram = parse_size(cfg["ram"])
    third = ram // 3
    swap_size = 2 * ram
    work = scratch / f"{NAME}-{trial.trial_id}"
    work.mkdir(parents=True, exist_ok=True)
    disk = None
    tier_blocks = tier_loaded = float("nan")
    with st.scope():
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
        with Victim(third, f"ratio:{cfg['fill_ratio']}", trial.seed, work / "victim", cg, order="random",
                    timeout=1800) as v:
            s0 = c.snapshot()
            hogs_run = push_out(cg, 2 * third, repeat=cfg["hog_rounds"], count=2)
            s1 = c.snapshot()
            # smaps' Swap also counts the process's own stack and heap: capped at the whole set
            evicted = min(1.0, mm.swapped_bytes(v.pid) / third)
            rep = v.retouch()
            s2 = c.snapshot()
        d, hogs = c.delta(s1, s2), c.delta(s0, s1)
        recovery = rep["retouch"]["ns"] / 1e9
        dev = d.get("device", {})
        result = {
            "arm": arm, "ram": ram, "working_set": third, "command": v.command, "effective": dict(st.effective),
            "recovery_s": recovery, "evicted_share": evicted, "hogs_killed": hogs_run.killed,
            "oom_kills": hogs_run.oom_kills, "killed": hogs_run.invalid_reason(),
            "oom_wait_s": hogs_run.longest_oom_wait_s,
            # Pages the re-touch read from swap (disk, tier, zram or zswap): a page smaps counts as
            # swapped may still sit in the swap cache, in RAM, and come back as a minor fault.
            "readback_share": min(1.0, (d["vmstat"].get("pswpin", 0) + d["vmstat"].get("zswpin", 0)) * PAGE / third),
            "tier_blocks_at_start": tier_blocks, "tier_loaded_at_start": tier_loaded,
            "majflt": rep["retouch"]["majflt"], "minflt": rep["retouch"]["minflt"],
            "pswpin": d["vmstat"].get("pswpin", 0), "zswpin": d["vmstat"].get("zswpin", 0),
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
            "counters": {"hogs": hogs, "retouch": d},
        }
    experiment.clean_dir(work)
    return result


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
    if not result["evicted_share"] >= MIN_SHARE:
        return (f"the hogs pushed out {100 * result['evicted_share']:.0f} % of the working set; "
                f"the design needs >= {100 * MIN_SHARE:.0f} %")
    if not result["readback_share"] >= MIN_SHARE:
        return (f"the re-touch read {100 * result['readback_share']:.0f} % of the working set from swap; the "
                f"rest was still in RAM (swap cache); the design needs >= {100 * MIN_SHARE:.0f} % out of RAM")
    # Cold: nothing loaded from an earlier run (the tier copies mkswap's own writes as any others);
    # warm: the state the previous trial left on this image loaded (how much it holds is earned).
    loaded = result.get("tier_loaded_at_start", float("nan"))
    if params["arm"] == "tier_cold" and not loaded == 0:
        return f"the cold tier loaded {loaded:.0f} cached blocks from an earlier run; it must start empty"
    if params["arm"] == "tier_warm" and not loaded > 0:
        return "the warm tier loaded no cached blocks: its saved state did not load"
    return None


def run(cfg: dict[str, Any], outdir: Path, scratch_dir: Path) -> pd.DataFrame:
    warm = [{"arm": "tier_warm"}] if "tier_warm" in cfg["arms"] else [{"arm": cfg["arms"][0]}]
    try:
        return experiment.execute(
            NAME, cfg, outdir, scratch_dir, configurations(cfg), lambda c: c["arm"],
            lambda st, t, scratch: run_trial(st, cfg, t, scratch), lambda r: r["recovery_s"], SCALARS,
            tools=["hog", "simdisk"], skip_reason=skip_reason(cfg), warmups=warm, validity=validity)
    finally:
        if warm_dir(scratch_dir).exists():
            experiment.clean_dir(warm_dir(scratch_dir))


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
        rows.append({"copied_share": float(np.nanmedian(kept)) if kept is not None and kept.notna().any()
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
        "Major faults": summary["majflt"].map(lambda v: f"{v:.0f}"),
        "Cache hit share": summary["hit_fraction"].map(lambda v: "--" if not np.isfinite(v) else fmt(v)),
        "Copies kept": summary.get("copied_share", pd.Series([float("nan")] * len(summary))).map(
            lambda v: "--" if not np.isfinite(v) else f"{100 * v:.0f}\\,\\%"),
    })


def macros(summary: pd.DataFrame, rat: dict[str, Estimate], cfg: dict[str, Any] | None, profile: str,
           skipped: str | None, rejected: pd.DataFrame | None = None) -> dict[str, str]:
    """Every number and every comparative sentence of the section, from the data."""
    from pagelab.latex import escape, fmt

    words = {"hdd": "Hdd", "tier_cold": "TierCold", "tier_warm": "TierWarm", "zswap": "Zswap", "zram": "Zram",
             "own": "Own"}
    m = {"ReadyboostProfile": profile, "ReadyboostStatus": escape(skipped or "ran")}
    if cfg:
        m["ReadyboostRamMiB"] = fmt(parse_size(cfg["ram"]) / 2**20)
        m["ReadyboostHogRounds"] = str(cfg["hog_rounds"])
    for arm, w in words.items():
        row = summary[summary["arm"] == arm] if len(summary) else summary
        m[f"Readyboost{w}S"] = fmt(row.iloc[0]["recovery_s"]) if len(row) else "n/a"
    for arm in ("tier_cold", "tier_warm"):
        r = rat.get(f"{arm}_vs_hdd")
        m[f"Readyboost{words[arm]}Ratio"] = fmt(r.value) if r else "n/a"
    m["ReadyboostRejected"] = str(int(rejected["rejected"].sum())) if rejected is not None and len(rejected) else "0"
    for arm in ("tier_cold", "tier_warm"):
        row = summary[summary["arm"] == arm] if len(summary) else summary
        r = row.iloc[0] if len(row) else None
        w = words[arm]
        m[f"Readyboost{w}CopiedPct"] = (f"{100 * r['copied_share']:.0f}" if r is not None and
                                        np.isfinite(r.get("copied_share", float("nan"))) else "n/a")
        m[f"Readyboost{w}Bailed"] = (f"{r['bailed']:.0f}" if r is not None and
                                     np.isfinite(r.get("bailed", float("nan"))) else "n/a")
        m[f"Readyboost{w}Prefetches"] = (f"{r['prefetches']:.0f}" if r is not None and
                                         np.isfinite(r.get("prefetches", float("nan"))) else "n/a")
    m["ReadyboostEvictedPct"] = (f"{100 * float(summary['evicted_share'].min()):.0f}"
                                 if len(summary) and "evicted_share" in summary else "n/a")
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
