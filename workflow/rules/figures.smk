# Figures of the paper that need their own models or searches, and the measured effect of each fidelity switch
# (the book's "where code and paper disagree" chapter). Outputs go straight into the report folder.
rule figure1:
    output:
        f"{RES}/report/figure1.png",
    params:
        quick="--quick" if config["profile"] == "smoke" else "",
    benchmark:
        f"{RES}/benchmarks/figure1/figure1.tsv"
    log:
        f"{RES}/logs/figure1.log",
    shell:
        "ctbench figure1 {params.quick} --out {RES}/report > {log} 2>&1"


rule mnist_figures:
    input:
        ct=W.model_path("mutability", "mnist", "full", W.seeds[0]),
        bl=W.model_path("mutability", "mnist", "vanilla", W.seeds[0]),
    output:
        f"{RES}/report/mnist_counterfactuals.png",
        f"{RES}/report/mnist_grid_ct.png",  # the appendix's 10x10 grids (paper Figures 4-5)
        f"{RES}/report/mnist_grid_bl.png",
    benchmark:
        f"{RES}/benchmarks/mnist_figures/mnist_figures.tsv"
    log:
        f"{RES}/logs/mnist_figures.log",
    shell:
        "ctbench mnist-figures --ct {input.ct} --bl {input.bl} --out {RES}/report > {log} 2>&1"


rule fidelity_effect:
    input:
        lambda w: W.fidelity_reuse(w.switch, w.dataset).values(),
    output:
        f"{RES}/fidelity/{{switch}}/{{dataset}}.csv",
    params:
        quick="--quick" if config.get("fidelity_study", {}).get("quick", False) else "",
        seeds=" ".join(map(str, W.fidelity_seeds())),
        reuse=lambda w: W.fidelity_reuse_args(w.switch, w.dataset),
    threads: 1
    resources:
        mem_mb=lambda w: W.mem_mb(w.dataset, "evaluate"),
        runtime=lambda w: 4 * W.runtime_min(w.dataset),
    benchmark:
        f"{RES}/benchmarks/fidelity_effect/{{switch}}__{{dataset}}.tsv"
    log:
        f"{RES}/logs/fidelity/{{switch}}/{{dataset}}.log",
    shell:
        "ctbench fidelity-effect --switch {wildcards.switch} --dataset {wildcards.dataset} {params.quick} "
        "--seeds {params.seeds} {params.reuse} --out {output} > {log} 2>&1"


rule fidelity_effects:
    input:
        W.fidelity_outputs(),
    output:
        f"{RES}/report/fidelity_effects.csv",
    log:
        f"{RES}/logs/fidelity/merge.log",
    shell:
        "ctbench fidelity-effects-merge {input} --out {output} > {log} 2>&1"
