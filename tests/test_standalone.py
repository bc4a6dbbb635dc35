"""The repository stands alone: no file of it refers to a file outside it, and no comment,
docstring or document tells the history of how it was developed.

Outside references: the research notes the project was started from ("NOTES", "NOTES.md",
"NOTES section 3"), a sibling directory ("../shared/", "seeds/"), a path on the machine it was
written on ("/work/..."). A source is cited from paper/refs.bib instead (in code: "(Ruemmler &
Wilkes 1994; refs.bib: ruemmler94)", in a device profile: "[ruemmler94]"), a repository file
by its path.

History: numbered work sessions ("session 27", "sessions 31-32", "this session"), issue numbers
and the issue tracker ("issue 4", "the issue names"), the task's brief, the machine "this was
written on" or "the development VM". Comments say what the code does and why; the measured
facts that justify a choice stay, as facts about the system, and the story of when and by whom
they were found goes to the commit messages.

Every file git knows (tracked, or new and not ignored) is read, except this test (its patterns
spell what it forbids), data/recorded/ (runs as they were recorded: dates and commits are their
provenance) and data/published/claims_changelog.csv (whose rows are dated by design). A hit is
reported as file:line with the offending text.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from conftest import REPO

EXCLUDED_FILES = {"tests/test_standalone.py", "data/published/claims_changelog.csv"}
EXCLUDED_DIRS = ("data/recorded/",)

OUTSIDE = {
    "the research notes outside the repository": re.compile(r"\bNOTES\b"),
    "a directory outside the repository": re.compile(r"(?<![\w/.-])(?:\.\./)+(?:shared|seeds|main|wt)\b"
                                                     r"|(?<![\w/.-])seeds/"),
    "a path on the development machine": re.compile(r"(?<![\w.-])/work/(?:shared|main|wt)\b"),
}
HISTORY = {
    "a numbered work session": re.compile(r"\bsessions? \d+", re.I),
    "the current work session": re.compile(r"\bthis session\b", re.I),
    "an issue number": re.compile(r"\bissues? #?\d+", re.I),
    "the issue tracker": re.compile(r"\b(?:of|in|by|from|for) the issue\b|\bissue's\b"
                                    r"|\bthe issue (?:names|says|asks)\b", re.I),
    "the task's brief": re.compile(r"\bthe brief\b", re.I),
    "the development machine": re.compile(r"\b(?:development|dev) (?:VM|machine)\b|\b(?:was|were) written on\b",
                                          re.I),
}
PATTERNS = {**OUTSIDE, **HISTORY}
# A citation in code ("refs.bib: ruemmler94, disksim") and in a device profile's comments ("[deskstar7k500]")
CITED = re.compile(r"refs\.bib:\s*([a-z][a-z0-9]*(?:,\s*[a-z][a-z0-9]*)*)")
CITED_IN_PROFILE = re.compile(r"\[([a-z][a-z0-9]+)\]")


def hits_in(text: str) -> list[tuple[int, str, str]]:
    """(line number, what, line) for every pattern that matches a line of `text`."""
    return [(n, what, line.strip()) for n, line in enumerate(text.splitlines(), 1)
            for what, pattern in PATTERNS.items() if pattern.search(line)]


def text_of(rel: str) -> str | None:
    """A file's text, or None for a binary file (one with a NUL byte)."""
    data = (REPO / rel).read_bytes()
    return None if b"\0" in data else data.decode("utf-8", "replace")


def checked_files() -> list[str]:
    """The files git knows (tracked, or new and not ignored) that exist, less the excluded ones."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
    return sorted({f for f in listed if f and f not in EXCLUDED_FILES and not f.startswith(EXCLUDED_DIRS)
                   and (REPO / f).is_file()})


def test_no_file_refers_outside_the_repository_or_tells_its_history() -> None:
    files = checked_files()
    assert len(files) > 100 and "src/pagelab/cli.py" in files, files[:10]
    found = []
    for rel in files:
        text = text_of(rel)
        found += [f"{rel}:{n}: {what}: {line}" for n, what, line in hits_in(text or "")]
    assert not found, ("cite a source from paper/refs.bib and say what the code does, not how it was "
                       "found:\n" + "\n".join(found))


def cited_keys(rel: str, text: str) -> list[tuple[int, str]]:
    """(line number, key) of every refs.bib key the file cites."""
    profile = rel.startswith("config/devices/") and rel.endswith(".yaml")
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        for m in CITED.finditer(line):
            found += [(n, key.strip()) for key in m.group(1).split(",")]
        if profile and line.startswith("#"):
            found += [(n, key) for key in CITED_IN_PROFILE.findall(line)]
    return found


def test_every_cited_source_is_in_refs_bib() -> None:
    """What replaces a reference outside the repository must resolve: every key cited as
    "refs.bib: key, ..." in any file, or as "[key]" in a device profile's comments."""
    bib = set(re.findall(r"^@\w+\{([^,]+),", (REPO / "paper" / "refs.bib").read_text(), re.M))
    cited, missing = 0, []
    for rel in checked_files():
        for n, key in cited_keys(rel, text_of(rel) or ""):
            cited += 1
            if key not in bib:
                missing.append(f"{rel}:{n}: {key}")
    assert cited > 20, cited
    assert not missing, "cited but not in paper/refs.bib:\n" + "\n".join(missing)


@pytest.mark.parametrize("text", [
    "Seek (research NOTES section 3): seek(x) = ...",
    "The seed's model (NOTES.md, CM2)",
    "copy_queue_bytes 1 MiB (NOTES section 10)",
    "The seed documents themselves are in `../seeds/`",
    "see ../shared/research for the sources",
    "read /work/shared/research/NOTES.md",
    "Why nice -20 (session 27, make bench's simdisk cases)",
    "On the machine of sessions 31-32 the rounds spread more",
    "Also measured in this session",
    "the peer is issue 4's budget of 25 us",
    "The fleet (issue #15): the experiment matrix",
    "The synthetic claims file of the issue: a compressor's speed",
    "each kind the issue names (wrong type, negative) appears",
    "chosen before its first run for the\n# issue's 90-minute budget",
    "The brief's case, cacheflood against cat",
    "on the development VM the wall time came in steps",
    "Measured on the 2-vCPU VM this was written on, 72 runs",
])
def test_each_kind_of_reference_is_caught(text: str) -> None:
    assert hits_in(text), text


@pytest.mark.parametrize("text", [
    "with state.session() as st:",
    '@pytest.fixture(scope="session")',
    "the harness stops (its session ends) while the victim waits",
    "random IO in issue order, so the same seed gives the same offsets",
    "iobench issues its next IO ~90 ns after a completion",
    "seeds 000 and 002 (English), 001 (Chinese) of this repository",
    "data/published/claims.csv names the seed file, 000_ee8eb7732348eef8.txt",
    "Notes: the pre-registration's changelog",
    "where the next copy is written on the flash",
])
def test_ordinary_words_are_not_caught(text: str) -> None:
    assert not hits_in(text), hits_in(text)
