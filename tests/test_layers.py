"""The package's import layers (pagelab.layers): no module of src/pagelab imports from a layer
above its own, and no import closes a circle. Imports inside functions count as well as those at
a module's top: a deferred import is still a dependency."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from conftest import REPO
from pagelab import layers

SRC = REPO / "src"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, dict[str, int]]:
    """Every module of the package -> the package's modules it imports, each with the line of
    its first import there."""
    paths = {module_name(p): p for p in sorted((SRC / "pagelab").rglob("*.py"))}
    graph: dict[str, dict[str, int]] = {}
    for name, path in paths.items():
        edges: dict[str, int] = {}
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            found: list[str] = []
            if isinstance(node, ast.Import):
                found = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # a relative import
                    anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                found = [f"{base}.{a.name}" if f"{base}.{a.name}" in paths else base for a in node.names]
            for target in found:
                if target in paths and target != name:
                    edges.setdefault(target, node.lineno)
        graph[name] = edges
    return graph


def upward(graph: dict[str, dict[str, int]]) -> list[str]:
    """The imports from a layer above the importer's own."""
    out = []
    for module, edges in sorted(graph.items()):
        mine = layers.layer(module)
        for target, line in sorted(edges.items()):
            theirs = layers.layer(target)
            if mine and theirs and layers.RANK[theirs] > layers.RANK[mine]:
                out.append(f"{module} ({mine}) imports {target} ({theirs}) at line {line}")
    return out


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The import circles: strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


GRAPH = import_graph()


def test_every_module_has_a_layer():
    assert [m for m in GRAPH if layers.layer(m) is None] == []


def test_the_folders_are_the_layers():
    """Each subpackage of pagelab is one layer, named like it, and each layer is a subpackage:
    a new folder needs its line in LAYERS, and a layer with no folder is gone from it."""
    folders = sorted(p.name for p in (SRC / "pagelab").iterdir() if (p / "__init__.py").is_file())
    assert folders == sorted(name for name, _ in layers.LAYERS)
    assert [name for name, modules in layers.LAYERS if f"pagelab.{name}" not in modules] == []


def test_no_module_imports_from_a_layer_above_its_own():
    assert upward(GRAPH) == []


def test_no_import_circle():
    assert circles(GRAPH) == []


def test_the_checks_see_an_upward_import_and_a_circle():
    """The checks themselves, on a made-up graph: state importing the results page is upward, and
    config <-> harness is a circle."""
    graph = {"pagelab.system.state.kernel": {"pagelab.paper.report": 3}, "pagelab.paper.report": {},
             "pagelab.system.config": {"pagelab.experiments.harness": 5},
             "pagelab.experiments.harness": {"pagelab.system.config": 7}}
    assert upward(graph) == [
        "pagelab.system.config (system) imports pagelab.experiments.harness (experiments) at line 5",
        "pagelab.system.state.kernel (system) imports pagelab.paper.report (paper) at line 3"]
    assert circles(graph) == [["pagelab.experiments.harness", "pagelab.system.config"]]
    assert layers.layer("pagelab.experiments.toy") == "experiments" and layers.layer("pagelab.nothing") is None


def test_parsing_the_snakefile_imports_no_numeric_library():
    """What the Snakefile and its rule files import from pagelab, and the config check they run
    while Snakemake parses them, load neither pandas, numpy nor matplotlib (they cost the
    parse about 1.5 s when config's check imported every experiment module)."""
    names = set()
    for smk in [REPO / "workflow" / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]:
        names |= set(re.findall(r"^from (pagelab\.\w+) import (\w+)", smk.read_text(), re.M))
    assert {("pagelab.system", "config"), ("pagelab.data", "recording"), ("pagelab.run", "tools"),
            ("pagelab.run", "fleet")} <= names
    imports = "".join(f"from {package} import {module}\n" for package, module in sorted(names))
    code = (f"import sys, yaml\n{imports}"
            "cfg = config.validate(yaml.safe_load(open('config/config.yaml')) or {})\n"
            "config.check_resources(config.resolve(cfg))\n"
            "print(sorted(m for m in ('pandas', 'numpy', 'matplotlib', 'scipy') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# a dry run of the whole workflow in-process, then what it loaded: Snakemake itself imports numpy
# and pandas, so the check is on what only pagelab would bring (an executed scipy.stats or
# scipy.optimize, not the lazy placeholders pagelab.core registers, and the figure libraries)
PARSE = """import runpy, sys
sys.argv = ["snakemake", "fleet_trials", "results/paper.pdf", "-n", "--nolock", "--forceall", "--quiet", "all"]
try:
    runpy.run_module("snakemake", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    assert not exc.code, exc.code
print(sorted(m for m in ("scipy.stats._stats_py", "scipy.optimize._optimize", "matplotlib", "seaborn")
             if m in sys.modules))
print("pagelab.experiments.seekmodel" in sys.modules)
"""


def test_snakemakes_parse_of_a_fleet_loads_no_statistics_or_figure_library(tmp_path):
    """A real parse, Snakemake's dry run of the fleet and the paper in a copy whose config has a
    fleet of seekmodel and crystalmark: the fleet's plan imports those experiments' descriptors
    (seekmodel's fit among them), and neither scipy's statistics nor its optimiser, nor matplotlib
    or seaborn, load (about 0.7 s of the parse, paid again by every job a cluster runs)."""
    from conftest import copy_repo
    from test_fleet import FLEET_BLOCK

    repo = copy_repo(tmp_path / "repo")
    cfg = repo / "config" / "config.yaml"
    text = cfg.read_text()
    cfg.write_text(text[: text.index("\nfleet:")] + FLEET_BLOCK)
    out = subprocess.run([sys.executable, "-c", PARSE], cwd=repo, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    loaded, descriptor = out.stdout.strip().splitlines()[-2:]
    assert descriptor == "True", out.stdout   # the parse did import the fit's experiment
    assert loaded == "[]", out.stdout
