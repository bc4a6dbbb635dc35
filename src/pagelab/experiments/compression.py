"""compression (seeds 003, 004): how fast memory compression itself runs, one thread, apart from
reclaim (the `codec` arm, the twin of MC1 and MC3); and zswap and zram used as swap, paged out by
an explicit trim and paged in by a re-touch (the `zswap` and `zram` arms, shown as extras).

codec: a zram device with no swap on it (created and removed through pagelab.system.state), written
once with O_DIRECT 64 KiB writes of a corpus of real files and read back the same way, by the
native `iobench job` pinned to one CPU: zram compresses and decompresses in the writing and
reading thread, so the write rate is the compressor's speed and the read rate the
decompressor's. The corpus is the venv's site-packages (sources and binaries, sorted paths,
__pycache__ left out) concatenated once per run into scratch; its sha256, size and the ratio
zram achieved on it are recorded. Fill patterns would not do: they compress unrealistically
well (2.8 GB/s for lzo here, against ~0.5 GB/s on real files).

zswap, zram (swap): a `hog victim` working set whose pages compress to about R of their size
is trimmed from outside (process_madvise MADV_PAGEOUT; compression runs in the harness's own
thread), then re-touched and verified. Reported: page-out and page-in throughput, compression
per CPU second of the trim, and the achieved ratio. zswap sits in front of a swap file on this
machine's disk; zram is the swap device itself.

Validity (from each trial's own counters): the store must hold the pages. codec: every byte
written was read back, and zram's mm_stat holds >= 90 % of them; zswap: the trim stored >= 90 %
of the working set's pages in zswap (zswpout); zram as swap: the trim wrote >= 90 % of them to
zram (pswpout).
"""

from __future__ import annotations

import hashlib
import json
import os
import sysconfig
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pagelab.claims import registry
from pagelab.core import plots, records
from pagelab.core.latex import escape, fmt
from pagelab.core.prose import comparison_rows, finding, listed
from pagelab.core.stats import Estimate, interval_name, median_ci, paired_ratio_ci
from pagelab.core.units import parse_size
from pagelab.experiments import harness
from pagelab.experiments.harness import entry
from pagelab.run import progress, sequential, trials
from pagelab.run.tools import iobench_job_cmd, pinned_to_one_cpu, run_json
from pagelab.run.victim import Victim
from pagelab.system import counters, state

NAME = "compression"
MB = 1e6
PAGE = os.sysconf("SC_PAGE_SIZE")
ARMS = ["codec", "zswap", "zram"]
VALID_FRACTION = 0.9  # of the working set's pages (or the codec's bytes) the store must hold
REFERENCE_ALGORITHM = "lzo"  # the claims' twin: zram's classic default, LZO as Windows' Xpress is LZ77-family


def offered(arm: str) -> list[str]:
    """The compressors the store behind an arm offers: zswap takes the crypto API's, zram (as
    swap or as the codec's block device) its own list."""
    return state.zswap_compressors() if arm == "zswap" else state.zram_algorithms()


def algorithms(arm: str, wanted: str | list[str]) -> list[str]:
    have = offered(arm)
    if wanted == "all":
        return have
    missing = [a for a in wanted if a not in have]
    if missing:
        raise ValueError(f"compression.algorithms: {', '.join(missing)} not offered by {arm} "
                         f"here (offered: {', '.join(have)})")
    return list(wanted)


def configurations(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    confs: list[dict[str, Any]] = []
    for arm in cfg["arms"]:
        if arm == "codec":
            confs += [{"arm": "codec", "algorithm": a} for a in algorithms("zram", cfg["algorithms"])]
        else:
            confs += [{"arm": arm, "algorithm": a, "ratio": float(r)}
                      for a in algorithms(arm, cfg["algorithms"]) for r in cfg["fill_ratios"]]
    return confs


def conf_name(c: dict[str, Any]) -> str:
    if c["arm"] == "codec":
        return f"codec-{c['algorithm']}"
    return f"{c['arm']}-{c['algorithm']}-r{c['ratio']:g}"


REQUIRED_COLUMNS = ["result.pageout_mbps", "result.pagein_mbps", "result.achieved_ratio"]


def skip_reason(cfg: dict[str, Any]) -> str | None:
    if os.geteuid() != 0:
        return "skipped: needs root to configure zram and to turn on swap and zswap"
    if "zswap" in cfg["arms"] and not Path("/sys/module/zswap").exists():
        return "skipped: kernel without zswap (drop it from compression.arms)"
    if {"zram", "codec"} & set(cfg["arms"]) and not Path("/sys/block/zram0").exists():
        return "skipped: no zram0 (modprobe zram, or drop codec and zram from compression.arms)"
    return None


# -- the corpus --------------------------------------------------------------------------------

def corpus_files(source: Path) -> list[Path]:
    """Regular files under `source` in sorted path order, without bytecode caches (their
    bytes depend on when they were compiled)."""
    return [p for p in sorted(source.rglob("*"))
            if p.is_file() and not p.is_symlink() and "__pycache__" not in p.parts and p.suffix != ".pyc"]


def make_corpus(source: Path, dest: Path, size: int) -> dict[str, Any]:
    """Concatenate the files under `source` into `dest` until it holds `size` bytes; returns
    what the record needs to name it (source, files, bytes, sha256)."""
    digest, written, used = hashlib.sha256(), 0, 0
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest, "wb") as out:
        for path in corpus_files(source):
            if written >= size:
                break
            chunk = path.read_bytes()[: size - written]
            out.write(chunk)
            digest.update(chunk)
            written += len(chunk)
            used += 1
    if written < size:
        raise trials.TrialFailed(f"corpus: {source} holds only {written} bytes, {size} asked for")
    return {"source": str(source), "files": used, "bytes": written, "sha256": digest.hexdigest()}


def corpus_source(cfg: dict[str, Any]) -> Path:
    return Path(cfg.get("corpus") or sysconfig.get_paths()["purelib"])


# -- trials ------------------------------------------------------------------------------------

def run_codec_trial(st: state.State, cfg: dict[str, Any], trial: trials.Trial, corpus: Path) -> dict[str, Any]:
    """Write the corpus to a fresh zram device (no swap on it) and read it back, O_DIRECT,
    one CPU: the compressor's and the decompressor's own speed."""
    alg = trial.params["algorithm"]
    size = parse_size(cfg["codec_size"])
    bs = parse_size(cfg["codec_block"])
    with st.scope():
        dev = st.zram(size, alg)
        c = counters.Counters(zram=[dev.name])
        write_cmd = iobench_job_cmd(dev, "write", bs, count=size // bs, data_file=corpus)
        read_cmd = iobench_job_cmd(dev, "read", bs, count=size // bs)
        progress.phase("measure")   # the write and the read back; before them, the device's set-up
        with pinned_to_one_cpu():
            s0 = c.snapshot()
            w = run_json(write_cmd, timeout=600)
            s1 = c.snapshot()
            r = run_json(read_cmd, timeout=600)
        zs = s1[f"zram.{dev.name}"]
        progress.phase("state restore")   # the device removed, on leaving
    wj, rj = w["jobs"][0]["write"], r["jobs"][0]["read"]
    orig, compr = zs.get("mm_orig_data_size", 0.0), zs.get("mm_compr_data_size", 0.0)
    return {
        "arm": "codec", "algorithm": alg, "size": size, "block": bs,
        "commands": {"write": write_cmd, "read": read_cmd}, "effective": dict(st.effective),
        "compress_mbps": wj["bw_bytes"] / MB, "decompress_mbps": rj["bw_bytes"] / MB,
        "written_bytes": wj["io_bytes"], "read_bytes": rj["io_bytes"],
        "write_clat_p50_us": wj["clat_ns"].get("percentile", {}).get("50.000000", float("nan")) / 1e3,
        "read_clat_p50_us": rj["clat_ns"].get("percentile", {}).get("50.000000", float("nan")) / 1e3,
        "write_cpu_pct": w["jobs"][0]["usr_cpu"] + w["jobs"][0]["sys_cpu"],
        "stored_bytes": orig, "compressed_bytes": compr,
        "achieved_ratio": compr / orig if orig else float("nan"),
        "counters": {"write": c.delta(s0, s1)},
    }


def run_swap_trial(st: state.State, cfg: dict[str, Any], trial: trials.Trial, scratch: Path) -> dict[str, Any]:
    arm, alg, ratio = trial.params["arm"], trial.params["algorithm"], trial.params["ratio"]
    ws = parse_size(cfg["working_set"])
    work = scratch / f"{NAME}-{trial.trial_id}"
    work.mkdir(parents=True, exist_ok=True)
    with st.scope():
        if arm == "zram":
            st.swapon(st.zram(2 * ws, alg))
        else:
            st.swap_file(work / "swapfile", 2 * ws)
            st.set_knob("zswap.compressor", alg)
            st.set_knob("zswap.enabled", "Y")
        c = counters.Counters(zram=["zram0"] if arm == "zram" else [])
        # The re-touch in address order (seq): no setting of this experiment; pagein compares orders.
        with Victim(ws, f"ratio:{ratio:g}", trial.seed, work, retouch_order="seq") as victim:
            s0 = c.snapshot()
            trim = victim.trim()
            s1 = c.snapshot()
            rep = victim.retouch()
            s2 = c.snapshot()
        out_d, in_d = c.delta(s0, s1), c.delta(s1, s2)
        if arm == "zram":
            orig = s1["zram.zram0"].get("mm_orig_data_size", 0)
            compr = s1["zram.zram0"].get("mm_compr_data_size", 0)
        else:
            orig = out_d["meminfo"].get("Zswapped", 0)
            compr = out_d["meminfo"].get("Zswap", 0)
        retouch_s = rep["retouch"]["ns"] / 1e9
        result = {
            "arm": arm, "algorithm": alg, "ratio": ratio, "working_set": ws,
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


def validity(params: dict[str, Any], result: dict[str, Any]) -> str | None:
    """None when the store held the pages, else why not (see the module docstring)."""
    arm = params["arm"]
    if arm == "codec":
        size = result["size"]
        if result["written_bytes"] != size or result["read_bytes"] != size:
            return (f"wrote {result['written_bytes']} and read {result['read_bytes']} bytes of a "
                    f"{size}-byte device; the design needs every byte both ways")
        if result["stored_bytes"] < VALID_FRACTION * size:
            return (f"zram holds {result['stored_bytes'] / size:.0%} of the bytes written "
                    f"(mm_stat); the design needs >= {VALID_FRACTION:.0%}")
        return None
    pages = result["working_set"] // PAGE
    counter = "zswpout" if arm == "zswap" else "pswpout"
    if result[counter] < VALID_FRACTION * pages:
        return (f"the trim put {result[counter] / pages:.0%} of the working set's pages into "
                f"{arm} ({counter}); the design needs >= {VALID_FRACTION:.0%}")
    return None


SCALARS = ["pageout_mbps", "compress_mbps", "decompress_mbps", "pagein_mbps", "achieved_ratio", "trim_s",
           "trim_cpu_s", "retouch_s", "stored_bytes", "compressed_bytes", "written_bytes", "read_bytes",
           "pswpout", "zswpout", "pswpin", "zswpin", "retouch_majflt", "working_set", "size"]


def load(results_dir: Path | str) -> tuple[pd.DataFrame, str | None]:
    """The counted trials; a run recorded before the codec arm (column `backend`) reads as
    swap arms."""
    frame, skipped = harness.load(results_dir)
    if "arm" not in frame.columns and "backend" in frame.columns:
        frame = frame.rename(columns={"backend": "arm"})
    return frame, skipped


def rejected(results_dir: Path | str) -> pd.DataFrame:
    frame = harness.rejected(results_dir)
    if "arm" not in frame.columns and "backend" in frame.columns:
        frame = frame.rename(columns={"backend": "arm"})
    return frame


# -- summaries ---------------------------------------------------------------------------------

METRICS = {"codec": ["compress_mbps", "decompress_mbps", "achieved_ratio"],
           "zswap": ["pageout_mbps", "compress_mbps", "pagein_mbps", "achieved_ratio"],
           "zram": ["pageout_mbps", "compress_mbps", "pagein_mbps", "achieved_ratio"]}
UNITS = {"achieved_ratio": "ratio"}


def summarise(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration: n and, per metric of its arm, the median with its
    order-statistic CI (value, _lo, _hi)."""
    rows = []
    if "ratio" not in frame.columns:
        frame = frame.assign(ratio=np.nan)
    for (arm, alg, ratio), g in frame.groupby(["arm", "algorithm", "ratio"], sort=True, dropna=False):
        row: dict[str, Any] = {"arm": arm, "algorithm": alg, "ratio": ratio, "n": len(g)}
        for col in METRICS.get(arm, []):
            vals = g[col].dropna() if col in g else pd.Series(dtype=float)
            e = median_ci(vals) if len(vals) else None
            row[col] = e.value if e else float("nan")
            row[f"{col}_lo"] = e.ci_low if e else float("nan")
            row[f"{col}_hi"] = e.ci_high if e else float("nan")
        rows.append(row)
    out = pd.DataFrame(rows)
    order = {a: i for i, a in enumerate(ARMS)}
    return out.sort_values(["arm", "algorithm", "ratio"], key=lambda s: s.map(order) if s.name == "arm" else s,
                           ignore_index=True) if len(out) else out


def ratios(frame: pd.DataFrame) -> dict[str, Estimate]:
    """Paired ratios between interleaved configurations (round by round):
    codec.<alg>.decompress_vs_compress: each trial's read rate over its write rate;
    codec.<alg>.vs_lzo: each compressor's speed over lzo's (the k-th trial of each)."""
    out: dict[str, Estimate] = {}
    codec = frame[frame["arm"] == "codec"] if len(frame) else frame
    for alg, g in codec.groupby("algorithm", sort=True) if len(codec) else []:
        if len(g) >= 2:
            out[f"codec.{alg}.decompress_vs_compress"] = paired_ratio_ci(g["decompress_mbps"], g["compress_mbps"])
    algs = sorted(set(codec["algorithm"])) if len(codec) else []
    if REFERENCE_ALGORITHM in algs:
        for alg in algs:
            if alg == REFERENCE_ALGORITHM:
                continue
            a, b = harness.pairs(codec, "algorithm", "compress_mbps", alg, REFERENCE_ALGORITHM)
            if len(a) >= 2:
                out[f"codec.{alg}.vs_{REFERENCE_ALGORITHM}"] = paired_ratio_ci(a, b)
    return out


def measurements(summary: pd.DataFrame, reference_ratio: float,
                 paired: dict[str, Estimate] | None = None) -> dict[str, Any]:
    """Keys: compression.codec.<alg>.{compress_mbps,decompress_mbps,achieved_ratio} (MC1,
    MC3); compression.<zswap|zram>.<alg>.r<R>.<metric> and, at the reference ratio, without
    .r<R> (extras); compression.ratio.<name> for the paired ratios."""
    out: dict[str, Any] = {}
    for _, r in summary.iterrows():
        if r["arm"] == "codec":
            bases = [f"{NAME}.codec.{r['algorithm']}"]
        else:
            bases = [f"{NAME}.{r['arm']}.{r['algorithm']}.r{r['ratio']:g}"]
            if abs(r["ratio"] - reference_ratio) < 1e-9:
                bases.append(f"{NAME}.{r['arm']}.{r['algorithm']}")
        for base in bases:
            for col in METRICS.get(r["arm"], []):
                if np.isfinite(r[col]):
                    out[f"{base}.{col}"] = entry(r[col], r[f"{col}_lo"], r[f"{col}_hi"], UNITS.get(col, "MB/s"),
                                                  r["n"], "median, order-statistic CI")
    for name, e in (paired or {}).items():
        out[f"{NAME}.ratio.{name}"] = entry(e.value, e.ci_low, e.ci_high, "ratio", e.n,
                                             "median of paired per-round ratios, order-statistic CI")
    return out


def table(summary: pd.DataFrame, rejected_frame: pd.DataFrame | None = None) -> pd.DataFrame:
    def cell(r: pd.Series, col: str) -> str:
        if col not in r or not np.isfinite(r[col]):
            return "--"
        return f"{fmt(r[col])} [{fmt(r[col + '_lo'])}, {fmt(r[col + '_hi'])}]"

    def n_rejected(r: pd.Series) -> int:
        if rejected_frame is None or not len(rejected_frame):
            return 0
        g = rejected_frame[(rejected_frame["arm"] == r["arm"]) & (rejected_frame["algorithm"] == r["algorithm"])]
        if r["arm"] != "codec" and "ratio" in g:
            g = g[np.isclose(g["ratio"].astype(float), r["ratio"])]
        return len(g)

    rows = summary.to_dict("records")
    return pd.DataFrame({
        "Arm": [r["arm"] for r in rows], "Compressor": [r["algorithm"] for r in rows],
        "Fill R": ["corpus" if r["arm"] == "codec" else f"{r['ratio']:g}" for r in rows],
        "n": [int(r["n"]) for r in rows],
        "Rejected": [n_rejected(pd.Series(r)) for r in rows],
        "Achieved": [fmt(r["achieved_ratio"]) for r in rows],
        "Compress MB/s": [cell(pd.Series(r), "compress_mbps") for r in rows],
        "Decompress MB/s": [cell(pd.Series(r), "decompress_mbps") for r in rows],
        "Page-out MB/s": [cell(pd.Series(r), "pageout_mbps") for r in rows],
        "Page-in MB/s": [cell(pd.Series(r), "pagein_mbps") for r in rows],
    })


def macros(summary: pd.DataFrame, cfg: dict[str, Any] | None, profile: str, skipped: str | None,
           paired: dict[str, Estimate] | None = None, corpus: dict[str, Any] | None = None,
           rejected_frame: pd.DataFrame | None = None) -> dict[str, str]:
    """Every number and every comparative sentence of the section."""
    paired = paired or {}
    m = {"CompressionProfile": profile, "CompressionStatus": escape(skipped or "ran")}
    # the coverage of the configurations' and the ratios' order-statistic intervals at their n
    m["CompressionIntervals"] = interval_name((list(summary["n"]) if len(summary) else [])
                                              + [e.n for e in paired.values()], latex=True)
    if cfg:
        m["CompressionWorkingSetMiB"] = f"{parse_size(cfg['working_set']) / 2**20:g}"
        m["CompressionReferenceRatio"] = f"{cfg['reference_ratio']:g}"
    for key, name, scale in (("codec_size", "CompressionCodecSizeMiB", 2**20),
                             ("codec_block", "CompressionCodecBlockKiB", 2**10)):
        m[name] = f"{parse_size(cfg[key]) / scale:g}" if cfg and key in cfg else "n/a"  # n/a: recorded before the codec
    m["CompressionCorpusFiles"] = str(corpus["files"]) if corpus else "n/a"
    m["CompressionCorpusSha"] = escape(corpus["sha256"][:12]) if corpus else "n/a"
    m["CompressionConfigs"] = str(len(summary))
    m["CompressionRejected"] = str(len(rejected_frame)) if rejected_frame is not None else "0"
    codec = summary[summary["arm"] == "codec"] if len(summary) else summary
    ref = codec[codec["algorithm"] == REFERENCE_ALGORITHM] if len(codec) else codec
    if len(ref):
        r = ref.iloc[0]
        for col, word in (("compress_mbps", "Compress"), ("decompress_mbps", "Decompress")):
            m[f"CompressionLzo{word}MBps"] = fmt(r[col])
            m[f"CompressionLzo{word}LoMBps"] = fmt(r[f"{col}_lo"])
            m[f"CompressionLzo{word}HiMBps"] = fmt(r[f"{col}_hi"])
        m["CompressionLzoAchieved"] = fmt(r["achieved_ratio"])
        m["CompressionLzoN"] = str(int(r["n"]))
    else:
        for k in ("CompressMBps", "CompressLoMBps", "CompressHiMBps", "DecompressMBps", "DecompressLoMBps",
                  "DecompressHiMBps", "Achieved", "N"):
            m[f"CompressionLzo{k}"] = "n/a"
    m["CompressionCodecAlgorithms"] = escape(", ".join(codec["algorithm"])) if len(codec) else "n/a"
    key = f"codec.{REFERENCE_ALGORITHM}.decompress_vs_compress"
    # Each comparison in words, one sentence each (never strung together with semicolons); its
    # ratio, interval and rounds are a row of CompressionComparisons.
    m["CompressionDecompressVsCompressSentence"] = (
        finding(paired[key], "Per trial, lzo's decompression was", "faster", "slower", "than its compression")
        if key in paired else "n/a")
    others = sorted(k for k in paired if k.startswith("codec.") and k.endswith(f".vs_{REFERENCE_ALGORITHM}"))
    m["CompressionCodecVsLzoSentence"] = ". ".join(
        finding(paired[k], f"Against lzo, {k.split('.')[1]} compressed", "faster", "slower", "",
                f"Against lzo, {k.split('.')[1]} was not shown to compress faster or slower") for k in others) \
        or "n/a"
    m["CompressionComparisons"] = comparison_rows(
        ([(f"{REFERENCE_ALGORITHM}: decompression / compression (MCR)", paired[key], "")] if key in paired else [])
        + [(f"{escape(k.split('.')[1])} / {REFERENCE_ALGORITHM}: compression", paired[k], "") for k in others])
    swap = summary[summary["arm"] != "codec"] if len(summary) else summary
    if cfg and len(swap):
        sref = swap[np.isclose(swap["ratio"], cfg["reference_ratio"])]
    else:
        sref = swap
    if len(sref):
        best_in = sref.loc[sref["pagein_mbps"].idxmax()]
        # the highest median is only a point: the stores whose intervals reach the top one's
        # are named with it, as stores it is not shown faster than
        near = [f"{r['arm']} {r['algorithm']}" for i, r in sref.iterrows()
                if i != best_in.name and r["pagein_mbps_hi"] >= best_in["pagein_mbps_lo"]]
        m["CompressionBestPageinMBps"] = fmt(best_in["pagein_mbps"])
        m["CompressionBestPageinWho"] = escape(f"{best_in['arm']} {best_in['algorithm']}" + (
            f"; not shown faster than {listed(near)}, whose intervals reach its" if near else ""))
        m["CompressionSwapMinAchieved"] = fmt(sref["achieved_ratio"].min())
        m["CompressionSwapMaxAchieved"] = fmt(sref["achieved_ratio"].max())
    else:
        for k in ("BestPageinMBps", "BestPageinWho", "SwapMinAchieved", "SwapMaxAchieved"):
            m[f"Compression{k}"] = "n/a"
    return m


def corpus_path(scratch: Path) -> Path:
    return Path(scratch).resolve() / f"{NAME}-corpus"


def _prepare(cfg: dict[str, Any], scratch: Path) -> dict[str, Any]:
    """What the kernel offers, and the codec arm's corpus (made once per run, described in the
    provenance and beside it for the trials)."""
    extra: dict[str, Any] = {"offered": {"zswap": state.zswap_compressors(), "zram": state.zram_algorithms()}}
    if "codec" in cfg["arms"]:
        extra["corpus"] = make_corpus(corpus_source(cfg), corpus_path(scratch), parse_size(cfg["codec_size"]))
        records.write_json_atomic(corpus_path(scratch).with_suffix(".json"), extra["corpus"])
    return extra


def _cleanup(cfg: dict[str, Any], scratch: Path) -> None:
    corpus_path(scratch).unlink(missing_ok=True)
    corpus_path(scratch).with_suffix(".json").unlink(missing_ok=True)


def run_trial(st: state.State, cfg: dict[str, Any], trial: trials.Trial, scratch: Path) -> dict[str, Any]:
    if trial.params["arm"] == "codec":
        corpus = corpus_path(scratch)
        return {**run_codec_trial(st, cfg, trial, corpus),
                "corpus": json.loads(corpus.with_suffix(".json").read_text())}
    return run_swap_trial(st, cfg, trial, scratch)


def figure(summary: pd.DataFrame, profile: str, skipped: str | None,
           references: dict[str, float]) -> plots.plt.Figure:
    """compression's figure: left, the codec arm's compress and decompress speeds per compressor
    (medians with CI whiskers) against the published values `references` (claim id -> MB/s);
    right, the swap arms' page-in rate against the fill ratio. A message when neither ran."""
    codec = summary[summary["arm"] == "codec"] if len(summary) else summary
    swap = summary[summary["arm"] != "codec"] if len(summary) else summary
    if not len(codec) and not len(swap):
        return plots.message(skipped or "no counted trials")
    fig, axes = plots.plt.subplots(1, 2, figsize=(9, 3.4))
    if len(codec):
        long = pd.concat([
            codec.assign(what="compress", mbps=codec["compress_mbps"], lo=codec["compress_mbps_lo"],
                         hi=codec["compress_mbps_hi"]),
            codec.assign(what="decompress", mbps=codec["decompress_mbps"], lo=codec["decompress_mbps_lo"],
                         hi=codec["decompress_mbps_hi"])])
        for i, (what, g) in enumerate(long.groupby("what", sort=True)):
            xs = [j + (i - 0.5) * 0.38 for j in range(len(g))]
            axes[0].bar(xs, g["mbps"], 0.38, label=what, color=plots.sns.color_palette()[i])
            axes[0].errorbar(xs, g["mbps"], yerr=[g["mbps"] - g["lo"], g["hi"] - g["mbps"]], fmt="none",
                             ecolor="black", capsize=2)
        axes[0].set_xticks(range(len(codec)), codec["algorithm"])
        for i, (claim, value) in enumerate(references.items()):
            axes[0].axhline(value, color="0.3", linestyle=("--", ":", "-.")[i % 3], linewidth=0.8,
                            label=f"seed 004 ({claim})")
        axes[0].set_ylabel("MB/s, one thread (zram, O_DIRECT)")
        axes[0].set_title("codec: the compressor's own speed", fontsize="small")
        axes[0].legend(frameon=False, fontsize="x-small")
    if len(swap):
        s = swap.assign(who=swap["arm"] + " " + swap["algorithm"])
        plots.lines_by_group(s, "ratio", "pagein_mbps", "who", xlabel="fill ratio R",
                             ylabel="page-in MB/s (re-touch)", ax=axes[1])
        axes[1].set_title("swap arms (extras): page-in by re-touch", fontsize="small")
    fig.suptitle(f"compression, {profile} profile", fontsize="small")
    fig.tight_layout()  # the right panel's axis label clear of the left panel
    return fig


def analyse(results_dir: Path | str, profile: str) -> harness.Analysis:
    """The speeds per arm and compressor, the paired ratios, the figure, the table and macros."""
    res = harness.open_results(results_dir, load)
    out, trials_, skipped, cfg = res.out, res.trials, res.skipped, res.cfg
    rejected_ = rejected(out)
    corpus = res.provenance.get("corpus")
    summary = summarise(trials_) if len(trials_) else trials_
    paired = ratios(trials_) if len(trials_) else {}
    references = {c: registry.value(c) for c in ("MC1", "MC3")}
    codec = trials_[trials_["arm"] == "codec"] if len(trials_) else trials_
    return harness.Analysis(
        res, f"{res.describe(profile)}; corpus {corpus}", summary,
        measurements(summary, cfg["reference_ratio"], paired) if len(summary) else {},
        macros(summary, cfg, profile, skipped, paired, corpus, rejected_),
        harness.Table(table(summary, rejected_), "lllrrrllll") if len(summary) else None,
        {NAME: lambda: figure(summary, profile, skipped, references)},
        shown={f"paired ratios ({harness.ROUNDED})": harness.rounded(paired),
               "rejected trials": rejected_[["trial_id", "arm", "algorithm", "invalid_reason"]]
               if len(rejected_) else "no trial rejected",
               "outliers (Tukey, codec arm)": harness.outliers(codec, ["arm", "algorithm"], "compress_mbps")
               if len(codec) else codec})


EXPERIMENT = harness.Experiment(
    own_hardware={"compression.": "this machine's CPU"},
    name=NAME, analyse=analyse, paper_order=40, seeds=("003", "004"), configurations=configurations, trial=run_trial,
    metric=lambda r: r["compress_mbps"] if r["arm"] == "codec" else r["pageout_mbps"], columns=tuple(SCALARS),
    required_columns=tuple(REQUIRED_COLUMNS), tools=lambda cfg: ["hog", "iobench"], conf_name=conf_name,
    skip_reason=skip_reason, validity=validity, warmups=lambda cfg: configurations(cfg)[:1],
    prepare=_prepare, cleanup=_cleanup,
    measures=lambda cfg: {f"{NAME}.ratio.codec.{c['algorithm']}.decompress_vs_compress":
                          sequential.within(conf_name(c), "decompress_mbps", "compress_mbps")
                          for c in configurations(cfg) if c["arm"] == "codec"},
    requires=harness.Requirements(root=True, zram=True))
