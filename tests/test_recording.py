"""pagelab record and the replay behind make PROFILE=recorded, on a small complete run built
here: what is kept, what is refused (incomplete, dirty, too large), and that a replay leaves a
results directory exactly as the trial rule would have, stamped with where it came from."""

import gzip
import json

import pytest

from pagelab.cli import main
from pagelab.data import recording


def make_run(d, experiments=("alpha", "beta"), dirty=False, profile="quick"):
    for exp in experiments:
        e = d / exp
        (e / "trials").mkdir(parents=True)
        prov = {"git": {"commit": "0123456789abcdef", "dirty": dirty}, "config_hash": "h",
                "machine": {"cpu_model": "Intel(R) Xeon(R) CPU", "cpus": 2, "kernel": "6.18.0-x"},
                "disk": {"disk": "vda", "rotational": False}}
        (e / "config.json").write_text(json.dumps({"profile": profile, "rng_seed": 1}))
        (e / "provenance.json").write_text(json.dumps(prov))
        (e / "trials.csv").write_text("trial_id,order,warmup,status,valid,invalid_reason,arm,x\n"
                                      "a-r00,0,False,ok,True,,a,1.5\n")
        rec = {"trial_id": "a-r00", "experiment": exp, "status": "ok", "provenance": prov, "start": "s",
               "end": "e", "result": {"x": 1.5}, "params": {"arm": "a"}, "warmup": False, "order": 0}
        (e / "trials" / "a-r00.json").write_text(json.dumps(rec))
        (e / "measurements.json").write_text(json.dumps({f"{exp}.a.x": {"value": 1.5, "n": 1}}))
        (e / "check.txt").write_text("ok\n")


def test_record_then_replay_round_trip(tmp_path):
    make_run(tmp_path / "results")
    dest = recording.record(tmp_path / "results", "xeon-2c", ["alpha", "beta"], dest_root=tmp_path / "rec")
    assert dest == tmp_path / "rec" / "xeon-2c" / "quick"
    assert sorted(p.name for p in (dest / "alpha").iterdir()) == [
        "config.json", "provenance.json", "trials.csv", "trials.jsonl.gz"]
    with gzip.open(dest / "alpha" / "trials.jsonl.gz", "rt") as fh:
        assert json.loads(fh.readline())["result"] == {"x": 1.5}
    out = tmp_path / "replayed" / "alpha"
    recording.replay(dest, "alpha", out)
    assert (out / "trials.csv").read_text() == (tmp_path / "results/alpha/trials.csv").read_text()
    assert json.loads((out / "trials" / "a-r00.json").read_text())["result"] == {"x": 1.5}
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["recorded_machine"] == "xeon-2c" and prov["git"]["commit"] == "0123456789abcdef"
    src = recording.source(tmp_path / "replayed")
    assert src == {"machine": "xeon-2c", "commit": "0123456789", "recorded": "yes"}
    # Recording again replaces the old recording as a whole.
    recording.record(tmp_path / "results", "xeon-2c", ["alpha"], dest_root=tmp_path / "rec")
    assert not (dest / "beta").exists()


def test_refuses_incomplete_dirty_and_oversized_runs(tmp_path, monkeypatch):
    make_run(tmp_path / "dirty", dirty=True)
    with pytest.raises(recording.RecordingError, match="uncommitted changes"):
        recording.record(tmp_path / "dirty", "m", ["alpha"], dest_root=tmp_path / "rec")
    make_run(tmp_path / "r")
    (tmp_path / "r/beta/measurements.json").unlink()
    (tmp_path / "r/alpha/check.txt").write_text("1 counted trial(s) not ok\n")
    with pytest.raises(recording.RecordingError) as err:
        recording.record(tmp_path / "r", "m", ["alpha", "beta", "gamma"], dest_root=tmp_path / "rec")
    msg = str(err.value)
    assert "beta: no measurements.json" in msg and "alpha: its checks failed" in msg and "gamma: no config.json" in msg
    make_run(tmp_path / "ok")
    monkeypatch.setattr(recording, "LIMIT_BYTES", 100)
    with pytest.raises(recording.RecordingError, match="over its 0 MiB limit"):
        recording.record(tmp_path / "ok", "m", ["alpha"], dest_root=tmp_path / "rec")
    assert not (tmp_path / "rec" / "m" / "quick").exists()  # nothing half-written
    with pytest.raises(recording.RecordingError, match="slug"):
        recording.record(tmp_path / "ok", "Bad Name!", ["alpha"], dest_root=tmp_path / "rec")


def test_cli_record_names_the_problem(tmp_path, capsys):
    assert main(["record", str(tmp_path / "nothing"), "m"]) == 2
    assert "not a complete, clean run" in capsys.readouterr().err


def test_machine_slug():
    prov = {"machine": {"cpu_model": "AMD EPYC 7B13", "cpus": 8, "kernel": "6.1.0-18-amd64"},
            "disk": {"disk": "nvme0n1", "rotational": False}}
    assert recording.machine_slug(prov) == "epyc-8c-linux6.1-nvme"


def test_record_one_experiment_keeps_the_others(tmp_path):
    """A long profile is recorded an experiment at a time: recording beta alone (from a later
    commit) keeps alpha as it was, and the paper's source line names both commits."""
    make_run(tmp_path / "first")
    dest = recording.record(tmp_path / "first", "m", ["alpha", "beta"], dest_root=tmp_path / "rec")
    make_run(tmp_path / "second", experiments=("beta",))
    prov_path = tmp_path / "second/beta/provenance.json"
    prov = json.loads(prov_path.read_text())
    prov["git"]["commit"] = "fedcba9876543210"
    prov_path.write_text(json.dumps(prov))
    recording.record(tmp_path / "second", "m", ["beta"], dest_root=tmp_path / "rec", keep_others=True)
    assert sorted(p.name for p in dest.iterdir() if p.is_dir()) == ["alpha", "beta"]
    assert json.loads((dest / "beta/provenance.json").read_text())["git"]["commit"] == "fedcba9876543210"
    assert json.loads((dest / "alpha/provenance.json").read_text())["git"]["commit"] == "0123456789abcdef"
    for exp in ("alpha", "beta"):
        recording.replay(dest, exp, tmp_path / "replayed" / exp)
    assert recording.source(tmp_path / "replayed")["commit"] == "0123456789, fedcba9876"
    # Without keep_others the recording is replaced as a whole.
    recording.record(tmp_path / "second", "m", ["beta"], dest_root=tmp_path / "rec")
    assert not (dest / "alpha").exists()


def test_cli_record_one_experiment(tmp_path, capsys):
    assert main(["record", str(tmp_path / "nothing"), "m", "--experiment", "nosuch"]) != 0
    assert "nosuch" in capsys.readouterr().err


def test_a_recording_written_into_the_checkout_does_not_make_the_next_run_dirty(tmp_path):
    """A full run is recorded an experiment at a time from one checkout: the record step rewrites
    a tracked file under data/recorded/, and the next run there must still be clean; any other
    tracked change makes it dirty."""
    import subprocess

    from pagelab.system.provenance import git_state

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    rec = tmp_path / "data/recorded/m/full/README.txt"
    rec.parent.mkdir(parents=True)
    rec.write_text("a full run: seekmodel\n")
    (tmp_path / "src.py").write_text("x = 1\n")
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    assert git_state(tmp_path)["dirty"] is False
    rec.write_text("a full run: pagein, seekmodel\n")
    (rec.parent / "pagein").mkdir()
    (rec.parent / "pagein/trials.csv").write_text("x\n")
    assert git_state(tmp_path)["dirty"] is False
    (tmp_path / "src.py").write_text("x = 2\n")
    assert git_state(tmp_path)["dirty"] is True


def test_the_code_digest_moves_with_a_changed_line_not_with_a_touch(tmp_path):
    """The pipeline's steps after the trials re-run on this digest (a Snakemake param)."""
    import os

    from pagelab.system import provenance

    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text("x = 1\n")
    (pkg / "sub" / "b.py").write_text("y = 2\n")
    (pkg / "notes.txt").write_text("not code")
    first = provenance.code_digest(pkg)
    os.utime(pkg / "a.py", (1e9, 1e9))
    (pkg / "notes.txt").write_text("still not code")
    assert provenance.code_digest(pkg) == first
    (pkg / "sub" / "b.py").write_text("y = 3\n")
    assert provenance.code_digest(pkg) != first
    (pkg / "sub" / "b.py").write_text("y = 2\n")
    assert provenance.code_digest(pkg) == first
    (pkg / "sub" / "b.py").rename(pkg / "b.py")  # the same lines in another file: another program
    assert provenance.code_digest(pkg) != first
