"""pagein's validity and sentences on hand-made trials whose answers are known."""

import pandas as pd

from pagelab.experiments import pagein as pg


def test_validity():
    assert pg.validity({}, {"evicted_share": 1.0, "pagein_share": 0.95}) is None
    assert "the hog pushed out 40.0 %" in pg.validity({}, {"evicted_share": 0.4, "pagein_share": 1.0})
    assert "read 10.0 %" in pg.validity({}, {"evicted_share": 1.0, "pagein_share": 0.1})


def summary(pc3_factor):
    rows = []
    for pc, f in ((0, 1.0), (3, pc3_factor)):
        for i in range(5):
            rows.append({"retouch_order": "random", "page_cluster": pc, "pagein_mbps": f * (0.6 + 0.01 * i),
                         "ms_per_fault": 7.0, "pswpin": 1000, "majflt": 1000, "evicted_share": 1.0})
    return pg.summarise(pd.DataFrame(rows))


def test_the_readahead_sentence_follows_the_data():
    assert "faster" in pg.readahead_sentence(summary(1.5))
    assert "slower" in pg.readahead_sentence(summary(0.5))
    overlap = pg.readahead_sentence(summary(1.0))   # overlapping intervals show no effect, nor its absence
    assert "not shown to change" in overlap and "no effect" not in overlap
    meas = pg.measurements(summary(1.5), "hdd5400-2008")
    assert set(meas) == {"pagein.hdd5400-2008.random.page_cluster_0.mbps",
                         "pagein.hdd5400-2008.random.page_cluster_3.mbps"}
    assert meas["pagein.hdd5400-2008.random.page_cluster_0.mbps"]["n"] == 5


def test_a_fault_costs_mostly_rotation_only_where_half_a_revolution_is_half_of_it():
    """At 5400 rpm half a revolution is 5.56 ms: 79 % of a 7 ms fault ("mostly rotation"), 28 % of
    a 20 ms one (said, not "mostly"); a disk without an rpm says nothing."""
    cfg = {"disk_profile": "hdd5400-2008"}
    assert pg.rotation_clause(summary(1.0), cfg) == (
        ", and a fault costs mostly rotation: half a revolution at 5400 rpm (5.56 ms) is 79 \\% of the 7.00 ms a "
        "random-order fault took with no read-ahead")
    slow = summary(1.0).assign(ms_per_fault=20.0)
    assert pg.rotation_clause(slow, cfg).startswith(": half a revolution at 5400 rpm (5.56 ms) is 28 \\% of the "
                                                    "20.0 ms")
    assert pg.rotation_clause(summary(1.0), {"disk_profile": "usbstick-2008"}) == ""
    assert pg.rotation_clause(summary(1.0), None) == ""
