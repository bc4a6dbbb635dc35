"""residency (native/residency): page-cache residency of files with mmap + mincore, checked on
the real page cache (a file just written, dropped with POSIX_FADV_DONTNEED, half read back)
and against util-linux's fincore when it is installed; its command line, -r, errors and the
kernel's rule that hides residency from users who may not write a file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

MiB = 1 << 20
PAGE = os.sysconf("SC_PAGE_SIZE")


@pytest.fixture(scope="session")
def residency(native_build: Path) -> Path:
    return native_build / "residency"


def run(tool: Path, *args: object, **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(tool), *map(str, args)], capture_output=True, text=True,
                          timeout=60, **kwargs)


def run_json(tool: Path, *args: object, status: int = 0) -> dict:
    done = run(tool, "--output-format", "json", *args)
    assert done.returncode == status, done.stderr
    return json.loads(done.stdout)  # the whole of stdout is the document


def write_file(path: Path, size: int) -> Path:
    """size bytes of random data, synced, so every page is clean and can be dropped."""
    with open(path, "wb") as f:
        f.write(os.urandom(size))
        f.flush()
        os.fsync(f.fileno())
    return path


def drop_from_page_cache(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def read_first(path: Path, nbytes: int) -> None:
    """Reads the first nbytes with readahead off, so exactly those pages come in."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        done = 0
        while done < nbytes:
            done += len(os.pread(fd, min(MiB, nbytes - done), done))
    finally:
        os.close(fd)


def fincore_resident_bytes(path: Path) -> int:
    out = subprocess.run(["fincore", "--json", "--bytes", "--output", "RES,PAGES,SIZE,FILE",
                          str(path)], capture_output=True, text=True, check=True, timeout=60)
    return int(json.loads(out.stdout)["fincore"][0]["res"])


def only_file(doc: dict) -> dict:
    assert len(doc["files"]) == 1, doc
    return doc["files"][0]


def test_help_shows_the_operands(residency: Path) -> None:
    done = run(residency, "--help")
    assert done.returncode == 0
    assert done.stdout.startswith("usage: residency [--recursive] [--output-format normal|json]"
                                  " [--output FILE] FILE...\n")
    assert "(-r)" in done.stdout and "Exit status" in done.stdout


@pytest.mark.parametrize(("args", "problem"), [
    ([], "residency: no files given"),
    (["--bogus", "x"], "residency: unknown option '--bogus'"),
    (["-x", "x"], "residency: unknown option '-x'"),
    (["--output-format", "xml", "x"], "residency: --output-format: 'xml' is not one of normal, json"),
    (["--recursive=yes", "x"], "residency: --recursive takes no value"),
])
def test_bad_usage_exits_2_naming_the_problem(residency: Path, args: list[str],
                                              problem: str) -> None:
    done = run(residency, *args)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert lines[0].startswith(problem), done.stderr
    assert lines[1].startswith("usage: residency "), done.stderr
    assert done.stdout == ""


def test_written_then_dropped_then_half_read(residency: Path, disk_tmp: Path) -> None:
    size = 32 * MiB + 100                       # a partial last page
    pages = -(-size // PAGE)
    path = write_file(disk_tmp / "data", size)
    have_fincore = shutil.which("fincore") is not None

    written = only_file(run_json(residency, path))
    assert written["file"] == str(path) and written["size"] == size
    assert written["pages"] == pages
    assert written["percent"] >= 99.0, written   # just written: in the page cache
    if have_fincore:
        assert written["resident_bytes"] == fincore_resident_bytes(path)

    drop_from_page_cache(path)
    dropped = only_file(run_json(residency, path))
    assert dropped["percent"] <= 1.0, dropped
    if have_fincore:
        assert dropped["resident_bytes"] == fincore_resident_bytes(path)

    read_first(path, 16 * MiB)
    half = only_file(run_json(residency, path))
    assert abs(half["percent"] - 50.0) < 1.0, half
    assert half["resident_pages"] * PAGE == half["resident_bytes"]
    if have_fincore:
        assert half["resident_bytes"] == fincore_resident_bytes(path)


@pytest.mark.skipif(shutil.which("fincore") is None, reason="util-linux fincore not installed")
def test_agrees_with_fincore_on_a_patchwork(residency: Path, disk_tmp: Path) -> None:
    """Every other MiB resident: the same page count as the peer, page for page. The page cache
    is the machine's: where it changed while the peer looked (our count after the peer's differs
    from ours before it), the patchwork is laid again and both look again, up to three times."""
    path = write_file(disk_tmp / "patchwork", 8 * MiB)
    for _ in range(3):
        drop_from_page_cache(path)
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
            for at in range(0, 8 * MiB, 2 * MiB):
                os.pread(fd, MiB, at)
        finally:
            os.close(fd)
        ours = only_file(run_json(residency, path))["resident_bytes"]
        peer = fincore_resident_bytes(path)
        if only_file(run_json(residency, path))["resident_bytes"] == ours:
            break
    assert ours == peer == 4 * MiB


def test_recursive_walks_in_name_order_and_totals(residency: Path, disk_tmp: Path) -> None:
    (disk_tmp / "b_dir").mkdir()
    write_file(disk_tmp / "c", 3 * PAGE)
    write_file(disk_tmp / "b_dir" / "inner", 5000)
    write_file(disk_tmp / "a", PAGE)
    (disk_tmp / "empty").touch()
    (disk_tmp / "link").symlink_to("a")

    doc = run_json(residency, "-r", disk_tmp)
    names = [Path(f["file"]).relative_to(disk_tmp).as_posix() for f in doc["files"]]
    assert names == ["a", "b_dir/inner", "c", "empty"]
    total = doc["total"]
    assert total["files"] == 4 and total["skipped"] == 1      # the symbolic link
    assert total["size"] == PAGE + 5000 + 3 * PAGE
    assert total["pages"] == 1 + 2 + 3 + 0
    assert total["resident_pages"] == sum(f["resident_pages"] for f in doc["files"]) == 6
    assert doc["page_size"] == PAGE and doc["errors"] == []
    empty = doc["files"][3]
    assert empty["pages"] == 0 and empty["percent"] == 0.0

    # Named on the command line, a symbolic link is followed.
    assert only_file(run_json(residency, disk_tmp / "link"))["size"] == PAGE


def test_missing_file_and_directory_are_reported_after_the_others(residency: Path,
                                                                  disk_tmp: Path) -> None:
    good = write_file(disk_tmp / "good", 2 * PAGE)
    missing = disk_tmp / "missing"
    done = run(residency, "--output-format", "json", missing, good, disk_tmp)
    assert done.returncode == 1
    assert f"residency: {missing}: No such file or directory" in done.stderr
    assert f"residency: {disk_tmp}: is a directory" in done.stderr
    doc = json.loads(done.stdout)
    assert [f["file"] for f in doc["files"]] == [str(good)]
    assert [e["file"] for e in doc["errors"]] == [str(missing), str(disk_tmp)]
    assert doc["total"]["files"] == 1


def test_normal_output_is_a_table(residency: Path, disk_tmp: Path) -> None:
    path = write_file(disk_tmp / "t", 4 * PAGE)
    done = run(residency, "--output-format", "normal", path)
    assert done.returncode == 0, done.stderr
    header, row, total = done.stdout.splitlines()
    assert header.split() == ["RES_PAGES", "PAGES", "RES_BYTES", "SIZE", "PERCENT", "FILE"]
    assert row.split()[:2] == ["4", "4"] and row.endswith(str(path))
    assert "total: 1 files" in total


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run as another user")
def test_residency_hidden_from_users_who_may_not_write(residency: Path,
                                                       disk_tmp: Path) -> None:
    """The kernel tells such users every page is resident; residency says it cannot know."""
    path = write_file(disk_tmp / "root_only", 4 * PAGE)
    drop_from_page_cache(path)
    path.chmod(0o644)
    done = run(residency, "--output-format", "json", path, user=65534, group=65534)
    assert done.returncode == 1, done.stderr
    assert "hides its page-cache residency" in done.stderr
    assert json.loads(done.stdout)["files"] == []

    path.chmod(0o666)   # now the other user may write it, so it may see it: nothing resident
    assert only_file(run_json(residency, path, status=0))["resident_pages"] == 0
    done = run(residency, "--output-format", "json", path, user=65534, group=65534)
    assert done.returncode == 0, done.stderr
    assert only_file(json.loads(done.stdout))["resident_pages"] == 0
