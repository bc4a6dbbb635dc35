"""The one module that changes system-wide paging state, and puts it back.

Every change is journaled *before* it is made (write-ahead: one fsynced JSON line per change),
read back after it is made (a mismatch raises StateError), and undone by `restore()`, which
replays the journal in reverse. A journal line holds what identifies the change by itself, so
that its undo needs nothing but the line, whatever else is already gone: a loop device by name,
major:minor and the disk sequence number the kernel gives each attach (plus the backing file's
device and inode at attach time), a mount by its mount ID and file system device, a swap by
device number or inode, a process by pid and start time. Each undo checks the current state
first (restore is idempotent, also when the process died between the journal line and the
change: kill -9 at any point), then verifies that the change is gone, and otherwise names what
still holds it. The harness calls restore on start-up and on exit.

Changes are made in this process (loop devices by ioctl, swapon/swapoff/umount by system
call), not by a helper program that could outlive an interrupted run and make its change after
the restore; SIGTERM, SIGHUP and SIGINT wait while a change or an undo is under way.

What it changes: sysctls and module parameters (vm.page-cluster, vm.swappiness,
vm.nr_hugepages, zswap's parameters, free page reporting's min_free_ms), zram devices, swap
(files and block devices), loop devices, FUSE mounts of the emulator (with its daemon), memory
and blkio cgroups (v1 here, v2 where mounted), a run's scratch files and trials' work
directories, and the page cache (drop_caches, an action with nothing to undo). One request is
held, not journaled: a CPU wake-up latency limit (`cpu_latency_limit`), which the kernel itself
drops when the file that holds it closes, also when the process dies.
`orphans()` finds state of the kinds this module makes that no journal explains (left by a run
that predates its journal, or by a bug), and `clear_orphans()` undoes it the same way.
Not for: measuring; counters.py reads, this module writes.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_PREFIX = "pagelab"  # every cgroup this module makes is named pagelab-*
LOOP_DETACH_WAIT_S = 10.0  # how long an undo waits for a loop device's deferred detach
UNMOUNT_WAIT_S = 10.0      # ... for a busy mount's last user (the emulator's ended first)
HELD_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)  # wait while a change or an undo runs


class StateError(RuntimeError):
    """A change that could not be made, or did not take the value asked for."""


# --------------------------------------------------------------------------------------------
# Knobs: files whose value is set by writing and checked by reading back.


@dataclass(frozen=True)
class Knob:
    name: str
    path: str
    kind: str = "int"  # int | bool | str | choice (the selected one is in [brackets])

    def exists(self) -> bool:
        return os.path.exists(self.path)

    def read(self) -> str:
        raw = Path(self.path).read_text().strip()
        return normalise(self.kind, raw)


def normalise(kind: str, raw: str) -> str:
    raw = raw.strip()
    if kind == "bool":
        return {"Y": "Y", "1": "Y", "y": "Y", "N": "N", "0": "N", "n": "N"}.get(raw, raw)
    if kind == "choice":
        for word in raw.split():
            if word.startswith("[") and word.endswith("]"):
                return word[1:-1]
        return raw
    return raw


KNOBS: dict[str, Knob] = {k.name: k for k in [
    Knob("vm.page-cluster", "/proc/sys/vm/page-cluster"),
    Knob("vm.swappiness", "/proc/sys/vm/swappiness"),
    Knob("vm.nr_hugepages", "/proc/sys/vm/nr_hugepages"),
    Knob("zswap.enabled", "/sys/module/zswap/parameters/enabled", "bool"),
    Knob("zswap.compressor", "/sys/module/zswap/parameters/compressor", "str"),
    Knob("zswap.max_pool_percent", "/sys/module/zswap/parameters/max_pool_percent"),
    Knob("zswap.accept_threshold_percent", "/sys/module/zswap/parameters/accept_threshold_percent"),
    Knob("zswap.shrinker_enabled", "/sys/module/zswap/parameters/shrinker_enabled", "bool"),
    # Free page reporting (this VM platform's page_reporting module, not mainline's): the guest
    # reports pages free for at least this long to the hypervisor, which takes them back, so
    # the next process to get them waits for the host to fault them in again (make bench's hog
    # and cacheflood cases hold it off).
    Knob("page_reporting.min_free_ms", "/sys/module/page_reporting/parameters/min_free_ms"),
]}


def _write(path: str | Path, value: str) -> None:
    try:
        with open(path, "w") as fh:
            fh.write(str(value))
    except OSError as exc:
        raise StateError(f"cannot write {value!r} to {path}: {exc.strerror}") from exc


def _run(cmd: list[str], check: bool = True) -> str:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if check and out.returncode != 0:
        raise StateError(f"{' '.join(cmd)} failed ({out.returncode}): {out.stderr.strip()}")
    return out.stdout


# --------------------------------------------------------------------------------------------
# System calls made in this process (a helper program killed with its run could still make its
# change after the restore that should have undone it).

_LIBC = ctypes.CDLL(None, use_errno=True)
SWAP_FLAG_PREFER, SWAP_FLAG_PRIO_MASK = 0x8000, 0x7FFF  # include/linux/swap.h

# include/uapi/linux/loop.h
LOOP_CLR_FD, LOOP_GET_STATUS64, LOOP_CONFIGURE, LOOP_CTL_GET_FREE = 0x4C01, 0x4C05, 0x4C0A, 0x4C82
LO_FLAGS_DIRECT_IO = 16
_LOOP_INFO64 = struct.Struct("=QQQQQIIII64s64s32s2Q")  # struct loop_info64
_LOOP_CONFIG = struct.Struct(f"=II{_LOOP_INFO64.size}s8Q")  # struct loop_config


def _syscall(name: str, *args: Any) -> None:
    if getattr(_LIBC, name)(*args) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def _swapon(path: str, priority: int | None) -> None:
    flags = SWAP_FLAG_PREFER | (priority & SWAP_FLAG_PRIO_MASK) if priority is not None else 0
    try:
        _syscall("swapon", os.fsencode(path), flags)
    except OSError as exc:
        raise StateError(f"swapon {path}: {exc.strerror}") from exc


def _swapoff(path: str) -> None:
    try:
        _syscall("swapoff", os.fsencode(path))
    except OSError as exc:
        raise StateError(f"swapoff {path}: {exc.strerror}") from exc


def _majmin(dev: int) -> str:
    return f"{os.major(dev)}:{os.minor(dev)}"


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


# --------------------------------------------------------------------------------------------
# The journal.


def journal_path() -> Path:
    """/run/pagelab/journal.jsonl (cleared by a reboot, as is the state it records);
    PAGELAB_JOURNAL overrides."""
    return Path(os.environ.get("PAGELAB_JOURNAL", "/run/pagelab/journal.jsonl"))


def _fault_point(where: str = "change") -> None:
    """Fault injection for tests: PAGELAB_FAULT_AT=N sends this process PAGELAB_FAULT_SIGNAL
    (KILL unless named, e.g. TERM) at the N-th point. Points are just before and just after every
    change; with PAGELAB_FAULT_IN_RESTORE=1 also just before and after every undo."""
    target = os.environ.get("PAGELAB_FAULT_AT")
    if target is None or (where == "restore" and os.environ.get("PAGELAB_FAULT_IN_RESTORE") != "1"):
        return
    count = int(os.environ.get("_PAGELAB_FAULT_COUNT", "0")) + 1
    os.environ["_PAGELAB_FAULT_COUNT"] = str(count)
    if count == int(target):
        os.kill(os.getpid(), getattr(signal, "SIG" + os.environ.get("PAGELAB_FAULT_SIGNAL", "KILL")))


class Journal:
    def __init__(self, path: Path | None = None):
        self.path = path or journal_path()

    def append(self, entry: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(entry, sort_keys=True) + "\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def entries(self) -> list[dict[str, Any]]:
        """Every complete line; a torn last line (a crash mid-write) is ignored: its change
        was never started, because the change comes only after the fsync."""
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return out

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)

    def truncate(self, keep: int) -> None:
        """Keep only the first `keep` entries (rewritten atomically)."""
        entries = self.entries()[:keep]
        if not entries:
            self.clear()
            return
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w") as fh:
            fh.writelines(json.dumps(e, sort_keys=True) + "\n" for e in entries)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)


# --------------------------------------------------------------------------------------------
# Changes. Each `do_*` journals first, then acts, then reads back; each `_undo_<kind>` takes a
# journal entry and is safe to run whatever happened after the entry was written.


class State:
    """Make journaled changes. Use as a context manager (see `session`)."""

    def __init__(self, journal: Journal | None = None):
        self.journal = journal or Journal()
        self.effective: dict[str, str] = {}
        self.signalled: int | None = None  # the signal `session` turned into SystemExit
        self._holding = 0                  # > 0 while a change or an undo runs (see `held`)
        self._deferred: list[int] = []     # signals that came meanwhile

    def stop_if_signalled(self) -> None:
        """Raise the SystemExit a SIGTERM or SIGHUP asked for once more. The handler raises it
        wherever the program is; inside a __del__ (a dropped Popen's, say) Python prints it and
        carries on, and the run would go on to its end. Called before each trial, so such a run
        stops there."""
        if self.signalled is not None:
            raise SystemExit(128 + self.signalled)

    @contextmanager
    def held(self) -> Iterator[None]:
        """A stretch that a signal must not cut in two (a change and its journal line, an undo):
        the session's handler keeps SIGTERM, SIGHUP and SIGINT that come meanwhile, and the
        first of them stops the run once the stretch is over."""
        self._holding += 1
        try:
            yield
        finally:
            self._holding -= 1
        if not self._holding and self._deferred and self.signalled is None:
            self.signalled = self._deferred[0]
            raise SystemExit(128 + self.signalled)

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self.signalled is not None or self._holding:
            self._deferred.append(signum)
            return
        self.signalled = signum
        raise SystemExit(128 + signum)

    @contextmanager
    def scope(self) -> Iterator[State]:
        """Changes made inside are undone on leaving it (e.g. one trial's devices), while the
        session's earlier changes stay."""
        mark = len(self.journal.entries())
        try:
            yield self
        finally:
            with self.held():
                restore(self.journal, keep=mark)

    def _change(self, entry: dict[str, Any], act: Callable[[], None]) -> None:
        with self.held():
            self.journal.append(entry)
            _fault_point()
            act()
            _fault_point()

    # -- knobs -------------------------------------------------------------------------------
    def set_knob(self, name: str, value: str | int) -> str:
        if name not in KNOBS:
            raise StateError(f"unknown knob {name!r}; known: {', '.join(KNOBS)}")
        knob = KNOBS[name]
        if not knob.exists():
            raise StateError(f"{name}: {knob.path} does not exist on this kernel")
        if name == "zswap.compressor" and str(value) not in zswap_compressors():
            raise StateError(f"zswap.compressor: {value!r} is not available on this kernel "
                             f"(available: {', '.join(zswap_compressors())})")
        old = knob.read()
        want = normalise(knob.kind, str(value))
        self._change({"kind": "knob", "name": name, "old": old, "new": want},
                     lambda: _write(knob.path, str(value)))
        got = knob.read()
        if got != want:
            raise StateError(f"{name}: asked for {want!r}, the kernel reports {got!r}")
        self.effective[name] = got
        return got

    # -- page cache ---------------------------------------------------------------------------
    def drop_caches(self, level: int = 3) -> None:
        """Sync, then drop clean page cache (1), slab (2) or both (3). Nothing to undo."""
        if level not in (1, 2, 3):
            raise StateError(f"drop_caches level must be 1, 2 or 3, not {level}")
        os.sync()
        self.journal.append({"kind": "action", "what": f"drop_caches={level}"})
        _write("/proc/sys/vm/drop_caches", str(level))

    # -- swap ---------------------------------------------------------------------------------
    def swap_file(self, path: Path, size: int, priority: int | None = None) -> Path:
        """Create a swap file of `size` bytes (fully allocated), mkswap it, swapon it."""
        path = Path(path).resolve()
        if path.exists():
            raise StateError(f"{path} exists; refusing to overwrite it with a swap file")
        self._change({"kind": "file", "path": str(path)}, lambda: _make_swap_file(path, size))
        self.swapon(path, priority)
        return path

    def swapon(self, device: Path | str, priority: int | None = None) -> None:
        """Swap on a block device or a file; journaled by its device number (block) or its
        device and inode (file) as well as its path."""
        device = str(Path(device).resolve())
        if device in active_swaps():
            raise StateError(f"{device} is already swap; refusing to take it over")
        self._change({"kind": "swapon", "device": device, **_swap_identity(device)},
                     lambda: _swapon(device, priority))
        if device not in active_swaps():
            raise StateError(f"swapon {device} returned but it is not in /proc/swaps")

    # -- zram ---------------------------------------------------------------------------------
    def zram(self, size: int, algorithm: str, device: str = "zram0") -> Path:
        """Configure an unused zram device (algorithm, disksize) and mkswap it; not swapon."""
        sysdir = Path("/sys/block") / device
        if not sysdir.exists():
            raise StateError(f"/sys/block/{device} does not exist (modprobe zram)")
        if (sysdir / "disksize").read_text().strip() != "0":
            raise StateError(f"{device} is already in use (disksize != 0); refusing to reset it")
        avail = zram_algorithms(device)
        if algorithm not in avail:
            raise StateError(f"{device}: compressor {algorithm!r} not offered ({', '.join(avail)})")

        def act() -> None:
            _write(sysdir / "comp_algorithm", algorithm)
            _write(sysdir / "disksize", str(size))
            _run(["mkswap", f"/dev/{device}"])

        self._change({"kind": "zram", "device": device}, act)
        got_alg = normalise("choice", (sysdir / "comp_algorithm").read_text())
        got_size = int((sysdir / "disksize").read_text())
        if got_alg != algorithm or got_size != size:
            raise StateError(f"{device}: asked for {algorithm}/{size}, got {got_alg}/{got_size}")
        self.effective[f"{device}.comp_algorithm"] = got_alg
        self.effective[f"{device}.disksize"] = str(got_size)
        return Path(f"/dev/{device}")

    # -- loop devices -------------------------------------------------------------------------
    def loop(self, backing: Path, direct_io: bool = True) -> Path:
        """Attach a free loop device to `backing`. The device is picked before the journal line
        (LOOP_CTL_GET_FREE) and attached after it (LOOP_CONFIGURE), both in this process, so
        the line names the device, its number and its disk sequence number before the attach
        (the attach is that number + 1; a detach moves it on again): the undo recognises this
        attach by that even when the backing file's file system no longer answers."""
        backing = Path(backing).resolve()
        st = os.stat(backing)
        identity = {"backing": str(backing), "dev": _majmin(st.st_dev), "inode": st.st_ino}
        for _ in range(5):
            name = f"loop{_loop_get_free()}"
            entry = {"kind": "loop", "device": f"/dev/{name}", "rdev": _read(Path("/sys/block", name, "dev")),
                     "diskseq": _diskseq(name), **identity}
            try:
                self._change(entry, lambda d=entry["device"]: _loop_configure(d, backing, direct_io))
                break
            except _LoopTaken:  # another program took the device in between: not ours, try the next
                with self.held():
                    self.journal.truncate(len(self.journal.entries()) - 1)
        else:
            raise StateError(f"no free loop device for {backing} after 5 tries")
        dev = Path(entry["device"])
        if direct_io:
            dio = Path(f"/sys/block/{dev.name}/loop/dio").read_text().strip()
            if dio != "1":
                raise StateError(f"{dev}: direct IO requested but the kernel reports dio={dio}")
        return dev

    # -- processes and mounts -----------------------------------------------------------------
    def daemon(self, cmd: list[str], mountpoint: Path | None = None, ready: Path | None = None,
               timeout: float = 20.0) -> subprocess.Popen[bytes]:
        """Start a daemon (e.g. the FUSE emulator) whose pid, and mount if any, are journaled;
        wait for `ready` to appear. Undo: unmount, then end that process (checked by start time).
        The mount is journaled twice: by its mount point before the daemon starts, and by its
        mount ID and file system device once it is ready."""
        holder: list[subprocess.Popen[bytes]] = []
        entry = {"kind": "daemon", "cmd": cmd, "mountpoint": str(mountpoint) if mountpoint else None}
        # The pid is only known after the start: the intent, the start and the pid's line form
        # one held stretch, so a SIGTERM cannot leave a daemon that the journal does not name.
        # Its own session: a signal to the run's process group (make stopped as a whole, ^C)
        # does not reach it, so it cannot end (and detach its mount) under a loop device and
        # swap that still use it; the undo ends it once they are gone.
        with self.held():
            self._change(entry, lambda: holder.append(
                subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)))
            proc = holder[0]
            started = _proc_starttime(proc.pid)
            self.journal.append({**entry, "kind": "daemon_pid", "pid": proc.pid, "starttime": started})
            _leave_run_group(self.journal, proc.pid)
        if ready is not None and not _poll(lambda: Path(ready).exists() or proc.poll() is not None, timeout, 0.01):
            raise StateError(f"{cmd[0]} not ready after {timeout:.0f} s")
        if ready is not None and not Path(ready).exists():
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise StateError(f"{cmd[0]} exited {proc.returncode} before it was ready: {err.strip()}")
        if mountpoint is not None:
            with self.held():
                found = [m for m in mountinfo() if m.mountpoint == str(mountpoint) and m.fstype.startswith("fuse")]
                if not found:
                    raise StateError(f"{cmd[0]} is ready but nothing is mounted on {mountpoint}")
                m = found[-1]
                self.journal.append({"kind": "mount", "mountpoint": m.mountpoint, "mount_id": m.mount_id,
                                     "fs": m.fs, "fstype": m.fstype, "pid": proc.pid, "starttime": started})
        return proc

    # -- scratch ------------------------------------------------------------------------------
    def work_dir(self, path: Path) -> Path:
        """Make a trial's work directory; journaled, so the scope's restore (or the next run's
        recovery, after kill -9) removes it and what is in it once the mounts in it are gone."""
        path = Path(path).resolve()
        self._change({"kind": "workdir", "path": str(path)}, lambda: path.mkdir(parents=True, exist_ok=True))
        return path

    def run_group(self) -> None:
        """Put this process in a cgroup of its own (pagelab-run-PID, in the pids hierarchy, which
        the memory and blkio groups of the trials do not touch): every program it starts from
        now on is in it too, so a recovery after kill -9 finds and ends the ones that outlived
        it (a test's iobench, a victim waiting for its go, a flood) before it undoes anything
        they might hold. Daemons leave it: their own journal lines end them, after the loop
        devices and swap that use them."""
        base = CGROUP_ROOT / "pids" if (CGROUP_ROOT / "pids").is_dir() else CGROUP_ROOT
        if not (base / "cgroup.procs").exists():
            return  # no pids hierarchy to use
        path = base / f"{CGROUP_PREFIX}-run-{os.getpid()}"

        def act() -> None:
            path.mkdir(exist_ok=True)
            _write(path / "cgroup.procs", str(os.getpid()))

        self._change({"kind": "run", "path": str(path), "pid": os.getpid(),
                      "starttime": _proc_starttime(os.getpid())}, act)

    def scratch(self, directory: Path, prefix: str) -> None:
        """A run's scratch files: everything it makes in `directory` named `prefix`-* or
        `prefix`.* (a test file, a flood set, a corpus, a tier state kept across trials) is
        removed by the restore, also after kill -9; what was there before the run is kept."""
        directory = Path(directory).resolve()
        existing = sorted(p.name for p in _scratch_entries(directory, prefix))
        self._change({"kind": "scratch", "dir": str(directory), "prefix": prefix, "existing": existing},
                     lambda: None)  # the experiment makes its files; the line is what matters

    # -- cgroups ------------------------------------------------------------------------------
    def cgroup(self, name: str, memory_limit: int | None = None, memsw_limit: int | None = None,
               swappiness: int | None = None, read_bps: dict[str, int] | None = None,
               on_oom: str = "wait") -> Cgroup:
        """A memory (and blkio, if throttles are given) cgroup named pagelab-<name>.

        on_oom="wait" (the default): a task that reaches the memory limit waits for reclaim
        (page-out to a slow swap device) instead of being killed, as the seed's laptop let its
        programs wait for the paging disk (see `Cgroup.wait_on_oom`); "kill" keeps the kernel's
        memory cgroup OOM killer."""
        if on_oom not in ("wait", "kill"):
            raise StateError(f"on_oom must be 'wait' or 'kill', not {on_oom!r}")
        cg = Cgroup(f"{CGROUP_PREFIX}-{name}")
        controllers = ["memory"] + (["blkio"] if read_bps else [])
        for ctrl in controllers:
            path = cg.path(ctrl)
            if path.exists():
                raise StateError(f"{path} exists already (run `pagelab state restore`)")
            self._change({"kind": "cgroup", "path": str(path)}, lambda p=path: p.mkdir())
        if memory_limit is not None:
            cg.set("memory", cg.limit_file(), str(memory_limit), expect_rounded=True)
        if memsw_limit is not None:
            if cg.v2:
                cg.set("memory", "memory.swap.max", str(memsw_limit), expect_rounded=True)
            elif (cg.path("memory") / "memory.memsw.limit_in_bytes").exists():
                cg.set("memory", "memory.memsw.limit_in_bytes", str(memsw_limit), expect_rounded=True)
            else:
                raise StateError("memory+swap limits need swap accounting (swapaccount=1)")
        if swappiness is not None and not cg.v2:
            cg.set("memory", "memory.swappiness", str(swappiness))
        if memory_limit is not None and on_oom == "wait":
            cg.wait_on_oom()
        for dev, bps in (read_bps or {}).items():
            cg.set("blkio", "blkio.throttle.read_bps_device", f"{dev} {bps}", check=False)
        self.effective.update({f"cgroup.{k}": v for k, v in cg.effective.items()})
        return cg


def _proc_starttime(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def _make_swap_file(path: Path, size: int) -> None:
    with open(path, "wb") as fh:
        os.posix_fallocate(fh.fileno(), 0, size)
    os.chmod(path, 0o600)
    _run(["mkswap", str(path)])


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


# --------------------------------------------------------------------------------------------
# Undo.
# Each `_undo_<kind>` takes a journal entry, acts only on what the entry identifies, and is safe
# to run whatever happened after the entry was written; it verifies that the change is gone and
# otherwise raises StateError naming what still holds it.


def _undo_knob(e: dict[str, Any]) -> None:
    knob = KNOBS[e["name"]]
    if knob.exists() and knob.read() != e["old"]:
        _write(knob.path, e["old"])
        if knob.read() != e["old"]:
            raise StateError(f"{e['name']}: wrote {e['old']!r} back, the kernel reports {knob.read()!r}")


def _swap_identity(path: str) -> dict[str, Any]:
    """What identifies a swap area besides its path: a block device's number, a file's device
    and inode."""
    try:
        st = os.stat(path)
    except OSError:
        return {}
    if (st.st_mode & 0o170000) == 0o060000:  # a block device
        return {"rdev": _majmin(st.st_rdev)}
    return {"dev": _majmin(st.st_dev), "inode": st.st_ino}


def _swaps_of(e: dict[str, Any]) -> list[str]:
    """The active swap areas the entry names: by path, or by device number or inode when the
    path now leads elsewhere."""
    found = []
    for name in active_swaps():
        if name == e["device"]:
            found.append(name)
            continue
        ident = _swap_identity(name)
        if ("rdev" in e and ident.get("rdev") == e["rdev"]) or \
                ("inode" in e and (ident.get("dev"), ident.get("inode")) == (e["dev"], e["inode"])):
            found.append(name)
    return found


def _swap_off(name: str) -> None:
    _swapoff(name)
    if name in active_swaps():
        raise StateError(f"swapoff {name} returned but it is still in /proc/swaps")


def _undo_swapon(e: dict[str, Any]) -> None:
    for name in _swaps_of(e):
        _swap_off(name)


def _undo_file(e: dict[str, Any]) -> None:
    Path(e["path"]).unlink(missing_ok=True)


def _undo_zram(e: dict[str, Any]) -> None:
    dev = f"/dev/{e['device']}"
    if dev in active_swaps():
        _swap_off(dev)
    sysdir = Path("/sys/block") / e["device"]

    def reset() -> bool:
        if (sysdir / "disksize").read_text().strip() == "0":
            return True
        try:
            _write(sysdir / "reset", "1")
        except StateError:
            return False  # busy: something still has it open
        return (sysdir / "disksize").read_text().strip() == "0"

    if sysdir.exists() and not _poll(reset, LOOP_DETACH_WAIT_S, 0.05):
        raise StateError(f"{dev} did not reset in {LOOP_DETACH_WAIT_S:g} s; held by: "
                         f"{', '.join(_block_holders(dev)) or 'nothing found'}")


# -- loop devices ------------------------------------------------------------------------------


class _LoopTaken(Exception):
    """LOOP_CONFIGURE found the device bound: another program took it after LOOP_CTL_GET_FREE."""


def _loop_get_free() -> int:
    fd = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
    try:
        return fcntl.ioctl(fd, LOOP_CTL_GET_FREE)
    except OSError as exc:
        raise StateError(f"no free loop device: {exc.strerror}") from exc
    finally:
        os.close(fd)


def _loop_configure(device: str, backing: Path, direct_io: bool) -> None:
    """Attach `backing` to `device` (what `losetup --direct-io` does, in one ioctl)."""
    flags = os.O_RDWR | os.O_CLOEXEC
    try:
        bfd = os.open(backing, flags | (os.O_DIRECT if direct_io else 0))
    except OSError as exc:
        raise StateError(f"cannot open {backing} for a loop device: {exc.strerror}") from exc
    try:
        lfd = os.open(device, os.O_RDWR | os.O_CLOEXEC)
        try:
            info = _LOOP_INFO64.pack(0, 0, 0, 0, 0, 0, 0, 0, LO_FLAGS_DIRECT_IO if direct_io else 0,
                                     os.fsencode(backing)[-63:], b"", b"", 0, 0)
            fcntl.ioctl(lfd, LOOP_CONFIGURE, _LOOP_CONFIG.pack(bfd, 0, info, *[0] * 8))
        except OSError as exc:
            if exc.errno == errno.EBUSY:
                raise _LoopTaken(device) from exc
            raise StateError(f"attaching {backing} to {device}: {exc.strerror}") from exc
        finally:
            os.close(lfd)
    finally:
        os.close(bfd)


def _diskseq(name: str) -> int | None:
    """The block device's disk sequence number (Linux >= 5.15): it moves on at every attach and
    detach of a loop device, so it names one attach."""
    raw = _read(Path("/sys/block", name, "diskseq"))
    return int(raw) if raw and raw.isdigit() else None


def loop_attached(device: str) -> bool:
    return Path("/sys/block", Path(device).name, "loop", "backing_file").exists()


def loop_backing_identity(device: str) -> tuple[str, int] | None:
    """(device as major:minor, inode) of the file behind an attached loop device, from the
    kernel (LOOP_GET_STATUS64); None when it is not attached or the file's file system no longer
    answers (a FUSE file whose daemon is gone)."""
    try:
        fd = os.open(device, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        buf = bytearray(_LOOP_INFO64.size)
        fcntl.ioctl(fd, LOOP_GET_STATUS64, buf, True)
    except OSError:
        return None
    finally:
        os.close(fd)
    lo_device, lo_inode = _LOOP_INFO64.unpack(bytes(buf))[:2]
    return _majmin(lo_device), lo_inode


def _loop_is_ours(e: dict[str, Any]) -> bool:
    """Whether the entry's attach is the one on its device now: the device is attached, its
    number is the journaled one, its disk sequence number is the journaled one + 1 (no other
    attach or detach since), and its backing file, where the kernel can still tell, is the
    journaled one."""
    name = Path(e["device"]).name
    if not loop_attached(e["device"]):
        return False
    if e.get("rdev") and _read(Path("/sys/block", name, "dev")) != e["rdev"]:
        return False
    seq = _diskseq(name)
    if e.get("diskseq") is not None and seq is not None and seq != e["diskseq"] + 1:
        return False
    ident = loop_backing_identity(e["device"])
    return ident is None or ident == (e["dev"], e["inode"])


def _detach_loop(device: str, what: str) -> None:
    """Swap off, detach (LOOP_CLR_FD), and wait for the detach: while something still has the
    device open the kernel only marks it to detach on the last close."""
    if device in active_swaps():
        _swap_off(device)
    try:
        fd = os.open(device, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return
    try:
        fcntl.ioctl(fd, LOOP_CLR_FD, 0)
    except OSError as exc:
        if exc.errno != errno.ENXIO:  # ENXIO: not attached (any more)
            raise StateError(f"detaching {device} ({what}): {exc.strerror}") from exc
    finally:
        os.close(fd)
    if not _poll(lambda: not loop_attached(device), LOOP_DETACH_WAIT_S, 0.02):
        raise StateError(f"{device} ({what}) is still attached {LOOP_DETACH_WAIT_S:g} s after its detach; "
                         f"held by: {', '.join(_block_holders(device)) or 'nothing found'}")


def _undo_loop(e: dict[str, Any]) -> None:
    if "device" not in e:  # a line journaled before loop devices were journaled by name
        for dev in loops_backed_by():
            path = _read(Path("/sys/block", Path(dev).name, "loop", "backing_file"))
            if path == e["backing"] or loop_backing_identity(dev) == (e.get("dev"), e.get("inode")):
                _detach_loop(dev, e["backing"])
        return
    if _loop_is_ours(e):
        _detach_loop(e["device"], f"backing {e['backing']}")


# -- mounts and daemons ------------------------------------------------------------------------


@dataclass(frozen=True)
class Mount:
    """One line of /proc/self/mountinfo."""
    mount_id: int
    fs: str          # the mounted file system's device, major:minor (st_dev of its files)
    mountpoint: str
    fstype: str
    source: str


def _unescape(field: str) -> str:
    """mountinfo's octal escapes (\\040 for a space, ...)."""
    import re

    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mountinfo() -> list[Mount]:
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        f, r = left.split(), right.split()
        if len(f) >= 5 and len(r) >= 2:
            out.append(Mount(int(f[0]), f[2], _unescape(f[4]), r[0], _unescape(r[1])))
    return out


def _fs_holders(m: Mount) -> list[str]:
    """What keeps a mounted file system busy: loop devices and swap files on it, processes with
    a file, a directory or a mapping on it (by mount ID from fdinfo, or by path)."""
    found = [f"{dev} (a loop device on {path})" for dev, path in _loops_on(m)]
    found += [f"{s} (swap)" for s in active_swaps() if s.startswith(m.mountpoint + "/")]
    inside = m.mountpoint.rstrip("/") + "/"
    for proc in Path("/proc").glob("[0-9]*"):
        why = []
        try:
            for link in ("cwd", "root"):
                target = os.readlink(proc / link)
                if target == m.mountpoint or target.startswith(inside):
                    why.append(link)
            for fdinfo in (proc / "fdinfo").iterdir():
                for line in fdinfo.read_text().splitlines():
                    if line.startswith("mnt_id:") and int(line.split()[1]) == m.mount_id:
                        why.append(f"fd {fdinfo.name}")
            if any(ln.split()[3:4] == [m.fs] for ln in (proc / "maps").read_text().splitlines()):
                why.append("a mapping")
        except (OSError, ValueError):
            continue
        if why:
            found.append(f"pid {proc.name} ({_read(proc / 'comm')}: {', '.join(why)})")
    return found


def _loops_on(m: Mount) -> list[tuple[str, str]]:
    """Attached loop devices whose backing file lies on this mount (by the kernel's device
    number for it, or by path while that still leads into the mount)."""
    found = []
    for dev in loops_backed_by():
        path = _read(Path("/sys/block", Path(dev).name, "loop", "backing_file")) or ""
        ident = loop_backing_identity(dev)
        if (ident is not None and ident[0] == m.fs) or path.startswith(m.mountpoint.rstrip("/") + "/"):
            found.append((dev, path))
    return found


def _unmount(m: Mount, daemon: dict[str, Any] | None = None) -> None:
    """Unmount one mount: first what this module put on it (loop devices, swap), then the mount
    itself; while it is busy, kill its daemon (its file system then fails every request, so our
    own programs reading it give up) and wait. Never a lazy unmount, which would hide a file
    system that is still in use: SIGKILL, because a FUSE daemon ending cleanly detaches its
    mount lazily (libfuse, as root)."""
    for dev, path in _loops_on(m):
        _detach_loop(dev, f"backing {path}")
    for s in active_swaps():
        if s.startswith(m.mountpoint.rstrip("/") + "/"):
            _swap_off(s)

    def gone() -> bool:
        if all(x.mount_id != m.mount_id for x in mountinfo()):
            return True
        try:
            _syscall("umount2", os.fsencode(m.mountpoint), 0)
        except OSError as exc:
            if exc.errno not in (errno.EBUSY, errno.EINVAL, errno.ENOENT):
                raise StateError(f"unmounting {m.mountpoint}: {exc.strerror}") from exc
        return all(x.mount_id != m.mount_id for x in mountinfo())

    if gone():
        return
    if daemon is not None:
        _end_process(daemon, signal.SIGKILL)
    if not _poll(gone, UNMOUNT_WAIT_S, 0.05):
        raise StateError(f"{m.mountpoint} ({m.fstype}) is still mounted {UNMOUNT_WAIT_S:g} s on; "
                         f"held by: {', '.join(_fs_holders(m)) or 'nothing found'}")


def _undo_mount(e: dict[str, Any]) -> None:
    for m in mountinfo():
        if m.mount_id == e["mount_id"] and m.fs == e["fs"]:
            _unmount(m, e if e.get("pid") else None)


def _undo_daemon(e: dict[str, Any]) -> None:
    """Only the intent was journaled (the mount's ID was not known yet): a FUSE mount on the
    journaled mount point."""
    mp = e.get("mountpoint")
    for m in mountinfo():
        if mp and m.mountpoint == mp and m.fstype.startswith("fuse"):
            _unmount(m, e if e.get("pid") else None)


def _end_process(e: dict[str, Any], sig: int = signal.SIGTERM) -> None:
    """End the process the entry names (pid and start time, so never a later process that got
    the same pid): `sig`, then SIGKILL after 5 s."""
    pid, start = e["pid"], e.get("starttime")
    if start is None or _proc_starttime(pid) != start:
        return  # gone, or the pid now belongs to someone else
    os.kill(pid, sig)

    def gone() -> bool:
        _reap(pid)
        return _proc_starttime(pid) != start

    if not _poll(gone, 5, 0.01):
        os.kill(pid, signal.SIGKILL)
        if not _poll(gone, 5, 0.01):
            raise StateError(f"pid {pid} ({' '.join(e.get('cmd', [])[:1])}) did not end after SIGKILL "
                             f"(state {_proc_state(pid)})")


def _undo_daemon_pid(e: dict[str, Any]) -> None:
    _undo_daemon(e)
    _end_process(e)


def _poll(done: Callable[[], bool], seconds: float, step: float) -> bool:
    """Whether `done()` came true within `seconds`, asking every `step` seconds."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() >= deadline:
            return False
        time.sleep(step)
    return True


def _block_holders(device: str) -> list[str]:
    """What keeps a block device busy: swap on it, a mount of it, a device stacked on it,
    processes with it open."""
    name = Path(device).name
    found = [f"swap on {device}"] if device in active_swaps() else []
    rdev = _read(Path("/sys/block", name, "dev"))
    found += [f"mounted on {m.mountpoint}" for m in mountinfo() if rdev and m.fs == rdev]
    holders = Path("/sys/block", name, "holders")
    found += [f"{h.name} (stacked on it)" for h in (holders.iterdir() if holders.is_dir() else [])]
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if any(os.readlink(fd) == device for fd in (proc / "fd").iterdir()):
                found.append(f"pid {proc.name} ({_read(proc / 'comm')})")
        except OSError:
            continue
    return found


def _proc_state(pid: int) -> str:
    stat = _read(Path(f"/proc/{pid}/stat")) or ""
    return stat.rsplit(")", 1)[1].split()[0] if ")" in stat else "gone"


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


# -- cgroups -----------------------------------------------------------------------------------


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


def _undo_cgroup(e: dict[str, Any]) -> None:
    """Remove one of our pagelab-* cgroups. Its remaining tasks are this harness's programs
    (hogs, victims, floods the trial put there, orphaned when the run was killed): they are
    ended, then the group goes once its charges have drained."""
    path = Path(e["path"])
    if not path.exists():
        return
    _end_tasks(path)

    def removed() -> bool:
        try:
            path.rmdir()
        except FileNotFoundError:
            return True
        except OSError:
            return False  # charges drain asynchronously after the last task leaves
        return True

    if not _poll(removed, 5, 0.05):
        raise StateError(f"cannot remove cgroup {path} (empty of tasks; its kernel objects are still busy)")


def _leave_run_group(journal: Journal, pid: int) -> None:
    """Move a process (a daemon) from this run's group to the hierarchy's root."""
    for e in journal.entries():
        if e.get("kind") == "run" and Path(e["path"]).exists():
            _write(Path(e["path"]).parent / "cgroup.procs", str(pid))


# -- scratch -----------------------------------------------------------------------------------


def _scratch_entries(directory: Path, prefix: str) -> list[Path]:
    if not directory.is_dir():
        return []
    return [p for p in directory.iterdir() if p.name.startswith(prefix + "-") or p.name.startswith(prefix + ".")]


def remove_tree(path: Path) -> None:
    """Remove a file or a directory and what is in it, never through a mount: a mount still
    inside is an error naming it (its undo comes first)."""
    path = Path(path)
    if not os.path.lexists(path):
        return
    inside = str(path).rstrip("/") + "/"
    mounted = [m.mountpoint for m in mountinfo() if m.mountpoint == str(path) or m.mountpoint.startswith(inside)]
    if mounted:
        raise StateError(f"not removing {path}: {', '.join(mounted)} is still mounted in it")
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
    if os.path.lexists(path):
        raise StateError(f"{path} is still there after its removal")


def _undo_workdir(e: dict[str, Any]) -> None:
    remove_tree(Path(e["path"]))


def _undo_scratch(e: dict[str, Any]) -> None:
    keep = set(e.get("existing", []))
    for p in _scratch_entries(Path(e["dir"]), e["prefix"]):
        if p.name not in keep:
            remove_tree(p)


UNDO: dict[str, Callable[[dict[str, Any]], None]] = {
    "knob": _undo_knob, "swapon": _undo_swapon, "file": _undo_file, "zram": _undo_zram,
    "loop": _undo_loop, "daemon": _undo_daemon, "daemon_pid": _undo_daemon_pid, "mount": _undo_mount,
    "cgroup": _undo_cgroup, "run": _undo_cgroup, "workdir": _undo_workdir, "scratch": _undo_scratch,
    "action": lambda e: None,
}


def describe(e: dict[str, Any]) -> str:
    """A journal entry in a few words: its kind and what it names."""
    what = (e.get("name") or e.get("device") or e.get("path") or e.get("mountpoint") or e.get("backing")
            or (f"{e['dir']}/{e['prefix']}-*" if e.get("kind") == "scratch" else "") or e.get("what") or "")
    return f"{e.get('kind')}:{what}"


def _undo_all(entries: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """Undo `entries` in the order given: what was undone, and what could not be (with why)."""
    done, failed = [], []
    for e in entries:
        undo = UNDO.get(e.get("kind", ""))
        if undo is None:
            failed.append(f"unknown journal entry {e}")
            continue
        try:
            _fault_point("restore")
            undo(e)
            _fault_point("restore")
            done.append(describe(e))
        except (OSError, StateError) as exc:
            failed.append(f"{describe(e)}: {exc}")
    return done, failed


def restore(journal: Journal | None = None, keep: int = 0) -> list[str]:
    """Undo every journaled change after the first `keep`, newest first; idempotent. Returns
    what was undone.

    The journal shrinks as the undos succeed (each line goes once it and every newer one are
    undone, so that it always holds what is left to undo, also after a kill during the
    restore); the older lines are still undone after a failure, but the failed one and the
    older ones stay for another try, and StateError lists what failed and what holds it.
    """
    journal = journal or Journal()
    entries = journal.entries()
    done, failed = [], []
    for e in entries[keep:]:
        if e.get("kind") == "run" and _proc_starttime(e["pid"]) != e["starttime"]:
            # the run is gone: first end the programs that outlived it (they may hold a device)
            try:
                _end_tasks(Path(e["path"]))
            except StateError as exc:
                failed.append(f"{describe(e)}: {exc}")
    for i in range(len(entries) - 1, keep - 1, -1):
        ok, bad = _undo_all([entries[i]])
        done += ok
        failed += bad
        if not failed:
            journal.truncate(i)
    if failed:
        raise StateError("restore incomplete: " + "; ".join(failed))
    if keep == 0:
        journal.clear()  # also a torn last line
    return done


@contextmanager
def exclusive(journal: Journal | None = None, wait: bool = True) -> Iterator[None]:
    """Hold the journal's lock: one run changes paging state at a time (a second one would
    restore, i.e. undo, the first one's changes). With wait=False a held lock is an error."""
    import fcntl

    journal = journal or Journal()
    journal.path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = journal.path.with_name(journal.path.name + ".lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            if not wait:
                raise StateError(f"another pagelab run (pid {holder}) is changing paging state; "
                                 "wait for it to finish") from None
            print(f"pagelab: waiting for another run (pid {holder}) to finish changing paging state",
                  file=sys.stderr, flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing releases the lock


@contextmanager
def session(journal: Journal | None = None) -> Iterator[State]:
    """Take the state lock, restore anything a crashed run left, yield a State, restore on
    exit (also on SIGTERM and SIGHUP, which are turned into exceptions so the restore runs)."""
    journal = journal or Journal()
    with exclusive(journal):
        yield from _session(journal)


_CURRENT: State | None = None


def current() -> State | None:
    """The State of this process's open session, if any: for helpers that journal through it
    without being handed it (experiment.work_dir)."""
    return _CURRENT


def _session(journal: Journal) -> Iterator[State]:
    global _CURRENT
    # The first SIGTERM/SIGHUP/SIGINT becomes an exception (SystemExit 128 + signal), so the
    # restore below runs; while a change or an undo is under way, and during the restores here,
    # signals wait (State.held): later ones (a make killed as a process group sends one to every
    # process, Snakemake another) cannot cut an undo short and leave a loop device or a mount.
    st = State(journal)
    old = {s: signal.signal(s, st._on_signal) for s in HELD_SIGNALS}
    finished = False
    try:
        with st.held():
            restore(journal)  # what a killed run left
        st.run_group()
        _CURRENT = st
        yield st
        finished = True
    finally:
        _CURRENT = None
        try:
            with st.held():
                restore(journal)
        finally:
            for s, h in old.items():
                signal.signal(s, h)
        if st.signalled is not None and finished:  # its SystemExit was lost (stop_if_signalled)
            raise SystemExit(128 + st.signalled)


# --------------------------------------------------------------------------------------------
# Held while open: a request the kernel drops by itself.

CPU_LATENCY_QOS = Path("/dev/cpu_dma_latency")


@contextmanager
def cpu_latency_limit(us: int = 0) -> Iterator[None]:
    """For the duration, every CPU's idle governor may use only idle states that wake within
    `us` microseconds; 0 rules out halting, so an idle CPU polls (what tuned's
    latency-performance profile does for latency benchmarks). A PM QoS request held by an open
    /dev/cpu_dma_latency: the kernel drops it when the file closes, by this process or by its
    death (kill -9 included), so there is nothing to journal or restore. StateError where the
    machine cannot take it (no such device, not root)."""
    try:
        fd = os.open(CPU_LATENCY_QOS, os.O_WRONLY)
    except OSError as exc:
        raise StateError(f"cannot request a CPU wake-up latency limit ({CPU_LATENCY_QOS}): "
                         f"{exc.strerror}") from exc
    try:
        os.write(fd, struct.pack("i", us))
        yield
    finally:
        os.close(fd)


def cpu_latency_limit_now() -> int | None:
    """The wake-up latency limit in force, in us (2,000,000,000: none); None without the device."""
    try:
        with open(CPU_LATENCY_QOS, "rb") as f:
            return struct.unpack("i", f.read(4))[0]
    except OSError:
        return None


# --------------------------------------------------------------------------------------------
# Reading the state.


def zswap_compressors() -> list[str]:
    """Compressors the crypto API offers (what zswap can use; zram has its own list)."""
    names, current = [], None
    for line in Path("/proc/crypto").read_text().splitlines():
        key, _, val = (x.strip() for x in line.partition(":"))
        if key == "name":
            current = val
        elif key == "type" and val in ("compression", "scomp", "acomp") and current not in names:
            names.append(current)
    return names


def zram_algorithms(device: str = "zram0") -> list[str]:
    path = Path("/sys/block") / device / "comp_algorithm"
    return path.read_text().replace("[", "").replace("]", "").split() if path.exists() else []


def active_swaps() -> list[str]:
    lines = Path("/proc/swaps").read_text().splitlines()[1:]
    return [ln.split()[0] for ln in lines if ln.strip()]


def mounts(fstype_prefix: str = "fuse") -> list[str]:
    """Mount points of the mounts whose file system type starts with `fstype_prefix`."""
    return [m.mountpoint for m in mountinfo() if m.fstype.startswith(fstype_prefix)]


def loops_backed_by(backing: str | None = None) -> list[str]:
    """Attached loop devices: all, or those whose backing file's path (as the kernel shows it
    now) is `backing`."""
    found = []
    for d in sorted(Path("/sys/block").glob("loop*")):
        path = _read(d / "loop" / "backing_file")
        if path is not None and (backing is None or path == backing):
            found.append(f"/dev/{d.name}")
    return found


def cgroups() -> list[str]:
    """Cgroups this module makes (pagelab-*) that exist now."""
    found = set()
    for base in ([CGROUP_ROOT / c for c in ("memory", "blkio", "pids")] + [CGROUP_ROOT]):
        if base.is_dir():
            found.update(str(p) for p in base.glob(f"{CGROUP_PREFIX}-*") if p.is_dir())
    return sorted(found)


def show() -> dict[str, Any]:
    """The current settings of everything this module can change (no counters)."""
    zram = {}
    for d in sorted(Path("/sys/block").glob("zram*")):
        zram[d.name] = {
            "disksize": (d / "disksize").read_text().strip(),
            "comp_algorithm": normalise("choice", (d / "comp_algorithm").read_text()),
        }
    return {
        "knobs": {n: (k.read() if k.exists() else None) for n, k in KNOBS.items()},
        "swaps": active_swaps(),
        "zram": zram,
        "loop_devices": {dev: Path(f"/sys/block/{Path(dev).name}/loop/backing_file").read_text().strip()
                         for dev in loops_backed_by()},
        "fuse_mounts": mounts(),
        "cgroups": cgroups(),
        "cpu_latency_limit_us": cpu_latency_limit_now(),
        "journal": str(journal_path()) if journal_path().exists() else None,
    }


# --------------------------------------------------------------------------------------------
# State no journal explains.


@dataclass(frozen=True)
class Orphan:
    what: str              # one line for the user: what it is and why it counts as left behind
    entry: dict[str, Any]  # the journal entry whose undo clears it


def scratch_dirs() -> list[Path]:
    """Where this repository's runs and tests keep their scratch files."""
    from pagelab.paths import root

    return [root() / "scratch", root() / ".pytest-scratch"]


def _under(path: str, dirs: list[Path]) -> bool:
    return any(path == str(d) or path.startswith(str(d).rstrip("/") + "/") for d in dirs)


def _emulator_mount(m: Mount) -> bool:
    return m.fstype.startswith("fuse") and (m.fstype.endswith(".simdisk") or m.source == "simdisk")


def orphans(journal: Journal | None = None) -> list[Orphan]:
    """State of the kinds this module makes that no entry of the journal explains: a loop device
    whose backing file is gone, lies under a scratch directory or on the emulator's FUSE file
    system; a swap area on a deleted file or under a scratch directory; a FUSE mount of the
    emulator; a pagelab-* cgroup. Nothing else on the machine is judged."""
    entries = (journal or Journal()).entries()
    scratch = scratch_dirs()
    emulator = [m for m in mountinfo() if _emulator_mount(m)]
    kinds: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        kinds.setdefault(e.get("kind", ""), []).append(e)
    found: list[Orphan] = []

    journaled_swaps = {s for e in kinds.get("swapon", []) + kinds.get("zram", []) for s in
                       (_swaps_of(e) if e["kind"] == "swapon" else [f"/dev/{e['device']}"])}
    for name in active_swaps():
        if name not in journaled_swaps and ("(deleted)" in name or _under(name, scratch)):
            found.append(Orphan(f"swap {name}: " + ("its file was deleted" if "(deleted)" in name
                                                    else "a swap file under scratch"),
                                {"kind": "swapon", "device": name}))

    journaled_loops = {e.get("device") for e in kinds.get("loop", []) if e.get("device") and _loop_is_ours(e)}
    for dev in loops_backed_by():
        if dev in journaled_loops:
            continue
        name = Path(dev).name
        path = _read(Path("/sys/block", name, "loop", "backing_file")) or "?"
        ident = loop_backing_identity(dev)
        why = None
        if ident is None:
            why = "the file system of its backing file no longer answers"
        elif path.endswith("(deleted)"):
            why = "its backing file was deleted"
        else:
            try:
                st = os.stat(path)
                same = (_majmin(st.st_dev), st.st_ino) == ident
            except OSError:
                same = False
            if not same:
                why = "its backing file is gone (the path leads nowhere, or to another file)"
            elif any(m.fs == ident[0] for m in emulator):
                why = "its backing file is on the emulator's FUSE file system"
            elif _under(path, scratch):
                why = "its backing file lies under scratch"
        if why:
            seq = _diskseq(name)
            found.append(Orphan(
                f"loop device {dev} (backing {path}{', swap on it' if dev in active_swaps() else ''}): {why}",
                {"kind": "loop", "device": dev, "rdev": _read(Path("/sys/block", name, "dev")),
                 "diskseq": seq - 1 if seq is not None else None, "backing": path,
                 "dev": ident[0] if ident else None, "inode": ident[1] if ident else None}))

    journaled_mounts = {(e["mount_id"], e["fs"]) for e in kinds.get("mount", [])}
    journaled_points = {e.get("mountpoint") for e in kinds.get("daemon", []) + kinds.get("daemon_pid", [])}
    for m in emulator:
        if (m.mount_id, m.fs) not in journaled_mounts and m.mountpoint not in journaled_points:
            found.append(Orphan(f"FUSE mount of the emulator on {m.mountpoint} (mount ID {m.mount_id})",
                                {"kind": "mount", "mountpoint": m.mountpoint, "mount_id": m.mount_id, "fs": m.fs,
                                 "fstype": m.fstype}))

    journaled_groups = {e["path"] for e in kinds.get("cgroup", []) + kinds.get("run", [])}
    for path in cgroups():
        if path not in journaled_groups:
            found.append(Orphan(f"cgroup {path}", {"kind": "cgroup", "path": path}))
    return found


def clear_orphans(journal: Journal | None = None) -> list[str]:
    """Undo what `orphans` finds, with the same undos as a restore (swap, then loop devices, then
    mounts, then cgroups), and check that none is left; returns what was cleared."""
    found = orphans(journal)
    order = {"swapon": 0, "loop": 1, "mount": 2, "cgroup": 3}
    _, failed = _undo_all(sorted((o.entry for o in found), key=lambda e: order[e["kind"]]))
    left = orphans(journal)
    if failed or left:
        raise StateError("could not clear: " + "; ".join(failed or [f"{o.what}: still there" for o in left]))
    return [o.what for o in found]
