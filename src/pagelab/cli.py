"""The `pagelab` command: what Snakemake rules (and researchers) call.

  pagelab config show [--configfile F] [--set KEY=VALUE ...]   effective config as JSON
  pagelab trial EXPERIMENT --config JSON --outdir DIR          run or resume the trials
  pagelab tidy EXPERIMENT --config JSON --results DIR --out PARQUET  tidy table + checks
  pagelab state show|restore|recover|clear-orphans             paging state; undo journaled changes
  pagelab provenance [--path P]                                machine, git and disk facts
  pagelab paper --out PDF                                       build the LaTeX paper

Exit status: 0 success, 1 failure while running, 2 bad usage or bad config.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from pagelab import config as _config


def _overrides(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise _config.ConfigError(f"--set {pair!r}: expected KEY=VALUE")
        key, value = pair.split("=", 1)
        out[key] = yaml.safe_load(value)
    return out


def _load(args: argparse.Namespace) -> dict[str, Any]:
    return _config.load(args.configfile, _overrides(args.set))


def cmd_config_show(args: argparse.Namespace) -> int:
    print(json.dumps(_load(args), indent=2))
    return 0


def cmd_write_json(args: argparse.Namespace) -> int:
    """A JSON document given on the command line (a rule's params), written atomically."""
    from pagelab.records import write_json_atomic

    try:
        doc = json.loads(args.json)
    except json.JSONDecodeError as exc:
        raise _config.ConfigError(f"write-json: not JSON: {exc}") from exc
    write_json_atomic(args.out, doc)
    return 0


def cmd_published(args: argparse.Namespace) -> int:
    from pagelab.published import write_claims_table, write_macros

    write_claims_table(args.table, args.claims)
    write_macros(args.macros, args.claims)
    return 0


def cmd_verdicts(args: argparse.Namespace) -> int:
    from pagelab.claims import write_verdicts

    write_verdicts(args.results, args.tex, args.csv, args.claims, args.profile, args.macros)
    return 0


def cmd_compare_section(args: argparse.Namespace) -> int:
    from pagelab.compare import write_reference_section

    write_reference_section(args.reference, args.results, args.out)
    return 0


def cmd_appendix(args: argparse.Namespace) -> int:
    from pagelab import appendix

    appendix.write(args.results, args.out, args.experiments, args.profile)
    return 0


def cmd_trial(args: argparse.Namespace) -> int:
    _known(args.experiment)
    block = json.loads(Path(args.config).read_text())
    if block.get("recording"):  # make PROFILE=recorded: the recorded run, not a new one
        from pagelab.recording import replay

        replay(block["recording"], args.experiment, Path(args.outdir))
        print(f"pagelab: {args.experiment}: replayed from {block['recording']}")
        return 0
    scratch = Path(block.pop("scratch_dir", "scratch"))
    from pagelab.experiment import descriptor

    descriptor(args.experiment).run(block, Path(args.outdir), scratch)
    return 0


def cmd_record(args: argparse.Namespace) -> int:
    from pagelab.recording import record

    for name in args.experiment:
        _known(name)
    dest = record(args.results, args.machine, args.experiment or _config.experiments(),
                  keep_others=bool(args.experiment))
    print(f"pagelab: recorded {args.results} as {dest}")
    return 0


def _known(name: str) -> None:
    if name not in _config.experiments():
        raise _config.ConfigError(f"no experiment named {name!r}")


def _experiment(name: str):  # noqa: ANN202
    _known(name)
    return importlib.import_module(f"pagelab.experiments.{name}")


def cmd_tidy(args: argparse.Namespace) -> int:
    """One Parquet row per trial; then the checks (failed trials, missing configurations,
    empty columns or counters), which fail the command."""
    from pagelab import tidy
    from pagelab.records import write_text_atomic

    module = _experiment(args.experiment)
    block = json.loads(Path(args.config).read_text())
    results = Path(args.results)
    frame = tidy.tidy(results) if (results / "trials").is_dir() else tidy.pd.DataFrame()
    tmp = Path(args.out).with_name(f".{Path(args.out).name}.tmp")
    frame.to_parquet(tmp, index=False)
    tmp.replace(args.out)
    if (results / "skipped.txt").exists() and frame.empty:
        problems: list[str] = []
    else:
        n_min = int(block.get("repetitions", {}).get("n_min", block.get("trials", 1)))
        desc = module.EXPERIMENT
        problems = tidy.check(frame, desc.configurations(block), list(desc.required_columns), n_min)
    report = "ok\n" if not problems else "".join(f"{p}\n" for p in problems)
    if problems:
        print(f"pagelab: {args.experiment}: " + "; ".join(problems), file=sys.stderr)
        return 1
    write_text_atomic(Path(args.out).with_name("check.txt"), report)
    return 0


def cmd_provenance(args: argparse.Namespace) -> int:
    from pagelab.provenance import provenance

    print(json.dumps(provenance("n/a", disk_path=args.path), indent=2))
    return 0


def cmd_state(args: argparse.Namespace) -> int:
    from pagelab import state

    if args.action == "restore":
        with state.exclusive(wait=False):
            undone = state.restore()
        print(f"restored {len(undone)} change(s)" + (": " + ", ".join(undone) if undone else ""))
        return 0
    if args.action in ("recover", "clear-orphans"):
        # What `make` runs first: a run that was killed (kill -9, power loss) left its journal;
        # when no other run holds the state lock, undo it before anything else happens. Then
        # look for state that no journal explains: make refuses to run on top of it.
        with state.exclusive(wait=False):
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
    """Two runs (results directories or recordings) side by side, Criterion-style."""
    from pagelab import compare

    rows = compare.compare(args.a, args.b, noise=args.noise)
    text = compare.render(rows, args.format, str(args.a), str(args.b), args.noise)
    if args.out:
        from pagelab.records import write_text_atomic

        write_text_atomic(args.out, text)
    else:
        sys.stdout.write(text)
    return 0


def cmd_paper(args: argparse.Namespace) -> int:
    from pagelab.paper import build

    build(Path(args.out))
    return 0


def cmd_fleet(args: argparse.Namespace) -> int:
    from pagelab import fleet

    return fleet.main(args.args)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pagelab", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)

    def with_config(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--configfile", default=None,
                        help="config file (default: config/config.yaml)")
        sp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a top-level key (value parsed as YAML)")

    c = sub.add_parser("config", help="show or write the effective configuration")
    csub = c.add_subparsers(dest="action", required=True)
    show = csub.add_parser("show")
    with_config(show)
    show.set_defaults(func=cmd_config_show)

    wj = sub.add_parser("write-json", help="write a JSON document (a workflow rule's params) to a file")
    wj.add_argument("out")
    wj.add_argument("json")
    wj.set_defaults(func=cmd_write_json)

    # The workflow's file-writing steps: each takes only required --options naming its files.
    for cmd, func, help_, options in (
        ("published", cmd_published, "the published claims' table and macros (data/published/claims.csv)",
         ("claims", "table", "macros")),
        ("verdicts", cmd_verdicts, "each claim's verdict from the experiments' measurements.json",
         ("results", "claims", "profile", "tex", "csv", "macros")),
        ("compare-section", cmd_compare_section,
         "the paper's section comparing this run with the reference machine's", ("results", "out")),
    ):
        step = sub.add_parser(cmd, help=help_)
        for option in options:
            step.add_argument(f"--{option}", required=True)
        step.set_defaults(func=func)
        if cmd == "compare-section":
            step.add_argument("--reference", default="", help="the reference recording's directory (empty: none)")

    ap = sub.add_parser("appendix", help="the generated reproducibility appendix")
    ap.add_argument("--results", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--profile", required=True)
    ap.add_argument("experiments", nargs="+")
    ap.set_defaults(func=cmd_appendix)

    t = sub.add_parser("trial", help="run or resume an experiment's trials")
    t.add_argument("experiment")
    t.add_argument("--config", required=True,
                   help="the resolved config block as JSON (the pipeline writes results/EXP/config.json)")
    t.add_argument("--outdir", required=True)
    t.set_defaults(func=cmd_trial)

    st = sub.add_parser("state", help="show the paging state, or restore what a run changed")
    st.add_argument("action", choices=["show", "restore", "recover", "clear-orphans"])
    st.set_defaults(func=cmd_state)

    td = sub.add_parser("tidy", help="one Parquet table of an experiment's trials, checked")
    td.add_argument("experiment")
    td.add_argument("--config", required=True)
    td.add_argument("--results", required=True)
    td.add_argument("--out", required=True)
    td.set_defaults(func=cmd_tidy)

    pv = sub.add_parser("provenance", help="print machine, git and disk facts")
    pv.add_argument("--path", default=".")
    pv.set_defaults(func=cmd_provenance)

    rc = sub.add_parser("record", help="keep a finished, clean run in data/recorded/<machine>/<profile>/")
    rc.add_argument("results", type=Path, help="the results directory of a complete run")
    rc.add_argument("machine", help="a short slug naming the machine (e.g. xeon-2c-linux6.18-virtio)")
    rc.add_argument("--experiment", action="append", default=[], metavar="NAME",
                    help="record only this experiment (repeatable); the recording's others are kept")
    rc.set_defaults(func=cmd_record)

    cp = sub.add_parser("compare", help="two runs side by side: medians, ratio B/A with CI, same/faster/slower")
    cp.add_argument("a", type=Path, help="the baseline: a results directory or a recording")
    cp.add_argument("b", type=Path, help="the run to compare with it")
    cp.add_argument("--format", choices=["text", "json", "tex"], default="text")
    cp.add_argument("--noise", type=float, default=0.05,
                    help="the noise band: a change needs the ratio's CI outside 1 +- this (default 0.05)")
    cp.add_argument("--out", default=None, help="write here (atomically) instead of stdout")
    cp.set_defaults(func=cmd_compare)

    fl = sub.add_parser("fleet", help="the experiment matrix on many hosts: show, trial, merge",
                        add_help=False)
    fl.add_argument("args", nargs=argparse.REMAINDER)
    fl.set_defaults(func=cmd_fleet)

    pp = sub.add_parser("paper", help="build paper/main.tex with latexmk")
    pp.add_argument("--out", required=True)
    pp.set_defaults(func=cmd_paper)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except _config.ConfigError as exc:
        print(f"pagelab: config: {exc}", file=sys.stderr)
        return 2
    except (OSError, RuntimeError, ValueError) as exc:  # RecordingError is a ValueError
        print(f"pagelab: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
