"""The native tools' option tables are the source of their command lines: every tool prints the
table it parses (`--describe-options`), pagelab.run.tools builds each command line from it, and
each configuration key that sets an option is mapped to exactly one option whose default, where
both carry one, is the schema's (the real tools, built fresh)."""

from __future__ import annotations

import inspect
import json
import math
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from pagelab.core.units import parse_duration
from pagelab.run import tools
from pagelab.system.config import load_schema

FIELDS = {"name", "subcommand", "type", "unit", "default", "default_text", "required", "choices", "metavar",
          "help"}
UNITS = {"size": "bytes", "duration": "s"}


def describe(build: Path, *words: str) -> dict:
    done = subprocess.run([str(build / words[0]), *words[1:], "--describe-options"], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def help_rows(build: Path, tool: str, subcommand: str | None) -> set[str]:
    done = subprocess.run([str(build / tool), *filter(None, [subcommand]), "--help"], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    return {ln.split()[0][2:] for ln in done.stdout.splitlines() if ln.startswith("  --")}


@pytest.mark.parametrize("tool", tools.names())
def test_every_tool_describes_the_table_it_parses(native_build, tool):
    """One JSON document of every (sub)command's rows, each with its type and unit, its default
    parsed into that unit, and exactly the options --help lists (the same table)."""
    doc = describe(native_build, tool)
    assert doc["tool"] == tool and doc["options"]
    by_command = defaultdict(set)
    for row in doc["options"]:
        assert set(row) == FIELDS, row
        assert row["unit"] == UNITS.get(row["type"]), row
        assert row["help"], row
        by_command[row["subcommand"]].add(row["name"])
        if row["type"] == "flag":
            assert row["default"] is False
        elif row["default_text"] is None:
            assert row["default"] is None
        elif row["type"] == "duration":
            assert math.isclose(row["default"], parse_duration(row["default_text"]))
    for subcommand, names in by_command.items():
        assert help_rows(native_build, tool, subcommand) == names | {"help", "describe-options"}
        if subcommand:  # a subcommand describes its own rows alone, the same ones
            own = describe(native_build, tool, subcommand)
            assert own["tool"] == tool and {r["name"] for r in own["options"]} == names


def all_rows(build: Path) -> list[dict]:
    return [dict(row, tool=t) for t in tools.names() for row in describe(build, t)["options"]]


def test_one_name_per_meaning_across_the_tools(native_build):
    """A name means one kind of value in every tool (--size is always bytes, --runtime always a
    duration), the retired spellings are gone, and --seed is one shared row."""
    kinds = defaultdict(set)
    for row in all_rows(native_build):
        kinds[row["name"]].add(row["type"])
    assert {name: k for name, k in kinds.items() if len(k) > 1} == {}
    assert not {"bytes", "set-time", "time", "duration"} & set(kinds)
    seeds = [r for r in all_rows(native_build) if r["name"] == "seed"]
    assert len(seeds) >= 5 and len({(r["help"], r["default"], r["type"]) for r in seeds}) == 1


def schema_property(block: str, key: str) -> dict:
    """`block`'s key in the schema: a property of the block, or of its profiles' definition."""
    schema = load_schema()
    props = schema["properties"][block]["properties"]
    if key in props:
        return props[key]
    return schema["definitions"][f"{block}_profile"]["properties"][key]


@pytest.mark.parametrize("key", list(tools.SCHEMA_OPTIONS), ids=lambda k: ".".join(k))
def test_a_mapped_schema_key_names_a_real_option_with_the_same_default(native_build, key):
    """The key exists, names a real option, offers no value the option refuses (a list of levels:
    each level) and, where both carry a default, has the option's."""
    m = tools.SCHEMA_OPTIONS[key]
    prop = schema_property(*key)  # the key exists in the schema
    opt = tools.option(m.tool, m.subcommand, m.option)  # raises if the tool has no such option
    assert (prop.get("type") == "array") == m.levels, f"{'.'.join(key)}: a list of levels is mapped with levels=True"
    values = prop["items"] if m.levels else prop
    if "enum" in values:
        assert opt.choices and set(values["enum"]) <= set(opt.choices), (values["enum"], opt.choices)
    if "default" in prop and opt.default is not None and not m.levels:
        mine = tools.schema_value(opt, prop["default"], m.scale)
        assert (math.isclose(mine, opt.default) if isinstance(mine, float) else mine == opt.default), (
            f"{'.'.join(key)}: schema default {prop['default']!r} is {mine!r}, "
            f"{m.tool} --{m.option} defaults to {opt.default!r}")


def schema_defaults(key: tuple[str, str]) -> dict[str, object]:
    """`block`'s key as the schema fills it in each profile (a property's default or the
    profile's): profile -> value, None where the profile leaves it unset."""
    from pagelab.system import config

    block, name = key
    return {p: config.resolve(config.validate({"profile": p}))[block].get(name) for p in config.PROFILES}


# Options whose default stays in the tool's table although a schema key sets them too: a
# command meant to be run by hand, where a required option would be a burden (one line each).
BY_HAND_DEFAULTS = {
    ("iobench", "crystalmark", "size"): "CrystalMark 2004R2's own 128 MB test file, run by hand as it was",
    ("iobench", "crystalmark", "sets"): "CrystalMark 2004R2's own 3 sets per test, run by hand as it was",
    ("hog", "run", "rounds"): "one round of the memory hog, as one start of seed 000's hog program",
}


def test_a_default_is_written_once_in_the_schema_or_the_tool(native_build):
    """An option that a schema key with a schema default sets (in any profile, a list of levels
    too) has no default in the tool's table: the schema is its one home, and the harness always
    passes it. The only exceptions are the by-hand commands of BY_HAND_DEFAULTS, each still a
    default written twice (else the list is stale)."""
    twice = defaultdict(set)
    for key, m in tools.SCHEMA_OPTIONS.items():
        opt = tools.option(m.tool, m.subcommand, m.option)
        if opt.type != "flag" and opt.default is not None and any(
                v is not None for v in schema_defaults(key).values()):
            twice[(m.tool, m.subcommand, m.option)].add(".".join(key))
    offenders = {f"{' '.join(filter(None, o[:2]))} --{o[2]} (default {tools.option(*o).default!r}; "
                 f"schema {', '.join(sorted(keys))})" for o, keys in twice.items() if o not in BY_HAND_DEFAULTS}
    assert not offenders, "a default written twice, in the schema and the tool's table:\n" + "\n".join(
        sorted(offenders))
    assert set(BY_HAND_DEFAULTS) <= set(twice), f"stale exemptions: {set(BY_HAND_DEFAULTS) - set(twice)}"


def test_a_required_option_the_schema_sets_has_its_default_in_the_schema(native_build):
    """The schema is the one home of a value the harness always passes: superfetch's --poll,
    --group, --depth, --priority and --mode and hog victim's --order are required in the C
    table, with no default there (--describe-options: "required": true, "default": null), and
    each key that sets a required option has its default in the schema, in every profile, so
    the harness always has a value to pass."""
    required = set()
    for key, m in tools.SCHEMA_OPTIONS.items():
        opt = tools.option(m.tool, m.subcommand, m.option)
        if not opt.required:
            continue
        required.add((m.tool, m.subcommand, m.option))
        assert opt.default is None, f"{m.tool} --{m.option} is required and has a default {opt.default!r}"
        unset = sorted(p for p, v in schema_defaults(key).items() if v is None)
        assert not unset, f"{'.'.join(key)}: {m.tool} --{m.option} is required, the schema leaves it unset in {unset}"
    agent = {("superfetch", None, o) for o in ("poll", "group", "depth", "priority", "mode")}
    assert agent | {("hog", "victim", "order")} <= required
    for words, names in (((["superfetch"]), ("poll", "group", "depth", "priority", "mode")),
                         (["hog", "victim"], ("order",))):
        rows = {r["name"]: r for r in describe(native_build, *words)["options"]}
        for name in names:
            assert rows[name]["required"] is True and rows[name]["default"] is None, rows[name]


def test_a_command_line_without_a_required_option_is_refused(native_build, tmp_path):
    """A command line that lacks one of the options whose default is the schema's alone exits 2
    before anything runs, naming the missing option."""
    victim = tools.hog_victim_cmd(1 << 20, "zero", 1, tmp_path / "r", tmp_path / "g", retouch_order="seq")
    cut = victim.index("--order")
    agent = tools.superfetch_cmd(1, tmp_path, tmp_path / "go", tmp_path / "s", tmp_path / "r", tmp_path / "d",
                                 poll=0.05, group=1 << 17, depth=1, priority="low", mode="after")
    at = agent.index("--mode")
    for cmd, name in ((victim[:cut] + victim[cut + 2:], "order"), (agent[:at] + agent[at + 2:], "mode")):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        assert done.returncode == 2 and f"--{name}" in done.stderr, (cmd, done.returncode, done.stderr)
        assert not (tmp_path / "r").exists()


def option_names(mapping: dict[tuple[str, str], tools.SchemaOption]) -> dict[tuple, set[str]]:
    """Per option, the names the schema gives it: a key, or a list of levels' key less its
    plural s (pagein's retouch_orders is retouch_order's levels)."""
    names = defaultdict(set)
    for (_, key), m in mapping.items():
        names[(m.tool, m.subcommand, m.option)].add(key.removesuffix("s") if m.levels else key)
    return names


def test_no_two_schema_keys_set_one_option():
    """One name per option: the blocks that set an option (readyboost's and payoff's
    retouch_order, pagein's retouch_orders) use one name for it."""
    assert {t: keys for t, keys in option_names(tools.SCHEMA_OPTIONS).items() if len(keys) > 1} == {}
    both = {**tools.SCHEMA_OPTIONS, ("pagein", "access"): tools.SchemaOption("hog", "victim", "order")}
    assert option_names(both)[("hog", "victim", "order")] == {"retouch_order", "access"}  # what it refuses


def test_the_access_order_and_the_agents_mode_reach_their_flags(native_build):
    """The one schema name of each (retouch_order, agent_mode) reaches hog victim --order and
    superfetch --mode through the harness's builders."""
    from pagelab.experiments import pagein, payoff, recovery
    from pagelab.system import config

    cfg = config.resolve(config.validate({"profile": "quick", "pagein": {"retouch_orders": ["random"]}}))
    conf = pagein.configurations(cfg["pagein"])[0]
    cmd = tools.hog_victim_cmd(4096, "zero", 1, Path("r"), Path("g"), retouch_order=conf["retouch_order"])
    assert cmd[cmd.index("--order") + 1] == "random"
    assert recovery.design({"ram": "24M", "retouch_order": "random"}).retouch_order == "random"
    for profile in config.PROFILES:  # every readyboost profile sets it: the schema's value reaches --order
        block = config.resolve(config.validate({"profile": profile}))["readyboost"]
        d = recovery.design(block)
        cmd = tools.hog_victim_cmd(4096, "zero", 1, Path("r"), Path("g"), retouch_order=d.retouch_order)
        assert block["retouch_order"] == d.retouch_order == cmd[cmd.index("--order") + 1] == "seq", profile
    with pytest.raises(KeyError, match="retouch_order"):  # no value of the code's own behind the schema's
        recovery.design({"ram": "24M"})
    cell = payoff.design_cells(cfg["payoff"])[0]
    assert payoff.cell_design(cfg["payoff"], cell).retouch_order == cfg["payoff"]["retouch_order"] == "seq"
    assert payoff.readyboost_arm(cell, "tier") == f"tier_{cell.agent_mode}"
    assert recovery.ARM[payoff.readyboost_arm(cell, "tier")].agent_mode == cell.agent_mode
    cmd = tools.superfetch_cmd(1, Path("/cg"), Path("go"), Path("s"), Path("r"), Path("d"), mode=cell.agent_mode)
    assert cmd[cmd.index("--mode") + 1] == cell.agent_mode


def test_the_agents_settings_reach_its_command_line_from_the_schema(native_build):
    """agent_group and agent_poll_ms, from the schema's defaults to superfetch's flags: the
    schema's 128K and 50 ms, as the one grammar spells them; a value left unset is left off."""
    from pagelab.experiments import recovery
    from pagelab.system import config

    cfg = config.resolve(config.validate({"profile": "quick"}))["readyboost"]
    opts = recovery.agent_options(cfg)
    cmd = tools.superfetch_cmd(1, Path("/cg"), Path("go"), Path("stop"), Path("ready"), Path("done"), **opts)
    assert cmd[cmd.index("--group") + 1] == "131072" and cmd[cmd.index("--poll") + 1] == "50ms"
    assert "--max-rate" not in cmd  # unset in the schema: the tool's own "no cap"
    changed = recovery.agent_options({**cfg, "agent_poll_ms": 20, "agent_group": "2M", "agent_max_rate": "1M"})
    cmd = tools.superfetch_cmd(1, Path("/cg"), Path("go"), Path("stop"), Path("ready"), Path("done"), **changed)
    assert cmd[cmd.index("--poll") + 1] == "20ms" and cmd[cmd.index("--group") + 1] == str(2 << 20)
    assert cmd[cmd.index("--max-rate") + 1] == str(1 << 20)


def test_command_refuses_what_the_table_would(native_build):
    with pytest.raises(tools.ToolError, match="hog run has no option --bogus"):
        tools.command("hog", "run", bogus=1)
    with pytest.raises(tools.ToolError, match="'sideways' is not one of seq, random"):
        tools.command("hog", "victim", order="sideways")
    with pytest.raises(tools.ToolError, match="--verify is a flag"):
        tools.command("hog", "victim", verify="yes")
    with pytest.raises(tools.ToolError, match="--runtime takes seconds"):
        tools.command("iobench", "job", runtime="5s")
    assert tools.command("iobench", "job", direct=False, count=None)[2:] == []


def repeated_defaults(builders: dict, other_meaning: frozenset = frozenset()) -> list[str]:
    """The keywords of `builders` (a function -> the (tool, subcommand) it runs) that are named
    like one of that command's options and default to a value: a default written again beside
    the tool's table. None (left off: the tool's default) and a flag's True or False (the
    caller's choice to pass it) are not defaults, nor is a (function, keyword) of
    `other_meaning`, which the function never passes to the tool."""
    out = []
    for fn, (tool, subcommand) in builders.items():
        for p in inspect.signature(fn).parameters.values():
            if (p.default is inspect.Parameter.empty or p.default is None or isinstance(p.default, bool)
                    or (fn, p.name) in other_meaning):
                continue
            if (subcommand, p.name.replace("_", "-")) in tools.options(tool):
                out.append(f"{fn.__qualname__}({p.name}={p.default!r}): {tool} {subcommand or ''} "
                           f"--{p.name.replace('_', '-')} has its default in its table")
    return out


def test_no_builder_writes_an_options_default_again(native_build):
    """The harness's builders and what calls them name a tool's option as a keyword without a
    default of their own: a value left unset is left off, so the tool's table holds the default
    (hog run --rounds: 1), or the schema does. The check sees one written again."""
    from pagelab.run import devices, superfetch, victim

    builders = {tools.hog_victim_cmd: ("hog", "victim"), tools.hog_run_cmd: ("hog", "run"),
                tools.cacheflood_cmd: ("cacheflood", None), tools.iobench_job_cmd: ("iobench", "job"),
                tools.iobench_crystalmark_cmd: ("iobench", "crystalmark"),
                tools.simdisk_mount_cmd: ("simdisk", "mount"), tools.simdisk_model_cmd: ("simdisk", "model"),
                tools.superfetch_cmd: ("superfetch", None), victim.push_out: ("hog", "run"),
                victim.Victim.__init__: ("hog", "victim"), superfetch.Agent: ("superfetch", None),
                devices.emulated_disk: ("simdisk", "mount"), devices.model: ("simdisk", "model")}
    # the harness's own wait for the victim, not hog victim --timeout (the victim's for --go)
    other_meaning = frozenset({(victim.Victim.__init__, "timeout")})
    assert repeated_defaults(builders, other_meaning) == []

    def again(cgroup, size, rounds=1, count=1):  # push_out as it was
        """A builder that writes hog run's default round count again."""

    assert repeated_defaults({again: ("hog", "run")}) == [
        "test_no_builder_writes_an_options_default_again.<locals>.again(rounds=1): hog run --rounds has its "
        "default in its table"]


@pytest.mark.parametrize(("seconds", "text"), [(0.05, "50ms"), (2, "2s"), (90, "90s"), (0.0001, "100us"),
                                               (1.5e-8, "15ns"), (0, "0s"), (0.2, "200ms")])
def test_durations_are_written_in_the_tools_grammar(seconds, text):
    assert tools.format_duration(seconds) == text
    assert math.isclose(parse_duration(text), seconds, abs_tol=1e-12)


def test_every_built_command_line_parses(native_build, tmp_path):
    """The command lines the harness builds are accepted by the tools' parsers as they are (each
    with --help appended: the parse runs, nothing else does)."""
    cmds = [tools.hog_victim_cmd(1 << 20, "zero", 1, tmp_path / "r", tmp_path / "g", retouch_order="random"),
            tools.hog_run_cmd(1 << 20, 2, tmp_path / "b", 2),
            tools.cacheflood_cmd(tmp_path, 1 << 20, 4096, seed=1, cold=True),
            tools.iobench_job_cmd(tmp_path / "f", "randread", 4096, runtime=0.25, seed=2, size=1 << 20),
            tools.iobench_crystalmark_cmd(tmp_path / "c", 3, size="16M", sets=1, runtime=0.2, tests="seq_read"),
            tools.superfetch_cmd(1, tmp_path, tmp_path / "go", tmp_path / "s", tmp_path / "r", tmp_path / "d",
                                 poll=0.02, group=1 << 17, depth=4, priority="normal", mode="between")]
    for cmd in cmds:
        done = subprocess.run([*cmd, "--help"], capture_output=True, text=True, timeout=30)
        assert done.returncode == 0 and done.stdout.startswith("usage: "), (cmd, done.stderr)


@pytest.mark.parametrize("ram", ["16M", "24M", "32M", "96M", "100M"])
def test_readyboosts_derived_sizes_are_whole_pages(ram):
    """A RAM the schema accepts whose third is not a whole number of pages (16M / 3) gives a working
    set and hogs of whole pages, which hog maps (it refuses any other size); a RAM whose third is
    (24M, 96M) keeps its exact third."""
    from pagelab.core.units import parse_size
    from pagelab.experiments import recovery

    d = recovery.design({"ram": ram, "retouch_order": "seq"})
    assert d.working_set % recovery.PAGE == 0 and d.hog % recovery.PAGE == 0 and d.hog == 2 * d.working_set
    assert parse_size(ram) // 3 - recovery.PAGE < d.working_set <= parse_size(ram) // 3
