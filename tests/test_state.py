"""The state module on the real kernel: every change is undone, also after SIGKILL at any point
(fault injection at every change point of a trial-sized scenario), and restore is idempotent."""

import csv
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, VENV_BIN, check_crash
from pagelab.run import devices
from pagelab.run.tools import pinned_to_one_cpu
from pagelab.system import state

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to change paging state")

SCENARIO = [str(VENV_BIN / "python"), str(REPO / "tests" / "state_scenario.py")]


@pytest.fixture
def own_journal(tmp_path, monkeypatch):
    """A journal of the test's own, the lock not held: for the tests of the lock itself, whose
    subprocesses take it. Skips while a real run holds the lock."""
    if (h := state.holder()) is not None and h.role != "test":
        pytest.skip(f"a pagelab run (pid {h.pid}: {h.cmd}) holds the paging state lock")
    path = tmp_path / "journal.jsonl"
    monkeypatch.setenv("PAGELAB_JOURNAL", str(path))
    yield path


def run_scenario(workdir, fault_at=None, *args, **extra_env):
    env = dict(os.environ)
    env.pop("_PAGELAB_FAULT_COUNT", None)
    env["PAGELAB_FAULT_AT"] = str(fault_at if fault_at is not None else 10**9)
    env.update(extra_env)
    return subprocess.run(SCENARIO + [str(workdir), *args], env=env, capture_output=True, text=True,
                          timeout=120)


def test_a_clean_run_changes_then_restores_everything(journal, disk_tmp):
    before = state.show()
    out = run_scenario(disk_tmp)
    assert out.returncode == 0, out.stderr
    assert "'zswap.enabled': 'Y'" in out.stdout and "'vm.page-cluster': '0'" in out.stdout
    assert state.show() == before
    assert not journal.exists()


def test_sigkill_at_every_change_point_is_restored(journal, disk_tmp):
    before = state.show()
    points = int(re.search(r"fault points (\d+)", run_scenario(disk_tmp).stdout).group(1))
    assert points >= 20
    for k in range(1, points + 1):
        out = run_scenario(disk_tmp, fault_at=k)
        assert out.returncode == -signal.SIGKILL, (k, out.stdout, out.stderr)
        assert journal.exists()
        changed = state.show()
        assert changed != before or k == 1, k  # something was left behind to restore...
        undo = subprocess.run([str(VENV_BIN / "pagelab"), "state", "restore"], capture_output=True,
                              text=True, env=dict(os.environ), timeout=120)
        assert undo.returncode == 0, (k, undo.stderr)
        assert state.show() == before, k  # ...and restore put everything back
        again = subprocess.run([str(VENV_BIN / "pagelab"), "state", "restore"], capture_output=True,
                               text=True, env=dict(os.environ), timeout=60)
        assert again.returncode == 0 and "restored 0" in again.stdout


@check_crash
def test_sigterm_at_every_point_of_two_emulated_trials_is_restored(journal, disk_tmp):
    """SIGTERM (what Snakemake and make send) at every point of two trials on an emulated disk,
    the undos at each trial's end included: the run restores what it changed before it exits,
    and no loop device, FUSE mount or swap outlives it (a TERM at a trial boundary once left a
    loop device over a lazily unmounted FUSE file). A second TERM during that restore waits."""
    from conftest import build_native

    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse")
    build_native()
    before = state.show()
    term = {"PAGELAB_FAULT_SIGNAL": "TERM", "PAGELAB_FAULT_IN_RESTORE": "1"}
    clean = run_scenario(disk_tmp, None, "--emulated", **term)
    assert clean.returncode == 0, clean.stderr
    points = int(re.search(r"fault points (\d+)", clean.stdout).group(1))
    assert points >= 20, points  # 2 trials x (daemon, daemon_pid, loop, swap, knob) x 2, undos x 2
    for k in range(1, points + 1):
        out = run_scenario(disk_tmp, k, "--emulated", **term)
        assert out.returncode == 128 + signal.SIGTERM, (k, out.returncode, out.stderr[-2000:])
        assert state.show() == before, (k, state.show())
        assert not journal.exists(), k
    # Two TERMs: the second one arrives while the first one's restore runs.
    code = ("import time, os, signal; from pathlib import Path; from pagelab.system import state\n"
            "from pagelab.run.devices import emulated_swap\n"
            "orig = state._undo_loop\n"
            "def slow(e):\n"
            "    os.kill(os.getpid(), signal.SIGTERM); time.sleep(0.5); orig(e)\n"
            "state.UNDO['loop'] = slow\n"
            "with state.session() as st:\n"
            f"    emulated_swap(st, 'hdd5400-2008', Path({str(disk_tmp / 'dev2')!r}), 16 << 20)\n"
            "    print('up', flush=True)\n"
            "    time.sleep(60)\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    assert p.stdout.readline().strip() == "up"
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=60) == 128 + signal.SIGTERM
    assert state.show() == before
    assert not journal.exists()


def test_readback_mismatch_stops(journal):
    with state.session() as st:
        with pytest.raises(state.StateError, match="zram0: compressor 'nonesuch' not offered"):
            st.zram(16 << 20, "nonesuch")
        with pytest.raises(state.StateError, match="zswap.compressor: 'nonesuch' is not available"):
            st.set_knob("zswap.compressor", "nonesuch")
        with pytest.raises(state.StateError, match="unknown knob"):
            st.set_knob("vm.nonesuch", 1)
        with pytest.raises(state.StateError, match="cannot write"):
            st.set_knob("vm.page-cluster", -5)


def test_session_restores_on_exception(journal):
    before = state.show()
    with pytest.raises(RuntimeError):
        with state.session() as st:
            st.set_knob("vm.page-cluster", 1)
            assert state.show()["knobs"]["vm.page-cluster"] == "1"
            raise RuntimeError("trial blew up")
    assert state.show() == before


def test_session_restores_on_sigterm(journal, tmp_path):
    code = ("import time; from pagelab.system import state\n"
            "with state.session() as st:\n"
            "    st.set_knob('vm.swappiness', 7)\n"
            "    print('set', flush=True)\n"
            "    time.sleep(60)\n")
    before = state.show()
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                         env=dict(os.environ))
    assert p.stdout.readline().strip() == "set"
    assert state.show()["knobs"]["vm.swappiness"] == "7"
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=30)
    assert state.show() == before


# A SIGTERM whose handler runs inside a __del__: Python prints the handler's SystemExit there
# ("Exception ignored in ...") and carries on. Once, in `make test`, it landed in a dropped
# Popen's __del__ in a pagein run, which then ran all its trials and exited 0.
LOST_SIGTERM = """
import os, signal, sys, time
from pathlib import Path
from pagelab.experiments import harness
from pagelab.system import state

class Lost:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.5)  # the handler runs here, inside __del__

def run_trial(st, trial, scratch):
    print("trial", trial.trial_id, flush=True)
    Lost()
    return {"value": 1.0}

if sys.argv[1] == "session":
    with state.session() as st:
        st.set_knob("vm.swappiness", 7)
        Lost()
        print("block finished", flush=True)
else:
    out = Path(sys.argv[2])
    cfg = {"repetitions": {"n_min": 3, "n_max": 3, "ci_pct": 50}, "rng_seed": 1}
    harness.execute("toy", cfg, out, out / "scratch", [{"arm": "a"}], lambda c: c["arm"],
                    run_trial, lambda r: r["value"], ["value"], tools=[])
"""


@pytest.mark.parametrize("where", ["session", "harness"])
def test_a_sigterm_lost_inside_a_finaliser_still_stops_the_run(journal, tmp_path, where):
    """The session raises the lost SystemExit again when its block ends (exit 143, state
    restored), and the harness before the next trial: one trial runs, not three."""
    before = state.show()
    done = subprocess.run([sys.executable, "-c", LOST_SIGTERM, where, str(tmp_path / "out")],
                          capture_output=True, text=True, env=dict(os.environ), cwd=REPO, timeout=120)
    assert done.returncode == 128 + signal.SIGTERM, done.stdout + done.stderr[-2000:]
    assert "Exception ignored" in done.stderr  # the handler's SystemExit was indeed lost
    assert state.show() == before
    if where == "harness":
        assert done.stdout.count("trial ") == 1, done.stdout


def test_a_loop_device_still_open_is_detached_when_its_last_user_closes_it(journal, disk_tmp):
    """losetup -d on a device something still has open only marks it to detach on the last
    close: the restore waits for that close (here a process that keeps it open 1 s) instead of
    failing with "still attached"."""
    backing = disk_tmp / "loop-backing"
    backing.write_bytes(b"\0" * (4 << 20))
    before = state.show()
    with state.session() as st:
        dev = st.loop(backing, direct_io=False)
        holder = subprocess.Popen([sys.executable, "-c", f"import time; f = open('{dev}', 'rb'); "
                                   "print('open', flush=True); time.sleep(1)"], stdout=subprocess.PIPE, text=True)
        assert holder.stdout.readline().strip() == "open"
    holder.wait(timeout=30)
    assert state.show() == before


def test_scope_undoes_only_its_own_changes(journal):
    before = state.show()
    with state.session() as st:
        st.set_knob("vm.page-cluster", 1)
        with st.scope():
            st.set_knob("vm.swappiness", 11)
            st.set_knob("vm.page-cluster", 2)
            assert state.show()["knobs"]["vm.swappiness"] == "11"
        now = state.show()["knobs"]
        assert now["vm.swappiness"] == before["knobs"]["vm.swappiness"]
        assert now["vm.page-cluster"] == "1"
        assert [e["kind"] for e in st.journal.entries()] == ["run", "knob"]
    assert state.show() == before


HOLDER = ("import sys, time; from pagelab.system import state\n"
          "with state.session() as st:\n"
          "    st.set_knob('vm.swappiness', 13)\n"
          "    print('holding', flush=True)\n"
          "    time.sleep(float(sys.argv[1]))\n")


def holder_process(tmp_path, role, seconds=60):
    """A session of another journal holding the lock (its role: 'run' or 'test')."""
    env = {**os.environ, "PAGELAB_JOURNAL": str(tmp_path / f"{role}-journal.jsonl")}
    env.pop("PAGELAB_STATE_ROLE", None)
    if role == "test":
        env["PAGELAB_STATE_ROLE"] = "test"
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(seconds)], stdout=subprocess.PIPE, text=True, env=env)
    assert p.stdout.readline().strip() == "holding"
    return p


def test_one_owner_of_paging_state_whatever_its_journal(own_journal, tmp_path):
    """The lock is the machine's, not a journal's: a real run holding it (another journal) stops
    a test's session at once, with the run's pid and command, and `pagelab state restore` and
    `clear-orphans` of another journal refuse (exit 1) without touching the run's state."""
    before = state.show()
    p = holder_process(tmp_path, "run")
    try:
        assert state.holder().pid == p.pid and state.holder().role == "run"
        t0 = time.monotonic()
        with pytest.raises(state.StateBusy, match=f"a pagelab run \\(pid {p.pid}: .*python.*\\) holds the paging "
                                                  "state lock /run/pagelab/state.lock; a test does not change"):
            with state.session():
                raise AssertionError("a test's session opened beside a real run")
        assert time.monotonic() - t0 < 5  # a test does not wait for a real run: it skips
        for action in ("restore", "clear-orphans", "recover"):
            done = subprocess.run([str(VENV_BIN / "pagelab"), "state", action], capture_output=True, text=True,
                                  env=dict(os.environ), timeout=60)
            assert done.returncode == 1 and f"pid {p.pid}" in done.stderr, (action, done.stderr)
        assert state.show()["knobs"]["vm.swappiness"] == "13"  # the run's change is still there
    finally:
        p.terminate()
        p.wait(timeout=30)
    assert state.show() == before
    with state.exclusive(wait=False):
        pass  # free again once the holder is gone


def test_a_real_run_waits_for_a_test_and_refuses_naming_it(own_journal, tmp_path):
    """A test holding the lock: a real run's session waits for it (and says for whom), then
    goes on; `wait=False` refuses with the test's pid and command."""
    p = holder_process(tmp_path, "test", seconds=2)
    try:
        code = ("import time; from pagelab.system import state\n"
                "t0 = time.monotonic()\n"
                "with state.session() as st:\n"
                "    print(f'in after {time.monotonic() - t0:.1f}', flush=True)\n")
        env = {**os.environ, "PAGELAB_JOURNAL": str(tmp_path / "run2.jsonl")}
        env.pop("PAGELAB_STATE_ROLE")
        refused = subprocess.run([sys.executable, "-c", "from pagelab.system import state\n"
                                  "with state.exclusive(wait=False): pass"], capture_output=True, text=True,
                                 env=env, timeout=30)
        assert refused.returncode == 1 and f"a pagelab test (pid {p.pid}: " in refused.stderr, refused.stderr
        waited = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
        assert waited.returncode == 0, waited.stderr
        assert f"pagelab: waiting: a pagelab test (pid {p.pid}: " in waited.stderr
        assert float(waited.stdout.split()[-1]) >= 0.5  # it went in only once the test was done
        assert p.wait(timeout=30) == 0
    finally:
        p.kill()
        p.wait()


def test_a_run_that_calls_itself_runs_under_its_own_lock(own_journal, tmp_path):
    """No deadlock in recursion (a `pagelab trial` under Snakemake under a make that holds the
    lock): a descendant of the holder, through a shell, goes on under its lock, changes state,
    and is restored; a process that is not a descendant does not."""
    before = state.show()
    code = ("import os, subprocess, sys; from pagelab.system import state\n"
            "inner = ('from pagelab.system import state\\n'\n"
            "         'with state.session() as st:\\n'\n"
            "         '    st.set_knob(\"vm.page-cluster\", 1); print(state.holder().pid, flush=True)')\n"
            "with state.session() as st:\n"
            "    st.set_knob('vm.swappiness', 17)\n"
            "    env = {**os.environ, 'PAGELAB_JOURNAL': sys.argv[1]}\n"
            "    out = subprocess.run(['sh', '-c', f'{sys.executable} -c \"$0\"', inner], env=env,\n"
            "                         capture_output=True, text=True, timeout=60)\n"
            "    print(out.returncode, out.stdout.strip(), os.getpid(), os.environ[state.OWNER_ENV].split(':')[0])\n"
            "    print(out.stderr[-500:])\n")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "inner.jsonl")], capture_output=True,
                          text=True, env=dict(os.environ), timeout=120)
    assert done.returncode == 0, done.stderr
    rc, holder_pid, pid, owner = done.stdout.split("\n")[0].split()
    assert rc == "0" and holder_pid == pid == owner, done.stdout  # the grandchild ran under its ancestor's lock
    assert state.show() == before


@pytest.mark.parametrize("sig", ["TERM", "KILL"])
@pytest.mark.parametrize("name,arms", [("pagein", None), ("readyboost", ["hdd"]), ("crystalmark", ["hdd"])])
def test_a_stop_in_a_real_trial_leaves_no_work_directory(journal, disk_tmp, tmp_path, name, arms, sig):
    """`pagelab trial` (what the pipeline runs) stopped while a trial holds its emulated disk
    (mounted in the trial's work directory): after SIGTERM the run restores by itself, after
    SIGKILL `pagelab state recover` (what make runs first) does; either way the state is as
    before and the work directory, with the disk's backing file, is gone (readyboost's once
    stayed, 366 MB; kill -9 of 20 trials once left 815 MB)."""
    import json
    import time

    from conftest import build_native
    from pagelab.system import config

    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse")
    build_native()
    cfg = config.load(overrides={"profile": "quick"})[name]
    if arms:
        cfg["arms"] = arms
    scratch = disk_tmp / "scratch"
    (tmp_path / "config.json").write_text(json.dumps({**cfg, "scratch_dir": str(scratch)}))
    before = state.show()
    p = subprocess.Popen([str(VENV_BIN / "pagelab"), "trial", name, "--config", str(tmp_path / "config.json"),
                          "--outdir", str(tmp_path / "out")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=dict(os.environ))
    prefix = str(scratch / f"{name}-")
    deadline = time.monotonic() + 120
    while not any(m.startswith(prefix) for m in state.mounts()):  # a trial's disk is up
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()[1][-2000:]
        time.sleep(0.02)
    work = [d.name for d in scratch.iterdir() if d.name.startswith(f"{name}-")]
    assert work  # the work directory exists while the trial runs
    p.send_signal(getattr(signal, "SIG" + sig))
    _, err = p.communicate(timeout=120)
    if sig == "TERM":
        assert p.returncode == 128 + signal.SIGTERM, err[-2000:]
    else:
        assert p.returncode == -signal.SIGKILL
        assert journal.exists() and any(scratch.iterdir())  # left for the next run
        rec = subprocess.run([str(VENV_BIN / "pagelab"), "state", "recover"], capture_output=True, text=True,
                             env=dict(os.environ), timeout=120)
        assert rec.returncode == 0 and "restored" in rec.stdout, rec.stdout + rec.stderr
    assert state.show() == before
    assert not journal.exists()
    assert list(scratch.iterdir()) == [], work


def _hog_barriers() -> dict[int, str]:
    """The running native hogs that wait at a barrier: pid -> the barrier file's path."""
    hog = str(REPO / "native" / "build" / "hog")
    out = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            argv = (proc / "cmdline").read_bytes().decode().split("\0")
        except OSError:
            continue
        if argv[0] == hog and "--barrier" in argv:
            out[int(proc.name)] = argv[argv.index("--barrier") + 1]
    return out


def test_a_kill_while_the_hogs_run_leaves_nothing_of_theirs(journal, disk_tmp, tmp_path):
    """readyboost's trial (two hogs that hold each round's memory until both have written it, at a
    barrier file) killed with SIGKILL while its hogs run: after `pagelab state recover` no hog
    runs and nothing of the run is left, the barrier's file and its directory included (made in
    the trial's work directory, which the journal's restore removes)."""
    import json

    from conftest import build_native
    from pagelab.system import config

    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse")
    build_native()
    cfg = {**config.load(overrides={"profile": "quick"})["readyboost"], "arms": ["hdd"]}
    scratch = disk_tmp / "scratch"
    (tmp_path / "config.json").write_text(json.dumps({**cfg, "scratch_dir": str(scratch)}))
    before, hogs_before = state.show(), _hog_barriers()
    p = subprocess.Popen([str(VENV_BIN / "pagelab"), "trial", "readyboost", "--config", str(tmp_path / "config.json"),
                          "--outdir", str(tmp_path / "out")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=dict(os.environ))
    deadline = time.monotonic() + 120
    while not (hogs := {k: v for k, v in _hog_barriers().items() if k not in hogs_before}):
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()[1][-2000:]
        time.sleep(0.01)
    barrier = Path(next(iter(hogs.values())))
    p.kill()
    p.communicate(timeout=60)
    rec = subprocess.run([str(VENV_BIN / "pagelab"), "state", "recover"], capture_output=True, text=True,
                         env=dict(os.environ), timeout=120)
    assert rec.returncode == 0 and "restored" in rec.stdout, rec.stdout + rec.stderr
    assert not set(_hog_barriers()) & set(hogs)
    assert not barrier.exists() and not barrier.parent.exists(), barrier
    assert state.show() == before and not journal.exists()
    assert list(scratch.iterdir()) == []


def test_a_cpu_latency_limit_holds_while_open_and_the_kernel_drops_it_even_on_kill_9(journal):
    """cpu_latency_limit(0) (make bench's "idle CPUs poll" case): the limit in force is 0 while
    it is held, and an idle CPU then polls instead of halting (where cpuidle has a POLL state);
    it is gone after the block and after its holder's kill -9, and nothing is journaled."""
    if not state.CPU_LATENCY_QOS.exists():
        pytest.skip("no /dev/cpu_dma_latency (a kernel without PM QoS)")
    before = state.cpu_latency_limit_now()
    assert before is not None and before > 0
    cpu = max(os.sched_getaffinity(0))   # the CPU pinned_to_one_cpu pins to
    idle = Path(f"/sys/devices/system/cpu/cpu{cpu}/cpuidle")
    states = sorted(idle.glob("state*"))

    def entries() -> dict[str, int]:
        return {(s / "name").read_text().strip(): int((s / "usage").read_text()) for s in states}

    with state.cpu_latency_limit(0):
        assert state.cpu_latency_limit_now() == 0
        if states and (states[0] / "name").read_text().strip() == "POLL":
            with pinned_to_one_cpu():
                start = entries()
                # this CPU goes idle while the thread sleeps, unless another program has it:
                # sleep until it has gone idle ten times (at most 2 s), not a fixed number of times
                for _ in range(400):
                    time.sleep(0.005)
                    grew = {name: n - start[name] for name, n in entries().items()}
                    if grew["POLL"] >= 10 or sum(grew.values()) >= 20:
                        break
            assert grew["POLL"] >= 10 and grew["POLL"] >= 0.9 * sum(grew.values()), grew
    assert state.cpu_latency_limit_now() == before
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time; from pagelab.system import state\n"
         "with state.cpu_latency_limit(0):\n    print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    try:
        assert holder.stdout.readline().strip() == "held"
        assert state.cpu_latency_limit_now() == 0
    finally:
        holder.kill()
        holder.wait(timeout=15)
    assert state.cpu_latency_limit_now() == before
    assert not journal.exists() or not journal.read_text().strip()


def test_a_daemon_is_waited_for_until_ready_and_one_that_dies_or_stalls_is_named(journal, tmp_path):
    """daemon() returns once its ready file exists; a daemon that exits first is reported with
    its exit status and stderr, one that never gets ready with the timeout; the undo ends each."""
    before = state.show()
    ready = tmp_path / "ready"
    with state.session() as st:
        proc = st.daemon([sys.executable, "-c", f"import pathlib, time; time.sleep(0.3); "
                          f"pathlib.Path('{ready}').touch(); time.sleep(60)"], ready=ready)
        assert ready.exists() and proc.poll() is None
        with pytest.raises(state.StateError, match=r"exited 3 before it was ready: boom"):
            st.daemon([sys.executable, "-c", "import sys; sys.stderr.write('boom'); sys.exit(3)"],
                      ready=tmp_path / "never")
        with pytest.raises(state.StateError, match=r"not ready after 1 s"):
            st.daemon([sys.executable, "-c", "import time; time.sleep(60)"], ready=tmp_path / "never", timeout=1)
    assert proc.poll() is not None
    assert state.show() == before


def _simdisk(workdir, size=16 << 20):
    """The emulator's mount command and its ready file, for a mount made outside the journal."""
    from pagelab.run.devices import profiles_dir
    from pagelab.run.tools import simdisk_mount_cmd

    (workdir / "mnt").mkdir(parents=True)
    ready = workdir / "ready.json"
    return simdisk_mount_cmd(workdir / "mnt", "hdd5400-2008", profiles_dir(), workdir / "backing.img", ready,
                             size=size), ready


def _wait_for(path, seconds=20):
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.01)


def test_a_loop_device_whose_fuse_file_system_is_gone_is_still_detached(journal, disk_tmp, native_build):
    """The leak seen after a SIGTERM in a pagein trial: a loop device over the emulator's file
    whose mount was lazily detached and whose daemon is gone. Once the attribute cache has
    expired the kernel can no longer say which file backs it (LOOP_GET_STATUS64 fails, the path
    reads "/disk"): the journal's line alone (device, its number, the attach's disk sequence
    number) still identifies it, and restore detaches it."""
    before = state.show()
    with state.session() as st:
        disk = devices.emulated_disk(st, "hdd5400-2008", disk_tmp / "dev", 16 << 20)
        loop = st.loop(disk.disk, direct_io=True)
        subprocess.run(["umount", "-l", str(disk.mountpoint)], check=True)
        os.kill(disk.pid, signal.SIGKILL)
        time.sleep(1.5)  # past the emulator's attribute timeout (1 s)
        assert state.loops_backed_by()[0] == str(loop)
        assert Path(f"/sys/block/{loop.name}/loop/backing_file").read_text().strip() == "/disk"
        assert state.loop_backing_identity(str(loop)) is None  # the kernel cannot tell any more
        assert state.orphans() == []  # the journal explains it
    assert state.show() == before


def test_a_signal_while_the_emulator_starts_waits_until_its_pid_is_journaled(journal, disk_tmp, native_build):
    """SIGTERM right after the emulator's process was started, before its pid is journaled: the
    signal waits until the pid's line is written, so the restore ends the daemon; otherwise it
    would mount after the restore and stay."""
    before = state.show()
    code = ("import os, signal, subprocess, sys\n"
            "from pathlib import Path\n"
            "from pagelab.run import devices; from pagelab.system import state\n"
            "real = subprocess.Popen\n"
            "class Popen(real):\n"
            "    def __init__(self, *a, **k):\n"
            "        super().__init__(*a, **k)\n"
            "        os.kill(os.getpid(), signal.SIGTERM)\n"
            "subprocess.Popen = Popen\n"
            "with state.session() as st:\n"
            "    devices.emulated_disk(st, 'hdd5400-2008', Path(sys.argv[1]), 16 << 20)\n")
    out = subprocess.run([sys.executable, "-c", code, str(disk_tmp / "dev")], capture_output=True, text=True,
                         env=dict(os.environ), timeout=60)
    assert out.returncode == 128 + signal.SIGTERM, out.stderr[-2000:]
    time.sleep(1)  # a daemon left running would be mounted by now
    assert state.show() == before
    assert not any(p.name.isdigit() and _cmdline(p).startswith(str(native_build / "simdisk"))
                   for p in Path("/proc").iterdir())


def _cmdline(proc):
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_an_undo_that_cannot_finish_names_what_holds_it(journal, disk_tmp, native_build, monkeypatch):
    """Restore checks each undo: a loop device a process keeps open, and a mount a process
    works in, are reported with that process (pid and name), and the journal keeps them for
    another try, which succeeds once the holder is gone."""
    monkeypatch.setattr(state.undo, "LOOP_DETACH_WAIT_S", 0.5)
    monkeypatch.setattr(state.undo, "UNMOUNT_WAIT_S", 0.5)
    backing = disk_tmp / "loop-backing"
    backing.write_bytes(b"\0" * (4 << 20))
    before = state.show()
    st = state.State()
    dev = st.loop(backing, direct_io=False)
    disk = devices.emulated_disk(st, "zero", disk_tmp / "dev", 16 << 20)
    holders = [subprocess.Popen([sys.executable, "-c", f"import time; f = open('{dev}', 'rb'); "
                                 "print('open', flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True),
               subprocess.Popen(["sleep", "60"], cwd=disk.mountpoint, stdout=subprocess.PIPE, text=True)]
    assert holders[0].stdout.readline().strip() == "open"
    try:
        with pytest.raises(state.StateError) as failed:
            state.restore()
        msg = str(failed.value)
        assert f"{dev} (backing {backing}) is still attached" in msg and f"pid {holders[0].pid} (python" in msg, msg
        assert f"{disk.mountpoint} (fuse.simdisk) is still mounted" in msg, msg
        assert f"pid {holders[1].pid} (sleep: cwd)" in msg, msg
        assert [e["kind"] for e in state.Journal().entries()][-1] == "mount"  # kept for another try
    finally:
        for h in holders:
            h.kill()
            h.wait()
    state.restore()
    assert state.show() == before
    assert not journal.exists()


def test_state_no_journal_explains_is_reported_and_cleared(journal, disk_tmp, native_build, tmp_path):
    """A loop device over a scratch file, a swap file under scratch, an emulator's mount with a
    loop device over its file, and a pagelab cgroup, all made outside the journal: `pagelab
    state recover` names each and exits 1, `make` (run_pipeline.sh) refuses to start and names
    the command, and `pagelab state clear-orphans` clears them with the journal's undos."""
    from conftest import copy_repo

    before = state.show()
    backing = disk_tmp / "orphan.img"
    backing.write_bytes(b"\0" * (4 << 20))
    plain = subprocess.run(["losetup", "--find", "--show", str(backing)], capture_output=True, text=True,
                           check=True).stdout.strip()
    swapfile = disk_tmp / "orphan.swap"
    with open(swapfile, "wb") as fh:
        os.posix_fallocate(fh.fileno(), 0, 16 << 20)
    os.chmod(swapfile, 0o600)
    subprocess.run(["mkswap", str(swapfile)], check=True, capture_output=True)
    subprocess.run(["swapon", str(swapfile)], check=True)
    cmd, ready = _simdisk(disk_tmp / "emu")
    daemon = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for(ready)
    on_fuse = subprocess.run(["losetup", "--find", "--show", str(disk_tmp / "emu" / "mnt" / "disk")],
                             capture_output=True, text=True, check=True).stdout.strip()
    group = state.Cgroup("pagelab-orphantest").path("memory")
    group.mkdir()
    try:
        found = "\n".join(o.what for o in state.orphans())
        assert f"loop device {plain} (backing {backing}): its backing file lies under scratch" in found
        assert f"loop device {on_fuse} (backing {disk_tmp / 'emu' / 'mnt' / 'disk'}): its backing file is on the " \
               "emulator's FUSE file system" in found
        assert f"swap {swapfile}: a swap file under scratch" in found
        assert f"FUSE mount of the emulator on {disk_tmp / 'emu' / 'mnt'}" in found
        assert f"cgroup {group}" in found
        rec = subprocess.run([str(VENV_BIN / "pagelab"), "state", "recover"], capture_output=True, text=True,
                             env=dict(os.environ), timeout=60)
        assert rec.returncode == 1 and "pagelab state clear-orphans" in rec.stderr and str(plain) in rec.stderr
        repo = copy_repo(tmp_path / "repo")
        env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}"}
        make = subprocess.run(["bash", "workflow/scripts/run_pipeline.sh", "-n", "results/paper.pdf"], cwd=repo,
                              capture_output=True, text=True, env=env, timeout=120)
        assert make.returncode == 1 and "pagelab state clear-orphans" in make.stderr, make.stderr[-2000:]
        assert not (repo / ".snakemake").exists()  # Snakemake never started
        clear = subprocess.run([str(VENV_BIN / "pagelab"), "state", "clear-orphans"], capture_output=True,
                               text=True, env=dict(os.environ), timeout=120)
        assert clear.returncode == 0 and "cleared 5" in clear.stdout, clear.stdout + clear.stderr
        assert daemon.wait(timeout=30) is not None  # the emulator ends with its mount
    finally:
        for dev in (plain, on_fuse):
            subprocess.run(["losetup", "-d", dev], capture_output=True)
        subprocess.run(["swapoff", str(swapfile)], capture_output=True)
        subprocess.run(["umount", str(disk_tmp / "emu" / "mnt")], capture_output=True)
        daemon.kill()
        if group.exists():
            group.rmdir()
    assert state.orphans() == []
    assert state.show() == before


def test_programs_a_killed_run_started_are_ended_by_the_recovery(journal):
    """A run's programs outlive its kill -9 (a test's iobench, a victim waiting for its go):
    the run's process group (State.run_group) lets the recovery find and end them."""
    code = ("import subprocess, time; from pagelab.system import state\n"
            "with state.session() as st:\n"
            "    child = subprocess.Popen(['sleep', '300'])\n"
            "    print(child.pid, flush=True)\n"
            "    time.sleep(60)\n")
    before = state.show()
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    child = int(p.stdout.readline())
    p.kill()
    p.wait()
    assert Path(f"/proc/{child}").exists()  # outlived its run
    rec = subprocess.run([str(VENV_BIN / "pagelab"), "state", "recover"], capture_output=True, text=True,
                         env=dict(os.environ), timeout=60)
    assert rec.returncode == 0 and "run:" in rec.stdout, rec.stdout + rec.stderr
    deadline = time.monotonic() + 5
    while Path(f"/proc/{child}").exists() and state._proc_state(child) != "Z":
        assert time.monotonic() < deadline, f"pid {child} still runs"
        time.sleep(0.01)
    assert state.show() == before


OWNER = ("import sys, time; from pathlib import Path\n"
         "from pagelab.run import devices; from pagelab.system import state\n"
         "with state.session() as st:\n"
         "    cg = st.cgroup('faults', memory_limit=64 << 20)\n"
         "    disk = devices.emulated_swap(st, 'zero', Path(sys.argv[1]), 16 << 20)\n"
         "    print(cg.path('memory'), disk.mountpoint, disk.loop, flush=True)\n"
         "    time.sleep(120)\n")


def test_what_a_live_owner_holds_is_never_an_orphan(own_journal, disk_tmp, native_build, tmp_path):
    """Another owner's cgroup, emulator mount, loop device and swap (its own journal, alive):
    they carry its pid in their names (pagelab-<pid>-faults, mnt-<pid>) and its journal is
    registered, so `orphans` of this journal names none of them, also with the registration
    gone; `clear-orphans` refuses while the owner holds the lock. Once it is killed they are
    orphans, and its journal's restore clears them."""
    before = state.show()
    other = tmp_path / "other.jsonl"
    p = subprocess.Popen([sys.executable, "-c", OWNER, str(disk_tmp / "dev")], stdout=subprocess.PIPE, text=True,
                         env={**os.environ, "PAGELAB_JOURNAL": str(other)})
    try:
        group, mnt, loop = p.stdout.readline().split()
        assert Path(group).name == f"pagelab-{p.pid}-faults" and Path(mnt).name == f"mnt-{p.pid}"
        assert [o["pid"] for o in state.live_owners()] == [p.pid]
        assert state.orphans() == []
        (state.lock.OWNERS_DIR / f"{p.pid}.json").unlink()      # the names alone still tell
        assert state.orphans() == []
        clear = subprocess.run([str(VENV_BIN / "pagelab"), "state", "clear-orphans"], capture_output=True,
                               text=True, env=dict(os.environ), timeout=60)
        assert clear.returncode == 1 and f"(pid {p.pid}: " in clear.stderr, clear.stderr
        assert group in state.cgroups() and mnt in state.mounts() and loop in state.active_swaps()
    finally:
        p.kill()
        p.wait()
    found = "\n".join(o.what for o in state.orphans())
    assert f"cgroup {group}" in found and f"FUSE mount of the emulator on {mnt}" in found, found
    assert f"loop device {loop}" in found, found
    undo = subprocess.run([str(VENV_BIN / "pagelab"), "state", "restore"], capture_output=True, text=True,
                          env={**os.environ, "PAGELAB_JOURNAL": str(other)}, timeout=120)
    assert undo.returncode == 0, undo.stderr
    assert state.orphans() == [] and state.show() == before


def test_the_state_tests_run_beside_a_real_run_without_touching_it(own_journal, disk_tmp, tmp_path, native_build):
    """A real `pagelab trial pagein` (a run, its own journal) in progress; beside it this whole
    file runs (every test skips, naming the run: clear-orphans among them), `pagelab state
    clear-orphans` refuses naming it, by a test or by hand, and `orphans` names nothing of
    it. The run finishes with every trial valid and the machine as before."""
    import json

    from pagelab.system import config

    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse")
    # the random re-touch at page-cluster 0 (PG1's), at half quick's working set and headroom:
    # 512 page-ins of one seek each, about 20 s for the run's five trials, all valid in 25 of
    # 25 trials here (the pytest beside it takes about 2 s)
    cfg = {**config.load(overrides={"profile": "quick"})["pagein"], "retouch_orders": ["random"],
           "page_clusters": [0], "working_set": "2M", "headroom": "2M", "scratch_dir": str(disk_tmp / "scratch")}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    before = state.show()
    env = {**os.environ, "PAGELAB_JOURNAL": str(tmp_path / "run.jsonl")}
    env.pop("PAGELAB_STATE_ROLE")
    run = subprocess.Popen([str(VENV_BIN / "pagelab"), "trial", "pagein", "--config", str(tmp_path / "config.json"),
                            "--output", str(tmp_path / "out")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, env=env)
    deadline = time.monotonic() + 60
    while not any(f"mnt-{run.pid}" in m for m in state.mounts()):    # a trial's disk is up
        assert run.poll() is None and time.monotonic() < deadline, run.communicate()[1][-2000:]
        time.sleep(0.02)
    assert state.holder().pid == run.pid and state.holder().role == "run"
    beside = subprocess.run([str(VENV_BIN / "pytest"), "-v", "-rs", "-p", "no:cacheprovider", str(Path(__file__)),
                             "-k", "not beside_a_real_run and not every_point"],
                            capture_output=True, text=True, cwd=REPO, env={**os.environ, "COLUMNS": "2000"},
                            timeout=300)
    assert beside.returncode == 0, beside.stdout[-3000:]
    assert re.search(r"=+ \d+ skipped, \d+ deselected in", beside.stdout), beside.stdout[-3000:]  # none ran
    skipped = [ln for ln in beside.stdout.splitlines() if "::test_" in ln and " SKIPPED " in ln]
    assert len(skipped) >= 20 and all(f"(pid {run.pid}: " in ln for ln in skipped), beside.stdout[-3000:]
    assert any("test_state_no_journal_explains" in ln for ln in skipped)
    for role in ("test", "run"):
        e = {**os.environ, "PAGELAB_STATE_ROLE": role}
        clear = subprocess.run([str(VENV_BIN / "pagelab"), "state", "clear-orphans"], capture_output=True,
                               text=True, env=e, timeout=60)
        assert clear.returncode == 1 and f"(pid {run.pid}: " in clear.stderr, (role, clear.stderr)
    assert state.orphans() == []
    assert run.poll() is None, "the run ended before the tests beside it: make it longer"
    _, err = run.communicate(timeout=300)
    assert run.returncode == 0, err[-3000:]
    trials = list(csv.DictReader(open(tmp_path / "out" / "trials.csv")))
    assert all(t["status"] == "ok" for t in trials), trials
    valid = [t for t in trials if t["valid"] == "True"]
    assert len(valid) == cfg["repetitions"]["n_min"], trials  # its trials, counted
    assert all("failed" not in t["invalid_reason"] for t in trials), [t["invalid_reason"] for t in trials]
    assert state.show() == before
    assert not (tmp_path / "run.jsonl").exists()
