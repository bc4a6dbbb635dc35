"""The `pagelab` command: what a researcher runs beside `make`, and the steps the pipeline runs.

  pagelab --version                                          the package's version
  pagelab config show [--configfile F] [--set KEY=VALUE ...] the effective configuration, as JSON
  pagelab trial EXPERIMENT --config JSON --output DIR         run or resume an experiment's trials
  pagelab state show|restore|recover|clear-orphans            the paging state; undo what a run changed
  pagelab compare A B [--format text|json|tex] [--noise X] [--output FILE]
                                                             two runs side by side
  pagelab record RESULTS MACHINE [--experiment NAME ...]     keep a finished run in data/recorded/
  pagelab time RESULTS                                       where a run's wall time went, by experiment and phase
  pagelab provenance [--path P]                              machine, git and disk facts
  pagelab reliability [--runs CSV]                           the fresh-clone CI runs (data/reliability/runs.csv)
  pagelab fleet show [--configfile F]                        the fleet's jobs and their configs, as JSON
  pagelab fleet trial HOST EXPERIMENT --config JSON --output DIR   one fleet job, as HOST
  pagelab fleet merge --plan JSON --csv CSV --tex TEX [--results DIR] [--logs DIR]
                                                             one row per host from what came back
  pagelab fleet cells EXPERIMENT --plan JSON [--results DIR] [--output DIR]
                                                             a split run's hosts' shares merged (payoff, readyboost)
  pagelab fleet lock HOST -- COMMAND...                      COMMAND holding the host's lock (a fleet job)
  pagelab fleet plan [--hosts N] [--profile P] [--recording DIR]
                                                             the jobs in LPT order and the predicted wall time
  pagelab pipeline write-json --output FILE JSON             a rule's params, written atomically
  pagelab pipeline tidy EXPERIMENT --config JSON --results DIR --output PARQUET
                                                             the checked Parquet table of the trials
  pagelab pipeline notebook EXPERIMENT [--output IPYNB]      the template with its narrative, for papermill
  pagelab pipeline execute IN OUT [-p NAME VALUE ...] [-k KERNEL] [--cwd DIR]
                                                             run a notebook with papermill (IN '-': stdin)
  pagelab pipeline published --claims CSV --table TEX --macros TEX   the published claims
  pagelab pipeline verdicts --results DIR --claims CSV --profile P --tex TEX --csv CSV --macros TEX
                                                             each claim's verdict
  pagelab pipeline compare-section --results DIR --output TEX [--reference DIR]
                                                             this run against the reference machine's
  pagelab pipeline appendix --results DIR --output DIR --profile P EXPERIMENT...
                                                             the reproducibility appendix
  pagelab claims recorded [--recording MACHINE/PROFILE]    rebuild the recordings' stored measurements
  pagelab claims stale                                     recordings whose stored measurements are stale
  pagelab claims history [ID ...]                          each claim's verdict on every recording
  pagelab claims changelog                                 judging changes without a changelog row
  pagelab claims figure --results DIR --profile P --output PDF --html HTML --claims CSV
                                                             the verdict figure and its page
  pagelab pipeline index --results DIR --output HTML          results/index.html
  pagelab pipeline paper --output PDF [EXPERIMENT...]        the LaTeX paper (latexmk)

Every command has --help. Exit status: 0 success, 1 failure while running, 2 bad input (a bad
command line, a setting the schema refuses, a missing, malformed, truncated or foreign file),
with one line on stderr naming the key or the file; bad input changes nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import yaml

from pagelab import __version__
from pagelab.core.records import write_json_atomic, write_text_atomic
from pagelab.data import recording
from pagelab.data.recording import RecordingError, record
from pagelab.paper.report import write_index
from pagelab.run import fleet
from pagelab.system import config as _config
from pagelab.system import state
from pagelab.system.provenance import provenance

# The commands that need pandas, scipy or matplotlib (compare, claims, tidy, experiment,
# published, appendix, paper) import them when they run: at the top they would cost every
# command, `pagelab state show` included, 1.9 s more than its 0.14 s (python -X importtime).


# --------------------------------------------------------------------------- user commands
def _overrides(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise _config.ConfigError(f"--set {pair!r}: expected KEY=VALUE")
        key, value = pair.split("=", 1)
        try:
            out[key] = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            raise _config.ConfigError(f"--set {pair!r}: the value is not YAML ({exc})") from exc
    return out


def _inputs(args: argparse.Namespace, dirs: tuple[str, ...] = (), claims: bool = False) -> None:
    """A command's inputs, checked before it runs (bad input: exit 2, nothing written): each
    option of `dirs` an existing directory, --profile a profile, --recording recordings that
    exist, and with `claims` the --claims file a claims table that loads and checks."""
    for opt in dirs:
        value = getattr(args, opt, None)
        if value and not Path(value).is_dir():
            raise _config.ConfigError(f"--{opt} {value}: no such directory")
    profile = getattr(args, "profile", None)
    if profile is not None and profile not in _config.PROFILES:
        raise _config.ConfigError(f"--profile {profile!r} is not one of {', '.join(_config.PROFILES)}")
    names = getattr(args, "recording", None) or []
    for name in [names] if isinstance(names, str) else names:
        recording.resolve(name)
    if claims:
        from pagelab.claims.registry import claims_path
        from pagelab.experiments.harness import load_claims

        path = args.claims or claims_path()
        try:
            load_claims(path)
        except (OSError, UnicodeDecodeError) as exc:
            raise _config.ConfigError(f"{path}: {getattr(exc, 'strerror', None) or exc}") from exc
        except ValueError as exc:
            raise _config.ConfigError(str(exc) if str(exc).startswith(str(path)) else f"{path}: {exc}") from exc


def cmd_config_show(args: argparse.Namespace) -> int:
    print(json.dumps(_config.load(args.configfile, _overrides(args.set)), indent=2))
    return 0


def cmd_trial(args: argparse.Namespace) -> int:
    """The config block is checked whole (the schema, then this machine) before anything runs."""
    name = _config.check_experiment(args.experiment)
    raw = _config.read_document(args.config)
    if isinstance(raw, dict) and raw.get("recording"):  # make PROFILE=recorded: the recorded run, not a new one
        block = _config.check_block(name, raw, source=args.config, machine=False)
        recorded = recording.resolve(block["recording"])
        recording.check_run(recorded, [name], recording.REQUIRED)
        recording.replay(recorded, name, Path(args.output))
        print(f"pagelab: {name}: replayed from {recorded}")
        return 0
    block, scratch = _config.trial_block(name, raw, source=args.config)
    from pagelab.experiments import replay
    from pagelab.experiments.harness import descriptor

    # the progress lines' time left counts the recorded trials today's stopping rule would run,
    # as `pagelab fleet plan` does
    descriptor(name).run(block, Path(args.output), scratch, keep=replay.kept)
    return 0


def cmd_state(args: argparse.Namespace) -> int:
    if args.action == "restore":
        with state.exclusive(wait=False):
            undone = state.restore()
        print(f"restored {len(undone)} change(s)" + (": " + ", ".join(undone) if undone else ""))
        return 0
    if args.action in ("recover", "clear-orphans"):
        # What `make` runs first: a run that was killed (kill -9, power loss) left its journal;
        # when no other run holds the state lock, undo it before anything else happens. Then
        # look for state that no journal explains: make refuses to run on top of it. A fleet
        # job (cmd_fleet_trial) runs the same, waiting for the lock (`wait`) instead.
        with state.exclusive(wait=getattr(args, "wait", False)):
            pending = state.Journal().entries()
            if pending:
                undone = state.restore()
                print(f"pagelab: restored {len(undone)} change(s) an interrupted run left: " + ", ".join(undone))
            if args.action == "clear-orphans":
                cleared = state.clear_orphans()
                print(f"pagelab: cleared {len(cleared)} thing(s) no journal explained" +
                      "".join(f"\n  {c}" for c in cleared))
                return 0
            left = state.orphans()
        if left:
            print("pagelab: state that no journal explains (left by a run this journal does not know):" +
                  "".join(f"\n  {o.what}" for o in left) +
                  "\nnot starting a run on top of it; clear it with `pagelab state clear-orphans`", file=sys.stderr)
            return 1
        return 0
    print(json.dumps(state.show(), indent=2))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Two runs (results directories or recordings), each checked whole first, side by side."""
    from pagelab.analysis import compare

    if not 0 <= args.noise < 1:
        raise _config.ConfigError(f"--noise {args.noise}: the noise band is at least 0 and less than 1")
    a, b = recording.check_run(args.a), recording.check_run(args.b)
    if not set(a) & set(b):
        raise recording.RecordingError(f"{args.a} ({', '.join(a)}) and {args.b} ({', '.join(b)}) "
                                       "have no experiment in common")
    rows = compare.compare(args.a, args.b, noise=args.noise)
    text = compare.render(rows, args.format, str(args.a), str(args.b), args.noise)
    if args.output:
        write_text_atomic(args.output, text)
        # the figure beside the table: same name, .pdf and .png
        compare.write_figure(rows, Path(args.output).with_suffix(".pdf"), f"A ({args.a.name})", f"B ({args.b.name})",
                             args.noise)
    else:
        sys.stdout.write(text)
    return 0


def cmd_record(args: argparse.Namespace) -> int:
    for name in args.experiment:
        _config.check_experiment(name)
    dest = record(args.results, args.machine, args.experiment or _config.experiments(),
                  keep_others=bool(args.experiment))
    print(f"pagelab: recorded {args.results} as {dest}")
    return 0


def cmd_time(args: argparse.Namespace) -> int:
    from pagelab.run import timing  # pandas: only when it runs

    sys.stdout.write(timing.table(timing.run_time(args.results)))
    return 0


def cmd_provenance(args: argparse.Namespace) -> int:
    if not Path(args.path).exists():
        raise _config.ConfigError(f"--path {args.path}: no such file or directory")
    print(json.dumps(provenance("n/a", disk_path=args.path), indent=2))
    return 0


def cmd_reliability(args: argparse.Namespace) -> int:
    from pagelab.analysis import reliability

    sys.stdout.write(reliability.render(reliability.load(args.runs)))
    return 0


def cmd_fleet_show(args: argparse.Namespace) -> int:
    _config.read_document(args.configfile or _config.default_config(), "YAML")  # missing or not YAML: exit 2
    from pagelab import experiments

    cfg = fleet.raw_config(args.configfile)
    print(json.dumps({"plan": fleet.plan(cfg, experiments.split), "jobs": fleet.jobs(cfg),
                      "blocks": {f"{h}/{e}": fleet.block(cfg, h, e, split=experiments.split(e))
                                 for h, e in fleet.jobs(cfg)}}, indent=1))
    return 0


def cmd_fleet_trial(args: argparse.Namespace) -> int:
    """The config checked before anything is written; then, as root, what `make` runs first
    (`pagelab state recover`: undo what a killed run left, refuse state no journal explains),
    waiting for a run that holds the state lock on this host; then the trials."""
    fleet.check_job(args.experiment, args.config)
    return fleet.as_host(args.host, args.output) or \
        (os.geteuid() == 0 and cmd_state(argparse.Namespace(action="recover", wait=True))) or main(
            ["trial", args.experiment, "--config", str(args.config), "--output", str(args.output)])


def cmd_fleet_lock(args: argparse.Namespace) -> int:
    return fleet.run_locked(args.host, args.job[1:] if args.job[:1] == ["--"] else args.job)


def cmd_fleet_merge(args: argparse.Namespace) -> int:
    from pagelab.paper import fleetmerge

    frame = fleetmerge.write_merge(args.plan, args.results, args.csv, args.tex, args.logs)
    lacking = fleetmerge.missing_hosts(frame)
    print(frame.to_string(index=False))
    if lacking:
        print("pagelab fleet: hosts without complete results: " + ", ".join(lacking))
    return 0


def cmd_fleet_cells(args: argparse.Namespace) -> int:
    plan_ = fleet.read_plan(args.plan)
    _config.check_experiment(args.experiment)
    from pagelab.experiments.harness import descriptor

    try:
        dest = fleet.merge_split(plan_, args.experiment, args.results, args.output,
                                 cell_of=descriptor(args.experiment).cell_of)
    except ValueError as exc:
        print(f"pagelab fleet: {exc}", file=sys.stderr)
        return 1
    print(f"pagelab fleet: {args.experiment}: every host's share merged into {dest}")
    return 0


def cmd_fleet_plan(args: argparse.Namespace) -> int:
    """The fleet's jobs (the configured fleet's, or the profile's matrix on N identical hosts) in
    LPT order from recorded durations, and the predicted wall time (pagelab.run.fleetplan)."""
    from pagelab.experiments import replay
    from pagelab.experiments.harness import descriptor
    from pagelab.run import fleetplan

    if args.hosts is not None:
        fleetplan.graham_bound(args.hosts)   # N < 1: refused before anything is read
        profile = args.profile or "quick"
        source = fleetplan.source(args.recording, profile, args.machine)
        experiments = [e for e in _config.experiments() if (Path(source) / e / "trials.csv").is_file()]
        # a run the fleet splits (Experiment.split) is planned cell by cell (Experiment.cell_of)
        split = {e: d.cell_of for e in experiments if (d := descriptor(e)).split and d.cell_of}
        cells = fleetplan.profile_cells(source, experiments, split, replay.kept)
        notes = fleetplan.recorded_differences(source, experiments)
        hosts = [f"host{i + 1}" for i in range(args.hosts)]
        what = f"the {profile} profile on {args.hosts} identical host(s)"
        fewest = fleetplan.profile_cells(source, experiments, split, replay.fewest)
    else:
        cfg = fleet.raw_config(args.configfile)
        hosts = [h["name"] for h in fleet.hosts(cfg)]
        if not hosts:
            raise fleetplan.PlanError("the config names no fleet hosts (fleet.hosts): give --hosts N")
        profile = args.profile or fleet.fleet_block(cfg)["profile"]
        source = fleetplan.source(args.recording, profile, args.machine)
        cells, split = fleetplan.job_cells(fleet.jobs(cfg), source, fleet.job_shares(cfg, descriptor),
                                           replay.kept), {}
        fewest = fleetplan.job_cells(fleet.jobs(cfg), source, fleet.job_shares(cfg, descriptor), replay.fewest)
        notes = fleetplan.recorded_differences(source, sorted({e for _, e in fleet.jobs(cfg)}))
        what = f"the fleet's {len(cells)} job(s) ({profile} profile) on its {len(hosts)} host(s)"
    plan = fleetplan.lpt(cells, hosts)
    sys.stdout.write(fleetplan.table(plan, f"Fleet plan: {what}, durations from {source}", args.within, list(split),
                                     notes, least=fleetplan.lpt(fewest, hosts)))
    return 0


# --------------------------------------------------------------------------- pipeline steps
def cmd_notebook(args: argparse.Namespace) -> int:
    """An experiment's notebook, the template with its narrative put in, on stdout (papermill
    reads it from there) or, with --output, written atomically; a narrative that breaks the
    template's contract is bad input (exit 2)."""
    from pagelab.core import notebooks

    name = _config.check_experiment(args.experiment)
    try:
        text = notebooks.dumps(notebooks.notebook(name))
    except (OSError, ValueError) as exc:
        raise _config.ConfigError(str(exc)) from exc
    if args.output:
        write_text_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def cmd_execute(args: argparse.Namespace) -> int:
    """A notebook (a file, or '-' for stdin) run by papermill into OUT, its kernel started again
    when it did not come up (pagelab.core.notebooks.execute); an input that is not there is bad
    input (exit 2)."""
    from pagelab.core import notebooks

    if args.input == "-":
        text = sys.stdin.read()
    else:
        try:
            text = Path(args.input).read_text()
        except OSError as exc:
            raise _config.ConfigError(f"cannot read the notebook {args.input}: {exc.strerror}") from exc
    if not text.strip():
        raise _config.ConfigError(f"the notebook {args.input} is empty")
    notebooks.execute(text, args.output, [tuple(p) for p in args.parameters], kernel=args.kernel, cwd=args.cwd)
    return 0


def cmd_write_json(args: argparse.Namespace) -> int:
    """A JSON document given on the command line (a rule's params), written atomically."""
    try:
        doc = json.loads(args.json)
    except json.JSONDecodeError as exc:
        raise _config.ConfigError(f"the document for {args.output} is not JSON: {exc}") from exc
    write_json_atomic(args.output, doc)
    return 0


def cmd_tidy(args: argparse.Namespace) -> int:
    """One Parquet row per trial; then the checks (failed trials, missing configurations,
    empty columns or counters), which fail the command."""
    from pagelab.data import tidy
    from pagelab.experiments.harness import descriptor

    name = _config.check_experiment(args.experiment)
    block = _config.check_block(name, _config.read_document(args.config), source=args.config, machine=False)
    _inputs(args, dirs=("results",))
    results = Path(args.results)
    frame = tidy.tidy(results) if (results / "trials").is_dir() else tidy.pd.DataFrame()
    tmp = Path(args.output).with_name(f".{Path(args.output).name}.tmp")
    frame.to_parquet(tmp, index=False)
    tmp.replace(args.output)
    if (results / "skipped.txt").exists() and frame.empty:
        problems: list[str] = []
    else:
        desc = descriptor(name)
        problems = tidy.check(frame, desc.configurations(block), list(desc.required_columns),
                              int(block["repetitions"]["n_min"]))
    if problems:
        print(f"pagelab: {name}: " + "; ".join(problems), file=sys.stderr)
        return 1
    write_text_atomic(Path(args.output).with_name("check.txt"), "ok\n")
    return 0


def cmd_published(args: argparse.Namespace) -> int:
    from pagelab.claims.registry import write_claims_table, write_macros

    _inputs(args, claims=True)
    write_claims_table(args.table, args.claims)
    write_macros(args.macros, args.claims)
    return 0


def cmd_verdicts(args: argparse.Namespace) -> int:
    from pagelab.claims.judge import write_verdicts
    from pagelab.experiments.harness import load_claims

    _inputs(args, dirs=("results",), claims=True)
    write_verdicts(args.results, args.tex, args.csv, load_claims(args.claims), args.profile, args.macros)
    return 0


def cmd_compare_section(args: argparse.Namespace) -> int:
    from pagelab.analysis.compare import write_reference_section

    _inputs(args, dirs=("results", "reference"))
    write_reference_section(args.reference, args.results, args.output)
    return 0


def cmd_appendix(args: argparse.Namespace) -> int:
    from pagelab.paper import appendix

    for name in args.experiments:
        _config.check_experiment(name)
    _inputs(args, dirs=("results",))
    appendix.write(args.results, args.output, args.experiments, args.profile)
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    _inputs(args, dirs=("results",))
    write_index(args.results, args.output, _config.experiments())
    return 0


def cmd_claims(args: argparse.Namespace) -> int:
    from pagelab.claims import judge
    from pagelab.experiments.harness import load_claims

    judging = args.action in ("history", "figure")
    _inputs(args, dirs=("results",), claims=judging)
    return judge.run(args, load_claims(args.claims) if judging else None)


def cmd_paper(args: argparse.Namespace) -> int:
    from pagelab.paper.paper import build

    for name in args.experiments:
        _config.check_experiment(name)
    build(Path(args.output), experiments=args.experiments or None)
    return 0


# --------------------------------------------------------------------------- the parser
def _add_claims(sub: Any) -> argparse.ArgumentParser:
    """`pagelab claims ACTION`: recorded | stale | history | changelog | figure, on `sub` (the
    command's subparsers)."""
    p = sub.add_parser("claims", help="the claims' pre-registration: recorded verdicts, changelog, figure",
                       description="The claims' pre-registration and verdicts.")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    r = actions.add_parser("recorded", help="rebuild data/published/recorded_measurements.json from data/recorded/")
    _repeatable(r, "--recording", "MACHINE/PROFILE", "only this recording (repeatable; default: every one)")
    actions.add_parser("stale", help="recordings whose stored measurements no longer match them (exit 1 if any)")
    h = actions.add_parser("history",
                           help="each claim's verdict on every stored recording ('quick: X; full: Y; seed: Z')")
    h.add_argument("--claims", default=None, help="a claims file (default: data/published/claims.csv)")
    h.add_argument("ids", nargs="*", help="only these claims")
    actions.add_parser("changelog", help="judging changes since a recording's commit without a changelog row (exit 1)")
    f = actions.add_parser("figure", help="the verdict figure and its HTML page")
    for opt in ("results", "profile", "output", "html", "claims"):
        f.add_argument(f"--{opt}", required=True)
    f.add_argument("--recording", default="", help="the recording this run was rebuilt from (empty: a live run)")
    return p


Adder = Callable[[argparse.ArgumentParser], None]


def _files(*options: str) -> Adder:
    """Required --options given as "name=METAVAR", each naming a file, a directory or a value."""
    def add(sp: argparse.ArgumentParser) -> None:
        for option in options:
            name, metavar = option.split("=")
            sp.add_argument(f"--{name}", required=True, metavar=metavar)
    return add


def _add_tidy(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("experiment")
    _files("config=JSON", "results=DIR", "output=PARQUET")(sp)


def _add_notebook(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("experiment")
    sp.add_argument("--output", default=None, metavar="IPYNB", help="write it here (default: stdout)")


def _add_execute(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("input", metavar="IN", help="the notebook ('-': read it from stdin)")
    sp.add_argument("output", metavar="OUT", help="the executed notebook")
    sp.add_argument("-p", "--parameters", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                    help="a parameter, typed as papermill's -p types it (any number)")
    sp.add_argument("-k", "--kernel", default="python3", help="the kernel's name (default: python3)")
    sp.add_argument("--cwd", default=".", metavar="DIR", help="the kernel's working directory (default: .)")


def _add_write_json(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--output", required=True, metavar="FILE")
    sp.add_argument("json", help="the document")


def _add_compare_section(sp: argparse.ArgumentParser) -> None:
    _files("results=DIR", "output=TEX")(sp)
    sp.add_argument("--reference", default="", metavar="DIR", help="the reference recording (empty: none)")


def _add_appendix(sp: argparse.ArgumentParser) -> None:
    _files("results=DIR", "output=DIR", "profile=PROFILE")(sp)
    sp.add_argument("experiments", nargs="+", metavar="EXPERIMENT")


def _add_paper(sp: argparse.ArgumentParser) -> None:
    _files("output=PDF")(sp)
    sp.add_argument("experiments", nargs="*", metavar="EXPERIMENT",
                    help="the experiments whose sections it holds (default: every one)")


# The pipeline's own steps (what the Snakemake rules run), in the order a run reaches them.
PIPELINE_STEPS: list[tuple[str, Callable[[argparse.Namespace], int], str, Adder]] = [
    ("write-json", cmd_write_json, "write a JSON document (a rule's params) to a file, atomically",
     _add_write_json),
    ("tidy", cmd_tidy, "an experiment's trials as one checked Parquet table (and check.txt)", _add_tidy),
    ("notebook", cmd_notebook, "an experiment's notebook: the template with its narrative, for papermill",
     _add_notebook),
    ("execute", cmd_execute, "run a notebook with papermill, its kernel started again if it did not come up",
     _add_execute),
    ("published", cmd_published, "the published claims' table and macros (data/published/claims.csv)",
     _files("claims=CSV", "table=TEX", "macros=TEX")),
    ("verdicts", cmd_verdicts, "each claim's verdict from the experiments' measurements.json",
     _files("results=DIR", "claims=CSV", "profile=PROFILE", "tex=TEX", "csv=CSV", "macros=TEX")),
    ("compare-section", cmd_compare_section, "the paper's section comparing this run with the reference machine's",
     _add_compare_section),
    ("appendix", cmd_appendix, "the generated reproducibility appendix", _add_appendix),
    ("index", cmd_index, "results/index.html: the paper, verdicts, comparison and each experiment's HTML",
     _files("results=DIR", "output=HTML")),
    ("paper", cmd_paper, "build paper/main.tex with latexmk", _add_paper),
]


def _output_dir(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--output", type=Path, metavar="DIR",
                    help="the results directory, results/EXPERIMENT (required)")
    sp.add_argument("--outdir", dest="output", type=Path, help=argparse.SUPPRESS)  # the name before --output


def _repeatable(sp: argparse.ArgumentParser, flag: str, metavar: str, help: str) -> None:
    """An option given any number of times: its values in order, [] when not given."""
    sp.add_argument(flag, action="append", default=[], metavar=metavar, help=help)


class _Parser(argparse.ArgumentParser):
    """Options spelled in full (a recorded command line must not depend on what prefixes are
    unique today), and a usage error as one line: what is wrong, and where the help is."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", _formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see '{self.prog} --help')\n")


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """argparse's, with the help column past the longest subcommand name (argparse measures
    subcommands without the extra indent it prints them with, and wraps the longest)."""

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        if isinstance(action, argparse._SubParsersAction):
            longest = max(map(len, action.choices), default=0)
            self._action_max_length = max(self._action_max_length,
                                          longest + self._current_indent + self._indent_increment)


def _formatter(prog: str) -> argparse.HelpFormatter:
    return _Formatter(prog, max_help_position=30, width=100)


def parser() -> argparse.ArgumentParser:
    steps = "\n".join(f"  {name:<18}{help_}" for name, _, help_, _ in PIPELINE_STEPS)
    p = _Parser(
        prog="pagelab",
        description="Paging and storage-cache experiments: run an experiment's trials, look at the paging "
                    "state,\ncompare and keep runs. `make` runs the whole pipeline; `pagelab COMMAND --help` "
                    "describes a command.",
        epilog=f"pipeline steps (pagelab pipeline STEP; the Snakemake rules run them):\n{steps}\n\n"
               "Exit status: 0 success, 1 failure while running, 2 bad input (one line naming the key or file; "
               "nothing changed).")
    p.add_argument("--version", action="version", version=f"pagelab {__version__}")
    sub = p.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")

    c = sub.add_parser("config", help="show the effective configuration",
                       description="The configuration after the profile is applied and every default filled, "
                                   "as JSON; refused settings exit 2 naming the key.")
    csub = c.add_subparsers(dest="action", required=True, metavar="ACTION")
    show = csub.add_parser("show", help="print the effective configuration as JSON")
    show.add_argument("--configfile", default=None, metavar="FILE", help="config file (default: config/config.yaml)")
    _repeatable(show, "--set", "KEY=VALUE", "override a top-level key (value parsed as YAML); repeatable")
    show.set_defaults(func=cmd_config_show)

    t = sub.add_parser("trial", help="run or resume an experiment's trials",
                       description="Runs (or resumes) an experiment's trials with a resolved config block, "
                                   "checked against the schema and this machine first.")
    t.add_argument("experiment")
    t.add_argument("--config", required=True, metavar="JSON",
                   help="the resolved config block (the pipeline writes results/EXPERIMENT/config.json)")
    _output_dir(t)
    t.set_defaults(func=cmd_trial)

    st = sub.add_parser("state", help="show the paging state; restore or recover what a run changed")
    st.add_argument("action", choices=["show", "restore", "recover", "clear-orphans"],
                    help="show: swap, zswap, zram, loop devices, FUSE mounts, knobs, cgroups as JSON; restore: undo "
                         "the journaled changes; recover: restore only what an interrupted run left, then refuse "
                         "(exit 1) if state no journal explains is present; clear-orphans: remove that state")
    st.set_defaults(func=cmd_state)

    cp = sub.add_parser("compare", help="two runs side by side: medians, ratio B/A with CI, same/faster/slower")
    cp.add_argument("a", type=Path, help="the baseline: a results directory or a recording")
    cp.add_argument("b", type=Path, help="the run to compare with it")
    cp.add_argument("--format", choices=["text", "json", "tex"], default="text")
    cp.add_argument("--noise", type=float, default=0.05,
                    help="the noise band: a change needs the ratio's CI outside 1 +- this (default 0.05)")
    cp.add_argument("--output", default=None, metavar="FILE",
                    help="write here (atomically) instead of stdout, and the figure beside it (.pdf, .png)")
    cp.add_argument("--out", dest="output", help=argparse.SUPPRESS)  # the name before --output
    cp.set_defaults(func=cmd_compare)

    rc = sub.add_parser("record", help="keep a finished, clean run in data/recorded/<machine>/<profile>/")
    rc.add_argument("results", type=Path, help="the results directory of a complete run")
    rc.add_argument("machine", help="a short slug naming the machine (e.g. xeon-2c-linux6.18-virtio)")
    _repeatable(rc, "--experiment", "NAME", "record only this experiment (repeatable); the recording's others are kept")
    rc.set_defaults(func=cmd_record)

    tm = sub.add_parser("time", help="where a run's wall time went, per experiment and phase",
                        description="Reads a run's trial records (and the Snakemake log beside a results "
                                    "directory) and prints, per experiment and phase, where its wall time went.")
    tm.add_argument("results", help="a results directory or a recording (data/recorded/MACHINE/PROFILE, or that name)")
    tm.set_defaults(func=cmd_time)

    pv = sub.add_parser("provenance", help="print machine, git and disk facts as JSON")
    pv.add_argument("--path", default=".", help="the file system whose disk is described (default: .)")
    pv.set_defaults(func=cmd_provenance)

    rl = sub.add_parser("reliability", help="the fresh-clone CI runs: results, times, how many of the newest passed")
    rl.add_argument("--runs", type=Path, default=None, metavar="CSV",
                    help="the runs file (default: data/reliability/runs.csv)")
    rl.set_defaults(func=cmd_reliability)

    fl = sub.add_parser("fleet", help="the experiment matrix on many hosts: show, trial, merge")
    fsub = fl.add_subparsers(dest="action", required=True, metavar="ACTION")
    fs = fsub.add_parser("show", help="the fleet's jobs, plan and each job's config block, as JSON")
    fs.add_argument("--configfile", default=None, metavar="FILE", help="config file (default: config/config.yaml)")
    fs.set_defaults(func=cmd_fleet_show)
    ft = fsub.add_parser("trial", help="one fleet job: `pagelab trial` as HOST")
    ft.add_argument("host")
    ft.add_argument("experiment")
    ft.add_argument("--config", required=True, type=Path, metavar="JSON")
    _output_dir(ft)
    ft.set_defaults(func=cmd_fleet_trial)
    fm = fsub.add_parser("merge", help="one row per host from whatever came back")
    fm.add_argument("--plan", required=True, type=Path, help="results/fleet/fleet.json")
    fm.add_argument("--results", default=Path("results/fleet"), type=Path)
    fm.add_argument("--logs", default=Path("results/logs/fleet"), type=Path)
    fm.add_argument("--csv", required=True, type=Path)
    fm.add_argument("--tex", required=True, type=Path, help="the section (headlines.pdf is written beside it)")
    fm.set_defaults(func=cmd_fleet_merge)
    fc = fsub.add_parser("cells", help="one results directory from the hosts' shares of a split run "
                                       "(payoff's grid, readyboost's arms)")
    fc.add_argument("experiment")
    fc.add_argument("--plan", required=True, type=Path, help="results/fleet/fleet.json")
    fc.add_argument("--results", default=Path("results/fleet"), type=Path)
    fc.add_argument("--output", default=None, type=Path, help="default: RESULTS/merged/EXPERIMENT")
    fc.set_defaults(func=cmd_fleet_cells)
    fk = fsub.add_parser("lock", help="run a command holding the host's lock (/run/pagelab/fleet/HOST.lock): "
                                      "one measurement job per host at a time")
    fk.add_argument("host")
    fk.add_argument("job", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="the command and its arguments")
    fk.set_defaults(func=cmd_fleet_lock)
    fp = fsub.add_parser("plan", help="the jobs in LPT order (longest first) from recorded durations, and the "
                                      "predicted wall time")
    fp.add_argument("--hosts", type=int, default=None, metavar="N",
                    help="the profile's matrix on N identical hosts (default: the configured fleet's hosts)")
    fp.add_argument("--profile", default=None, help="default: quick, or the fleet's profile")
    fp.add_argument("--recording", default=None, type=Path, metavar="DIR",
                    help="the durations' source: a results directory or a recording (data/recorded/MACHINE/PROFILE, "
                         "or that name; default: data/recorded/<this machine>/<profile>)")
    fp.add_argument("--machine", default=None, help="the recording's machine (default: this one)")
    fp.add_argument("--within", type=float, default=3600.0, metavar="SECONDS",
                    help="say whether the prediction is within this, and if not what bounds it (default 3600)")
    fp.add_argument("--configfile", default=None, metavar="FILE", help="config file (default: config/config.yaml)")
    fp.set_defaults(func=cmd_fleet_plan)

    _add_claims(sub).set_defaults(func=cmd_claims)

    pl = sub.add_parser("pipeline", help="the pipeline's internal steps, which the Snakemake rules run",
                        description="The steps the Snakemake rules run; `make` runs them, a user need not.")
    psub = pl.add_subparsers(dest="step", required=True, metavar="STEP")
    for name, func, help_, add in PIPELINE_STEPS:
        step = psub.add_parser(name, help=help_, description=help_[0].upper() + help_[1:] + ".")
        add(step)
        step.set_defaults(func=func)
    # the commands before the options in --help (argparse lists its groups in creation order)
    p._action_groups.insert(0, p._action_groups.pop())
    return p


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    what = " ".join(w for w in (args.command, getattr(args, "action", None), getattr(args, "step", None)) if w)
    if "output" in args and args.output is None and args.func in (cmd_trial, cmd_fleet_trial):  # not --outdir either
        print(f"pagelab {what}: the following arguments are required: --output (see 'pagelab {what} --help')",
              file=sys.stderr)
        return 2
    try:
        return args.func(args)
    except (_config.ConfigError, RecordingError) as exc:
        print(f"pagelab {what}: {_one_line(exc)}", file=sys.stderr)
        return 2
    except (OSError, RuntimeError, ValueError) as exc:  # a trial record or tool that failed while running
        print(f"pagelab {what}: {_one_line(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
