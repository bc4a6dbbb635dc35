"""A trial's worth of system changes, for the fault-injection test (tests/test_state.py):
swap on a loop device over a file with direct IO, zswap on, zram swap, a memory cgroup with a
process in it, page-cluster and swappiness changed. Run with PAGELAB_FAULT_AT=N to be
SIGKILLed at the N-th change point (PAGELAB_FAULT_SIGNAL=TERM: SIGTERMed); it prints how many
points there are. `--emulated`: two trials on an emulated disk instead."""

import os
import subprocess
import sys
from pathlib import Path

from pagelab.system import state


def scenario(st: state.State, workdir: Path) -> None:
    backing = workdir / "disk.img"
    with open(backing, "wb") as fh:
        os.posix_fallocate(fh.fileno(), 0, 64 << 20)
    st.set_knob("zswap.compressor", "lzo-rle")
    st.set_knob("zswap.max_pool_percent", 10)
    st.set_knob("zswap.enabled", "Y")
    loop = st.loop(backing, direct_io=True)
    subprocess.run(["mkswap", str(loop)], check=True, capture_output=True)
    st.swapon(loop, priority=5)
    zram = st.zram(32 << 20, "lz4")
    st.swapon(zram, priority=10)
    st.set_knob("vm.page-cluster", 0)
    st.set_knob("vm.swappiness", 100)
    cg = st.cgroup("scenario", memory_limit=128 << 20, swappiness=100)
    proc = st.daemon(["sleep", "60"])
    cg.add(proc.pid)


def emulated_trials(st: state.State, workdir: Path) -> None:
    """Two trials' worth of an emulated disk (FUSE daemon, loop device, swap), each undone at
    its trial's end as the experiments' scopes do: the boundaries between them included."""
    from pagelab.run.devices import emulated_swap

    st.set_knob("vm.page-cluster", 0)
    for i in range(2):
        with st.scope():
            emulated_swap(st, "hdd5400-2008", workdir / f"dev{i}", 16 << 20)
            st.set_knob("vm.swappiness", 100 + i)


def main() -> int:
    workdir = Path(sys.argv[1])
    run = emulated_trials if "--emulated" in sys.argv[2:] else scenario
    with state.session() as st:
        run(st, workdir)
        print("effective", st.effective, flush=True)
        print("fault points", os.environ.get("_PAGELAB_FAULT_COUNT", "0"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
