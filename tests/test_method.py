"""The paper's method section names the intervals the code computes: order-statistic intervals
of the median (the interval scipy's quantile_test gives, from median_rank) and of per-round ratios, the
trials' range below six, and a percentile bootstrap only for the ratio of two runs' medians (pagelab compare)."""

import re

import numpy as np

from conftest import REPO
from pagelab.core import stats

NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9}


def statistics_paragraph() -> str:
    text = (REPO / "paper/sections/method.tex").read_text()
    m = re.search(r"\\paragraph\{Statistics\.\}(.*?)(?=\\paragraph|\Z)", text, re.S)
    assert m, "method.tex has no Statistics paragraph"
    return " ".join(m.group(1).split())


def sentences(paragraph: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.;])\s+", paragraph) if s]


def test_the_method_names_the_interval_the_code_computes():
    par = statistics_paragraph()
    x = np.arange(1.0, 12.0)
    # the code: medians and paired ratios by order statistics, two-run ratios by percentile bootstrap
    assert stats.median_ci(x).method == "order statistics"
    assert stats.paired_ratio_ci(x, x[::-1]).method.endswith("order statistics")
    assert stats.ratio_ci(x, x, n_resamples=200).method == "percentile"
    # the text: every sentence about a median's interval says order statistics, never bootstrap
    about_medians = [s for s in sentences(par) if "median" in s and "interval" in s and "ratio of the two" not in s]
    assert about_medians and all(re.search(r"order[- ]statistic", s) and "bootstrap" not in s
                                 for s in about_medians), par
    assert "percentile bootstrap" in par and "pagelab compare" in par
    assert "quantile\\_test" in par
    # and where the interval becomes the range: the first n whose order-statistic interval reaches 95 %
    m = re.search(r"below (\w+) trials", par)
    assert m, par
    below = NUMBERS.get(m.group(1), m.group(1))
    assert stats.median_rank(below - 1)[1] < 0.95 <= stats.median_rank(below)[1]
    est = stats.median_ci(x[: below - 1])
    assert (est.ci_low, est.ci_high) == (x[0], x[below - 2])  # the trials' range
    # every coverage the paragraph states at a number of trials is the one the code computes there
    stated = re.findall(r"([\d.]+)\\,\\% at (\w+)(?: trials)?", par)
    assert stated, par
    for pct, n in stated:
        assert stats.coverage_label(stats.median_rank(NUMBERS.get(n, n))[1], latex=True) == f"{pct}\\,\\%", (pct, n)


def test_the_check_fails_on_a_bootstrap_method_paragraph(monkeypatch):
    old = ("\\paragraph{Statistics.} Medians and means carry seeded bootstrap (BCa) 95\\,\\% confidence "
           "intervals; ratios between arms are bootstrapped from both samples.")
    monkeypatch.setattr(__import__(__name__), "statistics_paragraph", lambda: " ".join(old.split()[1:]))
    try:
        test_the_method_names_the_interval_the_code_computes()
    except AssertionError:
        return
    raise AssertionError("a paragraph naming bootstrap intervals of the median passed the check")
