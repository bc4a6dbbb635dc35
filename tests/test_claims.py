"""The claims checker on hand-made cases of each kind of judgement."""

import json

import pytest

from pagelab import claims
from pagelab.published import load_claims

HEADER = "id,claim,value,unit,source,experiment,measurement,judge,tolerance\n"


def setup(tmp_path, rows, measurements, skipped=None):
    p = tmp_path / "claims.csv"
    p.write_text(HEADER + "".join(r + "\n" for r in rows))
    res = tmp_path / "results"
    for exp, ms in measurements.items():
        (res / exp).mkdir(parents=True, exist_ok=True)
        (res / exp / "measurements.json").write_text(json.dumps(ms))
    for exp, why in (skipped or {}).items():
        (res / exp).mkdir(parents=True, exist_ok=True)
        (res / exp / "skipped.txt").write_text(why + "\n")
    res.mkdir(exist_ok=True)
    return claims.verdicts(res, p).set_index("id")


def m(v, lo=None, hi=None):
    return {"value": v, "ci_low": v if lo is None else lo, "ci_high": v if hi is None else hi}


def test_value_judgement(tmp_path):
    t = setup(tmp_path, [
        "A,a,3.95,MB/s,000,e,e.in_ci,value,0",
        "B,b,3.95,MB/s,000,e,e.near,value,0.1",
        "C,c,3.95,MB/s,000,e,e.far,value,0.1",
    ], {"e": {"e.in_ci": m(4.0, 3.9, 4.1), "e.near": m(4.3, 4.2, 4.35), "e.far": m(8.0, 7.5, 8.5)}})
    assert t.loc["A", "verdict"] == claims.REPRODUCED
    assert t.loc["B", "verdict"] == claims.REPRODUCED  # 4.2 * 0.9 = 3.78 <= 3.95
    assert t.loc["C", "verdict"] == claims.NOT_REPRODUCED
    assert "4.00 [3.90, 4.10]" in t.loc["A", "ours"]


def test_range_and_upper(tmp_path):
    t = setup(tmp_path, [
        "R1,r,10-20,ms,000,e,e.r1,range,0",
        "R2,r,10-20,ms,000,e,e.r2,range,0",
        "U1,u,2,MB/s,000,e,e.u1,upper,0",
        "U2,u,2,MB/s,000,e,e.u2,upper,0",
        "Z,z,0,reads,000,e,e.zero,upper,0",
        "L1,l,1,ratio,000,e,e.l1,lower,0",
        "L2,l,1,ratio,000,e,e.l2,lower,0",
    ], {"e": {"e.r1": m(17.9, 17, 19), "e.r2": m(25, 24, 26), "e.u1": m(1.5), "e.u2": m(2.5),
              "e.zero": m(0), "e.l1": m(8, 7.5, 8.5), "e.l2": m(1.1, 0.9, 1.3)}})
    assert list(t["verdict"]) == [claims.REPRODUCED, claims.NOT_REPRODUCED, claims.REPRODUCED,
                                  claims.NOT_REPRODUCED, claims.REPRODUCED, claims.REPRODUCED,
                                  claims.NOT_REPRODUCED]


def test_direction_needs_separated_cis(tmp_path):
    t = setup(tmp_path, [
        "D1,d,warm < cold < none,order,000,e,e.w < e.c < e.n,direction,0",
        "D2,d,warm < cold < none,order,000,e,e.w < e.c2 < e.n,direction,0",
    ], {"e": {"e.w": m(35, 30, 40), "e.c": m(119, 110, 125), "e.n": m(155, 140, 170),
              "e.c2": m(38, 33, 45)}})
    assert t.loc["D1", "verdict"] == claims.REPRODUCED
    assert t.loc["D2", "verdict"] == claims.NOT_REPRODUCED  # warm and cold CIs overlap


def test_missing_measurement_is_not_applicable_with_the_reason(tmp_path):
    t = setup(tmp_path, [
        "S,s,10,s,004,standby,standby.x,value,0.5",
        "N,n,1,ms,000,other,other.y,value,0.5",
    ], {}, skipped={"standby": "skipped: needs root to turn on swap"})
    assert t.loc["S", "verdict"] == claims.NOT_APPLICABLE
    assert t.loc["S", "why"] == "skipped: needs root to turn on swap"
    assert "not measured" in t.loc["N", "why"]


def test_bad_inputs_are_named(tmp_path):
    with pytest.raises(ValueError, match="unknown judge"):
        setup(tmp_path, ["X,x,1,s,000,e,e.a,guess,0"], {"e": {"e.a": m(1)}})
    with pytest.raises(ValueError, match="must start with e."):
        (tmp_path / "2").mkdir()
        setup(tmp_path / "2", ["X,x,1,s,000,e,e.a,value,0"], {"e": {"other.a": m(1)}})


def test_every_published_claim_has_a_known_judge():
    c = load_claims()
    assert set(c["judge"]) <= set(claims.JUDGES)
    assert all(c["measurement"].str.split(".").str[0] == c["experiment"])
