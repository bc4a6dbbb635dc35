"""standby (seed 004): pages trimmed from a working set come back for free while their data is
still in memory (Windows' standby list; Linux's swap cache), until buffered IO flushes it;
then each one is a hard fault, fewer seconds of them with memory compression.

One trial: in a memory cgroup of working_set + headroom, `hog victim` builds a working set;
the harness trims it from outside (process_madvise MADV_PAGEOUT, EmptyWorkingSet's analogue)
and waits until the swap writes the trim started have completed (the cgroup's writeback is 0);
for the flooded arms `cacheflood` pushes flood_factor x working_set of buffered reads through
the same cgroup; then the victim re-touches every page and verifies its content. Arms:
trim_only, flooded (swap file on this machine's disk), flooded_default (the same at the
cgroup's default swappiness: an extra, shown), zswap (flooded, zswap on), zram (flooded, swap
on zram). Counters bracket each phase.

During the flood the cgroup's swappiness is `flood_swappiness` (200: reclaim prefers anonymous
and swap-cache pages to the flood's file pages), then back to the default before the re-touch.
At the default (60) reclaim mostly drops the flood's own clean file pages and only ~15-25 % of
the trimmed pages leave the swap cache, so `flooded` would not measure hard faults.

The trim's page-out rate (MC2) is the bytes it wrote to swap (pswpout x page) over the trim's
wall-clock time; the rate to completed writes (until writeback is 0) is kept beside it.

Validity, from each trial's own counters: the trim paged out >= 90 % of the working set
(pswpout, or zswpout for zswap); trim_only: the trimmed pages were still in the swap cache
when the re-touch began (SwapCached >= 90 % of the working set: the seed's premise, "still in
the standby list"; the swap-ins during the re-touch are the measurement, SB1, not a condition);
flooded arms: the flood read its whole set; flooded and zram: the re-touch read >= 90 % of the
pages from swap (pswpin); zswap: it loaded >= 90 % from zswap (zswpin). flooded_default is
judged on the trim and the flood only: its swap-ins are what it shows.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pagelab.claims import registry
from pagelab.core import plots
from pagelab.core.latex import escape, fmt
from pagelab.core.prose import comparison_rows, finding
from pagelab.core.stats import Estimate, interval_name, median_ci, paired_ratio_ci
from pagelab.core.units import parse_size
from pagelab.experiments import harness
from pagelab.experiments.harness import entry
from pagelab.run import sequential, trials
from pagelab.run.tools import cacheflood_cmd
from pagelab.run.victim import Victim
from pagelab.system import counters, state
from pagelab.system.provenance import block_device_of

NAME = "standby"
PAGE = os.sysconf("SC_PAGE_SIZE")
MB = 1e6
VALID_FRACTION = 0.9
ARMS = ["trim_only", "flooded", "flooded_default", "zswap", "zram"]
FLOODED = {"flooded", "flooded_default", "zswap", "zram"}


REQUIRED_COLUMNS = ["result.retouch_s", "result.retouch_majflt", "result.pswpin_retouch",
                    "result.trim_pageout_mbps", "result.counters.retouch.vmstat.pgfault"]


def configurations(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"arm": a} for a in cfg["arms"]]


def skip_reason(cfg: dict[str, Any]) -> str | None:
    """Why this experiment cannot run here, in one line, or None."""
    if os.geteuid() != 0:
        return "skipped: needs root to turn on swap and make a memory cgroup"
    if not (Path("/sys/fs/cgroup/memory").is_dir() or Path("/sys/fs/cgroup/cgroup.controllers").exists()):
        return "skipped: no memory cgroup controller"
    if "zswap" in cfg["arms"] and not Path("/sys/module/zswap").exists():
        return "skipped: kernel without zswap (drop the zswap arm to run the rest)"
    if "zram" in cfg["arms"] and not Path("/sys/block/zram0").exists():
        return "skipped: no zram0 (modprobe zram, or drop the zram arm)"
    return None


def wait_for_writeback(cg: state.Cgroup, timeout: float = 60.0) -> float:
    """Seconds until the cgroup has no page under writeback (the swap writes a trim started
    have reached the device)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if cg.stat().get("writeback", 0) == 0:
            break
        time.sleep(0.0005)
    return time.monotonic() - t0


def run_trial(st: state.State, cfg: dict[str, Any], trial: trials.Trial, scratch: Path) -> dict[str, Any]:
    arm = trial.params["arm"]
    ws = parse_size(cfg["working_set"])
    work = scratch / f"{NAME}-{trial.trial_id}"
    work.mkdir(parents=True, exist_ok=True)
    flood_target = int(cfg["flood_factor"] * ws)
    with st.scope():
        if arm == "zram":
            swapdev = st.zram(2 * ws, cfg["zram_algorithm"])
            st.swapon(swapdev)
            blockdev = swapdev.name
        else:
            st.swap_file(work / "swapfile", 2 * ws)
            blockdev = block_device_of(work)["disk"]
        if arm == "zswap":
            st.set_knob("zswap.compressor", cfg["zswap_compressor"])
            st.set_knob("zswap.enabled", "Y")
        cg = st.cgroup(NAME, memory_limit=ws + parse_size(cfg["headroom"]))
        default_swappiness = (cg.path("memory") / "memory.swappiness").read_text().strip() if not cg.v2 else ""
        c = counters.Counters(block_devices=[blockdev], memcg=cg.path("memory"),
                              zram=["zram0"] if arm == "zram" else [])
        # The re-touch in address order (seq): no setting of this experiment; pagein compares orders.
        with Victim(ws, f"ratio:{cfg['fill_ratio']}", trial.seed, work, cg, retouch_order="seq") as victim:
            s0 = c.snapshot()
            trim = victim.trim()
            written_s = trim["trim_s"] + wait_for_writeback(cg)
            s1 = c.snapshot()
            flood: dict[str, Any] = {}
            fcmd: list[str] | None = None
            swappiness = default_swappiness
            if arm in FLOODED:
                if arm != "flooded_default" and default_swappiness:
                    cg.set("memory", "memory.swappiness", str(cfg["flood_swappiness"]))
                    swappiness = str(cfg["flood_swappiness"])
                fcmd = cacheflood_cmd(scratch / f"{NAME}-floodset", flood_target, flood_target, cold=True)
                fl = subprocess.run(fcmd, capture_output=True, text=True, timeout=600,
                                    preexec_fn=cg.preexec())
                if default_swappiness:
                    cg.set("memory", "memory.swappiness", default_swappiness)
                if fl.returncode != 0:
                    raise trials.TrialFailed(f"cacheflood failed: {fl.stderr.strip()}")
                flood = json.loads(fl.stdout)
            s2 = c.snapshot()
            rep = victim.retouch()
            s3 = c.snapshot()
        trim_d, retouch = c.delta(s0, s1), c.delta(s2, s3)
        retouch_s = rep["retouch"]["ns"] / 1e9
        pswpout = trim_d["vmstat"].get("pswpout", 0)
        result = {
            "arm": arm, "working_set": ws, "command": victim.command, "flood_command": fcmd,
            "flood_swappiness": swappiness, "default_swappiness": default_swappiness,
            "trim_s": trim["trim_s"], "trim_written_s": written_s,
            "swapped_after_trim_bytes": trim["swapped_bytes"],
            "trim_pageout_mbps": pswpout * PAGE / trim["trim_s"] / MB,
            "trim_written_mbps": pswpout * PAGE / written_s / MB,
            # the cgroup's own swap cache where the kernel reports it (v1), else the system's
            "swapcached_before_retouch": s2["memcg"].get("swapcached", s2["meminfo"].get("SwapCached", 0.0)),
            "retouch_s": retouch_s,
            "retouch_s_per_ref": retouch_s * parse_size(cfg["reference_size"]) / ws,
            "retouch_majflt": rep["retouch"]["majflt"], "retouch_minflt": rep["retouch"]["minflt"],
            "retouch_p99_us": rep["retouch"]["latency_ns"].get("p99", float("nan")) / 1e3,
            "pswpout_trim": pswpout,
            "pswpin_retouch": retouch["vmstat"].get("pswpin", 0),
            "zswpin_retouch": retouch["vmstat"].get("zswpin", 0),
            "zswpout_trim": trim_d["vmstat"].get("zswpout", 0),
            "flood_target_bytes": flood_target if arm in FLOODED else 0,
            "flood_bytes": flood.get("read", {}).get("bytes", 0),
            "counters": {"trim": trim_d, "flood": c.delta(s1, s2), "retouch": retouch},
            "effective": dict(st.effective),
        }
    work.rmdir()
    return result


def validity(params: dict[str, Any], result: dict[str, Any]) -> str | None:
    """None when the trial's manipulation happened, else why not (see the module docstring)."""
    arm = params["arm"]
    ws = result["working_set"]
    pages = ws // PAGE
    need = f"the design needs >= {VALID_FRACTION:.0%}"
    out = result["zswpout_trim"] if arm == "zswap" else result["pswpout_trim"]
    if out < VALID_FRACTION * pages:
        return (f"the trim paged out {out / pages:.0%} of the working set "
                f"({'zswpout' if arm == 'zswap' else 'pswpout'}); {need}")
    if arm == "trim_only" and result["swapcached_before_retouch"] < VALID_FRACTION * ws:
        return (f"only {result['swapcached_before_retouch'] / ws:.0%} of the working set was in the swap "
                f"cache when the re-touch began; {need}")
    if arm in FLOODED and result["flood_bytes"] < result["flood_target_bytes"]:
        return (f"the flood read {result['flood_bytes']} of its {result['flood_target_bytes']} bytes; "
                "the design needs all of them")
    if arm in ("flooded", "zram") and result["pswpin_retouch"] < VALID_FRACTION * pages:
        return (f"the re-touch read {result['pswpin_retouch'] / pages:.0%} of the pages from swap "
                f"(pswpin): the flood left the rest in the swap cache; {need}")
    if arm == "zswap" and result["zswpin_retouch"] < VALID_FRACTION * pages:
        return f"the re-touch loaded {result['zswpin_retouch'] / pages:.0%} of the pages from zswap (zswpin); {need}"
    return None


SCALARS = ["retouch_s", "retouch_s_per_ref", "retouch_majflt", "retouch_minflt", "retouch_p99_us",
           "pswpout_trim", "pswpin_retouch", "zswpin_retouch", "zswpout_trim", "trim_s", "trim_written_s",
           "trim_pageout_mbps", "trim_written_mbps", "swapcached_before_retouch",
           "swapped_after_trim_bytes", "flood_bytes", "flood_target_bytes", "working_set"]


def summarise(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per arm: n, and medians with order-statistic CIs (value, _lo, _hi) of the
    re-touch time, the same per 2 GB, the swap-ins and the trim's page-out rates."""
    rows = []
    cols = {"retouch_s": "retouch_s", "per_ref_s": "retouch_s_per_ref", "pswpin": "pswpin_retouch",
            "zswpin": "zswpin_retouch", "majflt": "retouch_majflt", "pageout_mbps": "trim_pageout_mbps",
            "written_mbps": "trim_written_mbps"}
    for arm in [a for a in ARMS if a in set(frame["arm"])]:
        g = frame[frame["arm"] == arm]
        row: dict[str, Any] = {"arm": arm, "n": len(g)}
        for out, col in cols.items():
            vals = g[col].dropna() if col in g else pd.Series(dtype=float)
            e = median_ci(vals) if len(vals) else None
            row[out] = e.value if e else float("nan")
            row[f"{out}_lo"] = e.ci_low if e else float("nan")
            row[f"{out}_hi"] = e.ci_high if e else float("nan")
        row["pages"] = float(np.median(g["working_set"])) / PAGE
        rows.append(row)
    return pd.DataFrame(rows)


PAIRS = [("zswap", "flooded"), ("zram", "flooded"), ("flooded", "trim_only"), ("flooded_default", "flooded")]


def ratios(frame: pd.DataFrame) -> dict[str, Estimate]:
    """Re-touch time of one arm over another's, paired round by round (the k-th counted trial
    of each, in trial order): <a>_vs_<b>."""
    out: dict[str, Estimate] = {}
    for a, b in PAIRS:
        xa, xb = harness.pairs(frame, "arm", "retouch_s", a, b)
        if len(xa) >= 2:
            out[f"{a}_vs_{b}"] = paired_ratio_ci(xa, xb)
    return out


def measurements(summary: pd.DataFrame, paired: dict[str, Estimate] | None = None,
                 device: str = "own") -> dict[str, Any]:
    """standby.<device>.<arm>.{retouch_s, retouch_s_per_2gb, pswpin_pages, zswpin_pages,
    majflt, pageout_mbps, pageout_written_mbps} and standby.ratio.<a>_vs_<b>."""
    out: dict[str, Any] = {}
    method = "median, order-statistic CI"
    keys = {"retouch_s": ("retouch_s", "s"), "retouch_s_per_2gb": ("per_ref_s", "s"),
            "pswpin_pages": ("pswpin", "pages"), "zswpin_pages": ("zswpin", "pages"),
            "majflt": ("majflt", "faults"), "pageout_mbps": ("pageout_mbps", "MB/s"),
            "pageout_written_mbps": ("written_mbps", "MB/s")}
    for _, r in summary.iterrows():
        base = f"{NAME}.{device}.{r['arm']}"
        for key, (col, unit) in keys.items():
            if key.startswith("pageout") and r["arm"] == "zswap":
                continue  # nothing is written to swap: zswap holds the pages
            if np.isfinite(r[col]):
                out[f"{base}.{key}"] = entry(r[col], r[f"{col}_lo"], r[f"{col}_hi"], unit, r["n"], method)
    for name, e in (paired or {}).items():
        out[f"{NAME}.ratio.{name}"] = entry(e.value, e.ci_low, e.ci_high, "ratio", e.n,
                                             "median of paired per-round ratios, order-statistic CI")
    return out


def table(summary: pd.DataFrame, rejected_frame: pd.DataFrame | None = None) -> pd.DataFrame:
    def ci(col: str) -> list[str]:
        return [f"{fmt(v)} [{fmt(a)}, {fmt(b)}]" for v, a, b in
                zip(summary[col], summary[f"{col}_lo"], summary[f"{col}_hi"], strict=True)]

    rej = rejected_frame if rejected_frame is not None and len(rejected_frame) else None
    return pd.DataFrame({
        "Arm": summary["arm"].str.replace("_", " "),
        "n": summary["n"].astype(int),
        "Rejected": [int((rej["arm"] == a).sum()) if rej is not None else 0 for a in summary["arm"]],
        "Re-touch (s)": ci("retouch_s"),
        "per 2 GB (s)": ci("per_ref_s"),
        "Swap-ins (pages)": summary["pswpin"].map(lambda v: f"{v:.0f}"),
        "zswap loads": summary["zswpin"].map(lambda v: f"{v:.0f}"),
        "of the set": [f"{max(p, z) / n:.0%}".replace("%", r"\%") for p, z, n in
                       zip(summary["pswpin"], summary["zswpin"], summary["pages"], strict=True)],
    })


WORDS = {"trim_only": "TrimOnly", "flooded": "Flooded", "flooded_default": "FloodedDefault", "zswap": "Zswap",
         "zram": "Zram"}


def macros(summary: pd.DataFrame, cfg: dict[str, Any] | None, profile: str, skipped: str | None,
           paired: dict[str, Estimate] | None = None, rejected_frame: pd.DataFrame | None = None) -> dict[str, str]:
    """Every number and every comparative sentence of the section."""
    paired = paired or {}
    m = {"StandbyProfile": profile, "StandbyStatus": escape(skipped or "ran")}
    if cfg:
        m["StandbyWorkingSetMiB"] = f"{parse_size(cfg['working_set']) / 2**20:g}"
        m["StandbyFloodFactor"] = f"{float(cfg['flood_factor']):g}"
        m["StandbyFloodSwappiness"] = str(cfg.get("flood_swappiness", "n/a"))
    m["StandbyRejected"] = str(len(rejected_frame)) if rejected_frame is not None else "0"
    # the coverage of the arms' and the ratios' order-statistic intervals at their n
    m["StandbyIntervals"] = interval_name((list(summary["n"]) if len(summary) else [])
                                          + [e.n for e in paired.values()], latex=True)
    for arm, word in WORDS.items():
        row = summary[summary["arm"] == arm] if len(summary) else summary
        if len(row):
            r = row.iloc[0]
            m[f"Standby{word}N"] = str(int(r["n"]))
            m[f"Standby{word}RetouchS"] = fmt(r["retouch_s"])
            m[f"Standby{word}PerTwoGBS"] = fmt(r["per_ref_s"])
            m[f"Standby{word}PerTwoGBLoS"] = fmt(r["per_ref_s_lo"])
            m[f"Standby{word}PerTwoGBHiS"] = fmt(r["per_ref_s_hi"])
            m[f"Standby{word}Majflt"] = f"{r['majflt']:.0f}"
            m[f"Standby{word}Pswpin"] = f"{r['pswpin']:.0f}"
            m[f"Standby{word}PswpinPct"] = f"{100 * r['pswpin'] / r['pages']:.0f}"
            m[f"Standby{word}PageoutMBps"] = fmt(r["pageout_mbps"])
            m[f"Standby{word}PageoutLoMBps"] = fmt(r["pageout_mbps_lo"])
            m[f"Standby{word}PageoutHiMBps"] = fmt(r["pageout_mbps_hi"])
            m[f"Standby{word}WrittenMBps"] = fmt(r["written_mbps"])
        else:
            for k in ("N", "RetouchS", "PerTwoGBS", "PerTwoGBLoS", "PerTwoGBHiS", "Majflt", "Pswpin", "PswpinPct",
                      "PageoutMBps", "PageoutLoMBps", "PageoutHiMBps", "WrittenMBps"):
                m[f"Standby{word}{k}"] = "n/a"
    # One finding per comparison, in words (a ratio above 1 is "slower"); its ratio, interval and
    # rounds are a row of the section's comparison table (StandbyComparisons).
    texts = {  # the table's label, the subject, the other arm
        "flooded_vs_trim_only": ("flooded / trimmed only", "After the flood the re-touch was",
                                 "than right after the trim"),
        "zswap_vs_flooded": ("zswap / flooded (SBR)", "With zswap the re-touch was",
                             "than after the flood with swap on disk"),
        "zram_vs_flooded": ("zram / flooded", "With swap on zram the re-touch was", "than with swap on disk"),
        "flooded_default_vs_flooded": ("flooded at the default swappiness / flooded",
                                       "At the default swappiness the re-touch was", "than at the flood swappiness"),
    }
    rows: list[tuple[str, Estimate | None, str]] = []
    for key, (label, subject, other) in texts.items():
        a, b = key.split("_vs_")
        name = f"Standby{WORDS[a]}Vs{WORDS[b]}Sentence"
        m[name] = finding(paired[key], subject, "slower", "faster", other) if key in paired else "n/a"
        rows.append((label, paired.get(key), ""))
    m["StandbyComparisons"] = comparison_rows(rows)
    return m


def analyse(results_dir: Path | str, profile: str) -> harness.Analysis:
    """Re-touch time per arm and where the pages came from, the ratios, the figure and macros."""
    res = harness.open_results(results_dir)
    trials_, skipped, cfg, rejected = res.trials, res.skipped, res.cfg, res.rejected
    summary = summarise(trials_) if len(trials_) else trials_
    paired = ratios(trials_) if len(trials_) else {}

    def figure() -> plots.plt.Figure:
        fig = plots.bars_ci(summary, "arm", "per_ref_s", "per_ref_s_lo", "per_ref_s_hi",
                            ylabel="re-touch time per 2 GB (s)", reference=registry.value("SB2"),
                            reference_label="seed 004, flooded (SB2)",
                            points=trials_.rename(columns={"retouch_s_per_ref": "per_ref_s"}))
        fig.axes[0].set_title(f"standby, {profile} profile")
        fig.axes[0].tick_params(axis="x", labelsize="x-small")
        return fig

    return harness.Analysis(
        res, res.describe(profile), summary, measurements(summary, paired) if len(summary) else {},
        macros(summary, cfg, profile, skipped, paired, rejected),
        harness.Table(table(summary, rejected), "lrrllrrr") if len(summary) else None, {NAME: figure},
        shown={f"paired ratios ({harness.ROUNDED})": harness.rounded(paired),
               "rejected trials": rejected[["trial_id", "arm", "invalid_reason"]] if len(rejected)
               else "no trial rejected",
               "outliers (Tukey)": harness.outliers(trials_, ["arm"], "retouch_s") if len(trials_) else trials_})


EXPERIMENT = harness.Experiment(
    own_hardware={"standby.own.": "this machine's disk and CPU"},
    name=NAME, analyse=analyse, paper_order=30, seeds=("004",), configurations=configurations, trial=run_trial,
    metric=lambda r: r["retouch_s"], columns=tuple(SCALARS), required_columns=tuple(REQUIRED_COLUMNS),
    tools=lambda cfg: ["hog", "cacheflood"], skip_reason=skip_reason, validity=validity,
    warmups=lambda cfg: [{"arm": "trim_only"}],
    measures=lambda cfg: {f"{NAME}.own.{c['arm']}.pswpin_pages": sequential.column(c["arm"], "pswpin_retouch")
                          for c in configurations(cfg)},
    cleanup=lambda cfg, scratch: harness.clean_dir(Path(scratch).resolve() / f"{NAME}-floodset"),
    requires=harness.Requirements(root=True, zram=True))
