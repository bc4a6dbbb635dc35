"""The device profiles taken from datasheets and reviews (config/devices/, docs/devices.md):
each loads, `simdisk model` gives the figures its sources give within 5 %, and `simdisk qualify`
passes or fails it as its class says. The figures below are written from the sources, not
read from the profiles, so a profile edited away from its source fails here."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DEVICES = REPO / "config" / "devices"
MB = 1e6
TOLERANCE = 0.05

# profile -> [(what, simdisk model arguments, field of its JSON, the source's figure)]
# field "mb_s": bw_bytes in MB/s; "ms": mean_service_ms; "seek_ms"/"rotation_ms": components.
# Flash and SSD sequential figures are sustained rates: 16 MiB requests, whose fixed latency is
# negligible; the disks stream 1 MiB reads at their zone's rate.
FIGURES = {
    "hdd4200-2007": [
        ("average latency, 4200 rpm (Travelstar 4K120)", ("randread", "4k"), "rotation_ms", 60e3 / 4200 / 2),
        ("average read seek (Travelstar 5K160)", ("randread", "4k"), "seek_ms", 11.0),
        ("outer-zone sequential read (50 MB/s x 4200/5400)", ("read", "1M"), "mb_s", 38.9),
    ],
    "hdd7200-2007": [
        ("average latency, 7200 rpm (Deskstar 7K500)", ("randread", "4k"), "rotation_ms", 60e3 / 7200 / 2),
        ("average read seek (Deskstar 7K500)", ("randread", "4k"), "seek_ms", 8.5),
        ("zone 0 sustained read (Deskstar 7K500 table 10)", ("read", "1M"), "mb_s", 64.8),
        ("zone 29 sustained read (Deskstar 7K500 table 10)", ("read", "1M", "--offset", "499000000000"), "mb_s",
         31.0),
    ],
    "ssd-x25m-2008": [
        ("sequential read (Intel X25-M)", ("read", "16M"), "mb_s", 250),
        ("sequential write (Intel X25-M)", ("write", "16M"), "mb_s", 70),
        ("read latency (Intel X25-M)", ("randread", "512"), "ms", 0.085),
        ("write latency (Intel X25-M)", ("randwrite", "512"), "ms", 0.115),
    ],
    "usbstick-slow-2007": [
        ("sequential read (Kingston DataTraveler, Check Flash)", ("read", "16M"), "mb_s", 13.9),
        ("sequential write on FAT (Kingston DataTraveler, Check Flash)", ("write", "16M"), "mb_s", 1.2),
    ],
    "usbstick-enhanced-2008": [
        ("sequential read (Cruzer Micro, HD Tach)", ("read", "16M"), "mb_s", 28),
        ("4 KB random read (Enhanced for ReadyBoost)", ("randread", "4k", "--span", "1G"), "mb_s", 5.0),
        ("512 KB random write (Enhanced for ReadyBoost)", ("randwrite", "512k", "--span", "1G"), "mb_s", 3.0),
    ],
    "usbstick3-2012": [
        ("sequential read (SanDisk Extreme USB 3.0)", ("read", "16M"), "mb_s", 245),
        ("sequential write (SanDisk Extreme USB 3.0)", ("write", "16M"), "mb_s", 190),
    ],
}

# ReadyBoost's device test: what each stick's class says it must give.
CLASSES = {"usbstick-slow-2007": "fails", "usbstick-enhanced-2008": "enhanced", "usbstick3-2012": "enhanced"}


@pytest.fixture(scope="module")
def simdisk(native_build: Path) -> Path:
    return native_build / "simdisk"


def model(simdisk: Path, profile: str, rw: str, bs: str, *extra: str) -> dict:
    done = subprocess.run([str(simdisk), "model", "--profile", profile, "--rw", rw, "--bs", bs, *extra,
                           "--output-format", "json"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def figure(doc: dict, field: str) -> float:
    if field == "mb_s":
        return doc["bw_bytes"] / MB
    if field == "ms":
        return doc["mean_service_ms"]
    return doc["components_ns"][field.removesuffix("_ms")] / 1e6


CASES = [(p, *f) for p, figures in FIGURES.items() for f in figures]


@pytest.mark.parametrize("profile,what,args,field,source", CASES, ids=[f"{c[0]}: {c[1]}" for c in CASES])
def test_the_model_gives_the_sources_figures(simdisk: Path, profile: str, what: str, args: tuple,
                                             field: str, source: float) -> None:
    got = figure(model(simdisk, profile, *args), field)
    assert got == pytest.approx(source, rel=TOLERANCE), (profile, what, got, source)


@pytest.mark.parametrize("profile,cls", CLASSES.items())
def test_readyboosts_device_test_judges_each_stick_as_its_class_says(simdisk: Path, profile: str, cls: str) -> None:
    done = subprocess.run([str(simdisk), "qualify", "--profile", profile, "--output-format", "json"],
                          capture_output=True, text=True, timeout=120)
    doc = json.loads(done.stdout)
    assert done.returncode == (1 if cls == "fails" else 0), done.stderr
    assert doc["readyboost"] is (cls != "fails")
    assert doc["enhanced"] is (cls == "enhanced")


@pytest.mark.parametrize("profile", sorted(FIGURES))
def test_every_profile_cites_sources_the_paper_lists(profile: str) -> None:
    text = (DEVICES / f"{profile}.yaml").read_text()
    doc = yaml.safe_load(text)
    comments = "\n".join(line for line in text.splitlines() if line.startswith("#"))
    cited = set(re.findall(r"\[([a-z0-9]+)\]", comments))
    bib = set(re.findall(r"^@\w+\{([^,]+),", (REPO / "paper" / "refs.bib").read_text(), re.M))
    assert cited and cited <= bib, (profile, cited - bib)
    for key in doc:
        if key not in ("model", "description"):
            assert key in comments, f"{profile}: {key} has no source in the comments"
