"""A `hog victim` working set driven from the harness: start it (optionally inside a cgroup),
wait until it is built, trim it from outside (process_madvise MADV_PAGEOUT, EmptyWorkingSet's
analogue), let it re-touch and verify every page, and read its report.

Shared by the experiments that trim and re-touch (standby, compression).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from pagelab import mm
from pagelab.state import Cgroup
from pagelab.tools import tool_path
from pagelab.trials import TrialFailed


class Victim:
    def __init__(self, size: int, fill: str, seed: int, workdir: Path, cgroup: Cgroup | None = None,
                 order: str = "seq", timeout: float = 600.0):
        self.workdir = Path(workdir)
        self.ready = self.workdir / "victim-ready.json"
        self.go = self.workdir / "victim-go"
        self.timeout = timeout
        self.command = [str(tool_path("hog")), "victim", "--size", str(size), "--fill", fill,
                        "--seed", str(seed), "--ready", str(self.ready), "--go", str(self.go),
                        "--trim", "none", "--order", order, "--verify", "--output-format", "json"]
        self.cgroup = cgroup
        self.proc: subprocess.Popen[str] | None = None
        self.info: dict[str, Any] = {}

    def __enter__(self) -> Victim:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.go.unlink(missing_ok=True)
        self.proc = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     preexec_fn=self.cgroup.preexec() if self.cgroup else None)
        deadline = time.monotonic() + self.timeout
        while not self.ready.exists():
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().strip() if self.proc.stderr else ""
                raise TrialFailed(f"victim exited {self.proc.returncode} before ready: {err}")
            if time.monotonic() > deadline:
                raise TrialFailed(f"victim not ready after {self.timeout:.0f} s")
            time.sleep(0.005)
        self.info = json.loads(self.ready.read_text())
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def trim(self) -> dict[str, float]:
        """Page the whole working set out; wall and CPU seconds of the call (compression, for
        zswap and zram, runs in the caller's context), and the bytes then in swap."""
        t0, c0 = time.monotonic(), time.thread_time()
        mm.pageout(self.pid, int(self.info["address"]), int(self.info["size"]))
        wall, cpu = time.monotonic() - t0, time.thread_time() - c0
        return {"trim_s": wall, "trim_cpu_s": cpu, "swapped_bytes": mm.swapped_bytes(self.pid)}

    def retouch(self) -> dict[str, Any]:
        """Send go; wait for the re-touch and verification; the victim's JSON report."""
        assert self.proc is not None
        self.go.touch()
        try:
            out, err = self.proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired as exc:
            raise TrialFailed(f"victim did not finish the re-touch within {self.timeout:.0f} s") from exc
        if self.proc.returncode != 0:
            raise TrialFailed(f"victim exited {self.proc.returncode}: {err.strip()}")
        report = json.loads(out)
        if not report.get("verify", {}).get("ok", False):
            raise TrialFailed(f"victim's pages did not survive the round trip: {report.get('verify')}")
        return report

    def __exit__(self, *exc: Any) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for p in (self.ready, self.go):
            p.unlink(missing_ok=True)


def push_out(cgroup: Cgroup, size: int, repeat: int = 1, timeout: float = 900.0) -> dict[str, Any]:
    """Run `hog run` of `size` bytes in `cgroup` (seed 000's memory hog): its allocations push
    the cgroup's other pages out to swap. Returns hog's report."""
    cmd = [str(tool_path("hog")), "run", "--size", str(size), "--repeat", str(repeat), "--force",
           "--fill", "random", "--output-format", "json"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, preexec_fn=cgroup.preexec())
    if out.returncode != 0:
        raise TrialFailed(f"hog run exited {out.returncode}: {out.stderr.strip()}")
    return json.loads(out.stdout)
