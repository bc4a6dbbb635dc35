"""The paper's reproducibility appendix, generated: machine fingerprint, paging state, tool and
package versions, each experiment's config hash, commit, trials and run time, and for each
claim the command that reproduces it.
"""

from __future__ import annotations

import csv
import importlib.metadata
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from pagelab.claims.changelog import changelog_problems, load_changelog
from pagelab.claims.registry import load_claims
from pagelab.core.latex import escape, escape_breakable, fmt, macros_text, write_table
from pagelab.core.paths import root
from pagelab.core.records import write_text_atomic
from pagelab.data.recording import source
from pagelab.experiments.harness import read_json
from pagelab.run import sequential, timing, tools
from pagelab.run.trialtimes import read_records
from pagelab.system import provenance, state

PACKAGES = ["snakemake", "papermill", "numpy", "scipy", "pandas", "seaborn", "matplotlib", "statsmodels"]


def virtualisation() -> str:
    if shutil.which("systemd-detect-virt"):
        out = subprocess.run(["systemd-detect-virt"], capture_output=True, text=True)
        if out.stdout.strip():
            return out.stdout.strip()
    try:
        flags = Path("/proc/cpuinfo").read_text()
        return "a hypervisor (cpuinfo flag)" if " hypervisor" in flags else "none detected"
    except OSError:
        return "unknown"


def tool_versions() -> dict[str, str]:
    out = {}
    for name in tools.names():
        path = root() / "native" / "build" / name
        if path.exists():
            out[name] = provenance.tool_version(path)
    for cmd in (["fio", "--version"], ["latexmk", "-v"], ["gcc", "--version"]):
        if shutil.which(cmd[0]):
            res = subprocess.run(cmd, capture_output=True, text=True)
            lines = [ln for ln in res.stdout.splitlines() if ln.strip()]
            out[cmd[0]] = lines[0] if lines else "unknown"
    for pkg in PACKAGES:
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out


def experiment_rows(results: Path, experiments: list[str]) -> list[dict[str, Any]]:
    rows = []
    for exp in experiments:
        d = results / exp
        prov = read_json(d, "provenance.json") or {}
        trials = list(csv.DictReader(open(d / "trials.csv"))) if (d / "trials.csv").exists() else []
        finished = [t for t in trials if t.get("status") == "ok" and t.get("warmup") in ("False", "false", "0")]
        counted = [t for t in finished if t.get("valid", "True") not in ("False", "false", "0")]
        bench = d.parent / "benchmarks" / f"{exp}.tsv"
        seconds, note = "", ""
        if prov.get("recorded_machine") and trials:
            # rebuilt from a recording: the benchmark file times the replay, so the run's time is
            # its trials' span, first start to last end, less the time the run stood stopped
            # between two processes (a run stopped and resumed: pagelab.run.timing)
            et = timing.experiment_time(exp, read_records(d))
            if et.trials:
                stopped = et.phases.get(timing.STOPPED, 0.0)
                seconds = f"{et.span - stopped:.0f}"
                if stopped:
                    note = f"stopped and resumed: {stopped:.0f} s stopped, not counted"
        elif bench.exists():
            rowsb = list(csv.DictReader(open(bench), delimiter="\t"))
            seconds = f"{float(rowsb[-1]['s']):.0f}" if rowsb else ""
        if (d / "skipped.txt").exists():
            note = (d / "skipped.txt").read_text().strip()
        git = prov.get("git", {})
        rows.append({"experiment": exp, "trials": len(counted), "rejected": len(finished) - len(counted),
                     "seconds": seconds,
                     "config_hash": prov.get("config_hash", ""),
                     "commit": (git.get("commit") or "")[:10] + ("+dirty" if git.get("dirty") else ""),
                     "note": note})
    return rows


def measured_where(src: dict[str, str], profile: str) -> str:
    """Where the paper's numbers were measured (`src`: recording.source), as the abstract and the
    appendix say it."""
    if src["recorded"] == "yes":
        return (f"measured on the reference machine {src['machine']}, by this repository's pipeline "
                f"({profile} profile), and rebuilt into this document from that recording without running a trial")
    return f"measured on the machine that built this document, by the pipeline that built it ({profile} profile)"


def stopping_macros() -> dict[str, str]:
    """The verdict stopping rule's parameters as the method section states them: the schema's
    defaults (definitions.repetitions), which no profile overrides."""
    d = sequential.defaults()
    return {"StoppingLookEvery": str(int(d["verdict_look_every"])),
            "StoppingInterimLevel": f"{float(d['verdict_interim_level']):g}",
            "StoppingMarginPct": f"{float(d['verdict_margin_pct']):g}\\,\\%"}


def write(results: Path | str, out_dir: Path | str, experiments: list[str], profile: str) -> None:
    results, out_dir = Path(results), Path(out_dir)
    provs = [p for e in experiments if (p := read_json(results / e, "provenance.json"))]
    any_prov = provs[0] if provs else {}
    src = source(results)
    # the machine the trials ran on, as their provenance says: a paper rebuilt from a recording
    # describes the recording's machine, not the one that rebuilt it
    m = {**provenance.machine(), **any_prov.get("machine", {})}
    # experiments recorded at different times may have run on different kernel builds: name each
    kernels = [k for p in provs if (k := p.get("machine", {}).get("kernel"))]
    if kernels:
        m["kernel"] = " and ".join(dict.fromkeys(kernels))
    disk = any_prov.get("disk", provenance.block_device_of("."))
    knobs = state.show()["knobs"]
    macros = {
        "AppendixKernel": escape(m["kernel"]),
        "AppendixCPU": escape(m["cpu_model"]),
        "AppendixCores": str(m["cpus"]),
        "AppendixMemGiB": f"{(m['mem_total_bytes'] or 0) / 2**30:.1f}",
        "AppendixDisk": escape(f"{disk.get('model', 'unknown')} ({disk.get('disk', '?')}, "
                               f"{'rotational' if disk.get('rotational') else 'non-rotational'}, "
                               f"scheduler {disk.get('scheduler', '?')})"),
        "AppendixVirt": escape("not recorded" if src["recorded"] == "yes" else virtualisation()),
        "AppendixProfile": profile,
        "MeasuredWhere": escape(measured_where(src, profile)),
        "AppendixClaimsCommit": escape(claims_commit()),
        "AppendixDataSource": escape(data_source(src)),
        **stopping_macros(),
    }

    write_text_atomic(out_dir / "macros.tex", macros_text({**macros, **write_changelog(out_dir)}) + device_settings())

    knob_rows = pd.DataFrame({"Setting": [escape(k) for k in knobs], "Value": [escape(str(v)) for v in knobs.values()]})
    write_table(out_dir / "knobs.tex", knob_rows, column_format="ll")
    versions = tool_versions()
    write_table(out_dir / "versions.tex", pd.DataFrame({
        "Tool or package": [escape(k) for k in versions], "Version": [escape(v) for v in versions.values()]}),
        column_format="lp{0.6\\linewidth}")
    exp_rows = experiment_rows(results, experiments)
    write_table(out_dir / "experiments.tex", pd.DataFrame({
        "Experiment": [r"\texttt{" + escape(r["experiment"]) + "}" for r in exp_rows],
        "Trials": [str(r["trials"]) for r in exp_rows],
        "Rejected": [str(r["rejected"]) for r in exp_rows],
        "Run (s)": [r["seconds"] for r in exp_rows],
        "Config hash": [r"\texttt{" + escape(r["config_hash"]) + "}" for r in exp_rows],
        "Commit": [r"\texttt{" + escape(r["commit"]) + "}" for r in exp_rows],
        "Note": [escape(r["note"]) for r in exp_rows],
    }), column_format="llrrlll")
    claims = load_claims()
    # n per claim: the counted trials of the configurations the claim's measurement uses (as
    # the verdict table reports them), not the experiment's total.
    verdicts = results / "claims" / "verdicts.csv"
    n_by_claim = {r["id"]: r["n"] for r in csv.DictReader(open(verdicts))} if verdicts.exists() else {}
    write_table(out_dir / "claims.tex", pd.DataFrame({
        "Claim": [escape(c) for c in claims["id"]],
        "Experiment": [r"\texttt{" + escape(e) + "}" for e in claims["experiment"]],
        "Command": [r"\texttt{snakemake results/" + escape(e) + "/measurements.json}" for e in claims["experiment"]],
        "n": [escape(n_by_claim.get(c) or "--") for c in claims["id"]],
    }), column_format="llll")



CHANGELOG_CELL = 140  # characters of an old or new value the paper prints (the CSV has all)


def write_changelog(out_dir: Path) -> dict[str, str]:
    """The pre-registration's changelog (data/published/claims_changelog.csv) as a longtable
    (changelog.tex); returns the macros saying how many rows it has and what the check against
    the recordings' commits finds."""
    log = load_changelog()

    def cell(text: str) -> str:
        text = text or "(empty)"
        return escape_breakable(text if len(text) <= CHANGELOG_CELL
                                else text[:CHANGELOG_CELL].rsplit(" ", 1)[0] + " [...]")

    rag = ">{\\raggedright\\arraybackslash}p"
    write_table(out_dir / "changelog.tex", pd.DataFrame({
        "Date": log["date"],
        "Claim": [f"{escape(c)}\\newline\\texttt{{{escape_breakable(col)}}}"
                  for c, col in zip(log["claim"], log["column"], strict=True)],
        "Old": log["old"].map(cell), "New": log["new"].map(cell), "Reason": log["reason"].map(escape_breakable),
        "Verdicts before": log["verdicts_before"].map(escape), "Verdicts after": log["verdicts_after"].map(escape),
    }), column_format=f"l {rag}{{0.1\\linewidth}} {rag}{{0.13\\linewidth}} {rag}{{0.13\\linewidth}} "
                      f"{rag}{{0.22\\linewidth}} {rag}{{0.11\\linewidth}} {rag}{{0.11\\linewidth}}",
        caption="The pre-registration's changelog: every change to how a claim is judged since the first "
                "recorded run (a judging column of \\texttt{data/published/claims.csv}, a parameter of the stopping "
                "rule, a rule of the judge, a recording made again), with its reason and the verdicts before and "
                "after on each recorded run.", label="tab:app-changelog", environment="longtable")
    problems, skip = changelog_problems()
    check = (f"the check against the recordings' commits could not run here: {skip}" if skip else
             "the check against every recording's commit finds " +
             (f"{len(problems)} judging change(s) without a row: {'; '.join(problems)}" if problems else
              "no judging change without a row"))
    return {"AppendixChangelogRows": str(len(log)), "AppendixChangelogCheck": escape(check)}


def data_source(src: dict[str, str]) -> str:
    """Which machine and commit the paper's data came from (`src`: recording.source), in words."""
    at = (f"at commits {src['commit']} (each experiment's in the appendix)" if "," in src["commit"]
          else f"at commit {src['commit']}")
    if src["recorded"] == "yes":
        return f"data recorded on the reference machine {src['machine']} {at}, rebuilt here without running a trial"
    return f"data measured on this machine ({src['machine']}) {at}"


def claims_commit() -> str:
    """The commit that last changed data/published/claims.csv (the windows were fixed there,
    before the run), '+ local edits' when the file differs from it."""
    path = "data/published/claims.csv"
    out = subprocess.run(["git", "log", "-1", "--format=%h %cs", "--", path], cwd=root(), capture_output=True,
                         text=True)
    if out.returncode != 0 or not out.stdout.strip():
        return "not committed"
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", path], cwd=root()).returncode != 0
    return out.stdout.strip() + (" + local edits" if dirty else "")


def device_settings() -> str:
    """Every numeric setting of every device profile (config/devices/*.yaml) as LaTeX data that
    \\Dev{profile}{key} reads (main.tex), e.g. \\Dev{hdd5400-2008}{avg_seek_ms}, so the paper
    never types a datasheet value and each value is its own profile's."""
    lines = ["% Generated by the pipeline from config/devices/*.yaml; read with \\Dev{profile}{key}."]
    for path in sorted((root() / "config" / "devices").glob("*.yaml")):
        for key, value in (yaml.safe_load(path.read_text()) or {}).items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            text = fmt(float(value)) if not float(value).is_integer() else str(int(value))
            lines.append(f"\\expandafter\\def\\csname pagelabdev@{path.stem}@{key}\\endcsname{{{text}}}")
    return "\n".join(lines) + "\n"
