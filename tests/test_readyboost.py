"""readyboost's validity and analysis on hand-made trials whose answers are known: what makes a
trial invalid, paired ratios round by round, and sentences that follow the data."""

import os

import pandas as pd
import pytest

from pagelab.experiments import readyboost as rb
from pagelab.experiments import recovery
from pagelab.system.config import ConfigError

WS = 8 << 20
PAGES = WS // recovery.PAGE


def result(**kw):
    base = {"evicted_share": 1.0, "readback_share": 1.0, "hogs_killed": 0, "working_set": WS,
            "tier_loaded_at_start": float("nan"), "back_s": 1.0, "restore_window_s": 2.0,
            "agent_coverage": 1.0, "agent_rounds_requested": PAGES, "agent_rounds_swapins": PAGES,
            "agent_rewritten": 0}
    return {**base, **kw}


def test_validity_names_what_did_not_happen():
    assert rb.validity({"arm": "hdd"}, result()) is None
    assert "killed" in rb.validity({"arm": "hdd"}, result(hogs_killed=1))
    assert "pushed out 50.0 %" in rb.validity({"arm": "hdd"}, result(evicted_share=0.5))
    # without the agent the re-touch must read the working set back from swap ...
    assert "still in RAM" in rb.validity({"arm": "hdd"}, result(readback_share=0.2))
    # ... with it, the agent's restore must bring it back (the re-touch then reads nothing)
    assert rb.validity({"arm": "hdd_after"}, result(readback_share=0.0)) is None
    assert "not back in RAM within 2.0 s of the hogs' end (the agent never said it was done)" in \
        rb.validity({"arm": "hdd_after"}, result(back_s=float("nan")))
    assert "(the agent said it was done after 0.08 s)" in \
        rb.validity({"arm": "hdd_after"}, result(back_s=float("nan"), agent_restore_s=0.08))
    assert rb.validity({"arm": "tier_after"}, result(tier_loaded_at_start=0.0)) is None
    assert "must start empty" in rb.validity({"arm": "tier_after"}, result(tier_loaded_at_start=PAGES / 2))
    # between the rounds: the agent read pages back while the hogs ran, and dropped (did not
    # rewrite) what it read; how much of the working set it reached is a result
    assert rb.validity({"arm": "tier_between"}, result(tier_loaded_at_start=0.0)) is None
    assert rb.validity({"arm": "hdd_between"}, result(agent_coverage=0.3)) is None
    assert "read nothing back" in rb.validity({"arm": "hdd_between"}, result(agent_rounds_swapins=0))
    assert rb.validity({"arm": "hdd_after"}, result(agent_rounds_swapins=0)) is None   # after: nothing to read
    why = rb.validity({"arm": "hdd_between"}, result(agent_rewritten=PAGES // 10))
    assert why is not None and "written to swap again rather than dropped" in why
    assert rb.validity({"arm": "hdd_between"}, result(agent_rewritten=PAGES // 200)) is None


def frame(little, enough, inter=1.0):
    """Five interleaved rounds of the four factorial arms and the bare disk without the agent:
    hdd_between = hdd_after = t, tier_after = little * t, tier_between = enough * t."""
    rows = []
    for i in range(5):
        t = 10.0 + i
        for arm, v in (("hdd", 0.0), ("hdd_after", t), ("hdd_between", t * inter), ("tier_after", t * little),
                       ("tier_between", t * enough)):
            rows.append({"arm": arm, "order": len(rows), "recovery_s": v, "settle_s": v, "cached_s": v,
                         "back_s": v, "retouch_s": 20.0 if arm == "hdd" else 0.5, "hog_s": 30.0,
                         "evicted_share": 1.0, "majflt": 100})
    return pd.DataFrame(rows)


def test_hogs_that_ran_apart_make_the_trial_invalid():
    """A hog that gave up waiting for the other at the barrier (`hog run` barrier_broken_round)
    means the hogs did not ask for their memory together: the trial cannot count."""
    from pagelab.run.victim import HogRun

    assert HogRun().invalid_reason() is None
    side_by_side = {"summary": {"barrier_broken_round": 0}}
    assert HogRun(reports=[side_by_side, side_by_side]).invalid_reason() is None
    why = HogRun(reports=[side_by_side, {"summary": {"barrier_broken_round": 2}}]).invalid_reason()
    assert why is not None and "the hogs ran apart from round 2" in why
    assert rb.validity({"arm": "zswap"}, result(killed=why)) == why


def test_paired_ratios_interaction_and_sentences_follow_the_data():
    f = frame(0.77, 0.23)
    rat = rb.ratios(f)
    # the seed's "without ReadyBoost" is the bare disk with the agent between the rounds; the other
    # reading (the agent after the hogs) is the sensitivity twin, and both ratios are formed
    assert rb.SEED_ARMS["none"] == "hdd_between" and rb.SENSITIVITY_NONE == "hdd_after"
    assert abs(rat["tier_after_vs_hdd_between"].value - 0.77) < 1e-9 and rat["tier_after_vs_hdd_between"].n == 5
    assert abs(rat["tier_between_vs_hdd_between"].value - 0.23) < 1e-9
    assert abs(rat["tier_between_vs_hdd_after"].value - 0.23) < 1e-9
    # (tier_between / hdd_between) / (tier_after / hdd_after) = 0.23 / 0.77: prefetching between
    # the rounds helps behind the tier only, as the seed's explanation says
    assert abs(rat["interaction"].value - 0.23 / 0.77) < 1e-9 and rat["interaction"].censored == 0
    assert abs(rat["retouch.hdd_after_vs_hdd"].value - 0.5 / 20) < 1e-9
    # the bare disk without the agent meets the criteria when the clock starts: hdd_after over it
    # would divide by a censored value, so that ratio is not formed at all
    assert "hdd_after_vs_hdd" not in rat
    m = rb.macros(rb.summarise(f), rat, None, "quick", None)
    # each finding in words; its ratio and interval are a row of the comparison table
    assert m["ReadyboostPrefetchTierSentence"] == ("Behind the tier, with prefetching between the rounds recovery "
                                                   "was faster than with the agent restoring only after them")
    assert "as the seed's explanation says" in m["ReadyboostInteractionSentence"]
    assert "CI" not in m["ReadyboostInteractionSentence"] and "0.299" not in m["ReadyboostInteractionSentence"]
    row = next(r for r in m["ReadyboostComparisons"].splitlines() if r.startswith("interaction, recovery"))
    assert row == "interaction, recovery (RBX) & 0.299 & 0.299--0.299 (93.75\\,\\%) & 5 \\\\", row
    assert "by the seed's own recovery criterion the explanation held" in m["ReadyboostExplanationVerdict"]
    # The same data with prefetching as good on the bare disk: no interaction is shown.
    rat2 = rb.ratios(frame(0.77, 0.23, inter=0.23 / 0.77))
    m2 = rb.macros(rb.summarise(frame(0.77, 0.23, inter=0.23 / 0.77)), rat2, None, "quick", None)
    said = m2["ReadyboostInteractionSentence"]
    assert "contains 1" in said and "nor rule it out" in said and "show no interaction" not in said
    # Prefetching between the rounds that leaves nothing to recover when the clock starts (0 s):
    # censored in every round, so the interaction is not measurable, never a ratio of 0.
    f0 = frame(0.77, 0.0, inter=0.0)
    rat0 = rb.ratios(f0)
    assert rat0["interaction"].censored == 5 and not rb.measurable(rat0["interaction"])
    s0 = rb.macros(rb.summarise(f0), rat0, None, "quick", None, frame=f0)["ReadyboostInteractionSentence"]
    assert s0.startswith("for recovery, the interaction of tier and prefetching between the rounds is not "
                         "measurable here: 5 of 5 rounds had an arm censored"), s0
    assert "(met at the hogs' end in half or more of the trials of hdd between and tier between)" in s0, s0
    meas = rb.measurements(rb.summarise(f), rat, f)
    assert meas["readyboost.ratio.tier_after_vs_hdd_between"]["n"] == 5
    assert meas["readyboost.ratio.tier_after_vs_hdd_between"]["coverage"] == 0.9375
    assert abs(rat["back.interaction"].value - 0.23 / 0.77) < 1e-9
    assert set(meas) >= {"readyboost.hdd_after.recovery_s", "readyboost.tier_between.recovery_s",
                         "readyboost.tier_between.back_s", "readyboost.hdd.retouch_s", "readyboost.ratio.interaction",
                         "readyboost.tier_between.total_s", "readyboost.tier_between.hog_s"}
    # every criterion is its own column, the total is the hogs plus the working set back
    tab = rb.table(rb.summarise(f))
    assert {"Disk quiet (s)", "Cached (s)", "Back in RAM (s)", "Hogs (s)", "Total (s)"} <= set(tab.columns)
    s = rb.summarise(f).set_index("arm")
    assert s.loc["hdd_after", "total_s"] == pytest.approx(30.0 + 12.0)
    # the paper sets it in two parts: every column in one of them, the arm and its rows in both
    top, bottom = rb.table_parts(tab)
    assert list(top.columns[:3]) == ["Arm", "Trials", "Rejected"] and "Files back (s)" in top
    assert list(bottom.columns[:2]) == ["Arm", "Hogs (s)"] and "Tier hit share" in bottom
    assert sorted([*top.columns, *bottom.columns[1:]]) == sorted(tab.columns)
    assert list(top["Arm"]) == list(bottom["Arm"]) == list(tab["Arm"])


def test_censored_criteria_are_named_never_a_zero_or_nan_in_a_median():
    """A criterion met when the clock started is "at the start", one not met within the watch
    "> watch"; neither is a value inside a median, and the table names them."""
    f = frame(0.77, 0.23)
    f.loc[f["arm"] == "hdd", ["cached_s", "back_s"]] = float("nan")   # plain Linux: nothing comes back
    f["restore_window_s"] = 6.0
    s = rb.summarise(f).set_index("arm")
    assert s.loc["hdd", "settle_s_start"] == 5 and s.loc["hdd", "cached_s_over"] == 5
    assert s.loc["hdd", "recovery_s_censored"] == 5
    row = rb.table(rb.summarise(f)).set_index("Arm").loc["hdd"]
    assert row["Disk quiet (s)"] == "at the start 5/5" and row["Cached (s)"] == "> 6.00 5/5"
    assert row["Total (s)"] == "> 36.0 5/5"
    assert "hdd: recovery ended by disk quiet and cached at the start in 5 of 5 trials" not in \
        rb.macros(rb.summarise(f), rb.ratios(f), None, "quick", None)["ReadyboostEndedSentences"]
    ended = rb.macros(rb.summarise(f), rb.ratios(f), None, "quick", None)["ReadyboostEndedSentences"]
    assert "hdd: recovery ended by disk quiet at the start in 5 of 5 trials (censored" in ended
    assert "hdd after: recovery ended by disk quiet and cached in 5 of 5 trials" in ended
    # one censored value of five keeps its place below the measured ones: the median is measured
    g = frame(0.77, 0.23)
    g.loc[(g["arm"] == "hdd_after") & (g["order"] == 1), ["recovery_s", "settle_s", "cached_s", "back_s"]] = 0.0
    s = rb.summarise(g).set_index("arm")
    assert s.loc["hdd_after", "recovery_s_censored"] == 1 and s.loc["hdd_after", "recovery_s"] == 12.0
    assert rb.table(rb.summarise(g)).set_index("Arm").loc["hdd after", "Recovery (s)"] == \
        "12.0 [at the start, 14.0] (1 cens.)"


def test_an_all_zero_frame_is_judged_not_measurable():
    """Every arm met the seed's criteria when the clock started: the claims on its ratios are
    "not measurable here", with the reason, never reproduced or not reproduced on 0 [0, 0]."""
    from pagelab.claims import judge
    from pagelab.claims.registry import load_claims

    f = frame(0.0, 0.0, inter=0.0)
    f.loc[:, ["recovery_s", "settle_s", "cached_s", "back_s"]] = 0.0
    f["restore_window_s"] = 2.0
    meas = rb.measurements(rb.summarise(f), rb.ratios(f), f)
    table = judge.judge_all(load_claims(), meas, {}, "quick").set_index("id")
    for cid in ("RBR2", "RBR3", "RBO", "RBX", "RBR2S", "RBR3S", "RBOS"):
        assert table.loc[cid, "verdict"] == judge.NOT_MEASURABLE, (cid, table.loc[cid, "note"])
        assert "censored" in table.loc[cid, "note"] and "at the start" in table.loc[cid, "note"]
    assert "hdd between's recovery (the seed's criteria): met at the hogs' end (at the start) in 5 of 5 trials" in \
        table.loc["RBR3", "note"]


def test_the_recovery_criteria_on_series_with_known_answers():
    """Seed 000: recovery ends when the disk is busy at most 30 % over a window or when cached
    reaches 300 MB of 3 GB, whichever comes first; the working set is back when at most 1 % of
    it is only in swap."""
    ram, ws = 3 << 30, 1400 << 20
    cached = [(0.25 * i, 40e6 * 0.25 * i) for i in range(81)]        # 40 MB/s from 0
    assert recovery.cached_time(cached, ram) == 8.25                        # first sample >= 322 MB
    assert recovery.cached_time(cached[:10], ram) != recovery.cached_time(cached[:10], ram)   # never: NaN
    out = [(0.25 * i, max(0.0, 380e6 - 20e6 * 0.25 * i)) for i in range(81)]     # 380 MB out, 20 MB/s back
    assert recovery.back_time(out, ws) == 18.5                               # <= 14.7 MB out from 18.27 s
    assert recovery.recovery_time(9.5, 8.25) == 8.25 and recovery.recovery_time(float("nan"), 8.25) == 8.25
    assert recovery.recovery_time(float("nan"), float("nan")) != recovery.recovery_time(float("nan"), float("nan"))


def test_the_seed_design_pushes_out_the_share_the_seed_describes():
    """Seed 000: 3 GB of RAM, 1.4 GB of working sets and 1.6 GB of cache; two 1 GB hogs drive
    out "the 1.6GB cache and 0.4GB working sets": (1400 + 2048 - 3072) MiB of 1400."""
    seed = rb.design({"ram": "3G", "working_set": "1400M", "file_cache": "1600M", "hog_size": "1G",
                      "retouch_order": "seq"})
    assert seed.intended_share == pytest.approx(376 / 1400)
    assert (seed.working_set, seed.hog, seed.file_cache) == (1400 << 20, 1 << 30, 1600 << 20)
    # quick: a third of the RAM, hogs of two thirds each, files in the seed profile's 1600M of 3G
    scaled = rb.design({"ram": "24M", "retouch_order": "seq"})
    assert (scaled.working_set, scaled.hog, scaled.file_cache, scaled.intended_share) == \
        (8 << 20, 16 << 20, 25 << 19, 1.0)
    with pytest.raises(ConfigError, match="the hogs would push nothing out"):
        rb.design({"ram": "3G", "working_set": "1G", "hog_size": "512M", "profile": "seed", "retouch_order": "seq"})


def test_validity_asks_for_the_intended_share_and_the_dropped_cache():
    seed = {"intended_share": 376 / 1400, "file_cache": 1600 << 20, "cache_dropped_share": 0.97}
    assert rb.validity({"arm": "hdd"}, result(evicted_share=0.26, readback_share=0.25, **seed)) is None
    assert "needs >= 24.2 %" in rb.validity({"arm": "hdd"}, result(evicted_share=0.2, readback_share=0.25, **seed))
    bad_cache = {**seed, "cache_dropped_share": 0.5}
    assert "dropped 50 % of the file cache" in rb.validity(
        {"arm": "hdd"}, result(evicted_share=0.3, readback_share=0.3, **bad_cache))


def test_preflight_refuses_a_cgroup_this_machine_cannot_hold():
    cfg = {"ram": "3G", "working_set": "1400M", "file_cache": "1600M", "hog_size": "1G", "profile": "seed",
           "retouch_order": "seq"}
    assert rb.preflight(cfg, available=8 << 30).ram == 3 << 30
    with pytest.raises(ConfigError, match=r"readyboost.seed.ram: 3G of cgroup RAM needs 4.5 GiB .* 2.0 GiB available"):
        rb.preflight(cfg, available=2 << 30)


def test_settle_time_is_the_first_quiet_window():
    """Busy 100 % for 10 s, then 20 %: a 5 s window from t0 is busy ((10 - t0) + 0.2 (t0 - 5)) / 5,
    at most 0.3 from t0 = 9.375 s on: the first sample there is 9.5 s."""
    samples, busy = [], 0.0
    for i in range(0, 81):
        t = i * 0.25
        samples.append((t, busy))
        busy += 0.25 if t < 10 else 0.05
    assert recovery.settle_time(samples, 5.0) == 9.5
    assert recovery.settle_time(samples, 5.0, threshold=0.1) != recovery.settle_time(samples, 5.0, threshold=0.1)  # NaN
    assert recovery.settle_time([(0.0, 0.0), (1.0, 1.0)], 5.0) != recovery.settle_time([(0.0, 0.0), (1.0, 1.0)], 5.0)


def test_the_seed_profile_is_refused_on_a_machine_without_the_memory(tmp_path):
    """`pagelab trial readyboost` (what the pipeline runs) with the seed profile's block asking
    for more RAM than this machine has: exit 2, the reason named, no trial run, nothing changed."""
    import json
    import os
    import subprocess

    from conftest import VENV_BIN
    from pagelab.system import config, counters, state

    cfg = config.load(overrides={"profile": "seed"})["readyboost"]
    if rb.skip_reason(cfg):
        pytest.skip(rb.skip_reason(cfg))
    # a cgroup that, with half as much again for what lives outside it, needs more than
    # MemAvailable: the check a machine with too little memory would fail (and small enough for
    # the schema's check that the cgroup leaves the machine 1 GiB of MemTotal)
    cfg["ram"] = f"{int(counters.meminfo()['MemAvailable'] / 1.5 // 2**30) + 1}G"
    (tmp_path / "config.json").write_text(json.dumps({**cfg, "scratch_dir": str(tmp_path / "scratch")}))
    before = state.show()
    out = subprocess.run([str(VENV_BIN / "pagelab"), "trial", "readyboost", "--config", str(tmp_path / "config.json"),
                          "--outdir", str(tmp_path / "out")], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PAGELAB_JOURNAL": str(tmp_path / "journal.jsonl")})
    assert out.returncode == 2, out.stderr
    assert f"readyboost.seed.ram: {cfg['ram']} of cgroup RAM needs" in out.stderr
    assert "nothing was changed" in out.stderr
    assert state.show() == before
    assert not (tmp_path / "out" / "trials.csv").exists() and not (tmp_path / "journal.jsonl").exists()


def test_a_trial_whose_hogs_left_the_working_set_in_ram_is_rejected_and_another_collected(tmp_path, monkeypatch,
                                                                                              disk_tmp, state_lock):
    """The real kernel: the first trial's memory cgroup is given room to spare (64 MiB more than
    the design's RAM), so the hogs push out almost nothing; that trial is kept with its reason,
    not counted, and the run collects another until n_min valid trials exist."""
    import os

    from pagelab.experiments.harness import load, rejected
    from pagelab.system import state

    if os.geteuid() != 0:
        pytest.skip("needs root: swap and a memory cgroup")
    monkeypatch.setenv("PAGELAB_JOURNAL", str(tmp_path / "journal.jsonl"))
    from conftest import build_native

    build_native()
    real_cgroup = state.State.cgroup
    calls = []

    def roomy_first(self, name, memory_limit=None, **kw):
        calls.append(memory_limit)
        extra = 64 << 20 if len(calls) == 2 else 0  # the first counted trial (after the warm-up)
        return real_cgroup(self, name, memory_limit=memory_limit + extra, **kw)

    monkeypatch.setattr(state.State, "cgroup", roomy_first)
    from pagelab.system import config

    cfg = {**config.load(overrides={"profile": "quick"})["readyboost"], "arms": ["own"], "rng_seed": 1,
           "hog_rounds": 2, "repetitions": {"n_min": 2, "n_max": 2, "ci_pct": 50}}
    before = state.show()
    rb.EXPERIMENT.run(cfg, tmp_path / "out", disk_tmp)
    assert state.show() == before
    counted, _ = load(tmp_path / "out")
    bad = rejected(tmp_path / "out")
    # the roomy trial is rejected with its reason (another may be, for its own reason: the run
    # replaces every rejected trial), and the run collected valid ones until it had n_min
    assert "the hogs pushed out" in bad.iloc[0]["invalid_reason"], bad
    assert len(calls) == 1 + 2 + len(bad), calls  # warm-up, n_min counted, one more per rejected
    assert len(counted) == 2 and (counted["evicted_share"] >= recovery.MIN_SHARE).all()


def real_trials(tmp_path, monkeypatch, disk_tmp, profile: str, arm: str, seeds: list[int]):
    """(the profile's readyboost config, the results of one real trial of `arm` per seed), the
    re-touch in address order, the system's state as before afterwards; skips without root and
    FUSE (swap on the emulated disk and a memory cgroup)."""
    from pagelab.run import trials
    from pagelab.system import config, state

    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        pytest.skip("needs root and FUSE: swap on the emulated disk and a memory cgroup")
    monkeypatch.setenv("PAGELAB_JOURNAL", str(tmp_path / "journal.jsonl"))
    from conftest import build_native

    build_native()
    cfg = config.load(overrides={"profile": profile})["readyboost"]
    before = state.show()
    with state.session() as st:
        results = [recovery.run_trial(st, cfg, trials.Trial(trial_id=f"{arm}-r{i:02d}", params={"arm": arm},
                                                      repetition=i, seed=seed), disk_tmp)
                   for i, seed in enumerate(seeds)]
    assert state.show() == before
    return cfg, results


def test_the_full_profiles_sizes_on_the_emulated_disk_behind_the_tier_kill_no_task(tmp_path, monkeypatch, disk_tmp,
                                                                                   state_lock):
    """The real kernel at the full profile's sizes (its cgroup, working set, hogs and 10 hog
    rounds), swap on the emulated 2008 disk behind the flash tier, the agent restoring after the
    hogs: reclaim to a 50 MB/s disk cannot keep up with two hogs, and the group's tasks wait for
    it instead of being killed (memcg OOM kills 0); the trial is valid. One arm stands for the
    bare disk too: the tier copies every write through to the same emulated disk
    (config/devices/tiered-readyboost.yaml), so the hogs' page-outs meet the bare disk's write
    rate and the tier's copy queue besides, and the bare arm's trial runs at quick's sizes in the
    pipeline test. The re-touch is in address order (the hog phase, where a kill would happen,
    is the full profile's own; a random re-touch would add a minute)."""
    arm = "tier_after"
    cfg, [result] = real_trials(tmp_path, monkeypatch, disk_tmp, "full", arm, [7])
    assert cfg["ram"] == "96M" and cfg["hog_rounds"] == 10
    assert result["oom_kills"] == 0 and result["hogs_killed"] == 0, result["killed"]
    assert rb.validity({"arm": arm}, result) is None
    assert result["pswpout_hogs"] > 0 and result["evicted_share"] >= recovery.MIN_SHARE
    # the emulator's timing over the restore's reads (the agent's page-ins) and since the mount
    assert result["restore_emulator_reads"] > 0 and abs(result["restore_emulator_error_us"]) < 1000, result
    assert 0 <= result["emulator_late_share"] <= 1
    assert result["emulator_error_p99_us"] <= result["emulator_error_max_us"]


def test_the_quick_profiles_hogs_push_the_working_set_out_under_zswap_every_time(tmp_path, monkeypatch, disk_tmp,
                                                                                 state_lock):
    """The real kernel at the quick profile's sizes (a 24 MiB group, an 8 MiB working set, two
    16 MiB hogs, 6 rounds) with zswap in front of the emulated disk, ten trials: every one
    pushes the whole working set out, the agent reads it back, and the trial is valid. Swapping
    to zswap is so fast that a hog's round takes ~15 ms, less than the skew between two hogs'
    starts; before the hogs held each round side by side (`hog run --barrier`) they often ran
    one after the other, neither asked for more than the group, and 5 of 22 such trials this way
    kept 12-66 % of the working set in RAM (invalid)."""
    if not os.path.exists("/sys/module/zswap"):
        pytest.skip("needs zswap")
    cfg, results = real_trials(tmp_path, monkeypatch, disk_tmp, "quick", "zswap", list(range(100, 110)))
    assert cfg["ram"] == "24M" and cfg["hog_rounds"] == 6
    reasons = [rb.validity({"arm": "zswap"}, r) for r in results]
    assert reasons == [None] * 10, reasons
    assert all(r["evicted_share"] == 1.0 and r["agent_restore_swapins"] > 0 for r in results)


def test_the_interaction_sentence_claims_no_more_than_its_interval():
    """The seed's explanation in words, from the interaction's interval: below 1 it holds, above 1
    it fails, and an interval that contains 1 neither shows an interaction nor rules one out (at
    n = 5 it spans 0.69-1.68 on the seed recording: no sign of absence)."""
    from pagelab.core.stats import Estimate

    def said(lo, hi):
        return rb.interaction_sentence(Estimate((lo + hi) / 2, lo, hi, 5, "median"))

    assert said(0.5, 0.9).endswith("as the seed's explanation says")
    assert said(1.1, 1.5).endswith("against the seed's explanation")
    wide = said(0.69, 1.68)
    assert "contains 1" in wide and "nor rule it out" in wide and "show no interaction" not in wide
