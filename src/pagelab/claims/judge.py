"""Published claims against our measurements: the verdict table, computed, never typed.

Each experiment writes results/<name>/measurements.json: {key: {value, ci_low, ci_high, unit,
n, method}}. Each claim in data/published/claims.csv names the measurement that is its most
faithful twin, a window written down before any run, its kind and the profiles it may be
judged in (see pagelab.claims.registry). Six verdicts:
- reproduced: the whole interval (the order-statistic interval of the median, named by the
  coverage it has at its n: 93.75 % at n = 5) lies inside the window;
- not reproduced: the whole CI lies outside it;
- inconclusive: only where more trials could settle it, saying how many: the CI straddles an
  edge (more trials narrow it as 1/sqrt(n) around the same median), or fewer counted trials
  than the profile needs (config.MIN_TRIALS) stand behind it. Where more than MAX_MORE more
  trials would be needed (the median sits on the edge), more trials cannot settle it and the
  verdict is the one the median's side of the edge supports, with a note saying so;
- by construction: the value really follows from inputs of a device model or is arithmetic:
  ours is shown beside it and never counted as reproduced;
  a value the sizes make (a measurement that carries `construction`: nothing was pushed out
  where the working set and the hogs fit in the RAM) is by construction too;
- not measurable here: the measurement (any step of an order) is censored in half or more of
  its trials or rounds: the criterion was met when the clock started ("at the start") or not
  within the watch ("> watch"), so no median of measured values stands behind it; never
  reproduced or not reproduced, the note says which arm's criterion and how often;
- not applicable here: the experiment did not run (with its reason), the claim is judged only
  at another profile's scale, or it is an absolute figure (point, range, bound) that depends
  on hardware the seed does not name (`hardware: unnamed: ...`; ours is shown, not judged), or
  a ratio that keeps the balance of two such parts (`hardware: unnamed balance: ...`).
A sensitivity row (`sensitivity`: the id of the claim whose twin it varies) is judged the same
way and shown beside its claim; it is not one of the published claims the counts add up.
Kinds (registry.KINDS): a point or a ratio against its window (x0.8-x1.25 unless a reason
says otherwise), a range or a bound from the seed's words against that range (no other rule),
and an order step by step: each step's ratio (an arm over the next, paired round by round)
against a window around the seed's own step; the order is reproduced when every step is, not
reproduced when any step's CI lies outside its window (a step of 1.0 against the seed's 0.3
is not the seed's order however the arms' intervals overlap), inconclusive otherwise.

The recorded runs' measurements (data/published/recorded_measurements.json, rebuilt from
data/recorded/ by `pagelab claims recorded`) let every claim be judged on every
recording without running a trial: the changelog's verdicts before and after a change, and
the verdict figure.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from pagelab.claims import changelog, registry
from pagelab.claims.registry import (
    ABSOLUTE,
    judged_at,
    kind,
    steps,
    unnamed_balance,
    unnamed_hardware,
    windows,
)
from pagelab.core.latex import escape, fmt, write_macros, write_table
from pagelab.core.notebooks import dumps as notebook_text
from pagelab.core.notebooks import notebook as experiment_notebook
from pagelab.core.pages import render
from pagelab.core.paths import root
from pagelab.core.prose import listed
from pagelab.core.records import write_text_atomic
from pagelab.core.stats import coverage_label, median_censored, median_rank
from pagelab.data.recording import recorded_dir, replay
from pagelab.system.config import MIN_TRIALS, PROFILES

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"
BY_CONSTRUCTION, NOT_APPLICABLE = "by construction", "not applicable here"
NOT_MEASURABLE = "not measurable here"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, BY_CONSTRUCTION, NOT_MEASURABLE, NOT_APPLICABLE)
MAX_MORE = 200  # more trials per configuration than this: more trials cannot settle it


def load_measurements(results_dir: Path | str) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Every experiment's measurements (keys are global and start with the experiment's
    name) and every experiment's skip reason."""
    measurements: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    for path in sorted(Path(results_dir).glob("*/measurements.json")):
        try:
            doc = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON ({exc.msg})") from exc
        for key, m in doc.items():
            if not key.startswith(path.parent.name + "."):
                raise ValueError(f"{path}: key {key!r} must start with {path.parent.name}.")
            if "value" not in m:
                raise ValueError(f"{path}: measurement {key!r} has no value")
            measurements[key] = m
    for path in sorted(Path(results_dir).glob("*/skipped.txt")):
        skipped[path.parent.name] = path.read_text().strip().splitlines()[0]
    return measurements, skipped


def coverage(m: dict[str, Any]) -> float:
    """The exact coverage of a measurement's interval: the one it carries, else that of the
    order-statistic interval of a median of its n values (stats.median_rank, the function that
    computes the interval; every experiment's medians and paired ratios are such)."""
    if m.get("coverage") is not None and m["coverage"] == m["coverage"]:
        return float(m["coverage"])
    n = int(m.get("n", 0) or 0)
    return median_rank(n)[1] if n >= 2 else math.nan


def _ci(m: dict[str, Any]) -> tuple[float, float]:
    return float(m.get("ci_low", m["value"])), float(m.get("ci_high", m["value"]))


def trials_needed(n: int, point: float, lo: float, hi: float, edge: float) -> int | None:
    """Roughly how many more trials would move the CI's side that crosses `edge` off it, if the
    CI narrows as 1/sqrt(n) around the same point; None when more than MAX_MORE (or any number)
    would be needed: the point sits on the edge."""
    side = (point - lo) if point >= edge else (hi - point)
    gap = abs(point - edge)
    if gap == 0 or not math.isfinite(side) or n <= 0:
        return None
    extra = max(math.ceil(n * (side / gap) ** 2), n + 1) - n
    return extra if extra <= MAX_MORE else None


def more_trials(n: int, point: float, lo: float, hi: float, edge: float) -> str:
    extra = trials_needed(n, point, lo, hi, edge)
    if extra is None:
        return (f"more than {MAX_MORE} more trials would be needed: the median sits at the window's edge, "
                "and more trials cannot settle it")
    return f"about {extra} more trial{'s' if extra != 1 else ''} per configuration would settle it"


def _ours(m: dict[str, Any]) -> str:
    """Ours as the table shows it: "1.56 [1.00, 2.02]", an unbounded edge "inf"; a measurement
    censored in half or more of its trials as its count ("censored 5/5"), never a number."""
    if is_censored(m):
        return f"censored {int(m['censored'])}/{int(m['n'])}"
    lo, hi = _ci(m)

    def one(x: float) -> str:
        return "inf" if x == math.inf else fmt(x)

    v = float(m["value"])
    return f"{one(v)} [{one(lo)}, {one(hi)}]" if (lo, hi) != (v, v) else one(v)


def _window_text(lo: float, hi: float) -> str:
    if lo == hi:
        return fmt(lo)
    if math.isinf(hi):
        return f">= {fmt(lo)}"
    if math.isinf(lo):
        return f"<= {fmt(hi)}"
    return f"[{fmt(lo)}, {fmt(hi)}]"


def published_number(claim: dict[str, str]) -> float:
    """The published value as a number (a range's midpoint); NaN for an order."""
    try:
        parts = [float(p) for p in claim["value"].split("-")] if claim["value"][:1].isdigit() else []
    except ValueError:
        parts = []
    return sum(parts) / len(parts) if parts else math.nan


def judge_window(m: dict[str, Any], lo_w: float, hi_w: float) -> tuple[str, str]:
    """One value with its CI against one window: (verdict, note)."""
    lo, hi = _ci(m)
    v, n = float(m["value"]), int(m.get("n", 0) or 0)
    if lo_w <= lo and hi <= hi_w:
        return REPRODUCED, ""
    if hi < lo_w or lo > hi_w:
        return NOT_REPRODUCED, "ours lies below the window" if hi < lo_w else "ours lies above the window"
    edge = lo_w if lo < lo_w else hi_w
    inside = lo_w <= v <= hi_w
    if trials_needed(n, v, lo, hi, edge) is None:
        return (REPRODUCED if inside else NOT_REPRODUCED,
                f"the median lies {'inside' if inside else 'outside'} the window and its interval crosses the "
                f"edge; {more_trials(n, v, lo, hi, edge)}: judged by the median")
    note = ("the interval crosses the window's edge; " if inside else
            "the point estimate lies outside the window, the interval reaches in; ")
    return INCONCLUSIVE, note + more_trials(n, v, lo, hi, edge)


def is_censored(m: dict[str, Any]) -> bool:
    """A measurement whose median is censored (half or more of its trials or rounds censored,
    stats.median_censored): not measurable here."""
    return median_censored(int(m.get("censored", 0) or 0), int(m.get("n", 0) or 0))


def step_name(key: str) -> str:
    """A measurement as a verdict's note names it: its key's last part, in words
    ("readyboost.ratio.tier_after_vs_hdd_between" -> "tier after / hdd between")."""
    return key.rsplit(".", 1)[-1].replace("_vs_", " / ").replace("_", " ")


def censored_steps(keys: list[str], ms: list[dict[str, Any]]) -> list[str]:
    """Per censored step: how often and why ("tier between / hdd between: 5 of 5 censored (...)")."""
    return [f"{step_name(key)}: {int(m['censored'])} of {int(m['n'])} censored"
            + (f" ({m['censoring']})" if m.get("censoring") else "")
            for key, m in zip(keys, ms, strict=True) if is_censored(m)]


def _combine_steps(verdicts_: list[tuple[str, str]], keys: list[str]) -> tuple[str, str]:
    """An order's verdict from its steps': reproduced when every step is, not reproduced when
    any step's interval lies outside its window, inconclusive otherwise."""
    def named(i: int, note: str) -> str:
        return f"step {i + 1} ({step_name(keys[i])}): {note}"

    out = [i for i, (v, _) in enumerate(verdicts_) if v == NOT_REPRODUCED]
    if out:
        return NOT_REPRODUCED, "; ".join(named(i, verdicts_[i][1] + ", outside the seed's step") for i in out)
    if all(v == REPRODUCED for v, _ in verdicts_):
        return REPRODUCED, "; ".join(named(i, n) for i, (_, n) in enumerate(verdicts_) if n)
    return INCONCLUSIVE, "; ".join(named(i, n) for i, (v, n) in enumerate(verdicts_) if v == INCONCLUSIVE)


def judge(claim: dict[str, str], measurements: dict[str, dict[str, Any]], skipped: dict[str, str],
          profile: str = "quick") -> dict[str, Any]:
    """One claim's verdict row: verdict, ours, value/ci/n, ratio to the published value, note."""
    k, keys, wins = kind(claim), steps(claim), windows(claim)
    row: dict[str, Any] = {"kind": k, "window": "; ".join(_window_text(lo, hi) for lo, hi in wins), "ours": "",
                           "value": math.nan, "ci_low": math.nan, "ci_high": math.nan, "ratio": math.nan, "n": "",
                           "interval": "", "note": ""}
    if not judged_at(claim, profile):
        profiles = claim["profiles"].split()
        return {**row, "verdict": NOT_APPLICABLE,
                "note": f"judged only at the {' or '.join(profiles)} profile's scale "
                        f"(make PROFILE={profiles[0]}); this run is {profile}"}
    missing = [key for key in keys if key not in measurements]
    if missing:
        why = skipped.get(claim["experiment"], f"not measured ({missing[0]})")
        return {**row, "verdict": NOT_APPLICABLE, "note": why}
    ms = [measurements[key] for key in keys]
    ns = [int(m.get("n", 0) or 0) for m in ms]
    row["n"] = "/".join(str(n) for n in ns)
    row["ours"] = "; ".join(_ours(m) for m in ms)
    # a censored measurement has no value to show: no coverage, no value, no ratio to the
    # published one (its stored value is a placeholder: 0 or inf); a single value (the seed's
    # formula evaluated) has no interval to name; an order's such step is "-"
    covs = [math.nan if is_censored(m) else coverage(m) for m in ms]
    labels = ["" if math.isnan(c) else coverage_label(c) for c in covs]
    row["interval"] = "; ".join(label or "-" for label in labels) if any(labels) else ""
    if k != "order" and not is_censored(ms[0]):
        lo, hi = _ci(ms[0])
        row.update(value=float(ms[0]["value"]), ci_low=lo, ci_high=hi)
        pub = published_number(claim)
        if math.isfinite(pub) and pub != 0:
            row["ratio"] = row["value"] / pub
    hardware = unnamed_hardware(claim)
    if hardware and k in ABSOLUTE:
        return {**row, "verdict": NOT_APPLICABLE,
                "note": f"depends on {hardware}: an absolute {k} is shown, not judged (the hardware rule)"}
    balance = unnamed_balance(claim)
    if balance:
        return {**row, "verdict": NOT_APPLICABLE,
                "note": f"depends on the balance of {balance}: a ratio of figures bound by two parts of "
                        "the seed's machine is shown, not judged (the hardware rule)"}
    if claim.get("construction", "").strip():
        return {**row, "verdict": BY_CONSTRUCTION, "note": claim["construction"]}
    built = [str(m["construction"]) for m in ms if m.get("construction")]
    if built:
        return {**row, "verdict": BY_CONSTRUCTION, "note": "; ".join(built)}
    if censored := censored_steps(keys, ms):
        note = "; ".join(censored)
        if k == "order":
            rest = [f"step {i + 1} ({step_name(key)}): {v}" + (f", {n}" if n else "")
                    for i, (key, m, (lo_w, hi_w)) in enumerate(zip(keys, ms, wins, strict=True))
                    if not is_censored(m) for v, n in [judge_window(m, lo_w, hi_w)]]
            note += ("; measured: " + "; ".join(rest)) if rest else ""
        return {**row, "verdict": NOT_MEASURABLE, "note": note}
    if any(math.isnan(x) for m in ms for x in (float(m["value"]), *_ci(m))):
        return {**row, "verdict": INCONCLUSIVE,
                "note": "the measurement has no interval: more trials would give it one"}
    need = MIN_TRIALS.get(profile, 5)
    if min(ns) < need:
        return {**row, "verdict": INCONCLUSIVE,
                "note": f"{min(ns)} counted trials, the {profile} profile needs {need}: {need - min(ns)} more "
                        "would let it be judged"}
    judged = [judge_window(m, lo_w, hi_w) for m, (lo_w, hi_w) in zip(ms, wins, strict=True)]
    verdict, note = _combine_steps(judged, keys) if k == "order" else judged[0]
    return {**row, "verdict": verdict, "note": note}


def judge_all(claims: pd.DataFrame, measurements: dict[str, dict[str, Any]], skipped: dict[str, str],
              profile: str) -> pd.DataFrame:
    rows = []
    for claim in claims.to_dict("records"):
        rows.append({"id": claim["id"], "published": f"{claim['value']} {claim['unit']}",
                     "claim": claim.get("claim") or "", "source": claim.get("source") or "",
                     "experiment": claim["experiment"], "measurement": claim["measurement"],
                     "sensitivity": (claim.get("sensitivity") or "").strip(),
                     **judge(claim, measurements, skipped, profile)})
    return pd.DataFrame(rows)


def verdicts(results_dir: Path | str, claims: pd.DataFrame, profile: str = "quick") -> pd.DataFrame:
    """Every claim (the registry's rows, held to the rule for unnamed hardware:
    pagelab.experiments.harness.load_claims) judged on one results directory's measurements."""
    measurements, skipped = load_measurements(results_dir)
    return judge_all(claims, measurements, skipped, profile)


def _sensitivity(table: pd.DataFrame) -> pd.Series:
    """Which rows of a verdict table are sensitivity rows (they name the claim they sit beside)."""
    if "sensitivity" not in table:
        return pd.Series(False, index=table.index)
    return table["sensitivity"].fillna("").astype(str).str.strip() != ""


def primary(table: pd.DataFrame) -> pd.DataFrame:
    """The published claims of a verdict table, without the sensitivity rows beside them."""
    return table[~_sensitivity(table)]


def counts(table: pd.DataFrame) -> dict[str, int]:
    """How many published claims got each verdict (sensitivity rows are not claims)."""
    t = primary(table)
    return {v: int((t["verdict"] == v).sum()) for v in VERDICTS}


_NUMBER_WORDS = ["none", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                 "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
                 "eighteen", "nineteen", "twenty", "twenty-one", "twenty-two", "twenty-three", "twenty-four",
                 "twenty-five"]


def _num(n: int) -> str:
    return _NUMBER_WORDS[n] if n < len(_NUMBER_WORDS) else str(n)


def summary_sentence(table: pd.DataFrame) -> str:
    """'Of the 20 published claims, 4 are reproduced here, 6 are not, ...': from the table (its
    sensitivity rows are not claims)."""
    c = counts(table)
    table = primary(table)
    if c[NOT_APPLICABLE] == 0:
        last = "every claim could be judged in this run"
    else:
        last = f"{_num(c[NOT_APPLICABLE])} could not be judged in this run"
    def verb(n: int, one: str, many: str) -> str:  # "none" takes the singular, as "one" does
        return one if n <= 1 else many

    parts = [f"{_num(c[REPRODUCED])} {verb(c[REPRODUCED], 'is', 'are')} reproduced here",
             f"{_num(c[NOT_REPRODUCED])} {verb(c[NOT_REPRODUCED], 'is', 'are')}"
             f"{' judged' if c[NOT_REPRODUCED] == 0 else ''} not reproduced",
             f"{_num(c[INCONCLUSIVE])} {verb(c[INCONCLUSIVE], 'remains', 'remain')} inconclusive",
             f"{_num(c[BY_CONSTRUCTION])} {verb(c[BY_CONSTRUCTION], 'holds', 'hold')} by construction "
             "(the value was an input of our device models, follows from the sizes, or is arithmetic)",
             *([f"{_num(c[NOT_MEASURABLE])} {verb(c[NOT_MEASURABLE], 'is', 'are')} not measurable here (the "
                "criterion was met when the clock started, or not within the watch, in half or more of the "
                "trials)"]
               if c[NOT_MEASURABLE] else []),
             last]
    return f"Of the {len(table)} published claims, " + ", ".join(parts[:-1]) + " and " + parts[-1] + "."


def _described(row: pd.Series) -> str:
    """A claim named for a reader: its words from claims.csv without their asides, then its id
    and, where it is one number or range, the published figure with the aside's bound ("at
    most", "at least", "up to"): "observed page-in rate (PG2: at most 2 MB/s)"."""
    claim = str(row.get("claim") or "")
    words = " ".join(re.sub(r"\s*\([^()]*\)", "", claim).split()).strip(" ,;")
    figure = ""
    published_ = str(row.get("published") or "")
    if str(row.get("kind") or "point") in ("point", "range") and published_ and not published_.endswith(" ratio"):
        asides = " ".join(re.findall(r"\(([^()]*)\)", claim))
        bound_ = next((b for b in ("at most", "at least", "up to") if b in asides), "")
        figure = f": {bound_ + ' ' if bound_ else ''}{published_}"
    return f"{words} ({row['id']}{figure})" if words else str(row["id"])


def findings_sentence(table: pd.DataFrame) -> str:
    """Which published claims held and which did not, in words, for the abstract and the
    conclusion (the counts of every verdict are the summary sentence's, said once in the claims
    section): each claim reproduced, not reproduced or inconclusive by its words and id, those
    not measurable by their ids, the rest as counts (empty for a table without ids). Sensitivity
    rows are not claims: the judged ones follow, by id (sensitivity_sentence)."""
    t = primary(table)
    if "id" not in t:
        return ""
    by = {v: t[t["verdict"] == v] for v in VERDICTS}

    def n_(v: str) -> int:
        return len(by[v])

    def described(v: str) -> str:
        return listed([_described(r) for _, r in by[v].iterrows()])

    def one(v: str, singular: str, plural: str) -> str:
        return singular if n_(v) == 1 else plural

    out = []
    if n_(REPRODUCED):
        out.append(f"{_num(n_(REPRODUCED)).capitalize()} {one(REPRODUCED, 'claim', 'claims')} held (reproduced "
                   f"here): {described(REPRODUCED)}.")
    else:
        out.append("No claim held (none is reproduced here).")
    if n_(NOT_REPRODUCED):
        out.append(f"{_num(n_(NOT_REPRODUCED)).capitalize()} did not hold (not reproduced): "
                   f"{described(NOT_REPRODUCED)}.")
    if n_(INCONCLUSIVE):
        out.append(f"{_num(n_(INCONCLUSIVE)).capitalize()} {one(INCONCLUSIVE, 'remains', 'remain')} open "
                   f"(inconclusive; more trials could settle {one(INCONCLUSIVE, 'it', 'them')}): "
                   f"{described(INCONCLUSIVE)}.")
    if n_(NOT_MEASURABLE):
        out.append(f"{_num(n_(NOT_MEASURABLE)).capitalize()} {one(NOT_MEASURABLE, 'was', 'were')} not measurable "
                   f"here, censored in half or more of the trials: {listed(list(by[NOT_MEASURABLE]['id']))}.")
    rest = ([f"{_num(n_(BY_CONSTRUCTION))} {one(BY_CONSTRUCTION, 'holds', 'hold')} by construction"]
            if n_(BY_CONSTRUCTION) else []) + \
           ([f"{_num(n_(NOT_APPLICABLE))} could not be judged in this run"] if n_(NOT_APPLICABLE) else [])
    if rest:
        out.append(f"Of the rest, {' and '.join(rest)}.")
    twins = sensitivity_sentence(table)
    return " ".join(out + ([twins] if twins else []))


def sensitivity_sentence(table: pd.DataFrame) -> str:
    """The sensitivity rows that a run judged (held, did not hold, open or not measurable), by
    id: they are not claims and the counts leave them out, but a reader of the abstract learns
    where the other reading of a twin disagrees. Empty where none was judged."""
    if "id" not in table:
        return ""
    rows = table[_sensitivity(table)]
    said = []
    for verdict, one, many in ((REPRODUCED, "held", "held"), (NOT_REPRODUCED, "did not hold", "did not hold"),
                               (INCONCLUSIVE, "remains open", "remain open"),
                               (NOT_MEASURABLE, "was not measurable here", "were not measurable here")):
        ids = list(rows.loc[rows["verdict"] == verdict, "id"])
        if ids:
            said.append(f"{listed(ids)} {one if len(ids) == 1 else many}")
    if not said:
        return ""
    return ("Judged beside them, the sensitivity rows (each a claim judged on a second twin): "
            + "; ".join(said) + ".")


def sources(table: pd.DataFrame) -> int:
    """How many articles the published claims come from (claims.csv's source column)."""
    if "source" not in table:
        return 0
    return int(primary(table)["source"].astype(str).str.strip().replace("", pd.NA).dropna().nunique())


def macros(table: pd.DataFrame) -> dict[str, str]:
    """The counts; the summary sentence, said once, in the claims section; the findings in
    words and the number of source articles, for the abstract and the conclusion."""
    c = counts(table)
    return {"VerdictsTotal": str(len(primary(table))), "VerdictsReproduced": str(c[REPRODUCED]),
            "VerdictFindings": escape(findings_sentence(table)), "VerdictsSources": _num(sources(table)),
            "VerdictsNotReproduced": str(c[NOT_REPRODUCED]), "VerdictsInconclusive": str(c[INCONCLUSIVE]),
            "VerdictsByConstruction": str(c[BY_CONSTRUCTION]), "VerdictsNotApplicable": str(c[NOT_APPLICABLE]),
            "VerdictsNotMeasurable": str(c[NOT_MEASURABLE]),
            "VerdictSummary": escape(summary_sentence(table))}


VERDICTS_CAPTION = (
    "Published values against this run's measurements: the window (per step for an order), ours with its "
    "interval and, in parentheses, that interval's own coverage at its number of trials, ours over the "
    "published value, the counted trials behind it (each per step for an order) and the computed verdict. "
    "Profile: \\AppendixProfile; \\AppendixDataSource.")


def write_verdicts(results_dir: Path | str, out_tex: Path | str, out_csv: Path | str, claims: pd.DataFrame,
                   profile: str = "quick", out_macros: Path | str | None = None) -> pd.DataFrame:
    table = verdicts(results_dir, claims, profile)
    cols = ["id", "published", "kind", "window", "ours", "value", "ci_low", "ci_high", "interval", "ratio", "n",
            "verdict", "note", "experiment", "measurement", "sensitivity"]
    write_text_atomic(out_csv, table[cols].to_csv(index=False))
    tex = pd.DataFrame({
        "Id": [escape(i) + (f" (sensitivity of {escape(p)})" if p else "")
               for i, p in zip(table["id"], table["sensitivity"], strict=True)],
        "Published": table["published"].map(escape),
        "Window": table["window"].map(escape),
        "Ours [CI]": [escape(o) + (f" ({escape(c)})" if o and c else "")
                      for o, c in zip(table["ours"], table["interval"], strict=True)],
        "Ours/Pub": table["ratio"].map(lambda r: "" if pd.isna(r) else fmt(r)),
        "n": table["n"].map(lambda n: escape(str(n))),
        "Verdict": table["verdict"],
        "Note": table["note"].map(escape),
    })
    # A longtable, so that every claim's row is printed whatever their number (a float longer
    # than the page loses its last rows), its columns within the text width at the paper's
    # \\scriptsize with 3pt column gaps (paper/sections/claims.tex).
    rag = ">{\\raggedright\\arraybackslash}p"
    write_table(out_tex, tex, caption=VERDICTS_CAPTION, label="tab:verdicts", environment="longtable",
                column_format=f"{rag}{{0.08\\linewidth}} {rag}{{0.1\\linewidth}} {rag}{{0.1\\linewidth}} "
                              f"{rag}{{0.15\\linewidth}} l l {rag}{{0.08\\linewidth}} {rag}{{0.3\\linewidth}}")
    if out_macros is not None:
        write_macros(out_macros, macros(table))
    return table


# --------------------------------------------------------------------------- recorded runs
def recorded_path() -> Path:
    return root() / "data" / "published" / "recorded_measurements.json"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _fingerprint(recording: Path) -> dict[str, dict[str, str]]:
    """Per experiment of a recording: the commit it was measured at and its trials' hash."""
    out = {}
    for d in sorted(p for p in recording.iterdir() if (p / "config.json").exists()):
        prov = json.loads((d / "provenance.json").read_text())
        trials = d / "trials.csv"
        out[d.name] = {"commit": str((prov.get("git") or {}).get("commit", "")),
                       "trials_sha256": _sha256(trials) if trials.exists() else ""}
    return out


def _round(x: Any) -> Any:
    return float(f"{x:.6g}") if isinstance(x, float) and math.isfinite(x) else x


def rebuild_recording(name: str, notebooks: Path | None = None) -> dict[str, Any]:
    """One recording's measurements as its notebooks compute them today: every experiment
    replayed into a temporary results directory (pagelab.data.recording.replay) and its notebook run
    by papermill, as `make PROFILE=recorded` would, without the paper."""
    rec = recorded_dir() / name
    fingerprint = _fingerprint(rec)
    if not fingerprint:
        raise ValueError(f"no recording {name!r} in {recorded_dir()}")
    profile = json.loads((rec / next(iter(fingerprint)) / "config.json").read_text()).get("profile", "quick")
    pagelab = Path(sys.executable).with_name("pagelab")
    measurements: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="pagelab-recorded-") as tmp:
        for exp in fingerprint:
            dest = Path(tmp) / exp
            replay(rec, exp, dest)
            shutil.copyfile(rec / exp / "config.json", dest / "config.json")
            nb = notebook_text(experiment_notebook(exp, notebooks))  # on the step's stdin, as the rule pipes it
            run = subprocess.run([str(pagelab), "pipeline", "execute", "--cwd", str(root()), "-",
                                  str(dest / f"{exp}.ipynb"), "-p", "results_dir", str(dest), "-p", "profile", profile],
                                 input=nb, capture_output=True, text=True, timeout=1800,
                                 env={**os.environ, "PATH": f"{pagelab.parent}:{os.environ.get('PATH', '')}"})
            if run.returncode != 0:
                raise RuntimeError(f"{name}: the {exp} notebook failed: {run.stderr.strip()[-800:]}")
            doc = json.loads((dest / "measurements.json").read_text())
            measurements.update({k: {f: _round(v) for f, v in m.items() if f != "method"} for k, m in doc.items()})
            if (dest / "skipped.txt").exists():
                skipped[exp] = (dest / "skipped.txt").read_text().strip().splitlines()[0]
    return {"profile": profile, "experiments": fingerprint, "skipped": skipped,
            "measurements": dict(sorted(measurements.items()))}


def load_recorded(path: Path | str | None = None) -> dict[str, dict[str, Any]]:
    """The stored recordings' measurements: {'<machine>/<profile>': {profile, experiments,
    skipped, measurements}}, each machine's in profile order (quick, full, seed); empty when the
    file is not there."""
    path = Path(path or recorded_path())
    store = json.loads(path.read_text())["recordings"] if path.exists() else {}

    def order(item: tuple[str, dict[str, Any]]) -> tuple[str, int]:
        p = item[1]["profile"]
        return item[0].rsplit("/", 1)[0], PROFILES.index(p) if p in PROFILES else len(PROFILES)
    return dict(sorted(store.items(), key=order))


def write_recorded(names: list[str] | None = None, path: Path | str | None = None) -> dict[str, Any]:
    """Rebuild the named recordings (default: every one in data/recorded/) and write the store
    atomically, keeping the other recordings it holds."""
    path = Path(path or recorded_path())
    names = names or sorted(str(d.relative_to(recorded_dir())) for d in recorded_dir().glob("*/*") if d.is_dir())
    store = load_recorded(path)
    for name in names:
        store[name] = rebuild_recording(name)
    doc = {"about": "every recording's measurements as the notebooks compute them from data/recorded/; "
                    "rebuilt by `pagelab claims recorded` (stale: tests/test_claims.py says which)",
           "recordings": dict(sorted(store.items()))}
    write_text_atomic(path, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    path.chmod(0o644)  # a file of the repository, read by whoever builds the paper
    return doc


def stale_recordings(path: Path | str | None = None) -> list[str]:
    """Recordings whose stored measurements no longer match them (a recording re-made, added
    or removed since the store was rebuilt), each with the command that fixes it."""
    store = load_recorded(path)
    on_disk = sorted(str(d.relative_to(recorded_dir())) for d in recorded_dir().glob("*/*") if d.is_dir())
    problems = []
    for name in on_disk:
        if name not in store:
            problems.append(f"{name}: not in {recorded_path().name}")
        elif store[name]["experiments"] != _fingerprint(recorded_dir() / name):
            problems.append(f"{name}: re-recorded since {recorded_path().name} was rebuilt")
    problems += [f"{name}: in {recorded_path().name} but no longer recorded" for name in store if name not in on_disk]
    return [f"{p} (pagelab claims recorded --recording {p.split(':')[0]})" for p in problems]


def recorded_table(claims: pd.DataFrame, rec: dict[str, Any]) -> pd.DataFrame:
    """Every claim judged on one stored recording (a value of load_recorded), at its own profile."""
    return judge_all(claims, rec["measurements"], rec.get("skipped", {}), rec["profile"])


def recorded_tables(claims: pd.DataFrame, store: dict[str, dict[str, Any]] | None = None) -> dict[str, pd.DataFrame]:
    """Every claim judged on every stored recording (its own profile): {recording: table}."""
    store = load_recorded() if store is None else store
    return {name: recorded_table(claims, rec) for name, rec in store.items()}


def _verdict_word(row: pd.Series) -> str:
    if row["verdict"] == NOT_APPLICABLE and str(row["note"]).startswith(("not measured", "skipped")):
        return f"n/a: {row['note']}"
    return str(row["verdict"])


def verdict_strings(claims: pd.DataFrame, store: dict[str, dict[str, Any]] | None = None) -> dict[str, str]:
    """Per claim, 'quick: X; full: Y; seed: Z' over the stored recordings (the changelog's
    verdicts before and after), 'n/a: <why>' where a recording lacks the measurement."""
    tables = recorded_tables(claims, store)
    out = {}
    for cid in claims["id"]:
        parts = []
        for name, table in tables.items():
            t = table.set_index("id")
            parts.append(f"{name.rsplit('/', 1)[-1]}: {_verdict_word(t.loc[cid])}")
        out[cid] = "; ".join(parts)
    return out


# --------------------------------------------------------------------------- the verdict figure
def forest_rows(claims: pd.DataFrame, runs: list[Run]) -> pd.DataFrame:
    """The verdict figure's rows: per claim (per step of an order) and run (label, measurements,
    skip reasons, profile), ours and the window over the published value (an order's step: over
    the seed's step, the geometric middle of its window; a published zero: ours + 1), and the
    run's verdict. No value (x NaN) where the run does not judge the claim at its scale or did
    not measure it."""
    rows = []
    for claim in claims.to_dict("records"):
        keys, wins = steps(claim), windows(claim)
        for label, measurements, skipped, profile in runs:
            verdict = judge(claim, measurements, skipped, profile)
            for i, (key, (lo_w, hi_w)) in enumerate(zip(keys, wins, strict=True)):
                ref = math.sqrt(lo_w * hi_w) if kind(claim) == "order" else published_number(claim)
                shift = 1.0 if ref == 0 else 0.0
                ref = ref or 1.0
                m = measurements.get(key) if verdict["ours"] else None
                m = None if m is not None and is_censored(m) else m  # censored: no point to draw
                v, lo, hi = (float(m["value"]), *_ci(m)) if m else (math.nan,) * 3
                rows.append({"claim": claim["id"],
                             "label": claim["id"] if len(keys) == 1 else f"{claim['id']} step {i + 1}", "run": label,
                             "x": (v + shift) / ref, "x_lo": (lo + shift) / ref, "x_hi": (hi + shift) / ref,
                             "w_lo": (lo_w + shift) / ref, "w_hi": (hi_w + shift) / ref, "verdict": verdict["verdict"],
                             "gid": f"{claim['id']}|{i}|{label}"})
    return pd.DataFrame(rows)


Run = tuple[str, dict[str, Any], dict[str, str], str]  # label, measurements, skip reasons, profile


def figure_runs(results_dir: Path | str, profile: str, recording: str = "",
                store: dict[str, dict[str, Any]] | None = None) -> list[Run]:
    """The recorded runs (their stored measurements) and this run: this run replaces the
    recording it was rebuilt from (make PROFILE=recorded), and is added as 'this run' otherwise."""
    store = load_recorded() if store is None else store
    this = (Path(recording).resolve().relative_to(recorded_dir().resolve()).as_posix()
            if recording and Path(recording).resolve().is_relative_to(recorded_dir().resolve()) else "")
    machines = {name.rsplit("/", 1)[0] for name in store}
    runs = []
    for name, rec in store.items():
        label = rec["profile"] if len(machines) == 1 else name
        if name == this:
            measurements, skipped = load_measurements(results_dir)
            runs.append((label, measurements, skipped, profile))
        else:
            runs.append((label, rec["measurements"], rec.get("skipped", {}), rec["profile"]))
    if not this:
        measurements, skipped = load_measurements(results_dir)
        runs.append((f"this run ({profile})", measurements, skipped, profile))
    return runs


def write_figure(results_dir: Path | str, out: Path | str, claims: pd.DataFrame, html: Path | str | None = None,
                 profile: str = "quick", recording: str = "") -> pd.DataFrame:
    """The verdict figure (PDF for the paper, PNG beside it) and an HTML page with it and the
    verdicts of every run."""
    from pagelab.core import plots  # matplotlib and seaborn: 0.4-1.1 s at import, only the figure needs them

    runs = figure_runs(results_dir, profile, recording)
    rows = forest_rows(claims, runs)
    plots.theme()
    fig = plots.verdict_forest(rows, [r[0] for r in runs])
    plots.save(fig, out)
    plots.plt.close(fig)
    if html is not None:
        write_html(Path(html), Path(out).with_suffix(".png"), claims, runs)
    return rows


def write_html(path: Path, png: Path, claims: pd.DataFrame, runs: list[Run]) -> None:
    """results/claims/verdicts.html: the figure and, per claim, each run's verdict, ours and note."""
    tables = {label: judge_all(claims, ms, sk, prof).set_index("id") for label, ms, sk, prof in runs}
    rows = [{"id": c["id"], "published": c["value"] + " " + c["unit"], "claim": c["claim"],
             "cells": [{"verdict": t.loc[c["id"], "verdict"], "ours": str(t.loc[c["id"], "ours"])}
                       for t in tables.values()]}
            for c in claims.to_dict("records")]
    colours = {"reproduced": "#cfe8d5", "not-reproduced": "#f4c7c0", "inconclusive": "#fbe0b8",
               "by-construction": "#c8dcef", "not-measurable-here": "#d9c8ef", "not-applicable-here": "#e4e4e4"}
    write_text_atomic(path, render("verdicts.html.j2", runs=list(tables), rows=rows, colours=colours,
                                   image=base64.b64encode(png.read_bytes()).decode()))


# --------------------------------------------------------------------------- command line
def run(args: Any, claims: pd.DataFrame | None) -> int:
    """Carries out `pagelab claims ACTION` (parsed by pagelab.cli, which checks its inputs first:
    a refused input exits 2 there, while an error here is a failure of the run, exit 1); `claims`
    are the registry's rows held to the rule for unnamed hardware, for the actions that judge
    (history, figure)."""
    if args.action == "recorded":
        doc = write_recorded(args.recording or None)
        print(f"{recorded_path()}: {', '.join(doc['recordings'])}")
    elif args.action == "stale":
        stale = stale_recordings()
        print("\n".join(stale) or "every recording's stored measurements are current")
        return 1 if stale else 0
    elif args.action == "history":
        assert claims is not None
        unknown = sorted(set(args.ids) - set(claims["id"]))
        if unknown:
            print(f"pagelab claims history: no claim {', '.join(unknown)} in "
                  f"{args.claims or registry.claims_path()}", file=sys.stderr)
            return 2
        for cid, text in verdict_strings(claims).items():
            if not args.ids or cid in args.ids:
                print(f"{cid}: {text}")
    elif args.action == "changelog":
        problems, skip = changelog.changelog_problems()
        print(skip or "\n".join(problems) or "every judging change since a recording is in the changelog")
        return 1 if problems else 0
    else:
        assert claims is not None
        write_figure(args.results, args.output, claims, args.html, args.profile, args.recording)
    return 0
