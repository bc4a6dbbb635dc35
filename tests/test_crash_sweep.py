"""The signal sweep: `pagelab trial` (what the pipeline runs) stopped with SIGTERM and with
SIGKILL at many points of a trial, for every experiment that changes system state, and after
each stop the machine is as it was: `pagelab state show`, and independently of it `losetup`,
/proc/swaps, the FUSE mounts, the pagelab-* cgroups, no process of the native tools left
running, no new pagelab-* entry in the system's temporary directory, no journal, nothing the
state check calls an orphan, and an empty scratch directory.
After SIGTERM the run restores by itself; after SIGKILL `pagelab state recover` (what `make`
runs first) does.

Where to stop comes from one observed run per experiment: the journal's length over time
(sampled every 2 ms) marks the phases of its first trial that changes state: start (process
start up to that trial's first change: imports, the session's start, preparation, trials that
change nothing), setup (its changes being made), measure (all made), teardown (being undone)
and between (undone, up to the next trial's first change). A stop is placed at a fraction of a
phase's observed length after the event that opens it in the run being stopped, and the phase
the journal was in when the signal left is recorded beside it. Between lasts a few milliseconds
in every experiment, less than a stop from outside can aim at, so the run stops itself there:
the journal's fault point PAGELAB_FAULT_AT=scope-end:K sends the signal as the trial's last
scope has undone its changes and left the run's own K lines.

The whole sweep (`make check-crash`, PAGELAB_CHECK_CRASH=1) makes 90 stops; `make test` runs
`test_representative_stops`: four of the fastest (pagein, a SIGTERM and a SIGKILL while its
emulated swap is being set up and while it is measured). `make check-crash` also runs
tests/test_state.py's SIGTERM at every change point of two emulated trials (about 40 s).

Both hold the machine-wide state lock (the `state_lock` fixture) for the whole sweep: the runs
they stop and the `pagelab state recover` after each stop are their children and run under it,
and while a real run holds the lock they skip, naming it, before any run starts."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pytest

from conftest import REPO, VENV_BIN, build_native, check_crash
from pagelab.system import config, state
from pagelab.system.state.journal import TRIAL_PHASES

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root to change paging state"),
    pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="no /dev/fuse"),
]

EXPERIMENTS = ("crystalmark", "pagein", "readyboost", "standby", "compression")
PHASES = TRIAL_PHASES
FRACTIONS = {"start": (0.3, 0.8), "setup": (0.3, 0.7), "measure": (0.2, 0.45, 0.7), "teardown": (0.3,),
             "between": (0.0,)}  # the run signals itself (PAGELAB_FAULT_AT=scope-end:K)
SIGNALS = ("TERM", "KILL")
POLL_S = 0.002
RUN_LINES = 2  # the journal lines a run makes before its trials: its process group, its scratch files
# The sweep's settings over quick's (the explicit stops run quick's own). A stop aims at a
# fraction of a phase, so a phase's length adds only time: these shorten the two longest
# (crystalmark's three sets of each test, on its own-disk arms in start and its emulated arm in
# measure; pagein's random re-touch, 1024 pages one seek at a time) and keep every arm, step and
# change of state each experiment's trials make.
SWEEP_SETTINGS = {"crystalmark": {"sets": 1}, "pagein": {"retouch_orders": ["seq"]}}
NATIVE = REPO / "native" / "build"


def _journal_len(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


class Sweep:
    """One scratch area (journal, scratch directory, configs, outputs) for a series of stops."""

    def __init__(self, base: Path, settings: dict[str, dict] | None = None):
        self.base = base
        self.settings = settings or {}  # per experiment, over quick's configuration
        self.journal = base / "journal.jsonl"
        self.scratch = base / "scratch"
        self.env = {**os.environ, "PAGELAB_JOURNAL": str(self.journal), "PATH": f"{VENV_BIN}:{os.environ['PATH']}"}
        self.env.pop("PAGELAB_FAULT_AT", None)

    def config(self, name: str) -> Path:
        path = self.base / f"{name}.json"
        if not path.exists():
            cfg = config.load(overrides={"profile": "quick"})[name]
            path.write_text(json.dumps({**cfg, **self.settings.get(name, {}), "scratch_dir": str(self.scratch)}))
        return path

    def start(self, name: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        out = self.base / "out"
        shutil.rmtree(out, ignore_errors=True)  # a fresh run each time: the same first trials
        return subprocess.Popen([str(VENV_BIN / "pagelab"), "trial", name, "--config", str(self.config(name)),
                                 "--outdir", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, env={**self.env, **(env or {})}, cwd=REPO)


@dataclass
class Timeline:
    """The journal's length over one run: where its first trial that changes state begins,
    is set up, measures, is torn down, and where the next one begins (seconds from the start)."""
    base: int            # entries before that trial (the run's own: its scratch files)
    top: int             # entries while it measures
    rise: float          # its first change
    full: float          # its last change
    fall: float          # its first undo
    down: float          # back at base
    next_rise: float     # the next trial's first change

    def length(self, phase: str) -> float:
        return {"start": self.rise, "setup": self.full - self.rise, "measure": self.fall - self.full,
                "teardown": self.down - self.fall, "between": self.next_rise - self.down}[phase]


def observe(sweep: Sweep, name: str, limit_s: float = 120.0) -> Timeline:
    """Run the experiment until its second trial that changes state has begun (then SIGTERM),
    sampling the journal's length."""
    t0 = time.monotonic()
    p = sweep.start(name)
    samples: list[tuple[float, int]] = []
    try:
        while time.monotonic() - t0 < limit_s and p.poll() is None:
            samples.append((time.monotonic() - t0, _journal_len(sweep.journal)))
            tl = _timeline(samples)
            if tl is not None:
                return tl
            time.sleep(POLL_S)
        raise AssertionError(f"{name}: no two trials that change state within {limit_s:.0f} s: "
                             f"{samples[-1:]} {p.poll()} {(p.stderr.read() if p.poll() is not None else '')[-2000:]}")
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
        p.wait(timeout=120)


def _timeline(samples: list[tuple[float, int]]) -> Timeline | None:
    """The phases, once the samples reach the next trial's first change. The run's own lines
    (`State.run_group`, `State.scratch`) come first; every trial's changes come above them."""
    base = RUN_LINES

    def first(since: int, cond: Callable[[int], bool]) -> int | None:
        return next((i for i in range(since, len(samples)) if cond(samples[i][1])), None)

    rise = first(0, lambda n: n > base)
    if rise is None:
        return None
    top = full = rise
    fall = None
    for i in range(rise + 1, len(samples)):
        if samples[i][1] > samples[top][1]:
            top = full = i
        elif samples[i][1] < samples[top][1]:
            fall = i
            break
    down = first(fall, lambda n: n <= base) if fall is not None else None
    next_rise = first(down, lambda n: n > base) if down is not None else None
    if next_rise is None:
        return None
    t = [x[0] for x in samples]
    return Timeline(base, samples[top][1], t[rise], t[full], t[fall], t[down], t[next_rise])


def machine() -> dict[str, object]:
    """The state as `pagelab state show` reports it, and beside it the kernel's own views."""
    def fuse_mounts() -> list[str]:
        return sorted(ln.split(" - ")[0].split()[4] + " " + ln.split(" - ")[1].split()[0]
                      for ln in Path("/proc/self/mountinfo").read_text().splitlines() if " - fuse" in ln)

    procs = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if os.readlink(proc / "exe").startswith(str(NATIVE) + "/"):
                procs.append(f"{proc.name} {(proc / 'comm').read_text().strip()}")
        except OSError:
            continue
    return {
        "show": state.show(),
        "losetup": subprocess.run(["losetup", "-l", "-n"], capture_output=True, text=True).stdout,
        "proc_swaps": Path("/proc/swaps").read_text(),
        "fuse_mounts": fuse_mounts(),
        "cgroups": sorted(str(p) for p in Path("/sys/fs/cgroup").glob("*/pagelab-*")),
        "native_processes": sorted(procs),
        # what a run makes in the system's temporary directory is its own to remove
        "temporary_files": sorted(p.name for p in Path(tempfile.gettempdir()).glob("pagelab-*")),
    }


ANCHORS = {"start": "start", "setup": "rise", "measure": "top", "teardown": "fall", "between": "down"}


@dataclass
class Stop:
    experiment: str
    phase: str            # where it is meant to land
    signal: str
    delay_s: float        # after the event that opens the phase (ANCHORS)
    landed: str = ""      # the phase the journal was in when the signal left
    returncode: int | None = None
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)


class Watch:
    """The journal of the run being stopped, followed as it grows and shrinks: which events
    have happened (the anchors) and which phase it is in."""

    def __init__(self, journal: Path, base: int, top: int | None):
        self.journal, self.base, self.top = journal, base, top
        self.events: dict[str, float] = {}
        self.n = self.peak = 0

    def poll(self, now: float) -> None:
        n = _journal_len(self.journal)
        if n > self.base and "rise" not in self.events:
            self.events["rise"] = now
        if "rise" in self.events and self.top is not None and n >= self.top:
            self.events.setdefault("top", now)
        if n < self.peak and "rise" in self.events:
            self.events.setdefault("fall", now)
        if "fall" in self.events and n <= self.base:
            self.events.setdefault("down", now)
        self.n, self.peak = n, max(self.peak, n)

    def phase(self) -> str:
        if "down" in self.events:
            return "between" if self.n <= self.base else "next setup"
        for event, phase in (("fall", "teardown"), ("top", "measure"), ("rise", "setup")):
            if event in self.events:
                return phase
        return "start"


def stop_once(sweep: Sweep, stop: Stop, base: int, top: int | None, before: dict[str, object]) -> Stop:
    """Start the run, signal it at the stop's point, recover (after SIGKILL: what make runs
    first), and compare the machine with `before`."""
    t0 = time.monotonic()
    itself = stop.phase == "between" and top is not None
    p = sweep.start(stop.experiment, {"PAGELAB_FAULT_AT": f"scope-end:{base}", "PAGELAB_FAULT_SIGNAL": stop.signal}
                    if itself else None)
    watch = Watch(sweep.journal, base, top)
    watch.events["start"] = t0
    anchor = ANCHORS[stop.phase]
    while True:
        now = time.monotonic()
        watch.poll(now)
        if itself and p.poll() is not None:
            watch.poll(now)  # where the journal was when the run signalled itself
            break
        if not itself and anchor in watch.events and now - watch.events[anchor] >= stop.delay_s:
            break
        if (not itself and p.poll() is not None) or now - t0 > 300:
            stop.problems.append(f"the run ended ({p.poll()}) before the stop point")
            break
        time.sleep(POLL_S)
    stop.landed = watch.phase() if top is not None else f"1st change +{stop.delay_s:g}s"
    if not itself:
        p.send_signal(getattr(signal, "SIG" + stop.signal))
    try:
        _, err = p.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
        stop.problems.append("the run did not end within 180 s of the signal")
    stop.returncode = p.returncode
    if stop.signal == "TERM" and p.returncode not in (128 + signal.SIGTERM, -signal.SIGTERM):
        stop.problems.append(f"exit {p.returncode} after SIGTERM: {err.strip()[-600:]}")
    if stop.signal == "KILL" and p.returncode != -signal.SIGKILL:
        stop.problems.append(f"exit {p.returncode} after SIGKILL: {err.strip()[-600:]}")
    rec = subprocess.run([str(VENV_BIN / "pagelab"), "state", "recover"], capture_output=True, text=True,
                         env=sweep.env, cwd=REPO, timeout=300)
    if rec.returncode != 0:
        stop.problems.append(f"pagelab state recover exited {rec.returncode}: {rec.stderr.strip()[-800:]}")
    if stop.signal == "TERM" and "restored" in rec.stdout:
        stop.problems.append(f"SIGTERM left the journal for the next run: {rec.stdout.strip()}")
    after = machine()
    for key, value in before.items():
        if after[key] != value:
            stop.problems.append(f"{key}: {value} -> {after[key]}")
    if sweep.journal.exists():
        stop.problems.append(f"journal left: {sweep.journal.read_text()[-800:]}")
    left = sorted(x.name for x in sweep.scratch.iterdir()) if sweep.scratch.exists() else []
    if left:
        stop.problems.append(f"scratch left: {left}")
    orphans = state.orphans()
    if orphans:
        stop.problems.append("orphans: " + "; ".join(o.what for o in orphans))
    stop.seconds = time.monotonic() - t0
    return stop


def clean_up(sweep: Sweep) -> None:
    """After a stop that leaked: put the machine back so that the next stop starts clean."""
    try:
        state.restore(state.Journal(sweep.journal))
    except state.StateError:
        pass
    try:
        state.clear_orphans(state.Journal(sweep.journal))
    except state.StateError:
        pass
    shutil.rmtree(sweep.scratch, ignore_errors=True)


def run_stops(base: Path, plan: list[tuple[str, str, str, float]], explicit: bool = False
              ) -> tuple[list[Stop], dict[str, Timeline]]:
    """Each (experiment, phase, signal, x) of the plan: x is a fraction of the phase's length in
    the experiment's observed run, or with `explicit` a delay in seconds after the run's first
    change (no observed run)."""
    build_native()
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    sweep = Sweep(base, None if explicit else SWEEP_SETTINGS)
    before = machine()
    assert not state.orphans(), "the machine holds state no journal explains before the sweep"
    timelines: dict[str, Timeline] = {}
    stops = []
    for name, phase, sig, x in plan:
        if not explicit and name not in timelines:
            timelines[name] = observe(sweep, name)
            subprocess.run([str(VENV_BIN / "pagelab"), "state", "recover"], env=sweep.env, cwd=REPO, timeout=300)
        if explicit:
            stop = stop_once(sweep, Stop(name, "setup", sig, x), RUN_LINES, None, before)
        else:
            tl = timelines[name]
            stop = stop_once(sweep, Stop(name, phase, sig, x * tl.length(phase)), tl.base, tl.top, before)
        stops.append(stop)
        if stop.problems:
            clean_up(sweep)
    return stops, timelines


def table(stops: list[Stop]) -> str:
    """Stops per experiment and phase (where they landed) and signal, with the leaks among them."""
    order = PHASES + ("next setup",)
    landed = sorted({s.landed for s in stops}, key=lambda p: (order.index(p) if p in order else len(order), p))
    lines = ["experiment   " + "".join(f"{p:>14}" for p in landed) + "     all  leaks"]
    for name in EXPERIMENTS:
        mine = [s for s in stops if s.experiment == name]
        if not mine:
            continue
        cells = []
        for p in landed:
            t = sum(1 for s in mine if s.landed == p and s.signal == "TERM")
            k = sum(1 for s in mine if s.landed == p and s.signal == "KILL")
            cells.append(f"{f'{t} TERM {k} KILL':>14}")
        lines.append(f"{name:<13}" + "".join(cells) + f"{len(mine):>8}{sum(1 for s in mine if s.problems):>7}")
    lines.append(f"{'all':<13}" + "".join(f"{sum(1 for s in stops if s.landed == p):>14}" for p in landed)
                 + f"{len(stops):>8}{sum(1 for s in stops if s.problems):>7}")
    return "\n".join(lines)


def _report(stops: list[Stop], timelines: dict[str, Timeline], seconds: float, out: Path) -> str:
    text = table(stops) + f"\n{len(stops)} stops in {seconds / 60:.1f} min"
    out.write_text(json.dumps({"seconds": seconds, "timelines": {k: asdict(v) for k, v in timelines.items()},
                               "stops": [asdict(s) for s in stops]}, indent=1))
    print("\n" + text)
    for s in stops:
        if s.problems:
            print(f"LEAK {s.experiment} {s.phase}->{s.landed} SIG{s.signal} +{s.delay_s:.3f}s: "
                  + " | ".join(s.problems))
    return text


def full_plan() -> list[tuple[str, str, str, float]]:
    return [(name, phase, sig, f) for name in EXPERIMENTS for phase in PHASES for f in FRACTIONS[phase]
            for sig in SIGNALS]


@check_crash
def test_signal_sweep_leaves_nothing(tmp_path, state_lock):
    t0 = time.monotonic()
    base = REPO / ".pytest-scratch" / f"sweep-{tmp_path.name}"
    try:
        stops, timelines = run_stops(base, full_plan())
    finally:
        shutil.rmtree(base, ignore_errors=True)
    _report(stops, timelines, time.monotonic() - t0, REPO / ".pytest-scratch" / "crash-sweep.json")
    assert len(stops) == len(full_plan())
    assert {s.experiment for s in stops} == set(EXPERIMENTS)
    assert {s.signal for s in stops} == set(SIGNALS)
    assert [s for s in stops if s.problems] == []
    assert not missed_phases(stops), (missed_phases(stops), table(stops))


def missed_phases(stops: list[Stop]) -> list[str]:
    """Each phase of a trial (the journal module's list) with each signal that no stop of the
    sweep landed in: every phase must have been hit by SIGTERM and by SIGKILL. Per experiment
    a short phase can be missed (a stop aimed at crystalmark's "between", which lasts 2-6 ms,
    lands in the next trial's setup), so this is over the sweep; a plan, a Watch or a
    Timeline that placed every stop in one phase fails it."""
    return [f"{phase} SIG{sig}" for phase in PHASES for sig in SIGNALS
            if not any(s.landed == phase and s.signal == sig for s in stops)]


def test_representative_stops(tmp_path, state_lock):
    """pagein (where a SIGTERM once left a loop device): SIGTERM and SIGKILL 0.1 s after the
    trial's first change (its emulated swap being set up: mount, loop device, swap) and 1.5 s
    after it (the hog pushing the working set out to that swap)."""
    base = REPO / ".pytest-scratch" / f"stops-{tmp_path.name}"
    plan = [("pagein", "", sig, delay) for delay in (0.1, 1.5) for sig in SIGNALS]
    try:
        stops, _ = run_stops(base, plan, explicit=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print("\n" + table(stops))
    assert [asdict(s) for s in stops if s.problems] == []


def test_the_sweep_plan_aims_at_every_phase_the_journal_has():
    """The sweep's plan covers the journal module's phases, each with both signals, and the
    sweep's phase check fails a sweep whose stops all landed in one phase or missed one signal
    of one phase (no trial is run)."""
    assert set(FRACTIONS) == set(PHASES) == set(TRIAL_PHASES) == set(ANCHORS)
    plan = full_plan()
    assert {(name, phase, sig) for name, phase, sig, _ in plan} == {
        (name, phase, sig) for name in EXPERIMENTS for phase in PHASES for sig in SIGNALS}
    landed_everywhere = [Stop(name, phase, sig, 0.0, landed=phase) for name, phase, sig, _ in plan]
    assert missed_phases(landed_everywhere) == []
    assert missed_phases([Stop(n, p, s, 0.0, landed="measure") for n, p, s, _ in plan]) == [
        f"{phase} SIG{sig}" for phase in PHASES if phase != "measure" for sig in SIGNALS]
    no_kill_in_teardown = [s for s in landed_everywhere if (s.landed, s.signal) != ("teardown", "KILL")]
    assert missed_phases(no_kill_in_teardown) == ["teardown SIGKILL"]


def test_the_sweeps_settings_only_shorten_quicks_trials():
    """Each of the sweep's settings names a key of its experiment's quick configuration (a renamed
    key would otherwise be ignored, and the sweep would run quick's sizes without saying so), and
    only shortens it: fewer sets, a subset of the re-touch orders (no trial is run)."""
    quick = config.load(overrides={"profile": "quick"})
    for name, settings in SWEEP_SETTINGS.items():
        for key, value in settings.items():
            assert key in quick[name], (name, key)
            mine = quick[name][key]
            assert (set(value) < set(mine)) if isinstance(value, list) else 0 < value < mine, (name, key, value, mine)
