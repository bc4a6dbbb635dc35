"""The one module that changes system-wide paging state, and puts it back.

Every change is journaled *before* it is made (write-ahead: one fsynced JSON line per change,
holding what is needed to undo it), read back after it is made (a mismatch raises StateError),
and undone by `restore()`, which replays the journal in reverse. Each undo checks the current
state first, so restore is idempotent and also correct when the process died between the
journal line and the change (kill -9 at any point). The harness calls restore on start-up
and on exit.

What it changes: sysctls and module parameters (vm.page-cluster, vm.swappiness,
vm.nr_hugepages, zswap's parameters, free page reporting's min_free_ms), zram devices, swap
(files and block devices), loop devices, FUSE mounts of the emulator (with its daemon), memory
and blkio cgroups (v1 here, v2 where mounted), and the page cache (drop_caches, an action with
nothing to undo). One request is held, not journaled: a CPU wake-up latency limit
(`cpu_latency_limit`), which the kernel itself drops when the file that holds it closes, also
when the process dies.
Not for: measuring; counters.py reads, this module writes.
"""

from __future__ import annotations

import json
import os
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
        self.signalled: int | None = None  # the SIGTERM/SIGHUP `session` turned into SystemExit

    def stop_if_signalled(self) -> None:
        """Raise the SystemExit a SIGTERM or SIGHUP asked for once more. The handler raises it
        wherever the program is; inside a __del__ (a dropped Popen's, say) Python prints it and
        carries on, and the run would go on to its end. Called before each trial, so such a run
        stops there."""
        if self.signalled is not None:
            raise SystemExit(128 + self.signalled)

    @contextmanager
    def scope(self) -> Iterator[State]:
        """Changes made inside are undone on leaving it (e.g. one trial's devices), while the
        session's earlier changes stay."""
        mark = len(self.journal.entries())
        try:
            yield self
        finally:
            restore(self.journal, keep=mark)

    def _change(self, entry: dict[str, Any], act: Callable[[], None]) -> None:
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
        device = str(Path(device).resolve())
        if device in active_swaps():
            raise StateError(f"{device} is already swap; refusing to take it over")
        cmd = ["swapon"] + (["-p", str(priority)] if priority is not None else []) + [device]
        self._change({"kind": "swapon", "device": device}, lambda: _run(cmd))
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
        backing = Path(backing).resolve()
        cmd = ["losetup", "--find", "--show"] + (["--direct-io=on"] if direct_io else []) + [str(backing)]
        result: list[str] = []
        st = os.stat(backing)
        # The backing file's identity (device and inode), not its path: a path can change under
        # the loop device (a lazily unmounted FUSE file shows as "/disk"), an inode cannot.
        self._change({"kind": "loop", "backing": str(backing), "inode": st.st_ino,
                      "dev": f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"},
                     lambda: result.append(_run(cmd).strip()))
        dev = Path(result[0])
        if direct_io:
            dio = Path(f"/sys/block/{dev.name}/loop/dio").read_text().strip()
            if dio != "1":
                raise StateError(f"{dev}: direct IO requested but the kernel reports dio={dio}")
        return dev

    # -- processes and mounts -----------------------------------------------------------------
    def daemon(self, cmd: list[str], mountpoint: Path | None = None, ready: Path | None = None,
               timeout: float = 20.0) -> subprocess.Popen[bytes]:
        """Start a daemon (e.g. the FUSE emulator) whose pid, and mount if any, are journaled;
        wait for `ready` to appear. Undo: unmount, then end that process (checked by start time)."""
        holder: list[subprocess.Popen[bytes]] = []
        held = {signal.SIGTERM, signal.SIGHUP}

        def act() -> None:
            holder.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                           preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_UNBLOCK, held)))

        # The pid is only known after the start; journal the intent, then the pid. A SIGTERM in
        # between would leave a daemon the undo cannot find (it then mounts after the restore):
        # TERM and HUP wait until the pid is in the journal (the daemon itself gets them as usual).
        entry = {"kind": "daemon", "cmd": cmd, "mountpoint": str(mountpoint) if mountpoint else None}
        old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, held)
        try:
            self._change(entry, act)
            proc = holder[0]
            self.journal.append({**entry, "kind": "daemon_pid", "pid": proc.pid,
                                 "starttime": _proc_starttime(proc.pid)})
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        if ready is not None and not _poll(lambda: Path(ready).exists() or proc.poll() is not None, timeout, 0.01):
            raise StateError(f"{cmd[0]} not ready after {timeout:.0f} s")
        if ready is not None and not Path(ready).exists():
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise StateError(f"{cmd[0]} exited {proc.returncode} before it was ready: {err.strip()}")
        return proc

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


def _undo_knob(e: dict[str, Any]) -> None:
    knob = KNOBS[e["name"]]
    if knob.exists() and knob.read() != e["old"]:
        _write(knob.path, e["old"])


def _undo_swapon(e: dict[str, Any]) -> None:
    if e["device"] in active_swaps():
        _run(["swapoff", e["device"]])


def _undo_file(e: dict[str, Any]) -> None:
    Path(e["path"]).unlink(missing_ok=True)


def _undo_zram(e: dict[str, Any]) -> None:
    dev = f"/dev/{e['device']}"
    if dev in active_swaps():
        _run(["swapoff", dev])
    sysdir = Path("/sys/block") / e["device"]
    if sysdir.exists() and (sysdir / "disksize").read_text().strip() != "0":
        _write(sysdir / "reset", "1")


def _undo_loop(e: dict[str, Any]) -> None:
    for dev in loops_backed_by(e["backing"], e.get("inode"), e.get("dev")):
        if dev in active_swaps():
            _run(["swapoff", dev])
        _run(["losetup", "-d", dev], check=False)
        # While anything still has the device open, losetup -d only marks it to detach on the
        # last close (autoclear): wait for that close.
        attached = Path(f"/sys/block/{Path(dev).name}/loop/backing_file")
        if not _poll(lambda f=attached: not f.exists(), LOOP_DETACH_WAIT_S, 0.05):
            raise StateError(f"{dev} is still attached to {e['backing']} {LOOP_DETACH_WAIT_S:.0f} s after "
                             f"losetup -d; open by: {', '.join(_openers(dev)) or 'no process'}")


def _poll(done: Callable[[], bool], seconds: float, step: float) -> bool:
    """Whether `done()` came true within `seconds`, asking every `step` seconds."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() >= deadline:
            return False
        time.sleep(step)
    return True


def _openers(path: str) -> list[str]:
    """'pid (comm)' of every process with `path` open, for an error message."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if any(os.readlink(fd) == path for fd in (proc / "fd").iterdir()):
                found.append(f"{proc.name} ({(proc / 'comm').read_text().strip()})")
        except OSError:
            continue
    return found


def _undo_daemon(e: dict[str, Any]) -> None:
    mp = e.get("mountpoint")
    if mp and mp in mounts():
        _run(["fusermount3", "-u", mp], check=False)
        if mp in mounts():
            _run(["umount", "-l", mp], check=False)


def _undo_daemon_pid(e: dict[str, Any]) -> None:
    _undo_daemon(e)
    pid, start = e["pid"], e.get("starttime")
    if start is None or _proc_starttime(pid) != start:
        return  # gone, or the pid now belongs to someone else
    os.kill(pid, signal.SIGTERM)

    def gone() -> bool:
        _reap(pid)
        return _proc_starttime(pid) != start

    if not _poll(gone, 5, 0.01):
        os.kill(pid, signal.SIGKILL)
        _reap(pid)


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _undo_cgroup(e: dict[str, Any]) -> None:
    path = Path(e["path"])
    if not path.exists():
        return
    parent_procs = path.parent / "cgroup.procs"
    for _ in range(50):
        pids = [p for p in (path / "cgroup.procs").read_text().split() if p]
        if not pids:
            break
        for pid in pids:  # move leftovers out so the group can go; never kill others' processes
            try:
                _write(parent_procs, pid)
            except StateError:
                pass
        time.sleep(0.02)
    for _ in range(100):
        try:
            path.rmdir()
            return
        except OSError:
            time.sleep(0.05)  # charges drain asynchronously after the last task leaves
    raise StateError(f"cannot remove cgroup {path}")


UNDO: dict[str, Callable[[dict[str, Any]], None]] = {
    "knob": _undo_knob, "swapon": _undo_swapon, "file": _undo_file, "zram": _undo_zram,
    "loop": _undo_loop, "daemon": _undo_daemon, "daemon_pid": _undo_daemon_pid,
    "cgroup": _undo_cgroup, "action": lambda e: None,
}


def restore(journal: Journal | None = None, keep: int = 0) -> list[str]:
    """Undo every journaled change after the first `keep`, newest first; idempotent. Returns
    what was undone.

    Only when every undo succeeded is the journal shortened (removed when keep is 0);
    otherwise it stays for another try and StateError lists what failed.
    """
    journal = journal or Journal()
    done, failed = [], []
    for e in reversed(journal.entries()[keep:]):
        undo = UNDO.get(e.get("kind", ""))
        if undo is None:
            failed.append(f"unknown journal entry {e}")
            continue
        try:
            _fault_point("restore")
            undo(e)
            _fault_point("restore")
            done.append(e["kind"] + ":" + str(e.get("name") or e.get("device") or e.get("path")
                                               or e.get("backing") or e.get("mountpoint") or ""))
        except (OSError, StateError) as exc:
            failed.append(f"{e['kind']}: {exc}")
    if failed:
        raise StateError("restore incomplete: " + "; ".join(failed))
    journal.truncate(keep)
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


def _session(journal: Journal) -> Iterator[State]:
    restore(journal)
    # The first SIGTERM/SIGHUP becomes an exception, so the restore below runs; later ones (a
    # make killed as a process group sends one to every process, Snakemake another) cannot cut
    # that restore short and leave a loop device or a mount: they wait until it has run.
    pending: list[int] = []  # signals that came while the final restore ran
    restoring = False
    st = State(journal)

    def on_signal(signum: int, frame: Any) -> None:
        if st.signalled is not None or restoring:
            pending.append(signum)
            return
        st.signalled = signum
        raise SystemExit(128 + signum)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGHUP)}
    finished = False
    try:
        yield st
        finished = True
    finally:
        restoring = True
        try:
            restore(journal)
        finally:
            for s, h in old.items():
                signal.signal(s, h)
        if pending and st.signalled is None:
            raise SystemExit(128 + pending[0])
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
    out = []
    for line in Path("/proc/mounts").read_text().splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[2].startswith(fstype_prefix):
            out.append(parts[1])
    return out


def loops_backed_by(backing: str | None = None, inode: int | None = None, dev: str | None = None) -> list[str]:
    """Attached loop devices: all, or those whose backing file is `backing` (by path) or is
    the file with this inode on this device (by identity, which survives path changes: the
    file of a lazily unmounted FUSE mount shows as "/disk")."""
    identity: dict[str, tuple[int, str]] = {}
    if inode is not None:
        out = subprocess.run(["losetup", "-l", "-n", "-O", "NAME,BACK-INO,BACK-MAJ:MIN"],
                             capture_output=True, text=True, timeout=60)
        for line in out.stdout.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1].isdigit():
                identity[parts[0]] = (int(parts[1]), parts[2])
    found = []
    for d in sorted(Path("/sys/block").glob("loop*")):
        bf = d / "loop" / "backing_file"
        if not bf.exists():
            continue
        name = f"/dev/{d.name}"
        same_file = name in identity and identity[name][0] == inode and (dev is None or identity[name][1] == dev)
        if backing is None or bf.read_text().strip() == backing or same_file:
            found.append(name)
    return found


def cgroups() -> list[str]:
    """Cgroups this module makes (pagelab-*) that exist now."""
    found = set()
    for base in ([CGROUP_ROOT / c for c in ("memory", "blkio")] + [CGROUP_ROOT]):
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
