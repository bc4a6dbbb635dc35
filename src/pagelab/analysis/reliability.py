"""The fresh-clone CI runs (`.ci/run`: `make test`, then `make check-crash`), kept as data in
data/reliability/runs.csv and rendered by `pagelab reliability`.

One row per run, oldest first: its date, the commit it ran, where it ran (`fresh clone` of the
repository on the reference machine, or `project CI`), `passed` or `failed`, the test counts,
the durations in seconds (`make test`, `make check-crash`, the whole `.ci/run`), the stops and
leaks of the signal sweep, and a note (for a failure: what failed and why). An empty field is
a figure the run did not give. A new run is a new row; nothing else changes.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

from pagelab.core.paths import root
from pagelab.system.config import ConfigError

COLUMNS = ["date", "commit", "runner", "result", "passed", "failed", "skipped", "make_test_s",
           "check_crash_stops", "check_crash_leaks", "check_crash_s", "ci_s", "note"]
COUNTS = ["passed", "failed", "skipped", "make_test_s", "check_crash_stops", "check_crash_leaks",
          "check_crash_s", "ci_s"]
RUNNERS = ("fresh clone", "project CI")
RESULTS = ("passed", "failed")
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
COMMIT = re.compile(r"[0-9a-f]{7,40}")


@dataclass(frozen=True)
class Run:
    date: str
    commit: str
    runner: str
    result: str
    counts: dict[str, int | None]
    note: str


def runs_path() -> Path:
    return root() / "data" / "reliability" / "runs.csv"


def load(path: Path | str | None = None) -> list[Run]:
    """The runs, checked: every column, a date, a commit, a known runner and result, whole
    non-negative numbers, oldest first, and a failed run says why. A ConfigError names the
    file and line."""
    path = Path(path or runs_path())
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it ({exc.strerror})") from exc
    reader = csv.DictReader(io.StringIO(text))
    if reader.fieldnames != COLUMNS:
        raise ConfigError(f"{path}: the header must be {','.join(COLUMNS)}")
    runs: list[Run] = []
    for line, row in enumerate(reader, start=2):
        where = f"{path}: line {line}"
        if None in row or any(v is None for v in row.values()):
            raise ConfigError(f"{where}: {len(COLUMNS)} fields expected")
        if not DATE.fullmatch(row["date"]):
            raise ConfigError(f"{where}: date {row['date']!r} is not YYYY-MM-DD")
        if runs and row["date"] < runs[-1].date:
            raise ConfigError(f"{where}: date {row['date']} before the line above's ({runs[-1].date}): oldest first")
        if not COMMIT.fullmatch(row["commit"]):
            raise ConfigError(f"{where}: commit {row['commit']!r} is not an abbreviated hash")
        if row["runner"] not in RUNNERS:
            raise ConfigError(f"{where}: runner {row['runner']!r} is not one of {', '.join(RUNNERS)}")
        if row["result"] not in RESULTS:
            raise ConfigError(f"{where}: result {row['result']!r} is not one of {', '.join(RESULTS)}")
        counts: dict[str, int | None] = {}
        for key in COUNTS:
            value = row[key].strip()
            if value and not value.isdigit():
                raise ConfigError(f"{where}: {key} {value!r} is not a whole number")
            counts[key] = int(value) if value else None
        if row["result"] == "failed" and not row["note"].strip():
            raise ConfigError(f"{where}: a failed run needs a note saying what failed")
        runs.append(Run(row["date"], row["commit"], row["runner"], row["result"], counts, row["note"].strip()))
    return runs


def streak(runs: list[Run]) -> int:
    """How many of the newest runs passed in a row."""
    n = 0
    for run in reversed(runs):
        if run.result != "passed":
            break
        n += 1
    return n


def _duration(seconds: int | None) -> str:
    return "" if seconds is None else f"{seconds // 60}:{seconds % 60:02d}"


def _tests(c: dict[str, int | None]) -> str:
    parts = [f"{c[k]} {k}" for k in ("passed", "failed", "skipped") if c[k]]
    return ", ".join(parts)


def _sweep(c: dict[str, int | None]) -> str:
    if c["check_crash_stops"] is None:
        return ""
    return f"{c['check_crash_stops']} stops, {c['check_crash_leaks'] or 0} leaks, {_duration(c['check_crash_s'])}"


def render(runs: list[Run]) -> str:
    """A table of the runs (durations in min:s), then each note, then the totals."""
    header = ["date", "commit", "runner", "result", "make test", "tests", "make check-crash", ".ci/run"]
    rows = [[r.date, r.commit, r.runner, r.result, _duration(r.counts["make_test_s"]), _tests(r.counts),
             _sweep(r.counts), _duration(r.counts["ci_s"])] for r in runs]
    widths = [max(len(x) for x in col) for col in zip(header, *rows, strict=True)]
    lines = ["  ".join(x.ljust(w) for x, w in zip(row, widths, strict=True)).rstrip() for row in [header, *rows]]
    notes = [f"{r.commit}: {r.note}" for r in runs if r.note]
    if notes:
        lines += ["", *notes]
    passed, row = sum(r.result == "passed" for r in runs), streak(runs)
    newest = f"the newest {row} passed in a row" if row else "the newest failed"
    lines += ["", f"{len(runs)} runs: {passed} passed, {len(runs) - passed} failed; {newest}"]
    return "\n".join(lines) + "\n"
