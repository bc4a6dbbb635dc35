"""The verdict stopping rule (pagelab.run.sequential): its looks and levels, its intervals and
their test against a window, the claims it holds arms for, each experiment's measures against
the recorded measurements, and the trial loop stopping a judged arm on its verdict."""

import json
import math
from pathlib import Path

import pytest

from pagelab.claims import judge, registry
from pagelab.core.stats import censored_median_ci
from pagelab.experiments import harness
from pagelab.run import sequential, trials

RECORDED = Path(__file__).resolve().parents[1] / "data" / "recorded"
WITH_MEASURES = ["pagein", "crystalmark", "standby", "compression", "readyboost"]


def test_looks_and_the_interim_level_come_from_the_schema():
    r = sequential.rule({"n_min": 10, "n_max": 15, "ci_pct": 5})
    assert (r.look_every, r.margin_pct, r.level()) == (5, 10.0, 0.998)  # the schema's defaults
    assert r.looks() == [10, 15]
    r = sequential.rule({"n_min": 10, "n_max": 20, "ci_pct": 5, "verdict_look_every": 4, "verdict_interim_level": 0.99})
    assert r.looks() == [10, 14, 18, 20] and r.level() == 0.99
    assert sequential.rule({"n_min": 5, "n_max": 5, "ci_pct": 5}).looks() == [5]
    # 0.998 is the strictest level 10 values reach: [min, max] covers 1 - 2 / 2**10
    assert sequential.interval([float(v) for v in range(10)], 0.998) == (0.0, 9.0)
    assert sequential.interval([float(v) for v in range(9)], 0.998) is None


def test_interval_takes_the_ranks_of_the_level_or_none():
    x = [float(v) for v in range(1, 16)]  # n = 15 at 0.98333: k = 3 (0.9926), k = 4 only 0.9648
    assert sequential.interval(x, 1 - 0.05 / 3) == (3.0, 13.0)
    assert sequential.interval(x[:10], 0.975) == (2.0, 9.0)  # k = 2 covers 0.9785
    assert sequential.interval(x[:5], 0.95) is None  # [min, max] covers 0.9375 only
    assert sequential.interval([*x[:10], math.nan], 0.975) == (2.0, 9.0)  # NaN has no place
    assert sequential.interval([-math.inf] * 3 + x[:7], 0.975)[0] == -math.inf


@pytest.mark.parametrize(("lo", "hi", "want"), [
    (0.9, 1.1, "inside"), (0.7, 1.1, None), (0.5, 0.71, "outside"), (0.5, 0.75, None),
    (1.38, 2.0, "outside"), (1.3, 2.0, None), (1.0, 1.25, "inside")])
def test_settled_inside_or_outside_by_the_margin(lo, hi, want):
    assert sequential.settled(lo, hi, (0.8, 1.25), 10) == want


def test_an_infinite_edge_cannot_be_passed():
    assert sequential.settled(0.1, 0.2, (-math.inf, 0.95), 10) == "inside"
    assert sequential.settled(2.0, 3.0, (-math.inf, 0.95), 10) == "outside"
    assert sequential.settled(-math.inf, -5.0, (1.25, math.inf), 10) == "outside"
    assert sequential.settled(0.5, 2.0, (1.25, math.inf), 10) is None


def test_judges_hold_the_claims_judged_at_the_profile_with_measures():
    table = registry.load_claims()
    cfg = json.loads((RECORDED / "epyc-2c-linux6.18-virtio" / "full" / "readyboost" / "config.json").read_text())
    held, unheld = sequential.judges("readyboost", table, harness.descriptor("readyboost").measures(cfg), "full")
    ids = {j.claim for j in held}
    assert {"RBR2", "RBR2S", "RBR3", "RBR3S", "RBO", "RBOS"} == ids
    assert unheld == ["RBX"]  # its interaction has no measure: its arms stop on width
    assert not ids & {"RB1", "RB2", "RB3"}  # judged only at the seed's scale
    rbo = [j for j in held if j.claim == "RBO"]
    assert [j.measure.confs for j in rbo] == [("tier_between", "tier_after"), ("tier_after", "hdd_between")]
    seed, _ = sequential.judges("readyboost", table, harness.descriptor("readyboost").measures(cfg), "seed")
    assert {"RB1", "RB1S", "RB2", "RB3"} <= {j.claim for j in seed}
    held, _ = sequential.judges("standby", table, {"standby.own.trim_only.pswpin_pages": sequential.column("x", "y"),
                                                   "standby.own.flooded.retouch_s_per_2gb":
                                                       sequential.column("x", "y")}, "full")
    assert [j.claim for j in held] == ["SB1"]  # SB2 depends on unnamed hardware: never held


def _recorded_frames():
    for rec in sorted(RECORDED.glob("*/*")):
        for exp in WITH_MEASURES:
            yield rec, exp


@pytest.mark.parametrize(("rec", "exp"), list(_recorded_frames()), ids=lambda v: getattr(v, "name", v))
def test_each_measure_gives_the_recorded_measurement_from_the_recorded_trials(rec, exp):
    """The statistic a claim's arms stop on is the one the analysis reports: the median of each
    measure's values over the recorded counted trials is the recorded measurement's value."""
    ms = judge.load_recorded()[f"{rec.parent.name}/{rec.name}"]["measurements"]
    cfg = harness.read_json(rec / exp, "config.json")  # a recording's old names: today's
    desc = harness.descriptor(exp)
    keys = sorted({k for c in desc.configurations(cfg) for k in c})
    frame, _ = harness.load(rec / exp)
    frame = frame.assign(conf=[desc.conf_name({k: r[k] for k in keys}) for _, r in frame.iterrows()])
    checked = 0
    for key, m in desc.measures(cfg).items():
        if key not in ms:
            continue
        got, want = censored_median_ci(m.values(frame)).value, ms[key]["value"]
        assert math.isclose(got, want, rel_tol=1e-5) or (got == -math.inf and want == 0.0), (key, got, want)
        checked += 1
    assert checked


CONFS = [{"arm": "inside"}, {"arm": "outside"}, {"arm": "edge"}, {"arm": "free"}]
CENTRES = {"inside": 1.0, "outside": 3.0, "edge": 1.25, "free": 1.0}


def _run(tmp_path, judged=True):
    import random

    gen = random.Random(7)

    def run_one(t):
        return {"value": CENTRES[t.params["arm"]] * (1 + 0.05 * gen.gauss(0, 1))}

    measures = {f"toy.{a}": sequential.column(a, "value") for a in ("inside", "outside", "edge")}
    js = [sequential.Judge(f"T{i}", k, m, (0.8, 1.25)) for i, (k, m) in enumerate(measures.items())]
    rule = sequential.rule({"n_min": 10, "n_max": 20, "ci_pct": 0.1}, js if judged else [])
    return trials.run_adaptive("toy", CONFS, lambda c: c["arm"], run_one, lambda r: r["value"], tmp_path,
                               {"config_hash": "h"}, seed=3, n_min=10, n_max=20, ci_pct=0.1,
                               log=lambda s: None, verdicts=rule)


def test_a_judged_arm_stops_on_its_verdict_at_a_look_inside_or_outside(tmp_path):
    _, stops = _run(tmp_path)
    by = {s.config: (s.reason, s.n) for s in stops}
    assert by["inside"] == ("verdict", 10) and by["outside"] == ("verdict", 10)
    assert by["edge"] == ("n_max", 20)  # its interval straddles the edge at every look
    assert by["free"] == ("n_max", 20)  # no claim judges it: width only, and ci_pct is out of reach


def test_without_judges_every_arm_stops_on_width_as_before(tmp_path):
    _, stops = _run(tmp_path, judged=False)
    assert all((s.reason, s.n) == ("n_max", 20) for s in stops)


def test_a_step_censored_in_half_or_more_of_n_max_is_settled_for_good():
    """judge.is_censored makes a claim "not measurable here" when its step is censored in half or
    more of its trials: once that holds for n_max trials already, no further trial can change
    it."""
    inf = math.inf
    assert sequential.censored_for_good([inf] * 10 + [1.0] * 5, 20)        # 10 of at most 20: half
    assert not sequential.censored_for_good([inf] * 9 + [1.0] * 6, 20)     # 9 of 20: 11 may be measured
    assert sequential.censored_for_good([inf] * 8 + [1.0] * 4, 15)         # 8 of at most 15
    assert not sequential.censored_for_good([inf] * 7 + [1.0] * 7, 15)
    assert sequential.censored_for_good([-inf, inf, math.nan] * 3 + [-inf, 2.0], 15)  # NaN: a censored pair
    assert not sequential.censored_for_good([1.0] * 15, 15)
    assert judge.is_censored({"censored": 10, "n": 20})  # the verdict the stop anticipates


def test_an_arm_censored_for_good_stops_at_the_look_where_it_is(tmp_path):
    """An arm whose values are censored both ways (met at the start, or never within the watch)
    has the interval [-inf, inf] at every look: on the interval alone it runs to n_max (20); it
    stops at the first look (10), where 10 of at most 20 are censored: its median is censored
    whatever follows."""
    import random

    gen = random.Random(11)

    def run_one(t):  # the run's metric (`wide`) never meets a 0.1 % width
        return {"value": -math.inf if gen.random() < 0.5 else math.inf, "wide": gen.uniform(1.0, 100.0)}

    conf = [{"arm": "censored"}]
    m = {"toy.censored": sequential.column("censored", "value")}
    rule = sequential.rule({"n_min": 10, "n_max": 20, "ci_pct": 0.1},
                           [sequential.Judge("C", k, v, (0.8, 1.25)) for k, v in m.items()])
    _, stops = trials.run_adaptive("toy", conf, lambda c: c["arm"], run_one, lambda r: r["wide"], tmp_path,
                                   {"config_hash": "h"}, seed=3, n_min=10, n_max=20, ci_pct=0.1,
                                   log=lambda s: None, verdicts=rule)
    assert [(s.reason, s.n) for s in stops] == [("verdict", 10)]


def test_an_arm_whose_metric_is_censored_for_good_stops_on_width_too(tmp_path):
    """No claim judges these arms. The metric of `always` is censored (met at the start) in every
    trial: its median is censored whatever follows once 10 of at most 20 are, so it stops at the
    first look, 10 ("censored"), not at n_max. `half` is censored in every other trial: its tenth
    censored trial is its 19th, and then the median of any 20 is censored. `third`, censored in
    every third trial (7 of 20), may still have a measured median, so it runs to n_max."""
    def run_one(t):
        every = {"always": 1, "half": 2, "third": 3}[t.params["arm"]]
        censored = t.repetition % every == 0
        return {"value": -math.inf if censored else 1.0 + 0.5 * (t.repetition % 5)}

    conf = [{"arm": "always"}, {"arm": "half"}, {"arm": "third"}]
    _, stops = trials.run_adaptive("toy", conf, lambda c: c["arm"], run_one, lambda r: r["value"], tmp_path,
                                   {"config_hash": "h"}, seed=3, n_min=10, n_max=20, ci_pct=0.1,
                                   log=lambda s: None)
    by = {s.config: (s.reason, s.n, s.median) for s in stops}
    assert by["always"] == ("censored", 10, None)  # stopping.json holds no -inf
    assert by["half"][:2] == ("censored", 19)
    assert by["third"][:2] == ("n_max", 20)


def test_readyboosts_metric_codes_a_recovery_met_at_the_start_or_never():
    """The metric adaptive repetitions watch is the recovery coded as the claims read it: 0 s
    where something was pushed out is "at the start" (-inf), none within the watch is +inf, and
    0 s where the sizes pushed nothing out is a measured zero (by construction)."""
    from pagelab.experiments import payoff
    from pagelab.experiments import readyboost as rb

    metric = rb.EXPERIMENT.metric
    assert metric({"recovery_s": 0.0, "intended_share": 0.9}) == -math.inf
    assert metric({"recovery_s": 0.0}) == -math.inf
    assert metric({"recovery_s": None, "intended_share": 0.9}) == math.inf
    assert metric({"recovery_s": 0.0, "intended_share": 0.0}) == 0.0
    assert metric({"recovery_s": 2.5, "intended_share": 0.9}) == 2.5
    assert payoff.EXPERIMENT.metric({payoff.METRIC: 0.0, "intended_share": 0.9}) == -math.inf


def test_the_recorded_full_readyboost_run_stopped_its_bare_between_arm_where_the_rule_says():
    """The recorded full run (under today's rule), replayed in its order: hdd_between's recovery
    was met at the start (censored) in 8 of its 14 counted trials. At the first look (10) its
    claims' verdicts were not yet known, and through 13 trials at most 7 were censored, fewer
    than half of n_max (15); the 14th made 8, so the median is censored whatever a 15th gives, and
    the run stopped there ('censored', the recording's stopping.json)."""
    import gzip

    from pagelab.experiments import readyboost as rb

    d = next(p for p in sorted(RECORDED.glob("*/full/readyboost")) if (p / "trials.jsonl.gz").is_file())
    cfg = json.loads((d / "config.json").read_text())
    recs = sorted((json.loads(line) for line in gzip.open(d / "trials.jsonl.gz", "rt")), key=lambda r: r["order"])
    recs = [r for r in recs if r.get("valid") and not r.get("warmup")]
    held, _ = sequential.judges("readyboost", registry.load_claims(), rb.measures(cfg), cfg["profile"])
    rule = sequential.rule(cfg["repetitions"], held)
    recorded = {s["config"]: s for s in json.loads((d / "stopping.json").read_text())}
    assert (recorded["hdd_between"]["n"], recorded["hdd_between"]["reason"], rule.n_max) == (14, "censored", 15)
    metric = rb.coded_metric("recovery_s")
    mine = [r for r in recs if r["params"]["arm"] == "hdd_between"]
    values = [metric(r["result"]) for r in mine]
    assert len(values) == 14 and sum(not math.isfinite(v) for v in values) == 8
    assert not any(sequential.censored_for_good(values[:n], rule.n_max) for n in range(rule.n_min, 14))
    assert sequential.censored_for_good(values, rule.n_max)
    upto = recs[:recs.index(mine[rule.n_min - 1]) + 1]
    assert not sequential.verdict_known("hdd_between", rule.n_min, rule, sequential.frame(upto, lambda p: p["arm"]))
