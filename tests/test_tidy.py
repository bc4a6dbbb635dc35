import pandas as pd

from pagelab.core.records import write_json_atomic
from pagelab.data import tidy


def rec(i, arm, status="ok", warmup=False, pswpin=5):
    return {"trial_id": f"{arm}-r{i}", "experiment": "e", "order": i, "warmup": warmup, "status": status,
            "params": {"arm": arm}, "start": "a", "end": "b", "provenance": {"config_hash": "h"},
            "result": {"retouch_s": 0.5, "command": ["hog", "victim"], "samples": [{"t": 0}],
                       "counters": {"retouch": {"vmstat": {"pswpin": pswpin}}}}}


def test_flatten_keeps_scalars_and_short_scalar_lists():
    flat = tidy.flatten(rec(0, "a"))
    assert flat["params.arm"] == "a"
    assert flat["result.counters.retouch.vmstat.pswpin"] == 5
    assert flat["result.command"] == "hog victim"
    assert "result.samples" not in flat


def test_tidy_reads_records_and_check_passes(tmp_path):
    for i, arm in enumerate(["a", "b", "a", "b"]):
        write_json_atomic(tmp_path / "trials" / f"{i}.json", rec(i, arm))
    frame = tidy.tidy(tmp_path)
    assert len(frame) == 4 and list(frame["order"]) == [0, 1, 2, 3]
    assert tidy.check(frame, [{"arm": "a"}, {"arm": "b"}], ["result.retouch_s"]) == []


def test_check_names_each_problem():
    frame = pd.DataFrame([tidy.flatten(r) for r in [rec(0, "a", status="failed"), rec(1, "a", pswpin=0),
                                                     rec(2, "c", warmup=True)]])
    problems = tidy.check(frame, [{"arm": "a"}, {"arm": "b"}], ["result.retouch_s", "result.nonesuch"])
    text = "\n".join(problems)
    assert "1 counted trial(s) not ok: a-r0" in text
    assert "configurations without a trial: arm=b" in text
    assert "column result.nonesuch missing" in text
    zero = pd.DataFrame([tidy.flatten(rec(0, "a", pswpin=0))])
    assert tidy.check(zero, [{"arm": "a"}], []) == ["every counter is zero"]
    assert tidy.check(pd.DataFrame(), [], []) == ["no trials"]


def test_check_counts_only_valid_trials_against_n_min(tmp_path):
    for i, arm in enumerate(["a", "b", "a", "b", "a"]):
        r = rec(i, arm)
        r["valid"] = not (arm == "b" and i == 3)
        write_json_atomic(tmp_path / "trials" / f"{i}.json", r)
    frame = tidy.tidy(tmp_path)
    assert tidy.check(frame, [{"arm": "a"}, {"arm": "b"}], [], n_min=2) == [
        "configurations with fewer than 2 valid trials: arm=b (1 valid)"]
    assert tidy.check(frame, [{"arm": "a"}, {"arm": "b"}], [], n_min=1) == []


def test_a_list_is_kept_per_record_only_where_it_is_short_and_scalar():
    short, long_ = rec(0, "a"), rec(1, "a")
    long_["result"]["command"] = [str(i) for i in range(100)]
    frame = tidy.frame([short, long_])
    assert list(frame["result.command"].isna()) == [False, True]
    assert frame.loc[0, "result.command"] == "hog victim"
    assert "result.samples" not in frame.columns  # lists of dicts in every record: no column
    assert frame.loc[0, "result.counters.retouch.vmstat.pswpin"] == 5
