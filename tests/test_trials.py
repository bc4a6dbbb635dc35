"""Trial ordering, records and resumption, with a stand-in trial function (the real one is
exercised by the pipeline test)."""

from collections import Counter

import pytest

from pagelab.core.records import read_record
from pagelab.run import trials

CONFS = [{"bs": b} for b in (4096, 65536, 1 << 20)]


def name(c):
    return f"bs{c['bs']}"


def test_plan_is_a_seeded_shuffle_of_every_trial_with_warmups_first():
    p = trials.plan(CONFS, 4, seed=11, name=name, warmups=[CONFS[-1]])
    assert p[0].warmup and p[0].trial_id == "warmup-bs1048576"
    counted = [t for t in p if not t.warmup]
    assert Counter(t.params["bs"] for t in counted) == {4096: 4, 65536: 4, 1 << 20: 4}
    assert [t.order for t in p] == list(range(len(p)))
    again = trials.plan(CONFS, 4, seed=11, name=name, warmups=[CONFS[-1]])
    assert [(t.trial_id, t.seed) for t in p] == [(t.trial_id, t.seed) for t in again]
    other = trials.plan(CONFS, 4, seed=12, name=name, warmups=[CONFS[-1]])
    assert [t.trial_id for t in p] != [t.trial_id for t in other]
    # Interleaved, not blocked by configuration.
    ids = [t.params["bs"] for t in counted]
    assert ids != sorted(ids)
    assert len({t.seed for t in p}) == len(p)


def _run(tmp_path, calls, fail=(), chash="h1"):
    p = trials.plan(CONFS, 2, seed=1, name=name)

    def run_one(t):
        calls.append(t.trial_id)
        if t.trial_id in fail:
            raise trials.TrialFailed("planted failure")
        return {"value": t.params["bs"]}

    return trials.run("exp", p, run_one, tmp_path, {"config_hash": chash}, log=lambda s: None)


def test_records_are_written_and_a_rerun_resumes(tmp_path):
    calls = []
    recs = _run(tmp_path, calls)
    assert len(calls) == 6 and all(r["status"] == "ok" for r in recs)
    rec = read_record(tmp_path / "trials" / f"{calls[0]}.json")
    assert rec["result"]["value"] == rec["params"]["bs"] and rec["start"] <= rec["end"]
    calls2 = []
    _run(tmp_path, calls2)
    assert calls2 == []


def test_failed_trial_is_recorded_not_counted_and_rerun(tmp_path):
    calls = []
    first = trials.plan(CONFS, 2, seed=1, name=name)[0].trial_id
    recs = _run(tmp_path, calls, fail={first})
    failed = [r for r in recs if r["status"] == "failed"]
    assert [r["trial_id"] for r in failed] == [first] and "planted" in failed[0]["error"]
    calls2 = []
    _run(tmp_path, calls2)
    assert calls2 == [first]


def test_changed_config_reruns_everything(tmp_path):
    _run(tmp_path, [])
    calls = []
    _run(tmp_path, calls, chash="h2")
    assert len(calls) == 6


def test_corrupt_record_is_rerun(tmp_path):
    calls = []
    _run(tmp_path, calls)
    (tmp_path / "trials" / f"{calls[2]}.json").write_text('{"trial_id": ')
    calls2 = []
    _run(tmp_path, calls2)
    assert calls2 == [calls[2]]


def test_an_unexpected_error_is_recorded_then_raised(tmp_path):
    p = trials.plan(CONFS, 1, seed=1, name=name)

    def boom(t):
        raise OSError("disk gone")

    with pytest.raises(OSError):
        trials.run("exp", p, boom, tmp_path, {"config_hash": "h"}, log=lambda s: None)
    rec = read_record(tmp_path / "trials" / f"{p[0].trial_id}.json")
    assert rec["status"] == "failed" and "disk gone" in rec["error"]


def _adaptive(tmp_path, noise, n_max=12):
    import random as _r

    gen = _r.Random(5)

    def run_one(t):
        return {"value": 100.0 * (1 + noise * gen.gauss(0, 1))}

    return trials.run_adaptive("exp", CONFS, name, run_one, lambda r: r["value"], tmp_path,
                               {"config_hash": "h"}, seed=3, n_min=3, n_max=n_max, ci_pct=2.0,
                               log=lambda s: None)


def test_adaptive_stops_early_on_a_quiet_metric(tmp_path):
    recs, stops = _adaptive(tmp_path, noise=0.001)
    assert all(s.reason == "ci" and s.n == 3 for s in stops)
    assert len(recs) == 9


def test_adaptive_runs_to_n_max_on_a_noisy_metric(tmp_path):
    recs, stops = _adaptive(tmp_path, noise=0.3)
    assert all(s.reason == "n_max" and s.n == 12 for s in stops)
    assert len(recs) == 36
    assert all(s.half_width > 0.02 * s.median for s in stops)
    # Interleaved: the extra rounds mix configurations rather than finishing one first.
    later = [r["params"]["bs"] for r in sorted(recs, key=lambda r: r["order"])[9:15]]
    assert len(set(later)) == 3


def test_adaptive_resume_makes_the_same_decisions(tmp_path):
    first, _ = _adaptive(tmp_path, noise=0.3, n_max=5)
    again, stops = _adaptive(tmp_path, noise=0.3, n_max=5)
    assert [r["trial_id"] for r in first] == [r["trial_id"] for r in again]
    assert [r["result"] for r in first] == [r["result"] for r in again]


def test_adaptive_rejects_bad_bounds(tmp_path):
    with pytest.raises(ValueError, match="n_min"):
        trials.run_adaptive("e", CONFS, name, lambda t: {}, lambda r: 0.0, tmp_path,
                            {"config_hash": "h"}, seed=1, n_min=5, n_max=3, ci_pct=5)


def _valid_adaptive(tmp_path, invalid_ids=frozenset(), always_invalid=False):
    calls = []

    def run_one(t):
        calls.append(t.trial_id)
        return {"value": 100.0, "evicted": 0.0 if (always_invalid or t.trial_id in invalid_ids) else 1.0}

    def validity(params, result):
        return None if result["evicted"] >= 0.9 else f"evicted {result['evicted']:.0%}, design needs >= 90 %"

    recs, stops = trials.run_adaptive("exp", CONFS, name, run_one, lambda r: r["value"], tmp_path,
                                      {"config_hash": "h"}, seed=3, n_min=3, n_max=5, ci_pct=2.0,
                                      log=lambda s: None, validity=validity)
    return calls, recs, stops


def test_an_invalid_trial_is_recorded_with_its_reason_not_counted_and_replaced(tmp_path):
    bad = "bs4096-r01"
    calls, recs, stops = _valid_adaptive(tmp_path, {bad})
    rec = read_record(tmp_path / "trials" / f"{bad}.json")
    assert rec["status"] == "ok" and rec["valid"] is False and "design needs" in rec["invalid_reason"]
    by = {s.config: s for s in stops}
    assert by["bs4096"].n == 3 and by["bs4096"].invalid == 1  # three valid trials, one more run
    assert sum(1 for c in calls if c.startswith("bs4096")) == 4
    assert [trials.is_counted(r) for r in recs].count(False) == 1
    # A resumed run reads the invalid record back and decides the same.
    calls2, recs2, stops2 = _valid_adaptive(tmp_path, {bad})
    assert calls2 == [] and [s.n for s in stops2] == [s.n for s in stops]


def test_a_manipulation_that_never_happens_stops_the_run_with_the_reason(tmp_path):
    with pytest.raises(trials.TrialFailed, match="invalid.*design needs >= 90 %"):
        _valid_adaptive(tmp_path, always_invalid=True)


def test_adaptive_never_stops_before_n_min_valid_trials(tmp_path):
    bad = {"bs65536-r00", "bs65536-r02"}
    _, recs, stops = _valid_adaptive(tmp_path, bad)
    counted = [r for r in recs if trials.is_counted(r) and r["params"]["bs"] == 65536]
    assert len(counted) >= 3 and {s.config: s.n for s in stops}["bs65536"] >= 3
