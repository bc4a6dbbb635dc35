"""Where a run's wall time went: per experiment and per phase (`pagelab time RESULTS`).

RESULTS is a results directory (results/) or a recording (data/recorded/<machine>/<profile>, or
that name). Read, nothing changed:
- each trial's record (results/<name>/trials/*.json, a recording's trials.jsonl.gz; else the
  start and end columns of trials.csv; pagelab.run.trialtimes.read_records): its start and
  end; its `phases`, the marks its code reported (pagelab.run.progress.phase: each phase lasts
  from its mark to the next or to the trial's end, the time before the first mark being the
  trial's set-up); its `process_started`, the `pagelab trial` process that ran it;
- in a record without marks, the durations its result holds (RESULT_PHASES); the rest of that
  trial (set-up of devices and swap, filling the working set, state restore) is "not split";
- between trials: each gap from one trial's end to the next one's start. Where the two trials
  were run by different processes the run was stopped there and resumed: that gap is
  "stopped", up to the new process's start, and "run set-up" after it. In records without
  `process_started` a stop cannot be told from a pause, and the largest gap is named instead;
- Snakemake's logs beside a results directory (its parent's .snakemake/log/): the trial job's
  time around its trials and its other jobs before them ("run set-up"), the analysis
  (the experiment's notebook, tidy and HTML jobs) and the paper (the jobs of no experiment).
  A recording keeps no Snakemake log: those columns say "not recorded".
Not for: deciding anything about the results; this is about the time a run takes.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pagelab.data.recording import RecordingError, resolve
from pagelab.run.progress import PHASES, duration
from pagelab.run.trialtimes import TimingError, read_records

# Durations a trial's result holds where its record has no marks: (result field, phase, to
# seconds). Only fields that time a phase of their own, one after another (readyboost's
# settle_s lies inside its restore window and is not one).
RESULT_PHASES = (("hog_s", "hogs", 1.0), ("trim_s", "trim", 1.0), ("restore_window_s", "restore/watch", 1.0),
                 ("retouch_s", "re-touch", 1.0), ("runtime_ms", "measure", 1e-3))
NOT_SPLIT = "not split"
RUN_SETUP = "run set-up"
STOPPED = "stopped"
BETWEEN = "between trials"
ANALYSIS = "analysis"
COLUMNS = (RUN_SETUP, *PHASES, NOT_SPLIT, BETWEEN, STOPPED, ANALYSIS)
ANALYSIS_RULES = ("notebook", "tidy", "notebook_html")
_STAMP = re.compile(r"^\[(?P<when>\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
_RULE = re.compile(r"^(?:local)?(?:checkpoint|rule) (?P<rule>\w+):$")
_JOBID = re.compile(r"^\s+jobid: (?P<id>\d+)$")
_EXPERIMENT = re.compile(r"^\s+wildcards: .*\bexperiment=(?P<name>[\w-]+)")
_FINISHED = re.compile(r"^Finished job(?:id:)? (?P<id>\d+)")


def _ts(text: Any) -> float:
    return _dt.datetime.fromisoformat(str(text)).timestamp()


@dataclass
class Gap:
    seconds: float
    before: str          # the trial that ended
    after: str           # the trial that started
    stopped: bool | None  # True: another process ran the next trial; None: the records cannot say


@dataclass
class ExperimentTime:
    """One experiment's wall time, by phase (seconds)."""
    name: str
    trials: int = 0
    span: float = 0.0                       # first trial's start to last trial's end
    phases: dict[str, float] = field(default_factory=dict)
    marked: int = 0                         # trials whose records hold phase marks
    processes: bool = False                 # every record names its process
    largest_gap: Gap | None = None
    job: float | None = None                # the trial job (Snakemake's log)

    def add(self, phase: str, seconds: float) -> None:
        self.phases[phase] = self.phases.get(phase, 0.0) + max(0.0, seconds)

    @property
    def wall(self) -> float:
        """The sum of its phases: its trials' span, the run's set-up around them, its analysis."""
        return sum(self.phases.values())


@dataclass
class RunTime:
    source: str
    experiments: list[ExperimentTime]
    paper: float | None = None              # the jobs of no experiment (Snakemake's log)
    logs: bool = False                      # Snakemake's logs were read


def experiment_time(name: str, recs: list[dict[str, Any]]) -> ExperimentTime:
    """Where the time of one experiment's trials went (module docstring)."""
    et = ExperimentTime(name)
    timed = [r for r in recs if r.get("start") and r.get("end")]
    try:
        timed.sort(key=lambda r: _ts(r["start"]))
        spans = [(_ts(r["start"]), _ts(r["end"])) for r in timed]
    except ValueError as exc:
        raise TimingError(f"{name}: a trial record's start or end is no time ({exc})") from exc
    et.trials = len(timed)
    if not timed:
        return et
    et.span = spans[-1][1] - spans[0][0]
    et.processes = all(r.get("process_started") for r in timed)
    for r, (start, end) in zip(timed, spans, strict=True):
        inside = end - start
        marks = r.get("phases")
        if marks:
            et.marked += 1
            et.add("set-up", float(marks[0][1]))
            for (ph, at), nxt in zip(marks, [*[m[1] for m in marks[1:]], inside], strict=True):
                et.add(str(ph), float(nxt) - float(at))
            continue
        res = r.get("result") or {}
        split = 0.0
        for key, ph, scale in RESULT_PHASES:
            v = res.get(key)
            if isinstance(v, (int, float)) and v == v and v > 0:
                et.add(ph, v * scale)
                split += v * scale
        et.add(NOT_SPLIT, inside - split)
    for i in range(1, len(timed)):
        a, b, a_end, b_start = timed[i - 1], timed[i], spans[i - 1][1], spans[i][0]
        gap = max(0.0, b_start - a_end)
        stopped = (a.get("process_started") != b.get("process_started")) if et.processes else None
        if stopped:
            resumed = _ts(b["process_started"])
            et.add(STOPPED, min(gap, max(0.0, resumed - a_end)))
            et.add(RUN_SETUP, max(0.0, b_start - max(resumed, a_end)))
        else:
            et.add(BETWEEN, gap)
        if et.largest_gap is None or gap > et.largest_gap.seconds:
            et.largest_gap = Gap(gap, str(a["trial_id"]), str(b["trial_id"]), stopped)
    if et.processes:  # the first process's start to its first trial
        et.add(RUN_SETUP, spans[0][0] - _ts(timed[0]["process_started"]))
    return et


def snakemake_spans(log: Path) -> list[tuple[str, str | None, float, float]]:
    """(rule, experiment or None, start, end) of every job that finished in one Snakemake log,
    in the order they finished (the log's whole seconds)."""
    when, started, current, spans = None, {}, None, []
    for line in log.read_text(errors="replace").splitlines():
        if m := _STAMP.match(line):
            when = _dt.datetime.strptime(" ".join(m["when"].split()), "%a %b %d %H:%M:%S %Y").timestamp()
        elif (m := _RULE.match(line)) and when is not None:
            current = [m["rule"], None, when]
        elif current is not None and (m := _EXPERIMENT.match(line)):
            current[1] = m["name"]
        elif current is not None and (m := _JOBID.match(line)):
            started[m["id"]] = current
        elif (m := _FINISHED.match(line)) and when is not None and m["id"] in started:
            rule, exp, t0 = started.pop(m["id"])
            spans.append((rule, exp, t0, when))
    return spans


def snakemake_jobs(log_dir: Path) -> list[tuple[str, str | None, float]]:
    """(rule, experiment or None, seconds) of every finished job in Snakemake's logs, oldest log
    first; a job run again by a later log counts once, as last run."""
    jobs: dict[tuple[str, str | None], float] = {}
    for log in sorted(log_dir.glob("*.snakemake.log")):
        for rule, exp, t0, t1 in snakemake_spans(log):
            jobs[(rule, exp)] = t1 - t0
    return [(rule, exp, s) for (rule, exp), s in jobs.items()]


def run_time(results: Path | str) -> RunTime:
    """Where the time of a results directory's or a recording's run went."""
    path = Path(results)
    if not path.is_dir():
        try:
            path = resolve(str(results))
        except RecordingError as exc:
            raise TimingError(f"{results}: no results directory or recording ({exc})") from exc
    dirs = sorted(d for d in path.iterdir() if d.is_dir() and (d / "trials.csv").is_file())
    if not dirs:
        raise TimingError(f"{results}: no experiment's trials.csv in it")
    rt = RunTime(str(results), [experiment_time(d.name, read_records(d)) for d in dirs])
    log_dir = path.resolve().parent / ".snakemake" / "log"
    if log_dir.is_dir() and any(log_dir.glob("*.snakemake.log")):
        rt.logs = True
        by_name = {e.name: e for e in rt.experiments}
        counted = {e.name: e.span + e.phases.get(STOPPED, 0.0) + e.phases.get(RUN_SETUP, 0.0) for e in rt.experiments}
        rt.paper = 0.0
        for rule, exp, secs in snakemake_jobs(log_dir):
            if exp in by_name and rule == "trial":
                by_name[exp].job = secs
                by_name[exp].add(RUN_SETUP, secs - counted[exp])  # the job's own start and end around its trials
            elif exp in by_name and rule in ANALYSIS_RULES:
                by_name[exp].add(ANALYSIS, secs)
            elif exp in by_name:   # its config block, written before its trials
                by_name[exp].add(RUN_SETUP, secs)
            elif exp is None and rule not in ("native",):
                rt.paper += secs
    return rt


def _cell(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    return duration(seconds) if seconds >= 0.5 else "-"


def table(rt: RunTime) -> str:
    """The time table and, below it, what it could not split."""
    cols = [c for c in COLUMNS if any(e.phases.get(c) for e in rt.experiments)
            or (c in (RUN_SETUP, ANALYSIS))]
    head = ["experiment", "trials", "wall", *cols]
    rows = []
    for e in rt.experiments:
        cells = []
        for c in cols:
            known = rt.logs or e.processes if c == RUN_SETUP else rt.logs if c == ANALYSIS else True
            cells.append(_cell(e.phases.get(c, 0.0)) if known else "?")
        rows.append([e.name, str(e.trials), duration(e.wall), *cells])
    total = [sum(e.phases.get(c, 0.0) for e in rt.experiments) for c in cols]
    rows.append(["total", str(sum(e.trials for e in rt.experiments)), duration(sum(e.wall for e in rt.experiments)),
                 *[_cell(t) if any(r[3 + i] != "?" for r in rows) else "?" for i, t in enumerate(total)]])
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    fmt = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w)  # noqa: E731
                                  for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()
    lines = [f"Where the time went: {rt.source} (h:mm:ss; '-' none, '?' not recorded)", "", fmt(head),
             *[fmt(r) for r in rows], ""]
    lines.append("paper: " + (duration(rt.paper) if rt.paper is not None else
                              "not recorded (no Snakemake log beside these results)"))
    lines += notes(rt)
    return "\n".join(lines) + "\n"


def notes(rt: RunTime) -> list[str]:
    """What the table could not split, and each experiment's largest gap between trials."""
    out = []
    unmarked = [e.name for e in rt.experiments if e.marked < e.trials]
    if unmarked:
        out.append(f"{NOT_SPLIT}: the time inside trials whose records hold no phase marks, less what "
                   f"their results time ({', '.join(f for f, _, _ in RESULT_PHASES)}): set-up of devices and "
                   f"swap, filling, state restore ({', '.join(unmarked)})")
    if not rt.logs:
        out.append(f"{RUN_SETUP}, {ANALYSIS}, paper: not in trial records" +
                   ("" if all(e.processes for e in rt.experiments) else
                    "; these records do not name the process that ran them") +
                   "; a results directory's Snakemake log (.snakemake/log/ beside it) has them")
    for e in rt.experiments:
        g = e.largest_gap
        if g is None or g.seconds < 60:
            continue
        why = ("another process ran the next: the run was stopped and resumed" if g.stopped else
               "the same process ran both" if g.stopped is False else
               "these records do not name their process: a stop and resume cannot be told from a pause")
        out.append(f"{e.name}: the largest gap between trials, {duration(g.seconds)}, from the end of {g.before} "
                   f"to the start of {g.after} ({why})")
    return out
