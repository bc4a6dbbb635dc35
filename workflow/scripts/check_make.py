"""What the Makefile checks before it installs, builds or changes anything: its own variables
(PROFILE, EXPERIMENT, RECORDING) and, once a venv can run `pagelab`, config/config.yaml.

Run with any Python 3 and the standard library only, so that it works on a fresh clone before
the venv exists. The names come from the schema files themselves: the profiles are the enum of
the top-level `profile` key in config/schema.yaml, the experiments are the fragments
config/schema/<name>.yaml (one per experiment), a recording is a folder under data/recorded/ (or
a path) holding <experiment>/config.json. The configuration file needs YAML and jsonschema, so
it is validated by `pagelab config show` of the venv given with --pagelab, when that exists:
before anything else when the venv is already there, right after the venv is made on a fresh
clone. A refusal is one line on stderr naming the variable or the key, and exit 2.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

RECORDED = "recorded"  # make PROFILE=recorded: the paper from a recorded run, not a profile key
CONFIG = "config/config.yaml"


class Refused(Exception):
    pass


def profiles(root: Path) -> list[str]:
    """The `profile` key's enum in config/schema.yaml (its top-level properties)."""
    text = (root / "config" / "schema.yaml").read_text()
    block = re.search(r"^properties:\n(?:\s.*\n|\n)*?  profile:\n((?:    .*\n)+)", text, re.M)
    enum = re.search(r"^    enum: \[([^\]]*)\]", block.group(1), re.M) if block else None
    if not enum:
        raise Refused("config/schema.yaml: no enum of the profile key found")
    return [p.strip() for p in enum.group(1).split(",") if p.strip()]


def experiments(root: Path) -> list[str]:
    return sorted(p.stem for p in (root / "config" / "schema").glob("*.yaml"))


def recordings(root: Path) -> list[str]:
    base = root / "data" / "recorded"
    return sorted(str(d.relative_to(base)) for d in base.glob("*/*") if d.is_dir())


def is_recording(root: Path, name: str) -> bool:
    """A name under data/recorded/ or a path, holding at least one experiment's config.json."""
    return any(c.is_dir() and any(c.glob("*/config.json")) for c in (Path(name), root / "data" / "recorded" / name))


def check_names(root: Path, profile: str, experiment: str, recording: str) -> None:
    known = profiles(root)
    if profile and profile not in known + [RECORDED]:
        raise Refused(f"PROFILE={profile}: not a profile (the profiles: {', '.join(known)}, or {RECORDED})")
    exps = experiments(root)
    for name in experiment.split():
        if name not in exps:
            raise Refused(f"EXPERIMENT={name}: no experiment named {name!r} (the experiments: {', '.join(exps)})")
    if profile == RECORDED and not is_recording(root, recording):
        raise Refused(f"RECORDING={recording}: no recording {recording!r}; recorded: {', '.join(recordings(root))}")


def check_config(pagelab: str, profile: str, recording: str) -> None:
    """`pagelab config show` of the configuration with make's PROFILE or RECORDING over it:
    exit 2 is a refusal (one line naming the key); any other failure is the venv's, shown whole."""
    sets = [f"recording={recording}"] if profile == RECORDED else [f"profile={profile}"] if profile else []
    argv = [pagelab, "config", "show", "--configfile", CONFIG, *(w for s in sets for w in ("--set", s))]
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode == 2:
        line = " ".join(done.stderr.split())
        prefix = "pagelab config show: "
        line = line[len(prefix):] if line.startswith(prefix) else line
        raise Refused(line if line.startswith(CONFIG) else f"{CONFIG}: {line}")
    if done.returncode:
        sys.stderr.write(done.stderr)
        raise SystemExit(f"setup: {pagelab} config show failed (exit {done.returncode})")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--profile", default="")
    p.add_argument("--experiment", default="", help="space-separated experiment names")
    p.add_argument("--recording", default="")
    p.add_argument("--pagelab", default="", help="the venv's pagelab: also validate config/config.yaml")
    args = p.parse_args(argv)
    root = Path.cwd()
    try:
        check_names(root, args.profile.strip(), args.experiment, args.recording.strip())
        if args.pagelab and Path(args.pagelab).is_file():
            check_config(args.pagelab, args.profile.strip(), args.recording.strip())
    except Refused as exc:
        print(exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
