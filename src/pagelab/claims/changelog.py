"""The claims' changelog (data/published/claims_changelog.csv): once a recording exists
(data/recorded/<machine>/<profile>/, each experiment's provenance names its commit), the claims
registry (pagelab.claims.registry) is the pre-registration: any change of a judging column
(JUDGING) after that commit needs a row in the changelog (CHANGELOG_COLUMNS; `changelog_problems`
checks it against every recording's commit), and so does a parameter of the stopping rule
(STOPPING) that differs from what a recording ran with.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pandas as pd
import yaml

from pagelab.claims.registry import read_claims
from pagelab.core.paths import root

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
# A verdict moved by new data, not by claims.csv: a recording replaced by a re-recording. Its row
# names the claim, the recording (<profile>/<experiment>) in `reason`, and old and new the commits
# the two recordings were made at (their provenance.json).
RECORDING_ROW = "recording"
# A verdict moved by a rule of the judging code rather than by claims.csv or the schema (e.g.
# stats.median_censored: when a median counts as censored): one row per claim whose verdict it
# moves on a recording, and one with claim SCHEMA_ROW where the rule is also the stopping rule's
# (pagelab.run.sequential); old and new say the rule in words.
RULE_ROW = "rule"


def changelog_path() -> Path:
    return root() / "data" / "published" / "claims_changelog.csv"


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
        if r["column"] not in JUDGING + [CLAIM_ROW, RECORDING_ROW, RULE_ROW] + STOPPING_COLUMNS:
            problems.append(f"line {i}: column {r['column']!r} is not a judging column ({', '.join(JUDGING)}), "
                            f"{CLAIM_ROW!r}, {RECORDING_ROW!r}, {RULE_ROW!r} or a stopping rule's "
                            f"({', '.join(STOPPING_COLUMNS)})")
        if r["column"] == RULE_ROW and not (r["old"].strip() and r["new"].strip()):
            problems.append(f"line {i}: a {RULE_ROW!r} row's old and new say the rule before and after")
        if r["column"] == RECORDING_ROW and not all(re.fullmatch(r"[0-9a-f]{7,40}", r[c]) for c in ("old", "new")):
            problems.append(f"line {i}: a {RECORDING_ROW!r} row's old and new are the recordings' commits")
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
