"""results/index.html: one page from which a reader reaches everything a run made: the paper,
the verdicts (table and figure), the comparison with the reference machine (figure and table),
and each experiment's notebook as HTML with its figure. Links are relative, so the page works
opened from the file system or served from results/.
"""

from __future__ import annotations

import html
from pathlib import Path

from pagelab.core.records import write_text_atomic

STYLE = """body{font-family:system-ui,sans-serif;max-width:60em;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.6em}img{max-width:100%;border:1px solid #ddd}
.missing{color:#777}li{margin:.2em 0}table{border-collapse:collapse}td{padding:.15em .8em .15em 0}"""


def _link(results: Path, rel: str, text: str) -> str:
    if (results / rel).exists():
        return f'<a href="{html.escape(rel)}">{html.escape(text)}</a>'
    return f'<span class="missing">{html.escape(text)} (not made by this run)</span>'


def _picture(results: Path, stem: str, alt: str) -> str:
    """The PNG of a figure, linking to its PDF, when the run made it."""
    png, pdf = f"{stem}.png", f"{stem}.pdf"
    if not (results / png).exists():
        return ""
    target = pdf if (results / pdf).exists() else png
    return f'<p><a href="{html.escape(target)}"><img src="{html.escape(png)}" alt="{html.escape(alt)}"></a></p>'


def first_line(path: Path) -> str:
    return path.read_text().strip().splitlines()[0] if path.exists() and path.read_text().strip() else ""


def page(results_dir: Path | str, experiments: list[str]) -> str:
    r = Path(results_dir)
    parts = [f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>paging-lab results</title>"
             f"<style>{STYLE}</style></head><body>", "<h1>paging-lab: this run's results</h1>",
             f"<p>{_link(r, 'paper.pdf', 'The paper (PDF)')}: every number, table and figure in it comes "
             "from this run.</p>"]

    parts.append("<h2>Verdicts: the published claims against this run</h2>")
    figures = sorted(r.glob("claims/*.png"))
    if figures:
        parts.append(_picture(r, str(figures[0].relative_to(r).with_suffix("")), "each claim's verdict"))
    else:
        parts.append('<p class="missing">No verdict figure in this run.</p>')
    parts.append(f"<p>{_link(r, 'claims/verdicts.csv', 'The verdict table (CSV)')}</p>")

    parts.append("<h2>This machine against the reference machine</h2>")
    if (r / "compare/compare.png").exists():
        parts.append(_picture(r, "compare/compare", "ratio of each measurement, this run over the reference"))
        parts.append(f"<p>{_link(r, 'compare/compare.txt', 'Every comparison as a table (text)')}</p>")
    else:
        parts.append('<p class="missing">No comparison: there is no recording of this profile on the reference '
                     "machine, or this run is that recording.</p>")

    parts.append("<h2>Experiments</h2><table>")
    for name in experiments:
        skipped = first_line(r / name / "skipped.txt")
        cells = [f"<td><b>{html.escape(name)}</b></td>",
                 f"<td>{_link(r, f'{name}/{name}.html', 'notebook (HTML)')}</td>",
                 f"<td>{_link(r, f'{name}/{name}.pdf', 'figure')}</td>",
                 f"<td>{_link(r, f'{name}/measurements.json', 'measurements')}</td>",
                 f"<td>{html.escape(skipped)}</td>"]
        parts.append("<tr>" + "".join(cells) + "</tr>")
    parts.append("</table>")
    for name in experiments:  # each experiment's figure, leading to its notebook
        png = f"{name}/{name}.png"
        if (r / png).exists():
            target = f"{name}/{name}.html" if (r / f"{name}/{name}.html").exists() else png
            parts.append(f'<h3>{html.escape(name)}</h3><p><a href="{html.escape(target)}">'
                         f'<img src="{html.escape(png)}" alt="{html.escape(name)}: its figure"></a></p>')
    parts.append(f"<h2>Logs</h2><p>{_link(r, 'logs', 'results/logs/')}: one log per step; a trial run's "
                 "progress and each trial's outcome are in <code>logs/&lt;experiment&gt;.log</code>.</p>")
    parts.append("</body></html>\n")
    return "\n".join(p for p in parts if p)


def write_index(results_dir: Path | str, out: Path | str, experiments: list[str]) -> None:
    write_text_atomic(out, page(results_dir, experiments))
