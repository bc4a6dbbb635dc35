"""The one package that changes system-wide paging state, and puts it back.

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
vm.nr_hugepages, zswap's parameters, free page reporting's min_free_ms and max_waiting_mib),
zram devices, swap (files and block devices), loop devices, FUSE mounts of the emulator (with
its daemon), memory and blkio cgroups (v1 here, v2 where mounted), a run's scratch files and
trials' work directories, and the page cache (drop_caches, an action with nothing to undo). One
request is held, not journaled: a CPU wake-up latency limit (`cpu_latency_limit`), which the
kernel itself drops when the file that holds it closes, also when the process dies.
Swap, sysctls, cgroups, loop devices and mounts are the machine's: every change and undo holds
one machine-wide lock (lock.py), a test's as well as a real run's, whatever journal it uses.
`orphans()` finds state of the kinds this package makes that no journal explains (left by a run
that predates its journal, or by a bug), never what a live owner holds, and `clear_orphans()`
undoes it the same way.
Not for: measuring; counters.py reads, this package writes.

The package, by concern (each module imports only from those above it in this list):
  kernel   the kernel interfaces: knobs, system calls, loop ioctls, /proc readers, StateError
  journal  the write-ahead journal and its fault points
  lock     the machine-wide state lock (one owner at a time, whatever its journal), live owners
  signals  signals held while a change or an undo runs
  cgroup   memory and blkio cgroups, waiting on OOM and the OOM watchdog
  query    read-only queries (`show`, swaps, mounts, loop devices, what holds them)
  undo     each change's undo, `restore`, `orphans` and `clear_orphans`
  change   the change API (`State`) and the CPU latency limit
  run      the run scope: the state lock for a journal (`exclusive`), `session`, `current`
`from pagelab.system import state` then `state.X` reaches every public name of these modules.
"""

from __future__ import annotations

from pagelab.system.state.cgroup import CGROUP_PREFIX, CGROUP_ROOT, Cgroup, OomWatchdog
from pagelab.system.state.change import State, cpu_latency_limit
from pagelab.system.state.journal import Journal, describe, journal_path
from pagelab.system.state.kernel import (
    CPU_LATENCY_QOS,
    KNOBS,
    LO_FLAGS_DIRECT_IO,
    LOOP_CLR_FD,
    LOOP_CONFIGURE,
    LOOP_CTL_GET_FREE,
    LOOP_GET_STATUS64,
    SWAP_FLAG_PREFER,
    SWAP_FLAG_PRIO_MASK,
    Knob,
    StateError,
    _proc_state,
    normalise,
)
from pagelab.system.state.lock import (
    LOCK_PATH,
    OWNER_ENV,
    ROLE_ENV,
    Holder,
    StateBusy,
    holder,
    live_owners,
)
from pagelab.system.state.query import (
    Mount,
    active_swaps,
    cgroups,
    cpu_latency_limit_now,
    loop_attached,
    loop_backing_identity,
    loops_backed_by,
    mountinfo,
    mounts,
    show,
    zram_algorithms,
    zswap_compressors,
)
from pagelab.system.state.run import current, exclusive, session
from pagelab.system.state.signals import HELD_SIGNALS, SignalHold
from pagelab.system.state.undo import (
    LOOP_DETACH_WAIT_S,
    UNDO,
    UNMOUNT_WAIT_S,
    Orphan,
    _undo_loop,
    clear_orphans,
    orphans,
    remove_tree,
    restore,
    scratch_dirs,
)

__all__ = [
    "StateError",
    "StateBusy",
    "Holder",
    "LOCK_PATH",
    "OWNER_ENV",
    "ROLE_ENV",
    "holder",
    "live_owners",
    "Knob",
    "normalise",
    "KNOBS",
    "SWAP_FLAG_PREFER",
    "SWAP_FLAG_PRIO_MASK",
    "LOOP_CLR_FD",
    "LOOP_GET_STATUS64",
    "LOOP_CONFIGURE",
    "LOOP_CTL_GET_FREE",
    "LO_FLAGS_DIRECT_IO",
    "CPU_LATENCY_QOS",
    "_proc_state",
    "journal_path",
    "Journal",
    "describe",
    "HELD_SIGNALS",
    "SignalHold",
    "CGROUP_ROOT",
    "CGROUP_PREFIX",
    "Cgroup",
    "OomWatchdog",
    "zswap_compressors",
    "zram_algorithms",
    "active_swaps",
    "Mount",
    "mountinfo",
    "mounts",
    "loops_backed_by",
    "loop_attached",
    "loop_backing_identity",
    "cgroups",
    "cpu_latency_limit_now",
    "show",
    "LOOP_DETACH_WAIT_S",
    "UNMOUNT_WAIT_S",
    "remove_tree",
    "UNDO",
    "restore",
    "Orphan",
    "scratch_dirs",
    "orphans",
    "clear_orphans",
    "_undo_loop",
    "State",
    "cpu_latency_limit",
    "exclusive",
    "session",
    "current",
]
