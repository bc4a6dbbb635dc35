"""Published claims against our measurements: the verdict table, computed, never typed.

Each experiment writes results/<name>/measurements.json: {key: {value, ci_low, ci_high, unit,
n}}. Each claim in data/published/claims.csv names the measurement that reproduces it and how
it is judged:
- value: reproduced when the published value lies within our CI widened by `tolerance` (a
  fraction), i.e. [ci_low * (1 - tol), ci_high * (1 + tol)];
- range: the published value is "lo-hi"; reproduced when our CI overlaps [lo, hi] widened by tol;
- upper: the published value is an upper bound; reproduced when our value <= published * (1 + tol);
- lower: the published value is a lower bound; reproduced when our whole CI lies above
  published * (1 - tol) (e.g. "the cache inflates the score": ratio > 1);
- direction: the measurement is "a < b < c"; reproduced when each CI lies wholly below the next.
A claim whose measurement is missing is "not applicable here", with the reason the experiment
gave (results/<name>/skipped.txt) or "not measured".
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from pagelab.latex import escape, fmt, write_table
from pagelab.published import load_claims

REPRODUCED, NOT_REPRODUCED, NOT_APPLICABLE = "reproduced", "not reproduced", "not applicable here"
JUDGES = ("value", "range", "upper", "lower", "direction")


def load_measurements(results_dir: Path | str) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Every experiment's measurements (keys prefixed by nothing: keys are global and start
    with the experiment's name) and every experiment's skip reason."""
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


def judge(claim: dict[str, str], measurements: dict[str, dict[str, Any]],
          skipped: dict[str, str]) -> dict[str, str]:
    kind, key, tol = claim["judge"], claim["measurement"], float(claim["tolerance"] or 0)
    if kind not in JUDGES:
        raise ValueError(f"claim {claim['id']}: unknown judge {kind!r} (one of {', '.join(JUDGES)})")
    keys = [k.strip() for k in key.split("<")] if kind == "direction" else [key]
    missing = [k for k in keys if k not in measurements]
    if missing:
        why = skipped.get(claim["experiment"], f"not measured ({missing[0]})")
        return {"verdict": NOT_APPLICABLE, "ours": "", "why": why}
    ms = [measurements[k] for k in keys]
    if kind == "direction":
        cis = [_ci(m) for m in ms]
        ok = all(cis[i][1] < cis[i + 1][0] for i in range(len(cis) - 1))
        ours = " < ".join(fmt(m["value"]) for m in ms) if ok else ", ".join(fmt(m["value"]) for m in ms)
        return {"verdict": REPRODUCED if ok else NOT_REPRODUCED, "ours": ours, "why": ""}
    m = ms[0]
    lo, hi = _ci(m)
    ours = f"{fmt(m['value'])} [{fmt(lo)}, {fmt(hi)}]" if (lo, hi) != (m["value"],) * 2 else fmt(m["value"])
    if kind == "value":
        pub = float(claim["value"])
        ok = lo * (1 - tol) <= pub <= hi * (1 + tol)
    elif kind == "range":
        a, b = (float(x) for x in claim["value"].split("-"))
        ok = hi >= a * (1 - tol) and lo <= b * (1 + tol)
    elif kind == "lower":
        ok = lo > float(claim["value"]) * (1 - tol)
    else:  # upper
        ok = float(m["value"]) <= float(claim["value"]) * (1 + tol) + (0 if tol else 1e-12)
    if any(math.isnan(x) for x in (lo, hi)):
        ok = False
    return {"verdict": REPRODUCED if ok else NOT_REPRODUCED, "ours": ours, "why": ""}


def verdicts(results_dir: Path | str, claims_path: Path | str | None = None) -> pd.DataFrame:
    claims = load_claims(claims_path)
    measurements, skipped = load_measurements(results_dir)
    rows = []
    for claim in claims.to_dict("records"):
        rows.append({"id": claim["id"], "published": f"{claim['value']} {claim['unit']}",
                     "experiment": claim["experiment"], **judge(claim, measurements, skipped)})
    return pd.DataFrame(rows)


def write_verdicts(results_dir: Path | str, out_tex: Path | str, out_csv: Path | str,
                   claims_path: Path | str | None = None) -> pd.DataFrame:
    from pagelab.records import write_text_atomic

    table = verdicts(results_dir, claims_path)
    write_text_atomic(out_csv, table.to_csv(index=False))
    tex = pd.DataFrame({
        "Id": table["id"].map(escape),
        "Published": table["published"].map(escape),
        "Ours": table["ours"].map(escape),
        "Verdict": table["verdict"],
        "Note": table["why"].map(lambda w: escape(w.split(" (")[0] if w.startswith("not measured") else w)),
    })
    write_table(out_tex, tex, column_format="l l l l p{0.32\\linewidth}")
    return table
