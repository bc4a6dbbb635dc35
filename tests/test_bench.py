"""make bench's harness (native/bench/run.py): a case's ratio is the median of its per-round
ours/peer ratios, judged against its target; a case the machine cannot run is reported as
skipped with its reason, not as a failure or a figure. (The figures themselves are `make bench`.)"""

from __future__ import annotations

import importlib.util
import json
import sys
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def load_run():
    """run.py as the bench modules import it (`from run import Case`)."""
    spec = importlib.util.spec_from_file_location("run", REPO / "native" / "bench" / "run.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["run"] = mod   # dataclasses look their module up by name
    spec.loader.exec_module(mod)
    return mod


def test_ratio_is_the_median_of_per_round_ratios_and_judged() -> None:
    run = load_run()
    peer = iter([10.0, 10.0, 20.0, 20.0, 10.0])
    ours = iter([9.0, 11.0, 19.0, 18.0, 9.5])   # ratios 0.9, 1.1, 0.95, 0.9, 0.95
    row = run.Case(name="c", metric="IOPS", ours=lambda: next(ours), peer=lambda: next(peer),
                   peer_name="p", target=">= 0.97", rounds=5).run()
    assert row["ratio"] == 0.95 and row["met"] is False
    assert row["samples"]["ours"] == [9.0, 11.0, 19.0, 18.0, 9.5]
    assert row["ratio_ci"][0] <= 0.95 <= row["ratio_ci"][1]


def test_within_wraps_the_rounds_and_a_skip_is_reported_with_its_reason() -> None:
    run = load_run()
    entered: list[str] = []

    @contextmanager
    def reserved():
        entered.append("in")
        yield
        entered.append("out")

    row = run.Case(name="ok", metric="m", ours=lambda: 2.0, peer=lambda: 1.0, peer_name="p",
                   target="<= 1.0", rounds=3, within=reserved).run()
    assert entered == ["in", "out"] and row["ratio"] == 2.0 and row["met"] is False

    def unavailable():
        raise run.SkipCase("needs root to reserve huge pages")

    called: list[int] = []
    row = run.Case(name="skip", metric="m", ours=lambda: called.append(1) or 1.0,
                   peer=lambda: 1.0, peer_name="p", target=">= 0.97", within=unavailable).run()
    assert called == [] and row["met"] is None
    assert row["skipped"] == "needs root to reserve huge pages"
    json.dumps(row)  # the row goes into results/bench/native.json
