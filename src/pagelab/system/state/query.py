"""Read-only queries of the state this package changes: swap areas, mounts, loop devices,
zram and zswap, our cgroups, the CPU latency limit in force, and `show` (all of it, for
`pagelab state show`); and what holds a device or a mount busy (for the undo's errors).
"""

from __future__ import annotations

import fcntl
import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pagelab.system.state.cgroup import CGROUP_PREFIX, CGROUP_ROOT
from pagelab.system.state.journal import journal_path
from pagelab.system.state.kernel import (
    _LOOP_INFO64,
    CPU_LATENCY_QOS,
    KNOBS,
    LOOP_GET_STATUS64,
    _majmin,
    _read,
    normalise,
)


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
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mountinfo() -> list[Mount]:
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        f, r = left.split(), right.split()
        if len(f) >= 5 and len(r) >= 2:
            out.append(Mount(int(f[0]), f[2], _unescape(f[4]), r[0], _unescape(r[1])))
    return out


def mounts(fstype_prefix: str = "fuse") -> list[str]:
    """Mount points of the mounts whose file system type starts with `fstype_prefix`."""
    return [m.mountpoint for m in mountinfo() if m.fstype.startswith(fstype_prefix)]


def loop_backing_files() -> dict[str, str]:
    """Attached loop devices, each with its backing file's path as the kernel shows it now; a
    device detached while it is read is left out."""
    found = {}
    for d in sorted(Path("/sys/block").glob("loop*")):
        path = _read(d / "loop" / "backing_file")
        if path is not None:
            found[f"/dev/{d.name}"] = path
    return found


def loops_backed_by(backing: str | None = None) -> list[str]:
    """Attached loop devices: all, or those whose backing file's path (as the kernel shows it
    now) is `backing`."""
    return [dev for dev, path in loop_backing_files().items() if backing is None or path == backing]


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


def _scratch_entries(directory: Path, prefix: str) -> list[Path]:
    if not directory.is_dir():
        return []
    return [p for p in directory.iterdir() if p.name.startswith(prefix + "-") or p.name.startswith(prefix + ".")]


def _loops_on(m: Mount) -> list[tuple[str, str]]:
    """Attached loop devices whose backing file lies on this mount (by the kernel's device
    number for it, or by path while that still leads into the mount)."""
    found = []
    for dev, path in loop_backing_files().items():
        ident = loop_backing_identity(dev)
        if (ident is not None and ident[0] == m.fs) or path.startswith(m.mountpoint.rstrip("/") + "/"):
            found.append((dev, path))
    return found


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


def cgroups() -> list[str]:
    """Cgroups this package makes (pagelab-*) that exist now."""
    found = set()
    for base in ([CGROUP_ROOT / c for c in ("memory", "blkio", "pids")] + [CGROUP_ROOT]):
        if base.is_dir():
            found.update(str(p) for p in base.glob(f"{CGROUP_PREFIX}-*") if p.is_dir())
    return sorted(found)


def cpu_latency_limit_now() -> int | None:
    """The wake-up latency limit in force, in us (2,000,000,000: none); None without the device."""
    try:
        with open(CPU_LATENCY_QOS, "rb") as f:
            return struct.unpack("i", f.read(4))[0]
    except OSError:
        return None


LOOP_MAJOR = 7  # the loop driver's block major (Documentation/admin-guide/devices.txt)


def show() -> dict[str, Any]:
    """The current settings of everything this package can change (no counters). A zram or loop
    device removed while it is read (a run's restore, meanwhile) is left out, not an error."""
    zram = {}
    for d in sorted(Path("/sys/block").glob("zram*")):
        size, algorithm = _read(d / "disksize"), _read(d / "comp_algorithm")
        if size is not None and algorithm is not None:
            zram[d.name] = {"disksize": size, "comp_algorithm": normalise("choice", algorithm)}
    return {
        "knobs": {n: (k.read() if k.exists() else None) for n, k in KNOBS.items()},
        "swaps": active_swaps(),
        "zram": zram,
        "loop_devices": loop_backing_files(),
        "fuse_mounts": mounts(),
        "loop_mounts": sorted(f"{m.mountpoint} ({m.fstype} on {m.source})" for m in mountinfo()
                              if m.fs.split(":")[0] == str(LOOP_MAJOR)),
        "cgroups": cgroups(),
        "cpu_latency_limit_us": cpu_latency_limit_now(),
        "journal": str(journal_path()) if journal_path().exists() else None,
    }
