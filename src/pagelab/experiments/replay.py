"""What a run under today's stopping rule would take of a recorded run: the fleet's plan
(pagelab.run.fleetplan, given `kept` by `pagelab fleet plan`) times a profile from a recording
made under an earlier rule, so it keeps
of each configuration only the trials that today's rule would have run.

Today's rule is the schema's repetitions for the recording's profile (config.check_block with
the profile alone) and the claims judged there (sequential.judges). Each configuration's counted
trials are taken in their recorded order, and at each n from n_min it stops as
trials.run_adaptive would: its metric's interval within ci_pct (precise_enough), its metric
censored for good, its verdicts settled at a look, or n_max. A verdict reads the other
configurations' first n counted trials in place of the trials a run would have had by then (the
run interleaves its configurations round by round, so they have about as many). A configuration
whose recording ran out before today's rule would stop keeps every trial it has. Invalid trials
and warm-ups recorded before a configuration's last kept trial are kept: a run pays for them too.
`fewest` takes of each configuration its first n_min counted trials instead: the least a run
under today's rule can take at the recording's seconds per trial (the floor `pagelab fleet plan`
prints beside its prediction).
Not for: judging (a recording is judged on every trial it holds).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def kept(experiment: str, directory: Path | str, recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records of `recs` (a recorded run of `experiment` in `directory`, which holds its
    config.json) that a run under today's stopping rule would have run; `recs` unchanged where the
    directory has no config.json or no record names its parameters."""
    return _take(experiment, directory, recs, fewest=False)


def fewest(experiment: str, directory: Path | str, recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """As `kept`, with every configuration stopped at today's n_min, the fewest counted trials the
    rule lets any configuration stop at: the least a run under today's rule can take at the
    recording's seconds per trial (every arm's interval narrow, or its answer known, at its first
    look)."""
    return _take(experiment, directory, recs, fewest=True)


def _take(experiment: str, directory: Path | str, recs: list[dict[str, Any]], fewest: bool) -> list[dict[str, Any]]:
    from pagelab.claims import registry
    from pagelab.experiments import harness
    from pagelab.run import sequential, trials
    from pagelab.system import config

    cfg = harness.read_json(directory, "config.json")
    if not cfg or not all(isinstance(r.get("params"), dict) and "result" in r for r in recs):
        return recs
    desc = harness.descriptor(experiment)
    reps = config.check_block(experiment, {"profile": cfg.get("profile", "quick")}, machine=False)["repetitions"]
    held, _ = sequential.judges(experiment, registry.load_claims(), desc.measures(cfg), cfg.get("profile", "quick"))
    rule = sequential.rule(reps, held)
    counted = sorted((r for r in recs if trials.is_counted(r)), key=lambda r: r["order"])
    by: dict[str, list[dict[str, Any]]] = {}
    for r in counted:
        by.setdefault(desc.conf_name(r["params"]), []).append(r)
    # each counted trial's metric, once: the looks below read every prefix of a configuration's list
    metrics = {conf: [desc.metric(r["result"]) for r in mine] for conf, mine in by.items()}

    def stops(conf: str, n: int) -> bool:
        """Whether `conf` stops at its n-th counted trial (trials.stop_reason)."""
        def settled() -> bool:
            return bool(rule.judges_of(conf)) and sequential.verdict_known(
                conf, n, rule, sequential.frame([r for other in by.values() for r in other[:n]], desc.conf_name))
        return trials.stop_reason(metrics[conf][:n], rule.n_max, rule.ci_pct, settled)[0] is not None

    def stop_n(conf: str, mine: list[dict[str, Any]]) -> int:
        if fewest:
            return min(rule.n_min, len(mine))
        return next((n for n in range(rule.n_min, len(mine) + 1) if stops(conf, n)), len(mine))

    last = {conf: mine[stop_n(conf, mine) - 1]["order"] for conf, mine in by.items()}  # last kept trial, by order
    return [r for r in recs if r.get("warmup") or (conf := desc.conf_name(r["params"])) not in last
            or r.get("order", 0) <= last[conf]]
