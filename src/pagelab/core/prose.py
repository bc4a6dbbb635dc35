"""Sentences that compare results, written from the data (never typed in a section): the
paper lint rejects a comparative word typed inside a results block, so every such word comes
from here, through a notebook's macros."""

from __future__ import annotations

import math

from pagelab.core.latex import fmt
from pagelab.core.stats import Estimate, coverage_label, median_censored


def listed(items: list[str]) -> str:
    """Items joined as English: "a, b and c", or "a; b; and c" where the items hold commas (the
    last item's own comma would otherwise read as part of the one before)."""
    if len(items) == 1:
        return items[0]
    if any("," in i for i in items):
        return "; ".join(items[:-1]) + "; and " + items[-1]
    return ", ".join(items[:-1]) + " and " + items[-1]


def bound(x: float) -> str:
    """An interval's edge: a censored edge (stats.censored_median_ci) as the least a ratio can
    be, 0, or as unbounded, $\\infty$."""
    if x == -math.inf:
        return "0"
    return "$\\infty$" if x == math.inf else fmt(x)


def ratio_sentence(est: Estimate, subject: str, other: str, above: str, below: str, who: str,
                   compact: bool = False) -> str:
    """A comparison written from a paired ratio a/b and its CI, never typed: "<subject> 0.31
    times <other> (median of n paired rounds, 93.75 % CI 0.25--0.40): <who> <above|below>", or,
    when the interval contains 1, that no difference is shown. The interval is named by the
    coverage it has at its n (stats.coverage_label of the estimate's own coverage: 93.75 % at
    n = 5, never a typed nominal level). `above` is the word for a ratio above 1 (e.g. "slower" for a
    time, "faster" for a rate). `compact` leaves out how the interval was made ("(93.75 % CI
    0.25--0.40)"), for a section that says it once for all its comparisons."""
    ci = f"{coverage_label(est.coverage, latex=True)} CI {bound(est.ci_low)}--{bound(est.ci_high)}"
    if not compact:
        ci = f"median of {est.n} paired rounds, " + ci
    if est.ci_low > 1:
        tail = f"{who} {above}"
    elif est.ci_high < 1:
        tail = f"{who} {below}"
    else:
        tail = "the interval contains 1, so no difference is shown"
    return f"{subject} {fmt(est.value)} times {other} ({ci}): {tail}"


def finding(est: Estimate, subject: str, above: str, below: str, than: str, unchanged: str = "") -> str:
    """One finding in words, its numbers left to the table that holds them (comparison_rows):
    "<subject> <above|below> <than>" where the paired ratio's interval lies wholly above or below
    1, "<subject> not shown to be <above> or <below> <than>" (or `unchanged`, where given) where
    it contains 1. E.g. "behind the tier, recovery was" + "faster" + "than on the bare disk"."""
    if est.ci_low > 1:
        return f"{subject} {above} {than}".rstrip()
    if est.ci_high < 1:
        return f"{subject} {below} {than}".rstrip()
    return unchanged or f"{subject} not shown to be {above} or {below} {than}".rstrip()


def comparison_rows(rows: list[tuple[str, Estimate | None, str]]) -> str:
    """A comparison table's body: per row its label, the median of the paired ratios, its
    interval with the coverage it has at its n, and the rounds behind it; where half or more of
    the rounds are censored, "not measurable" and how many, never a median. The third item of
    a row is what a censored row says (e.g. "met at the hogs' end"), or ""."""
    out = []
    for label, est, censored in rows:
        if est is None:
            out.append(f"{label} & \\multicolumn{{3}}{{l}}{{no round had both arms}} \\\\")
        elif median_censored(est.censored, est.n):
            why = f": {censored}" if censored else ""
            out.append(f"{label} & \\multicolumn{{2}}{{l}}{{not measurable ({est.censored} of {est.n} "
                       f"censored{why})}} & {est.n} \\\\")
        else:
            ci = f"{bound(est.ci_low)}--{bound(est.ci_high)} ({coverage_label(est.coverage, latex=True)})"
            cens = f", {est.censored} cens." if est.censored else ""
            out.append(f"{label} & {fmt(est.value)} & {ci} & {est.n}{cens} \\\\")
    return "\n".join(out)
