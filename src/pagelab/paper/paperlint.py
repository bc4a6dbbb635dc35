"""Fail the paper build when a section types a measurement, or a judgement of one, by hand.

Judgements: between the lines `% begin results` and `% end results` of a section, a
comparative word about a result ("faster", "larger", "converge", "reproduces", ...) must come
from a macro the pipeline wrote from the data, never from the typed text, so that a sentence
changes when the data says the opposite.

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


_COMPARATIVE = re.compile(
    r"\b(faster|slower|quicker|larger|smaller|bigger|higher|lower|greater|fewer|more than|less than|"
    r"better|worse|exceeds?|outperforms?|dominates?|converges?|converged|differs?|differed|identical|"
    r"similar|same as|matches|matched|agrees?|agreed|reproduces?|reproduced|confirms?|confirmed|"
    r"contradicts?|inflates?|inflated|speed-?up|slow-?down|times as)\b", re.I)
_MACRO = re.compile(r"\\[A-Za-z]+\*?(\{[^{}]*\})*")
_BEGIN, _END = "% begin results", "% end results"


def hand_judged(text: str) -> list[tuple[int, str]]:
    """(line number, word) of every comparative word typed inside a results block (macros,
    math and comments removed); also an unclosed block."""
    out: list[tuple[int, str]] = []
    inside = False
    for i, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if stripped.startswith(_BEGIN):
            inside = True
            continue
        if stripped.startswith(_END):
            inside = False
            continue
        if not inside:
            continue
        line = _COMMENT.sub("", raw)
        line = _MATH.sub(" ", line)
        line = _MACRO.sub(" ", line)
        for m in _COMPARATIVE.finditer(line):
            out.append((i, m.group(0)))
    if inside:
        out.append((len(text.splitlines()), f"'{_BEGIN}' without '{_END}'"))
    return out


def lint(paper_dir: Path | str) -> list[str]:
    problems = []
    for path in sorted(Path(paper_dir).rglob("*.tex")):
        text = path.read_text()
        for line, snippet in hand_typed(text):
            problems.append(f"{path}:{line}: hand-typed measurement {snippet!r}: use a generated macro")
        for line, word in hand_judged(text):
            problems.append(f"{path}:{line}: hand-typed judgement {word!r} in a results block: "
                            "let the notebook write the sentence as a macro")
    return problems
