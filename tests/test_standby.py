"""standby: what makes a trial valid (the trim, the swap cache's premise, the flood, the hard
faults), summaries with order-statistic CIs, the keys SB1-SB3 and MC2 read, paired ratios
between interleaved arms, and comparative sentences that change when the data says the opposite."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from pagelab.claims import registry
from pagelab.core.prose import ratio_sentence
from pagelab.core.stats import Estimate
from pagelab.experiments import standby as sb

PAGE = os.sysconf("SC_PAGE_SIZE")
WS = 128 << 20
PAGES = WS // PAGE


def result(arm: str, **kw: object) -> dict:
    flooded = arm in sb.FLOODED
    r = {"arm": arm, "working_set": WS, "pswpout_trim": 0 if arm == "zswap" else PAGES,
         "zswpout_trim": PAGES if arm == "zswap" else 0, "swapcached_before_retouch": float(WS),
         "flood_target_bytes": 3 * WS if flooded else 0, "flood_bytes": 3 * WS if flooded else 0,
         "pswpin_retouch": PAGES if arm in ("flooded", "zram") else 0,
         "zswpin_retouch": PAGES if arm == "zswap" else 0}
    r.update(kw)
    return r


@pytest.mark.parametrize("arm", sb.ARMS)
def test_a_trial_whose_manipulation_happened_is_valid(arm: str) -> None:
    assert sb.validity({"arm": arm}, result(arm)) is None


@pytest.mark.parametrize(("arm", "change", "words"), [
    ("trim_only", {"pswpout_trim": PAGES // 2}, "the trim paged out 50% of the working set (pswpout)"),
    ("zswap", {"zswpout_trim": PAGES // 10}, "(zswpout)"),
    ("trim_only", {"swapcached_before_retouch": WS * 0.3}, "30% of the working set was in the swap cache"),
    ("flooded", {"flood_bytes": WS}, "the flood read"),
    ("flooded", {"pswpin_retouch": int(0.24 * PAGES)}, "24% of the pages from swap (pswpin)"),
    ("zram", {"pswpin_retouch": 0}, "0% of the pages from swap"),
    ("zswap", {"zswpin_retouch": PAGES // 2}, "50% of the pages from zswap (zswpin)"),
])
def test_a_trial_whose_manipulation_did_not_happen_says_why(arm: str, change: dict, words: str) -> None:
    reason = sb.validity({"arm": arm}, result(arm, **change))
    assert reason and words in reason and ("90%" in reason or "all of them" in reason), reason


def test_sb1s_measurement_is_not_a_validity_condition() -> None:
    """Swap-ins during trim_only's re-touch are what SB1 judges: a trial with many is counted,
    so the data could contradict the seed."""
    assert sb.validity({"arm": "trim_only"}, result("trim_only", pswpin_retouch=PAGES)) is None


def test_the_default_swappiness_arm_is_shown_whatever_it_hard_faults() -> None:
    assert sb.validity({"arm": "flooded_default"}, result("flooded_default", pswpin_retouch=int(0.24 * PAGES))) is None
    assert sb.validity({"arm": "flooded_default"}, result("flooded_default", flood_bytes=0)) is not None


def trials_frame(times: dict[str, list[float]]) -> pd.DataFrame:
    rows, order = [], 0
    for i in range(len(next(iter(times.values())))):
        for arm, vals in times.items():
            rows.append({"arm": arm, "order": order, "retouch_s": vals[i], "retouch_s_per_ref": vals[i] * 16,
                         "pswpin_retouch": PAGES if arm in ("flooded", "zram") else 0,
                         "zswpin_retouch": PAGES if arm == "zswap" else 0, "retouch_majflt": 0,
                         "trim_pageout_mbps": 1000.0 + i, "trim_written_mbps": 900.0 + i, "working_set": WS})
            order += 1
    return pd.DataFrame(rows)


TIMES = {"trim_only": [0.04, 0.05, 0.04, 0.045, 0.042], "flooded": [0.45, 0.5, 0.48, 0.47, 0.46],
         "zswap": [0.15, 0.16, 0.14, 0.17, 0.15]}


def test_measurements_carry_the_claims_keys_with_order_statistic_cis() -> None:
    f = trials_frame(TIMES)
    meas = sb.measurements(sb.summarise(f), sb.ratios(f))
    claims = registry.load_claims().set_index("id")
    for cid in ("SB1", "SB2", "SB3", "MC2"):
        key = claims.loc[cid, "measurement"]
        assert key in meas, (cid, key)
        assert set(meas[key]) == {"value", "ci_low", "ci_high", "unit", "n", "method"}
        assert meas[key]["n"] == 5
    flooded = meas["standby.own.flooded.retouch_s_per_2gb"]
    assert (flooded["value"], flooded["ci_low"], flooded["ci_high"]) == pytest.approx((0.47 * 16, 0.45 * 16, 0.5 * 16))
    assert meas["standby.own.trim_only.pageout_mbps"]["value"] == pytest.approx(1002)
    ratio = meas["standby.ratio.zswap_vs_flooded"]
    per_round = sorted(z / f for z, f in zip(TIMES["zswap"], TIMES["flooded"], strict=True))
    assert ratio["n"] == 5 and ratio["value"] == pytest.approx(per_round[2])


def test_a_sentence_changes_when_the_data_says_the_opposite() -> None:
    cfg = {"working_set": "128M", "flood_factor": 3, "flood_swappiness": 200}

    def sentences(times: dict[str, list[float]]) -> dict[str, str]:
        f = trials_frame(times)
        return sb.macros(sb.summarise(f), cfg, "quick", None, sb.ratios(f))

    as_measured = sentences(TIMES)["StandbyZswapVsFloodedSentence"]
    opposite = {**TIMES, "zswap": TIMES["flooded"], "flooded": TIMES["zswap"]}
    swapped = sentences(opposite)["StandbyZswapVsFloodedSentence"]
    assert as_measured == "With zswap the re-touch was faster than after the flood with swap on disk"
    assert swapped == "With zswap the re-touch was slower than after the flood with swap on disk"
    mixed = sentences({**TIMES, "zswap": [0.44, 0.52, 0.47, 0.49, 0.45]})["StandbyZswapVsFloodedSentence"]
    assert mixed == ("With zswap the re-touch was not shown to be slower or faster than after the flood with swap "
                     "on disk")
    # the numbers are the comparison table's row, not the sentence's
    row = next(r for r in sentences(TIMES)["StandbyComparisons"].splitlines() if r.startswith("zswap / flooded"))
    assert " & 5 \\\\" in row and "(93.75\\,\\%)" in row, row


def test_ratio_sentence_says_its_interval_and_coverage() -> None:
    e = Estimate(0.36, 0.29, 0.43, 5, "paired ratio, order statistics", 0.9375)
    text = ratio_sentence(e, "it took", "as long as that", "slower", "faster", "it was")
    assert text == ("it took 0.360 times as long as that (median of 5 paired rounds, 93.75\\,\\% CI "
                    "0.290--0.430): it was faster")
