"""crystalmark (seed 003): the CrystalMark 2004R2 disk sequence, and its warning.

Seed 003 traced CrystalMark 2004R2: a fresh 128 MB file, then sequential read and write of
1 MiB, random read and write of 512 KiB and 64 KiB, unbuffered. Its warning: a cache below the
file system (ReadyBoost there) inflates the scores of a reused test file. Arms on this
machine's disk: `direct` (fresh file, O_DIRECT, CrystalMark's own way), `direct_reused` (the
same file every trial, O_DIRECT: only a cache below the guest could inflate it),
`buffered` (fresh file through the page cache) and `buffered_reused` (the page cache as the
"cache below", kept warm by reuse). On the emulated devices: `hdd` (the 2008 laptop disk, CM1),
and behind the ReadyBoost-like flash tier on seed 003's own stick (`cache_profile`), with a
fresh image (`tiered`) and with one image and its tier state kept across trials
(`tiered_reused`, CM3; CMW is their ratio).

Each trial runs the sequence one phase at a time, each phase its own `iobench crystalmark
--tests <test>` on the kept file (CrystalMark reopens the file for every test, so the IO is the
same), and between phases reads the tier's counters: how many of the file's blocks it holds,
and the copies offered, dropped and invalidated, the reads it served (tier_<phase>_<counter>,
phase `start` before the first test). They say what CrystalMark's own writes do to a warm tier
before Random Read 64K runs.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import shutil
import subprocess
import tempfile
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pandas as pd

from pagelab.claims import registry
from pagelab.core import plots, records
from pagelab.core.latex import escape, fmt
from pagelab.core.prose import comparison_rows, finding
from pagelab.core.stats import Estimate, coverage_label, interval_name, median_ci, median_rank, paired_ratio_ci
from pagelab.core.units import parse_duration, parse_size
from pagelab.experiments import harness
from pagelab.experiments.harness import entry
from pagelab.run import devices, progress, sequential, trials
from pagelab.run.tools import iobench_crystalmark_cmd, run_json, schema_options, simdisk_model_cmd
from pagelab.system import state
from pagelab.system.config import TIER_MODEL

NAME = "crystalmark"
TESTS = ["seq_read", "seq_write", "rand_read_512k", "rand_write_512k", "rand_read_64k", "rand_write_64k"]
TITLES = {"seq_read": "Seq Read", "seq_write": "Seq Write", "rand_read_512k": "Rand Read 512K",
          "rand_write_512k": "Rand Write 512K", "rand_read_64k": "Rand Read 64K",
          "rand_write_64k": "Rand Write 64K"}
ARMS = {  # arm -> (buffered, reuse the file)
    "direct": (False, False), "direct_reused": (False, True),
    "buffered": (True, False), "buffered_reused": (True, True),
    # The emulated devices (simdisk serves one file, which is reused as the test file): the
    # 2008 laptop disk, and the same disk behind the ReadyBoost-like flash tier, whose cache the
    # sequence's own writes populate before its random reads (seed 003's cached test file).
    "hdd": (False, True), "tiered": (False, True), "tiered_reused": (False, True),
}
TIERED = ("tiered", "tiered_reused")
EMULATED = ("hdd", *TIERED)
# The tier's counters read after every phase (simdisk's stats.device; cumulative since the mount).
TIER_COUNTERS = ("cache_blocks", "copies_offered", "copies_dropped", "invalidations", "hits", "partial_hits",
                 "misses", "copies_queued_bytes")
PHASES = ("start", *TESTS)
# The stick's read latency is assumed for the class (config/devices/picoturbo-2006.yaml): what the
# tier's reads give is shown over this range; and what ReadyBoost's device test allows at most.
LATENCY_RANGE_MS = (0.4, 0.8, 1.2)
QUALIFY_4K_MBPS = 2.5      # Vista's ReadyBoost test: 4 KB random reads of at least 2.5 MB/s
WRITE_RANGE_MB_S = (5, 15)  # the stick's write rate, assumed 10 MB/s: the range shown
RATIOS = [("tiered_reused", "tiered"), ("direct_reused", "direct"), ("buffered_reused", "buffered")]
MODEL_BS = 64 * 1024        # Random Read 64K, the test CM1 scores
MODEL_SPAN_STEP = 2 ** 0.5  # the model's span curve: from the test file's size up to the whole disk


REQUIRED_COLUMNS = [f"result.{t}_best_mbps" for t in TESTS]
JUDGED_TEST = "rand_read_64k"   # the test CM1, CM3 and CMW score
# The emulator's timing on an emulated arm's trial: over the judged test's reads, and over the
# sequence (devices.read_timing, timing_summary); a record from before they were kept has none.
TIMING = tuple(devices.timing_names(JUDGED_TEST))


def configurations(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"arm": a} for a in usable_arms(cfg)[0]]


def command(cfg: dict[str, Any], arm: str, file: Path, seed: int, test: str) -> list[str]:
    """One phase of the sequence: `test` alone on a file kept between phases (the first phase
    of a fresh file creates and fills it)."""
    buffered, _ = ARMS[arm]
    return iobench_crystalmark_cmd(file, seed, buffered=buffered, keep_file=True, tests=test,
                                   **schema_options(NAME, cfg, "iobench", "crystalmark"))


def device(cfg: dict[str, Any], arm: str) -> str:
    """The device profile an emulated arm mounts: the block's disk_profile (hdd), or the tier
    model (the tiered arms), which `tier_overrides` fills with that disk and the stick."""
    return cfg["disk_profile"] if arm == "hdd" else TIER_MODEL


def tier_overrides(cfg: dict[str, Any]) -> dict[str, str]:
    """The tier's devices: the disk of the hdd arm, behind seed 003's stick (`tier_stick`)."""
    return devices.tier_overrides(cfg["disk_profile"], tier_stick(cfg))


def tier_counters(disk: devices.EmulatedDisk) -> dict[str, float]:
    dev = disk.stats().get("device", {})
    return {c: float(dev.get(c, float("nan"))) for c in TIER_COUNTERS}


def run_trial(st: state.State | None, cfg: dict[str, Any], trial: trials.Trial, scratch: Path) -> dict[str, Any]:
    arm = trial.params["arm"]
    _, reuse = ARMS[arm]
    size = parse_size(cfg["size"])
    # an emulated disk or a fresh file of its own (not one kept across trials) lives in the
    # trial's work directory, removed with it
    own = (arm in EMULATED and arm != "tiered_reused") or (arm not in EMULATED and not reuse)
    work = harness.work_dir(scratch / f"{NAME}-{trial.trial_id}") if own else nullcontext(None)
    counters: dict[str, dict[str, float]] = {}
    timing: dict[str, float] = {}
    docs: list[dict[str, Any]] = []
    cmds: list[list[str]] = []
    with work as work_path, st.scope() if st is not None else nullcontext(None):
        disk = None
        if arm == "tiered_reused":
            # One disk image and its tier state across the run's trials (simdisk loads a saved
            # state only for the image it was saved with): the test file is cached from before.
            assert st is not None
            disk = devices.emulated_disk(st, device(cfg, arm), reused_dir(scratch), size,
                                         overrides=tier_overrides(cfg), cache_state=reused_dir(scratch) / "tier.state")
        elif arm in EMULATED:
            assert st is not None
            disk = devices.emulated_disk(st, device(cfg, arm), work_path, size,
                                         overrides=tier_overrides(cfg) if arm in TIERED else None)
        # A reused file keeps its name across trials (and its pages in the cache); a fresh one is new.
        file = disk.disk if disk else (scratch / f"{NAME}-{arm}.dat" if reuse else work_path / f"{NAME}.dat")
        if arm in TIERED:
            counters["start"] = tier_counters(disk)
        progress.phase("measure")   # the sequence; before it, the trial's set-up (the mount)
        for test in TESTS:
            cmds.append(command(cfg, arm, file, trial.seed, test))
            before = disk.flat_stats() if disk and test == JUDGED_TEST else None
            out = subprocess.run(cmds[-1], capture_output=True, text=True, timeout=1800)
            if out.returncode != 0:
                raise trials.TrialFailed(f"iobench crystalmark --tests {test} exited {out.returncode}: "
                                         f"{out.stderr.strip()}")
            docs.append(json.loads(out.stdout))
            if before is not None:
                after = disk.flat_stats()
                timing.update(devices.timing_columns(JUDGED_TEST, devices.read_timing(
                    {k: v - before.get(k, 0.0) for k, v in after.items()})))
            if arm in TIERED:
                counters[test] = tier_counters(disk)
        if disk:   # the trial's own mount: its timing since the mount is the sequence's
            timing.update(devices.mount_timing(disk))
        progress.phase("state restore")   # the unmount and the work directory, on leaving
    result: dict[str, Any] = {"arm": arm, "command": cmds, "file_state": docs[0]["file"]["state"],
                              "fill_mb_s": (docs[0].get("fill") or {}).get("mb_s", float("nan")),
                              "tier_blocks_at_start": counters.get("start", {}).get("cache_blocks", float("nan")),
                              "file_blocks": size / 4096}
    for phase, values in counters.items():
        result.update({f"tier_{phase}_{c}": v for c, v in values.items()})
    result.update(timing)
    for doc in docs:
        for t in doc["tests"]:
            result[f"{t['name']}_best_mbps"] = t["best_mb_s"]
            result[f"{t['name']}_mean_mbps"] = t["mean_mb_s"]
            result[f"{t['name']}_p99_us"] = t["clat_ns"]["percentile"]["99.000000"] / 1e3
    return result


def usable_arms(cfg: dict[str, Any]) -> tuple[list[str], str | None]:
    """The arms that can run here; the emulated ones need root and FUSE."""
    emulated = [a for a in cfg["arms"] if a in EMULATED]
    if emulated and (os.geteuid() != 0 or not Path("/dev/fuse").exists()):
        return [a for a in cfg["arms"] if a not in EMULATED], \
            f"skipped {', '.join(emulated)}: needs root and /dev/fuse for the emulated devices"
    return list(cfg["arms"]), None


SCALARS = [f"{t}_{k}" for t in TESTS for k in ("best_mbps", "mean_mbps", "p99_us")] + [
    "fill_mb_s", "tier_blocks_at_start", "file_state", "file_blocks", *TIMING] + [
    f"tier_{p}_{c}" for p in PHASES for c in TIER_COUNTERS]


def reused_dir(scratch: Path) -> Path:
    return Path(scratch).resolve() / f"{NAME}-tiered_reused"


def validity(params: dict[str, Any], result: dict[str, Any]) -> str | None:
    """The tier was as empty or as warm as the arm says; a reused file was reused."""
    arm, blocks = params["arm"], result.get("tier_blocks_at_start", float("nan"))
    if arm == "tiered" and not blocks <= 0.01 * result["file_blocks"]:
        return f"the fresh tier started with {blocks:.0f} cached blocks; it must start empty"
    # Warm means the state the earlier trials left on this image loaded: how much of
    # the file it holds is what the tier earned (copies at the stick's write speed, the agent).
    if arm == "tiered_reused" and not blocks > 0:
        return "the reused tier started with no cached blocks: its saved state did not load"
    if arm in ("direct_reused", "buffered_reused") and result.get("file_state") != "reused":
        return f"the test file was {result.get('file_state')}, not reused"
    return None


def load(results_dir: Path | str) -> pd.DataFrame:
    return harness.load(results_dir)[0]


def summarise(frame: pd.DataFrame) -> pd.DataFrame:
    """Long form: one row per arm and test, the median of the trials' best sets with its
    order-statistic CI."""
    rows = []
    for arm in [a for a in ARMS if a in set(frame["arm"])]:
        g = frame[frame["arm"] == arm]
        for t in TESTS:
            e = median_ci(g[f"{t}_best_mbps"])
            rows.append({"arm": arm, "test": t, "n": e.n, "mbps": e.value, "lo": e.ci_low, "hi": e.ci_high})
    return pd.DataFrame(rows)


def ratios(frame: pd.DataFrame, test: str = "rand_read_64k") -> dict[str, Estimate]:
    """Reused over fresh, round by round (the arms run interleaved): the cache below, measured.
    tiered_reused_vs_tiered is CMW's twin (O_DIRECT behind the emulated flash tier); the page
    cache's (buffered) and this disk's own (direct) are shown beside it."""
    out = {}
    for a, b in RATIOS:
        xa, xb = harness.pairs(frame, "arm", f"{test}_best_mbps", a, b)
        if xa:
            out[f"{a}_vs_{b}"] = paired_ratio_ci(xa, xb)
    return out


def tier_phases(frame: pd.DataFrame) -> pd.DataFrame:
    """Per tier arm and phase, medians over the counted trials: the test file's blocks the tier
    held after the phase (`held`, and as a share of the file), and what the phase did: copies
    offered to the stick, dropped (the copy queue full), cached blocks invalidated, and the share
    of its reads served by the stick (`hit_share`; NaN for a phase without reads). Empty for a
    run recorded without the per-phase counters."""
    rows = []
    for arm in [a for a in TIERED if a in set(frame.get("arm", []))]:
        g = frame[frame["arm"] == arm]
        if g.get("tier_start_cache_blocks", pd.Series(dtype=float)).isna().all():
            continue
        blocks = g["file_blocks"].median()
        for prev, phase in zip((None, *PHASES), PHASES, strict=False):
            held = g[f"tier_{phase}_cache_blocks"]
            r = {"arm": arm, "phase": phase, "n": len(g), "held": held.median(), "held_share": (held / blocks).median()}
            if prev is not None:
                def delta(c: str, g: pd.DataFrame = g, phase: str = phase, prev: str = prev) -> pd.Series:
                    return g[f"tier_{phase}_{c}"] - g[f"tier_{prev}_{c}"]
                reads = delta("hits") + delta("partial_hits") + delta("misses")
                r.update(offered=delta("copies_offered").median(), dropped=delta("copies_dropped").median(),
                         invalidated=delta("invalidations").median(),
                         hit_share=(delta("hits") / reads.where(reads > 0)).median())
            rows.append(r)
    return pd.DataFrame(rows)


def phase_table(phases: pd.DataFrame) -> pd.DataFrame:
    """The tier's counters after each phase, as the paper prints them."""
    if phases.empty:
        return pd.DataFrame({"Status": ["the tier's counters were not recorded phase by phase with this run"]})

    def num(v: float) -> str:
        return "" if pd.isna(v) else f"{v:.0f}"

    return pd.DataFrame({
        "Arm": phases["arm"].str.replace("_", " "),
        "After": phases["phase"].map(lambda p: "(start)" if p == "start" else TITLES[p]),
        "Held (share of file)": [f"{num(h)} ({fmt(100 * s)}\\,\\%)"
                                 for h, s in zip(phases["held"], phases["held_share"], strict=True)],
        "Offered": phases.get("offered", pd.Series(dtype=float)).map(num),
        "Dropped": phases.get("dropped", pd.Series(dtype=float)).map(num),
        "Invalidated": phases.get("invalidated", pd.Series(dtype=float)).map(num),
        "Reads from the stick": phases.get("hit_share", pd.Series(dtype=float)).map(
            lambda v: "" if pd.isna(v) else f"{fmt(100 * v)}\\,\\%"),
    })


def phase_sentence(phases: pd.DataFrame) -> str:
    """What CrystalMark's own phases did to the tier, from the per-phase counters."""
    if phases is None or phases.empty:
        return "The tier's counters were not recorded phase by phase with this run"

    def at(arm: str, phase: str, col: str) -> float:
        r = phases[(phases["arm"] == arm) & (phases["phase"] == phase)]
        return float(r.iloc[0][col]) if len(r) else math.nan

    def pct(v: float) -> str:
        return f"{fmt(100 * v)}\\,\\%"

    parts = []
    if "tiered_reused" in set(phases["arm"]):
        a = "tiered_reused"
        parts.append(f"with the image kept across trials the tier held {pct(at(a, 'start', 'held_share'))} of the "
                     f"test file's blocks before the sequence and {pct(at(a, 'seq_write', 'held_share'))} after "
                     f"Sequential Write, which offered {at(a, 'seq_write', 'offered'):.0f} copies to the stick, "
                     f"dropped {at(a, 'seq_write', 'dropped'):.0f} and invalidated "
                     f"{at(a, 'seq_write', 'invalidated'):.0f} cached blocks; when Random Read 64K began it held "
                     f"{pct(at(a, 'rand_write_512k', 'held_share'))} and when it ended "
                     f"{pct(at(a, 'rand_read_64k', 'held_share'))}, and the stick served "
                     f"{pct(at(a, 'rand_read_64k', 'hit_share'))} of that test's reads")
    if "tiered" in set(phases["arm"]):
        a = "tiered"
        parts.append(f"with a fresh image it held {pct(at(a, 'rand_write_512k', 'held_share'))} when Random Read "
                     f"64K began and {pct(at(a, 'rand_read_64k', 'held_share'))} when it ended, and served "
                     f"{pct(at(a, 'rand_read_64k', 'hit_share'))} of its reads")
    # one sentence per arm; the first follows the section's colon, the next stands on its own
    return ". ".join(p if i == 0 else p[:1].upper() + p[1:] for i, p in enumerate(parts))


def tier_model_sentence(modelled: dict[str, Any] | None, summary: pd.DataFrame) -> str:
    """The most the tier can give (every read a hit) over the stick's assumed read latency, and
    what a stick writing over the assumed range could copy of Sequential Write."""
    tier = (modelled or {}).get("tier")
    if not tier:
        return "The tier's model was not recorded with this run"
    by = {float(k): v for k, v in tier["hit_mbps_by_latency_ms"].items()}
    lo, hi = min(by), max(by)
    text = (f"Were every read of Random Read 64K a hit, the tier's model on \\texttt{{{escape(tier['stick'])}}} gives "
            f"{fmt(tier['hit_mbps'])}\\,MB/s at the stick's assumed {fmt(tier['read_latency_ms'])}\\,ms a read "
            f"({fmt(by[hi])}--{fmt(by[lo])}\\,MB/s over {fmt(lo)}--{fmt(hi)}\\,ms; ReadyBoost's device test, "
            f"which the stick passed, admits at most {fmt(tier['qualify_max_latency_ms'])}\\,ms)")
    s = summary[summary["arm"].isin(TIERED) & (summary["test"] == "seq_write")]
    if len(s):
        rate = float(s["mbps"].median())
        share = [min(1.0, w * tier["compression"] / rate) for w in WRITE_RANGE_MB_S]
        text += (f". A stick writing {WRITE_RANGE_MB_S[0]}--{WRITE_RANGE_MB_S[1]}\\,MB/s (assumed) can take at most "
                 f"{fmt(100 * share[0])}--{fmt(100 * share[1])}\\,\\% of the copies Sequential Write offers at "
                 f"{fmt(rate)}\\,MB/s, compressed {fmt(tier['compression'])}:1")
    return text


def emulator_timing(frame: pd.DataFrame) -> pd.DataFrame:
    """Per emulated arm, how the emulator kept its model's time over the counted trials that
    record it (TIMING): the trials, the median of their mean reply errors over the judged test
    (positive: late) with the smallest and largest, the reads' median modelled service time, the
    median share of late replies over the sequence, and the largest 99th-percentile error; last,
    the same over every emulated arm's trials together (arm "all")."""
    col = f"{JUDGED_TEST}_emulator_error_us"

    def row(arm: str, g: pd.DataFrame) -> dict[str, Any]:
        return {"arm": arm, "n": len(g), "error_us": g[col].median(), "error_min_us": g[col].min(),
                "error_max_us": g[col].max(), "service_ms": g[f"{JUDGED_TEST}_emulator_service_ms"].median(),
                "late_share": g["emulator_late_share"].median(), "p99_us": g["emulator_error_p99_us"].max()}

    rows = []
    if col in frame.columns:
        timed = frame[frame["arm"].isin(EMULATED) & frame[col].notna()]
        rows = [row(a, timed[timed["arm"] == a]) for a in EMULATED if (timed["arm"] == a).any()]
        if rows:
            rows.append(row("all", timed))
    return pd.DataFrame(rows, columns=["arm", "n", "error_us", "error_min_us", "error_max_us", "service_ms",
                                       "late_share", "p99_us"])


def emulator_sentence(timing: pd.DataFrame) -> str:
    """How closely the emulator kept its model's time on the emulated arms, in words."""
    if not len(timing):
        return "These trials do not record how closely the emulator kept its model's time"
    t = timing[timing["arm"] == "all"].iloc[0]
    return (f"Over Random Read 64K the emulator answered a read a median of "
            f"{fmt(t['error_us'])}\\,\\textmu s after the time its model gives for it "
            f"(each trial's mean; from {fmt(t['error_min_us'])} to {fmt(t['error_max_us'])}\\,\\textmu s over "
            f"{int(t['n'])} trials; negative is early), against a modelled {fmt(t['service_ms'])}\\,ms a read; "
            f"over a trial's whole sequence, 99\\,\\% of its replies were within {fmt(t['p99_us'])}\\,\\textmu s "
            f"of the model in the worst trial")


def table(summary: pd.DataFrame) -> pd.DataFrame:
    """Laid out like CrystalMark's disk page: tests as rows, one column per arm (MB/s)."""
    cols: dict[str, list[str]] = {"Test": [TITLES[t] for t in TESTS]}
    for arm in [a for a in ARMS if a in set(summary["arm"])]:
        s = summary[summary["arm"] == arm].set_index("test")
        cols[arm.replace("_", " ")] = [f"{fmt(s.loc[t, 'mbps'])} [{fmt(s.loc[t, 'lo'])}, {fmt(s.loc[t, 'hi'])}]"
                                       for t in TESTS]
    return pd.DataFrame(cols)


SHORT = {"rand_read_64k": "rr64k", "rand_write_64k": "rw64k", "rand_read_512k": "rr512k",
         "rand_write_512k": "rw512k", "seq_read": "seqr", "seq_write": "seqw"}


def measurements(summary: pd.DataFrame, rat: dict[str, Estimate], device: str = "own") -> dict[str, Any]:
    """Keys crystalmark.own.<arm>.<test>_mbps; the emulated arms are keyed by their arm
    (crystalmark.hdd.rr64k_mbps: CM1, crystalmark.tiered_reused.rr64k_mbps: CM3);
    crystalmark.ratio.<a>_vs_<b> (CMW: tiered_reused_vs_tiered)."""
    out: dict[str, Any] = {}
    for _, r in summary.iterrows():
        where = r["arm"] if r["arm"] in EMULATED else f"{device}.{r['arm']}"
        out[f"{NAME}.{where}.{SHORT[r['test']]}_mbps"] = entry(r["mbps"], r["lo"], r["hi"], "MB/s", int(r["n"]),
                                                             "median of best sets, order statistics")
    for k, e in rat.items():
        out[f"{NAME}.ratio.{k}"] = entry(e.value, e.ci_low, e.ci_high, "ratio", e.n, e.method)
    return out


def macros(summary: pd.DataFrame, rat: dict[str, Estimate], cfg: dict[str, Any], profile: str,
           rejected: pd.DataFrame | None = None, modelled: dict[str, Any] | None = None,
           phases: pd.DataFrame | None = None, timing: pd.DataFrame | None = None) -> dict[str, str]:
    """Every number and every comparative sentence of the section, from the data."""
    def get(arm: str, test: str) -> str:
        s = summary[(summary["arm"] == arm) & (summary["test"] == test)]
        return fmt(s.iloc[0]["mbps"]) if len(s) else "n/a"

    def sentence(key: str, where: str) -> str:
        """Reused against fresh in words; the ratio is a row of CrystalmarkComparisons."""
        return finding(rat[key], f"{where}, reusing the test file", "inflated Random Read 64K's score",
                       "lowered Random Read 64K's score", "against a fresh one",
                       f"{where}, reusing the test file was not shown to change Random Read 64K's score") \
            if key in rat else "n/a"

    pairs = (("tiered_reused_vs_tiered", "Behind the emulated flash tier", "emulated tier, reused / fresh (CMW)"),
             ("buffered_reused_vs_buffered", "Through this machine's page cache", "page cache, reused / fresh"),
             ("direct_reused_vs_direct", "With O\\_DIRECT on this machine's disk", "O\\_DIRECT, reused / fresh"))

    return {
        "CrystalmarkProfile": profile,
        # the coverage of the medians' and the ratios' order-statistic intervals at their n
        "CrystalmarkIntervals": interval_name((list(summary["n"]) if len(summary) else [])
                                              + [e.n for e in rat.values()], latex=True),
        "CrystalmarkSizeMiB": fmt(parse_size(cfg["size"]) / 2**20),
        "CrystalmarkSets": str(cfg["sets"]),
        "CrystalmarkSetCut": set_cut(cfg),
        "CrystalmarkRejected": str(int(rejected["rejected"].sum())) if rejected is not None and len(rejected) else "0",
        "CrystalmarkDirectRRSixtyFourK": get("direct", "rand_read_64k"),
        "CrystalmarkDirectSeqRead": get("direct", "seq_read"),
        "CrystalmarkReusedRRSixtyFourK": get("buffered_reused", "rand_read_64k"),
        "CrystalmarkHddRRSixtyFourK": get("hdd", "rand_read_64k"),
        "CrystalmarkTieredRRSixtyFourK": get("tiered", "rand_read_64k"),
        "CrystalmarkTieredReusedRRSixtyFourK": get("tiered_reused", "rand_read_64k"),
        "CrystalmarkHddSeqRead": get("hdd", "seq_read"),
        "CrystalmarkModelSentence": model_sentence(summary, modelled, registry.value("CM1")),
        "CrystalmarkTierStick": escape(tier_stick(cfg) or "none"),
        "CrystalmarkPhaseSentence": phase_sentence(phases),
        "CrystalmarkEmulatorSentence": emulator_sentence(timing if timing is not None else emulator_timing(
            pd.DataFrame())),
        "CrystalmarkTierModelSentence": tier_model_sentence(modelled, summary),
        "CrystalmarkTierSentence": sentence(*pairs[0][:2]) + cmw_clause(rat.get(pairs[0][0])),
        "CrystalmarkPageCacheSentence": sentence(*pairs[1][:2]),
        "CrystalmarkDirectSentence": sentence(*pairs[2][:2]),
        "CrystalmarkComparisons": comparison_rows([(label, rat.get(key), "") for key, _, label in pairs]),
    }


def cmw_clause(est: Estimate | None) -> str:
    """Where reuse inflated the score behind the tier, how far against CMW's window, in words:
    the abstract lists CMW among the claims that did not hold when the factor falls short of the
    window, beside a sentence that says reuse inflated the score, and the clause says which."""
    if est is None or not est.ci_low > 1:
        return ""
    low = registry.window(registry.load_claims().set_index("id").loc["CMW"].to_dict())[0]
    if est.ci_high < low:
        return ", by less than CMW's window asks for"
    if est.ci_low >= low:
        return ", by at least what CMW's window asks for"
    return ", by a factor not shown to reach CMW's window or to fall short of it"


def set_cut(cfg: dict[str, Any]) -> str:
    """How long a set ran, in words: CrystalMark's own sets transfer the whole file; a run's
    `set_time` may stop them sooner (behind the tier the test re-caches while it runs, so a
    stopped set also stops that: the phase counters show how far it got)."""
    seconds = parse_duration(cfg.get("set_time", 0))
    if not seconds:
        return "each set transferring the whole file, as CrystalMark's do"
    return f"each set stopped after at most {seconds:g}\\,s where CrystalMark's own sets transfer the whole file"


def tier_stick(cfg: dict[str, Any]) -> str:
    """The stick the tier arms' cache is on: the block's cache_profile (a configuration recorded
    before the stick was a setting ran on the tier model's own stick)."""
    return str(cfg.get("cache_profile") or devices.profile_value(TIER_MODEL, "cache_profile"))


def tier_hit_mbps(cfg: dict[str, Any], bs: int, read_latency_ms: float | None = None) -> float:
    """The tier's model (`simdisk model`) for random reads of `bs` over the test file when every
    read is a hit: the most the tier can give (MB/s), with the stick's read latency as its
    profile says or as given (the profile's copy in a temporary directory)."""
    stick = tier_stick(cfg)
    with tempfile.TemporaryDirectory(prefix="pagelab-tier-") as tmp:
        for path in devices.profiles_dir().glob("*.yaml"):
            shutil.copyfile(path, Path(tmp) / path.name)
        if read_latency_ms is not None:
            path = Path(tmp) / f"{stick}.yaml"
            lines = [f"read_latency_ms: {read_latency_ms}" if ln.startswith("read_latency_ms:") else ln
                     for ln in path.read_text().splitlines()]
            path.write_text("\n".join(lines) + "\n")
        cmd = simdisk_model_cmd(TIER_MODEL, Path(tmp), "randread", bs, parse_size(cfg["size"]),
                                hit_ratio=1.0, set=",".join(f"{k}={v}" for k, v in tier_overrides(cfg).items()))
        doc = run_json(cmd, timeout=120)
    return bs / (doc["mean_service_ns"] / 1e9) / 1e6


def _finish(cfg: dict[str, Any], outdir: Path) -> None:
    """The devices' models beside the emulated arms (modelled.json). The bare disk's: its
    expected seconds per 64 KiB random read, uniform over spans from the test file's size (the
    whole emulated device, laid out from the platter's outer edge) up to the modelled disk's
    capacity; the paper reads off where the seed's score falls on that curve. The tier's
    (`tier`): Random Read 64K with every read a hit, over the range of the stick's assumed read
    latency, and the most latency ReadyBoost's device test admits at the stick's read rate."""
    arms = usable_arms(cfg)[0]
    doc: dict[str, Any] = {}
    size = parse_size(cfg["size"])
    if "hdd" in arms:
        profile = cfg["disk_profile"]
        capacity = devices.capacity(profile)
        spans = [size]
        while capacity and spans[-1] * MODEL_SPAN_STEP < capacity:
            spans.append(int(spans[-1] * MODEL_SPAN_STEP) // 4096 * 4096)
        if capacity:
            spans.append(capacity)
        seconds = {str(s): devices.model(profile, "randread", MODEL_BS, s)["mean_service_ns"] / 1e9 for s in spans}
        doc = {"profile": profile, "bs": MODEL_BS, "file_span": size, "capacity": capacity, "seconds_by_span": seconds}
    if any(a in TIERED for a in arms):
        stick = tier_stick(cfg)
        rate = float(devices.profile_value(stick, "read_rate_mb_s"))
        doc["tier"] = {"stick": stick, "bs": MODEL_BS,
                       "read_latency_ms": float(devices.profile_value(stick, "read_latency_ms")),
                       "hit_mbps": tier_hit_mbps(cfg, MODEL_BS),
                       "hit_mbps_by_latency_ms": {str(ms): tier_hit_mbps(cfg, MODEL_BS, ms) for ms in LATENCY_RANGE_MS},
                       "qualify_max_latency_ms": (4096 / (QUALIFY_4K_MBPS * 1e6) - 4096 / (rate * 1e6)) * 1e3,
                       "compression": float(devices.profile_value(TIER_MODEL, "compression"))}
    if doc:
        records.write_json_atomic(outdir / "modelled.json", doc)


def model_mbps(modelled: dict[str, Any], span: int) -> float:
    """The model's Random Read 64K (MB/s, 10^6 bytes/s) over one of the modelled spans."""
    return modelled["bs"] / modelled["seconds_by_span"][str(span)] / 1e6


def span_for_rate(modelled: dict[str, Any], mbps: float) -> float | None:
    """The span (bytes) over which the model's Random Read 64K comes out at `mbps`: the rate falls
    as the span (the seeks) grows, so it is interpolated between the two modelled spans around it,
    linearly in log(span). None when no modelled span is that slow or that fast."""
    curve = sorted((int(s), model_mbps(modelled, int(s))) for s in modelled["seconds_by_span"])
    for (s0, r0), (s1, r1) in itertools.pairwise(curve):
        if r1 <= mbps <= r0:
            f = (r0 - mbps) / (r0 - r1) if r0 != r1 else 0.0
            return math.exp(math.log(s0) + f * (math.log(s1) - math.log(s0)))
    return None


def model_sentence(summary: pd.DataFrame, modelled: dict[str, Any] | None, seed_mbps: float) -> str:
    """What the bare disk's model says of Random Read 64K, from the data: its rate over the test
    file beside ours (within, above or below our interval, named by its coverage at its n), and
    the span of the disk over which it would give the seed's score."""
    s = summary[(summary["arm"] == "hdd") & (summary["test"] == "rand_read_64k")]
    if modelled is None or "seconds_by_span" not in modelled or not len(s):
        return "The disk model's expectation for the test file was not recorded with this run"
    r = s.iloc[0]
    size, capacity = modelled["file_span"], modelled["capacity"]
    model = model_mbps(modelled, size)
    where = "within" if r["lo"] <= model <= r["hi"] else "below" if model < r["lo"] else "above"
    per_read_ms = modelled["seconds_by_span"][str(size)] * 1e3
    text = (f"By the disk's model, {modelled['bs'] // 1024}\\,KiB random reads within the {fmt(size / 2**20)}\\,MiB "
            f"test file take {fmt(per_read_ms)}\\,ms each, {fmt(model)}\\,MB/s, {where} the "
            f"{coverage_label(median_rank(int(r['n']))[1], latex=True)} interval of the {fmt(r['mbps'])}\\,MB/s "
            f"we measured over {int(r['n'])} trials ({fmt(r['lo'])}--{fmt(r['hi'])})")
    span = span_for_rate(modelled, seed_mbps)
    seed = f"the seed's {fmt(seed_mbps)}\\,MB/s ({fmt(modelled['bs'] / (seed_mbps * 1e6) * 1e3)}\\,ms a read)"
    disk = f"its {fmt(capacity / 1e9)}\\,GB" if capacity else "the disk"
    if span is not None:
        return text + (f"; the same model gives {seed} only for reads spread over the first "
                       f"{fmt(span / 1e9)}\\,GB of {disk}")
    if seed_mbps > model:
        return text + f"; {seed} is faster than the model gives even over the test file"
    widest = max(int(k) for k in modelled["seconds_by_span"])
    return (text + f"; no span of the modelled disk is as slow as {seed}: over the first "
            f"{fmt(widest / 1e9)}\\,GB of {disk} it gives {fmt(model_mbps(modelled, widest))}\\,MB/s")


def _cleanup(cfg: dict[str, Any], scratch: Path) -> None:
    for arm in ARMS:
        (Path(scratch).resolve() / f"{NAME}-{arm}.dat").unlink(missing_ok=True)
    if reused_dir(scratch).exists():
        harness.clean_dir(reused_dir(scratch))


def analyse(results_dir: Path | str, profile: str) -> harness.Analysis:
    """The scores by test and arm, the reuse ratios, the tier's phases, the figure and tables."""
    res = harness.open_results(results_dir)
    out, trials_, cfg = res.out, res.trials, res.cfg
    summary = summarise(trials_)
    rejected = harness.rejected(out, ["arm"])
    rat = ratios(trials_)
    phases = tier_phases(trials_)
    timing = emulator_timing(trials_)
    pt = phase_table(phases)
    tab = table(summary)

    def figure() -> plots.plt.Figure:
        fig = plots.bars_grouped(summary.assign(test=summary["test"].map(TITLES)), "test", "mbps", "lo", "hi", "arm",
                                 ylabel="MB/s (best set)", logy=True)
        fig.axes[0].set_title(f"CrystalMark 2004R2 sequence, {profile} profile")
        return fig

    return harness.Analysis(
        res, res.describe(profile), summary, measurements(summary, rat),
        macros(summary, rat, cfg, profile, rejected, harness.read_json(out, "modelled.json"), phases, timing),
        harness.Table(tab, "l" * len(tab.columns)), {NAME: figure},
        tables={"phases.tex": harness.Table(pt, "l" * len(pt.columns))},
        shown={f"Random Read 64K, reused over fresh, per round ({harness.ROUNDED})": harness.rounded(rat),
               "the tier's counters after each phase (medians)": phases,
               "the emulator's timing on the emulated arms (emulator_timing)": timing,
               "rejected trials": harness.rejected(out)[["trial_id", "arm", "invalid_reason"]],
               "outliers (Tukey)": harness.outliers(trials_, ["arm"], "rand_read_64k_best_mbps")
               if len(trials_) else trials_})


EXPERIMENT = harness.Experiment(
    own_hardware={"crystalmark.own.": "this machine's disk"},
    name=NAME, analyse=analyse, paper_order=10, seeds=("003",), configurations=configurations, trial=run_trial,
    metric=lambda r: r["rand_read_64k_best_mbps"], columns=tuple(SCALARS), required_columns=tuple(REQUIRED_COLUMNS),
    tools=lambda cfg: ["iobench"] + (["simdisk"] if any(a in EMULATED for a in usable_arms(cfg)[0]) else []),
    conf_name=lambda c: c["arm"], validity=validity,
    measures=lambda cfg: {**{f"{NAME}.{a}.{SHORT[t]}_mbps": sequential.column(a, f"{t}_best_mbps")
                             for a in EMULATED for t in TESTS},
                          **{f"{NAME}.ratio.{a}_vs_{b}": sequential.paired(a, b, "rand_read_64k_best_mbps")
                             for a, b in RATIOS}},
    changes_state=lambda cfg: any(a in EMULATED for a in usable_arms(cfg)[0]),
    warmups=lambda cfg: [{"arm": a} for a in usable_arms(cfg)[0] if ARMS[a][1] and a != "hdd"],
    cleanup=_cleanup, finish=_finish, note=lambda cfg: usable_arms(cfg)[1],
    requires=harness.Requirements(fuse=True))
