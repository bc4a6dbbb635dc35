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
