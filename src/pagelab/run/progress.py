"""What a person watching a long run sees: one line per trial, "configuration k of N, trial i
(valid v, rejected r), elapsed, about T left", on the terminal, while Snakemake's own job lines
go on as before.

The trial rule sends the trial's output to its log, so the lines are written to a terminal of
their own: the path in PAGELAB_PROGRESS when it is set (`make` sets it to Snakemake's own
standard error; "none" turns the lines off), else the controlling terminal (/dev/tty) when there
is one and standard error is not already a terminal. They also go to the log.

Time left comes from how long the trials of this profile took when they were recorded:
data/recorded/<this machine>/<profile>/<experiment>/trials.csv, else the reference machine's
recording, each trial's duration being the time from its start to the next trial's start (the
set-up between trials included). The estimate is rescaled by how this run's trials compare
with the recorded ones so far, and where nothing is recorded it comes from this run's own trials.
Not for: deciding anything; these lines are for people, the records are for analysis.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pandas as pd

from pagelab.run.recording import machine_slug, recorded_dir
from pagelab.system.config import load_schema

_REP = re.compile(r"^(?P<conf>.+)-r\d+$")
WARMUP_PREFIX = "warmup-"


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
    (counted and rejected) and the median seconds of one; the warm-ups' seconds."""
    source: str = ""                                       # "the recorded quick run on <machine>"
    trials: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    warmup_seconds: float = 0.0


def _parse_time(text: str) -> float:
    return _dt.datetime.fromisoformat(str(text)).timestamp()


def from_trials_csv(path: Path, source: str = "") -> Expectation:
    """The Expectation of a recorded trials.csv (its trial_id, start and end columns)."""
    frame = pd.read_csv(path, keep_default_na=False)
    if frame.empty or not {"trial_id", "start", "end"} <= set(frame.columns):
        return Expectation(source)
    starts = [_parse_time(s) for s in frame["start"]]
    ends = [_parse_time(s) for s in frame["end"]]
    order = sorted(range(len(frame)), key=lambda i: starts[i])
    durations: dict[str, list[float]] = {}
    for pos, i in enumerate(order):
        nxt = starts[order[pos + 1]] if pos + 1 < len(order) else ends[i]
        durations.setdefault(conf_of(str(frame["trial_id"].iloc[i])), []).append(max(0.0, nxt - starts[i]))
    warm = durations.pop("warmup", [])
    return Expectation(source, {c: len(d) for c, d in durations.items()},
                       {c: statistics.median(d) for c, d in durations.items()}, sum(warm))


def expectation(experiment: str, profile: str, machine: str, reference: str,
                recorded: Path | None = None) -> Expectation:
    """The recorded run of this profile on this machine, else on the reference machine, else
    nothing known (an empty Expectation)."""
    if recorded is None:
        recorded = recorded_dir()
    for name in dict.fromkeys(n for n in (machine, reference) if n):
        path = recorded / name / profile / experiment / "trials.csv"
        if path.is_file():
            try:
                return from_trials_csv(path, f"the recorded {profile} run on {name}")
            except (OSError, ValueError, KeyError):
                continue
    return Expectation()


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
                 clock: Callable[[], float] = time.monotonic) -> None:
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
        """Seconds left: for each configuration, the trials the recording ran beyond those done
        (at least n_min), at its seconds per trial; None while nothing is known."""
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
                    f"trials, {how}")

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
                    + (f"{rough(left)} left" if left is not None else "time left unknown until a trial ends"))

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
            log: Callable[[str], None] | None = None) -> Progress:
    """The Progress of one `pagelab trial` run: this machine's name from its provenance, the
    profile from its config, the reference machine from the schema's default."""
    try:
        reference = str(load_schema()["properties"]["reference"]["default"])
    except (OSError, KeyError):
        reference = ""
    expected = expectation(experiment, str(cfg.get("profile", "quick")), machine_slug(provenance), reference)
    return Progress(experiment, configurations, expected, int(cfg.get("repetitions", {}).get("n_min", 1)),
                    out=target(), log=log)
