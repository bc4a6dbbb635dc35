"""The files `make test` runs beside the others (tests/conftest.py's BESIDE, at nice 19 while the
hardware tests run): each exists and none of them takes the state lock, reads or changes the
paging state, needs root or FUSE, runs the measuring pipeline, or times anything, so that neither
run can disturb the other; ALLOWED names the few hits a file may hold and why each is harmless.
The native tools are built by `make test` before both runs start (build_native then only checks
them, under its own lock). The markers split the suite exactly in two."""

import re
import shlex

from conftest import BESIDE, REPO, collected

# what a file that runs beside must not hold: the lock, the state, root, devices, clocks
FORBIDDEN = re.compile(r"state\.(show|exclusive|session|holder|orphans)|state_lock|state_show|geteuid|root_only|"
                       r"needs_fuse|/dev/fuse|mark\.pipeline|pipeline = |flock|"
                       r"time\.sleep|monotonic|perf_counter|/proc/|/sys/|sysctl|swapon|cgroup")

# Hits a file may hold, each with why it disturbs neither run.
ALLOWED = {
    # root only to become nobody, whose `make PROFILE=recorded` can change no paging state (no
    # right to) and runs no trial (the test asserts it from the run's logs and plan); the clock
    # only prints how long that took
    "test_recorded.py": {"geteuid", "mark.pipeline", "monotonic"},
    # a variable: the `make -n` line that starts the pipeline, which the test only dry-runs
    "test_docs.py": {"pipeline = "},
}


def test_every_file_run_beside_exists_and_touches_no_state_and_no_clock():
    tests = REPO / "tests"
    assert len(set(BESIDE)) == len(BESIDE)
    for name in BESIDE:
        if name == "test_beside.py":   # this file: its only hits are the pattern above
            continue
        text = (tests / name).read_text()
        hits = {m.group(0) for m in FORBIDDEN.finditer(text)}
        allowed = ALLOWED.get(name, set())
        assert not hits - allowed, f"{name} runs beside the hardware tests but holds {sorted(hits - allowed)}"
        assert allowed <= hits, f"ALLOWED names {sorted(allowed - hits)} for {name}, which no longer holds them"
    assert set(ALLOWED) <= set(BESIDE)


def test_the_two_runs_of_make_test_split_the_suite():
    beside, rest, every = collected("-m", "beside"), collected("-m", "not beside"), collected()
    assert beside and rest and not beside & rest and beside | rest == every
    assert {ln.split("::")[0].rsplit("/", 1)[-1] for ln in beside} == set(BESIDE)


def test_make_check_crash_runs_the_sweeps_and_nothing_make_test_ran():
    """`make check-crash`'s pytest line (the Makefile's own) collects exactly the tests marked
    check_crash, which `make test` skips: CI, which runs both, runs no test twice."""
    recipe = re.search(r"^check-crash:\n\t(.+)$", (REPO / "Makefile").read_text(), re.M).group(1)
    env_var, pytest, *args = shlex.split(recipe)
    assert env_var == "PAGELAB_CHECK_CRASH=1" and pytest == "$(VENV)/bin/pytest", recipe
    sweeps = collected(*args)
    assert sweeps == collected("-m", "check_crash")
    assert {"tests/test_crash_sweep.py::test_signal_sweep_leaves_nothing",
            "tests/test_state.py::test_sigterm_at_every_point_of_two_emulated_trials_is_restored"} <= sweeps
    assert "tests/test_crash_sweep.py::test_representative_stops" not in sweeps   # make test runs it
