"""The paper from the reference machine's recorded quick run (make PROFILE=recorded) in a
fresh copy of the repository: the Makefile's own command line, no trial run, no paging state
touched, and the PDF names the machine and commit the data came from; then pagelab compare of
the recording with itself reports no change."""

import shutil
import subprocess
import time

import pytest

from conftest import REFERENCE_RECORDING as REFERENCE
from conftest import REPO, copy_repo
from pagelab import compare, state
from pagelab.recording import recorded_dir

pytestmark = pytest.mark.pipeline


def test_the_reference_recording_is_in_the_repository():
    d = recorded_dir() / REFERENCE
    from pagelab import config

    for exp in config.experiments():
        assert (d / exp / "trials.csv").exists(), f"{exp} missing from the recording {d}"
        assert (d / exp / "provenance.json").exists()
    size = sum(p.stat().st_size for p in recorded_dir().rglob("*") if p.is_file())
    assert size <= 20 << 20


def test_a_recording_compared_with_itself_shows_no_change():
    rows = compare.compare(recorded_dir() / REFERENCE, recorded_dir() / REFERENCE)
    assert rows and all(r.word == "same" for r in rows)


def test_make_profile_recorded_builds_the_paper_without_running_a_trial(tmp_path_factory, env):
    if shutil.which("latexmk") is None or shutil.which("pdftotext") is None:
        pytest.skip("latexmk/pdftotext missing: run `make setup`")
    base = REPO / ".pytest-scratch" / f"recorded-{tmp_path_factory.getbasetemp().name}"
    shutil.rmtree(base, ignore_errors=True)
    repo = copy_repo(base / "repo")
    out = subprocess.run(["make", "-n", "--no-print-directory", "paper", "PROFILE=recorded"], cwd=repo, env=env,
                         capture_output=True, text=True, timeout=60)
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("bash workflow/scripts/run_pipeline.sh"))
    assert f"recording={REFERENCE}" in line
    before = state.show()
    t0 = time.monotonic()
    run = subprocess.run(line.split(), cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    seconds = time.monotonic() - t0
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    print(f"make PROFILE=recorded: {seconds:.0f} s after set-up")
    assert state.show() == before
    logs = {p.name: p.read_text() for p in (repo / "results/logs").glob("*.log")}
    from pagelab import config

    for exp in config.experiments():
        assert "replayed from" in logs[f"{exp}.log"], exp
    assert not (repo / "scratch").exists() or not any((repo / "scratch").iterdir())
    text = subprocess.run(["pdftotext", "-layout", str(repo / "results/paper.pdf"), "-"],
                          capture_output=True, text=True, check=True).stdout
    flat = " ".join(text.split())
    assert REFERENCE.split("/")[0] in flat and "without running a trial" in flat
    assert "This machine against the reference machine" not in flat  # the run is the reference
    shutil.rmtree(base, ignore_errors=True)
