"""Progress on the terminal: the estimate from a recorded run, the lines a trial run writes, and
a toy run through the pipeline's own entry point (workflow/scripts/run_pipeline.sh, what `make`
runs) in a real pseudo-terminal (`script`), where Snakemake's job lines and the trial runner's
progress lines must both reach the screen."""

from __future__ import annotations

import io
import os
import shutil
import subprocess

import pandas as pd
import pytest

from conftest import REPO, add_toy_experiment, copy_repo
from pagelab.run import progress


def recorded_csv(path, seconds, reps=5, warmup=0.0):
    """A recorded trials.csv whose configurations take `seconds` each (start to next start)."""
    rows, t = [], 1_800_000_000.0
    if warmup:
        rows.append(("warmup-single", t, t + warmup))
        t += warmup
    for rep in range(reps):
        for conf, secs in seconds.items():
            rows.append((f"{conf}-r{rep:02d}", t, t + secs * 0.9))
            t += secs
    iso = [pd.Timestamp(x, unit="s", tz="UTC").isoformat() for x in (r[1] for r in rows)]
    end = [pd.Timestamp(x, unit="s", tz="UTC").isoformat() for x in (r[2] for r in rows)]
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"trial_id": [r[0] for r in rows], "order": range(len(rows)), "start": iso, "end": end}) \
        .to_csv(path, index=False)


def test_a_recording_gives_seconds_and_trials_per_configuration(tmp_path):
    recorded_csv(tmp_path / "t.csv", {"single": 2.0, "double": 6.0}, reps=5, warmup=3.0)
    exp = progress.from_trials_csv(tmp_path / "t.csv", "x")
    assert exp.trials == {"single": 5, "double": 5}
    # start to next start; the last trial's own end
    assert exp.seconds["single"] == pytest.approx(2.0) and exp.seconds["double"] == pytest.approx(6.0)
    assert exp.warmup_seconds == pytest.approx(3.0)
    assert progress.conf_of("random-pc0-r03") == "random-pc0" and progress.conf_of("warmup-a") == "warmup"


def test_this_machines_recording_first_then_the_reference_machines(tmp_path):
    recorded_csv(tmp_path / "ref/quick/toy/trials.csv", {"single": 1.0})
    recorded_csv(tmp_path / "mine/quick/toy/trials.csv", {"single": 9.0})
    assert progress.expectation("toy", "quick", "mine", "ref", tmp_path).seconds["single"] == pytest.approx(9.0)
    got = progress.expectation("toy", "quick", "other", "ref", tmp_path)
    assert got.seconds["single"] == pytest.approx(1.0) and got.source == "the recorded quick run on ref"
    assert progress.expectation("toy", "full", "mine", "ref", tmp_path).seconds == {}


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_lines_count_trials_and_time_left_follows_this_runs_pace(tmp_path):
    recorded_csv(tmp_path / "t.csv", {"single": 10.0, "double": 20.0}, reps=5)
    out, clock = io.StringIO(), Clock()
    p = progress.Progress("toy", ["single", "double"], progress.from_trials_csv(tmp_path / "t.csv", "the rec"),
                          n_min=5, out=out, clock=clock)
    p.begin()
    assert "2 configurations, about 10 trials, about 2 min going by the rec" in out.getvalue()  # 5 x 10 + 5 x 20 s
    p.trial_started("double-r00")
    line = out.getvalue().splitlines()[-1]
    assert line == ("toy: configuration 2 of 2 (double), trial 1 (valid 0, rejected 0), elapsed 0:00, "
                    "about 2 min left")
    clock.t = 40.0  # twice the recorded 20 s: the rest is estimated at twice the recorded pace
    p.trial_finished("double-r00", {"status": "ok", "valid": True})
    assert p.left() == pytest.approx(2 * (5 * 10 + 4 * 20))
    p.trial_started("single-r00")
    clock.t = 45.0
    p.trial_finished("single-r00", {"status": "ok", "valid": False})
    p.trial_started("single-r01")
    assert out.getvalue().splitlines()[-1].startswith(
        "toy: configuration 1 of 2 (single), trial 2 (valid 0, rejected 1), elapsed 0:45, about ")
    p.end()
    assert out.getvalue().splitlines()[-1] == "toy: 2 trials (1 valid, 1 rejected) in 0:45"


def test_without_a_recording_the_estimate_waits_for_the_first_trial():
    out, clock = io.StringIO(), Clock()
    p = progress.Progress("toy", ["a", "b"], progress.Expectation(), n_min=5, out=out, clock=clock)
    p.begin()
    p.trial_started("a-r00")
    assert "no recorded run" in out.getvalue() and out.getvalue().rstrip().endswith("until a trial ends")
    clock.t = 30.0
    p.trial_finished("a-r00", {"status": "ok"})
    assert p.left() == pytest.approx(9 * 30.0)
    p.trial_finished("b-r00", {"status": "ok"}, resumed=True)  # resumed: counted, no timing
    assert p.left() == pytest.approx(8 * 30.0)


def test_the_target_is_the_named_path_never_a_regular_file(tmp_path, monkeypatch):
    monkeypatch.setenv("PAGELAB_PROGRESS", "none")
    assert progress.target() is None
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("PAGELAB_PROGRESS", str(tmp_path / "file"))
    assert progress.target() is None
    os.mkfifo(tmp_path / "fifo")
    reader = os.open(tmp_path / "fifo", os.O_RDONLY | os.O_NONBLOCK)
    try:
        monkeypatch.setenv("PAGELAB_PROGRESS", str(tmp_path / "fifo"))
        out = progress.target()
        out.write("hello\n")
        out.close()
        assert os.read(reader, 100) == b"hello\n"
    finally:
        os.close(reader)


@pytest.fixture(scope="module")
def toy_copy(tmp_path_factory):
    """A copy of the repository with the toy experiment, its native tools already built (copied
    with their times, so Snakemake does not rebuild them) and a recording of the toy's quick run
    on this machine: 10 trials of 6 s, one minute."""
    from conftest import build_native
    from pagelab.run.recording import machine_slug
    from pagelab.system.provenance import provenance

    base = REPO / ".pytest-scratch" / f"progress-{tmp_path_factory.getbasetemp().name}"
    shutil.rmtree(base, ignore_errors=True)
    repo = copy_repo(base / "repo")
    add_toy_experiment(repo)
    shutil.copytree(build_native(), repo / "native" / "build", copy_function=shutil.copy2)
    slug = machine_slug(provenance("n/a", disk_path=repo))  # as the trial run names this machine
    recorded_csv(repo / "data/recorded" / slug / "quick/toy/trials.csv", {"single": 6.0, "double": 6.0})
    yield repo, slug
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.skipif(shutil.which("script") is None, reason="util-linux script is missing")
@pytest.mark.parametrize("entry", ["make's", "snakemake in a terminal"])
def test_a_toy_run_shows_progress_and_snakemakes_job_lines_on_the_terminal(toy_copy, env, entry):
    """Through `make`'s entry point the lines go to Snakemake's own standard error
    (PAGELAB_PROGRESS), here a pipe with no terminal at all (as `make 2>&1 | tee`); through
    Snakemake alone, to the controlling terminal (/dev/tty), here a pseudo-terminal."""
    repo, slug = toy_copy
    shutil.rmtree(repo / "results", ignore_errors=True)
    run_env = {**env, "PYTHONPATH": str(repo / "src")}
    run_env.pop("PAGELAB_PROGRESS", None)
    args = "--workflow-profile workflow/profiles/default results/toy/trials.csv"
    if entry == "make's":
        out = subprocess.run(f"bash workflow/scripts/run_pipeline.sh {args} 2>&1", shell=True, cwd=repo, env=run_env,
                             capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
                             start_new_session=True)  # no controlling terminal
    else:
        out = subprocess.run(["script", "-qefc", f"snakemake {args}", "/dev/null"], cwd=repo, env=run_env,
                             capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    screen = out.stdout.replace("\r\n", "\n")
    assert out.returncode == 0, screen[-3000:]
    assert "rule trial:" in screen and "wildcards: experiment=toy" in screen  # Snakemake's job lines
    assert f"toy: 2 configurations, about 10 trials, about 1 min going by the recorded quick run on {slug}" in screen
    for conf, k in (("single", 1), ("double", 2)):
        for i in range(1, 6):
            assert f"toy: configuration {k} of 2 ({conf}), trial {i} (valid {i - 1}, rejected 0)" in screen, screen
    assert "toy: 10 trials (10 valid, 0 rejected) in" in screen
    log = (repo / "results/logs/toy.log").read_text()
    assert "toy: configuration 1 of 2 (single), trial 5 (valid 4, rejected 0)" in log  # and in the log
