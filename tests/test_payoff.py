"""payoff (docs/payoff.md): the one-factor plan and the grid, the grid's cells dealt to a fleet's
hosts and merged back, bad blocks refused before anything changes (exit 2), the analysis on
known trials, and the map with one point per cell."""

from __future__ import annotations

import dataclasses
import json
import random

import numpy as np
import pandas as pd
import pytest

from pagelab.claims.registry import load_claims
from pagelab.experiments import payoff
from pagelab.run import fleet, trials
from pagelab.system import config
from pagelab.system.config import ConfigError


def block(profile: str = "full", **over) -> dict:
    cfg = config.load(overrides={"profile": profile})["payoff"]
    cfg.pop("scratch_dir", None)
    return {**cfg, **over}


def test_the_one_factor_plan_steps_one_factor_at_a_time_from_the_seeds_machine():
    cfg = block()
    cells = payoff.cells(cfg)
    assert cells[0] == payoff.SEED_MACHINE == payoff.Cell("hdd5400-2008", "usbstick-2008", 1.0, "between")
    lv = payoff.levels(cfg)
    assert len(cells) == 1 + sum(len(v) - 1 for v in lv.values()) == 10
    assert len({c.label for c in cells}) == len(cells)
    for c in cells[1:]:
        differs = [f for f in payoff.FACTORS if getattr(c, f) != getattr(payoff.SEED_MACHINE, f)]
        assert len(differs) == 1, c
    # every level of every factor appears
    for f in payoff.FACTORS:
        assert {getattr(c, f) for c in cells} == set(lv[f])
    # two arms per cell; the trials of every (cell, arm) n times, in an order shuffled by the seed
    confs = payoff.configurations(cfg)
    assert len(confs) == 2 * len(cells) and {c["arm"] for c in confs} == {"bare", "tier"}
    plan = trials.plan(confs, 3, cfg["rng_seed"], payoff.EXPERIMENT.conf_name)
    names = [t.trial_id.rsplit("-r", 1)[0] for t in plan]
    assert sorted(pd.Series(names).value_counts().unique()) == [3]
    assert [t.trial_id for t in trials.plan(confs, 3, cfg["rng_seed"], payoff.EXPERIMENT.conf_name)] == \
        [t.trial_id for t in plan]
    assert [t.trial_id for t in trials.plan(confs, 3, cfg["rng_seed"] + 1, payoff.EXPERIMENT.conf_name)] != \
        [t.trial_id for t in plan]
    # the grid is the full factorial, never the default
    assert config.load()["payoff"]["design"] == "one-factor"
    grid = payoff.cells({**cfg, "design": "grid"})
    assert len(grid) == int(np.prod([len(v) for v in lv.values()])) == 90
    assert {c.label for c in cells} <= {c.label for c in grid}


def test_the_cells_keep_the_seeds_proportions():
    cfg = block()
    d1 = payoff.cell_design(cfg, payoff.SEED_MACHINE)
    # the seed: 1.4 GB of working set and 2 x 1 GB of hogs against 3 GB push out 2/7 of it
    assert d1.intended_share == pytest.approx((1400 + 2048 - 3072) / 1400, abs=0.01)
    assert d1.intended_cache_share == 1.0
    more = payoff.cell_design(cfg, dataclasses.replace(payoff.SEED_MACHINE, ram_x=payoff.MORE_RAM))
    assert (more.working_set, more.hog, more.file_cache) == (d1.working_set, d1.hog, d1.file_cache)
    assert more.ram == pytest.approx(1.33 * d1.ram, rel=0.001)
    assert more.intended_share == 0 and 0 < more.intended_cache_share < 1


def test_a_fleet_deals_the_grid_cells_once_each_disjoint_per_host_and_the_merge_has_every_cell(tmp_path):
    """Three fake hosts run the full profile's grid: each job's block names its share of the
    cells, every cell goes to exactly one host, in the order the recorded rng_seed shuffles, and
    merging what the hosts' jobs wrote gives every cell and arm."""
    hosts = ["alpha", "beta", "gamma"]
    raw = config.validate({"profile": "full", "payoff": {"design": "grid"},
                           "fleet": {"hosts": [{"name": h} for h in hosts], "experiments": ["payoff"],
                                     "profile": "full"}})
    assert fleet.jobs(raw) == [(h, "payoff") for h in hosts]
    assert fleet.is_split(raw, "payoff", payoff.EXPERIMENT.split)
    blocks = {h: fleet.block(raw, h, "payoff", split=payoff.EXPERIMENT.split) for h in hosts}
    every = [c.label for c in payoff.design_cells(blocks["alpha"])]
    shares = {h: b["cells"] for h, b in blocks.items()}
    dealt = [c for h in hosts for c in shares[h]]
    assert sorted(dealt) == sorted(every) and len(dealt) == len(set(dealt)) == 90
    assert all(abs(len(shares[h]) - 30) == 0 for h in hosts)
    order = list(every)
    random.Random(blocks["alpha"]["rng_seed"]).shuffle(order)
    assert [order[i] for i in range(0, 90, 3)] == shares["alpha"]  # the seeded shuffle, dealt in turn
    assert shares != {h: [c.label for c in payoff.cells(dict(blocks[h], rng_seed=blocks[h]["rng_seed"] + 1,
                                                             cells=None))][i::3] for i, h in enumerate(hosts)}
    # each host's job runs only its share; the merge of their trials has every cell and arm
    results = tmp_path / "fleet"
    for h in hosts:
        d = results / h / "payoff"
        d.mkdir(parents=True)
        confs = payoff.configurations(blocks[h])
        assert {payoff.cell_of(c).label for c in confs} == set(shares[h])
        plan = trials.plan(confs, 2, blocks[h]["rng_seed"], payoff.EXPERIMENT.conf_name)
        rows = [{"trial_id": t.trial_id, "order": t.order, "warmup": False, "status": "ok", "valid": True,
                 "invalid_reason": "", **t.params, "cell": payoff.cell_of(t.params).label,
                 "recovery_s": 1.0} for t in plan]
        (d / "trials.csv").write_text(pd.DataFrame(rows).to_csv(index=False))
        (d / "config.json").write_text(json.dumps(blocks[h]))
    merged = fleet.merge_split(fleet.plan(raw), "payoff", results)
    frame = pd.read_csv(merged / "trials.csv")
    assert set(frame["cell"]) == set(every)
    assert (frame.groupby(["cell", "arm"]).size() == 2).all() and len(frame) == 90 * 2 * 2
    assert frame.groupby("cell")["host"].nunique().max() == 1
    whole = json.loads((merged / "config.json").read_text())
    assert "cells" not in whole and [c.label for c in payoff.cells(whole)] == every
    # the one-factor design is not split: every host runs all of it
    raw1 = config.validate({"profile": "full", "fleet": {"hosts": [{"name": h} for h in hosts],
                                                         "experiments": ["payoff"], "profile": "full"}})
    assert not fleet.is_split(raw1, "payoff", payoff.EXPERIMENT.split)
    assert "cells" not in fleet.block(raw1, "beta", "payoff", split=payoff.EXPERIMENT.split)


def test_more_hosts_than_cells_or_an_unknown_cell_is_refused():
    quick = block("quick", design="grid")
    with pytest.raises(ConfigError, match="3 hosts run payoff, whose grid has only 2 cells"):
        payoff.split(quick, ["a", "b", "c"])
    with pytest.raises(ConfigError, match="payoff.cells: 'nope' is not a cell"):
        payoff.cells({**quick, "cells": ["nope"]})


@pytest.mark.parametrize("over, message", [
    ({"full": {"disk_profiles": ["hdd7200-2007"]}},
     "payoff.full.disk_profiles: ['hdd7200-2007'] lacks the seed's machine's level"),
    ({"full": {"cache_profiles": ["usbstick-2008", "usbstick-slow-2007"]}},
     "payoff.cache_profiles: usbstick-slow-2007 fails ReadyBoost's device test"),
    ({"full": {"disk_profiles": ["hdd5400-2008", "nosuch-disk"]}}, "disk_profiles: no device profile 'nosuch-disk'"),
    ({"design": "all"}, "design: 'all' is not one of ['one-factor', 'grid']"),
])
def test_a_bad_block_is_refused_with_exit_2_before_anything_changes(tmp_path, monkeypatch, capsys, over, message):
    """`pagelab trial payoff` with a bad block: one line naming the key, exit 2, no results, no
    scratch, no journal and the paging state as before: the check runs before the state session
    (which here fails the test at once if it opens)."""
    from pagelab import cli
    from pagelab.system import state

    journal = tmp_path / "journal.jsonl"
    monkeypatch.setenv("PAGELAB_JOURNAL", str(journal))

    def never(*args, **kw):
        raise AssertionError("bad input opened a state session")

    monkeypatch.setattr(state, "session", never)
    raw = {"profile": "full", "payoff": {**over}}
    try:
        cfg = config.resolve(config.validate(raw))["payoff"]
    except ConfigError:  # the schema refuses it: write the block as given
        cfg = {**block(), **{k: v for k, v in over.items() if k != "full"}}
    cfg["scratch_dir"] = str(tmp_path / "scratch")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    before = state.show()
    capsys.readouterr()
    rc = cli.main(["trial", "payoff", "--config", str(path), "--output", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert rc == 2, err
    assert len(err.splitlines()) == 1 and message in err, err
    assert out == "" and not (tmp_path / "out" / "trials.csv").exists() and not (tmp_path / "scratch").exists()
    assert not journal.exists() and state.show() == before


def frame_of(cells: dict[str, tuple[list[float], list[float]]]) -> pd.DataFrame:
    """Counted trials of known times until the working set was back (the seed's recovery met at
    once, 0, as in the small groups): cell label -> (bare rounds, tier rounds). Above 1x the RAM
    the seed's proportions push nothing out (intended_share 0)."""
    rows, order = [], 0
    for label, (bare, tier) in cells.items():
        disk, stick, ram, mode = label.split("+")
        for b, t in zip(bare, tier, strict=True):
            for arm, v in (("bare", b), ("tier", t)):
                rows.append({"cell": label, "disk_profile": disk, "cache_profile": stick,
                             "ram_x": float(ram.rstrip("x")), "agent_mode": mode, "arm": arm, "order": order,
                             "recovery_s": 0.0, "back_s": v, "evicted_share": 0.3,
                             "intended_share": 0.27 if ram == "1x" else 0.0})
                order += 1
    return pd.DataFrame(rows)


def test_the_analysis_pairs_rounds_within_a_cell_and_says_where_the_tier_stops_paying():
    cfg = block("full")
    c = payoff.SEED_MACHINE
    ssd = dataclasses.replace(c, disk_profile=payoff.SSD)
    ram = dataclasses.replace(c, ram_x=payoff.MORE_RAM)
    fast = dataclasses.replace(c, cache_profile=payoff.FAST_STICK)
    bare = [10.0, 12, 11, 13, 9, 10]
    frame = frame_of({c.label: (bare, [5.0, 6, 5.5, 6.5, 4.5, 5]),
                      ssd.label: ([2.0] * 6, [2.0, 2.02, 1.98, 2.0, 2.01, 1.99]),
                      ram.label: ([0.0] * 6, [0.0] * 6),
                      fast.label: (bare, [2.5, 3, 2.75, 3.25, 2.25, 2.5])})
    s = payoff.summarise(frame).set_index("cell")
    assert s.loc[c.label, "ratio"] == pytest.approx(0.5) and payoff.pays(s.loc[c.label, "ratio_lo"],
                                                                           s.loc[c.label, "ratio_hi"]) == "pays"
    assert payoff.pays(s.loc[ssd.label, "ratio_lo"], s.loc[ssd.label, "ratio_hi"]) == "noise"
    assert s.loc[ram.label, "ratio_n"] == 0 and payoff.pays(float("nan"), float("nan")) == "n/a"
    adv = payoff.advice(frame, cfg)
    assert adv["ssd"].value == pytest.approx(1.0, abs=0.02)
    assert adv["ram_first"].value == 0.0 and adv["ram_first"].n == 6 and adv["ram_first"].censored == 0
    assert adv["fast_stick"].value == pytest.approx(0.5)
    m = payoff.measurements(s.reset_index(), adv, frame, cfg)
    assert m["payoff.advice.ssd"]["n"] == 6 and f"payoff.cell.{c.label}.ratio" in m
    # nothing is pushed out at 1.33x the RAM: PO2's zero follows from the sizes, by construction
    assert "nothing is pushed out" in m["payoff.advice.ram_first"]["construction"]
    assert "construction" not in m["payoff.advice.fast_stick"]
    from pagelab.claims import judge

    table = judge.judge_all(load_claims(), m, {}, "full").set_index("id")
    assert table.loc["PO2", "verdict"] == judge.BY_CONSTRUCTION
    # the same zeros where the sizes do push something out are censored (met at the start):
    # not measurable, never a ratio of 0
    censored = frame.assign(intended_share=0.27)
    adv_c = payoff.advice(censored, cfg)
    assert adv_c["ram_first"].censored == 6
    m_c = payoff.measurements(payoff.summarise(censored), adv_c, censored, cfg)
    assert judge.judge_all(load_claims(), m_c, {}, "full").set_index("id").loc["PO2", "verdict"] == \
        judge.NOT_MEASURABLE
    assert payoff.table(s.reset_index()).set_index("RAM").loc["1.33x", "Bare back (s)"] == "0 (by construction)"
    macros = payoff.macros(s.reset_index(), adv, cfg, "full", None)
    assert macros["PayoffAxesSentence"].startswith("Along the paging disk, the tier ")
    assert "it stopped paying at ssd-x25m-2008" in macros["PayoffAxesSentence"]
    assert macros["PayoffSsdSentence"] == ("with the SSD, the working set was not shown to come back faster or more "
                                           "slowly behind the tier than on the bare SSD")


def test_the_map_has_one_point_with_an_interval_per_cell():

    cfg = block("full")
    c = payoff.SEED_MACHINE
    cells = [c] + [dataclasses.replace(c, disk_profile=d) for d in ("hdd4200-2007", "ssd-x25m-2008")] + \
        [dataclasses.replace(c, cache_profile=payoff.FAST_STICK)]
    frame = frame_of({x.label: ([10.0, 11, 12, 10, 11], [5.0, 6, 5, 7, 6]) for x in cells})
    fig = payoff.map_figure(payoff.map_panels(payoff.summarise(frame), cfg), payoff.NOISE)
    ratio_axes = fig.axes[len(fig.axes) // 2:]
    points = 0
    for ax in ratio_axes:
        for container in ax.containers:  # errorbar containers: (line, caps, bars)
            line, _, bars = container
            xs = line.get_xdata()
            assert len(bars) == 1 and len(bars[0].get_segments()) == len(xs)
            points += len(xs)
    # disk axis: 3 cells, stick axis: 2 cells (the seed's machine is on both)
    assert points == 5


def test_an_agent_setting_in_payoffs_block_changes_payoffs_agent_command_line(tmp_path):
    """payoff's own block reaches the agent its trials run: unset, readyboost's defaults (one
    agent for both experiments); set in payoff's block, that value is on the superfetch command
    line payoff's trial starts (recovery.agent_options, what run_trial passes to Agent); the
    schema checks payoff's agent keys as it checks readyboost's."""
    from pagelab.core.units import parse_size
    from pagelab.experiments import recovery
    from pagelab.run.superfetch import Agent

    cell = payoff.Cell(*payoff.SEED_MACHINE_ARGS)

    def command(block: dict) -> list[str]:
        opts = recovery.agent_options(payoff.trial_config(block, cell))
        return Agent(1, tmp_path, tmp_path / "agent", {"mode": cell.agent_mode, **opts}).command

    def flag(cmd: list[str], name: str) -> str:
        return cmd[cmd.index(name) + 1]

    cfg = config.resolve(config.validate({"profile": "quick"}))["payoff"]
    rb = config.resolve(config.validate({"profile": "quick"}))["readyboost"]
    default = command(cfg)
    assert flag(default, "--group") == str(parse_size(rb["agent_group"]))
    assert flag(default, "--depth") == str(rb["agent_depth"])
    own = config.resolve(config.validate({"profile": "quick", "payoff": {"agent_group": "256K", "agent_depth": 4,
                                                                         "agent_priority": "normal"}}))["payoff"]
    changed = command(own)
    assert flag(changed, "--group") == str(256 << 10) and flag(changed, "--depth") == "4"
    assert flag(changed, "--priority") == "normal"
    with pytest.raises(ConfigError, match="agent_priority"):
        config.validate({"profile": "quick", "payoff": {"agent_priority": "high"}})
