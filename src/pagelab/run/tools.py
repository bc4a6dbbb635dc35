"""The native tools (native/build/*) and the JSON they print.

iobench prints JSON shaped like fio's --output-format=json, so `summarise_job` reads the output
of either tool; that is what lets a test hold iobench against the real fio.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pagelab.core.paths import root

PERCENTILES = ("50.000000", "90.000000", "99.000000", "99.900000")


class ToolError(RuntimeError):
    """A native tool that failed or printed something that is not its JSON."""


def _optional(pairs: list[tuple[str, object]]) -> list[str]:
    """`FLAG VALUE` for each (flag, value) whose value is not None, in order: a tool's optional
    options."""
    return [part for flag, value in pairs if value is not None for part in (flag, str(value))]


def names() -> list[str]:
    """The native tools, found the way native/Makefile finds them: every folder of native/ with
    a main.c is a tool, built to native/build/<folder> (`make -C native names` prints the same)."""
    return sorted(p.parent.name for p in (root() / "native").glob("*/main.c"))


def tool_path(name: str) -> Path:
    path = root() / "native" / "build" / name
    if not path.exists():
        raise ToolError(f"{path} is missing: build the native tools first (make -C native)")
    return path


def run_json(cmd: list[str], timeout: float, preexec_fn: Callable[[], None] | None = None) -> dict[str, Any]:
    """Run a tool that prints one JSON document on stdout (`preexec_fn`: e.g. join a cgroup
    first); raise ToolError on any failure."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, preexec_fn=preexec_fn)
    except subprocess.TimeoutExpired as exc:
        raise ToolError(f"{cmd[0]} did not finish within {timeout:.0f} s: {' '.join(cmd)}") from exc
    if out.returncode != 0:
        raise ToolError(f"{' '.join(cmd)} exited {out.returncode}: {out.stderr.strip()}")
    try:
        return json.loads(out.stdout)
    except json.JSONDecodeError as exc:
        raise ToolError(f"{cmd[0]} printed something that is not JSON: {out.stdout[:200]!r}") from exc


# One function per native subcommand: the exact command line (recorded with every trial).


def hog_victim_cmd(size: int, fill: str, seed: int, ready: Path, go: Path, order: str = "seq") -> list[str]:
    """`hog victim`: build a working set, report on `ready`, wait for `go`, re-touch and verify."""
    return [str(tool_path("hog")), "victim", "--size", str(size), "--fill", fill, "--seed", str(seed),
            "--ready", str(ready), "--go", str(go), "--trim", "none", "--order", order, "--verify",
            "--output-format", "json"]


def hog_run_cmd(size: int, rounds: int, barrier: Path | None = None, parties: int = 1) -> list[str]:
    """`hog run`: seed 000's memory hog, `rounds` times; with `barrier` (a new file shared by
    `parties` hogs) each round's memory is held until all of them have written theirs."""
    return ([str(tool_path("hog")), "run", "--size", str(size), "--rounds", str(rounds), "--force",
             "--fill", "random", "--output-format", "json"]
            + (["--barrier", str(barrier), "--parties", str(parties)] if barrier else []))


def cacheflood_cmd(set_dir: Path, set_size: int, nbytes: int, seed: int | None = None,
                   cold: bool = False) -> list[str]:
    """`cacheflood`: `nbytes` of buffered reads over a set of `set_size` bytes made (or reused)
    in `set_dir`, kept for the next trial; `cold`: its pages dropped from the cache first."""
    return ([str(tool_path("cacheflood")), "--make-set", str(set_dir), "--set-size", str(set_size), "--keep-set"]
            + (["--cold"] if cold else []) + ["--bytes", str(nbytes)]
            + (["--seed", str(seed)] if seed is not None else []) + ["--output-format", "json"])


def superfetch_cmd(pid: int, cgroup_dir: Path, mode: str, go: Path, stop: Path, ready: Path, done: Path,
                   devices: list[str] | None = None, files: Path | None = None, poll_ms: float = 50,
                   group: int = 128 << 10, max_rate: int = 0, free_start: int | None = None,
                   free_stop: int | None = None, done_below: int | None = None, depth: int = 1,
                   priority: str = "low") -> list[str]:
    """`superfetch`: the Superfetch analogue watching `pid` and its memory cgroup (mode after or
    between; pagelab.run.superfetch drives it)."""
    cmd = [str(tool_path("superfetch")), "--pid", str(pid), "--cgroup", str(cgroup_dir), "--mode", mode,
           "--go", str(go), "--stop", str(stop), "--ready", str(ready), "--done", str(done),
           "--poll", f"{poll_ms:g}ms", "--group", str(group), "--max-rate", str(max_rate), "--depth", str(depth),
           "--priority", priority]
    if devices:
        cmd += ["--devices", ",".join(devices)]
    return cmd + _optional([("--files", files), ("--free-start", free_start), ("--free-stop", free_stop),
                            ("--done-below", done_below)])


def iobench_crystalmark_cmd(file: Path, size: int, sets: int, seed: int, set_time_s: float = 0.0,
                            buffered: bool = False, keep_file: bool = False) -> list[str]:
    """`iobench crystalmark`: CrystalMark 2004R2's disk sequence."""
    cmd = [str(tool_path("iobench")), "crystalmark", "--file", str(file), "--size", str(size), "--sets", str(sets),
           "--seed", str(seed), "--output-format", "json"]
    if set_time_s > 0:
        cmd += ["--set-time", f"{set_time_s}s"]
    if buffered:
        cmd.append("--buffered")
    if keep_file:
        cmd.append("--keep-file")
    return cmd


def simdisk_mount_cmd(mountpoint: Path, profile: str, profile_dir: Path, backing: Path, ready: Path,
                      size: int | None = None, overrides: dict[str, Any] | None = None,
                      cache_state: Path | None = None, trace: Path | None = None) -> list[str]:
    """`simdisk mount MOUNTPOINT`: the emulated device, in the foreground (the harness owns it)."""
    cmd = [str(tool_path("simdisk")), "mount", str(mountpoint), "--profile", profile, "--profile-dir", str(profile_dir),
           "--backing", str(backing), "--foreground", "--ready", str(ready)]
    if size is not None:
        cmd += ["--size", str(size)]
    if overrides:
        cmd += ["--set", ",".join(f"{k}={v}" for k, v in overrides.items())]
    if cache_state is not None:
        cmd += ["--cache-state", str(cache_state)]
    if trace is not None:
        cmd += ["--trace", str(trace)]
    return cmd


def simdisk_model_cmd(profile: str, profile_dir: Path, rw: str, bs: int, span: int | None = None) -> list[str]:
    """`simdisk model`: the device model's analytic expectation."""
    return ([str(tool_path("simdisk")), "model", "--profile", profile, "--profile-dir", str(profile_dir),
             "--rw", rw, "--bs", str(bs), "--output-format", "json"] + (["--span", str(span)] if span else []))


def iobench_job_cmd(
    file: Path | str,
    rw: str,
    bs: int,
    *,
    direct: bool = True,
    runtime: float | None = None,
    count: int | None = None,
    seed: int | None = None,
    size: int | None = None,
    span: int | None = None,
    data_file: Path | str | None = None,
    binary: Path | str | None = None,
) -> list[str]:
    """The exact iobench command line for one job (recorded with every trial). With
    `data_file`, a write job writes that file's bytes instead of random ones."""
    cmd = [str(binary or tool_path("iobench")), "job", "--file", str(file), "--rw", rw, "--bs", str(bs)]
    if direct:
        cmd.append("--direct")
    cmd += _optional([("--size", size), ("--runtime", None if runtime is None else f"{runtime}s"),
                      ("--count", count), ("--seed", seed), ("--span", span), ("--data-file", data_file)])
    return cmd + ["--output-format", "json"]


def summarise_job(doc: dict[str, Any], ddir: str = "read") -> dict[str, Any]:
    """The figures of the first job of a fio- or iobench-shaped JSON document, flattened."""
    try:
        job = doc["jobs"][0]
        d = job[ddir]
        clat = d["clat_ns"]
    except (KeyError, IndexError, TypeError) as exc:
        raise ToolError(f"not a fio-shaped job document (missing {exc})") from exc
    out = {
        "iops": float(d["iops"]),
        "bw_bytes": float(d["bw_bytes"]),
        "io_bytes": int(d["io_bytes"]),
        "total_ios": int(d["total_ios"]),
        "runtime_ms": float(d["runtime"]),
        "clat_mean_ns": float(clat["mean"]),
        "clat_stddev_ns": float(clat["stddev"]),
        "clat_min_ns": float(clat["min"]),
        "clat_max_ns": float(clat["max"]),
    }
    pct = clat.get("percentile", {})
    for key in PERCENTILES:
        if key in pct:
            out[f"clat_p{key.rstrip('0').rstrip('.').replace('.', '_')}_ns"] = float(pct[key])
    return out


@contextmanager
def pinned_to_one_cpu(pin: bool = True) -> Iterator[None]:
    """With pin, this process and every child it starts run on one CPU, the same for a tool
    and the peer it is compared with. On a small VM a disk's completion interrupts go to one
    CPU, and a process that waits on that CPU is woken without an inter-processor interrupt:
    QD1 latency differs by ~30 % between the CPUs here, so unpinned tools are compared by where
    the scheduler put them as much as by what they do (fio runs its job in a forked child,
    iobench does not)."""
    if not pin:
        yield
        return
    allowed = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {max(allowed)})
    try:
        yield
    finally:
        os.sched_setaffinity(0, allowed)
