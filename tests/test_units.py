import pytest

from pagelab.core.units import format_size, parse_duration, parse_size


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


@pytest.mark.parametrize("text", ["4096", "4K", "64k", "256M", "1G", "2T", "64KiB", "64 KB", "1 kb", "4B"])
def test_parse_size_is_humanfriendlys_binary_reading(text):
    import humanfriendly

    assert parse_size(text) == humanfriendly.parse_size(text, binary=True)


@pytest.mark.parametrize("text", ["1.5M", "0.5G", "1P", "2 megabytes", "4iB"])
def test_parse_size_refuses_what_the_native_tools_refuse_though_humanfriendly_reads_it(text):
    """humanfriendly reads fractions, petabytes and words; the native option parser (and so
    this one) takes a whole number of B, K, M, G or T only."""
    with pytest.raises(ValueError, match="size"):
        parse_size(text)
