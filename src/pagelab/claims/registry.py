"""The published claims (data/published/claims.csv) that this repository reproduces: the
registry, read and checked here; its changelog is pagelab.claims.changelog's, the verdicts
pagelab.claims.judge's.

One row per claim: its id, wording, value, unit, its source (the seed article's key in
paper/refs.bib, which the paper's table of claims cites), the experiment
and measurement that is its most faithful twin here, and how it is judged, all written down
before any run:
- `kind`: what the seed's figure is, which fixes how it is judged (empty: a point value):
  - `point`: a single figure; the window is x0.8-x1.25 of it unless `window_reason` says why
    it is wider;
  - `range`: a range in the seed's words ("200-300", "better than 0.4 ... below 2"); the window
    is that range;
  - `bound`: one side only ("at least", "up to"); one window edge is `inf` (or `-inf`);
  - `ratio`: a ratio of two of the seed's own figures, judged like a point value (or, when the
    two figures are ranges, against the range of their ratio); where the seed's hardware is not
    named, a ratio of two figures from the same machine is the twin that cancels it;
  - `order`: an order of several arms, judged step by step: `measurement` is the steps' ratio
    keys separated by ';' (each smaller arm over the next), `window_low`/`window_high` the
    steps' windows around the seed's own step sizes, in the same order;
- `judge`: `window` (point, range, bound, ratio) or `order`;
- `window_low`, `window_high`, `window_reason`: the window and why it is that wide (how the
  seed measured: a hand-timed run is not a 1 % figure);
- `twin`: one sentence on what our measurement is and how it differs from the seed's;
- `construction`: non-empty when the value really follows from inputs of a device model or
  is arithmetic (then the verdict is "by construction", never "reproduced"), saying which;
- `profiles`: `all`, or the profiles whose scale the claim can be judged at (e.g. `seed`);
- `hardware`: empty when the seed's figure depends on no hardware, or only on hardware the
  seed names (and our emulated devices model); `unnamed: <what>` when it depends on hardware
  the seed does not name (its CPU, its page-file disk): an absolute figure (point, range,
  bound) is then "not applicable here: depends on <what>", and only a ratio or an order of the
  seed's own figures from that machine is judged; `unnamed balance: <what>` when the figure is a
  ratio of two of the seed's figures bound by two different parts of its machine that the seed
  does not name (time spent on its CPU over time spent waiting for its disk): the ratio cancels
  the machine's scale but keeps the balance of the two parts, so it too is shown, not judged;
  `none: <why>` when a figure measured on this machine's own hardware does not depend on it (a
  count);
- `sensitivity`: empty for a published claim; for a sensitivity row, the id of the claim whose
  twin it varies (the other reading of a seed's condition, registered with the primary one): it
  is judged the same way and shown beside that claim, and is not counted as a claim.

A measurement made on this machine's own disk or CPU (each experiment's descriptor names its
keys: `own_hardware`) and judged as an absolute figure must say in `hardware` which it is:
`hardware_problems` refuses it otherwise (pagelab.experiments.harness.load_claims applies it with
every experiment's table), so the one rule for unnamed hardware is applied to every claim by code, not
by remembering.

Once a recording exists, claims.csv is the pre-registration: a change of a judging column after
it needs a row in the changelog (pagelab.claims.changelog).
The paper's table of claims is generated from this file only.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from pagelab.core.latex import escape, write_table
from pagelab.core.latex import write_macros as _write
from pagelab.core.paths import root
from pagelab.system.config import PROFILES

COLUMNS = ["id", "claim", "value", "unit", "source", "experiment", "measurement", "judge",
           "window_reason", "twin", "profiles"]
WINDOW = ["window_low", "window_high"]
OPTIONAL = ["construction", "kind", "hardware", "sensitivity"]  # may be empty, or missing at the end of a row
JUDGES = ("window", "order")
KINDS = ("point", "range", "bound", "ratio", "order")
ABSOLUTE = ("point", "range", "bound")  # kinds whose figure carries the seed's hardware
DEFAULT_WIDTH = (0.8, 1.25)  # a point value's window without a reason of its own


def bib_path() -> Path:
    return root() / "paper" / "refs.bib"


def bib_keys(path: Path | str | None = None) -> set[str]:
    """The entry keys of a BibTeX file (paper/refs.bib)."""
    return set(re.findall(r"^@\w+\{([^,\s]+),", Path(path or bib_path()).read_text(), re.M))


def claims_path() -> Path:
    return root() / "data" / "published" / "claims.csv"


def _number(text: str) -> float:
    t = text.strip()
    if t in ("inf", "+inf"):
        return math.inf
    return -math.inf if t == "-inf" else float(t)


def kind(claim: dict[str, str]) -> str:
    return (claim.get("kind") or "").strip() or "point"


def judged_at(claim: dict[str, str], profile: str) -> bool:
    """Whether a claim is judged at a profile's scale (its `profiles`: 'all' or some of them)."""
    profiles = claim["profiles"].split()
    return profiles == ["all"] or profile in profiles


def steps(claim: dict[str, str]) -> list[str]:
    """The measurement keys a claim reads: one, or an order's steps."""
    return [k.strip() for k in claim["measurement"].split(";")] if kind(claim) == "order" \
        else [claim["measurement"].strip()]


def windows(claim: dict[str, str]) -> list[tuple[float, float]]:
    """The claim's window, or an order's one window per step."""
    lows, highs = claim["window_low"].split(";"), claim["window_high"].split(";")
    if len(lows) != len(highs):
        raise ValueError("window_low and window_high name different numbers of steps")
    return [(_number(lo), _number(hi)) for lo, hi in zip(lows, highs, strict=True)]


def window(claim: dict[str, str]) -> tuple[float, float]:
    """A window claim's [low, high]."""
    return windows(claim)[0]


def _hardware_after(claim: dict[str, str], tag: str) -> str | None:
    """The text of the claim's `hardware` after `<tag>:`, when it starts so."""
    text = (claim.get("hardware") or "").strip()
    return text.split(":", 1)[1].strip() if text.startswith(f"{tag}:") else None


def unnamed_hardware(claim: dict[str, str]) -> str | None:
    """What hardware of the seed's, which the seed does not name, the figure depends on."""
    return _hardware_after(claim, "unnamed")


def unnamed_balance(claim: dict[str, str]) -> str | None:
    """Which two unnamed parts of the seed's machine a ratio claim keeps the balance of."""
    return _hardware_after(claim, "unnamed balance")


def judged_here(claim: dict[str, str], profile: str) -> bool:
    """Whether the judge (pagelab.claims.judge.judge) can give the claim reproduced or not
    reproduced at `profile`: judged at its scale, not an absolute figure of unnamed hardware nor
    a ratio keeping an unnamed balance, not by construction (the measurements may still make it
    by construction, censored or not applicable when they come)."""
    return (judged_at(claim, profile) and not (unnamed_hardware(claim) and kind(claim) in ABSOLUTE)
            and not unnamed_balance(claim) and not (claim.get("construction") or "").strip())


def own_hardware(key: str, table: Mapping[str, str]) -> str | None:
    """Which of this machine's own hardware a measurement was taken on, by the experiments'
    `table` (key prefix -> which; None: an emulated device, a model or arithmetic)."""
    return next((what for prefix, what in table.items() if key.startswith(prefix)), None)


def _check_claim(c: dict[str, str]) -> list[str]:
    cid, problems, k = c["id"], [], kind(c)
    if c["judge"] not in JUDGES:
        return [f"{cid}: judge {c['judge']!r} is not one of {', '.join(JUDGES)}"]
    if k not in KINDS:
        return [f"{cid}: kind {c['kind']!r} is not one of {', '.join(KINDS)} (empty: point)"]
    if (c["judge"] == "order") != (k == "order"):
        problems.append(f"{cid}: judge {c['judge']!r} and kind {k!r} disagree (an order is judge and kind 'order')")
    profiles = c["profiles"].split()
    if profiles != ["all"] and not set(profiles) <= set(PROFILES):
        problems.append(f"{cid}: profiles {c['profiles']!r}: use 'all' or some of {', '.join(PROFILES)}")
    hw = (c.get("hardware") or "").strip()
    if hw and not re.match(r"^(unnamed|unnamed balance|none): \S", hw):
        problems.append(f"{cid}: hardware {hw!r}: empty, 'unnamed: <what>', 'unnamed balance: <what>' "
                        "or 'none: <why>'")
    if unnamed_balance(c) and k != "ratio":
        problems.append(f"{cid}: hardware 'unnamed balance: ...' is for a ratio, not a {k}")
    bad_keys = [s for s in steps(c) if not s.startswith(c["experiment"] + ".")]
    if bad_keys:
        problems.append(f"{cid}: measurement {bad_keys[0]!r} is not one of experiment {c['experiment']!r}'s")
    try:
        wins = windows(c)
    except (KeyError, ValueError):
        return [*problems, f"{cid}: window_low/window_high must be numbers (or inf), got "
                           f"{c.get('window_low')!r}, {c.get('window_high')!r}"]
    if k == "order":
        if len(wins) != len(steps(c)):
            problems.append(f"{cid}: an order has one window per step: {len(steps(c))} steps, {len(wins)} windows")
        if not all(math.isfinite(x) for w in wins for x in w):
            problems.append(f"{cid}: an order's step windows are finite")
    elif len(wins) != 1:
        problems.append(f"{cid}: one window, not {len(wins)}")
    for lo, hi in wins:
        if lo > hi:
            problems.append(f"{cid}: window_low {lo} > window_high {hi}")
    lo, hi = wins[0]
    if k == "bound" and math.isfinite(lo) == math.isfinite(hi):
        problems.append(f"{cid}: a bound has one open side (window_high inf or window_low -inf)")
    if k in ("range", "point", "ratio") and not (math.isfinite(lo) and math.isfinite(hi)):
        problems.append(f"{cid}: a {k} has a finite window; one open side is a bound")
    if k == "ratio" and re.fullmatch(r"[0-9.]+-[0-9.]+", c["value"].strip()):
        return problems  # a ratio of two of the seed's ranges: its window is that range
    if k in ("point", "ratio"):
        try:
            v = float(c["value"])
        except ValueError:
            return [*problems, f"{cid}: value {c['value']!r} of a {k} is not a number (a range lo-hi is kind range)"]
        wide = v > 0 and (lo < v * DEFAULT_WIDTH[0] * 0.995 or hi > v * DEFAULT_WIDTH[1] * 1.005)
        if wide and c["window_reason"].strip().endswith("x0.8-x1.25"):
            problems.append(f"{cid}: window [{lo}, {hi}] is wider than x0.8-x1.25 of {v}: say why in window_reason")
    return problems


def hardware_problems(frame: pd.DataFrame, table: Mapping[str, str]) -> list[str]:
    """Claims that break the one rule for unnamed hardware: a measurement of this machine's own
    disk or CPU (by the experiments' `table`: key prefix -> which) judged as an absolute figure
    (point, range, bound) without saying in `hardware` what of the seed's it depends on (the
    judge then shows it as not applicable) or why it depends on nothing."""
    problems = []
    for c in frame.to_dict("records"):
        where = next(filter(None, (own_hardware(k, table) for k in steps(c))), None)
        if where and kind(c) in ABSOLUTE and not (c.get("hardware") or "").strip():
            problems.append(f"{c['id']}: {c['measurement']} is measured on {where} and judged as an absolute "
                            f"{kind(c)}: the seed's figure depends on its own hardware; say which in hardware "
                            "('unnamed: <what>', then it is shown, not judged) or why not ('none: <why>')")
    return problems


def read_claims(text: str, where: str) -> pd.DataFrame:
    """A claims file's rows as strings ('' for an empty or a missing trailing field)."""
    frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False).fillna("")
    missing = [c for c in COLUMNS + WINDOW if c not in frame.columns]
    if missing:
        raise ValueError(f"{where}: missing column(s) {', '.join(missing)}")
    for c in OPTIONAL:
        if c not in frame.columns:
            frame[c] = ""
    return frame


def load_claims(path: Path | str | None = None) -> pd.DataFrame:
    """The claims file's rows, each checked on its own and against the others and refs.bib
    (ValueError naming the claims); the rule for unnamed hardware needs the experiments' tables
    and is pagelab.experiments.harness.load_claims's."""
    path = path or claims_path()
    frame = read_claims(Path(path).read_text(), str(path))
    empty = frame[(frame[COLUMNS] == "").any(axis=1)]
    if len(empty):
        raise ValueError(f"{path}: claim(s) with an empty field: {', '.join(empty['id'])}")
    dup = frame["id"][frame["id"].duplicated()]
    if len(dup):
        raise ValueError(f"{path}: duplicate claim id(s) {', '.join(dup)}")
    problems = [p for c in frame.to_dict("records") for p in _check_claim(c)]
    ids = set(frame["id"])
    problems += [f"{c['id']}: sensitivity {c['sensitivity']!r} is not the id of a claim in this file"
                 for c in frame.to_dict("records") if c["sensitivity"].strip()
                 and (c["sensitivity"].strip() not in ids or c["sensitivity"].strip() == c["id"])]
    keys = bib_keys()
    problems += [f"{c['id']}: source {c['source']!r} is not a key of {bib_path()}"
                 for c in frame.to_dict("records") if c["source"] not in keys]
    if problems:
        raise ValueError(f"{path}: " + "; ".join(problems))
    return frame


# --------------------------------------------------------------------------- the paper's tables
def write_claims_table(out: Path | str, path: Path | str | None = None) -> None:
    claims = load_claims(path)
    table = pd.DataFrame({
        "Id": claims["id"].map(escape),
        "Claim": claims["claim"].map(escape),
        "Value": (claims["value"] + " " + claims["unit"]).map(escape),
        "Source": claims["source"].map(lambda key: r"\cite{" + key + "}"),
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
    claims = load_claims(path)
    values = zip(claims["id"], claims["value"], strict=True)
    _write(out, {macro_name(i): escape(v).replace("-", "--") for i, v in values})
