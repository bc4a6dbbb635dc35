"""Every command the README and docs/*.md show is run here, so that a command that goes stale
fails the suite. The pages are walked generically: every line of every ```sh (bash, console,
shell) block, and every inline `code` span that starts with a command this repository has.
Each command runs the cheapest way that still exercises it, in a copy of the repository:
- `make ...`: `make -n` (nothing runs), then `snakemake -n` with the arguments make would give
  Snakemake, so the configuration (PROFILE, RECORDING, EXPERIMENT) is validated and the jobs planned;
- `snakemake ...`: with `-n`;
- `pagelab ...`: parsed by pagelab's own argument parser; the read-only subcommands also run;
- `native/build/<tool> ...`: run when it only prints (`--help`, `simdisk model`), else its
  subcommand's `--help`;
- `.venv/bin/pytest ...`: with `--collect-only`.
A command of any other program has no runner and fails, so a page cannot show an unchecked one.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, copy_repo

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(?:sh|bash|console|shell)[ \t]*\n(.*?)^```", re.M | re.S)
INLINE = re.compile(r"(?<!`)`((?:make|pagelab|snakemake|native/build/[a-z]+|\.venv/bin/pytest)(?: [^`]*)?)`(?!`)")
TEMPLATE = re.compile(r"<|\.\.\.|\||\[|\{")  # `make PROFILE=...`, `pagelab state show|restore`: a form, not a command
# subcommands that only read: they run for real (the others are parsed only)
READ_ONLY = {("config", "show"), ("state", "show"), ("provenance",), ("fleet", "show")}
NATIVE_PRINTING = {("simdisk", "model")}


def commands_of(text: str) -> list[tuple[str, bool]]:
    """The commands of one page, each with whether it is an inline span: fenced block lines (a
    `$ ` prompt and a trailing `# comment` removed, `\\` continuations joined), then inline spans
    that are not templates."""
    found: list[tuple[str, bool]] = []
    for block in FENCE.findall(text):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.strip().removeprefix("$ ")
            if not line or line.startswith("#"):
                continue
            found.append((" ".join(re.sub(r"\s+#.*$", "", line).split()), False))
    prose = FENCE.sub("", text)
    found += [(c.strip(), True) for c in INLINE.findall(prose) if not TEMPLATE.search(c)]
    return found


def commands(text: str) -> list[str]:
    return [c for c, _ in commands_of(text)]


def all_commands() -> list[tuple[str, str, bool]]:
    """(page, command, inline) for every distinct command of the README and docs/*.md."""
    seen: dict[str, tuple[str, bool]] = {}
    for page in PAGES:
        for cmd, inline in commands_of(page.read_text()):
            if cmd not in seen or (seen[cmd][1] and not inline):
                seen[cmd] = (str(page.relative_to(REPO)), inline)
    return sorted((page, cmd, inline) for cmd, (page, inline) in seen.items())


def plan_dry_runs(found: list[tuple[str, str, bool]], copy: Path, env: dict[str, str]) -> dict[str, str]:
    """Every `snakemake -n` the commands need, run two at a time (each takes seconds)."""
    from concurrent.futures import ThreadPoolExecutor

    wanted: dict[str, list[str]] = {}
    for _, cmd, _ in found:
        argv = shlex.split(cmd)
        if argv[0] == "snakemake":
            wanted[" ".join(argv[1:])] = argv[1:]
        elif argv[0] == "make":
            out = _run(["make", "-n", "--no-print-directory", *argv[1:]], copy, env)
            lines = [ln for ln in out.stdout.splitlines() if ln.startswith("bash workflow/scripts/run_pipeline.sh")]
            if out.returncode == 0 and lines:
                args = shlex.split(lines[0])[2:]
                wanted[" ".join(args)] = args
    dry_runs: dict[str, str] = {}
    with ThreadPoolExecutor(max_workers=2) as pool:
        for key, out in zip(wanted, pool.map(lambda a: _run(["snakemake", "-n", *a], copy, env), wanted.values()),
                            strict=True):
            dry_runs[key] = "" if out.returncode == 0 else f"snakemake -n {key}: {(out.stderr + out.stdout)[-800:]}"
    return dry_runs


def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout: int = 180) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def check(cmd: str, copy: Path, env: dict[str, str], dry_runs: dict[str, str], inline: bool = False) -> str | None:
    """None when the command works; else what went wrong. An inline span may name a pagelab
    subcommand without its required arguments (`pagelab compare`): its name is still checked."""
    argv = shlex.split(cmd)
    if argv[0] == "sudo":  # checked as the command it runs (the tests run as root)
        argv = argv[1:]
    prog = argv[0]
    if prog == "make":
        out = _run(["make", "-n", "--no-print-directory", *argv[1:]], copy, env)
        if out.returncode:
            return f"make -n failed: {out.stderr.strip()[-500:]}"
        pipeline = [ln for ln in out.stdout.splitlines() if ln.startswith("bash workflow/scripts/run_pipeline.sh")]
        return check_snakemake(shlex.split(pipeline[0])[2:], copy, env, dry_runs) if pipeline else None
    if prog == "snakemake":
        return check_snakemake(argv[1:], copy, env, dry_runs)
    if prog == "pagelab":
        import contextlib
        import io

        from pagelab.cli import parser

        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                parser().parse_args(argv[1:])
        except SystemExit as exc:
            if exc.code == 0:  # --help and --version print and exit 0
                return None
            message = err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else ""
            if inline and "arguments are required" in message:
                return None
            return f"pagelab's parser refuses it (exit {exc.code}): {message}"
        if tuple(argv[1:3]) in READ_ONLY or tuple(argv[1:2]) in READ_ONLY:
            out = _run(argv, copy, env)
            return None if out.returncode == 0 else f"exit {out.returncode}: {out.stderr.strip()[-500:]}"
        return None
    if prog.startswith("native/build/"):
        tool = REPO / prog  # built once in this checkout (the copy has no build)
        sub = tuple(a for a in argv[1:2] if not a.startswith("-"))
        if "--help" in argv or (Path(prog).name, *sub) in NATIVE_PRINTING:
            out = _run([str(tool), *argv[1:]], copy, env)
        else:
            out = _run([str(tool), *sub, "--help"], copy, env)
        return None if out.returncode == 0 else f"exit {out.returncode}: {(out.stderr or out.stdout).strip()[-500:]}"
    if prog == ".venv/bin/pytest":
        out = _run([str(REPO / prog), "--collect-only", "-q", "-p", "no:cacheprovider", *argv[1:]], REPO, env)
        return None if out.returncode == 0 else f"pytest --collect-only: exit {out.returncode}: {out.stdout[-500:]}"
    return f"no runner for {prog!r}: show only commands of this repository, or add a runner here"


def check_snakemake(args: list[str], copy: Path, env: dict[str, str], dry_runs: dict[str, str]) -> str | None:
    key = " ".join(args)
    if key not in dry_runs:
        out = _run(["snakemake", "-n", *args], copy, env)
        dry_runs[key] = "" if out.returncode == 0 else f"snakemake -n {key}: {(out.stderr + out.stdout).strip()[-800:]}"
    return dry_runs[key] or None


@pytest.fixture(scope="module")
def copy(tmp_path_factory, env, native_build):
    return copy_repo(tmp_path_factory.mktemp("docs") / "repo")


def test_the_pages_show_commands():
    found = [c for _, c, _ in all_commands()]
    assert "make" in found and "make PROFILE=recorded" in found
    assert len(found) >= 20, found


def test_every_command_in_the_readme_and_docs_works(copy, env):
    run_env = {**env, "PYTHONPATH": str(copy / "src")}
    found = all_commands()
    dry_runs = plan_dry_runs(found, copy, run_env)
    failures = []
    for page, cmd, inline in found:
        problem = check(cmd, copy, run_env, dry_runs, inline)
        if problem:
            failures.append(f"{page}: `{cmd}`: {problem}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("stale", ["make PROFILE=bogus", "make nonesuch", "pagelab nonesuch",
                                   "pagelab compare --format pdf a b", "native/build/simdisk model --profile nonesuch",
                                   "native/build/iobench nonesuch --bs 4k", ".venv/bin/pytest tests/test_nonesuch.py",
                                   "fio --help"])
def test_a_stale_command_fails(copy, env, stale):
    assert check(stale.strip(), copy, {**env, "PYTHONPATH": str(copy / "src")}, {}) is not None


def test_commands_are_found_in_blocks_and_spans_but_not_templates():
    page = ("Run `make PROFILE=full` or `make PROFILE=...`; see `pagelab state show|restore`.\n"
            "```sh\n$ make test   # every test\nsnakemake -n \\\n  results/paper.pdf\n# a comment\n```\n"
            "```yaml\nfleet: {}\n```\n")
    assert commands(page) == ["make test", "snakemake -n results/paper.pdf", "make PROFILE=full"]
