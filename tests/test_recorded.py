"""The paper from the reference machine's recorded quick run (make PROFILE=recorded) in a
fresh copy of the repository: the Makefile's own command line, no trial run, no paging state
touched, and the PDF names the machine and commit the data came from; then pagelab compare of
the recording with itself reports no change."""

import json
import shutil
import subprocess
import time

import pytest

from conftest import REFERENCE_RECORDING as REFERENCE
from conftest import REPO, copy_repo
from pagelab import compare, state
from pagelab.recording import recorded_dir

pytestmark = pytest.mark.pipeline


@pytest.mark.parametrize("profile", ["quick", "full", "seed"])
def test_the_reference_recordings_are_in_the_repository(profile):
    """Every experiment of each reference recording, of that profile, from a clean checkout;
    the whole folder within its 20 MiB."""
    d = recorded_dir() / REFERENCE.split("/")[0] / profile
    from pagelab import config

    for exp in config.experiments():
        assert (d / exp / "trials.csv").exists(), f"{exp} missing from the recording {d}"
        assert json.loads((d / exp / "config.json").read_text())["profile"] == profile, exp
        assert not json.loads((d / exp / "provenance.json").read_text())["git"]["dirty"], exp
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
    PROFILE=recorded` as written (set-up included: the Debian packages are found without root, a
    venv of their own from the lock, the native tools), and the PDF names the recording's machine."""
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
    user_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    as_user = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"]
    out = subprocess.run(as_user + ["make", "-n", "--no-print-directory", "paper", "PROFILE=recorded"],
                         cwd=repo, env=user_env, capture_output=True, text=True, timeout=60)
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("bash workflow/scripts/run_pipeline.sh"))
    assert f"recording={REFERENCE}" in line
    before = state.show()
    t0 = time.monotonic()
    run = subprocess.run(as_user + ["make", "PROFILE=recorded"], cwd=repo, env=user_env,
                         capture_output=True, text=True, timeout=1500)
    seconds = time.monotonic() - t0
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    print(f"make PROFILE=recorded as uid {uid}, set-up included: {seconds:.0f} s")
    assert (repo / "results/paper.pdf").stat().st_uid == uid
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
