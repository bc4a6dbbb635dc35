"""The verdicts on hand-made measurements whose answer is known: each of the five verdicts,
window edges, a straddling CI, too few trials, profiles; and the claims file's own rules."""

import csv
import io
import json
import re

import pytest

from pagelab import claims, published
from pagelab.paths import root
from pagelab.published import load_claims

FIELDS = ["id", "claim", "value", "unit", "source", "experiment", "measurement", "judge", "window_low",
          "window_high", "window_reason", "twin", "construction", "profiles"]


def row(cid, value, key, lo="", hi="", judge="window", construction="", profiles="all",
        reason="how the seed measured: x0.8-x1.25"):
    return {"id": cid, "claim": "c", "value": value, "unit": "u", "source": "000", "experiment": key.split(".")[0],
            "measurement": key, "judge": judge, "window_low": lo, "window_high": hi, "window_reason": reason,
            "twin": "what we measure", "construction": construction, "profiles": profiles}


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
    return claims.verdicts(res, p, profile).set_index("id")


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
    assert t.loc["IN", "verdict"] == claims.REPRODUCED
    assert t.loc["OUT", "verdict"] == claims.NOT_REPRODUCED and "above" in t.loc["OUT", "note"]
    assert t.loc["STR", "verdict"] == claims.INCONCLUSIVE and "more trial" in t.loc["STR", "note"]
    assert t.loc["BC", "verdict"] == claims.BY_CONSTRUCTION  # inside the window, never "reproduced"
    assert t.loc["NA", "verdict"] == claims.NOT_APPLICABLE and "not measured" in t.loc["NA", "note"]
    assert t.loc["IN", "ratio"] == pytest.approx(1.0) and t.loc["OUT", "ratio"] == pytest.approx(2.0)
    assert t.loc["IN", "ours"] == "4.00 [3.50, 4.50]" and t.loc["IN", "window"] == "[3.20, 5.00]"


def test_window_edges_are_inside_and_a_point_outside_is_never_reproduced(tmp_path):
    t = setup(tmp_path, [
        row("EDGE", "4", "e.edge", 3.2, 5),
        row("JUST", "4", "e.just", 3.2, 5),
        row("PT", "4", "e.point_out", 3.2, 5),
        row("ZERO", "0", "e.zero", 0, 0),
        row("ONE", "0", "e.one", 0, 0),
        row("INF", "1.25", "e.ratio", 1.25, "inf", reason="an inflation of at least 25 % agrees"),
    ], {"e": {"e.edge": m(4, 3.2, 5.0), "e.just": m(4, 3.2, 5.01), "e.point_out": m(5.5, 4.9, 6),
              "e.zero": m(0), "e.one": m(1, 0, 2), "e.ratio": m(9, 7, 12)}})
    assert t.loc["EDGE", "verdict"] == claims.REPRODUCED
    assert t.loc["JUST", "verdict"] == claims.INCONCLUSIVE
    assert t.loc["PT", "verdict"] == claims.INCONCLUSIVE and "point estimate lies outside" in t.loc["PT", "note"]
    assert t.loc["ZERO", "verdict"] == claims.REPRODUCED
    assert t.loc["ONE", "verdict"] == claims.INCONCLUSIVE
    assert t.loc["INF", "verdict"] == claims.REPRODUCED and t.loc["INF", "window"] == ">= 1.25"
    # No claim is "reproduced" with its point estimate outside the window.
    for cid in t.index[t["verdict"] == claims.REPRODUCED]:
        assert t.loc[cid, "ci_low"] <= t.loc[cid, "value"] <= t.loc[cid, "ci_high"]


def test_more_trials_estimate_shrinks_the_interval_as_one_over_sqrt_n():
    # n = 5, half-width 1, the edge 0.5 away: the width must halve, i.e. n x 4 = 20, 15 more.
    assert claims.more_trials(5, 4.5, 3.5, 5.5, 5.0).startswith("about 15 more trials")
    assert "cannot settle" in claims.more_trials(5, 5.0, 4.0, 6.0, 5.0)
    assert "more than 200" in claims.more_trials(5, 4.99, 3.99, 5.99, 5.0)


def test_too_few_trials_is_inconclusive_whatever_the_interval(tmp_path):
    ms = {"e": {"e.a": m(4.0, 3.9, 4.1, n=3), "e.b": m(4.0, 3.9, 4.1, n=5)}}
    t = setup(tmp_path, [row("A", "4", "e.a", 3.2, 5), row("B", "4", "e.b", 3.2, 5)], ms)
    assert t.loc["A", "verdict"] == claims.INCONCLUSIVE and "needs 5" in t.loc["A", "note"]
    assert t.loc["B", "verdict"] == claims.REPRODUCED
    (tmp_path / "full").mkdir()
    t = setup(tmp_path / "full", [row("B", "4", "e.b", 3.2, 5)], ms, profile="full")
    assert t.loc["B", "verdict"] == claims.INCONCLUSIVE and "needs 10" in t.loc["B", "note"]


def test_a_claim_judged_only_at_the_seed_scale(tmp_path):
    ms = {"e": {"e.s": m(150, 140, 160)}}
    t = setup(tmp_path, [row("S", "155", "e.s", 124, 194, profiles="seed")], ms)
    assert t.loc["S", "verdict"] == claims.NOT_APPLICABLE and "PROFILE=seed" in t.loc["S", "note"]
    (tmp_path / "s").mkdir()
    t = setup(tmp_path / "s", [row("S", "155", "e.s", 124, 194, profiles="seed")], ms, profile="seed")
    assert t.loc["S", "verdict"] == claims.REPRODUCED


def test_order(tmp_path):
    t = setup(tmp_path, [
        row("D1", "warm < cold < none", "e.w < e.c < e.n", judge="order"),
        row("D2", "warm < cold < none", "e.w < e.c2 < e.n", judge="order"),
        row("D3", "warm < cold < none", "e.n < e.w", judge="order"),
    ], {"e": {"e.w": m(35, 30, 40), "e.c": m(119, 110, 125), "e.n": m(155, 140, 170), "e.c2": m(38, 33, 45)}})
    assert t.loc["D1", "verdict"] == claims.REPRODUCED
    assert t.loc["D2", "verdict"] == claims.INCONCLUSIVE  # warm and cold CIs overlap
    assert t.loc["D3", "verdict"] == claims.NOT_REPRODUCED


def test_missing_experiment_says_why(tmp_path):
    t = setup(tmp_path, [row("S", "10", "standby.x", 8, 12)], {},
              skipped={"standby": "skipped: needs root to turn on swap"})
    assert t.loc["S", "verdict"] == claims.NOT_APPLICABLE
    assert t.loc["S", "note"] == "skipped: needs root to turn on swap"


def test_bad_claims_files_are_named(tmp_path):
    p = tmp_path / "c.csv"
    write_claims(p, [row("X", "1", "e.a", 1, 1, judge="guess")])
    with pytest.raises(ValueError, match="judge 'guess'"):
        load_claims(p)
    write_claims(p, [row("X", "4", "e.a", 1, 10)])
    with pytest.raises(ValueError, match="wider than x0.8-x1.25 of 4.0: say why"):
        load_claims(p)
    write_claims(p, [row("X", "4", "e.a", 5, 3)])
    with pytest.raises(ValueError, match="window_low 5.0 > window_high 3.0"):
        load_claims(p)
    write_claims(p, [row("X", "4", "e.a", "", "")])
    with pytest.raises(ValueError, match="must be numbers"):
        load_claims(p)
    write_claims(p, [row("X", "4", "e.a", 3.2, 5, profiles="nightly")])
    with pytest.raises(ValueError, match="profiles 'nightly'"):
        load_claims(p)
    r = row("X", "4", "e.a", 3.2, 5)
    r["twin"] = ""
    write_claims(p, [r])
    with pytest.raises(ValueError, match="empty field: X"):
        load_claims(p)
    with pytest.raises(ValueError, match="must start with e."):
        setup(tmp_path, [row("X", "1", "e.a", 0.8, 1.25)], {"e": {"other.a": m(1)}})


def test_every_published_claim_has_a_twin_a_window_and_a_reason():
    c = load_claims()
    assert set(c["judge"]) <= set(published.JUDGES)
    assert all(c["measurement"].str.split(".").str[0] == c["experiment"])
    for r in c.to_dict("records"):
        assert len(r["twin"]) > 30 and r["window_reason"], r["id"]
        if r["judge"] == "window":
            lo, hi = published.window(r)
            assert lo <= hi, r["id"]


def test_a_claim_a_device_model_was_built_from_is_judged_by_construction_only():
    """A device profile that cites a claim id as the source of a value makes that claim's
    value an input: it may only be 'by construction'."""
    c = load_claims().set_index("id")
    cited = set()
    for path in (root() / "config" / "devices").glob("*.yaml"):
        cited |= set(re.findall(r"\b([A-Z]{2,3}\d)\b", path.read_text())) & set(c.index)
    assert cited, "the device profiles cite the claims they were built from"
    for cid in cited:
        assert c.loc[cid, "construction"].strip(), f"{cid} is an input of a device model: by construction"


def test_summary_sentence_and_counts_come_from_the_table():
    import pandas as pd

    t = pd.DataFrame({"verdict": [claims.REPRODUCED, claims.NOT_REPRODUCED, claims.NOT_REPRODUCED,
                                  claims.INCONCLUSIVE, claims.BY_CONSTRUCTION]})
    s = claims.summary_sentence(t)
    assert s.startswith("Of the 5 published claims, one is reproduced here, two are not reproduced")
    assert "one remains inconclusive" in s and "no could" not in s
    mac = claims.macros(t)
    assert mac["VerdictsNotReproduced"] == "2" and mac["VerdictsTotal"] == "5"


def test_a_claim_without_a_faithful_twin_is_shown_not_judged(tmp_path):
    t = setup(tmp_path, [row("N", "10", "e.x", 7, 14, judge="none", reason="the seed's disk is not named")],
              {"e": {"e.x": m(8.0, 7.5, 8.5)}})
    assert t.loc["N", "verdict"] == claims.NOT_APPLICABLE
    assert t.loc["N", "note"] == "no faithful twin here: the seed's disk is not named"
    assert t.loc["N", "ours"] == "8.00 [7.50, 8.50]"


def test_numbers_2x_apart_are_never_reproduced_whatever_the_window(tmp_path):
    """A two-sided window wider than x0.5-x2 of the published value (the seed's own plausible
    range) still gives "not reproduced" when ours is more than 2x away; at 2x it may agree; a
    one-sided window ("at least") is exempt."""
    t = setup(tmp_path, [
        row("WIDE", "2", "e.far", 0.4, 2, reason="the seed's range"),
        row("EDGE2", "2", "e.half", 0.4, 2, reason="the seed's range"),
        row("ATLEAST", "1.25", "e.big", 1.25, "inf", reason="an inflation of at least 25 % agrees"),
    ], {"e": {"e.far": m(0.7, 0.68, 0.74), "e.half": m(1.0, 0.9, 1.1), "e.big": m(9, 7, 12)}})
    assert t.loc["WIDE", "verdict"] == claims.NOT_REPRODUCED and "2x apart" in t.loc["WIDE", "note"]
    assert t.loc["EDGE2", "verdict"] == claims.REPRODUCED
    assert t.loc["ATLEAST", "verdict"] == claims.REPRODUCED
