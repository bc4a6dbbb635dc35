"""Every experiment's notebook is notebooks/_template.ipynb's code cells and its own narrative;
executed by papermill on real trial records from a quick run (the reference recording in
data/recorded/), it produces its figure, table, macros and measurements; the macros compile as
LaTeX definitions (letters-only names, no duplicates); and the verdicts judged from that
recorded run are computed by the same rules as a live run's."""

import json
import re
from pathlib import Path

import pytest

from conftest import REFERENCE_RECORDING, REPO, recorded_params
from pagelab.paper import claims
from pagelab.run.recording import holds
from pagelab.system import config

EXPERIMENTS = config.experiments()
TEMPLATE = REPO / "notebooks" / "_template.ipynb"


def code_cells(path: Path) -> list[tuple[str, list[str]]]:
    """A notebook's code cells in order: each one's source and its tags."""
    nb = json.loads(path.read_text())
    return [("".join(c["source"]), c.get("metadata", {}).get("tags", [])) for c in nb["cells"]
            if c["cell_type"] == "code"]


@pytest.mark.parametrize("path", [REPO / "notebooks" / f"{e}.ipynb" for e in EXPERIMENTS]
                         + [REPO / "tests" / "toy" / "toy.ipynb"], ids=lambda p: str(p.relative_to(REPO)))
def test_every_notebook_is_the_template_and_its_narrative(path):
    template = code_cells(TEMPLATE)
    assert template and template[0][1] == ["parameters"]
    cells = code_cells(path)
    for i, (want, got) in enumerate(zip(template, cells, strict=False)):
        assert got == want, f"{path.name}: code cell {i + 1} is not the template's:\n{got[0]}\n---\n{want[0]}"
    assert len(cells) == len(template), f"{path.name}: {len(cells)} code cells, the template has {len(template)}"
    nb = json.loads(path.read_text())
    assert nb["cells"][0]["cell_type"] == "markdown" and "".join(nb["cells"][0]["source"]).startswith(
        f"# {path.stem}:"), f"{path.name}: its narrative comes first, under its name"


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
    table = claims.verdicts(recorded_results, profile="quick").set_index("id")
    assert set(table["verdict"]) <= set(claims.VERDICTS)
    # Every claim the quick profile can judge has its measurement in the recorded run.
    from pagelab.run.published import load_claims

    judged = load_claims()
    for c in judged.to_dict("records"):
        if c["profiles"] == "all" and holds(REFERENCE_RECORDING, c["experiment"]):  # a new one: not yet
            assert "not measured" not in table.loc[c["id"], "note"], (c["id"], table.loc[c["id"], "note"])
    for cid in table.index[table["verdict"] == claims.REPRODUCED]:
        r = table.loc[cid]
        if r["value"] == r["value"]:  # a window claim: its point estimate lies inside the window
            assert r["ci_low"] <= r["value"] <= r["ci_high"]
