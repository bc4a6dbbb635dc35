"""Parse and format the sizes and durations that configs and tools use ("256M", "1.5s").

Sizes use powers of 1024 (K, M, G, T), matching the native tools' option parser. humanfriendly
reads them; before it, a size must be a whole number of bytes, KiB, MiB, GiB or TiB, because
humanfriendly also takes what the native tools refuse ("1.5M", "1P", "2 megabytes"), and a
config the pipeline accepted would then fail inside a trial.
"""

from __future__ import annotations

import re

import humanfriendly

_SIZE_RE = re.compile(r"^\s*\d+\s*(?:[KMGT](?:i?B)?|B)?\s*$", re.IGNORECASE)
_SIZE_MULT = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_DUR_RE = re.compile(r"^\s*(\d+(?:\.\d*)?)\s*(ns|us|ms|s|m|h)?\s*$")
_DUR_MULT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_size(value: str | int) -> int:
    """Bytes in a size such as 4096, "64K", "256M", "1G"; raises ValueError naming the value."""
    if isinstance(value, bool):
        raise ValueError(f"not a size: {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"negative size: {value}")
        return value
    if not _SIZE_RE.match(str(value)):
        raise ValueError(f"not a size: {value!r} (expected e.g. 4096, 64K, 256M, 1G)")
    return int(humanfriendly.parse_size(str(value), binary=True))


def parse_duration(value: str | int | float) -> float:
    """Seconds in a duration such as 5, "1.5s", "200ms"; raises ValueError naming the value."""
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {value!r}")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError(f"negative duration: {value}")
        return float(value)
    m = _DUR_RE.match(str(value))
    if not m:
        raise ValueError(f"not a duration: {value!r} (expected e.g. 5, 1.5s, 200ms)")
    return float(m.group(1)) * _DUR_MULT[m.group(2)]


def format_size(nbytes: int) -> str:
    """The shortest exact spelling of a size: 65536 -> "64K", 1048576 -> "1M", 1000 -> "1000"."""
    for suffix in ("T", "G", "M", "K"):
        mult = _SIZE_MULT[suffix]
        if nbytes >= mult and nbytes % mult == 0:
            return f"{nbytes // mult}{suffix}"
    return str(nbytes)
