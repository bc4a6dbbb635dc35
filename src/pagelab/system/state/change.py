"""The change API: `State`, whose every change is journaled first, then made, then read back
(a mismatch raises StateError); and `cpu_latency_limit`, a request held while open that the
kernel drops by itself (nothing to journal).
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pagelab.system.state.cgroup import CGROUP_PREFIX, CGROUP_ROOT, Cgroup
from pagelab.system.state.journal import Journal, _fault_point, describe
from pagelab.system.state.kernel import (
    _LOOP_CONFIG,
    _LOOP_INFO64,
    CPU_LATENCY_QOS,
    KNOBS,
    LO_FLAGS_DIRECT_IO,
    LOOP_CONFIGURE,
    LOOP_CTL_GET_FREE,
    StateError,
    _majmin,
    _poll,
    _proc_starttime,
    _read,
    _run,
    _swapon,
    _write,
    normalise,
)
from pagelab.system.state.lock import require
from pagelab.system.state.query import (
    _diskseq,
    _scratch_entries,
    _swap_identity,
    active_swaps,
    mountinfo,
    zram_algorithms,
    zswap_compressors,
)
from pagelab.system.state.signals import SignalHold
from pagelab.system.state.undo import restore


class State(SignalHold):
    """Make journaled changes. Use as a context manager (see `session`)."""

    def __init__(self, journal: Journal | None = None):
        super().__init__()
        self.journal = journal or Journal()
        self.effective: dict[str, str] = {}
        # the owner's id, carried in the names of the cgroups and mounts it makes, so that no
        # other run's clear-orphans takes them while it lives
        self.owner = os.getpid()

    @contextmanager
    def scope(self) -> Iterator[State]:
        """Changes made inside are undone on leaving it (e.g. one trial's devices), while the
        session's earlier changes stay."""
        mark = len(self.journal.entries())
        try:
            yield self
        finally:
            with self.held():
                undone = restore(self.journal, keep=mark)
            if undone:
                _fault_point("scope-end", self.journal)

    def _change(self, entry: dict[str, Any], act: Callable[[], None]) -> None:
        require(describe(entry))
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
        require(f"drop_caches={level}")
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
    def loop(self, backing: Path, direct_io: bool = True, offset: int = 0, sizelimit: int = 0) -> Path:
        """Attach a free loop device to `backing`, from byte `offset` for `sizelimit` bytes (0:
        to its end; both multiples of 512 with direct IO). The device is picked before the journal line
        (LOOP_CTL_GET_FREE) and attached after it (LOOP_CONFIGURE), both in this process, so
        the line names the device, its number and its disk sequence number before the attach
        (the attach is that number + 1; a detach moves it on again): the undo recognises this
        attach by that even when the backing file's file system no longer answers."""
        backing = Path(backing).resolve()
        st = os.stat(backing)
        identity = {"backing": str(backing), "dev": _majmin(st.st_dev), "inode": st.st_ino,
                    **({"offset": offset, "sizelimit": sizelimit} if offset or sizelimit else {})}
        for _ in range(5):
            name = f"loop{_loop_get_free()}"
            entry = {"kind": "loop", "device": f"/dev/{name}", "rdev": _read(Path("/sys/block", name, "dev")),
                     "diskseq": _diskseq(name), **identity}
            try:
                self._change(entry, lambda d=entry["device"]: _loop_configure(d, backing, direct_io, offset, sizelimit))
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

    # -- file systems ---------------------------------------------------------------------------
    def mount_fs(self, device: Path, mountpoint: Path, fstype: str = "ext4", options: str = "") -> Path:
        """Mount the file system on `device` (a loop device this State attached) at `mountpoint`,
        made here if missing; journaled by mount point and the device's number, so the undo
        (or the recovery after kill -9) unmounts exactly it, before the device is detached."""
        mountpoint = Path(mountpoint).resolve()
        rdev = _read(Path("/sys/block", Path(device).name, "dev"))
        entry = {"kind": "fsmount", "device": str(device), "rdev": rdev, "mountpoint": str(mountpoint),
                 "fstype": fstype}

        def act() -> None:
            mountpoint.mkdir(parents=True, exist_ok=True)
            out = subprocess.run(["mount", "-t", fstype] + (["-o", options] if options else [])
                                 + [str(device), str(mountpoint)], capture_output=True, text=True, timeout=60)
            if out.returncode != 0:
                raise StateError(f"mounting {device} ({fstype}) on {mountpoint}: {out.stderr.strip()}")
        self._change(entry, act)
        return mountpoint

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
        """A memory (and blkio, if throttles are given) cgroup named pagelab-<owner>-<name>
        (the owner: this State's process, so the name is its own on the whole machine).

        on_oom="wait" (the default): a task that reaches the memory limit waits for reclaim
        (page-out to a slow swap device) instead of being killed, as the seed's laptop let its
        programs wait for the paging disk (see `Cgroup.wait_on_oom`); "kill" keeps the kernel's
        memory cgroup OOM killer."""
        if on_oom not in ("wait", "kill"):
            raise StateError(f"on_oom must be 'wait' or 'kill', not {on_oom!r}")
        cg = Cgroup(f"{CGROUP_PREFIX}-{self.owner}-{name}")
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


def _make_swap_file(path: Path, size: int) -> None:
    with open(path, "wb") as fh:
        os.posix_fallocate(fh.fileno(), 0, size)
    os.chmod(path, 0o600)
    _run(["mkswap", str(path)])


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


def _loop_configure(device: str, backing: Path, direct_io: bool, offset: int = 0, sizelimit: int = 0) -> None:
    """Attach `backing` to `device` (what `losetup --direct-io --offset --sizelimit` does, in one
    ioctl)."""
    flags = os.O_RDWR | os.O_CLOEXEC
    try:
        bfd = os.open(backing, flags | (os.O_DIRECT if direct_io else 0))
    except OSError as exc:
        raise StateError(f"cannot open {backing} for a loop device: {exc.strerror}") from exc
    try:
        lfd = os.open(device, os.O_RDWR | os.O_CLOEXEC)
        try:
            info = _LOOP_INFO64.pack(0, 0, 0, offset, sizelimit, 0, 0, 0, LO_FLAGS_DIRECT_IO if direct_io else 0,
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


def _leave_run_group(journal: Journal, pid: int) -> None:
    """Move a process (a daemon) from this run's group to the hierarchy's root."""
    for e in journal.entries():
        if e.get("kind") == "run" and Path(e["path"]).exists():
            _write(Path(e["path"]).parent / "cgroup.procs", str(pid))


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
