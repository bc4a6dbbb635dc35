"""The seed machine's one system disk: one emulated device (one head, one queue) holding a swap
area and an ext4 file system with the file set ("the other processes'" files), both areas in one
image, so a page-in and a file read wait for the same head and the seeks between the areas are
part of the model.

Layout (`Layout`), in bytes from the start of the emulated device:

    [0, swap_bytes)                      the swap area (a loop device with direct IO, mkswap)
    [fs_offset, fs_offset + fs_bytes)    ext4 holding the file set, mounted read-only

`fs_offset` is `swap_bytes` rounded up to ALIGN (1 MiB: loop offsets with direct IO must be
multiples of the logical block size); the file system has room for the set and ext4's own
blocks (`fs_size`). The file system is made in the image's backing file before the emulator
starts (`mkfs.ext4 -E offset= -d`, the set copied in), so preparing it costs no emulated time;
the image is kept across a run's trials (`prepare_image` remakes it only when its layout or
file set changed): the file system is mounted read-only, and the swap area's old contents do not
matter to mkswap. Once the emulator runs, two loop devices over its disk file (`--offset`,
`--sizelimit`, direct IO so every read reaches the emulator) carry the swap area and the file
system; both, and the mount, are journaled through pagelab.system.state.

The flash tier (the tier model, config.TIER_MODEL) fronts the whole device, as ReadyBoost
fronted the system volume: file reads and page-ins both pass through it. "Disk busy" is the
whole device's service time.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pagelab.run.devices import EmulatedDisk, emulated_disk, noting_faults, swap_on
from pagelab.system import state

ALIGN = 1 << 20           # area boundaries: loop offsets with direct IO need the block size; 1 MiB as partitions
FS_BLOCK = 4096           # ext4's block size (the page size: one page of a file is one block)
FS_FIXED = 16 << 20       # ext4's own blocks beyond the set's: superblocks, group descriptors, bitmaps,
                          # inode tables (-N below), the root and lost+found; measured below 6 MiB up to 2 GB
FS_INODES = 4096          # inodes: the set's files (cacheflood makes at most a few hundred) and spare
IMAGE = "system-disk.img"


def align_up(n: int, to: int = ALIGN) -> int:
    return -(-int(n) // to) * to


def fs_size(file_set: int) -> int:
    """The file system's bytes for a set of `file_set` bytes: the set in whole blocks per file
    (a 2 % margin for the tails and extent blocks) and FS_FIXED, to ALIGN."""
    return align_up(file_set + file_set // 50 + FS_FIXED)


@dataclass(frozen=True)
class Layout:
    swap_bytes: int
    fs_bytes: int

    @property
    def fs_offset(self) -> int:
        return align_up(self.swap_bytes)

    @property
    def size(self) -> int:
        """The emulated device's bytes: the swap area, the gap to ALIGN, the file system."""
        return self.fs_offset + self.fs_bytes

    def area(self, offset: int) -> str:
        """Which area a byte of the device lies in: swap, fs, or gap."""
        if 0 <= offset < self.swap_bytes:
            return "swap"
        if self.fs_offset <= offset < self.size:
            return "fs"
        return "gap"


def layout(swap_bytes: int, file_set: int) -> Layout:
    """The system disk's layout for a swap area of `swap_bytes` (a multiple of the page size) and
    a file set of `file_set` bytes (0: no file system)."""
    if swap_bytes <= 0 or swap_bytes % 4096:
        raise ValueError(f"swap area of {swap_bytes} bytes: must be a positive multiple of 4096")
    if file_set < 0:
        raise ValueError(f"file set of {file_set} bytes: must not be negative")
    return Layout(swap_bytes, fs_size(file_set) if file_set else 0)


def prepare_image(image: Path, lay: Layout, files: Path) -> bool:
    """The backing image holding `lay`'s file system with the files of `files` (a directory of
    regular files), made sparse, before any emulator opens it; kept when its stamp (layout and
    the files' names and sizes) matches. Returns whether it was made."""
    image, files = Path(image), Path(files)
    names = {p.name: p.stat().st_size for p in sorted(files.iterdir()) if p.is_file()}
    stamp = {"layout": asdict(lay), "files": names}
    stamp_path = image.with_suffix(".json")
    if image.exists() and stamp_path.exists() and json.loads(stamp_path.read_text()) == stamp:
        return False
    stamp_path.unlink(missing_ok=True)
    tmp = image.with_name(image.name + ".tmp")
    tmp.unlink(missing_ok=True)
    with open(tmp, "wb") as f:
        f.truncate(lay.size)
    if lay.fs_bytes:
        cmd = ["mkfs.ext4", "-q", "-F", "-b", str(FS_BLOCK), "-m", "0", "-N", str(FS_INODES),
               "-O", "^has_journal", "-L", "pagelab-files", "-E", f"offset={lay.fs_offset}",
               "-d", str(files), str(tmp), f"{lay.fs_bytes // 1024}k"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
        if out.returncode != 0:
            tmp.unlink(missing_ok=True)
            raise state.StateError(f"mkfs.ext4 of the file set ({files}, {sum(names.values())} bytes) in "
                                   f"{lay.fs_bytes} bytes at offset {lay.fs_offset} of {image} failed: "
                                   f"{(out.stderr or out.stdout).strip()}")
    tmp.replace(image)
    stamp_path.write_text(json.dumps(stamp))
    return True


@dataclass
class SystemDisk:
    """The mounted system disk: the emulated device, its swap area's loop device (None when this
    arm swaps elsewhere), the file system's loop device and mount point (None without a file set)."""
    device: EmulatedDisk
    layout: Layout
    swap: Path | None
    fs_loop: Path | None
    files: Path | None

    def area_reads(self) -> dict[str, float]:
        """Bytes read so far from each area, by its loop device's block counters (sectors of 512)."""
        out = {}
        for name, dev in (("swap", self.swap), ("fs", self.fs_loop)):
            if dev is not None:
                fields = Path(f"/sys/block/{Path(dev).name}/stat").read_text().split()
                out[name] = float(fields[2]) * 512
        return out


def system_disk(st: state.State, profile: str, workdir: Path, lay: Layout, image: Path,
                swap: bool = True, overrides: dict[str, Any] | None = None) -> SystemDisk:
    """Mount the emulated device `profile` over `image` (made by `prepare_image` for `lay`), and
    on it: swap on the swap area (when `swap`), the file system read-only at fs-<owner>; every
    step journaled, so the session or scope undoes it in reverse (unmount, detach, swapoff,
    detach, end the emulator)."""
    workdir = Path(workdir).resolve()
    disk = emulated_disk(st, profile, workdir, lay.size, overrides=overrides, backing=image)
    swap_dev = fs_loop = files = None
    with noting_faults(disk):
        if swap:
            swap_dev = st.loop(disk.disk, direct_io=True, offset=0, sizelimit=lay.swap_bytes)
            swap_on(st, swap_dev)
            disk.loop = swap_dev
        if lay.fs_bytes:
            fs_loop = st.loop(disk.disk, direct_io=True, offset=lay.fs_offset, sizelimit=lay.fs_bytes)
            files = st.mount_fs(fs_loop, workdir / f"fs-{st.owner}", "ext4", "ro,noatime")
    return SystemDisk(disk, lay, swap_dev, fs_loop, files)
