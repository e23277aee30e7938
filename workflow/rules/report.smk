import json
import shlex

# Stage 6: tables, figures, CPU time per stage, Proposition 3.1 check and claim verdicts → {RES}/report/.
rule prop31:
    output:
        f"{RES}/report/prop31/prop31_summary.csv",
        f"{RES}/report/prop31/prop31_settings.csv",
    params:
        quick="--quick" if config.get("prop31", {}).get("quick", False) else "",
    benchmark:
        f"{RES}/benchmarks/prop31/prop31.tsv"
    log:
        f"{RES}/logs/prop31.log",
    shell:
        "ctbench prop31 {params.quick} --out {RES}/report/prop31 > {log} 2>&1"


rule report:
    input:
        evals=W.evaluations(),
        robustness=W.robustness_outputs(),
        attribution=W.attribution_outputs(),
        grids=W.grid_outputs(),
        tuned=W.tune_outputs(),
        models=W.final_models(),
        prop31=W.prop31_outputs(),
        consistency=W.consistency_outputs(),
        claims="claims.yaml",
    output:
        f"{RES}/report/index.json",
    params:
        optional=lambda w, input: " ".join(
            f"--{flag} {' '.join(files)}"
            for flag, files in (("robustness", input.robustness), ("attribution", input.attribution),
                                ("grids", input.grids), ("tuned", input.tuned),
                                ("consistency", input.consistency))
            if files
        ),
        profile=config["profile"],
        config_json=lambda w: shlex.quote(json.dumps(config, sort_keys=True, default=str)),
    benchmark:
        f"{RES}/benchmarks/report/report.tsv"
    log:
        f"{RES}/logs/report.log",
    shell:
        "ctbench report --eval {input.evals} --models {input.models} {params.optional} --claims {input.claims} "
        "--benchmarks {RES}/benchmarks --profile {params.profile} --config-json {params.config_json} --out {RES}/report "
        "> {log} 2>&1"


# Snakemake's own report (`snakemake --report report.html`): the report folder's tables and figures, sorted into one
# folder per stage, each a category of the report; captions in workflow/report/*.rst.
def _gallery(stage, category, label):
    return report(directory(f"{RES}/report_gallery/{stage}"), patterns=["{name}.{ext}"], category=category,
                  subcategory=label, caption=f"../report/{stage}.rst", labels={"result": "{name}", "format": "{ext}"})


rule report_gallery:
    input:
        W.book_inputs(),
    output:
        claims=_gallery("claims", "1. Claims", "verdicts per published version"),
        tables=_gallery("paper_tables", "2. Paper tables", "Tables 1-3 and the appendix tables"),
        figures=_gallery("figures", "3. Figures", "Figure 1 and MNIST"),
        robustness=_gallery("robustness", "4. Robustness", "FGSM and PGD"),
        grids=_gallery("grids", "5. Grid searches and tuning", "appendix grids"),
        prop31=_gallery("prop31", "6. Proposition 3.1", "protection check"),
        consistency=_gallery("consistency", "7. Consistency study", "Black et al. 2022"),
        fidelity=_gallery("fidelity", "8. Fidelity switches", "code vs paper"),
        provenance=_gallery("provenance", "9. Provenance and CPU time", "versions and benchmarks"),
        other=_gallery("other", "10. Other outputs", "not sorted into a stage"),
    log:
        f"{RES}/logs/report_gallery.log",
    shell:
        "ctbench gallery --report {RES}/report --out {RES}/report_gallery > {log} 2>&1"
