#!/usr/bin/env python3
"""`make check-flaky`: the tests whose verdict rests on time run RUNS times (20 unless
FLAKY_RUNS says otherwise) while a CPU hog spins on one core beside them; prints, for each run
and at the end, how many of them failed, and exits 1 if any did.

  check_flaky.py [--runs N] [PYTEST_ARGS...]

The hog is a busy loop in a child process of this script, pinned to the CPU that
pagelab.run.tools.pinned_to_one_cpu gives the native tools (the last one allowed), started
before the first run and ended by its own pid after the last (also on SIGINT or SIGTERM).
Each run is one pytest process over TESTS; its outcome per test is read from its JUnit XML.
A test that skips counts as skipped, not passed, and is named.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYTEST = REPO / ".venv" / "bin" / "pytest"

# The tests that judge wall-clock time, a timing counter or a schedule (tests/*.py), each
# holding its bounds in its own comments.
TESTS = [
    "tests/test_faults.py::test_delays_add_to_the_service_time_and_the_trace_says_so",
    "tests/test_faults.py::test_a_stalled_daemon_still_stops_at_once",
    "tests/test_faults.py::test_a_failed_paging_device_makes_its_trial_invalid_and_the_run_goes_on"
    "[latency-spikes]",
    "tests/test_faults.py::test_a_failed_paging_device_makes_its_trial_invalid_and_the_run_goes_on"
    "[stall-for-a-time]",
    "tests/test_faults.py::test_a_failed_paging_device_makes_its_trial_invalid_and_the_run_goes_on"
    "[stall-for-good]",
    "tests/test_faults.py::test_a_restore_while_the_device_stopped_answering_ends_within_the_command_timeout",
    "tests/test_iobench.py::test_runtime_and_ramp",
    "tests/test_iobench.py::test_io_uring_runtime_and_ramp",
    "tests/test_iobench.py::test_keep_cache_reads_a_cached_file_from_memory",
    "tests/test_hog.py::test_run_barrier_holds_each_round_until_every_hog_has_written_it",
    "tests/test_hog.py::test_run_barrier_gives_up_on_a_hog_that_never_comes",
    "tests/test_hog.py::test_victim_ready_go_pageout_retouch_verifies_clean",
    "tests/test_hog.py::test_victim_go_signal",
    "tests/test_simdisk.py::test_hdd_random_read_matches_the_model",
    "tests/test_simdisk.py::test_hdd_sequential_read_runs_at_the_zoned_rate",
    "tests/test_simdisk.py::test_tiered_cache_warm_cold_and_data_in_every_state",
    "tests/test_simdisk.py::test_readyboost_random_reads_hit_the_flash_sequential_reads_bail",
    "tests/test_simdisk.py::test_readyboost_copy_queue_bounds_what_a_write_stream_caches",
    "tests/test_simdisk.py::test_a_late_reply_is_put_down_to_the_backing_io_or_the_wakeup",
    "tests/test_counters.py::test_sampler_runs_at_its_rate_and_measures_its_cost",
    "tests/test_superfetch.py::test_the_agent_stops_within_one_poll_interval_when_a_hog_allocates",
    "tests/test_superfetch.py::test_a_swap_out_or_in_outside_the_agents_group_neither_stops_nor_holds_its_reads",
]


def start_hog() -> subprocess.Popen[bytes]:
    cpu = max(os.sched_getaffinity(0))
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    os.sched_setaffinity(hog.pid, {cpu})
    return hog


def outcomes(junit: Path) -> dict[str, str]:
    """test id -> passed, failed or skipped, from one run's JUnit XML."""
    out = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        if case.find("failure") is not None or case.find("error") is not None:
            out[name] = "failed"
        elif case.find("skipped") is not None:
            out[name] = "skipped"
        else:
            out[name] = "passed"
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=int(os.environ.get("FLAKY_RUNS", "20")))
    args, pytest_args = parser.parse_known_args()
    if args.runs < 1:
        print(f"check_flaky.py: --runs must be at least 1, not {args.runs}", file=sys.stderr)
        return 2

    def stop(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    failed: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    ran: set[str] = set()   # the tests pytest ran: TESTS, or those PYTEST_ARGS (-k ...) select
    failed_runs = 0
    t0 = time.monotonic()
    hog = start_hog()
    try:
        with tempfile.TemporaryDirectory(prefix="check-flaky-") as tmp:
            for run in range(1, args.runs + 1):
                junit = Path(tmp) / f"run{run}.xml"
                done = subprocess.run([str(PYTEST), "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
                                       *pytest_args, *TESTS], cwd=REPO, capture_output=True, text=True)
                seen = outcomes(junit) if junit.exists() else {}
                ran.update(seen)
                bad = sorted(t for t, o in seen.items() if o == "failed")
                failed.update(bad)
                skipped.update(t for t, o in seen.items() if o == "skipped")
                if done.returncode not in (0, 5) or bad or not seen:
                    failed_runs += 1
                if done.returncode not in (0, 1, 5) or not seen:   # pytest itself did not finish
                    print(done.stdout[-3000:] + done.stderr[-3000:])
                print(f"check-flaky: run {run} of {args.runs}: {len(bad)} of {len(seen)} tests failed"
                      + "".join(f"\n  FAILED {t}" for t in bad), flush=True)
                if bad:
                    print("\n".join(ln for ln in done.stdout.splitlines() if ln.startswith("E ")
                                    or ln.startswith("FAILED"))[-4000:], flush=True)
    finally:
        hog.kill()
        hog.wait()
    minutes = (time.monotonic() - t0) / 60
    print(f"check-flaky: {len(ran)} timing-sensitive tests, {args.runs} runs beside a CPU hog, "
          f"{minutes:.1f} min: {sum(failed.values())} failed in {failed_runs} of {args.runs} runs")
    for test, n in sorted(failed.items()):
        print(f"  failed {n} of {args.runs}: {test}")
    for test, n in sorted(skipped.items()):
        print(f"  skipped {n} of {args.runs}: {test}")
    return 1 if failed_runs else 0


if __name__ == "__main__":
    sys.exit(main())
