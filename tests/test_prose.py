"""The compact comparison sentence: the interval without how it was made, which a section says
once for all its comparisons."""

import math
import re
from pathlib import Path

from pagelab.core.prose import comparison_rows, finding, ratio_sentence
from pagelab.core.stats import Estimate


def test_the_compact_sentence_keeps_the_interval_and_the_words_from_the_data():
    e = Estimate(0.36, 0.29, 0.43, 5, "paired ratio, order statistics", 0.9375)
    text = ratio_sentence(e, "it took", "as long as that", "slower", "faster", "it was", compact=True)
    assert text == "it took 0.360 times as long as that (93.75\\,\\% CI 0.290--0.430): it was faster"
    straddles = Estimate(1.02, 0.97, 1.08, 5, "paired ratio, order statistics", 0.9375)
    assert ratio_sentence(straddles, "a", "b", "slower", "faster", "it was", compact=True).endswith(
        "(93.75\\,\\% CI 0.970--1.08): the interval contains 1, so no difference is shown")
    assert "paired rounds" in ratio_sentence(e, "it took", "as long as that", "slower", "faster", "it was")


# --------------------------------------------------------------------------- the paper's sections
SECTIONS = Path(__file__).resolve().parents[1] / "paper" / "sections"
# a macro that holds a generated sentence: \ReadyboostLittleSentence, \PayoffAxesSentence, ...
_SENTENCE = r"\\[A-Za-z]+(?:Sentences?|Verdict)\b(?:\{\})?"
# a generated sentence that does not end its own sentence: a semicolon strings the next one on
_CHAIN = re.compile(rf"{_SENTENCE}\s*;")


def results_blocks(text: str) -> list[str]:
    """The text between '% begin results' and '% end results', comments removed."""
    body = "\n".join(line if line.strip() in ("% begin results", "% end results")
                     else re.sub(r"(?<!\\)%.*", "", line) for line in text.splitlines())
    return re.findall(r"% begin results\n(.*?)% end results", body, re.S)


def chains(text: str) -> list[str]:
    """Generated sentences strung together with semicolons inside a results block."""
    return [m.group(0) for block in results_blocks(text) for m in _CHAIN.finditer(block)]


def test_a_chain_of_generated_sentences_is_caught():
    planted = ("% begin results\nPer round, \\ReadyboostLittleSentence; \\ReadyboostEnoughSentence.\n"
               "Then \\PayoffSsdSentence{}; and \\PayoffFastStickSentence.\n% end results\n")
    assert chains(planted) == ["\\ReadyboostLittleSentence;", "\\PayoffSsdSentence{};"]
    one_per_line = ("% begin results\n\\begin{itemize}\n\\item Little: \\ReadyboostLittleSentence.\n"
                    "\\item Enough: \\ReadyboostEnoughSentence.\n\\end{itemize}\n% end results\n")
    assert chains(one_per_line) == []
    assert chains("Outside a block \\ReadyboostLittleSentence; \\ReadyboostEnoughSentence.\n") == []


def test_no_results_block_chains_generated_sentences():
    found = {p.name: chains(p.read_text()) for p in sorted(SECTIONS.glob("*.tex"))}
    assert {k: v for k, v in found.items() if v} == {}


def test_the_verdict_summary_is_said_once_and_the_findings_in_words_open_and_close():
    """The counts of every verdict appear once (the claims section); the abstract and the
    conclusion say in generated words which claims held, and what came of each seed's
    explanation, never the summary again."""
    uses = {p.name: len(re.findall(r"\\VerdictSummary\b", p.read_text())) for p in SECTIONS.glob("*.tex")}
    assert sum(uses.values()) == 1 and uses["claims.tex"] == 1, uses
    for name in ("abstract.tex", "conclusion.tex"):
        blocks = "".join(results_blocks((SECTIONS / name).read_text()))
        # which claims held, and what came of each seed's explanation: seed 000's factorial, seed
        # 003's reused file behind the flash tier, seed 004's flood after the trim
        for macro in ("VerdictFindings", "ReadyboostExplanationVerdict", "CrystalmarkTierSentence",
                      "StandbyFloodedVsTrimOnlySentence"):
            assert f"\\{macro}" in blocks, (name, macro)
    assert "Five" not in (SECTIONS / "abstract.tex").read_text()
    assert "\\VerdictsSources" in (SECTIONS / "abstract.tex").read_text()


def test_a_finding_is_words_and_its_numbers_are_a_table_row():
    faster = Estimate(0.36, 0.29, 0.43, 5, "paired ratio, order statistics", 0.9375)
    slower = Estimate(2.0, 1.5, 2.5, 5, "paired ratio, order statistics", 0.9375)
    straddles = Estimate(1.02, 0.97, 1.08, 5, "paired ratio, order statistics", 0.9375)
    words = ("On zram, recovery was", "slower", "faster", "than on the bare disk")
    assert finding(faster, *words) == "On zram, recovery was faster than on the bare disk"
    assert finding(slower, *words) == "On zram, recovery was slower than on the bare disk"
    assert finding(straddles, *words) == "On zram, recovery was not shown to be slower or faster than on the bare disk"
    assert not re.search(r"\d", finding(faster, *words))
    censored = Estimate(0.0, -math.inf, 1.2, 5, "paired ratio, censored", 0.9375, censored=4)
    rows = comparison_rows([("zram / bare", faster, ""), ("tier / bare", censored, "met at the start"),
                            ("zswap / bare", None, "")]).splitlines()
    assert rows[0] == "zram / bare & 0.360 & 0.290--0.430 (93.75\\,\\%) & 5 \\\\"
    assert rows[1] == ("tier / bare & \\multicolumn{2}{l}{not measurable (4 of 5 censored: met at the start)} "
                       "& 5 \\\\")   # never a median of censored rounds
    assert rows[2] == "zswap / bare & \\multicolumn{3}{l}{no round had both arms} \\\\"
