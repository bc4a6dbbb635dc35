"""seekmodel (seed 003): random-read service time against block size at QD1 with O_DIRECT, on
this machine's disk (`own`) and on the emulated devices of config/devices (a 2008 laptop disk,
a USB stick).

Measurement: iobench random reads, every device x block size `trials` times in one seeded random
order: on `own` a scratch file on the disk under test, on an emulated device the file that
`simdisk` serves (mounted for the run, journaled). Analysis: per-device, per-block-size
summaries with order-statistic CIs of the median and the fit t(b) = t_access + b / BW, set beside the seed's
10 ms + 64 KiB / 20 MB/s model and, for emulated devices, beside the same fit of the device
model's own predictions (`simdisk model`), which the measured fit must recover.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pagelab.core import fit as _fit
from pagelab.core import plots, records
from pagelab.core.latex import escape, fmt
from pagelab.core.stats import coverage_label, interval_name, median_ci
from pagelab.core.units import format_size, parse_duration, parse_size
from pagelab.experiments import harness
from pagelab.experiments.harness import clean_dir
from pagelab.run import devices, progress, trials
from pagelab.run.tools import iobench_job_cmd, run_json, summarise_job
from pagelab.system import state
from pagelab.system.config import renamed_columns

NAME = "seekmodel"
MB = 1e6  # MB/s in this project is 10^6 bytes per second, as CrystalMark reports
# The seed's model (seed 003; claim CM2 of data/published/claims.csv): 10 ms access + 64 KiB at 20 MB/s.
SEED_T_ACCESS_S = 10e-3
SEED_BW_BYTES = 20 * MB
OWN = "own"
SPAN_BS = 4096
REQUIRED_COLUMNS = ["result.iops", "result.bw_bytes", "result.seconds_per_io", "result.clat_mean_ns"]


def usable_devices(cfg: dict[str, Any]) -> tuple[list[str], str | None]:
    """The devices that can run here, and why the others cannot (one line) or None."""
    wanted = cfg["disk_profiles"]
    emulated = [d for d in wanted if d != OWN]
    if emulated and (os.geteuid() != 0 or not Path("/dev/fuse").exists()):
        why = "needs root and /dev/fuse to mount the emulated devices"
        return [d for d in wanted if d == OWN], f"skipped {', '.join(emulated)}: {why}"
    return list(wanted), None


def configurations(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """The block-size sweep (random reads over the whole device: span 0) and, on the emulated
    devices, the span sweep (4 KiB reads within the first `span` bytes: the seek curve)."""
    devs = usable_devices(cfg)[0]
    sweep = [{"disk_profile": d, "bs": parse_size(b), "span": 0} for d in devs for b in cfg["block_sizes"]]
    spans = [{"disk_profile": d, "bs": SPAN_BS, "span": parse_size(s)} for d in devs if d != OWN for s in cfg["spans"]
             if parse_size(s) <= (devices.capacity(d) or parse_size(s))]
    return sweep + spans


def conf_name(c: dict[str, Any]) -> str:
    return f"{c['disk_profile']}-bs{format_size(c['bs'])}" + (f"-span{format_size(c['span'])}" if c["span"] else "")


SCALARS = ["iops", "bw_bytes", "io_bytes", "total_ios", "runtime_ms", "clat_mean_ns", "clat_stddev_ns",
           "clat_min_ns", "clat_max_ns", "clat_p50_ns", "clat_p90_ns", "clat_p99_ns", "clat_p99_9_ns",
           "seconds_per_io", "tool_version"]


def warmups(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """One warm-up job per usable device at the biggest block size (when cfg warmup > 0)."""
    if parse_duration(cfg.get("warmup", 0)) <= 0:
        return []
    biggest = max(parse_size(b) for b in cfg["block_sizes"])
    return [{"disk_profile": d, "bs": biggest, "span": 0} for d in usable_devices(cfg)[0]]


def own_file(scratch: Path) -> Path:
    return Path(scratch).resolve() / f"{NAME}.dat"


# The emulated devices are mounted once per run (on the first trial that needs each) and
# journaled in the run's state session, which unmounts them at its end.
_MOUNTED: dict[tuple[int, str], Path] = {}


def target(st: state.State | None, cfg: dict[str, Any], device: str, scratch: Path) -> tuple[Path, int | None]:
    """The file a trial reads: a scratch file on this machine's disk, or the emulated disk."""
    if device == OWN:
        return own_file(scratch), parse_size(cfg["file_size"])
    assert st is not None, "emulated devices need the run's state session"
    key = (id(st), device)
    if key not in _MOUNTED:
        _MOUNTED[key] = devices.emulated_disk(st, device, Path(scratch).resolve() / f"{NAME}-{device}").disk
    return _MOUNTED[key], None


def run_trial(st: state.State | None, cfg: dict[str, Any], trial: trials.Trial, scratch: Path) -> dict[str, Any]:
    """One iobench random-read job (QD1, O_DIRECT) of the trial's block size on its device."""
    runtime = parse_duration(cfg["warmup"] if trial.warmup else cfg["runtime"])
    path, size = target(st, cfg, trial.params["disk_profile"], scratch)
    cmd = iobench_job_cmd(path, "randread", trial.params["bs"], direct=True, runtime=runtime, seed=trial.seed,
                          size=size, span=trial.params.get("span") or None)
    progress.phase("measure")   # the job; before it, the trial's set-up (a device's first mount)
    doc = run_json(cmd, timeout=runtime * 5 + parse_size(cfg["file_size"]) / 20e6 + 120)
    res = summarise_job(doc)
    res["seconds_per_io"] = 1.0 / res["iops"] if res["iops"] > 0 else float("nan")
    res["command"] = cmd
    res["tool_version"] = doc.get("iobench version", "unknown")
    return res


def _cleanup(cfg: dict[str, Any], scratch: Path) -> None:
    own_file(scratch).unlink(missing_ok=True)
    for key in [k for k in _MOUNTED]:
        del _MOUNTED[key]
    for d in usable_devices(cfg)[0]:
        if d != OWN:
            clean_dir(Path(scratch).resolve() / f"{NAME}-{d}")


def _finish(cfg: dict[str, Any], outdir: Path) -> None:
    """The device models' own expectations beside the measurements (modelled.json, and per span
    modelled_spans.json)."""
    emulated = [d for d in usable_devices(cfg)[0] if d != OWN]
    modelled = {d: {str(parse_size(b)): devices.model(d, "randread", parse_size(b))["mean_service_ns"] / 1e9
                    for b in cfg["block_sizes"]} for d in emulated}
    modelled_spans: dict[str, dict[str, float]] = {}
    for c in configurations(cfg):
        if c["span"]:
            t = devices.model(c["disk_profile"], "randread", SPAN_BS, c["span"])["mean_service_ns"] / 1e9
            modelled_spans.setdefault(c["disk_profile"], {})[str(c["span"])] = t
    records.write_json_atomic(outdir / "modelled_spans.json", modelled_spans)
    records.write_json_atomic(outdir / "modelled.json", modelled)


def load(results_dir: Path | str, spans: bool = False) -> pd.DataFrame:
    """The counted trials (harness.counted_mask: finished, not warm-ups, valid) from trials.csv:
    the block-size sweep, or with spans=True the span sweep."""
    frame = pd.read_csv(Path(results_dir) / "trials.csv")
    frame.columns = renamed_columns(NAME, list(frame.columns))  # a recording's old names: today's
    # a trial with no validity verdict (seekmodel judges none of its own) is valid unless a
    # failure inside it made it invalid
    frame["valid"] = frame["valid"].fillna(True) if "valid" in frame else True
    frame = frame[harness.counted_mask(frame)]
    in_span_sweep = frame["span"].fillna(0) > 0 if "span" in frame else pd.Series(False, index=frame.index)
    return frame[in_span_sweep if spans else ~in_span_sweep].copy()


def seek_curve(frame: pd.DataFrame, modelled_spans: dict[str, dict[int, float]], seed: int = 0) -> pd.DataFrame:
    """Per emulated device and span: median 4 KiB random-read time with a CI, and the device
    model's prediction for the same span."""
    rows = []
    if frame.empty:
        return pd.DataFrame(columns=["disk_profile", "span", "n", "t_ms", "t_ms_lo", "t_ms_hi", "model_ms"])
    for (d, span), g in frame.groupby(["disk_profile", "span"], sort=True):
        t = median_ci(g["seconds_per_io"])
        model = modelled_spans.get(d, {}).get(int(span))
        rows.append({"disk_profile": d, "span": int(span), "n": t.n, "t_ms": t.value * 1e3, "t_ms_lo": t.ci_low * 1e3,
                     "t_ms_hi": t.ci_high * 1e3, "model_ms": model * 1e3 if model else float("nan")})
    return pd.DataFrame(rows)


def load_modelled_spans(results_dir: Path | str) -> dict[str, dict[int, float]]:
    """Per emulated device, the device model's expected seconds per 4 KiB read by span."""
    return _per_device(results_dir, "modelled_spans.json")


def load_modelled(results_dir: Path | str) -> dict[str, dict[int, float]]:
    """Per emulated device, the device model's expected seconds per request by block size."""
    return _per_device(results_dir, "modelled.json")


def _per_device(results_dir: Path | str, name: str) -> dict[str, dict[int, float]]:
    """One of finish's files (device -> bytes -> seconds; JSON keeps the bytes as strings)."""
    return {d: {int(b): t for b, t in m.items()} for d, m in (harness.read_json(results_dir, name) or {}).items()}


# The section's prose describes the seed's own disk and stick, by these macro words
# (Seekmodel<Word>TAccessMs, ...). A device a config adds is in the tables and the figure; it
# gets no prose macros, so it can never write its numbers into a sentence about the seed's
# device (two disks once shared the word Hdd).
PROSE_DEVICES = {"hdd5400-2008": "Hdd", "usbstick-2008": "Usbstick"}


def device_word(device: str) -> str | None:
    """The macro word of a device the prose describes (hdd5400-2008 -> Hdd), else None."""
    return PROSE_DEVICES.get(device)


def summarise(frame: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Per block size (of one device's trials): n, the median over trials of the mean service
    time and of the throughput, with order-statistic CIs."""
    rows = []
    for bs, g in frame.groupby("bs"):
        t = median_ci(g["seconds_per_io"])
        mbps = median_ci(g["bw_bytes"] / MB)
        rows.append({
            "bs": int(bs), "n": t.n,
            "t_ms": t.value * 1e3, "t_ms_lo": t.ci_low * 1e3, "t_ms_hi": t.ci_high * 1e3,
            "mbps": mbps.value, "mbps_lo": mbps.ci_low, "mbps_hi": mbps.ci_high,
            "iops": float(np.mean(g["iops"])),
            "p99_us": float(np.mean(g["clat_p99_ns"])) / 1e3 if "clat_p99_ns" in g else np.nan,
        })
    return pd.DataFrame(rows).sort_values("bs").reset_index(drop=True)


def fit_modelled(modelled: dict[int, float]) -> _fit.FitResult:
    """The same two-term fit of the device model's own predictions: what the measured fit
    should recover."""
    sizes = sorted(modelled)
    return _fit.fit_service_time(np.repeat(sizes, 2), np.repeat([modelled[b] for b in sizes], 2), weighted=False)


def recovery(measured: _fit.FitResult, modelled: _fit.FitResult) -> dict[str, float]:
    """Relative error of the measured fit's parameters against the model's."""
    return {p: abs(measured[p].value / modelled[p].value - 1) for p in ("t_access", "bandwidth")}


def fit(frame: pd.DataFrame) -> _fit.FitResult:
    return _fit.fit_service_time(frame["bs"], frame["seconds_per_io"])


def predicted_mbps(t_access_s: float, bw_bytes: float, block: int) -> float:
    """Throughput of back-to-back QD1 requests of `block` bytes under the model, MB/s."""
    return block / (t_access_s + block / bw_bytes) / MB


def seed_model_mbps(block: int = 64 * 1024) -> float:
    return predicted_mbps(SEED_T_ACCESS_S, SEED_BW_BYTES, block)


def table(summary: pd.DataFrame, result: _fit.FitResult) -> pd.DataFrame:
    """The paper's table: per block size, measured time and throughput with CIs, and the fit."""
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
        # the fit's parameters carry t-intervals at this nominal level (fit.nls), not an exact coverage
        "SeekmodelFitLevel": coverage_label(result.level, latex=True),
    }
    if len(row64):
        r = row64.iloc[0]
        m["SeekmodelSixtyFourKMBps"] = fmt(r["mbps"])
        m["SeekmodelSixtyFourKLoMBps"] = fmt(r["mbps_lo"])
        m["SeekmodelSixtyFourKHiMBps"] = fmt(r["mbps_hi"])
    return m


def device_macros(device: str, summary: pd.DataFrame, result: _fit.FitResult,
                  modelled: _fit.FitResult | None) -> dict[str, str]:
    """Macros for an emulated device the prose describes: Seekmodel<Word>... (fitted and modelled
    parameters); none for another device."""
    word = device_word(device)
    if word is None:
        return {}
    w = "Seekmodel" + word
    t, bw = result["t_access"], result["bandwidth"]
    m = {f"{w}TAccessMs": fmt(t.value * 1e3), f"{w}TAccessLoMs": fmt(t.ci_low * 1e3),
         f"{w}TAccessHiMs": fmt(t.ci_high * 1e3), f"{w}BandwidthMBps": fmt(bw.value / MB)}
    for bs, key in ((4096, "FourK"), (65536, "SixtyFourK")):
        row = summary[summary["bs"] == bs]
        m[f"{w}{key}Ms"] = fmt(row.iloc[0]["t_ms"]) if len(row) else "n/a"
        m[f"{w}{key}MBps"] = fmt(row.iloc[0]["mbps"]) if len(row) else "n/a"
    if modelled is not None:
        rec = recovery(result, modelled)
        m[f"{w}ModelTAccessMs"] = fmt(modelled["t_access"].value * 1e3)
        m[f"{w}ModelBandwidthMBps"] = fmt(modelled["bandwidth"].value / MB)
        m[f"{w}RecoveryPct"] = fmt(100 * max(rec.values()))
        # FUSE's round trip adds to every request what the model does not charge: named where the
        # fitted access time lies above the model's, and only there
        m[f"{w}ExcessClause"] = (", the excess being the FUSE round trip, which matters only at sub-millisecond "
                                 "access times" if t.value > modelled["t_access"].value else "")
    return m


def measurements(summary: pd.DataFrame, result: _fit.FitResult, device: str = "own") -> dict[str, Any]:
    """What the claims checker reads: results/seekmodel/measurements.json. The fit's parameters
    carry their t-interval's nominal level as their coverage (n counts the fitted points); the
    medians' order-statistic intervals have the coverage of their n (claims.coverage)."""
    t, bw = result["t_access"], result["bandwidth"]
    how = {"method": "weighted least-squares fit, t-interval", "coverage": result.level}
    out: dict[str, Any] = {
        f"{NAME}.{device}.t_access_us": {"value": t.value * 1e6, "ci_low": t.ci_low * 1e6,
                                         "ci_high": t.ci_high * 1e6, "unit": "us", "n": result.n, **how},
        f"{NAME}.{device}.bandwidth_mbps": {"value": bw.value / MB, "ci_low": bw.ci_low / MB,
                                            "ci_high": bw.ci_high / MB, "unit": "MB/s", "n": result.n, **how},
    }
    if device == OWN:  # the seed's own arithmetic (CM2), recomputed: a check of the model, not of a disk
        out[f"{NAME}.seed_model.rr64k_mbps"] = {"value": seed_model_mbps(), "unit": "MB/s", "n": 1}
    for _, row in summary.iterrows():
        size = format_size(int(row["bs"])).lower()
        out[f"{NAME}.{device}.rr{size}_mbps"] = {"value": row["mbps"], "ci_low": row["mbps_lo"],
                                                 "ci_high": row["mbps_hi"], "unit": "MB/s", "n": int(row["n"])}
        out[f"{NAME}.{device}.rr{size}_ms"] = {"value": row["t_ms"], "ci_low": row["t_ms_lo"],
                                               "ci_high": row["t_ms_hi"], "unit": "ms", "n": int(row["n"])}
    return out


def seed_model_with_rotation_mbps(rpm: float, block: int = 64 * 1024) -> float:
    """The seed's model plus the average rotational wait it leaves out (half a revolution)."""
    return predicted_mbps(SEED_T_ACCESS_S + devices.half_revolution_s(rpm), SEED_BW_BYTES, block)


def compare_64k(summaries: dict[str, pd.DataFrame], fits: dict[str, _fit.FitResult],
                modelled: dict[str, dict[int, float]], rpm: float) -> pd.DataFrame:
    """Random Read 64K per device: measured, the fitted model, the device model (emulated
    devices), the seed's model, and the seed's model with rotation added."""
    block = 64 * 1024
    rows = []
    for d, summary in summaries.items():
        row = summary[summary["bs"] == block]
        f = fits[d]
        dev = modelled.get(d, {}).get(block)
        rows.append({
            "Device": d,
            "Measured": f"{fmt(row.iloc[0]['mbps'])} [{fmt(row.iloc[0]['mbps_lo'])}, {fmt(row.iloc[0]['mbps_hi'])}]"
            if len(row) else "n/a",
            "Fitted model": fmt(predicted_mbps(f["t_access"].value, f["bandwidth"].value, block)),
            "Device model": fmt(block / dev / MB) if dev else "--",
            "Seed's model": fmt(seed_model_mbps(block)),
            "Seed's + rotation": fmt(seed_model_with_rotation_mbps(rpm, block)),
        })
    return pd.DataFrame(rows)


def span_macros(curve: pd.DataFrame) -> dict[str, str]:
    """Per emulated device: the shortest and longest span's 4 KiB read time, measured and
    modelled (Seekmodel<Word>SpanShortMs, ...ModelMs, ...SpanShortSize)."""
    m: dict[str, str] = {}
    for d, g in curve.groupby("disk_profile"):
        if (word := device_word(d)) is None:
            continue
        g = g.sort_values("span")
        w = "Seekmodel" + word
        for which, row in (("Short", g.iloc[0]), ("Long", g.iloc[-1])):
            m[f"{w}Span{which}Size"] = format_size(int(row["span"]))
            m[f"{w}Span{which}Ms"] = fmt(row["t_ms"])
            m[f"{w}Span{which}ModelMs"] = fmt(row["model_ms"])
    return m


def span_table(curve: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "Device": curve["disk_profile"], "Span": curve["span"].map(lambda s: format_size(int(s))),
        "Trials": curve["n"].astype(int),
        "4K read (ms)": [f"{fmt(v)} [{fmt(a)}, {fmt(b)}]" for v, a, b in
                         zip(curve["t_ms"], curve["t_ms_lo"], curve["t_ms_hi"], strict=True)],
        "Device model (ms)": curve["model_ms"].map(fmt),
    })


DEVICE_KEYS = ["TAccessMs", "TAccessLoMs", "TAccessHiMs", "BandwidthMBps", "FourKMs", "FourKMBps", "SixtyFourKMs",
               "SixtyFourKMBps", "ModelTAccessMs", "ModelBandwidthMBps", "RecoveryPct", "SpanShortSize",
               "SpanShortMs", "SpanShortModelMs", "SpanLongSize", "SpanLongMs", "SpanLongModelMs"]


def placeholder_macros(m: dict[str, str]) -> dict[str, str]:
    """"n/a" for every per-device macro that was not measured here (a device skipped without
    root), so the paper still builds and says so."""
    out = dict(m)
    for word in PROSE_DEVICES.values():
        for key in DEVICE_KEYS:
            out.setdefault(f"Seekmodel{word}{key}", "n/a")
        out.setdefault(f"Seekmodel{word}ExcessClause", "")   # nothing measured: no excess to explain
    return out


def figure(counted: pd.DataFrame, summaries: dict[str, pd.DataFrame], fits: dict[str, Any],
           curve: pd.DataFrame, devices: list[str], profile: str) -> plots.plt.Figure:
    """seekmodel's figure: time per request against block size with each device's fit (left),
    and the seek curve, 4 KiB reads within a span, against the device model (right)."""
    fig, (ax, ax2) = plots.plt.subplots(1, 2, figsize=(9.6, 3.6))
    palette = plots.sns.color_palette()
    for i, d in enumerate(devices):
        pts = counted[counted["disk_profile"] == d].assign(t_ms=lambda f: f["seconds_per_io"] * 1e3)
        plots.errorbar_fit(summaries[d], x="bs", y="t_ms", lo="t_ms_lo", hi="t_ms_hi", fit=fits[d], fit_scale=1e3,
                           xlabel="block size (bytes)", ylabel="time per request (ms)", points=pts, ax=ax,
                           label=d, color=palette[i], logy=True)
    ax.set_title(f"QD1 O_DIRECT random read, {profile} profile", fontsize="small")
    for d, g in curve.groupby("disk_profile"):
        color = palette[devices.index(d)]
        ax2.errorbar(g["span"], g["t_ms"], yerr=[g["t_ms"] - g["t_ms_lo"], g["t_ms_hi"] - g["t_ms"]], fmt="o",
                     capsize=3, color=color, label=f"{d}: measured")
        ax2.plot(g["span"], g["model_ms"], "--", color=color, label=f"{d}: device model")
    ax2.set_xscale("log", base=2)
    ax2.set_xlabel("span of the random 4 KiB reads (bytes)")
    ax2.set_ylabel("time per request (ms)")
    ax2.set_title("seek curve: 4 KiB reads within a span", fontsize="small")
    for a in (ax, ax2):  # legends below the panels, clear of the curves
        handles, labels = a.get_legend_handles_labels()
        uniq = dict(zip(labels, handles, strict=True))
        a.legend(uniq.values(), uniq.keys(), frameon=False, fontsize="x-small", ncol=2, loc="upper center",
                 bbox_to_anchor=(0.5, -0.18))
    return fig


def analyse(results_dir: Path | str, profile: str) -> harness.Analysis:
    """Per device the summary by block size and the model's fit (against the device model's own
    for the emulated devices), the span curve, the 64K comparison, the figure, tables and macros."""
    res = harness.open_results(results_dir, lambda d: (load(d), None))
    out, trials_, skipped = res.out, res.trials, res.skipped
    modelled = load_modelled(out)
    found = sorted(set(trials_["disk_profile"]), key=lambda d: (d != "own", d))
    notes = [f"{len(trials_)} trials on {', '.join(found)}; kernel {res.provenance['machine']['kernel']}, "
             f"profile {profile}", *([skipped] if skipped else [])]
    summaries, fits, model_fits = {}, {}, {}
    for d in found:
        summaries[d] = summarise(trials_[trials_["disk_profile"] == d])
        fits[d] = fit(trials_[trials_["disk_profile"] == d])
        if d in modelled:
            model_fits[d] = fit_modelled(modelled[d])
        t, bw = fits[d]["t_access"], fits[d]["bandwidth"]
        line = (f"{d}: t_access = {t.value * 1e3:.4g} ms [{t.ci_low * 1e3:.4g}, {t.ci_high * 1e3:.4g}], "
                f"BW = {bw.value / 1e6:.4g} MB/s")
        if d in model_fits:
            rec = recovery(fits[d], model_fits[d])
            line += (f"; device model: {model_fits[d]['t_access'].value * 1e3:.4g} ms, "
                     f"{model_fits[d]['bandwidth'].value / 1e6:.4g} MB/s; "
                     f"recovered within {100 * max(rec.values()):.3g} %")
        notes.append(line)
    m = macros(summaries["own"], fits["own"], res.provenance, profile)
    for d in found:
        if d != "own":
            m.update(device_macros(d, summaries[d], fits[d], model_fits.get(d)))
    m["SeekmodelDevices"] = escape(", ".join(found))
    m["SeekmodelSkipped"] = escape(skipped or "none")
    notes += [f"t_access = {m['SeekmodelTAccessUs']} us  [{m['SeekmodelTAccessLoUs']}, {m['SeekmodelTAccessHiUs']}]",
              f"BW       = {m['SeekmodelBandwidthMBps']} MB/s  [{m['SeekmodelBandwidthLoMBps']}, "
              f"{m['SeekmodelBandwidthHiMBps']}]",
              f"64K random read: measured {m.get('SeekmodelSixtyFourKMBps', 'n/a')} MB/s, "
              f"fit {m['SeekmodelFitSixtyFourKMBps']} MB/s; the seed's model on its disk "
              f"{m['SeekmodelSeedModelSixtyFourKMBps']} MB/s"]
    curve = seek_curve(load(out, spans=True), load_modelled_spans(out))
    rpm = devices.profile_value("hdd5400-2008", "rpm")
    models64k = compare_64k(summaries, fits, modelled, rpm)
    m["SeekmodelSeedRotationSixtyFourKMBps"] = fmt(seed_model_with_rotation_mbps(rpm))
    m.update(span_macros(curve))
    # the coverage of every median's order-statistic interval (block sizes and spans) at its n
    m["SeekmodelIntervals"] = interval_name([n for s in summaries.values() for n in s["n"]]
                                            + (list(curve["n"]) if len(curve) else []), latex=True)
    tab = pd.concat([table(summaries[d], fits[d]).assign(Device=d) for d in found])
    tab = tab[["Device"] + [c for c in tab.columns if c != "Device"]]
    meas: dict[str, Any] = {}
    for d in found:
        meas.update(measurements(summaries[d], fits[d], d))
    return harness.Analysis(
        res, res.describe(profile), pd.concat([s.assign(device=d) for d, s in summaries.items()]), meas,
        placeholder_macros(m), harness.Table(tab, "llrlll"),
        {NAME: lambda: figure(trials_, summaries, fits, curve, found, profile)},
        tables={"models64k.tex": harness.Table(models64k, "llllll"),
                "spans.tex": harness.Table(span_table(curve), "llrll")},
        shown={"4 KiB random reads by span against the device model": curve,
               "Random Read 64K: measurement against the models": models64k,
               "outliers (Tukey)": harness.outliers(trials_, ["disk_profile", "bs"], "seconds_per_io")},
        notes=notes)


EXPERIMENT = harness.Experiment(
    own_hardware={"seekmodel.own.": "this machine's disk"},
    name=NAME, analyse=analyse, paper_order=20, seeds=("003",), configurations=configurations, trial=run_trial,
    metric=lambda r: r["seconds_per_io"], columns=tuple(SCALARS), required_columns=tuple(REQUIRED_COLUMNS),
    tools=lambda cfg: ["iobench"] + (["simdisk"] if any(d != OWN for d in usable_devices(cfg)[0]) else []),
    conf_name=conf_name, warmups=warmups, changes_state=lambda cfg: any(d != OWN for d in usable_devices(cfg)[0]),
    cleanup=_cleanup, finish=_finish, note=lambda cfg: usable_devices(cfg)[1],
    requires=harness.Requirements())
