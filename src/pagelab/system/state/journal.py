"""The journal: one fsynced JSON line per change, written before the change is made, so that
an undo needs nothing but the line (undo.py replays it in reverse).
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any


def journal_path() -> Path:
    """/run/pagelab/journal.jsonl (cleared by a reboot, as is the state it records);
    PAGELAB_JOURNAL overrides."""
    return Path(os.environ.get("PAGELAB_JOURNAL", "/run/pagelab/journal.jsonl"))


# A trial that changes state, as its run's journal shows it, in order: start (the run's own
# lines only, up to the trial's first change), setup (lines being added), measure (all its
# changes journaled), teardown (lines being undone), between (back to the run's own lines,
# until the next trial's first change). tests/test_crash_sweep.py stops trials in each.
TRIAL_PHASES = ("start", "setup", "measure", "teardown", "between")


def _fault_point(where: str = "change", journal: Journal | None = None) -> None:
    """Fault injection for tests: PAGELAB_FAULT_AT=N sends this process PAGELAB_FAULT_SIGNAL
    (KILL unless named, e.g. TERM) at the N-th point. Points are just before and just after every
    change; with PAGELAB_FAULT_IN_RESTORE=1 also just before and after every undo.
    PAGELAB_FAULT_AT=restore:N counts the undos' points only: the N-th of them, whatever changes
    came before (restore:3, just before the second undo of the first restore that undoes
    anything, finds the first undone and its journal line gone, the older ones still there: a
    stop in the middle of a restore).
    PAGELAB_FAULT_AT=scope-end:K instead sends it once, when a scope has undone its changes and
    left its journal K lines long: a stop between two trials, whose own timing is too short
    to hit from outside."""
    target = os.environ.get("PAGELAB_FAULT_AT")
    if target is None:
        return
    if target.startswith("scope-end:"):
        if where != "scope-end" or journal is None or "_PAGELAB_FAULT_COUNT" in os.environ:
            return
        if len(journal.entries()) == int(target.split(":", 1)[1]):
            os.environ["_PAGELAB_FAULT_COUNT"] = "1"
            _signal_self()
        return
    if target.startswith("restore:"):
        counted, target = where == "restore", target.split(":", 1)[1]
    else:
        counted = where == "change" or (where == "restore" and os.environ.get("PAGELAB_FAULT_IN_RESTORE") == "1")
    if not counted:
        return
    count = int(os.environ.get("_PAGELAB_FAULT_COUNT", "0")) + 1
    os.environ["_PAGELAB_FAULT_COUNT"] = str(count)
    if count == int(target):
        _signal_self()


def _signal_self() -> None:
    os.kill(os.getpid(), getattr(signal, "SIG" + os.environ.get("PAGELAB_FAULT_SIGNAL", "KILL")))


class Journal:
    def __init__(self, path: Path | None = None):
        self.path = path or journal_path()

    def append(self, entry: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(entry, sort_keys=True) + "\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def entries(self) -> list[dict[str, Any]]:
        """Every complete line; a torn last line (a crash mid-write) is ignored: its change
        was never started, because the change comes only after the fsync."""
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return out

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)

    def truncate(self, keep: int) -> None:
        """Keep only the first `keep` entries (rewritten atomically)."""
        entries = self.entries()[:keep]
        if not entries:
            self.clear()
            return
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w") as fh:
            fh.writelines(json.dumps(e, sort_keys=True) + "\n" for e in entries)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)


def describe(e: dict[str, Any]) -> str:
    """A journal entry in a few words: its kind and what it names."""
    what = (e.get("name") or e.get("device") or e.get("path") or e.get("mountpoint") or e.get("backing")
            or (f"{e['dir']}/{e['prefix']}-*" if e.get("kind") == "scratch" else "") or e.get("what") or "")
    return f"{e.get('kind')}:{what}"
