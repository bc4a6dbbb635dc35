"""Every experiment's notebook, executed by papermill on real trial records from a quick run
(committed under tests/data/), produces its figure, table, macros and measurements; the
macros compile as LaTeX definitions (letters-only names, no duplicates)."""

import json
import re
import shutil
import subprocess

import pytest

from conftest import REPO, VENV_BIN
from pagelab import config

EXPERIMENTS = config.experiments()


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_notebook_runs_on_recorded_trials(experiment, tmp_path, env):
    data = REPO / "tests" / "data" / experiment
    assert (data / "trials.csv").exists(), f"no recorded trials for {experiment} in tests/data"
    out = tmp_path / experiment
    shutil.copytree(data, out)
    run = subprocess.run(
        [str(VENV_BIN / "papermill"), "--cwd", str(REPO), "-k", "python3",
         str(REPO / "notebooks" / f"{experiment}.ipynb"), str(out / f"{experiment}.ipynb"),
         "-p", "results_dir", str(out), "-p", "profile", "quick"],
        capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
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
