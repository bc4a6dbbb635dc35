"""The native tools (native/build/*) and the JSON they print.

iobench prints JSON shaped like fio's --output-format=json, so `summarise_job` reads the output
of either tool; that is what lets a test hold iobench against the real fio.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pagelab.core.paths import root
from pagelab.core.units import parse_duration, parse_size

PERCENTILES = ("50.000000", "90.000000", "99.000000", "99.900000")


class ToolError(RuntimeError):
    """A native tool that failed or printed something that is not its JSON."""


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


# Command lines from the tools' own option tables. Every native tool prints the table it parses
# with `TOOL --describe-options` (native/lib/opts.c: name, subcommand, type, unit, default, ...);
# `command` builds a command line from it, so no flag is spelled here, no value is checked twice
# and a default lives in one place: the C table, or the schema; an option whose value the schema
# holds and the harness always passes is required in the C table, with no default there
# (tests/test_options.py checks that such an option's key has a schema default, that no option a
# schema default sets has a default of its own, save a command meant to be run by hand such as
# iobench crystalmark's CrystalMark sizes, and that the two agree where both carry one). A value
# left as None is left off the command line: the tool's default, or its refusal (exit 2) of a
# missing required option.


@dataclass(frozen=True)
class Option:
    """One row of a tool's option table."""
    tool: str
    subcommand: str | None
    name: str
    type: str           # size, uint, double, duration, string, enum, flag
    unit: str | None    # bytes (a size), s (a duration), else None
    default: Any        # in the unit; None: no default
    required: bool
    choices: tuple[str, ...] | None
    help: str


@cache
def options(tool: str) -> dict[tuple[str | None, str], Option]:
    """The option table of `tool` (every subcommand's), as it prints it, by (subcommand, name);
    read once per process."""
    doc = run_json([str(tool_path(tool)), "--describe-options"], timeout=30)
    return {(o["subcommand"], o["name"]): Option(tool, o["subcommand"], o["name"], o["type"], o["unit"],
                                                 o["default"], o["required"],
                                                 tuple(o["choices"]) if o["choices"] else None, o["help"])
            for o in doc["options"]}


def option(tool: str, subcommand: str | None, name: str) -> Option:
    """The row `--name` of `tool subcommand`; ToolError if the table has none."""
    try:
        return options(tool)[(subcommand, name)]
    except KeyError:
        raise ToolError(f"{' '.join(filter(None, [tool, subcommand]))} has no option --{name}") from None


def format_duration(seconds: float) -> str:
    """A duration in the tools' one grammar, in the largest unit that holds it exactly:
    0.05 -> "50ms", 2 -> "2s", 90 -> "90s", 0.0001 -> "100us"."""
    ns = round(seconds * 1e9)
    if ns < 0:
        raise ToolError(f"negative duration: {seconds}")
    for suffix, mult in (("s", 10**9), ("ms", 10**6), ("us", 10**3)):
        if ns % mult == 0:
            return f"{ns // mult}{suffix}"
    return f"{ns}ns"


def _value(opt: Option, value: Any) -> list[str]:
    """The words `--name VALUE` for one option's value (a size in bytes, a duration in seconds,
    a flag True or False), checked against the row."""
    flag = f"--{opt.name}"
    if opt.type == "flag":
        if not isinstance(value, bool):
            raise ToolError(f"{flag} is a flag: True or False, not {value!r}")
        return [flag] if value else []
    if opt.type == "size":
        return [flag, str(parse_size(value))]
    if opt.type == "duration":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ToolError(f"{flag} takes seconds (a number), not {value!r}")
        return [flag, format_duration(float(value))]
    if opt.type == "uint":
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ToolError(f"{flag} takes a non-negative integer, not {value!r}")
        return [flag, str(value)]
    if opt.type == "double":
        return [flag, f"{float(value):g}"]
    if opt.type == "enum" and opt.choices and str(value) not in opt.choices:
        raise ToolError(f"{flag}: {value!r} is not one of {', '.join(opt.choices)}")
    return [flag, str(value)]


def command(tool: str, subcommand: str | None = None, operands: Sequence[str | Path] = (),
            **values: Any) -> list[str]:
    """The command line of `tool [subcommand] [operands] --option value ...`: each keyword is an
    option of the table (`max_rate` is --max-rate), in the order given; None is left off (the
    tool's default applies). ToolError names an option the table lacks or a value it would
    refuse."""
    cmd = [str(tool_path(tool)), *([subcommand] if subcommand else []), *(str(o) for o in operands)]
    for key, value in values.items():
        opt = option(tool, subcommand, key.replace("_", "-"))
        if value is not None:
            cmd += _value(opt, value)
    return cmd


@dataclass(frozen=True)
class SchemaOption:
    """A configuration key that is a tool's option: `block`'s `key` (config/schema*), times
    `scale`, is the value of `tool subcommand --option` in the option's unit; with `levels`, the
    key is a list of the option's values (named in the plural), one per configuration."""
    tool: str
    subcommand: str | None
    option: str
    scale: float = 1.0
    levels: bool = False


# Every configuration key that sets a native tool's option, by (block, key). One name per option
# meaning (tests/test_options.py: each names a real option, no two names the same one, a list of
# levels is the name in the plural, and a default or choices both carry agree). payoff's agent
# keys are readyboost's (payoff.agent_settings).
SCHEMA_OPTIONS: dict[tuple[str, str], SchemaOption] = {
    ("readyboost", "agent_poll_ms"): SchemaOption("superfetch", None, "poll", 1e-3),
    ("readyboost", "agent_group"): SchemaOption("superfetch", None, "group"),
    ("readyboost", "agent_depth"): SchemaOption("superfetch", None, "depth"),
    ("readyboost", "agent_priority"): SchemaOption("superfetch", None, "priority"),
    ("readyboost", "agent_max_rate"): SchemaOption("superfetch", None, "max-rate"),
    ("payoff", "agent_modes"): SchemaOption("superfetch", None, "mode", levels=True),
    ("readyboost", "retouch_order"): SchemaOption("hog", "victim", "order"),
    ("payoff", "retouch_order"): SchemaOption("hog", "victim", "order"),
    ("pagein", "retouch_orders"): SchemaOption("hog", "victim", "order", levels=True),
    ("readyboost", "hog_rounds"): SchemaOption("hog", "run", "rounds"),
    ("payoff", "hog_rounds"): SchemaOption("hog", "run", "rounds"),
    ("crystalmark", "size"): SchemaOption("iobench", "crystalmark", "size"),
    ("crystalmark", "sets"): SchemaOption("iobench", "crystalmark", "sets"),
    ("crystalmark", "set_time"): SchemaOption("iobench", "crystalmark", "runtime"),
}


def schema_value(opt: Option, value: Any, scale: float = 1.0) -> Any:
    """A configuration value as the option's value in its unit (bytes, seconds): a size such as
    "128K" parsed, a duration such as "0.2s" in seconds, a number times `scale`."""
    if value is None:
        return None
    if opt.type == "size":
        return parse_size(value)
    if opt.type == "duration":
        return parse_duration(value) * scale
    if opt.type in ("uint", "double") and scale != 1.0:
        return value * scale
    return value


def schema_options(block: str, cfg: dict[str, Any], tool: str, subcommand: str | None = None) -> dict[str, Any]:
    """The options of `tool subcommand` that `block`'s configuration `cfg` sets, as `command`'s
    keywords (e.g. {"poll": 0.05, "group": 131072}); a key `cfg` leaves unset or 0 where the
    option reads 0 as none (agent_max_rate) is left to the tool."""
    out: dict[str, Any] = {}
    for (b, key), m in SCHEMA_OPTIONS.items():
        if b != block or (m.tool, m.subcommand) != (tool, subcommand) or cfg.get(key) is None or m.levels:
            continue
        opt = option(m.tool, m.subcommand, m.option)
        value = schema_value(opt, cfg[key], m.scale)
        if opt.type == "duration" and value == 0 and opt.default is None:
            continue  # a duration of 0 in the schema means "none", the tool's lack of a default
        out[m.option.replace("-", "_")] = value
    return out


# The subcommands the harness runs, each a `command` with its fixed choices.


def hog_victim_cmd(size: int, fill: str, seed: int, ready: Path, go: Path, retouch_order: str) -> list[str]:
    """`hog victim`: build a working set, report on `ready`, wait for `go`, re-touch (in
    `retouch_order`, its required --order: seq or random) and verify."""
    return command("hog", "victim", size=size, fill=fill, seed=seed, ready=ready, go=go, trim="none",
                   order=retouch_order, verify=True, output_format="json")


# `hog run`'s exit status when a hog sharing its --barrier is gone (killed or exited) mid-round
# (native/hog/hog.h, BARRIER_PARTNER_GONE): it stopped at once rather than wait for it.
HOG_PARTNER_GONE = 3


def hog_run_cmd(size: int, rounds: int, barrier: Path | None = None, parties: int | None = None) -> list[str]:
    """`hog run`: seed 000's memory hog, `rounds` times; with `barrier` (a new file shared by
    `parties` hogs) each round's memory is held until all of them have written theirs."""
    return command("hog", "run", size=size, rounds=rounds, force=True, fill="random", output_format="json",
                   barrier=barrier, parties=parties if barrier else None)


def cacheflood_cmd(set_dir: Path, set_size: int, nbytes: int, seed: int | None = None,
                   cold: bool = False) -> list[str]:
    """`cacheflood`: `nbytes` of buffered reads over a set of `set_size` bytes made (or reused)
    in `set_dir`, kept for the next trial; `cold`: its pages dropped from the cache first."""
    return command("cacheflood", make_set=set_dir, set_size=set_size, keep_set=True, cold=cold, size=nbytes,
                   seed=seed, output_format="json")


def superfetch_cmd(pid: int, cgroup_dir: Path, go: Path, stop: Path, ready: Path, done: Path,
                   **values: Any) -> list[str]:
    """`superfetch`: the Superfetch analogue watching `pid` and its memory cgroup; `values` are its
    other options (mode, devices, files, poll, group, ...: pagelab.run.superfetch drives it)."""
    return command("superfetch", pid=pid, cgroup=cgroup_dir, go=go, stop=stop, ready=ready, done=done, **values)


def iobench_crystalmark_cmd(file: Path, seed: int, buffered: bool = False, keep_file: bool = False,
                            **values: Any) -> list[str]:
    """`iobench crystalmark`: CrystalMark 2004R2's disk sequence; `values` are its other options
    (size, sets, runtime, tests: from the configuration by `schema_options`)."""
    return command("iobench", "crystalmark", file=file, seed=seed, buffered=buffered, keep_file=keep_file,
                   output_format="json", **values)


def simdisk_mount_cmd(mountpoint: Path, profile: str, profile_dir: Path, backing: Path, ready: Path,
                      size: int | None = None, overrides: dict[str, Any] | None = None,
                      cache_state: Path | None = None, trace: Path | None = None) -> list[str]:
    """`simdisk mount MOUNTPOINT`: the emulated device, in the foreground (the harness owns it)."""
    return command("simdisk", "mount", [mountpoint], profile=profile, profile_dir=profile_dir, backing=backing,
                   foreground=True, ready=ready, size=size,
                   set=",".join(f"{k}={v}" for k, v in overrides.items()) if overrides else None,
                   cache_state=cache_state, trace=trace)


def simdisk_model_cmd(profile: str, profile_dir: Path, rw: str, bs: int, span: int | None = None,
                      **values: Any) -> list[str]:
    """`simdisk model`: the device model's analytic expectation; `values` are its other options
    (hit_ratio, set: see `simdisk model --help`)."""
    return command("simdisk", "model", profile=profile, profile_dir=profile_dir, rw=rw, bs=bs,
                   output_format="json", span=span or None, **values)


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
) -> list[str]:
    """The exact iobench command line for one job (recorded with every trial), `runtime` in
    seconds. With `data_file`, a write job writes that file's bytes instead of random ones."""
    return command("iobench", "job", file=file, rw=rw, bs=bs, direct=direct, size=size, runtime=runtime,
                   count=count, seed=seed, span=span, data_file=data_file, output_format="json")


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
