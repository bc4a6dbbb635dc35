"""The compact comparison sentence: the interval without how it was made, which a section says
once for all its comparisons."""

from pagelab.core.prose import ratio_sentence
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
import re  # noqa: E402
from pathlib import Path  # noqa: E402

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
    conclusion say in generated words which claims held, and what came of seed 000's
    explanation, never the summary again."""
    uses = {p.name: len(re.findall(r"\\VerdictSummary\b", p.read_text())) for p in SECTIONS.glob("*.tex")}
    assert sum(uses.values()) == 1 and uses["claims.tex"] == 1, uses
    for name in ("abstract.tex", "conclusion.tex"):
        blocks = "".join(results_blocks((SECTIONS / name).read_text()))
        assert "\\VerdictFindings" in blocks and "\\ReadyboostExplanationVerdict" in blocks, name
    assert "Five" not in (SECTIONS / "abstract.tex").read_text()
    assert "\\VerdictsSources" in (SECTIONS / "abstract.tex").read_text()
