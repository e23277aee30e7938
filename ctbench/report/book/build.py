"""Build the Jupyter Book (``paper/``) from a report folder, offline.

:func:`build_book` renders the includes (:func:`~.includes.render_includes`: the report outputs copied into
``_generated/report/``, one Markdown include per table or figure, our values next to the published ones) and runs
``jupyter-book build`` in a subprocess. A strict build (the default) turns Sphinx warnings into errors and then
scans the HTML for MyST or Markdown that was shown as text instead of rendered (:func:`unrendered_markup`), since
such markup raises no Sphinx warning. Nothing is trained or executed; MathJax is bundled (``sphinx-mathjax-offline``)
so the HTML reads without a network.

The renderers live in :mod:`.md` (Markdown helpers), :mod:`.table_pages` (result tables),
:mod:`.figure_pages` (figures, Proposition 3.1, grids), :mod:`.meta_pages` (verdicts, provenance, CPU time) and
:mod:`.includes` (the include pages); import them from there.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from .includes import render_includes


class BookBuildError(RuntimeError):
    """``jupyter-book build`` failed, or a strict build left markup unrendered (the message says where)."""


# --------------------------------------------------------------------------------------------------- strict check

#: literal MyST/Markdown that means a construct was shown as text: fences, directive and role names, option lines,
#: includes, bold markers, table rules
_LEAKS = re.compile(r"```|:::|\{[a-z][\w:-]*\}`?|^\s*:(?:name|width|label|class|align):|\*\*\S|\S\*\*"
                    r"|\|\s*-{3,}\s*\|", re.MULTILINE)
#: HTML elements whose text is not prose (code blocks, scripts, math typeset by MathJax)
_SKIP = {"script", "style", "textarea"}


def _math(cls: str) -> bool:
    return any(c == "math" or c.startswith(("MathJax", "mjx")) for c in cls.split())


class _TextScan(HTMLParser):
    """Splits the article body's text into prose, inline ``<code>`` spans and ``<pre>`` blocks (math skipped)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool]] = []
        self.prose: list[str] = []
        self.code: list[str] = []
        self.pre: list[str] = []
        self._buf: list[str] | None = None
        self._buf_tag = ""

    def _skipping(self) -> bool:
        return any(skip for _, skip in self.stack)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("br", "img", "hr", "meta", "link", "input", "wbr"):
            return
        self.stack.append((tag, tag in _SKIP or _math(dict(attrs).get("class") or "")))
        if tag in ("code", "pre") and self._buf is None and not self._skipping():
            self._buf, self._buf_tag = [], tag

    def handle_endtag(self, tag: str) -> None:
        while self.stack:
            top, _ = self.stack.pop()
            if top == self._buf_tag and self._buf is not None:
                (self.code if top == "code" else self.pre).append("".join(self._buf))
                self._buf, self._buf_tag = None, ""
            if top == tag:
                break

    def handle_data(self, data: str) -> None:
        if not self._skipping():
            (self._buf if self._buf is not None else self.prose).append(data)


def _article(page: str) -> str:
    """The page's article body (the theme's navigation and search box are not the book's text)."""
    m = re.search(r'<article class="bd-article"[^>]*>(.*?)</article>', page, re.S)
    return m.group(1) if m else page


def unrendered_markup(html_dir: str | Path) -> list[tuple[str, str]]:
    """(page, fragment) for every piece of MyST/Markdown markup left as text in the built HTML: in prose, in an
    inline code span that starts with a directive, or in a code block that holds a fence."""
    found = []
    for page in sorted(Path(html_dir).glob("*.html")):
        if page.name in ("genindex.html", "search.html"):
            continue
        scan = _TextScan()
        scan.feed(_article(page.read_text(encoding="utf-8")))
        prose = "".join(scan.prose)
        last = -1
        for m in _LEAKS.finditer(prose):
            if m.start() > last:  # one fragment per place, not one per marker in it
                found.append((page.name, " ".join(prose[max(0, m.start() - 40):m.end() + 40].split())))
            last = m.end() + 40
        for code in scan.code:  # a fence opened mid-line: an inline code span that starts with a directive
            if re.match(r"\s*\{[a-z][\w:-]*\}", code):
                found.append((page.name, " ".join(code[:100].split())))
        for block in scan.pre:  # a stray closing fence opened a code block over markup
            m = re.search(r"```|^\s*\{[a-z][\w:-]*\}", block, re.MULTILINE)
            if m:
                found.append((page.name, " ".join(block[max(0, m.start() - 40):m.end() + 60].split())))
    return found


def _toc_files(book: Path) -> list[str]:
    import yaml

    toc = yaml.safe_load((book / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "file" in node:
                files.append(node["file"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk({k: v for k, v in toc.items() if k != "root"})
    return files


def committed_results(book_dir: str | Path = "paper") -> Path:
    """The committed result set next to the book sources (``<book>/results/report``); a clear error when absent
    (e.g. an installed package without the repository)."""
    report = Path(book_dir) / "results" / "report"
    if not (report / "index.json").exists():
        raise BookBuildError(f"book: no committed result set at {report} (index.json missing); pass --report DIR, "
                             "e.g. results/quick/report after `snakemake --configfile workflow/config/quick.yaml`")
    return report


def build_book(report_dir: str | Path | None, book_dir: str | Path = "paper", out_dir: str | Path | None = None,
               strict: bool = True, *, claims_yaml: str | Path | None | bool = None, timeout: float | None = 900,
               env: dict[str, str] | None = None) -> Path:
    """Render the includes from ``report_dir`` and build the HTML book; returns the path of ``index.html``.

    ``out_dir``: where ``_build/html`` goes (default: ``book_dir``). ``strict``: Sphinx warnings are errors
    (``-W --keep-going``) and so is markup left as text in the HTML. ``env``: environment of the ``jupyter-book``
    subprocess (default: this one's).
    Raises :class:`BookBuildError` when the build fails, with the tail of its output.
    """
    book = Path(book_dir).resolve()
    missing = [f for f in _toc_files(book) if not any((book / f"{f}{s}").exists() for s in ("", ".md", ".ipynb"))]
    if missing:
        raise BookBuildError(f"book: pages listed in {book / '_toc.yml'} are missing: {missing}")
    render_includes(report_dir, book, claims_yaml=claims_yaml)
    out = Path(out_dir).resolve() if out_dir is not None else book
    cmd = [sys.executable, "-c", "from jupyter_book.cli.main import main; main()", "build", str(book),
           "--path-output", str(out), "--builder", "html", "--all"]
    if strict:
        cmd += ["--warningiserror", "--keep-going"]
    run_env = dict(os.environ if env is None else env)
    run_env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=book, env=run_env, capture_output=True, text=True, timeout=timeout)
    seconds = time.perf_counter() - t0
    log = proc.stdout + proc.stderr
    html = out / "_build" / "html" / "index.html"
    if proc.returncode != 0 or not html.exists():
        raise BookBuildError(f"book: jupyter-book build failed (exit {proc.returncode}, {seconds:.0f} s):\n"
                             + log[-6000:])
    if strict:
        leaks = unrendered_markup(html.parent)
        if leaks:
            raise BookBuildError("book: markup shown as text instead of rendered (strict build):\n"
                                 + "\n".join(f"  {page}: {frag!r}" for page, frag in leaks[:40]))
    return html
