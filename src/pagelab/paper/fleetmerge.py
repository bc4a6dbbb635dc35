"""The merge of what a fleet's hosts sent back (pagelab.run.fleet ran their jobs), and the
paper's section on it.

The merge reads whatever came back under results/fleet/<host>/<experiment>/: one row per host
with its labels, the experiments that completed and the ones missing (with the reason when one
is known), each host's headline medians, `pagelab compare` of the host against the baseline
host, and the host's verdict counts. A host that failed or never answered is named as missing;
it never makes the merge fail. results/fleet/section.tex, the paper's section, shows it.

The command (defined in pagelab.cli, calling this module):
  pagelab fleet merge --plan JSON --results DIR --csv CSV --tex TEX  (and headlines.pdf beside TEX)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from pagelab.analysis import compare
from pagelab.claims import judge
from pagelab.core import plots
from pagelab.core.latex import escape, fmt, wide_table
from pagelab.core.records import write_text_atomic
from pagelab.core.stats import coverage_label
from pagelab.experiments.harness import load_claims
from pagelab.run.fleet import read_plan


def _log_reason(log: Path) -> str:
    try:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    for ln in reversed(lines):
        if ln.startswith("pagelab") or "Error" in ln or "error" in ln:
            return ln[:200]
    return lines[-1][:200] if lines else ""


def job_status(results: Path, logs: Path, host: str, experiment: str) -> tuple[str, str]:
    """('complete', '') when trials.csv came back; otherwise ('failed', reason) when the job
    left a log or trial records, ('missing', reason) when nothing came back at all."""
    d = results / host / experiment
    if (d / "trials.csv").exists():
        return "complete", ""
    log = logs / host / f"{experiment}.log"
    if log.exists():
        return "failed", _log_reason(log) or "the job failed (see its log)"
    if (d / "trials").is_dir() and any((d / "trials").iterdir()):
        return "failed", "the job stopped before its trials were complete"
    return "missing", "no result: the host was unreachable or the job never ran"


def _measurements(results: Path, host: str, experiments: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for e in experiments:
        path = results / host / e / "measurements.json"
        try:
            out.update(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return out


def headline_keys(plan_: dict[str, Any], per_host: dict[str, dict[str, Any]], limit: int = 3) -> list[str]:
    """The measured values (with a CI) a claim names (data/published/claims.csv) that some host has; where an
    experiment has none of those, its first `limit` keys."""
    try:
        named = set(load_claims()["measurement"].dropna())
    except (OSError, KeyError, ValueError):
        named = set()
    # measured values only (a median with its interval), not a model's constants
    have = sorted({k for m in per_host.values() for k, v in m.items()
                   if isinstance(v, dict) and v.get("ci_low") is not None and v.get("ci_high") is not None})
    exps = list(dict.fromkeys(e for h in plan_["hosts"] for e in h["experiments"]))
    keys: list[str] = []
    for e in exps:
        mine = [k for k in have if k.split(".")[0] == e]
        chosen = [k for k in mine if k in named] or mine[:limit]
        keys += chosen
    return keys


def _fmt(entry: dict[str, Any] | None) -> str:
    """A measurement as the merge shows it: "1.56 [1.00, 2.02] (93.75 %)", its interval named by
    the coverage it has at its n (judge.coverage, as the verdict table names it)."""
    if not entry or entry.get("value") is None:
        return ""
    lo, hi = entry.get("ci_low"), entry.get("ci_high")
    s = fmt(entry["value"])
    if lo is not None and hi is not None:
        s += f" [{fmt(lo)}, {fmt(hi)}] ({coverage_label(judge.coverage(entry))})"
    return s


def merge(plan_: dict[str, Any], results: Path | str = "results/fleet", logs: Path | str = "results/logs/fleet",
          noise: float | None = None) -> pd.DataFrame:
    """One row per host: labels, status, completed and missing experiments, headline medians with
    their CIs, each named by its coverage (_fmt), the comparison with the baseline host (counts of
    same/faster/slower/different) and the verdict counts of the claims of the experiments the host ran."""
    results, logs = Path(results), Path(logs)
    noise = compare.NOISE if noise is None else noise
    base = plan_.get("baseline", "")
    rows: list[dict[str, Any]] = []
    per_host = {h["name"]: _measurements(results, h["name"], h["experiments"]) for h in plan_["hosts"]}
    heads = headline_keys(plan_, per_host)
    label_names = sorted({k for h in plan_["hosts"] for k in h["labels"]})
    for h in plan_["hosts"]:
        name = h["name"]
        status = {e: job_status(results, logs, name, e) for e in h["experiments"]}
        done = [e for e, (s, _) in status.items() if s == "complete"]
        lacking = {e: f"{s}: {why}" for e, (s, why) in status.items() if s != "complete"}
        row: dict[str, Any] = {"host": name, **{f"label:{k}": h["labels"].get(k, "") for k in label_names}}
        row["status"] = "complete" if not lacking else ("missing" if not done else "partial")
        row["completed"] = " ".join(done)
        row["missing"] = "; ".join(f"{e} ({why})" for e, why in lacking.items())
        for k in heads:
            row[f"median:{k}"] = _fmt(per_host[name].get(k))
        if not done:
            row["vs_baseline"] = "no results"
        elif name == base:
            row["vs_baseline"] = "baseline"
        else:
            try:
                cmp_rows = compare.compare(results / base, results / name, noise=noise)
                words = pd.Series([r.word for r in cmp_rows]).value_counts().to_dict() if cmp_rows else {}
                row["vs_baseline"] = ", ".join(f"{words.get(w, 0)} {w}" for w in
                                               ("same", "faster", "slower", "different"))
            except (ValueError, OSError) as exc:
                row["vs_baseline"] = f"not compared: {str(exc)[:120]}"
        if done:
            table = judge.verdicts(results / name, load_claims(), profile=plan_.get("profile", "quick"))
            table = table[table["experiment"].isin(done)]
            for v, n in judge.counts(table).items():
                row[f"verdict:{v}"] = n
        else:
            for v in judge.VERDICTS:
                row[f"verdict:{v}"] = 0
        rows.append(row)
    return pd.DataFrame(rows)


def headlines(plan_: dict[str, Any], results: Path | str = "results/fleet") -> pd.DataFrame:
    """The headline measurements (`headline_keys`) by host, long form: host, measurement,
    value, ci_low, ci_high, unit, and the interval's coverage at its n (judge.coverage); a host
    without the measurement has no row."""
    results = Path(results)
    per_host = {h["name"]: _measurements(results, h["name"], h["experiments"]) for h in plan_["hosts"]}
    rows = [{"host": host, "measurement": k, "value": e["value"], "ci_low": e["ci_low"],
             "ci_high": e["ci_high"], "unit": e.get("unit", ""), "coverage": judge.coverage(e)}
            for k in headline_keys(plan_, per_host) for host, m in per_host.items()
            if isinstance(e := m.get(k), dict) and e.get("value") is not None]
    return pd.DataFrame(rows, columns=["host", "measurement", "value", "ci_low", "ci_high", "unit", "coverage"])


def missing_hosts(frame: pd.DataFrame) -> list[str]:
    return [r.host for r in frame.itertuples() if r.status != "complete"]


def section(frame: pd.DataFrame, plan_: dict[str, Any], figure: str | None = None) -> str:
    """results/fleet/section.tex: the fleet's hosts, what came back, the headline measurements
    by host (`figure`, a path the paper's TEXINPUTS resolves, when there is one) and the merge
    table."""
    hosts_ = [h["name"] for h in plan_["hosts"]]
    lacking = missing_hosts(frame) if len(frame) else hosts_
    out = ("\\section{The fleet}\\label{sec:fleet}\n"
           f"The experiments ran on {len(hosts_)} host(s) ({escape(', '.join(hosts_))}) in the "
           f"{escape(plan_.get('profile', 'quick'))} profile, one measurement job per host at a time; "
           f"each host is compared with the baseline host {escape(plan_.get('baseline', ''))} by "
           "\\texttt{pagelab compare} (counts of same, faster, slower, different).\n")
    if lacking:
        out += ("Hosts without complete results: " + escape(", ".join(lacking)) + ".\n")
    else:
        out += "Every host returned every experiment.\n"
    if not len(frame):
        return out
    if figure:
        out += ("\\begin{figure*}[htbp]\n\\centering\n"
                f"\\includegraphics[width=\\textwidth]{{{figure}}}\n"
                "\\caption{The headline measurements by host: medians with their intervals (each "
                "host's own trials), each panel named by the coverage its intervals have at their n.}\n"
                "\\label{fig:fleet}\n\\end{figure*}\n")
    show = frame.copy()
    verdict_cols = [c for c in show.columns if c.startswith("verdict:")]
    show["verdicts"] = [", ".join(f"{int(r[c])} {c.split(':', 1)[1]}" for c in verdict_cols if int(r[c]))
                        for _, r in show.iterrows()]
    cols = ["host"] + [c for c in show.columns if c.startswith("label:")] + ["status", "missing"] + \
        [c for c in show.columns if c.startswith("median:")] + ["vs_baseline", "verdicts"]
    tex = show[cols].astype(str).map(escape)
    tex.columns = [escape(c.split(":", 1)[-1]) for c in cols]
    body = tex.style.hide(axis="index").to_latex(hrules=True, column_format="l" * len(cols))
    # one column per label and headline median, one row per host
    return out + wide_table(body, "The fleet by host: status, headline medians with their intervals and, in "
                            "parentheses, each interval's coverage at its n, the comparison with the baseline "
                            "host and the verdict counts.", "tab:fleet")


def write_merge(plan_path: Path | str, results: Path | str, csv_path: Path | str, tex_path: Path | str,
                logs: Path | str = "results/logs/fleet") -> pd.DataFrame:
    plan_ = read_plan(plan_path)   # before anything is written
    frame = merge(plan_, results, logs)
    heads = headlines(plan_, results)
    fig_path = Path(tex_path).with_name("headlines.pdf")
    plots.theme()
    plots.save(plots.intervals_by_host(heads) if len(heads)
               else plots.message("no host returned a headline measurement"), fig_path)
    figure = f"{fig_path.parent.name}/{fig_path.name}" if len(heads) else None
    write_text_atomic(csv_path, frame.to_csv(index=False))
    write_text_atomic(tex_path, section(frame, plan_, figure))
    return frame
