"""Reference runs kept in the repository: data/recorded/<machine>/<profile>/<experiment>/.

`pagelab record RESULTS_DIR MACHINE` copies a finished, clean run there: per experiment its
resolved configuration, provenance, trials.csv, stopping decisions, the device models' own
predictions where the experiment wrote them, its skip reason if it was skipped, and every
trial record (trials.jsonl.gz, one JSON record per line). With `--experiment NAME` (repeatable)
it records only those experiments and keeps the recording's others as they are, so a long
profile can be recorded an experiment at a time, each with its own commit in its provenance.
It refuses a run that is incomplete
(an experiment without trials, records, provenance or measurements, or whose checks failed) or
that was measured from a working tree with uncommitted changes, and a recording that would
push data/recorded/ past its size limit.

`replay(recording, outdir)` puts a recorded experiment back into a results directory exactly
as its trial rule would have left it, so the notebooks, verdicts and paper are rebuilt from
it without root, FUSE or any trial (make PROFILE=recorded). A recording keeps the names it was
measured with: its config block, trials.csv columns and records are read under the current
names (config/renames.yaml, pagelab.system.config.renamed_block and renamed_columns).
"""

from __future__ import annotations

import csv
import gzip
import json
import re
import shutil
from pathlib import Path
from typing import Any

from pagelab.core.paths import root
from pagelab.core.records import read_record, write_json_atomic, write_text_atomic
from pagelab.system import config

FILES = ["config.json", "provenance.json", "trials.csv", "stopping.json", "skipped.txt", "modelled.json",
         "modelled_spans.json"]
REQUIRED = ["config.json", "provenance.json", "trials.csv"]
LIMIT_BYTES = 20 << 20


class RecordingError(ValueError):
    pass


def recorded_dir() -> Path:
    return root() / "data" / "recorded"


def holds(recording: Path | str, experiment: str) -> bool:
    """Whether a recording (a name under data/recorded/ or a path) has a run of `experiment`
    (its <experiment>/trials.csv): a new experiment has none until one is recorded."""
    path = Path(recording)
    path = path if path.is_absolute() else recorded_dir() / path
    return (path / experiment / "trials.csv").is_file()


def not_recorded(recording: Path | str, experiment: str) -> str:
    """Why `experiment` is left out of what a recording rebuilds: the reason tests skip with,
    and `make PROFILE=recorded` prints."""
    return (f"no recording of {experiment} in {recording}: record one with `pagelab record` "
            "(docs/recordings.md)")


def machine_slug(prov: dict[str, Any]) -> str:
    """A short name for the machine a run came from: CPU vendor/family, cores, kernel, disk kind
    (e.g. 'xeon-2c-linux6.18-virtio')."""
    m = prov.get("machine", {})
    cpu = str(m.get("cpu_model", "cpu")).lower()
    word = next((w for w in ("epyc", "xeon", "ryzen", "core", "apple", "neoverse", "arm") if w in cpu),
                re.sub(r"[^a-z0-9]", "", cpu.split()[0] if cpu.split() else "cpu"))
    kernel = ".".join(str(m.get("kernel", "unknown")).split(".")[:2])
    disk = prov.get("disk", {})
    kind = ("virtio" if str(disk.get("disk", "")).startswith("vd") else
            "nvme" if str(disk.get("disk", "")).startswith("nvme") else
            "hdd" if disk.get("rotational") else "ssd" if disk else "disk")
    return f"{word}-{m.get('cpus', '?')}c-linux{kernel}-{kind}"


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def record(results_dir: Path | str, machine: str, experiments: list[str], dest_root: Path | None = None,
           keep_others: bool = False) -> Path:
    """Copy a finished run into dest_root/<machine>/<profile>/; returns that directory. With
    keep_others, the experiments of an existing recording that are not in `experiments` stay."""
    results_dir = Path(results_dir)
    dest_root = dest_root or recorded_dir()
    if not re.fullmatch(r"[a-z0-9][a-z0-9.-]{0,40}", machine):
        raise RecordingError(f"machine name {machine!r}: use a short slug of a-z, 0-9, '.', '-'")
    problems, profiles = [], set()
    for exp in experiments:
        d = results_dir / exp
        missing = [f for f in REQUIRED if not (d / f).exists()]
        if missing:
            problems.append(f"{exp}: no {', '.join(missing)}")
            continue
        try:
            check_run(results_dir, [exp], REQUIRED)
        except RecordingError as exc:
            problems.append(f"{exp}: {exc}")
            continue
        skipped = (d / "skipped.txt").exists()
        if not skipped:
            if not (d / "trials").is_dir() or not any((d / "trials").glob("*.json")):
                problems.append(f"{exp}: no trial records in {d / 'trials'}")
            if not (d / "measurements.json").exists():
                problems.append(f"{exp}: no measurements.json (the notebook did not run)")
            check = d / "check.txt"
            if check.exists() and check.read_text().strip() != "ok":
                problems.append(f"{exp}: its checks failed ({check.read_text().strip()})")
        prov = json.loads((d / "provenance.json").read_text())
        if prov.get("git", {}).get("dirty"):
            problems.append(f"{exp}: measured from a working tree with uncommitted changes "
                            f"(commit {str(prov['git'].get('commit'))[:10]}+dirty)")
        profiles.add(json.loads((d / "config.json").read_text()).get("profile", "?"))
    if problems:
        raise RecordingError(f"{results_dir} is not a complete, clean run: " + "; ".join(problems))
    if len(profiles) != 1:
        raise RecordingError(f"{results_dir}: experiments of different profiles ({', '.join(sorted(profiles))})")
    profile = profiles.pop()
    dest = dest_root / machine / profile
    staging = dest.with_name(f".{dest.name}.staging")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    if keep_others and dest.is_dir():
        for old_exp in sorted(p for p in dest.iterdir() if p.is_dir() and p.name not in experiments):
            shutil.copytree(old_exp, staging / old_exp.name)
    for exp in experiments:
        src, out = results_dir / exp, staging / exp
        out.mkdir(parents=True)
        for f in FILES:
            if (src / f).exists():
                shutil.copyfile(src / f, out / f)
        recs = sorted((src / "trials").glob("*.json")) if (src / "trials").is_dir() else []
        if recs:
            with gzip.open(out / "trials.jsonl.gz", "wt", compresslevel=9) as fh:
                for p in recs:
                    fh.write(json.dumps(read_record(p), sort_keys=True) + "\n")
    total = _size(dest_root) - _size(dest) + _size(staging)
    if total > LIMIT_BYTES:
        shutil.rmtree(staging)
        raise RecordingError(f"data/recorded would hold {total / 2**20:.1f} MiB, "
                             f"over its {LIMIT_BYTES >> 20} MiB limit")
    held = sorted(p.name for p in staging.iterdir() if p.is_dir())
    write_text_atomic(staging / "README.txt", f"A {profile} run on machine {machine}: {', '.join(held)}; "
                      "each experiment's provenance.json names its commit.\n")
    old = dest.with_name(f".{dest.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if dest.exists():
        dest.rename(old)
    staging.rename(dest)
    shutil.rmtree(old, ignore_errors=True)
    return dest


TRIALS_COLUMNS = ("trial_id", "status", "warmup")  # what every trials.csv starts with (experiment.execute)


def _check_trials_csv(path: Path) -> list[str]:
    """The trial ids of a trials.csv that is whole: a header naming TRIALS_COLUMNS, every row as
    many fields as the header, and the final newline the writer ends with (a file cut short
    lacks it). RecordingError naming the file otherwise."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordingError(f"{path}: cannot be read ({getattr(exc, 'strerror', None) or exc})") from exc
    if not text.endswith("\n"):
        raise RecordingError(f"{path}: truncated (it does not end with a newline)")
    rows = list(csv.reader(text.splitlines()))
    header = rows[0] if rows else []
    missing = [c for c in TRIALS_COLUMNS if c not in header]
    if missing:
        raise RecordingError(f"{path}: not a pagelab trials table (no {', '.join(missing)} column)")
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise RecordingError(f"{path}: line {line} has {len(row)} fields where the header has {len(header)}")
    col = header.index("trial_id")
    return [row[col] for row in rows[1:]]


def check_run(run: Path | str, experiments: list[str] | None = None,
              required: tuple[str, ...] | list[str] = ("trials.csv",)) -> dict[str, dict[str, Any]]:
    """A results directory or a recording, checked whole before anything reads it (pagelab
    compare, pagelab record, make PROFILE=recorded): each experiment's `required` files exist;
    trials.csv is whole (_check_trials_csv); config.json and provenance.json, where present,
    are JSON objects, and the config of an experiment this checkout knows validates against
    the schema (config.check_block, without this machine's checks); trials.jsonl.gz, where
    present, decompresses whole and holds a record of every trial in trials.csv. `experiments`:
    these (each must be there), default every <experiment>/trials.csv found. Returns each
    experiment's config block ({} without a config.json); RecordingError naming the file
    otherwise."""
    run = Path(run)
    if not run.is_dir():
        raise RecordingError(f"{run}: not a directory (a results directory or a recording)")
    names = experiments if experiments is not None else sorted(p.parent.name for p in run.glob("*/trials.csv"))
    if not names:
        raise RecordingError(f"{run}: holds no run (no <experiment>/trials.csv)")
    known = config.experiments()
    blocks: dict[str, dict[str, Any]] = {}
    for name in names:
        d = run / name
        for f in required:
            if not (d / f).is_file():
                raise RecordingError(f"{d / f}: missing (the run has no complete {name})")
        ids = _check_trials_csv(d / "trials.csv") if (d / "trials.csv").exists() else []
        docs: dict[str, Any] = {}
        for f in ("config.json", "provenance.json"):
            if (d / f).exists():
                try:
                    docs[f] = config.read_document(d / f)
                except config.ConfigError as exc:
                    raise RecordingError(str(exc)) from exc
                if not isinstance(docs[f], dict):
                    raise RecordingError(f"{d / f}: not a JSON object")
        block = config.renamed_block(name, docs.get("config.json", {}))
        if name in known and "config.json" in docs:
            try:
                config.check_block(name, block, source=d / "config.json", machine=False)
            except config.ConfigError as exc:
                raise RecordingError(str(exc)) from exc
        packed = d / "trials.jsonl.gz"
        if packed.exists():
            have = set()
            try:
                with gzip.open(packed, "rt") as fh:
                    for line_no, line in enumerate(fh, start=1):
                        rec = json.loads(line)
                        if not isinstance(rec, dict) or "trial_id" not in rec:
                            raise RecordingError(f"{packed}: line {line_no} is not a trial record")
                        have.add(rec["trial_id"])
            except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise RecordingError(f"{packed}: damaged or truncated ({exc})") from exc
            lacking = [i for i in ids if i not in have]
            if lacking:
                raise RecordingError(f"{packed}: no record of {len(lacking)} trial(s) of trials.csv "
                                     f"({', '.join(lacking[:3])}{', ...' if len(lacking) > 3 else ''})")
        blocks[name] = block
    return blocks


def resolve(name: str) -> Path:
    """A recording by name ('<machine>/<profile>') or path."""
    p = Path(name)
    for cand in (p, recorded_dir() / name):
        if (cand.is_dir() and any(cand.glob("*/config.json"))):
            return cand.resolve()
    known = sorted(str(d.relative_to(recorded_dir())) for d in recorded_dir().glob("*/*") if d.is_dir()) \
        if recorded_dir().exists() else []
    raise RecordingError(f"no recording {name!r}; recorded: {', '.join(known) or 'none'}")


def replay(recording: Path | str, experiment: str, outdir: Path | str) -> None:
    """Put a recorded experiment into outdir as its trial rule would have left it."""
    src, outdir = Path(recording) / experiment, Path(outdir)
    if not (src / "trials.csv").exists():
        raise RecordingError(f"{src}: the recording has no {experiment} run")
    outdir.mkdir(parents=True, exist_ok=True)
    for f in FILES:
        if f in ("config.json", "provenance.json"):
            continue  # config.json is the rule's own input; provenance is stamped below
        target = outdir / f
        if f == "trials.csv":
            write_text_atomic(target, renamed_trials_csv(experiment, (src / f).read_text()))
        elif (src / f).exists():
            tmp = target.with_name(f".{f}.tmp")
            shutil.copyfile(src / f, tmp)
            tmp.replace(target)
        elif f == "skipped.txt":
            target.unlink(missing_ok=True)
    prov = json.loads((src / "provenance.json").read_text())
    prov["recorded_machine"] = Path(recording).resolve().parent.name
    prov["recording"] = str(Path(recording).resolve().relative_to(root())) \
        if Path(recording).resolve().is_relative_to(root()) else str(recording)
    write_json_atomic(outdir / "provenance.json", prov)
    if (src / "trials.jsonl.gz").exists():
        with gzip.open(src / "trials.jsonl.gz", "rt") as fh:
            for line in fh:
                rec = config.renamed_record(experiment, json.loads(line))
                write_json_atomic(outdir / "trials" / f"{rec['trial_id']}.json", rec)


def renamed_trials_csv(experiment: str, text: str) -> str:
    """A recorded trials.csv under the current column names (config.renamed_columns): its
    header renamed, its rows as they are."""
    header, sep, rows = text.partition("\n")
    cols = next(csv.reader([header])) if header else []
    return ",".join(config.renamed_columns(experiment, cols)) + sep + rows if cols else text


def source(results_dir: Path | str) -> dict[str, str]:
    """Which machine and commit(s) a results directory's data came from (for the paper): the
    first experiment's machine; every distinct commit, in the experiments' order."""
    commits: list[str] = []
    first: dict[str, Any] | None = None
    for prov_path in sorted(Path(results_dir).glob("*/provenance.json")):
        prov = json.loads(prov_path.read_text())
        first = first or prov
        git = prov.get("git", {})
        commit = str(git.get("commit", "unknown"))[:10] + ("+dirty" if git.get("dirty") else "")
        if commit not in commits:
            commits.append(commit)
    if first is None:
        return {"machine": "unknown", "commit": "unknown", "recorded": "no"}
    return {"machine": first.get("recorded_machine") or machine_slug(first), "commit": ", ".join(commits),
            "recorded": "yes" if first.get("recorded_machine") else "no"}


def reference_dir(name: str, profile: str, current_recording: str = "") -> str:
    """The reference machine's recording of `profile` (absolute path), or "" when there is none
    or the current run is that recording itself."""
    if not name:
        return ""
    path = (recorded_dir() / name / profile).resolve()
    if not path.is_dir() or (current_recording and Path(current_recording).resolve() == path):
        return ""
    return str(path)
