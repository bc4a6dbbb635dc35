"""The machine-wide owner of paging state: one lock, whatever journal a run or a test uses.

Swap, sysctls, cgroups, loop devices and FUSE mounts are the machine's, not a journal's, so
everything that changes them (a session, a restore, `clear_orphans`) holds LOCK_PATH, a fixed
file in a root-owned directory, opened with O_NOFOLLOW: a test with its own PAGELAB_JOURNAL
holds the same lock as a real run. The holder writes who it is into the file (pid, start time,
role, command, journal), so a process that finds the lock taken can name it.

Who may go on when the lock is taken:
  - the holder itself, again (a session inside a held lock: a depth count in this process);
  - a descendant of the holder (pid and start time of every ancestor, from /proc): a run that
    calls itself (`pagelab trial` under Snakemake under a make that holds the lock) never
    waits for its own ancestor, and PAGELAB_STATE_OWNER names the holder to its children;
  - anyone else waits, except a test (PAGELAB_STATE_ROLE=test, set by the test suite) that
    finds a real run holding the lock: StateBusy at once, which the suite turns into a skip
    with its message, so no test changes the machine's paging state beside a real run.
`live_owners` lists the processes that own journaled state now (each session registers
itself under OWNERS_DIR while it runs): `orphans` never counts what a live owner holds.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pagelab.system.state.kernel import StateError, _proc_starttime

LOCK_PATH = Path("/run/pagelab/state.lock")      # cleared by a reboot, as is the state it guards
OWNERS_DIR = LOCK_PATH.parent / "owners"        # one <pid>.json per live session
OWNER_ENV = "PAGELAB_STATE_OWNER"               # "pid:starttime" of the holder, for its children
ROLE_ENV = "PAGELAB_STATE_ROLE"                 # "test" in the test suite; anything else is a run


class StateBusy(StateError):
    """The state lock is held by another owner that this process may not run beside."""

    def __init__(self, message: str, holder: Holder | None):
        super().__init__(message)
        self.holder = holder


@dataclass(frozen=True)
class Holder:
    pid: int
    starttime: int | None
    role: str
    cmd: str
    journal: str

    def alive(self) -> bool:
        return self.starttime is not None and _proc_starttime(self.pid) == self.starttime

    def words(self) -> str:
        return f"pid {self.pid}: {self.cmd}"


def role() -> str:
    """'test' in the test suite, else 'run'."""
    return "test" if os.environ.get(ROLE_ENV) == "test" else "run"


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return " ".join(raw.replace(b"\0", b" ").decode(errors="replace").split())[:200] or "?"  # one line


def _parent(pid: int) -> int:
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat_line.rsplit(")", 1)[1].split()[1])


def ancestors(pid: int | None = None) -> list[int]:
    """The parent, grandparent, ... of `pid` (default: this process), up to pid 1."""
    out, pid = [], _parent(os.getpid() if pid is None else pid)
    while pid > 0 and pid not in out:
        out.append(pid)
        pid = _parent(pid)
    return out


def _private_dir(path: Path) -> None:
    """Make `path` (a directory only root can write to) or check that it is one: a lock or a
    registry that someone else could replace would not guard anything."""
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:
        pass
    except OSError as exc:
        raise StateError(f"cannot make {path}: {exc.strerror} (a directory of root's: this needs root)") from exc
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o022:
        raise StateError(f"{path} is not a directory that only root can write to; refusing to use it")


def open_root_file(path: Path, what: str) -> int:
    """An fd (read and write, close-on-exec) on `path`, a regular file of root's in a directory
    only root can write to, both made when missing; the file is never truncated. The directory
    is checked first, the file opened without following a symbolic link and checked by fstat:
    a link or file planted there is refused (StateError naming `what`), never written through.
    Root's lock files use it: the state lock, workflow/scripts/local_slurm.py's."""
    _private_dir(path.parent)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        why = "a symbolic link; refusing to follow it" if exc.errno == errno.ELOOP else exc.strerror
        raise StateError(f"cannot open {what} {path}: {why}") from exc
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != 0:
        os.close(fd)
        raise StateError(f"{what} {path} is not a regular file owned by root; refusing to use it")
    return fd


def _open_lock() -> int:
    return open_root_file(LOCK_PATH, "the state lock")


def holder() -> Holder | None:
    """Who holds the state lock now (None: nobody, or it cannot be read)."""
    try:
        fd = os.open(LOCK_PATH, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_holder(fd)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _read_holder(fd: int) -> Holder | None:
    """The holder's record; a holder that has the lock but has not written it yet is waited
    for (a few ms), and one that died meanwhile reads as None."""
    for _ in range(200):
        raw = os.pread(fd, 4096, 0).decode(errors="replace").strip()
        try:
            doc = json.loads(raw)
            return Holder(int(doc["pid"]), doc.get("starttime"), str(doc.get("role", "run")),
                          str(doc.get("cmd", "?")), str(doc.get("journal", "")))
        except (ValueError, KeyError, TypeError):
            pass
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # free now: it was released meanwhile
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        except BlockingIOError:
            pass
        time.sleep(0.005)
    return None


_DEPTH = 0          # > 0 while this process holds the lock (or runs under an ancestor's)


def held() -> bool:
    """Whether this process may change paging state now: it holds the lock, or runs under an
    ancestor that holds it."""
    return _DEPTH > 0


def _describe_busy(h: Holder | None, me: str) -> str:
    who = f"a pagelab {h.role} ({h.words()})" if h else "another pagelab process"
    if me == "test" and h is not None and h.role != "test":
        return (f"{who} holds the paging state lock {LOCK_PATH}; a test does not change swap, sysctls, "
                "cgroups, loop devices or mounts beside a real run")
    return f"{who} holds the paging state lock {LOCK_PATH}; wait for it to finish"


@contextmanager
def exclusive(journal_path: Path | str | None = None, wait: bool = True) -> Iterator[None]:
    """Hold the machine-wide state lock (see the module's doc for who waits and who may go on).
    With wait=False a lock held by another owner is StateBusy naming it."""
    global _DEPTH
    if _DEPTH:
        _DEPTH += 1
        try:
            yield
        finally:
            _DEPTH -= 1
        return
    fd = _open_lock()
    me = role()
    saved = os.environ.get(OWNER_ENV)
    try:
        for _ in range(100):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                mine = True
                break
            except BlockingIOError:
                h = _read_holder(fd)
            if h is None:
                continue                           # released meanwhile: try again
            if h.alive() and h.pid in ancestors():
                mine = False                       # a child of the holder: runs under its lock
            elif not wait or (me == "test" and h.role != "test"):
                raise StateBusy(_describe_busy(h, me), h)
            else:
                print(f"pagelab: waiting: {_describe_busy(h, me)}", file=sys.stderr, flush=True)
                fcntl.flock(fd, fcntl.LOCK_EX)
                mine = True
            break
        else:
            raise StateBusy(_describe_busy(None, me), None)
        if mine:
            pid = os.getpid()
            record = {"pid": pid, "starttime": _proc_starttime(pid), "role": me, "cmd": _cmdline(pid),
                      "journal": str(journal_path or "")}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(record).encode(), 0)
            os.environ[OWNER_ENV] = f"{pid}:{record['starttime']}"
        _DEPTH = 1
        try:
            yield
        finally:
            _DEPTH = 0
            if mine:
                os.ftruncate(fd, 0)
                if saved is None:
                    os.environ.pop(OWNER_ENV, None)
                else:
                    os.environ[OWNER_ENV] = saved
    finally:
        os.close(fd)  # closing releases the lock


def require(what: str) -> None:
    """StateError unless this process may change paging state (see `held`)."""
    if not held():
        raise StateError(f"{what}: changing paging state needs the state lock ({LOCK_PATH}); "
                         "change it inside state.session()")


# -- the live owners ------------------------------------------------------------------------------

@contextmanager
def registered(journal_path: Path) -> Iterator[None]:
    """This process owns journaled state while inside: `live_owners` lists it with its journal.
    The files of owners that died without leaving (kill -9) are removed on the way in."""
    _private_dir(OWNERS_DIR)
    live = {str(o["pid"]) for o in live_owners()}
    for p in OWNERS_DIR.glob("*.json"):
        if p.stem not in live:
            p.unlink(missing_ok=True)
    pid = os.getpid()
    path = OWNERS_DIR / f"{pid}.json"
    tmp = OWNERS_DIR / f".{pid}.json.tmp"
    tmp.write_text(json.dumps({"pid": pid, "starttime": _proc_starttime(pid), "journal": str(journal_path)}))
    os.replace(tmp, path)
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


def live_owners() -> list[dict[str, Any]]:
    """The registered owners that are still alive (pid and start time), each with its journal."""
    out = []
    if not OWNERS_DIR.is_dir():
        return out
    for p in sorted(OWNERS_DIR.glob("*.json")):
        try:
            doc = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and doc.get("pid") and _proc_starttime(int(doc["pid"])) == doc.get("starttime"):
            out.append(doc)
    return out


def owner_alive(pid: int) -> bool:
    """Whether the process an owner id names is alive (a pid in a cgroup's or a mount's name)."""
    return _proc_starttime(pid) is not None
