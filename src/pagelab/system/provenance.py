"""Where a measurement came from: git state, machine, kernel, disk and tool versions.

Every trial record carries `provenance()`; the values are read, never assumed, and a value
that cannot be read is recorded as "unknown" rather than guessed.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from pagelab import __version__
from pagelab.core.paths import root

UNKNOWN = "unknown"


def now_iso() -> str:
    """The current UTC time, ISO 8601 with microseconds."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="microseconds")


def code_digest(package: Path | str) -> str:
    """A SHA-256 over every .py file below `package`, by path and content: it changes when a line
    of the code changes, not when a file is only touched."""
    base = Path(package)
    h = hashlib.sha256()
    for path in sorted(base.rglob("*.py")):
        h.update(str(path.relative_to(base)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _run(cmd: list[str], cwd: Path | None = None) -> str | None:
    try:
        out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


# Recorded runs are what runs produce, never what a trial reads: a `pagelab record` into a
# checkout must not make the next run there "dirty" (a full run is recorded an experiment at a
# time, from one checkout).
NOT_INPUTS = ("data/recorded",)


def git_state(repo: Path | None = None) -> dict[str, Any]:
    """Commit and dirty flag of the checkout: tracked files changed, other than recordings
    (results/ and scratch/ are ignored by git, untracked files are not counted)."""
    repo = repo or root()
    commit = _run(["git", "rev-parse", "HEAD"], cwd=repo)
    status = _run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                   *(f":(exclude){p}" for p in NOT_INPUTS)], cwd=repo)
    return {
        "commit": commit or UNKNOWN,
        "dirty": (bool(status) if status is not None else None),
    }


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or UNKNOWN


def mem_total_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def block_device_of(path: Path | str) -> dict[str, Any]:
    """The block device holding `path`: name, model, rotational flag (from /sys)."""
    try:
        st = os.stat(path)
    except OSError:
        return {"name": UNKNOWN}
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    sysdev = Path(f"/sys/dev/block/{major}:{minor}")
    if not sysdev.exists():
        return {"name": UNKNOWN, "dev": f"{major}:{minor}"}
    real = sysdev.resolve()
    # A partition's queue/ and device/ live in its parent disk's directory.
    disk = real if (real / "queue").exists() else real.parent

    def read(rel: str) -> str | None:
        try:
            return (disk / rel).read_text().strip()
        except OSError:
            return None

    model = read("device/model")
    vendor = read("device/vendor")
    if vendor and vendor.startswith("0x"):  # a PCI vendor id (virtio), not a name
        vendor = None
    if model is None and disk.name.startswith("vd"):
        model = "virtio block device"
    return {
        "name": real.name,
        "disk": disk.name,
        "dev": f"{major}:{minor}",
        "model": " ".join(x for x in (vendor, model) if x) or UNKNOWN,
        "rotational": read("queue/rotational") == "1",
        "scheduler": _selected(read("queue/scheduler")) or UNKNOWN,
    }


def _selected(choices: str | None) -> str | None:
    """The [selected] word of a sysfs choice list ("none [mq-deadline] kyber" -> mq-deadline)."""
    if not choices:
        return None
    for word in choices.split():
        if word.startswith("[") and word.endswith("]"):
            return word[1:-1]
    return choices


def tool_version(binary: Path | str) -> str:
    out = _run([str(binary), "--version"])
    return out.splitlines()[0] if out else UNKNOWN


def machine() -> dict[str, Any]:
    uname = platform.uname()
    return {
        "hostname": uname.node,
        "kernel": uname.release,
        "kernel_version": uname.version,
        "arch": uname.machine,
        "cpu_model": cpu_model(),
        "cpus": os.cpu_count(),
        "mem_total_bytes": mem_total_bytes(),
        "python": platform.python_version(),
    }


def provenance(
    config_hash: str,
    tools: dict[str, Path | str] | None = None,
    disk_path: Path | str | None = None,
) -> dict[str, Any]:
    """Everything a trial record says about where it came from, except its own times."""
    prov: dict[str, Any] = {
        "git": git_state(),
        "config_hash": config_hash,
        "machine": machine(),
        "tools": {name: tool_version(path) for name, path in (tools or {}).items()},
        "pagelab_version": __version__,
    }
    prov["tools"]["pagelab"] = __version__
    if disk_path is not None:
        prov["disk"] = block_device_of(disk_path)
    return prov
