"""Trimming another process's working set with process_madvise(MADV_PAGEOUT), on real swap."""

import os
import subprocess
import sys

import pytest

from pagelab.system import mm, state

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (swap, process_madvise)")

CHILD = """
import ctypes, sys
buf = ctypes.create_string_buffer(32 << 20)
for i in range(0, len(buf), 4096):
    buf[i] = b"x"
print(ctypes.addressof(buf), len(buf), flush=True)
sys.stdin.readline()
"""


def test_pageout_moves_another_process_to_swap(tmp_path, monkeypatch, disk_tmp, state_lock):
    monkeypatch.setenv("PAGELAB_JOURNAL", str(tmp_path / "j"))
    before = state.show()
    with state.session() as st:
        st.swap_file(disk_tmp / "swapfile", 128 << 20)
        child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
        try:
            addr, size = map(int, child.stdout.readline().split())
            assert mm.swapped_bytes(child.pid) == 0
            advised = mm.pageout(child.pid, addr, size)
            assert advised >= size
            assert mm.swapped_bytes(child.pid) >= 0.9 * size
        finally:
            child.communicate("\n", timeout=30)
    assert state.show() == before


def test_pageout_of_a_missing_process_raises():
    with pytest.raises(OSError):
        mm.pageout(2**22 + 12345, 0, 4096)
