"""Memory and blkio cgroups (v1 here, v2 where mounted), their OOM handling (tasks wait for
memory instead of dying; `OomWatchdog` ends a wait nothing can satisfy) and ending the tasks
of one of ours. Making and removing a group is journaled by change.py and undo.py.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

from pagelab.system.state.kernel import StateError, _poll, _proc_state, _read, _reap, _write

CGROUP_ROOT = Path("/sys/fs/cgroup")


CGROUP_PREFIX = "pagelab"  # every cgroup this package makes is named pagelab-*


def _key_values(path: Path) -> dict[str, int]:
    """A cgroup file of "name value" lines (memory.stat, memory.oom_control, memory.events)."""
    out = {}
    for line in path.read_text().splitlines():
        k, _, v = line.partition(" ")
        if v.strip().lstrip("-").isdigit():
            out[k] = int(v)
    return out


class Cgroup:
    """A cgroup by name under the v1 hierarchies (memory, blkio) or the v2 unified one."""

    def __init__(self, name: str):
        self.name = name
        self.v2 = not (CGROUP_ROOT / "memory").is_dir() and (CGROUP_ROOT / "cgroup.controllers").exists()
        self.effective: dict[str, str] = {}

    def path(self, controller: str) -> Path:
        return CGROUP_ROOT / self.name if self.v2 else CGROUP_ROOT / controller / self.name

    def limit_file(self) -> str:
        return "memory.max" if self.v2 else "memory.limit_in_bytes"

    def set(self, controller: str, file: str, value: str, expect_rounded: bool = False,
            check: bool = True) -> None:
        target = self.path(controller) / file
        _write(target, value)  # the cgroup itself is journaled; its files go with it
        got = target.read_text().strip()
        if check:
            ok = got == value
            if expect_rounded and got.isdigit() and value.isdigit():
                ok = abs(int(got) - int(value)) < 4096 * 2
            if not ok:
                raise StateError(f"{target}: asked for {value}, the kernel reports {got}")
        self.effective[file] = got

    # -- out of memory: wait, never die ------------------------------------------------------
    def wait_on_oom(self) -> None:
        """Tasks that reach the limit wait for memory instead of being OOM-killed.

        cgroup v1: memory.oom_control = 1 (Documentation/admin-guide/cgroup-v1/memory.rst, 10.
        OOM Control): a task whose charge fails after reclaim sleeps on the group's OOM wait
        queue and retries when pages are uncharged (a page-out completes, a task frees memory).
        cgroup v2 has no such switch: memory.high = the limit throttles and reclaims the group's
        tasks instead, with memory.max an eighth above it as the backstop.
        If nothing can ever free memory (no swap, every task waiting) the tasks would wait
        forever: `OomWatchdog` ends that after a bounded wait, and the kill then shows in
        `oom_kills`."""
        if self.v2:
            limit = (self.path("memory") / "memory.max").read_text().strip()
            if limit.isdigit():
                self.set("memory", "memory.high", limit, expect_rounded=True)
                self.set("memory", "memory.max", str(int(limit) + max(int(limit) // 8, 16 << 20)),
                         expect_rounded=True)
            return
        _write(self.path("memory") / "memory.oom_control", "1")
        if self.oom_control().get("oom_kill_disable") != 1:
            raise StateError(f"{self.path('memory')}/memory.oom_control: the kernel did not disable "
                             "the OOM killer")
        self.effective["memory.oom_control"] = "oom_kill_disable 1"

    def oom_control(self) -> dict[str, int]:
        """v1: memory.oom_control's fields (oom_kill_disable, under_oom, oom_kill); v2: the
        oom and oom_kill counts of memory.events."""
        return _key_values(self.path("memory") / ("memory.events" if self.v2 else "memory.oom_control"))

    def oom_kills(self) -> int:
        """Tasks of this group the kernel's OOM killer has killed so far (Linux >= 4.13)."""
        return self.oom_control().get("oom_kill", 0)

    def under_oom(self) -> bool:
        return bool(self.oom_control().get("under_oom", 0))

    def release_oom_waiters(self) -> None:
        """Re-enables the OOM killer (v1) and so wakes the waiting tasks: the kernel kills one."""
        if not self.v2:
            _write(self.path("memory") / "memory.oom_control", "0")

    def add(self, pid: int) -> None:
        for ctrl in ("memory", "blkio"):
            if self.path(ctrl).exists():
                _write(self.path(ctrl) / "cgroup.procs", str(pid))

    def preexec(self) -> Callable[[], None]:
        """For subprocess.Popen(preexec_fn=...): the child joins this cgroup before exec."""
        return lambda: self.add(os.getpid())

    def stat(self) -> dict[str, int]:
        return _key_values(self.path("memory") / "memory.stat")


class OomWatchdog:
    """While open, watches a cgroup whose tasks wait on OOM (`Cgroup.wait_on_oom`): when the
    group has been under OOM without a pause for `limit_s` seconds (nothing freed memory: the
    tasks would wait forever), it re-enables the OOM killer so that the kernel kills one and
    the rest go on; `fired` then says so and the kill shows in `Cgroup.oom_kills`. A group that
    only waits for page-outs leaves under_oom within a disk IO or two.

        with OomWatchdog(cg, 60) as wd:
            run the hogs
        if wd.fired: the trial is invalid"""

    def __init__(self, cg: Cgroup, limit_s: float, poll_s: float = 0.1):
        self.cg, self.limit_s, self.poll_s = cg, limit_s, poll_s
        self.fired = False
        self.longest_s = 0.0      # the longest stretch under OOM seen
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name=f"oom-watchdog-{cg.name}", daemon=True)

    def _watch(self) -> None:
        since = None
        while not self._stop.wait(self.poll_s):
            try:
                under = self.cg.under_oom()
            except OSError:
                return                               # the group is gone
            now = time.monotonic()
            if not under:
                since = None
                continue
            since = since if since is not None else now
            self.longest_s = max(self.longest_s, now - since)
            if now - since >= self.limit_s and not self.fired:
                self.fired = True
                self.cg.release_oom_waiters()

    def __enter__(self) -> OomWatchdog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if self.fired and not self.cg.v2:
            try:
                self.cg.wait_on_oom()                # back to waiting for what follows
            except (OSError, StateError):
                pass


def _end_tasks(path: Path) -> None:
    """End every task of one of our cgroups but this process (which leaves it): SIGKILL, which
    also ends a wait on the group's OOM; StateError naming any that will not go."""
    def tasks() -> list[int]:
        return [int(p) for p in (_read(path / "cgroup.procs") or "").split() if p.isdigit()]

    def emptied() -> bool:
        for pid in tasks():
            if pid == os.getpid():
                _write(path.parent / "cgroup.procs", str(pid))
                continue
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _reap(pid)
        return not tasks()

    if path.exists() and not _poll(emptied, 10, 0.02):
        raise StateError(f"cgroup {path} still holds tasks after SIGKILL: "
                         + ", ".join(f"pid {p} ({_read(Path(f'/proc/{p}/comm'))}, state {_proc_state(p)})"
                                     for p in tasks()))
