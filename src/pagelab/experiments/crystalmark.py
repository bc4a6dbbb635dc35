"""crystalmark (seed 003): the CrystalMark 2004R2 disk sequence, and its warning.

Seed 003 traced CrystalMark 2004R2: a fresh 128 MB file, then sequential read and write of
1 MiB, random read and write of 512 KiB and 64 KiB, unbuffered. Its warning: a cache below the
file system (ReadyBoost there) inflates the scores of a reused test file. Arms on this
machine's disk: `direct` (fresh file, O_DIRECT, CrystalMark's own way), `direct_reused` (the
same file every trial, O_DIRECT: only a cache below the guest could inflate it),
`buffered` (fresh file through the page cache) and `buffered_reused` (the page cache as the
"cache below", kept warm by reuse). Each trial is one `iobench crystalmark` run.
"""

from __future__ import annotations

import json
import os
import subprocess
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pagelab import devices, experiment, records, state, trials
from pagelab.stats import bootstrap_ci, ratio_ci
from pagelab.tools import tool_path
from pagelab.units import parse_duration, parse_size

NAME = "crystalmark"
TESTS = ["seq_read", "seq_write", "rand_read_512k", "rand_write_512k", "rand_read_64k", "rand_write_64k"]
TITLES = {"seq_read": "Seq Read", "seq_write": "Seq Write", "rand_read_512k": "Rand Read 512K",
          "rand_write_512k": "Rand Write 512K", "rand_read_64k": "Rand Read 64K",
          "rand_write_64k": "Rand Write 64K"}
ARMS = {  # arm -> (buffered, reuse the file)
    "direct": (False, False), "direct_reused": (False, True),
    "buffered": (True, False), "buffered_reused": (True, True),
    # The emulated devices (simdisk serves one file, which is reused as the test file): the
    # 2008 laptop disk, and the same disk behind the ReadyBoost-like flash tier, whose cache the
    # sequence's own writes populate before its random reads (seed 003's cached test file).
    "hdd": (False, True), "tiered": (False, True),
}
EMULATED = {"hdd": "disk_profile", "tiered": "tier_profile"}


REQUIRED_COLUMNS = [f"result.{t}_best_mbps" for t in TESTS]


def configurations(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"arm": a} for a in usable_arms(cfg)[0]]


def command(cfg: dict[str, Any], arm: str, file: Path, seed: int) -> list[str]:
    buffered, reuse = ARMS[arm]
    cmd = [str(tool_path("iobench")), "crystalmark", "--file", str(file), "--size", str(parse_size(cfg["size"])),
           "--sets", str(cfg["sets"]), "--seed", str(seed), "--output-format", "json"]
    if parse_duration(cfg["set_time"]) > 0:
        cmd += ["--set-time", f"{parse_duration(cfg['set_time'])}s"]
    if buffered:
        cmd.append("--buffered")
    if reuse:
        cmd.append("--keep-file")
    return cmd


def run_trial(st: state.State | None, cfg: dict[str, Any], trial: trials.Trial, scratch: Path) -> dict[str, Any]:
    arm = trial.params["arm"]
    _, reuse = ARMS[arm]
    with st.scope() if st is not None else nullcontext(None):
        if arm in EMULATED:
            assert st is not None
            work = scratch / f"{NAME}-{trial.trial_id}"
            file = devices.emulated_disk(st, cfg[EMULATED[arm]], work, parse_size(cfg["size"])).disk
        else:
            work = None
            # A reused file keeps its name across trials (and its pages in the cache); a fresh one is new.
            file = scratch / (f"{NAME}-{arm}.dat" if reuse else f"{NAME}-{trial.trial_id}.dat")
        cmd = command(cfg, arm, file, trial.seed)
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if work is not None:
        experiment.clean_dir(work)
    if out.returncode != 0:
        raise trials.TrialFailed(f"iobench crystalmark exited {out.returncode}: {out.stderr.strip()}")
    doc = json.loads(out.stdout)
    result: dict[str, Any] = {"arm": arm, "command": cmd, "file_state": doc["file"]["state"],
                              "fill_mb_s": (doc.get("fill") or {}).get("mb_s", float("nan"))}
    for t in doc["tests"]:
        result[f"{t['name']}_best_mbps"] = t["best_mb_s"]
        result[f"{t['name']}_mean_mbps"] = t["mean_mb_s"]
        result[f"{t['name']}_p99_us"] = t["clat_ns"]["percentile"]["99.000000"] / 1e3
    return result


def usable_arms(cfg: dict[str, Any]) -> tuple[list[str], str | None]:
    """The arms that can run here; the emulated ones need root and FUSE."""
    emulated = [a for a in cfg["arms"] if a in EMULATED]
    if emulated and (os.geteuid() != 0 or not Path("/dev/fuse").exists()):
        return [a for a in cfg["arms"] if a not in EMULATED], \
            f"skipped {', '.join(emulated)}: needs root and /dev/fuse for the emulated devices"
    return list(cfg["arms"]), None


SCALARS = [f"{t}_{k}" for t in TESTS for k in ("best_mbps", "mean_mbps", "p99_us")] + ["fill_mb_s"]


def run(cfg: dict[str, Any], outdir: Path, scratch_dir: Path) -> pd.DataFrame:
    arms, note = usable_arms(cfg)
    try:
        frame = experiment.execute(
            NAME, cfg, outdir, scratch_dir, configurations(cfg), lambda c: c["arm"],
            lambda st, t, scratch: run_trial(st, cfg, t, scratch), lambda r: r["rand_read_64k_best_mbps"],
            SCALARS, tools=["iobench"] + (["simdisk"] if any(a in EMULATED for a in arms) else []),
            changes_state=any(a in EMULATED for a in arms), warmups=[{"arm": arms[0]}])
    finally:
        for arm in ARMS:
            (scratch_dir.resolve() / f"{NAME}-{arm}.dat").unlink(missing_ok=True)
    if note:
        records.write_text_atomic(outdir / "skipped.txt", note + "\n")
    return frame


def load(results_dir: Path | str) -> pd.DataFrame:
    return experiment.load(results_dir)[0]


def summarise(frame: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Long form: one row per arm and test, median of the trials' best sets with a CI."""
    rows = []
    for arm in [a for a in ARMS if a in set(frame["arm"])]:
        g = frame[frame["arm"] == arm]
        for t in TESTS:
            e = bootstrap_ci(g[f"{t}_best_mbps"], np.median, seed=seed)
            rows.append({"arm": arm, "test": t, "n": e.n, "mbps": e.value, "lo": e.ci_low, "hi": e.ci_high})
    return pd.DataFrame(rows)


def inflation(frame: pd.DataFrame, test: str = "rand_read_64k", seed: int = 0) -> dict[str, Any] | None:
    """The seed's warning, measured: reused-and-cached score over the fresh O_DIRECT one."""
    a = frame.loc[frame["arm"] == "buffered_reused", f"{test}_best_mbps"]
    b = frame.loc[frame["arm"] == "direct", f"{test}_best_mbps"]
    if len(a) == 0 or len(b) == 0:
        return None
    r = ratio_ci(a, b, seed=seed)
    return {"value": r.value, "ci_low": r.ci_low, "ci_high": r.ci_high, "unit": "ratio", "n": r.n}


def table(summary: pd.DataFrame) -> pd.DataFrame:
    """Laid out like CrystalMark's disk page: tests as rows, one column per arm (MB/s)."""
    from pagelab.latex import fmt

    cols: dict[str, list[str]] = {"Test": [TITLES[t] for t in TESTS]}
    for arm in [a for a in ARMS if a in set(summary["arm"])]:
        s = summary[summary["arm"] == arm].set_index("test")
        cols[arm.replace("_", " ")] = [f"{fmt(s.loc[t, 'mbps'])} [{fmt(s.loc[t, 'lo'])}, {fmt(s.loc[t, 'hi'])}]"
                                       for t in TESTS]
    return pd.DataFrame(cols)


def measurements(summary: pd.DataFrame, infl: dict[str, Any] | None, device: str = "own") -> dict[str, Any]:
    """Keys crystalmark.own.<arm>.<test>_mbps; the emulated arms are keyed by their device
    (crystalmark.hdd.rr64k_mbps, crystalmark.tiered.rr64k_mbps)."""
    out: dict[str, Any] = {}
    short = {"rand_read_64k": "rr64k", "rand_write_64k": "rw64k", "rand_read_512k": "rr512k",
             "rand_write_512k": "rw512k", "seq_read": "seqr", "seq_write": "seqw"}
    for _, r in summary.iterrows():
        where = r["arm"] if r["arm"] in EMULATED else f"{device}.{r['arm']}"
        out[f"{NAME}.{where}.{short[r['test']]}_mbps"] = {
            "value": r["mbps"], "ci_low": r["lo"], "ci_high": r["hi"], "unit": "MB/s", "n": int(r["n"])}
    if infl:
        out[f"{NAME}.{device}.reuse_inflation_rr64k"] = infl
    return out


def macros(summary: pd.DataFrame, infl: dict[str, Any] | None, cfg: dict[str, Any], profile: str) -> dict[str, str]:
    from pagelab.latex import fmt

    def get(arm: str, test: str) -> str:
        s = summary[(summary["arm"] == arm) & (summary["test"] == test)]
        return fmt(s.iloc[0]["mbps"]) if len(s) else "n/a"

    return {
        "CrystalmarkProfile": profile,
        "CrystalmarkSizeMiB": fmt(parse_size(cfg["size"]) / 2**20),
        "CrystalmarkSets": str(cfg["sets"]),
        "CrystalmarkDirectRRSixtyFourK": get("direct", "rand_read_64k"),
        "CrystalmarkDirectSeqRead": get("direct", "seq_read"),
        "CrystalmarkReusedRRSixtyFourK": get("buffered_reused", "rand_read_64k"),
        "CrystalmarkHddRRSixtyFourK": get("hdd", "rand_read_64k"),
        "CrystalmarkTieredRRSixtyFourK": get("tiered", "rand_read_64k"),
        "CrystalmarkHddSeqRead": get("hdd", "seq_read"),
        "CrystalmarkInflation": fmt(infl["value"]) if infl else "n/a",
        "CrystalmarkInflationLo": fmt(infl["ci_low"]) if infl else "n/a",
        "CrystalmarkInflationHi": fmt(infl["ci_high"]) if infl else "n/a",
    }
