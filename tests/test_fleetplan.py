"""The fleet's plan (pagelab.run.fleetplan, `pagelab fleet plan`): Graham's LPT with its known
answers and its worst-case bound, the durations read from trial records, the plan of the recorded
profiles, and bad input refused with one line and exit 2. Quick: nothing is run."""

from __future__ import annotations

import datetime
import itertools
import random
import subprocess

import pytest

from conftest import REPO, VENV_BIN
from pagelab.run import fleetplan, trialtimes
from pagelab.run.fleetplan import Cell, lpt


def makespan(times, n):
    return lpt([Cell(f"c{i}", t) for i, t in enumerate(times)], [f"h{j}" for j in range(n)], 0, 0).makespan


def optimum(times, n):
    """The best makespan, by trying every assignment (small cases only)."""
    best = float("inf")
    for hosts in itertools.product(range(n), repeat=len(times)):
        loads = [0.0] * n
        for t, h in zip(times, hosts, strict=True):
            loads[h] += t
        best = min(best, max(loads))
    return best


def test_lpt_known_answer():
    """5, 4, 3, 3, 3 on 2 hosts: LPT puts 5 and 4 apart, then 3 on the 4 (7), 3 on the 5 (8), 3 on
    the 7: 10, where {5, 4} and {3, 3, 3} give 9."""
    assert makespan([5, 4, 3, 3, 3], 2) == 10
    assert optimum([5, 4, 3, 3, 3], 2) == 9
    assert 10 <= fleetplan.graham_bound(2) * 9


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_lpt_meets_grahams_bound_exactly_on_his_worst_case(n):
    """Graham's instance: 2n-1, 2n-1, 2n-2, 2n-2, ..., n+1, n+1, n, n, n on n hosts: LPT ends at
    4n-1 and the optimum at 3n, the ratio 4/3 - 1/(3n)."""
    times = [t for k in range(2 * n - 1, n, -1) for t in (k, k)] + [n, n, n]
    assert makespan(times, n) == 4 * n - 1
    assert (4 * n - 1) / (3 * n) == pytest.approx(fleetplan.graham_bound(n))
    if n <= 3:
        assert optimum(times, n) == 3 * n


def test_lpt_within_the_bound_of_the_optimum_on_random_cases():
    rng = random.Random(1969)
    for _ in range(60):
        n = rng.randint(1, 3)
        times = [rng.randint(1, 20) for _ in range(rng.randint(1, 7))]
        ms, opt = makespan(times, n), optimum(times, n)
        assert max(max(times), sum(times) / n) <= opt <= ms <= fleetplan.graham_bound(n) * opt + 1e-9


def test_lpt_order_overhead_and_allowed_hosts():
    """Longest first; each job pays the overhead; a job bound to a host goes there even when
    another host is free; the run's overhead is added once."""
    cells = [Cell("a", 10), Cell("b", 30, ("h2",)), Cell("c", 20), Cell("d", 5, ("h2",))]
    plan = lpt(cells, ["h1", "h2"], overhead=1, run_overhead=7)
    assert [s.cell.name for s in plan.slots] == ["b", "c", "a", "d"]
    assert [(s.host, s.start, s.end) for s in plan.slots] == [
        ("h2", 0, 31), ("h1", 0, 21), ("h1", 21, 32), ("h2", 31, 37)]
    assert plan.makespan == 37 and plan.wall == 44
    assert plan.restricted and plan.lower_bound == 37   # h2's bound jobs: 31 + 6
    assert fleetplan.priorities(plan) == {"b": 0, "c": 1, "a": 2, "d": 3}
    with pytest.raises(fleetplan.PlanError, match="none of its hosts"):
        lpt([Cell("x", 1, ("h9",))], ["h1"])
    with pytest.raises(fleetplan.PlanError, match="at least one host"):
        lpt([Cell("x", 1)], [])
    with pytest.raises(fleetplan.PlanError, match="at least 1"):
        fleetplan.graham_bound(0)


def test_durations_sum_the_trials_and_leave_out_a_stop(tmp_path):
    """Trial times plus the short pauses between them; a pause over STOP_GAP_S is a stopped run."""
    d = tmp_path / "exp"
    d.mkdir()
    rows = [("t1", "2026-01-01T00:00:00+00:00", "2026-01-01T00:00:10+00:00"),
            ("t2", "2026-01-01T00:00:12+00:00", "2026-01-01T00:00:20+00:00"),   # 2 s pause: counted
            ("t3", "2026-01-01T01:00:00+00:00", "2026-01-01T01:00:05+00:00")]   # an hour later: a stop
    (d / "trials.csv").write_text("trial_id,start,end\n" + "".join(f"{a},{b},{c}\n" for a, b, c in rows))
    assert fleetplan.durations(d) == {"": pytest.approx(10 + 2 + 8 + 5)}
    with pytest.raises(fleetplan.PlanError, match="no trials.csv"):
        fleetplan.durations(tmp_path / "none")


def test_a_recording_is_timed_by_the_trials_todays_rule_would_run(padded):
    """A recording made under an earlier rule, every cell a fixed 15 (conftest.padded_recording:
    the full recording's payoff with each configuration that stopped early padded to 15 with
    copies of its own trials). Its plan keeps of each configuration the trials today's rule would
    run, which are the recording's own (13 configurations stopped at 10, two at 12), and times
    each cell at those only: exactly the recording's durations. A recording made under today's
    rule (every experiment of the full one; quick's pagein) keeps every trial."""
    import collections

    from pagelab.experiments import harness, replay
    from pagelab.run import timing, trials

    full = REPO / "data/recorded" / recorded_machine() / "full"
    payoff = padded / recorded_machine() / "full" / "payoff"
    desc = harness.descriptor("payoff")

    def counts(recs):
        return collections.Counter(desc.conf_name(r["params"]) for r in recs if trials.is_counted(r))

    recs = timing.read_records(payoff)
    ran, kept = counts(recs), counts(replay.kept("payoff", payoff, recs))
    assert set(ran.values()) == {15}
    assert sorted(kept.values()) == [10] * 13 + [12] * 2 + [15] * 5
    assert kept == counts(timing.read_records(full / "payoff"))
    secs = fleetplan.durations(payoff, desc.cell_of, replay.kept)
    every = fleetplan.durations(payoff, desc.cell_of)
    assert secs == pytest.approx(fleetplan.durations(full / "payoff", desc.cell_of))
    assert sum(secs.values()) < 0.8 * sum(every.values())
    for exp, d in [*((e, full / e) for e in ("readyboost", "payoff", "crystalmark")),
                   ("pagein", REPO / "data/recorded" / recorded_machine() / "quick" / "pagein")]:
        recs = timing.read_records(d)
        assert replay.kept(exp, d, recs) == recs, exp


def test_the_plan_names_an_experiment_recorded_with_other_settings_than_todays(tmp_path):
    """A recording of readyboost at 20 hog rounds (a copy of the full recording's config.json,
    set so), where today's full profile runs 10: the plan says so under its title, since those
    durations are the recording's. The full recording itself (made at today's settings), a copy
    set to today's settings but another stopping rule, and no recording are no difference."""
    import json
    import shutil

    full = REPO / "data/recorded" / recorded_machine() / "full"
    assert fleetplan.recorded_differences(full, ["pagein", "readyboost", "seekmodel"]) == []
    d = tmp_path / "readyboost"
    shutil.copytree(full / "readyboost", d)
    cfg = json.loads((full / "readyboost" / "config.json").read_text())
    (d / "config.json").write_text(json.dumps({**cfg, "hog_rounds": 20}))
    assert fleetplan.recorded_differences(tmp_path, ["readyboost"]) == ["readyboost: hog_rounds 20, today 10"]
    out = pagelab("--hosts", "3", "--profile", "full", "--recording", str(tmp_path))
    assert out.returncode == 0 and "readyboost: hog_rounds 20, today 10" in out.stdout.splitlines()[1]
    (d / "config.json").write_text(json.dumps({**cfg, "repetitions": {"n_min": 7}}))
    assert fleetplan.recorded_differences(tmp_path, ["readyboost"]) == []
    shutil.rmtree(d)
    assert fleetplan.recorded_differences(tmp_path, ["readyboost"]) == []   # no recording: nothing to say


def pagelab(*args):
    return subprocess.run([str(VENV_BIN / "pagelab"), "fleet", "plan", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=120)


def recorded_machine() -> str:
    return next(p.parent.name for p in sorted((REPO / "data/recorded").glob("*/full")))


def test_the_fewest_trials_the_rule_allows_take_each_configurations_first_n_min(padded):
    """replay.fewest keeps of each configuration its first n_min counted trials (10 at full): on
    the padded payoff recording (15 each) exactly 10 each, the first 10 in trial order, and
    timed at those: less than what today's rule keeps, which is less than every trial."""
    import collections

    from pagelab.experiments import harness, replay
    from pagelab.run import timing, trials

    payoff = padded / recorded_machine() / "full" / "payoff"
    desc = harness.descriptor("payoff")
    recs = timing.read_records(payoff)
    least = replay.fewest("payoff", payoff, recs)
    counted = [r for r in least if trials.is_counted(r)]
    per = collections.Counter(desc.conf_name(r["params"]) for r in counted)
    assert set(per.values()) == {10} and len(per) == 20
    for conf in per:
        mine = sorted((r for r in recs if trials.is_counted(r) and desc.conf_name(r["params"]) == conf),
                      key=lambda r: r["order"])
        assert [r["order"] for r in counted if desc.conf_name(r["params"]) == conf] == [r["order"] for r in mine[:10]]
    floor, kept, every = (sum(fleetplan.durations(payoff, desc.cell_of, k).values())
                          for k in (replay.fewest, replay.kept, None))
    assert floor < kept < every


def test_the_plan_prints_the_floor_of_todays_rule_and_says_when_it_misses_the_target():
    """Beside the prediction, the plan prints the same jobs with every configuration at n_min: on
    the full recording, one host needs 2:34 even then (2:52 predicted), so a 2-hour target is
    out of reach of any run under today's rule at these trials' lengths; three hosts 51:55."""
    one = pagelab("--hosts", "1", "--profile", "full", "--machine", recorded_machine(), "--within", "7200")
    assert one.returncode == 0, one.stderr
    lines = one.stdout.splitlines()
    floor = next(ln for ln in lines if ln.startswith("at the fewest trials today's rule allows"))
    assert floor.startswith("at the fewest trials today's rule allows (every configuration at n_min): 2:34:")
    assert floor.endswith("over 2:00:00: no run under today's rule meets it at these trials' lengths, only "
                          "shorter trials or more hosts")
    assert any(ln.startswith("predicted wall time: 2:52:") for ln in lines)
    three = pagelab("--hosts", "3", "--profile", "full", "--machine", recorded_machine()).stdout.splitlines()
    assert "at the fewest trials today's rule allows (every configuration at n_min): 51:55" in three


def test_the_full_profile_on_three_hosts_plans_readyboost_and_payoff_cell_by_cell():
    """The recorded full profile on 3 hosts: readyboost planned arm by arm and payoff cell by
    cell (their descriptors' split and cell_of); the cells longest first; the plan within the
    hour (57:45 on the recording)."""
    out = pagelab("--hosts", "3", "--profile", "full", "--machine", recorded_machine())
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("Fleet plan: the full profile on 3 identical host(s)")
    rows = [ln.split() for ln in lines if ln[:1].isdigit()]

    def secs(t):
        return sum(int(x) * 60 ** i for i, x in enumerate(reversed(t.split(":"))))

    spans = [secs(r[4]) - secs(r[3]) for r in rows]
    assert spans == sorted(spans, reverse=True) and rows[0][2] == "host1"   # LPT: the longest first
    cells = [r[1] for r in rows]
    assert "readyboost" not in cells and sorted(c for c in cells if c.startswith("readyboost[")) == sorted(
        f"readyboost[{a}]" for a in ("hdd", "hdd_after", "hdd_between", "tier_after", "tier_between", "zswap",
                                     "zram", "own"))
    assert sum(c.startswith("payoff[") for c in cells) >= 2
    assert any(ln.startswith("predicted wall time: 57:") for ln in lines), out.stdout
    assert lines[-1] == "within 1:00:00: yes", lines[-1]


def test_a_recording_is_named_as_pagelab_time_names_it():
    """--recording takes a recording by its name (MACHINE/PROFILE) as by its path: the same plan
    (the title names the source as given)."""
    name = f"{recorded_machine()}/full"
    by_name = pagelab("--hosts", "3", "--profile", "full", "--recording", name)
    by_path = pagelab("--hosts", "3", "--profile", "full", "--recording", f"data/recorded/{name}")
    assert by_name.returncode == by_path.returncode == 0, by_name.stderr + by_path.stderr
    assert by_name.stdout.splitlines()[1:] == by_path.stdout.splitlines()[1:]
    assert "predicted wall time: 57:" in by_name.stdout


@pytest.mark.parametrize("args, why", [
    (["--hosts", "0"], "--hosts must be at least 1, not 0"),
    (["--hosts", "2", "--profile", "huge"], "no profile named 'huge'"),
    (["--hosts", "2", "--machine", "no-such-machine"], "no recording of profile 'quick' on no-such-machine"),
    ([], "names no fleet hosts"),
    (["--hosts", "2", "--recording", "no-such-machine/full"], "--recording no-such-machine/full: no such directory"),
    (["--hosts", "2", "--recording", "docs"], "--recording docs: no experiment's trials.csv in docs"),
])
def test_bad_input_is_one_line_and_exit_2(args, why):
    out = pagelab(*args)
    assert out.returncode == 2 and out.stdout == "", out.stdout + out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and why in out.stderr, out.stderr


def test_the_verdict_names_what_bounds_the_plan():
    """Within the goal: yes. Over it: a job longer than the goal on its own (split or not), the
    total shared by the hosts (with the hosts it would need), or else the busiest host."""
    hour = 3600.0
    assert fleetplan.verdict(lpt([Cell("a", 100)], ["h1"], 0, 0), hour) == "within 1:00:00: yes"
    big = lpt([Cell("big", 4000), Cell("a", 100)], ["h1", "h2"], 0, 0)
    assert "bounded by big, one job of 1:06:40" in fleetplan.verdict(big, hour)
    assert "it cannot be split" in fleetplan.verdict(big, hour)
    assert "its cells can be split between hosts" in fleetplan.verdict(big, hour, ["big"])
    many = lpt([Cell(f"c{i}", 3000) for i in range(4)], ["h1", "h2"], 0, 0)
    text = fleetplan.verdict(many, hour)
    assert "bounded by the total of 3:20:00 shared by 2 host(s)" in text and "fewer than 4 hosts" in text, text
    lpt_loss = lpt([Cell(n, t) for n, t in zip("abcde", [2000, 1600, 1200, 1200, 1200], strict=True)], ["h1", "h2"],
                   0, 0)   # 5, 4, 3, 3, 3 scaled: LPT 4000, the total shared 3600
    assert fleetplan.verdict(lpt_loss, hour).startswith("within 1:00:00: no; bounded by h2's load (1:06:40")


def test_the_configured_fleet_keeps_each_job_on_its_host(tmp_path):
    """Without --hosts, the configured fleet's jobs, each on its host (a host's own `experiments`
    restrict it), durations from the recording of the fleet's profile."""
    text = (REPO / "config/config.yaml").read_text()
    cfg = tmp_path / "config.yaml"
    cfg.write_text(text[: text.index("\nfleet:")] + """
fleet:
  hosts:
    - {name: n1}
    - {name: n2, experiments: [seekmodel]}
  experiments: [seekmodel, crystalmark]
  profile: quick
""")
    out = pagelab("--configfile", str(cfg), "--machine", recorded_machine())
    assert out.returncode == 0, out.stderr
    jobs = {ln.split()[1]: ln.split()[2] for ln in out.stdout.splitlines() if ln[:1].isdigit()}
    assert jobs == {"n1/seekmodel": "n1", "n1/crystalmark": "n1", "n2/seekmodel": "n2"}, out.stdout
    assert "jobs bound to their hosts" in out.stdout


def test_interleaved_cells_are_charged_only_their_own_trials():
    """Two cells whose trials alternate (a randomised run): each is charged its own trials and
    the short pause before each, never the other cell's trials between them; together they
    are the whole run. A pause of STOP_GAP_S or more (a stopped run) is nobody's."""
    t0 = 1_700_000_000

    def rec(cell, start, end):
        iso = datetime.datetime.fromtimestamp
        return {"params": {"cell": cell}, "start": iso(t0 + start).isoformat(), "end": iso(t0 + end).isoformat()}

    recs = [rec("a", 0, 10), rec("b", 11, 21), rec("a", 22, 32), rec("b", 33, 43),
            rec("a", 43 + trialtimes.STOP_GAP_S + 5, 53 + trialtimes.STOP_GAP_S + 5)]
    cells = fleetplan.cell_seconds(recs, lambda p: p["cell"])
    assert cells == {"a": 10 + 11 + 10, "b": 11 + 11}
    assert sum(cells.values()) == fleetplan.trial_seconds(recs) == 53
