"""What a person watching a long run sees: one line per trial, "configuration k of N, trial i
(valid v, rejected r), elapsed, about T left", on the terminal, while Snakemake's own job lines
go on as before.

The trial rule sends the trial's output to its log, so the lines are written to a terminal of
their own: the path in PAGELAB_PROGRESS when it is set (`make` sets it to Snakemake's own
standard error; "none" turns the lines off), else the controlling terminal (/dev/tty) when there
is one and standard error is not already a terminal. They also go to the log.

Time left comes from how long the trials of this profile took when they were recorded:
data/recorded/<this machine>/<profile>/<experiment>/, else the reference machine's recording,
read by pagelab.run.trialtimes.trial_times, the reading the fleet's plan (`pagelab fleet plan`)
times its jobs with: each trial's end minus its start plus the pause before it (the run's
bookkeeping between trials; a pause of a stopped run is left out), and, with the `keep` that
`pagelab trial` passes (pagelab.experiments.replay.kept), only the trials today's stopping rule
would run of a recording made under an earlier rule (a recording of the repository's is replayed
once and kept in results/.cache/expectations/ until it, the schema, the claims or the code
change). Each configuration is expected to run as
many trials as kept (at least n_min), each at the median seconds of its kept ones. The estimate
is rescaled by how this run's trials compare with the recorded ones so far, and where nothing is
recorded it comes from this run's own trials.
The whole run: each trial line ends with "run: experiment k of N, about T left", N being the
experiments of make's EXPERIMENT when it names this one, else every experiment of the schema, k
one more than those already finished in results/ (their trials.csv and a provenance whose config
hash is their config.json's), T this experiment's time left plus each unfinished one's recorded
trial time for this profile (its configurations' kept trials at their median seconds, the
warm-ups included); an experiment with no recording of this profile takes another profile's,
scaled by the ratio of the schema's n_min of the two profiles. For a whole profile on one host,
T at the start is the fleet plan's total less its per-job and per-run overheads, give or take
the difference between a configuration's trials at their median and their sum.

Within a trial: the trial code says what it does, `phase("hogs", 3, 20, "round")` or
`phase("restore/watch", share=0.43)` (the recovery trial's watcher, at each sample of the working
set's bytes out of RAM, reports the share back since the restore began: `watching_restore`).
Each change of phase is kept as a mark in the trial's record (`phases`: [name, seconds from the
trial's start], each lasting to the next mark or the trial's end; `pagelab time` reads them), and
a line ("readyboost: hdd_after-r03: hogs, round 3 of 20, 0:41 into the trial", "... restore/watch,
43 %, 1:12 into the trial") is written at most once per PHASE_LINE_S seconds, never in a trial's
first PHASE_LINE_S seconds: short trials print only their one line.
Not for: deciding anything; these lines are for people, the records are for analysis.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pagelab.core.paths import root
from pagelab.data.recording import machine_slug, recorded_dir
from pagelab.run.trialtimes import Keep, trial_times
from pagelab.system.config import experiments as schema_experiments
from pagelab.system.config import load_schema, run_hash, trial_block

_REP = re.compile(r"^(?P<conf>.+)-r\d+$")
WARMUP_PREFIX = "warmup-"
# The phases trial code reports (`phase`), in the order a trial runs them; `pagelab time` sums
# the time of each. The time before a trial's first mark is its set-up.
PHASES = ("set-up", "fill", "hogs", "trim", "restore/watch", "settle", "re-touch", "measure", "state restore")
PHASE_LINE_S = 30.0   # at most one phase line per this many seconds of a trial


def conf_of(trial_id: str) -> str:
    """The configuration a trial id belongs to ("random-pc0-r03" -> "random-pc0"; a warm-up,
    "warmup-random-pc0", -> "warmup")."""
    if trial_id.startswith(WARMUP_PREFIX):
        return "warmup"
    m = _REP.match(trial_id)
    return m.group("conf") if m else trial_id


@dataclass
class Expectation:
    """What a recorded run says this one will take: per configuration, how many trials it ran
    (counted and rejected; with `keep`, those today's stopping rule would run) and the median
    seconds of one; the warm-ups' seconds."""
    source: str = ""                                       # "the recorded quick run on <machine>"
    trials: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    warmup_seconds: float = 0.0

    def total(self) -> float:
        """The recorded run's trial time: each configuration's trials at its median seconds,
        and the warm-ups (a long stop between two trials moves a median little)."""
        return sum(n * self.seconds.get(c, 0.0) for c, n in self.trials.items()) + self.warmup_seconds


def from_recording(directory: Path, source: str = "", keep: Keep | None = None) -> Expectation:
    """The Expectation of a recorded run of an experiment (<directory>/trials.csv and its trial
    records, trialtimes.trial_times; with `keep`, only the trials it keeps). A recording of the
    repository's (data/recorded/) is read through the cache (cached_expectation)."""
    cached = cached_expectation(Path(directory), keep)
    if cached is not None:
        return Expectation(source, *cached)
    seconds: dict[str, list[float]] = {}
    for rec, sec in trial_times(directory, keep):
        seconds.setdefault(conf_of(str(rec["trial_id"])), []).append(sec)
    warm = seconds.pop("warmup", [])
    exp = Expectation(source, {c: len(d) for c, d in seconds.items()},
                      {c: statistics.median(d) for c, d in seconds.items()}, sum(warm))
    cache_expectation(Path(directory), keep, exp)
    return exp


# -- the cache of recorded expectations --------------------------------------------------------
# Replaying a recording under today's stopping rule (keep) takes about a tenth of a second per
# experiment, and every `pagelab trial` process reads seven (its own and, for the run's time
# left, the others'): most of a trial process's start. The Expectation of a recording in the
# repository is kept in results/.cache/expectations/, one file per recording and keep, with the
# digest of everything it was computed from: the recording's files, config/ (the schema, its
# stopping rule, the renames and the device profiles), data/published/ and paper/refs.bib (the
# claims and their sources) and this package's code, each by path, size and modification time:
# any change to them computes it again. Only a keep of this package's own (replay.kept,
# replay.fewest) is cached: a function made elsewhere has no code the digest covers. A cache that
# cannot be read or written is no cache.


def _cache_key(directory: Path, keep: Keep | None) -> tuple[Path, str] | None:
    """The cache file of a recording and keep, and the digest of their inputs; None when this
    recording or keep is not cached."""
    import hashlib

    import pagelab

    name = "every" if keep is None else f"{keep.__module__}.{keep.__qualname__}"
    if keep is not None and (not keep.__module__.startswith("pagelab.") or "<" in keep.__qualname__):
        return None
    try:
        here = directory.resolve()
        if not here.is_relative_to(recorded_dir().resolve()):
            return None
        digest = hashlib.sha256(f"{here}\0{name}\n".encode())
        for base in (here, root() / "config", root() / "data" / "published", root() / "paper" / "refs.bib",
                     Path(pagelab.__file__).parent):
            found = [(str(base), [], [""])] if base.is_file() else os.walk(base)
            for dirpath, dirnames, files in found:
                dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
                for f in sorted(files):
                    st = os.stat(os.path.join(dirpath, f) if f else dirpath)
                    digest.update(f"{dirpath}/{f}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    except OSError:
        return None
    slug = hashlib.sha256(f"{here}\0{name}".encode()).hexdigest()[:16]
    return root() / "results" / ".cache" / "expectations" / f"{slug}.json", digest.hexdigest()


def cached_expectation(directory: Path, keep: Keep | None
                       ) -> tuple[dict[str, int], dict[str, float], float] | None:
    """The cached trials, seconds and warm-up seconds of a recording under `keep`, when the cache
    holds them for today's inputs (_cache_key)."""
    key = _cache_key(directory, keep)
    if key is None:
        return None
    try:
        held = json.loads(key[0].read_text())
        if held.get("inputs") != key[1]:
            return None
        return ({str(c): int(n) for c, n in held["trials"]},
                {str(c): float(v) for c, v in held["seconds"]}, float(held["warmup_seconds"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def cache_expectation(directory: Path, keep: Keep | None, exp: Expectation) -> None:
    """Keeps a recording's Expectation under `keep` for the next process (a no-op where it is not
    cached or cannot be written)."""
    from pagelab.core.records import write_json_atomic

    key = _cache_key(directory, keep)
    if key is None:
        return
    try:
        # pairs, not objects: the configurations keep their order (the file's keys are sorted)
        write_json_atomic(key[0], {"inputs": key[1], "trials": list(exp.trials.items()),
                                   "seconds": list(exp.seconds.items()), "warmup_seconds": exp.warmup_seconds})
    except OSError:
        pass


def expectation(experiment: str, profile: str, machine: str, reference: str,
                recorded: Path | None = None, keep: Keep | None = None) -> Expectation:
    """The recorded run of this profile on this machine, else on the reference machine, else
    nothing known (an empty Expectation); with `keep`, of the trials it keeps."""
    if recorded is None:
        recorded = recorded_dir()
    for name in dict.fromkeys(n for n in (machine, reference) if n):
        directory = recorded / name / profile / experiment
        if (directory / "trials.csv").is_file():
            try:
                return from_recording(directory, f"the recorded {profile} run on {name}", keep)
            except (OSError, ValueError, KeyError, TypeError):
                continue
    return Expectation()


def _n_min(schema: dict[str, Any], experiment: str, profile: str) -> float | None:
    """The schema's n_min of an experiment's profile (its quick block's for a profile it lacks)."""
    props = schema["properties"][experiment]["properties"]
    block = (props.get(profile) or props["quick"]).get("default", {})
    reps = block.get("repetitions") or schema["properties"].get("repetitions", {}).get("default", {})
    return float(reps["n_min"]) if reps.get("n_min") else None


def recorded_seconds(experiment: str, profile: str, machine: str, reference: str, schema: dict[str, Any],
                     recorded: Path | None = None, keep: Keep | None = None) -> float | None:
    """How long an experiment's trials took in the recorded run of `profile` (Expectation.total;
    with `keep`, of the trials it keeps); without one, another profile's, scaled by the ratio of
    the schema's n_min of the two; None when nothing is recorded."""
    exp = expectation(experiment, profile, machine, reference, recorded, keep)
    if exp.trials:
        return exp.total()
    for other in ("quick", "full", "seed"):
        if other == profile:
            continue
        exp = expectation(experiment, other, machine, reference, recorded, keep)
        mine, theirs = _n_min(schema, experiment, profile), _n_min(schema, experiment, other)
        if exp.trials and mine and theirs:
            return exp.total() * mine / theirs
    return None


def finished(results: Path, experiment: str) -> bool:
    """Whether results/<experiment>/ holds a finished run of its current config: trials.csv,
    and a provenance whose config hash is that of the block `pagelab trial` ran from its
    config.json (config.trial_block: defaults filled, the scratch directory out), with the
    device profiles the provenance names (the tier model among them) as they are now."""
    d = results / experiment
    try:
        if not (d / "trials.csv").is_file():
            return False
        cfg, _ = trial_block(experiment, json.loads((d / "config.json").read_text()), machine=False)
        prov = json.loads((d / "provenance.json").read_text())
        also = sorted(prov.get("device_profiles") or {})
        return bool(prov.get("config_hash") == run_hash(experiment, cfg, also=also))
    except (OSError, ValueError, KeyError, TypeError):
        return False


@dataclass
class RunPlan:
    """The whole run an experiment's trials are part of: its experiments, those already
    finished, and the recorded trial seconds of each unfinished one but the experiment's own
    (None: nothing recorded)."""
    experiments: list[str]
    done: set[str]
    seconds: dict[str, float | None]

    def position(self, experiment: str) -> int:
        """k of "experiment k of N": one more than the others already finished."""
        return len((self.done - {experiment}) & set(self.experiments)) + 1

    def left_besides(self, experiment: str) -> tuple[float, list[str]]:
        """The recorded seconds of the unfinished experiments other than `experiment`, and those
        of them with nothing recorded."""
        rest = [e for e in self.experiments if e != experiment and e not in self.done]
        return (sum(self.seconds.get(e) or 0.0 for e in rest), [e for e in rest if self.seconds.get(e) is None])


def run_plan(experiment: str, profile: str, machine: str, reference: str, results: Path | None = None,
             recorded: Path | None = None, schema: dict[str, Any] | None = None,
             wanted: str | None = None, keep: Keep | None = None) -> RunPlan:
    """The run `experiment` is part of: make's EXPERIMENT (`wanted`, default the environment's)
    when it names this experiment, else every experiment of the schema; finished ones are read
    from `results` (default results/ of the repository); each unfinished other's recorded seconds
    of the trials `keep` keeps (recorded_seconds)."""
    schema = schema or load_schema()
    wanted = os.environ.get("EXPERIMENT", "") if wanted is None else wanted
    names = wanted.split() if experiment in wanted.split() else schema_experiments(schema)
    if experiment not in names:
        names = [*names, experiment]
    results = root() / "results" if results is None else results
    done = {e for e in names if finished(results, e)}
    # the line reads only what is left besides this experiment (left_besides): each recording
    # replayed under today's rule delays the trial process's first trial, so no other is read
    return RunPlan(names, done, {e: recorded_seconds(e, profile, machine, reference, schema, recorded, keep)
                                 for e in names if e != experiment and e not in done})


def target() -> IO[str] | None:
    """Where progress lines go besides the log: PAGELAB_PROGRESS's path ("none": nowhere), else
    the controlling terminal when standard error is not one already. A regular file is never
    opened: its owner writes at its own offset and would overwrite the lines."""
    wanted = os.environ.get("PAGELAB_PROGRESS")
    if wanted is not None and wanted.strip().lower() in ("", "none"):
        return None
    if wanted is None:
        if sys.stderr.isatty():
            return None
        wanted = "/dev/tty"
    try:
        if Path(wanted).is_file():
            return None
        return open(wanted, "a", buffering=1)  # held open for the whole run
    except OSError:
        return None


def duration(seconds: float) -> str:
    """Elapsed time as 0:42, 12:31 or 1:02:03."""
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def rough(seconds: float) -> str:
    """A time in round words: "about 7 min", "about 1 h 20 min", "under a minute"."""
    if seconds < 60:
        return "under a minute"
    minutes = int(round(seconds / 60))
    if minutes < 60:
        return f"about {minutes} min"
    h, m = divmod(minutes, 60)
    return f"about {h} h {m} min" if m else f"about {h} h"


class Progress:
    """Counts trials as they start and end, and writes one line per trial."""

    def __init__(self, experiment: str, configurations: list[str], expected: Expectation, n_min: int,
                 out: IO[str] | None = None, log: Callable[[str], None] | None = None,
                 clock: Callable[[], float] = time.monotonic, run: RunPlan | None = None,
                 phase_every: float = PHASE_LINE_S) -> None:
        self.run = run
        self.phase_every = phase_every
        self.experiment = experiment
        self.configurations = list(configurations)
        self.expected = expected
        self.n_min = n_min
        self.out = out
        self.log = log
        self.clock = clock
        self.started = clock()
        self.valid = {c: 0 for c in self.configurations}
        self.rejected = {c: 0 for c in self.configurations}
        self.failed = 0
        self.warmups_done = 0
        self.ratios: list[float] = []    # this run's seconds over the recorded ones, per trial
        self.own: dict[str, list[float]] = {}
        self._current: tuple[str, float] | None = None

    # -- estimates ------------------------------------------------------------------------
    def _seconds(self, conf: str) -> float | None:
        if conf in self.expected.seconds:
            scale = statistics.median(self.ratios) if self.ratios else 1.0
            return self.expected.seconds[conf] * scale
        if self.own.get(conf):
            return statistics.median(self.own[conf])
        mine = [s for v in self.own.values() for s in v]
        if mine:
            return statistics.median(mine)
        if self.expected.seconds:
            return statistics.median(self.expected.seconds.values())
        return None

    def left(self) -> float | None:
        """Seconds left: for each configuration, the trials expected of it (Expectation.trials, at
        least n_min) beyond those done, at its seconds per trial; None while nothing is known."""
        total = 0.0
        for conf in self.configurations:
            done = self.valid[conf] + self.rejected[conf]
            want = max(self.expected.trials.get(conf, 0), self.n_min)
            if done < want:
                secs = self._seconds(conf)
                if secs is None:
                    return None
                total += (want - done) * secs
        return total

    def run_part(self) -> str:
        """"; run: experiment k of N, about T left" for the whole run ("" for a run of one)."""
        if self.run is None or len(self.run.experiments) < 2:
            return ""
        k, n = self.run.position(self.experiment), len(self.run.experiments)
        mine = self.left()
        others, unknown = self.run.left_besides(self.experiment)
        if unknown:
            when = f"time left unknown (nothing recorded for {', '.join(unknown)})"
        elif mine is None:
            when = f"{rough(others)} left after this experiment"
        else:
            when = f"{rough(mine + others)} left"
        return f"; run: experiment {k} of {n}, {when}"

    def planned(self) -> int:
        return sum(max(self.expected.trials.get(c, 0), self.n_min) for c in self.configurations)

    # -- lines ----------------------------------------------------------------------------
    def _write(self, line: str) -> None:
        if self.log is not None:
            self.log(line)
        if self.out is not None:
            try:
                self.out.write(line + "\n")
                self.out.flush()
            except OSError:
                self.out = None

    def begin(self) -> None:
        left = self.left()
        how = f"{rough(left)} going by {self.expected.source}" if left is not None and self.expected.source \
            else "no recorded run of this profile to go by"
        self._write(f"{self.experiment}: {len(self.configurations)} configurations, about {self.planned()} "
                    f"trials, {how}{self.run_part()}")

    def trial_started(self, trial_id: str, warmup: bool = False) -> None:
        self._current = (trial_id, self.clock())
        elapsed = duration(self.clock() - self.started)
        if warmup:
            self._write(f"{self.experiment}: warm-up {trial_id}, elapsed {elapsed}")
            return
        conf = conf_of(trial_id)
        k = self.configurations.index(conf) + 1 if conf in self.configurations else 0
        i = self.valid.get(conf, 0) + self.rejected.get(conf, 0) + 1
        left = self.left()
        self._write(f"{self.experiment}: configuration {k} of {len(self.configurations)} ({conf}), trial {i} "
                    f"(valid {self.valid.get(conf, 0)}, rejected {self.rejected.get(conf, 0)}), elapsed {elapsed}, "
                    + (f"{rough(left)} left" if left is not None else "time left unknown until a trial ends")
                    + self.run_part())

    def phase_line(self, trial_id: str, what: str, into: float) -> None:
        """A line on the phase of a long trial (Marks decides when)."""
        self._write(f"{self.experiment}: {trial_id}: {what}, {duration(into)} into the trial")

    def trial_finished(self, trial_id: str, rec: dict[str, Any], resumed: bool = False) -> None:
        """Count a trial's record; a resumed one (finished by an earlier run) adds no timing."""
        if rec.get("warmup"):
            self.warmups_done += 1
            return
        conf = conf_of(trial_id)
        if rec.get("status") != "ok":
            self.failed += 1
        elif rec.get("valid", True):
            self.valid[conf] = self.valid.get(conf, 0) + 1
        else:
            self.rejected[conf] = self.rejected.get(conf, 0) + 1
        if resumed or self._current is None or self._current[0] != trial_id:
            return
        took = self.clock() - self._current[1]
        self.own.setdefault(conf, []).append(took)
        if self.expected.seconds.get(conf):
            self.ratios.append(took / self.expected.seconds[conf])

    def end(self) -> None:
        valid, rejected = sum(self.valid.values()), sum(self.rejected.values())
        self._write(f"{self.experiment}: {valid + rejected} trials ({valid} valid, {rejected} rejected) "
                    f"in {duration(self.clock() - self.started)}")


def for_run(experiment: str, cfg: dict[str, Any], configurations: list[str], provenance: dict[str, Any],
            log: Callable[[str], None] | None = None, keep: Keep | None = None) -> Progress:
    """The Progress of one `pagelab trial` run: this machine's name from its provenance, the
    profile from its config, the reference machine from the schema's default; the recordings'
    trials that `keep` keeps (`pagelab trial` passes pagelab.experiments.replay.kept)."""
    try:
        reference = str(load_schema()["properties"]["reference"]["default"])
    except (OSError, KeyError):
        reference = ""
    profile, machine = str(cfg.get("profile", "quick")), machine_slug(provenance)
    expected = expectation(experiment, profile, machine, reference, keep=keep)
    try:
        plan: RunPlan | None = run_plan(experiment, profile, machine, reference, keep=keep)
    except (OSError, ValueError, KeyError, TypeError):
        plan = None  # the whole run's part of the line is left out
    return Progress(experiment, configurations, expected, int(cfg.get("repetitions", {}).get("n_min", 1)),
                    out=target(), log=log, run=plan)


# -- phases within a trial --------------------------------------------------------------------

def describe_phase(name: str, done: int | None = None, of: int | None = None, unit: str = "",
                   share: float | None = None) -> str:
    """"hogs, round 3 of 20", "restore/watch, 43 %", or the phase's name alone."""
    if done is not None and of is not None:
        return f"{name}, {unit + ' ' if unit else ''}{done} of {of}"
    if share is not None:
        return f"{name}, {100 * share:.0f} %"
    return name


class Marks:
    """The phases one trial's code reports: a mark (name, seconds from the trial's start) at each
    change of phase, and at most one progress line per `progress.phase_every` seconds."""

    def __init__(self, trial_id: str, progress: Progress | None = None) -> None:
        self.trial_id = trial_id
        self.progress = progress
        self.clock = progress.clock if progress is not None else time.monotonic
        self.every = progress.phase_every if progress is not None else PHASE_LINE_S
        self.t0 = self.last_line = self.clock()
        self.marks: list[list[Any]] = []

    def mark(self, name: str, done: int | None = None, of: int | None = None, unit: str = "",
             share: float | None = None) -> None:
        if name not in PHASES:
            raise ValueError(f"progress.phase: unknown phase {name!r} (the phases: {', '.join(PHASES)})")
        now = self.clock()
        if not self.marks or self.marks[-1][0] != name:
            self.marks.append([name, round(now - self.t0, 3)])
        if self.progress is not None and now - self.last_line >= self.every:
            self.last_line = now
            self.progress.phase_line(self.trial_id, describe_phase(name, done, of, unit, share), now - self.t0)


_marks: Marks | None = None


@contextmanager
def marking(rec: dict[str, Any], progress: Progress | None = None) -> Iterator[Marks]:
    """While one trial's code runs: its `phase` calls are marked, and the marks go to
    rec["phases"] when it ends, also when it raises."""
    global _marks
    outer, _marks = _marks, Marks(str(rec.get("trial_id", "")), progress)
    try:
        yield _marks
    finally:
        rec["phases"] = _marks.marks
        _marks = outer


def phase(name: str, done: int | None = None, of: int | None = None, unit: str = "",
          share: float | None = None) -> None:
    """What the trial under way does now (a name of PHASES, with its step `done` of `of` in
    `unit`s, or the `share` done); nothing outside a trial."""
    if _marks is not None:
        _marks.mark(name, done, of, unit, share)


def restore_share(out_at_start: float, out_now: float) -> float | None:
    """Of the working set's bytes out of RAM when the restore began, the share back in RAM now
    (0 to 1); None when nothing was out."""
    if not out_at_start > 0:
        return None
    return min(1.0, max(0.0, 1.0 - out_now / out_at_start))


def watching_restore(out_of_ram: Callable[[], float], out_at_start: float) -> Callable[[], float]:
    """A watcher's source of the working set's bytes out of RAM that, at each read, also reports
    the trial's phase with the share back since the restore began ("restore/watch, 43 %"); the
    lines stay at most one per PHASE_LINE_S seconds (Marks)."""
    def read() -> float:
        now = out_of_ram()
        phase("restore/watch", share=restore_share(out_at_start, now))
        return now
    return read


def process_started() -> str:
    """When this process started (ISO 8601, UTC), from /proc: the trial records of one run of an
    experiment share it, so `pagelab time` tells a stop and resume from a pause between trials."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])  # field 22, starttime
        btime = next(int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                     if line.startswith("btime "))
        started = btime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        started = time.time()
    return _dt.datetime.fromtimestamp(started, tz=_dt.UTC).isoformat()


PROCESS_STARTED = process_started()
