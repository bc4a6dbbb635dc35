"""The Superfetch analogue (native/build/superfetch) driven from the harness: start it beside a
victim and its memory cgroup, tell it when the hogs are gone, wait for its restore, stop it
and read its report.

What the agent does and why (its rule for "pressure has ended", its order, priority and pace,
the kernel facts it rests on) is in native/superfetch/main.c's header; docs/readyboost.md
says how the readyboost experiment uses it.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pagelab.run.tools import superfetch_cmd
from pagelab.run.trials import TrialFailed


def swap_devices(path: Path | str) -> list[str]:
    """The block device whose in-flight requests a swap area's reads wait in: the device itself
    (/dev/loop3 -> loop3, /dev/zram0 -> zram0), or, for a swap file, the device holding it."""
    p = Path(path).resolve()
    st = os.stat(p)
    if p.is_block_device():
        rdev = st.st_rdev
    else:
        rdev = st.st_dev
    link = Path(f"/sys/dev/block/{os.major(rdev)}:{os.minor(rdev)}")
    if not link.exists():
        return []  # e.g. a file system on no block device (tmpfs): nothing to watch
    return [link.resolve().name]


@dataclass
class Agent:
    """One run of the agent beside a victim. Use as a context manager: entering starts it and
    waits until it watches; `hogs_gone()` creates its go file; `wait_done()` waits for its
    restore; leaving stops it (if still running) and keeps its report in `report`.
    `options` are superfetch's own (mode, devices, files, poll in seconds, group in bytes, ...,
    as pagelab.run.tools.command takes them): poll, group, depth and priority (their values are
    the schema's, recovery.agent_options) and mode (the arm's) are required; another left out
    keeps the tool's default."""
    pid: int
    cgroup_dir: Path
    workdir: Path
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.workdir = Path(self.workdir)
        self.go, self.stop_file = self.workdir / "superfetch-go", self.workdir / "superfetch-stop"
        self.ready, self.done = self.workdir / "superfetch-ready", self.workdir / "superfetch-done"
        self.command = superfetch_cmd(self.pid, self.cgroup_dir, self.go, self.stop_file, self.ready, self.done,
                                      **self.options)
        self.proc: subprocess.Popen[str] | None = None
        self.report: dict[str, Any] = {}
        self.go_at = float("nan")

    def __enter__(self) -> Agent:
        self.workdir.mkdir(parents=True, exist_ok=True)
        for p in (self.go, self.stop_file, self.ready, self.done):
            p.unlink(missing_ok=True)
        self.proc = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not self.ready.exists():
            if self.proc.poll() is not None:
                raise TrialFailed(f"superfetch exited {self.proc.returncode} before it was ready: "
                                  f"{self.proc.stderr.read().strip() if self.proc.stderr else ''}")
            if time.monotonic() > deadline:
                self.proc.kill()
                self.proc.wait()
                raise TrialFailed("superfetch not ready after 60 s")
            time.sleep(0.005)
        return self

    def hogs_gone(self) -> None:
        """The hogs were closed: the restore starts (mode after) or its phase begins (between)."""
        self.go_at = time.monotonic()
        self.go.touch()

    def is_done(self) -> bool:
        """Whether the restore after `hogs_gone` is complete (every swapped page back in RAM,
        the files read back)."""
        return self.done.exists()

    def wait_done(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not self.done.exists():
            if self.proc is None or self.proc.poll() is not None or time.monotonic() > deadline:
                return self.done.exists()
            time.sleep(0.02)
        return True

    def stop(self) -> dict[str, Any]:
        """Stops the agent and returns its report."""
        if self.proc is None:
            return self.report
        if self.proc.poll() is None:
            self.stop_file.touch()
        try:
            out, err = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired as exc:
            self.proc.kill()
            self.proc.wait()
            raise TrialFailed("superfetch did not stop within 60 s of its stop file") from exc
        self.proc = None
        if not out.strip():
            raise TrialFailed(f"superfetch printed no report: {err.strip()}")
        try:
            self.report = json.loads(out)
        except json.JSONDecodeError as exc:
            raise TrialFailed(f"superfetch's report is not JSON: {out[:200]!r}") from exc
        return self.report

    def __exit__(self, *exc: Any) -> None:
        if self.proc is not None:
            if exc[0] is None:
                self.stop()
            else:
                self.proc.kill()
                self.proc.wait()
                self.proc = None
        for p in (self.go, self.stop_file, self.ready, self.done):
            p.unlink(missing_ok=True)
