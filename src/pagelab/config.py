"""Load, validate and resolve config/config.yaml.

Validation is snakemake.utils.validate against config/schema.yaml (the schema also holds the
defaults), so the pipeline and the `pagelab` command accept exactly the same configs.
Resolving applies the profile: each experiment block has `quick:` and `full:` sub-blocks, and
the one named by the top-level `profile` key is merged into the block.
Not for: running anything; this module only reads and checks.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import yaml

from pagelab.paths import root

PROFILES = ("quick", "full", "seed")
# Every experiment has a quick and a full block; `seed` (the seed articles' own scale, opt-in,
# about 40 min) exists where an experiment defines it, and falls back to quick elsewhere.
BASE_PROFILES = ("quick", "full")
# Counted trials per configuration before an interval may decide a verdict (issue 11): an
# order-statistic interval of the median needs 5 values to reach ~94 % coverage.
MIN_TRIALS = {"quick": 5, "full": 10, "seed": 5}


def default_config() -> Path:
    return root() / "config" / "config.yaml"


def schema_path() -> Path:
    return root() / "config" / "schema.yaml"


class ConfigError(ValueError):
    """A config that does not validate; the message names the offending key."""


def load_schema(path: Path | None = None) -> dict[str, Any]:
    """The schema: config/schema.yaml (the shared definitions and top-level keys) with every
    experiment's fragment, config/schema/<name>.yaml (its definitions and its block), merged in;
    a fragment may not redefine what another part defines."""
    path = Path(path or schema_path())
    with open(path) as fh:
        schema = yaml.safe_load(fh)
    for frag_path in sorted((path.parent / "schema").glob("*.yaml")) if path.parent.name == "config" else []:
        frag = yaml.safe_load(frag_path.read_text()) or {}
        for section in ("definitions", "properties"):
            for key, value in (frag.get(section) or {}).items():
                if key in schema.setdefault(section, {}):
                    raise ConfigError(f"{frag_path.name}: {section}.{key} is defined twice")
                schema[section][key] = value
    return schema


def merged_schema_file(schema: dict[str, Any] | None = None) -> Path:
    """The merged schema as one file, for snakemake.utils.validate (which takes a path):
    written once per content under the system's temporary directory."""
    import tempfile

    text = json.dumps(schema or load_schema(), sort_keys=True)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"pagelab-schema-{digest}.json"
    if not path.exists():
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(text)
        tmp.replace(path)
    return path


def experiments(schema: dict[str, Any] | None = None) -> list[str]:
    """Names of the experiments: the top-level blocks that carry quick/full profiles."""
    schema = schema or load_schema()
    names = []
    for name, sub in schema["properties"].items():
        props = sub.get("properties", {})
        if all(p in props for p in BASE_PROFILES):
            names.append(name)
    return names


_MSG_RE = re.compile(r"ValidationError: (.*)")
_PATH_RE = re.compile(r"On instance((?:\[[^\]]*\])*):")


def describe_error(text: str) -> str:
    """One line naming the key, from snakemake's validation message.

    'seekmodel.quick.trials: 'a' is not of type 'integer'', or for an unknown key
    'seekmodel.quick: unknown key: Additional properties ... ('bogus' was unexpected)'.
    """
    msg = _MSG_RE.search(text)
    path = _PATH_RE.search(text)
    what = msg.group(1).strip() if msg else text.strip().splitlines()[0]
    keys = re.findall(r"\['?([^'\]]*)'?\]", path.group(1)) if path else []
    where = ".".join(keys) if keys else "(top level)"
    if "Additional properties are not allowed" in what:
        what = "unknown key: " + what
    return f"{where}: {what}"


def validate(config: dict[str, Any], schema: Path | None = None) -> dict[str, Any]:
    """Validate in place (filling defaults) with snakemake.utils.validate; raise ConfigError.

    The message starts with the dotted key path, e.g. ``seekmodel.quick.trials: ...``, and an
    unknown key is named in it.
    """
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate as sm_validate

    try:
        sm_validate(config, str(schema or merged_schema_file()), set_default=True)
    except WorkflowError as exc:
        raise ConfigError(describe_error(str(exc))) from exc
    return config


def resolve(config: dict[str, Any], schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """A copy of a validated config with each experiment's active profile merged in.

    Each experiment block loses its quick/full sub-blocks and gains the chosen one's keys
    (over the schema's defaults for that profile) plus ``profile``.
    """
    schema = schema or load_schema()
    profile = config.get("profile", "quick")
    if profile not in PROFILES:
        raise ConfigError(f"profile: {profile!r} is not one of {list(PROFILES)}")
    out = copy.deepcopy(config)
    for name in experiments(schema):
        block = out.get(name, {})
        props = schema["properties"][name]["properties"]
        own = profile if profile in props or profile in block else "quick"
        prof_default = props.get(own, {}).get("default", {})
        chosen = {**prof_default, **block.get(own, {})}
        merged = {k: v for k, v in block.items() if k not in PROFILES}
        merged.update(chosen)
        merged["profile"] = profile
        n_min = merged.get("repetitions", {}).get("n_min", merged.get("trials"))
        if n_min is not None and n_min < MIN_TRIALS[profile]:
            key = "repetitions.n_min" if "repetitions" in merged else "trials"
            raise ConfigError(f"{name}.{own}.{key}: {n_min} is fewer than the {MIN_TRIALS[profile]} counted trials "
                              f"per configuration a verdict needs in the {profile} profile")
        out[name] = merged
    return out


def load(path: Path | str | None = None, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Read, override (top-level keys), validate and resolve a config file."""
    path = path or default_config()
    with open(path) as fh:
        config = yaml.safe_load(fh) or {}
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: the config must be a mapping, not {type(config).__name__}")
    config.update(overrides or {})
    validate(config)
    return check_resources(resolve(config))


HEADROOM = 1 << 30  # what the machine keeps for itself beyond an experiment's memory


def check_resources(config: dict[str, Any], mem_total: int | None = None) -> dict[str, Any]:
    """Checks that need the machine or the repository, on a resolved config: memory an
    experiment would confine to a cgroup must fit in MemTotal minus HEADROOM, and every device
    named must have a profile in config/devices/. Raises ConfigError naming the key."""
    from pagelab.units import parse_size

    if mem_total is None:
        from pagelab.provenance import mem_total_bytes

        mem_total = mem_total_bytes() or 0
    # Each experiment's descriptor names the keys whose sizes become memory cgroups or working
    # sets (their sum must leave the machine HEADROOM) and the keys that name device profiles.
    from pagelab.experiment import descriptor

    requires = {exp: descriptor(exp).requires for exp in experiments()}
    for exp, req in requires.items():
        keys = req.memory_keys
        if not keys:
            continue
        block = config.get(exp, {})
        total = sum(parse_size(block[k]) for k in keys if k in block)
        if mem_total and total > mem_total - HEADROOM:
            key = f"{exp}.{block.get('profile', 'quick')}.{keys[0]}"
            raise ConfigError(f"{key}: {total >> 20} MiB would not leave the machine 1 GiB "
                              f"(MemTotal {mem_total >> 20} MiB)")
    devices = {p.stem for p in (root() / "config" / "devices").glob("*.yaml")}
    for exp, req in requires.items():
        block = config.get(exp, {})
        for key in req.device_keys:
            value = block.get(key)
            names = value if isinstance(value, list) else [value] if value else []
            for name in names:
                if name != "own" and name not in devices:
                    raise ConfigError(f"{exp}.{key}: no device profile {name!r} in config/devices/ "
                                      f"(have: {', '.join(sorted(devices))})")
    return config


def config_hash(block: dict[str, Any]) -> str:
    """A short, stable hash of a (resolved) config block: canonical JSON, sha256, 16 hex digits."""
    canon = json.dumps(block, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canon.encode()).hexdigest()[:16]
