"""An experiment's notebook, made from notebooks/_template.ipynb and the experiment's narrative
(notebooks/<name>.ipynb), so that the code every experiment's notebook runs is written once.

The narrative holds markdown cells only: what the seed measured and claimed, what the experiment
does here, how its trials are judged. In the notebook `notebook(name)` returns, the narrative's
untagged cells (the first one headed `# <name>: ...`) take the place of the template's cell
tagged `narrative`, and a narrative cell tagged with a section's tag (`summary`, `figures`,
`details`, `outputs`: the tags of the template's headings) stands after that heading, before the
section's code. Everything else, the papermill `parameters` cell first among the code cells, is
the template's. The pipeline pipes the result into papermill (`pagelab pipeline notebook NAME |
pagelab pipeline execute - results/NAME/NAME.ipynb -p results_dir ... -p profile ...`), which
runs it with papermill (`execute`).
"""

from __future__ import annotations

import copy
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from pagelab.core.paths import root

NARRATIVE = "narrative"  # the template cell's tag that the narrative's untagged cells replace
TEMPLATE = "_template.ipynb"

Notebook = dict[str, Any]


def notebooks_dir() -> Path:
    return root() / "notebooks"


def _tags(cell: dict[str, Any]) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _text(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def sections(template: Notebook) -> list[str]:
    """The tags of the template's headings, in order: where a narrative cell may stand."""
    return [t for c in template["cells"] if c["cell_type"] == "markdown" for t in _tags(c) if t != NARRATIVE]


def narrative_problems(name: str, narrative: Notebook, template: Notebook) -> list[str]:
    """What keeps a narrative from being put into the template: a cell that is not markdown
    (the code is the template's), a tag that names no heading of the template, no opening cell
    headed `# <name>:`."""
    known = sections(template)
    problems = []
    for i, c in enumerate(narrative.get("cells", []), start=1):
        if c.get("cell_type") != "markdown":
            again = " (it repeats a template code cell)" if any(
                _text(t) == _text(c) for t in template["cells"] if t["cell_type"] == "code") else ""
            problems.append(f"cell {i} is a {c.get('cell_type')} cell{again}: a narrative holds markdown only, "
                            "the code is the template's")
        bad = [t for t in _tags(c) if t not in known]
        if len(_tags(c)) > 1:
            problems.append(f"cell {i}: tags {_tags(c)}: one heading at most")
        elif bad:
            problems.append(f"cell {i}: tag {bad[0]!r} names no heading of the template ({', '.join(known)})")
    opening = [c for c in narrative.get("cells", []) if not _tags(c)]
    if not opening or not _text(opening[0]).startswith(f"# {name}:"):
        problems.append(f"its first untagged cell is headed `# {name}: ...` (what it measures, the seed)")
    return problems


def assemble(name: str, narrative: Notebook, template: Notebook, where: str = "") -> Notebook:
    """The template with the narrative put in (module docstring); ValueError naming `where` (the
    narrative's file) and every problem (narrative_problems)."""
    problems = narrative_problems(name, narrative, template)
    if problems:
        raise ValueError(f"{where or name}: " + "; ".join(problems))
    if not any(NARRATIVE in _tags(c) for c in template["cells"]):
        raise ValueError(f"the template has no cell tagged {NARRATIVE!r} for the narrative")
    own = [copy.deepcopy(c) for c in narrative["cells"]]
    cells: list[dict[str, Any]] = []
    for cell in template["cells"]:
        tags = _tags(cell)
        if NARRATIVE in tags:
            cells += [c for c in own if not _tags(c)]
            continue
        cells.append(copy.deepcopy(cell))
        if cell["cell_type"] == "markdown":
            cells += [c for c in own if set(_tags(c)) & set(tags)]
    seen: set[str] = set()
    for i, c in enumerate(cells):  # nbformat 4.5: every cell id unique
        if "id" in c and c["id"] in seen:
            c["id"] = f"{name}-{i}"
        seen.add(c.get("id", ""))
    return {"cells": cells, **{k: v for k, v in template.items() if k != "cells"}}


def read(path: Path | str) -> Notebook:
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not a notebook ({exc.msg})") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
        raise ValueError(f"{path}: not a notebook (no list of cells)")
    return doc


def notebook(name: str, directory: Path | str | None = None) -> Notebook:
    """Experiment `name`'s notebook: `directory`'s (default notebooks/) template with its
    narrative <name>.ipynb put in. OSError or ValueError naming the file."""
    d = Path(directory) if directory is not None else notebooks_dir()
    return assemble(name, read(d / f"{name}.ipynb"), read(d / TEMPLATE), str(d / f"{name}.ipynb"))


def dumps(nb: Notebook) -> str:
    """A notebook as the file it is (JSON, one-space indent, as Jupyter writes it)."""
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


# jupyter_client's errors for a kernel that did not come up: it died before its first reply (two
# kernels started at once can be handed the same free port, since jupyter_client picks ports,
# closes them and passes them on: jupyter/jupyter_client#154) or it never replied
START_FAILURES = ("Kernel died before replying to kernel_info", "Kernel didn't respond in")
ATTEMPTS = 3


def execute(text: str, output: Path | str, parameters: list[tuple[str, str]], kernel: str = "python3",
            cwd: Path | str = ".", attempts: int = ATTEMPTS) -> int:
    """Run the notebook `text` with papermill as `papermill --cwd CWD -k KERNEL IN OUTPUT -p NAME
    VALUE ...` would, with a fresh kernel again, up to `attempts` runs in all, while the kernel
    fails to start (START_FAILURES); a failure after the start, such as a cell's error, is raised
    at once. Returns the number of runs it took."""
    from papermill.cli import papermill as papermill_cli

    with tempfile.TemporaryDirectory(prefix="pagelab-notebook-") as tmp:
        source = Path(tmp) / "input.ipynb"
        source.write_text(text)
        args = [str(source), str(output), "--cwd", str(cwd), "-k", kernel]
        for name, value in parameters:
            args += ["-p", name, value]
        attempt = 1
        while True:
            try:
                papermill_cli.main(args=args, prog_name="papermill", standalone_mode=False)
                return attempt
            except RuntimeError as exc:
                if attempt == attempts or not str(exc).startswith(START_FAILURES):
                    raise
                attempt += 1
                print(f"pagelab: kernel {kernel!r} did not start ({exc}); starting it again, "
                      f"run {attempt} of at most {attempts}", file=sys.stderr, flush=True)
