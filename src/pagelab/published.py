"""The published claims (data/published/claims.csv) that this repository reproduces.

One row per claim with its id, wording, value, unit, the seed file it comes from and the
experiment that measures it. The paper's table of claims is generated from this file only.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pagelab.latex import escape, write_table
from pagelab.paths import root

COLUMNS = ["id", "claim", "value", "unit", "source", "experiment", "measurement", "judge"]
OPTIONAL = ["tolerance"]


def load_claims(path: Path | str | None = None) -> pd.DataFrame:
    path = path or root() / "data" / "published" / "claims.csv"
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)}")
    empty = frame[(frame[COLUMNS] == "").any(axis=1)]
    if len(empty):
        raise ValueError(f"{path}: claim(s) with an empty field: {', '.join(empty['id'])}")
    dup = frame["id"][frame["id"].duplicated()]
    if len(dup):
        raise ValueError(f"{path}: duplicate claim id(s) {', '.join(dup)}")
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
