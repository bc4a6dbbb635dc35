"""The entry points' set-up: validation first, and the Debian packages of each route.

Validation first: `make` with a bad PROFILE, EXPERIMENT or RECORDING, or with a config/config.yaml
of a bad key, type or size, ends with one line naming the variable or key and exit 2, in a fresh
copy of the repository, before anything is installed, built or changed: apt-get, dpkg-query and
the compilers are replaced on PATH by commands that write down that they ran, and afterwards
there is no venv, no native build, no results and no state journal. On a fresh clone, where the
configuration can be read only once the venv is made, make's plan of every route makes the venv,
checks the configuration and only then asks for Debian packages; run for real with the venv just
made, a bad configuration is refused before dpkg-query or apt-get run. A python3 without its venv
module has python3-venv installed alone first.

Package sets: the recorded route (make PROFILE=recorded) asks for the paper's packages only.
Its set-up is run against a dpkg database holding exactly the paper's packages, written here
from this test's own list, with a PATH holding no compiler, fio, FUSE or Slurm command: it passes,
while the measuring and test routes name what they miss. The recorded route's plans (make's and
Snakemake's) build no native tool.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, VENV_BIN, copy_repo
from pagelab.data import recording
from pagelab.data.recording import RecordingError
from pagelab.experiments import harness
from pagelab.system import config

SETUP = REPO / "workflow" / "scripts" / "setup_system.sh"
CHECK_PYTHON = REPO / "workflow" / "scripts" / "check_python.sh"
SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin") or "python3"

# What the paper from a recording needs, and nothing else: Python with its venv module, TeX Live,
# latexmk, poppler (pdftotext), git. The test's own list, so that a set-up that reaches for more
# (a compiler, FUSE, fio, Slurm) fails against the database written from it.
PAPER_PACKAGES = ["python3", "python3-venv", "texlive-latex-base", "texlive-latex-recommended",
                  "texlive-latex-extra", "texlive-fonts-recommended", "latexmk", "poppler-utils", "git"]
MEASURE_ONLY = ["build-essential", "pkg-config", "liburing-dev", "libfuse3-dev", "fuse3", "fio", "lz4"]
TEST_ONLY = ["strace", "slurmctld", "slurmd", "slurm-client", "munge"]
# Commands that install, build or start something: on PATH they only write down that they ran.
TRAPPED = ["apt-get", "apt", "dpkg", "dpkg-query", "cc", "gcc", "pip", "pip3", "sbatch", "fusermount3"]
# The commands a set-up may use on the recorded route: the shell's tools, make, python3, dpkg-query.
BASIC = ["bash", "sh", "env", "id", "awk", "grep", "cat", "sed", "test", "mkdir", "rm", "touch", "dirname",
         "make", "python3", "dpkg-query"]


def _load_check_make():
    spec = importlib.util.spec_from_file_location("check_make", REPO / "workflow" / "scripts" / "check_make.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --------------------------------------------------------------------------- validation first
@pytest.fixture
def fresh(tmp_path) -> dict:
    """A copy of the repository as a fresh clone has it, a PATH whose installers and compilers
    only log that they ran, and a state journal of its own."""
    repo = copy_repo(tmp_path / "repo")
    traps, log = tmp_path / "traps", tmp_path / "ran.log"
    traps.mkdir()
    for name in TRAPPED:
        (traps / name).write_text(f"#!/bin/sh\necho \"{name} $*\" >> {log}\nexit 1\n")
        (traps / name).chmod(0o755)
    journal = tmp_path / "journal.jsonl"
    env = {"PATH": f"{traps}:/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8",
           "PAGELAB_JOURNAL": str(journal), "PAGELAB_PROGRESS": "none"}
    return {"repo": repo, "env": env, "log": log, "journal": journal}


def _make(fresh: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=fresh["repo"], env=fresh["env"],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def _nothing_changed(fresh: dict, venv_made_here: bool = False) -> None:
    repo = fresh["repo"]
    assert not fresh["log"].exists(), fresh["log"].read_text()  # no apt-get, dpkg, compiler, pip
    if not venv_made_here:
        assert not (repo / ".venv").exists()
    for made in ("native/build", "results", "scratch", ".snakemake"):
        assert not (repo / made).exists(), made
    assert not fresh["journal"].exists()


@pytest.mark.parametrize(("args", "named"), [
    (["PROFILE=bogus"], "PROFILE=bogus: not a profile (the profiles: quick, full, seed, or recorded)"),
    (["EXPERIMENT=bogus"], "EXPERIMENT=bogus: no experiment named 'bogus'"),
    (["PROFILE=full", "EXPERIMENT=seekmodel bogus"], "EXPERIMENT=bogus: no experiment named 'bogus'"),
    (["PROFILE=recorded", "RECORDING=nowhere/quick"], "RECORDING=nowhere/quick: no recording 'nowhere/quick'"),
    (["test", "PROFILE=bogus"], "PROFILE=bogus"),
    (["setup", "EXPERIMENT=bogus"], "EXPERIMENT=bogus"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_a_bad_make_variable_is_refused_before_anything_is_set_up(fresh, args, named):
    """On a fresh clone (no venv): the standard library's check of make's own variables."""
    done = _make(fresh, *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(done.stderr.splitlines()) == 1 and named in done.stderr, done.stderr
    assert done.stdout == ""
    _nothing_changed(fresh)


def _current_venv(repo: Path) -> Path:
    """A venv in the copy that make takes as current (its stamp newer than the lock): this
    checkout's interpreter and pagelab, which read the copy's config (its working directory)."""
    assert (VENV_BIN / "pagelab").exists(), "this checkout's venv: run `make setup`"
    bin_ = repo / ".venv" / "bin"
    bin_.mkdir(parents=True)
    for name in ("python", "pagelab"):
        (bin_ / name).symlink_to(VENV_BIN / name)
    stamp = repo / ".venv" / ".installed-from-lock"
    stamp.touch()
    for older in ("requirements.lock", "pyproject.toml"):
        os.utime(repo / older, (stamp.stat().st_mtime - 60,) * 2)
    return stamp


@pytest.mark.parametrize(("text", "named"), [
    ("seekmodel: {quick: {bogus: 1}}", "config/config.yaml: seekmodel.quick.bogus: unknown key"),
    ("seekmodle: {}", "config/config.yaml: seekmodle: unknown key"),
    ("readyboost: {quick: {hog_rounds: many}}", "config/config.yaml: readyboost.quick.hog_rounds: 'many' is not"),
    ("readyboost: {quick: {ram: 4096T}}", "config/config.yaml: readyboost.quick.ram: '4096T' is more than 1T"),
    ("readyboost: {quick: {ram: -4M}}", "config/config.yaml: readyboost.quick.ram: '-4M' is not a size"),
    ("scratch_dir: [1]", "config/config.yaml: scratch_dir: [1] is not of type 'string'"),
    ("seekmodel: {quick: [}", "config/config.yaml: not YAML (line"),
], ids=lambda v: "" if v.startswith("config/") else v)
def test_a_bad_config_is_refused_before_anything_is_set_up(fresh, text, named):
    """With a current venv: config/config.yaml validated whole (the schema) before apt-get, the
    native build and `pagelab state recover`; the venv is left as it was."""
    stamp = _current_venv(fresh["repo"])
    before = stamp.stat().st_mtime_ns
    with open(fresh["repo"] / "config" / "config.yaml", "a") as fh:
        fh.write(text + "\n")
    for args in ([], ["PROFILE=full"], ["PROFILE=recorded"], ["test"]):
        done = _make(fresh, *args)
        assert done.returncode == 2, (args, done.stdout + done.stderr)
        assert len(done.stderr.splitlines()) == 1 and named in done.stderr, (args, done.stderr)
        _nothing_changed(fresh, venv_made_here=True)
    assert stamp.stat().st_mtime_ns == before


# Every route's set-up and what comes after it, as `make -n` plans them on a fresh clone: the
# venv, then the configuration's check, then the route's Debian packages, the native build, and
# last what touches paging state (the pipeline, which recovers the state first, or the tests).
ROUTES = {
    "": ["check_python.sh", "-m venv", "pip install", "check_make.py", "setup_system.sh measure",
         "make -s -C native", "run_pipeline.sh"],
    "test": ["check_python.sh", "-m venv", "pip install", "check_make.py", "setup_system.sh test",
             "make -s -C native", "run_tests.sh"],
    "setup": ["check_python.sh", "-m venv", "pip install", "check_make.py", "setup_system.sh measure",
              "make -s -C native"],
    "PROFILE=recorded": ["check_python.sh", "-m venv", "pip install", "check_make.py", "setup_system.sh paper",
                         "run_pipeline.sh"],
    "check-crash": ["check_python.sh", "-m venv", "pip install", "check_make.py", "setup_system.sh measure",
                    "make -s -C native", "PAGELAB_CHECK_CRASH=1"],
}


def _plan_order(plan: str, steps: list[str]) -> list[int]:
    """The line of the plan where each step first appears (-1: absent)."""
    lines = plan.splitlines()
    return [next((i for i, ln in enumerate(lines) if s in ln), -1) for s in steps]


@pytest.mark.parametrize("route", list(ROUTES), ids=lambda r: r or "make")
def test_a_fresh_clone_plans_the_config_check_before_any_debian_package(fresh, route):
    """`make -n` on a fresh clone (no venv, so the configuration cannot be read before set-up):
    every route makes the venv, then checks config/config.yaml, and only then asks for its
    Debian packages, builds the native tools and runs what changes state, in that order."""
    done = _make(fresh, "-n", *route.split())
    assert done.returncode == 0, done.stdout + done.stderr
    where = _plan_order(done.stdout, ROUTES[route])
    assert -1 not in where and where == sorted(where), dict(zip(ROUTES[route], where, strict=True))
    if route == "PROFILE=recorded":
        assert "-C native" not in done.stdout
    _nothing_changed(fresh)


@pytest.mark.parametrize("args", [[], ["test"], ["setup"], ["PROFILE=recorded"],
                                  ["PROFILE=full", "EXPERIMENT=seekmodel"], ["bench"]],
                         ids=lambda a: " ".join(a) or "make")
def test_a_fresh_clone_refuses_a_bad_config_before_any_debian_package(fresh, args):
    """A fresh clone's case, run for real: the venv was just made, so the check before set-up
    could not read the configuration (make's -o keeps the venv as it is here, its stamp older than
    the lock); the set-up's `config` step refuses it with the one line naming the key (make adds
    its own line, and its exit 2) before the route's Debian packages are even queried: dpkg-query,
    apt-get and the compilers, trapped on PATH, never ran, and nothing was built or changed."""
    stamp = _current_venv(fresh["repo"])
    os.utime(stamp, (stamp.stat().st_mtime - 600,) * 2)  # older than the lock: not read before set-up
    with open(fresh["repo"] / "config" / "config.yaml", "a") as fh:
        fh.write("readyboost: {quick: {ram: 0}}\n")
    done = _make(fresh, "-o", ".venv/.installed-from-lock", *args)
    assert done.returncode == 2, done.stdout + done.stderr
    first, *rest = done.stderr.splitlines()
    assert first.startswith("config/config.yaml: readyboost.quick.ram: 0 is "), done.stderr
    assert all(ln.startswith("make: ***") and "config" in ln for ln in rest), done.stderr
    _nothing_changed(fresh, venv_made_here=True)


def test_the_standard_library_check_reads_the_names_the_package_knows():
    """PROFILE, EXPERIMENT and RECORDING are checked without the venv, from the schema files and
    data/recorded/: the same profiles, experiments and recordings the package has."""
    check = _load_check_make()
    assert check.profiles(REPO) == list(config.PROFILES)
    assert check.experiments(REPO) == sorted(config.experiments())
    for name in ["epyc-2c-linux6.18-virtio/quick", "nowhere/quick", "epyc-2c-linux6.18-virtio", "",
                 str(recording.recorded_dir() / "epyc-2c-linux6.18-virtio" / "full")]:
        try:
            recording.resolve(name)
            known = True
        except RecordingError:
            known = False
        assert check.is_recording(REPO, name) == known, name


def test_the_configuration_makes_with_the_system_python_and_no_third_party_package(fresh):
    """The first check runs on a fresh machine's python3: no yaml, no jsonschema needed."""
    done = subprocess.run([SYSTEM_PYTHON, "-S", "-I", str(REPO / "workflow/scripts/check_make.py"),
                           "--profile", "seed", "--experiment", "seekmodel payoff"],
                          cwd=fresh["repo"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr


# --------------------------------------------------------------------------- package sets
@pytest.fixture
def paper_machine(tmp_path) -> dict:
    """A dpkg database with exactly the paper's packages, and a PATH with the basic commands only."""
    admin = tmp_path / "dpkg"
    (admin / "updates").mkdir(parents=True)
    (admin / "info").mkdir()
    (admin / "available").touch()
    (admin / "status").write_text("".join(
        f"Package: {p}\nStatus: install ok installed\nPriority: optional\nSection: misc\n"
        f"Maintainer: nobody <nobody@example.org>\nArchitecture: all\nVersion: 1.0\n"
        f"Description: {p}\n\n" for p in PAPER_PACKAGES))
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for name in BASIC:
        found = shutil.which(name, path="/usr/local/bin:/usr/bin:/bin")
        if found:
            (bin_ / name).symlink_to(found)
    for name in ("gcc", "cc", "fio", "fusermount3", "sbatch", "apt-get"):
        assert not (bin_ / name).exists()
    return {"DPKG_ADMINDIR": str(admin), "PATH": str(bin_), "HOME": str(tmp_path), "LANG": "C.UTF-8"}


def _setup(route: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SETUP), route], env=env, capture_output=True, text=True, timeout=60)


def test_the_recorded_route_needs_the_paper_packages_and_nothing_else(paper_machine):
    done = _setup("paper", paper_machine)
    assert done.returncode == 0, done.stderr
    listed = subprocess.run(["bash", str(SETUP), "--list", "paper"], capture_output=True, text=True).stdout.split()
    assert sorted(listed) == sorted(PAPER_PACKAGES)


@pytest.mark.parametrize(("route", "missing"), [("measure", MEASURE_ONLY), ("test", MEASURE_ONLY + TEST_ONLY)])
def test_the_measuring_and_test_routes_name_what_they_miss(paper_machine, route, missing):
    done = _setup(route, paper_machine)
    assert done.returncode == 1
    line, = done.stderr.splitlines()
    assert line.startswith(f"setup: missing Debian packages ({route} set): {' '.join(missing)};"), line
    assert f"sudo apt-get install -y --no-install-recommends {' '.join(missing)}" in line


def test_make_routes_ask_for_their_own_sets(paper_machine, tmp_path):
    """Through the Makefile on the same machine: `make system PROFILE=recorded` passes (an
    unprivileged user and root alike, no apt-get on PATH); the measuring route fails naming its
    packages; the recorded route's plan builds no native tool, the measuring route's does."""
    repo = copy_repo(tmp_path / "repo")
    done = subprocess.run(["make", "--no-print-directory", "system", "PROFILE=recorded"], cwd=repo,
                          env=paper_machine, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    done = subprocess.run(["make", "--no-print-directory", "system"], cwd=repo, env=paper_machine,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "missing Debian packages (measure set): build-essential" in done.stderr
    plans = {}
    for args in (["PROFILE=recorded"], [], ["test"]):
        plans[" ".join(args)] = subprocess.run(["make", "-n", "--no-print-directory", *args], cwd=repo,
                                               env={**os.environ, "PATH": "/usr/local/bin:/usr/bin:/bin"},
                                               capture_output=True, text=True, timeout=60).stdout
    assert "setup_system.sh paper" in plans["PROFILE=recorded"] and "-C native" not in plans["PROFILE=recorded"]
    assert "setup_system.sh measure" in plans[""] and "make -s -C native" in plans[""]
    assert "setup_system.sh test" in plans["test"] and "make -s -C native" in plans["test"]


def test_the_recorded_pipeline_plans_no_native_build(tmp_path, env):
    """Snakemake's plan of make PROFILE=recorded's targets: each trial is replayed, and no job
    compiles the native tools."""
    repo = copy_repo(tmp_path / "repo")
    plan = subprocess.run(["snakemake", "-n", "--workflow-profile", "workflow/profiles/default", "results/paper.pdf",
                           "results/index.html", "--config", "recording=epyc-2c-linux6.18-virtio/quick"],
                          cwd=repo, env={**env, "PYTHONPATH": str(repo / "src")}, capture_output=True, text=True,
                          timeout=300)
    assert plan.returncode == 0, plan.stdout[-2000:] + plan.stderr[-2000:]
    assert "rule trial:" in plan.stdout and "rule native:" not in plan.stdout, plan.stdout[-3000:]


def _python_without_ensurepip(tmp_path: Path) -> Path:
    """A `python3` (the system's) whose ensurepip is missing, as on Debian without python3-venv;
    the directory holding it is returned."""
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "ensurepip.py").write_text("raise ImportError('ensurepip is not installed')\n")
    bin_ = tmp_path / "nopip"
    bin_.mkdir()
    (bin_ / "python3").write_text(f"#!/bin/sh\nPYTHONPATH={shadow} exec {SYSTEM_PYTHON} \"$@\"\n")
    (bin_ / "python3").chmod(0o755)
    return bin_


def test_a_python_without_its_venv_module_is_named_in_one_line(tmp_path, paper_machine):
    """check_python.sh with an interpreter whose ensurepip is missing while dpkg says python3-venv
    is installed (nothing to install): one line naming python3-venv, and no apt-get."""
    fake = _python_without_ensurepip(tmp_path) / "python3"
    done = subprocess.run(["bash", str(CHECK_PYTHON), str(fake)], env=paper_machine, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1
    line, = done.stderr.splitlines()
    assert "python3-venv" in line and "venv" in line


def test_a_fresh_clone_without_python3_venv_installs_that_package_alone_first(tmp_path, paper_machine):
    """`make` as root on a fresh clone where python3 has no venv module and dpkg lacks
    python3-venv: the venv step installs python3-venv alone, saying so, before the configuration
    is checked and before any other package of the route (apt-get writes down its calls here and
    installs nothing, so the venv module is still missing and make stops there)."""
    admin = Path(paper_machine["DPKG_ADMINDIR"])
    status = (admin / "status").read_text().split("\n\n")
    (admin / "status").write_text("\n\n".join(s for s in status if not s.startswith("Package: python3-venv\n")))
    shims, log = tmp_path / "shims", tmp_path / "apt.log"
    shims.mkdir()
    (shims / "apt-get").write_text(f"#!/bin/sh\necho \"apt-get $*\" >> {log}\n")
    (shims / "id").write_text("#!/bin/sh\necho 0\n")   # root, to setup_system.sh
    for name in ("apt-get", "id"):
        (shims / name).chmod(0o755)
    repo = copy_repo(tmp_path / "repo")
    env = {**paper_machine, "PATH": f"{shims}:{_python_without_ensurepip(tmp_path)}:{paper_machine['PATH']}"}
    done = subprocess.run(["make", "--no-print-directory"], cwd=repo, env=env, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stdout + done.stderr
    assert log.read_text().splitlines() == ["apt-get update -qq",
                                            "apt-get install -y -qq --no-install-recommends python3-venv"]
    assert "setup: installing python3-venv alone (the venv module, which checking config/config.yaml needs; " \
           "the route's other packages come after that check)" in done.stdout, done.stdout
    assert "python3 has no venv/ensurepip" in done.stderr, done.stderr
    assert "check_make.py" not in done.stdout + done.stderr and not (repo / ".venv").exists()


# --------------------------------------------------------------------------- pagelab's own inputs
REC = "data/recorded/epyc-2c-linux6.18-virtio/quick"
CLAIMS = "data/published/claims.csv"
NOWHERE = "/no/such/place"
# (command line, what the one line names); {tmp} is a directory where nothing may appear, {foreign}
# a CSV file that is no claims table.
BAD_INPUTS = [
    (["provenance", "--path", NOWHERE], f"--path {NOWHERE}: no such file or directory"),
    (["compare", REC, REC, "--noise", "-1"], "--noise -1.0: the noise band is at least 0"),
    (["compare", REC, REC, "--noise", "1.5", "--output", "{tmp}/c.txt"], "--noise 1.5"),
    (["claims", "history", "--claims", NOWHERE], f"{NOWHERE}: No such file or directory"),
    (["claims", "history", "--claims", "{foreign}"], "foreign.csv: missing column(s) id"),
    (["claims", "recorded", "--recording", "nowhere/quick"], "no recording 'nowhere/quick'"),
    (["claims", "figure", "--results", NOWHERE, "--profile", "quick", "--output", "{tmp}/f.pdf",
      "--html", "{tmp}/f.html", "--claims", CLAIMS], f"--results {NOWHERE}: no such directory"),
    (["claims", "figure", "--results", REC, "--profile", "warp", "--output", "{tmp}/f.pdf",
      "--html", "{tmp}/f.html", "--claims", CLAIMS], "--profile 'warp' is not one of quick, full, seed"),
    (["claims", "figure", "--results", REC, "--profile", "quick", "--output", "{tmp}/f.pdf",
      "--html", "{tmp}/f.html", "--claims", CLAIMS, "--recording", "nowhere/quick"], "no recording 'nowhere/quick'"),
    (["pipeline", "published", "--claims", NOWHERE, "--table", "{tmp}/t.tex", "--macros", "{tmp}/m.tex"],
     f"{NOWHERE}: No such file or directory"),
    (["pipeline", "verdicts", "--results", NOWHERE, "--claims", CLAIMS, "--profile", "quick", "--tex", "{tmp}/v.tex",
      "--csv", "{tmp}/v.csv", "--macros", "{tmp}/vm.tex"], f"--results {NOWHERE}: no such directory"),
    (["pipeline", "verdicts", "--results", REC, "--claims", CLAIMS, "--profile", "warp", "--tex", "{tmp}/v.tex",
      "--csv", "{tmp}/v.csv", "--macros", "{tmp}/vm.tex"], "--profile 'warp'"),
    (["pipeline", "compare-section", "--results", NOWHERE, "--output", "{tmp}/cs.tex"], f"--results {NOWHERE}"),
    (["pipeline", "compare-section", "--results", REC, "--reference", NOWHERE, "--output", "{tmp}/cs.tex"],
     f"--reference {NOWHERE}: no such directory"),
    (["pipeline", "appendix", "--results", NOWHERE, "--output", "{tmp}/app", "--profile", "quick", "seekmodel"],
     f"--results {NOWHERE}"),
    (["pipeline", "appendix", "--results", REC, "--output", "{tmp}/app", "--profile", "warp", "seekmodel"],
     "--profile 'warp'"),
    (["pipeline", "index", "--results", NOWHERE, "--output", "{tmp}/i.html"], f"--results {NOWHERE}"),
    (["pipeline", "paper", "--output", "{tmp}/p.pdf", "nosuch"], "no experiment named 'nosuch'"),
    (["fleet", "show", "--configfile", NOWHERE], f"{NOWHERE}: No such file or directory"),
    (["fleet", "show", "--configfile", "{foreign}"], "foreign.csv: not YAML"),
    (["pipeline", "tidy", "seekmodel", "--config", "{seekmodel_config}", "--results", NOWHERE,
      "--output", "{tmp}/t.parquet"], f"--results {NOWHERE}"),
]


@pytest.mark.parametrize(("argv", "named"), BAD_INPUTS, ids=[" ".join(a[:3]) + f" [{i}]" for i, (a, _) in
                                                            enumerate(BAD_INPUTS)])
def test_a_pagelab_command_refuses_bad_input_with_exit_2_and_writes_nothing(tmp_path, monkeypatch, capsys,
                                                                            argv, named):
    from pagelab import cli

    monkeypatch.chdir(REPO)
    monkeypatch.setenv("PAGELAB_JOURNAL", str(tmp_path / "journal.jsonl"))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    foreign = tmp_path / "foreign.csv"
    foreign.write_text("when,what\n1,2\n: {[\n")
    seekmodel_config = tmp_path / "seekmodel.json"   # the recorded block under today's names
    seekmodel_config.write_text(json.dumps(harness.read_json(REPO / REC / "seekmodel", "config.json")))
    rc = cli.main([a.replace("{tmp}", str(out_dir)).replace("{foreign}", str(foreign))
                   .replace("{seekmodel_config}", str(seekmodel_config)) for a in argv])
    out, err = capsys.readouterr()
    assert rc == 2, (rc, err)
    assert len(err.splitlines()) == 1 and named in err, err
    assert not any(out_dir.iterdir()) and not (tmp_path / "journal.jsonl").exists()


def test_pagelab_claims_exits_1_for_a_failure_of_the_run(tmp_path, monkeypatch, capsys):
    """Good inputs, and a run that fails (the figure cannot be written where --output points: a
    file stands where its folder should be): exit 1, not the 2 of bad input."""
    from pagelab import cli

    monkeypatch.chdir(REPO)
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a folder\n")
    rc = cli.main(["claims", "figure", "--results", REC, "--profile", "quick", "--output", str(blocker / "f.pdf"),
                   "--html", str(blocker / "f.html"), "--claims", CLAIMS])
    err = capsys.readouterr().err
    assert rc == 1, (rc, err)
    assert len(err.splitlines()) == 1 and err.startswith("pagelab claims figure: "), err
