"""compression (seeds 003, 004): zswap and zram with every compressor the kernel offers, against
how well the pages compress.

One trial: a `hog victim` working set of pages that compress to about R of their size is
trimmed from outside (process_madvise MADV_PAGEOUT, so compression runs in the harness's own
thread and its CPU time is measurable), then re-touched and verified (decompression). Reported:
page-out and page-in throughput, compression throughput per CPU second, and the achieved
ratio (zram: mm_stat; zswap: meminfo Zswap/Zswapped). zswap sits in front of a swap file on
this machine's disk; zram is the swap device itself.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pagelab import counters, experiment, state, trials
from pagelab.stats import bootstrap_ci
from pagelab.units import parse_size
from pagelab.victim import Victim

NAME = "compression"
MB = 1e6


def algorithms(backend: str, wanted: str | list[str]) -> list[str]:
    offered = state.zswap_compressors() if backend == "zswap" else state.zram_algorithms()
    if wanted == "all":
        return offered
    missing = [a for a in wanted if a not in offered]
    if missing:
        raise ValueError(f"compression.algorithms: {', '.join(missing)} not offered by {backend} "
                         f"here (offered: {', '.join(offered)})")
    return list(wanted)


def configurations(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"backend": b, "algorithm": a, "ratio": float(r)}
            for b in cfg["backends"] for a in algorithms(b, cfg["algorithms"]) for r in cfg["fill_ratios"]]


REQUIRED_COLUMNS = ["result.pageout_mbps", "result.pagein_mbps", "result.achieved_ratio",
                    "result.counters.pageout.vmstat.pswpout"]


def conf_name(c: dict[str, Any]) -> str:
    return f"{c['backend']}-{c['algorithm']}-r{c['ratio']:g}"


def skip_reason(cfg: dict[str, Any]) -> str | None:
    if os.geteuid() != 0:
        return "skipped: needs root to turn on swap, zswap and zram"
    if "zswap" in cfg["backends"] and not Path("/sys/module/zswap").exists():
        return "skipped: kernel without zswap (drop it from compression.backends)"
    if "zram" in cfg["backends"] and not Path("/sys/block/zram0").exists():
        return "skipped: no zram0 (modprobe zram, or drop it from compression.backends)"
    return None


def run_trial(st: state.State, cfg: dict[str, Any], trial: trials.Trial, scratch: Path) -> dict[str, Any]:
    backend, alg, ratio = trial.params["backend"], trial.params["algorithm"], trial.params["ratio"]
    ws = parse_size(cfg["working_set"])
    work = scratch / f"{NAME}-{trial.trial_id}"
    work.mkdir(parents=True, exist_ok=True)
    with st.scope():
        if backend == "zram":
            st.swapon(st.zram(2 * ws, alg))
        else:
            st.swap_file(work / "swapfile", 2 * ws)
            st.set_knob("zswap.compressor", alg)
            st.set_knob("zswap.enabled", "Y")
        c = counters.Counters(zram=["zram0"] if backend == "zram" else [])
        with Victim(ws, f"ratio:{ratio:g}", trial.seed, work) as victim:
            s0 = c.snapshot()
            trim = victim.trim()
            s1 = c.snapshot()
            rep = victim.retouch()
            s2 = c.snapshot()
        out_d, in_d = c.delta(s0, s1), c.delta(s1, s2)
        if backend == "zram":
            orig = s1["zram.zram0"].get("mm_orig_data_size", 0)
            compr = s1["zram.zram0"].get("mm_compr_data_size", 0)
        else:
            orig = out_d["meminfo"].get("Zswapped", 0)
            compr = out_d["meminfo"].get("Zswap", 0)
        retouch_s = rep["retouch"]["ns"] / 1e9
        result = {
            "backend": backend, "algorithm": alg, "ratio": ratio, "working_set": ws,
            "command": victim.command, "effective": dict(st.effective),
            "pageout_mbps": ws / trim["trim_s"] / MB,
            "compress_mbps": ws / trim["trim_cpu_s"] / MB if trim["trim_cpu_s"] > 0 else float("nan"),
            "pagein_mbps": ws / retouch_s / MB,
            "trim_s": trim["trim_s"], "trim_cpu_s": trim["trim_cpu_s"], "retouch_s": retouch_s,
            "stored_bytes": orig, "compressed_bytes": compr,
            "achieved_ratio": compr / orig if orig else float("nan"),
            "swapped_bytes": trim["swapped_bytes"],
            "pswpout": out_d["vmstat"].get("pswpout", 0), "zswpout": out_d["vmstat"].get("zswpout", 0),
            "pswpin": in_d["vmstat"].get("pswpin", 0), "zswpin": in_d["vmstat"].get("zswpin", 0),
            "retouch_majflt": rep["retouch"]["majflt"],
            "counters": {"pageout": out_d, "pagein": in_d},
        }
    work.rmdir()
    return result


SCALARS = ["pageout_mbps", "compress_mbps", "pagein_mbps", "achieved_ratio", "trim_s", "trim_cpu_s",
           "retouch_s", "stored_bytes", "compressed_bytes", "pswpout", "zswpout", "pswpin", "zswpin",
           "retouch_majflt", "working_set"]


def run(cfg: dict[str, Any], outdir: Path, scratch_dir: Path) -> pd.DataFrame:
    reason = skip_reason(cfg)
    confs = [] if reason else configurations(cfg)
    offered = {} if reason else {"offered": {"zswap": state.zswap_compressors(), "zram": state.zram_algorithms()}}
    return experiment.execute(
        NAME, cfg, outdir, scratch_dir, confs, conf_name,
        lambda st, t, scratch: run_trial(st, cfg, t, scratch), lambda r: r["pageout_mbps"], SCALARS,
        tools=["hog"], skip_reason=reason, warmups=confs[:1], extra_provenance=offered)


load = experiment.load


def summarise(frame: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    rows = []
    for (backend, alg, ratio), g in frame.groupby(["backend", "algorithm", "ratio"], sort=True):
        row: dict[str, Any] = {"backend": backend, "algorithm": alg, "ratio": ratio, "n": len(g)}
        for col in ("pageout_mbps", "compress_mbps", "pagein_mbps", "achieved_ratio"):
            e = bootstrap_ci(g[col].dropna(), np.median, seed=seed) if g[col].notna().any() else None
            row[col] = e.value if e else float("nan")
            row[f"{col}_lo"] = e.ci_low if e else float("nan")
            row[f"{col}_hi"] = e.ci_high if e else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def measurements(summary: pd.DataFrame, reference_ratio: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for _, r in summary.iterrows():
        bases = [f"{NAME}.{r['backend']}.{r['algorithm']}.r{r['ratio']:g}"]
        if abs(r["ratio"] - reference_ratio) < 1e-9:
            bases.append(f"{NAME}.{r['backend']}.{r['algorithm']}")
        for base in bases:
            for col, unit in (("pageout_mbps", "MB/s"), ("compress_mbps", "MB/s"),
                              ("pagein_mbps", "MB/s"), ("achieved_ratio", "ratio")):
                if np.isfinite(r[col]):
                    out[f"{base}.{col}"] = {"value": r[col], "ci_low": r[f"{col}_lo"],
                                            "ci_high": r[f"{col}_hi"], "unit": unit, "n": int(r["n"])}
    return out


def table(summary: pd.DataFrame) -> pd.DataFrame:
    from pagelab.latex import fmt

    def cell(r: pd.Series, col: str) -> str:
        return f"{fmt(r[col])} [{fmt(r[col + '_lo'])}, {fmt(r[col + '_hi'])}]"

    return pd.DataFrame({
        "Backend": summary["backend"], "Compressor": summary["algorithm"],
        "Fill R": summary["ratio"].map(lambda v: f"{v:g}"),
        "Achieved": summary["achieved_ratio"].map(fmt),
        "Page-out MB/s": [cell(r, "pageout_mbps") for _, r in summary.iterrows()],
        "Compress MB/s per CPU s": [cell(r, "compress_mbps") for _, r in summary.iterrows()],
        "Page-in MB/s": [cell(r, "pagein_mbps") for _, r in summary.iterrows()],
    })


def macros(summary: pd.DataFrame, cfg: dict[str, Any] | None, profile: str, skipped: str | None) -> dict[str, str]:
    from pagelab.latex import escape, fmt

    m = {"CompressionProfile": profile, "CompressionStatus": escape(skipped or "ran")}
    if cfg:
        m["CompressionWorkingSetMiB"] = fmt(parse_size(cfg["working_set"]) / 2**20)
        m["CompressionReferenceRatio"] = f"{cfg['reference_ratio']:g}"
    ref = summary[np.isclose(summary["ratio"], cfg["reference_ratio"])] if (cfg and len(summary)) else summary
    if len(ref):
        best_out = ref.loc[ref["compress_mbps"].idxmax()]
        best_in = ref.loc[ref["pagein_mbps"].idxmax()]
        m["CompressionBestCompressMBps"] = fmt(best_out["compress_mbps"])
        m["CompressionBestCompressWho"] = escape(f"{best_out['backend']} {best_out['algorithm']}")
        m["CompressionBestPageinMBps"] = fmt(best_in["pagein_mbps"])
        m["CompressionBestPageinWho"] = escape(f"{best_in['backend']} {best_in['algorithm']}")
        m["CompressionMinAchieved"] = fmt(ref["achieved_ratio"].min())
        m["CompressionMaxAchieved"] = fmt(ref["achieved_ratio"].max())
        m["CompressionConfigs"] = str(len(summary))
    else:
        for k in ("BestCompressMBps", "BestCompressWho", "BestPageinMBps", "BestPageinWho",
                  "MinAchieved", "MaxAchieved", "Configs"):
            m[f"Compression{k}"] = "n/a"
    return m
