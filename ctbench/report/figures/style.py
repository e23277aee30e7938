"""One look for the report's figures: a seaborn theme set in this one place, and palettes with a colour per line.

Figures are drawn on ``matplotlib.figure.Figure`` objects (Agg canvas, no pyplot), so the theme is applied as an
``rc_context`` around drawing *and* saving (tick labels are created at draw time) instead of changing the process's
global rcParams: :func:`styled` wraps a plotting function, :func:`figure_style` is the same as a ``with`` block.
The ``talk`` context gives fonts that stay readable when a many-panel figure is scaled to the book's page width.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

#: seaborn style and plotting context of every report figure
STYLE = "whitegrid"
CONTEXT = "talk"
#: seaborn's colour-blind palette has 10 colours; beyond that ``husl`` spaces n hues evenly (never repeats)
QUALITATIVE = "colorblind"

F = TypeVar("F", bound=Callable[..., Any])


def rc(context: str = CONTEXT) -> dict[str, Any]:
    """The rcParams of the report's theme (seaborn ``STYLE`` axes style and ``context`` plotting context)."""
    import seaborn as sns

    return {**sns.axes_style(STYLE), **sns.plotting_context(context), "figure.dpi": 100}


@contextlib.contextmanager
def figure_style(context: str = CONTEXT) -> Iterator[None]:
    """Draw and save figures inside this block to give them the report's theme."""
    import matplotlib as mpl

    with mpl.rc_context(rc(context)):
        yield


def styled(func: F) -> F:
    """Run ``func`` (which draws and/or saves a figure) inside :func:`figure_style`."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with figure_style():
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def palette(n: int) -> list[tuple[float, float, float]]:
    """``n`` distinct colours: seaborn's colour-blind palette up to 10, evenly spaced ``husl`` hues beyond."""
    import seaborn as sns

    n = max(int(n), 1)
    return sns.color_palette(QUALITATIVE if n <= 10 else "husl", n)


def sequential(n: int) -> list[tuple[float, float, float]]:
    """``n`` distinct colours in order (seaborn's ``viridis``), for a hue that is an ordered parameter."""
    import seaborn as sns

    return sns.color_palette("viridis", max(int(n), 1))


__all__ = ["CONTEXT", "STYLE", "figure_style", "palette", "rc", "sequential", "styled"]
