"""results/index.html links what the run made (relative links that resolve) and says what it
did not make."""

import re

from pagelab.paper.report import page, write_index


def test_the_index_links_the_paper_verdicts_comparison_and_each_experiment(tmp_path):
    r = tmp_path
    for rel in ("paper.pdf", "claims/verdicts.csv", "claims/verdicts.pdf", "claims/verdicts.png",
                "compare/compare.png", "compare/compare.pdf", "compare/compare.txt",
                "alpha/alpha.html", "alpha/alpha.pdf", "alpha/alpha.png", "alpha/measurements.json", "logs/alpha.log"):
        (r / rel).parent.mkdir(parents=True, exist_ok=True)
        (r / rel).write_text("x")
    (r / "beta").mkdir()
    (r / "beta/skipped.txt").write_text("skipped: needs root\n")
    write_index(r, r / "index.html", ["alpha", "beta"])
    text = (r / "index.html").read_text()
    links = re.findall(r'(?:href|src)="([^"]+)"', text)
    assert {"paper.pdf", "claims/verdicts.pdf", "claims/verdicts.png", "compare/compare.pdf", "compare/compare.png",
            "compare/compare.txt", "alpha/alpha.html", "alpha/alpha.pdf", "alpha/alpha.png", "logs"} <= set(links)
    assert all((r / link).exists() for link in links), links
    assert "beta/beta.html" not in links and "notebook (HTML) (not made by this run)" in text
    assert "skipped: needs root" in text


def test_without_a_comparison_the_index_says_why(tmp_path):
    (tmp_path / "paper.pdf").write_text("x")
    text = page(tmp_path, [])
    assert "No comparison" in text and "No verdict figure" in text and 'href="paper.pdf"' in text
