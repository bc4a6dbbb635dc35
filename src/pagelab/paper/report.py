"""results/index.html: one page from which a reader reaches everything a run made: the paper,
the verdicts (table and figure), the comparison with the reference machine (figure and table),
and each experiment's notebook as HTML with its figure. Links are relative, so the page works
opened from the file system or served from results/.
"""

from __future__ import annotations

from pathlib import Path

from pagelab.core.pages import render
from pagelab.core.records import write_text_atomic

STYLE = """body{font-family:system-ui,sans-serif;max-width:60em;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.6em}img{max-width:100%;border:1px solid #ddd}
.missing{color:#777}li{margin:.2em 0}table{border-collapse:collapse}td{padding:.15em .8em .15em 0}"""


def first_line(path: Path) -> str:
    return path.read_text().strip().splitlines()[0] if path.exists() and path.read_text().strip() else ""


def page(results_dir: Path | str, experiments: list[str]) -> str:
    """The page (templates/index.html.j2 of pagelab.core): what the run made is linked, what it
    did not make is named as missing."""
    r = Path(results_dir)
    figures = sorted(r.glob("claims/*.png"))
    rows = []
    for name in experiments:
        figure = ""
        if (r / f"{name}/{name}.png").exists():  # each experiment's figure, leading to its notebook
            figure = f"{name}/{name}.html" if (r / f"{name}/{name}.html").exists() else f"{name}/{name}.png"
        rows.append({"name": name, "skipped": first_line(r / name / "skipped.txt"), "figure": figure})
    return render("index.html.j2", style=STYLE, made=lambda rel: (r / rel).exists(),
                  verdict_figure=str(figures[0].relative_to(r).with_suffix("")) if figures else "",
                  compare=(r / "compare/compare.png").exists(), experiments=rows)


def write_index(results_dir: Path | str, out: Path | str, experiments: list[str]) -> None:
    write_text_atomic(out, page(results_dir, experiments))
