import pandas as pd
import pytest

from pagelab.claims.registry import load_claims, write_claims_table
from pagelab.core.latex import escape, escape_breakable, fmt, macros_text, write_table


def test_fmt_significant_figures():
    assert fmt(63.41) == "63.4"
    assert fmt(1234.5) == "1234"
    assert fmt(0.0012345) == "0.00123"
    assert fmt(float("nan")) == "n/a"


def test_macros_reject_bad_names():
    assert "\\newcommand{\\SeekA}{1}" in macros_text({"SeekA": "1"})
    for bad in ("Seek1", "seek_a", "", "Seek A"):
        with pytest.raises(ValueError, match="letters only"):
            macros_text({bad: "1"})


def test_escape():
    assert escape("a_b & 5% $x#") == r"a\_b \& 5\% \$x\#"


def test_booktabs_table(tmp_path):
    p = tmp_path / "t.tex"
    write_table(p, pd.DataFrame({"A": [1], "B": ["x"]}), column_format="rl")
    text = p.read_text()
    assert "\\toprule" in text and "\\bottomrule" in text and "\\begin{tabular}{rl}" in text


def test_claims_file_is_complete_and_tabulates(tmp_path):
    claims = load_claims()
    assert {"RB1", "RB3", "CM1", "CM2", "SB2", "SB3", "MC1"} <= set(claims["id"])
    out = tmp_path / "claims.tex"
    write_claims_table(out)
    assert "CM1" in out.read_text() and "3.95 MB/s" in out.read_text()


def test_claims_file_errors_name_the_problem(tmp_path):
    p = tmp_path / "c.csv"
    head = ("id,claim,value,unit,source,experiment,measurement,judge,window_low,window_high,window_reason,"
            "twin,construction,profiles\n")
    p.write_text(head + "X,c,1,s,000,e,e.m,window,0.8,1.25,x0.8-x1.25,what we measure,,all\n"
                 "X,d,2,s,000,e,e.m,window,1.6,2.5,x0.8-x1.25,what we measure,,all\n")
    with pytest.raises(ValueError, match="duplicate claim id"):
        load_claims(p)
    p.write_text("id,claim,value\nX,c,1\n")
    with pytest.raises(ValueError, match="missing column"):
        load_claims(p)


def test_escape_breakable_allows_a_break_in_a_dotted_key_but_not_in_a_number():
    assert escape_breakable("readyboost.tier_warm.recovery_s") == (
        r"readyboost.\allowbreak{}tier\_\allowbreak{}warm.\allowbreak{}recovery\_\allowbreak{}s")
    assert escape_breakable("2.5 MB/s, 50% of x1.4") == r"2.5 MB/s, 50\% of x1.4"
