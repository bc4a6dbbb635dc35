"""Shared fixtures: the repository root, its venv's tools on PATH, and scratch space on the
real disk (O_DIRECT needs a real file system, so never tmpfs)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = REPO / ".venv" / "bin"

# The long signal sweeps run with `make check-crash` (which CI runs after `make test`), not in
# `make test`: each stops real trials at every point, for minutes. `make check-crash` selects
# them by their marker, so it runs none of the tests `make test` has run.
def check_crash(test):
    skip = pytest.mark.skipif(not os.environ.get("PAGELAB_CHECK_CRASH"),
                              reason="a signal sweep (minutes): runs with `make check-crash`")
    return pytest.mark.check_crash(skip(test))


# Trial runs inside the tests keep their progress lines (pagelab.run.progress) to their logs, off the
# terminal pytest runs in; tests/test_progress.py turns them back on where it checks them.
os.environ.setdefault("PAGELAB_PROGRESS", "none")
# Everything the tests run is a test to the machine-wide state lock (pagelab.system.state.lock),
# their subprocesses included: a test never changes paging state beside a real run.
os.environ["PAGELAB_STATE_ROLE"] = "test"


def _busy_is_a_skip():
    """A test that would change paging state while a real run holds the state lock skips, with
    the lock's holder (pid and command) as the reason: whether its body, a fixture's set-up or a
    fixture's teardown (a restore) found the lock taken. Several teardowns that all found it
    taken (pytest's exception group) skip too; anything else beside them stays an error."""
    from pagelab.system.state import StateBusy

    try:
        return (yield)
    except StateBusy as exc:
        pytest.skip(str(exc))
    except BaseExceptionGroup as group:
        busy, rest = group.split(StateBusy)
        if busy is None or rest is not None:
            raise
        pytest.skip(str(busy.exceptions[0]))


# Test files that need no device and no root of their own, neither change nor read the machine's
# paging state, and hold no clock: `make test` runs them (marked `beside`) in a second pytest at
# nice 19, beside the others, on the CPU the hardware tests leave idle
# (workflow/scripts/run_tests.sh); test_beside.py checks each file is still such a file.
BESIDE = ("test_beside.py", "test_claims.py", "test_compare.py", "test_config.py", "test_conftest_skip.py",
          "test_coverage.py", "test_docs.py", "test_entry.py", "test_environment.py", "test_fit.py",
          "test_fleet_split.py", "test_fleetplan.py", "test_latex.py", "test_layers.py", "test_lint.py",
          "test_method.py", "test_notebooks.py", "test_pagein.py", "test_paperlint.py", "test_prose.py",
          "test_recorded.py", "test_recording.py", "test_records.py", "test_reliability.py",
          "test_report.py", "test_seekmodel.py", "test_sequential.py", "test_standby.py", "test_stats.py",
          "test_tidy.py", "test_toy.py", "test_trials.py", "test_units.py")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in BESIDE:
            item.add_marker(pytest.mark.beside)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    return (yield from _busy_is_a_skip())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    return (yield from _busy_is_a_skip())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    return (yield from _busy_is_a_skip())


@pytest.fixture
def state_lock():
    """The machine-wide state lock, held for the whole test (its subprocesses run under it); a
    real run that holds it skips the test, naming the run."""
    from pagelab.system import state

    try:
        with state.exclusive():
            yield
    except state.StateBusy as exc:
        pytest.skip(str(exc))


@pytest.fixture
def journal(tmp_path, monkeypatch, state_lock):
    """The path of a journal of the test's own (PAGELAB_JOURNAL), with the machine-wide state
    lock held for the whole test (its before-and-after snapshots of the machine see no other
    test's changes); after it, whatever the test left in that journal is undone."""
    from pagelab.system import state

    path = tmp_path / "journal.jsonl"
    monkeypatch.setenv("PAGELAB_JOURNAL", str(path))
    yield path
    state.restore()


def no_real_run() -> None:
    """For a test whose paging state is changed by processes that are not its descendants (the
    jobs a cluster executor or Slurm starts): they cannot run under a lock the test holds (they
    would wait for it), so before it starts them the test takes the lock and lets it go at once.
    A real run holding it is StateBusy, which skips the test naming the run; another test
    holding it is waited for. Only as root: an unprivileged test's processes change no paging
    state (and cannot open the lock)."""
    from pagelab.system import state

    if os.geteuid() == 0:
        with state.exclusive():
            pass


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def env() -> dict[str, str]:
    """The environment a user's `make` gives the pipeline: the venv first on PATH."""
    e = dict(os.environ)
    e["PATH"] = f"{VENV_BIN}:{e.get('PATH', '')}"
    e.pop("PAGELAB_ROOT", None)
    return e


def build_native() -> Path:
    """`make -C native`, serialised by a lock so parallel test runs never race on objects."""
    lock = REPO / "native" / ".build.lock"
    out = subprocess.run(["flock", str(lock), "make", "-s", "-C", str(REPO / "native")],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    return REPO / "native" / "build"


def copy_native(repo: Path) -> None:
    """The native tools, built here (build_native), copied into a copy of the repository and
    dated now: newer than every source there, so that no Snakemake run in it builds them again."""
    dest = repo / "native" / "build"
    shutil.copytree(build_native(), dest)
    for tool in dest.rglob("*"):
        os.utime(tool)


@pytest.fixture(scope="session")
def native_build() -> Path:
    """The directory of the freshly built native tools."""
    return build_native()


@pytest.fixture
def disk_tmp() -> Path:
    """A fresh directory on the repository's own disk, removed afterwards. A mount or a swap file
    still on under it then (made by a state session that a fixture set up before this one and so
    tears down after it) is an error naming it, and so is anything else that keeps it."""
    from pagelab.system import state

    base = REPO / ".pytest-scratch"
    path = base / uuid.uuid4().hex[:12]
    path.mkdir(parents=True)
    yield path
    on = [m.mountpoint for m in state.mountinfo() if Path(m.mountpoint).is_relative_to(path)]
    on += [s for s in state.active_swaps() if Path(s).is_relative_to(path)]
    assert not on, f"still mounted or swapped on when disk_tmp is removed: {on}"
    shutil.rmtree(path)


def collected(*argv: str) -> set[str]:
    """The test ids pytest collects with these arguments (`pytest --collect-only`)."""
    out = subprocess.run([str(VENV_BIN / "pytest"), "--collect-only", "-q", "-p", "no:cacheprovider", *argv],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    return {ln for ln in out.stdout.splitlines() if "::" in ln}


def copy_repo(dest: Path) -> Path:
    """A copy of the working tree as a fresh clone would have it (tracked and new files, no
    results/, builds or venv), with the current edits included."""
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, capture_output=True, check=True,
    ).stdout.decode().split("\0")
    for rel in filter(None, files):
        src = REPO / rel
        if not src.is_file():
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
    # The copy's package byte-compiled once: where PYTHONDONTWRITEBYTECODE is set (this machine's
    # test environment), every process the copy starts (Snakemake's jobs, trials, pagelab) would
    # otherwise compile the modules it imports from source, about 0.15 s each.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(dest / "src")], check=True,
                   capture_output=True)
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
    return dest


def widest_overfull(log: str) -> float:
    """How far, in pt, the widest overfull box of a LaTeX log runs past its width (0 if none)."""
    return max((float(x) for x in re.findall(r"Overfull \\hbox \(([0-9.]+)pt too wide\)", log)), default=0.0)


def check_paper_layout(repo: Path) -> str:
    """The built paper (repo/results/paper.pdf) prints every claim's row of its verdict table and
    loses nothing off a page: no float taller than the page in LaTeX's log (LaTeX sets it anyway,
    cut at the page's foot), no line more than 10 pt wider than its box, and each id of
    results/claims/verdicts.csv begins a row between the verdict table's caption and the next
    section; and every seed article the text calls by number ("seed 003") is keyed to its
    citation where the introduction names them ("seed 003 [14]"); and the tables, and the
    figures, come in their numbers' order (a longtable set in place does not jump ahead of
    floats still pending).
    Returns the PDF's text (pdftotext -layout)."""
    import csv

    log = (repo / "results/paper-build/main.log").read_text(errors="replace")
    assert "Float too large for page" not in log, re.findall(r".*Float too large for page.*", log)
    # nothing runs visibly into a margin or the next column (a point or two is kerning's)
    assert widest_overfull(log) <= 10, re.findall(r"Overfull \\hbox .*\n.*\n.*", log)
    text = subprocess.run(["pdftotext", "-layout", str(repo / "results/paper.pdf"), "-"],
                          capture_output=True, text=True, check=True).stdout
    start = text.index("Published values against this run")
    table = text[start:text.index("Threats to validity", start)]
    with open(repo / "results/claims/verdicts.csv") as fh:
        ids = [row["id"] for row in csv.DictReader(fh)]
    rows = set(re.findall(r"^\s*(\S+)\s", table, re.M))
    assert ids and [i for i in ids if i not in rows] == [], (sorted(set(ids) - rows), table[-2000:])
    flat = " ".join(text.split())
    called = set(re.findall(r"\b[Ss]eeds? (\d{3})\b", flat)) | set(re.findall(r"\b[Ss]eeds \d{3} and (\d{3})\b", flat))
    keyed = set(re.findall(r"\bseed (\d{3}) \[\d+\]", flat))
    assert called and called <= keyed, (sorted(called - keyed), flat[:3000])
    for kind in ("Table", "Figure"):
        numbers = caption_numbers(text, kind)
        assert numbers and numbers == sorted(numbers), (kind, numbers)
    stranded = stranded_longtables(text)
    assert not stranded, stranded
    return text


def stranded_longtables(text: str, least: int = 12) -> list[str]:
    """The longtables whose first page holds fewer than `least` lines from their caption to
    "Continued on next page": a caption and header at a page's foot with a row or none below."""
    out, seen = [], set()
    for page in text.split("\f"):
        for num in caption_numbers(page, "Table"):
            if num in seen:
                continue
            seen.add(num)
            rest = page[page.index(f"Table {num}: "):]
            if "Continued on next page" in rest:
                lines = [ln for ln in rest[:rest.index("Continued on next page")].splitlines() if ln.strip()]
                if len(lines) < least:
                    out.append(f"Table {num}: {len(lines)} lines before 'Continued on next page'")
    return out


def caption_numbers(text: str, kind: str) -> list[int]:
    """The numbers of the captions of `kind` ("Table 7: ...") in the order they first appear (a
    longtable's caption repeats on each of its pages)."""
    return [int(n) for n in dict.fromkeys(re.findall(rf"\b{kind} (\d+): ", text))]


# tests/toy's experiment, added as a new experiment is: its own files (a file of tests/toy -> its
# place in the repository), and its claims, rows appended to the one claims table.
TOY_FILES = {"toy.py": "src/pagelab/experiments/toy.py", "schema.yaml": "config/schema/toy.yaml",
             "toy.ipynb": "notebooks/toy.ipynb", "section.tex": "paper/sections/toy.tex"}
TOY_CLAIMS = ("claims.csv", "data/published/claims.csv")


def add_toy_experiment(repo: Path) -> None:
    """Adds tests/toy's experiment to a copy of the repository by writing only what a new
    experiment is: four files of its own (its module with its descriptor, figure and own
    hardware; its schema fragment, whose defaults are its configuration; its notebook's
    narrative; its paper section) and its claims, rows appended to data/published/claims.csv,
    the one pre-registered table whose history the changelog is checked against. Nothing else is
    edited (tests/test_toy.py checks it; docs/adding-an-experiment.md)."""
    toy = REPO / "tests" / "toy"
    for src, dest in TOY_FILES.items():
        shutil.copy2(toy / src, repo / dest)
    src, dest = TOY_CLAIMS
    with open(repo / dest, "a") as fh:
        fh.write((toy / src).read_text())


REFERENCE_RECORDING = "epyc-2c-linux6.18-virtio/quick"


def recorded_params(experiments: list[str], recording: str = REFERENCE_RECORDING,
                    with_recording: bool = False) -> list[Any]:
    """`experiments` as pytest parameters (with `with_recording`, (recording, experiment) pairs),
    each one the recording has no run of (a new experiment, before its first recording) skipped
    by name with the reason."""
    from pagelab.data.recording import holds, not_recorded

    return [pytest.param(*([recording] if with_recording else []), e,
                         id=f"{recording.rsplit('/', 1)[-1]}-{e}" if with_recording else e,
                         marks=() if holds(recording, e) else pytest.mark.skip(reason=not_recorded(recording, e)))
            for e in experiments]


@pytest.fixture(scope="session")
def recorded_results(tmp_path_factory) -> Path:
    """Every experiment's notebook run once by papermill on the reference machine's recorded
    quick run (data/recorded/, replayed into a results directory as the pipeline would have
    written it); each experiment's papermill exit status and output are kept in papermill.json.
    The notebooks run side by side, one per core: each reads and writes its own directory."""
    import json
    from concurrent.futures import ThreadPoolExecutor

    from pagelab.core import notebooks
    from pagelab.data.recording import recorded_dir, replay
    from pagelab.system import config

    rec = recorded_dir() / REFERENCE_RECORDING
    out = tmp_path_factory.mktemp("recorded")
    env = dict(os.environ)
    env["PATH"] = f"{VENV_BIN}:{env.get('PATH', '')}"

    def run_notebook(experiment: str) -> None:
        dest = out / experiment
        replay(rec, experiment, dest)
        shutil.copyfile(rec / experiment / "config.json", dest / "config.json")
        run = subprocess.run(  # the template with its narrative, on the step's stdin (as the rule pipes it)
            [str(VENV_BIN / "pagelab"), "pipeline", "execute", "--cwd", str(REPO), "-",
             str(dest / f"{experiment}.ipynb"), "-p", "results_dir", str(dest), "-p", "profile", "quick"],
            input=notebooks.dumps(notebooks.notebook(experiment)), capture_output=True, text=True, env=env,
            timeout=600)
        (dest / "papermill.json").write_text(json.dumps(
            {"returncode": run.returncode, "output": run.stdout[-2000:] + run.stderr[-3000:]}))

    # a new experiment, not recorded yet, is left out: its tests skip it (recorded_params)
    recorded = [e for e in config.experiments() if (rec / e / "trials.csv").exists()]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(run_notebook, recorded))
    return out


def padded_recording(dest: Path, experiment: str = "payoff", to: int = 15) -> Path:
    """A recording made under an earlier, fixed-n rule, from the reference machine's full one: a
    copy (dest/<machine>/full, every other experiment linked) in which each configuration of
    `experiment` that stopped before `to` counted trials has copies of its own counted trials, in
    their order, appended after the run's last trial (new trial ids, order, start and end; each
    copy takes its original's seconds) up to `to`. Today's rule replayed on it
    (pagelab.experiments.replay.kept) stops where the recorded run stopped, so the trials it keeps
    are the recording's own. Returns dest (a root of recordings, as data/recorded is)."""
    import csv
    import datetime as dt
    import gzip
    import json

    from pagelab.experiments import harness
    from pagelab.run import trials

    src = REPO / "data" / "recorded" / REFERENCE_RECORDING.split("/")[0] / "full"
    full = dest / src.parent.name / "full"
    full.mkdir(parents=True)
    for d in src.iterdir():
        if d.name != experiment:
            (full / d.name).symlink_to(d)
    shutil.copytree(src / experiment, full / experiment)
    out = full / experiment
    with gzip.open(out / "trials.jsonl.gz", "rt") as fh:
        recs = [json.loads(line) for line in fh if line.strip()]
    with open(out / "trials.csv", newline="") as fh:
        reader = csv.DictReader(fh)
        fields, rows = reader.fieldnames, list(reader)
    by_id = {r["trial_id"]: r for r in rows}
    desc = harness.descriptor(experiment)
    by: dict[str, list[dict]] = {}
    for r in sorted(filter(trials.is_counted, recs), key=lambda r: r["order"]):
        by.setdefault(desc.conf_name(r["params"]), []).append(r)

    ts = dt.datetime.fromisoformat
    clock = max(ts(r["end"]) for r in recs)
    order = max(r["order"] for r in recs)
    resumed = (clock + dt.timedelta(seconds=0.5)).isoformat()   # the copies: one process, after the run
    for own in by.values():
        # the copies' ids follow the configuration's last, rejected trials included
        stem = own[0]["trial_id"].rsplit("-r", 1)[0]
        nxt = 1 + max(int(r["trial_id"].rsplit("-r", 1)[1]) for r in recs
                      if r["trial_id"].rsplit("-r", 1)[0] == stem and not r.get("warmup"))
        for i in range(to - len(own)):
            orig, rep = own[i % len(own)], nxt + i
            start, order = clock + dt.timedelta(seconds=1), order + 1
            clock = start + (ts(orig["end"]) - ts(orig["start"]))
            new = {"trial_id": f"{stem}-r{rep:02d}", "order": order, "start": start.isoformat(),
                   "end": clock.isoformat(), "repetition": rep}
            recs.append({**orig, **new, "process_started": resumed})
            rows.append({**by_id[orig["trial_id"]], **{f: str(v) for f, v in new.items() if f in fields}})
    with gzip.open(out / "trials.jsonl.gz", "wt") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in recs)
    with open(out / "trials.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return dest


@pytest.fixture(scope="session")
def padded(tmp_path_factory) -> Path:
    """padded_recording's root, made once per session (its tests only read it)."""
    return padded_recording(tmp_path_factory.mktemp("padded"))


def touch_and_free(mib: int, huge: bool = False) -> None:
    """A child touches `mib` MiB of fresh private anonymous memory (one write a page) and exits;
    with `huge`, backed by transparent huge pages where it can (madvise), so that its exit frees
    whole 2 MiB pageblocks."""
    subprocess.run([sys.executable, "-c",
                    "import mmap\n"
                    f"m = mmap.mmap(-1, {mib} << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)\n"
                    + ("m.madvise(mmap.MADV_HUGEPAGE)\n" if huge else "")
                    + "for i in range(0, len(m), 4096): m[i] = 1"], check=True)
