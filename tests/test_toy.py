"""An experiment touches only its own files: tests/toy's experiment, added to a copy of the
repository as a new experiment is added (conftest.add_toy_experiment), creates its four files
and appends its claims to the one claims table, and changes no other file; in that copy it is an
experiment by its name alone (the pipeline test takes it on to the paper)."""

import csv
import hashlib
import io
import json
import os
import subprocess
import sys

from conftest import REPO, TOY_CLAIMS, TOY_FILES, add_toy_experiment, copy_repo


def digests(repo):
    return {str(p.relative_to(repo)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in repo.rglob("*") if p.is_file() and ".git" not in p.relative_to(repo).parts}


def test_adding_the_toy_writes_its_own_files_and_its_claims_rows_only(tmp_path):
    repo = copy_repo(tmp_path / "repo")
    before = digests(repo)
    claims_before = (repo / TOY_CLAIMS[1]).read_text()
    add_toy_experiment(repo)
    after = digests(repo)
    added = sorted(set(after) - set(before))
    changed = sorted(k for k in before if after.get(k) != before[k])
    assert added == sorted(TOY_FILES.values())
    assert changed == [TOY_CLAIMS[1]], "adding an experiment edited a shared file"
    # the claims table: the old rows untouched, only rows of the toy's own appended
    claims_after = (repo / TOY_CLAIMS[1]).read_text()
    assert claims_after.startswith(claims_before)
    header = next(csv.reader(io.StringIO(claims_before)))
    rows = list(csv.DictReader(io.StringIO(claims_after[len(claims_before):]), fieldnames=header))
    assert rows and {r["experiment"] for r in rows} == {"toy"}


def test_in_the_copy_the_toy_is_an_experiment_by_its_name_alone(tmp_path):
    """The copy's own package (PYTHONPATH, as the pipeline test runs it) finds the toy through the
    schema: its configuration is its schema's defaults, its descriptor, its claim loaded and
    checked, its notebook the template with its narrative."""
    repo = copy_repo(tmp_path / "repo")
    add_toy_experiment(repo)
    code = (
        "import json\n"
        "from pagelab.core import notebooks\n"
        "from pagelab.experiments import harness\n"
        "from pagelab.system import config\n"
        "nb = notebooks.notebook('toy')\n"
        "print(json.dumps({'experiments': config.experiments(), 'block': config.load()['toy'],\n"
        "                  'name': harness.descriptor('toy').name,\n"
        "                  'claims': sorted(harness.load_claims().query('experiment == \"toy\"')['id']),\n"
        "                  'code': [''.join(c['source']) for c in nb['cells'] if c['cell_type'] == 'code']}))\n")
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}
    env.pop("PAGELAB_ROOT", None)
    run = subprocess.run([sys.executable, "-c", code], cwd=repo, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.splitlines()[-1])
    assert "toy" in got["experiments"] and got["name"] == "toy"
    assert got["block"]["arms"] == ["single", "double"] and got["block"]["value"] == 42
    assert got["claims"] == ["TOY1"]
    template = json.loads((REPO / "notebooks" / "_template.ipynb").read_text())
    assert got["code"] == ["".join(c["source"]) for c in template["cells"] if c["cell_type"] == "code"]
