"""Every experiment's notebook is notebooks/_template.ipynb with its own narrative put in
(pagelab.core.notebooks; the narrative file holds markdown cells only); executed by papermill
on real trial records from a quick run (the reference recording in data/recorded/), it
produces its figure, table, macros and measurements; the macros compile as LaTeX definitions
(letters-only names, no duplicates); and the verdicts judged from that recorded run are
computed by the same rules as a live run's."""

import json
import re

import pytest

from conftest import REFERENCE_RECORDING, REPO, recorded_params
from pagelab.claims import judge
from pagelab.core import notebooks
from pagelab.data.recording import holds
from pagelab.experiments import harness
from pagelab.system import config

EXPERIMENTS = config.experiments()
TEMPLATE = REPO / "notebooks" / "_template.ipynb"


def code_cells(nb: dict) -> list[tuple[str, list[str]]]:
    """A notebook's code cells in order: each one's source and its tags."""
    return [("".join(c["source"]), c.get("metadata", {}).get("tags", [])) for c in nb["cells"]
            if c["cell_type"] == "code"]


NARRATIVES = [REPO / "notebooks" / f"{e}.ipynb" for e in EXPERIMENTS] + [REPO / "tests" / "toy" / "toy.ipynb"]


@pytest.mark.parametrize("path", NARRATIVES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_notebook_is_the_template_and_its_narrative(path):
    """An experiment's notebook file is its narrative alone (markdown cells: no code cell, so no
    copy of a template code cell); put into the template, its code cells are the template's,
    papermill's parameters cell first, and its narrative comes first under its name."""
    template = notebooks.read(TEMPLATE)
    narrative = notebooks.read(path)
    assert code_cells(template) and code_cells(template)[0][1] == ["parameters"]
    assert [c["cell_type"] for c in narrative["cells"]] == ["markdown"] * len(narrative["cells"])
    repeated = {src for src, _ in code_cells(template)} & {"".join(c["source"]) for c in narrative["cells"]}
    assert not repeated, f"{path.name} repeats a template code cell"
    nb = notebooks.assemble(path.stem, narrative, template, str(path))
    assert code_cells(nb) == code_cells(template)
    assert "".join(nb["cells"][0]["source"]).startswith(f"# {path.stem}:")
    ids = [c["id"] for c in nb["cells"]]
    assert len(ids) == len(set(ids)), "nbformat 4.5: every cell id unique"


def markdown(text: str, *tags: str) -> dict:
    return {"cell_type": "markdown", "metadata": {"tags": list(tags)} if tags else {}, "source": [text]}


def test_a_narrative_cell_stands_under_its_heading_and_code_is_refused():
    """Untagged cells open the notebook; a cell tagged `figures` stands right after the template's
    `## Figures` heading; a code cell (a copy of the template's first of all), an unknown tag
    or a missing `# name:` heading is refused, naming the file and the cell."""
    template = notebooks.read(TEMPLATE)
    nb = notebooks.assemble("x", {"cells": [markdown("# x: one"), markdown("figures note", "figures"),
                                            markdown("more")]}, template)
    texts = ["".join(c["source"]) for c in nb["cells"]]
    assert texts[:2] == ["# x: one", "more"]
    heading = next(i for i, t in enumerate(texts) if t.startswith("## Figures"))
    assert texts[heading + 1] == "figures note" and nb["cells"][heading + 2]["cell_type"] == "code"
    assert len(nb["cells"]) == len(template["cells"]) - 1 + 3
    copied = {**next(c for c in template["cells"] if c["cell_type"] == "code"), "metadata": {}}
    with pytest.raises(ValueError, match=r"x.ipynb: cell 2 is a code cell \(it repeats a template code cell\)"):
        notebooks.assemble("x", {"cells": [markdown("# x: one"), copied]}, template, "x.ipynb")
    with pytest.raises(ValueError, match=r"cell 2: tag 'summry' names no heading of the template"):
        notebooks.assemble("x", {"cells": [markdown("# x: one"), markdown("s", "summry")]}, template)
    with pytest.raises(ValueError, match=r"headed `# x: \.\.\.`"):
        notebooks.assemble("x", {"cells": [markdown("# y: one")]}, template)


@pytest.mark.parametrize("experiment", recorded_params(EXPERIMENTS))
def test_notebook_runs_on_recorded_trials(experiment, recorded_results):
    out = recorded_results / experiment
    run = json.loads((out / "papermill.json").read_text())
    assert run["returncode"] == 0, run["output"]
    for name in (f"{experiment}.pdf", f"{experiment}.png", "table.tex", "macros.tex", "measurements.json"):
        assert (out / name).stat().st_size > 0, name
    macros = (out / "macros.tex").read_text()
    names = re.findall(r"\\newcommand\{\\([A-Za-z]+)\}", macros)
    assert names and len(names) == len(set(names))
    assert all(n.startswith(experiment.capitalize()) for n in names)
    assert "\\toprule" in (out / "table.tex").read_text()
    measurements = json.loads((out / "measurements.json").read_text())
    assert all(k.startswith(experiment + ".") for k in measurements)
    assert measurements, "a recorded run that measured nothing"
    for key, m in measurements.items():
        assert "n" in m, f"{key}: every measurement says how many counted trials stand behind it"
    # every file of its own the paper's section reads (seekmodel's spans.tex, crystalmark's
    # phases.tex) came out of the same notebook, through its Analysis
    section = (REPO / "paper" / "sections" / f"{experiment}.tex").read_text()
    for name in re.findall(r"\\(?:input|includegraphics)(?:\[[^]]*\])?\{" + experiment + r"/([^}]+)\}", section):
        assert (out / name).stat().st_size > 0, name


def test_every_claim_gets_a_verdict_from_the_recorded_run(recorded_results):
    table = judge.verdicts(recorded_results, harness.load_claims(), profile="quick").set_index("id")
    assert set(table["verdict"]) <= set(judge.VERDICTS)
    # Every claim the quick profile can judge has its measurement in the recorded run.
    from pagelab.claims.registry import load_claims

    judged = load_claims()
    for c in judged.to_dict("records"):
        if c["profiles"] == "all" and holds(REFERENCE_RECORDING, c["experiment"]):  # a new one: not yet
            assert "not measured" not in table.loc[c["id"], "note"], (c["id"], table.loc[c["id"], "note"])
    for cid in table.index[table["verdict"] == judge.REPRODUCED]:
        r = table.loc[cid]
        if r["value"] == r["value"]:  # a window claim: its point estimate lies inside the window
            assert r["ci_low"] <= r["value"] <= r["ci_high"]


def test_todays_notebooks_give_the_stored_verdicts_of_the_recorded_run(recorded_results):
    """The verdicts the stored measurements of the quick recording give
    (data/published/recorded_measurements.json, what the paper and test_pipeline judge the
    recording by) are the ones today's notebooks give on it, claim by claim, with the same
    estimate and interval: a change to an analysis that moves a recording's number asks for `pagelab claims
    recorded`."""
    claims = harness.load_claims()
    now = judge.verdicts(recorded_results, claims, profile="quick").set_index("id")
    stored = judge.recorded_table(claims, judge.load_recorded()[REFERENCE_RECORDING]).set_index("id")
    assert list(now.index) == list(stored.index)
    moved = [(cid, stored.loc[cid, "verdict"], now.loc[cid, "verdict"]) for cid in now.index
             if now.loc[cid, "verdict"] != stored.loc[cid, "verdict"]
             or not all(_same(now.loc[cid, k], stored.loc[cid, k]) for k in ("value", "ci_low", "ci_high"))]
    assert not moved, f"{moved}: run `pagelab claims recorded --recording {REFERENCE_RECORDING}`"


def _same(a, b) -> bool:
    """Equal estimates: both missing, or equal to the six significant digits the store keeps."""
    try:
        a, b = float(a), float(b)
    except (TypeError, ValueError):
        return a == b
    return a == b or (a != a and b != b) or abs(a - b) <= 1e-5 * max(abs(a), abs(b), 1e-12)


def test_the_pipeline_step_prints_the_notebook_papermill_runs(capsys, tmp_path):
    """`pagelab pipeline notebook NAME` prints the template with the narrative put in (what the
    notebook rule pipes into papermill), or writes it with --output; an unknown name is bad input."""
    from pagelab.cli import main

    assert main(["pipeline", "notebook", "pagein"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == notebooks.notebook("pagein")
    assert code_cells(printed) == code_cells(notebooks.read(TEMPLATE))
    assert main(["pipeline", "notebook", "pagein", "--output", str(tmp_path / "p.ipynb")]) == 0
    assert json.loads((tmp_path / "p.ipynb").read_text()) == printed
    assert main(["pipeline", "notebook", "nosuch"]) == 2
    assert "no experiment named 'nosuch'" in capsys.readouterr().err


# A kernel that exits at its first `fails` starts (counted in a file), then runs ipykernel: a
# kernel that did not come up, as one does when jupyter_client hands two kernels started at once
# the same port (jupyter/jupyter_client#154).
FLAKY_KERNEL = """import os, sys
connection, count, fails = sys.argv[1], sys.argv[2], int(sys.argv[3])
n = int(open(count).read()) if os.path.exists(count) else 0
open(count, "w").write(str(n + 1))
if n < fails:
    sys.exit(1)
os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", "-f", connection])
"""


def _flaky(tmp_path, fails: int, cells: list[str]):
    """A kernel spec `flaky` that fails its first `fails` starts, a notebook of `cells` with a
    papermill parameters cell, and a function running `pagelab pipeline execute` on it."""
    import os
    import subprocess

    from conftest import VENV_BIN

    spec = tmp_path / "jupyter" / "kernels" / "flaky"
    spec.mkdir(parents=True)
    (tmp_path / "flaky.py").write_text(FLAKY_KERNEL)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(VENV_BIN / "python"), str(tmp_path / "flaky.py"), "{connection_file}",
                 str(tmp_path / "starts"), str(fails)],
        "display_name": "flaky", "language": "python"}))
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "flaky", "language": "python"}},
          "cells": [{"cell_type": "code", "id": f"c{i}", "metadata": {"tags": ["parameters"] if i == 0 else []},
                     "source": src, "outputs": [], "execution_count": None}
                    for i, src in enumerate(["who = 'nobody'"] + cells)]}
    env = {**os.environ, "JUPYTER_PATH": str(tmp_path / "jupyter"), "PATH": f"{VENV_BIN}:{os.environ['PATH']}"}

    def run():
        return subprocess.run([str(VENV_BIN / "pagelab"), "pipeline", "execute", "-k", "flaky", "--cwd", str(tmp_path),
                               "-", str(tmp_path / "out.ipynb"), "-p", "who", "the reader"],
                              input=json.dumps(nb), capture_output=True, text=True, env=env, timeout=300)
    return run


def starts(tmp_path) -> int:
    return int((tmp_path / "starts").read_text())


def test_a_kernel_that_did_not_come_up_is_started_again(tmp_path):
    """The notebook step (`pagelab pipeline execute`, what every notebook rule runs) starts a
    kernel that died before its first reply again, and the notebook then runs with its
    parameters; stderr says so."""
    run = _flaky(tmp_path, 1, ["print('hello', who)"])()
    assert run.returncode == 0, run.stderr[-3000:]
    assert starts(tmp_path) == 2
    assert "did not start (Kernel died before replying to kernel_info); starting it again, run 2 of at most 3" \
        in run.stderr
    out = json.loads((tmp_path / "out.ipynb").read_text())
    printed = ["".join(o.get("text", "")) for c in out["cells"] for o in c.get("outputs", [])]
    assert any("hello the reader" in t for t in printed), printed


def test_a_kernel_that_never_comes_up_fails_after_three_runs(tmp_path):
    run = _flaky(tmp_path, 99, ["print('hello', who)"])()
    assert run.returncode == 1
    assert starts(tmp_path) == notebooks.ATTEMPTS == 3
    assert run.stderr.count("starting it again") == 2
    assert run.stderr.strip().splitlines()[-1] == \
        "pagelab pipeline execute: Kernel died before replying to kernel_info"


def test_a_cell_that_fails_is_not_run_again(tmp_path):
    """Only a kernel's start is retried: a notebook whose cell raises fails at its first run."""
    run = _flaky(tmp_path, 0, ["raise SystemError('the analysis failed')"])()
    assert run.returncode != 0
    assert starts(tmp_path) == 1
    assert "starting it again" not in run.stderr
    assert "the analysis failed" in run.stderr


def test_the_notebook_step_refuses_a_notebook_that_is_not_there(tmp_path, capsys):
    from pagelab.cli import main

    assert main(["pipeline", "execute", str(tmp_path / "none.ipynb"), str(tmp_path / "out.ipynb")]) == 2
    assert "cannot read the notebook" in capsys.readouterr().err
    assert not (tmp_path / "out.ipynb").exists()
