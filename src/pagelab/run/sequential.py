"""When an arm that a published claim judges has its answer: the verdict stopping rule.

An arm that no claim judges stops on width, as trials.precise_enough says. An arm that claims
judge (`Judge`: a claim's step, the configurations its statistic reads and its window) also
stops at a look once every one of those claims is settled: the interval of the claim's
statistic lies wholly inside its window, or wholly outside it by `verdict_margin_pct` % of the
window's nearer edge. Stopping inside and stopping outside are the same test on the two sides of
the window, so the rule never leans toward a reproduction.

The rule is a group-sequential design with Haybittle-Peto boundaries (Haybittle, Br. J.
Radiol. 44:793-797, 1971; Peto et al., Br. J. Cancer 34:585-612, 1976; Jennison and Turnbull,
Group Sequential Methods with Applications to Clinical Trials, 2000, sec. 2.7): the looks are at
n_min, n_min + verdict_look_every, ... below n_max, and n_max ends every arm. At an interim look
the interval is the median's order-statistic interval (stats.median_rank) at the strict level
`verdict_interim_level`, so an interim stop on an interval that misses the true median is rare
(at most 1 - that level per look) and the interval shown at the stopped n keeps the coverage
its label names, as with no interim look at all; where n values cannot reach that level the look
cannot stop the arm. (Bonferroni's share of 0.05 over the looks, 0.975 at n = 10, is not enough:
with a window's edge on the true median, the simulation shows the interval at n_max then
covering 0.957 to 0.962 where its label says 0.965.) tests/test_coverage.py simulates the
rule on distributions drawn from the recorded trials and checks that the intervals at the
stopped n cover as their labels say.

Where an arm's claim is not one this module can compute mid-run (its experiment's descriptor
names no `measures` for the key), that claim does not hold the arm: it stops on width alone.
Not for: the verdicts themselves (pagelab.claims.judge judges the finished run).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pagelab.claims import judge, registry
from pagelab.core.stats import median_rank

KEYS = ("verdict_look_every", "verdict_margin_pct", "verdict_interim_level")  # the rule's own keys in repetitions


@dataclass(frozen=True)
class Measure:
    """How a claim's statistic is computed from the trials so far: the configurations it reads
    and its values (a median is taken of them: one per trial, or one per paired round) from a
    frame of the counted trials (`frame`: params, result fields, `order`, `conf`)."""
    confs: tuple[str, ...]
    values: Callable[[pd.DataFrame], list[float]]


def column(conf: str, col: str, by: str = "conf", scale: float = 1.0) -> Measure:
    """One configuration's `col` (times `scale`), one value per counted trial."""
    return Measure((conf,), lambda f: [scale * float(v) for v in f.loc[f[by] == conf, col]]
                   if col in f else [])


def paired(a: str, b: str, col: str) -> Measure:
    """Configuration a's `col` over b's, round by round (the k-th counted trial of each in trial
    order, as harness.pairs)."""
    def values(f: pd.DataFrame) -> list[float]:
        if col not in f:
            return []
        xa = f[f["conf"] == a].sort_values("order")[col].astype(float).tolist()
        xb = f[f["conf"] == b].sort_values("order")[col].astype(float).tolist()
        return [x / y if y else math.nan for x, y in zip(xa, xb, strict=False)]
    return Measure((a, b), values)


def within(conf: str, num: str, den: str) -> Measure:
    """Each counted trial's `num` over its own `den` (a ratio measured inside one trial)."""
    def values(f: pd.DataFrame) -> list[float]:
        g = f[f["conf"] == conf]
        return [float(x) / float(y) if float(y) else math.nan for x, y in zip(g[num], g[den], strict=True)] \
            if num in f and den in f else []
    return Measure((conf,), values)


@dataclass(frozen=True)
class Judge:
    """One claim's step that holds its configurations until it is settled."""
    claim: str
    key: str
    measure: Measure
    window: tuple[float, float]


@dataclass(frozen=True)
class Rule:
    """The stopping rule's parameters, from a configuration block's `repetitions`."""
    n_min: int
    n_max: int
    ci_pct: float
    look_every: int
    margin_pct: float
    interim_level: float
    judges: tuple[Judge, ...] = field(default=())

    def looks(self) -> list[int]:
        """The n at which a judged arm's verdict is looked at, n_max last."""
        return sorted({*range(self.n_min, self.n_max, self.look_every), self.n_max})

    def level(self) -> float:
        """An interim look's interval level (Haybittle-Peto: one strict level at every look)."""
        return self.interim_level

    def judges_of(self, conf: str) -> list[Judge]:
        return [j for j in self.judges if conf in j.measure.confs]


def defaults() -> dict[str, Any]:
    """The schema's defaults of the rule's keys (definitions.repetitions)."""
    from pagelab.system.config import load_schema

    props = load_schema()["definitions"]["repetitions"]["properties"]
    return {k: props[k]["default"] for k in KEYS}


def rule(reps: Mapping[str, Any], judges: Iterable[Judge] = ()) -> Rule:
    """The rule of a block's `repetitions` (the schema's defaults for keys it does not set)."""
    d = {**defaults(), **reps}
    return Rule(int(d["n_min"]), int(d["n_max"]), float(d["ci_pct"]), int(d["verdict_look_every"]),
                float(d["verdict_margin_pct"]), float(d["verdict_interim_level"]), tuple(judges))


def interval(values: Iterable[float], level: float) -> tuple[float, float] | None:
    """The median's order-statistic interval [x(k), x(m-k+1)] of the placed values (NaN left
    out; +-inf kept in their place, as stats.censored_median_ci) at `level`; None where even
    [min, max] covers less than `level`."""
    x = np.sort(np.asarray([v for v in values if v == v], dtype=float))
    if x.size < 2:
        return None
    k, cov = median_rank(int(x.size), level)
    if cov < level:
        return None
    return float(x[k - 1]), float(x[x.size - k])


def settled(lo: float, hi: float, window: tuple[float, float], margin_pct: float) -> str | None:
    """"inside" where [lo, hi] lies wholly inside the window, "outside" where it lies wholly
    outside it by margin_pct % of the nearer edge (an infinite edge cannot be passed), else None."""
    lo_w, hi_w = window
    if lo_w <= lo and hi <= hi_w:
        return "inside"
    m = margin_pct / 100.0
    if math.isfinite(lo_w) and hi < lo_w - abs(lo_w) * m:
        return "outside"
    if math.isfinite(hi_w) and lo > hi_w + abs(hi_w) * m:
        return "outside"
    return None


def frame(records: list[dict[str, Any]], name: Callable[[dict[str, Any]], str]) -> pd.DataFrame:
    """The counted records as one row each: params, result fields, `order` and `conf`."""
    rows = [{**r["params"], **(r.get("result") or {}), "order": r["order"], "conf": name(r["params"])}
            for r in records]
    return pd.DataFrame(rows, columns=None if rows else ["order", "conf"])


def censored_for_good(values: list[float], n_max: int) -> bool:
    """Whether a step's values are censored (+-inf: met at the start or never; NaN: a paired
    ratio of two censored trials, as pagelab.claims.judge counts it) in half or more of n_max
    already: then no further trial can make the step measurable, and its claim's verdict is
    "not measurable here" whatever the rest of the run gives (judge.is_censored). A fact of the
    count, not an estimate: stopping on it costs no coverage."""
    return judge.is_censored({"censored": sum(1 for v in values if not math.isfinite(v)), "n": n_max})


def verdict_known(conf: str, n: int, rule_: Rule, counted: pd.DataFrame) -> bool:
    """Whether the judged configuration `conf`, with n counted trials, stops on its verdicts:
    n is an interim look and every claim step that reads it is settled, at the look's level or
    because it is censored for good (censored_for_good)."""
    judges = rule_.judges_of(conf)
    if not judges or n >= rule_.n_max or n not in rule_.looks():
        return False
    for j in judges:
        values = j.measure.values(counted)
        if censored_for_good(values, rule_.n_max):
            continue
        ci = interval(values, rule_.level())
        if ci is None or settled(*ci, j.window, rule_.margin_pct) is None:
            return False
    return True


def judges(experiment: str, claims: pd.DataFrame, measures: Mapping[str, Measure],
           profile: str) -> tuple[list[Judge], list[str]]:
    """The judges of an experiment's claims judged at `profile` (registry.judged_here) whose
    every step has a measure; and the ids of the claims judged here that have none (they hold
    no arm: their arms stop on width)."""
    out, unheld = [], []
    for claim in claims.to_dict("records"):
        if claim["experiment"] != experiment or not registry.judged_here(claim, profile):
            continue
        keys = registry.steps(claim)
        if not all(k in measures for k in keys):
            unheld.append(claim["id"])
            continue
        out += [Judge(claim["id"], k, measures[k], w) for k, w in zip(keys, registry.windows(claim), strict=True)]
    return out, unheld
