"""The native tools' shared output options: one `--output-format normal|json` whose default is
normal (a text summary, as fio's) in every tool, and one `--output FILE` that writes the report
whole or not at all (the real tools, on small real files)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

# (tool, subcommand words, arguments of a small, quick run) per report-writing command; the
# run's files are made by the `files` fixture below.
RUNS = {
    "iobench job": ["--file", "{data}", "--rw", "read", "--bs", "4K", "--count", "16"],
    "iobench crystalmark": ["--file", "{new}", "--size", "1M", "--sets", "1"],
    "hog run": ["--size", "1M", "--fill", "zero"],
    "hog victim": ["--size", "1M", "--fill", "zero", "--order", "seq"],
    "hog populate": ["--size", "1M"],
    "cacheflood": ["--files", "{data}", "--size", "64K"],
    "residency": ["{data}"],
}


@pytest.fixture
def files(disk_tmp: Path) -> dict[str, str]:
    data = disk_tmp / "data"
    data.write_bytes(os.urandom(1 << 20))
    return {"data": str(data), "new": str(disk_tmp / "crystalmark.dat")}


def run(build: Path, command: str, *args: str, files: dict[str, str] | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess[str]:
    tool, *sub = command.split()
    words = [w.format(**files) if files else w for w in args]
    return subprocess.run([str(build / tool), *sub, *words], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("command", list(RUNS))
def test_every_report_has_one_output_format_defaulting_to_normal_and_one_output(native_build, command):
    done = run(native_build, command, "--help")
    assert done.returncode == 0, done.stderr
    assert "[--output-format normal|json] [--output FILE]" in done.stdout.splitlines()[0]
    rows = {ln.split()[0]: ln for ln in done.stdout.splitlines() if ln.startswith("  --")}
    assert "--json" not in rows
    assert done.stdout.count("(default: normal)") == 1 and "--output-format normal|json" in done.stdout


@pytest.mark.parametrize("command", list(RUNS))
def test_the_default_report_is_text_and_json_is_asked_for(native_build, files, command):
    text = run(native_build, command, *RUNS[command], files=files)
    assert text.returncode == 0, text.stderr
    assert text.stdout.strip() and not text.stdout.lstrip().startswith("{")
    Path(files["new"]).unlink(missing_ok=True)
    doc = run(native_build, command, *RUNS[command], "--output-format", "json", files=files)
    assert doc.returncode == 0, doc.stderr
    assert isinstance(json.loads(doc.stdout), dict)  # the whole of stdout is the document


@pytest.mark.parametrize("command", list(RUNS))
def test_output_writes_the_whole_report_to_the_file(native_build, files, disk_tmp, command):
    out = disk_tmp / "report.json"
    done = run(native_build, command, *RUNS[command], "--output-format", "json", "--output", str(out), files=files)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert isinstance(json.loads(out.read_text()), dict)
    assert sorted(p.name for p in disk_tmp.iterdir() if p.name.startswith(".")) == []  # no temporary file left


@pytest.mark.parametrize("command", list(RUNS))
def test_output_in_a_missing_directory_is_bad_usage_and_makes_nothing(native_build, files, disk_tmp, command):
    out = disk_tmp / "no-such-dir" / "report.txt"
    done = run(native_build, command, *RUNS[command], "--output", str(out), files=files)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[0].endswith(f"--output {out}: No such file or directory")
    assert not out.parent.exists() and not Path(files["new"]).exists()


def test_a_failed_run_leaves_no_report(native_build, disk_tmp):
    """A job that fails after --output was opened leaves neither FILE nor its temporary file
    (an interrupted one: test_crystalmark.py's test_interrupted_run_removes_its_file)."""
    out = disk_tmp / "report.json"
    done = run(native_build, "iobench job", "--file", str(disk_tmp / "missing"), "--rw", "read", "--bs", "4K",
               "--output", str(out))
    assert done.returncode == 2
    assert sorted(p.name for p in disk_tmp.iterdir()) == []


def test_hog_dump_writes_its_bytes_through_output(native_build, disk_tmp):
    out = disk_tmp / "dump.bin"
    done = run(native_build, "hog dump", "--size", "1M", "--fill", "zero", "--output", str(out))
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == bytes(1 << 20)
    assert sorted(p.name for p in disk_tmp.iterdir()) == ["dump.bin"]
