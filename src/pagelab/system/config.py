"""Load, validate and resolve the configuration: config/config.yaml, and the resolved experiment
blocks that `pagelab trial` reads.

Validation is jsonschema against config/schema.yaml with every config/schema/<name>.yaml merged
in; the schema also holds the defaults, filled in as it validates. Every entry point goes through
`validate`: the pipeline (the Snakefile), `pagelab config`, `pagelab trial` (`check_block`, which
turns a resolved block back into the config it came from) and the fleet, so they accept exactly
the same settings, and a refusal is one ConfigError naming the key by jsonschema's own path.
Resolving applies the profile: each experiment block has `quick:` and `full:` sub-blocks, and
the one named by the top-level `profile` key is merged into the block.
Not for: running anything; this module only reads and checks.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError, best_match

from pagelab.core.paths import root
from pagelab.core.units import parse_size
from pagelab.system.provenance import mem_total_bytes

PROFILES = ("quick", "full", "seed")
# Every experiment has a quick and a full block; `seed` (the seed articles' own scale, opt-in,
# about 40 min) exists where an experiment defines it, and falls back to quick elsewhere.
BASE_PROFILES = ("quick", "full")
# Counted trials per configuration before an interval may decide a verdict: an order-statistic
# interval of the median needs 5 values to reach ~94 % coverage.
MIN_TRIALS = {"quick": 5, "full": 10, "seed": 5}
# Keys of a resolved block that are not the experiment's own settings: the shared scratch
# directory, and the recorded run a block replays (make PROFILE=recorded).
BLOCK_EXTRAS = ("scratch_dir", "recording")

Key = tuple[str | int, ...]


def default_config() -> Path:
    return root() / "config" / "config.yaml"


def schema_path() -> Path:
    return root() / "config" / "schema.yaml"


def dotted(key: Sequence[str | int]) -> str:
    """A key path as the messages spell it: seekmodel.quick.file_size, seekmodel.block_sizes[1]."""
    out = ""
    for part in key:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


class ConfigError(ValueError):
    """A setting that is refused (exit 2): one line naming the key, or the file.

    `key` is the path of the offending setting when there is one, `detail` what is wrong with
    it; str() is "key: detail"."""

    def __init__(self, detail: str, key: Sequence[str | int] | None = None) -> None:
        self.key: Key | None = tuple(key) if key else None
        self.detail = detail
        super().__init__(f"{dotted(self.key)}: {detail}" if self.key else detail)


# --------------------------------------------------------------------------- the schema
# The schema's own files are parsed with libyaml where PyYAML has it (the same documents, about
# eight times faster: every pagelab process and every Snakemake parse reads the schema first).
_SCHEMA_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.lru_cache(maxsize=4)
def _load_schema_files(files: tuple[tuple[str, int], ...]) -> dict[str, Any]:
    (main, _), *fragments = files
    schema = yaml.load(Path(main).read_text(), Loader=_SCHEMA_LOADER)
    for frag_path, _ in fragments:
        frag = yaml.load(Path(frag_path).read_text(), Loader=_SCHEMA_LOADER) or {}
        for section in ("definitions", "properties"):
            for key, value in (frag.get(section) or {}).items():
                if key in schema.setdefault(section, {}):
                    raise ConfigError(f"{Path(frag_path).name}: {section}.{key} is defined twice")
                schema[section][key] = value
    return schema


def load_schema(path: Path | None = None) -> dict[str, Any]:
    """The schema: config/schema.yaml (the shared definitions and top-level keys) with every
    experiment's fragment, config/schema/<name>.yaml (its definitions and its block), merged in;
    a fragment may not redefine what another part defines. Read once per content."""
    path = Path(path or schema_path())
    frags = sorted((path.parent / "schema").glob("*.yaml")) if path.parent.name == "config" else []
    files = tuple((str(p), p.stat().st_mtime_ns) for p in [path, *frags])
    return copy.deepcopy(_load_schema_files(files))


def experiments(schema: dict[str, Any] | None = None) -> list[str]:
    """Names of the experiments: the top-level blocks that carry quick/full profiles."""
    schema = schema or load_schema()
    names = []
    for name, sub in schema["properties"].items():
        props = sub.get("properties", {})
        if all(p in props for p in BASE_PROFILES):
            names.append(name)
    return names


def check_experiment(name: str, schema: dict[str, Any] | None = None) -> str:
    """`name` if it is an experiment; ConfigError listing the experiments otherwise."""
    known = experiments(schema)
    if name not in known:
        raise ConfigError(f"no experiment named {name!r} (the experiments: {', '.join(known)})")
    return name


def own_profile(schema: dict[str, Any], experiment: str, profile: str, block: dict[str, Any] | None = None) -> str:
    """The profile sub-block an experiment runs with: `profile` where it defines one (or the
    block gives one), quick otherwise (the seed profile of an experiment without a seed block)."""
    props = schema["properties"][experiment]["properties"]
    return profile if profile in props or profile in (block or {}) else "quick"


def profile_keys(schema: dict[str, Any], experiment: str, profile: str) -> set[str]:
    """The settings of an experiment's `profile` sub-block (its <name>_profile definition)."""
    props = schema["properties"][experiment]["properties"]
    sub = props.get(profile) or props["quick"]
    ref = sub.get("$ref", "")
    if ref.startswith("#/definitions/"):
        return set(schema["definitions"][ref.split("/")[-1]].get("properties", {}))
    return set(sub.get("properties", {}))


def resource_keys(schema: dict[str, Any], experiment: str, resource: str) -> tuple[str, ...]:
    """An experiment's settings whose schema says `resource: <resource>` (memory: a size that
    becomes a memory cgroup or a working set; device: device profile names), in schema order:
    its block's own settings, then its profiles' (the <name>_profile definition)."""
    block = schema["properties"][experiment].get("properties", {})
    keys = [k for k, sub in block.items() if k not in PROFILES and sub.get("resource") == resource]
    profile = schema["definitions"].get(f"{experiment}_profile", {}).get("properties", {})
    return tuple(keys + [k for k, sub in profile.items() if sub.get("resource") == resource])


# --------------------------------------------------------------------------- renames
def renames_path() -> Path:
    return root() / "config" / "renames.yaml"


@functools.cache
def renames() -> dict[str, dict[str, dict[str, Any]]]:
    """config/renames.yaml: per experiment, the old names of its settings (`config`) and of its
    trial columns (`columns`) -> their current names, or None for a name retired with no
    successor; and per profile, the settings its block gained with the value its runs had
    without them (`added`: profile -> {key: value})."""
    doc = yaml.safe_load(renames_path().read_text()) or {}
    return {exp: {part: dict(doc[exp].get(part) or {}) for part in ("config", "columns", "added")} for exp in doc}


def added_keys(experiment: str, profile: Any) -> dict[str, Any]:
    """The settings `profile`'s block of `experiment` gained after runs were made without them,
    each with the value those runs had (config/renames.yaml's `added`): key -> value."""
    added = renames().get(experiment, {}).get("added", {})
    return dict(added.get(profile) or {}) if isinstance(profile, str) else {}


def _renamed(mapping: dict[str, str | None], d: dict[str, Any]) -> dict[str, Any]:
    """`d` with each old key that `mapping` names under its new name (a key already under its
    new name stays as it is) and without the keys it retired (None), in `d`'s order."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if k not in mapping:
            out[k] = v
        elif mapping[k] is not None:
            out[mapping[k] if mapping[k] not in d else k] = v
    return out


def renamed_block(experiment: str, block: dict[str, Any]) -> dict[str, Any]:
    """A recorded config block under the current names: its old keys renamed, its profile
    sub-blocks' too, and a resolved block (one with its `profile`) given each setting its
    profile gained later with the value it ran with, where it lacks it (config/renames.yaml)."""
    if not isinstance(block, dict):
        return block
    mapping = renames().get(experiment, {}).get("config", {})
    if mapping:
        block = {k: (_renamed(mapping, v) if k in PROFILES and isinstance(v, dict) else v)
                 for k, v in _renamed(mapping, block).items()}
    lacking = {k: v for k, v in added_keys(experiment, block.get("profile")).items() if k not in block}
    return {**block, **copy.deepcopy(lacking)} if lacking else block


def renamed_columns(experiment: str, columns: Sequence[str]) -> list[str]:
    """A recorded trials table's columns under the current names (config/renames.yaml)."""
    mapping = renames().get(experiment, {}).get("columns", {})
    return [mapping[c] if mapping.get(c) and mapping[c] not in columns else c for c in columns]


def renamed_record(experiment: str, record: dict[str, Any]) -> dict[str, Any]:
    """A recorded trial record under the current names: its params' and result's keys."""
    mapping = renames().get(experiment, {}).get("columns", {})
    if not mapping:
        return record
    return {k: (_renamed(mapping, v) if k in ("params", "result") and isinstance(v, dict) else v)
            for k, v in record.items()}


# --------------------------------------------------------------------------- validation
def _max_bytes(validator: Any, limit: str | int, instance: Any, schema: dict[str, Any]) -> Iterator[Any]:
    """The schema keyword `maxBytes`: a size (see definitions.size) of at most `limit`."""
    if not (validator.is_type(instance, "string") or validator.is_type(instance, "integer")):
        return
    try:
        value = parse_size(instance)
    except ValueError:
        return  # the definition's pattern reports it
    if value > parse_size(limit):
        yield ValidationError(f"{instance!r} is more than {limit}, the most this setting can use")


@functools.lru_cache(maxsize=1)
def _validator_class() -> Any:
    """Draft 2020-12, filling each property's default as it validates (jsonschema's FAQ recipe,
    as Snakemake's validate does), plus the `maxBytes` keyword for sizes."""
    validate_properties = Draft202012Validator.VALIDATORS["properties"]

    def set_defaults(validator: Any, properties: dict[str, Any], instance: Any,
                     schema: dict[str, Any]) -> Iterator[Any]:
        if validator.is_type(instance, "object"):
            for prop, sub in properties.items():
                if "default" in sub:
                    instance.setdefault(prop, copy.deepcopy(sub["default"]))
        yield from validate_properties(validator, properties, instance, schema)

    return validators.extend(Draft202012Validator, {"properties": set_defaults, "maxBytes": _max_bytes})


def _refusal(error: Any) -> ConfigError:
    """jsonschema's error as one line: its path as the key, its message as what is wrong; an
    unknown key is named in the path, with the keys its block takes; a pattern the value does
    not match is explained by the schema's description of it."""
    key = tuple(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        unknown = sorted(k for k in error.instance if k not in allowed)
        if unknown:
            retired = renames().get(key[0], {}).get("config", {}) if key and isinstance(key[0], str) else {}
            if unknown[0] in retired:  # an old name: say today's, or that it is no setting now
                now = retired[unknown[0]]
                return ConfigError(f"renamed {now} (config/renames.yaml)" if now else
                                   "retired, no longer a setting (config/renames.yaml)", (*key, unknown[0]))
            takes = ", ".join(sorted(allowed)) or "nothing"
            return ConfigError(f"unknown key (here: {takes})", (*key, unknown[0]))
    detail = error.message
    if error.validator == "pattern" and error.schema.get("description"):
        detail = f"{error.instance!r} is not {error.schema['description']}"
    return ConfigError(detail, key)


def validate(config: dict[str, Any], schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """Validate in place (filling defaults); raise ConfigError with the key path, e.g.
    ``seekmodel.quick.repetitions.n_min: 2 is less than the minimum of 5``."""
    schema = schema or load_schema()
    error = best_match(_validator_class()(schema).iter_errors(config))
    if error is not None:
        raise _refusal(error)
    return config


def resolve(config: dict[str, Any], schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """A copy of a validated config with each experiment's active profile merged in.

    Each experiment block loses its quick/full sub-blocks and gains the chosen one's keys
    (over the schema's defaults for that profile) plus ``profile``.
    """
    schema = schema or load_schema()
    profile = config.get("profile", "quick")
    if profile not in PROFILES:
        raise ConfigError(f"{profile!r} is not one of {list(PROFILES)}", ("profile",))
    out = copy.deepcopy(config)
    # The profile's default under the config's own sub-block, validated again: a sub-block the
    # config gives in part (readyboost: {quick: {ram: 48M}}) then gets the nested defaults of
    # the keys it takes from the profile's default (repetitions' look interval, ...), as the
    # block `pagelab trial` checks does, so the two hash alike.
    probe: dict[str, Any] = {"profile": profile}
    owns = {name: own_profile(schema, name, profile, config.get(name, {})) for name in experiments(schema)}
    for name, own in owns.items():
        probe[name] = {own: {**schema["properties"][name]["properties"].get(own, {}).get("default", {}),
                             **copy.deepcopy(config.get(name, {}).get(own, {}))}}
    validate(probe, schema)
    for name, own in owns.items():
        block = out.get(name, {})
        chosen = probe[name][own]
        merged = {k: v for k, v in block.items() if k not in PROFILES}
        merged.update(chosen)
        merged["profile"] = profile
        n_min = merged.get("repetitions", {}).get("n_min")
        if n_min is not None and n_min < MIN_TRIALS[profile]:
            raise ConfigError(f"{n_min} is fewer than the {MIN_TRIALS[profile]} counted trials per configuration "
                              f"a verdict needs in the {profile} profile", (name, own, "repetitions", "n_min"))
        out[name] = merged
    return out


def read_document(path: Path | str, fmt: str = "JSON") -> Any:
    """The document in a JSON or YAML (`fmt`) file; ConfigError naming the file when it cannot
    be read or does not parse (with the line where the parser stopped)."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: {getattr(exc, 'strerror', None) or exc}") from exc
    try:
        return json.loads(text) if fmt == "JSON" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else getattr(exc, "lineno", None)
        what = getattr(exc, "problem", None) or getattr(exc, "msg", None) or exc
        raise ConfigError(f"{path}: not {fmt}{f' (line {line})' if line else ''}: {what}") from exc


def load(path: Path | str | None = None, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Read, override (top-level keys), validate and resolve a config file."""
    path = path or default_config()
    config = read_document(path, "YAML")
    config = {} if config is None else config
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: the config must be a mapping, not {type(config).__name__}")
    config.update(overrides or {})
    validate(config)
    return check_resources(resolve(config))


def check_block(experiment: str, block: Any, source: Path | str | None = None,
                machine: bool = True) -> dict[str, Any]:
    """A resolved experiment block (what `pagelab trial` reads: results/<name>/config.json),
    checked as the config it stands for: the block is put back into a config (the profile's
    settings into its sub-block), validated against the same schema and resolved, and, with
    `machine`, checked against this machine (check_resources). Returns the block with every
    default filled; a ConfigError names `source` and the key as the block spells it."""
    schema = load_schema()
    check_experiment(experiment, schema)
    where = f"{source}: " if source else ""
    if not isinstance(block, dict):
        raise ConfigError(f"{where}a config block must be a JSON object, not {type(block).__name__}")
    block = copy.deepcopy(block)
    extras = {k: block.pop(k) for k in BLOCK_EXTRAS if k in block}
    profile = block.pop("profile", "quick")
    raw: dict[str, Any] = {"profile": profile, experiment: {}}
    if "scratch_dir" in extras:
        raw["scratch_dir"] = extras["scratch_dir"]
    if "recording" in extras:
        raw["recording"] = extras["recording"]
    own = own_profile(schema, experiment, profile) if isinstance(profile, str) and profile in PROFILES else "quick"
    in_profile = profile_keys(schema, experiment, own)
    for key, value in block.items():
        if key in in_profile:
            raw[experiment].setdefault(own, {})[key] = value
        else:
            raw[experiment][key] = value
    try:
        validate(raw, schema)
        resolved = resolve(raw, schema)
        if machine:
            check_resources(resolved, only=[experiment])
    except ConfigError as exc:
        key = list(exc.key or ())
        if key[:1] == [experiment]:
            key = key[1:]
            if key[:1] == [own]:
                key = key[1:]
        raise ConfigError(f"{where}{dotted(key)}: {exc.detail}" if key else f"{where}{exc.detail}") from exc
    return {**resolved[experiment], **extras}


HEADROOM = 1 << 30  # what the machine keeps for itself beyond an experiment's memory


def check_resources(config: dict[str, Any], mem_total: int | None = None,
                    only: list[str] | None = None) -> dict[str, Any]:
    """Checks that need the machine or the repository, on a resolved config (of the experiments
    `only`, default all): memory an experiment would confine to a cgroup must fit in MemTotal
    minus HEADROOM, and every device named must have a profile in config/devices/. Raises
    ConfigError naming the key."""
    if mem_total is None:
        mem_total = mem_total_bytes() or 0
    schema = load_schema()
    exps = only or experiments(schema)
    for exp in exps:
        keys = resource_keys(schema, exp, "memory")
        if not keys:
            continue
        block = config.get(exp, {})
        total = sum(parse_size(block[k]) for k in keys if k in block)
        if mem_total and total > mem_total - HEADROOM:
            raise ConfigError(f"{total >> 20} MiB would not leave the machine 1 GiB (MemTotal {mem_total >> 20} MiB)",
                              (exp, own_profile(schema, exp, block.get("profile", "quick")), keys[0]))
    devices = {p.stem for p in (root() / "config" / "devices").glob("*.yaml")}
    for exp in exps:
        block = config.get(exp, {})
        own = own_profile(schema, exp, block.get("profile", "quick"))
        in_profile = profile_keys(schema, exp, own)
        for key in resource_keys(schema, exp, "device"):
            value = block.get(key)
            names = value if isinstance(value, list) else [value] if value else []
            for name in names:
                if name != "own" and name not in devices:
                    raise ConfigError(f"no device profile {name!r} in config/devices/ "
                                      f"(have: {', '.join(sorted(devices))})",
                                      (exp, own, key) if key in in_profile else (exp, key))
    return config


def config_hash(block: dict[str, Any]) -> str:
    """A short, stable hash of a (resolved) config block: canonical JSON, sha256, 16 hex digits."""
    canon = json.dumps(block, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canon.encode()).hexdigest()[:16]


def device_profiles(experiment: str, block: dict[str, Any], schema: dict[str, Any] | None = None,
                    also: Sequence[str] = ()) -> dict[str, str]:
    """The device profiles a resolved block runs on, each with a digest of its settings (sha256 of
    their canonical JSON, 16 hex digits: a comment does not count): the names its `resource:
    device` settings give, those in `also` (profiles the code runs it on that no setting names:
    the tier model, tier_of), and the profiles those name in turn (a tier's
    disk_profile and cache_profile). A name without a file (own) is left out."""
    schema = schema or load_schema()
    if experiment not in schema["properties"]:
        return {}
    folder = root() / "config" / "devices"
    todo: list[str] = list(also)
    for key in resource_keys(schema, experiment, "device"):
        value = block.get(key)
        todo += [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)]
    out: dict[str, str] = {}
    while todo:
        name = todo.pop()
        path = folder / f"{name}.yaml"
        if name in out or not path.is_file():
            continue
        doc = yaml.safe_load(path.read_text()) or {}
        out[name] = config_hash(doc)
        todo += [v for k, v in doc.items() if k.endswith("_profile") and isinstance(v, str)]
    return dict(sorted(out.items()))


def trial_block(experiment: str, raw: Any, source: Path | str | None = None,
                machine: bool = True) -> tuple[dict[str, Any], Path]:
    """The block `pagelab trial` runs with (check_block: checked whole, every default filled)
    and the scratch directory taken out of it; the run_hash of that block is what the run's
    provenance records, so a results directory is matched by it (run.progress.finished)."""
    block = check_block(experiment, raw, source=source, machine=machine)
    return block, Path(block.pop("scratch_dir", "scratch"))


# The ReadyBoost-like flash tier: its policy parameters (copy queue, sequential cutoff,
# compression, capacity) are this one tier model's; the disk and the stick behind it are the
# experiment's own disk_profile and cache_profile (payoff: each cell's), put in by
# pagelab.run.devices.tier_overrides.
TIER_MODEL = "tiered-readyboost"


def behind_tier(block: dict[str, Any]) -> bool:
    """Whether a block runs behind the flash tier: it names a stick (cache_profile, or payoff's
    cache_profiles), which is only ever the tier's cache."""
    return bool(block.get("cache_profile") or block.get("cache_profiles"))


def tier_of(block: dict[str, Any]) -> list[str]:
    """The device profiles a config block runs on that none of its settings names: the tier
    model, for a block behind the tier. What device_profiles and run_hash are given as `also`,
    by the harness and by the Snakefile, so that a changed tier re-runs the trials behind it."""
    return [TIER_MODEL] if behind_tier(block) else []


def run_hash(experiment: str, block: dict[str, Any], schema: dict[str, Any] | None = None,
             also: Sequence[str] = ()) -> str:
    """What a trial record is matched on when a run resumes: the config block's hash, with the
    device profiles it runs on (device_profiles, `also` among them). A changed profile makes the
    trials measured on the old one stale, so they are measured again; a block that names no
    device hashes as the block alone. A setting its profile gained later (added_keys) is left
    out while it holds the value the runs made without it had: such a run, and a recording of
    one, hashes as it did, and another value is a changed config."""
    added = added_keys(experiment, block.get("profile", "quick"))
    hashed = {k: v for k, v in block.items() if k not in added or v != added[k]}
    devices = device_profiles(experiment, block, schema, also)
    return config_hash({**hashed, "device_profiles": devices} if devices else hashed)
