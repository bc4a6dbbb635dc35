"""A failing device inside `pagelab trial` of a real experiment (what the pipeline runs), by
simdisk's fault injection (docs/devices.md#fault-injection): a profile of config/devices/ with
fault keys added, in a copy of the repository's config (PAGELAB_ROOT). Each trial that meets the
fault is invalid with what the device did as its reason (its record says so), the state is
restored after it and the run goes on, and a run whose invalid trials pass
repetitions.max_invalid_share stops (exit 1) with each reason counted; the machine is then as
before, with no journal and no scratch left.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, VENV_BIN
from pagelab.system import config, state

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/fuse"),
                                reason="needs root and /dev/fuse (FUSE mount, loop, swap)")


def faulty_root(where: Path, profiles: dict[str, tuple[str, dict[str, Any]]]) -> Path:
    """A repository root whose config/ is a copy with the device profiles `profiles` added or,
    under a name the copy has, replaced (name -> the profile it copies, and the fault keys it
    adds); the rest links to this one."""
    root = where / "root"
    root.mkdir()
    for child in REPO.iterdir():
        if child.name not in ("config", "results", "scratch", ".pytest-scratch"):
            (root / child.name).symlink_to(child)
    shutil.copytree(REPO / "config", root / "config")
    for name, (base, keys) in profiles.items():
        text = (REPO / "config" / "devices" / f"{base}.yaml").read_text()
        (root / "config" / "devices" / f"{name}.yaml").write_text(
            text + "".join(f"{k}: {v}\n" for k, v in keys.items()))
    return root


def run_trial(tmp_path: Path, name: str, root: Path, **settings: Any) -> tuple[subprocess.CompletedProcess[str],
                                                                              dict[str, dict[str, Any]]]:
    """`pagelab trial NAME` of the quick block with `settings` over it, on `root`'s config;
    its exit and its trial records by id."""
    scratch = tmp_path / "scratch"
    block = {**config.load(overrides={"profile": "quick"})[name], **settings, "scratch_dir": str(scratch)}
    (tmp_path / "config.json").write_text(json.dumps(block))
    env = {**os.environ, "PAGELAB_ROOT": str(root), "PAGELAB_JOURNAL": str(tmp_path / "journal.jsonl")}
    done = subprocess.run([str(VENV_BIN / "pagelab"), "trial", name, "--config", str(tmp_path / "config.json"),
                           "--output", str(tmp_path / "out")], capture_output=True, text=True, env=env, timeout=600)
    recs = {p.stem: json.loads(p.read_text()) for p in sorted((tmp_path / "out" / "trials").glob("*.json"))}
    assert not (tmp_path / "journal.jsonl").exists(), done.stderr[-2000:]
    assert not scratch.exists() or list(scratch.iterdir()) == [], list(scratch.iterdir())
    return done, recs


def judged(recs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in recs.values() if not r["warmup"]]


@pytest.fixture
def machine(state_lock, disk_tmp):
    """The paging state before the test; the test's runs hold the state lock under it."""
    before = state.show()
    yield before
    assert state.show() == before


def test_eio_on_the_readyboost_stick_invalidates_its_trials_and_stops_the_run(machine, disk_tmp, native_build):
    """Every read of the ReadyBoost tier (the stick before the disk) fails with EIO, from its
    mount on (mkswap's first read fails): every tier_after trial is invalid naming the read errors
    and what failed with them, its state restored, the run goes on to the next, and stops after
    its first round (5 of 5 invalid, more than max_invalid_share 0.5). The faults are in the copied
    config's tier model (config.TIER_MODEL), which the tier arms always mount."""
    from pagelab.system.config import TIER_MODEL

    root = faulty_root(disk_tmp, {TIER_MODEL: (TIER_MODEL, {"error_reads": 1})})
    done, recs = run_trial(disk_tmp, "readyboost", root, arms=["tier_after"])
    assert done.returncode == 1, done.stderr[-3000:]
    trials = judged(recs)
    assert len(trials) == 5 and all(r["status"] == "ok" and not r["valid"] for r in trials), trials
    for r in trials:
        assert r["invalid_reason"].startswith(f"the paging device failed: simdisk {TIER_MODEL} injected "), r
        assert "read(s) failed (error_reads)" in r["invalid_reason"], r["invalid_reason"]
    last = done.stderr.strip().splitlines()[-1]
    assert "5 of 5 trials invalid, more than max_invalid_share 0.5: " in last, last
    counted = re.findall(rf"(\d+) x the paging device failed: simdisk {re.escape(TIER_MODEL)} injected N read\(s\) "
                         r"failed \(error_reads\)", last)
    assert sum(map(int, counted)) == 5, last  # every reason counted, those that differ in numbers only as one


def test_a_disk_that_stops_answering_during_pagein_invalidates_the_trial(machine, disk_tmp, native_build):
    """The paging disk stops answering one second after each trial mounts it, for good: its
    requests fail after command_timeout_ms and it is offline. Each trial is invalid naming the
    timeout (the restore's swapoff ends within it), the run goes on to the next trial, and stops
    with the reason counted once more than half its trials are invalid."""
    root = faulty_root(disk_tmp, {"hdd5400-2008-stops": ("hdd5400-2008", {
        "stall": "true", "up_interval_s": 1, "command_timeout_ms": 1000})})
    done, recs = run_trial(disk_tmp, "pagein", root, disk_profile="hdd5400-2008-stops", retouch_orders=["random"],
                           page_clusters=[0])
    assert done.returncode == 1, done.stderr[-3000:]
    trials = judged(recs)
    assert len(trials) == 5 and all(r["status"] == "ok" and not r["valid"] for r in trials), trials
    for r in trials:
        assert r["invalid_reason"].startswith("the paging device failed: simdisk hdd5400-2008-stops injected"), r
        assert "unanswered for command_timeout_ms, the device then offline" in r["invalid_reason"], r
    assert "5 of 5 trials invalid, more than max_invalid_share 0.5" in done.stderr, done.stderr[-2000:]


def test_latency_spikes_during_seekmodel_invalidate_only_the_spiky_devices_trials(machine, disk_tmp, native_build):
    """Two emulated disks kept for the whole seekmodel run, one of them with latency spikes (30 %
    of reads 30 ms late): the spiky disk's trials are invalid naming the delays, judged by what
    each trial added to the device's counters; the plain disk's trials, interleaved with them,
    stay valid. The spiky configurations never count, so the run stops once more than half its
    trials are invalid, each reason counted."""
    root = faulty_root(disk_tmp, {"hdd5400-2008-spiky": ("hdd5400-2008", {
        "read_delay_ms": 30, "delay_share": 0.3})})
    done, recs = run_trial(disk_tmp, "seekmodel", root, disk_profiles=["hdd5400-2008", "hdd5400-2008-spiky"],
                           block_sizes=["4K", "16K"], spans=[])
    assert done.returncode == 1, done.stderr[-3000:]
    trials = judged(recs)
    plain = [r for r in trials if r["params"]["disk_profile"] == "hdd5400-2008"]
    spiky = [r for r in trials if r["params"]["disk_profile"] == "hdd5400-2008-spiky"]
    assert len(plain) == 10 and all(r["status"] == "ok" and r["valid"] for r in plain), plain
    assert len(spiky) >= 10 and all(r["status"] == "ok" and not r["valid"] for r in spiky), spiky
    for r in spiky:
        assert r["invalid_reason"].startswith("the paging device failed: simdisk hdd5400-2008-spiky injected "), r
        assert "request(s) delayed (read/write/flush_delay_ms)" in r["invalid_reason"], r["invalid_reason"]
    assert "trials invalid, more than max_invalid_share 0.5: " in done.stderr, done.stderr[-2000:]
    assert f"{len(spiky)} x the paging device failed: simdisk hdd5400-2008-spiky injected N request(s) delayed" \
        in done.stderr, done.stderr[-2000:]


def test_a_native_tool_that_fails_invalidates_its_trial_and_the_run_goes_on(machine, disk_tmp, native_build,
                                                                            monkeypatch):
    """A native tool that fails inside a trial (iobench refusing a file that is not there: a
    ToolError, on no emulated device) makes that trial invalid with the tool's message, not the
    run stop: the sysctl the trial changed inside its scope and the one it changed outside any
    scope are both back before the next trial, and the other trials are valid."""
    from pagelab.experiments import harness
    from pagelab.run.tools import iobench_job_cmd, run_json

    monkeypatch.setenv("PAGELAB_JOURNAL", str(disk_tmp / "journal.jsonl"))
    seen: list[tuple[str, str]] = []

    def run_trial(st, t, scratch):
        knobs = state.show()["knobs"]
        seen.append((knobs["vm.swappiness"], knobs["vm.page-cluster"]))
        mark = len(st.journal.entries())
        st.set_knob("vm.page-cluster", 5)           # outside any scope: the harness undoes it
        with st.scope():
            st.set_knob("vm.swappiness", 23)
            if t.repetition == 0:
                run_json(iobench_job_cmd(scratch / "missing", "randread", 4096, runtime=0.1), timeout=30)
        with st.held():
            state.restore(st.journal, keep=mark)    # a trial that ends well puts back its own
        return {"value": 1.0}

    cfg = {"repetitions": {"n_min": 3, "n_max": 3, "ci_pct": 50}, "rng_seed": 3}
    frame = harness.execute("toolfail", cfg, disk_tmp / "out", disk_tmp / "scratch", [{"arm": "a"}],
                            lambda c: c["arm"], run_trial, lambda r: r["value"], ["value"], tools=["iobench"])
    first, rest = frame[frame["trial_id"] == "a-r00"].iloc[0], frame[frame["trial_id"] != "a-r00"]
    assert first["status"] == "ok" and not first["valid"], frame
    assert first["invalid_reason"].startswith("the trial failed: ToolError: ") and "iobench" in first["invalid_reason"]
    assert "No such file or directory" in first["invalid_reason"]
    assert len(rest) == 3 and rest["valid"].all(), frame
    before = (machine["knobs"]["vm.swappiness"], machine["knobs"]["vm.page-cluster"])
    assert seen == [before] * 4  # each trial, the failed one's successor included, began as before
