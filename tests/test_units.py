import pytest

from pagelab.units import format_size, parse_duration, parse_size


@pytest.mark.parametrize("text,expected", [
    ("4096", 4096), (4096, 4096), ("4K", 4096), ("64k", 65536), ("256M", 256 << 20),
    ("1G", 1 << 30), ("2T", 2 << 40), ("64KiB", 65536),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["", "K", "1.5M", "-4K", "4X", True, -1])
def test_parse_size_rejects(bad):
    with pytest.raises(ValueError, match="size"):
        parse_size(bad)


@pytest.mark.parametrize("text,expected", [
    ("1s", 1.0), ("200ms", 0.2), ("1.5", 1.5), (2, 2.0), ("10us", 1e-5), ("2m", 120.0),
])
def test_parse_duration(text, expected):
    assert parse_duration(text) == pytest.approx(expected)


@pytest.mark.parametrize("bad", ["soon", "1 day", "-1s", False])
def test_parse_duration_rejects(bad):
    with pytest.raises(ValueError, match="duration"):
        parse_duration(bad)


def test_format_size_round_trips():
    for n in (512, 4096, 65536, 1 << 20, 3 << 30, 1000):
        assert parse_size(format_size(n)) == n
    assert format_size(65536) == "64K"
    assert format_size(1 << 20) == "1M"
