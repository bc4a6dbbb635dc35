"""cacheflood (native/cacheflood): buffered reads of a file set through the real page cache,
after seed 004. Checks that it reads exactly --size bytes by cycling through the set, keeps one
descriptor per file open for the whole run, leaves the set resident (cross-checked with the
residency tool), reads from the disk when the set was evicted and not when it was cached,
reuses and removes made sets as documented, and rejects bad command lines with exit 2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

MiB = 1 << 20
SET = 64 * MiB


@pytest.fixture(scope="session")
def cacheflood(native_build: Path) -> Path:
    return native_build / "cacheflood"


@pytest.fixture(scope="session")
def residency(native_build: Path) -> Path:
    return native_build / "residency"


def run(tool: Path, *args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(tool), *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def flood(cacheflood: Path, *args: object) -> dict:
    done = run(cacheflood, *args, "--output-format", "json")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return json.loads(done.stdout)  # the whole of stdout is the document


def write_files(directory: Path, count: int, size: int) -> list[Path]:
    paths = []
    for i in range(count):
        path = directory / f"f{i}"
        with open(path, "wb") as f:
            f.write(os.urandom(size))
            f.flush()
            os.fsync(f.fileno())
        paths.append(path)
    return paths


def drop_from_page_cache(paths: list[Path]) -> None:
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def resident_percent(residency: Path, paths: list[Path]) -> float:
    done = run(residency, "--output-format", "json", *paths)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["total"]["percent"]


@pytest.mark.parametrize(("args", "problem"), [
    (["--size", "1M"], "no files: give --files F... or --make-set DIR"),
    (["--files", "x", "--size", "0"], "--size must be greater than 0"),
    (["--files", "x", "--size", "1M", "--bogus"], "unknown option '--bogus'"),
    (["--files", "x", "--make-set", "d", "--set-size", "1M", "--size", "1M"],
     "--files and --make-set exclude each other"),
    (["--files", "x"], "missing --size"),
    (["--size", "1M", "x"], "unexpected argument 'x' (file names go after --files)"),
    (["--make-set", "d", "--size", "1M"], "--make-set needs --set-size"),
    (["--make-set", "d", "--set-size", "0", "--size", "1M"], "--set-size must be greater"),
    (["--files", "x", "--set-size", "1M", "--size", "1M"], "--set-size goes with --make-set"),
    (["--files", "x", "--keep-set", "--size", "1M"], "--keep-set goes with --make-set"),
    (["--files", "x", "--size", "1M", "--bs", "0"], "--bs must be greater than 0"),
    (["--files", "x", "--size", "1M", "--order", "backwards"],
     "--order: 'backwards' is not one of seq, random"),
    (["--files", "x", "--size", "lots"], "--size: bad value 'lots'"),
])
def test_bad_usage_exits_2_naming_the_problem(cacheflood: Path, args: list[str],
                                              problem: str) -> None:
    done = run(cacheflood, *args)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith(f"cacheflood: {problem}"), done.stderr
    assert lines[1].startswith("usage: cacheflood [--files F...] [--make-set DIR]"), done.stderr
    assert done.stdout == ""


def test_unreadable_files_are_usage_errors_naming_the_file(cacheflood: Path,
                                                           disk_tmp: Path) -> None:
    missing = disk_tmp / "missing"
    done = run(cacheflood, "--files", missing, "--size", "1M")
    assert done.returncode == 2
    assert done.stderr.startswith(f"cacheflood: --files {missing}: No such file or directory")
    empty = disk_tmp / "empty"
    empty.touch()
    done = run(cacheflood, "--files", empty, "--size", "1M")
    assert done.returncode == 2
    assert done.stderr.startswith("cacheflood: --files: the files hold no data")
    done = run(cacheflood, "--files", disk_tmp, "--size", "1M")
    assert done.returncode == 2 and "is a directory" in done.stderr.splitlines()[0]


def test_help_documents_every_option(cacheflood: Path) -> None:
    done = run(cacheflood, "--help")
    assert done.returncode == 0
    for option in ["--files", "--make-set", "--set-size", "--file-size", "--size", "--bs",
                   "--order", "--fadvise", "--seed", "--cold", "--keep-set", "--output-format",
                   "--output"]:
        assert f"\n  {option} " in done.stdout or f"\n  {option}\n" in done.stdout, option
    assert "Exit status" in done.stdout


@pytest.mark.parametrize("order", ["seq", "random"])
def test_cycles_through_the_set_and_leaves_it_resident(cacheflood: Path, residency: Path,
                                                       disk_tmp: Path, order: str) -> None:
    """--size of 2.5 sets (not a multiple of --bs): exactly that many bytes, the made set
    comes from the disk once (it starts cold) and then from the cache, and ends resident."""
    nbytes = 5 * SET // 2 + 300 * 1024
    doc = flood(cacheflood, "--make-set", disk_tmp / "set", "--set-size", "64M",
                "--file-size", "16M", "--size", nbytes, "--order", order, "--keep-set")
    read, s, proc = doc["read"], doc["set"], doc["process"]
    assert read["bytes"] == nbytes
    assert read["passes"] == pytest.approx(nbytes / SET)
    assert read["reads"] == -(-nbytes // (128 << 10))     # 128K reads (the default), the last one short
    assert read["mb_per_s"] == pytest.approx(read["bytes_per_s"] / 1e6)
    assert read["bytes_per_s"] == pytest.approx(nbytes / read["seconds"])
    assert s["files"] == 4 and s["bytes"] == SET and s["created_files"] == 4
    assert s["resident_before"]["percent"] <= 1.0        # a new set starts cold
    assert s["resident_after"]["percent"] >= 99.0
    assert proc["rchar"] >= nbytes
    assert 0.9 * SET <= proc["read_bytes"] <= SET + 4 * MiB   # one set from the disk
    assert doc["page_cache"]["set_resident_growth"] >= 0.99 * SET
    assert isinstance(doc["page_cache"]["cached_growth"], int)
    assert doc["meminfo"]["cached"]["after"] > 0
    # The residency tool sees the same: every file of the kept set is in the page cache.
    assert resident_percent(residency, [Path(p) for p in s["paths"]]) >= 99.0


def test_evicted_set_comes_from_the_disk_and_a_cached_one_does_not(
        cacheflood: Path, residency: Path, disk_tmp: Path) -> None:
    files = write_files(disk_tmp, 4, 16 * MiB)
    drop_from_page_cache(files)
    assert resident_percent(residency, files) <= 1.0

    cold = flood(cacheflood, "--files", *files, "--size", "64M")
    assert cold["set"]["files"] == 4 and cold["set"]["dir"] is None
    assert cold["read"]["bytes"] == SET
    assert cold["process"]["read_bytes"] >= 0.9 * SET      # the flood went to the disk
    assert cold["set"]["resident_after"]["percent"] >= 99.0
    assert resident_percent(residency, files) >= 99.0
    assert [Path(p) for p in cold["set"]["paths"]] == files

    warm = flood(cacheflood, "--files", *files, "--size", "64M")
    assert warm["set"]["resident_before"]["percent"] >= 99.0
    assert warm["process"]["read_bytes"] < MiB              # all from the page cache

    again = flood(cacheflood, "--files", *files, "--size", "64M", "--cold")
    assert again["set"]["resident_before"]["percent"] <= 1.0   # --cold dropped it first
    assert again["process"]["read_bytes"] >= 0.9 * SET


def test_fadvise_hint_decides_the_readahead(cacheflood: Path, disk_tmp: Path) -> None:
    """The hint is given and the kernel acts on it: 4 KiB reads of the first 4 MiB of a cold
    32 MiB file. With random (no readahead) the disk delivers exactly those 4 MiB; with
    sequential (the default, as cat) and none, readahead fetches beyond what was asked."""
    files = write_files(disk_tmp, 1, 32 * MiB)
    from_disk = {}
    for advice in ["random", "none", "sequential"]:
        drop_from_page_cache(files)
        args = [] if advice == "sequential" else ["--fadvise", advice]
        doc = flood(cacheflood, "--files", *files, "--size", "4M", "--bs", "4K", *args)
        assert doc["options"]["fadvise"] == advice
        from_disk[advice] = doc["process"]["read_bytes"]
    assert 4 * MiB <= from_disk["random"] <= 4 * MiB + 64 * 1024, from_disk
    assert from_disk["none"] > 5 * MiB and from_disk["sequential"] > 5 * MiB, from_disk


def test_keep_set_reuses_and_otherwise_removes(cacheflood: Path, disk_tmp: Path) -> None:
    set_dir = disk_tmp / "set"
    args = ["--make-set", set_dir, "--set-size", "10M", "--file-size", "4M", "--size", "1M"]
    first = flood(cacheflood, *args, "--keep-set")
    assert first["set"]["created_files"] == 3 and first["set"]["reused_files"] == 0
    assert first["set"]["removed"] is False
    names = sorted(p.name for p in set_dir.iterdir())
    assert names == ["flood-00000.dat", "flood-00001.dat", "flood-00002.dat"]
    sizes = [(set_dir / n).stat().st_size for n in names]
    assert sizes == [4 * MiB, 4 * MiB, 2 * MiB]
    data = (set_dir / names[0]).read_bytes()
    assert data.count(0) < len(data) // 100                 # pseudo-random, not zeros
    stamps = [(set_dir / n).stat().st_mtime_ns for n in names]

    second = flood(cacheflood, *args, "--keep-set")
    assert second["set"]["created_files"] == 0 and second["set"]["reused_files"] == 3
    assert [(set_dir / n).stat().st_mtime_ns for n in names] == stamps   # not rewritten

    os.truncate(set_dir / names[1], 5)                       # a file of the wrong size
    third = flood(cacheflood, *args)
    assert third["set"]["created_files"] == 1 and third["set"]["reused_files"] == 2
    assert third["set"]["removed"] is True
    assert list(set_dir.iterdir()) == []        # the set is gone; its directory predates run 3

    fresh = disk_tmp / "fresh"
    assert flood(cacheflood, "--make-set", fresh, "--set-size", "1M", "--size", "1M")[
        "set"]["removed"] is True
    assert not fresh.exists()                   # made by this run, removed with the set


def test_keeps_one_descriptor_per_file_open_until_stopped(cacheflood: Path,
                                                          disk_tmp: Path) -> None:
    """Seed 004's reader keeps every handle open: all files at once, each opened once, for the
    whole run; SIGTERM stops it (exit 1) and a made set is still removed."""
    set_dir = disk_tmp / "set"
    proc = subprocess.Popen([str(cacheflood), "--make-set", str(set_dir), "--set-size", "8M",
                             "--file-size", "1M", "--size", "1T"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        open_files: list[str] = []
        while time.monotonic() < deadline and len(open_files) < 8:
            time.sleep(0.05)
            try:
                fds = os.listdir(f"/proc/{proc.pid}/fd")
                targets = [os.readlink(f"/proc/{proc.pid}/fd/{fd}") for fd in fds]
            except (FileNotFoundError, ProcessLookupError):
                continue
            open_files = [t for t in targets if t.startswith(str(set_dir))]
        assert sorted(open_files) == [str(set_dir / f"flood-{i:05d}.dat") for i in range(8)]
        time.sleep(0.3)   # several passes later: still the same descriptors, no more
        fds = os.listdir(f"/proc/{proc.pid}/fd")
        again = [os.readlink(f"/proc/{proc.pid}/fd/{fd}") for fd in fds]
        assert sorted(t for t in again if t.startswith(str(set_dir))) == sorted(open_files)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1
    assert "cacheflood: interrupted after" in err
    assert out == ""
    assert not set_dir.exists()


def test_normal_output(cacheflood: Path, disk_tmp: Path) -> None:
    files = write_files(disk_tmp, 2, MiB)
    done = run(cacheflood, "--files", *files, "--size", "3M", "--output-format", "normal")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert text.startswith("cacheflood: read 3.0 MiB (3145728 bytes) in 1.50 passes over 2 files")
    for fragment in ["MB/s", "page cache (Cached)", "SwapCached", "set resident:",
                     "from storage (read_bytes)", "faults:"]:
        assert fragment in text, fragment
