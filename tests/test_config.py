"""Config validation: the defaults come from the schema, bad configs are refused naming the key,
and Snakemake (the pipeline's own entry point) refuses them the same way."""

import copy
import re
import subprocess

import pytest
import yaml

from conftest import REFERENCE_RECORDING, recorded_params
from pagelab.cli import main
from pagelab.system import config


def test_default_config_resolves_quick_profile():
    cfg = config.load()
    assert cfg["profile"] == "quick"
    sm = cfg["seekmodel"]
    assert sm["profile"] == "quick"
    assert sm["file_size"] == "256M"
    assert "quick" not in sm and "full" not in sm
    assert {"seekmodel", "standby", "compression", "crystalmark", "pagein", "readyboost"} <= set(config.experiments())


def test_every_experiment_is_one_name_with_its_descriptor_notebook_and_section():
    from pagelab.core.paths import root
    from pagelab.experiments.harness import Experiment, descriptor

    for name in config.experiments():
        desc = descriptor(name)
        assert isinstance(desc, Experiment) and desc.name == name and desc.seeds
        assert (root() / "notebooks" / f"{name}.ipynb").exists(), name
        assert (root() / "paper" / "sections" / f"{name}.tex").exists(), name


def test_defaults_fill_an_empty_config(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("{}\n")
    cfg = config.load(p)
    assert cfg["seekmodel"]["block_sizes"] == ["4K", "16K", "64K", "256K", "1M"]
    assert cfg["seekmodel"]["repetitions"]["n_min"] == 5


def test_the_schema_reads_the_same_through_libyaml_as_through_pure_python():
    """load_schema parses the schema's files with libyaml where PyYAML has it (pip's wheels do):
    the merged schema is the one the pure-Python parser gives."""
    assert yaml.__with_libyaml__ and config._SCHEMA_LOADER is yaml.CSafeLoader
    path = config.schema_path()
    merged = yaml.load(path.read_text(), Loader=yaml.SafeLoader)
    for frag in sorted((path.parent / "schema").glob("*.yaml")):
        for section, entries in yaml.load(frag.read_text(), Loader=yaml.SafeLoader).items():
            merged.setdefault(section, {}).update(entries)
    assert config.load_schema() == merged


def test_one_key_selects_the_full_profile():
    cfg = config.load(overrides={"profile": "full"})
    assert cfg["seekmodel"]["profile"] == "full"
    assert cfg["seekmodel"]["file_size"] == "4G"


def test_partial_profile_block_keeps_the_profiles_other_defaults(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("profile: full\nseekmodel:\n  full: {repetitions: {n_min: 12, n_max: 12, ci_pct: 5}}\n")
    sm = config.load(p)["seekmodel"]
    assert sm["repetitions"]["n_min"] == 12 and sm["file_size"] == "4G"


@pytest.mark.parametrize("override", [{"seekmodel": {"quick": {"runtime": "0.25s"}}},
                                      {"readyboost": {"quick": {"ram": "48M"}}}], ids=["seekmodel", "readyboost"])
def test_a_partial_profile_block_hashes_as_the_block_its_trial_runs(override):
    """A sub-block given in part takes the rest from the profile's default, with that default's
    nested defaults (repetitions' look interval ...): the resolved block and the block `pagelab
    trial` checks are one, so a trial record's config_hash matches the run's (README's example)."""
    (name,) = override
    cfg = config.load(overrides=copy.deepcopy(override))
    block = cfg[name]
    ran = config.trial_block(name, {**block, "scratch_dir": "x"}, machine=False)[0]
    assert block["repetitions"] == ran["repetitions"]
    assert config.run_hash(name, block) == config.run_hash(name, ran)


def test_a_profile_cannot_ask_for_fewer_trials_than_a_verdict_needs(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("profile: full\nseekmodel:\n  full: {repetitions: {n_min: 6, n_max: 10, ci_pct: 5}}\n")
    with pytest.raises(config.ConfigError, match="seekmodel.full.repetitions.n_min: 6 is fewer than the 10"):
        config.load(p)
    p.write_text("standby: {quick: {repetitions: {n_min: 3}}}\n")
    with pytest.raises(config.ConfigError, match="standby.quick.repetitions.n_min"):
        config.load(p)


def test_the_seed_profile_falls_back_to_quick_where_an_experiment_has_no_seed_block():
    cfg = config.load(overrides={"profile": "seed"})
    assert cfg["seekmodel"]["profile"] == "seed"
    assert cfg["seekmodel"]["file_size"] == config.load()["seekmodel"]["file_size"]


@pytest.mark.parametrize("text,key", [
    ("seekmodel: {rng_seed: many}", "seekmodel.rng_seed"),
    ("seekmodel: {quick: {repetitions: {n_min: lots, n_max: 5, ci_pct: 10}}}", "seekmodel.quick.repetitions.n_min"),
    ("seekmodel: {quick: {repetitions: {n_min: 2, n_max: 5, ci_pct: 10}}}", "seekmodel.quick.repetitions.n_min"),
    ("seekmodel: {block_sizes: [4K, 3X]}", "seekmodel.block_sizes"),
    ("profile: medium", "profile"),
    ("seekmodle: {}", "seekmodle"),
    ("seekmodel: {quick: {bogus: 1}}", "bogus"),
])
def test_bad_config_names_the_key(tmp_path, text, key):
    p = tmp_path / "bad.yaml"
    p.write_text(text + "\n")
    with pytest.raises(config.ConfigError) as err:
        config.load(p)
    assert key in str(err.value)


@pytest.mark.parametrize("text,key", [
    ("standby: {quick: {working_set: 64G}}", "standby.quick.working_set"),
    ("readyboost: {quick: {ram: 30G}}", "readyboost.quick.ram"),
    ("pagein: {disk_profile: floppy-1987}", "pagein.disk_profile: no device profile 'floppy-1987'"),
    ("seekmodel: {disk_profiles: [own, tape]}", "seekmodel.disk_profiles: no device profile 'tape'"),
])
def test_configs_the_machine_cannot_run_name_the_key(tmp_path, text, key):
    p = tmp_path / "bad.yaml"
    p.write_text(text + "\n")
    with pytest.raises(config.ConfigError) as err:
        config.load(p)
    assert key in str(err.value)


def test_config_hash_is_stable_and_sensitive():
    a = {"x": 1, "y": [1, 2]}
    assert config.config_hash(a) == config.config_hash({"y": [1, 2], "x": 1})
    assert config.config_hash(a) != config.config_hash({"x": 2, "y": [1, 2]})


def test_the_run_hash_covers_the_device_profiles_a_block_runs_on(tmp_path, monkeypatch):
    """Trials are matched on the run hash when a run resumes: one value changed in a device
    profile the block runs on (directly, or as a tier's disk or stick) changes it, so the trials
    measured on the old profile are measured again; a profile it does not use does not."""
    import shutil

    from pagelab.core.paths import root

    schema = config.load_schema()
    resolved = config.resolve(config.load())
    block = resolved["readyboost"]
    devs = tmp_path / "config" / "devices"
    shutil.copytree(root() / "config" / "devices", devs)
    shutil.copy2(config.renames_path(), tmp_path / "config")  # run_hash reads it, alone or after others
    monkeypatch.setattr(config, "root", lambda: tmp_path)

    also = config.tier_of(block)  # what the harness and the Snakefile's rerun trigger pass
    assert also == [config.TIER_MODEL]  # a block naming a stick runs behind the tier model
    assert config.tier_of(resolved["pagein"]) == []  # one naming none does not
    used = config.device_profiles("readyboost", block, schema, also)
    # the disk and the stick the block names, and the tier model no setting names
    assert {block["disk_profile"], block["cache_profile"], config.TIER_MODEL} <= set(used), used
    before = config.run_hash("readyboost", block, schema, also)
    assert before != config.config_hash(block)
    assert before != config.run_hash("readyboost", block, schema)  # the tier model is part of it

    def edit(name):
        doc = yaml.safe_load((devs / f"{name}.yaml").read_text())
        key = next(k for k, v in doc.items() if isinstance(v, float | int) and not isinstance(v, bool))
        doc[key] = doc[key] * 1.1 + 1
        (devs / f"{name}.yaml").write_text(yaml.safe_dump(doc))

    with open(devs / "usbstick-2008.yaml", "a") as fh:
        fh.write("# a comment is not a setting\n")
    assert config.run_hash("readyboost", block, schema, also) == before
    edit("usbstick3-2012")  # not one readyboost runs on
    assert config.run_hash("readyboost", block, schema, also) == before
    edit("usbstick-2008")  # the tier's stick
    after_stick = config.run_hash("readyboost", block, schema, also)
    assert after_stick != before
    edit(config.TIER_MODEL)  # the tier's own parameters
    assert config.run_hash("readyboost", block, schema, also) != after_stick
    # a block that names no device hashes as the block alone
    assert config.run_hash("standby", resolved["standby"], schema) == config.config_hash(resolved["standby"])
    assert config.device_profiles("no-such-experiment", {}, schema) == {}


def test_cli_bad_override_exits_2(capsys):
    assert main(["config", "show", "--set", "profile=huge"]) == 2
    assert "profile" in capsys.readouterr().err


@pytest.mark.parametrize("profile", ["", "quick", "full", "seed"])
def test_the_makefiles_own_command_line_parses_for_every_profile(repo, env, profile):
    """`make PROFILE=x` runs the command Make prints; Snakemake must accept it (dry run)."""
    out = subprocess.run(["make", "-n", "--no-print-directory", "paper", f"PROFILE={profile}"], cwd=repo,
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    runner = "bash workflow/scripts/run_pipeline.sh "
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith(runner)]
    assert len(lines) == 1, out.stdout
    args = lines[0][len(runner):].split()  # the runner passes these to snakemake unchanged
    if profile:
        assert args.index("--config") > args.index("results/paper.pdf") and f"profile={profile}" in args
    dry = subprocess.run(["snakemake", "-n", "--quiet", *args], cwd=repo, env=env, capture_output=True,
                         text=True, timeout=180)
    assert dry.returncode == 0, lines[0] + "\n" + dry.stdout[-2000:] + dry.stderr[-2000:]


def test_one_experiment_of_a_profile_runs_without_the_paper(repo, env):
    """`make PROFILE=full EXPERIMENT=seekmodel` asks Snakemake for that experiment's results only:
    its trials, notebook and checks, and none of another experiment's jobs or the paper's."""
    out = subprocess.run(["make", "-n", "--no-print-directory", "paper", "PROFILE=full", "EXPERIMENT=seekmodel"],
                         cwd=repo, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("bash workflow/scripts/run_pipeline.sh "))
    args = line.split()[2:]
    assert "results/paper.pdf" not in args
    assert "results/seekmodel/measurements.json" in args and "results/seekmodel/check.txt" in args
    dry = subprocess.run(["snakemake", "-n", "--forceall", *args], cwd=repo, env=env, capture_output=True,
                         text=True, timeout=180)
    assert dry.returncode == 0, dry.stdout[-2000:] + dry.stderr[-2000:]
    jobs = set(re.findall(r"^rule (\w+):", dry.stdout, re.M))
    assert "paper" not in jobs and {"trial", "tidy"} <= jobs and any("notebook" in j for j in jobs), jobs
    wildcards = set(re.findall(r"wildcards: experiment=(\w+)", dry.stdout))
    assert wildcards == {"seekmodel"}, wildcards


def _snakemake(repo, env, *args):
    return subprocess.run(["snakemake", "-n", "--quiet", "all", *args], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=120)


def test_snakemake_dry_run_succeeds_on_default_config(repo, env):
    out = _snakemake(repo, env)
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("bad,key", [
    ({"seekmodel": {"quick": {"file_size": "lots"}}}, "seekmodel.quick.file_size"),
    ({"seekmodel": {"trails": 3}}, "trails"),
    ({"standby": {"quick": {"working_set": "64G"}}}, "standby.quick.working_set"),
    ({"pagein": {"disk_profile": "floppy-1987"}}, "floppy-1987"),
])
def test_snakemake_refuses_bad_config_naming_the_key(repo, env, tmp_path, bad, key):
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(bad))
    out = _snakemake(repo, env, "--configfile", str(p))
    assert out.returncode != 0
    assert key in out.stdout + out.stderr


@pytest.mark.parametrize("profile", ["quick", "full", "seed"])
def test_a_resolved_block_passes_check_block_unchanged(profile):
    """What the pipeline writes to results/<name>/config.json is what `pagelab trial` runs:
    checking it adds nothing, so its hash (and a resumed run's finished trials) stays."""
    cfg = config.load(overrides={"profile": profile})
    for exp in config.experiments():
        block = {**cfg[exp], "scratch_dir": "scratch"}
        checked = config.check_block(exp, copy.deepcopy(block), machine=False)
        assert checked == block, exp
        assert config.config_hash(checked) == config.config_hash(block)


def test_check_block_fills_defaults_and_names_keys_as_the_block_spells_them():
    b = config.check_block("seekmodel", {"profile": "full", "disk_profiles": ["own"]}, machine=False)
    assert b["file_size"] == "4G" and b["repetitions"]["n_min"] == 10 and b["disk_profiles"] == ["own"]
    with pytest.raises(config.ConfigError, match=r"^x.json: repetitions.n_min: 6 is fewer than the 10"):
        config.check_block("seekmodel", {"profile": "full", "repetitions": {"n_min": 6, "n_max": 10, "ci_pct": 5}},
                           source="x.json")
    with pytest.raises(config.ConfigError, match=r"^x.json: trials: unknown key"):  # the key repetitions replaced
        config.check_block("seekmodel", {"profile": "quick", "trials": 5}, source="x.json")
    with pytest.raises(config.ConfigError, match=r"^x.json: disk_profiles: no device profile 'tape'"):
        config.check_block("seekmodel", {"disk_profiles": ["tape"]}, source="x.json")
    with pytest.raises(config.ConfigError, match=r"no experiment named 'seekmode' \(the experiments: .*seekmodel"):
        config.check_block("seekmode", {})


@pytest.mark.parametrize(("value", "ok"), [("1T", True), (1 << 40, True), ("1025G", False), ("2T", False),
                                           ("0", False), (0, False), ("1", True)])
def test_a_size_is_from_one_byte_to_its_ceiling(value, ok):
    raw = {"seekmodel": {"quick": {"file_size": value}}}
    if ok:
        config.validate(raw)
    else:
        with pytest.raises(config.ConfigError, match=r"^seekmodel.quick.file_size: "):
            config.validate(raw)


@pytest.mark.parametrize("name,experiment", [
    case for profile in ("quick", "full", "seed")
    for case in recorded_params(config.experiments(), f"{REFERENCE_RECORDING.split('/')[0]}/{profile}",
                                with_recording=True)])
def test_every_recording_in_the_repository_is_whole_and_validates(name, experiment):
    from pagelab.data import recording

    blocks = recording.check_run(recording.recorded_dir() / name, [experiment], recording.REQUIRED)
    assert blocks[experiment]["profile"] == name.rsplit("/", 1)[1]


# --------------------------------------------------------------------------- one name per meaning
# The names a device profile setting may have: the disk (any device measured or paged on) and the
# stick behind the tier (the cache); the tier is the one tier model (config.TIER_MODEL).
DEVICE_NAMES = {"disk_profile", "cache_profile"}


def schema_keys(schema: dict) -> list[tuple[str, str, dict]]:
    """Every setting of the schema as (where, key, its schema), where being the block or the
    definition holding it; a $ref to another setting is that setting (the same name)."""
    out = []

    def walk(where: str, props: dict) -> None:
        for key, sub in props.items():
            if not isinstance(sub, dict) or str(sub.get("$ref", "")).startswith("#/properties/"):
                continue
            out.append((where, key, sub))
            if isinstance(sub.get("properties"), dict):
                walk(f"{where}.{key}", sub["properties"])

    walk("", schema["properties"])
    for name, d in schema["definitions"].items():
        walk(f"definitions.{name}", d.get("properties", {}))
    return out


def stem(key: str, sub: dict) -> str:
    """A setting's name: a list of levels is named in the plural (disk_profiles, retouch_orders)."""
    return key.removesuffix("s") if sub.get("type") == "array" else key


def meaning_clashes(schema: dict) -> dict[str, set[str]]:
    """Meanings that two names carry: settings whose values are one closed set (an enum, or a
    list's items' enum) named differently, and device settings (resource: device) named other
    than DEVICE_NAMES."""
    by_domain: dict[frozenset, set[str]] = {}
    for _, key, sub in schema_keys(schema):
        values = sub.get("items", {}) if sub.get("type") == "array" else sub
        if isinstance(values, dict) and values.get("enum"):
            by_domain.setdefault(frozenset(map(str, values["enum"])), set()).add(stem(key, sub))
    out = {"/".join(sorted(d)): names for d, names in by_domain.items() if len(names) > 1}
    devices = {stem(k, sub) for _, k, sub in schema_keys(schema) if sub.get("resource") == "device"}
    if devices - DEVICE_NAMES:
        out["device profile"] = devices
    return out


def test_no_two_schema_keys_name_one_meaning():
    """One name per meaning across the schema: the victim's access order is retouch_order, the
    agent's mode agent_mode, a device profile disk_profile or cache_profile (a list of levels
    the name in the plural); the names config/renames.yaml retired are gone."""
    schema = config.load_schema()
    assert meaning_clashes(schema) == {}
    keys = {(w.split(".")[0] or w, k) for w, k, _ in schema_keys(schema)}
    names = {k for _, k in keys}
    for experiment, parts in config.renames().items():
        assert experiment in config.experiments(), experiment
        for old, new in parts["config"].items():
            assert old not in schema["properties"][experiment]["properties"], f"{experiment}.{old} is retired"
            assert old not in config.profile_keys(schema, experiment, "quick"), f"{experiment}.{old} is retired"
            assert new is None or new in names, f"{experiment}: {old} -> {new}, which the schema lacks"
    # the check fails on a second name: pagein's list of orders under its old name
    pagein = schema["properties"]["pagein"]["properties"]
    pagein["orders"] = copy.deepcopy(pagein["retouch_orders"])
    assert "random/seq" in meaning_clashes(schema)
    pagein["device"] = {"type": "string", "resource": "device"}
    assert "device" in meaning_clashes(schema)["device profile"]


def test_a_retired_name_in_a_config_is_refused_with_its_new_name():
    """A config written with a name config/renames.yaml retired is refused, naming today's (in the
    block and in a profile's sub-block); a key that was never a name stays an unknown key."""
    with pytest.raises(config.ConfigError, match=r"^pagein\.orders: renamed retouch_orders \(config/renames\.yaml\)$"):
        config.validate({"profile": "quick", "pagein": {"orders": ["random"]}})
    with pytest.raises(config.ConfigError, match=r"^payoff\.quick\.sticks: renamed cache_profiles"):
        config.validate({"profile": "quick", "payoff": {"quick": {"sticks": ["usbstick-2008"]}}})
    with pytest.raises(config.ConfigError, match=r"^pagein\.colour: unknown key \(here: "):
        config.validate({"profile": "quick", "pagein": {"colour": 1}})
    for experiment in ("readyboost", "payoff", "crystalmark"):  # retired, with no successor
        with pytest.raises(config.ConfigError, match=rf"^{experiment}\.tier_profile: retired, no longer a setting "
                                                     r"\(config/renames\.yaml\)$"):
            config.validate({"profile": "quick", experiment: {"tier_profile": "tiered-readyboost"}})


@pytest.mark.parametrize("name,experiment", [
    case for profile in ("quick", "full", "seed")
    for case in recorded_params(["readyboost", "payoff", "crystalmark"],
                                f"{REFERENCE_RECORDING.split('/')[0]}/{profile}", with_recording=True)])
def test_a_recorded_tier_profile_is_read_as_the_tier_model_it_ran_on(name, experiment):
    """A recording keeps its tier_profile (the file is not rewritten; one made since has
    none); it names the one tier model, so the block is read without it, and the tier it ran
    on is the model with the block's disk and stick: crystalmark's recorded stick, payoff's
    cells' sticks, and for readyboost (no stick setting then) the model's own stick, which is
    readyboost's cache_profile default."""
    import json

    from pagelab.data import recording
    from pagelab.run import devices

    src = recording.recorded_dir() / name / experiment
    raw = json.loads((src / "config.json").read_text())
    old = "tier_profile" in raw          # recorded before the key was retired
    assert raw.get("tier_profile", config.TIER_MODEL) == config.TIER_MODEL, raw["tier_profile"]
    block = recording.check_run(src.parent, [experiment], recording.REQUIRED)[experiment]
    assert "tier_profile" not in block
    filled = config.check_block(experiment, block, machine=False)
    assert "tier_profile" not in filled and config.tier_of(filled) == [config.TIER_MODEL]
    model_stick = devices.profile_value(config.TIER_MODEL, "cache_profile")
    if experiment == "readyboost":
        assert ("cache_profile" not in raw) == old and filled["cache_profile"] == model_stick
    if experiment == "crystalmark":
        assert filled["cache_profile"] == raw["tier_cache_profile" if old else "cache_profile"]


def test_a_key_added_to_a_profile_hashes_as_the_block_without_it_at_its_old_value():
    """config/renames.yaml's `added`: each key a profile gained is a setting of that profile (or of
    the whole block, which every profile has) whose schema default is the value the runs made
    without it had, so a block of that profile holding it hashes as the block without it (a run
    made before is no changed config); another value changes the hash, and a profile that always
    set the key (readyboost's seed, retouch_order) keeps it in."""
    schema = config.load_schema()
    checked = 0
    for experiment, parts in config.renames().items():
        block_props = schema["properties"][experiment]["properties"]
        for profile, keys in parts["added"].items():
            default = config.resolve(config.validate({"profile": profile}))[experiment]
            for key, value in keys.items():
                in_profile = key in config.profile_keys(schema, experiment, profile)
                assert in_profile or key in block_props, (experiment, profile, key)
                assert default["profile"] == profile and default[key] == value, (experiment, profile, key)
                without = {k: v for k, v in default.items() if k != key}
                assert config.run_hash(experiment, default) == config.run_hash(experiment, without)
                prop = (schema["definitions"][f"{experiment}_profile"]["properties"] if in_profile
                        else block_props)[key]
                other = (not value) if prop.get("type") == "boolean" else next(v for v in prop["enum"] if v != value)
                assert config.run_hash(experiment, {**default, key: other}) != config.run_hash(experiment, default)
                checked += 1
    assert checked >= 5  # readyboost's retouch_order in quick and full, split_between_hosts in all three
    seed = config.resolve(config.validate({"profile": "seed"}))["readyboost"]
    assert seed["retouch_order"] == "seq"
    assert "retouch_order" not in config.renames()["readyboost"]["added"].get("seed", {})
    assert config.run_hash("readyboost", seed) != config.run_hash(
        "readyboost", {k: v for k, v in seed.items() if k != "retouch_order"})


# the quick recording predates the key (full was re-recorded with it in its config.json)
@pytest.mark.parametrize("name,experiment", recorded_params(
    ["readyboost"], f"{REFERENCE_RECORDING.split('/')[0]}/quick", with_recording=True))
def test_a_recording_made_without_retouch_order_reads_it_as_seq_and_hashes_as_before(tmp_path, name, experiment):
    """A quick or full readyboost recording made before those profiles set retouch_order keeps
    its config.json without it (the file is not rewritten). Read (make PROFILE=recorded's check,
    `pagelab trial`'s block, the notebooks) it is seq, the order it ran in, and its run hash is
    the hash of the block the schema filled before, without the key: not a changed config."""
    import json

    from pagelab.data import recording
    from pagelab.experiments import harness, recovery

    src = recording.recorded_dir() / name / experiment
    raw = json.loads((src / "config.json").read_text())
    assert "retouch_order" not in raw and raw["profile"] in ("quick", "full")
    block = recording.check_run(src.parent, [experiment], recording.REQUIRED)[experiment]
    assert block["retouch_order"] == "seq"
    filled = config.check_block(experiment, block, machine=False)
    assert filled["retouch_order"] == "seq" and recovery.design(filled).retouch_order == "seq"
    also = sorted(json.loads((src / "provenance.json").read_text()).get("device_profiles") or {})
    before = {k: v for k, v in filled.items() if k != "retouch_order"}  # what the schema filled without it
    assert config.run_hash(experiment, filled, also=also) == config.run_hash(experiment, before, also=also)
    # the notebooks read the recorded config.json as it is, under today's names
    out = tmp_path / experiment
    out.mkdir()
    (out / "config.json").write_text((src / "config.json").read_text())
    assert harness.read_json(out, "config.json")["retouch_order"] == "seq"


# the recordings made under the old names (full's were all re-recorded under today's)
@pytest.mark.parametrize("name,experiment", [
    case for profile, names in (("quick", ["payoff", "pagein", "seekmodel"]),)
    for case in recorded_params(names, f"{REFERENCE_RECORDING.split('/')[0]}/{profile}", with_recording=True)])
def test_a_recordings_old_names_are_read_under_the_new_ones(tmp_path, name, experiment):
    """A recording keeps its columns' and keys' old names (the files are not rewritten); replayed,
    and read as the notebooks read it, they are today's (config/renames.yaml)."""
    import csv
    import gzip
    import json

    from pagelab.data import recording
    from pagelab.experiments import harness

    src = recording.recorded_dir() / name / experiment
    old_cols = next(csv.reader([(src / "trials.csv").read_text().partition("\n")[0]]))
    parts = config.renames()[experiment]
    renamed = {o: n for o, n in parts["columns"].items() if o in old_cols}
    assert renamed, f"{src}: holds none of the old columns {sorted(parts['columns'])}: nothing to test"
    out = tmp_path / experiment
    recording.replay(src.parent, experiment, out)
    (out / "config.json").write_text((src / "config.json").read_text())  # as `pagelab claims recorded` does
    res = harness.open_results(out)
    for old, new in renamed.items():
        assert new in res.trials.columns and old not in res.trials.columns, (old, new)
        raw = [r[old] for r in csv.DictReader(open(src / "trials.csv"))]
        mine = [r[new] for r in csv.DictReader(open(out / "trials.csv"))]
        assert mine == raw  # the values as recorded, under the new name
    for old, new in parts["config"].items():
        assert old in json.loads((src / "config.json").read_text())  # the recording keeps its own
        assert (new is None or new in res.cfg) and old not in res.cfg  # None: retired, read without it
    with gzip.open(src / "trials.jsonl.gz", "rt") as fh:
        first = json.loads(fh.readline())
    mine = json.loads((out / "trials" / f"{first['trial_id']}.json").read_text())
    from pagelab.run.timing import read_records

    # a fleet plan's durations, read from the recording itself
    timed = [r for r in read_records(src) if r["trial_id"] == first["trial_id"]]
    for old, new in parts["columns"].items():
        if old in first["params"]:
            assert mine["params"][new] == first["params"][old] and old not in mine["params"]
            assert timed[0]["params"][new] == first["params"][old] and old not in timed[0]["params"]
    # the experiment's own configurations read the recorded block under the new names
    confs = harness.descriptor(experiment).configurations(res.cfg)
    assert confs and all(set(c) <= set(res.trials.columns) for c in confs)
