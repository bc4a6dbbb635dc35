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
