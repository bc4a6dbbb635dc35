"""HTML pages from the jinja2 templates in templates/ (beside this module): the results page
(results/index.html) and the verdicts page (results/claims/verdicts.html). Autoescape is on for
every template, so a claim's text or a file name holding `<` or `&` is shown as written, never
read as markup; the templates hold the markup, the callers hand in plain values.
Not for: LaTeX (pagelab.core.latex) or the notebooks' HTML (nbconvert's own templates).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jinja2

TEMPLATES = Path(__file__).with_name("templates")


@cache
def environment() -> jinja2.Environment:
    """The templates' environment: strict about undefined names (a misspelt one is an error, not
    an empty cell), autoescape on for every template."""
    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def render(name: str, **context: Any) -> str:
    """The template `name` (templates/<name>) rendered with `context`."""
    return environment().get_template(name).render(**context)
