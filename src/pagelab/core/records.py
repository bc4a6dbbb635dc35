"""Trial records on disk: one JSON file per trial, written atomically, read with checks.

A record is only ever seen whole: it is written to a temporary file in the same directory,
fsynced and renamed. A truncated or malformed record is rejected with a message naming the
file, never read as a result.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

REQUIRED = ("trial_id", "experiment", "status", "provenance", "start", "end")


class RecordError(ValueError):
    """A trial record that cannot be trusted; the message names the file."""


def write_text_atomic(path: Path | str, text: str) -> None:
    """Write `text` to `path` so that readers see the old file or the new one, never a part."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_json_atomic(path: Path | str, obj: Any) -> None:
    write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def read_record(path: Path | str) -> dict[str, Any]:
    """Read one trial record, or raise RecordError naming the file and what is wrong."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise RecordError(f"{path}: cannot read trial record: {exc.strerror}") from exc
    try:
        rec = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(f"{path}: corrupt trial record (not JSON: {exc.msg} at line {exc.lineno})") from exc
    if not isinstance(rec, dict):
        raise RecordError(f"{path}: corrupt trial record (not a JSON object)")
    missing = [k for k in REQUIRED if k not in rec]
    if missing:
        raise RecordError(f"{path}: incomplete trial record (missing {', '.join(missing)})")
    if rec["status"] == "ok" and "result" not in rec:
        raise RecordError(f"{path}: trial record says ok but has no result")
    return rec


def read_records(directory: Path | str) -> list[dict[str, Any]]:
    """All records in a directory (sorted by file name); temporary files are skipped."""
    directory = Path(directory)
    return [read_record(p) for p in sorted(directory.glob("*.json")) if not p.name.startswith(".")]
