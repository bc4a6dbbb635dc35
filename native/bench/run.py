"""`make bench`: the native tools against their peers, measured side by side in one run.

Each native/bench/bench_<tool>.py has `cases(scratch: Path) -> list[Case]`; every case runs
its two commands interleaved A B, B A ... `rounds` times and reports the median of the per-round
ratios ours/peer with its order-statistic CI, printed with the coverage it has at that number of
rounds (and the ratio of medians) and the target it
must meet: the median is judged, and the CI says whether this run could resolve the target (a
fio-against-itself case, where there is one, shows the same). A case with a target runs at least
the 6 rounds whose median can have an interval covering LEVEL at all (Case refuses fewer); a context case
of fewer rounds prints how much its [min, max] covers. Prints a table and
writes results/bench/native.json (atomically).
Benchmarks print figures; they are not timed tests (a shared machine is too noisy for that).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "src"))

from pagelab.core.records import write_json_atomic  # noqa: E402
from pagelab.core.stats import median_ci, median_rank  # noqa: E402
from pagelab.run.tools import pinned_to_one_cpu  # noqa: E402
from pagelab.system import counters, state  # noqa: E402

LEVEL = 0.95  # the confidence of every printed interval


def min_rounds(level: float = LEVEL) -> int:
    """The fewest rounds whose median has an order-statistic interval covering `level`."""
    return next(n for n in range(2, 64) if median_rank(n, level)[1] >= level)


class SkipCase(Exception):
    """Raised by a case's `within` when this machine cannot run it; the reason is reported."""


@contextmanager
def busy_loops(n: int) -> Iterator[None]:
    """n shell busy loops for the duration; they inherit this process's CPU pinning and are
    killed by their pids afterwards."""
    loops = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(n)]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait(timeout=15)


@contextmanager
def knobs_held(values: dict[str, int | str], purpose: str) -> Iterator[None]:
    """pagelab.system.state knobs held at `values` for a case, in one session (journaled, given
    back afterwards, also after a crash); where we are not root or the kernel refuses one, the
    case is skipped with the reason ("needs root to <purpose>")."""
    if os.geteuid() != 0:
        raise SkipCase(f"needs root to {purpose} ({', '.join(values)})")
    with state.session() as st:
        try:
            for name, value in values.items():
                st.set_knob(name, value)
        except state.StateError as exc:
            raise SkipCase(f"cannot {purpose}: {exc}") from exc
        yield


# Pages free for less than this are not reported to the hypervisor while freed_memory_kept
# holds: longer than any case that uses it (under a minute); the module refuses 600,000 and up.
KEEP_FREED_MS = 300_000
# The module holds back at most page_reporting.max_waiting_mib of those pages (1024 by default)
# and reports the rest: a case that frees 1 GiB, then maps 1 GiB that the allocator takes from
# elsewhere and frees it, goes over (512 MiB reported inside the hold in 3 of 39 runs of
# test_bench's hold test here; 2 GiB freed at once inside a hold: 1 GiB reported). The hold
# raises the cap to all of RAM, so that nothing freed during the case is reported.
# The hold takes effect for pages freed after it: pages freed just before it (the previous case's,
# a previous test's) are still reported, in the worker's next passes (1.5 GiB freed 0.03 s before
# the hold here: 768 MiB reported 2.0-4.6 s into it, nothing after). So the hold waits until
# nothing has been reported for REPORTING_QUIET_S, two of the worker's 2 s delays
# (mm/page_reporting.c, PAGE_REPORTING_DELAY), for at most REPORTING_DRAIN_S.
REPORTING_QUIET_S = 4.0
REPORTING_DRAIN_S = 30.0


def reporting_drained(quiet_s: float = REPORTING_QUIET_S, limit_s: float = REPORTING_DRAIN_S) -> float:
    """Wait until free page reporting has reported nothing for `quiet_s` (the pages freed before
    a hold handed back), at most `limit_s`; returns the seconds waited. A backlog still draining
    after `limit_s` skips the case (SkipCase): its figures would include the host's faults."""
    t0 = last_change = time.monotonic()
    seen = counters.page_reporting()["reported_kib"]
    while (now := time.monotonic()) - last_change < quiet_s:
        if now - t0 > limit_s:
            raise SkipCase(f"free page reporting was still handing back memory freed before the hold "
                           f"after {limit_s:.0f} s")
        time.sleep(0.1)
        if (kib := counters.page_reporting()["reported_kib"]) != seen:
            seen, last_change = kib, time.monotonic()
    return time.monotonic() - t0


@contextmanager
def freed_memory_kept() -> Iterator[None]:
    """Free page reporting held off for a case: no page freed during the case goes back to the
    hypervisor, whose taking it back would make whichever side next gets it wait for the host
    to fault it in again (bench_hog's docstring has the figures). Where the VM has no such
    tunable there is nothing to hold; where it has one but we are not root, the case is skipped,
    as its figures would be the host's."""
    if not state.KNOBS["page_reporting.min_free_ms"].exists():
        yield
        return
    held: dict[str, int | str] = {"page_reporting.min_free_ms": KEEP_FREED_MS}
    if state.KNOBS["page_reporting.max_waiting_mib"].exists():
        held["page_reporting.max_waiting_mib"] = int(counters.meminfo()["MemTotal"]) >> 20
    with knobs_held(held, "hold free page reporting off"):
        reporting_drained()
        yield


@dataclass
class Case:
    """One comparison: `ours()` and `peer()` each return one measurement (higher_is_better
    says which way is good); the ratio ours/peer must satisfy `target` (e.g. ">= 0.97");
    a case with no target is shown for context and judged by nothing."""

    name: str
    metric: str
    ours: Callable[[], float]
    peer: Callable[[], float]
    peer_name: str
    target: str = ""
    rounds: int = 6       # the fewest a judged case may have (min_rounds())
    setup: Callable[[], None] | None = None
    warmup: bool = False  # run each side once, unmeasured, before the rounds
    pin: bool = False     # run both sides on one CPU (pagelab.run.tools.pinned_to_one_cpu)
    # what the case runs inside (e.g. huge pages reserved through pagelab.system.state); raises
    # SkipCase where the machine cannot provide it
    within: Callable[[], AbstractContextManager[object]] | None = None
    results: dict[str, list[float]] = field(default_factory=lambda: {"ours": [], "peer": []})

    def __post_init__(self) -> None:
        # A judged case's interval must cover: the order-statistic CI of a median of n rounds
        # covers at most 1 - 2 / 2^n (0.9375 at n = 5, 0.75 at n = 3), so a judged case needs
        # the rounds that reach LEVEL at all (6 for LEVEL 0.95).
        if self.target and self.rounds < (least := min_rounds()):
            raise ValueError(f"bench case {self.name!r}: {self.rounds} rounds cannot give a "
                             f"{LEVEL:.0%} interval for its median; a case with a target needs "
                             f"at least {least}")

    def run(self) -> dict:
        """The case's row; a skipped case's row has its reason and no ratio."""
        try:
            with pinned_to_one_cpu(self.pin), (self.within() if self.within else nullcontext()):
                return self._run()
        except SkipCase as skip:
            return {"case": self.name, "metric": self.metric, "peer_name": self.peer_name,
                    "target": self.target, "met": None, "skipped": str(skip)}

    def _run(self) -> dict:
        if self.setup:
            self.setup()
        if self.warmup:
            self.ours(), self.peer()
        for i in range(self.rounds):
            first, second = ("ours", "peer") if i % 2 == 0 else ("peer", "ours")
            for side in (first, second):
                self.results[side].append(float(getattr(self, side)()))
        ours, peer = (statistics.median(self.results[k]) for k in ("ours", "peer"))
        # Each round runs ours and the peer back to back, so a drift of the machine (a virtual
        # disk's speed moves in steps of 10-20 % within seconds) cancels in the round's ratio;
        # the order alternates (A B, B A, ...), so neither side always runs after the other
        # (a host's IO budget, spent by the first, would otherwise count against the second);
        # the median of those per-round ratios is the figure judged against the target.
        pairs = [a / b for a, b in zip(self.results["ours"], self.results["peer"], strict=True) if b]
        ci = median_ci(pairs, LEVEL) if pairs else None
        ratio = ci.value if ci else float("nan")
        ok = resolved = None
        if self.target:
            op, bound = self.target.split()
            ok = ratio >= float(bound) if op == ">=" else ratio <= float(bound)
            # the verdict table's rule: a CI that straddles the target leaves it to this run's noise
            resolved = bool(ci) and not (ci.ci_low < float(bound) < ci.ci_high)
        return {"case": self.name, "metric": self.metric, "ours": ours, "peer": peer,
                "peer_name": self.peer_name, "ratio": ratio,
                "ratio_ci": [ci.ci_low, ci.ci_high] if ci else None,
                "ci_coverage": ci.coverage if ci else None,
                "ratio_of_medians": ours / peer if peer else None,
                "target": self.target, "met": ok, "resolved": resolved,
                "samples": self.results}


VERDICT = {True: "met", False: "NOT MET", None: "(shown, no target)"}


def verdict(row: dict) -> str:
    """met / NOT MET by the median, and whether its CI straddles the target."""
    text = VERDICT[row["met"]]
    return text + (" (CI straddles the target)" if row["met"] is not None and not row.get("resolved") else "")


def summary(rows: list[dict]) -> str:
    """"N of M targets met", how many of those judgements this run's noise leaves open (the CI
    straddles the target), how many misses are resolved (the whole CI on the wrong side), and
    how many cases were skipped."""
    judged = [r for r in rows if r["met"] is not None]
    open_ = [r for r in judged if not r.get("resolved")]
    resolved_misses = [r for r in judged if r.get("resolved") and not r["met"]]
    skipped = [r for r in rows if "skipped" in r]
    return (f"{sum(r['met'] for r in judged)} of {len(judged)} targets met"
            + (f"; {len(open_)} of the {len(judged)} with a CI that straddles its target" if open_ else "")
            + f"; {len(resolved_misses)} missed with the whole CI past the target"
            + (f" ({len(skipped)} cases skipped)" if skipped else ""))


def interval(row: dict) -> str:
    """The ratio's CI with the coverage it has (below LEVEL only for a context case of
    few rounds)."""
    ci, cov = row.get("ratio_ci"), row.get("ci_coverage")
    if not ci:
        return ""
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]" + (f" (covers {cov:.2%})" if cov is not None else "")


def load_modules(only: list[str]) -> list:
    mods = []
    for path in sorted(Path(__file__).parent.glob("bench_*.py")):
        name = path.stem.removeprefix("bench_")
        if only and name not in only:
            continue
        spec = importlib.util.spec_from_file_location(path.stem, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        mods.append(mod)
    return mods


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tools", nargs="*", help="only these (bench_<tool>.py)")
    ap.add_argument("--out", default=str(REPO / "results" / "bench" / "native.json"))
    args = ap.parse_args(argv)
    scratch = REPO / "scratch" / f"bench-{uuid.uuid4().hex[:8]}"
    scratch.mkdir(parents=True)
    rows = []
    try:
        for mod in load_modules(args.tools):
            for case in mod.cases(scratch):
                row = case.run()
                rows.append(row)
                if "skipped" in row:
                    print(f"{row['case']:<44} skipped: {row['skipped']}", flush=True)
                    continue
                print(f"{row['case']:<44} {row['metric']:<16} ours {row['ours']:>12.4g}  "
                      f"{row['peer_name']} {row['peer']:>12.4g}  ratio {row['ratio']:.3f} {interval(row)}  "
                      f"target {row['target'] or '-':<7} {verdict(row)}", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    write_json_atomic(args.out, rows)
    print(summary(rows) + f"; table in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
