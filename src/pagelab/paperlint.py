"""Fail the paper build when a section types a measurement by hand.

A measurement here is a number followed by a unit of time or rate (s, ms, us, MB/s, GB/s,
IOPS, ...) in running text. Math ($...$, equation environments), comments and \\cite{} are
not text; the published values reach the text through \\Pub<id> macros and ours through each
experiment's macros, so neither needs a typed number.
"""

from __future__ import annotations

import re
from pathlib import Path

_UNITS = r"(?:ms|s|us|\\textmu\s*s|µs|ns|MB/s|GB/s|KB/s|kB/s|MiB/s|GiB/s|IOPS|IO/s)"
_NUMBER = r"(?<![\w\\{])(\d+(?:[.,]\d+)?(?:\s*(?:--|-)\s*\d+(?:[.,]\d+)?)?)"
_NUMBER_UNIT = re.compile(_NUMBER + r"(?:\s|\\,|~|\\ )*" + _UNITS + r"(?![A-Za-z])")
_MATH = re.compile(r"\$[^$]*\$|\\\[.*?\\\]|\\begin\{(equation|align)\*?\}.*?\\end\{\1\*?\}", re.S)
_COMMENT = re.compile(r"(?<!\\)%.*")
_CITE = re.compile(r"\\cite[pt]?\{[^}]*\}")


def hand_typed(text: str) -> list[tuple[int, str]]:
    """(line number, snippet) of every number-with-unit in running text."""
    out = []
    clean = "\n".join(_COMMENT.sub("", ln) for ln in text.splitlines())
    clean = _MATH.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), clean)
    clean = _CITE.sub(lambda m: " " * len(m.group(0)), clean)
    for m in _NUMBER_UNIT.finditer(clean):
        line = clean.count("\n", 0, m.start()) + 1
        out.append((line, m.group(0).strip()))
    return out


def lint(paper_dir: Path | str) -> list[str]:
    problems = []
    for path in sorted(Path(paper_dir).rglob("*.tex")):
        for line, snippet in hand_typed(path.read_text()):
            problems.append(f"{path}:{line}: hand-typed measurement {snippet!r}: use a generated macro")
    return problems
