"""Progress on the terminal: the estimate from a recorded run, the lines a trial run writes, and
a toy run through the pipeline's own entry point (workflow/scripts/run_pipeline.sh, what `make`
runs) in a real pseudo-terminal (`script`), where Snakemake's job lines and the trial runner's
progress lines must both reach the screen."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess

import pandas as pd
import pytest

from conftest import REPO, add_toy_experiment, copy_repo
from pagelab.run import progress
from pagelab.system import config

GAP = 0.1  # the pause between two trials of recorded_csv's, which the trial after it is charged


def recorded_csv(path, seconds, reps=5, warmup=0.0):
    """A recorded trials.csv whose configurations take `seconds` each: each trial ends GAP before
    the next one starts (the warm-up ends as the first trial starts)."""
    rows, t = [], 1_800_000_000.0
    if warmup:
        rows.append(("warmup-single", t, t + warmup))
        t += warmup
    for rep in range(reps):
        for conf, secs in seconds.items():
            rows.append((f"{conf}-r{rep:02d}", t, t + secs - GAP))
            t += secs
    iso = [pd.Timestamp(x, unit="s", tz="UTC").isoformat() for x in (r[1] for r in rows)]
    end = [pd.Timestamp(x, unit="s", tz="UTC").isoformat() for x in (r[2] for r in rows)]
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"trial_id": [r[0] for r in rows], "order": range(len(rows)), "start": iso, "end": end}) \
        .to_csv(path, index=False)


def test_a_recording_gives_seconds_and_trials_per_configuration(tmp_path):
    recorded_csv(tmp_path / "toy/trials.csv", {"single": 2.0, "double": 6.0}, reps=5, warmup=3.0)
    exp = progress.from_recording(tmp_path / "toy", "x")
    assert exp.trials == {"single": 5, "double": 5}
    # each trial's end minus its start and the pause before it (the first, after the warm-up,
    # has none): the median is the configuration's own
    assert exp.seconds["single"] == pytest.approx(2.0) and exp.seconds["double"] == pytest.approx(6.0)
    assert exp.warmup_seconds == pytest.approx(3.0)
    assert exp.total() == pytest.approx(5 * 2.0 + 5 * 6.0 + 3.0)
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
    recorded_csv(tmp_path / "toy/trials.csv", {"single": 10.0, "double": 20.0}, reps=5)
    out, clock = io.StringIO(), Clock()
    p = progress.Progress("toy", ["single", "double"], progress.from_recording(tmp_path / "toy", "the rec"),
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
    and dated now, so Snakemake does not rebuild them) and a recording of the toy's quick run
    on this machine: 10 trials of 6 s, one minute."""
    from conftest import copy_native
    from pagelab.data.recording import machine_slug
    from pagelab.system.provenance import provenance

    base = REPO / ".pytest-scratch" / f"progress-{tmp_path_factory.getbasetemp().name}"
    shutil.rmtree(base, ignore_errors=True)
    repo = copy_repo(base / "repo")
    add_toy_experiment(repo)
    copy_native(repo)
    slug = machine_slug(provenance("n/a", disk_path=repo))  # as the trial run names this machine
    recorded_csv(repo / "data/recorded" / slug / "quick/toy/trials.csv", {"single": 6.0, "double": 6.0})
    yield repo, slug
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.skipif(shutil.which("script") is None, reason="util-linux script is missing")
@pytest.mark.parametrize("entry", ["make's", "snakemake in a terminal"])
def test_a_toy_run_shows_progress_and_snakemakes_job_lines_on_the_terminal(toy_copy, env, entry, request):
    """Through `make`'s entry point the lines go to Snakemake's own standard error
    (PAGELAB_PROGRESS), here a pipe with no terminal at all (as `make 2>&1 | tee`); through
    Snakemake alone, to the controlling terminal (/dev/tty), here a pseudo-terminal. The toy
    changes no paging state, but make's entry point as root runs `pagelab state recover` first:
    that one runs under the test's state lock (a real run holding it: a skip naming it)."""
    if entry == "make's":
        request.getfixturevalue("state_lock")
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
    # the whole run: every experiment of the schema, the toy's own and the others' recorded time
    n = len(config.experiments(config.load_schema(repo / "config" / "schema.yaml")))
    assert re.search(rf"toy: configuration \d of 2 \(\w+\), trial 1 .*; run: experiment \d of {n}, "
                     r"(about [\w ]+|under a minute) left", screen), screen
    log = (repo / "results/logs/toy.log").read_text()
    assert "toy: configuration 1 of 2 (single), trial 5 (valid 4, rejected 0)" in log  # and in the log
    recs = [json.loads(p.read_text()) for p in (repo / "results/toy/trials").glob("*.json")]
    assert len(recs) == 10 and len({r["process_started"] for r in recs}) == 1  # one process ran them all


# -- the whole run and the phases within a trial --------------------------------------------------

def toy_schema(*names):
    """A schema of experiments `names`, each with quick (n_min 5) and full (n_min 10) blocks."""
    block = {"properties": {"quick": {"default": {"repetitions": {"n_min": 5}}},
                            "full": {"default": {"repetitions": {"n_min": 10}}}}}
    return {"properties": {n: block for n in names}}


def finished_run(results, experiment, cfg, config_hash):
    d = results / experiment
    d.mkdir(parents=True)
    (d / "trials.csv").write_text("trial_id,status,warmup\n")
    (d / "config.json").write_text(json.dumps(cfg))
    (d / "provenance.json").write_text(json.dumps({"config_hash": config_hash}))


def test_the_whole_run_counts_finished_experiments_and_adds_the_others_recorded_time(tmp_path):
    from pagelab.system import config

    rec, results = tmp_path / "rec", tmp_path / "results"
    recorded_csv(rec / "ref/quick/a/trials.csv", {"single": 6.0}, reps=10)       # 60 s
    recorded_csv(rec / "ref/quick/b/trials.csv", {"x": 30.0, "y": 30.0}, reps=4)  # 240 s
    recorded_csv(rec / "ref/quick/standby/trials.csv", {"x": 12.0}, reps=5)      # 60 s, finished below
    # standby's block as the pipeline writes it (config.json: resolved, with the scratch directory),
    # and the hash its trials' provenance records: that of the block `pagelab trial` runs with
    written = {**config.load(overrides={"profile": "quick"})["standby"], "scratch_dir": "scratch"}
    ran, _ = config.trial_block("standby", written, machine=False)
    assert config.run_hash("standby", ran) != config.run_hash("standby", written)  # not config.json's own
    finished_run(results, "standby", written, config.run_hash("standby", ran))
    finished_run(results, "b", written, "stale")   # another config's run: b runs again
    plan = progress.run_plan("a", "quick", "mine", "ref", results, rec, toy_schema("a", "b", "standby"), wanted="")
    assert plan.experiments == ["a", "b", "standby"] and plan.done == {"standby"}
    assert plan.seconds["b"] == pytest.approx(240.0) and plan.position("a") == 2
    assert set(plan.seconds) == {"b"}   # neither the finished run nor a's own recording is read
    out, clock = io.StringIO(), Clock()
    p = progress.Progress("a", ["single"], progress.expectation("a", "quick", "mine", "ref", rec), n_min=10,
                          out=out, clock=clock, run=plan)
    p.begin()
    assert out.getvalue().rstrip().endswith("; run: experiment 2 of 3, about 5 min left")  # 60 + 240 s
    p.trial_started("single-r00")
    clock.t = 12.0  # twice the recorded pace: this experiment's 9 trials left take 108 s
    p.trial_finished("single-r00", {"status": "ok"})
    p.trial_started("single-r01")
    assert out.getvalue().splitlines()[-1] == ("a: configuration 1 of 1 (single), trial 2 (valid 1, rejected 0), "
                                               "elapsed 0:12, about 2 min left; run: experiment 2 of 3, "
                                               "about 6 min left")  # 108 + 240 s


def test_the_run_is_makes_experiment_list_when_it_names_this_one(tmp_path):
    rec, schema = tmp_path / "rec", toy_schema("a", "b", "c")
    recorded_csv(rec / "ref/quick/a/trials.csv", {"single": 6.0}, reps=10)
    alone = progress.run_plan("a", "quick", "m", "ref", tmp_path / "results", rec, schema, wanted="a")
    assert alone.experiments == ["a"]
    p = progress.Progress("a", ["single"], progress.Expectation(), n_min=5, run=alone)
    assert p.run_part() == ""   # a run of one experiment: its own estimate says it all
    two = progress.run_plan("a", "quick", "m", "ref", tmp_path / "results", rec, schema, wanted="b a")
    assert two.experiments == ["b", "a"]
    p = progress.Progress("a", ["single"], progress.Expectation(), n_min=5, run=two)
    assert p.run_part() == "; run: experiment 1 of 2, time left unknown (nothing recorded for b)"


def test_without_a_recording_of_the_profile_another_is_scaled_by_the_schemas_repetitions(tmp_path):
    rec, schema = tmp_path / "rec", toy_schema("a")
    recorded_csv(rec / "ref/quick/a/trials.csv", {"single": 6.0}, reps=5, warmup=3.0)  # 33 s at n_min 5
    assert progress.recorded_seconds("a", "quick", "m", "ref", schema, rec) == pytest.approx(33.0)
    assert progress.recorded_seconds("a", "full", "m", "ref", schema, rec) == pytest.approx(66.0)  # n_min 10
    assert progress.recorded_seconds("a", "full", "m", "other", schema, tmp_path / "none") is None


def test_phase_lines_are_bounded_and_never_in_a_short_trials_first_seconds():
    out, clock = io.StringIO(), Clock()
    p = progress.Progress("rb", ["hdd"], progress.Expectation(), n_min=1, out=out, clock=clock, phase_every=30.0)
    rec = {"trial_id": "hdd-r00"}
    with progress.marking(rec, p):
        progress.phase("set-up")
        for i in range(1, 21):   # 20 hog rounds of 5 s
            clock.t += 5.0
            progress.phase("hogs", i, 20, "round")
        for share in (0.25, 0.5, 1.0):
            clock.t += 10.0
            progress.phase("restore/watch", share=share)
        clock.t += 1.0
        progress.phase("re-touch")
    lines = out.getvalue().splitlines()
    assert lines == ["rb: hdd-r00: hogs, round 6 of 20, 0:30 into the trial",
                     "rb: hdd-r00: hogs, round 12 of 20, 1:00 into the trial",
                     "rb: hdd-r00: hogs, round 18 of 20, 1:30 into the trial",
                     "rb: hdd-r00: restore/watch, 50 %, 2:00 into the trial"]
    # one mark per change of phase, in seconds from the trial's start
    assert rec["phases"] == [["set-up", 0.0], ["hogs", 5.0], ["restore/watch", 110.0], ["re-touch", 131.0]]
    progress.phase("hogs", 1, 2)   # outside a trial: nothing
    with pytest.raises(ValueError, match="unknown phase 'warming'"), progress.marking({}, p):
        progress.phase("warming")


def test_the_restore_is_shown_as_the_share_of_the_working_set_back_from_the_watchers_samples():
    """A recovery trial's watcher samples the working set's bytes out of RAM (here a stream of
    known answer: 400 MB out when the hogs end at 10 s, back at 4 MB/s, sampled every 2 s); each
    sample read through `watching_restore` is handed on unchanged and reports the share back,
    and the lines say it at most once per 30 s."""
    out, clock = io.StringIO(), Clock()
    p = progress.Progress("rb", ["hdd"], progress.Expectation(), n_min=1, out=out, clock=clock, phase_every=30.0)
    start = 400e6

    def out_of_ram() -> float:   # the fake counter: what the watcher would read at the clock's time
        return max(0.0, start - 4e6 * (clock.t - 10.0))

    rec = {"trial_id": "hdd-r00"}
    with progress.marking(rec, p):
        progress.phase("hogs", 1, 1, "round")
        clock.t = 10.0
        source = progress.watching_restore(out_of_ram, start)
        read = []
        for t in range(10, 121, 2):   # the sampler: every 2 s from the hogs' end
            clock.t = float(t)
            read.append(source())
        clock.t = 121.0
        progress.phase("re-touch")
    assert read == [max(0.0, start - 4e6 * (t - 10)) for t in range(10, 121, 2)]   # the samples, unchanged
    assert out.getvalue().splitlines() == ["rb: hdd-r00: restore/watch, 20 %, 0:30 into the trial",
                                           "rb: hdd-r00: restore/watch, 50 %, 1:00 into the trial",
                                           "rb: hdd-r00: restore/watch, 80 %, 1:30 into the trial",
                                           "rb: hdd-r00: restore/watch, 100 %, 2:00 into the trial"]
    assert rec["phases"] == [["hogs", 0.0], ["restore/watch", 10.0], ["re-touch", 121.0]]


def test_the_restore_share_is_bounded_and_unknown_when_nothing_was_out():
    assert progress.restore_share(400.0, 100.0) == 0.75
    assert progress.restore_share(400.0, 500.0) == 0.0    # more out than at the start: nothing back yet
    assert progress.restore_share(400.0, 0.0) == 1.0
    assert progress.restore_share(0.0, 0.0) is None       # nothing was out: no share to show
    assert progress.describe_phase("restore/watch", share=progress.restore_share(0.0, 0.0)) == "restore/watch"


def test_a_toy_run_records_each_trials_phases_and_process(tmp_path):
    """A toy experiment through the trial loop (trials.run_adaptive): its trial code reports
    phases; each record holds its marks and the process that ran it, also a failed trial's."""
    from pagelab.run import trials

    out, clock = io.StringIO(), Clock()
    p = progress.Progress("toy", ["single", "double"], progress.Expectation(), n_min=2, out=out, clock=clock,
                          phase_every=30.0)

    def run_one(t):
        progress.phase("fill")
        clock.t += 2.0
        for i in range(1, 4):
            clock.t += 20.0
            progress.phase("hogs", i, 3, "round")
        progress.phase("re-touch")
        clock.t += 1.0
        if t.params["arm"] == "double" and t.repetition == 1:
            raise trials.TrialFailed("the toy's second double")
        return {"value": 2.0 if t.params["arm"] == "double" else 1.0}

    recs, _ = trials.run_adaptive("toy", [{"arm": "single"}, {"arm": "double"}], lambda c: c["arm"], run_one,
                                  lambda r: r["value"], tmp_path, {"config_hash": "h"}, seed=1, n_min=2, n_max=2,
                                  ci_pct=50, progress=p)
    assert len(recs) == 4 and all(r["phases"] == [["fill", 0.0], ["hogs", 22.0], ["re-touch", 62.0]] for r in recs)
    assert [r["status"] for r in recs if r["trial_id"] == "double-r01"] == ["failed"]
    assert {r["process_started"] for r in recs} == {progress.PROCESS_STARTED}
    stored = json.loads((tmp_path / "trials" / "single-r00.json").read_text())
    assert stored["phases"] == recs[0]["phases"] and stored["process_started"] == progress.PROCESS_STARTED
    phase_lines = [ln for ln in out.getvalue().splitlines() if "into the trial" in ln]
    assert len(phase_lines) == 4 and all(", round 2 of 3, 0:42 into the trial" in ln for ln in phase_lines)
    # the process's start, from /proc: before this test, and not long before it in a test run
    started = pd.Timestamp(progress.PROCESS_STARTED)
    assert started <= pd.Timestamp.now(tz="UTC")


def test_keep_leaves_trials_out_and_charges_none_of_their_time_to_the_others(tmp_path):
    """Given `keep` (what today's stopping rule would run), a configuration is expected to run as
    many trials as kept, and each kept trial is timed over the whole recorded run: a trial after
    one left out is not charged the left-out one's time. `keep` is asked only of a directory
    named as an experiment of the schema, with that name, the directory and every record."""
    recorded_csv(tmp_path / "pagein/trials.csv", {"a": 10.0, "b": 20.0}, reps=5)
    asked = []

    def keep(experiment, directory, recs):
        asked.append((experiment, directory, len(recs)))
        return [r for r in recs if r["trial_id"] not in ("a-r02", "a-r03", "a-r04")]

    every = progress.from_recording(tmp_path / "pagein")
    kept = progress.from_recording(tmp_path / "pagein", keep=keep)
    assert asked == [("pagein", tmp_path / "pagein", 10)]
    assert every.trials == {"a": 5, "b": 5} and kept.trials == {"a": 2, "b": 5}
    # b's trials after a left-out a keep their own 20 s (timed after the cut, they would be 30);
    # a's two: the run's first (no pause before it) and one of 10 s
    assert kept.seconds == pytest.approx({"a": 10.0 - GAP / 2, "b": 20.0})
    assert kept.total() == pytest.approx(2 * (10.0 - GAP / 2) + 5 * 20.0)
    shutil.copytree(tmp_path / "pagein", tmp_path / "toy")
    assert progress.from_recording(tmp_path / "toy", keep=keep).trials == {"a": 5, "b": 5}  # no experiment's


def test_the_time_left_counts_the_trials_todays_rule_would_run_as_the_fleet_plan_does(tmp_path, padded):
    """A recording made under an earlier rule (conftest.padded_recording: the full recording with
    each of payoff's 20 configurations that stopped early padded to a fixed 15): today's stopping
    rule (pagelab.experiments.replay.kept, which `pagelab trial` passes) keeps the trials the
    recorded run ran (13 configurations at 10 counted trials, two at 12), and the estimate expects
    that many (tests/test_fleetplan.py has the replay's known answer).
    The whole run's time left at the start of the full profile then agrees with `pagelab fleet
    plan --hosts 1 --profile full` on the same recording, less the plan's per-job and per-run
    overheads (which a run's own estimate has no part in), within 2 %: the one systematic
    difference is that the estimate takes each configuration's trials at their median seconds
    where the plan sums each trial's own (the current experiment's warm-ups, which the estimate of
    time left leaves out once they are due, are added back). Without the filter the estimate is
    longer by payoff's padded trials: the test fails if the filter is dropped."""
    from pagelab.experiments import harness, replay
    from pagelab.run import fleetplan

    rec = padded
    machine = next(p.parent.name for p in sorted(rec.glob("*/full")))
    kept = progress.expectation("payoff", "full", machine, "", rec, replay.kept)
    every = progress.expectation("payoff", "full", machine, "", rec)
    recorded = progress.expectation("payoff", "full", machine, "", REPO / "data/recorded")
    assert sorted(every.trials.values()) == [15] * 20
    assert kept.trials == recorded.trials
    assert sorted(kept.trials.values()) == [10] * 13 + [12] * 2 + [15] * 5

    schema = config.load_schema()
    names = config.experiments(schema)

    def run_wide(keep):
        """The whole run's time left as the first experiment's first line says it, in seconds."""
        plan = progress.run_plan(names[0], "full", machine, "", tmp_path / "results", rec, schema, wanted="",
                                 keep=keep)
        first = progress.expectation(names[0], "full", machine, "", rec, keep)
        n_min = config.check_block(names[0], {"profile": "full"}, machine=False)["repetitions"]["n_min"]
        p = progress.Progress(names[0], list(first.trials), first, n_min=n_min, run=plan)
        others, unknown = plan.left_besides(names[0])
        assert plan.position(names[0]) == 1 and not unknown and p.run_part().startswith(
            f"; run: experiment 1 of {len(names)}, about ")
        return p.left() + first.warmup_seconds + others

    split = {e: d.cell_of for e in names if (d := harness.descriptor(e)).split and d.cell_of}
    one_host = fleetplan.lpt(fleetplan.profile_cells(rec / machine / "full", names, split, replay.kept), ["host1"])
    trials_only = one_host.makespan - len(one_host.slots) * one_host.overhead
    assert run_wide(replay.kept) == pytest.approx(trials_only, rel=0.02)
    left_out = every.total() - kept.total()
    assert left_out > 300 and run_wide(None) - run_wide(replay.kept) == pytest.approx(left_out, rel=0.01)


def test_a_trial_runs_progress_takes_the_keep_it_is_given(monkeypatch, padded):
    """for_run (what the harness builds for `pagelab trial`, which passes replay.kept) expects of
    this machine's recording the trials `keep` keeps; without it, every recorded one (a recording
    made under an earlier rule: conftest.padded_recording)."""
    from pagelab.experiments import replay

    monkeypatch.setenv("PAGELAB_PROGRESS", "none")
    monkeypatch.setenv("EXPERIMENT", "payoff")
    root = padded
    monkeypatch.setattr(progress, "recorded_dir", lambda: root)
    full = sorted(root.glob("*/full"))[0]
    prov = json.loads((full / "payoff/provenance.json").read_text())
    cfg = {"profile": "full", "repetitions": {"n_min": 10}}
    confs = sorted(progress.expectation("payoff", "full", full.parent.name, "", root).trials)
    kept = progress.for_run("payoff", cfg, confs, prov, keep=replay.kept)
    every = progress.for_run("payoff", cfg, confs, prov)
    assert kept.expected.source == f"the recorded full run on {full.parent.name}"
    assert (kept.planned(), every.planned()) == (13 * 10 + 2 * 12 + 5 * 15, 20 * 15)


def test_a_recordings_expectation_is_read_from_the_cache_until_one_of_its_inputs_changes(tmp_path, monkeypatch):
    """A recording of the repository's, replayed under today's rule, is kept in
    results/.cache/expectations/ for the next process: read back the same (configurations in
    their order) without replaying it, and replayed again when the recording, the schema or the
    claims change. A keep made outside the package, and a recording outside data/recorded/, are
    never cached."""
    from pagelab.experiments import replay

    ref = str(config.load_schema()["properties"]["reference"]["default"])
    top = tmp_path / "repo"
    shutil.copytree(REPO / "config", top / "config")
    shutil.copytree(REPO / "data/published", top / "data/published")
    (top / "paper").mkdir()
    shutil.copy2(REPO / "paper/refs.bib", top / "paper/refs.bib")
    rec = top / "data/recorded" / ref / "quick" / "standby"
    shutil.copytree(REPO / "data/recorded" / ref / "quick" / "standby", rec)
    monkeypatch.setenv("PAGELAB_ROOT", str(top))

    def expect(keep=replay.kept):
        return progress.expectation("standby", "quick", "elsewhere", ref, keep=keep)

    first = expect()
    assert first.trials and len(list((top / "results/.cache/expectations").glob("*.json"))) == 1
    replayed = progress.trial_times

    def never(*args, **kwargs):
        raise AssertionError("replayed")

    monkeypatch.setattr(progress, "trial_times", never)
    again = expect()
    assert again == first and list(again.trials) == list(first.trials)
    with pytest.raises(AssertionError, match="replayed"):
        expect(lambda experiment, directory, recs: recs)
    shutil.copytree(rec, tmp_path / "elsewhere")
    with pytest.raises(AssertionError, match="replayed"):
        progress.from_recording(tmp_path / "elsewhere", keep=replay.kept)
    for path in (rec / "trials.csv", top / "config/schema.yaml", top / "data/published/claims.csv",
                 top / "paper/refs.bib"):
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
        with pytest.raises(AssertionError, match="replayed"):
            expect()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert expect() == first
    # a trial fewer in the recording: replayed, and that answer is the one kept
    lines = (rec / "trials.csv").read_text().splitlines(keepends=True)
    (rec / "trials.csv").write_text("".join(lines[:-1]))
    monkeypatch.setattr(progress, "trial_times", replayed)
    fewer = expect()
    assert sum(fewer.trials.values()) == sum(first.trials.values()) - 1
    monkeypatch.setattr(progress, "trial_times", never)
    assert expect() == fewer
