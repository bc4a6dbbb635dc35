"""Sentences that compare results, written from the data (never typed in a section): the
paper lint rejects a comparative word typed inside a results block, so every such word comes
from here, through a notebook's macros."""

from __future__ import annotations

from pagelab.core.latex import fmt
from pagelab.core.stats import Estimate


def ratio_sentence(est: Estimate, subject: str, other: str, above: str, below: str, who: str,
                   compact: bool = False) -> str:
    """A comparison written from a paired ratio a/b and its CI, never typed: "<subject> 0.31
    times <other> (median of n paired rounds, 95 % CI 0.25--0.40): <who> <above|below>", or,
    when the interval contains 1, that no difference is shown. `above` is the word for a
    ratio above 1 (e.g. "slower" for a time, "faster" for a rate). `compact` leaves out how the
    interval was made ("(95 % CI 0.25--0.40)"), for a section that says it once for all its
    comparisons."""
    ci = f"median of {est.n} paired rounds, 95\\,\\% CI {fmt(est.ci_low)}--{fmt(est.ci_high)}"
    if compact:
        ci = f"95\\,\\% CI {fmt(est.ci_low)}--{fmt(est.ci_high)}"
    elif est.coverage == est.coverage and est.coverage < 0.95:
        ci += f", exact coverage {100 * est.coverage:.1f}\\,\\%"
    if est.ci_low > 1:
        tail = f"{who} {above}"
    elif est.ci_high < 1:
        tail = f"{who} {below}"
    else:
        tail = "the interval contains 1, so no difference is shown"
    return f"{subject} {fmt(est.value)} times {other} ({ci}): {tail}"
