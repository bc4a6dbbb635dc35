"""The fleet (docs/fleet.md): the experiment matrix on several hosts through Snakemake's
cluster-generic executor, one measurement job per host at a time, merged into one table.

Three fake hosts run a light seekmodel and a light crystalmark each, through the real executor
plugin and the profile's real submit/status/cancel scripts, with ssh replaced by tests/fleet/ssh.sh
(the job runs on this machine as the host its `host` resource names, under that host's lock).
The fleet runs once with gamma down and once more with it back: a host that is down loses only
its own jobs (the merge names it) and the rerun completes only what is missing; after it, the
trial records' start and end times show that one host's jobs never overlapped and that
different hosts' jobs did."""

from __future__ import annotations

import csv
import json
import os
import re
import select
import shutil
import subprocess
import time
from datetime import datetime
from pathlib import Path

import pytest

from conftest import REPO, VENV_BIN, copy_native, copy_repo, no_real_run
from pagelab.cli import main as pagelab
from pagelab.paper import fleetmerge
from pagelab.run import fleet
from pagelab.system import config

pipeline = pytest.mark.pipeline   # the fleet's runs; the refusals of bad input below are quick

HOSTS = ["alpha", "beta", "gamma"]
EXPERIMENTS = ["seekmodel", "crystalmark"]
FLEET_BLOCK = """
fleet:
  hosts:
    - {name: alpha, labels: {kernel: "6.18", disk: virtio}}
    - {name: beta, labels: {kernel: "6.18", disk: virtio}}
    - {name: gamma, labels: {kernel: "6.19-rc", disk: virtio}}
  experiments: [seekmodel, crystalmark]
  profile: quick
  baseline: alpha
  set:
    seekmodel: {disk_profiles: [own], block_sizes: [4K, 64K], repetitions: {n_min: 5, n_max: 5, ci_pct: 50},
                runtime: 0.2s, warmup: 0, file_size: 32M}
    crystalmark: {arms: [direct, buffered], size: 16M, sets: 1, set_time: 0.05s}
"""
FAKE = ["--cluster-generic-submit-cmd", "tests/fleet/submit.sh {resources.host}",
        "--cluster-generic-status-cmd", "tests/fleet/status.sh",
        "--cluster-generic-cancel-cmd", "tests/fleet/cancel.sh",
        "--seconds-between-status-checks", "1", "--latency-wait", "5"]


def fleet_repo(base: Path, block: str = FLEET_BLOCK) -> Path:
    """A fresh copy of the repository with the native tools built and a light fleet config
    (`block`, the fleet: section)."""
    shutil.rmtree(base, ignore_errors=True)
    repo = copy_repo(base / "repo")
    copy_native(repo)
    cfg = repo / "config" / "config.yaml"
    text = cfg.read_text()
    cfg.write_text(text[: text.index("\nfleet:")] + block)
    (repo / "locks").mkdir(mode=0o700)   # the hosts' lock directory: this user's alone
    return repo


def snakemake(repo: Path, env: dict[str, str], target: str, *extra: str):
    cmd = [str(VENV_BIN / "snakemake"), "--workflow-profile", "workflow/profiles/cluster-generic",
           *FAKE, "--jobs", "6", *extra, target]
    t0 = time.monotonic()
    out = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    out.seconds = time.monotonic() - t0
    return out


def fleet_env(env: dict[str, str], repo: Path) -> dict[str, str]:
    e = dict(env)
    e["PAGELAB_FLEET_LOCKDIR"] = str(repo / "locks")
    e["PAGELAB_FLEET_DOWN"] = str(repo / "down.txt")
    e["PAGELAB_FLEET_SSH_LOG"] = str(repo / "ssh.log")
    return e


def intervals(repo: Path) -> dict[tuple[str, str], tuple[datetime, datetime]]:
    """Per (host, experiment) job: the first trial's start and the last trial's end."""
    out = {}
    for host in HOSTS:
        for exp in EXPERIMENTS:
            recs = [json.loads(p.read_text()) for p in (repo / "results/fleet" / host / exp / "trials").glob("*.json")]
            if recs:
                out[(host, exp)] = (min(datetime.fromisoformat(r["start"]) for r in recs),
                                    max(datetime.fromisoformat(r["end"]) for r in recs))
    return out


def overlap(a, b) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def merge_rows(repo: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(open(repo / "results/fleet/merge.csv")))


def job_count(stdout_err: str, rule: str) -> int:
    m = re.search(rf"^{rule}\s+(\d+)$", stdout_err, re.M)
    return int(m.group(1)) if m else 0


@pytest.fixture(scope="module")
def three_hosts(tmp_path_factory, env):
    """One fleet, run twice: first with gamma down (alpha's and beta's jobs complete, gamma's
    fail, and the merge says so: `down`, the state after that run), then with gamma back, when
    only gamma's two jobs run and the merge is complete (the repository, after that rerun).
    As root each job recovers the paging state first, taking the state lock itself (the jobs
    are not this test's descendants): beside a real run holding it the fixture skips, naming it."""
    no_real_run()
    repo = fleet_repo(REPO / ".pytest-scratch" / f"fleet-{tmp_path_factory.getbasetemp().name}" / "three")
    e = fleet_env(env, repo)
    (repo / "down.txt").write_text("gamma\n")
    run = snakemake(repo, e, "fleet_trials", "--keep-going")
    merged = snakemake(repo, e, "fleet_merge")
    down = {"run": run, "merged": merged,
            "rows": {r["host"]: r for r in merge_rows(repo)} if merged.returncode == 0 else {},
            "section": (repo / "results/fleet/section.tex").read_text() if merged.returncode == 0 else "",
            "mtimes": {h: (repo / "results/fleet" / h / "seekmodel/trials.csv").stat().st_mtime_ns
                       for h in ("alpha", "beta")
                       if (repo / "results/fleet" / h / "seekmodel/trials.csv").exists()}}
    (repo / "down.txt").unlink()   # the failure is cleared
    rerun = snakemake(repo, e, "fleet_trials", "--keep-going")
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-4000:]
    remerged = snakemake(repo, e, "fleet_merge")
    assert remerged.returncode == 0, remerged.stdout[-3000:] + remerged.stderr[-4000:]
    print(f"\nfleet: gamma down {run.seconds:.1f} s, merge {merged.seconds:.1f} s; "
          f"rerun {rerun.seconds:.1f} s, merge {remerged.seconds:.1f} s")
    yield repo, down, rerun
    shutil.rmtree(repo.parent, ignore_errors=True)
    if repo.parent.parent.is_dir() and not any(repo.parent.parent.iterdir()):
        repo.parent.parent.rmdir()


@pipeline
def test_headlines_by_host_figure_and_section(tmp_path):
    """Without running anything: two hosts' measurements.json (one host lacks a measurement)
    give the long headline frame, a figure with one panel per measurement, and a section that
    includes the figure; `pagelab fleet show` prints the (empty) default plan."""
    from pagelab.core import plots

    plan_ = {"hosts": [{"name": "a", "labels": {}, "experiments": ["seekmodel"]},
                       {"name": "b", "labels": {}, "experiments": ["seekmodel"]}],
             "baseline": "a", "profile": "quick"}
    m = {"value": 2.0, "ci_low": 1.5, "ci_high": 2.5, "unit": "ms", "n": 5, "method": "median"}
    for host, data in {"a": {"seekmodel.x": m, "seekmodel.y": {**m, "value": 7.0, "ci_high": 8.0}},
                       "b": {"seekmodel.x": {**m, "value": 3.0, "ci_high": 3.5}}}.items():
        d = tmp_path / host / "seekmodel"
        d.mkdir(parents=True)
        (d / "measurements.json").write_text(json.dumps(data))
    heads = fleetmerge.headlines(plan_, tmp_path)
    assert sorted(zip(heads["host"], heads["measurement"], heads["value"], strict=True)) == [
        ("a", "seekmodel.x", 2.0), ("a", "seekmodel.y", 7.0), ("b", "seekmodel.x", 3.0)]
    fig = plots.intervals_by_host(heads)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    # each panel names its intervals by the coverage they have at n = 5, never a typed 95 %
    assert [ax.get_title() for ax in panels] == ["seekmodel.x (93.75 % CI)", "seekmodel.y (93.75 % CI)"]
    merged = fleetmerge.merge(plan_, tmp_path, tmp_path / "logs")
    assert merged.set_index("host").loc["b", "median:seekmodel.x"] == "3.00 [1.50, 3.50] (93.75 %)"
    tex = fleetmerge.section(merged, plan_, "fleet/headlines.pdf")
    assert "\\includegraphics[width=\\textwidth]{fleet/headlines.pdf}" in tex and "\\label{fig:fleet}" in tex
    shown = subprocess.run([str(VENV_BIN / "pagelab"), "fleet", "show"], cwd=REPO, capture_output=True,
                           text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["jobs"] == []


@pipeline
def test_config_defaults_have_no_fleet():
    cfg = fleet.raw_config()
    assert fleet.jobs(cfg) == [] and fleet.plan(cfg)["hosts"] == []


@pipeline
def test_a_fleet_block_is_checked():
    cfg = fleet.raw_config()
    cfg["fleet"] = {"hosts": [{"name": "a"}], "experiments": ["seekmodel"],
                    "set": {"seekmodel": {"repetitions": {"n_min": 2, "n_max": 2, "ci_pct": 10}}}}
    with pytest.raises(config.ConfigError, match="seekmodel.quick.repetitions.n_min"):
        fleet.block(cfg, "a", "seekmodel", split=None)
    cfg["fleet"]["set"] = {"seekmodel": {"bogus": 1}}
    with pytest.raises(config.ConfigError, match="bogus"):
        fleet.block(cfg, "a", "seekmodel", split=None)
    cfg["fleet"] = {"hosts": [{"name": "a", "experiments": ["nope"]}]}
    with pytest.raises(config.ConfigError, match="nope"):
        fleet.jobs(cfg)
    cfg["fleet"] = {"hosts": [{"name": "a"}], "baseline": "z"}
    with pytest.raises(config.ConfigError, match="baseline"):
        fleet.plan(cfg)
    cfg["fleet"] = {"hosts": [{"name": "a"}], "set": {"seekmodel": {"disk_profiles": ["own"], "runtime": "0.2s"}}}
    b = fleet.block(cfg, "a", "seekmodel", split=None)
    assert b["disk_profiles"] == ["own"] and b["runtime"] == "0.2s" and b["scratch_dir"].endswith("fleet/a")


@pipeline
def test_three_hosts_one_job_per_host_at_a_time_hosts_in_parallel(three_hosts):
    """After both runs: every host ran both experiments, never two at once on one host (gamma's
    two ran in the rerun, side by side in Snakemake's plan, one at a time under its lock), and
    different hosts' jobs overlapped (alpha's and beta's in the first run)."""
    repo, _, _ = three_hosts
    jobs = intervals(repo)
    assert set(jobs) == {(h, e) for h in HOSTS for e in EXPERIMENTS}
    for host in HOSTS:
        a, b = jobs[(host, "seekmodel")], jobs[(host, "crystalmark")]
        assert not overlap(a, b), (host, a, b)  # one measurement job per host at a time
    across = [(x, y) for x in jobs for y in jobs if x[0] < y[0] and overlap(jobs[x], jobs[y])]
    assert across, jobs  # different hosts ran at the same time
    for host in HOSTS:
        for exp in EXPERIMENTS:
            d = repo / "results/fleet" / host / exp
            ran = json.loads((d / fleet.RAN_ON).read_text())
            assert ran["as"] == host  # the job ran under its own host's identity and lock
            cfg = json.loads((d / "config.json").read_text())
            assert cfg["scratch_dir"] == f"scratch/fleet/{host}"
            frame = list(csv.DictReader(open(d / "trials.csv")))
            counted = [r for r in frame if r["status"] == "ok" and r["warmup"] == "False"]
            assert len(counted) >= 5 * (2 if exp == "seekmodel" else 2), (host, exp, len(counted))
            assert (d / "measurements.json").stat().st_size > 0
    hosts_seen = {ln.split()[0] for ln in (repo / "ssh.log").read_text().splitlines()}
    assert hosts_seen == set(HOSTS)


@pipeline
def test_the_merge_has_one_row_per_host(three_hosts):
    repo, _, _ = three_hosts
    rows = merge_rows(repo)
    assert [r["host"] for r in rows] == HOSTS
    for r in rows:
        assert r["status"] == "complete" and r["missing"] == ""
        assert r["completed"].split() == EXPERIMENTS
        assert r["label:disk"] == "virtio"
        medians = {k: v for k, v in r.items() if k.startswith("median:")}
        # each interval named by its coverage at its n ("(93.75 %)"), a fit's by its nominal level
        assert medians and all(re.match(r"^\S+ \[\S+, \S+\] \([\d.]+ %\)$", v) for v in medians.values()), medians
        assert sum(int(r[f"verdict:{v}"]) for v in ("reproduced", "not reproduced", "inconclusive",
                                                     "by construction", "not applicable here")) > 0
    assert rows[0]["vs_baseline"] == "baseline"
    assert all(re.match(r"^\d+ same, \d+ faster, \d+ slower, \d+ different$", r["vs_baseline"]) for r in rows[1:])
    tex = (repo / "results/fleet/section.tex").read_text()
    assert "\\section{The fleet}" in tex and "Every host returned every experiment" in tex
    assert all(h in tex for h in HOSTS)
    assert "\\includegraphics[width=\\textwidth]{fleet/headlines.pdf}" in tex
    assert (repo / "results/fleet/headlines.pdf").stat().st_size > 0
    executed = json.loads((repo / "results/fleet/fleet.ipynb").read_text())
    assert any("host(s); without complete results: none" in "".join(o.get("text", ""))
               for c in executed["cells"] for o in c.get("outputs", []))


@pipeline
def test_a_host_that_fails_loses_only_its_own_jobs_and_a_rerun_completes_them(three_hosts):
    repo, down, rerun = three_hosts
    run, merged, rows = down["run"], down["merged"], down["rows"]
    assert run.returncode != 0  # gamma's jobs failed ...
    assert merged.returncode == 0, merged.stdout[-3000:] + merged.stderr[-4000:]  # ... the merge did not
    assert list(rows) == HOSTS
    for h in ("alpha", "beta"):
        assert rows[h]["status"] == "complete" and rows[h]["completed"].split() == EXPERIMENTS, \
            (rows[h]["missing"], rows[h],   # the rerun did not run alpha's or beta's jobs: their logs
             {p.name: p.read_text()[-1500:] for p in (repo / "results/logs/fleet" / h).glob("*.log")})
        assert h in down["mtimes"]  # its seekmodel results were written in the first run
        assert (repo / "results/fleet" / h / "seekmodel/measurements.json").exists()
    assert rows["gamma"]["status"] == "missing" and rows["gamma"]["completed"] == ""
    assert "seekmodel" in rows["gamma"]["missing"] and "crystalmark" in rows["gamma"]["missing"]
    assert rows["gamma"]["vs_baseline"] == "no results"
    assert "gamma" in down["section"].split("without complete results:")[1]
    # The rerun ran gamma's two jobs and nothing else, and the merge is then complete.
    assert job_count(rerun.stdout + rerun.stderr, "fleet_trial") == 2
    assert {h: (repo / "results/fleet" / h / "seekmodel/trials.csv").stat().st_mtime_ns
            for h in ("alpha", "beta")} == down["mtimes"]
    rows = merge_rows(repo)
    assert [r["host"] for r in rows] == HOSTS and all(r["status"] == "complete" for r in rows)


@pipeline
def test_the_slurm_profile_parses(env, tmp_path):
    """A dry run with the slurm profile (no sbatch needed for -n) plans one job per host and
    experiment, each asking Slurm for its node, exclusively."""
    extra = tmp_path / "fleet.yaml"
    extra.write_text(FLEET_BLOCK)
    out = subprocess.run([str(VENV_BIN / "snakemake"), "-n", "--workflow-profile", "workflow/profiles/slurm",
                          "fleet_trials", "--configfile", "config/config.yaml", str(extra)],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-3000:]
    for h in HOSTS:
        assert f"slurm_extra=--nodelist={h} --exclusive" in text
    assert os.path.exists(REPO / "workflow/profiles/slurm/config.yaml")


@pipeline
def test_status_and_cancel_follow_a_job_on_its_host(tmp_path):
    """submit prints an id at once; status says running, then cancel ends the job's process group
    on its host (and the submitter), and status says failed; a job that exits 0 is a success."""
    shutil.copytree(REPO / "workflow/profiles/cluster-generic", tmp_path / "workflow/profiles/cluster-generic")
    shutil.copytree(REPO / "tests/fleet", tmp_path / "tests/fleet")
    (tmp_path / "job.sh").write_text("sleep 300\n")
    (tmp_path / "ok.sh").write_text("true\n")
    # the host's lock is `pagelab fleet lock`, from the checkout's .venv on a real host: here, this one's
    e = {**os.environ, "PAGELAB_FLEET_LOCKDIR": str(tmp_path / "locks"), "PATH": f"{VENV_BIN}:{os.environ['PATH']}"}

    def sh(*args: str) -> str:
        return subprocess.run(list(args), cwd=tmp_path, env=e, capture_output=True, text=True, check=True,
                              timeout=30).stdout.strip()

    def status(job: str, want: str) -> None:
        for _ in range(50):
            if sh("tests/fleet/status.sh", job) == want:
                return
            time.sleep(0.1)
        raise AssertionError(f"{job}: not {want}")

    job = sh("tests/fleet/submit.sh", "delta", str(tmp_path / "job.sh"))
    status(job, "running")
    pgid_file = tmp_path / ".snakemake/fleet-jobs" / job / "pgid"
    for _ in range(50):
        if pgid_file.exists() and pgid_file.read_text().strip():
            break
        time.sleep(0.1)
    pgid = int(pgid_file.read_text())
    sh("tests/fleet/cancel.sh", job)
    status(job, "failed")
    alive = subprocess.run(["ps", "-o", "stat=", "-g", str(pgid)], capture_output=True, text=True).stdout.split()
    assert all(s.startswith("Z") for s in alive), alive
    status(sh("tests/fleet/submit.sh", "delta", str(tmp_path / "ok.sh")), "success")


@pipeline
def test_a_job_that_ends_between_the_status_checks_is_a_success(tmp_path):
    """The race that failed CI once: status.sh finds no exit file, then the job writes it and its
    submitter exits, then status.sh finds no submitter. That job succeeded. A `ps` on PATH plays
    the job's ending at the moment status.sh looks for the submitter."""
    shutil.copytree(REPO / "workflow/profiles/cluster-generic", tmp_path / "workflow/profiles/cluster-generic")
    job = tmp_path / ".snakemake/fleet-jobs/j1"
    job.mkdir(parents=True)
    (job / "submitter").write_text("999999\n")
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "ps").write_text(f"#!/bin/sh\necho 0 > {job}/exit\nexit 1\n")  # the job ends; no such process
    (shim / "ps").chmod(0o755)
    e = {**os.environ, "PATH": f"{shim}:{os.environ['PATH']}"}

    def run() -> str:
        return subprocess.run(["sh", "workflow/profiles/cluster-generic/status.sh", "j1"], cwd=tmp_path, env=e,
                              capture_output=True, text=True, check=True, timeout=30).stdout.strip()

    assert run() == "success"
    (job / "exit").unlink()
    (shim / "ps").write_text(f"#!/bin/sh\necho 3 > {job}/exit\nexit 1\n")
    assert run() == "failed"  # ended with a failure in the same window: failed, from its status
    (job / "exit").unlink()
    (shim / "ps").write_text("#!/bin/sh\nexit 1\n")
    assert run() == "failed"  # no exit status and no submitter: lost


PLAN = {"hosts": [{"name": "a", "labels": {}, "experiments": ["seekmodel"]}], "profile": "quick", "baseline": "a"}
BAD_PLANS = {  # file content: what the one line names
    None: "No such file",
    "{": "not JSON",
    "[]": "a JSON object is expected",
    json.dumps({**PLAN, "hosts": {"a": 1}}): "'hosts' must be a list",
    json.dumps({**PLAN, "hosts": [{"name": "a"}]}): "hosts[0] (a) needs 'labels'",
    json.dumps({**PLAN, "hosts": [{"name": "a/..", "labels": {}, "experiments": []}]}): "hosts[0] needs a 'name'",
    json.dumps({**PLAN, "hosts": [{"name": "a", "labels": {}, "experiments": ["nope"]}]}): "'nope'",
    json.dumps({**PLAN, "baseline": "z"}): "baseline 'z' is not one of the hosts",
}


def one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_merge_and_cells_refuse_a_missing_or_malformed_plan(tmp_path, capsys):
    """`pagelab fleet merge` and `fleet cells`: one line naming the plan and its problem, exit 2,
    nothing written."""
    out = tmp_path / "out"
    for text, why in BAD_PLANS.items():
        plan_ = tmp_path / "fleet.json"
        plan_.unlink(missing_ok=True)
        if text is not None:
            plan_.write_text(text)
        rc = pagelab(["fleet", "merge", "--plan", str(plan_), "--results", str(tmp_path), "--csv",
                      str(out / "merge.csv"), "--tex", str(out / "section.tex")])
        err = one_line(capsys)
        assert rc == 2 and str(plan_) in err and why in err, (rc, err)
        rc = pagelab(["fleet", "cells", "payoff", "--plan", str(plan_), "--results", str(tmp_path),
                      "--output", str(out / "cells")])
        err = one_line(capsys)
        assert rc == 2 and str(plan_) in err and why in err, (rc, err)
        assert not out.exists()
    plan_.write_text(json.dumps(PLAN))
    assert pagelab(["fleet", "cells", "nope", "--plan", str(plan_), "--results", str(tmp_path)]) == 2
    assert "no experiment named 'nope'" in one_line(capsys)


def test_fleet_trial_checks_its_config_before_it_writes_anything(tmp_path, capsys):
    """A fleet job whose config is missing, not JSON or refused by the schema exits 2 with one
    line before ran_on.json (or its output directory) exists."""
    out = tmp_path / "out"
    cfg = tmp_path / "config.json"
    for text, why in ((None, "No such file"), ("{", "not JSON"), ('{"disk_profiles": 3}', "disk_profiles")):
        cfg.unlink(missing_ok=True)
        if text is not None:
            cfg.write_text(text)
        rc = pagelab(["fleet", "trial", "a", "seekmodel", "--config", str(cfg), "--output", str(out)])
        err = one_line(capsys)
        assert rc == 2 and why in err, (rc, err)
        assert not out.exists()


def lock(dirpath: Path, host: str, *cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(VENV_BIN / "pagelab"), "fleet", "lock", host, "--", *cmd], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PAGELAB_FLEET_LOCKDIR": str(dirpath)})


def test_the_host_lock_is_in_a_directory_of_its_own_and_follows_no_link(tmp_path):
    """`pagelab fleet lock HOST -- COMMAND` (what on_host.sh runs a job under): the command runs
    holding <dir>/HOST.lock; a lock directory open to others, a symbolic link, another user's
    directory, a lock file that is a symbolic link and a host name with a '/' are each refused
    (one line, exit 2) and the command does not run."""
    d = tmp_path / "locks"
    ran = tmp_path / "ran"
    held = lock(d, "alpha", "sh", "-c", f"flock -n {d}/alpha.lock true || touch {ran}")
    assert held.returncode == 0, held.stderr
    assert ran.exists() and (d.stat().st_mode & 0o777) == 0o700   # held while the command ran; made 0700
    ran.unlink()
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    (d / "beta.lock").symlink_to(victim)
    link = tmp_path / "link"
    link.symlink_to(d)
    wide = tmp_path / "wide"
    wide.mkdir(mode=0o700)
    wide.chmod(0o755)
    cases = [(d, "beta", "cannot open the host's lock"), (link, "alpha", "symbolic link or not a directory"),
             (wide, "alpha", "open to others"), (d, "../alpha", "a name of letters")]
    if os.geteuid() == 0:
        other = tmp_path / "other"
        other.mkdir(mode=0o700)
        os.chown(other, 65534, 65534)
        cases.append((other, "alpha", "belongs to uid 65534"))
    for where, host, why in cases:
        out = lock(where, host, "touch", str(ran))
        assert out.returncode == 2 and why in out.stderr and len(out.stderr.strip().splitlines()) == 1, \
            (where, out.stderr)
        assert not ran.exists()
    assert victim.read_text() == "keep\n" and not list(wide.iterdir())


def test_a_fleet_job_recovers_the_state_first_waiting_for_the_state_lock(tmp_path):
    """As root, a fleet job runs `pagelab state recover` (the code `make` runs first) before its
    trials: while another process holds the paging state lock, the job waits for it, having
    written ran_on.json but started no trial. (Holds the machine's state lock: run it under the
    dev lock.)"""
    if os.geteuid() != 0:
        pytest.skip("a fleet job recovers the state only as root")
    no_real_run()   # the holder below takes the lock itself: beside a real run, skip naming it
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"disk_profiles": ["own"]}))
    out = tmp_path / "out"
    script = tmp_path / "hold.py"   # holds the state lock until its stdin closes
    script.write_text("import sys\nfrom pagelab.system import state\n"
                      "with state.exclusive():\n    print('held', flush=True)\n    sys.stdin.read()\n")
    holder = subprocess.Popen([str(VENV_BIN / "python"), str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    job = None
    try:
        assert select.select([holder.stdout], [], [], 60)[0] and holder.stdout.readline() == "held\n"
        job = subprocess.Popen([str(VENV_BIN / "pagelab"), "fleet", "trial", "a", "seekmodel", "--config", str(cfg),
                                "--output", str(out)], env={**os.environ, "PAGELAB_FLEET_HOST": "a"},
                               stderr=subprocess.PIPE, text=True)
        assert select.select([job.stderr], [], [], 60)[0]
        line = job.stderr.readline()
        assert line.startswith("pagelab: waiting") and "paging state" in line, line
        time.sleep(0.5)
        assert job.poll() is None and (out / fleet.RAN_ON).exists() and not (out / "trials").exists()
    finally:
        if job is not None:
            job.kill()
            job.wait()
            job.stderr.close()
        holder.stdin.close()
        holder.wait(timeout=30)
