"""seekmodel (seed 003): random-read service time against block size at QD1 with O_DIRECT.

Measurement: iobench random reads on a scratch file on the disk under test, every block size
`trials` times in a seeded random order. Analysis: per-block-size summaries with bootstrap CIs
and the fit t(b) = t_access + b / BW, set beside the seed's 10 ms + 64 KiB / 20 MB/s model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pagelab import fit as _fit
from pagelab import records, trials
from pagelab.config import config_hash
from pagelab.provenance import provenance
from pagelab.stats import bootstrap_ci
from pagelab.tools import iobench_job_cmd, run_json, summarise_job, tool_path
from pagelab.units import format_size, parse_duration, parse_size

NAME = "seekmodel"
MB = 1e6  # MB/s in this project is 10^6 bytes per second, as CrystalMark reports
# The seed's model (NOTES.md, CM2): 10 ms access + 64 KiB at 20 MB/s.
SEED_T_ACCESS_S = 10e-3
SEED_BW_BYTES = 20 * MB


REQUIRED_COLUMNS = ["result.iops", "result.bw_bytes", "result.seconds_per_io", "result.clat_mean_ns"]


def configurations(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"bs": parse_size(b)} for b in cfg["block_sizes"]]


def plan(cfg: dict[str, Any]) -> list[trials.Trial]:
    confs = configurations(cfg)
    warm = [max(confs, key=lambda c: c["bs"])] if parse_duration(cfg.get("warmup", 0)) > 0 else []
    return trials.plan(
        confs, cfg["trials"], cfg["seed"],
        name=lambda c: f"bs{format_size(c['bs'])}", warmups=warm,
    )


def run(cfg: dict[str, Any], outdir: Path, scratch_dir: Path) -> pd.DataFrame:
    """Run (or resume) every trial; write trials.csv; return it. Raises if a trial failed."""
    scratch_dir.mkdir(parents=True, exist_ok=True)
    data_file = scratch_dir / f"{NAME}.dat"
    file_size = parse_size(cfg["file_size"])
    iobench = tool_path("iobench")
    prov = provenance(config_hash(cfg), tools={"iobench": iobench}, disk_path=scratch_dir)

    def run_one(trial: trials.Trial) -> dict[str, Any]:
        runtime = parse_duration(cfg["warmup"] if trial.warmup else cfg["runtime"])
        cmd = iobench_job_cmd(data_file, "randread", trial.params["bs"], direct=True,
                              runtime=runtime, seed=trial.seed, size=file_size, binary=iobench)
        doc = run_json(cmd, timeout=runtime * 5 + file_size / 20e6 + 60)
        res = summarise_job(doc)
        res["seconds_per_io"] = 1.0 / res["iops"] if res["iops"] > 0 else float("nan")
        res["command"] = cmd
        res["tool_version"] = doc.get("iobench version", "unknown")
        return res

    try:
        recs = trials.run(NAME, plan(cfg), run_one, outdir, prov)
    finally:
        data_file.unlink(missing_ok=True)
    frame = to_frame(recs)
    failed = frame[frame["status"] != "ok"]
    if len(failed):
        raise trials.TrialFailed(f"{len(failed)} trial(s) failed: {', '.join(failed['trial_id'])}")
    records.write_text_atomic(outdir / "trials.csv", frame.to_csv(index=False))
    records.write_json_atomic(outdir / "provenance.json", prov)
    return frame


def to_frame(recs: list[dict[str, Any]]) -> pd.DataFrame:
    rows = []
    for r in recs:
        res = r.get("result", {})
        rows.append({
            "trial_id": r["trial_id"], "order": r["order"], "repetition": r["repetition"],
            "warmup": r["warmup"], "status": r["status"], "seed": r["seed"],
            "bs": r["params"]["bs"], "start": r["start"], "end": r["end"],
            **{k: v for k, v in res.items() if k not in ("command",)},
        })
    return pd.DataFrame(rows).sort_values("order").reset_index(drop=True)


def load(results_dir: Path | str) -> pd.DataFrame:
    """The counted trials (status ok, warm-ups excluded) from trials.csv."""
    frame = pd.read_csv(Path(results_dir) / "trials.csv")
    return frame[(frame["status"] == "ok") & (~frame["warmup"].astype(bool))].copy()


def summarise(frame: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Per block size: n, mean service time and throughput with bootstrap 95 % CIs."""
    rows = []
    for bs, g in frame.groupby("bs"):
        t = bootstrap_ci(g["seconds_per_io"], seed=seed)
        mbps = bootstrap_ci(g["bw_bytes"] / MB, seed=seed)
        rows.append({
            "bs": int(bs), "n": t.n,
            "t_ms": t.value * 1e3, "t_ms_lo": t.ci_low * 1e3, "t_ms_hi": t.ci_high * 1e3,
            "mbps": mbps.value, "mbps_lo": mbps.ci_low, "mbps_hi": mbps.ci_high,
            "iops": float(np.mean(g["iops"])),
            "p99_us": float(np.mean(g["clat_p99_ns"])) / 1e3 if "clat_p99_ns" in g else np.nan,
        })
    return pd.DataFrame(rows).sort_values("bs").reset_index(drop=True)


def fit(frame: pd.DataFrame) -> _fit.FitResult:
    return _fit.fit_service_time(frame["bs"], frame["seconds_per_io"])


def predicted_mbps(t_access_s: float, bw_bytes: float, block: int) -> float:
    """Throughput of back-to-back QD1 requests of `block` bytes under the model, MB/s."""
    return block / (t_access_s + block / bw_bytes) / MB


def seed_model_mbps(block: int = 64 * 1024) -> float:
    return predicted_mbps(SEED_T_ACCESS_S, SEED_BW_BYTES, block)


def table(summary: pd.DataFrame, result: _fit.FitResult) -> pd.DataFrame:
    """The paper's table: per block size, measured time and throughput with CIs, and the fit."""
    from pagelab.latex import fmt

    t_acc, bw = result["t_access"].value, result["bandwidth"].value
    return pd.DataFrame({
        "Block": summary["bs"].map(format_size),
        "Trials": summary["n"].astype(int),
        "Time per IO (ms)": [f"{fmt(v)} [{fmt(lo)}, {fmt(hi)}]" for v, lo, hi in
                             zip(summary["t_ms"], summary["t_ms_lo"], summary["t_ms_hi"], strict=True)],
        "MB/s": [f"{fmt(v)} [{fmt(lo)}, {fmt(hi)}]" for v, lo, hi in
                 zip(summary["mbps"], summary["mbps_lo"], summary["mbps_hi"], strict=True)],
        "Fit MB/s": [fmt(predicted_mbps(t_acc, bw, int(b))) for b in summary["bs"]],
    })


def macros(summary: pd.DataFrame, result: _fit.FitResult, prov: dict[str, Any],
           profile: str) -> dict[str, str]:
    """Every number the paper prints about seekmodel, as \\newcommand name -> text."""
    from pagelab.latex import escape, fmt

    t, bw = result["t_access"], result["bandwidth"]
    row64 = summary[summary["bs"] == 64 * 1024]
    disk = prov.get("disk", {})
    m = {
        "SeekmodelProfile": profile,
        "SeekmodelTrials": str(int(summary["n"].min())),
        "SeekmodelBlockSizes": ", ".join(format_size(int(b)) for b in summary["bs"]),
        "SeekmodelTAccessUs": fmt(t.value * 1e6),
        "SeekmodelTAccessLoUs": fmt(t.ci_low * 1e6),
        "SeekmodelTAccessHiUs": fmt(t.ci_high * 1e6),
        "SeekmodelBandwidthMBps": fmt(bw.value / MB),
        "SeekmodelBandwidthLoMBps": fmt(bw.ci_low / MB),
        "SeekmodelBandwidthHiMBps": fmt(bw.ci_high / MB),
        "SeekmodelFitSixtyFourKMBps": fmt(predicted_mbps(t.value, bw.value, 64 * 1024)),
        "SeekmodelSeedModelSixtyFourKMBps": fmt(seed_model_mbps()),
        "SeekmodelSeedAccessMs": fmt(SEED_T_ACCESS_S * 1e3),
        "SeekmodelSeedBandwidthMBps": fmt(SEED_BW_BYTES / MB),
        "SeekmodelDisk": escape(f"{disk.get('model', 'unknown')} ({disk.get('disk', '?')})"),
        "SeekmodelKernel": escape(prov.get("machine", {}).get("kernel", "unknown")),
    }
    if len(row64):
        r = row64.iloc[0]
        m["SeekmodelSixtyFourKMBps"] = fmt(r["mbps"])
        m["SeekmodelSixtyFourKLoMBps"] = fmt(r["mbps_lo"])
        m["SeekmodelSixtyFourKHiMBps"] = fmt(r["mbps_hi"])
    return m


def measurements(summary: pd.DataFrame, result: _fit.FitResult, device: str = "own") -> dict[str, Any]:
    """What the claims checker reads: results/seekmodel/measurements.json."""
    t, bw = result["t_access"], result["bandwidth"]
    out: dict[str, Any] = {
        f"{NAME}.{device}.t_access_us": {"value": t.value * 1e6, "ci_low": t.ci_low * 1e6,
                                         "ci_high": t.ci_high * 1e6, "unit": "us", "n": result.n},
        f"{NAME}.{device}.bandwidth_mbps": {"value": bw.value / MB, "ci_low": bw.ci_low / MB,
                                            "ci_high": bw.ci_high / MB, "unit": "MB/s", "n": result.n},
        # The seed's own arithmetic (CM2), recomputed: a check of the model, not of a disk.
        f"{NAME}.seed_model.rr64k_mbps": {"value": seed_model_mbps(), "unit": "MB/s", "n": 1},
    }
    for _, row in summary.iterrows():
        size = format_size(int(row["bs"])).lower()
        out[f"{NAME}.{device}.rr{size}_mbps"] = {"value": row["mbps"], "ci_low": row["mbps_lo"],
                                                 "ci_high": row["mbps_hi"], "unit": "MB/s", "n": int(row["n"])}
        out[f"{NAME}.{device}.rr{size}_ms"] = {"value": row["t_ms"], "ci_low": row["t_ms_lo"],
                                               "ci_high": row["t_ms_hi"], "unit": "ms", "n": int(row["n"])}
    return out
