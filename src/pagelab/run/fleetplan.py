"""A fleet planned from recorded durations (`pagelab fleet plan`): which job runs where and when,
and the wall time that predicts.

The unit is the *cell*: what the fleet schedules as one job. A cell is one experiment's trials on
one host (one `fleet_trial` job), or, for an experiment whose run the fleet splits between hosts
(its descriptor's `split`: payoff's grid cells, readyboost's arms), one cell of it, as its
descriptor's `cell_of` names a trial's cell. A cell's duration is what its trials took in a
recorded run, read by pagelab.run.trialtimes.trial_times (as a run's time left is, from the
records `pagelab time` reads): each trial's end minus its start, plus the pause before it when
shorter than trialtimes.STOP_GAP_S (the run's own bookkeeping between trials); a longer pause is
a run that was stopped and resumed, not the job's time. Given `keep`
(pagelab.experiments.replay.kept, as `pagelab fleet plan` gives it), only the trials that
today's stopping rule would run count: a recording made under an earlier rule may hold more.

The schedule is Graham's LPT rule (R. L. Graham, "Bounds on multiprocessing timing anomalies",
SIAM J. Appl. Math. 17(2), 1969): the cells sorted longest first, each given to the host that is
free first among those allowed to run it. On N identical hosts its makespan is at most
(4/3 - 1/(3N)) times the optimum, and never below the lower bound max(longest cell, total / N).
A cell may be restricted to some hosts (a fleet host's own `experiments`, or a job that must run
on its host); LPT then picks the least-loaded allowed host, and the bound above no longer holds.
Every job costs JOB_OVERHEAD_S on top of its trials, and every run RUN_OVERHEAD_S once.

A split run's cells are dealt to the hosts that run it by the same rule (`deal`): LPT over the
cells' recorded durations (`recorded_cells`), so that the hosts' shares of it take about as long.
Not for: running anything; workflow/rules/fleet.smk submits the jobs in the plan's order.
"""

from __future__ import annotations

import functools
import json
import statistics
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pagelab.data.recording import RecordingError, machine_slug, recorded_dir
from pagelab.run.trialtimes import Keep, TimingError, each_seconds, trial_times
from pagelab.system.config import BLOCK_EXTRAS, PROFILES, check_block, renamed_block

# What one fleet job costs beyond its trials, measured on the local three-node Slurm cluster
# (workflow/scripts/local_slurm.py, tests/test_slurm.py's light matrix, five jobs, which prints
# it): per node, Slurm's span from its first job's start to its last job's end (squeue) less the
# jobs' trial spans (first start to last end), per job; 11 to 13 s in one run, 16 to 19 s in
# another with the machine busier, so 14 s (the light matrix's jobs are mostly this). That is Python's and
# `pagelab fleet trial`'s start, `pagelab state recover`, the trial process's set-up before its
# first trial and its end after the last, and Slurm's start of the node's next job.
JOB_OVERHEAD_S = 14.0
# What one run costs once, measured there too: Snakemake's start to the first job's start on
# Slurm (parsing, the DAG, the config jobs, the submission) and the last job's end to
# Snakemake's exit (its next status check); 10 s and 14 s in those runs.
RUN_OVERHEAD_S = 12.0


class PlanError(RecordingError):
    """Bad input to the plan (no recording, no hosts, N < 1): exit 2, one line, as a bad
    recording."""


@dataclass(frozen=True)
class Cell:
    """One job of the fleet: `name` (experiment, experiment[cell], or host/experiment for a job
    bound to its host), its recorded seconds, and
    the hosts allowed to run it (empty: any)."""
    name: str
    seconds: float
    hosts: tuple[str, ...] = ()


@dataclass
class Slot:
    cell: Cell
    host: str
    start: float
    end: float


@dataclass
class Plan:
    hosts: list[str]
    slots: list[Slot]                                  # in submission order (LPT's)
    overhead: float
    run_overhead: float
    loads: dict[str, float] = field(default_factory=dict)

    @property
    def makespan(self) -> float:
        return max(self.loads.values(), default=0.0)

    @property
    def wall(self) -> float:
        """The predicted wall time: the busiest host's jobs, and the run's own start and end."""
        return self.makespan + self.run_overhead

    @property
    def lower_bound(self) -> float:
        """No schedule of these jobs on these hosts ends before this: the longest job, the total
        shared evenly, and the jobs bound to one host summed per host."""
        costs = [s.end - s.start for s in self.slots]
        bound = {h: sum(s.end - s.start for s in self.slots if s.cell.hosts == (h,)) for h in self.hosts}
        return max(max(costs, default=0.0), sum(costs) / max(1, len(self.hosts)), max(bound.values(), default=0.0))

    @property
    def restricted(self) -> bool:
        """Whether some job may not run on every host (Graham's bound is for identical hosts)."""
        return any(s.cell.hosts and set(self.hosts) - set(s.cell.hosts) for s in self.slots)

    @property
    def bottleneck(self) -> Slot | None:
        """The last job of the busiest host (the one that ends the run)."""
        return max(self.slots, key=lambda s: (s.end, -self.slots.index(s)), default=None)


def lpt(cells: Sequence[Cell], hosts: Sequence[str], overhead: float = JOB_OVERHEAD_S,
        run_overhead: float = RUN_OVERHEAD_S) -> Plan:
    """Graham's LPT: cells longest first (ties by name), each to the allowed host free first
    (ties by the hosts' order). A cell no host may run is a PlanError."""
    if len(hosts) < 1:
        raise PlanError(f"a fleet needs at least one host, not {len(hosts)}")
    if len(set(hosts)) != len(hosts):
        raise PlanError("a host is named twice")
    loads = {h: 0.0 for h in hosts}
    slots = []
    for c in sorted(cells, key=lambda c: (-c.seconds, c.name, c.hosts)):
        allowed = [h for h in hosts if not c.hosts or h in c.hosts]
        if not allowed:
            raise PlanError(f"{c.name}: none of its hosts ({', '.join(c.hosts)}) is in the fleet")
        host = min(allowed, key=lambda h: (loads[h], hosts.index(h)))
        start = loads[host]
        loads[host] = start + c.seconds + overhead
        slots.append(Slot(c, host, start, loads[host]))
    return Plan(list(hosts), slots, overhead, run_overhead, loads)


def graham_bound(n_hosts: int) -> float:
    """LPT's worst case over the optimum on n identical hosts: 4/3 - 1/(3n) (Graham 1969)."""
    if n_hosts < 1:
        raise PlanError(f"--hosts must be at least 1, not {n_hosts}")
    return 4 / 3 - 1 / (3 * n_hosts)


def _each_seconds(recs: list[dict[str, Any]]) -> list[tuple[dict[str, Any], float]]:
    """Each trial's share of the run's time (trialtimes.each_seconds); PlanError for a start or
    end that is no time."""
    try:
        return each_seconds(recs)
    except TimingError as exc:
        raise PlanError(str(exc)) from exc


def trial_seconds(recs: list[dict[str, Any]]) -> float:
    """The time a job spent on these trials: each trial's end minus its start, plus the pauses
    between consecutive trials shorter than trialtimes.STOP_GAP_S."""
    return sum(sec for _, sec in _each_seconds(recs))


def durations(directory: Path | str, cell_of: Callable[[dict[str, Any]], str] | None = None,
              keep: Keep | None = None) -> dict[str, float]:
    """An experiment's recorded durations from its results directory (trials.csv and its trial
    records, trialtimes.trial_times: with `keep`, only the trials today's stopping rule would
    run): {"": seconds} for the whole run, or per cell when `cell_of` names a record's cell (from
    its `params`; a trial without a record, from its trials.csv row). A trial that names no cell
    is a PlanError."""
    d = Path(directory)
    if not (d / "trials.csv").is_file():
        raise PlanError(f"{d}: no trials.csv (no recording of it)")
    try:
        timed = trial_times(d, keep)
    except TimingError as exc:
        raise PlanError(str(exc)) from exc
    if not timed:
        raise PlanError(f"{d / 'trials.csv'}: no trials")
    if cell_of is None:
        return {"": sum(sec for _, sec in timed)}

    def cell(rec: dict[str, Any]) -> str:
        params = rec.get("params") or rec
        try:
            return str(cell_of(params))
        except (KeyError, TypeError, ValueError) as exc:
            raise PlanError(f"{d}: trial {rec.get('trial_id')!r} names no cell ({exc!r})") from exc

    return _by_cell(timed, cell)


def _by_cell(timed: list[tuple[dict[str, Any], float]], cell: Callable[[dict[str, Any]], str]) -> dict[str, float]:
    cells: dict[str, float] = {}
    for r, sec in timed:
        key = cell(r)
        cells[key] = cells.get(key, 0.0) + sec
    return cells


def cell_seconds(recs: list[dict[str, Any]], cell_of: Callable[[dict[str, Any]], str]) -> dict[str, float]:
    """Per cell, its trials' share of the run's time (_each_seconds), summed: the cells add up to
    the run however their trials were interleaved."""
    return _by_cell(_each_seconds(recs), lambda r: cell_of(r.get("params") or r))


def estimates(cells: Sequence[str], seconds: Mapping[str, float]) -> dict[str, float]:
    """Each cell's recorded seconds; a cell the recording lacks, the median of the recorded cells'
    (1 s each when none is recorded: then every cell weighs the same)."""
    known = [seconds[c] for c in cells if c in seconds]
    other = statistics.median(known) if known else 1.0
    return {c: seconds.get(c, other) for c in cells}


def deal(cells: Sequence[str], hosts: Sequence[str], seconds: Mapping[str, float]) -> dict[str, list[str]]:
    """A split run's cells dealt to its hosts by LPT over their recorded seconds (`estimates`):
    every cell to exactly one host, the longest first to the host with the least so far; each
    host's cells in the order of `cells`. PlanError when there are more hosts than cells."""
    if len(hosts) > len(cells):
        raise PlanError(f"{len(hosts)} hosts share {len(cells)} cell(s): name fewer hosts")
    est = estimates(cells, seconds)
    plan = lpt([Cell(c, est[c]) for c in cells], hosts, overhead=0.0, run_overhead=0.0)
    where = {s.cell.name: s.host for s in plan.slots}
    return {h: [c for c in cells if where[c] == h] for h in hosts}


@functools.cache
def recorded_cells(experiment: str, profile: str, cell_of: Callable[[dict[str, Any]], str]) -> dict[str, float]:
    """An experiment's recorded seconds per cell at `profile`, from the recordings in the
    repository (data/recorded/<machine>/<profile>/<experiment>/, the machines in name order, the
    first that has it; not this machine's first, so that a split's shares, which are its hosts'
    config blocks, do not depend on the machine that computes them); {} when none has it."""
    root = recorded_dir()
    for d in sorted(root.glob(f"*/{profile}/{experiment}")) if root.is_dir() else []:
        if (d / "trials.csv").is_file():
            return durations(d, cell_of)
    return {}


def recorded_differences(source: Path | str, experiments: Sequence[str]) -> list[str]:
    """For each experiment recorded in `source`, the settings it ran with that today's schema sets
    otherwise at its profile, in one line ("readyboost: hog_rounds 20, today 10"): its durations
    are those of the recorded settings. The stopping rule's (repetitions) are left out: the plan
    applies today's (pagelab.experiments.replay); so is a key the recording does not name (a setting
    added since, which config/renames.yaml's `added` gives where its old value is known)."""
    out = []
    for e in experiments:
        path = Path(source) / e / "config.json"
        if not path.is_file():
            continue
        ran = renamed_block(e, json.loads(path.read_text()))  # a recording keeps its own names
        now = check_block(e, {"profile": ran.get("profile", "quick")}, machine=False)
        skip = {"repetitions", "profile", *BLOCK_EXTRAS}
        diff = [f"{k} {ran[k]}, today {now.get(k)}" for k in sorted(ran)
                if k not in skip and ran[k] is not None and ran[k] != now.get(k)]
        if diff:
            out.append(f"{e}: " + "; ".join(diff))
    return out


def table(plan: Plan, title: str, target: float | None = None, splittable: Sequence[str] = (),
          notes: Sequence[str] = (), least: Plan | None = None) -> str:
    """The plan as printed: the jobs in submission order with host, start and end, each host's
    load, the predicted wall time, and, when it exceeds `target`, what bounds it; `notes`
    (recorded_differences) under the title: experiments recorded with other settings than today's;
    `least`, the same jobs' plan with every configuration at n_min (replay.fewest): the floor
    of any run under today's rule at the recorded trials' lengths."""
    from pagelab.run.progress import duration
    head = ["order", "cell", "host", "start", "end"]
    rows = [[str(i + 1), s.cell.name, s.host, duration(s.start), duration(s.end)] for i, s in enumerate(plan.slots)]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]
    fmt = lambda cells: "  ".join(c.ljust(w) if i < 3 else c.rjust(w)  # noqa: E731
                                  for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()
    lines = [title, *(f"recorded with other settings than today's (their durations are the recording's): {n}"
                      for n in notes), "", fmt(head), *[fmt(r) for r in rows], ""]
    for h in plan.hosts:
        names = [s.cell.name for s in plan.slots if s.host == h]
        lines.append(f"{h}: {duration(plan.loads[h])} ({len(names)} job(s){': ' if names else ''}{', '.join(names)})")
    lines.append(f"predicted wall time: {duration(plan.wall)} (the busiest host {duration(plan.makespan)} "
                 f"+ the run's start and end {duration(plan.run_overhead)}; per job {duration(plan.overhead)})")
    lines.append(f"lower bound of any schedule: {duration(plan.lower_bound + plan.run_overhead)}" +
                 ("; jobs bound to their hosts" if plan.restricted else
                  f"; LPT is at most {graham_bound(len(plan.hosts)):.4g} x the optimum on identical hosts"))
    if least is not None:
        over = target is not None and least.wall > target
        lines.append(f"at the fewest trials today's rule allows (every configuration at n_min): "
                     f"{duration(least.wall)}" + (f", over {duration(target)}: no run under today's rule meets it "
                                                  "at these trials' lengths, only shorter trials or more hosts"
                                                  if over else ""))
    if target is not None:
        lines.append(verdict(plan, target, splittable))
    return "\n".join(lines) + "\n"


def verdict(plan: Plan, target: float, splittable: Sequence[str] = ()) -> str:
    """Whether the prediction meets `target`, and if not, what bounds it: a job longer than the
    target on its own (which only splitting it could shorten), the total work shared evenly
    (which only more hosts could), or else the busiest host's load (LPT's own loss)."""
    from pagelab.run.progress import duration

    if plan.wall <= target:
        return f"within {duration(target)}: yes"
    why = []
    longest = max(plan.slots, key=lambda s: s.end - s.start)
    if longest.end - longest.start + plan.run_overhead > target:
        base = longest.cell.name.split("[")[0]
        how = ("its cells are separate jobs already" if "[" in longest.cell.name else
               "its cells can be split between hosts" if base in splittable else
               "it cannot be split: it has no cells to divide between hosts")
        why.append(f"{longest.cell.name}, one job of {duration(longest.end - longest.start)} with its overhead, "
                   f"is longer than that on its own ({how})")
    total = sum(s.end - s.start for s in plan.slots)
    if total / len(plan.hosts) + plan.run_overhead > target:
        need = int(-(-total // max(1.0, target - plan.run_overhead)))
        why.append(f"the total of {duration(total)} shared by {len(plan.hosts)} host(s) is "
                   f"{duration(total / len(plan.hosts))} each: fewer than {need} hosts cannot meet it, "
                   f"even with every job split")
    if not why:
        last = plan.bottleneck
        why.append(f"{last.host}'s load ({duration(plan.loads[last.host])}, ending with {last.cell.name})")
    return f"within {duration(target)}: no; bounded by " + "; and ".join(why)

def this_machine() -> str:
    """This machine's name under data/recorded/ (pagelab.data.recording.machine_slug)."""
    from pagelab.system import provenance

    return machine_slug({"machine": provenance.machine(), "disk": provenance.block_device_of(".")})


def recording(profile: str, machine: str | None = None) -> Path:
    """data/recorded/<machine>/<profile> (machine: this one by default); PlanError when the profile
    is unknown or there is no such recording."""
    if profile not in PROFILES:
        raise PlanError(f"no profile named {profile!r} (have: {', '.join(PROFILES)})")
    machine = machine or this_machine()
    d = recorded_dir() / machine / profile
    if not d.is_dir():
        known = sorted(str(p.relative_to(recorded_dir())) for p in recorded_dir().glob("*/*") if p.is_dir()) \
            if recorded_dir().is_dir() else []
        raise PlanError(f"no recording of profile {profile!r} on {machine} ({recorded_dir()}; recorded: "
                        f"{', '.join(known) or 'none'})")
    return d


def source(given: Path | str | None, profile: str, machine: str | None = None) -> Path:
    """The durations' source: `given` (--recording) as a directory, a results directory or a
    recording, or a recording by its name (<machine>/<profile>, as `pagelab time` takes it), else
    this machine's recording of `profile` (`recording`). PlanError when it holds no experiment's
    trials.csv: a plan of nothing would print a wall time of nothing."""
    if given is None:
        d = recording(profile, machine)
    elif Path(given).is_dir():
        d = Path(given)
    elif (recorded_dir() / given).is_dir():
        d = recorded_dir() / given
    else:
        raise PlanError(f"--recording {given}: no such directory, nor a recording of that name under "
                        f"{recorded_dir()}")
    if not any(d.glob("*/trials.csv")):
        raise PlanError(f"--recording {given}: no experiment's trials.csv in {d}" if given is not None
                        else f"{d}: no experiment's trials.csv in it")
    return d


def profile_cells(source: Path | str, experiments: Sequence[str],
                  cell_of: dict[str, Callable[[dict[str, Any]], str]] | None = None,
                  keep: Keep | None = None) -> list[Cell]:
    """The cells of a profile's matrix on identical hosts: each experiment's run as one cell, or,
    for an experiment in `cell_of` (a run the fleet can split), one cell per cell of its design
    (`experiment[cell]`), with their durations in `source` (<source>/<experiment>/)."""
    out = []
    for e in experiments:
        split = (cell_of or {}).get(e)
        for label, secs in durations(Path(source) / e, split, keep).items():
            out.append(Cell(f"{e}[{label}]" if split else e, secs))
    return out


# A split run's job: the experiment's cell_of and the cells of the host's share.
Share = tuple[Callable[[dict[str, Any]], str], Collection[str]]


def job_cells(jobs: Sequence[tuple[str, str]], source: Path | str,
              shares: Mapping[tuple[str, str], Share] | None = None, keep: Keep | None = None) -> list[Cell]:
    """The configured fleet's jobs, each bound to its host (`host/experiment`), with their
    durations from `source`: <source>/<host>/<experiment>/ (an earlier fleet run's results) when
    there, else <source>/<experiment>/ (a recording), of which a job of a split run (`shares`:
    pagelab.run.fleet.job_shares) takes only its share's cells (`estimates`)."""
    out = []
    for host, e in jobs:
        d = Path(source) / host / e
        if (d / "trials.csv").is_file():
            secs = durations(d, keep=keep)[""]
        elif (host, e) in (shares or {}):
            cell_of, cells = (shares or {})[(host, e)]
            secs = sum(estimates(list(cells), durations(Path(source) / e, cell_of, keep)).values())
        else:
            secs = durations(Path(source) / e, keep=keep)[""]
        out.append(Cell(f"{host}/{e}", secs, (host,)))
    return out


def priorities(plan: Plan) -> dict[str, int]:
    """Each cell's place in the submission order (0 first), by name."""
    return {s.cell.name: i for i, s in enumerate(plan.slots)}


_SUBMISSION: list[dict[str, int]] = []


def submission_place(jobs: Sequence[tuple[str, str]], hosts: Sequence[str], profile: str, host: str,
                     experiment: str,
                     shares: Callable[[], Mapping[tuple[str, str], Share]] | None = None) -> int:
    """A configured fleet trial job's place in the plan's submission order (LPT, longest first),
    from the durations in $PAGELAB_FLEET_TIMES (an earlier fleet run's results/fleet or a
    recording), else data/recorded/<this machine>/<profile>, a split run's job by its share
    (`shares()`, job_cells); 0 for every job when there is nothing to plan from (the jobs then
    start in the cluster's order of submission). Planned once per process, when the first trial
    job is scheduled (rules/fleet.smk), not while the Snakefile is parsed."""
    import os
    import sys

    if not _SUBMISSION:
        try:
            source = os.environ.get("PAGELAB_FLEET_TIMES") or recording(profile)
            _SUBMISSION.append(priorities(lpt(job_cells(jobs, source, shares() if shares else None), hosts)))
        except PlanError as exc:
            print(f"fleet: no order planned ({exc})", file=sys.stderr)
            _SUBMISSION.append({})
    return _SUBMISSION[0].get(f"{host}/{experiment}", 0)
