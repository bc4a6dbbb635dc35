"""Undo: each `_undo_<kind>` takes a journal entry, acts only on what the entry identifies, and is
safe to run whatever happened after the entry was written; it verifies that the change is gone
and otherwise raises StateError naming what still holds it. `restore` replays the journal in
reverse; `orphans` finds state of our kinds that no journal explains and `clear_orphans`
undoes it the same way.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import shutil
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pagelab.core.paths import root
from pagelab.system.state.cgroup import _end_tasks
from pagelab.system.state.journal import Journal, _fault_point, describe
from pagelab.system.state.kernel import (
    KNOBS,
    LOOP_CLR_FD,
    StateError,
    _majmin,
    _poll,
    _proc_starttime,
    _proc_state,
    _read,
    _reap,
    _swapoff,
    _syscall,
    _write,
)
from pagelab.system.state.lock import exclusive, live_owners, owner_alive
from pagelab.system.state.query import (
    Mount,
    _block_holders,
    _diskseq,
    _fs_holders,
    _loops_on,
    _scratch_entries,
    _swap_identity,
    active_swaps,
    cgroups,
    loop_attached,
    loop_backing_files,
    loop_backing_identity,
    mountinfo,
)

LOOP_DETACH_WAIT_S = 10.0  # how long an undo waits for a loop device's deferred detach


UNMOUNT_WAIT_S = 10.0      # ... for a busy mount's last user (the emulator's ended first)


def _undo_knob(e: dict[str, Any]) -> None:
    knob = KNOBS[e["name"]]
    if knob.exists() and knob.read() != e["old"]:
        _write(knob.path, e["old"])
        if knob.read() != e["old"]:
            raise StateError(f"{e['name']}: wrote {e['old']!r} back, the kernel reports {knob.read()!r}")


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


def _loop_is_ours(e: dict[str, Any]) -> bool:
    """Whether the entry's attach is the one on its device now: the device is attached, its
    number is the journaled one, its disk sequence number is above the journaled one (read just
    before the attach; the kernel numbers every disk's changes from one machine-wide counter, so
    the attach's number is larger by however many changes other disks had meanwhile, not by one),
    and its backing file, where the kernel can still tell, is the journaled one."""
    name = Path(e["device"]).name
    if not loop_attached(e["device"]):
        return False
    if e.get("rdev") and _read(Path("/sys/block", name, "dev")) != e["rdev"]:
        return False
    seq = _diskseq(name)
    if e.get("diskseq") is not None and seq is not None and seq <= e["diskseq"]:
        return False
    ident = loop_backing_identity(e["device"])
    return ident is None or ident == (e["dev"], e["inode"])


def _unmount_fs(mountpoint: str, rdev: str | None, what: str) -> None:
    """Unmount the file system mounted at `mountpoint` from the device numbered `rdev` (every
    mount of that device when `mountpoint` is empty); never lazily: a busy one is an error
    naming what holds it."""
    def found() -> list[Mount]:
        return [m for m in mountinfo() if rdev and m.fs == rdev and (not mountpoint or m.mountpoint == mountpoint)]

    def gone() -> bool:
        for m in found():
            try:
                _syscall("umount2", os.fsencode(m.mountpoint), 0)
            except OSError as exc:
                if exc.errno not in (errno.EBUSY, errno.EINVAL, errno.ENOENT):
                    raise StateError(f"unmounting {m.mountpoint} ({what}): {exc.strerror}") from exc
        return not found()

    if not _poll(gone, UNMOUNT_WAIT_S, 0.05):
        m = found()[0]
        raise StateError(f"{m.mountpoint} ({what}) is still mounted {UNMOUNT_WAIT_S:g} s on; "
                         f"held by: {', '.join(_fs_holders(m)) or 'nothing found'}")


def _undo_fsmount(e: dict[str, Any]) -> None:
    _unmount_fs(e["mountpoint"], e.get("rdev"), f"{e.get('fstype', '?')} on {e['device']}")


def _detach_loop(device: str, what: str) -> None:
    """Swap off, unmount a file system on it (this package's loop devices carry only its own),
    detach (LOOP_CLR_FD), and wait for the detach: while something still has the device open
    the kernel only marks it to detach on the last close."""
    if device in active_swaps():
        _swap_off(device)
    _unmount_fs("", _read(Path("/sys/block", Path(device).name, "dev")), f"a file system on {device}")
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
        for dev, path in loop_backing_files().items():
            if path == e["backing"] or loop_backing_identity(dev) == (e.get("dev"), e.get("inode")):
                _detach_loop(dev, e["backing"])
        return
    if _loop_is_ours(e):
        _detach_loop(e["device"], f"backing {e['backing']}")


def _unmount(m: Mount, daemon: dict[str, Any] | None = None) -> None:
    """Unmount one mount: first what this package put on it (loop devices, swap), then the mount
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
    "fsmount": _undo_fsmount,
    "cgroup": _undo_cgroup, "run": _undo_cgroup, "workdir": _undo_workdir, "scratch": _undo_scratch,
    "action": lambda e: None,
}


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
    if not journal.entries()[keep:]:
        if keep == 0:
            journal.clear()  # a torn last line
        return []
    with exclusive(journal.path):  # the machine-wide state lock (this process's own, if held)
        return _restore(journal, keep)


def _restore(journal: Journal, keep: int) -> list[str]:
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


@dataclass(frozen=True)
class Orphan:
    what: str              # one line for the user: what it is and why it counts as left behind
    entry: dict[str, Any]  # the journal entry whose undo clears it


def scratch_dirs() -> list[Path]:
    """Where this repository's runs and tests keep their scratch files."""
    return [root() / "scratch", root() / ".pytest-scratch"]


def _under(path: str, dirs: list[Path]) -> bool:
    return any(path == str(d) or path.startswith(str(d).rstrip("/") + "/") for d in dirs)


def _emulator_mount(m: Mount) -> bool:
    return m.fstype.startswith("fuse") and (m.fstype.endswith(".simdisk") or m.source == "simdisk")


# The owner's id in the names of what it makes: cgroups pagelab-<pid>-<name> (and a run's own
# pagelab-run-<pid>), the emulator's mount points mnt-<pid> (devices.emulated_disk).
_OWNED_CGROUP = re.compile(r"pagelab-(?:run-)?(\d+)(?:-.*)?")
_OWNED_MOUNT = re.compile(r"mnt-(\d+)")


def _live_owner(name: str, pattern: re.Pattern[str]) -> bool:
    m = pattern.fullmatch(name)
    return m is not None and owner_alive(int(m.group(1)))


def orphans(journal: Journal | None = None) -> list[Orphan]:
    """State of the kinds this package makes that no journal explains: a loop device whose
    backing file is gone, lies under a scratch directory or on the emulator's FUSE file system; a
    swap area on a deleted file or under a scratch directory; a FUSE mount of the emulator; a
    pagelab-* cgroup. The journals that explain state are `journal`'s and those of every live
    owner (a session registers itself while it runs); and what carries a live owner's id in its
    name (a cgroup pagelab-<pid>-..., a mount point mnt-<pid>, a loop device or swap on such a
    mount) is never an orphan. Nothing else on the machine is judged."""
    entries = list((journal or Journal()).entries())
    mine = str((journal or Journal()).path)
    for owner in live_owners():
        if owner.get("journal") and owner["journal"] != mine:
            entries += Journal(Path(owner["journal"])).entries()
    scratch = scratch_dirs()
    everything = [m for m in mountinfo() if _emulator_mount(m)]
    owned = [m for m in everything if _live_owner(Path(m.mountpoint).name, _OWNED_MOUNT)]
    emulator = [m for m in everything if m not in owned]
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
    journaled_loops |= {dev for m in owned for dev, _ in _loops_on(m)}  # a live owner's
    for dev, path in loop_backing_files().items():
        if dev in journaled_loops:
            continue
        name = Path(dev).name
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
        if path not in journaled_groups and not _live_owner(Path(path).name, _OWNED_CGROUP):
            found.append(Orphan(f"cgroup {path}", {"kind": "cgroup", "path": path}))
    return found


def clear_orphans(journal: Journal | None = None) -> list[str]:
    """Undo what `orphans` finds, with the same undos as a restore (swap, then loop devices, then
    mounts, then cgroups), and check that none is left; returns what was cleared."""
    journal = journal or Journal()
    with exclusive(journal.path, wait=False):  # never beside another owner that is not this run's
        found = orphans(journal)
        order = {"swapon": 0, "loop": 1, "mount": 2, "cgroup": 3}
        _, failed = _undo_all(sorted((o.entry for o in found), key=lambda e: order[e["kind"]]))
        left = orphans(journal)
    if failed or left:
        raise StateError("could not clear: " + "; ".join(failed or [f"{o.what}: still there" for o in left]))
    return [o.what for o in found]
