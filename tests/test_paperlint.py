"""The lint that keeps measurements out of the paper's hand-written text."""

from pagelab.paper.paperlint import hand_typed, lint


def test_planted_hand_typed_numbers_are_caught(tmp_path):
    (tmp_path / "sections").mkdir()
    (tmp_path / "sections" / "x.tex").write_text(
        "We measured 12.5\\,ms per read and 3.95 MB/s, and 10--20~ms.\n"
        "% 99 ms in a comment is fine\n"
        "In math $t = 10$\\,ms is fine, as is \\SeekmodelTAccessUs\\,\\textmu s and 64\\,KiB.\n"
        "\\begin{equation} t = 5\\,ms \\end{equation}\n")
    problems = lint(tmp_path)
    assert len(problems) == 3, problems
    assert "12.5\\\\,ms" in problems[0] and "x.tex:1" in problems[0]


def test_the_papers_sections_are_clean():
    assert lint("paper") == []


def test_units():
    assert [s for _, s in hand_typed("at 500 IOPS and 2 GB/s")] == ["500 IOPS", "2 GB/s"]
    assert hand_typed("Table 3 lists 6 tests") == []


def test_a_typed_judgement_in_a_results_block_is_caught_and_a_macro_is_not(tmp_path):
    from pagelab.paper.paperlint import hand_judged

    text = ("The method is faster to explain than to run.\n"      # outside: allowed
            "% begin results\n"
            "The warm arm is \\ReadyboostWarmVsCold{} the cold one.\n"   # from a macro: fine
            "Both arms converge at \\ReadyboostWarmS{} s.\n"            # typed: caught
            "% the old text said it was faster\n"                       # comment: fine
            "% end results\n")
    assert hand_judged(text) == [(4, "converge")]
    assert hand_judged("% begin results\nnothing closed\n")[-1][1].startswith("'% begin results' without")
    (tmp_path / "s.tex").write_text(text)
    assert any("hand-typed judgement 'converge'" in p for p in lint(tmp_path))
