"""What every experiment's `run` does around its own trial function: the skip check (written to
results/<name>/skipped.txt), provenance, a state session when the experiment changes system
state, adaptive repetitions in a seeded interleaved order, and the trials.csv the notebook
reads; plus the matching `load`, and the analysis half: every experiment's `analyse` makes an
`Analysis` of its results directory, which `write_analysis` writes.

An experiment module supplies its configurations, a name for each, a trial function, the
scalar result fields it wants as columns and its `analyse`.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from pagelab.claims import registry
from pagelab.core import latex, plots, records
from pagelab.core.stats import tukey_outliers
from pagelab.run import devices, progress, sequential, trials, trialtimes
from pagelab.run.tools import tool_path
from pagelab.system import state
from pagelab.system.config import (
    device_profiles,
    experiments,
    load_schema,
    renamed_block,
    renamed_columns,
    run_hash,
    tier_of,
)
from pagelab.system.provenance import provenance

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Cfg = dict[str, Any]


def _no_reason(cfg: Cfg) -> str | None:
    return None


def _no_warmups(cfg: Cfg) -> list[dict[str, Any]]:
    return []


def _always(cfg: Cfg) -> bool:
    return True


def conf_label(conf: dict[str, Any]) -> str:
    """A configuration's name: its values joined by '-' ({"arm": "hdd"} -> hdd)."""
    return "-".join(str(v) for v in conf.values())


@dataclass(frozen=True)
class Requirements:
    """What an experiment needs from the machine (read by the appendix and the tests): root,
    FUSE, zram. What it needs from the config (the keys whose sizes become memory cgroups or
    working sets, the keys that name device profiles) its schema fragment says, with
    `resource: memory` and `resource: device` (config.resource_keys)."""
    root: bool = False
    fuse: bool = False
    zram: bool = False


@dataclass(frozen=True)
class Experiment:
    """One experiment, described once at the bottom of its module (like stress-ng's
    stressor_info_t): what `pagelab trial NAME` runs, through one harness (`run`)."""
    name: str
    seeds: tuple[str, ...]                       # the seed articles it reproduces
    configurations: Callable[[Cfg], list[dict[str, Any]]]
    trial: Callable[[state.State | None, Cfg, trials.Trial, Path], dict[str, Any]]
    metric: Callable[[dict[str, Any]], float]    # what adaptive repetitions watch
    columns: tuple[str, ...]                     # result fields kept in trials.csv
    required_columns: tuple[str, ...]            # what the tidy check demands (result.<field>)
    tools: Callable[[Cfg], list[str]]            # native tools it runs (their versions are provenance)
    # its results directory and the profile -> its Analysis (what the notebook shows and writes)
    analyse: Callable[[Path | str, str], Analysis]
    requires: Requirements = Requirements()
    conf_name: Callable[[dict[str, Any]], str] = conf_label
    skip_reason: Callable[[Cfg], str | None] = _no_reason
    validity: trials.Validity | None = None
    warmups: Callable[[Cfg], list[dict[str, Any]]] = _no_warmups
    changes_state: Callable[[Cfg], bool] = _always
    prepare: Callable[[Cfg, Path], dict[str, Any]] | None = None  # before the trials; its dict is provenance
    cleanup: Callable[[Cfg, Path], None] | None = None             # after them, whatever happened
    finish: Callable[[Cfg, Path], None] | None = None              # extra outputs once all trials are done
    note: Callable[[Cfg], str | None] | None = None                # a partial skip, for skipped.txt
    paper_order: int = 100                                         # where its section stands in the paper
    # On a fleet, the settings over its block that give each host its share of one run
    # (payoff's grid: disjoint cells; readyboost: disjoint arms), from the resolved block and the
    # hosts that run it; None: every host runs the whole experiment.
    split: Callable[[Cfg, list[str]], dict[str, dict[str, Any]]] | None = None
    # The cell a trial belongs to, from its params (a configuration): the unit `split` deals to
    # hosts, each cell to one host (payoff: its cell's label; readyboost: its arm). The fleet's
    # plan times a split run per cell (pagelab.run.fleetplan), and the merge of the hosts' shares
    # checks that no cell came from two hosts (pagelab.run.fleet.merge_split).
    cell_of: Callable[[dict[str, Any]], str] | None = None
    # What the schema cannot say about a block (device tests, combinations), checked before
    # anything runs or changes: ConfigError (exit 2) naming the key.
    check: Callable[[Cfg], None] | None = None
    # Its measurements taken on this machine's own disk or CPU, not on an emulated device built
    # from hardware a seed names: measurement key prefix -> which hardware (the claims' rule for
    # unnamed hardware: load_claims).
    own_hardware: dict[str, str] = field(default_factory=dict)
    # How the statistic of each measurement key a claim reads is computed from the trials so far
    # (sequential.Measure): the arms those claims judge stop once their verdicts are settled.
    # A key without one holds no arm (its arms stop on width).
    measures: Callable[[Cfg], dict[str, sequential.Measure]] = lambda cfg: {}

    def run(self, cfg: Cfg, outdir: Path, scratch_dir: Path,
            keep: trialtimes.Keep | None = None) -> pd.DataFrame:
        """Skip check, preparation, the trials (execute), clean-up, extra outputs. An experiment
        that changes state runs all but the extra outputs in one state session, which journals
        its scratch files (`State.scratch`): a killed run's are removed by the next recovery.
        `keep` is what the time left counts of a recording (execute)."""
        if self.check is not None:
            self.check(cfg)
        reason = self.skip_reason(cfg)
        extra: dict[str, Any] = {}
        changes = reason is None and self.changes_state(cfg)
        with state.session() if changes else nullcontext(None) as st:
            if st is not None:
                st.scratch(scratch_dir, self.name)
            try:
                # the trials' state (an emulated disk kept across trials, say) is undone before
                # the clean-up removes the directories it lived in
                with st.scope() if st is not None else nullcontext(None):
                    if reason is None and self.prepare is not None:
                        extra = self.prepare(cfg, scratch_dir)
                    frame = execute(
                        self.name, cfg, outdir, scratch_dir, [] if reason else self.configurations(cfg),
                        self.conf_name, lambda st, t, scratch: self.trial(st, cfg, t, scratch), self.metric,
                        list(self.columns), self.tools(cfg), skip_reason=reason, changes_state=changes,
                        warmups=self.warmups(cfg) if reason is None else [], extra_provenance=extra,
                        validity=self.validity, st=st, measures=self.measures(cfg) if reason is None else {},
                        keep=keep)
            finally:
                if self.cleanup is not None:
                    self.cleanup(cfg, scratch_dir)
        if reason is None and self.finish is not None:
            self.finish(cfg, outdir)
        note = self.note(cfg) if self.note is not None else None
        if note and not reason:
            records.write_text_atomic(outdir / "skipped.txt", note + "\n")
        return frame


def descriptor(name: str) -> Experiment:
    """The EXPERIMENT of pagelab.experiments.<name>."""
    return importlib.import_module(f"pagelab.experiments.{name}").EXPERIMENT


def own_hardware() -> dict[str, str]:
    """Every experiment's own_hardware in one table (measurement key prefix -> which of this
    machine's hardware); ValueError for a prefix outside its experiment's keys."""
    table: dict[str, str] = {}
    for name in experiments():
        for prefix, what in descriptor(name).own_hardware.items():
            if not prefix.startswith(name + "."):
                raise ValueError(f"{name}: own_hardware prefix {prefix!r} is not one of its keys ({name}.*)")
            table[prefix] = what
    return table


def load_claims(path: Path | str | None = None) -> pd.DataFrame:
    """The claims file's rows (registry.load_claims), held to the rule for unnamed hardware
    with every experiment's own hardware (its descriptor's `own_hardware`): ValueError naming the
    file and the claims that break it. What the verdicts (pagelab.claims.judge) judge."""
    frame = registry.load_claims(path)
    problems = registry.hardware_problems(frame, own_hardware())
    if problems:
        raise ValueError(f"{path or registry.claims_path()}: " + "; ".join(problems))
    return frame


def execute(
    name: str,
    cfg: dict[str, Any],
    outdir: Path,
    scratch_dir: Path,
    configurations: list[dict[str, Any]],
    conf_name: Callable[[dict[str, Any]], str],
    run_trial: Callable[[state.State | None, trials.Trial, Path], dict[str, Any]],
    metric: Callable[[dict[str, Any]], float],
    scalars: list[str],
    tools: list[str],
    skip_reason: str | None = None,
    changes_state: bool = True,
    warmups: list[dict[str, Any]] | None = None,
    extra_provenance: dict[str, Any] | None = None,
    validity: trials.Validity | None = None,
    st: state.State | None = None,
    measures: dict[str, sequential.Measure] | None = None,
    keep: trialtimes.Keep | None = None,
) -> pd.DataFrame:
    """Run the experiment (or record why it is skipped) and write trials.csv: one row per
    trial with its configuration, status, validity (`valid`, `invalid_reason`: see
    trials.Validity) and the `scalars` of its result. The trials run in the state session `st`,
    or in one of their own when the experiment changes state and none is given. The arms that
    the claims judged at the block's profile read through `measures` stop on their verdicts as
    well as on width (sequential); provenance.json's `stopping_rule` says which. The progress
    lines' time left counts only the recorded trials `keep` keeps (progress.for_run; `pagelab
    trial` passes pagelab.experiments.replay.kept, which imports this module, so it is handed in)."""
    outdir.mkdir(parents=True, exist_ok=True)
    (outdir / "skipped.txt").unlink(missing_ok=True)
    also = tier_of(cfg)  # the tier model, which no setting names
    profiles = device_profiles(name, cfg, also=also)  # the profiles' digests, which the run hash covers
    if skip_reason:
        records.write_text_atomic(outdir / "skipped.txt", skip_reason + "\n")
        cols = ["trial_id", "order", "warmup", "status", "valid", "invalid_reason",
                *sorted({k for c in configurations for k in c})]
        records.write_text_atomic(outdir / "trials.csv", ",".join(cols) + "\n")
        prov = provenance(run_hash(name, cfg, also=also))
        if profiles:
            prov["device_profiles"] = profiles
        records.write_json_atomic(outdir / "provenance.json", prov)
        return pd.DataFrame(columns=cols)
    scratch_dir = scratch_dir.resolve()
    scratch_dir.mkdir(parents=True, exist_ok=True)
    prov = provenance(run_hash(name, cfg, also=also), tools={t: tool_path(t) for t in tools}, disk_path=scratch_dir)
    if profiles:
        prov["device_profiles"] = profiles
    prov.update(extra_provenance or {})
    reps = cfg["repetitions"]
    held, unheld = sequential.judges(name, registry.load_claims(), measures or {}, cfg.get("profile", "quick"))
    rule = sequential.rule(reps, held)
    prov["stopping_rule"] = {"looks": rule.looks(), "interim_level": rule.level(), "margin_pct": rule.margin_pct,
                             "judged": sorted({f"{j.claim}: {'/'.join(j.measure.confs)}" for j in held}),
                             "on_width": unheld}

    watch = progress.for_run(name, cfg, [conf_name(c) for c in configurations], prov,
                             log=lambda line: print(line, file=sys.stderr, flush=True), keep=keep)
    watch.begin()
    own = state.session() if changes_state and st is None else nullcontext(st)
    with own as st:
        def run_one(t: trials.Trial) -> dict[str, Any]:
            if st is not None:
                st.stop_if_signalled()
            mark = len(st.journal.entries()) if st is not None else 0

            def restored() -> bool:
                """After a failure: undo what the trial left (its scopes undo their own); a
                restore that fails stops the run."""
                if st is None or len(st.journal.entries()) <= mark:
                    return True
                try:
                    with st.held():
                        state.restore(st.journal, keep=mark)
                except state.StateError:
                    return False
                return True

            # a failed paging device or native tool: invalid, once the trial's state is restored
            return devices.watched(lambda: run_trial(st, t, scratch_dir), restored=restored)

        recs, stops = trials.run_adaptive(
            name, configurations, conf_name, run_one, metric, outdir, prov,
            seed=cfg["rng_seed"], n_min=reps["n_min"], n_max=reps["n_max"], ci_pct=reps["ci_pct"], warmups=warmups,
            validity=devices.device_first(validity), progress=watch,
            max_invalid_share=reps.get("max_invalid_share", max_invalid_share_default()), verdicts=rule)
    watch.end()
    rows = []
    for r in recs:
        res = r.get("result", {})
        rows.append({"trial_id": r["trial_id"], "order": r["order"], "warmup": r["warmup"], "status": r["status"],
                     "valid": bool(r.get("valid", True)), "invalid_reason": r.get("invalid_reason", ""),
                     **r["params"], "seed": r["seed"], "start": r["start"], "end": r["end"],
                     **{k: res.get(k) for k in scalars}})
    frame = pd.DataFrame(rows).sort_values("order").reset_index(drop=True)
    bad = frame[frame["status"] != "ok"]
    if len(bad):
        raise trials.TrialFailed(f"{len(bad)} trial(s) failed: {', '.join(bad['trial_id'])}")
    records.write_text_atomic(outdir / "trials.csv", frame.to_csv(index=False))
    records.write_json_atomic(outdir / "stopping.json", [s.__dict__ for s in stops])
    records.write_json_atomic(outdir / "provenance.json", prov)
    return frame


def max_invalid_share_default() -> float:
    """The schema's default of repetitions.max_invalid_share (a block recorded before the key
    existed, or a test's own, has none)."""
    return float(load_schema()["definitions"]["repetitions"]["properties"]["max_invalid_share"]["default"])


def _read_trials(results_dir: Path | str) -> tuple[pd.DataFrame, str | None]:
    d = Path(results_dir)
    skipped = (d / "skipped.txt").read_text().strip() if (d / "skipped.txt").exists() else None
    frame = pd.read_csv(d / "trials.csv", keep_default_na=False, na_values=[""])
    frame.columns = renamed_columns(d.name, list(frame.columns))  # a recording's old names: today's
    if "valid" not in frame.columns:  # recorded before validity was checked: nothing was judged
        frame["valid"] = True
        frame["invalid_reason"] = ""
    frame["invalid_reason"] = ["" if pd.isna(v) else str(v) for v in frame["invalid_reason"]]
    frame["valid"] = frame["valid"].map(lambda v: str(v).strip().lower() in ("true", "1"))
    return frame, skipped


def counted_mask(frame: pd.DataFrame) -> pd.Series:
    """The trials that count as results: finished, not warm-ups, valid."""
    if frame.empty:
        return pd.Series(dtype=bool)
    return (frame["status"] == "ok") & (~frame["warmup"].astype(bool)) & frame["valid"].astype(bool)


def load(results_dir: Path | str) -> tuple[pd.DataFrame, str | None]:
    """The counted trials (status ok, warm-ups excluded, valid) and the skip reason, if any."""
    frame, skipped = _read_trials(results_dir)
    if len(frame):
        frame = frame[counted_mask(frame)].copy()
    return frame, skipped


def rejected(results_dir: Path | str, by: list[str] | None = None) -> pd.DataFrame:
    """The trials that ran but were not counted because their manipulation did not happen,
    with their reasons; with `by`, one row per configuration: by..., rejected, reasons."""
    frame, _ = _read_trials(results_dir)
    if len(frame):
        frame = frame[(frame["status"] == "ok") & (~frame["warmup"].astype(bool)) & (~frame["valid"])]
    if by is None:
        return frame.copy()
    if frame.empty:
        return pd.DataFrame(columns=[*by, "rejected", "reasons"])
    return (frame.groupby(by, sort=True)["invalid_reason"]
            .agg(rejected="size", reasons=lambda r: "; ".join(sorted(set(r))))
            .reset_index())


@dataclass
class Results:
    """What a notebook starts from: an experiment's results directory read once."""
    out: Path
    trials: pd.DataFrame            # the counted trials (load's)
    skipped: str | None             # results/<name>/skipped.txt, if the experiment did not (fully) run
    cfg: dict[str, Any] | None      # the resolved config block the trials ran with
    provenance: dict[str, Any]
    rejected: pd.DataFrame          # trials that ran but were not counted, with their reasons

    def describe(self, profile: str) -> str:
        return self.skipped or f"{len(self.trials)} counted trials, {len(self.rejected)} rejected, profile {profile}"


def read_json(results_dir: Path | str, name: str) -> Any:
    """A JSON file of a results directory (config.json, modelled.json, ...), or None where the run
    did not write it (an experiment that skipped the part, a recording made before it existed);
    config.json under the current names (a recording keeps its own: config/renames.yaml), the
    directory's name being the experiment's."""
    path = Path(results_dir) / name
    doc = json.loads(path.read_text()) if path.exists() else None
    return renamed_block(Path(results_dir).name, doc) if name == "config.json" and doc else doc


def open_results(results_dir: Path | str,
                 loader: Callable[[Path], tuple[pd.DataFrame, str | None]] | None = None) -> Results:
    """The counted trials (through the experiment's own `loader`, default `load`), the skip
    reason, the config, the provenance and the rejected trials of a results directory."""
    out = Path(results_dir)
    trials_frame, skipped = (loader or load)(out)
    skip_file = out / "skipped.txt"
    if skipped is None and skip_file.exists():
        skipped = skip_file.read_text().strip() or None

    return Results(out, trials_frame, skipped, read_json(out, "config.json"), read_json(out, "provenance.json") or {},
                   rejected(out) if (out / "trials.csv").exists() else pd.DataFrame())


def status_table(skipped: str | None) -> pd.DataFrame:
    """A table's place where an experiment has no counted trials: one line that says why."""
    return pd.DataFrame({"Status": [latex.escape(skipped or "no counted trials")]})


def write_outputs(out: Path | str, macros: dict[str, str], table: pd.DataFrame | None, column_format: str | None,
                  measurements: dict[str, Any], skipped: str | None = None) -> None:
    """A notebook's outputs: table.tex (its status line when there is no table), macros.tex and
    measurements.json, each written atomically."""
    out = Path(out)
    if table is None or table.empty:
        latex.write_table(out / "table.tex", status_table(skipped))
    else:
        latex.write_table(out / "table.tex", table, column_format=column_format)
    latex.write_macros(out / "macros.tex", macros)
    records.write_json_atomic(out / "measurements.json", measurements)


@dataclass(frozen=True)
class Table:
    """A LaTeX table to write: its rows and its column format (None: every column left)."""
    frame: pd.DataFrame
    column_format: str | None = None


@dataclass
class Analysis:
    """What an experiment's `analyse(results_dir, profile)` makes of its results directory, the
    same for every experiment: the notebook template shows it and `write_analysis` writes it."""
    results: Results
    description: str                             # one line: the trials behind it, or why it did not run
    summary: pd.DataFrame                        # the tidy summary the notebook shows first
    measurements: dict[str, Any]                 # measurements.json (what the claims read)
    macros: dict[str, str]                       # macros.tex (every number the paper's text shows)
    table: Table | None                          # table.tex; None: its status line
    figures: dict[str, Callable[[], Figure]]     # <name>.pdf/.png -> its drawing (by pagelab.core.plots)
    tables: dict[str, Table] = field(default_factory=dict)  # further .tex tables by file name
    shown: dict[str, Any] = field(default_factory=dict)     # what the notebook shows beside the summary
    notes: list[str] = field(default_factory=list)          # lines the notebook prints


def write_analysis(analysis: Analysis) -> None:
    """An Analysis' outputs in its results directory, each written to a temporary file and
    renamed: every figure (PDF and PNG; without counted trials, one that says why), the further
    tables, then table.tex, macros.tex and measurements.json (write_outputs)."""
    out = analysis.results.out
    plots.theme()
    for name, draw in analysis.figures.items():
        fig = draw() if len(analysis.summary) else plots.message(analysis.results.skipped or "no counted trials")
        plots.save(fig, out / f"{name}.pdf")
        plots.plt.close(fig)
    for name, t in analysis.tables.items():
        latex.write_table(out / name, t.frame, column_format=t.column_format)
    t = analysis.table
    write_outputs(out, analysis.macros, t.frame if t is not None else None, t.column_format if t is not None else None,
                  analysis.measurements, analysis.results.skipped)


def analyse(results_dir: Path | str, profile: str) -> Analysis:
    """The Analysis of results/<name>/ by the descriptor of the experiment it is named after."""
    return descriptor(Path(results_dir).resolve().name).analyse(results_dir, profile)


ROUNDED = "value, CI, n, the CI's coverage"  # what rounded's tuples hold, for the notebook's heading


def rounded(estimates: dict[str, Any]) -> dict[str, tuple[float, float, float, int, str]]:
    """Paired ratios as the notebook shows them (ROUNDED): value and CI to three decimals, n, and
    the CI named by the coverage it has at that n (Estimate.label: "93.75 % CI")."""
    return {k: (round(e.value, 3), round(e.ci_low, 3), round(e.ci_high, 3), e.n, e.label)
            for k, e in estimates.items()}


def entry(value: float, lo: float, hi: float, unit: str, n: int, method: str,
          coverage: float | None = None) -> dict[str, Any]:
    """One measurements.json entry: what pagelab.claims.judge reads (value, its CI, unit, the
    counted trials behind it, and how the interval was made), and the interval's coverage where
    it is not that of an order-statistic interval of n values (claims.coverage computes that)."""
    out = {"value": float(value), "ci_low": float(lo), "ci_high": float(hi), "unit": unit, "n": int(n),
           "method": method}
    return out if coverage is None else {**out, "coverage": float(coverage)}


def pairs(frame: pd.DataFrame, by: str, metric: str, a: str, b: str) -> tuple[list[float], list[float]]:
    """The metric of arm `a` and arm `b` (values of column `by`) paired round by round: the
    k-th counted trial of a (in trial order) with the k-th of b; the longer arm's extra trials
    are left out. For stats.paired_ratio_ci."""
    xa = frame[frame[by] == a].sort_values("order")[metric].tolist()
    xb = frame[frame[by] == b].sort_values("order")[metric].tolist()
    n = min(len(xa), len(xb))
    return xa[:n], xb[:n]


@contextmanager
def work_dir(path: Path) -> Iterator[Path]:
    """A trial's work directory, made on entry and removed on exit, also when the trial ends in
    an exception (a SIGTERM becomes one). Inside a state session it is journaled in a scope of
    its own (`State.work_dir`): open it before the trial's state scope (`with work_dir(..) as w,
    st.scope():`) so the unmounts and swapoffs come first, and after kill -9 the next run's
    recovery removes it."""
    st = state.current()
    if st is not None:
        with st.scope():
            yield st.work_dir(path)
        return
    path.mkdir(parents=True, exist_ok=True)
    try:
        yield path
    except BaseException:
        try:  # the exception on its way is the one reported
            clean_dir(path)
        except (OSError, state.StateError):
            pass
        raise
    clean_dir(path)


def clean_dir(path: Path) -> None:
    """Remove a work directory and what is left in it (never through a mount: state.remove_tree)."""
    state.remove_tree(path)


def outliers(frame: pd.DataFrame, by: list[str], metric: str) -> pd.DataFrame:
    """Tukey's labels for `metric` within each group of `by` (mild: beyond 1.5 IQR, severe:
    beyond 3): the trials so labelled. Reported, never removed. No trials: `frame` as it is,
    which is what an analysis shows then."""
    if frame.empty:
        return frame
    labelled = []
    for _, g in frame.groupby(by, sort=True):
        labelled.append(g.assign(tukey=tukey_outliers(g[metric]) if len(g) >= 4 else [""] * len(g)))
    out = pd.concat(labelled)
    return out[out["tukey"] != ""][["trial_id", *by, metric, "tukey"]]
