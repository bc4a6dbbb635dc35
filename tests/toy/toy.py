"""toy: the smallest experiment, for the test that a new experiment is its own files (its module,
its schema fragment, its notebook's narrative, its paper section) and its claims rows: each trial
records a known number, `value` for the arm `single` and twice it for `double`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from pagelab.core import plots
from pagelab.core.latex import fmt
from pagelab.core.stats import median_ci
from pagelab.experiments import harness
from pagelab.experiments.harness import entry
from pagelab.run import trials
from pagelab.system import state

NAME = "toy"


def configurations(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"arm": a} for a in cfg["arms"]]


def run_trial(st: state.State | None, cfg: dict[str, Any], trial: trials.Trial, scratch: Path) -> dict[str, Any]:
    factor = 2.0 if trial.params["arm"] == "double" else 1.0
    return {"arm": trial.params["arm"], "value": factor * float(cfg["value"])}


def summarise(frame: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for arm, g in frame.groupby("arm", sort=True):
        e = median_ci(g["value"])
        rows.append({"arm": arm, "n": e.n, "value": e.value, "lo": e.ci_low, "hi": e.ci_high})
    return pd.DataFrame(rows)


def measurements(summary: pd.DataFrame) -> dict[str, Any]:
    return {f"{NAME}.{r['arm']}.value": entry(r["value"], r["lo"], r["hi"], "units", int(r["n"]),
                                              "median, order statistics") for _, r in summary.iterrows()}


def analyse(results_dir: Path | str, profile: str) -> harness.Analysis:
    res = harness.open_results(results_dir)
    summary = summarise(res.trials)
    return harness.Analysis(
        res, res.describe(profile), summary, measurements(summary),
        {f"Toy{r['arm'].capitalize()}Value": fmt(r["value"]) for _, r in summary.iterrows()},
        harness.Table(summary, "lrrrr"),
        {NAME: lambda: plots.bars_ci(summary, "arm", "value", "lo", "hi", ylabel="value")})


EXPERIMENT = harness.Experiment(
    name=NAME, analyse=analyse, seeds=("none",), configurations=configurations, trial=run_trial,
    metric=lambda r: r["value"], columns=("value",), required_columns=("result.value",),
    tools=lambda cfg: [], changes_state=lambda cfg: False)
