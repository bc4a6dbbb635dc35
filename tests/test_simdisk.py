"""simdisk (native/simdisk): the FUSE device emulator, measured with real fio through a real
FUSE mount against the device models' analytic predictions and the profiles' datasheet values.

Every mount is torn down in a finally block (fusermount3 -u, then the daemon is killed by its pid
if it has not exited), so a failing test leaves nothing mounted or running. Emulated disks are
sparse files in a fresh directory on the repository's disk.
"""

from __future__ import annotations

import csv
import json
import mmap
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DEVICES = REPO / "config" / "devices"
KiB, MiB = 1 << 10, 1 << 20
HDD = "hdd5400-2008"

can_mount = os.geteuid() == 0 and os.path.exists("/dev/fuse") and shutil.which("fusermount3")
needs_fuse = pytest.mark.skipif(not can_mount, reason="needs root, /dev/fuse and fusermount3")
needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not on PATH")


@pytest.fixture(scope="session")
def simdisk(native_build: Path) -> Path:
    return native_build / "simdisk"


AWAKE: list[subprocess.Popen] = []   # cpus_awake's loops while a test holds them


@pytest.fixture
def cpus_awake() -> Iterator[None]:
    """A busy loop at nice 19 on every CPU for the whole test, for the tests whose replies
    assert_on_time judges: a halted vCPU runs again only when the hypervisor wakes it, and in a
    slow hour of the shared 2-vCPU VM some replies then came 2-5 ms late, the daemon's wake-up
    (its trace: late_cause wakeup) or fio's (no trace sees it), up to a fifth of them; a running
    vCPU is taken at once by the daemon (nice -20) and the client (nice 0). In one slow hour, 1 MiB
    sequential reads: on time 0.85-1.0 in six runs without the loops, 1.0 in six with them.
    Each loop ends when the test does, or, should pytest be killed, when it sees its parent gone."""
    loop = "import os, sys\nwhile os.getppid() == int(sys.argv[1]):\n    pass"
    AWAKE.extend(subprocess.Popen(["nice", "-n", "19", sys.executable, "-c", loop, str(os.getpid())])
                 for _ in os.sched_getaffinity(0))
    try:
        yield
    finally:
        for p in AWAKE:
            p.kill()
        for p in AWAKE:
            p.wait()
        AWAKE.clear()


def run(simdisk: Path, *args: object, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(simdisk), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def model(simdisk: Path, *args: object) -> dict:
    done = run(simdisk, "model", *args, "--output-format", "json")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return json.loads(done.stdout)


def profile(name: str) -> dict:
    return yaml.safe_load((DEVICES / f"{name}.yaml").read_text())


# --- mounting ---------------------------------------------------------------------------------

@dataclass
class Mount:
    dir: Path
    disk: Path
    pid: int
    trace: Path
    process: subprocess.Popen

    def stats(self) -> dict:
        return json.loads((self.dir / "stats").read_text())


def is_mounted(path: Path) -> bool:
    target = str(path.resolve())
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == target for line in f)


def stop(m: Mount) -> int:
    """Unmounts and waits for the daemon; kills it by pid if it does not exit. Its exit status."""
    if is_mounted(m.dir):
        subprocess.run(["fusermount3", "-u", str(m.dir)], capture_output=True, timeout=30)
    try:
        return m.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.kill(m.pid, signal.SIGKILL)
        return m.process.wait(timeout=15)
    finally:
        if is_mounted(m.dir):
            subprocess.run(["fusermount3", "-uz", str(m.dir)], capture_output=True, timeout=30)


@contextmanager
def mounted(simdisk: Path, where: Path, profile_name: str, *args: object,
            backing: Path | None = None) -> Iterator[Mount]:
    """simdisk in the foreground on where/mnt, until the mount is live; always torn down."""
    mnt = where / "mnt"
    mnt.mkdir(parents=True, exist_ok=True)
    ready, pidfile, trace = where / "ready", where / "pid", where / "trace.csv"
    log = open(where / "daemon.log", "w")
    process = subprocess.Popen(
        [str(simdisk), "mount", str(mnt), "--profile", profile_name, "--backing",
         str(backing or where / "backing"), "--foreground", "--ready", str(ready),
         "--pidfile", str(pidfile), "--trace", str(trace), *map(str, args)],
        stdout=log, stderr=subprocess.STDOUT)
    m = Mount(mnt, mnt / "disk", process.pid, trace, process)
    try:
        deadline = time.monotonic() + 15
        while not ready.exists():
            assert process.poll() is None, (where / "daemon.log").read_text()
            assert time.monotonic() < deadline, "simdisk did not become ready"
            time.sleep(0.01)
        assert json.loads(ready.read_text())["pid"] == process.pid
        assert int(pidfile.read_text()) == process.pid
        yield m
    finally:
        stop(m)
        log.close()
        assert not is_mounted(mnt)


def fio(*args: object) -> dict:
    done = subprocess.run(["fio", "--output-format=json", "--ioengine=psync", "--direct=1",
                           *map(str, args)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)["jobs"][0]


def trace_rows(path: Path) -> list[dict]:
    with open(path) as f:
        return list(csv.DictReader(f))


def read_rows(trace: Path) -> list[dict]:
    return [r for r in trace_rows(trace) if r["op"] == "read"]


def service_ms(rows: list[dict]) -> np.ndarray:
    return np.array([int(r["service_ns"]) for r in rows]) / 1e6


def done_s(rows: list[dict]) -> np.ndarray:
    """Each request's completion on the model's clock (s): its arrival, queue and service."""
    return np.array([int(r["t_ns"]) + int(r["queue_ns"]) + int(r["service_ns"]) for r in rows]) / 1e9


def streamed_rate(rows: list[dict]) -> float:
    """The media rate of back-to-back 1 MiB reads of one stream (bytes/s), from the spacing of
    their completions: the drive reads ahead while the host is between two requests (FUSE's
    round trip), so each piece completes when the stream reaches its end, 1 MiB after the one
    before, however long the host took; a sum of the service times leaves those gaps out and
    reads faster than the media by as much as the host is slow."""
    done = done_s(rows)
    return (len(rows) - 1) * MiB / (done[-1] - done[0])


def fio_seen(disk: Path, log_prefix: Path, *args: object) -> np.ndarray:
    """One fio job on disk; the completion latency of each of its IOs (ms), in order."""
    fio("--name=seen", f"--filename={disk}", f"--write_lat_log={log_prefix}", "--log_offset=1", *args)
    return fio_latencies(log_prefix)[0]


def fio_latencies(log_prefix: Path) -> tuple[np.ndarray, np.ndarray]:
    """Per-IO completion latencies (ms) and offsets from fio's --write_lat_log=PREFIX
    --log_offset=1 log, in completion order."""
    rows = np.loadtxt(f"{log_prefix}_clat.1.log", delimiter=",", ndmin=2)
    return rows[:, 1] / 1e6, rows[:, 4].astype(np.int64)


def host_round_trip_ms(simdisk: Path, where: Path, reads: Callable[[Path], Sequence[float]],
                       *args: object) -> float:
    """What this host adds to a reply of its own accord, measured in the same test just before
    the reads it is judged with: the same kind of reads through the same path, on the zero
    profile (no device time, so no deadline: the daemon replies once its backing IO is done).
    The median of what the client saw, less that backing IO (ms). reads(disk) spaces them out
    so that the daemon and the client wake from idle, as they do when a device time passes."""
    with mounted(simdisk, where, "zero", *args) as m:
        seen = np.asarray(reads(m.disk), dtype=float)
    backing = np.array([int(r["backing_ns"]) for r in read_rows(m.trace)]) / 1e6
    assert len(seen) == len(backing) > 0
    return float(np.median(seen - backing))


def assert_on_time(seen_ms: list[float] | np.ndarray, rows: list[dict], round_trip_ms: float) -> None:
    """Every request as its client saw it, against the service time the daemon's trace gives
    that same request (one request at a time, so the orders agree). A working deadline puts
    nearly every reply within a millisecond of it; a shared host stalls a few replies by
    milliseconds (the hypervisor, the host disk; the daemon counts them as late), so the
    judgement is on the median and on the share on time, not on the mean, which one stall
    moves. The bounds against a machine's noise (measured on a 2-vCPU VM, other jobs running
    beside the tests): over 72 runs of the 1 MiB sequential reads the median error was
    0.04-0.28 ms and the share on time at least 0.89; over 15 runs of the 600 random 64 KiB
    reads, 0.065-0.074 ms and at least 0.99.

    The tests that call it keep every CPU awake while they read (cpus_awake): a halted vCPU's
    wake-up is the hypervisor's time, not the daemon's.

    Lateness beyond them is allowed by round_trip_ms, what the host adds to such a reply on
    its own, measured in the same test (host_round_trip_ms, an A/A floor). It grows with the
    host's load as the replies' lateness does: with two memory-copying loops beside the tests,
    from 0.02 to 0.12 ms for 64 KiB reads, whose median error went from 0.01-0.05 to
    0.09-0.14 ms. In slow hours of the shared VM the median 1 MiB reply came 0.84-1.53 ms late
    and the median 64 KiB one 0.52-0.69 ms, beyond a quiet hour's bounds.

    A broken deadline moves every reply: with no sleep, or with the service time slept twice,
    every test that calls this fails (median errors of -0.9 to -21 ms, and of 0.9 to 20 ms,
    against bounds of 0.5-0.8 ms)."""
    assert AWAKE, "a test whose replies assert_on_time judges takes the cpus_awake fixture"
    seen = np.asarray(seen_ms, dtype=float)
    service = service_ms(rows)
    assert len(seen) == len(service) > 0
    assert round_trip_ms >= 0, round_trip_ms
    error = seen - service
    median = np.median(error)
    assert -0.05 < median < 0.5 + round_trip_ms, (median, round_trip_ms, error)   # ms
    allowed = np.maximum(1.0, 0.1 * service)
    on_time = np.mean((error >= -allowed) & (error <= allowed + round_trip_ms))
    assert on_time >= 0.8, (on_time, round_trip_ms, error)


# --- command line and profiles ----------------------------------------------------------------

def test_help_and_usage_errors(simdisk: Path, tmp_path: Path) -> None:
    done = run(simdisk, "--help")
    assert done.returncode == 0 and done.stdout.startswith("usage: simdisk <command>")
    commands = [line.split()[0] for line in done.stdout.split("commands:\n")[1].split("\n\n")[0].splitlines()]
    assert commands == ["mount", "model", "qualify"]
    done = run(simdisk, "mount", "--help")
    assert done.returncode == 0
    for option in ["--size", "--trace", "--cache-state", "--pidfile", "--ready", "--foreground",
                   "--set", "--spin", "--require-state"]:
        assert f"\n  {option}" in done.stdout, option
    # every subcommand starts alike: the shared profile rows first, the profile keys at the end
    for sub, usage in (("mount", "mount MOUNTPOINT"), ("model", "model"), ("qualify", "qualify")):
        text = run(simdisk, sub, "--help").stdout
        assert text.startswith(f"usage: simdisk {usage} --profile P [--profile-dir DIR] [--set K=V,...] "), sub
        assert "\nprofile keys" in text and "fault_seed" in text, sub
    done = run(simdisk, "floppy")
    assert done.returncode == 2 and "unknown command 'floppy'" in done.stderr
    done = run(simdisk, "mount", "--profile", HDD, "--backing", tmp_path / "b")
    assert done.returncode == 2 and "missing MOUNTPOINT" in done.stderr
    assert "usage: simdisk" in done.stderr
    done = run(simdisk, "mount", tmp_path / "nowhere", "--profile", HDD, "--backing", tmp_path / "b")
    assert done.returncode == 2 and "is not a directory" in done.stderr
    done = run(simdisk, "mount", tmp_path, "--profile", HDD, "--backing", tmp_path / "b", "--size", "200G")
    assert done.returncode == 2 and "larger than the profile's capacity" in done.stderr
    done = run(simdisk, "mount", tmp_path, "--profile", HDD, "--backing", tmp_path / "b",
               "--cache-state", tmp_path / "s")
    assert done.returncode == 2 and "--cache-state needs" in done.stderr
    done = run(simdisk, "mount", tmp_path, "--profile", "tiered-readyboost", "--backing", tmp_path / "b",
               "--require-state")
    assert done.returncode == 2 and "--require-state needs --cache-state" in done.stderr
    done = run(simdisk, "model", "--profile", HDD, "--rw", "randread", "--bs", "64k",
               "--span", "32k")
    assert done.returncode == 2 and "smaller than --bs" in done.stderr
    assert not (tmp_path / "b").exists()   # refused before touching anything


def profile_keys(simdisk: Path) -> dict[str, set[str]]:
    """The profile keys `simdisk model --help` lists, by model (and "faults")."""
    text = run(simdisk, "model", "--help").stdout.split("\nprofile keys")[1]
    keys: dict[str, set[str]] = {}
    section = None
    for line in text.splitlines():
        if line.startswith("  model "):
            section = line.split()[1].rstrip(":")
        elif line.startswith("  fault injection"):
            section = "faults"
        elif line.startswith("    ") and section:
            keys.setdefault(section, set()).add(line.split()[0])
    return keys


def test_model_help_lists_every_models_keys(simdisk: Path) -> None:
    """The keys the profiles use are the keys `simdisk model --help` lists for their model."""
    keys = profile_keys(simdisk)
    assert set(keys) == {"hdd", "flash", "ssd", "tiered", "zero", "faults"}
    assert {"rpm", "avg_seek_ms", "write_cache"} <= keys["hdd"]
    assert {"erase_block_bytes", "open_units"} <= keys["flash"]
    assert {"error_reads", "bad_blocks", "stall", "command_timeout_ms", "up_interval_s"} <= keys["faults"]
    for path in sorted(DEVICES.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        used = set(doc) - {"model", "description"}
        assert used <= keys[doc["model"]] | keys["faults"], (path, used - keys[doc["model"]])


def test_model_and_qualify_print_text_json_or_a_file(simdisk: Path, tmp_path: Path) -> None:
    """--output-format normal (the default) or json; --output FILE gets the report whole; the
    old --json is gone."""
    args = ("--profile", HDD, "--rw", "randread", "--bs", "64k")
    text = run(simdisk, "model", *args)
    doc = model(simdisk, *args)
    assert text.returncode == 0 and text.stdout.startswith("simdisk model: hdd5400-2008 (hdd), randread")
    assert f"{doc['mean_service_ns'] / 1e6:.4f} ms" in text.stdout
    out = tmp_path / "model.json"
    done = run(simdisk, "model", *args, "--output-format", "json", "--output", out)
    assert done.returncode == 0 and done.stdout == "" and json.loads(out.read_text()) == doc
    done = run(simdisk, "qualify", "--profile", "usbstick-2008", "--output", tmp_path / "q.txt")
    assert done.returncode == 0 and "verdict: qualifies" in (tmp_path / "q.txt").read_text()
    done = run(simdisk, "qualify", "--profile", "usbstick-2008", "--json")
    assert done.returncode == 2 and "unknown option '--json'" in done.stderr
    done = run(simdisk, "model", *args, "--output", tmp_path / "nowhere" / "m.txt")
    assert done.returncode == 2 and "--output" in done.stderr


def test_profiles_are_flat_yaml_citing_their_source(simdisk: Path) -> None:
    paths = sorted(DEVICES.glob("*.yaml"))
    assert {p.stem for p in paths} >= {HDD, "usbstick-2008", "tiered-readyboost", "zero"}
    for path in paths:
        doc = yaml.safe_load(path.read_text())
        assert isinstance(doc, dict) and doc["model"] in {"hdd", "flash", "ssd", "tiered", "zero"}
        assert all(isinstance(v, (int, float, str, bool)) for v in doc.values()), path
        comments = " ".join(line for line in path.read_text().splitlines() if line.startswith("#"))
        cites = "seed" in comments or "datasheet" in comments or re.search(r"\[[a-z0-9]+\]", comments)
        assert cites or "overhead" in comments, path
        out = model(simdisk, "--profile", path.stem, "--rw", "randread", "--bs", "4k")
        assert out["model"] == doc["model"]


def test_hdd_profile_is_the_seed_machine() -> None:
    p = profile(HDD)
    assert (p["capacity_bytes"], p["rpm"], p["outer_rate_mb_s"]) == (120_000_000_000, 5400, 50)
    assert (p["avg_seek_ms"], p["track_to_track_ms"], p["full_stroke_ms"]) == (12, 1.0, 20)
    assert p["buffer_bytes"] == 8 * MiB and p["inner_outer_ratio"] == 0.5
    assert 0.2 <= p["command_overhead_ms"] <= 0.5 and p["write_cache"] is True
    u = profile("usbstick-2008")
    assert (u["read_rate_mb_s"], u["write_rate_mb_s"], u["erase_block_bytes"]) == (20, 7, 2 * MiB)


BAD_PROFILES = [
    # (edit of the hdd profile, what stderr must name)
    (lambda t: t.replace("rpm: 5400\n", ""), "missing key 'rpm'"),
    (lambda t: t.replace("avg_seek_ms: 12", "avg_seek_ms: -12"), "avg_seek_ms: must not be negative"),
    (lambda t: t.replace("model: hdd", "model: tape"), "model: unknown model 'tape'"),
    (lambda t: t + "spindle_rpm: 7200\n", "spindle_rpm: unknown key"),
    (lambda t: t.replace("rpm: 5400", "rpm: fast"), "rpm: expected a number"),
    (lambda t: t.replace("write_cache: true", "write_cache: on"), "write_cache: expected true or false"),
    (lambda t: t + "zones:\n  outer: 50\n", "zones: the key has no value"),
    (lambda t: t.replace("full_stroke_ms: 20", "full_stroke_ms: 12.5"), "avg_seek_ms: the seek curve"),
]


@pytest.mark.parametrize("edit,named", BAD_PROFILES, ids=[n for _, n in BAD_PROFILES])
def test_bad_profile_is_refused_naming_the_key(simdisk: Path, tmp_path: Path, edit, named) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(edit((DEVICES / f"{HDD}.yaml").read_text()))
    done = run(simdisk, "model", "--profile", bad, "--rw", "randread", "--bs", "64k")
    assert done.returncode == 2 and named in done.stderr, done.stderr
    assert done.stdout == ""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    done = run(simdisk, "mount", mnt, "--profile", bad, "--backing", tmp_path / "b", "--foreground")
    assert done.returncode == 2 and named in done.stderr, done.stderr
    assert not is_mounted(mnt) and not (tmp_path / "b").exists()


def test_bad_override_and_nested_profile_errors(simdisk: Path, tmp_path: Path) -> None:
    done = run(simdisk, "model", "--profile", HDD, "--rw", "read", "--bs", "4k",
               "--set", "command_overhead_ms=-1")
    assert done.returncode == 2 and "--set command_overhead_ms: must not be negative" in done.stderr
    tiered = tmp_path / "t.yaml"
    shutil.copy(DEVICES / "tiered-readyboost.yaml", tiered)
    (tmp_path / f"{HDD}.yaml").write_text((DEVICES / f"{HDD}.yaml").read_text()
                                         .replace("rpm: 5400", "rpm: -5400"))
    shutil.copy(DEVICES / "usbstick-2008.yaml", tmp_path)
    done = run(simdisk, "model", "--profile", tiered, "--rw", "read", "--bs", "4k")
    assert done.returncode == 2 and "disk_profile:" in done.stderr and "rpm:" in done.stderr


# --- the analytic model, checked by independent arithmetic ------------------------------------

def hdd_expectation(p: dict, bs: int, f0: float = 0.0, f1: float = 1.0, n: int = 2_000_000) -> dict:
    """Monte Carlo of the disk model (native/lib/diskmath.h, native/simdisk/hdd.c), written
    independently of the C code."""
    rng = np.random.default_rng(2008)
    rho, k = p["inner_outer_ratio"], 1 - p["inner_outer_ratio"] ** 2
    rev = 60 / p["rpm"]
    tt, avg, full = (p[key] / 1e3 for key in ("track_to_track_ms", "avg_seek_ms", "full_stroke_ms"))
    F, G = full - tt, avg - tt
    c, b = 5 * G - 5 * F / 3, 8 * F / 3 - 5 * G
    tracks = p["capacity_bytes"] / (p["outer_rate_mb_s"] * 1e6 * rev) * 2 * (1 - rho) / k
    f = rng.uniform(f0, f1, size=(2, n))
    radial = (1 - np.sqrt(1 - k * f)) / (1 - rho)          # 0 outer .. 1 inner
    x = np.abs(radial[0] - radial[1])
    seek = np.where(x * tracks < 1, 0.0, tt + b * x + c * np.sqrt(x))
    rate = p["outer_rate_mb_s"] * 1e6 * np.sqrt(1 - k * f[0])
    return {"seek": seek.mean(), "rotation": rev / 2, "transfer": (bs / rate).mean(),
            "overhead": p["command_overhead_ms"] / 1e3}


def test_model_matches_independent_arithmetic(simdisk: Path) -> None:
    p = profile(HDD)
    for span_args, f1 in [((), 1.0), (("--span", "128M"), 128 * MiB / p["capacity_bytes"])]:
        out = model(simdisk, "--profile", HDD, "--rw", "randread", "--bs", "64k", *span_args)
        want = hdd_expectation(p, 64 * KiB, 0.0, f1)
        got = {k: v / 1e9 for k, v in out["components_ns"].items()}
        for part in ("seek", "rotation", "transfer", "overhead"):
            assert got[part] == pytest.approx(want[part], rel=3e-3, abs=2e-6), (span_args, part)
        assert out["mean_service_ns"] == sum(out["components_ns"].values())
    full = model(simdisk, "--profile", HDD, "--rw", "randread", "--bs", "64k")
    assert 15 <= full["mean_service_ms"] <= 22                    # datasheet arithmetic
    assert full["components_ns"]["rotation"] == pytest.approx(30 / 5400 * 1e9, abs=1)
    seq = model(simdisk, "--profile", HDD, "--rw", "read", "--bs", "1M", "--offset", "60000000000")
    rate = 50e6 * np.sqrt(1 - 0.5 * 0.75)
    assert seq["bw_bytes"] == pytest.approx(rate, rel=1e-6)
    flash = model(simdisk, "--profile", "usbstick-2008", "--rw", "randread", "--bs", "4k")
    assert flash["mean_service_ms"] == pytest.approx(0.8 + 4096 / 20e6 * 1e3, rel=1e-6)
    hit = model(simdisk, "--profile", "tiered-readyboost", "--rw", "randread", "--bs", "64k",
                "--hit-ratio", "1")
    assert hit["mean_service_ms"] == pytest.approx(0.8 + 65536 / 1.5 / 20e6 * 1e3, rel=1e-4)


# --- the emulated HDD, measured with fio ------------------------------------------------------

@needs_fuse
@needs_fio
def test_setup_mode_answers_without_the_models_time_and_counts_apart(simdisk: Path, disk_tmp: Path) -> None:
    """`setup` on MOUNTPOINT/control: requests are answered without waiting for the model's time
    (what a harness uses to fill a page cache before a trial's clock starts); `timed` brings the
    time back. The model still sees them (its head moved), but they appear in no daemon counter,
    busy time or trace line, only in stats.setup, and their data is the disk's."""
    with mounted(simdisk, disk_tmp, HDD) as m:
        model0 = m.stats()["device"]
        (m.dir / "control").write_text("setup\n")
        assert m.stats()["setup"]["on"] is True
        data = os.urandom(MiB)
        fd = os.open(m.disk, os.O_RDWR)
        try:
            os.pwrite(fd, data, 7 * MiB)
            job = fio("--name=rr", f"--filename={m.disk}", "--rw=randread", "--bs=64k",
                      "--number_ios=200", "--norandommap")
            before = m.stats()
            (m.dir / "control").write_text("timed\n")
            assert os.pread(fd, MiB, 7 * MiB) == data   # read through the model: the same bytes
        finally:
            os.close(fd)
        after = m.stats()
    assert job["read"]["total_ios"] == 200
    # 200 reads and one 1 MiB write (in requests of at most 1 MiB), all in set-up mode
    assert before["setup"]["ios"] >= 201 and before["setup"]["bytes"] == 200 * 64 * KiB + MiB
    assert before["reads"] == 0 and before["writes"] == 0
    assert before["time_ns"]["service"] == 0 and before["read_seeks"] == 0
    assert before["device"]["head_track"] != model0["head_track"]
    assert after["setup"] == {**before["setup"], "on": False}
    assert after["reads"] >= 1 and after["read_bytes"] == MiB and after["time_ns"]["service"] > 0
    rows = trace_rows(m.trace)
    assert {r["op"] for r in rows} == {"read"} and sum(int(r["size"]) for r in rows) == MiB


@needs_fuse
@needs_fio
def test_setup_mode_runs_the_model_on_its_own_clock(simdisk: Path, disk_tmp: Path) -> None:
    """In set-up mode the model serves requests back to back on a clock of its own, so what
    depends on its time happens as in a timed fill. 300 random 64K reads through the ReadyBoost
    tier: each miss offers 16 block copies (43 KB at 1.5:1) to the 1 MiB copy queue, which the
    stick writes in about 6 ms, less than the disk's 17 ms a read. Timed, no copy is dropped;
    on the wall clock the reads come every ~0.1 ms and the queue would drop most of them. The
    clock runs ahead by the model time not waited for (stats.setup.skipped_ns), and the first
    timed request after set-up waits for nothing that set-up left behind."""
    reads, bs = 300, 64 * KiB
    per_read_ms = model(simdisk, "--profile", "tiered-readyboost", "--rw", "randread", "--bs",
                        "64k")["mean_service_ms"]
    with mounted(simdisk, disk_tmp, "tiered-readyboost") as m:
        (m.dir / "control").write_text("setup\n")
        t0 = time.monotonic()
        job = fio("--name=rr", f"--filename={m.disk}", "--rw=randread", "--bs=64k",
                  f"--number_ios={reads}", "--norandommap")
        elapsed = time.monotonic() - t0
        (m.dir / "control").write_text("timed\n")
        before = m.stats()
        fio("--name=one", f"--filename={m.disk}", "--rw=randread", "--bs=4k", "--number_ios=1",
            "--randseed=7")
        after = m.stats()
    assert job["read"]["total_ios"] == reads
    dev = before["device"]
    assert dev["misses"] == reads and dev["copies_offered"] == reads * bs // 4096
    assert dev["copies_dropped"] == 0 and dev["cache_blocks"] == reads * bs // 4096
    skipped_s = before["setup"]["skipped_ns"] / 1e9
    model_s = reads * per_read_ms / 1e3                         # about 5 s
    assert elapsed < model_s / 2                                # set-up did not wait for it
    assert skipped_s == pytest.approx(model_s - elapsed, rel=0.2)
    assert after["setup"]["skipped_ns"] == before["setup"]["skipped_ns"]
    (row,) = read_rows(m.trace)
    assert int(row["queue_ns"]) == 0 and int(row["device_wait_ns"]) < 1_000_000
    assert int(row["service_ns"]) < 40_000_000                 # one random read on the disk

@needs_fuse
@needs_fio
def test_hdd_random_read_matches_the_model(simdisk: Path, disk_tmp: Path, cpus_awake: None) -> None:
    """64K random reads, QD1, O_DIRECT, across the whole 120 GB (sparse) disk. 600 reads: the
    per-read standard deviation is ~5 ms (seek and rotation), so the mean service time is known
    to ~1 %, and fio's fixed default seed makes it the same every run. What fio saw of each
    read is then compared with that read's service time in the daemon's trace."""
    expected = model(simdisk, "--profile", HDD, "--rw", "randread", "--bs", "64k")
    round_trip = host_round_trip_ms(simdisk, disk_tmp / "zero", lambda disk: fio_seen(
        disk, disk_tmp / "rt", "--rw=randread", "--bs=64k", "--number_ios=24", "--thinktime=15ms"))
    with mounted(simdisk, disk_tmp, HDD) as m:
        assert m.disk.stat().st_size == 120_000_000_000
        job = fio("--name=rr", f"--filename={m.disk}", "--rw=randread", "--bs=64k",
                  "--number_ios=600", "--norandommap", f"--write_lat_log={disk_tmp / 'lat'}",
                  "--log_offset=1")
        stats = m.stats()
    read = job["read"]
    assert read["total_ios"] == 600
    rows = trace_rows(m.trace)
    assert len(rows) == 600 and {r["op"] for r in rows} == {"read"}
    service_ms = np.mean([int(r["service_ns"]) for r in rows]) / 1e6
    assert 15 <= service_ms <= 22
    assert service_ms == pytest.approx(expected["mean_service_ms"], rel=0.03)
    seen_ms, offsets = fio_latencies(disk_tmp / "lat")
    assert list(offsets) == [int(r["offset"]) for r in rows]
    assert_on_time(seen_ms, rows, round_trip)
    assert stats["reads"] == 600 and stats["read_bytes"] == 600 * 64 * KiB
    assert stats["backing_io"] == "direct"
    times = stats["time_ns"]
    assert times["seek"] > 0 and times["rotation"] > 0 and times["transfer"] > 0
    assert times["service"] == sum(times[k] for k in ("device_wait", "overhead", "seek",
                                                       "rotation", "transfer", "gc"))
    parts = ("device_wait_ns", "overhead_ns", "seek_ns", "rotation_ns", "transfer_ns", "gc_ns")
    for r in rows:
        assert int(r["service_ns"]) == sum(int(r[k]) for k in parts)
        assert 0 <= int(r["rotation_ns"]) < 60 / 5400 * 1e9
    assert sum(int(r["seek_ns"]) for r in rows) == times["seek"]


@needs_fuse
@needs_fio
def test_hdd_sequential_read_runs_at_the_zoned_rate(simdisk: Path, disk_tmp: Path, cpus_awake: None) -> None:
    """1 MiB sequential reads at the outer edge and three quarters in: the model streams at the
    zone's rate (from the spacing of the completions in its trace, so this machine's own noise
    stays out), and fio sees every read when the model says (per read, against the trace)."""
    p = profile(HDD)
    jobs = []
    round_trip = host_round_trip_ms(simdisk, disk_tmp / "zero", lambda disk: fio_seen(
        disk, disk_tmp / "rt", "--rw=read", "--bs=1M", "--size=24M", "--thinktime=10ms"))
    with mounted(simdisk, disk_tmp, HDD) as m:
        for i, (fraction, size) in enumerate([(0.0, 48 * MiB), (0.75, 32 * MiB)]):
            offset = int(fraction * p["capacity_bytes"]) // MiB * MiB
            rate = p["outer_rate_mb_s"] * 1e6 * np.sqrt(1 - fraction * (1 - p["inner_outer_ratio"] ** 2))
            fio("--name=seq", f"--filename={m.disk}", "--rw=read", "--bs=1M", f"--offset={offset}",
                f"--size={size}", f"--write_lat_log={disk_tmp / f'lat{i}'}", "--log_offset=1")
            jobs.append((rate, size // MiB, disk_tmp / f"lat{i}"))
        # 4 MiB reads arrive as 1 MiB pieces, streamed on without a new seek or rotation
        fio("--name=big", f"--filename={m.disk}", "--rw=read", "--bs=4M", "--offset=1G",
            "--size=32M", f"--write_lat_log={disk_tmp / 'lat-big'}", "--log_offset=1")
    rows = trace_rows(m.trace)
    assert {r["size"] for r in rows} == {str(MiB)}   # 1 MiB requests arrive whole (max_read)
    first = 0
    for rate, n, log in jobs:
        mine = rows[first:first + n]
        first += n
        assert streamed_rate(mine) == pytest.approx(rate, rel=0.05)
        # what the host waits for, first arrival to last completion: one seek and rotation more
        assert n * MiB / (done_s(mine)[-1] - int(mine[0]["t_ns"]) / 1e9) == pytest.approx(rate, rel=0.05)
        assert all(r["seek_ns"] == "0" for r in mine[1:])
        seen, offsets = fio_latencies(log)
        assert list(offsets) == [int(r["offset"]) for r in mine]
        assert_on_time(seen, mine, round_trip)
    pieces = rows[-32:]
    assert first == len(rows) - 32
    assert int(pieces[0]["offset"]) == 1 << 30 and int(pieces[-1]["offset"]) == (1 << 30) + 31 * MiB
    assert all(r["seek_ns"] == r["rotation_ns"] == "0" for r in pieces[1:])
    assert streamed_rate(pieces) == pytest.approx(p["outer_rate_mb_s"] * 1e6, rel=0.05)
    # What the model says of one 4 MiB read: from its first piece's arrival to its last piece's
    # completion. The kernel sends the pieces one after another, and the time between a piece's
    # reply and the next one's arrival (FUSE's round trip, which grows with the machine's load)
    # passes on the model's clock too (the drive reads ahead meanwhile); the sum of the four
    # service times leaves those three gaps out, and fio sees them. Measured on a 2-vCPU VM, 72
    # runs of this case with other jobs running beside it (load average 1.0-2.5; in 20 of them a
    # busy loop on one of the two CPUs too): the median error against the span was 0.02-0.42 ms
    # (p50 0.11); against the sum it was 0.09-4.18 ms, above 2 ms in 1 run of 72, and in 3 of 3
    # in a busier hour (2.1-2.9 ms). The bound, 1 ms, is twice the worst median seen; a broken
    # deadline or a piece that seeks again moves the error by milliseconds.
    seen, _ = fio_latencies(disk_tmp / "lat-big")                  # 8 reads of 4 pieces each
    arrival = np.array([int(r["t_ns"]) for r in pieces]) / 1e6
    start = arrival + np.array([int(r["queue_ns"]) for r in pieces]) / 1e6
    span = (start + service_ms(pieces)).reshape(8, 4)[:, -1] - arrival.reshape(8, 4)[:, 0]
    error = seen - span
    assert -0.05 < np.median(error) < 1.0, error


@needs_fuse
def test_no_page_cache_and_o_direct(simdisk: Path, disk_tmp: Path) -> None:
    """Every read reaches the model: buffered re-reads are not served by the page cache, and
    O_DIRECT opens work; data written comes back."""
    with mounted(simdisk, disk_tmp, "zero", "--size", "64M") as m:
        fd = os.open(m.disk, os.O_RDWR)
        try:
            os.pwrite(fd, b"simdisk!" * 512, 8192)
            for _ in range(3):
                assert os.pread(fd, 4096, 8192) == b"simdisk!" * 512
        finally:
            os.close(fd)
        fd = os.open(m.disk, os.O_RDONLY | os.O_DIRECT)
        try:
            buf = mmap.mmap(-1, 4096)
            assert os.preadv(fd, [buf], 8192) == 4096 and bytes(buf) == b"simdisk!" * 512
        finally:
            os.close(fd)
        stats = m.stats()
        assert stats["reads"] == 4 and stats["writes"] == 1
        assert (disk_tmp / "backing").stat().st_blocks * 512 < 4 * MiB   # still sparse


@needs_fuse
def test_a_late_reply_is_put_down_to_the_backing_io_or_the_wakeup(simdisk: Path, disk_tmp: Path) -> None:
    """The trace and the stats say why a reply began late. At the zero profile (no device time)
    a 1 MiB read of written data reaches the backing file with O_DIRECT and ends after the
    planned start: late by the backing IO. At hdd settings with 200 ms of command overhead, a
    daemon stopped (SIGSTOP) for 300 ms while it sleeps until a deadline, its backing IO done,
    replies late by at least the stop less the time that was left: late by the wake-up."""
    import threading

    buf = mmap.mmap(-1, MiB)
    buf.write(os.urandom(MiB))
    with mounted(simdisk, disk_tmp / "zero", "zero", "--size", "64M") as m:
        fd = os.open(m.disk, os.O_RDWR | os.O_DIRECT)
        try:
            for i in range(4):
                assert os.pwritev(fd, [buf], i * MiB) == MiB
            for i in range(4):
                assert os.preadv(fd, [buf], i * MiB) == MiB
        finally:
            os.close(fd)
        stats = m.stats()["timing"]
    rows = trace_rows(m.trace)
    reads = [r for r in rows if r["op"] == "read"]
    assert len(reads) == 4
    for r in reads:
        assert int(r["backing_ns"]) > 0 and r["late_cause"] == "backing", r
        assert int(r["start_late_ns"]) >= int(r["backing_ns"])  # the reply waited for the backing IO
    for cause in ("backing", "wakeup"):
        assert stats["late_starts"][cause] == sum(r["late_cause"] == cause for r in rows)
    assert stats["start_late_ns"]["max"] >= max(int(r["start_late_ns"]) for r in rows)

    overhead_ms, stopped_s = 200, 0.3
    with mounted(simdisk, disk_tmp / "hdd", HDD, "--size", "64M", "--set",
                 f"command_overhead_ms={overhead_ms}") as m:
        fd = os.open(m.disk, os.O_RDONLY | os.O_DIRECT)
        small = mmap.mmap(-1, 64 * KiB)
        try:
            assert os.preadv(fd, [small], 0) == 64 * KiB
            reader = threading.Thread(target=os.preadv, args=(fd, [small], 32 * MiB))
            reader.start()
            # the daemon reads the backing file first, then sleeps until the reply's deadline
            # (clock_nanosleep; idle, it waits in ppoll): it is stopped during that sleep
            deadline = time.monotonic() + 30
            while Path(f"/proc/{m.pid}/wchan").read_text() != "hrtimer_nanosleep":
                assert time.monotonic() < deadline, "the daemon never waited for a deadline"
                time.sleep(0.001)
            os.kill(m.pid, signal.SIGSTOP)
            t_stop = time.monotonic()
            time.sleep(stopped_s)
            t_cont = time.monotonic()
            os.kill(m.pid, signal.SIGCONT)
            reader.join(timeout=30)
        finally:
            os.close(fd)
        stats = m.stats()["timing"]
    rows = read_rows(m.trace)
    assert len(rows) == 2 and int(rows[1]["service_ns"]) >= overhead_ms * 1e6
    # Stopped after the request arrived and before its deadline (arrival + queue + service),
    # the daemon replies no sooner than SIGCONT: late by at least the stop less that time.
    due_ns = int(rows[1]["queue_ns"]) + int(rows[1]["service_ns"])
    least_ns = (t_cont - t_stop) * 1e9 - due_ns
    assert least_ns > 20e6, (least_ns, rows[1])              # the stop outlasts the deadline
    assert rows[1]["late_cause"] == "wakeup" and int(rows[1]["start_late_ns"]) >= least_ns, rows[1]
    assert int(rows[1]["backing_ns"]) < int(rows[1]["service_ns"])   # done before the deadline
    assert stats["late_starts"]["wakeup"] == sum(r["late_cause"] == "wakeup" for r in rows) >= 1
    assert stats["start_late_ns"]["max"] >= int(rows[1]["start_late_ns"])


# --- the flash stick --------------------------------------------------------------------------

@needs_fuse
@needs_fio
def test_flash_small_random_writes_crawl_and_reads_take_a_millisecond(
        simdisk: Path, disk_tmp: Path) -> None:
    # buffered backing: the emulated 0.9 ms sequential write must not wait for this machine's
    # disk, which other jobs may keep busy (the model's times are checked from the trace too)
    with mounted(simdisk, disk_tmp, "usbstick-2008", "--size", "1G", "--backing-io", "buffered") as m:
        seq = fio("--name=sw", f"--filename={m.disk}", "--rw=write", "--bs=4k", "--size=2M")
        rnd = fio("--name=rw", f"--filename={m.disk}", "--rw=randwrite", "--bs=4k",
                  "--number_ios=10", "--norandommap", "--size=1G")
        rr = fio("--name=rr", f"--filename={m.disk}", "--rw=randread", "--bs=4k",
                 "--number_ios=200", "--norandommap", "--size=1G")
        stats = m.stats()
    seq_ms = seq["write"]["clat_ns"]["percentile"]["50.000000"] / 1e6
    rnd_ms = rnd["write"]["clat_ns"]["percentile"]["50.000000"] / 1e6
    assert rnd_ms > 50 * seq_ms, (rnd_ms, seq_ms)        # erase-block merges
    assert seq_ms == pytest.approx(0.3 + 4096 / 7e6 * 1e3, rel=0.15)
    # near 1 ms: the median, since on a busy machine fio itself sometimes wakes up late
    assert rr["read"]["clat_ns"]["percentile"]["50.000000"] / 1e6 == pytest.approx(1.0, rel=0.15)
    # the first random writes find free open units; later ones close one (a merge) each
    assert stats["device"]["merges"] >= 5 and stats["device"]["copied_bytes"] > 8 * MiB
    # The model's own times (fio's also hold the host disk's write time, which on a busy
    # machine can exceed the emulated 0.9 ms): sequential writes cost what `model` says.
    writes = [r for r in trace_rows(m.trace) if r["op"] == "write"]
    expect = model(simdisk, "--profile", "usbstick-2008", "--rw", "write", "--bs", "4k")
    service = np.mean([int(r["service_ns"]) for r in writes[:512]])
    assert service == pytest.approx(expect["mean_service_ns"], rel=1e-3)
    assert np.mean([int(r["gc_ns"]) for r in writes[512:]]) > 40e6   # ~ one erase block copied


# --- the cache tier ---------------------------------------------------------------------------

CHUNK = 64 * KiB


def chunk_offsets(n: int, capacity: int) -> list[int]:
    """n distinct 64 KiB chunks spread at random over the disk, in random order (long seeks)."""
    rng = np.random.default_rng(7)
    return [int(o) * CHUNK for o in rng.choice(capacity // CHUNK, size=n, replace=False)]


def write_chunks(disk: Path, offsets: list[int], seed: int) -> dict[int, bytes]:
    """Random data that lz4 halves: every 4 KiB is 2 KiB of noise written twice."""
    rng = np.random.default_rng(seed)
    data = {o: b"".join(rng.bytes(2048) * 2 for _ in range(CHUNK // 4096)) for o in offsets}
    fd = os.open(disk, os.O_WRONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, CHUNK)
    try:
        for o, d in data.items():
            buf[:] = d
            assert os.pwritev(fd, [buf], o) == CHUNK
    finally:
        os.close(fd)
    return data


def read_chunks(disk: Path, data: dict[int, bytes]) -> list[float]:
    """Reads every chunk with O_DIRECT, checks its bytes; the latency of each in ms."""
    fd = os.open(disk, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, CHUNK)
    times = []
    try:
        for o, want in data.items():
            t = time.perf_counter()
            assert os.preadv(fd, [buf], o) == CHUNK
            times.append((time.perf_counter() - t) * 1e3)
            assert bytes(buf) == want, f"wrong data at {o}"
    finally:
        os.close(fd)
    return times


def assert_hits_agree_with_trace(stats: dict, trace: Path) -> None:
    reads = [r for r in trace_rows(trace) if r["op"] == "read"]
    assert sum(int(r["hit_bytes"]) for r in reads) == stats["cache_hit_bytes"]
    assert sum(r["hit"] == "hit" for r in reads) == stats["cache_hits"]
    assert sum(r["hit"] == "miss" for r in reads) == stats["cache_misses"]
    assert sum(r["hit"] == "partial" for r in reads) == stats["cache_partial_hits"]
    assert stats["device"]["hit_bytes"] == stats["cache_hit_bytes"]


@needs_fuse
def test_tiered_cache_warm_cold_and_data_in_every_state(simdisk: Path, disk_tmp: Path, cpus_awake: None) -> None:
    state = disk_tmp / "cache.state"
    backing = disk_tmp / "backing"
    capacity = 120_000_000_000
    offsets = chunk_offsets(24, capacity)
    flash_ms = 0.8 + CHUNK / 1.5 / 20e6 * 1e3                    # 2.98 ms: flash, 1.5:1
    disk_ms = model(simdisk, "--profile", HDD, "--rw", "randread", "--bs", "64k")["mean_service_ms"]

    # Phases 1-3 time reads at the emulated flash's 3 ms: the backing file goes through the
    # host page cache so that this machine's disk, which other jobs may keep busy, stays out
    # of the timing. Phase 4 uses O_DIRECT (the default) and checks data only.
    buffered = ("--backing-io", "buffered")
    round_trip = host_round_trip_ms(simdisk, disk_tmp / "zero", lambda disk: read_blocks(
        disk, offsets, CHUNK, pause_s=0.003), *buffered)

    # 1. on-write, cold start: writes enter the cache; reading them back hits the flash.
    with mounted(simdisk, disk_tmp / "1", "tiered-readyboost", "--cache-state", state, *buffered,
                 backing=backing) as m:
        data = write_chunks(m.disk, offsets, seed=1)
        time.sleep(0.5)                       # the copies are written to the flash meanwhile
        hot = read_chunks(m.disk, data)
        stats = m.stats()
    assert stats["cache_hits"] == len(offsets) and stats["cache_misses"] == 0
    assert stats["cache_hit_bytes"] == len(offsets) * CHUNK
    rows = read_rows(m.trace)
    assert np.median(service_ms(rows)) == pytest.approx(flash_ms, rel=0.25)
    assert_on_time(hot, rows, round_trip)
    assert_hits_agree_with_trace(stats, m.trace)
    assert state.stat().st_size > 0

    # 2. warm: the saved state is loaded; policy none; re-reads at flash speed.
    with mounted(simdisk, disk_tmp / "2", "tiered-readyboost", "--cache-state", state,
                 "--set", "policy=none", *buffered, backing=backing) as m:
        warm = read_chunks(m.disk, data)
        # a write with policy none drops the copy; the new data is what comes back
        changed = write_chunks(m.disk, offsets[:4], seed=2)
        data.update(changed)
        after = read_chunks(m.disk, data)
        stats = m.stats()
    rows = read_rows(m.trace)
    assert np.median(service_ms(rows[:len(warm)])) == pytest.approx(flash_ms, rel=0.25)
    assert_on_time(warm + after, rows, round_trip)
    assert stats["device"]["invalidations"] == 4 * (CHUNK // 4096)
    assert stats["cache_hits"] == 2 * len(offsets) - 4 and stats["cache_misses"] == 4
    last = [r["hit"] for r in trace_rows(m.trace) if r["op"] == "read"][-len(offsets):]
    assert last == ["miss"] * 4 + ["hit"] * (len(offsets) - 4)
    assert np.median(after[:4]) > 5 > np.median(after[4:])       # ms: disk, then flash
    assert_hits_agree_with_trace(stats, m.trace)

    # 3. cold: no state file; every read goes to the disk.
    with mounted(simdisk, disk_tmp / "3", "tiered-readyboost", "--set", "policy=none",
                 *buffered, backing=backing) as m:
        cold = read_chunks(m.disk, data)
        stats = m.stats()
    assert stats["cache_hits"] == 0 and stats["cache_misses"] == len(offsets)
    rows = read_rows(m.trace)
    assert np.mean(service_ms(rows)) == pytest.approx(disk_ms, rel=0.35)   # 24 random seeks
    assert_on_time(cold, rows, round_trip)
    assert np.median(cold) > 4 * np.median(warm)

    # 4. a cache too small for the data: evictions, data still right, lz4 measures ~2:1 (policy
    # on-write: under readyboost each miss's copy would evict the next block this scan reads).
    with mounted(simdisk, disk_tmp / "4", "tiered-readyboost", "--set",
                 "cache_capacity_bytes=524288,compression=lz4,policy=on-write", backing=backing) as m:
        data = write_chunks(m.disk, offsets, seed=3)
        read_chunks(m.disk, data)
        stats = m.stats()
    assert stats["device"]["evictions"] > 0
    assert stats["device"]["cache_used_bytes"] <= 524288
    assert 1.8 < stats["device"]["compression_ratio"] < 2.1
    assert 0 < stats["cache_hits"] < len(offsets)
    assert_hits_agree_with_trace(stats, m.trace)


def tier_profiles(tmp: Path, stick: dict[str, object]) -> Path:
    """A profile directory holding the seed's disk and tier, with the stick's keys replaced."""
    out = tmp / "profiles"
    out.mkdir()
    for name in (HDD, "usbstick-2008", "tiered-readyboost"):
        shutil.copy(DEVICES / f"{name}.yaml", out)
    doc = profile("usbstick-2008") | stick
    (out / "usbstick-2008.yaml").write_text(yaml.safe_dump(doc))
    return out


def flash_write_rate(simdisk: Path, profiles: Path) -> float:
    """The stick's sequential write rate (bytes/s) for the 1 MiB pieces the copy queue writes."""
    return model(simdisk, "--profile", "usbstick-2008", "--profile-dir", profiles, "--rw", "write",
                 "--bs", "1M")["bw_bytes"]


def write_stream(disk: Path, offset: int, total: int, bs: int = MiB) -> None:
    fd = os.open(disk, os.O_WRONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, bs)
    buf[:] = np.random.default_rng(5).bytes(bs)
    try:
        for o in range(offset, offset + total, bs):
            assert os.pwritev(fd, [buf], o) == bs
    finally:
        os.close(fd)


@needs_fuse
def test_readyboost_copy_queue_bounds_what_a_write_stream_caches(simdisk: Path, disk_tmp: Path) -> None:
    """A cold tier under a page-out-like write stream (48 MiB, 1 MiB at a time) keeps only what
    the stick could write meanwhile (plus one queue); the rest is dropped and counted; a slower
    stick less. "Meanwhile" is the device's own timeline, from the trace: from the first
    write's arrival to the last one's completion. The copy writer works through that whole
    span, including any gaps a loaded machine leaves between the writes, so the cache is
    judged against the span, never against wall-clock windows."""
    disk = profile(HDD)
    implied_rate = {}
    for name, stick in [("2008", {}), ("slow", {"write_rate_mb_s": 3.5})]:
        where = disk_tmp / name
        where.mkdir()
        profiles = tier_profiles(where, stick)
        with mounted(simdisk, where, "tiered-readyboost", "--profile-dir", profiles,
                     "--backing-io", "buffered") as m:
            write_stream(m.disk, 0, 48 * MiB)
            stats = m.stats()
        dev = stats["device"]
        writes = [r for r in trace_rows(m.trace) if r["op"] == "write"]
        assert len(writes) == 48
        stream_s = sum(int(r["service_ns"]) for r in writes) / 1e9
        end = writes[-1]
        span_s = (int(end["t_ns"]) + int(end["queue_ns"]) + int(end["service_ns"]) - int(writes[0]["t_ns"])) / 1e9
        blocks = 48 * MiB // 4096
        charge = (4096 / 1.5 + 0.999999) // 1
        # The disk's model, whatever the load: a write is done once it is in the 8 MB buffer,
        # so each costs at least its interface transfer (150 MB/s); back to back (the most
        # the service times can add up to) the platter's outer rate (50 MB/s) and a command
        # overhead each bound them from above (40 MB/s leaves room for the odd revolution);
        # and all but one buffer must have reached the platter by the last completion.
        assert 48 * MiB / (disk["interface_rate_mb_s"] * 1e6) <= stream_s <= min(span_s, 48 * MiB / 40e6), (
            stream_s, span_s)
        assert span_s >= (48 * MiB - disk["buffer_bytes"]) / (disk["outer_rate_mb_s"] * 1e6), span_s
        expected = (flash_write_rate(simdisk, profiles) * span_s + dev["copy_queue_bytes"]) / charge
        assert dev["copies_offered"] == blocks
        assert dev["cache_blocks"] + dev["copies_dropped"] == blocks and dev["copies_dropped"] > 0
        assert dev["cache_blocks"] == pytest.approx(expected, rel=0.2), (dev, span_s, expected)
        implied_rate[name] = (dev["cache_blocks"] * charge - dev["copy_queue_bytes"]) / span_s
    assert implied_rate["slow"] < 0.7 * implied_rate["2008"], implied_rate


def read_blocks(disk: Path, offsets: list[int], bs: int, pause_s: float = 0.0) -> list[float]:
    """Reads each block with O_DIRECT, pause_s apart; the latency of each in ms."""
    fd = os.open(disk, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, bs)
    times = []
    try:
        for o in offsets:
            time.sleep(pause_s)
            t = time.perf_counter()
            assert os.preadv(fd, [buf], o) == bs
            times.append((time.perf_counter() - t) * 1e3)
    finally:
        os.close(fd)
    return times


@needs_fuse
def test_readyboost_random_reads_hit_the_flash_sequential_reads_bail(simdisk: Path, disk_tmp: Path,
                                                                    cpus_awake: None) -> None:
    cutoff = 256 * KiB
    a, b = 10 * 1000 * MiB, 50 * 1000 * MiB                    # two cached 1 MiB regions, far apart
    order = [int(i) for i in np.random.default_rng(3).permutation(256)]
    round_trip = host_round_trip_ms(simdisk, disk_tmp / "zero", lambda disk: read_blocks(
        disk, [a + i * 4096 for i in order[:64]], 4096, pause_s=0.001), "--backing-io", "buffered")
    with mounted(simdisk, disk_tmp, "tiered-readyboost", "--backing-io", "buffered", "--set",
                 f"seq_cutoff_bytes={cutoff}") as m:
        write_stream(m.disk, a, MiB)
        time.sleep(0.3)                                       # the queue holds one region's copies
        write_stream(m.disk, b, MiB)
        time.sleep(0.3)                                       # the copies reach the flash
        before = m.stats()["device"]
        random_ms = read_blocks(m.disk, [a + i * 4096 for i in order], 4096)
        seq_ms = read_blocks(m.disk, list(range(b, b + MiB, 64 * KiB)), 64 * KiB)
        dev = m.stats()["device"]
    assert before["copies_dropped"] == 0 and before["cache_blocks"] == 512
    rows = read_rows(m.trace)
    flash_ms = 0.8 + 4096 / 1.5 / 20e6 * 1e3                  # 0.94 ms: the stick, 1.5:1
    assert np.median(service_ms(rows[:256])) == pytest.approx(flash_ms, rel=0.1)
    assert_on_time(random_ms, rows[:256], round_trip)
    # the first 256 KiB of the stream are random-looking enough to hit; beyond the cutoff: the disk
    assert [r["hit"] for r in rows[256:]] == ["hit"] * 4 + ["miss"] * 12
    assert dev["bailed"] == 12 and dev["bailed_bytes"] == 12 * 64 * KiB
    assert len(seq_ms) == 16
    assert dev["cache_blocks"] == 512                         # bailed reads copy nothing


@needs_fuse
def test_readyboost_agent_prepopulates_what_was_used_and_yields(simdisk: Path, disk_tmp: Path) -> None:
    state, backing = disk_tmp / "tier.state", disk_tmp / "backing"
    offsets = chunk_offsets(16, 120_000_000_000)
    hot, once, later = offsets[:8], offsets[8:12], offsets[12:]
    # 1. No copies at all (policy none): only the use history is kept: hot read 3 times, the rest once.
    with mounted(simdisk, disk_tmp / "1", "tiered-readyboost", "--cache-state", state, "--set",
                 "policy=none", "--backing-io", "buffered", backing=backing) as m:
        data = write_chunks(m.disk, offsets, seed=6)
        for _ in range(3):
            read_chunks(m.disk, {o: data[o] for o in hot})
        read_chunks(m.disk, {o: data[o] for o in once + later})
        first = m.stats()["device"]
    assert first["cache_blocks"] == 0 and first["history_blocks"] == 16 * 16
    # 2. A cold cache with that history: the agent copies the hot blocks when the disk is idle;
    # reads that come meanwhile wait at most for the one disk IO in progress.
    hot_blocks = len(hot) * CHUNK // 4096
    with mounted(simdisk, disk_tmp / "2", "tiered-readyboost", "--cache-state", state, "--set",
                 "prefetch_idle_ms=20", "--backing-io", "buffered", backing=backing) as m:
        time.sleep(0.1)
        during = read_chunks(m.disk, {o: data[o] for o in once})
        deadline = time.monotonic() + 30
        while m.stats()["device"]["prefetches"] < hot_blocks:
            assert time.monotonic() < deadline, m.stats()["device"]
            time.sleep(0.05)
        time.sleep(0.5)
        settled = m.stats()["device"]
        again = read_chunks(m.disk, {o: data[o] for o in hot + later})
        stats = m.stats()
    assert settled["loaded_history"] == 16 * 16 and settled["loaded_blocks"] == 0
    assert settled["prefetches"] == hot_blocks                  # the hot ones, not the ones read once
    assert settled["prefetch_bytes"] == hot_blocks * 4096 and settled["prefetch_disk_ns"] > 0
    rows = trace_rows(m.trace)
    prefetch = [r for r in rows if r["op"] == "prefetch"]
    assert {int(r["offset"]) // CHUNK * CHUNK for r in prefetch} == set(hot)
    longest = max(int(r["service_ns"]) for r in prefetch)
    reads = [r for r in rows if r["op"] == "read"]
    assert all(int(r["queue_ns"]) <= longest + 1_000_000 for r in reads[:len(during)]), (longest, reads)
    assert [r["hit"] for r in reads[-len(again):]] == ["hit"] * len(hot) + ["miss"] * len(later)
    assert np.median(again[:len(hot)]) < 5 < np.median(again[len(hot):])     # ms: flash, disk
    assert_hits_agree_with_trace(stats, m.trace)


@needs_fuse
def test_cache_state_belongs_to_its_image(simdisk: Path, disk_tmp: Path) -> None:
    state, backing = disk_tmp / "tier.state", disk_tmp / "backing"

    def mount_status(*args: object) -> subprocess.CompletedProcess[str]:
        mnt = disk_tmp / "mnt-x"
        mnt.mkdir(exist_ok=True)
        done = run(simdisk, "mount", mnt, "--profile", "tiered-readyboost", "--backing", backing,
                   "--foreground", *args, timeout=30)
        assert not is_mounted(mnt)
        return done

    done = mount_status("--cache-state", state, "--require-state")
    assert done.returncode == 1 and "--require-state" in done.stderr and "no such file" in done.stderr
    with mounted(simdisk, disk_tmp / "1", "tiered-readyboost", "--cache-state", state,
                 backing=backing) as m:
        data = write_chunks(m.disk, chunk_offsets(4, 120_000_000_000), seed=8)
        time.sleep(0.3)
        blocks = m.stats()["device"]["cache_blocks"]
    assert blocks == 4 * CHUNK // 4096
    # the same image: the same blocks come back, and --require-state is satisfied
    with mounted(simdisk, disk_tmp / "2", "tiered-readyboost", "--cache-state", state,
                 "--require-state", backing=backing) as m:
        dev = m.stats()["device"]
        read_chunks(m.disk, data)
        stats = m.stats()
    assert dev["loaded_blocks"] == dev["cache_blocks"] == blocks
    assert stats["cache_hits"] == 4 and stats["cache_misses"] == 0
    # another image (the file was changed behind the state's back): the mount stops, naming both
    with open(backing, "r+b") as f:
        f.write(b"x")
    done = mount_status("--cache-state", state)
    assert done.returncode == 1, done.stderr
    assert "belongs to another disk image" in done.stderr
    assert done.stderr.count("inode") == 2 and "saved for" in done.stderr


def corrupt_states(state: Path) -> dict[str, bytes]:
    """Damaged copies of a real saved state: what each must be refused for."""
    good = state.read_bytes()
    return {
        "not a simdisk cache state": b"garbage, not a cache state",
        "less than its 72-byte header": good[:40],
        "truncated: its header counts": good[:-10],
        "corrupt: 3 bytes follow": good + b"xyz",
    }


@needs_fuse
def test_a_corrupt_or_truncated_cache_state_is_refused_before_anything_is_touched(
        simdisk: Path, disk_tmp: Path) -> None:
    """One line naming the file, exit 2 (bad input), nothing mounted, no backing file made, the
    state left as it was."""
    state, backing = disk_tmp / "tier.state", disk_tmp / "backing"
    with mounted(simdisk, disk_tmp / "1", "tiered-readyboost", "--size", "64M", "--cache-state", state,
                 backing=backing) as m:
        write_chunks(m.disk, [0, CHUNK * 8], seed=4)
        time.sleep(0.2)
    assert state.stat().st_size > 72
    mnt = disk_tmp / "mnt"
    mnt.mkdir()
    for why, content in corrupt_states(state).items():
        bad = disk_tmp / "bad.state"
        bad.write_bytes(content)
        done = run(simdisk, "mount", mnt, "--profile", "tiered-readyboost", "--size", "64M", "--backing",
                   disk_tmp / "new-backing", "--foreground", "--cache-state", bad, timeout=30)
        assert done.returncode == 2, (why, done.stderr)
        assert done.stderr.count("\n") == 1 and why in done.stderr and str(bad) in done.stderr, done.stderr
        assert done.stdout == ""
        assert not is_mounted(mnt) and not (disk_tmp / "new-backing").exists()
        assert bad.read_bytes() == content


def test_qualify_runs_readyboosts_device_test(simdisk: Path) -> None:
    done = run(simdisk, "qualify", "--profile", "usbstick-2008")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("pass") == 2 and "qualifies for ReadyBoost" in done.stdout
    doc = json.loads(run(simdisk, "qualify", "--profile", "usbstick-2008", "--output-format", "json").stdout)
    # the seed's stick: 1.0 ms per 4 KiB read (4.1 MB/s), 512 KiB writes above 1.75 MB/s
    assert doc["random_read_4k"]["mb_s"] == pytest.approx(4096 / 1.0048e-3 / 1e6, rel=0.02)
    assert 1.75 < doc["random_write_512k"]["mb_s"] < 3.5
    assert doc["readyboost"] is True and doc["enhanced"] is False
    # a slower stick (2 ms access, as many of the era) fails the read test
    slow = run(simdisk, "qualify", "--profile", "usbstick-2008", "--set", "read_latency_ms=2",
                "--output-format", "json")
    assert slow.returncode == 1
    doc = json.loads(slow.stdout)
    assert doc["random_read_4k"]["pass"] is False and doc["readyboost"] is False
    # the 2008 laptop disk itself: seeks make 4 KiB random reads far too slow
    assert run(simdisk, "qualify", "--profile", HDD).returncode == 1
    bad = run(simdisk, "qualify", "--profile", "usbstick-2008", "--set", "read_rate_mb_s=-1")
    assert bad.returncode == 2 and "read_rate_mb_s" in bad.stderr


# --- scheduling -------------------------------------------------------------------------------

def traced_replies(m: Mount, reads: int, log: Path) -> list[str]:
    """The daemon's scheduling changes and writes while it serves `reads` 4 KiB O_DIRECT
    reads, as strace saw them (one line per call)."""
    tracer = subprocess.Popen(["strace", "-p", str(m.pid), "-e",
                               "trace=sched_setscheduler,sched_setattr,setpriority,writev",
                               "-o", str(log)], stderr=subprocess.PIPE, text=True)
    try:
        assert tracer.stderr is not None
        assert "attached" in tracer.stderr.readline()
        fd = os.open(m.disk, os.O_RDONLY | os.O_DIRECT)
        try:
            buf = mmap.mmap(-1, 4096)
            for i in range(reads):
                assert os.preadv(fd, [buf], i * 65536) == 4096
        finally:
            os.close(fd)
    finally:
        tracer.send_signal(signal.SIGINT)
        tracer.wait(timeout=15)
    return [line for line in log.read_text().splitlines()
            if line.startswith(("sched_set", "setpriority", "writev"))]


@needs_fuse
@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not on PATH")
@pytest.mark.parametrize("priority", [True, False], ids=["nice-20", "normal-priority"])
def test_the_daemon_runs_at_nice_minus_20_and_never_changes_class(
        simdisk: Path, disk_tmp: Path, priority: bool) -> None:
    """The daemon runs in the normal class at nice -20 (--normal-priority: the nice it was
    started with) and changes nothing per IO: no SCHED_FIFO, whose wake-up of the reader goes
    to another CPU, and no class changes around the reply, which cost added latency and let a
    busy machine delay the reply (daemon.c's header)."""
    with mounted(simdisk, disk_tmp, "zero", "--size", "64M",
                 *([] if priority else ["--normal-priority"])) as m:
        calls = traced_replies(m, 20, disk_tmp / "strace.log")
        # the reads' replies: a 16-byte header and the 4 KiB (open, flush and release replies
        # come from the FUSE operations, not from serve_io, and carry no data)
        replies = [c for c in calls if c.startswith("writev") and c.endswith(f"= {16 + 4096}")]
        assert len(replies) == 20, calls
        assert not [c for c in calls if not c.startswith("writev")], calls
        assert os.sched_getscheduler(m.pid) == os.SCHED_OTHER
        expected = -20 if priority and os.geteuid() == 0 else os.getpriority(os.PRIO_PROCESS, 0)
        assert os.getpriority(os.PRIO_PROCESS, m.pid) == expected


# --- shutdown ---------------------------------------------------------------------------------

@needs_fuse
@pytest.mark.parametrize("how", ["sigterm", "sigint", "unmount"])
def test_clean_shutdown(simdisk: Path, disk_tmp: Path, how: str) -> None:
    state = disk_tmp / "state"
    with mounted(simdisk, disk_tmp, "tiered-readyboost", "--size", "64M",
                 "--cache-state", state) as m:
        fd = os.open(m.disk, os.O_WRONLY)
        os.pwrite(fd, b"x" * 4096, 0)
        os.close(fd)
        if how == "unmount":
            subprocess.run(["fusermount3", "-u", str(m.dir)], check=True, timeout=30)
        else:
            os.kill(m.pid, signal.SIGTERM if how == "sigterm" else signal.SIGINT)
        assert m.process.wait(timeout=15) == 0
        assert not is_mounted(m.dir)
        assert not (disk_tmp / "pid").exists() and not (disk_tmp / "ready").exists()
        assert state.stat().st_size > 0
        assert trace_rows(m.trace)[0]["op"] == "write"


@needs_fuse
def test_background_mode_and_pidfile(simdisk: Path, disk_tmp: Path) -> None:
    mnt = disk_tmp / "mnt"
    mnt.mkdir()
    pidfile, ready = disk_tmp / "pid", disk_tmp / "ready"
    done = run(simdisk, "mount", mnt, "--profile", "zero", "--backing", disk_tmp / "b", "--size", "16M",
               "--pidfile", pidfile, "--ready", ready, "--normal-priority")
    pid = None
    try:
        assert done.returncode == 0, done.stderr
        deadline = time.monotonic() + 10
        while not ready.exists():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        pid = int(pidfile.read_text())
        assert is_mounted(mnt) and (mnt / "disk").stat().st_size == 16 * MiB
    finally:
        subprocess.run(["fusermount3", "-u", str(mnt)], capture_output=True, timeout=30)
        if pid:
            for _ in range(150):
                if not Path(f"/proc/{pid}").exists():
                    break
                time.sleep(0.1)
            else:
                os.kill(pid, signal.SIGKILL)
    assert not is_mounted(mnt) and not pidfile.exists()
