"""A recorded run's trials and what each one took, read once for every estimate made from them:
the fleet's plan (pagelab.run.fleetplan sums them per cell), a run's time left
(pagelab.run.progress takes their count and median per configuration) and `pagelab time`
(pagelab.run.timing, from the same records).

The records are an experiment's trials.csv joined with its trial records (read_records). A
trial's seconds are its end minus its start, plus the pause before it when shorter than
STOP_GAP_S (the run's own bookkeeping between trials); a longer pause is a run that was stopped
and resumed, which no trial's time includes. The pauses are those of the whole recorded run,
taken before any trial is left out, so that neither the trials of other configurations run in
between nor the trials left out are charged to the ones kept.

Given `keep` (pagelab.experiments.replay.kept, which the command line passes: it reads the
experiments' descriptors, a layer above this one), only the trials today's stopping rule would
run are returned: a recording made under an earlier rule may hold more.
Not for: judging anything (a recording is judged on every trial it holds).
"""

from __future__ import annotations

import datetime as _dt
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pagelab.data.recording import RecordingError
from pagelab.system.config import experiments, renamed_record

# What a run today would take of a recorded run's trial records: (experiment, its directory, its
# records) -> the records kept, the same objects (pagelab.experiments.replay.kept).
Keep = Callable[[str, Path, list[dict[str, Any]]], list[dict[str, Any]]]

# A pause between two trials longer than this is a stopped and resumed run (pagelab time names
# such gaps too), not a trial's own time.
STOP_GAP_S = 60.0


class TimingError(RecordingError):
    """A run's records cannot be read (bad input: exit 2, as a bad recording)."""


def _ts(text: Any) -> float:
    return _dt.datetime.fromisoformat(str(text)).timestamp()


def read_records(d: Path) -> list[dict[str, Any]]:
    """The records of the trials an experiment's trials.csv lists (by trial id and start): from
    trials/*.json or a recording's trials.jsonl.gz, which may also hold records of an earlier
    run of another config, under the current names (config.renamed_record: a recording keeps its
    own); a trial without one is its csv row (its trial_id, start, end and columns)."""
    import pandas as pd  # here: the Snakefile imports the fleet's plan, and so this, while it is parsed

    try:
        frame = pd.read_csv(d / "trials.csv", keep_default_na=False, dtype=str)
    except (OSError, ValueError) as exc:
        raise TimingError(f"{d / 'trials.csv'}: unreadable ({exc})") from exc
    if frame.empty:
        return []
    if not {"trial_id", "start", "end"} <= set(frame.columns):
        raise TimingError(f"{d / 'trials.csv'}: no trial_id, start and end columns")
    found: dict[tuple[str, str], dict[str, Any]] = {}
    try:
        if (d / "trials").is_dir():
            for p in sorted((d / "trials").glob("*.json")):
                rec = json.loads(p.read_text())
                found[(str(rec.get("trial_id")), str(rec.get("start")))] = rec
        elif (d / "trials.jsonl.gz").is_file():
            with gzip.open(d / "trials.jsonl.gz", "rt") as fh:
                for line in filter(str.strip, fh):
                    rec = renamed_record(d.name, json.loads(line))
                    found[(str(rec.get("trial_id")), str(rec.get("start")))] = rec
    except (OSError, EOFError, ValueError) as exc:
        raise TimingError(f"{d}: a trial record is unreadable ({exc})") from exc
    return [found.get((r["trial_id"], r["start"]), {**r, "result": {}}) for r in frame.to_dict("records")]


def each_seconds(recs: list[dict[str, Any]]) -> list[tuple[dict[str, Any], float]]:
    """Each trial's seconds, in the run's order: its end minus its start, plus the pause before
    it when shorter than STOP_GAP_S. The pauses are those between the trials of `recs`, so the
    trials of configurations that ran interleaved are not charged for each other's time."""
    try:
        timed = sorted(((_ts(r["start"]), _ts(r["end"]), r) for r in recs if r.get("start") and r.get("end")),
                       key=lambda t: (t[0], t[1]))
    except ValueError as exc:
        raise TimingError(f"a trial's start or end is no time ({exc})") from exc
    out, prev_end = [], None
    for s, e, r in timed:
        pause = s - prev_end if prev_end is not None else 0.0
        out.append((r, max(0.0, e - s) + (pause if 0 < pause < STOP_GAP_S else 0.0)))
        prev_end = e
    return out


def trial_times(directory: Path | str, keep: Keep | None = None) -> list[tuple[dict[str, Any], float]]:
    """A recorded run's trials (<directory>/trials.csv and its records) with each one's seconds
    (each_seconds, over the whole run), in the run's order; with `keep`, for a directory named as
    an experiment of the schema, only the trials `keep` returns. TimingError when the records
    cannot be read."""
    d = Path(directory)
    recs = read_records(d)
    try:
        timed = each_seconds(recs)
    except TimingError as exc:
        raise TimingError(f"{d}: {exc}") from exc
    if keep is None or not recs or d.name not in experiments():
        return timed
    kept = {id(r) for r in keep(d.name, d, recs)}
    return [(r, sec) for r, sec in timed if id(r) in kept]
