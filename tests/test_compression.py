"""compression: the codec arm (the compressor's own speed through a zram device with no swap),
its corpus, the validity of every arm, summaries with order-statistic CIs, the keys the claims
read, and sentences that follow the data. One test runs a small codec trial on the real kernel
(root, a free zram0)."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from pagelab.claims import registry
from pagelab.experiments import compression as cx
from pagelab.run import trials
from pagelab.system import state

MB = 1e6
PAGE = os.sysconf("SC_PAGE_SIZE")
WS = 64 << 20


def codec_result(**kw: object) -> dict:
    size = 64 << 20
    r = {"arm": "codec", "size": size, "written_bytes": size, "read_bytes": size, "stored_bytes": float(size),
         "compress_mbps": 500.0, "decompress_mbps": 1300.0, "achieved_ratio": 0.45}
    r.update(kw)
    return r


def swap_result(arm: str, **kw: object) -> dict:
    pages = WS // PAGE
    r = {"arm": arm, "working_set": WS, "zswpout": pages if arm == "zswap" else 0,
         "pswpout": pages if arm == "zram" else 0}
    r.update(kw)
    return r


def test_codec_trial_is_valid_when_the_device_holds_every_byte_both_ways() -> None:
    assert cx.validity({"arm": "codec"}, codec_result()) is None
    short = cx.validity({"arm": "codec"}, codec_result(read_bytes=32 << 20))
    assert short and "every byte both ways" in short
    lost = cx.validity({"arm": "codec"}, codec_result(stored_bytes=float(10 << 20)))
    assert lost and "mm_stat" in lost and "16%" in lost


@pytest.mark.parametrize(("arm", "counter"), [("zswap", "zswpout"), ("zram", "pswpout")])
def test_swap_arms_need_the_store_to_hold_the_trimmed_pages(arm: str, counter: str) -> None:
    pages = WS // PAGE
    assert cx.validity({"arm": arm}, swap_result(arm)) is None
    assert cx.validity({"arm": arm}, swap_result(arm, **{counter: int(0.9 * pages) + 1})) is None
    reason = cx.validity({"arm": arm}, swap_result(arm, **{counter: pages // 4}))
    assert reason and counter in reason and "25%" in reason and ">= 90%" in reason


def test_configurations_put_the_codec_on_zrams_compressors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cx.state, "zram_algorithms", lambda: ["lzo-rle", "lzo", "lz4"])
    monkeypatch.setattr(cx.state, "zswap_compressors", lambda: ["lzo", "deflate"])
    confs = cx.configurations({"arms": ["codec", "zswap"], "algorithms": "all", "fill_ratios": [0.5]})
    assert [cx.conf_name(c) for c in confs] == ["codec-lzo-rle", "codec-lzo", "codec-lz4", "zswap-lzo-r0.5",
                                                "zswap-deflate-r0.5"]
    with pytest.raises(ValueError, match="zstd not offered by zswap"):
        cx.configurations({"arms": ["zswap"], "algorithms": ["zstd"], "fill_ratios": [0.5]})


def test_corpus_is_real_files_in_sorted_order_without_bytecode(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "b").mkdir(parents=True)
    (src / "__pycache__").mkdir()
    (src / "a.py").write_bytes(b"A" * 3000)
    (src / "b" / "c.so").write_bytes(b"C" * 3000)
    (src / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"X" * 3000)
    (src / "z.pyc").write_bytes(b"Y" * 3000)
    first = cx.make_corpus(src, tmp_path / "corpus1", 4000)
    assert (tmp_path / "corpus1").read_bytes() == b"A" * 3000 + b"C" * 1000
    assert first["files"] == 2 and first["bytes"] == 4000 and len(first["sha256"]) == 64
    assert cx.make_corpus(src, tmp_path / "corpus2", 4000)["sha256"] == first["sha256"]
    with pytest.raises(trials.TrialFailed, match="holds only 6000 bytes"):
        cx.make_corpus(src, tmp_path / "corpus3", 10_000)


def frame(compress: dict[str, list[float]], decompress_factor: float = 2.5) -> pd.DataFrame:
    rows, order = [], 0
    n = len(next(iter(compress.values())))
    for i in range(n):
        for alg, vals in compress.items():
            rows.append({"arm": "codec", "algorithm": alg, "order": order, "compress_mbps": vals[i],
                         "decompress_mbps": vals[i] * decompress_factor, "achieved_ratio": 0.45})
            order += 1
    return pd.DataFrame(rows)


def test_summary_and_keys_the_claims_read() -> None:
    f = frame({"lzo": [500, 510, 520, 530, 540], "lz4": [600, 610, 620, 630, 640]})
    s = cx.summarise(f)
    lzo = s[s["algorithm"] == "lzo"].iloc[0]
    # n = 5: the order-statistic interval of the median is [min, max]
    assert (lzo["compress_mbps"], lzo["compress_mbps_lo"], lzo["compress_mbps_hi"]) == (520, 500, 540)
    meas = cx.measurements(s, 0.5, cx.ratios(f))
    claims = registry.load_claims().set_index("id")
    for cid in ("MC1", "MC3"):
        key = claims.loc[cid, "measurement"]
        assert key in meas, key
        assert set(meas[key]) == {"value", "ci_low", "ci_high", "unit", "n", "method"}
        assert meas[key]["n"] == 5 and meas[key]["unit"] == "MB/s"
    assert meas["compression.codec.lzo.decompress_mbps"]["value"] == pytest.approx(1300)
    r = meas["compression.ratio.codec.lz4.vs_lzo"]
    assert r["value"] == pytest.approx(620 / 520) and r["n"] == 5


def test_sentences_follow_the_data() -> None:
    cfg = {"working_set": "64M", "reference_ratio": 0.5, "codec_size": "64M", "codec_block": "64K"}

    def sentence(lz4: list[float], factor: float) -> dict[str, str]:
        f = frame({"lzo": [500, 510, 520, 530, 540], "lz4": lz4}, factor)
        return cx.macros(cx.summarise(f), cfg, "quick", None, cx.ratios(f))

    fast = sentence([600, 610, 620, 630, 640], 2.5)
    slow = sentence([400, 410, 420, 430, 440], 0.5)
    same = sentence([490, 530, 515, 545, 505], 2.5)
    assert fast["CompressionCodecVsLzoSentence"] == "Against lzo, lz4 compressed faster"
    assert slow["CompressionCodecVsLzoSentence"] == "Against lzo, lz4 compressed slower"
    assert same["CompressionCodecVsLzoSentence"] == "Against lzo, lz4 was not shown to compress faster or slower"
    assert fast["CompressionDecompressVsCompressSentence"] == ("Per trial, lzo's decompression was faster than its "
                                                               "compression")
    assert slow["CompressionDecompressVsCompressSentence"].endswith("decompression was slower than its compression")
    assert fast["CompressionComparisons"].splitlines()[1].startswith("lz4 / lzo: compression & ")


def test_a_recording_from_before_the_codec_arm_still_loads(tmp_path: Path) -> None:
    (tmp_path / "trials.csv").write_text(
        "trial_id,order,warmup,status,backend,algorithm,ratio,pageout_mbps,compress_mbps,pagein_mbps,"
        "achieved_ratio\n"
        "zram-lzo-r0.5-r00,1,False,ok,zram,lzo,0.5,600,600,900,0.5\n")
    f, skipped = cx.load(tmp_path)
    assert skipped is None and list(f["arm"]) == ["zram"]
    s = cx.summarise(f)
    assert "compression.zram.lzo.pagein_mbps" in cx.measurements(s, 0.5, cx.ratios(f))


def zram_free() -> bool:
    p = Path("/sys/block/zram0/disksize")
    return p.exists() and p.read_text().strip() == "0"


@pytest.mark.skipif(os.geteuid() != 0 or not zram_free(), reason="needs root and an unused zram0")
def test_codec_trial_on_the_kernel(tmp_path: Path, native_build: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A small real codec trial: the corpus goes through zram with no swap on it, is read back
    whole, mm_stat holds it, and zram0 is reset afterwards."""
    monkeypatch.setenv("PAGELAB_JOURNAL", str(tmp_path / "journal.jsonl"))
    corpus = tmp_path / "corpus"
    info = cx.make_corpus(cx.corpus_source({}), corpus, 1 << 20)
    cfg = {"codec_size": "1M", "codec_block": "64K"}
    t = trials.Trial("codec-lzo-r00", {"arm": "codec", "algorithm": "lzo"}, 0, 1)
    with state.session() as st:
        r = cx.run_codec_trial(st, cfg, t, corpus)
    assert info["bytes"] == 1 << 20
    assert cx.validity(t.params, r) is None, r
    assert r["compress_mbps"] > 0 and r["decompress_mbps"] > 0
    assert 0.1 < r["achieved_ratio"] < 0.9  # real files compress, but not to nothing
    assert "--data-file" in r["commands"]["write"]
    assert zram_free()


def test_the_highest_page_in_rate_names_the_stores_its_interval_does_not_beat() -> None:
    """The fastest store as swap is its median's; where another store's interval reaches the top
    one's, the sentence names it as not shown slower (the full recording: zram lz4 985 [958,
    1000] MB/s against zswap lzo-rle 984 [963, 992] at R = 0.5)."""
    cfg = {"working_set": "64M", "reference_ratio": 0.5, "codec_size": "64M", "codec_block": "64K"}

    def who(rows: list[tuple[str, str, float, float, float]]) -> str:
        summary = pd.DataFrame([{"arm": a, "algorithm": alg, "ratio": 0.5, "pagein_mbps": v, "pagein_mbps_lo": lo,
                                 "pagein_mbps_hi": hi, "achieved_ratio": 0.5, "n": 10, "rejected": 0}
                                for a, alg, v, lo, hi in rows])
        m = cx.macros(summary, cfg, "full", None)
        return m["CompressionBestPageinMBps"] + " " + m["CompressionBestPageinWho"]

    assert who([("zram", "lz4", 985, 958, 1000), ("zswap", "lzo-rle", 984, 963, 992),
                ("zswap", "deflate", 341, 337, 351)]) == \
        "985 zram lz4; not shown faster than zswap lzo-rle, whose intervals reach its"
    assert who([("zram", "lz4", 985, 958, 1000), ("zswap", "deflate", 341, 337, 351)]) == "985 zram lz4"
    assert who([("zram", "lz4", 985, 958, 1000), ("zswap", "lzo-rle", 984, 963, 992), ("zswap", "lzo", 977, 963, 988),
                ("zswap", "deflate", 341, 337, 351)]) == \
        "985 zram lz4; not shown faster than zswap lzo-rle and zswap lzo, whose intervals reach its"
