"""The report's figure theme: distinct colours per line, the legend outside the panels, readable fonts."""

import matplotlib.colors as mcolors
import numpy as np
import pandas as pd
import pytest

from ctbench.report.figures.robustness_figures import robustness_figure
from ctbench.report.figures.style import figure_style, palette, rc, sequential


@pytest.mark.parametrize("n", [1, 4, 10, 11, 36])
def test_palette_gives_n_distinct_colours(n):
    colours = palette(n)
    assert len(colours) == n
    assert len({mcolors.to_hex(c) for c in colours}) == n
    assert len({mcolors.to_hex(c) for c in sequential(n)}) == n


def test_theme_is_scoped_and_larger_than_matplotlibs_default():
    import matplotlib as mpl

    before = mpl.rcParams["xtick.labelsize"], mpl.rcParams["font.size"]
    with figure_style():
        assert mpl.rcParams["font.size"] == rc()["font.size"] > 12  # seaborn "talk": 15 pt base
        assert mpl.rcParams["axes.titlesize"] > 12
    assert (mpl.rcParams["xtick.labelsize"], mpl.rcParams["font.size"]) == before


def _curves(n_models: int, datasets=("A", "B", "C", "D")) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = [{"dataset": d, "model": f"m{k}", "attack": a, "seed": s, "eps": e,
             "accuracy": 0.9 - k * 0.05 * e / 0.1 + 0.01 * rng.random()}
            for d in datasets for k in range(n_models) for a in ("fgsm", "pgd") for s in range(3)
            for e in np.linspace(0, 0.1, 5)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("n_models", [4, 12])
def test_robustness_figure_one_colour_per_model_and_legend_below_the_panels(n_models):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = robustness_figure(_curves(n_models), hue="model", col="dataset", col_wrap=3)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    axes = [a for a in fig.axes if a.get_visible()]
    assert len(axes) == 4  # one panel per dataset; the unused sixth and fifth cells are hidden
    for ax in axes:
        mean_lines = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == 5]
        assert len(mean_lines) == 2 * n_models  # seeds averaged: one line per (model, attack)
        assert len({mcolors.to_hex(ln.get_color()) for ln in mean_lines}) == n_models
        assert ax.get_legend() is None
    (legend,) = fig.legends
    labels = [t.get_text() for t in legend.get_texts()]
    assert {f"m{k}" for k in range(n_models)} <= set(labels) and {"FGSM", "PGD"} <= set(labels)
    renderer = canvas.get_renderer()
    top_of_legend = legend.get_window_extent(renderer).y1
    assert all(top_of_legend <= ax.get_window_extent(renderer).y0 for ax in axes)  # covers no panel


def test_robustness_figure_rejects_missing_columns():
    with pytest.raises(ValueError, match="missing"):
        robustness_figure(_curves(2).drop(columns="eps"), col="dataset")
    with pytest.raises(ValueError, match="dataset"):
        robustness_figure(_curves(2).drop(columns="dataset"), col="dataset")
