"""results/index.html links what the run made (relative links that resolve) and says what it
did not make; the verdicts page (results/claims/verdicts.html) holds every claim's row. Both come
from pagelab.core's templates, with autoescape on."""

import json
import re
from html.parser import HTMLParser

from pagelab.claims import judge
from pagelab.experiments import harness
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


def test_a_file_name_or_reason_with_markup_is_escaped_on_the_index(tmp_path):
    (tmp_path / "beta").mkdir()
    (tmp_path / "beta/skipped.txt").write_text("skipped: needs <root> & a disk\n")
    text = page(tmp_path, ["beta"])
    assert "skipped: needs &lt;root&gt; &amp; a disk" in text and "<root>" not in text


class _Rows(HTMLParser):
    """The rows of an HTML page's tables, each a list of its cells' text."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self.cell = []
        elif tag == "br" and self.cell is not None:
            self.cell.append("|")

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None:
            self.rows[-1].append("".join(self.cell))
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def test_the_verdicts_page_holds_each_claims_row_and_escapes_its_text(tmp_path):
    """Every claim is one row of the verdicts page: its id, published value, text and each run's
    verdict and value as judge_all gives them; a `<` in a claim's text is shown, not read as a tag."""
    claims = harness.load_claims()
    claims.loc[0, "claim"] = "recovery <script>alert(1)</script> & more"
    store = judge.load_recorded()
    runs = [(rec["profile"], rec["measurements"], rec.get("skipped", {}), rec["profile"]) for rec in store.values()]
    png = tmp_path / "figure.png"
    png.write_bytes(b"\x89PNG not really")
    judge.write_html(tmp_path / "verdicts.html", png, claims, runs)
    text = (tmp_path / "verdicts.html").read_text()
    assert "<script>" not in text and "recovery &lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in text
    parser = _Rows()
    parser.feed(text)
    head, *rows = parser.rows
    assert head == ["claim", "published", "", *(r[0] for r in runs)]
    tables = [judge.judge_all(claims, ms, sk, prof).set_index("id") for _, ms, sk, prof in runs]
    expected = [[c["id"], f"{c['value']} {c['unit']}", c["claim"],
                 *(f"{t.loc[c['id'], 'verdict']}|{t.loc[c['id'], 'ours']}" for t in tables)]
                for c in claims.to_dict("records")]
    assert rows == expected
    assert len({r[3] for r in rows}) > 1  # more than one verdict: the cells are the runs' own
    for t in tables:  # each cell's class is its verdict
        for verdict in set(t["verdict"]):
            assert f"<td class='{verdict.replace(' ', '-')}'>{verdict}<br>" in text


def test_snakemakes_report_holds_the_paper_the_verdicts_and_each_experiments_figure_and_trials(tmp_path, env):
    """`make report`'s Snakemake --report on a copy of the repository whose run made the files
    marked report() (stand-ins: the report embeds them, it does not read them): one category each
    for the paper and the verdicts, one subcategory per experiment (its figure and its trials
    table), each with its caption from
    workflow/report/; a marked file the run did not make is refused by name."""
    import subprocess

    from conftest import copy_repo
    from pagelab.system import config

    repo = copy_repo(tmp_path / "repo")
    experiments = config.experiments()
    marked = ["results/paper.pdf", "results/claims/verdicts.csv",
              *(f"results/{e}/trials.csv" for e in experiments), *(f"results/{e}/{e}.pdf" for e in experiments)]
    for rel in marked:
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text("id,claim\nRB1,a claim\n" if rel.endswith(".csv") else "%PDF-1.4\n%%EOF\n")
    argv = ["snakemake", "--workflow-profile", "workflow/profiles/default", "--report", "results/report.html",
            "results/paper.pdf", "results/index.html"]
    make = subprocess.run(["make", "-n", "--no-print-directory", "report"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=120)
    assert " ".join(argv) in make.stdout, make.stdout[-2000:] + make.stderr[-2000:]  # what make runs
    out = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    text = (repo / "results/report.html").read_text()
    categories = json.loads(re.search(r"var categories = (\{.*\});\n", text).group(1))
    assert categories == {"Paper": {"Other": ["results/paper.pdf"]},
                          "Verdicts": {"Other": ["results/claims/verdicts.csv"]},
                          "Experiments": {e: sorted([f"results/{e}/{e}.pdf", f"results/{e}/trials.csv"])
                                          for e in sorted(experiments)}}
    for e in experiments:  # the captions name their experiment (the wildcard)
        assert f"The figure of <strong>{e}</strong>" in text and f"The trials of <strong>{e}</strong>" in text
    assert "The paper built from this run" in text and "The verdict on each published claim" in text
    assert "paging-lab: the published paging claims" in text  # workflow/report/workflow.rst
    (repo / marked[-1]).unlink()
    out = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and f"File {marked[-1]} marked for report but does not exist" in out.stderr
