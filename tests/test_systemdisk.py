"""The seed machine's one system disk (pagelab.run.systemdisk): the layout's arithmetic; the state
changes it needs (a loop device over part of a file, a file system mounted on it), undone by a
scope and after SIGKILL; and, on the emulated disk, a file read and a page-in that land on the
same device, whose busy time counts both; readyboost's trial of each arm family on it, one real
trial each, read by the test of the criteria (`quick_trials`)."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import VENV_BIN
from pagelab.experiments import recovery
from pagelab.run import systemdisk
from pagelab.run.tools import cacheflood_cmd, run_json
from pagelab.system import state

MiB = 1 << 20
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to change paging state")


# --------------------------------------------------------------------------------------------
# The layout (no root).

@pytest.mark.parametrize("swap, files", [(4 * 24 * MiB, 12_800 * 1024), (4 * 3 * 1024 * MiB, 1600 * 10**6),
                                         (4096 * 7, 1)])
def test_the_layout_puts_the_swap_area_first_and_the_file_system_after_it_aligned(swap, files):
    lay = systemdisk.layout(swap, files)
    assert lay.swap_bytes == swap
    assert lay.fs_offset >= swap and lay.fs_offset % systemdisk.ALIGN == 0
    assert lay.fs_offset - swap < systemdisk.ALIGN
    assert lay.fs_bytes % systemdisk.ALIGN == 0 and lay.fs_bytes >= files + systemdisk.FS_FIXED
    assert lay.size == lay.fs_offset + lay.fs_bytes
    assert lay.area(0) == lay.area(swap - 1) == "swap"
    assert lay.area(lay.fs_offset) == lay.area(lay.size - 1) == "fs"
    assert lay.area(lay.size) == "gap"
    assert (lay.area(swap) == "gap") == (swap != lay.fs_offset)


def test_the_seed_scale_layout_in_numbers():
    """At the seed's scale: 12 GiB of swap (four times the 3 GiB group), then 1.6 GB of files and
    ext4's own blocks: the file system starts right after the swap area."""
    lay = systemdisk.layout(12 << 30, 1600 * 10**6)
    assert lay.fs_offset == 12 << 30
    assert lay.fs_bytes == systemdisk.align_up(1600 * 10**6 + 32 * 10**6 + systemdisk.FS_FIXED)
    assert lay.fs_bytes == 1573 * MiB  # 1525.9 MiB of files, 30.5 of margin, 16 of ext4


def test_no_file_set_means_no_file_system_and_bad_sizes_are_refused():
    assert systemdisk.layout(1 << 20, 0).fs_bytes == 0
    for swap in (0, -4096, 4097):
        with pytest.raises(ValueError, match="swap area"):
            systemdisk.layout(swap, MiB)
    with pytest.raises(ValueError, match="file set"):
        systemdisk.layout(MiB, -1)


def test_the_image_holds_the_files_in_a_file_system_at_its_offset_and_is_kept(tmp_path):
    """mkfs.ext4 -E offset -d in a sparse image (no root, no mount): debugfs reads the file back
    from the file system at its offset; a second prepare with the same layout and files keeps the
    image, a changed file set remakes it."""
    files = tmp_path / "files"
    files.mkdir()
    (files / "a.dat").write_bytes(os.urandom(300 * 1024))
    lay = systemdisk.layout(8 * MiB, 300 * 1024)
    image = tmp_path / "disk.img"
    assert systemdisk.prepare_image(image, lay, files)
    assert image.stat().st_size == lay.size
    assert image.stat().st_blocks * 512 < lay.size  # sparse: the swap area takes no room
    out = subprocess.run(["debugfs", "-R", "cat /a.dat", f"{image}?offset={lay.fs_offset}"], capture_output=True,
                         timeout=60)
    assert out.stdout == (files / "a.dat").read_bytes(), out.stderr
    assert not systemdisk.prepare_image(image, lay, files)
    (files / "b.dat").write_bytes(b"x" * 4096)
    assert systemdisk.prepare_image(image, systemdisk.layout(8 * MiB, 300 * 1024 + 4096), files)


def test_the_file_cache_back_the_page_in_rate_and_the_seek_share_on_series_with_known_answers():

    cache = [(0.0, 1e6), (0.5, 5e6), (1.0, 9e6), (1.5, 9.5e6)]
    assert recovery.file_back_time(cache, 10e6) == 1.0          # 90 % of the 10 MB before the hogs
    assert recovery.file_back_time(cache, 20e6) != recovery.file_back_time(cache, 20e6)  # never: NaN
    assert recovery.file_back_time(cache, 0) != recovery.file_back_time(cache, 0)        # no file cache: NaN
    swapin = [(0.0, 100e6), (1.0, 104e6), (2.0, 108e6), (3.0, 108e6)]
    assert recovery.pagein_rate(swapin, 2.0, 3.0) == pytest.approx(4.0)    # 8 MB in the 2 s until back
    assert recovery.pagein_rate(swapin, float("nan"), 3.0) == pytest.approx(8 / 3)  # never back: the watch
    assert recovery.pagein_rate(swapin, 0.0, 3.0) != recovery.pagein_rate(swapin, 0.0, 3.0)  # back at the start
    assert recovery.seek_share({"by_op.read.ios": 200.0, "by_op.read.seeks": 50.0}) == 0.25
    assert recovery.seek_share({}) != recovery.seek_share({})


def test_the_premise_table_names_each_arms_rate_and_seek_share_or_none():
    import pandas as pd

    from pagelab.experiments import readyboost as rb

    rows = []
    for arm, rate, seek in (("hdd_after", 1.5, 0.8), ("zram", float("nan"), float("nan"))):
        for i in range(5):
            rows.append({"arm": arm, "order": i, "pagein_mbps": rate + 0.1 * i, "pagein_mbps_retouch": 10.0,
                         "seek_share_restore": seek, "seek_share_retouch": 0.1, "recovery_s": 1.0, "back_s": 2.0,
                         "hog_s": 3.0, "restore_window_s": 9.0, "file_back_s": 1.5})
    summary = rb.summarise(pd.DataFrame(rows))
    t = rb.premise_table(summary)
    assert list(t.columns) == ["Arm"] + [rb.PREMISE_HEADERS[c] for c in rb.PREMISE]
    hdd = t[t["Arm"] == "hdd after"].iloc[0]
    assert hdd[rb.PREMISE_HEADERS["pagein_mbps"]] == "1.70 [1.50, 1.90]"  # latex.fmt: 3 significant digits
    assert hdd[rb.PREMISE_HEADERS["seek_share_restore"]].startswith("80")
    assert t[t["Arm"] == "zram"].iloc[0][rb.PREMISE_HEADERS["pagein_mbps"]] == "--"
    assert summary.set_index("arm").loc["hdd_after", "file_back_s"] == 1.5


# --------------------------------------------------------------------------------------------
# The state changes (root).

def ext4_at(path: Path, offset: int, size: int) -> None:
    with open(path, "wb") as f:
        f.truncate(offset + size + MiB)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-E", f"offset={offset}", str(path), f"{size // 1024}k"], check=True,
                   capture_output=True, timeout=60)


def mounted(mountpoint: Path) -> bool:
    return any(m.mountpoint == str(mountpoint) for m in state.mountinfo())


@root_only
def test_a_loop_over_part_of_a_file_and_a_file_system_on_it_are_undone_by_the_scope(journal, disk_tmp):
    before = state.show()
    image = disk_tmp / "img"
    ext4_at(image, 2 * MiB, 8 * MiB)
    with state.session() as st:
        with st.scope():
            dev = st.loop(image, direct_io=True, offset=2 * MiB, sizelimit=8 * MiB)
            sys_loop = Path("/sys/block", dev.name, "loop")
            assert int((sys_loop / "offset").read_text()) == 2 * MiB
            assert int((sys_loop / "sizelimit").read_text()) == 8 * MiB
            mp = st.mount_fs(dev, disk_tmp / f"fs-{st.owner}", "ext4", "ro,noatime")
            assert mounted(mp) and (mp / "lost+found").is_dir()
            assert any(str(mp) in m for m in state.show()["loop_mounts"])
        # unmounted, and no loop device backed by the image (the number may be reused at once)
        assert not mounted(mp) and str(image) not in state.show()["loop_devices"].values()
    assert state.show() == before
    assert not journal.exists()


@root_only
def test_a_file_system_on_a_loop_device_is_undone_after_sigkill(journal, disk_tmp):
    """SIGKILL after the mount: the next restore unmounts the file system, then detaches its loop
    device (never lazily), and the machine is as before."""
    before = state.show()
    image = disk_tmp / "img"
    ext4_at(image, MiB, 8 * MiB)
    code = ("import time\nfrom pathlib import Path\nfrom pagelab.system import state\n"
            "with state.session() as st:\n"
            f"    dev = st.loop(Path({str(image)!r}), direct_io=True, offset=1 << 20, sizelimit=8 << 20)\n"
            f"    st.mount_fs(dev, Path({str(disk_tmp)!r}) / f'fs-{{st.owner}}', 'ext4', 'ro')\n"
            "    print('up', flush=True)\n"
            "    time.sleep(60)\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    assert p.stdout.readline().strip() == "up"
    assert state.show()["loop_mounts"] != before["loop_mounts"]
    p.send_signal(signal.SIGKILL)
    assert p.wait(timeout=30) == -signal.SIGKILL
    assert journal.exists()
    state.restore()
    assert state.show() == before
    assert not journal.exists()


# --------------------------------------------------------------------------------------------
# One device, one head (root, FUSE).

def _reads(dev: Path) -> float:
    return float(Path(f"/sys/block/{dev.name}/stat").read_text().split()[2]) * 512


PAGEIN = """
import os, sys, time
n = int(sys.argv[1])
buf = bytearray(n)
for i in range(0, n, 4096):
    buf[i] = 1 + i % 251
print("filled", flush=True)
sys.stdin.readline()
s = 0
for i in range(0, n, 4096):
    s += buf[i]
print("touched", s, flush=True)
"""


@root_only
def test_a_file_read_and_a_page_in_land_on_one_emulated_device_whose_busy_time_counts_both(journal, disk_tmp):
    """The system disk (hdd5400-2008) with a 16 MiB file set and a swap area: reading the files
    from inside a memory cgroup reads the file system area, and a process of the group that
    pages its memory back in reads the swap area; the emulator's own counters (one device) count
    both areas' reads, and its busy time (the sum of its service times) grows in each phase."""
    if not Path("/dev/fuse").exists():
        pytest.skip("needs FUSE")
    from conftest import build_native

    build_native()
    before = state.show()
    files = disk_tmp / "files"
    run_json(cacheflood_cmd(files, 16 * MiB, 4096, seed=1), timeout=300)
    lay = systemdisk.layout(64 * MiB, 16 * MiB)
    image = disk_tmp / "system.img"
    systemdisk.prepare_image(image, lay, files)
    with state.session() as st:
        sd = systemdisk.system_disk(st, "hdd5400-2008", disk_tmp / "dev", lay, image)
        assert sd.swap is not None and sd.fs_loop is not None and sd.files is not None
        cg = st.cgroup("systemdisk", memory_limit=24 * MiB)

        def busy() -> float:
            return sd.device.stats()["time_ns"]["service"] / 1e9

        d0, b0, a0 = sd.device.stats(), busy(), sd.area_reads()
        run_json(cacheflood_cmd(sd.files, 16 * MiB, 16 * MiB, seed=1, cold=True), timeout=300,
                 preexec_fn=cg.preexec())
        d1, b1, a1 = sd.device.stats(), busy(), sd.area_reads()
        assert a1["fs"] - a0["fs"] >= 15 * MiB and a1["swap"] == a0["swap"]
        assert d1["read_bytes"] - d0["read_bytes"] >= a1["fs"] - a0["fs"]
        assert b1 > b0
        p = subprocess.Popen([str(VENV_BIN / "python"), "-c", PAGEIN, str(48 * MiB)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, preexec_fn=cg.preexec())
        assert p.stdout.readline().strip() == "filled"
        time.sleep(0.5)
        b2, a2 = busy(), sd.area_reads()
        p.stdin.write("\n")
        p.stdin.flush()
        assert p.stdout.readline().startswith("touched")
        p.wait(timeout=120)
        d3, b3, a3 = sd.device.stats(), busy(), sd.area_reads()
        paged_in = a3["swap"] - a2["swap"]
        assert paged_in >= 4 * MiB, paged_in
        # one device: its reads are both areas' reads (FUSE may split a request, never drop one)
        assert d3["read_bytes"] - d0["read_bytes"] >= (a3["fs"] - a0["fs"]) + (a3["swap"] - a0["swap"])
        assert b3 > b2 > b0
        assert 0 < d3["read_seeks"] <= d3["reads"]
        assert d3["by_op"]["read"]["seeks"] == d3["read_seeks"]
    assert state.show() == before


# --------------------------------------------------------------------------------------------
# readyboost's trials on the system disk (root, FUSE, zram).

# The tier with the agent between the rounds runs five times in the pipeline test's quick run
# (test_pipeline: its counters against the tier with the agent after the hogs), not here.
QUICK_ARMS = ("hdd", "hdd_between", "tier_after", "zram")


@pytest.fixture(scope="module")
def quick_trials(tmp_path_factory):
    """(readyboost's quick config, {arm: the result of one real trial}): readyboost's trial
    (recovery.run_trial, what `pagelab trial readyboost` runs for each trial) at the quick
    profile's sizes, re-touch in address order, one trial of each arm family in one state session
    with the machine-wide state lock held: no agent, the agent between the hog rounds on the bare
    disk, the tier with the agent after the hogs, zram. The test below reads them. Skips without
    root, FUSE or zram0; the machine's paging state is as before afterwards."""
    import uuid

    from conftest import REPO, build_native
    from pagelab.run import trials
    from pagelab.system import config

    if os.geteuid() != 0 or not Path("/dev/fuse").exists() or not Path("/sys/block/zram0").exists():
        pytest.skip("needs root, FUSE and zram0: swap on the emulated disk and on zram, a memory cgroup")
    build_native()
    cfg = config.load(overrides={"profile": "quick"})["readyboost"]
    scratch = REPO / ".pytest-scratch" / f"quick-trials-{uuid.uuid4().hex[:12]}"  # the real disk, never tmpfs
    scratch.mkdir(parents=True)
    try:
        with pytest.MonkeyPatch.context() as mp, state.exclusive():
            mp.setenv("PAGELAB_JOURNAL", str(tmp_path_factory.mktemp("quick-trials") / "journal.jsonl"))
            before = state.show()
            with state.session() as st:
                results = {arm: recovery.run_trial(st, cfg, trials.Trial(trial_id=f"{arm}-r00", params={"arm": arm},
                                                                         repetition=0, seed=11), scratch)
                           for arm in QUICK_ARMS}
            assert state.show() == before
    except state.StateBusy as exc:
        pytest.skip(str(exc))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return cfg, results


@root_only
def test_quick_readyboost_trials_of_each_arm_family_measure_every_criterion_and_the_premise(quick_trials):
    """readyboost's trial at the quick profile, an arm of each family (no agent, the agent between
    the rounds on the bare disk, the tier with the agent after them, zram): every trial is valid
    and has its file set's return (`file_back_s`, never without the agent), the page-in rate and
    the share of reads with a seek, in sane ranges, each a column of the run's trials.csv."""
    import pandas as pd

    from pagelab.experiments import readyboost as rb

    cfg, results = quick_trials
    arms = ["hdd", "hdd_between", "tier_after", "zram"]
    got = {a: results[a] for a in arms}
    for arm, r in got.items():
        assert rb.validity({"arm": arm}, r) is None, (arm, rb.validity({"arm": arm}, r),
                                                      {"out_at_end_pages": r["out_at_end_pages"],
                                                       "out_samples_last": r["samples"]["out"][-4:]})
    ws_cache = rb.design(cfg).file_cache
    for arm, r in got.items():
        assert r["cache_before_hogs"] >= 0.8 * ws_cache, (arm, r["cache_before_hogs"])
        assert r["file_back_bytes"] == pytest.approx(rb.FILE_BACK_SHARE * r["cache_before_hogs"])
        for col in ("seek_share_restore", "seek_share_retouch"):
            assert pd.isna(r[col]) or 0 <= r[col] <= 1, (arm, col, r[col])
    # without the agent nothing brings the files back; with it, they come back within the watch
    assert pd.isna(got["hdd"]["file_back_s"])
    for arm in ("hdd_between", "tier_after", "zram"):
        assert 0 <= got[arm]["file_back_s"] <= got[arm]["restore_window_s"], arm
        assert got[arm]["fs_area_read_bytes_restore"] > 0, arm
    # page-ins: during the restore with the agent, during the re-touch without it. The agent
    # after the hogs always has pages to read back; between the rounds its reads can already have
    # brought the working set back (about one quick trial in ten): "back" is at most BACK_SHARE
    # of it still out of RAM, so the restore then reads at most that much (7 pages of 2048 in
    # one such trial), and no page-in rate is given.
    assert got["tier_after"]["back_s"] > 0, got["tier_after"]
    left = recovery.BACK_SHARE * rb.design(cfg).working_set
    for arm in ("hdd_between", "tier_after"):
        if got[arm]["back_s"] == 0:
            assert pd.isna(got[arm]["pagein_mbps"]), (arm, got[arm])
            assert got[arm]["swap_area_read_bytes_restore"] <= left, (arm, got[arm])
            assert got[arm]["agent_restore_swapins"] * recovery.PAGE <= left, (arm, got[arm])
            continue
        assert 0 < got[arm]["pagein_mbps"] < 200, (arm, got[arm]["pagein_mbps"])
        assert got[arm]["swap_area_read_bytes_restore"] > 0, arm
        assert 0 < got[arm]["seek_share_restore"] <= 1, arm
    assert 0 < got["hdd"]["pagein_mbps_retouch"] < 200
    assert got["hdd"]["seek_share_retouch"] >= 0
    # what this test reads reaches a run's trials.csv (readyboost's columns)
    read = {"cache_before_hogs", "file_back_bytes", "seek_share_restore", "seek_share_retouch", "file_back_s",
            "restore_window_s", "fs_area_read_bytes_restore", "pagein_mbps", "swap_area_read_bytes_restore",
            "pagein_mbps_retouch", "back_s", "restore_share"}
    assert read <= set(rb.EXPERIMENT.columns), read - set(rb.EXPERIMENT.columns)
