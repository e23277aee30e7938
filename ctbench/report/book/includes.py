"""Write every include of the book (``paper/_generated/*.md``) from a report folder: copy the report outputs into
``_generated/report/``, evaluate or read the claims' verdicts, render one Markdown page per table or figure."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from .figure_pages import (
    render_grids,
    render_paper_figures,
    render_prop31,
    render_prop31_findings,
    render_prop31_settings,
    render_robustness,
)
from .md import COPY_SUFFIXES, GENERATED, cell_text, fmt_num
from .meta_pages import (
    render_benchmarks,
    render_fidelity_effects,
    render_fidelity_switches,
    render_index,
    render_provenance,
    render_result_set,
    render_verdicts,
)
from .table_pages import (
    cell_reduction,
    flag_abs,
    flag_ig,
    interval_cell,
    render_ablation,
    render_agreement,
    render_appendix_ci,
    render_ipstar_groupings,
    render_plain,
    render_side_by_side,
    render_table1,
    render_table1_lenet,
    with_interval,
)


def render_includes(report_dir: str | Path | None, book_dir: str | Path = "paper",
                    claims_yaml: str | Path | None | bool = None) -> dict[str, Path]:
    """Copy the report into ``book_dir/_generated/report`` and write every include; returns name → path.

    ``claims_yaml``: ``None`` uses the report's ``verdicts.csv`` when present, else evaluates ``claims.yaml`` next to
    the book folder (if it exists); a path always evaluates that file; ``False`` only uses ``verdicts.csv``.
    """
    book = Path(book_dir)
    gen = book / GENERATED
    if gen.exists():
        shutil.rmtree(gen)
    dst = gen / "report"
    dst.mkdir(parents=True)
    report = Path(report_dir) if report_dir is not None else None
    if report is not None and report.is_dir():
        for p in sorted(report.rglob("*")):
            if p.is_file() and p.suffix.lower() in COPY_SUFFIXES and GENERATED not in p.parts:
                target = dst / p.relative_to(report)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(p, target)
    elif report is not None:
        raise FileNotFoundError(f"book: report folder {report} does not exist (pass None for an empty book)")
    src = dst if report is not None else None

    verdicts = None
    if claims_yaml in (None, False) and src is not None and (src / "verdicts.csv").exists():
        verdicts = pd.read_csv(src / "verdicts.csv", keep_default_na=False)
    elif claims_yaml is not False:
        path = Path(claims_yaml) if claims_yaml not in (None, True) else book.resolve().parent / "claims.yaml"
        if path.exists():
            from ..claims import evaluate_claims

            verdicts = evaluate_claims(path, src if src is not None else dst)
            verdicts.to_csv(dst / "verdicts.csv", index=False)
    summary, ledger = render_verdicts(src, verdicts)

    from ..tables.paper_tables import PUBLISHED_DIR
    from .findings_pages import render_findings

    pages: dict[str, str] = {
        "findings": render_findings(src, verdicts),
        "verdicts_summary": summary,
        "verdicts": ledger or "",
        "table1": render_table1(src),
        "table1_agreement": render_agreement(src),
        "table1_lenet": render_table1_lenet(src),
        "table1_bootstrap": render_plain(
            src, "table1_bootstrap",
            ["dataset", "metric", "reduction_pct", "reduction_pct_lb", "reduction_pct_ub", "mean_delta",
             "mean_delta_lb", "mean_delta_ub", "significant", "n_runs", "n_boot", "level"],
            digits=2, what="experiments `single` and `mutability`",
            merge=[("reduction % [interval]", ["reduction_pct", "reduction_pct_lb", "reduction_pct_ub"],
                    with_interval(2)),
                   ("mean difference [interval]", ["mean_delta", "mean_delta_lb", "mean_delta_ub"], with_interval(3))],
            legend="Bootstrap over individuals: percentile interval of the reduction and of the mean difference. "
                   "Each replicate resamples the counterfactuals with replacement within every (run, objective, "
                   "λ) stratum; since issue 21 it draws what the statistic uses of a stratum (column `draws`: "
                   "`cells`): the number of valid counterfactuals drawn (binomial, exact) and the sum of their "
                   "values (drawn one by one up to 30, else normal with the exact mean and variance), instead of "
                   "every row (`rows`, the tables before). "
                   "IP* is left out: it is one MMD per group of counterfactuals, so a bootstrap over individuals "
                   "would have to recompute the MMD for every resample; reusing the group values gave zero-width "
                   "intervals."),
        "ipstar_groupings": render_ipstar_groupings(src),
        "table3_agreement": render_plain(
            src, "table3_agreement", ["cells", "within", "tolerance", "outside"], digits=2,
            what="experiments `single` and `mutability` with the published tables",
            legend="Table 3 cells within the tolerance of the published validity (final version)."),
        "performance": render_plain(
            src, "performance", ["dataset", "acc_ct", "acc_bl", "acc_diff", "f1_ct", "f1_bl", "n_seeds"],
            digits=3, what="experiment `single`",
            legend="Test accuracy and macro F1 of the `single` experiment's CT and BL models, mean over training "
                   "seeds."),
        "table2": render_side_by_side(
            src, "table2", {"median": "median", "lb_2_5": "2.5%", "ub_97_5": "97.5%"}, ["dataset", "model"],
            flag_ig, "Median standardised integrated gradients on the protected features with the 2.5%/97.5% "
            "quantiles over rounds. **Bold** Δ: our median lies outside the published 95% interval.",
            what="stage `attribution`"),
        "table3": render_side_by_side(
            src, "table3", {"ct_unconstrained": "CT mut.", "bl_unconstrained": "BL mut.",
                            "ct_constrained": "CT constr.", "bl_constrained": "BL constr."}, ["dataset"],
            flag_abs(0.05), "Average validity; unconstrained (τ_eval 0.95, experiment `single`) and constrained "
            "(τ_eval 0.5, experiment `mutability`). **Bold** Δ: more than 0.05 from the published value.",
            what="experiments `single` and `mutability`"),
        "appendix_ci": render_appendix_ci(src, PUBLISHED_DIR),
        "appendix_cost_unconstrained": render_plain(
            src, "appendix_cost_unconstrained", ["dataset", "metric", "reduction_pct", "pm", "significant", "lb",
                                                 "ub", "ct_mean_abs", "bl_mean_abs"],
            digits=2, what="experiment `single`",
            merge=[("reduction %", ["reduction_pct", "pm", "significant"], cell_reduction),
                   ("99% interval of the difference", ["lb", "ub"], lambda lb, ub: interval_cell(lb, ub, 2))],
            labels={"ct_mean_abs": "CT", "bl_mean_abs": "BL"},
            legend="Cost reduction without mutability constraints (published Avg. −1.74%, reference §9.6)."),
        "redundancy": render_plain(
            src, "redundancy", ["dataset", "experiment", "redundancy_ct", "redundancy_bl", "diff", "n_valid_ct",
                                "n_valid_bl"], digits=3, what="experiments `single` and `mutability`",
            labels={"redundancy_ct": "CT", "redundancy_bl": "BL", "diff": "Δ (CT − BL)", "n_valid_ct": "n CT",
                    "n_valid_bl": "n BL"},
            legend="Redundancy: the share of features a valid counterfactual leaves unchanged (|x′ − x| < 1e-5 per "
                   "feature), mean over the valid counterfactuals of all evaluation runs; computed by the authors' "
                   "evaluation and ours, reported in no version of the paper. `single`: unconstrained; "
                   "`mutability`: protected features immutable (they count as unchanged)."),
        "datasets": render_plain(
            src, "datasets", ["dataset", "n_train", "n_val", "n_test", "n_features", "n_classes",
                              "class_shares", "protected", "source", "licence"], digits=2,
            what="the final models' sidecars",
            merge=[("rows train / val. / test", ["n_train", "n_val", "n_test"],
                    lambda a, b, c: " / ".join(fmt_num(v, 0) for v in (a, b, c))),
                   ("features (classes)", ["n_features", "n_classes"],
                    lambda f, k: f"{fmt_num(f, 0)} ({fmt_num(k, 0)})"),
                   ("source; licence", ["source", "licence"], lambda a, b: f"{cell_text(a)}; {cell_text(b)}")],
            labels={"class_shares": "class shares"},
            legend="The datasets as the final models used them: rows per split, input features (after encoding), "
                   "classes, each class's share of the training and validation rows, the protected (immutable) "
                   "features, "
                   "and the raw files' source and licence (`ctbench/data/catalogue.py`)."),
        "ablation": render_ablation(src),
        "robustness": render_robustness(src),
        "paper_figures": render_paper_figures(src),
        "grids": render_grids(src),
        "prop31_results": render_prop31(src)[0],
        "prop31_violations": render_prop31(src)[1],
        "prop31_findings": render_prop31_findings(src),
        "prop31_settings": render_prop31_settings(src),
        "provenance": render_provenance(src),
        "result_set": render_result_set(src),
        "benchmarks": render_benchmarks(src),
        "report_index": render_index(src),
        "fidelity_switches": render_fidelity_switches(),
        "fidelity_effects": render_fidelity_effects(src),
    }
    from .consistency_pages import pages as consistency_pages

    pages.update(consistency_pages(src))
    from .appendix_pages import pages as appendix_pages  # appendix Tables 2, 4-6, Figures 4-5, 30-65

    pages.update(appendix_pages(src))
    from ..text.discrepancy_text import (
        render_ls_target,
        render_switch_findings,
        render_table1_causes,
        render_table1_findings,
        render_variant_findings,
    )

    pages["discrepancy_table1"] = render_table1_findings(src) if src is not None else ""
    pages["discrepancy_switches"] = render_switch_findings(src, PUBLISHED_DIR) if src is not None else ""
    # variants live beside the original report folder (../variants/), not beside the copy in _generated/
    pages["discrepancy_variants"] = render_variant_findings(report) if report is not None else ""
    pages["discrepancy_table1_causes"] = render_table1_causes(src, report) if src is not None else ""
    pages["discrepancy_ls_target"] = render_ls_target(src) if src is not None else ""
    # OL's validity and IP* causes are committed benchmark results (benchmarks/results/ol-causes*.csv), not report
    # outputs: rendered whatever report folder is given
    from ..text.ol_causes_text import render_ol_causes
    pages["discrepancy_ol_causes"] = render_ol_causes()
    # the two-box rerun of Min-ℓ1/ℓ2 lives beside the original report folder too (../consistency_boxes/)
    from .consistency_pages import render_boxes
    pages["consistency_boxes"] = render_boxes(report)
    out = {}
    for name, text in pages.items():
        p = gen / f"{name}.md"
        p.write_text(text if text.endswith("\n") else text + "\n")
        out[name] = p
    return out

