"""The published claims (data/published/claims.csv) that this repository reproduces.

One row per claim: its id, wording, value, unit, the seed file it comes from, the experiment
and measurement that is its most faithful twin here, and how it is judged, all written down
before any run:
- judge `window`: the claim holds when our value lies in [window_low, window_high]
  (`inf` for no upper bound), with `window_reason` saying why the window is that wide (how the
  seed measured: a hand-timed run is not a 1 % figure); a window around a point value wider
  than x0.8-x1.25 must say why in its own words;
- judge `order`: the measurement is "a < b < c" (each interval wholly below the next);
- judge `none`: no faithful twin can be measured here (`window_reason` says why); ours is shown
  beside the published value and the verdict is "not applicable here";
- `twin`: one sentence on what our measurement is and how it differs from the seed's;
- `construction`: non-empty when the value was an input of a device model or is arithmetic
  (then the verdict is "by construction", never "reproduced"), saying which input;
- `profiles`: `all`, or the profiles whose scale the claim can be judged at (e.g. `seed`).
The paper's table of claims is generated from this file only.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pagelab.latex import escape, write_table
from pagelab.paths import root

COLUMNS = ["id", "claim", "value", "unit", "source", "experiment", "measurement", "judge",
           "window_reason", "twin", "profiles"]
WINDOW = ["window_low", "window_high"]
OPTIONAL = ["construction"]
JUDGES = ("window", "order", "none")
DEFAULT_WIDTH = (0.8, 1.25)  # a point value's window without a reason of its own


def _number(text: str) -> float:
    return float("inf") if text.strip() in ("inf", "+inf") else float(text)


def window(claim: dict[str, str]) -> tuple[float, float]:
    """A window claim's [low, high]."""
    return _number(claim["window_low"]), _number(claim["window_high"])


def _check_claim(path: Path | str, c: dict[str, str]) -> list[str]:
    from pagelab.config import PROFILES

    cid, problems = c["id"], []
    if c["judge"] not in JUDGES:
        return [f"{cid}: judge {c['judge']!r} is not one of {', '.join(JUDGES)}"]
    profiles = c["profiles"].split()
    if profiles != ["all"] and not set(profiles) <= set(PROFILES):
        problems.append(f"{cid}: profiles {c['profiles']!r}: use 'all' or some of {', '.join(PROFILES)}")
    if c["judge"] == "none":
        return problems
    if c["judge"] == "order":
        if len(c["measurement"].split("<")) < 2:
            problems.append(f"{cid}: an order claim's measurement is 'a < b [< c]'")
        return problems
    try:
        lo, hi = window(c)
    except (KeyError, ValueError):
        return [*problems, f"{cid}: window_low/window_high must be numbers (or inf), got "
                           f"{c.get('window_low')!r}, {c.get('window_high')!r}"]
    if lo > hi:
        problems.append(f"{cid}: window_low {lo} > window_high {hi}")
    if "-" not in c["value"].strip("-"):
        try:
            v = float(c["value"])
        except ValueError:
            return [*problems, f"{cid}: value {c['value']!r} is not a number or a range lo-hi"]
        wide = v > 0 and (lo < v * DEFAULT_WIDTH[0] * 0.995 or hi > v * DEFAULT_WIDTH[1] * 1.005)
        if wide and c["window_reason"].strip().endswith("x0.8-x1.25"):
            problems.append(f"{cid}: window [{lo}, {hi}] is wider than x0.8-x1.25 of {v}: say why in window_reason")
    return problems


def load_claims(path: Path | str | None = None) -> pd.DataFrame:
    path = path or root() / "data" / "published" / "claims.csv"
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in COLUMNS + WINDOW + OPTIONAL if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)}")
    empty = frame[(frame[COLUMNS] == "").any(axis=1)]
    if len(empty):
        raise ValueError(f"{path}: claim(s) with an empty field: {', '.join(empty['id'])}")
    dup = frame["id"][frame["id"].duplicated()]
    if len(dup):
        raise ValueError(f"{path}: duplicate claim id(s) {', '.join(dup)}")
    problems = [p for c in frame.to_dict("records") for p in _check_claim(path, c)]
    if problems:
        raise ValueError(f"{path}: " + "; ".join(problems))
    return frame


def write_claims_table(out: Path | str, path: Path | str | None = None) -> None:
    claims = load_claims(path)
    table = pd.DataFrame({
        "Id": claims["id"].map(escape),
        "Claim": claims["claim"].map(escape),
        "Value": (claims["value"] + " " + claims["unit"]).map(escape),
        "Seed": claims["source"].str[:3],
        "Experiment": claims["experiment"].map(lambda s: r"\texttt{" + escape(s) + "}"),
    })
    write_table(out, table, column_format="l p{0.46\\linewidth} l l l")


_DIGITS = ["Zero", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine"]


def macro_name(claim_id: str) -> str:
    """\\Pub<id> with digits spelled out (LaTeX macro names are letters): CM1 -> PubCMOne."""
    return "Pub" + "".join(_DIGITS[int(c)] if c.isdigit() else c for c in claim_id if c.isalnum())


def value(claim_id: str, path: Path | str | None = None) -> float:
    """A published value as a number (the midpoint of a range such as 200-300)."""
    claims = load_claims(path).set_index("id")
    text = claims.loc[claim_id, "value"]
    parts = [float(p) for p in text.split("-")]
    return sum(parts) / len(parts)


def write_macros(out: Path | str, path: Path | str | None = None) -> None:
    """Every published value as a macro, so the text never types one: \\PubCMOne -> 3.95."""
    from pagelab.latex import write_macros as _write

    claims = load_claims(path)
    values = zip(claims["id"], claims["value"], strict=True)
    _write(out, {macro_name(i): escape(v).replace("-", "--") for i, v in values})
