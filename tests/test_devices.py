"""Swap on the emulated 2008 disk, under a memory-cgroup-limited hog: repeated runs complete
without a hang, every page survives (hog --verify), and nothing stays mounted, attached or
swapped on afterwards - also after the harness is killed with SIGKILL."""

import os
import signal
import subprocess
import sys

import pytest

from conftest import REPO, VENV_BIN
from pagelab.run import devices
from pagelab.run.victim import Victim
from pagelab.system import state

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (FUSE mount, loop, swap)")


def test_swap_on_emulated_hdd_under_a_memcg_limited_hog_five_times(journal, disk_tmp, native_build):
    """Five rounds in one session on one emulated disk (about 2 s each): every round's victim is
    pushed out by a hog in its memory cgroup and comes back from the disk intact. The victim's 2 MiB
    (re-touched in random order) and the hog's as much ask for 1 MiB more than the group holds."""
    before = state.show()
    ws = 2 << 20
    with state.session() as st:
        disk = devices.emulated_swap(st, "hdd5400-2008", disk_tmp / "dev", 64 << 20)
        assert str(disk.loop) in state.active_swaps() and str(disk.mountpoint) in state.mounts()
        cg = st.cgroup("devtest", memory_limit=ws + (1 << 20))
        for i in range(5):
            with Victim(ws, "ratio:0.5", i + 1, disk_tmp / f"v{i}", cg, retouch_order="random", timeout=300) as v:
                # A hog in the same cgroup pushes the victim out to the emulated disk.
                hog = subprocess.run([str(native_build / "hog"), "run", "--size", str(ws), "--force",
                                      "--output-format", "json"], capture_output=True, text=True,
                                     timeout=300, preexec_fn=cg.preexec())
                assert hog.returncode == 0, hog.stderr
                rep = v.retouch()
            assert rep["verify"]["ok"]
            assert rep["retouch"]["majflt"] > 0, "nothing came back from the emulated disk"
        stats = disk.stats()
        assert stats["reads"] > 0 and stats["writes"] > 0
        # flat_stats: the counters a trial takes differences of, not the timing's summaries
        flat = disk.flat_stats()
        assert flat["by_op.read.ios"] > 0 and flat["timing.ios"] > 0 and "timing.late_ios" in flat
        assert stats["timing"]["error_ns"]["p99"] >= 0 and not [k for k in flat if k.startswith(devices.SUMMARIES)]
    assert state.show() == before


def test_kill_9_with_swap_on_the_emulated_disk_is_restored(journal, disk_tmp, native_build):
    before = state.show()
    code = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from pagelab.run import devices; from pagelab.system import state\n"
        "with state.session() as st:\n"
        "    devices.emulated_swap(st, 'hdd5400-2008', Path(sys.argv[1]), 32 << 20)\n"
        "    st.set_knob('vm.page-cluster', 0)\n"
        "    print('up', flush=True)\n"
        "    time.sleep(120)\n")
    p = subprocess.Popen([sys.executable, "-c", code, str(disk_tmp / "dev")], stdout=subprocess.PIPE,
                         text=True, env=dict(os.environ), cwd=REPO)
    assert p.stdout.readline().strip() == "up"
    assert state.show() != before
    p.send_signal(signal.SIGKILL)
    p.wait()
    undo = subprocess.run([str(VENV_BIN / "pagelab"), "state", "restore"], capture_output=True, text=True,
                          env=dict(os.environ), timeout=120, cwd=REPO)
    assert undo.returncode == 0, undo.stderr
    assert state.show() == before


def test_unknown_profile_is_refused(journal, disk_tmp):
    with state.session() as st:
        with pytest.raises(state.StateError, match="no device profile 'floppy'"):
            devices.emulated_swap(st, "floppy", disk_tmp, 1 << 20)


def test_loop_over_a_lazily_unmounted_fuse_file_is_still_detached(journal, disk_tmp, native_build):
    """The loop device's backing path changes to "/disk" once its FUSE mount is detached; the
    journal knows the file by inode and device, so restore still finds and detaches it."""
    before = state.show()
    with state.session() as st:
        disk = devices.emulated_disk(st, "zero", disk_tmp / "dev", 16 << 20)
        loop = st.loop(disk.disk, direct_io=True)
        subprocess.run(["umount", "-l", str(disk.mountpoint)], check=True)
        assert state.loops_backed_by()  # still attached...
        assert str(loop) not in state.loops_backed_by(str(disk.disk))  # ...and no longer found by path
    assert state.show() == before
