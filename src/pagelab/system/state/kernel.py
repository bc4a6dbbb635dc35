"""The kernel interfaces the state package acts through: the knobs (files set by writing and
checked by reading back), the system calls made in this process (swapon, swapoff, umount2, the
loop ioctls: a helper program killed with its run could still make its change after the restore
that should have undone it), and small readers of /proc and /sys.
Not for: deciding what to change; change.py does, undo.py undoes.
"""

from __future__ import annotations

import ctypes
import os
import struct
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class StateError(RuntimeError):
    """A change that could not be made, or did not take the value asked for."""


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
    # ...but at most this much of the memory freed within min_free_ms is held back: the excess is
    # reported anyway (2 GiB freed inside a hold here: 1 GiB reported within 10 s).
    Knob("page_reporting.max_waiting_mib", "/sys/module/page_reporting/parameters/max_waiting_mib"),
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


def _poll(done: Callable[[], bool], seconds: float, step: float) -> bool:
    """Whether `done()` came true within `seconds`, asking every `step` seconds."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() >= deadline:
            return False
        time.sleep(step)
    return True


def _proc_starttime(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def _proc_state(pid: int) -> str:
    stat = _read(Path(f"/proc/{pid}/stat")) or ""
    return stat.rsplit(")", 1)[1].split()[0] if ")" in stat else "gone"


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


CPU_LATENCY_QOS = Path("/dev/cpu_dma_latency")
