"""Trial records into one tidy table per experiment (Parquet; one row per trial, every scalar
of the record, counters included, as a column), and the checks that table must pass.

Column names are the record's keys joined with dots: `params.arm`, `result.retouch_s`,
`result.counters.retouch.vmstat.pswpin`, `provenance.machine.kernel`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from pagelab.core.records import read_records

_SHORT_LIST = 64


def _short_scalar_list(value: Any) -> bool:
    return len(value) <= _SHORT_LIST and all(isinstance(v, str | int | float | bool) for v in value)


def frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Records to one row each, nested dicts as dotted columns (pandas.json_normalize). Lists
    are kept only when they are short lists of scalars (joined as text), so a command line
    survives and a time series does not bloat the table; a column that holds no such list is
    dropped."""
    flat = pd.json_normalize(records, sep=".")
    for col in list(flat.columns):
        cells = flat[col]
        lists = cells.map(lambda v: isinstance(v, list))
        if not lists.any():
            continue
        kept = cells.map(lambda v: " ".join(str(x) for x in v) if isinstance(v, list) and _short_scalar_list(v)
                         else (None if isinstance(v, list) else v))
        if kept[lists].isna().all() and not (~lists & cells.notna()).any():
            flat = flat.drop(columns=col)
        else:
            flat[col] = kept
    return flat


def flatten(obj: dict[str, Any]) -> dict[str, Any]:
    """One record's dotted keys and values, as `frame` makes them."""
    return frame([obj]).iloc[0].to_dict() if obj else {}


def tidy(results_dir: Path | str) -> pd.DataFrame:
    """Every trial record of an experiment (results/<name>/trials/*.json), one row each."""
    recs = read_records(Path(results_dir) / "trials")
    out = frame(recs) if recs else pd.DataFrame()
    if len(out):
        out = out.sort_values("order").reset_index(drop=True)
    return out


def check(frame: pd.DataFrame, configurations: list[dict[str, Any]], required: list[str],
          n_min: int = 1) -> list[str]:
    """What is wrong with a tidy table: a failed trial among the counted ones, a missing
    configuration, one with fewer than n_min valid trials, a required column absent or empty,
    counters that never moved."""
    problems = []
    if frame.empty:
        return ["no trials"]
    counted = frame[~frame["warmup"].astype(bool)]
    bad = counted[counted["status"] != "ok"]
    if len(bad):
        problems.append(f"{len(bad)} counted trial(s) not ok: {', '.join(bad['trial_id'])}")
    valid = counted["valid"].fillna(True).astype(bool) if "valid" in counted else pd.Series(True, index=counted.index)
    missing, few = [], []
    for conf in configurations:
        sel = pd.Series(True, index=counted.index)
        for k, v in conf.items():
            col = f"params.{k}"
            sel &= counted[col] == v if col in counted else False
        label = ", ".join(f"{k}={v}" for k, v in conf.items())
        if not sel.any():
            missing.append(label)
        elif (sel & valid).sum() < n_min:
            few.append(f"{label} ({int((sel & valid).sum())} valid)")
    if missing:
        problems.append(f"configurations without a trial: {'; '.join(missing)}")
    if few:
        problems.append(f"configurations with fewer than {n_min} valid trials: {'; '.join(few)}")
    for col in required:
        if col not in frame.columns:
            problems.append(f"column {col} missing")
        elif counted[col].isna().all():
            problems.append(f"column {col} is empty")
    counter_cols = [c for c in frame.columns if ".counters." in c or c.startswith("result.counters")]
    if counter_cols and (counted[counter_cols].fillna(0) == 0).all().all():
        problems.append("every counter is zero")
    return problems
