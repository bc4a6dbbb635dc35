"""A `hog victim` working set driven from the harness: start it (optionally inside a cgroup),
wait until it is built, trim it from outside (process_madvise MADV_PAGEOUT, EmptyWorkingSet's
analogue), let it re-touch and verify every page, and read its report.

Shared by every experiment that re-touches a working set: standby and compression trim it;
pagein and readyboost have hogs push it out (`push_out`, judged by `out_and_back_reason`).
"""

from __future__ import annotations

import json
import signal
import struct
import subprocess
import tempfile
import threading
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pagelab.run import progress
from pagelab.run.devices import poll_faults
from pagelab.run.tools import HOG_PARTNER_GONE, hog_run_cmd, hog_victim_cmd, option
from pagelab.run.trials import TrialFailed
from pagelab.system import mm
from pagelab.system.state import Cgroup, OomWatchdog


class Victim:
    def __init__(self, size: int, fill: str, seed: int, workdir: Path, cgroup: Cgroup | None = None, *,
                 retouch_order: str, timeout: float = 600.0):
        """`hog victim` of `size` bytes; `retouch_order` of the re-touch (seq or random: hog victim's
        required --order, whose value is the experiment's, from its schema or its design)."""
        self.workdir = Path(workdir)
        self.ready = self.workdir / "victim-ready.json"
        self.go = self.workdir / "victim-go"
        self.timeout = timeout
        self.command = hog_victim_cmd(size, fill, seed, self.ready, self.go, retouch_order)
        self.cgroup = cgroup
        self.proc: subprocess.Popen[str] | None = None
        self.info: dict[str, Any] = {}

    def __enter__(self) -> Victim:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.go.unlink(missing_ok=True)
        progress.phase("fill")
        self.proc = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     preexec_fn=self.cgroup.preexec() if self.cgroup else None)
        deadline = time.monotonic() + self.timeout
        while not self.ready.exists():
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().strip() if self.proc.stderr else ""
                raise TrialFailed(f"victim exited {self.proc.returncode} before ready: {err}")
            if time.monotonic() > deadline:
                raise TrialFailed(f"victim not ready after {self.timeout:.0f} s")
            time.sleep(0.005)
        self.info = json.loads(self.ready.read_text())
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def trim(self) -> dict[str, float]:
        """Page the whole working set out; wall and CPU seconds of the call (compression, for
        zswap and zram, runs in the caller's context), and the bytes then in swap."""
        progress.phase("trim")
        t0, c0 = time.monotonic(), time.thread_time()
        mm.pageout(self.pid, int(self.info["address"]), int(self.info["size"]))
        wall, cpu = time.monotonic() - t0, time.thread_time() - c0
        return {"trim_s": wall, "trim_cpu_s": cpu, "swapped_bytes": mm.swapped_bytes(self.pid)}

    def retouch(self) -> dict[str, Any]:
        """Send go; wait for the re-touch and verification; the victim's JSON report."""
        assert self.proc is not None
        progress.phase("re-touch")
        self.go.touch()
        try:
            out, err = self.proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired as exc:
            raise TrialFailed(f"victim did not finish the re-touch within {self.timeout:.0f} s") from exc
        finally:
            poll_faults()   # a paging device's faults, read while it is still mounted
        if self.proc.returncode == -signal.SIGBUS:
            raise TrialFailed("victim killed by SIGBUS during the re-touch (the kernel's answer to a page it "
                              "could not read back from swap)" + (f": {err.strip()}" if err.strip() else ""))
        if self.proc.returncode != 0:
            raise TrialFailed(f"victim exited {self.proc.returncode}: {err.strip()}")
        report = json.loads(out)
        if not report.get("verify", {}).get("ok", False):
            raise TrialFailed(f"victim's pages did not survive the round trip: {report.get('verify')}")
        return report

    def __exit__(self, *exc: Any) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for p in (self.ready, self.go):
            p.unlink(missing_ok=True)


@dataclass
class HogRun:
    """What `push_out` saw: hog's reports (of the hogs that finished), the wall seconds, the
    hogs killed, what the hogs that stopped because a partner at the barrier was gone said
    (`partner_gone`), the group's OOM kills during the run (any task: hog or victim) and
    whether the OOM watchdog had to end a wait that nothing could satisfy."""
    reports: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    killed: int = 0
    partner_gone: list[str] = field(default_factory=list)
    oom_kills: int = 0
    watchdog_fired: bool = False
    longest_oom_wait_s: float = 0.0

    @property
    def apart_from_round(self) -> int:
        """The first round at which a hog stopped waiting for the others at the barrier (its
        report's barrier_broken_round), 0 while they stayed side by side."""
        return min(filter(None, (r["summary"].get("barrier_broken_round", 0) for r in self.reports)),
                   default=0)

    def invalid_reason(self) -> str | None:
        """Why a trial with this run cannot count (a task was killed, a hog stopped because a
        partner at the barrier was gone, or the hogs did not stay side by side), or None."""
        gone = ""
        if self.partner_gone:
            # hog's message less its "hog: --barrier FILE: " (FILE is a new name each run)
            said = self.partner_gone[0].split(": ", 2)[-1]
            gone = f"{len(self.partner_gone)} hog(s) stopped at once: {said}"
        if self.killed or self.oom_kills or self.watchdog_fired:
            why = (f"waited {self.longest_oom_wait_s:.0f} s for memory that nothing freed"
                   if self.watchdog_fired else "the memory cgroup's OOM killer")
            return f"{max(self.killed, self.oom_kills)} task(s) killed ({why})" + (f"; {gone}" if gone else "")
        if gone:
            return gone
        if self.apart_from_round:
            return (f"the hogs ran apart from round {self.apart_from_round}: one gave up waiting for the "
                    f"others at the barrier, so they did not ask for their memory side by side")
        return None


def out_and_back_reason(evicted_share: float, read_back_share: float, need: float,
                        pushed_by: str = "the hogs") -> str | None:
    """Why a trial whose working set was to be pushed out to swap and re-touched cannot count,
    or None: at least `need` of it went out, and the re-touch read at least `need` of it back
    from swap (the rest was still in RAM, in the swap cache)."""
    if not evicted_share >= need:
        return (f"{pushed_by} pushed out {100 * evicted_share:.1f} % of the working set; "
                f"the design needs >= {100 * need:.1f} %")
    if not read_back_share >= need:
        return (f"the re-touch read {100 * read_back_share:.1f} % of the working set from swap; the "
                f"rest was still in RAM (swap cache); the design needs >= {100 * need:.1f} % out of RAM")
    return None


def _reporting_rounds(procs: list[subprocess.Popen[str]], barrier: Path | None, count: int, rounds: int,
                      timeout: float) -> list[tuple[str, str]]:
    """Each hog's output (communicate's); meanwhile the round the hogs are in, from the
    barrier's count of arrivals (barrier.c: round r is done at (r + 1) x count), is reported as
    the trial's phase once a second."""
    progress.phase("hogs", 1, rounds, "round")
    stop = threading.Event()

    def watch() -> None:
        while barrier is not None and not stop.wait(1.0):
            try:
                arrived = struct.unpack("<I", barrier.read_bytes()[:4])[0]
            except (OSError, struct.error):
                continue
            progress.phase("hogs", min(rounds, arrived // count + 1), rounds, "round")

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        return [p.communicate(timeout=timeout) for p in procs]
    finally:
        stop.set()
        watcher.join()


def push_out(cgroup: Cgroup, size: int, rounds: int | None = None, count: int = 1, timeout: float = 1800.0,
             oom_wait_limit_s: float = 120.0, workdir: Path | None = None) -> HogRun:
    """Runs `count` `hog run`s of `size` bytes side by side in `cgroup`, each `rounds` times
    (None: hog run's own default, its table's --rounds), seed 000's memory hogs: their
    allocations push the cgroup's other pages out to swap.
    Side by side means at once: every hog holds each round's memory until all `count` have
    written theirs (`hog run --barrier`), so together they ask for count x size. Without it two
    hogs started a few ms apart do not overlap when swapping is fast (zswap, zram: a 16 MiB round
    takes ~15 ms), and the working set they were meant to push out stayed (1 in 4 zswap trials of
    the quick profile). The group's tasks wait for memory rather than die
    (`State.cgroup(on_oom="wait")`); an `OomWatchdog` ends a wait longer than
    `oom_wait_limit_s` that nothing can satisfy. A killed hog is counted, not raised, and so is
    a hog that stopped at once because a partner at the barrier was gone (exit HOG_PARTNER_GONE,
    rather than wait for it until the barrier's timeout): the trial is then invalid
    (`HogRun.invalid_reason`); any other failure of hog raises TrialFailed.
    The barrier's file is made in a new directory under `workdir`: a trial passes its work
    directory, which the state journal removes after any stop, SIGKILL included (None: the
    system's temporary directory)."""
    rounds = option("hog", "run", "rounds").default if rounds is None else rounds
    run = HogRun()
    kills0 = cgroup.oom_kills()
    with tempfile.TemporaryDirectory(prefix="hogs-", dir=workdir) if count > 1 else nullcontext() as tmp:
        cmd = hog_run_cmd(size, rounds, Path(tmp) / "barrier" if tmp else None, count)
        t0 = time.monotonic()
        with OomWatchdog(cgroup, oom_wait_limit_s) as wd:
            procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      preexec_fn=cgroup.preexec()) for _ in range(count)]
            outs = _reporting_rounds(procs, Path(tmp) / "barrier" if tmp else None, count, rounds, timeout)
    poll_faults()   # a paging device's faults, read while it is still mounted
    run.seconds = time.monotonic() - t0
    run.oom_kills = cgroup.oom_kills() - kills0
    run.watchdog_fired, run.longest_oom_wait_s = wd.fired, wd.longest_s
    for p, (out, err) in zip(procs, outs, strict=True):
        if p.returncode == -9:
            run.killed += 1
        elif p.returncode == HOG_PARTNER_GONE:
            run.partner_gone.append(err.strip())
        elif p.returncode != 0:
            raise TrialFailed(f"hog run exited {p.returncode}: {err.strip()}")
        else:
            run.reports.append(json.loads(out))
    return run
