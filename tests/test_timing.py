"""`pagelab time`: where a run's wall time went, from trial records with and without phase marks,
trials.csv alone, Snakemake's log beside a results directory, and the recorded full run."""

from __future__ import annotations

import gzip
import json

import pandas as pd
import pytest

from conftest import REPO
from pagelab import cli
from pagelab.run import timing

T0 = pd.Timestamp("2026-11-26T02:00:00", tz="UTC")


def iso(seconds):
    return (T0 + pd.Timedelta(seconds=seconds)).isoformat()


def write_run(d, recs, records="files"):
    """An experiment's directory: trials.csv listing `recs`, and their records: one JSON file
    each ("files"), one gzipped JSON Lines file ("jsonl"), or none (trials.csv alone: None)."""
    d.mkdir(parents=True, exist_ok=True)
    pd.DataFrame([{"trial_id": r["trial_id"], "status": "ok", "warmup": False, "start": r["start"], "end": r["end"]}
                  for r in recs]).to_csv(d / "trials.csv", index=False)
    if records == "jsonl":
        with gzip.open(d / "trials.jsonl.gz", "wt") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in recs)
    elif records == "files":
        (d / "trials").mkdir()
        for r in recs:
            (d / "trials" / f"{r['trial_id']}.json").write_text(json.dumps(r))


def rec(trial_id, start, end, **extra):
    return {"trial_id": trial_id, "start": iso(start), "end": iso(end), "result": {}, **extra}


def test_marked_records_split_each_trial_and_a_stop_from_the_gaps(tmp_path):
    p1, p2 = iso(-5), iso(700)   # two processes: the run was stopped after the second trial
    marks = [["hogs", 2.0], ["restore/watch", 8.0], ["re-touch", 9.0]]
    recs = [rec("a-r00", 0, 10, phases=marks, process_started=p1),
            rec("a-r01", 11, 21, phases=marks, process_started=p1),
            rec("a-r02", 710, 720, phases=marks, process_started=p2)]
    write_run(tmp_path / "run" / "rb", recs)
    e = timing.run_time(tmp_path / "run").experiments[0]
    assert e.trials == 3 and e.span == pytest.approx(720) and e.marked == 3
    assert e.phases["set-up"] == pytest.approx(6) and e.phases["hogs"] == pytest.approx(18)
    assert e.phases["restore/watch"] == pytest.approx(3) and e.phases["re-touch"] == pytest.approx(3)
    assert e.phases[timing.BETWEEN] == pytest.approx(1)
    # stopped from the end of a-r01 (21) to the new process's start (700); its set-up to 710; the
    # first process's own set-up, 5 s
    assert e.phases[timing.STOPPED] == pytest.approx(679) and e.phases[timing.RUN_SETUP] == pytest.approx(15)
    assert e.largest_gap.stopped is True and (e.largest_gap.before, e.largest_gap.after) == ("a-r01", "a-r02")
    assert e.wall == pytest.approx(720 + 5)   # the span and the first process's set-up
    text = timing.table(timing.run_time(tmp_path / "run"))
    assert "rb: the largest gap between trials, 11:29, from the end of a-r01 to the start of a-r02 (another " \
           "process ran the next: the run was stopped and resumed)" in text
    assert timing.NOT_SPLIT not in text.split("\n\n")[1]   # every trial is split: no such column


def test_unmarked_records_split_what_their_results_time_and_say_what_they_cannot(tmp_path):
    recs = [rec("warmup-x", 0, 5),
            {**rec("x-r00", 5, 65), "result": {"hog_s": 40.0, "restore_window_s": 10.0, "retouch_s": 3.0,
                                               "settle_s": 2.0}},
            {**rec("x-r01", 665, 670), "result": {"trim_s": 1.0, "retouch_s": float("nan"), "runtime_ms": 2000}}]
    write_run(tmp_path / "rec" / "x", recs, records="jsonl")
    e = timing.run_time(tmp_path / "rec").experiments[0]
    assert e.phases["hogs"] == pytest.approx(40) and e.phases["restore/watch"] == pytest.approx(10)
    assert e.phases["re-touch"] == pytest.approx(3) and e.phases["trim"] == pytest.approx(1)
    assert e.phases["measure"] == pytest.approx(2)
    # warm-up 5 s, x-r00's 60 - 53 (settle_s lies inside the restore window), x-r01's 5 - 3
    assert e.phases[timing.NOT_SPLIT] == pytest.approx(14)
    assert e.phases[timing.BETWEEN] == pytest.approx(600) and e.largest_gap.stopped is None
    text = timing.table(timing.run_time(tmp_path / "rec"))
    assert "x: the largest gap between trials, 10:00, from the end of x-r00 to the start of x-r01 (these " \
           "records do not name their process: a stop and resume cannot be told from a pause)" in text
    assert "run set-up, analysis, paper: not in trial records" in text and "paper: not recorded" in text
    header, row = text.splitlines()[2].split(), text.splitlines()[3].split()
    assert row[header.index("wall") - 0] == "11:10" and row[3] == "?"   # the run's set-up is not recorded


def test_records_of_another_run_are_left_out_and_trials_csv_alone_will_do(tmp_path):
    write_run(tmp_path / "r" / "x", [rec("x-r00", 0, 10), rec("x-r01", 10, 20)], records="jsonl")
    with gzip.open(tmp_path / "r" / "x" / "trials.jsonl.gz", "at") as fh:  # an earlier run of another config
        fh.write(json.dumps(rec("x-r00", -9000, -8000)) + "\n")
    write_run(tmp_path / "r" / "y", [rec("y-r00", 0, 30)], records=None)
    x, y = timing.run_time(tmp_path / "r").experiments
    assert x.trials == 2 and x.span == pytest.approx(20)
    assert y.trials == 1 and y.phases[timing.NOT_SPLIT] == pytest.approx(30)


SNAKEMAKE_LOG = """\
Building DAG of jobs...
[Thu Nov 26 02:00:00 2026]
localrule experiment_config:
    output: results/x/config.json
    jobid: 3
    wildcards: experiment=x
[Thu Nov 26 02:00:01 2026]
Finished jobid: 3 (Rule: experiment_config)
[Thu Nov 26 02:00:01 2026]
rule trial:
    output: results/x/trials.csv
    jobid: 1
    wildcards: experiment=x
[Thu Nov 26 02:01:00 2026]
Finished jobid: 1 (Rule: trial)
[Thu Nov 26 02:01:00 2026]
rule notebook:
    jobid: 2
    wildcards: experiment=x
[Thu Nov 26 02:01:40 2026]
Finished jobid: 2 (Rule: notebook)
[Thu Nov 26 02:01:40 2026]
localrule paper:
    jobid: 4
[Thu Nov 26 02:03:10 2026]
Finished jobid: 4 (Rule: paper)
"""


def test_snakemakes_log_gives_the_trial_jobs_set_up_the_analysis_and_the_paper(tmp_path):
    write_run(tmp_path / "results" / "x", [rec("x-r00", 5, 25), rec("x-r01", 25, 45)])
    (tmp_path / ".snakemake" / "log").mkdir(parents=True)
    (tmp_path / ".snakemake" / "log" / "2026-11-26T020000.snakemake.log").write_text(SNAKEMAKE_LOG)
    rt = timing.run_time(tmp_path / "results")
    x = rt.experiments[0]
    # the trial job's 59 s around its 40 s of trials, and the config job's 1 s
    assert x.job == pytest.approx(59) and x.phases[timing.RUN_SETUP] == pytest.approx(59 - 40 + 1)
    assert x.phases[timing.ANALYSIS] == pytest.approx(40) and rt.paper == pytest.approx(90)
    assert x.wall == pytest.approx(40 + 20 + 40)   # trials, run set-up, analysis
    text = timing.table(rt)
    assert "paper: 1:30" in text and "not in trial records" not in text


def test_the_command_on_the_recorded_full_run_and_on_bad_input(capsys):
    assert cli.main(["time", "epyc-2c-linux6.18-virtio/full"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines()[3:11]}
    assert set(rows) == {"compression", "crystalmark", "pagein", "payoff", "readyboost", "seekmodel", "standby",
                         "total"}
    assert rows["compression"][1] == "245"
    # the full recording's one long pause: pagein's run, stopped after seq-pc2-r09 and resumed by
    # another process 1:16 later, is counted as stopped, not as time between trials
    assert ("pagein: the largest gap between trials, 1:16:05, from the end of seq-pc2-r09 to the start of "
            "random-pc3-r02 (another process ran the next: the run was stopped and resumed)") in out
    assert rows["pagein"][-2] == "1:16:03" and rows["pagein"][-3] == "-"
    assert cli.main(["time", str(REPO / "no-such-run")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("pagelab time: ") and "no results directory or recording" in err and "\n" not in err


def test_a_toy_run_through_the_trial_loop_is_split_by_the_phases_its_code_reports(tmp_path):
    """The toy's trial code reports phases (pagelab.run.progress.phase); the trial loop keeps
    them in each record; `pagelab time` splits the trials by them."""
    import time

    from pagelab.run import progress, trials

    def run_one(t):
        progress.phase("fill")
        time.sleep(0.05)
        progress.phase("hogs", 1, 2, "round")
        time.sleep(0.1)
        progress.phase("re-touch")
        return {"value": 1.0}

    out = tmp_path / "results" / "toy"
    recs, _ = trials.run_adaptive("toy", [{"arm": "single"}], lambda c: c["arm"], run_one, lambda r: r["value"],
                                  out, {"config_hash": "h"}, seed=0, n_min=2, n_max=2, ci_pct=50)
    write_run(out, recs, records=None)   # the loop wrote the records; trials.csv lists them
    e = timing.run_time(tmp_path / "results").experiments[0]
    assert e.trials == 2 and e.marked == 2 and e.processes
    # two trials' sleeps at least (less the marks' rounding to the ms)
    assert 0.098 <= e.phases["fill"] < 0.6 and 0.198 <= e.phases["hogs"] < 1.2
    assert timing.NOT_SPLIT not in e.phases and timing.STOPPED not in e.phases


def test_the_appendix_times_a_recorded_run_without_the_time_it_stood_stopped(tmp_path):
    """The paper's table of experiments gives a recording's run time as its trials' span less the
    time the run stood stopped between two processes, and says so in the note; a run never
    stopped keeps its whole span."""
    from pagelab.paper import appendix

    p1, p2 = iso(-5), iso(700)
    write_run(tmp_path / "stopped", [rec("a-r00", 0, 10, process_started=p1), rec("a-r01", 11, 21, process_started=p1),
                                     rec("a-r02", 710, 720, process_started=p2)])
    write_run(tmp_path / "whole", [rec("b-r00", 0, 10, process_started=p1), rec("b-r01", 11, 21, process_started=p1)])
    for name in ("stopped", "whole"):
        (tmp_path / name / "provenance.json").write_text(json.dumps({"recorded_machine": "m"}))
    rows = {r["experiment"]: r for r in appendix.experiment_rows(tmp_path, ["stopped", "whole"])}
    assert rows["stopped"]["seconds"] == "41"   # 720 s of span, 679 of them stopped
    assert rows["stopped"]["note"] == "stopped and resumed: 679 s stopped, not counted"
    assert (rows["whole"]["seconds"], rows["whole"]["note"]) == ("21", "")
    # an experiment the recording skipped has no trials: no run time, its reason as the note
    (tmp_path / "skipped").mkdir()
    (tmp_path / "skipped" / "provenance.json").write_text(json.dumps({"recorded_machine": "m"}))
    (tmp_path / "skipped" / "skipped.txt").write_text("needs root\n")
    (row,) = appendix.experiment_rows(tmp_path, ["skipped"])
    assert (row["seconds"], row["note"], row["trials"]) == ("", "needs root", 0)
