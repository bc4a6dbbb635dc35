"""The `pagelab` command line: bad input never changes anything, and one consistent command line.

Bad input: the cases are made by walking the JSON schema (config/schema.yaml with every
config/schema/<name>.yaml): every setting of every experiment given a wrong type, and where the
schema bounds it a value past the bound (a negative, zero or absurd size, an unknown name, an
unknown device profile); then unknown experiments, missing and malformed files, and truncated or
foreign recordings. Each goes through the entry points that read it (`pagelab trial` with a
resolved block, `pagelab config show` with a config file, `pagelab compare`, `pagelab record`,
the Snakefile of `make PROFILE=recorded`) and must end with exit 2, one line on stderr naming
the key or the file, and the paging state (`pagelab state show`) as it was. While these tests
run, an experiment that starts anyway fails the test at once instead of measuring."""

from __future__ import annotations

import copy
import functools
import gzip
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import REFERENCE_RECORDING, REPO, VENV_BIN
from pagelab import cli
from pagelab.data import recording
from pagelab.experiments import harness
from pagelab.experiments.harness import Experiment
from pagelab.run import tools
from pagelab.system import config, state

SCHEMA = config.load_schema()
DEFS = SCHEMA["definitions"]
NO_DEVICE = "floppy-1987"


# --------------------------------------------------------------------------- cases from the schema
def _deref(sub: dict[str, Any]) -> dict[str, Any]:
    """A property's schema with its $ref's definition merged under its own keywords."""
    ref = sub.get("$ref", "")
    if ref.startswith("#/"):  # a definition, or another experiment's setting (payoff's agent keys)
        target: Any = SCHEMA
        for part in ref[2:].split("/"):
            target = target[part]
        return {**_deref(target), **{k: v for k, v in sub.items() if k != "$ref"}}
    return sub


def _types(sub: dict[str, Any]) -> set[str]:
    t = sub.get("type", [])
    out = set([t] if isinstance(t, str) else t)
    for alt in sub.get("oneOf", []):
        out |= _types(_deref(alt))
    return out


def _bad_values(sub: dict[str, Any], device: bool) -> Iterator[tuple[str, Any, tuple[str | int, ...]]]:
    """(what, value, where below the key the schema refuses it) for one setting."""
    sub = _deref(sub)
    types = _types(sub)
    if "maxBytes" in sub:  # a size
        yield "a size of the wrong type", 1.5, ()
        yield "a negative size", "-4M", ()
        yield "a zero size", 0, ()
        yield "an absurd size", "4096T", ()
        return
    if "duration" in str(sub.get("description", "")) or sub.get("pattern", "").endswith("(ns|us|ms|s|m|h)?$"):
        yield "a duration of the wrong type", [1], ()
        yield "a negative duration", "-1s", ()
        return
    if types & {"array"}:
        yield "not a list", 7 if "string" in types else "x", ()
        if sub.get("minItems"):
            yield "an empty list", [], ()
        for what, value, where in _bad_values(sub.get("items", {}), device):
            yield f"an item: {what}", [value], (0, *where)
        return
    if "object" in types:
        yield "not a mapping", [1], ()
        for key, prop in sub.get("properties", {}).items():
            for what, value, where in _bad_values(prop, False):
                yield f"{key}: {what}", {key: value}, (key, *where)
        return
    if "integer" in types:
        yield "not an integer", "many", ()
        if "minimum" in sub:
            yield "below its minimum", sub["minimum"] - 1, ()
        if "maximum" in sub:
            yield "above its maximum", sub["maximum"] + 1, ()
    elif "number" in types:
        yield "not a number", "lots", ()
        if "minimum" in sub:
            yield "below its minimum", sub["minimum"] - 1, ()
        if "exclusiveMinimum" in sub:
            yield "at its exclusive minimum", sub["exclusiveMinimum"], ()
        if "maximum" in sub:
            yield "above its maximum", sub["maximum"] + 1, ()
    elif "string" in types:
        yield "not a string", 7, ()
        if "enum" in sub:
            yield "a name it does not know", "warp", ()
        if device:
            yield "an unknown device profile", NO_DEVICE, ()


def _settings() -> Iterator[tuple[str, str | None, str, dict[str, Any]]]:
    """(experiment, its profile sub-block or None, key, schema) of every experiment setting."""
    for exp in config.experiments(SCHEMA):
        for key, sub in SCHEMA["properties"][exp]["properties"].items():
            if key in config.PROFILES:
                continue
            yield exp, None, key, sub
        for key, sub in DEFS[f"{exp}_profile"]["properties"].items():
            yield exp, "quick", key, sub


def _cases() -> list[Any]:
    out = []
    for exp, profile, key, sub in _settings():
        device = key in config.resource_keys(SCHEMA, exp, "device")
        for what, value, where in _bad_values(sub, device):
            out.append(pytest.param(exp, profile, key, value, where, id=f"{exp}.{key}: {what}"))
    return out


CASES = _cases()


def test_the_schema_walk_reaches_every_setting_and_every_kind_of_bad_value():
    """The walk is the test's own premise: every setting of every experiment yields cases,
    and each kind of bad value (wrong type, negative, absurd, unknown device) appears."""
    keys = {(exp, key) for exp, _, key, _ in _settings()}
    covered = {(p.values[0], p.values[2]) for p in CASES}
    assert keys == covered
    ids = " ".join(p.id for p in CASES)
    for kind in ("wrong type", "negative size", "absurd size", "unknown device profile", "does not know",
                 "not an integer", "below its minimum"):
        assert kind in ids, kind
    assert len(CASES) > 150


# --------------------------------------------------------------------------- the harness of a refusal
@pytest.fixture
def refused(tmp_path, monkeypatch, capsys):
    """Runs `pagelab ...` in this process and checks a refusal: exit 2, one line on stderr
    holding each `named` string, nothing on stdout, the paging state as before, no journal and
    no results directory. An experiment that starts anyway fails the test before it measures."""
    journal = tmp_path / "journal.jsonl"
    monkeypatch.setenv("PAGELAB_JOURNAL", str(journal))

    def never(*args: Any, **kw: Any) -> None:
        raise AssertionError("bad input started an experiment")

    monkeypatch.setattr(Experiment, "run", never)
    monkeypatch.setattr(recording, "replay", never)
    before = state.show()

    def check(argv: list[str], *named: str) -> str:
        capsys.readouterr()
        rc = cli.main([str(a) for a in argv])
        out, err = capsys.readouterr()
        assert rc == 2, (rc, err)
        assert len(err.splitlines()) == 1 and err.endswith("\n"), err
        for word in named:
            assert word in err, (word, err)
        assert out == ""
        assert state.show() == before
        assert not journal.exists() and not (tmp_path / "out").exists()
        return err

    return check


@functools.cache
def _default_config() -> dict[str, Any]:
    """The repository's config, resolved once for the module's few hundred refusal cases."""
    return config.load()


def _block(exp: str, tmp_path: Path) -> dict[str, Any]:
    return {**copy.deepcopy(_default_config()[exp]), "scratch_dir": str(tmp_path / "scratch")}


@pytest.mark.parametrize(("exp", "profile", "key", "value", "where"), CASES)
def test_a_bad_setting_is_refused_by_trial_and_by_config_show(refused, tmp_path, exp, profile, key, value, where):
    """`pagelab trial` (a resolved block, as the pipeline writes it) and `pagelab config show`
    (a config file) refuse it naming the key; neither changes anything."""
    named = ".".join([key, *(str(w) for w in where if isinstance(w, str))])
    block = _block(exp, tmp_path)
    block[key] = copy.deepcopy(value) if not isinstance(value, dict) else {**block.get(key, {}), **value}
    cfg_json = tmp_path / "config.json"
    cfg_json.write_text(json.dumps(block))
    refused(["trial", exp, "--config", cfg_json, "--output", tmp_path / "out"], f"pagelab trial: {cfg_json}: {named}")
    raw = {exp: {profile: {key: value}} if profile else {key: value}}
    cfg_yaml = tmp_path / "config.yaml"
    cfg_yaml.write_text(yaml.safe_dump(raw))
    refused(["config", "show", "--configfile", cfg_yaml], ".".join([exp, *([profile] if profile else []), named]))


@pytest.mark.parametrize(("text", "named"), [
    ("profile: medium", "profile:"),
    ("profile: 5", "profile:"),
    ("reference: [1]", "reference:"),
    ("recording: 5", "recording:"),
    ("scratch_dir: {a: 1}", "scratch_dir:"),
    ("fleet: [1]", "fleet:"),
    ("fleet: {hosts: [{name: 'a b'}]}", "fleet.hosts[0].name:"),
    ("fleet: {hosts: [{nome: a}]}", "fleet.hosts[0]"),
    ("fleet: {hosts: [{name: a, labels: {disk: [1]}}]}", "fleet.hosts[0].labels.disk:"),
    ("fleet: {experiments: [7]}", "fleet.experiments[0]:"),
    ("fleet: {profile: medium}", "fleet.profile:"),
    ("fleet: {set: {seekmodel: 5}}", "fleet.set.seekmodel:"),
    ("seekmodle: {}", "seekmodle: unknown key"),
    ("seekmodel: {quick: {bogus: 1}}", "seekmodel.quick.bogus: unknown key"),
])
def test_a_bad_shared_setting_is_refused_naming_the_key(refused, tmp_path, text, named):
    path = tmp_path / "config.yaml"
    path.write_text(text + "\n")
    refused(["config", "show", "--configfile", path], named)


def test_the_two_trials_the_issue_saw_run_are_refused_by_the_real_command(tmp_path):
    """readyboost `arms: [warp]` ran six trials as the own-disk arm and `hog_rounds: 0` ran 31
    failing trials: the console script, as the pipeline runs it, now refuses both."""
    before = state.show()
    for key, value, named in (("arms", ["warp"], "arms[0]: 'warp' is not one of"),
                              ("hog_rounds", 0, "hog_rounds: 0 is less than the minimum of 1")):
        block = {**_block("readyboost", tmp_path), key: value}
        (tmp_path / "config.json").write_text(json.dumps(block))
        done = subprocess.run([str(VENV_BIN / "pagelab"), "trial", "readyboost", "--config",
                               str(tmp_path / "config.json"), "--output", str(tmp_path / "out")],
                              capture_output=True, text=True, timeout=120,
                              env={"PATH": "/usr/bin:/bin", "PAGELAB_JOURNAL": str(tmp_path / "journal.jsonl")})
        assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
        assert named in done.stderr
    assert state.show() == before
    assert not (tmp_path / "out").exists() and not (tmp_path / "journal.jsonl").exists()


# --------------------------------------------------------------------------- experiments and files
def test_an_unknown_experiment_is_refused_listing_the_experiments(refused, tmp_path):
    listed = "(the experiments: " + ", ".join(config.experiments()) + ")"
    (tmp_path / "c.json").write_text("{}")
    refused(["trial", "nosuch", "--config", tmp_path / "c.json", "--output", tmp_path / "out"], "'nosuch'", listed)
    refused(["pipeline", "tidy", "nosuch", "--config", tmp_path / "c.json", "--results", tmp_path,
             "--output", tmp_path / "t.parquet"], listed)
    refused(["record", tmp_path, "m", "--experiment", "nosuch"], listed)
    refused(["pipeline", "appendix", "--results", tmp_path, "--output", tmp_path / "out", "--profile", "quick",
             "nosuch"], listed)
    (tmp_path / "f.yaml").write_text("fleet: {hosts: [{name: a}], experiments: [nosuch]}\n")
    refused(["fleet", "show", "--configfile", tmp_path / "f.yaml"], "'nosuch'", "seekmodel")


def test_missing_and_malformed_files_are_named(refused, tmp_path):
    missing = tmp_path / "missing.json"
    refused(["trial", "seekmodel", "--config", missing, "--output", tmp_path / "out"],
            f"{missing}: No such file or directory")
    (tmp_path / "bad.json").write_text('{"profile": "quick",')
    refused(["trial", "seekmodel", "--config", tmp_path / "bad.json", "--output", tmp_path / "out"],
            f"{tmp_path / 'bad.json'}: not JSON")
    (tmp_path / "list.json").write_text("[1, 2]")
    refused(["trial", "seekmodel", "--config", tmp_path / "list.json", "--output", tmp_path / "out"],
            "must be a JSON object")
    refused(["config", "show", "--configfile", tmp_path / "missing.yaml"], "missing.yaml: No such file")
    (tmp_path / "bad.yaml").write_text("seekmodel: {quick: [}\n")
    refused(["config", "show", "--configfile", tmp_path / "bad.yaml"], "bad.yaml: not YAML (line 1)")
    refused(["config", "show", "--set", "profile"], "--set 'profile': expected KEY=VALUE")
    refused(["pipeline", "write-json", "--output", tmp_path / "w.json", "{not json"], "w.json", "is not JSON")
    assert not (tmp_path / "w.json").exists()


def test_the_console_script_exits_2_with_one_line(tmp_path):
    """The real `pagelab` on PATH: a missing --config file exits 2 with one line naming it."""
    done = subprocess.run([str(VENV_BIN / "pagelab"), "trial", "pagein", "--config", str(tmp_path / "nope.json"),
                           "--output", str(tmp_path / "out")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr == f"pagelab trial: {tmp_path / 'nope.json'}: No such file or directory\n"


# --------------------------------------------------------------------------- recordings
def _damage_csv_mid_row(d: Path) -> Path:
    """Its last row cut short, then ended with a newline (as a copy that stopped may be)."""
    f = d / "pagein" / "trials.csv"
    f.write_bytes(f.read_bytes()[:-25] + b"\n")
    return f


def _damage_csv_last_field(d: Path) -> Path:
    """Cut inside the last field: every row still has as many fields as the header."""
    f = d / "pagein" / "trials.csv"
    f.write_bytes(f.read_bytes()[:-2])
    return f


def _damage_gz(d: Path) -> Path:
    f = d / "pagein" / "trials.jsonl.gz"
    f.write_bytes(f.read_bytes()[: len(f.read_bytes()) // 2])
    return f


def _drop_record(d: Path) -> Path:
    f = d / "pagein" / "trials.jsonl.gz"
    with gzip.open(f, "rt") as fh:
        lines = fh.readlines()
    with gzip.open(f, "wt") as fh:
        fh.writelines(lines[1:])
    return f


def _cut_config(d: Path) -> Path:
    f = d / "pagein" / "config.json"
    f.write_text(f.read_text()[:40])
    return f


def _foreign_config(d: Path) -> Path:
    f = d / "pagein" / "config.json"
    f.write_text(json.dumps({"colour": "blue", "profile": "quick"}))
    return f


def _foreign_csv(d: Path) -> Path:
    f = d / "pagein" / "trials.csv"
    f.write_text("when,what\n1,2\n")
    return f


def _cut_provenance(d: Path) -> Path:
    f = d / "pagein" / "provenance.json"
    f.write_text("{")
    return f


DAMAGE = {
    "trials.csv with a row cut short": (_damage_csv_mid_row, "line 21 has 21 fields where the header has 24"),
    "trials.csv cut inside its last field": (_damage_csv_last_field, "truncated"),
    "trials.jsonl.gz cut short": (_damage_gz, "damaged or truncated"),
    "a trial's record missing": (_drop_record, "no record of 1 trial"),
    "config.json cut short": (_cut_config, "not JSON"),
    "a foreign config.json": (_foreign_config, "colour: unknown key"),
    "a foreign trials.csv": (_foreign_csv, "not a pagelab trials table"),
    "provenance.json cut short": (_cut_provenance, "not JSON"),
}


@pytest.fixture
def recorded(tmp_path) -> Path:
    d = tmp_path / "rec"
    shutil.copytree(recording.recorded_dir() / REFERENCE_RECORDING, d)
    return d


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_truncated_or_foreign_recording_is_refused_naming_the_file(refused, recorded, tmp_path, damage):
    """`pagelab compare` and `pagelab trial` replaying it (make PROFILE=recorded's trial step)."""
    hurt, why = DAMAGE[damage]
    good = recording.recorded_dir() / REFERENCE_RECORDING
    path = hurt(recorded)
    refused(["compare", good, recorded], f"{path}: {why}")
    refused(["compare", recorded, good, "--output", tmp_path / "c.txt"], f"{path}: {why}")
    assert not (tmp_path / "c.txt").exists()
    block = {**harness.read_json(good / "pagein", "config.json"), "recording": str(recorded)}  # today's names
    (tmp_path / "config.json").write_text(json.dumps(block))
    refused(["trial", "pagein", "--config", tmp_path / "config.json", "--output", tmp_path / "out"], f"{path}: {why}")


def test_record_refuses_a_damaged_run_and_writes_nothing(refused, recorded, tmp_path, monkeypatch):
    """`pagelab record` of a run whose trials.csv was cut short: exit 2 naming it, and no
    recording written (the repository here is a temporary PAGELAB_ROOT)."""
    fake_root = tmp_path / "root"
    shutil.copytree(REPO / "config", fake_root / "config")
    monkeypatch.setenv("PAGELAB_ROOT", str(fake_root))
    results = tmp_path / "results"
    for exp in config.experiments():
        shutil.copytree(recorded / exp, results / exp)
        (results / exp / "measurements.json").write_text("{}")
        (results / exp / "check.txt").write_text("ok\n")
        (results / exp / "trials").mkdir()
        (results / exp / "trials" / "t.json").write_text("{}")
    path = _damage_csv_last_field(results)
    refused(["record", results, "m"], "not a complete, clean run", f"{path}: truncated")
    assert not (fake_root / "data").exists()


def test_make_profile_recorded_refuses_a_damaged_recording(recorded, env):
    """The Snakefile (what `make PROFILE=recorded RECORDING=...` runs) checks the recording whole
    before planning any job; a dry run shows the refusal naming the file."""
    path = _damage_gz(recorded)
    done = subprocess.run(["snakemake", "-n", "results/paper.pdf", "--config", f"recording={recorded}"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode != 0
    assert f"{path}: damaged or truncated" in done.stderr + done.stdout


# --------------------------------------------------------------------------- one command line
def _subcommands(p=None, prefix=()) -> Iterator[tuple[str, ...]]:  # noqa: ANN001
    import argparse

    p = p or cli.parser()
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sp in action.choices.items():
                yield (*prefix, name)
                yield from _subcommands(sp, (*prefix, name))


SUBCOMMANDS = list(_subcommands())


@pytest.mark.parametrize("words", SUBCOMMANDS, ids=" ".join)
def test_every_subcommand_has_a_working_help(capsys, words):
    with pytest.raises(SystemExit) as stop:
        cli.main([*words, "--help"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: pagelab {' '.join(words)}")


def test_version_and_a_help_that_puts_the_user_commands_first(capsys):
    from pagelab import __version__

    with pytest.raises(SystemExit):
        cli.main(["--version"])
    assert capsys.readouterr().out == f"pagelab {__version__}\n"
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    text = capsys.readouterr().out
    user = [text.index(f"\n    {c}") for c in ("config", "trial", "state", "compare", "record", "fleet")]
    steps = text.index("pipeline steps")
    assert max(user) < steps
    for name, *_ in cli.PIPELINE_STEPS:
        assert text.index(f"\n  {name} ") > steps, name
        assert f"\n    {name} " not in text  # not among the user commands


def test_the_docstring_and_docs_name_every_subcommand_and_tool():
    docs = (REPO / "docs" / "commands.md").read_text()
    for words in SUBCOMMANDS:
        if len(words) == 1 and words[0] in ("fleet", "pipeline", "config", "claims"):
            continue  # groups: their subcommands are named
        assert f"pagelab {' '.join(words)}" in cli.__doc__, words
        assert f"pagelab {' '.join(words)}" in docs, words
    for tool in ("iobench job", "iobench crystalmark", "hog run", "hog victim", "hog populate", "hog dump",
                 "cacheflood", "residency", "simdisk"):
        assert f"`{tool}" in docs, tool
    for name in tools.names():   # every tool native/Makefile builds
        assert f"`{name} " in docs, name


def test_every_pagelab_call_in_the_workflow_parses():
    """Each `pagelab ...` a Snakemake rule runs is a command this parser accepts (placeholders
    filled with a word), so renaming an option or step fails here, not in a run."""
    calls = []
    for smk in sorted((REPO / "workflow").rglob("*.smk")) + [REPO / "workflow" / "Snakefile"]:
        text = smk.read_text()
        for m in re.finditer(r'"(pagelab [^"]*)"((?:\s*"[^"]*")*)', text):
            joined = m.group(1) + "".join(re.findall(r'"([^"]*)"', m.group(2)))
            calls.append(joined.split(">")[0])
    assert len(calls) >= 8, calls
    for call in calls:
        cli.parser().parse_args([re.sub(r"\{[^}]*\}", "x", w) for w in call.split()[1:]])


def test_show_leaves_out_a_device_removed_while_it_is_read(monkeypatch):
    """`pagelab state show` beside a run: a zram or loop device whose files are gone by the time
    they are read (the run's restore removed it) is left out, not an error."""
    from pagelab.system.state import query

    read = query._read
    monkeypatch.setattr(query, "_read",
                        lambda p: None if p.name in ("disksize", "comp_algorithm", "backing_file") else read(p))
    shown = query.show()
    assert shown["zram"] == {} and shown["loop_devices"] == {}
    assert shown["knobs"] == state.show()["knobs"]
