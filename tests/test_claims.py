"""The verdicts on hand-made measurements whose answer is known: each of the five verdicts,
each kind of claim (point, range, bound, ratio, order), window edges, a straddling CI, too few
trials, profiles; the one rule for hardware a seed does not name; the pre-registration's
changelog against a recording's commit (in a temporary git repository); the stored recorded
measurements; the verdict figure; and the claims file's own rules."""

import csv
import io
import json
import math
import re
import shutil
import subprocess

import pytest

from pagelab.claims import changelog, judge, registry
from pagelab.claims.registry import load_claims
from pagelab.core import prose
from pagelab.core.latex import escape_breakable
from pagelab.core.paths import root
from pagelab.experiments import harness
from pagelab.system import config

FIELDS = ["id", "claim", "value", "unit", "source", "experiment", "measurement", "judge", "window_low",
          "window_high", "window_reason", "twin", "construction", "profiles", "kind", "hardware"]


def row(cid, value, key, lo="", hi="", judge="window", construction="", profiles="all",
        reason="how the seed measured: x0.8-x1.25", kind="", hardware=""):
    return {"id": cid, "claim": "c", "value": value, "unit": "u", "source": "seed000", "experiment": key.split(".")[0],
            "measurement": key, "judge": judge, "window_low": lo, "window_high": hi, "window_reason": reason,
            "twin": "what we measure", "construction": construction, "profiles": profiles, "kind": kind,
            "hardware": hardware}


def write_claims(path, rows):
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=FIELDS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    path.write_text(out.getvalue())


def setup(tmp_path, rows, measurements, skipped=None, profile="quick"):
    p = tmp_path / "claims.csv"
    write_claims(p, rows)
    res = tmp_path / "results"
    for exp, ms in measurements.items():
        (res / exp).mkdir(parents=True, exist_ok=True)
        (res / exp / "measurements.json").write_text(json.dumps(ms))
    for exp, why in (skipped or {}).items():
        (res / exp).mkdir(parents=True, exist_ok=True)
        (res / exp / "skipped.txt").write_text(why + "\n")
    res.mkdir(exist_ok=True)
    return judge.verdicts(res, harness.load_claims(p), profile).set_index("id")


def m(v, lo=None, hi=None, n=5):
    return {"value": v, "ci_low": v if lo is None else lo, "ci_high": v if hi is None else hi, "n": n}


def test_the_five_verdicts(tmp_path):
    t = setup(tmp_path, [
        row("IN", "4", "e.inside", 3.2, 5),
        row("OUT", "4", "e.outside", 3.2, 5),
        row("STR", "4", "e.straddle", 3.2, 5),
        row("BC", "4", "e.model", 3.2, 5, construction="the model's input"),
        row("NA", "4", "e.nothing", 3.2, 5),
    ], {"e": {"e.inside": m(4.0, 3.5, 4.5), "e.outside": m(8.0, 7.0, 9.0), "e.straddle": m(4.8, 4.5, 5.5),
              "e.model": m(4.0, 3.9, 4.1)}})
    assert t.loc["IN", "verdict"] == judge.REPRODUCED
    assert t.loc["OUT", "verdict"] == judge.NOT_REPRODUCED and "above" in t.loc["OUT", "note"]
    assert t.loc["STR", "verdict"] == judge.INCONCLUSIVE and "more trial" in t.loc["STR", "note"]
    assert t.loc["BC", "verdict"] == judge.BY_CONSTRUCTION  # inside the window, never "reproduced"
    assert t.loc["NA", "verdict"] == judge.NOT_APPLICABLE and "not measured" in t.loc["NA", "note"]
    assert t.loc["IN", "ratio"] == pytest.approx(1.0) and t.loc["OUT", "ratio"] == pytest.approx(2.0)
    assert t.loc["IN", "ours"] == "4.00 [3.50, 4.50]" and t.loc["IN", "window"] == "[3.20, 5.00]"


def test_window_edges_are_inside_and_a_point_outside_is_never_reproduced(tmp_path):
    t = setup(tmp_path, [
        row("EDGE", "4", "e.edge", 3.2, 5),
        row("JUST", "4", "e.just", 3.2, 5),
        row("PT", "4", "e.point_out", 3.2, 5),
        row("ZERO", "0", "e.zero", 0, 0),
        row("ONE", "0", "e.one", 0, 0),
        row("INF", "1.25", "e.ratio", 1.25, "inf", reason="an inflation of at least 25 % agrees", kind="bound"),
    ], {"e": {"e.edge": m(4, 3.2, 5.0), "e.just": m(4, 3.2, 5.01), "e.point_out": m(5.5, 4.9, 6),
              "e.zero": m(0), "e.one": m(1, 0, 2), "e.ratio": m(9, 7, 12)}})
    assert t.loc["EDGE", "verdict"] == judge.REPRODUCED
    assert t.loc["JUST", "verdict"] == judge.INCONCLUSIVE
    assert t.loc["PT", "verdict"] == judge.INCONCLUSIVE and "point estimate lies outside" in t.loc["PT", "note"]
    assert t.loc["ZERO", "verdict"] == judge.REPRODUCED
    assert t.loc["ONE", "verdict"] == judge.INCONCLUSIVE
    assert t.loc["INF", "verdict"] == judge.REPRODUCED and t.loc["INF", "window"] == ">= 1.25"
    # No claim is "reproduced" with its point estimate outside the window.
    for cid in t.index[t["verdict"] == judge.REPRODUCED]:
        assert t.loc[cid, "ci_low"] <= t.loc[cid, "value"] <= t.loc[cid, "ci_high"]


def test_more_trials_estimate_shrinks_the_interval_as_one_over_sqrt_n():
    # n = 5, half-width 1, the edge 0.5 away: the width must halve, i.e. n x 4 = 20, 15 more.
    assert judge.more_trials(5, 4.5, 3.5, 5.5, 5.0).startswith("about 15 more trials")
    assert judge.trials_needed(5, 4.5, 3.5, 5.5, 5.0) == 15
    assert "cannot settle" in judge.more_trials(5, 5.0, 4.0, 6.0, 5.0)
    assert "more than 200" in judge.more_trials(5, 4.99, 3.99, 5.99, 5.0)
    assert judge.trials_needed(5, 4.99, 3.99, 5.99, 5.0) is None


def test_inconclusive_only_where_more_trials_could_settle_it():
    """A median on the window's edge: no number of trials takes the interval off it, so the
    verdict is the one the median's side supports, and the note says so."""
    inside, note = judge.judge_window(m(4.999, 3.999, 5.999), 3.2, 5.0)
    assert inside == judge.REPRODUCED and "judged by the median" in note and "cannot settle" in note
    outside, _ = judge.judge_window(m(5.001, 4.001, 6.001), 3.2, 5.0)
    assert outside == judge.NOT_REPRODUCED
    straddle, note = judge.judge_window(m(4.5, 3.5, 5.5), 3.2, 5.0)
    assert straddle == judge.INCONCLUSIVE and "about 15 more trials" in note


def test_too_few_trials_is_inconclusive_whatever_the_interval(tmp_path):
    ms = {"e": {"e.a": m(4.0, 3.9, 4.1, n=3), "e.b": m(4.0, 3.9, 4.1, n=5)}}
    t = setup(tmp_path, [row("A", "4", "e.a", 3.2, 5), row("B", "4", "e.b", 3.2, 5)], ms)
    assert t.loc["A", "verdict"] == judge.INCONCLUSIVE and "needs 5: 2 more" in t.loc["A", "note"]
    assert t.loc["B", "verdict"] == judge.REPRODUCED
    (tmp_path / "full").mkdir()
    t = setup(tmp_path / "full", [row("B", "4", "e.b", 3.2, 5)], ms, profile="full")
    assert t.loc["B", "verdict"] == judge.INCONCLUSIVE and "needs 10" in t.loc["B", "note"]


def test_a_claim_judged_only_at_the_seed_scale(tmp_path):
    ms = {"e": {"e.s": m(150, 140, 160)}}
    t = setup(tmp_path, [row("S", "155", "e.s", 124, 194, profiles="seed")], ms)
    assert t.loc["S", "verdict"] == judge.NOT_APPLICABLE and "PROFILE=seed" in t.loc["S", "note"]
    (tmp_path / "s").mkdir()
    t = setup(tmp_path / "s", [row("S", "155", "e.s", 124, 194, profiles="seed")], ms, profile="seed")
    assert t.loc["S", "verdict"] == judge.REPRODUCED


def test_a_range_is_judged_as_the_range_with_no_other_rule(tmp_path):
    """PG2's case: the seed's 'better than 0.4 ... below 2' MB/s, and ours 0.7, 3x below the
    upper figure, lies inside the range: reproduced."""
    t = setup(tmp_path, [
        row("R", "2", "e.r", 0.4, 2, reason="the seed's range", kind="range"),
        row("ROUT", "2", "e.out", 0.4, 2, reason="the seed's range", kind="range"),
        row("RSTR", "2", "e.str", 0.4, 2, reason="the seed's range", kind="range"),
    ], {"e": {"e.r": m(0.7, 0.68, 0.74), "e.out": m(2.6, 2.4, 2.8), "e.str": m(1.9, 1.7, 2.2)}})
    assert t.loc["R", "verdict"] == judge.REPRODUCED and t.loc["R", "window"] == "[0.400, 2.00]"
    assert t.loc["ROUT", "verdict"] == judge.NOT_REPRODUCED
    assert t.loc["RSTR", "verdict"] == judge.INCONCLUSIVE and "more trials" in t.loc["RSTR", "note"]


def test_a_bound_is_judged_on_its_one_side(tmp_path):
    t = setup(tmp_path, [
        row("ATLEAST", "1.25", "e.big", 1.25, "inf", reason="at least 25 %", kind="bound"),
        row("BELOW", "1.25", "e.one", 1.25, "inf", reason="at least 25 %", kind="bound"),
        row("UPTO", "500", "e.fast", "-inf", 500, reason="up to 500", kind="bound"),
        row("UPTO2", "500", "e.slow", "-inf", 500, reason="up to 500", kind="bound"),
    ], {"e": {"e.big": m(9, 7, 12), "e.one": m(1.0, 0.96, 1.04), "e.fast": m(1300, 1280, 1350),
              "e.slow": m(300, 280, 320)}})
    assert t.loc["ATLEAST", "verdict"] == judge.REPRODUCED
    assert t.loc["BELOW", "verdict"] == judge.NOT_REPRODUCED and "below" in t.loc["BELOW", "note"]
    assert t.loc["UPTO", "verdict"] == judge.NOT_REPRODUCED and t.loc["UPTO", "window"] == "<= 500"
    assert t.loc["UPTO2", "verdict"] == judge.REPRODUCED


def test_an_order_is_judged_step_by_step_against_the_seeds_steps(tmp_path):
    """The seed's steps 35/119 = 0.29 and 119/155 = 0.77. Ours 1.0 for the first step (the
    warm and cold arms alike, their intervals overlapping) is not the seed's order: no number
    of trials makes 1.0 into 0.3, so 'not reproduced', never 'inconclusive'."""
    order = dict(judge="order", kind="order", lo="0.2353; 0.6142", hi="0.3676; 0.9597",
                 reason="each step against the seed's: x0.8-x1.25")
    t = setup(tmp_path, [
        row("SAME", "warm < cold < none", "e.warm_vs_cold; e.cold_vs_none", **order),
        row("SEED", "warm < cold < none", "e.seed1; e.cold_vs_none", **order),
        row("HALF", "warm < cold < none", "e.wide; e.cold_vs_none", **order),
    ], {"e": {"e.warm_vs_cold": m(1.0, 0.95, 1.05), "e.cold_vs_none": m(0.77, 0.72, 0.82),
              "e.seed1": m(0.3, 0.27, 0.33), "e.wide": m(0.34, 0.3, 0.42)}})
    assert t.loc["SAME", "verdict"] == judge.NOT_REPRODUCED
    assert "step 1 (warm / cold)" in t.loc["SAME", "note"] and "outside the seed's step" in t.loc["SAME", "note"]
    assert t.loc["SEED", "verdict"] == judge.REPRODUCED
    assert t.loc["HALF", "verdict"] == judge.INCONCLUSIVE and "more trials" in t.loc["HALF", "note"]
    assert t.loc["SAME", "n"] == "5/5" and t.loc["SAME", "window"] == "[0.235, 0.368]; [0.614, 0.960]"


def test_a_ratio_of_two_of_the_seeds_ranges_is_judged_on_the_range_of_their_ratio(tmp_path):
    t = setup(tmp_path, [row("MCR", "1.67-2.5", "e.r", 1.667, 2.5, reason="500 over 300-200", kind="ratio",
                             hardware="unnamed: the seed's CPU")],
              {"e": {"e.r": m(2.6, 2.55, 2.65)}})
    assert t.loc["MCR", "verdict"] == judge.NOT_REPRODUCED  # a ratio is judged, unnamed hardware or not


def test_missing_experiment_says_why(tmp_path):
    t = setup(tmp_path, [row("S", "10", "standby.x", 8, 12)], {},
              skipped={"standby": "skipped: needs root to turn on swap"})
    assert t.loc["S", "verdict"] == judge.NOT_APPLICABLE
    assert t.loc["S", "note"] == "skipped: needs root to turn on swap"


def test_bad_claims_files_are_named(tmp_path):
    p = tmp_path / "c.csv"
    cases = [
        (row("X", "1", "e.a", 1, 1, judge="guess"), "judge 'guess'"),
        (row("X", "4", "e.a", 1, 10), "wider than x0.8-x1.25 of 4.0: say why"),
        (row("X", "4", "e.a", 5, 3), "window_low 5.0 > window_high 3.0"),
        (row("X", "4", "e.a", "", ""), "must be numbers"),
        (row("X", "4", "e.a", 3.2, 5, profiles="nightly"), "profiles 'nightly'"),
        (row("X", "4", "e.a", 3.2, 5, kind="guess"), "kind 'guess'"),
        (row("X", "4", "e.a", 3.2, 5, kind="bound"), "a bound has one open side"),
        (row("X", "4", "e.a", 3.2, "inf"), "one open side is a bound"),
        (row("X", "a < b", "e.a; e.b", "0.2", "0.3", judge="order", kind="order"), "one window per step"),
        (row("X", "a < b", "e.a", 0.2, 0.3, kind="order"), "judge 'window' and kind 'order' disagree"),
        (row("X", "4", "e.a", 3.2, 5, hardware="the seed's CPU"), "'unnamed balance: <what>' or 'none: <why>'"),
        (row("X", "4", "f.a", 3.2, 5) | {"experiment": "e"}, "is not one of experiment 'e''s"),
    ]
    for bad, message in cases:
        write_claims(p, [bad])
        with pytest.raises(ValueError, match=re.escape(message)):
            load_claims(p)
    r = row("X", "4", "e.a", 3.2, 5)
    r["twin"] = ""
    write_claims(p, [r])
    with pytest.raises(ValueError, match="empty field: X"):
        load_claims(p)
    with pytest.raises(ValueError, match="must start with e."):
        setup(tmp_path, [row("X", "1", "e.a", 0.8, 1.25)], {"e": {"other.a": m(1)}})


def test_a_row_without_the_optional_trailing_columns_is_read():
    """A claims row written before `kind` and `hardware` existed (as an experiment added to a
    copy of the repository appends one) is a point value with nothing unnamed."""
    text = ",".join(FIELDS[:-2]) + "\nT1,c,42,u,none,toy,toy.v,window,40,44,x0.95,what we measure,,all\n"
    c = registry.read_claims(text, "test").to_dict("records")[0]
    assert registry.kind(c) == "point" and c["hardware"] == "" and registry.window(c) == (40.0, 44.0)


# --------------------------------------------------------------------------- the hardware rule
def test_a_figure_that_depends_on_unnamed_hardware_is_shown_not_judged(tmp_path):
    hw = "unnamed: the seed's CPU"
    t = setup(tmp_path, [
        row("ABS", "200-300", "e.speed", 200, 300, reason="the seed's range", kind="range", hardware=hw),
        row("PT", "500", "e.speed", 400, 625, hardware=hw),
        row("RAT", "0.3", "e.ratio", 0.24, 0.375, kind="ratio", hardware=hw),
    ], {"e": {"e.speed": m(250, 240, 260), "e.ratio": m(0.3, 0.28, 0.32)}})
    for cid in ("ABS", "PT"):
        assert t.loc[cid, "verdict"] == judge.NOT_APPLICABLE
        assert t.loc[cid, "note"].startswith("depends on the seed's CPU: an absolute")
        assert t.loc[cid, "ours"] == "250 [240, 260]"  # shown beside it
    assert t.loc["RAT", "verdict"] == judge.REPRODUCED  # the twin that cancels the hardware is judged


def test_a_ratio_that_keeps_the_balance_of_two_unnamed_parts_is_shown_not_judged(tmp_path):
    """A ratio of a CPU-bound figure over a disk-bound one cancels the machine's scale, not the
    balance of its CPU and disk: inside its window or outside, it is shown, not judged."""
    hw = "unnamed balance: the seed's CPU against its disk"
    t = setup(tmp_path, [
        row("IN", "0.3", "e.in", 0.24, 0.375, kind="ratio", hardware=hw),
        row("OUT", "0.3", "e.out", 0.24, 0.375, kind="ratio", hardware=hw),
    ], {"e": {"e.in": m(0.3, 0.28, 0.32), "e.out": m(0.5, 0.42, 0.8)}})
    for cid, ours in (("IN", "0.300 [0.280, 0.320]"), ("OUT", "0.500 [0.420, 0.800]")):
        assert t.loc[cid, "verdict"] == judge.NOT_APPLICABLE
        assert t.loc[cid, "note"].startswith("depends on the balance of the seed's CPU against its disk")
        assert t.loc[cid, "ours"] == ours
    p = tmp_path / "bad.csv"
    write_claims(p, [row("PT", "3", "e.in", 2.4, 3.75, hardware=hw)])
    with pytest.raises(ValueError, match="'unnamed balance: ...' is for a ratio, not a point"):
        load_claims(p)


def test_an_absolute_cpu_dependent_claim_judged_is_refused(tmp_path):
    """A synthetic claims file: a compressor's speed measured on this machine's
    CPU, judged as an absolute range with no word on the seed's CPU, is refused; saying what it
    depends on, or why nothing, makes it a valid file."""
    p = tmp_path / "c.csv"
    cpu = row("MC1", "200-300", "compression.codec.lzo.compress_mbps", 200, 300, reason="the seed's range",
              kind="range")
    write_claims(p, [cpu])
    with pytest.raises(ValueError, match=r"MC1: compression.codec.lzo.compress_mbps is measured on this machine's CPU"):
        harness.load_claims(p)
    load_claims(p)  # each row is well formed: the rule needs the experiments' tables
    own = harness.own_hardware()
    assert own["compression."] == "this machine's CPU"  # compression's descriptor says so
    assert registry.hardware_problems(registry.read_claims(p.read_text(), "c"), own)
    assert registry.hardware_problems(registry.read_claims(p.read_text(), "c"), {}) == []
    for hardware in ("unnamed: the seed's CPU", "none: a count"):
        write_claims(p, [cpu | {"hardware": hardware}])
        harness.load_claims(p)
    write_claims(p, [cpu | {"kind": "ratio", "value": "1.67-2.5", "window_low": 1.667, "window_high": 2.5}])
    harness.load_claims(p)  # a ratio of the same machine's figures needs no word


def test_every_own_hardware_prefix_is_one_of_its_experiments_keys():
    """Each experiment names its own hardware in its descriptor, under its own keys."""
    for name in config.experiments():
        assert all(p.startswith(name + ".") for p in harness.descriptor(name).own_hardware), name
    assert set(harness.own_hardware()) == {p for name in config.experiments()
                                          for p in harness.descriptor(name).own_hardware}


def test_every_published_claim_follows_the_hardware_rule():
    """Walks claims.csv: no claim measured on our own hardware is judged as an absolute figure
    without saying what it depends on, and every absolute claim that depends on unnamed hardware
    comes out 'not applicable here' even with ours inside its window; a claim that depends on
    nothing unnamed is judged."""
    c = harness.load_claims()
    assert registry.hardware_problems(c, harness.own_hardware()) == []
    for r in c.to_dict("records"):
        inside = {}
        for key, (lo, hi) in zip(registry.steps(r), registry.windows(r), strict=True):
            v = (lo + hi) / 2 if math.isfinite(lo + hi) else lo if math.isfinite(lo) else hi
            inside[key] = m(v, v, v, n=10)
        got = judge.judge(r, inside, {}, profile=r["profiles"].split()[0] if r["profiles"] != "all" else "full")
        unnamed = registry.unnamed_hardware(r)
        if registry.unnamed_balance(r):
            assert got["verdict"] == judge.NOT_APPLICABLE and "the balance of" in got["note"], r["id"]
        elif unnamed and registry.kind(r) in registry.ABSOLUTE:
            assert got["verdict"] == judge.NOT_APPLICABLE and got["note"].startswith(f"depends on {unnamed}"), r["id"]
        elif not r["construction"]:
            assert got["verdict"] == judge.REPRODUCED, (r["id"], got)
    by = c.set_index("id")
    for cid in ("SB2", "SB3", "MC1", "MC2", "MC3"):  # the claims on seed 004's unnamed CPU and disk
        assert registry.unnamed_hardware(by.loc[cid].to_dict()), cid
    for cid in ("SBR", "MCR"):  # their ratios of two of the seed's figures
        assert registry.kind(by.loc[cid].to_dict()) == "ratio" and by.loc[cid, "profiles"] == "all"
    # MCR's two figures are both the CPU's (cancelled, judged); SBR's are the CPU's and the disk's
    assert registry.unnamed_balance(by.loc["SBR"].to_dict()) and not registry.unnamed_balance(by.loc["MCR"].to_dict())


def test_every_published_claim_has_a_twin_a_window_and_a_reason():
    c = load_claims()
    assert set(c["judge"]) <= set(registry.JUDGES)
    for r in c.to_dict("records"):
        assert all(k.split(".")[0] == r["experiment"] for k in registry.steps(r)), r["id"]
        assert len(r["twin"]) > 30 and r["window_reason"], r["id"]
        for lo, hi in registry.windows(r):
            assert lo <= hi, r["id"]


def test_a_claim_a_device_model_was_built_from_is_by_construction_or_shown_out_of_reach(native_build):
    """A device profile that cites a claim id as the source of a value makes that claim's value
    an input: it may only be 'by construction', unless the model itself shows the claimed value
    does not follow from its inputs. CM3 (40 MB/s, explained by the seed as 27 MB/s x 1.5): the
    tier's own model, every read a hit, stays below its window on seed 003's stick."""
    from pagelab.experiments import crystalmark as cm

    c = load_claims().set_index("id")
    cited = set()
    for path in (root() / "config" / "devices").glob("*.yaml"):
        cited |= set(re.findall(r"\b([A-Z]{2,3}\d)\b", path.read_text())) & set(c.index)
    assert cited, "the device profiles cite the claims they were built from"
    from pagelab.system import config

    cfg = config.load(overrides={"profile": "quick"})["crystalmark"]
    ceiling = cm.tier_hit_mbps(cfg, 64 * 1024)
    for cid in cited:
        if cid == "CM3":
            assert not c.loc[cid, "construction"].strip()
            assert ceiling < registry.window(c.loc[cid].to_dict())[0], ceiling
        else:
            assert c.loc[cid, "construction"].strip(), f"{cid} is an input of a device model: by construction"


def test_summary_sentence_and_counts_come_from_the_table():
    import pandas as pd

    t = pd.DataFrame({"verdict": [judge.REPRODUCED, judge.NOT_REPRODUCED, judge.NOT_REPRODUCED,
                                  judge.INCONCLUSIVE, judge.BY_CONSTRUCTION]})
    s = judge.summary_sentence(t)
    assert s.startswith("Of the 5 published claims, one is reproduced here, two are not reproduced")
    assert "one remains inconclusive" in s and "no could" not in s
    mac = judge.macros(t)
    assert mac["VerdictsNotReproduced"] == "2" and mac["VerdictsTotal"] == "5"
    # a count of zero reads as English: "none remains", never "no remain"
    s0 = judge.summary_sentence(pd.DataFrame({"verdict": [judge.NOT_REPRODUCED, judge.BY_CONSTRUCTION]}))
    assert "none is reproduced here" in s0 and "none remains inconclusive" in s0, s0
    assert " no " not in s0, s0
    s1 = judge.summary_sentence(pd.DataFrame({"verdict": [judge.REPRODUCED]}))
    assert "none is judged not reproduced" in s1, s1


# --------------------------------------------------------------------------- the pre-registration
def git(repo, *args):
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()


def prereg_repo(tmp_path):
    """A repository with one claim, a recording made at its first commit, and an empty changelog."""
    repo = tmp_path / "repo"
    (repo / "data" / "published").mkdir(parents=True)
    write_claims(repo / "data/published/claims.csv", [row("X", "4", "e.a", 3.2, 5)])
    git(repo, "init", "-q")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "x", "--allow-empty")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "claims")
    commit = git(repo, "rev-parse", "HEAD")
    rec = repo / "data/recorded/m1/quick/e"
    rec.mkdir(parents=True)
    (rec / "provenance.json").write_text(json.dumps({"git": {"commit": commit, "dirty": False}}))
    (repo / "data/published/claims_changelog.csv").write_text(",".join(changelog.CHANGELOG_COLUMNS) + "\n")
    return repo


def log_row(path, claim, column, old, new):
    with open(path, "a", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerow(
            ["2026-11-27", claim, column, old, new, "why", "quick: inconclusive", "quick: reproduced"])


def test_a_window_changed_after_a_recording_needs_a_changelog_row(tmp_path):
    repo = prereg_repo(tmp_path)
    assert changelog.changelog_problems(repo) == ([], None)
    claims_csv, log = repo / "data/published/claims.csv", repo / "data/published/claims_changelog.csv"
    write_claims(claims_csv, [row("X", "4", "e.a", 3.0, 5, reason="a wider window, with its reason")])
    problems, skip = changelog.changelog_problems(repo)
    assert skip is None and len(problems) == 2
    assert "X.window_low changed since commit" in problems[0] and "'3.2' to '3.0'" in problems[0]
    assert "recording m1/quick/e" in problems[0]
    log_row(log, "X", "window_low", "3.2", "3.1")
    log_row(log, "X", "window_reason", "how the seed measured: x0.8-x1.25", "a wider window, with its reason")
    assert any("window_low" in p for p in changelog.changelog_problems(repo)[0])  # 3.1 is not 3.0
    log_row(log, "X", "window_low", "3.1", "3.0")  # a chain of logged changes reaches today's value
    assert changelog.changelog_problems(repo) == ([], None)
    # a claim added since the recording needs its own row
    write_claims(claims_csv, [row("X", "4", "e.a", 3.0, 5, reason="a wider window, with its reason"),
                              row("Y", "1", "e.b", 0.8, 1.25)])
    assert changelog.changelog_problems(repo)[0] == [
        "Y.claim changed since commit " + git(repo, "rev-parse", "HEAD~0")[:10] +
        " (recording m1/quick/e) from '' to 'added' without a row in data/published/claims_changelog.csv"]
    log_row(log, "Y", "claim", "", "added")
    assert changelog.changelog_problems(repo) == ([], None)
    changelog.load_changelog(log)


def test_a_stopping_rule_changed_after_a_recording_needs_a_changelog_row(tmp_path):
    """The stopping rule's parameters (the schema's defaults and each profile's own) against
    what each recording ran with (its config.json): a change is logged on the row that sets it."""
    repo = prereg_repo(tmp_path)
    (repo / "config" / "schema").mkdir(parents=True)
    (repo / "config" / "schema.yaml").write_text(
        "definitions:\n  repetitions:\n    properties:\n      verdict_look_every: {type: integer, default: 5}\n")
    (repo / "config" / "schema" / "e.yaml").write_text(
        "properties:\n  e:\n    properties:\n      quick:\n"
        "        default: {size: 4M, repetitions: {n_min: 5, n_max: 8, ci_pct: 10}}\n")
    rec = repo / "data/recorded/m1/quick/e"
    (rec / "config.json").write_text(json.dumps({"profile": "quick", "repetitions": {"n_min": 5, "n_max": 5,
                                                                                     "ci_pct": 10.0}}))
    log = repo / "data/published/claims_changelog.csv"
    problems, _ = changelog.changelog_problems(repo)
    assert problems == [
        "e/quick.repetitions.n_max is '8' in the schema where m1/quick/e ran with '5', without a row in "
        "data/published/claims_changelog.csv",
        "schema.repetitions.verdict_look_every is '5' in the schema where m1/quick/e ran with '', without a row "
        "in data/published/claims_changelog.csv"]
    log_row(log, "e/quick", "repetitions.n_max", "5", "8")
    log_row(log, "schema", "repetitions.verdict_look_every", "", "5")
    assert changelog.changelog_problems(repo) == ([], None)
    changelog.load_changelog(log)


def test_the_changelog_check_skips_without_the_recordings_history(tmp_path):
    repo = prereg_repo(tmp_path)
    shutil.rmtree(repo / ".git")
    problems, skip = changelog.changelog_problems(repo)
    assert problems == [] and "not in this checkout's git history" in skip


def test_bad_changelog_rows_are_named(tmp_path):
    p = tmp_path / "log.csv"
    p.write_text(",".join(changelog.CHANGELOG_COLUMNS) + "\n27.11.2026,X,colour,a,b,,q,q\n")
    with pytest.raises(ValueError, match=r"date '27.11.2026'.*column 'colour'.*reason is empty"):
        changelog.load_changelog(p)
    p.write_text(",".join(changelog.CHANGELOG_COLUMNS) + "\n2026-11-29,RBX,recording,80cd332,latest,why,q,q\n")
    with pytest.raises(ValueError, match=r"'recording' row's old and new are the recordings' commits"):
        changelog.load_changelog(p)
    p.write_text(",".join(changelog.CHANGELOG_COLUMNS) + "\n2026-11-29,RBX,recording,80cd332,ff92c4f,why,q,q\n")
    assert changelog.load_changelog(p)["column"].tolist() == ["recording"]
    p.write_text(",".join(changelog.CHANGELOG_COLUMNS) + "\n2026-12-03,RBX,rule,,half or more,why,q,q\n")
    with pytest.raises(ValueError, match=r"'rule' row's old and new say the rule before and after"):
        changelog.load_changelog(p)


def test_every_judging_change_since_a_recording_is_in_the_changelog():
    """The repository's own claims.csv against every recording's commit (needs the git history:
    a clone has it; an export without it skips, saying why)."""
    problems, skip = changelog.changelog_problems()
    if skip:
        pytest.skip(skip)
    assert problems == []
    log = changelog.load_changelog()
    assert set(log["column"]) <= (set(changelog.JUDGING) | {changelog.CLAIM_ROW, changelog.RECORDING_ROW,
                                                            changelog.RULE_ROW} | set(changelog.STOPPING_COLUMNS))
    for text in list(log["verdicts_before"]) + list(log["verdicts_after"]):
        assert re.fullmatch(r"quick: .+; full: .+; seed: .+", text), text


# --------------------------------------------------------------------------- recorded runs
def test_the_stored_recorded_measurements_match_the_recordings(tmp_path, monkeypatch):
    """data/published/recorded_measurements.json holds every recording, each with the commit
    and the trials of every experiment it was rebuilt from; a recording re-made since is named."""
    assert judge.stale_recordings() == []
    store = judge.load_recorded()
    assert list(store) and all(rec["measurements"] for rec in store.values())
    c = load_claims()
    for name, rec in store.items():  # every claim's key, on every recording that measured it
        for r in c.to_dict("records"):  # (a new experiment is in no recording until it is recorded,
            # and a claim judged only at other profiles' scale need not be measured at this one's)
            if r["experiment"] in rec["experiments"] and r["experiment"] not in rec.get("skipped", {}) \
                    and registry.judged_at(r, rec["profile"]):
                assert all(k in rec["measurements"] for k in registry.steps(r)), \
                    f"{name} lacks {r['id']}'s {r['measurement']}: pagelab claims recorded --recording {name}"
    copy = tmp_path / "recorded"  # judge's own name for the folder: it imports recorded_dir at its top
    shutil.copytree(judge.recorded_dir(), copy)
    monkeypatch.setattr(judge, "recorded_dir", lambda: copy)
    trials = next(copy.glob("*/quick/standby/trials.csv"))
    trials.write_text(trials.read_text() + "\n")
    assert [p.split(":")[0] for p in judge.stale_recordings()] == [f"{trials.parents[2].name}/quick"]


def test_verdict_strings_cover_every_recording():
    c = load_claims()
    strings = judge.verdict_strings(c)
    assert re.fullmatch(r"quick: [^;]+; full: [^;]+; seed: [^;]+", strings["RBO"])
    store = {name: {**rec, "measurements": {k: v for k, v in rec["measurements"].items()
                                            if not k.startswith("standby.")}}
             for name, rec in judge.load_recorded().items()}
    assert judge.verdict_strings(c, store)["SBR"].startswith("quick: n/a: not measured (standby.ratio")


# --------------------------------------------------------------------------- the figure
def test_the_verdict_figure_has_a_marker_per_claim_and_run_coloured_by_its_verdict(tmp_path):
    from matplotlib.colors import to_rgb

    from pagelab.core import plots

    c = load_claims()
    store = judge.load_recorded()
    runs = [(rec["profile"], rec["measurements"], rec.get("skipped", {}), rec["profile"]) for rec in store.values()]
    labels = [r[0] for r in runs]

    def markers(rows):
        fig = plots.verdict_forest(rows, labels)
        out = {line.get_gid(): to_rgb(line.get_color()) for line in fig.axes[0].lines if line.get_gid()}
        plots.plt.close(fig)
        return out

    rows = judge.forest_rows(c, runs)
    got = markers(rows)
    expected = {f"{r['id']}|{i}|{label}" for r in c.to_dict("records") for i in range(len(registry.steps(r)))
                for label in labels}
    assert set(got) == expected and len(got) == len(rows)
    tables = judge.recorded_tables(c, store)
    for name, rec in store.items():
        t = tables[name].set_index("id")
        for cid in c["id"]:
            assert got[f"{cid}|0|{rec['profile']}"] == to_rgb(plots.VERDICT_COLOURS[t.loc[cid, "verdict"]])
    # a changed verdict changes its colour: CM1's window moved to hold the quick run's value
    moved = c.copy()
    moved.loc[moved["id"] == "CM1", ["window_low", "window_high"]] = ["7", "10"]
    again = markers(judge.forest_rows(moved, runs))
    assert again["CM1|0|quick"] == to_rgb(plots.VERDICT_COLOURS[judge.REPRODUCED]) != got["CM1|0|quick"]
    assert again["CM2|0|quick"] == got["CM2|0|quick"]


def test_the_figure_and_its_html_are_written(tmp_path):
    res = tmp_path / "results"
    (res / "e").mkdir(parents=True)
    (res / "e" / "measurements.json").write_text("{}")
    out = tmp_path / "claims" / "verdicts-forest.pdf"
    rows = judge.write_figure(res, out, harness.load_claims(), tmp_path / "claims" / "verdicts.html", profile="quick")
    assert out.stat().st_size > 0 and out.with_suffix(".png").stat().st_size > 0
    html = (tmp_path / "claims" / "verdicts.html").read_text()
    assert "data:image/png;base64," in html and "this run (quick)" in html and "<th>MCR</th>" in html
    assert set(rows["run"]) == {"quick", "full", "seed", "this run (quick)"}


def test_the_appendix_prints_the_changelog(tmp_path):
    from pagelab.paper import appendix

    macros = appendix.write_changelog(tmp_path)
    text = (tmp_path / "changelog.tex").read_text()
    log = changelog.load_changelog()
    assert "\\begin{longtable}" in text and "\\label{tab:app-changelog}" in text
    assert macros["AppendixChangelogRows"] == str(len(log))
    for r in log.to_dict("records"):
        assert f"{r['claim']}\\newline\\texttt{{{escape_breakable(r['column'])}}}" in text
    check = macros["AppendixChangelogCheck"]
    assert check.endswith("finds no judging change without a row") or "could not run here" in check


def test_the_method_states_the_stopping_rule_the_schema_sets():
    """The method section's look interval, interim level and margin are the schema's defaults,
    through the appendix's macros, never numbers typed into the text."""
    from pagelab.paper import appendix
    from pagelab.run import sequential

    d = sequential.defaults()
    m = appendix.stopping_macros()
    assert m == {"StoppingLookEvery": str(d["verdict_look_every"]),
                 "StoppingInterimLevel": f"{d['verdict_interim_level']:g}",
                 "StoppingMarginPct": f"{d['verdict_margin_pct']:g}\\,\\%"}
    text = (root() / "paper/sections/method.tex").read_text()
    assert all(f"\\{k}{{}}" in text for k in m), text
    assert "haybittle71" in text and "@article{haybittle71," in (root() / "paper/refs.bib").read_text()
    # no profile sets its own: the defaults are what every run uses
    for rule in changelog.stopping_rule(root()).values():
        assert all(rule[k][1] == changelog.SCHEMA_ROW for k in sequential.KEYS), rule


@pytest.mark.parametrize("recorded", [True, False], ids=["rebuilt-from-a-recording", "measured-here"])
def test_the_appendix_describes_the_machine_the_trials_ran_on(tmp_path, recorded):
    """A paper rebuilt from a recording says so in the abstract and the appendix, and describes
    the recording's machine (from the trials' provenance) with the recording's run time; a fresh
    run describes this machine and Snakemake's benchmark time."""
    from pagelab.paper import appendix

    res = tmp_path / "results"
    (res / "e").mkdir(parents=True)
    prov = {"git": {"commit": "a" * 40, "dirty": False}, "config_hash": "0123456789abcdef",
            "disk": {"disk": "sdz", "model": "Test Disk", "rotational": True, "scheduler": "none"},
            "machine": {"cpu_model": "Test CPU 9000", "cpus": 64, "kernel": "9.9.9-test",
                        "mem_total_bytes": 8 << 30, "hostname": "h"}}
    if recorded:
        prov["recorded_machine"] = "test-machine"
    (res / "e" / "provenance.json").write_text(json.dumps(prov))
    (res / "e" / "trials.csv").write_text(
        "trial_id,status,warmup,valid,start,end\n"
        "a,ok,False,True,2026-01-01T10:00:00+00:00,2026-01-01T10:01:00+00:00\n"
        "b,ok,False,True,2026-01-01T10:01:00+00:00,2026-01-01T10:05:30+00:00\n")
    (res / "benchmarks").mkdir()
    (res / "benchmarks" / "e.tsv").write_text("s\th:m:s\n7.25\t0:00:07\n")
    out = tmp_path / "appendix"
    appendix.write(res, out, ["e"], "full")
    macros = (out / "macros.tex").read_text()
    table = (out / "experiments.tex").read_text()
    if recorded:
        assert "reference machine test-machine" in macros and "without running a trial" in macros, macros
        assert "Test CPU 9000" in macros and "9.9.9-test" in macros and "{64}" in macros, macros
        assert "not recorded" in macros  # virtualisation is not in a recording
        assert " 330 " in table or "& 330 &" in table, table  # 10:00:00 to 10:05:30
    else:
        assert "the machine that built this document" in macros and "reference machine" not in macros
        assert "& 7 &" in table, table


def test_every_device_setting_the_paper_reads_is_its_own_profiles():
    """\\Dev{profile}{key} reads config/devices/<profile>.yaml's own value: profiles of one kind
    (hdd5400-2008, hdd7200-2007, ...) never share a name, so none overwrites another's."""
    import yaml

    from pagelab.paper import appendix

    text = appendix.device_settings()
    got = dict(re.findall(r"\\csname pagelabdev@([\w.-]+@\w+)\\endcsname\{([^}]*)\}", text))
    for path in sorted((root() / "config" / "devices").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        for key, value in doc.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                assert float(got.pop(f"{path.stem}@{key}")) == pytest.approx(value, rel=5e-3), (path.stem, key)
    assert not got
    assert text.count("pagelabdev@hdd5400-2008@avg_seek_ms") == 1


def test_a_claims_source_is_a_refs_bib_key_and_the_table_cites_it(tmp_path):
    p = tmp_path / "claims.csv"
    write_claims(p, [row("X1", "1", "seekmodel.hdd5400-2008.rr4k_ms", lo="0.8", hi="1.25")])
    assert list(load_claims(p)["source"]) == ["seed000"]
    bad = {**row("X1", "1", "seekmodel.hdd5400-2008.rr4k_ms", lo="0.8", hi="1.25"),
           "source": "000_ee8eb7732348eef8.txt"}
    write_claims(p, [bad])
    with pytest.raises(ValueError, match=r"X1: source '000_ee8eb7732348eef8.txt' is not a key of .*refs.bib"):
        load_claims(p)
    out = tmp_path / "table.tex"
    registry.write_claims_table(out)
    cited = set(re.findall(r"\\cite\{([^}]+)\}", out.read_text()))
    assert cited == set(load_claims()["source"]) and cited <= registry.bib_keys()


def test_each_source_article_has_a_title_and_says_what_it_does_not_give():
    """A seed's entry names its title, and its author and year where the article gives them;
    where it does not, the entry's note says so instead of leaving the reader to guess."""
    bib = (root() / "paper" / "refs.bib").read_text()
    for key in sorted(set(load_claims()["source"])):
        entry = bib[bib.index("{" + key + ","):].split("\n}", 1)[0]
        assert "title = " in entry, key
        assert ("author = " in entry and "year = " in entry) or "names no author" in entry, key
        assert "url = " in entry or "\\url{" in entry or "no address" in entry, key


# --------------------------------------------------------------------------- censoring, sizes, sensitivity
def test_a_measurement_censored_in_half_or_more_of_its_trials_is_not_measurable(tmp_path):
    """Censored in 3 of 5 trials (met when the clock started): not measurable here, with the
    reason, never reproduced or not reproduced; 2 of 5 is judged as usual; exactly half (5 of
    10) is not measurable, its median a censored value; an order with one censored step is not
    measurable and its note gives the other step's verdict."""
    cens = {**m(0.0, 0.0, 0.0), "censored": 3, "censoring": "tier between: met at the hogs' end in 3 of 5 trials"}
    few = {**m(0.7, 0.65, 0.75), "censored": 2}
    t = setup(tmp_path, [row("A", "0.7", "x.a", "0.56", "0.875", kind="ratio"),
                         row("B", "0.7", "x.b", "0.56", "0.875", kind="ratio"),
                         row("O", "a < b", "x.a; x.c", "0.5; 0.5", "0.9; 0.9", judge="order", kind="order")],
              {"x": {"x.a": cens, "x.b": few, "x.c": m(2.0, 1.9, 2.1)}})
    assert t.loc["A", "verdict"] == judge.NOT_MEASURABLE
    assert t.loc["A", "note"] == "a: 3 of 5 censored (tier between: met at the hogs' end in 3 of 5 trials)"
    assert t.loc["A", "ours"] == "censored 3/5"
    # nothing of the placeholder value is shown: no value, interval, coverage or ratio
    assert t.loc["A", ["value", "ci_low", "ci_high", "ratio"]].isna().all() and t.loc["A", "interval"] == ""
    assert t.loc["B", "interval"] == "93.75 %" and t.loc["O", "interval"] == "-; 93.75 %"
    assert t.loc["B", "verdict"] == judge.REPRODUCED
    assert t.loc["O", "verdict"] == judge.NOT_MEASURABLE
    assert "measured: step 2 (c): not reproduced, ours lies above the window" in t.loc["O", "note"]
    half = {**m(0.0, 0.0, 0.4, n=10), "censored": 5}
    (tmp_path / "half").mkdir()
    t = setup(tmp_path / "half", [row("H", "0.7", "x.h", "0.56", "0.875", kind="ratio")], {"x": {"x.h": half}})
    assert t.loc["H", "verdict"] == judge.NOT_MEASURABLE and t.loc["H", "ours"] == "censored 5/10"


def test_a_value_the_sizes_make_is_by_construction(tmp_path):
    built = {**m(0.0, 0.0, 0.0), "construction": "the working set and both hogs fit in the RAM"}
    t = setup(tmp_path, [row("P", "1", "x.p", "-inf", "0.95", kind="bound")], {"x": {"x.p": built}})
    assert t.loc["P", "verdict"] == judge.BY_CONSTRUCTION and "fit in the RAM" in t.loc["P", "note"]


def test_a_single_value_has_no_interval_to_name(tmp_path):
    """The seed's formula evaluated once (n = 1) is shown as its value, without a coverage:
    "4.94", never "4.94 (?)"."""
    t = setup(tmp_path, [row("F", "4.7", "x.f", "4.7", "4.7", construction="arithmetic")],
              {"x": {"x.f": m(4.94, n=1)}})
    assert t.loc["F", "ours"] == "4.94" and t.loc["F", "interval"] == ""
    assert t.loc["F", "verdict"] == judge.BY_CONSTRUCTION


def test_sensitivity_rows_are_judged_beside_their_claim_and_not_counted(tmp_path):
    rows = [row("R", "0.7", "x.a", "0.56", "0.875", kind="ratio"),
            row("RS", "0.7", "x.b", "0.56", "0.875", kind="ratio")]
    p = tmp_path / "claims.csv"
    write_claims(p, rows)
    text = p.read_text().splitlines()
    text[0] += ",sensitivity"
    text[2] += ",R"
    p.write_text("\n".join(text) + "\n")
    c = load_claims(p)
    table = judge.judge_all(c, {"x.a": m(0.7, 0.65, 0.75), "x.b": m(2.0, 1.9, 2.1)}, {}, "quick")
    assert list(table["verdict"]) == [judge.REPRODUCED, judge.NOT_REPRODUCED]
    assert judge.counts(table)[judge.NOT_REPRODUCED] == 0 and judge.macros(table)["VerdictsTotal"] == "1"
    assert judge.summary_sentence(table).startswith("Of the 1 published claims, one is reproduced here")
    p.write_text("\n".join(text[:2] + [text[2][:-1] + "Q"]) + "\n")
    with pytest.raises(ValueError, match="RS: sensitivity 'Q' is not the id of a claim"):
        load_claims(p)


def test_the_readyboost_twins_and_the_explanation_are_registered():
    """RB1 and its ratios name the primary twin of 'without ReadyBoost' with the seed's own words;
    the other twin is a sensitivity row beside each; RBX is the explanation, judged everywhere."""
    from pagelab.experiments import readyboost as rb

    c = load_claims().set_index("id")
    none, sens = rb.SEED_ARMS["none"], rb.SENSITIVITY_NONE
    assert c.loc["RB1", "measurement"] == f"readyboost.{none}.recovery_s"
    assert "After several times (20~30) of repetition" in c.loc["RB1", "twin"]
    assert c.loc["RB1S", "measurement"] == f"readyboost.{sens}.recovery_s" and c.loc["RB1S", "sensitivity"] == "RB1"
    for cid, arm in (("RBR2", "tier_after"), ("RBR3", "tier_between")):
        assert c.loc[cid, "measurement"] == f"readyboost.ratio.{arm}_vs_{none}"
        assert c.loc[f"{cid}S", "measurement"] == f"readyboost.ratio.{arm}_vs_{sens}"
        assert c.loc[f"{cid}S", "sensitivity"] == cid
    assert c.loc["RBO", "measurement"].endswith(f"tier_after_vs_{none}")
    assert c.loc["RBOS", "measurement"].endswith(f"tier_after_vs_{sens}")
    assert c.loc["RBX", "measurement"] == f"readyboost.ratio.interaction; readyboost.ratio.tier_between_vs_{none}"
    assert (c.loc["RBX", "window_low"], c.loc["RBX", "window_high"]) == ("0; 0", "1; 1")
    assert c.loc["RBX", "profiles"] == "all"


def test_the_seeds_advice_is_judged_on_the_side_its_words_state(tmp_path):
    """PO1-PO3 as registered, on made-up ratios: 'with an SSD, ReadyBoost does not help' holds
    where the tier costs time as where it changes nothing, and fails only where it helps; 'more
    RAM first' and 'a fast stick helps more' hold only where the ratio lies below the noise band."""
    claims = load_claims()
    po = claims[claims["id"].isin(["PO1", "PO2", "PO3"])]
    path = tmp_path / "claims.csv"
    po.to_csv(path, index=False)

    def verdicts(ssd, ram, stick):
        res = tmp_path / f"results-{ssd[0]}-{ram[0]}"
        (res / "payoff").mkdir(parents=True)
        ms = {"payoff.advice.ssd": m(*ssd, n=10), "payoff.advice.ram_first": m(*ram, n=10),
              "payoff.advice.fast_stick": m(*stick, n=10)}
        (res / "payoff" / "measurements.json").write_text(json.dumps(ms))
        return judge.verdicts(res, harness.load_claims(path), "full").set_index("id")["verdict"]

    costs = verdicts((4.5, 3.6, 5.2), (0.5, 0.4, 0.6), (0.2, 0.15, 0.23))
    assert list(costs) == [judge.REPRODUCED] * 3
    nothing = verdicts((1.0, 0.97, 1.03), (1.0, 0.97, 1.03), (1.0, 0.97, 1.03))
    assert list(nothing) == [judge.REPRODUCED, judge.NOT_REPRODUCED, judge.NOT_REPRODUCED]
    helps = verdicts((0.6, 0.5, 0.7), (1.5, 1.3, 1.7), (1.5, 1.3, 1.7))
    assert list(helps) == [judge.NOT_REPRODUCED] * 3


def test_the_summary_counts_the_claims_not_measurable_here():
    import pandas as pd

    t = pd.DataFrame({"verdict": [judge.REPRODUCED, judge.NOT_MEASURABLE, judge.NOT_MEASURABLE]})
    s = judge.summary_sentence(t)
    assert "two are not measurable here (the criterion was met when the clock started" in s, s
    assert judge.macros(t)["VerdictsNotMeasurable"] == "2"
    assert "not measurable" not in judge.summary_sentence(pd.DataFrame({"verdict": [judge.REPRODUCED]}))


def test_the_findings_say_in_words_which_claims_held_and_which_did_not():
    """The abstract's and the conclusion's sentence: each claim reproduced, not reproduced or
    inconclusive by its id and its words from claims.csv (asides dropped, a point's published
    figure kept), those not measurable by id, the rest counted; never the summary's wording."""
    import pandas as pd

    t = pd.DataFrame({
        "id": ["A", "B", "C", "D", "E", "F", "G", "AS"],
        "claim": ["observed page-in rate (at most)", "recovery, no cache", "a ratio of two rates",
                  "an order", "a cited input", "a server's rate", "another order", "A's twin"],
        "published": ["2 MB/s", "155 s", "0.3 ratio", "a < b order", "1 ms", "500 MB/s", "b < c order", "2 MB/s"],
        "kind": ["range", "point", "ratio", "order", "point", "point", "order", "range"],
        "source": ["seed000", "seed000", "seed004", "seed000", "seed003", "seed004", "seed000", "seed000"],
        "sensitivity": ["", "", "", "", "", "", "", "A"],
        "verdict": [judge.REPRODUCED, judge.NOT_REPRODUCED, judge.INCONCLUSIVE, judge.NOT_MEASURABLE,
                    judge.BY_CONSTRUCTION, judge.NOT_APPLICABLE, judge.NOT_MEASURABLE, judge.NOT_REPRODUCED]})
    s = judge.findings_sentence(t)
    assert s == ("One claim held (reproduced here): observed page-in rate (A: at most 2 MB/s). One did not hold "
                 "(not reproduced): recovery, no cache (B: 155 s). One remains open (inconclusive; more trials "
                 "could settle it): a ratio of two rates (C). Two were not measurable here, censored in half "
                 "or more of the trials: D and G. Of the rest, one holds by construction and one could not be "
                 "judged in this run. Judged beside them, the sensitivity rows (each a claim judged on a "
                 "second twin): AS did not hold."), s
    # a sensitivity row is not a claim: it is not counted, and is named only where it was judged
    assert s != judge.summary_sentence(t) and "AS" not in s.split(" Judged beside them")[0]
    more = pd.concat([t, t.iloc[[7, 7, 7]].assign(id=["BS", "CS", "DS"], sensitivity=["B", "C", "D"],
                                                           verdict=[judge.NOT_MEASURABLE, judge.NOT_MEASURABLE,
                                                                    judge.REPRODUCED])])
    assert judge.sensitivity_sentence(more) == ("Judged beside them, the sensitivity rows (each a claim judged on "
                                                "a second twin): DS held; AS did not hold; BS and CS were not "
                                                "measurable here.")
    assert judge.sensitivity_sentence(more.assign(verdict=judge.BY_CONSTRUCTION)) == ""
    assert judge.findings_sentence(t.iloc[:7]).endswith("could not be judged in this run.")
    # items with commas of their own are kept apart by semicolons, the last one too
    two = judge.findings_sentence(t.assign(verdict=[judge.NOT_REPRODUCED] * 3 + list(t["verdict"][3:])))
    assert ("did not hold (not reproduced): observed page-in rate (A: at most 2 MB/s); recovery, no cache "
            "(B: 155 s); and a ratio of two rates (C).") in two, two
    assert prose.listed(["a", "b", "c"]) == "a, b and c" and prose.listed(["a"]) == "a"
    mac = judge.macros(t)
    assert mac["VerdictsSources"] == "three" and mac["VerdictFindings"] == s
    none = judge.findings_sentence(t[t["verdict"] != judge.REPRODUCED])
    assert none.startswith("No claim held (none is reproduced here). One did not hold"), none
    # the claims the paper judges come from the sources claims.csv names, each a refs.bib entry
    c = load_claims()
    named = set(c.loc[c["sensitivity"].fillna("").str.strip() == "", "source"])
    assert judge.sources(c) == len(named) > 0
    bib = (root() / "paper" / "refs.bib").read_text()
    assert all(f"{{{key}," in bib for key in named), named
