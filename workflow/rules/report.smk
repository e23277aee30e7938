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
    log:
        f"{RES}/logs/report.log",
    shell:
        "ctbench report --eval {input.evals} --models {input.models} {params.optional} --claims {input.claims} "
        "--benchmarks {RES}/benchmarks --profile {params.profile} --out {RES}/report > {log} 2>&1"
