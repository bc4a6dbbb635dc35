"""The paper from the reference machine's recorded quick run (make PROFILE=recorded) in a
fresh copy of the repository: the Makefile's own command line, no trial run, and the PDF names
the machine and commit the data came from; then pagelab compare of the recording with itself
reports no change. The run is an unprivileged user's, who has no right to change paging state,
so this file runs beside the hardware tests (tests/test_beside.py)."""

import json
import re
import shlex
import shutil
import subprocess
import sys
import time

import pytest

from conftest import REFERENCE_RECORDING as REFERENCE
from conftest import REPO, add_toy_experiment, check_paper_layout, copy_repo, recorded_params
from pagelab.analysis import compare
from pagelab.data.recording import holds, recorded_dir
from pagelab.system import config

pytestmark = pytest.mark.pipeline


@pytest.mark.parametrize("name,exp", [
    case for profile in ("quick", "full", "seed")
    for case in recorded_params(config.experiments(), f"{REFERENCE.split('/')[0]}/{profile}", with_recording=True)])
def test_the_reference_recordings_are_in_the_repository(name, exp):
    """Every experiment of each reference recording, of that profile, from a clean checkout (a
    new experiment is skipped by name until it is recorded)."""
    d = recorded_dir() / name
    assert (d / exp / "trials.csv").exists(), f"{exp} missing from the recording {d}"
    assert json.loads((d / exp / "config.json").read_text())["profile"] == name.rsplit("/", 1)[1], exp
    assert not json.loads((d / exp / "provenance.json").read_text())["git"]["dirty"], exp


def test_the_recordings_keep_within_their_20_mib():
    size = sum(p.stat().st_size for p in recorded_dir().rglob("*") if p.is_file())
    assert size <= 20 << 20


def test_a_recording_compared_with_itself_shows_no_change():
    rows = compare.compare(recorded_dir() / REFERENCE, recorded_dir() / REFERENCE)
    assert rows and all(r.word == "same" for r in rows)


def _unprivileged() -> tuple[int, int]:
    """nobody's uid and gid: a real user with no rights here."""
    import pwd

    pw = pwd.getpwnam("nobody")
    return pw.pw_uid, pw.pw_gid


def test_make_profile_recorded_builds_the_paper_as_an_unprivileged_user(tmp_path_factory, env):
    """A user without root builds the paper from the recording on a fresh copy: `make
    PROFILE=recorded` as written (set-up included: the paper's Debian packages are found without
    root and a venv of their own is made from the lock; no native tool is built), and the PDF names
    the recording's machine."""
    import os

    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root (to become an unprivileged user) and setpriv")
    if shutil.which("latexmk") is None or shutil.which("pdftotext") is None:
        pytest.skip("latexmk/pdftotext missing: run `make setup`")
    uid, gid = _unprivileged()
    base = REPO / ".pytest-scratch" / f"recorded-{tmp_path_factory.getbasetemp().name}"
    shutil.rmtree(base, ignore_errors=True)
    repo = copy_repo(base / "repo")
    home = base / "home"
    home.mkdir()
    subprocess.run(["chown", "-R", f"{uid}:{gid}", str(base)], check=True)
    # The user's own environment: no /root paths (this machine's pyenv lives there, mode 700).
    # PIP_COMPILE=0: the venv's pip leaves byte-compiling to Python, which compiles a module when
    # it is first imported (the run imports about a third of the venv's ~8800 modules; pip would
    # compile them all); the venv is still made from the lock, its hashes checked.
    user_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", "PIP_COMPILE": "0"}
    as_user = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"]
    out = subprocess.run(as_user + ["make", "-n", "--no-print-directory", "paper", "PROFILE=recorded"],
                         cwd=repo, env=user_env, capture_output=True, text=True, timeout=60)
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("bash workflow/scripts/run_pipeline.sh"))
    assert f"recording={REFERENCE}" in line
    t0 = time.monotonic()
    run = subprocess.run(as_user + ["make", "PROFILE=recorded"], cwd=repo, env=user_env,
                         capture_output=True, text=True, timeout=1500)
    seconds = time.monotonic() - t0
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    print(f"make PROFILE=recorded as uid {uid}, set-up included: {seconds:.0f} s")
    assert (repo / "results/paper.pdf").stat().st_uid == uid
    assert not (repo / "native/build").exists()  # the recorded route builds no native tool
    logs = {p.name: p.read_text() for p in (repo / "results/logs").glob("*.log")}
    for exp in config.experiments():
        if holds(REFERENCE, exp):  # a new experiment, not recorded yet, is left out (named)
            assert "replayed from" in logs[f"{exp}.log"], exp
    assert not (repo / "scratch").exists() or not any((repo / "scratch").iterdir())
    text = check_paper_layout(repo)
    flat = " ".join(text.split())
    assert REFERENCE.split("/")[0] in flat and "without running a trial" in flat
    # the abstract and the appendix say where the numbers were measured: not on this machine
    machine = REFERENCE.split("/")[0]
    assert f"Every number, table and figure here was measured on the reference machine {machine}" in flat
    assert "measured on the machine that built this document" not in flat
    assert "This machine against the reference machine" not in flat  # the run is the reference
    # Every font is an outline font (Type 1 or the figures' TrueType): no METAFONT bitmap (Type 3),
    # which TeX Live makes, on first use and per user, for a family the preamble leaves to EC.
    fonts = subprocess.run(["pdffonts", str(repo / "results/paper.pdf")], capture_output=True, text=True,
                           check=True).stdout
    assert len(fonts.splitlines()) > 3 and "Type 3" not in fonts, fonts
    # `make report`: the run is made (nothing left to do), then Snakemake's report of it, from
    # the run's own metadata (the paper's rule and runtime)
    report = subprocess.run(as_user + ["make", "report", "PROFILE=recorded"], cwd=repo, env=user_env,
                            capture_output=True, text=True, timeout=600)
    assert report.returncode == 0, report.stdout[-3000:] + report.stderr[-3000:]
    assert "Missing metadata for file results/paper.pdf" not in report.stderr
    assert '"Paper": {"Other": ["results/paper.pdf"]}' in (repo / "results/report.html").read_text()
    # A change to the package's code re-runs every step after the trials, never a trial: a dry
    # run with make's own Snakemake arguments, after a line of the code changed.
    args = shlex.split(line)[2:]
    with open(repo / "src/pagelab/paper/appendix.py", "a") as fh:
        fh.write("# a changed line\n")
    dry = subprocess.run(as_user + [str(repo / ".venv/bin/snakemake"), "-n", *args], cwd=repo,
                         env={**user_env, "PATH": f"{repo / '.venv/bin'}:{user_env['PATH']}"},
                         capture_output=True, text=True, timeout=300)
    assert dry.returncode == 0, dry.stdout[-2000:] + dry.stderr[-2000:]
    jobs = set(re.findall(r"^(?:local)?rule (\w+):", dry.stdout, re.M))
    assert {"tidy", "notebook", "claims", "appendix", "paper"} <= jobs and "trial" not in jobs, dry.stdout[-3000:]
    # A changed device profile re-runs the trials measured on it (here: replayed from the recording).
    disk = repo / "config/devices/hdd5400-2008.yaml"
    disk.write_text(disk.read_text().replace("rpm: 5400", "rpm: 5401"))
    dry = subprocess.run(as_user + [str(repo / ".venv/bin/snakemake"), "-n", *args], cwd=repo,
                         env={**user_env, "PATH": f"{repo / '.venv/bin'}:{user_env['PATH']}"},
                         capture_output=True, text=True, timeout=300)
    assert dry.returncode == 0, dry.stdout[-2000:] + dry.stderr[-2000:]
    assert re.search(r"^rule trial:\n(?:.*\n)*?\s+wildcards: experiment=pagein", dry.stdout, re.M), dry.stdout[-3000:]
    shutil.rmtree(base, ignore_errors=True)


def test_a_new_experiment_without_a_recording_is_skipped_by_name(tmp_path, env):
    """The toy experiment (tests/toy) added to a copy of the repository, and no recording of it:
    each test that needs a recording skips it by name, saying why, and `make PROFILE=recorded`
    plans the paper without its section, naming it, instead of refusing the recording."""
    repo = copy_repo(tmp_path / "repo")
    add_toy_experiment(repo)
    copy_env = {**env, "PYTHONPATH": str(repo / "src")}  # the copy's package, which has the toy
    # a recording of seekmodel alone: every other experiment, the toy too, is left out
    trimmed = repo / "data/recorded/trimmed/quick"
    shutil.copytree(recorded_dir() / REFERENCE / "seekmodel", trimmed / "seekmodel")
    plan = subprocess.run(["snakemake", "-n", "--workflow-profile", "workflow/profiles/default", "results/paper.pdf",
                           "results/index.html", "--config", "recording=trimmed/quick"],
                          cwd=repo, env=copy_env, capture_output=True, text=True, timeout=300)
    assert plan.returncode == 0, plan.stdout[-2000:] + plan.stderr[-2000:]
    assert "no recording of toy in trimmed/quick" in plan.stderr
    assert "results/seekmodel/trials.csv" in plan.stdout and "results/toy/" not in plan.stdout
    # the tests of the recorded run, in the copy: the toy's cases skip, with the reason
    cases = ["tests/test_recorded.py::test_the_reference_recordings_are_in_the_repository",
             "tests/test_config.py::test_every_recording_in_the_repository_is_whole_and_validates",
             "tests/test_notebooks.py::test_notebook_runs_on_recorded_trials"]
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-k", "toy", *cases],
                         cwd=repo, env=copy_env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert re.search(r"\b7 skipped\b", run.stdout) and " passed" not in run.stdout, run.stdout[-2000:]
    for name in [f"{REFERENCE.split('/')[0]}/{p}" for p in ("quick", "full", "seed")]:
        assert f"no recording of toy in {name}: record one with `pagelab record`" in run.stdout, name
