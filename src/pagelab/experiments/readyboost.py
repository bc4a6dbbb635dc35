"""readyboost (seed 000): how long a working set takes to come back after memory hogs, with swap
on a 2008 laptop disk, with and without a ReadyBoost-like flash cache, with and without a
Superfetch-like agent prefetching between the hog rounds; and today's alternatives.

The trial (its design, criteria, validity and counters) is `pagelab.experiments.recovery`, which
payoff runs too; this module runs it over the arms and analyses it. The seed's method, scaled: a
memory cgroup plays the 3 GB of RAM; a `hog victim` working set of a third of it is built (at
the seed's own scale: 1.4 GB of working set and 1.6 GB of file cache); two hogs run side by
side `hog_rounds` times in the same cgroup (each holds a round's memory until the other has
written its own: `victim.push_out`) and push the victim out. The
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
  tier_after    swap behind the emulated flash tier (the tier model, config.TIER_MODEL, with
                the block's disk_profile and its cache_profile as the stick; empty at the start),
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
half or more of its trials is not measurable here (stats.median_censored).

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

from collections.abc import Callable
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
    median_censored,
)
from pagelab.core.units import parse_size
from pagelab.experiments import harness, recovery
from pagelab.experiments.harness import entry
from pagelab.experiments.recovery import (
    ARMS,
    CACHED_SHARE,
    FILE_BACK_SHARE,
    REQUIRED_COLUMNS,
    SCALARS,
    design,
    preflight,
    run_trial,
    settle_window,
    skip_reason,
    swap_bytes,
    validity,
)
from pagelab.run import fleetplan, sequential
from pagelab.run.systemdisk import layout
from pagelab.system.config import ConfigError

NAME = "readyboost"


def configurations(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"arm": a} for a in cfg["arms"]]


def arm_of(params: dict[str, Any]) -> str:
    """A trial's cell on a fleet (Experiment.cell_of): its arm."""
    return str(params["arm"])


def split(cfg: dict[str, Any], hosts: list[str]) -> dict[str, dict[str, Any]]:
    """A fleet's hosts' settings (Experiment.split): each host's `arms`, every arm of the block to
    exactly one host, dealt by LPT over the arms' recorded durations at the block's profile
    (fleetplan.deal, fleetplan.recorded_cells) so that the hosts' shares take about as long. The
    analysis pairs arms by their trials' rank within each arm, not by a shared order, so no arm
    needs another on its host; what a split run gives up is the one randomised order on one
    machine, and the verdict stopping rule of a claim that compares arms on two hosts (a host sees
    only its own trials: such an arm stops on width or n_max). Only with `split_between_hosts`:
    without it every host runs the whole block (the fleet compares the hosts), as does one host;
    more hosts than arms: ConfigError."""
    if not cfg.get("split_between_hosts"):
        return {h: {} for h in hosts}
    arms = list(cfg["arms"])
    if len(hosts) > len(arms):
        raise ConfigError(f"fleet: {len(hosts)} hosts run {NAME}, which has only {len(arms)} arms: name fewer hosts")
    if len(hosts) < 2:
        return {h: {} for h in hosts}
    seconds = fleetplan.recorded_cells(NAME, cfg.get("profile", "quick"), arm_of)
    return {h: {"arms": share} for h, share in fleetplan.deal(arms, hosts, seconds).items()}


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


def coded_metric(col: str) -> Callable[[dict[str, Any]], float]:
    """One trial's result -> its `col` coded as `coded` does (AT_START, OVER_WATCH): the metric
    adaptive repetitions watch, so that an arm whose median is censored for good stops
    (trials.run_adaptive)."""
    def metric(result: dict[str, Any]) -> float:
        row = pd.DataFrame([{col: result.get(col), "intended_share": result.get("intended_share")}])
        return float(coded(row, col).iloc[0])
    return metric


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
    if any("at the start" in w for w, _ in counts) and median_censored(row["recovery_s_censored"], row["recovery_s_n"]):
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
    """Per-round ratios (the k-th counted trial of each arm: one host's interleaved runs, or a fleet's
    merged shares) of the seed's recovery (`<a>_vs_<b>`: the
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
    judge calls a claim whose measurement is censored in half or more of its trials not
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
    s"); a value censored in half or more of its trials is named by its censoring, never a number."""
    if not n:
        return "--"
    if median_censored(censored, n):
        parts = ([f"at the start {start}/{n}"] if start else []) + \
            ([f"> {fmt(watch)} {over}/{n}"] if over else [])
        return "; ".join(parts) or f"censored {censored}/{n}"

    def one(x: float) -> str:
        return "at the start" if x == AT_START else f"> {fmt(watch)}" if x == OVER_WATCH else fmt(x)

    text = f"{one(v)} [{one(lo)}, {one(hi)}]"
    return text + (f" ({censored} cens.)" if censored else "")


def value_text(row: pd.Series, col: str) -> str:
    """One arm's median of `col` for the text, with its unit: "22.5\\,s"; censored in half or
    more of its trials, what happened instead ("censored: met at the hogs' end in 5 of 5 trials")."""
    n, cens = int(row[f"{col}_n"]), int(row[f"{col}_censored"])
    if not n:
        return "n/a"
    if median_censored(cens, n):
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


def table_parts(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The factorial table as the paper sets it, in two parts that each fit the text width at
    a legible size (in one, its 13 columns print at about 4 pt): the arms' trials and the
    recovery criteria (table.tex), then the arms' hogs, total, re-touch and the agent's and
    tier's counters (phases.tex). Every column is in one part, the arm in both."""
    first = ["Arm", "Trials", "Rejected", *(HEADERS[c] for c in ("settle_s", "cached_s", "recovery_s", "back_s",
                                                                   "file_back_s"))]
    return table[first], table[["Arm", *(c for c in table.columns if c not in first)]]


def table_format(table: pd.DataFrame) -> str:
    """The table's column alignment: text columns left, counts and shares right."""
    text = ("Arm", *HEADERS.values())
    return "".join("l" if c in text else "r" for c in table.columns)


def arm_row(summary: pd.DataFrame, arm: str) -> pd.Series | None:
    """The summary's row of one arm, or None when the arm did not run."""
    rows = summary[summary["arm"] == arm] if len(summary) else summary
    return rows.iloc[0] if len(rows) else None


def measurable(e: Estimate | None) -> bool:
    """An estimate the text may compare: present, its median not censored (median_censored)."""
    return e is not None and not median_censored(e.censored, e.n) and np.isfinite(e.value)


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
        m["ReadyboostOrder"] = {"seq": "address order", "random": "random order"}[d.retouch_order]
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
    # The seed's "without ReadyBoost" has two twins: the primary (the agent also between the
    # rounds) and the sensitivity twin (restoring only after them); each gets the same two
    # findings, with its macro's tag, its arm's label and its claims' suffix.
    twins = (("", SEED_ARMS["none"], "bare between", "", "the bare disk with the agent also between the rounds "
              "(the primary twin of the seed's ``without ReadyBoost'')"),
             ("Sens", SENSITIVITY_NONE, "bare after", "S",
              "the bare disk with the agent restoring only after them (the sensitivity twin)"))
    # One finding per comparison, in words; its ratio, interval and rounds are a row of the
    # section's comparison table (ReadyboostComparisons), never repeated in the sentence.
    findings: dict[str, tuple[str, str, str, str]] = {}
    for tag, arm, bare, suffix, word in twins:
        findings[f"ReadyboostLittle{tag}Sentence"] = (
            f"tier_after_vs_{arm}", f"tier after / {bare} (RBR2{suffix})",
            "behind the tier with the agent restoring only after the hogs, recovery was", f"than on {word}")
        findings[f"ReadyboostEnough{tag}Sentence"] = (
            f"tier_between_vs_{arm}", f"tier between / {bare} (RBR3{suffix})",
            "behind the tier with the agent also prefetching between the rounds, recovery was", f"than on {word}")
    findings |= {
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
            start = [arm.replace("_", " ") for arm in FACTORIAL if (row := arm_row(summary, arm)) is not None
                     and median_censored(row[f"{col}_start"], row[f"{col}_n"])]
            m[name] = (f"for {what}, the interaction of tier and prefetching between the rounds is not measurable "
                       "here" + (f": {inter.censored} of {inter.n} rounds had an arm censored" if inter else "")
                       + (f" (met at the hogs' end in half or more of the trials of {' and '.join(start)})"
                          if start else ""))
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
        return ("could not be judged, as that measure was already met when the clock started in half or more "
                "of the rounds")
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
    return (f"for {what}, the interaction's interval contains 1: the data neither show prefetching between the "
            "rounds doing more behind the tier than on the bare disk nor rule it out")


FIGURE_TIMES = ("settle_s", "cached_s", "back_s", "file_back_s", "hog_s", "total_s")


def figure(summary: pd.DataFrame, profile: str) -> plots.plt.Figure:
    """One panel per criterion (disk quiet, cached, working set back, file cache back, the hogs,
    the total), the arms along x: the median with its interval; a value censored in half or
    more of its trials is drawn hollow at its bound (0 for "at the start", the watch for "> watch", with an arrow up),
    never as a measured point. Two rows of three: at the paper's text width each panel's labels
    stay legible (six in one row print at about 4 pt)."""
    plots.theme()
    fig, axes = plots.plt.subplots(2, 3, figsize=(8.4, 6.4), sharey=False)
    xs = np.arange(len(summary))
    for ax, col in zip(axes.flat, FIGURE_TIMES, strict=True):
        for x, (_, r) in zip(xs, summary.iterrows(), strict=True):
            n, cens = int(r[f"{col}_n"]), int(r[f"{col}_censored"])
            if not n:
                continue
            if median_censored(cens, n):
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


def _check(cfg: dict[str, Any]) -> None:
    """Before the run takes the state lock or changes anything: exit 2 when this machine cannot
    hold the profile's memory cgroup (recovery.preflight)."""
    preflight(cfg)


def _cleanup(cfg: dict[str, Any], scratch: Path) -> None:
    recovery.cleanup(scratch)


def analyse(results_dir: Path | str, profile: str) -> harness.Analysis:
    """Recovery by arm and criterion, the ratios and the interaction, the figure and macros."""
    res = harness.open_results(results_dir)
    out, trials_, skipped, cfg = res.out, res.trials, res.skipped, res.cfg
    summary = summarise(trials_) if len(trials_) else trials_
    rat = ratios(trials_) if len(trials_) else {}
    rejected = harness.rejected(out, ["arm"]) if not skipped else None
    tab, phases = table_parts(table(summary, rejected)) if len(summary) else (None, None)

    def figure_() -> plots.plt.Figure:
        return figure(summary, profile)

    return harness.Analysis(
        res, res.describe(profile), summary,
        measurements(summary, rat, trials_) if len(summary) else {},
        macros(summary, rat, cfg, profile, skipped, rejected, trials_ if len(trials_) else None),
        harness.Table(tab, table_format(tab)) if tab is not None else None, {NAME: figure_},
        tables={"premise.tex": harness.Table(premise_table(summary), "l" + "r" * len(PREMISE)),
                "phases.tex": harness.Table(phases, table_format(phases))} if phases is not None else
        # without counted trials the table's second part says why, as table.tex does
        {"phases.tex": harness.Table(harness.status_table(skipped))},
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
    metric=coded_metric("recovery_s"), columns=tuple(SCALARS), required_columns=tuple(REQUIRED_COLUMNS),
    tools=lambda cfg: recovery.TOOLS, skip_reason=skip_reason, validity=validity,
    warmups=lambda cfg: [{"arm": cfg["arms"][0]}],
    check=_check, cleanup=_cleanup, measures=measures, split=split, cell_of=arm_of,
    requires=harness.Requirements(root=True, fuse=True, zram=True))
