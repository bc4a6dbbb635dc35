"""The experiment matrix across a fleet of hosts: its jobs and one job on a host.

The `fleet:` block of config/config.yaml names the hosts (name plus free-form labels), the
experiments each runs and the profile. workflow/rules/fleet.smk turns it into one trial job per
(host, experiment), run on that host by a Snakemake executor plugin (slurm or cluster-generic,
workflow/profiles/), writing under results/fleet/<host>/<experiment>/. The order the jobs are
submitted in is pagelab.run.fleetplan's; the merge of what came back, and the paper's section on
it, are pagelab.paper.fleetmerge's.

An experiment whose run the fleet splits between its hosts (Experiment.split: payoff's grid
cells, readyboost's arms) is split by the function its descriptor names, and its trials are told
apart by their cells (Experiment.cell_of), which the caller hands in (`split`, `cell_of`, or a
`descriptor_of` that gives an experiment's descriptor): this layer stands below the experiments.

The commands (defined in pagelab.cli, calling this module):
  pagelab fleet trial HOST EXPERIMENT --config JSON --output DIR   one job, on HOST
  pagelab fleet show [--configfile F]                              the jobs, as JSON
  pagelab fleet lock HOST -- COMMAND...                            COMMAND under the host's lock
  pagelab fleet cells EXPERIMENT --plan JSON                       a split run's hosts in one directory

Not for: reaching hosts (the executor plugin and the profile's submit script do that).
"""

from __future__ import annotations

import copy
import fcntl
import json
import os
import re
import socket
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from pagelab.core.records import write_json_atomic, write_text_atomic
from pagelab.system import config as _config

# The Snakefile imports this module while it is parsed (workflow/rules/fleet.smk): pandas (0.2 to
# 0.3 s at import, python -X importtime), which only merge_split needs, is imported there.

ENV_HOST = "PAGELAB_FLEET_HOST"  # set by the submit path: the fleet host a job runs as
ENV_SLURM_NODE = "SLURMD_NODENAME"  # set by Slurm in a job: the node it runs on
RAN_ON = "ran_on.json"
# The hosts' lock files (one measurement job per host at a time over ssh): root's, so never in a
# directory another user can write; PAGELAB_FLEET_LOCKDIR names another (the tests' fake hosts).
LOCK_DIR = Path("/run/pagelab/fleet")
ENV_LOCK_DIR = "PAGELAB_FLEET_LOCKDIR"
HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# An experiment's Experiment.split: the settings over its resolved block that give each host
# its share of one run, from the block and the hosts that run it.
Split = Callable[[dict[str, Any], list[str]], dict[str, dict[str, Any]]]
# An experiment's Experiment.cell_of: the cell of a trial's params (a split run's unit).
CellOf = Callable[[dict[str, Any]], str]


# --------------------------------------------------------------------------- the fleet's jobs
def raw_config(path: Path | str | None = None) -> dict[str, Any]:
    """config/config.yaml validated (defaults filled) but not resolved: what the Snakefile's
    `config` is, and what block() starts from."""
    with open(path or _config.default_config()) as fh:
        cfg = yaml.safe_load(fh) or {}
    return _config.validate(cfg)


def fleet_block(cfg: dict[str, Any]) -> dict[str, Any]:
    block = dict(cfg.get("fleet") or {})
    block.setdefault("hosts", [])
    block.setdefault("experiments", ["seekmodel"])
    block.setdefault("profile", "quick")
    block.setdefault("baseline", "")
    block.setdefault("set", {})
    return block


def hosts(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """The hosts, each {name, labels, experiments}; raises ConfigError on a bad name or experiment."""
    block = fleet_block(cfg)
    known = _config.experiments()
    out, seen = [], set()
    for h in block["hosts"]:
        name = h["name"]
        if name in seen:
            raise _config.ConfigError(f"fleet.hosts: {name!r} is named twice")
        seen.add(name)
        exps = list(h.get("experiments") or block["experiments"])
        for e in exps:
            if e not in known:
                raise _config.ConfigError(f"fleet: no experiment named {e!r} (have: {', '.join(known)})")
        out.append({"name": name, "labels": dict(h.get("labels") or {}), "experiments": exps})
    return out


def jobs(cfg: dict[str, Any]) -> list[tuple[str, str]]:
    """Every (host, experiment) trial job of the fleet, in config order."""
    return [(h["name"], e) for h in hosts(cfg) for e in h["experiments"]]


def baseline(cfg: dict[str, Any]) -> str:
    hs = [h["name"] for h in hosts(cfg)]
    chosen = fleet_block(cfg)["baseline"] or (hs[0] if hs else "")
    if hs and chosen not in hs:
        raise _config.ConfigError(f"fleet.baseline: {chosen!r} is not one of the hosts ({', '.join(hs)})")
    return chosen


def block(cfg: dict[str, Any], host: str, experiment: str, *, split: Split | None,
          with_share: bool = True) -> dict[str, Any]:
    """The resolved config block of one fleet job: the experiment's block in the fleet's profile,
    fleet.set[experiment] over it (validated and resolved like the experiment's own block), and
    scratch_dir <scratch_dir>/fleet/<host>; with `with_share`, the host's share of a split run
    (`share`, by the experiment's `split`: its descriptor's, None when every host runs all of
    it)."""
    fb = fleet_block(cfg)
    if (host, experiment) not in jobs(cfg):
        raise _config.ConfigError(f"fleet: host {host!r} does not run {experiment!r}")
    schema = _config.load_schema()
    profile = fb["profile"]
    raw = copy.deepcopy({k: v for k, v in cfg.items() if k not in ("fleet", "recording")})
    raw["profile"] = profile
    exp = dict(raw.get(experiment) or {})
    own = _config.own_profile(schema, experiment, profile, exp)
    pkeys = _config.profile_keys(schema, experiment, own)
    for key, value in (fb["set"].get(experiment) or {}).items():
        if key in pkeys:
            exp[own] = {**(exp.get(own) or {}), key: value}
        else:
            exp[key] = value
    raw[experiment] = exp
    try:
        _config.validate(raw)
    except _config.ConfigError as exc:
        raise _config.ConfigError(f"fleet.set.{experiment}: {exc}") from exc
    resolved = _config.resolve(raw, schema)[experiment]
    if with_share:
        resolved.update(share(cfg, experiment, resolved, split)[host])
    return {**resolved, "scratch_dir": f"{cfg.get('scratch_dir', 'scratch')}/fleet/{host}"}


def share(cfg: dict[str, Any], experiment: str, resolved: dict[str, Any],
          split: Split | None) -> dict[str, dict[str, Any]]:
    """Per host that runs `experiment`, the settings that make its job that host's share of one
    run (its Experiment.split, from the resolved block); {} each when the run is not split."""
    hosts_ = [h for h, e in jobs(cfg) if e == experiment]
    return split(resolved, hosts_) if split is not None else {h: {} for h in hosts_}


def merge_split(plan_: dict[str, Any], experiment: str, results: Path | str = "results/fleet",
                out: Path | str | None = None, cell_of: CellOf | None = None) -> Path:
    """One results directory for an experiment whose run the fleet split between its hosts
    (Experiment.split): every host's trials.csv that came back, concatenated with a `host`
    column (each host's `order` its own: an analysis that pairs trials by their rank within a
    cell reads them as one host's run), and the config of the whole run: the plan's block of it
    (`plan`'s "split") where the plan has one, else the hosts' configs without the settings they
    differ in (each host's share and scratch_dir). With `cell_of` (Experiment.cell_of), a cell
    whose trials came from two hosts is refused (ValueError). Written to
    <results>/merged/<experiment>/ (or `out`), each file atomically; returns the directory."""
    import pandas as pd

    results = Path(results)
    dest = Path(out) if out else results / "merged" / experiment
    frames, cfgs, came_from = [], [], {}
    for h in plan_["hosts"]:
        d = results / h["name"] / experiment
        if experiment not in h["experiments"] or not (d / "trials.csv").exists():
            continue
        frame = pd.read_csv(d / "trials.csv", keep_default_na=False, na_values=[""])
        try:
            cells = {str(cell_of(r)) for r in frame.to_dict("records")} if cell_of else set()
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{d / 'trials.csv'}: a trial names no cell ({exc!r})") from exc
        for cell in sorted(cells):
            if cell in came_from:
                raise ValueError(f"fleet: {experiment}: cell {cell!r} came from two hosts "
                                 f"({came_from[cell]}, {h['name']}): not one run split between them")
            came_from[cell] = h["name"]
        frames.append(frame.assign(host=h["name"]))
        if (d / "config.json").exists():
            cfgs.append(json.loads((d / "config.json").read_text()))
    if not frames:
        raise ValueError(f"fleet: no host returned {experiment}")
    dest.mkdir(parents=True, exist_ok=True)
    write_text_atomic(dest / "trials.csv", pd.concat(frames, ignore_index=True).to_csv(index=False))
    cfg = (plan_.get("split") or {}).get(experiment) or \
        {k: v for k, v in (cfgs[0] if cfgs else {}).items() if all(c.get(k) == v for c in cfgs)}
    write_json_atomic(dest / "config.json", cfg)
    write_json_atomic(dest / "provenance.json", {"merged_from": [h["name"] for h in plan_["hosts"]
                                                                 if experiment in h["experiments"]]})
    return dest


def plan(cfg: dict[str, Any], split_of: Callable[[str], Split | None] | None = None) -> dict[str, Any]:
    """What the merge needs to know: hosts with labels and experiments, profile, baseline; with
    `split_of` (an experiment's Experiment.split, pagelab.experiments.split), "split": the block
    of the whole run of each experiment the fleet splits (without a host's share or scratch_dir),
    the config its merged results directory gets (merge_split)."""
    out = {"hosts": hosts(cfg), "profile": fleet_block(cfg)["profile"], "baseline": baseline(cfg)}
    if split_of is not None:
        out["split"] = {}
        for e in dict.fromkeys(e for _, e in jobs(cfg)):
            sp = split_of(e)
            if is_split(cfg, e, sp):
                first = next(h for h, x in jobs(cfg) if x == e)
                out["split"][e] = {k: v for k, v in block(cfg, first, e, split=sp, with_share=False).items()
                                   if k != "scratch_dir"}
    return out


def job_shares(cfg: dict[str, Any],
               descriptor_of: Callable[[str], Any]) -> dict[tuple[str, str], tuple[CellOf, list[str]]]:
    """Per job of a run the fleet splits, the experiment's cell_of and the cells of the host's
    share: its block's configurations (`descriptor_of(e)`: an Experiment), each named by cell_of;
    what the plan times such a job by (pagelab.run.fleetplan.job_cells)."""
    out: dict[tuple[str, str], tuple[CellOf, list[str]]] = {}
    for e in dict.fromkeys(e for _, e in jobs(cfg)):
        d = descriptor_of(e)
        if d.cell_of is None or not is_split(cfg, e, d.split):
            continue
        for h, x in jobs(cfg):
            if x == e:
                confs = d.configurations(block(cfg, h, e, split=d.split))
                out[(h, e)] = (d.cell_of, list(dict.fromkeys(d.cell_of(c) for c in confs)))
    return out


def present(cfg: dict[str, Any], results: str | Path = "results/fleet", name: str = "measurements.json",
            experiment: str | None = None) -> list[str]:
    """For every job (of `experiment`, default all) whose trials came back (trials.csv exists),
    its `name` file: the merge's inputs, so that a host that failed never holds the merge up."""
    results = Path(results)
    return [str(results / h / e / name) for h, e in jobs(cfg)
            if (results / h / e / "trials.csv").exists() and experiment in (None, e)]


def is_split(cfg: dict[str, Any], experiment: str, split: Split | None) -> bool:
    """Whether the fleet splits `experiment`'s run between its hosts (some host's block names
    a share of it, by the experiment's `split`: payoff's grid, readyboost's arms)."""
    if split is None:
        return False
    first = next((h for h, e in jobs(cfg) if e == experiment), None)
    if first is None:
        return False
    whole = {k: v for k, v in block(cfg, first, experiment, split=split, with_share=False).items()
             if k != "scratch_dir"}
    return any(share(cfg, experiment, whole, split).values())


def read_plan(path: Path | str) -> dict[str, Any]:
    """results/fleet/fleet.json (what `plan` wrote), checked: hosts (each a name, labels and known
    experiments), profile, baseline (one of the hosts, or none). ConfigError naming the file and
    the first problem."""
    plan_ = _config.read_document(path)
    known = _config.experiments()

    def bad(what: str) -> _config.ConfigError:
        return _config.ConfigError(f"{path}: not a fleet plan: {what}")

    if not isinstance(plan_, dict):
        raise bad(f"a JSON object is expected, not {type(plan_).__name__}")
    for key, kind in (("hosts", list), ("profile", str), ("baseline", str)):
        if not isinstance(plan_.get(key), kind):
            raise bad(f"'{key}' must be a {'list' if kind is list else 'string'}")
    names = []
    for i, h in enumerate(plan_["hosts"]):
        if not isinstance(h, dict) or not isinstance(h.get("name"), str) or not HOST_NAME.fullmatch(h["name"]):
            raise bad(f"hosts[{i}] needs a 'name' (letters, digits, '.', '_', '-')")
        if not isinstance(h.get("labels"), dict) or not isinstance(h.get("experiments"), list):
            raise bad(f"hosts[{i}] ({h['name']}) needs 'labels' (an object) and 'experiments' (a list)")
        for e in h["experiments"]:
            if e not in known:
                raise bad(f"hosts[{i}] ({h['name']}): no experiment named {e!r}")
        names.append(h["name"])
    if plan_["baseline"] and plan_["baseline"] not in names:
        raise bad(f"baseline {plan_['baseline']!r} is not one of the hosts")
    split = plan_.get("split", {})
    if not isinstance(split, dict) or not all(e in known and isinstance(b, dict) for e, b in split.items()):
        raise bad("'split' must map experiments to their config blocks")
    return plan_


# --------------------------------------------------------------------------- one job on a host
def check_job(experiment: str, config_path: Path | str) -> dict[str, Any]:
    """A fleet job's config block, checked as `pagelab trial` checks it (the schema, then this
    machine) before the job writes anything; ConfigError otherwise."""
    return _config.check_block(experiment, _config.read_document(config_path), source=config_path)


def lock_dir() -> Path:
    """The directory of the hosts' lock files: LOCK_DIR (or $PAGELAB_FLEET_LOCKDIR), made mode
    0700 when missing. Refused (ConfigError) when it is a symbolic link, not a directory, not
    this user's, open to others, or its parent is writable by others (not sticky)."""
    d = Path(os.path.abspath(os.environ.get(ENV_LOCK_DIR) or LOCK_DIR))
    parent = d.parent
    if not os.path.lexists(parent):
        parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    pst = os.lstat(parent)
    if stat.S_ISLNK(pst.st_mode) or not stat.S_ISDIR(pst.st_mode) or pst.st_uid not in (0, os.geteuid()) or \
            (pst.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not pst.st_mode & stat.S_ISVTX):
        raise _config.ConfigError(f"{parent}: the fleet's lock directory's parent must be a directory of "
                                  "root or this user that no one else can write")
    try:
        os.mkdir(d, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(d)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise _config.ConfigError(f"{d}: the fleet's lock directory is a symbolic link or not a directory")
    if st.st_uid != os.geteuid():
        raise _config.ConfigError(f"{d}: the fleet's lock directory belongs to uid {st.st_uid}, not to this user")
    if st.st_mode & 0o077:
        raise _config.ConfigError(f"{d}: the fleet's lock directory is open to others "
                                  f"(mode {stat.S_IMODE(st.st_mode):04o}; 0700 is needed)")
    return d


def host_lock(host: str) -> int:
    """The host's lock held (waiting for it): an fd on <lock_dir>/<host>.lock, opened without
    following a symbolic link and checked to be this user's regular file. The lock lasts as long
    as the fd is open, in this process or any it execs or forks."""
    if not HOST_NAME.fullmatch(host):
        raise _config.ConfigError(f"fleet host {host!r}: a name of letters, digits, '.', '_', '-' is needed")
    path = lock_dir() / f"{host}.lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise _config.ConfigError(f"{path}: cannot open the host's lock ({exc.strerror})") from exc
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
        os.close(fd)
        raise _config.ConfigError(f"{path}: the host's lock is not a regular file of this user")
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def run_locked(host: str, argv: list[str]) -> int:
    """Exec `argv` holding the host's lock (the fd is inherited, so the lock lasts until the
    command and whatever keeps the fd have ended). Returns only on bad input (2)."""
    if not argv:
        raise _config.ConfigError("pagelab fleet lock: no command given (pagelab fleet lock HOST -- COMMAND...)")
    fd = host_lock(host)
    os.set_inheritable(fd, True)
    os.execvp(argv[0], argv)


def as_host(host: str, outdir: Path) -> int:
    """Before `pagelab trial` runs one fleet job: check that it runs as the host it is meant for
    (PAGELAB_FLEET_HOST, which the ssh submit path sets, or else the node Slurm ran the job on)
    and write ran_on.json (fleet host, the host it ran as, hostname, pid). 0, or 2 refusing."""
    actual = os.environ.get(ENV_HOST) or os.environ.get(ENV_SLURM_NODE)
    if actual is not None and actual != host:
        print(f"pagelab fleet: job for host {host!r} runs as {actual!r}: refusing", file=sys.stderr)
        return 2
    outdir.mkdir(parents=True, exist_ok=True)
    write_json_atomic(outdir / RAN_ON, {"host": host, "as": actual, "hostname": socket.gethostname(),
                                        "pid": os.getpid()})
    return 0
