"""A run the fleet splits between its hosts, by its descriptor's `split` and `cell_of`:
readyboost arm by arm (payoff's grid, cell by cell, is tests/test_payoff.py's). Every arm goes
to one host, dealt by LPT over the recorded per-arm durations; too many hosts are refused with
one line and exit 2; the plan's per-arm cells add up to the recorded run; and the hosts' shares
of the recorded full run, merged by `pagelab fleet cells`, give the analysis the single-host run
gives. Quick: nothing is run, no state is touched."""

from __future__ import annotations

import json
import subprocess

import pandas as pd
import pytest

from conftest import REPO, VENV_BIN
from pagelab import experiments
from pagelab.experiments import payoff, readyboost
from pagelab.experiments.harness import descriptor
from pagelab.run import fleet, fleetplan
from pagelab.system import config
from test_fleetplan import optimum


def recording(profile: str = "full"):
    return next(p for p in sorted((REPO / "data/recorded").glob(f"*/{profile}/readyboost"))
                if (p / "trials.csv").is_file())


def block(name, profile="full"):
    """An experiment's resolved block at `profile`."""
    return config.resolve(config.validate({"profile": profile}), config.load_schema())[name]


def fleet_config(hosts, profile="full", **readyboost_block):
    """A fleet of `hosts` running readyboost split between them (unless the block says otherwise)."""
    readyboost_block = {"split_between_hosts": True, **readyboost_block}
    return config.validate({"profile": profile, "readyboost": readyboost_block,
                            "fleet": {"hosts": [{"name": h} for h in hosts], "experiments": ["readyboost"],
                                      "profile": profile}})


def config_file(tmp_path, hosts, readyboost_set=None):
    """config/config.yaml with a fleet of `hosts` running readyboost (fleet.set over it)."""
    text = (REPO / "config/config.yaml").read_text()
    block = {"hosts": [{"name": h} for h in hosts], "experiments": ["readyboost"], "profile": "full",
             "set": {"readyboost": {"split_between_hosts": True, **(readyboost_set or {})}}}
    path = tmp_path / "config.yaml"
    path.write_text(text[: text.index("\nfleet:")] + "\nfleet: " + json.dumps(block) + "\n")
    return path


def test_both_split_runs_name_their_cells_on_the_descriptor():
    """One mechanism, two users: the descriptors hold split and cell_of; the fleet's blocks take
    split through pagelab.experiments.split."""
    split = {e for e in config.experiments() if descriptor(e).split}
    assert split == {"readyboost", "payoff"} and all(descriptor(e).cell_of for e in split)
    assert experiments.split("readyboost") is readyboost.split
    assert descriptor("readyboost").cell_of({"arm": "tier_after"}) == "tier_after"
    for conf in payoff.configurations(block("payoff")):
        assert descriptor("payoff").cell_of(conf) == payoff.cell_of(conf).label


@pytest.mark.parametrize("hosts", [["alpha", "beta"], ["alpha", "beta", "gamma"]])
def test_the_arms_are_dealt_once_each_balancing_the_recorded_loads(hosts):
    """Each host's block names its share of the arms, in the block's order; every arm goes to
    exactly one host; the busiest host's recorded load is LPT's, within Graham's 4/3 - 1/(3N) of
    the best assignment, and never above the round-robin deal of the same arms."""
    raw = fleet_config(hosts)
    assert fleet.is_split(raw, "readyboost", readyboost.split)
    blocks = {h: fleet.block(raw, h, "readyboost", split=readyboost.split) for h in hosts}
    every = config.resolve(raw, config.load_schema())["readyboost"]["arms"]
    shares = {h: b["arms"] for h, b in blocks.items()}
    dealt = [a for h in hosts for a in shares[h]]
    assert sorted(dealt) == sorted(every) and len(dealt) == len(set(dealt))
    assert all(shares[h] == [a for a in every if a in shares[h]] for h in hosts)
    assert all(readyboost.configurations(blocks[h]) == [{"arm": a} for a in shares[h]] for h in hosts)
    seconds = fleetplan.durations(recording(), readyboost.arm_of)
    assert set(seconds) == set(every)
    loads = {h: sum(seconds[a] for a in shares[h]) for h in hosts}
    best = optimum(list(seconds.values()), len(hosts))
    assert max(loads.values()) <= fleetplan.graham_bound(len(hosts)) * best + 1e-6, (loads, best)
    robin = max(sum(seconds[a] for a in every[i::len(hosts)]) for i in range(len(hosts)))
    assert max(loads.values()) <= robin


def test_without_split_between_hosts_every_host_runs_every_arm():
    """The default: a fleet compares its hosts, so each runs the whole block (no share), and the
    plan's jobs are whole runs."""
    hosts = ["alpha", "beta", "gamma"]
    raw = fleet_config(hosts, split_between_hosts=False)
    assert not block("readyboost")["split_between_hosts"]
    assert not fleet.is_split(raw, "readyboost", readyboost.split)
    every = config.resolve(raw, config.load_schema())["readyboost"]["arms"]
    assert all(fleet.block(raw, h, "readyboost", split=readyboost.split)["arms"] == every for h in hosts)
    assert readyboost.split(block("readyboost"), [f"n{i}" for i in range(9)]) == {f"n{i}": {} for i in range(9)}


def test_a_configured_subset_of_arms_is_split_and_one_host_runs_the_whole_block():
    two = fleet_config(["a", "b"], arms=["hdd", "tier_after", "tier_between"])
    shares = {h: fleet.block(two, h, "readyboost", split=readyboost.split)["arms"] for h in ("a", "b")}
    assert sorted(shares["a"] + shares["b"]) == ["hdd", "tier_after", "tier_between"] and all(shares.values())
    one = fleet_config(["solo"])
    assert not fleet.is_split(one, "readyboost", readyboost.split)
    assert fleet.block(one, "solo", "readyboost", split=readyboost.split)["arms"] == \
        config.resolve(one, config.load_schema())["readyboost"]["arms"]


@pytest.mark.parametrize("hosts, readyboost_set, why", [
    ([f"n{i}" for i in range(9)], None, "fleet: 9 hosts run readyboost, which has only 8 arms: name fewer hosts"),
    (["a", "b", "c"], {"arms": ["hdd", "tier_after"]},
     "fleet: 3 hosts run readyboost, which has only 2 arms: name fewer hosts"),
])
def test_more_hosts_than_arms_is_refused_with_one_line_and_exit_2(tmp_path, hosts, readyboost_set, why):
    with pytest.raises(config.ConfigError, match=why):
        readyboost.split({**block("readyboost"), "split_between_hosts": True, **(readyboost_set or {})}, hosts)
    out = subprocess.run([str(VENV_BIN / "pagelab"), "fleet", "show", "--configfile",
                          str(config_file(tmp_path, hosts, readyboost_set))],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stdout == "", out.stdout + out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and why in out.stderr, out.stderr


def test_the_plans_per_arm_cells_add_up_to_the_recorded_run(tmp_path):
    """From the recorded full run (its trials.csv has an `arm` column): one cell per arm, their
    durations summing to the whole run's; a configured fleet's readyboost jobs each take their
    share's arms, and together the run."""
    d = recording()
    arms = set(pd.read_csv(d / "trials.csv")["arm"])
    whole = fleetplan.durations(d)[""]
    cells = fleetplan.durations(d, descriptor("readyboost").cell_of)
    assert set(cells) == arms and sum(cells.values()) == pytest.approx(whole, abs=1e-6)
    planned = {c.name: c.seconds for c in fleetplan.profile_cells(d.parent, ["readyboost"],
                                                                  {"readyboost": readyboost.arm_of})}
    assert planned == {f"readyboost[{a}]": s for a, s in cells.items()}
    raw = fleet_config(["alpha", "beta", "gamma"])
    shares = fleet.job_shares(raw, descriptor)
    assert set(shares) == {(h, "readyboost") for h in ("alpha", "beta", "gamma")}
    jobs = fleetplan.job_cells(fleet.jobs(raw), d.parent, shares)
    assert sum(j.seconds for j in jobs) == pytest.approx(whole, abs=1e-6)
    assert max(j.seconds for j in jobs) < whole / 1.5
    # the same through the command line, each job on its host
    out = subprocess.run([str(VENV_BIN / "pagelab"), "fleet", "plan", "--configfile",
                          str(config_file(tmp_path, ["alpha", "beta", "gamma"])), "--recording", str(d.parent)],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert sorted(ln.split()[1] for ln in out.stdout.splitlines() if ln[:1].isdigit()) == \
        [f"{h}/readyboost" for h in ("alpha", "beta", "gamma")]


def test_a_trial_without_a_record_takes_its_cell_from_its_csv_row_or_is_one_line(tmp_path):
    d = tmp_path / "readyboost"
    d.mkdir()
    frame = pd.read_csv(recording() / "trials.csv").head(3)
    frame.to_csv(d / "trials.csv", index=False)   # no trial records beside it
    cells = fleetplan.durations(d, readyboost.arm_of)
    assert set(cells) == set(frame["arm"]) and sum(cells.values()) == pytest.approx(fleetplan.durations(d)[""])
    frame.drop(columns=["arm"]).to_csv(d / "trials.csv", index=False)
    with pytest.raises(fleetplan.PlanError, match="names no cell"):
        fleetplan.durations(d, readyboost.arm_of)


def split_recording(tmp_path, hosts):
    """The recorded full run's trials dealt to `hosts` by readyboost.split, as each host's job
    would have written them: its own trials.csv (its arms' rows, `order` counted on that host) and
    its config.json (the block with its share); and the fleet plan with the whole block."""
    src = recording()
    frame = pd.read_csv(src / "trials.csv", keep_default_na=False, na_values=[""])
    whole = json.loads((src / "config.json").read_text())
    shares = readyboost.split({**whole, "split_between_hosts": True}, hosts)
    results = tmp_path / "fleet"
    for h in hosts:
        d = results / h / "readyboost"
        d.mkdir(parents=True)
        part = frame[frame["arm"].isin(shares[h]["arms"])].sort_values("order").copy()
        part["order"] = range(len(part))
        part.to_csv(d / "trials.csv", index=False)
        (d / "config.json").write_text(json.dumps({**whole, **shares[h], "scratch_dir": f"scratch/fleet/{h}"}))
    plan = {"hosts": [{"name": h, "labels": {}, "experiments": ["readyboost"]} for h in hosts],
            "profile": "full", "baseline": hosts[0], "split": {"readyboost": whole}}
    (tmp_path / "fleet.json").write_text(json.dumps(plan))
    return results, shares


def cells(*args):
    return subprocess.run([str(VENV_BIN / "pagelab"), "fleet", "cells", "readyboost", *map(str, args)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)


def test_the_merged_shares_give_the_single_host_runs_analysis(tmp_path):
    """Two hosts' shares of the recorded full run, merged by `pagelab fleet cells`: the analysis
    (summary, ratios and interaction, the measurements the claims read, the macros) is the
    unsplit recording's. Each host's own share analyses too (the fleet's per-host notebook)."""
    results, shares = split_recording(tmp_path, ["alpha", "beta"])
    # the claims' comparisons cross hosts: the seed's no-ReadyBoost arm and its enough pre-population
    assert [h for h in shares if "hdd_between" in shares[h]["arms"]] != \
        [h for h in shares if "tier_between" in shares[h]["arms"]]
    out = cells("--plan", tmp_path / "fleet.json", "--results", results)
    assert out.returncode == 0, out.stderr
    merged = results / "merged" / "readyboost"
    assert json.loads((merged / "config.json").read_text()) == json.loads((recording() / "config.json").read_text())
    frame = pd.read_csv(merged / "trials.csv")
    assert frame.groupby("arm")["host"].nunique().max() == 1 and set(frame["host"]) == {"alpha", "beta"}
    got, want = readyboost.analyse(merged, "full"), readyboost.analyse(recording(), "full")
    pd.testing.assert_frame_equal(got.summary.reset_index(drop=True), want.summary.reset_index(drop=True))
    assert readyboost.ratios(got.results.trials) == readyboost.ratios(want.results.trials)
    assert "interaction" in readyboost.ratios(got.results.trials)
    assert got.measurements == want.measurements
    assert got.macros == want.macros
    for h in ("alpha", "beta"):
        alone = readyboost.analyse(results / h / "readyboost", "full")
        assert set(alone.summary["arm"]) == set(shares[h]["arms"])


def test_an_arm_from_two_hosts_is_refused_and_nothing_is_written(tmp_path):
    results, shares = split_recording(tmp_path, ["alpha", "beta"])
    arm = shares["beta"]["arms"][0]
    src = results / "beta" / "readyboost" / "trials.csv"
    beta = pd.read_csv(src)
    alpha = pd.read_csv(results / "alpha" / "readyboost" / "trials.csv")
    pd.concat([alpha, beta[beta["arm"] == arm]]).to_csv(results / "alpha" / "readyboost" / "trials.csv", index=False)
    out = cells("--plan", tmp_path / "fleet.json", "--results", results)
    assert out.returncode == 1 and f"cell '{arm}' came from two hosts (alpha, beta)" in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert not (results / "merged").exists()
