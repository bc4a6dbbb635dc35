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

The names the pages use are checked against the code too: every measurement key (`readyboost.
ratio.tier_after_vs_hdd_after`) against the keys the experiments produce (the recordings' stored
measurements and the claims), every arm a line about arms names against the schema's `arms` and
the code, every native subcommand against the tool, and docs/commands.md against pagelab's own
parser (each subcommand documented, no hidden legacy option shown).
"""

from __future__ import annotations

import argparse
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
READ_ONLY = {("config", "show"), ("state", "show"), ("provenance",), ("fleet", "show"), ("reliability",)}
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


# --------------------------------------------------------------------------- names the pages use
SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
FILE_NAME = re.compile(r"\.(py|ya?ml|ipynb|tex|csv|json|jsonl|gz|pdf|png|html|md|txt|smk|sh|c|h|parquet)$")


def prose_spans(text: str) -> list[tuple[str, str]]:
    """(line, span) for every inline code span outside fenced blocks."""
    return [(line, span) for line in FENCE.sub("", text).splitlines() for span in SPAN.findall(line)]


def _schema_names(node, names: set[str]) -> None:
    """Every property name and enum value of a schema, at any depth."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "properties" and isinstance(v, dict):
                names.update(v)
            if k == "enum" and isinstance(v, list):
                names.update(str(x) for x in v)
            _schema_names(v, names)
    elif isinstance(node, list):
        for v in node:
            _schema_names(v, names)


class Names:
    """What exists: the experiments, their arms (each schema block's `arms` enum), their config
    keys, the measurement keys they produce, and every identifier of the package and the native
    sources (for a line about arms that also names a counter or a setting)."""

    def __init__(self) -> None:
        import json

        from pagelab.claims.registry import load_claims, steps
        from pagelab.system import config

        schema = config.load_schema()
        self.experiments = config.experiments(schema)
        self.config_keys = {e: set(schema["properties"][e].get("properties", {})) for e in self.experiments}
        self.arms = {e: set(block["properties"]["arms"]["items"]["enum"]) for e in self.experiments
                     if "arms" in (block := schema["properties"][e]).get("properties", {})}
        stored = json.loads((REPO / "data/published/recorded_measurements.json").read_text())["recordings"]
        self.keys = set().union(*(set(r["measurements"]) for r in stored.values()))
        self.keys |= {s for c in load_claims().to_dict("records") for s in steps(c)}
        words: set[str] = set()
        _schema_names(schema, words)
        for path in [*(REPO / "src").rglob("*.py"), *(REPO / "native").rglob("*.[ch]")]:
            words |= set(re.findall(r"\b[a-z_][a-z0-9_]*\b", path.read_text()))
        self.words = words | set(self.experiments)

    def key_problem(self, token: str) -> str | None:
        """None when `experiment.rest` is a measurement key, a prefix of one, a config key of the
        experiment (`seekmodel.devices`) or a name in its module (`readyboost.validity`)."""
        import importlib

        exp, _, rest = token.rstrip(".").partition(".")
        key = token.rstrip(".")
        if key in self.keys or any(k.startswith(key + ".") for k in self.keys):
            return None
        if rest.split(".")[0] in self.config_keys[exp]:
            return None
        if "." not in rest and hasattr(importlib.import_module(f"pagelab.experiments.{exp}"), rest):
            return None
        return f"`{token}` is no measurement key, config key or name of experiment {exp!r}"

    def arm_problem(self, span: str) -> str | None:
        every = set().union(*self.arms.values())
        if span in every or span in self.words:
            return None
        return f"`{span}` on a line about arms is no arm ({', '.join(sorted(every))}) nor a name in the code"


@pytest.fixture(scope="module")
def names() -> Names:
    return Names()


def name_problems(text: str, names: Names) -> list[str]:
    """Each measurement key, and each identifier on a line that speaks of arms, that the code
    does not have."""
    experiments = "|".join(map(re.escape, names.experiments))
    token_re = re.compile(rf"^({experiments})\.[A-Za-z0-9_.\-]+$")
    problems = []
    for line, span in prose_spans(text):
        for token in re.split(r"[;,\s]+", span):
            if token_re.match(token) and not FILE_NAME.search(token) and not TEMPLATE.search(token):
                problems.append(names.key_problem(token))
        if re.search(r"\barms?\b", line) and re.fullmatch(r"[a-z][a-z0-9_]*", span):
            problems.append(names.arm_problem(span))
    return [p for p in problems if p]


def test_every_measurement_key_and_arm_the_pages_name_exists(names):
    failures = [f"{page.relative_to(REPO)}: {p}" for page in PAGES for p in name_problems(page.read_text(), names)]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("made_up", [
    "- **arm**: one configuration (readyboost's `hdd` against `tier_cold`)",
    "Each step (`readyboost.ratio.tier_warm_vs_tier_cold; readyboost.ratio.tier_after_vs_hdd_after`)",
    "the measurement `standby.own.trim_only.pswpin_pagez`",
])
def test_a_made_up_arm_or_key_fails(names, made_up):
    assert name_problems(made_up, names), made_up


def test_real_arms_and_keys_pass(names):
    text = ("readyboost's arms `hdd_after` and `tier_after`; `readyboost.ratio.tier_after_vs_hdd_after`, "
            "`standby.own.` and the setting `seekmodel.devices`")
    assert name_problems(text, names) == []


def native_problems(text: str) -> list[str]:
    """A native command shown by its tool's name (`simdisk mount MOUNTPOINT ...`): a tool with
    subcommands must be given one it has."""
    from pagelab.run import tools

    problems = []
    for _, span in prose_spans(text):
        argv = span.split()
        if len(argv) < 2 or argv[0] not in tools.names():  # a tool named alone is no command
            continue
        tool = tools.tool_path(argv[0])
        usage = subprocess.run([str(tool), "--help"], capture_output=True, text=True, timeout=30).stdout
        if "<command>" not in usage.splitlines()[0]:
            continue
        sub = argv[1]
        out = subprocess.run([str(tool), sub, "--help"], capture_output=True, text=True, timeout=30)
        if sub.startswith("-") or out.returncode != 0:
            problems.append(f"`{span}`: {argv[0]} has no subcommand {sub!r}")
    return problems


def test_every_native_subcommand_shown_exists(native_build):
    failures = [f"{page.relative_to(REPO)}: {p}" for page in PAGES for p in native_problems(page.read_text())]
    assert not failures, "\n".join(failures)
    assert native_problems("`simdisk MOUNTPOINT --profile P --backing FILE ...`")


def _subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next((dict(a.choices) for a in p._actions if isinstance(a, argparse._SubParsersAction)), {})


def parser_commands() -> tuple[list[str], set[str]]:
    """pagelab's commands as `sub` or `sub action` (from the parser itself), and the options it
    hides (help=SUPPRESS: a legacy name kept working, not to be shown)."""
    from pagelab.cli import parser

    found, hidden = [], set()
    for name, sub in _subparsers(parser()).items():
        actions = _subparsers(sub)
        positional = next((a for a in sub._actions if a.dest == "action" and a.choices), None)
        children = list(actions) or (list(positional.choices) if positional else [])
        found += [f"{name} {c}" for c in children] or [name]
        for p in [sub, *actions.values()]:
            hidden |= {o for a in p._actions if a.help == argparse.SUPPRESS for o in a.option_strings}
    return found, hidden


def documented(text: str) -> set[str]:
    """The `pagelab ...` commands a page shows, `a|b` alternatives spread out."""
    shown = set()
    for _, span in prose_spans(text):
        argv = span.replace("\\|", "|").split()  # a table cell escapes its pipes
        if len(argv) >= 2 and argv[0] == "pagelab":
            for first in argv[1].split("|"):
                shown.add(first)
                if len(argv) > 2:
                    shown |= {f"{first} {alt}" for alt in argv[2].split("|")}
    return shown


def test_commands_md_documents_every_pagelab_command_and_no_hidden_option():
    text = (REPO / "docs" / "commands.md").read_text()
    found, hidden = parser_commands()
    shown = documented(text)
    assert "state clear-orphans" in found and "--out" in hidden
    missing = [c for c in found if c not in shown]
    assert not missing, f"docs/commands.md does not show: {', '.join('pagelab ' + c for c in missing)}"
    named = {tok for page in PAGES for _, span in prose_spans(page.read_text())
             for tok in re.split(r"[\s|=\[\]]+", span)}
    assert not named & hidden, f"pages show hidden legacy options: {sorted(named & hidden)}"


def test_no_page_keeps_a_dated_record():
    """The pages describe the code as it is; a run's date and outcome are data
    (data/reliability/runs.csv, `pagelab reliability`), not a row of a page."""
    dated = [f"{page.relative_to(REPO)}:{i}: {line.strip()[:80]}" for page in PAGES
             for i, line in enumerate(page.read_text().splitlines(), start=1)
             if re.search(r"\b(19|20)\d\d-[01]\d-[0-3]\d\b", line)]
    assert not dated, "\n".join(dated)
