"""The published claims (data/published/claims.csv) that this repository reproduces, and the
changelog beside them (data/published/claims_changelog.csv).

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
`hardware_problems` refuses it otherwise (pagelab.paper.claims.load_claims applies it with every
experiment's table), so the one rule for unnamed hardware is applied to every claim by code, not
by remembering.

Once a recording exists (data/recorded/<machine>/<profile>/, each experiment's provenance
names its commit), claims.csv is the pre-registration: any change of a judging column
(JUDGING) after that commit needs a row in the changelog (CHANGELOG_COLUMNS; `changelog_problems`
checks it against every recording's commit), and so does a parameter of the stopping rule
(STOPPING) that differs from what a recording ran with.
The paper's table of claims is generated from this file only.
"""

from __future__ import annotations

import io
import json
import math
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pandas as pd
import yaml

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
# The columns that decide a verdict: a change of any of them after a recording is logged.
JUDGING = ["measurement", "judge", "window_low", "window_high", "window_reason", "twin", "construction",
           "profiles", "kind", "hardware", "sensitivity"]
CHANGELOG_COLUMNS = ["date", "claim", "column", "old", "new", "reason", "verdicts_before", "verdicts_after"]
CLAIM_ROW = "claim"  # a changelog row's column for a whole claim added ("added") or removed ("removed")
# The stopping rule's parameters (pagelab.run.sequential): they decide how many trials stand behind
# each verdict, so a change of one after a recording is logged too, as column repetitions.<key> of
# row SCHEMA_ROW (a default in definitions.repetitions) or <experiment>/<profile> (a profile's own).
STOPPING = ["n_min", "n_max", "ci_pct", "verdict_look_every", "verdict_margin_pct", "verdict_interim_level"]
STOPPING_COLUMNS = [f"repetitions.{k}" for k in STOPPING]
SCHEMA_ROW = "schema"


def bib_path() -> Path:
    return root() / "paper" / "refs.bib"


def bib_keys(path: Path | str | None = None) -> set[str]:
    """The entry keys of a BibTeX file (paper/refs.bib)."""
    return set(re.findall(r"^@\w+\{([^,\s]+),", Path(path or bib_path()).read_text(), re.M))


def claims_path() -> Path:
    return root() / "data" / "published" / "claims.csv"


def changelog_path() -> Path:
    return root() / "data" / "published" / "claims_changelog.csv"


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
    """Whether the judge (pagelab.paper.claims.judge) can give the claim reproduced or not
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
    and is pagelab.paper.claims.load_claims's."""
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


# --------------------------------------------------------------------------- the changelog
def load_changelog(path: Path | str | None = None) -> pd.DataFrame:
    """The changelog's rows (date, claim, column, old, new, reason, verdicts before and after),
    each checked: a real date, a judging column (or `claim` for a claim added or removed), a
    reason and the verdicts on every recording."""
    path = Path(path or changelog_path())
    if not path.exists():
        return pd.DataFrame(columns=CHANGELOG_COLUMNS)
    frame = pd.read_csv(path, dtype=str, keep_default_na=False).fillna("")
    missing = [c for c in CHANGELOG_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)}")
    problems = []
    for i, r in enumerate(frame.to_dict("records"), start=2):
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", r["date"]):
            problems.append(f"line {i}: date {r['date']!r} is not YYYY-MM-DD")
        if r["column"] not in JUDGING + [CLAIM_ROW] + STOPPING_COLUMNS:
            problems.append(f"line {i}: column {r['column']!r} is not a judging column ({', '.join(JUDGING)}), "
                            f"{CLAIM_ROW!r} or a stopping rule's ({', '.join(STOPPING_COLUMNS)})")
        if r["column"] == CLAIM_ROW and r["new"] not in ("added", "removed"):
            problems.append(f"line {i}: a {CLAIM_ROW!r} row's new value is 'added' or 'removed'")
        for col in ("claim", "reason", "verdicts_before", "verdicts_after"):
            if not r[col].strip():
                problems.append(f"line {i}: {col} is empty")
    if problems:
        raise ValueError(f"{path}: " + "; ".join(problems))
    return frame


def _covered(rows: list[dict[str, str]], old: str, new: str) -> bool:
    """A chain of logged changes (in the file's order, each row's new the next one's old) from
    `old` to `new`."""
    for i, first in enumerate(rows):
        if first["old"] != old:
            continue
        value = old
        for r in rows[i:]:
            if r["old"] != value:
                break
            value = r["new"]
            if value == new:
                return True
    return False


def differences(before: pd.DataFrame, after: pd.DataFrame) -> list[tuple[str, str, str, str]]:
    """(claim, column, old, new) for every judging column that differs, and (claim, 'claim',
    '', 'added' | 'present', 'removed') for a claim that is new or gone."""
    b, a = before.set_index("id"), after.set_index("id")
    out = []
    for cid in a.index:
        if cid not in b.index:
            out.append((cid, CLAIM_ROW, "", "added"))
            continue
        for col in JUDGING:
            old = str(b.loc[cid, col]) if col in b.columns else ""
            new = str(a.loc[cid, col]) if col in a.columns else ""
            if old != new:
                out.append((cid, col, old, new))
    out += [(cid, CLAIM_ROW, "present", "removed") for cid in b.index if cid not in a.index]
    return out


def recording_commits(repo: Path | None = None) -> dict[str, list[str]]:
    """Every commit a recording was made from (data/recorded/<machine>/<profile>/<experiment>/
    provenance.json), with the recordings made from it."""
    repo = repo or root()
    out: dict[str, list[str]] = {}
    for prov in sorted((repo / "data" / "recorded").glob("*/*/*/provenance.json")):
        commit = (json.loads(prov.read_text()).get("git") or {}).get("commit")
        if commit:
            out.setdefault(commit, []).append(str(prov.parent.relative_to(repo / "data" / "recorded")))
    return out


def claims_at(commit: str, repo: Path | None = None) -> tuple[str | None, str]:
    """claims.csv as it was at `commit`, or (None, why git could not show it here)."""
    try:
        out = subprocess.run(["git", "show", f"{commit}:data/published/claims.csv"], cwd=repo or root(),
                             capture_output=True, text=True, timeout=60)
    except OSError as exc:
        return None, f"git cannot run here ({exc.strerror})"
    if out.returncode == 0:
        return out.stdout, ""
    err = (out.stderr.strip().splitlines() or ["no message"])[0]
    if any(w in err for w in ("bad object", "unknown revision", "invalid object", "not a valid object",
                              "does not exist", "not a git repository", "exists on disk, but not in")):
        return None, (f"the recordings' commit {commit[:10]} is not in this checkout's git history (a shallow "
                      "clone or an export)")
    return None, f"git cannot read this checkout's history here: {err}"


def _param(v: object) -> str:
    return f"{float(v):g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)


def stopping_rule(repo: Path) -> dict[tuple[str, str], dict[str, tuple[str, str]]]:
    """The stopping rule each experiment's profile runs with now, from the schema (config/schema.yaml
    and config/schema/*.yaml): (experiment, profile) -> {key: (value, the changelog row that
    sets it: <experiment>/<profile> for the profile's own block, SCHEMA_ROW for a default of
    definitions.repetitions)}."""
    paths = [repo / "config" / "schema.yaml", *sorted((repo / "config" / "schema").glob("*.yaml"))]
    docs = [yaml.safe_load(p.read_text()) or {} for p in paths if p.exists()]
    defaults = {}
    for doc in docs:
        props = ((doc.get("definitions") or {}).get("repetitions") or {}).get("properties") or {}
        defaults.update({k: _param(props[k]["default"]) for k in STOPPING
                         if isinstance(props.get(k), dict) and "default" in props[k]})
    out: dict[tuple[str, str], dict[str, tuple[str, str]]] = {}
    for doc in docs:
        for exp, block in (doc.get("properties") or {}).items():
            for profile, sub in ((block or {}).get("properties") or {}).items() if isinstance(block, dict) else []:
                default = sub.get("default") if isinstance(sub, dict) else None
                reps = default.get("repetitions") if isinstance(default, dict) else None
                if isinstance(reps, dict):
                    out[(exp, profile)] = {k: (_param(reps[k]), f"{exp}/{profile}") if k in reps
                                           else (defaults.get(k, ""), SCHEMA_ROW) for k in STOPPING}
    return out


def stopping_differences(repo: Path) -> list[tuple[str, str, str, str, str]]:
    """(row, repetitions.<key>, old, new, recording) for every stopping parameter that a
    recording (its config.json's repetitions; '' for a key it ran without) ran with and that
    the schema now sets otherwise, once per row, column, old and new."""
    now = stopping_rule(repo)
    seen: dict[tuple[str, str, str, str], list[str]] = {}
    for cfg_path in sorted((repo / "data" / "recorded").glob("*/*/*/config.json")):
        cfg = json.loads(cfg_path.read_text())
        exp, profile = cfg_path.parent.name, cfg.get("profile", cfg_path.parent.parent.name)
        rule = now.get((exp, profile))
        if rule is None:
            continue
        ran = cfg.get("repetitions") or {}
        for k in STOPPING:
            old = _param(ran[k]) if k in ran else ""
            new, row = rule[k]
            if old != new:
                seen.setdefault((row, f"repetitions.{k}", old, new), []).append(
                    str(cfg_path.parent.relative_to(repo / "data" / "recorded")))
    return [(row, col, old, new, ", ".join(recs)) for (row, col, old, new), recs in sorted(seen.items())]


def changelog_problems(repo: Path | None = None) -> tuple[list[str], str | None]:
    """Every judging change since a recording's commit that the changelog does not log, of
    claims.csv's judging columns or of the stopping rule's parameters in the schema:
    (problems, None), or ([], why the check cannot run here: no recording, or no git history)."""
    repo = Path(repo or root())
    commits = recording_commits(repo)
    if not commits:
        return [], "no recording in data/recorded/: nothing is pre-registered yet"
    now = read_claims((repo / "data" / "published" / "claims.csv").read_text(), "claims.csv")
    log = load_changelog(repo / "data" / "published" / "claims_changelog.csv").to_dict("records")
    problems = []
    for commit, recordings in commits.items():
        text, why = claims_at(commit, repo)
        if text is None:
            return [], f"{why}: the changelog cannot be checked against it"
        for cid, col, old, new in differences(read_claims(text, f"claims.csv at {commit[:10]}"), now):
            rows = [r for r in log if r["claim"] == cid and r["column"] == col]
            if col == CLAIM_ROW and any(r["new"] == new for r in rows):
                continue
            if col != CLAIM_ROW and _covered(rows, old, new):
                continue
            problems.append(f"{cid}.{col} changed since commit {commit[:10]} (recording "
                            f"{', '.join(sorted(recordings))}) from {old!r} to {new!r} without a row in "
                            "data/published/claims_changelog.csv")
    for row, col, old, new, recordings in stopping_differences(repo):
        if not _covered([r for r in log if r["claim"] == row and r["column"] == col], old, new):
            problems.append(f"{row}.{col} is {new!r} in the schema where {recordings} ran with {old!r}, "
                            "without a row in data/published/claims_changelog.csv")
    return problems, None


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
