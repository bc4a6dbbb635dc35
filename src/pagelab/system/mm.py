"""Acting on another process's memory: trim its working set from outside, as Windows'
EmptyWorkingSet (called by another process in seed 004) does.

process_madvise(2) with MADV_PAGEOUT on a pidfd (Linux 5.10+; needs CAP_SYS_NICE and ptrace
read access, i.e. root here). Not for: changing system-wide state (pagelab.system.state).
"""

from __future__ import annotations

import ctypes
import os
import platform
from pathlib import Path

MADV_PAGEOUT = 21
_SYSCALLS = {"x86_64": (434, 440), "aarch64": (434, 440)}  # pidfd_open, process_madvise
_libc = ctypes.CDLL(None, use_errno=True)


class _Iovec(ctypes.Structure):
    _fields_ = [("iov_base", ctypes.c_void_p), ("iov_len", ctypes.c_size_t)]


def _syscall(nr: int, *args: int) -> int:
    res = _libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    if res < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return res


def pageout(pid: int, address: int, length: int) -> int:
    """Ask the kernel to page out [address, address+length) of process `pid` (widened to whole
    pages); returns the bytes advised. Pages go to swap (or zswap/zram); with no swap, anonymous pages stay."""
    arch = platform.machine()
    if arch not in _SYSCALLS:
        raise OSError(f"process_madvise: syscall numbers unknown for {arch}")
    pidfd_open, process_madvise = _SYSCALLS[arch]
    page = os.sysconf("SC_PAGE_SIZE")
    end = -(-(address + length) // page) * page  # the kernel wants whole pages
    address -= address % page
    length = end - address
    pidfd = _syscall(pidfd_open, pid, 0)
    done = 0
    try:
        while done < length:
            iov = _Iovec(address + done, length - done)
            n = _syscall(process_madvise, pidfd, ctypes.addressof(iov), 1, MADV_PAGEOUT, 0)
            if n <= 0:
                break
            done += n
    finally:
        os.close(pidfd)
    return done


def swapped_bytes(pid: int) -> int:
    """Bytes of `pid`'s memory now in swap (smaps_rollup's Swap:)."""
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Swap:"):
            return int(line.split()[1]) * 1024
    return 0


def touch(pid: int, address: int, length: int, write: bool = False) -> int:
    """Touch every page of [address, address+length) of process `pid` from outside: read it
    (process_vm_readv, a read fault in that process's memory for a page not present) and, with
    `write`, write the same bytes back (process_vm_writev, a write fault: the page is then
    dirty, its contents unchanged). Returns the bytes touched."""
    chunk = 1 << 20
    buf = ctypes.create_string_buffer(chunk)
    done = 0
    while done < length:
        n = min(chunk, length - done)
        local = _Iovec(ctypes.addressof(buf), n)
        remote = _Iovec(address + done, n)
        for fn in (_libc.process_vm_readv,) + ((_libc.process_vm_writev,) if write else ()):
            got = fn(ctypes.c_int(pid), ctypes.byref(local), ctypes.c_ulong(1), ctypes.byref(remote),
                     ctypes.c_ulong(1), ctypes.c_ulong(0))
            if got < 0:
                err = ctypes.get_errno()
                raise OSError(err, os.strerror(err))
        done += n
    return done
