"""Run an experiment's trials: a randomised order from a recorded seed, one atomic record each,
resuming where an earlier run stopped.

An experiment supplies its configurations and a function that runs one trial and returns its
result dict; this module owns ordering, warm-up, records and resumption.
Not for: changing system state (that is the state module's job, with its journal).
"""

from __future__ import annotations

import math
import random
import re
import sys
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pagelab.core.records import RecordError, read_record, write_json_atomic
from pagelab.core.stats import median_ci
from pagelab.run import sequential
from pagelab.run.progress import PROCESS_STARTED, Progress, marking
from pagelab.system.provenance import now_iso


class TrialFailed(RuntimeError):
    """A trial that ran but did not produce a result; it is recorded as failed."""


# A trial's validity check: None when the manipulation happened, else a one-line reason
# ("the hogs evicted 12 % of the working set; the design needs >= 90 %"), computed from the
# trial's own counters. An invalid trial is recorded with its reason and never counted.
Validity = Callable[[dict[str, Any], dict[str, Any]], "str | None"]


def is_counted(rec: dict[str, Any]) -> bool:
    """A record that counts as a result: finished, not a warm-up, and valid."""
    return rec.get("status") == "ok" and not rec.get("warmup") and rec.get("valid", True)


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
    seed: int | random.Random,
    name: Callable[[dict[str, Any]], str],
    warmups: list[dict[str, Any]] | None = None,
    done: dict[str, int] | None = None,
    first_order: int = 0,
) -> list[Trial]:
    """Every configuration x repetition in one order shuffled by `seed`, warm-ups first.

    Each trial also gets its own seed drawn from the same generator, so the whole sequence
    (order and each trial's random offsets) follows from the one recorded seed. For the later
    batches of an adaptive run: `seed` is the run's generator, `done` the repetitions each
    configuration already has, `first_order` the next trial's position.
    """
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    done = done or {}
    trials = [
        Trial(trial_id=f"{name(conf)}-r{done.get(name(conf), 0) + rep:02d}", params=conf,
              repetition=done.get(name(conf), 0) + rep, seed=0)
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
        t.order = first_order + i
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
    validity: Validity | None = None,
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    """Run the trials in order, skipping finished ones; return every record of this plan.

    With `validity`, each finished trial's record says whether its manipulation happened
    ("valid") and if not why ("invalid_reason"); warm-ups are not judged. With `progress`, each
    trial is announced as it starts and counted when it ends."""
    config_hash = provenance["config_hash"]
    records = []
    for trial in trials:
        path = record_path(outdir, trial)
        if is_done(path, config_hash):
            records.append(read_record(path))
            log(f"{experiment}: {trial.trial_id}: already done")
            if progress is not None:
                progress.trial_finished(trial.trial_id, records[-1], resumed=True)
            continue
        if progress is not None:
            progress.trial_started(trial.trial_id, trial.warmup)
        start = now_iso()
        rec: dict[str, Any] = {
            "experiment": experiment,
            **asdict(trial),
            "start": start,
            "process_started": PROCESS_STARTED,  # one per run: `pagelab time` tells a stop from a pause
            "provenance": provenance,
        }
        try:
            with marking(rec, progress):  # the phases the trial code reports go to rec["phases"]
                rec["result"] = run_one(trial)
            rec["status"] = "ok"
            reason = validity(trial.params, rec["result"]) if validity and not trial.warmup else None
            rec["valid"] = reason is None
            rec["invalid_reason"] = reason or ""
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
        status = rec["status"] if rec.get("valid", True) else f"invalid ({rec['invalid_reason']})"
        log(f"{experiment}: {trial.trial_id}: {status}")
        records.append(rec)
        if progress is not None:
            progress.trial_finished(trial.trial_id, rec)
    return records


def check_invalid_share(experiment: str, records: list[dict[str, Any]], share: float | None) -> None:
    """TrialFailed when more than `share` of the judged (finished, not warm-up) trials are
    invalid, naming each reason with how many trials it rejected (reasons that differ only in
    their numbers count as one, its numbers shown as N)."""
    if share is None:
        return
    judged = [r for r in records if r.get("status") == "ok" and not r.get("warmup")]
    invalid = [r for r in judged if not r.get("valid", True)]
    if judged and len(invalid) > share * len(judged):
        counts: dict[str, int] = {}
        for r in invalid:
            why = re.sub(r"(?<![\w.-])\d+(\.\d+)?(?![\w-])", "N", r["invalid_reason"])  # not in names
            counts[why] = counts.get(why, 0) + 1
        reasons = "; ".join(f"{n} x {why}" for why, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        raise TrialFailed(f"{experiment}: {len(invalid)} of {len(judged)} trials invalid, more than "
                          f"max_invalid_share {share:g}: {reasons}")


@dataclass
class Stopping:
    """Why a configuration got the repetitions it got."""

    config: str
    n: int
    # "ci" (precise enough), "censored" (its metric censored in half or more of n_max: the
    # median is censored whatever follows), "verdict" (every claim that judges it settled at a
    # look: sequential), "n_max" (cap reached), "failed" (a trial failed)
    reason: str
    median: float | None = None
    half_width: float | None = None
    invalid: int = 0  # trials run but not counted: their manipulation did not happen


def precise_enough(values: list[float], ci_pct: float) -> tuple[bool, float, float]:
    """Is the order-statistic CI of the median (median_ci: coverage at least 0.95 from 6 values,
    median_rank's at n) within +- ci_pct % of the median (the larger of its two sides)? Below 6
    values that interval is [min, max], of the lower coverage it has (0.9375 at n = 5). A censored
    value (+-inf: a criterion met at the start or never) in the interval or the median makes it
    not precise."""
    est = median_ci(values)
    if not all(math.isfinite(x) for x in (est.value, est.ci_low, est.ci_high)):
        return False, est.value, math.inf
    half = max(est.value - est.ci_low, est.ci_high - est.value)
    return half <= abs(est.value) * ci_pct / 100.0, est.value, half


def stop_reason(values: list[float], n_max: int, ci_pct: float,
                settled: Callable[[], bool]) -> tuple[str | None, float, float]:
    """Whether a configuration with these counted metric values stops now, and why: "ci" (precise
    enough), "censored" (censored in half or more of n_max: sequential.censored_for_good),
    "verdict" (`settled()`: its claims' verdicts settled at a look), "n_max"; None when it goes
    on. With the median and the half-width of its interval (precise_enough)."""
    ok, med, hw = precise_enough(values, ci_pct)
    why = ("ci" if ok else "censored" if sequential.censored_for_good(values, n_max)
           else "verdict" if settled() else "n_max" if len(values) >= n_max else None)
    return why, med, hw


def run_adaptive(
    experiment: str,
    configurations: list[dict[str, Any]],
    name: Callable[[dict[str, Any]], str],
    run_one: Callable[[Trial], dict[str, Any]],
    metric: Callable[[dict[str, Any]], float],
    outdir: Path,
    provenance: dict[str, Any],
    seed: int,
    n_min: int,
    n_max: int,
    ci_pct: float,
    warmups: list[dict[str, Any]] | None = None,
    log: Callable[[str], None] = lambda s: print(s, file=sys.stderr),
    validity: Validity | None = None,
    progress: Progress | None = None,
    max_invalid_share: float | None = None,
    verdicts: sequential.Rule | None = None,
) -> tuple[list[dict[str, Any]], list[Stopping]]:
    """Run n_min repetitions of every configuration (interleaved, seeded), then add rounds of
    one more repetition for each configuration that has fewer than n_min valid trials or whose
    primary metric is not yet precise enough (precise_enough: the median's order-statistic CI
    wider than +- ci_pct % of it), until all are or n_max valid trials exist. Only valid trials count; a configuration
    with more invalid trials than max(n_min, 3) stops the run (TrialFailed): the manipulation
    does not happen on this machine, and more trials would not make it happen. With
    `max_invalid_share`, a run whose invalid trials are more than that share of its judged trials
    stops too (TrialFailed, each reason with its count), checked after each round from the
    first n_min on: a device or a tool that keeps failing would otherwise go on to n_max.
    With `verdicts` (sequential.Rule, of the same n_min and n_max), a configuration that a
    published claim judges also stops at one of the rule's looks once every such claim's
    interval lies wholly inside its window or wholly outside it by the rule's margin ("verdict").
    A configuration whose metric (coded: +-inf where censored) is censored in half or more of
    n_max trials already stops too ("censored", sequential.censored_for_good): its median is
    censored whatever the remaining trials give, so more of them cannot narrow it.

    Every decision depends only on the seed and the recorded results, so a resumed run makes
    the same decisions. Returns the records and each configuration's stopping reason.
    """
    if not 2 <= n_min <= n_max:
        raise ValueError(f"need 2 <= n_min <= n_max, got n_min={n_min}, n_max={n_max}")
    rng = random.Random(seed)
    records: list[dict[str, Any]] = []
    reps = {name(c): 0 for c in configurations}
    by_name = {name(c): c for c in configurations}
    order = 0

    def batch(confs: list[dict[str, Any]], rounds: int, warm: list[dict[str, Any]]) -> None:
        nonlocal order
        planned = plan(confs, rounds, rng, name, warm, done=reps, first_order=order)
        order += len(planned)
        records.extend(run(experiment, planned, run_one, outdir, provenance, log, validity, progress))
        for c in confs:
            reps[name(c)] += rounds

    batch(configurations, n_min, warmups or [])
    stopping: dict[str, Stopping] = {}
    while True:
        check_invalid_share(experiment, records, max_invalid_share)
        pending = []
        for cname, conf in by_name.items():
            if cname in stopping:
                continue
            mine = [r for r in records if not r["warmup"] and name(r["params"]) == cname]
            if any(r["status"] != "ok" for r in mine):
                stopping[cname] = Stopping(cname, reps[cname], "failed")
                continue
            counted = [r for r in mine if is_counted(r)]
            invalid = [r for r in mine if not r.get("valid", True)]
            if len(invalid) > max(n_min, 3):
                reasons = "; ".join(sorted({r["invalid_reason"] for r in invalid}))
                raise TrialFailed(f"{experiment}: {cname}: {len(invalid)} of {len(mine)} trials invalid "
                                  f"(the manipulation did not happen on this machine): {reasons}")
            if len(counted) < n_min:
                pending.append(conf)
                continue
            values = [metric(r["result"]) for r in counted]
            why, med, hw = stop_reason(values, n_max, ci_pct, lambda c=cname, v=values: (
                verdicts is not None and verdicts.judges_of(c) and sequential.verdict_known(
                    c, len(v), verdicts, sequential.frame([r for r in records if is_counted(r)], name))))
            if why is not None:
                finite = math.isfinite(med) and math.isfinite(hw)  # stopping.json holds no +-inf
                stopping[cname] = Stopping(cname, len(counted), why, med if finite else None,
                                           hw if finite else None, len(invalid))
            else:
                pending.append(conf)
        if not pending:
            break
        batch(pending, 1, [])
    return records, [stopping[n] for n in by_name]
