"""readyboost's validity and analysis on hand-made trials whose answers are known: what makes a
trial invalid, paired ratios round by round, and sentences that follow the data."""

import pandas as pd

from pagelab.experiments import readyboost as rb

WS = 8 << 20
PAGES = WS // rb.PAGE


def result(**kw):
    base = {"evicted_share": 1.0, "readback_share": 1.0, "hogs_killed": 0, "working_set": WS,
            "tier_blocks_at_start": float("nan")}
    return {**base, **kw}


def test_validity_names_what_did_not_happen():
    assert rb.validity({"arm": "hdd"}, result()) is None
    assert "killed" in rb.validity({"arm": "hdd"}, result(hogs_killed=1))
    assert "pushed out 50 %" in rb.validity({"arm": "hdd"}, result(evicted_share=0.5))
    assert "still in RAM" in rb.validity({"arm": "hdd"}, result(readback_share=0.2))
    assert rb.validity({"arm": "tier_cold"}, result(tier_loaded_at_start=0.0)) is None
    assert "must start empty" in rb.validity({"arm": "tier_cold"}, result(tier_loaded_at_start=PAGES / 2))
    assert rb.validity({"arm": "tier_warm"}, result(tier_loaded_at_start=PAGES)) is None
    assert rb.validity({"arm": "tier_warm"}, result(tier_loaded_at_start=3.0)) is None   # earned, however little
    assert "did not load" in rb.validity({"arm": "tier_warm"}, result(tier_loaded_at_start=0.0))
    assert "did not load" in rb.validity({"arm": "tier_warm"}, result(tier_loaded_at_start=float("nan")))


def frame(cold_factor):
    rows = []
    for i in range(5):
        hdd = 10.0 + i
        for arm, t in (("hdd", hdd), ("tier_cold", hdd * cold_factor), ("tier_warm", hdd * 0.25)):
            rows.append({"arm": arm, "order": len(rows), "recovery_s": t, "evicted_share": 1.0, "majflt": 100,
                         "pswpin": 100, "device_cache_hit_bytes": 0.0, "device_read_bytes": 1.0})
    return pd.DataFrame(rows)


def test_paired_ratios_and_sentences_follow_the_data():
    f = frame(0.77)
    rat = rb.ratios(f)
    assert abs(rat["tier_cold_vs_hdd"].value - 0.77) < 1e-9 and rat["tier_cold_vs_hdd"].n == 5
    assert abs(rat["tier_warm_vs_hdd"].value - 0.25) < 1e-9
    m = rb.macros(rb.summarise(f), rat, None, "quick", None)
    assert m["ReadyboostWarmColdSentence"].endswith("warm was faster than cold")
    # The same data with the cold arm as fast as the warm one: the sentence says so.
    rat2 = rb.ratios(frame(0.25))
    m2 = rb.macros(rb.summarise(frame(0.25)), rat2, None, "quick", None)
    assert "no difference is shown" in m2["ReadyboostWarmColdSentence"]
    meas = rb.measurements(rb.summarise(f), rat)
    assert meas["readyboost.ratio.tier_cold_vs_hdd"]["n"] == 5
    assert set(meas) >= {"readyboost.hdd.recovery_s", "readyboost.tier_warm.recovery_s"}
