"""The fresh-clone CI runs as data (data/reliability/runs.csv) and `pagelab reliability`, which
renders them: the file is checked line by line, and the summary is computed, never typed. And
`make check-flaky`'s list of timing tests names tests that exist."""

from __future__ import annotations

import importlib.util

import pytest

from pagelab import cli
from pagelab.analysis import reliability
from pagelab.system.config import ConfigError

HEAD = ",".join(reliability.COLUMNS) + "\n"
PASS = "2026-01-02,abc1234,fresh clone,passed,10,0,1,600,100,0,300,1000,\n"
FAIL = "2026-01-01,def5678,project CI,failed,9,1,,610,,,,,test_x timed out\n"


def test_the_repositorys_runs_load_and_render():
    runs = reliability.load()
    assert runs and all(r.result in reliability.RESULTS for r in runs)
    text = reliability.render(runs)
    assert runs[-1].commit in text
    assert text.rstrip().endswith(f"the newest {reliability.streak(runs)} passed in a row") or \
        text.rstrip().endswith("the newest failed")


def test_the_summary_counts_the_newest_passes_in_a_row(tmp_path):
    p = tmp_path / "runs.csv"
    p.write_text(HEAD + FAIL + PASS + PASS.replace("abc1234", "abc1235"))
    runs = reliability.load(p)
    assert reliability.streak(runs) == 2
    text = reliability.render(runs)
    assert "3 runs: 2 passed, 1 failed; the newest 2 passed in a row" in text
    assert "def5678: test_x timed out" in text and "10:00" in text and "100 stops, 0 leaks, 5:00" in text
    p.write_text(HEAD + PASS + FAIL.replace("2026-01-01", "2026-01-03"))
    assert reliability.streak(reliability.load(p)) == 0
    assert reliability.render(reliability.load(p)).rstrip().endswith("the newest failed")


@pytest.mark.parametrize("body, message", [
    (PASS.replace("2026-01-02", "2 Jan"), "line 2: date '2 Jan' is not YYYY-MM-DD"),
    (PASS.replace("abc1234", "HEAD"), "line 2: commit 'HEAD' is not an abbreviated hash"),
    (PASS.replace("fresh clone", "laptop"), "line 2: runner 'laptop'"),
    (PASS.replace("passed,10", "ok,10"), "line 2: result 'ok'"),
    (PASS.replace(",600,", ",ten minutes,"), "line 2: make_test_s 'ten minutes' is not a whole number"),
    (FAIL.replace("test_x timed out", ""), "line 2: a failed run needs a note"),
    (PASS + FAIL, "line 3: date 2026-01-01 before the line above's"),
    (PASS.replace(",\n", ",,extra\n"), "line 2: 13 fields expected"),
])
def test_a_bad_line_is_refused_naming_it(tmp_path, body, message):
    p = tmp_path / "runs.csv"
    p.write_text(HEAD + body)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("'", "'")):
        reliability.load(p)


def test_the_command_prints_the_table_and_refuses_a_bad_file_with_exit_2(tmp_path, capsys):
    p = tmp_path / "runs.csv"
    p.write_text(HEAD + PASS)
    assert cli.main(["reliability", "--runs", str(p)]) == 0
    assert "1 runs: 1 passed, 0 failed; the newest 1 passed in a row" in capsys.readouterr().out
    p.write_text("date,commit\n")
    assert cli.main(["reliability", "--runs", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"pagelab reliability: {p}: the header must be" in err


def test_every_test_make_check_flaky_repeats_exists():
    """workflow/scripts/check_flaky.py's TESTS, collected by pytest: each id once, none missing
    (a renamed test would otherwise drop out of the timing check unnoticed)."""
    from conftest import REPO, collected

    spec = importlib.util.spec_from_file_location("check_flaky", REPO / "workflow/scripts/check_flaky.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert len(set(mod.TESTS)) == len(mod.TESTS) and collected(*mod.TESTS) == set(mod.TESTS)
