"""payoff (seed 000): where the seed's advice stops holding. Seed 000 ends with advice, not a
measurement: "when RAM becomes tight, buy more RAM sticks ... and then apply ReadyBoost with a
fast USB thumb drive ... If your computer has a Solid State Drive, forget about ReadyBoost and
Superfetch." This experiment maps it: readyboost's trial (two memory hogs in a memory cgroup,
the Superfetch analogue, the seed's recovery criteria) at cells of four factors,

  disk_profile   the paging disk: 4200, 5400 (the seed's), 7200 rpm disks of 2007-2008, the Intel
                 X25-M (the first SATA SSD), and `today`, this machine's own disk through the
                 emulator with no modelled time;
  cache_profile  the stick behind the ReadyBoost tier: the seed's stick, one at the "Enhanced for
                 ReadyBoost" logo's figures, a USB 3 stick of 2012 (a stick that fails
                 ReadyBoost's device test is refused: Windows would not use it);
  ram_x          the memory cgroup at 1x, 1.33x, 2x the seed's RAM, with the seed's working set,
                 file cache and hogs fixed (3 GB of RAM, 1.4 GB of working sets, 1.6 GB of cache,
                 two 1 GB hogs: RAM_SHARES); 1.33x is the seed's 3 GB with one more 1 GB module;
  agent_mode     the agent restoring after the hogs (`after`) or also reading between their
                 rounds (`between`, the seed's "enough pre-population"),

each cell with two arms on its own disk: `bare` (swap on the disk) and `tier` (swap behind the
ReadyBoost-like tier of that disk and stick), run interleaved, so the tier's effect is a median of
per-round paired ratios within the cell. The `one-factor` design (the default) varies one factor at
a time around the seed's machine (the first level of each factor); `grid` runs the full factorial,
meant for a fleet (`cells`: the cells a fleet host runs, fleet.payoff_shares).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import random
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pagelab.core import plots
from pagelab.core.latex import escape, fmt
from pagelab.core.prose import finding
from pagelab.core.stats import Estimate, censored_median_ci, censored_ratio, interval_name, median_censored
from pagelab.core.units import parse_size
from pagelab.experiments import harness, readyboost, recovery
from pagelab.run import trials
from pagelab.run.devices import profile_names, profile_value, profiles_dir
from pagelab.run.tools import ToolError, command
from pagelab.system import state
from pagelab.system.config import ConfigError, load_schema

NAME = "payoff"
FACTORS = ("disk_profile", "cache_profile", "ram_x", "agent_mode")
ARMS = ("bare", "tier")
# Seed 000's machine, in MiB: "3GB RAM", "1.4GB working sets", "the 1.6GB cache", "2x1GB memory
# hog processes". Every cell keeps the seed's proportions of these to its 1x RAM.
SEED_RAM, SEED_WORKING_SET, SEED_FILE_CACHE, SEED_HOG = 3072, 1400, 1600, 1024
# The tier's effect is within the noise when its paired ratio's CI reaches into 1 +- NOISE
# (claim PO1, "with an SSD, ReadyBoost does not help", is the tier's ratio not below 1 - 5 %).
NOISE = 0.05
# The seed's advice as comparisons between cells (the claims' measurements): the SSD, "more RAM
# sticks" (one more 1 GB module: 3 -> 4 GB), "a fast USB thumb drive" (a USB 3 stick of 2012,
# the year of the seed).
SSD, MORE_RAM, FAST_STICK = "ssd-x25m-2008", 1.33, "usbstick3-2012"
# The seed's machine: its 5400 rpm disk, its 20/7 MB/s stick, its 3 GB of RAM, and Superfetch
# reading between the hog rounds ("enough pre-population", the seed's 35 s).
SEED_MACHINE_ARGS = ("hdd5400-2008", "usbstick-2008", 1.0, "between")
# The map's measure: the time from the hogs' end until the working set was back in RAM (at most
# 1 % of it still only in swap: readyboost's back_s). The seed's recovery (disk time at most 30 %
# or cached at 10 % of RAM, recovery_s) is reported beside it, but at the seed's proportions in
# these small groups its cached criterion is met at the hogs' end (the pages the hogs pushed out
# last are still in the swap cache, which Task Manager's "Cached" counts): in the single trials
# that timed the full profile, 18 of 20 had recovery_s = 0, which leaves no ratio to take.
METRIC = "back_s"
TRIAL_KEYS = ("hog_rounds", "settle_window_s", "restore_timeout_s", "retouch_order")


@dataclass(frozen=True)
class Cell:
    disk_profile: str
    cache_profile: str
    ram_x: float
    agent_mode: str

    @property
    def label(self) -> str:
        return f"{self.disk_profile}+{self.cache_profile}+{self.ram_x:g}x+{self.agent_mode}"

    def params(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# The schema key of each factor's levels: the factor's name in the plural.
LEVEL_KEYS = {"disk_profile": "disk_profiles", "cache_profile": "cache_profiles", "ram_x": "ram_factors",
              "agent_mode": "agent_modes"}


SEED_MACHINE = Cell(*SEED_MACHINE_ARGS)


def levels(cfg: dict[str, Any]) -> dict[str, list[Any]]:
    """Each factor's levels, in the config's order (the map's), each list holding the seed
    machine's level (SEED_MACHINE); ConfigError naming the key otherwise."""
    lv = {f: [float(x) for x in cfg[key]] if f == "ram_x" else list(cfg[key]) for f, key in LEVEL_KEYS.items()}
    for f, values in lv.items():
        if getattr(SEED_MACHINE, f) not in values:
            raise ConfigError(f"{NAME}.{cfg.get('profile', 'quick')}.{LEVEL_KEYS[f]}: {values} lacks the seed's "
                              f"machine's level {getattr(SEED_MACHINE, f)!r}: every cell is a step away from it")
    return lv


def center(cfg: dict[str, Any]) -> Cell:
    """The seed's machine, which every one-factor cell is one step away from."""
    levels(cfg)
    return SEED_MACHINE


def design_cells(cfg: dict[str, Any]) -> list[Cell]:
    """Every cell of the design: one-factor (the center, then each other level of each factor
    with the rest at the center) or grid (the full factorial)."""
    lv = levels(cfg)
    if cfg["design"] == "grid":
        return [Cell(*combo) for combo in itertools.product(*(lv[f] for f in FACTORS))]
    c = center(cfg)
    return [c] + [dataclasses.replace(c, **{f: v}) for f in FACTORS for v in lv[f] if v != getattr(c, f)]


def cells(cfg: dict[str, Any]) -> list[Cell]:
    """The cells this run measures: the design's, or the `cells` the config names (a fleet
    host's share); a name that is not a cell of the design is refused."""
    every = design_cells(cfg)
    chosen = cfg.get("cells")
    if not chosen:
        return every
    by_label = {c.label: c for c in every}
    unknown = [x for x in chosen if x not in by_label]
    if unknown:
        raise ConfigError(f"{NAME}.cells: {unknown[0]!r} is not a cell of the {cfg['design']} design "
                          f"(have: {', '.join(by_label)})")
    return [by_label[x] for x in chosen]


def shares(cfg: dict[str, Any], hosts: list[str]) -> dict[str, list[str]]:
    """The design's cells dealt to `hosts`: shuffled by the recorded rng_seed, then round-robin,
    so that every cell goes to exactly one host and the hosts' shares differ by at most one."""
    order = [c.label for c in design_cells(cfg)]
    random.Random(cfg["rng_seed"]).shuffle(order)
    return {h: order[i::len(hosts)] for i, h in enumerate(hosts)}


def split(cfg: dict[str, Any], hosts: list[str]) -> dict[str, dict[str, Any]]:
    """A fleet's hosts' settings (Experiment.split): with the grid design, each host's `cells`
    (`shares`); the one-factor design runs whole on every host (the fleet compares hosts)."""
    if cfg["design"] != "grid" or cfg.get("cells"):
        return {h: {} for h in hosts}
    n = len(design_cells(cfg))
    if len(hosts) > n:
        raise ConfigError(f"fleet: {len(hosts)} hosts run {NAME}, whose grid has only {n} cells: name fewer hosts")
    return {h: {"cells": share} for h, share in shares(cfg, hosts).items()}


def configurations(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**c.params(), "arm": a} for c in cells(cfg) for a in ARMS]


def cell_of(params: dict[str, Any]) -> Cell:
    return Cell(params["disk_profile"], params["cache_profile"], float(params["ram_x"]), params["agent_mode"])


def cell_design(cfg: dict[str, Any], cell: Cell) -> recovery.Design:
    """A cell's sizes: the seed's working set, file cache and hogs in proportion to the profile's
    1x RAM (`ram`), and the cell's RAM level times it (page-aligned)."""
    ram = parse_size(cfg["ram"])
    page = recovery.PAGE

    def part(mib: int, of: int = ram) -> int:
        return of * mib // SEED_RAM // page * page

    return recovery.Design(ram=int(ram * cell.ram_x) // page * page, working_set=part(SEED_WORKING_SET),
                             file_cache=part(SEED_FILE_CACHE), hog=part(SEED_HOG),
                             retouch_order=cfg["retouch_order"])


def readyboost_arm(cell: Cell, arm: str) -> str:
    """The readyboost arm a cell's arm runs: the bare disk or the tier, with the cell's agent."""
    return f"{'hdd' if arm == 'bare' else 'tier'}_{cell.agent_mode}"


# The Superfetch analogue's settings and the victim's fill: payoff's block may set each (its
# schema refers to readyboost's for the type); unset, readyboost's default applies
# (config/schema/readyboost.yaml has each one's reason), so both experiments run one agent.
AGENT_KEYS = ("fill_ratio", "agent_poll_ms", "agent_group", "agent_depth", "agent_priority", "agent_max_rate")


def agent_settings(cfg: dict[str, Any] | None = None) -> dict[str, Any]:
    """The agent's settings for payoff's block `cfg`: each one `cfg` sets, else readyboost's
    default."""
    props = load_schema()["properties"]["readyboost"]["properties"]
    defaults = {k: props[k]["default"] for k in AGENT_KEYS if "default" in props[k]}
    return {**defaults, **{k: v for k, v in (cfg or {}).items() if k in AGENT_KEYS and v is not None}}


def trial_config(cfg: dict[str, Any], cell: Cell) -> dict[str, Any]:
    """The readyboost block one cell's trial runs with: payoff's agent settings, its trial keys,
    the cell's disk and stick (the tier's, in the tier arm)."""
    return {**agent_settings(cfg), **{k: cfg[k] for k in TRIAL_KEYS}, "disk_profile": cell.disk_profile,
            "cache_profile": cell.cache_profile, "profile": cfg.get("profile", "quick")}


def run_trial(st: state.State, cfg: dict[str, Any], trial: trials.Trial, scratch: Path) -> dict[str, Any]:
    cell = cell_of(trial.params)
    arm = trial.params["arm"]
    rb_trial = dataclasses.replace(trial, params={"arm": readyboost_arm(cell, arm)})
    result = recovery.run_trial(st, trial_config(cfg, cell), rb_trial, scratch, d=cell_design(cfg, cell))
    result["readyboost_arm"] = result.pop("arm")
    result["cell"] = cell.label
    return result


def validity(params: dict[str, Any], result: dict[str, Any]) -> str | None:
    """readyboost's check, for the readyboost arm the cell's arm ran: the hogs pushed out what
    the cell's sizes push out (nothing where the RAM holds the working set and the hogs: then the
    hogs must only have run unkilled), the file cache they must drop was dropped, the agent
    brought the working set back, the tier started empty."""
    return recovery.validity({"arm": readyboost_arm(cell_of(params), params["arm"])}, result)


def skip_reason(cfg: dict[str, Any]) -> str | None:
    return recovery.skip_reason({"arms": ["hdd", "tier_after"]})


def qualify(stick: str) -> dict[str, Any]:
    """`simdisk qualify` of a stick profile (ReadyBoost's device test), as JSON."""
    out = subprocess.run(command("simdisk", "qualify", profile=stick, profile_dir=profiles_dir(), output_format="json"),
                         capture_output=True, text=True, timeout=60)
    try:
        return json.loads(out.stdout)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{NAME}.cache_profiles: simdisk qualify {stick}: {out.stderr.strip() or exc}") from exc


def device_tests(names: list[str]) -> pd.DataFrame:
    """ReadyBoost's device test (`simdisk qualify`) of each device profile: its 4 KB random reads
    and 512 KB random writes in MB/s, and the verdict (fails, qualifies, enhanced)."""
    rows = []
    for name in names:
        q = qualify(name)
        if q.get("model") == "zero":  # no modelled time: nothing for the test to measure
            continue
        verdict = "enhanced" if q.get("enhanced") else "qualifies" if q.get("readyboost") else "fails"
        rows.append({"profile": name, "model": q.get("model", ""), "read_4k_mb_s": q["random_read_4k"]["mb_s"],
                     "write_512k_mb_s": q["random_write_512k"]["mb_s"], "verdict": verdict,
                     **{f"{k}_{lvl}": q[k][f"{lvl}_mb_s"] for k in ("random_read_4k", "random_write_512k")
                        for lvl in ("required", "enhanced")}})
    return pd.DataFrame(rows)


def device_test_rows(tests: pd.DataFrame) -> str:
    """The device tests as the body of a LaTeX tabular (profile & model & reads & writes & verdict)."""
    return " ".join(rf"\texttt{{{escape(r.profile)}}} & {escape(r.model)} & {fmt(r.read_4k_mb_s)} & "
                    rf"{fmt(r.write_512k_mb_s)} & {r.verdict} \\" for r in tests.itertuples())


def check(cfg: dict[str, Any]) -> None:
    """What the schema cannot say, before anything changes (ConfigError, exit 2): the cells
    exist, every stick passes ReadyBoost's device test, the largest RAM level fits this machine
    (recovery.preflight), and at 1x the hogs push part of the working set out."""
    cells(cfg)
    for stick in cfg["cache_profiles"]:
        if not qualify(stick).get("readyboost", False):
            raise ConfigError(f"{NAME}.cache_profiles: {stick} fails ReadyBoost's device test (simdisk qualify "
                              f"--profile {stick}): ReadyBoost would not use it")
    biggest = max(levels(cfg)["ram_x"])
    recovery.preflight({"ram": str(int(parse_size(cfg["ram"]) * biggest)), "profile": cfg.get("profile"),
                        "retouch_order": cfg["retouch_order"]})
    if cell_design(cfg, dataclasses.replace(center(cfg), ram_x=1.0)).intended_share <= 0:
        raise ConfigError(f"{NAME}.ram: {cfg['ram']} is too small for the seed's proportions")


def _prepare(cfg: dict[str, Any], scratch: Path) -> dict[str, Any]:
    return {"cells": [c.label for c in cells(cfg)]}


def _cleanup(cfg: dict[str, Any], scratch: Path) -> None:
    recovery.cleanup(scratch)


COLUMNS = tuple(recovery.SCALARS) + ("cell", "readyboost_arm", "intended_cache_share")


# --------------------------------------------------------------------------------------------
# Analysis.

def _series(frame: pd.DataFrame, cell: str, arm: str, metric: str) -> list[float]:
    """One (cell, arm)'s `metric` per counted trial in trial order, censored values coded
    (readyboost.coded: at the start, > watch; a zero the cell's sizes make is a value)."""
    g = frame[(frame["cell"] == cell) & (frame["arm"] == arm)].sort_values("order")
    return readyboost.coded(g, metric).tolist()


def built(frame: pd.DataFrame, cell: str, arm: str) -> bool:
    """Whether the (cell, arm)'s trials push nothing out by their sizes (readyboost.by_construction)."""
    g = frame[(frame["cell"] == cell) & (frame["arm"] == arm)]
    return bool(len(g)) and bool(readyboost.by_construction(g).all())


def construction_reason(cfg: dict[str, Any] | None, cell: str) -> str:
    """Why a cell's time is 0 by construction: its sizes push nothing out."""
    if cfg is None:
        return f"at {cell} the working set and both hogs fit in the RAM: nothing is pushed out, so nothing comes back"
    disk, stick, ram_x, mode = cell.split("+")
    d = cell_design(cfg, Cell(disk, stick, float(ram_x.rstrip("x")), mode))
    return (f"at {cell} the working set ({d.working_set / 2**20:.0f} MiB) and {recovery.HOGS} hogs of "
            f"{d.hog / 2**20:.0f} MiB fit in the group's {d.ram / 2**20:.0f} MiB of RAM: nothing is pushed out, so "
            "the time until the working set is back is 0 by construction, not a measurement")


def paired(frame: pd.DataFrame, a: tuple[str, str], b: tuple[str, str], metric: str = METRIC) -> Estimate | None:
    """The median of per-round ratios of (cell, arm) `a` over `b` (the k-th counted trial of each,
    in trial order), censored rounds kept in their place where it is certain and counted
    (stats.censored_ratio; a zero numerator the cell's sizes make is a ratio of 0), or None."""
    xa, xb = _series(frame, *a, metric), _series(frame, *b, metric)
    r = [censored_ratio(x, y) for x, y in zip(xa, xb, strict=False)]
    if not r or all(v != v for v in r):
        return None
    e = censored_median_ci(r)
    return Estimate(e.value, e.ci_low, e.ci_high, e.n, "paired ratio, order statistics", e.coverage, e.censored)


def summarise(frame: pd.DataFrame, cfg: dict[str, Any] | None = None) -> pd.DataFrame:
    """One row per cell: its factors, counted trials per arm, each arm's recovery and time until
    the working set was back (medians, intervals, censored trials kept in their place and
    counted), the working set pushed out, whether the cell's sizes push nothing out (`built`), and
    the tier's paired ratio to the bare disk of METRIC (ratio, ratio_lo, ratio_hi, ratio_n,
    ratio_censored); with `cfg`, in the design's order."""
    rows = []
    present = list(dict.fromkeys(frame["cell"]))
    if cfg:  # the design's order: the seed's machine, then each factor's levels
        present = [c.label for c in design_cells(cfg) if c.label in present] + \
            [x for x in present if x not in {c.label for c in design_cells(cfg)}]
    for label in present:
        g = frame[frame["cell"] == label]
        first = g.iloc[0]
        row: dict[str, Any] = {"cell": label, **{f: first[f] for f in FACTORS}}
        for arm in ARMS:
            ga = g[g["arm"] == arm]
            row[f"{arm}_n"] = len(ga)
            row[f"{arm}_built"] = built(frame, label, arm)
            for col in ("recovery_s", "back_s"):
                vals = readyboost.coded(ga, col) if col in ga else pd.Series(dtype=float)
                e = censored_median_ci(vals.to_numpy(float)) if len(vals) else None
                row[f"{arm}_{col}"] = e.value if e else float("nan")
                row[f"{arm}_{col}_lo"] = e.ci_low if e else float("nan")
                row[f"{arm}_{col}_hi"] = e.ci_high if e else float("nan")
                row[f"{arm}_{col}_coverage"] = e.coverage if e else float("nan")
                row[f"{arm}_{col}_censored"] = e.censored if e else 0
            row[f"{arm}_evicted"] = float(np.nanmedian(ga["evicted_share"])) if len(ga) else float("nan")
        r = paired(frame, (label, "tier"), (label, "bare")) if not row["bare_built"] else None
        row.update(ratio=r.value if r else float("nan"), ratio_lo=r.ci_low if r else float("nan"),
                   ratio_hi=r.ci_high if r else float("nan"), ratio_n=r.n if r else 0,
                   ratio_coverage=r.coverage if r else float("nan"), ratio_censored=r.censored if r else 0)
        rows.append(row)
    return pd.DataFrame(rows)


def pays(lo: float, hi: float) -> str:
    """The tier's verdict in a cell from its ratio's CI: `pays` (wholly below 1 - NOISE), `costs`
    (wholly above 1 + NOISE), `noise` (the CI reaches into 1 +- NOISE), `n/a` (no ratio:
    nothing to recover on the bare disk)."""
    if not (lo == lo and hi == hi):
        return "n/a"
    if hi < 1 - NOISE:
        return "pays"
    if lo > 1 + NOISE:
        return "costs"
    return "noise"


def advice_pairs(cfg: dict[str, Any]) -> dict[str, tuple[tuple[Cell, str], tuple[Cell, str]]]:
    """The seed's advice as (cell, arm) over (cell, arm):
    ssd: the tier over the bare SSD (the SSD cell: the rest at the seed's machine);
    ram_first: the bare disk with one more RAM module (1.33x) over the tier at the seed's RAM;
    fast_stick: the tier with the fast stick over the tier with the seed's stick."""
    c = center(cfg)
    ssd = dataclasses.replace(c, disk_profile=SSD)
    return {"ssd": ((ssd, "tier"), (ssd, "bare")),
            "ram_first": ((dataclasses.replace(c, ram_x=MORE_RAM), "bare"), (c, "tier")),
            "fast_stick": ((dataclasses.replace(c, cache_profile=FAST_STICK), "tier"), (c, "tier"))}


def advice(frame: pd.DataFrame, cfg: dict[str, Any]) -> dict[str, Estimate]:
    """The seed's advice as per-round ratios between cells (advice_pairs), where the run has them."""
    have = {c.label for c in cells(cfg)} & set(frame["cell"])
    out: dict[str, Estimate] = {}
    for key, ((ca, aa), (cb, ab)) in advice_pairs(cfg).items():
        if ca.label in have and cb.label in have and (ca, aa) != (cb, ab):
            e = paired(frame, (ca.label, aa), (cb.label, ab))
            if e:
                out[key] = e
    return out


def axes(summary: pd.DataFrame, cfg: dict[str, Any]) -> dict[str, pd.DataFrame]:
    """Per factor, the summary rows of the cells that differ from the seed's machine in that
    factor only (and the center), in level order: the map's one-factor slices."""
    c, lv = center(cfg), levels(cfg)
    out = {}
    for f in FACTORS:
        if len(lv[f]) < 2:
            continue
        want = [dataclasses.replace(c, **{f: v}).label for v in lv[f]]
        rows = summary.set_index("cell").reindex([w for w in want if w in set(summary["cell"])]).reset_index()
        if len(rows) >= 2:
            out[f] = rows
    return out


FACTOR_WORDS = {"disk_profile": "paging disk", "cache_profile": "stick", "ram_x": "RAM (x the seed's 3 GB)",
                "agent_mode": "agent"}


def level_text(factor: str, value: Any) -> str:
    return f"{float(value):g}x" if factor == "ram_x" else str(value)


AXIS_WORDS = {"pays": "paid", "costs": "cost time", "noise": "stayed in the noise band",
              "n/a": "had nothing to recover"}


def axis_sentence(factor: str, rows: pd.DataFrame) -> str:
    """Where along one factor the tier stopped paying, from the ratios' CIs (never typed): one
    sentence in words, the ratios and their intervals being the payoff table's and figure's."""
    verdicts = [(level_text(factor, r[factor]), pays(r["ratio_lo"], r["ratio_hi"])) for _, r in rows.iterrows()]
    grouped: dict[str, list[str]] = {}   # levels by verdict, in the factor's order
    for lvl, v in verdicts:
        grouped.setdefault(v, []).append(escape(lvl))
    parts = [f"{AXIS_WORDS[v]} at " + (lvls[0] if len(lvls) == 1 else ", ".join(lvls[:-1]) + " and " + lvls[-1])
             for v, lvls in grouped.items()]
    stop = next((lvl for lvl, v in verdicts if v != "pays"), None)
    head = f"Along the {FACTOR_WORDS[factor]}, the tier " + ", ".join(parts)
    if stop is None:
        return head + ": it paid at every level"
    if stop == verdicts[0][0]:
        return head + f": it did not pay beyond the noise band already at {escape(stop)}"
    return head + f": it stopped paying at {escape(stop)}"


def _entry(v: float, lo: float, hi: float, unit: str, n: int, method: str, coverage: float, censored: int,
           why: str, construction: str = "") -> dict[str, Any]:
    """A measurements.json entry with its interval's coverage, its censoring (the judge calls a
    claim censored in half or more of its trials not measurable here) and, where the sizes make the
    value, why it is by construction."""
    out = readyboost.censored_entry(Estimate(v, lo, hi, n, method, coverage, censored), unit, method, why)
    if construction:
        out["construction"] = construction
    return out


def measurements(summary: pd.DataFrame, adv: dict[str, Estimate], frame: pd.DataFrame | None = None,
                 cfg: dict[str, Any] | None = None) -> dict[str, Any]:
    """payoff.cell.<cell>.<arm>.<back_s|recovery_s>, payoff.cell.<cell>.ratio (the tier over the
    bare disk of METRIC, paired per round), payoff.advice.<ssd|ram_first|fast_stick> (the claims);
    a value the cell's sizes make (nothing pushed out) carries `construction`, a censored one its
    `censored` count and why."""
    out: dict[str, Any] = {}
    what = {"back_s": "working set back in RAM", "recovery_s": "seed 000's recovery criteria"}
    for _, r in summary.iterrows():
        for arm in ARMS:
            for col in ("back_s", "recovery_s"):
                if r[f"{arm}_n"] and (r[f"{arm}_{col}"] == r[f"{arm}_{col}"] or r[f"{arm}_{col}_censored"]):
                    k = int(r[f"{arm}_{col}_censored"])
                    out[f"{NAME}.cell.{r['cell']}.{arm}.{col}"] = _entry(
                        r[f"{arm}_{col}"], r[f"{arm}_{col}_lo"], r[f"{arm}_{col}_hi"], "s", int(r[f"{arm}_n"]),
                        f"median, order statistics ({what[col]})", r[f"{arm}_{col}_coverage"], k,
                        f"{arm} at {r['cell']}: {what[col]} met at the hogs' end (at the start) or not within the "
                        f"watch in {k} of {int(r[f'{arm}_n'])} trials",
                        construction_reason(cfg, r["cell"]) if r[f"{arm}_built"] else "")
        if r["ratio_n"]:
            k = int(r["ratio_censored"])
            out[f"{NAME}.cell.{r['cell']}.ratio"] = _entry(
                r["ratio"], r["ratio_lo"], r["ratio_hi"], "ratio", int(r["ratio_n"]), "paired ratio, order statistics",
                r["ratio_coverage"], k, f"{k} of {int(r['ratio_n'])} rounds at {r['cell']} had an arm's "
                                        f"{METRIC} censored")
    pairs = advice_pairs(cfg) if cfg else {}
    for key, e in adv.items():
        (ca, aa), (cb, ab) = pairs.get(key, ((None, ""), (None, "")))
        built_ = ca is not None and frame is not None and built(frame, ca.label, aa)
        out[f"{NAME}.advice.{key}"] = _entry(
            e.value, e.ci_low, e.ci_high, "ratio", e.n, e.method, e.coverage, e.censored,
            f"{e.censored} of {e.n} rounds had an arm's {METRIC} censored (at the start or > watch)"
            + (f": {ca.label} {aa} over {cb.label} {ab}" if ca is not None else ""),
            construction_reason(cfg, ca.label) if built_ and ca is not None else "")
    return out


def time_text(v: float, lo: float, hi: float, n: int, censored: int, built_: bool) -> str:
    """A table cell: "1.2 [1.0, 1.4]", "0 (by construction)" where the sizes push nothing out,
    "censored k/n" where half or more of the trials are, a censored bound named."""
    if built_:
        return "0 (by construction)"
    if not n or (v != v and not censored):
        return "--"
    if median_censored(censored, n):
        return f"censored {censored}/{n}"

    def one(x: float) -> str:
        return "at the start" if x == readyboost.AT_START else "> watch" if x == readyboost.OVER_WATCH else fmt(x)

    return f"{one(v)} [{one(lo)}, {one(hi)}]" + (f" ({censored} cens.)" if censored else "")


def table(summary: pd.DataFrame) -> pd.DataFrame:
    """The map as a table: one row per cell, its factors, counted trials, each arm's time until
    the working set was back and the tier's paired ratio with their intervals (censored values
    named, by-construction zeros said), whether the tier paid, and the seed's recovery."""
    def times(arm: str, col: str) -> list[str]:
        return [time_text(r[f"{arm}_{col}"], r[f"{arm}_{col}_lo"], r[f"{arm}_{col}_hi"], int(r[f"{arm}_n"]),
                          int(r[f"{arm}_{col}_censored"]), bool(r[f"{arm}_built"])) for _, r in summary.iterrows()]

    def medians(arm: str) -> list[str]:
        """The seed's recovery, the median only: "0.74", "0 (constr.)", or "cens. 8/15"."""
        col = "recovery_s"
        return ["0 (constr.)" if r[f"{arm}_built"] else
                f"cens. {int(r[f'{arm}_{col}_censored'])}/{int(r[f'{arm}_n'])}"
                if median_censored(r[f"{arm}_{col}_censored"], r[f"{arm}_n"]) else
                ("at the start" if r[f"{arm}_{col}"] == readyboost.AT_START else fmt(r[f"{arm}_{col}"]))
                for _, r in summary.iterrows()]

    ratio = [time_text(r["ratio"], r["ratio_lo"], r["ratio_hi"], int(r["ratio_n"]), int(r["ratio_censored"]), False)
             for _, r in summary.iterrows()]
    return pd.DataFrame({
        "Disk": summary["disk_profile"].map(escape), "Stick": summary["cache_profile"].map(escape),
        "RAM": summary["ram_x"].map(lambda x: f"{float(x):g}x"), "Agent": summary["agent_mode"],
        "Trials": [f"{int(a)}/{int(b)}" for a, b in zip(summary["bare_n"], summary["tier_n"], strict=True)],
        "Bare back (s)": times("bare", METRIC), "Tier back (s)": times("tier", METRIC), "Tier / bare": ratio,
        "Tier": [pays(lo, hi) if not median_censored(c, n) else "n/a" for lo, hi, c, n in
                 zip(summary["ratio_lo"], summary["ratio_hi"], summary["ratio_censored"], summary["ratio_n"],
                     strict=True)],
        "Recovery bare/tier (s)": [f"{a}/{b}" for a, b in zip(medians("bare"), medians("tier"), strict=True)],
    })


TABLE_FORMAT = "llllllllll"


def macros(summary: pd.DataFrame, adv: dict[str, Estimate], cfg: dict[str, Any] | None, profile: str,
           skipped: str | None, rejected: pd.DataFrame | None = None,
           tests: pd.DataFrame | None = None) -> dict[str, str]:
    """Every number and every comparative sentence of the section, from the data; `tests`, the
    device tests (device_tests), as a table body."""
    m = {"PayoffProfile": profile, "PayoffStatus": escape(skipped or "ran"),
         "PayoffDeviceTests": device_test_rows(tests) if tests is not None and len(tests) else
         r"\multicolumn{5}{l}{not run here: the test is the native simdisk's, not built for a paper "
         r"from a recording} \\",
         **{f"PayoffQualify{w}{lvl.capitalize()}": (fmt(float(tests.iloc[0][f"{k}_{lvl}"]))
                                                    if tests is not None and len(tests) else "n/a")
            for w, k in (("Read", "random_read_4k"), ("Write", "random_write_512k"))
            for lvl in ("required", "enhanced")},
         "PayoffCells": str(len(summary)), "PayoffNoisePct": fmt(100 * NOISE),
         "PayoffRejected": str(len(rejected)) if rejected is not None else "0",
         "PayoffIntervals": interval_name(list(summary["bare_n"]) + list(summary["ratio_n"]) if len(summary) else [],
                                          latex=True)}
    m.update({k: "n/a" for k in ("PayoffDesign", "PayoffRamMiB", "PayoffWorkingSetMiB", "PayoffHogMiB",
                                  "PayoffFileCacheMiB", "PayoffHogRounds", "PayoffIntendedPct", "PayoffLevels")})
    if cfg:
        d = cell_design(cfg, center(cfg))
        m.update(PayoffDesign=escape(cfg["design"]), PayoffRamMiB=fmt(d.ram / 2**20),
                 PayoffWorkingSetMiB=fmt(d.working_set / 2**20), PayoffHogMiB=fmt(d.hog / 2**20),
                 PayoffFileCacheMiB=fmt(d.file_cache / 2**20), PayoffHogRounds=str(cfg["hog_rounds"]),
                 PayoffIntendedPct=f"{100 * d.intended_share:.0f}",
                 PayoffLevels=escape("; ".join(f"{FACTOR_WORDS[f]}: " + ", ".join(level_text(f, v) for v in vs)
                                               for f, vs in levels(cfg).items())))
    sl = axes(summary, cfg) if cfg and len(summary) else {}
    m["PayoffAxesSentence"] = (". ".join(axis_sentence(f, rows) for f, rows in sl.items())
                               if sl else "No factor was varied in this run")
    ram_built = False
    if cfg and len(summary):
        more = dataclasses.replace(center(cfg), ram_x=MORE_RAM).label
        ram_built = bool((summary.loc[summary["cell"] == more, "bare_built"]).any())
    # The advice in words (a ratio above 1: the working set came back more slowly); the ratios
    # with their intervals are the verdict table's rows PO1-PO3 (and PO1's the payoff table's).
    words = {"ssd": ("with the SSD, the working set", "behind the tier than on the bare SSD"),
             "ram_first": ("on the bare disk with one more RAM module (1.33x), the working set",
                           "than behind the tier at the seed's RAM"),
             "fast_stick": ("behind the tier with the fast stick, the working set", "than with the seed's stick")}
    for key, (subject, than) in words.items():
        name = "Payoff" + "".join(p.capitalize() for p in key.split("_")) + "Sentence"
        e = adv.get(key)
        lead = subject.rsplit(",", 1)[0]
        m[name] = ("this run has no such pair of cells" if e is None else
                   f"{lead}, the ratio is 0 by construction: the working set and both hogs fit "
                   "in that RAM, so nothing was pushed out" if key == "ram_first" and ram_built else
                   f"{lead}, the ratio is not measurable here: {e.censored} of {e.n} rounds "
                   "censored" if median_censored(e.censored, e.n) else
                   finding(e, f"{subject} came back", "more slowly", "faster", than,
                           f"{subject} was not shown to come back faster or more slowly {than}"))
    return m


def map_panels(summary: pd.DataFrame, cfg: dict[str, Any]) -> dict[str, tuple[pd.DataFrame, list[str]]]:
    """The map's panels for map_figure: per factor this run varied (axes), its words ->
    the summary rows of its cells in level order and the levels' labels; {} when none was."""
    # a censored bound (at the start, > watch) is no point to draw: the map leaves it out
    finite = summary.replace([np.inf, -np.inf], np.nan)
    return {FACTOR_WORDS[f]: (rows, [level_text(f, v) for v in rows[f]]) for f, rows in axes(finite, cfg).items()}


def map_figure(panels: dict[str, tuple[pd.DataFrame, list[str]]], noise: float, title: str = "",
               metric: str = "back_s", ylabel: str = "working set back in RAM (s)") -> plots.plt.Figure:
    """The payoff map: one column per factor (`panels`: title -> (one summary row per cell in
    level order, the levels' labels)); on top each cell's `metric` on the bare disk and behind
    the tier (medians with their CIs), below the tier's paired ratio to the bare disk, one point
    per cell with its CI named by the coverage its rows carry (`ratio_coverage`), against the
    noise band 1 +- `noise` (shaded); no panel: a message."""
    if not panels:
        return plots.message("no factor varied: nothing to map")
    n = len(panels)
    fig, axs = plots.plt.subplots(2, n, figsize=(3.2 * n, 4.6), squeeze=False, sharey="row")
    colours = plots.sns.color_palette()
    ratio_ci = plots.coverages_label([c for rows, _ in panels.values() if "ratio_coverage" in rows
                                      for c in rows["ratio_coverage"]])
    for j, (name, (rows, labels)) in enumerate(panels.items()):
        xs = np.arange(len(rows))
        top, bottom = axs[0][j], axs[1][j]
        for k, (arm, word) in enumerate((("bare", "bare disk"), ("tier", "tier"))):
            y = rows[f"{arm}_{metric}"].to_numpy(float)
            err = np.vstack([y - rows[f"{arm}_{metric}_lo"].to_numpy(float),
                             rows[f"{arm}_{metric}_hi"].to_numpy(float) - y])
            top.errorbar(xs + (k - 0.5) * 0.15, y, yerr=err, fmt="o", capsize=3, color=colours[k], label=word)
        r = rows["ratio"].to_numpy(float)
        err = np.vstack([r - rows["ratio_lo"].to_numpy(float), rows["ratio_hi"].to_numpy(float) - r])
        bottom.axhspan(1 - noise, 1 + noise, color="0.85", zorder=0, label=f"1 $\\pm$ {100 * noise:g} %")
        bottom.axhline(1, color="0.4", linewidth=0.8)
        bottom.errorbar(xs, r, yerr=err, fmt="s", capsize=3, color=colours[2], label=f"tier / bare, {ratio_ci}")
        for ax in (top, bottom):
            ax.set_xticks(xs, labels, rotation=30, ha="right", fontsize="x-small")
            ax.set_xlim(-0.5, len(rows) - 0.5)
        top.set_title(name, fontsize="small")
        if j == 0:
            top.set_ylabel(ylabel, fontsize="small")
            bottom.set_ylabel("tier / bare disk")
            top.legend(frameon=False, fontsize="x-small")
            bottom.legend(frameon=False, fontsize="x-small")
    if title:
        fig.suptitle(title, fontsize="small")
    fig.tight_layout()
    return fig


def analyse(results_dir: Path | str, profile: str) -> harness.Analysis:
    """The map of cells, the advice's ratios, every stick's device test, the figure and macros."""
    res = harness.open_results(results_dir)
    out, trials_, skipped, cfg = res.out, res.trials, res.skipped, res.cfg
    summary = summarise(trials_, cfg) if len(trials_) else trials_
    adv = advice(trials_, cfg) if len(trials_) else {}
    sticks = [n for n in profile_names() if profile_value(n, "model") == "flash"]
    notes = []
    try:
        tests = device_tests(sticks + (list(cfg["disk_profiles"]) if cfg else []))
    except ToolError as exc:  # the paper from a recording builds no native tool
        tests, notes = None, [f"ReadyBoost's device test not shown: {exc}"]
    tab = table(summary) if len(summary) else None

    def figure() -> plots.plt.Figure:
        return map_figure(map_panels(summary, cfg), NOISE, f"payoff, {profile} profile", METRIC)

    return harness.Analysis(
        res, res.describe(profile), summary,
        measurements(summary, adv, trials_, cfg) if len(summary) else {},
        macros(summary, adv, cfg, profile, skipped, res.rejected, tests),
        harness.Table(tab, TABLE_FORMAT) if tab is not None else None, {NAME: figure},
        shown={"the seed's advice as ratios between cells (value, interval named by its coverage, n, censored)":
               pd.DataFrame([{"advice": k, "value": e.value, "ci_low": e.ci_low, "ci_high": e.ci_high,
                              "interval": e.label, "n": e.n, "censored": e.censored} for k, e in adv.items()]),
               "ReadyBoost's device test (simdisk qualify: 4 KB random reads, 512 KB random writes, MB/s)":
               tests if tests is not None else "not run: no simdisk here",
               "rejected trials": harness.rejected(out)[["trial_id", "cell", "arm", "invalid_reason"]]
               if len(res.rejected) else "none",
               "outliers (Tukey)": harness.outliers(trials_, ["cell", "arm"], "recovery_s")},
        notes=notes)


EXPERIMENT = harness.Experiment(
    own_hardware={"payoff.cell.today+": "this machine's disk"},
    name=NAME, analyse=analyse, paper_order=65, seeds=("000",), configurations=configurations, trial=run_trial,
    metric=readyboost.coded_metric(METRIC), columns=COLUMNS, required_columns=tuple(recovery.REQUIRED_COLUMNS),
    tools=lambda cfg: recovery.TOOLS, skip_reason=skip_reason, validity=validity,
    warmups=lambda cfg: configurations(cfg)[:1], prepare=_prepare, cleanup=_cleanup, split=split, check=check,
    cell_of=lambda params: cell_of(params).label,
    requires=harness.Requirements(root=True, fuse=True))
