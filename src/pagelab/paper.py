"""Build paper/main.tex into a PDF with latexmk (pdflatex), from the pipeline's generated files.

The sources stay in paper/; the generated macros, tables and figures are found under results/
through TEXINPUTS; latexmk's own files go to results/paper-build/. The PDF is copied to its
final place only when the build succeeded and left no undefined reference or citation.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from pagelab.paths import root

_UNDEFINED = re.compile(r"(Reference|Citation) `[^']*' .*undefined|There were undefined references")


class PaperError(RuntimeError):
    pass


def build(out: Path, paper_dir: Path | None = None, results_dir: Path | None = None) -> Path:
    paper_dir = (paper_dir or root() / "paper").resolve()
    results_dir = (results_dir or root() / "results").resolve()
    if shutil.which("latexmk") is None:
        raise PaperError("latexmk is not installed (Debian: apt-get install latexmk texlive-latex-extra)")
    from pagelab.paperlint import lint

    problems = lint(paper_dir)
    if problems:
        raise PaperError("the paper types measurements by hand:\n  " + "\n  ".join(problems))
    build_dir = results_dir / "paper-build"
    build_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TEXINPUTS=f".:{paper_dir}:{results_dir}:")
    # -g: always run; latexmk alone may replay a failure it recorded (a file missing then) even
    # after the file appeared.
    cmd = ["latexmk", "-g", "-pdf", "-interaction=nonstopmode", "-halt-on-error",
           f"-outdir={build_dir}", "main.tex"]
    proc = subprocess.run(cmd, cwd=paper_dir, env=env, capture_output=True, text=True)
    log = build_dir / "main.log"
    log_text = log.read_text(errors="replace") if log.exists() else ""
    if proc.returncode != 0:
        errors = [ln for ln in log_text.splitlines() if ln.startswith("!")][:5]
        raise PaperError(f"latexmk failed (exit {proc.returncode}); see {log}: "
                         + ("; ".join(errors) or proc.stdout[-500:]))
    bad = sorted(set(m.group(0) for m in _UNDEFINED.finditer(log_text)))
    if bad:
        raise PaperError(f"paper has undefined references or citations ({log}): {'; '.join(bad[:5])}")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    shutil.copyfile(build_dir / "main.pdf", tmp)
    tmp.replace(out)
    return out
