"""The experiments layer: one module per experiment, named like its rule, config block, notebook
and paper section, and `harness`, the one harness they share (`harness.Experiment`, the
descriptor each experiment module ends with, and the analysis helpers its notebook calls), and
`recovery`, the recovery trial readyboost and payoff both run.

`harness` and `recovery` are not experiments: the experiments are the blocks the schema names
(`pagelab.system.config.experiments()`), and the command line refuses any other name before it
imports `pagelab.experiments.<name>`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def split(name: str) -> Callable[[dict[str, Any], list[str]], dict[str, dict[str, Any]]] | None:
    """The experiment's Experiment.split (None: a fleet's every host runs all of it), for the
    fleet's blocks (pagelab.run.fleet.block). The descriptor is imported here, when it is asked
    for, not with this package: the Snakefile imports the package while it is parsed, and an
    experiment module imports pandas and matplotlib (about 1.1 s, python -X importtime)."""
    from pagelab.experiments.harness import descriptor

    return descriptor(name).split


def job_shares(cfg: dict[str, Any]) -> dict[tuple[str, str], Any]:
    """Each fleet job of a split run with its share's cells (pagelab.run.fleet.job_shares by the
    descriptors' cell_of), for the fleet's plan: such a job takes its cells' recorded time, not
    the whole run's. Imported when the first trial job is scheduled, not while the Snakefile is
    parsed (as `split`)."""
    from pagelab.experiments.harness import descriptor
    from pagelab.run import fleet

    return fleet.job_shares(cfg, descriptor)
