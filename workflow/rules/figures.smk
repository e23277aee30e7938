# Figures of the paper that need their own models or searches, and the measured effect of each fidelity switch
# (the book's "where code and paper disagree" chapter). Outputs go straight into the report folder.
rule figure1:
    output:
        W.path("report_figure", name="figure1"),
    params:
        quick="--quick" if config["profile"] == "smoke" else "",
        out=W.path("report"),
    benchmark:
        f"{RES}/benchmarks/figure1/figure1.tsv"
    log:
        f"{RES}/logs/figure1.log",
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "ctbench figure1 {params.quick} --out {params.out} > {log} 2>&1"


rule mnist_figures:
    input:
        # made by train_final: the first seed's constrained CT and the shared BL on MNIST
        ct=W.model_path("mutability", "mnist", "full", W.seeds[0]),
        bl=W.model_path("mutability", "mnist", "vanilla", W.seeds[0]),
    output:
        W.path("report_figure", name="mnist_counterfactuals"),
        W.path("report_figure", name="mnist_grid_ct"),  # the appendix's 10x10 grids (paper Figures 4-5)
        W.path("report_figure", name="mnist_grid_bl"),
    params:
        out=W.path("report"),
    benchmark:
        f"{RES}/benchmarks/mnist_figures/mnist_figures.tsv"
    log:
        f"{RES}/logs/mnist_figures.log",
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "ctbench mnist-figures --ct {input.ct} --bl {input.bl} --out {params.out} > {log} 2>&1"


rule fidelity_effect:
    input:
        # the final models this effect may reuse: those of this profile whose config is the study's (per switch)
        lambda w: W.fidelity_reuse(w.switch, w.dataset).values(),
    output:
        W.pattern("fidelity_effect"),
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
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "ctbench fidelity-effect --switch {wildcards.switch} --dataset {wildcards.dataset} {params.quick} "
        "--seeds {params.seeds} {params.reuse} --out {output} > {log} 2>&1"


rule fidelity_effects:
    input:
        expand(rules.fidelity_effect.output[0], zip, **W.wildcards("fidelity_effect")),
    output:
        W.path("fidelity_effects"),
    log:
        f"{RES}/logs/fidelity/merge.log",
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "ctbench fidelity-effects-merge {input} --out {output} > {log} 2>&1"
