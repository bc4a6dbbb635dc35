import json

import pytest

from pagelab.core.records import RecordError, read_record, read_records, write_json_atomic

GOOD = {"trial_id": "t", "experiment": "e", "status": "ok", "provenance": {}, "start": "s",
        "end": "e", "result": {"iops": 1}}


def test_atomic_write_leaves_only_the_file(tmp_path):
    p = tmp_path / "sub" / "r.json"
    write_json_atomic(p, GOOD)
    assert [f.name for f in p.parent.iterdir()] == ["r.json"]
    assert read_record(p) == GOOD


def test_failed_write_keeps_the_old_file(tmp_path):
    p = tmp_path / "r.json"
    write_json_atomic(p, GOOD)
    with pytest.raises(TypeError):
        write_json_atomic(p, {"bad": object()})
    assert read_record(p) == GOOD
    assert [f.name for f in tmp_path.iterdir()] == ["r.json"]


@pytest.mark.parametrize("text,why", [
    (json.dumps(GOOD)[:40], "not JSON"),
    ("[1, 2]", "not a JSON object"),
    (json.dumps({k: v for k, v in GOOD.items() if k != "end"}), "missing end"),
    (json.dumps({k: v for k, v in GOOD.items() if k != "result"}), "no result"),
])
def test_truncated_or_corrupt_record_is_rejected_naming_the_file(tmp_path, text, why):
    p = tmp_path / "bad-trial.json"
    p.write_text(text)
    with pytest.raises(RecordError) as err:
        read_record(p)
    assert "bad-trial.json" in str(err.value) and why in str(err.value)


def test_read_records_skips_temporaries(tmp_path):
    write_json_atomic(tmp_path / "a.json", GOOD)
    (tmp_path / ".a.json.x.tmp").write_text("{")
    assert len(read_records(tmp_path)) == 1
