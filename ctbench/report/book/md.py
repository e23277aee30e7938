"""Markdown building blocks of the book's includes: cell formatting, tables and figures in MyST (the "not yet run"
note, CSV reading and the paper order are :mod:`ctbench.report.common`). Shared by the renderers
(:mod:`.table_pages`, :mod:`.figure_pages`, :mod:`.meta_pages`)."""

from __future__ import annotations

import math
from typing import Any

GENERATED = "_generated"
#: report files copied into the book (everything else in the report folder is ignored)
COPY_SUFFIXES = (".csv", ".md", ".png", ".svg", ".jpg", ".pdf", ".json")

# --------------------------------------------------------------------------------------------------- helpers


def is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def fmt_num(v: Any, digits: int = 2) -> str:
    if is_missing(v):
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    try:
        return f"{float(v):.{digits}f}"
    except (TypeError, ValueError):
        return str(v)


def _esc(s: Any) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def cell_text(s: Any) -> str:
    """Data-derived text for a Markdown cell: no emphasis, math or code spans by accident."""
    if is_missing(s):
        return ""
    out = str(s)
    for ch in ("\\", "*", "$", "`", "_"):
        out = out.replace(ch, "\\" + ch)
    return out


def md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_esc(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def md_figure(rel: str, caption: str, name: str | None = None) -> str:
    label = f":name: {name}\n" if name else ""
    return f"```{{figure}} /{GENERATED}/report/{rel}\n{label}:width: 90%\n\n{caption}\n```\n"

