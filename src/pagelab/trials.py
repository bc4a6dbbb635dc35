"""Run an experiment's trials: a randomised order from a recorded seed, one atomic record each,
resuming where an earlier run stopped.

An experiment supplies its configurations and a function that runs one trial and returns its
result dict; this module owns ordering, warm-up, records and resumption.
Not for: changing system state (that is the state module's job, with its journal).
"""

from __future__ import annotations

import random
import sys
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pagelab.provenance import now_iso
from pagelab.records import RecordError, read_record, write_json_atomic


class TrialFailed(RuntimeError):
    """A trial that ran but did not produce a result; it is recorded as failed."""


@dataclass
class Trial:
    trial_id: str
    params: dict[str, Any]
    repetition: int
    seed: int
    order: int = 0
    warmup: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def plan(
    configurations: list[dict[str, Any]],
    repetitions: int,
    seed: int,
    name: Callable[[dict[str, Any]], str],
    warmups: list[dict[str, Any]] | None = None,
) -> list[Trial]:
    """Every configuration x repetition in one order shuffled by `seed`, warm-ups first.

    Each trial also gets its own seed drawn from the same generator, so the whole sequence
    (order and each trial's random offsets) follows from the one recorded seed.
    """
    rng = random.Random(seed)
    trials = [
        Trial(trial_id=f"{name(conf)}-r{rep:02d}", params=conf, repetition=rep, seed=0)
        for rep in range(repetitions)
        for conf in configurations
    ]
    rng.shuffle(trials)
    warm = [
        Trial(trial_id=f"warmup-{name(conf)}", params=conf, repetition=-1, seed=0, warmup=True)
        for conf in (warmups or [])
    ]
    ordered = warm + trials
    for i, t in enumerate(ordered):
        t.order = i
        t.seed = rng.getrandbits(31)
    return ordered


def record_path(outdir: Path, trial: Trial) -> Path:
    return outdir / "trials" / f"{trial.trial_id}.json"


def is_done(path: Path, config_hash: str) -> bool:
    """A finished, trustworthy record of the same configuration exists at `path`."""
    if not path.exists():
        return False
    try:
        rec = read_record(path)
    except RecordError as exc:
        print(f"pagelab: re-running trial: {exc}", file=sys.stderr)
        return False
    return rec["status"] == "ok" and rec["provenance"].get("config_hash") == config_hash


def run(
    experiment: str,
    trials: list[Trial],
    run_one: Callable[[Trial], dict[str, Any]],
    outdir: Path,
    provenance: dict[str, Any],
    log: Callable[[str], None] = lambda s: print(s, file=sys.stderr),
) -> list[dict[str, Any]]:
    """Run the trials in order, skipping finished ones; return every record of this plan."""
    config_hash = provenance["config_hash"]
    records = []
    for trial in trials:
        path = record_path(outdir, trial)
        if is_done(path, config_hash):
            records.append(read_record(path))
            log(f"{experiment}: {trial.trial_id}: already done")
            continue
        start = now_iso()
        rec: dict[str, Any] = {
            "experiment": experiment,
            **asdict(trial),
            "start": start,
            "provenance": provenance,
        }
        try:
            rec["result"] = run_one(trial)
            rec["status"] = "ok"
        except TrialFailed as exc:
            rec["status"] = "failed"
            rec["error"] = str(exc)
        except Exception as exc:  # a bug or tool failure: record it, then stop the run
            rec["status"] = "failed"
            rec["error"] = f"{type(exc).__name__}: {exc}"
            rec["traceback"] = traceback.format_exc()
            rec["end"] = now_iso()
            write_json_atomic(path, rec)
            raise
        rec["end"] = now_iso()
        write_json_atomic(path, rec)
        log(f"{experiment}: {trial.trial_id}: {rec['status']}")
        records.append(rec)
    return records
