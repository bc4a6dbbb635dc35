"""Published claims against our measurements: the verdict table, computed, never typed.

Each experiment writes results/<name>/measurements.json: {key: {value, ci_low, ci_high, unit,
n, method}}. Each claim in data/published/claims.csv names the measurement that is its most
faithful twin, a window written down before any run, and the profiles it may be judged in
(see pagelab.published). Five verdicts:
- reproduced: the whole 95 % CI lies inside the window;
- not reproduced: the whole CI lies outside it;
- inconclusive: the CI straddles an edge (with roughly how many more trials would settle it,
  from the CI's width shrinking as 1/sqrt(n)), or fewer counted trials than the profile needs
  (config.MIN_TRIALS) stand behind it;
- by construction: the value was an input of a device model or is arithmetic: ours is shown
  beside it and never counted as reproduced;
- not applicable here: the experiment did not run (with its reason), the claim is judged only
  at another profile's scale, or no faithful twin can be measured here (judge `none`: ours is
  shown, not judged).
An `order` claim "a < b < c" is reproduced when each CI lies wholly below the next, not
reproduced when one lies wholly above the next, inconclusive otherwise.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from pagelab.latex import escape, fmt, write_table
from pagelab.published import load_claims, window

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"
BY_CONSTRUCTION, NOT_APPLICABLE = "by construction", "not applicable here"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, BY_CONSTRUCTION, NOT_APPLICABLE)


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


def _ci(m: dict[str, Any]) -> tuple[float, float]:
    return float(m.get("ci_low", m["value"])), float(m.get("ci_high", m["value"]))


def more_trials(n: int, point: float, lo: float, hi: float, edge: float) -> str:
    """Roughly how many more trials would move the CI's side that crosses `edge` off it, if
    the CI narrows as 1/sqrt(n) around the same point."""
    side = (point - lo) if point >= edge else (hi - point)
    gap = abs(point - edge)
    if gap == 0 or not math.isfinite(side) or n <= 0:
        return "the estimate sits on the window's edge: more trials cannot settle it"
    need = math.ceil(n * (side / gap) ** 2)
    if need <= n:
        need = n + 1
    extra = need - n
    return f"about {extra} more trial{'s' if extra != 1 else ''} per configuration would settle it" \
        if extra <= 200 else "more than 200 more trials would be needed: the claim sits at the window's edge"


def _ours(m: dict[str, Any]) -> str:
    lo, hi = _ci(m)
    return f"{fmt(m['value'])} [{fmt(lo)}, {fmt(hi)}]" if (lo, hi) != (m["value"],) * 2 else fmt(m["value"])


def _window_text(lo: float, hi: float) -> str:
    if lo == hi:
        return fmt(lo)
    if math.isinf(hi):
        return f">= {fmt(lo)}"
    return f"[{fmt(lo)}, {fmt(hi)}]"


def judge(claim: dict[str, str], measurements: dict[str, dict[str, Any]], skipped: dict[str, str],
          profile: str = "quick") -> dict[str, Any]:
    """One claim's verdict row: verdict, ours, value/ci/n, ratio to the published value, note."""
    from pagelab.config import MIN_TRIALS

    kind, key = claim["judge"], claim["measurement"]
    row: dict[str, Any] = {"window": "", "ours": "", "value": math.nan, "ci_low": math.nan,
                           "ci_high": math.nan, "ratio": math.nan, "n": "", "note": ""}
    if kind == "window":
        lo_w, hi_w = window(claim)
        row["window"] = _window_text(lo_w, hi_w)
    profiles = claim["profiles"].split()
    if profiles != ["all"] and profile not in profiles:
        return {**row, "verdict": NOT_APPLICABLE,
                "note": f"judged only at the {' or '.join(profiles)} profile's scale "
                        f"(make PROFILE={profiles[0]}); this run is {profile}"}
    keys = [k.strip() for k in key.split("<")] if kind == "order" else [key]
    missing = [k for k in keys if k not in measurements]
    if missing:
        why = skipped.get(claim["experiment"], f"not measured ({missing[0]})")
        return {**row, "verdict": NOT_APPLICABLE, "note": why}
    ms = [measurements[k] for k in keys]
    ns = [int(m.get("n", 0) or 0) for m in ms]
    row["n"] = "/".join(str(n) for n in ns)
    need = MIN_TRIALS.get(profile, 5)
    few = [n for n in ns if n < need]
    if kind == "order":
        cis = [_ci(m) for m in ms]
        row["ours"] = " < ".join(fmt(m["value"]) for m in ms)
        below = all(cis[i][1] < cis[i + 1][0] for i in range(len(cis) - 1))
        above = any(cis[i][0] > cis[i + 1][1] for i in range(len(cis) - 1))
        if few:
            return {**row, "verdict": INCONCLUSIVE,
                    "note": f"{min(few)} counted trials, the {profile} profile needs {need}"}
        if below:
            return {**row, "verdict": REPRODUCED}
        if above:
            return {**row, "verdict": NOT_REPRODUCED,
                    "note": "an interval lies wholly above the next: the order is reversed"}
        return {**row, "verdict": INCONCLUSIVE, "note": "neighbouring intervals overlap"}
    m = ms[0]
    lo, hi = _ci(m)
    v = float(m["value"])
    row.update(ours=_ours(m), value=v, ci_low=lo, ci_high=hi)
    pub_parts = [float(p) for p in claim["value"].split("-")] if claim["value"][:1].isdigit() else []
    if pub_parts and (pub := sum(pub_parts) / len(pub_parts)) != 0:
        row["ratio"] = v / pub
    if kind == "none":
        return {**row, "verdict": NOT_APPLICABLE, "note": "no faithful twin here: " + claim["window_reason"]}
    if claim.get("construction", "").strip():
        return {**row, "verdict": BY_CONSTRUCTION, "note": claim["construction"]}
    if any(math.isnan(x) for x in (v, lo, hi)):
        return {**row, "verdict": INCONCLUSIVE, "note": "the measurement has no interval"}
    if few:
        return {**row, "verdict": INCONCLUSIVE, "note": f"{few[0]} counted trials, the {profile} profile needs {need}"}
    two_x = math.isfinite(hi_w) and not math.isnan(row["ratio"]) and not 0.5 <= row["ratio"] <= 2
    if lo_w <= lo and hi <= hi_w and not two_x:
        return {**row, "verdict": REPRODUCED}
    if two_x and lo_w <= v <= hi_w:
        # a window wider than the published value allows (a range the seed called plausible)
        # still never makes numbers 2x apart agree; one-sided windows ("at least") are exempt
        return {**row, "verdict": NOT_REPRODUCED,
                "note": f"ours is {row['ratio']:.2f}x the published value: numbers 2x apart are never "
                        "reproduced, whatever the window"}
    if hi < lo_w or lo > hi_w:
        return {**row, "verdict": NOT_REPRODUCED,
                "note": "ours lies below the window" if hi < lo_w else "ours lies above the window"}
    edge = lo_w if lo < lo_w else hi_w
    if not lo_w <= v <= hi_w:
        note = "the point estimate lies outside the window, the interval reaches in; "
    else:
        note = "the interval crosses the window's edge; "
    return {**row, "verdict": INCONCLUSIVE, "note": note + more_trials(ns[0], v, lo, hi, edge)}


def verdicts(results_dir: Path | str, claims_path: Path | str | None = None, profile: str = "quick") -> pd.DataFrame:
    claims = load_claims(claims_path)
    measurements, skipped = load_measurements(results_dir)
    rows = []
    for claim in claims.to_dict("records"):
        rows.append({"id": claim["id"], "published": f"{claim['value']} {claim['unit']}",
                     "experiment": claim["experiment"], "measurement": claim["measurement"],
                     **judge(claim, measurements, skipped, profile)})
    return pd.DataFrame(rows)


def counts(table: pd.DataFrame) -> dict[str, int]:
    return {v: int((table["verdict"] == v).sum()) for v in VERDICTS}


_NUMBER_WORDS = ["no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                 "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
                 "eighteen", "nineteen", "twenty"]


def _num(n: int) -> str:
    return _NUMBER_WORDS[n] if n < len(_NUMBER_WORDS) else str(n)


def summary_sentence(table: pd.DataFrame) -> str:
    """'Of the 20 published claims, 4 are reproduced here, 6 are not, ...': from the table."""
    c = counts(table)
    if c[NOT_APPLICABLE] == 0:
        last = "every claim could be judged in this run"
    else:
        last = f"{_num(c[NOT_APPLICABLE])} could not be judged in this run"
    parts = [f"{_num(c[REPRODUCED])} {'is' if c[REPRODUCED] == 1 else 'are'} reproduced here",
             f"{_num(c[NOT_REPRODUCED])} {'is' if c[NOT_REPRODUCED] == 1 else 'are'} not reproduced",
             f"{_num(c[INCONCLUSIVE])} {'remains' if c[INCONCLUSIVE] == 1 else 'remain'} inconclusive",
             f"{_num(c[BY_CONSTRUCTION])} {'holds' if c[BY_CONSTRUCTION] == 1 else 'hold'} by construction "
             "(the value was an input of our device models, or is arithmetic)",
             last]
    return f"Of the {len(table)} published claims, " + ", ".join(parts[:-1]) + " and " + parts[-1] + "."


def macros(table: pd.DataFrame) -> dict[str, str]:
    """The counts and the summary sentence for the abstract and the conclusion."""
    c = counts(table)
    return {"VerdictsTotal": str(len(table)), "VerdictsReproduced": str(c[REPRODUCED]),
            "VerdictsNotReproduced": str(c[NOT_REPRODUCED]), "VerdictsInconclusive": str(c[INCONCLUSIVE]),
            "VerdictsByConstruction": str(c[BY_CONSTRUCTION]), "VerdictsNotApplicable": str(c[NOT_APPLICABLE]),
            "VerdictSummary": escape(summary_sentence(table))}


def write_verdicts(results_dir: Path | str, out_tex: Path | str, out_csv: Path | str,
                   claims_path: Path | str | None = None, profile: str = "quick",
                   out_macros: Path | str | None = None) -> pd.DataFrame:
    from pagelab.latex import write_macros
    from pagelab.records import write_text_atomic

    table = verdicts(results_dir, claims_path, profile)
    cols = ["id", "published", "window", "ours", "value", "ci_low", "ci_high", "ratio", "n", "verdict",
            "note", "experiment", "measurement"]
    write_text_atomic(out_csv, table[cols].to_csv(index=False))
    tex = pd.DataFrame({
        "Id": table["id"].map(escape),
        "Published": table["published"].map(escape),
        "Window": table["window"].map(escape),
        "Ours [95\\,\\% CI]": table["ours"].map(escape),
        "Ours/Pub": table["ratio"].map(lambda r: "" if pd.isna(r) else fmt(r)),
        "n": table["n"].map(lambda n: escape(str(n))),
        "Verdict": table["verdict"],
        "Note": table["note"].map(escape),
    })
    rag = ">{\\raggedright\\arraybackslash}p"
    write_table(out_tex, tex, column_format=f"l {rag}{{0.11\\linewidth}} l {rag}{{0.15\\linewidth}} l l l "
                                            f"{rag}{{0.27\\linewidth}}")
    if out_macros is not None:
        write_macros(out_macros, macros(table))
    return table
