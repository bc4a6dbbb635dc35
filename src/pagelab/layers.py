"""The package's layers, bottom first: a module may import from its own layer and the layers
below it, never from one above, and no import (at a module's top or inside a function) closes a
circle. tests/test_layers.py holds every module of src/pagelab to that.

Each layer is one subpackage of the same name (src/pagelab/<layer>/), so the folders are the
layers; beside them stand only the package's __init__, this module (core) and the command line
(paper). A module belongs to the layer of the longest name here that is it or a package holding
it (`pagelab.system` covers `pagelab.system.state.kernel`; the package `pagelab` itself covers
only its own __init__). A new top-level module needs a line here, or the test fails naming it.
Not for: anything at run time; nothing imports this module but the test and the docs.
"""

from __future__ import annotations

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # Libraries that touch nothing on the machine: paths, sizes, records on disk, LaTeX text,
    # statistics (the trial loop's adaptive repetitions use the median's interval), fits, and
    # figures drawn from the frames handed to them (each experiment's `analyse` names its own).
    ("core", ("pagelab", "pagelab.layers", "pagelab.core")),
    # System state and counters: what changes the machine (journaled), what reads it, what the
    # machine is (provenance) and the configuration checked against it.
    ("system", ("pagelab.system",)),
    # The data runs leave: recorded runs (data/recorded/) and trial records as a table.
    ("data", ("pagelab.data",)),
    # The published claims: the registry (claims.csv), its changelog, and the verdicts on them.
    # Below the trials, whose stopping rule reads the registry; the rule for unnamed hardware,
    # which needs every experiment's descriptor, is the experiments' (harness.load_claims).
    ("claims", ("pagelab.claims",)),
    # Running trials, devices and tools: the native tools, the trial loop and its progress, the
    # emulated devices, the hogs and the victim, the Superfetch-like agent, the stopping rule,
    # where a run's time went, and the fleet's jobs and their plan.
    ("run", ("pagelab.run",)),
    # The experiments: the one harness and each experiment's module.
    ("experiments", ("pagelab.experiments",)),
    # Analysis across experiments and runs: two runs side by side, the CI runs.
    ("analysis", ("pagelab.analysis",)),
    # The paper at the top, with what drives everything: the paper and its lint, the appendix,
    # the results page, the fleet's merge and section, and the command line (`pagelab.cli`, the
    # console script).
    ("paper", ("pagelab.paper", "pagelab.cli")),
)

RANK = {name: i for i, (name, _) in enumerate(LAYERS)}
_OWNER = {module: name for name, modules in LAYERS for module in modules}


def layer(module: str) -> str | None:
    """The layer of a module of the package (pagelab.experiments.pagein -> experiments), or None
    when no line of LAYERS covers it."""
    if module == "pagelab":
        return _OWNER[module]
    parts = module.split(".")
    for n in range(len(parts), 1, -1):
        owner = _OWNER.get(".".join(parts[:n]))
        if owner is not None:
            return owner
    return None
