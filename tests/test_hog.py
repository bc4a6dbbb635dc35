"""hog (native/hog): its command line, fault counts of `run`, the fills' compressibility measured
with the real lz4 command, the victim's ready/go protocol with MADV_PAGEOUT, `--verify` catching
corruption planted through /proc/<pid>/mem, and the memory guard."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

MiB = 1 << 20
PAGE = os.sysconf("SC_PAGESIZE")


@pytest.fixture(scope="session")
def hog(native_build: Path) -> Path:
    return native_build / "hog"


def run_hog(hog: Path, *args: object, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(hog), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def hog_json(hog: Path, *args: object) -> dict:
    done = run_hog(hog, *args, "--output-format", "json")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return json.loads(done.stdout)  # the whole of stdout must be the document


def meminfo(key: str) -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        name, value = line.split(":", 1)
        if name == key:
            return int(value.split()[0]) * 1024
    raise KeyError(key)


def barrier_count(path: Path) -> int:
    """The arrivals counted in a --barrier file (its first 32-bit word), 0 before it exists."""
    try:
        return int.from_bytes(path.read_bytes()[:4].ljust(4, b"\0"), "little")
    except FileNotFoundError:
        return 0


def process_state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def wait_for(path: Path, proc: subprocess.Popen, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert proc.poll() is None, f"victim exited early: {proc.communicate()}"
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.005)


@contextmanager
def victim(hog: Path, tmp: Path, *args: object) -> Iterator[tuple[subprocess.Popen, dict]]:
    """A running `hog victim` that has announced itself: (process, ready-file contents).
    The caller says go; the process is killed if it is still running afterwards."""
    ready = tmp / "ready.json"
    proc = subprocess.Popen([str(hog), "victim", "--ready", str(ready), "--timeout", "60s",
                             *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        wait_for(ready, proc)
        yield proc, json.loads(ready.read_text())
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


def write_victim_memory(pid: int, address: int, data: bytes) -> None:
    with open(f"/proc/{pid}/mem", "r+b", buffering=0) as mem:
        mem.seek(address)
        mem.write(data)


def read_victim_memory(pid: int, address: int, size: int) -> bytes:
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        mem.seek(address)
        return mem.read(size)


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="writing /proc/<pid>/mem needs root")


# --- command line ---

def test_help_lists_commands_and_options(hog: Path) -> None:
    done = run_hog(hog, "--help")
    assert done.returncode == 0
    for command in ["run", "victim", "populate", "dump"]:
        assert f"\n  {command} " in done.stdout, command
    done = run_hog(hog, "victim", "--help")
    assert done.returncode == 0
    assert done.stdout.startswith("usage: hog victim --size S")
    for option in ["--size", "--fill", "--seed", "--touch", "--ready", "--go", "--go-signal",
                   "--timeout", "--trim", "--order", "--verify", "--force", "--output-format",
                   "--output"]:
        assert f"\n  {option} " in done.stdout or f"\n  {option}\n" in done.stdout, option


@pytest.mark.parametrize(("args", "message"), [
    (["run", "--size", "0"], "--size must be greater than 0"),
    (["victim", "--size", "0", "--order", "seq"], "--size must be greater than 0"),
    (["run", "--size", "4097"], "--size 4097 is not a whole number"),
    (["run", "--size", "4M", "--fill", "ones"], "--fill 'ones' is not one of zero, random, ratio:R"),
    (["run", "--size", "4M", "--fill", "ratio:0"], "--fill 'ratio:0': R is out of range (0, 1]"),
    (["run", "--size", "4M", "--fill", "ratio:1.5"], "--fill 'ratio:1.5': R is out of range"),
    (["dump", "--size", "4M", "--fill", "ratio:x"], "--fill 'ratio:x': R must be a number"),
    (["run", "--size", "4M", "--bogus"], "unknown option '--bogus'"),
    (["victim", "--size", "4M", "--order", "seq", "--trim", "evict"], "--trim: 'evict' is not one of none, pageout"),
    (["victim", "--size", "4M", "--order", "seq", "--go", "x", "--go-signal"], "--go and --go-signal exclude"),
    (["victim", "--size", "4M", "--order", "seq", "--timeout", "1s"], "--timeout needs --go or --go-signal"),
    (["victim", "--size", "4M"], "missing --order"),   # the schema's retouch_order, no default here
    (["run", "--size", "4M", "--rounds", "0"], "--rounds must be from 1"),
    (["populate", "--size", "4M", "--rounds", "0"], "--rounds must be from 1 to 16777216"),
    (["run", "--size", "4M", "--json"], "unknown option '--json'"),
    (["run", "--size", "4M", "--repeat", "2"], "unknown option '--repeat'"),   # the flag is --rounds
    (["run", "--size", "4M", "--output", "/nonexistent/run.json"], "--output /nonexistent/run.json: No such file"),
    (["populate", "--size", "4M", "--method", "touch"], "--method: 'touch' is not one of"),
    (["run"], "missing --size"),
    (["run", "--size", "4M", "--parties", "2"], "--parties 2 needs --barrier FILE"),
    (["run", "--size", "4M", "--barrier", "b", "--parties", "0"], "--parties must be from 1 to 64"),
    (["run", "--size", "4M", "--barrier", "b", "--parties", "2", "--barrier-timeout", "0s"],
     "--barrier-timeout must be more than 0"),
    (["frobnicate"], "unknown command 'frobnicate'"),
])
def test_bad_usage_exits_2_naming_the_problem(hog: Path, args: list[str], message: str) -> None:
    done = run_hog(hog, *args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "usage: hog" in done.stderr
    assert done.stdout == ""


# --- run and populate ---

def test_run_reports_every_round_with_a_fault_per_page(hog: Path) -> None:
    size, n = 64 * MiB, 3
    report = hog_json(hog, "run", "--size", size, "--rounds", n, "--fill", "ratio:0.5",
                      "--hold", "20ms")
    pages = size // PAGE
    assert report["command"] == "run"
    assert report["options"]["pages"] == pages and report["options"]["fill"] == "ratio:0.5"
    assert report["options"]["rounds"] == n
    rounds = report["rounds"]
    assert [r["round"] for r in rounds] == [1, 2, 3]
    for r in rounds:
        # One minor fault per page (THP off for the buffer), plus a few for the tool itself.
        assert pages <= r["minflt"] <= pages * 1.02 + 64, r
        assert r["majflt"] == 0
        assert r["touch_ns"] > 0 and r["alloc_ns"] > 0 and r["free_ns"] > 0
        assert 20e6 <= r["hold_ns"] < 2e9
        assert r["touch_gb_per_s"] == pytest.approx(size / r["touch_ns"])
    touch = sorted(r["touch_ns"] for r in rounds)
    assert report["summary"]["touch_ns_median"] == touch[1]


def test_run_barrier_holds_each_round_until_every_hog_has_written_it(hog: Path, tmp_path: Path) -> None:
    """Two hogs share a barrier; the second starts LAG_S after the first has arrived at it (its
    count, the file's first word, reads 1): the first holds its round 1 until the second has
    written its own, so it waits at least LAG_S (the second arrives after that, whatever the
    load); the second arrives last and never blocks, so its wait is the barrier's own cost,
    far below LAG_S; and round 2 then starts together."""
    lag_s = 0.5
    barrier = tmp_path / "barrier"
    cmd = [str(hog), "run", "--size", "8M", "--rounds", "2", "--fill", "zero", "--barrier", str(barrier),
           "--parties", "2", "--output-format", "json"]
    first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while barrier_count(barrier) < 1:
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first hog never reached the barrier"
            time.sleep(0.005)
        assert barrier_count(barrier) == 1
        time.sleep(lag_s)
        second = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        out, err = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    assert first.returncode == 0 and second.returncode == 0, (err, second.stderr)
    a, b = json.loads(out), json.loads(second.stdout)
    assert a["options"]["barrier"] == str(barrier) and a["options"]["parties"] == 2
    assert a["rounds"][0]["barrier_ns"] >= lag_s * 1e9, a["rounds"]
    assert b["rounds"][0]["barrier_ns"] < lag_s / 2 * 1e9, b["rounds"]
    assert a["summary"]["barrier_broken_round"] == b["summary"]["barrier_broken_round"] == 0
    assert len(barrier.read_bytes()) == 4096
    # a file that still holds this run's count is refused, naming the problem
    done = run_hog(hog, "run", "--size", "4M", "--barrier", barrier, "--parties", "2")
    assert done.returncode == 1 and "holds a count (4) from an earlier run" in done.stderr, done.stderr


def test_run_barrier_gives_up_on_a_hog_that_never_comes(hog: Path, tmp_path: Path) -> None:
    """A lone hog told to expect two waits --barrier-timeout in round 1, then goes on without
    waiting, and says from which round it ran alone."""
    report = hog_json(hog, "run", "--size", "4M", "--rounds", "3", "--fill", "zero", "--barrier",
                      tmp_path / "barrier", "--parties", "2", "--barrier-timeout", "200ms")
    waits = [r["barrier_ns"] for r in report["rounds"]]
    # round 1 waits the whole timeout (and the time to notice it, bounded only by the load);
    # once broken, the barrier is not waited on at all
    assert waits[0] >= 0.2e9 and waits[1:] == [0, 0], waits
    assert report["summary"]["barrier_broken_round"] == 1


def test_run_barrier_fails_at_once_when_a_partner_dies_mid_round(hog: Path, tmp_path: Path) -> None:
    """Two hogs share a barrier; the second holds its round 1 for a minute while the first,
    through round 1, waits for it at round 2's barrier (the count reads 3). SIGKILL to the
    second: the first stops within seconds, not after its --barrier-timeout of ten minutes,
    with exit status 3 and a message naming the dead hog's pid and the round; push_out's
    reason for the trial carries that message without the barrier's file name."""
    from pagelab.run.tools import HOG_PARTNER_GONE
    from pagelab.run.victim import HogRun

    barrier = tmp_path / "barrier"
    cmd = [str(hog), "run", "--size", "4M", "--rounds", "3", "--fill", "zero", "--barrier", str(barrier),
           "--parties", "2", "--barrier-timeout", "600s", "--output-format", "json"]
    first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    second = subprocess.Popen([*cmd, "--hold", "60s"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while barrier_count(barrier) < 3:
            assert first.poll() is None and second.poll() is None, (first.communicate(), second.communicate())
            assert time.monotonic() < deadline, f"the hogs never reached round 2: {barrier_count(barrier)}"
            time.sleep(0.005)
        time.sleep(0.2)
        assert first.poll() is None, first.communicate()    # waiting for the second
        second.kill()
        killed_at = time.monotonic()
        out, err = first.communicate(timeout=60)
        stopped_s = time.monotonic() - killed_at
    finally:
        for p in (first, second):
            if p.poll() is None:
                p.kill()
            p.communicate()
    assert first.returncode == HOG_PARTNER_GONE == 3, err
    assert stopped_s < 5, stopped_s
    assert out == ""   # no report of rounds that did not happen side by side
    assert err.strip() == (f"hog: --barrier {barrier}: the hog with pid {second.pid} is gone (killed or exited) "
                           "while this one waited for round 2: the 2 hogs can no longer hold their rounds side by side")
    why = HogRun(killed=1, partner_gone=[err.strip()]).invalid_reason()   # as push_out keeps it
    assert why == (f"1 task(s) killed (the memory cgroup's OOM killer); 1 hog(s) stopped at once: the hog with pid "
                   f"{second.pid} is gone (killed or exited) while this one waited for round 2: the 2 hogs can no "
                   "longer hold their rounds side by side"), why
    # a file whose two slots are taken (by hogs that have not arrived yet) refuses a third hog
    full = tmp_path / "full"
    full.write_bytes((0).to_bytes(4, "little") + (2).to_bytes(4, "little") + bytes(4088))
    third = run_hog(hog, "run", "--size", "4M", "--barrier", full, "--parties", "2")
    assert third.returncode == 1 and "is shared by more hogs than --parties 2" in third.stderr, third.stderr


def test_run_text_summary_and_prefault(hog: Path) -> None:
    done = run_hog(hog, "run", "--size", "8M", "--rounds", "2", "--fill", "zero",
                   "--touch", "prefault")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("hog run: 8M (2048 pages of 4K), fill zero, seed 1, touch prefault")
    rows = [line.split() for line in lines[2:4]]
    assert [row[0] for row in rows] == ["1", "2"]
    assert all(int(row[5]) >= 2048 for row in rows)  # MADV_POPULATE_WRITE faults count too
    assert lines[-1].startswith("touch: median")


def test_touch_auto_prefaults_while_the_cgroup_has_room(hog: Path) -> None:
    """--touch auto (the default) has the kernel populate the pages while the memory cgroup
    has room above a margin, and lets the rest fault; fault never prefaults, prefault always.
    Under a real 256 MiB memory cgroup (no swap needed: the hog stays below the limit) that
    keeps the kernel's OOM killer; in a group whose tasks wait on OOM it never prefaults
    (tests/test_oom.py)."""
    size = 64 * MiB
    by = {t: hog_json(hog, "run", "--size", size, "--fill", "zero", *t)["rounds"][0]
          for t in [(), ("--touch", "fault"), ("--touch", "prefault")]}
    assert by[()]["prefaulted_pages"] == size // PAGE            # no limit here: all of it
    assert by[("--touch", "fault")]["prefaulted_pages"] == 0
    assert by[("--touch", "prefault")]["prefaulted_pages"] == size // PAGE
    if os.geteuid() != 0:
        pytest.skip("a memory cgroup needs root")
    from pagelab.system import state

    limit, size = 256 * MiB, 240 * MiB
    with state.session() as st:
        cg = st.cgroup("hogtouch", memory_limit=limit, on_oom="kill")
        done = subprocess.run([str(hog), "run", "--size", str(size), "--fill", "zero", "--output-format",
                               "json"],
                              capture_output=True, text=True, timeout=60, preexec_fn=cg.preexec())
    assert done.returncode == 0, done.stderr
    r = json.loads(done.stdout)["rounds"][0]
    margin = max(32 * MiB, limit // 8)
    prefaulted = r["prefaulted_pages"] * PAGE
    # the room was the limit less this process's few MiB, less the margin; the rest faulted
    assert limit - margin - 16 * MiB <= prefaulted <= limit - margin
    assert r["minflt"] >= size // PAGE


@pytest.mark.parametrize("method", ["map", "write"])
def test_populate_reports_the_kernel_populating(hog: Path, method: str) -> None:
    report = hog_json(hog, "populate", "--size", "32M", "--method", method, "--rounds", "2")
    assert report["options"]["method"] == method
    assert len(report["rounds"]) == 2
    for r in report["rounds"]:
        assert r["populate_ns"] > 0 and r["majflt"] == 0
        assert r["minflt"] >= 32 * MiB // PAGE  # the kernel's own faults are counted


# --- fills, checked with the real lz4 command ---

def lz4_ratio(data: bytes) -> float:
    compressed = subprocess.run(["lz4", "-1", "-c"], input=data, capture_output=True,
                                check=True, timeout=60).stdout
    return len(compressed) / len(data)


def dump(hog: Path, size: int, fill: str, seed: int = 1) -> bytes:
    done = subprocess.run([str(hog), "dump", "--size", str(size), "--fill", fill,
                           "--seed", str(seed)], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout) == size
    return done.stdout


@pytest.mark.parametrize(("fill", "want"), [
    ("ratio:0.25", 0.25), ("ratio:0.5", 0.5), ("ratio:0.75", 0.75), ("random", 1.0),
])
def test_lz4_compresses_a_fill_to_its_ratio(hog: Path, fill: str, want: float) -> None:
    data = dump(hog, 16 * MiB, fill)
    achieved = lz4_ratio(data)
    assert achieved == pytest.approx(want, abs=0.1), f"{fill}: lz4 -1 ratio {achieved:.3f}"
    # Every page is different (index and seed are in it), so none can stand for another.
    pages = {data[i:i + PAGE] for i in range(0, len(data), PAGE)}
    assert len(pages) == len(data) // PAGE


def test_zero_fill_is_zero_and_compresses_to_nothing(hog: Path) -> None:
    data = dump(hog, 16 * MiB, "zero")
    assert data.count(0) == len(data)
    assert lz4_ratio(data) < 0.01


def test_dump_depends_on_the_seed_and_to_file_matches_stdout(hog: Path, disk_tmp: Path) -> None:
    assert dump(hog, MiB, "ratio:0.5", seed=1) != dump(hog, MiB, "ratio:0.5", seed=2)
    out = disk_tmp / "dump.bin"
    done = run_hog(hog, "dump", "--size", "1M", "--fill", "ratio:0.5", "--output", out)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == dump(hog, MiB, "ratio:0.5")


@needs_root
@pytest.mark.parametrize("fill", ["ratio:0.3", "zero"])
def test_victim_memory_holds_exactly_what_dump_writes(hog: Path, disk_tmp: Path,
                                                      fill: str) -> None:
    size = 4 * MiB
    with victim(hog, disk_tmp, "--size", size, "--fill", fill, "--seed", 9,
                "--go", disk_tmp / "go", "--order", "seq") as (proc, ready):
        memory = read_victim_memory(ready["pid"], ready["address"], size)
        (disk_tmp / "go").touch()
        status, _, err = finish(proc)
    assert status == 0, err
    assert memory == dump(hog, size, fill, seed=9)


# --- victim: ready/go, trim, re-touch, verify ---

def test_victim_ready_go_pageout_retouch_verifies_clean(hog: Path, disk_tmp: Path) -> None:
    size = 64 * MiB
    pages = size // PAGE
    go = disk_tmp / "go"
    with victim(hog, disk_tmp, "--size", size, "--fill", "ratio:0.5", "--go", go,
                "--trim", "pageout", "--order", "random", "--verify", "--output-format", "json") as (proc, ready):
        assert ready["pid"] == proc.pid
        assert ready["size"] == size and ready["page_size"] == PAGE and ready["pages"] == pages
        assert ready["address"] % PAGE == 0 and hex(ready["address"]) == ready["address_hex"]
        assert ready["fill"] == "ratio:0.5" and ready["seed"] == 1
        assert not list(disk_tmp.glob("ready.json.tmp*")), "the temporary file was renamed"
        # asleep after its ready file: in its wait for go, whose clock has started
        deadline = time.monotonic() + 30
        while process_state(proc.pid) != "S":
            assert time.monotonic() < deadline, "the victim never waited for go"
            time.sleep(0.001)
        time.sleep(0.05)
        assert proc.poll() is None, "the victim waits for go"
        go.touch()
        status, out, err = finish(proc)
    assert status == 0, err
    report = json.loads(out)
    assert report["wait"]["go"] == "file" and report["wait"]["ns"] >= 50e6
    assert report["build"]["resident_pages"] == pages
    assert pages <= report["build"]["minflt"] <= pages * 1.02 + 64
    assert report["trim"]["mode"] == "pageout" and report["trim"]["ns"] > 0
    retouch = report["retouch"]
    assert retouch["order"] == "random" and retouch["pages"] == pages
    assert retouch["latency_ns"]["count"] == pages
    lat = retouch["latency_ns"]
    assert lat["min"] <= lat["p50"] <= lat["p99"] <= lat["max"]
    assert report["verify"] == {"ok": True, "checked_pages": pages, "bad_pages": 0,
                                "first_bad_page": None, "first_bad_byte": None,
                                "first_bad_holds_page": None}
    if meminfo("SwapTotal") == 0:
        # No swap: MADV_PAGEOUT cannot evict anonymous pages, so nothing faults back in.
        assert report["trim"]["resident_pages_after"] == pages
        assert retouch["majflt"] == 0
        assert retouch["minflt"] < 64


def test_victim_go_signal(hog: Path, tmp_path: Path) -> None:
    # SIGUSR1 only once the ready file exists (before, the signal would kill it)
    with victim(hog, tmp_path, "--size", "8M", "--go-signal", "--order", "seq", "--verify") as (proc, _):
        assert proc.poll() is None
        proc.send_signal(signal.SIGUSR1)
        status, out, err = finish(proc)
    assert status == 0, err
    assert "wait:" in out and "(signal)" in out
    assert "verify:   all 2048 pages OK" in out


def test_victim_gives_up_after_timeout(hog: Path, disk_tmp: Path) -> None:
    done = run_hog(hog, "victim", "--size", "4M", "--go", disk_tmp / "never", "--timeout", "20ms", "--order", "seq")
    assert done.returncode == 1
    assert "did not appear within the --timeout" in done.stderr


@needs_root
@pytest.mark.parametrize("fill", ["ratio:0.5", "random", "zero"])
def test_verify_catches_planted_corruption(hog: Path, disk_tmp: Path, fill: str) -> None:
    size = 16 * MiB
    go = disk_tmp / "go"
    with victim(hog, disk_tmp, "--size", size, "--fill", fill, "--go", go, "--order", "seq", "--verify",
                "--output-format", "json") as (proc, ready):
        # Flip bytes in pages 7 and 300 (offsets inside each page: 100 and the last byte).
        for page, offset in [(7, 100), (300, PAGE - 1)]:
            at = ready["address"] + page * PAGE + offset
            old = read_victim_memory(ready["pid"], at, 1)
            write_victim_memory(ready["pid"], at, bytes([old[0] ^ 0x5A]))
        go.touch()
        status, out, err = finish(proc)
    assert status == 1, err
    assert "verify failed: 2 of 4096 pages differ" in err
    assert "first bad page 7, from byte 100" in err
    verify = json.loads(out)["verify"]
    assert verify["ok"] is False
    assert verify["bad_pages"] == 2 and verify["first_bad_page"] == 7
    assert verify["first_bad_byte"] == 100


@needs_root
def test_verify_names_a_misplaced_page(hog: Path, disk_tmp: Path) -> None:
    go = disk_tmp / "go"
    with victim(hog, disk_tmp, "--size", "4M", "--fill", "ratio:0.25", "--go", go, "--order", "seq",
                "--verify") as (proc, ready):
        page3 = read_victim_memory(ready["pid"], ready["address"] + 3 * PAGE, PAGE)
        write_victim_memory(ready["pid"], ready["address"] + 8 * PAGE, page3)
        go.touch()
        status, out, err = finish(proc)
    assert status == 1
    assert "first bad page 8, from byte 0; it holds page 3" in err
    assert "1 of 1024 pages BAD, first bad page 8" in out


# --- the memory guard ---

@pytest.mark.parametrize("command", ["run", "victim", "populate"])
def test_refuses_more_than_mem_available(hog: Path, command: str) -> None:
    available = meminfo("MemAvailable")
    size = (available + (1 << 30)) // PAGE * PAGE
    started = time.monotonic()
    done = run_hog(hog, command, "--size", size, *(["--order", "seq"] if command == "victim" else []), timeout=30)
    assert done.returncode == 2, done.stderr
    assert time.monotonic() - started < 5, "it must refuse before allocating anything"
    assert f"refusing --size {size} bytes" in done.stderr
    numbers = re.search(r"MemAvailable (\d+) bytes .* less a margin of (\d+) bytes .* = (\d+) bytes",
                        done.stderr)
    assert numbers, done.stderr
    reported, margin, left = map(int, numbers.groups())
    assert reported == pytest.approx(available, rel=0.1)
    assert margin >= 256 * MiB and left == reported - margin
    assert "memory cgroup limit" in done.stderr and "--force overrides" in done.stderr
