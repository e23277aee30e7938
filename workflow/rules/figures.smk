# Figures of the paper that need their own models or searches, and the measured effect of each fidelity switch
# (the book's "where code and paper disagree" chapter). Outputs go straight into the report folder.
# Jobs: ctbench.experiments.figure_runs.jobs (figure1, black_figure1, black_figure2, mnist) and ctbench.experiments.fidelity.jobs (per switch).
rule figure1:
    output:
        W.path("report_figure", name="figure1"),
    params:
        job=lambda w: W.job("figures", figure="figure1"),
        quick=lambda w: "--quick" if W.job("figures", figure="figure1")["quick"] else "",
        # the run's fidelity mode and overrides (LS's blob centres, the search's step, ...)
        fidelity=lambda w: ["--fidelity", (j := W.job("figures", figure="figure1"))["fidelity"],
                            "--fidelity-overrides", json.dumps(j["fidelity_overrides"], sort_keys=True)],
        out=W.path("report"),
        code=code("figure_cmds"),
    benchmark:
        f"{RES}/benchmarks/figure1/figure1.tsv"
    log:
        f"{RES}/logs/figure1.log",
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "ctbench figure1 {params.quick} {params.fidelity:q} --out {params.out} > {log} 2>&1"


rule black_figure1:
    # Black et al.'s Figure 1: two deep and two linear models from seeds s and s+1 (s = the config's first seed)
    output:
        W.path("report_figure", name="black_figure1"),
    params:
        seed=lambda w: W.job("figures", figure="black_figure1")["seed"],
        quick=lambda w: "--quick" if W.job("figures", figure="black_figure1")["quick"] else "",
        fidelity=lambda w: W.job("figures", figure="black_figure1")["fidelity"],
        out=W.path("report"),
        code=code("figure_cmds"),
    benchmark:
        f"{RES}/benchmarks/black_figure1/black_figure1.tsv"
    log:
        f"{RES}/logs/black_figure1.log",
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "ctbench black-figure1 --seed {params.seed} {params.quick} --fidelity {params.fidelity} --out {params.out} "
        "> {log} 2>&1"


rule black_figure2:
    # Black et al.'s Figure 2: a small ReLU MLP on Moons (seed s), its regions and gradients; Min-L2 vs Min-L2 + SNS
    output:
        W.path("report_figure", name="black_figure2"),
    params:
        seed=lambda w: W.job("figures", figure="black_figure2")["seed"],
        quick=lambda w: "--quick" if W.job("figures", figure="black_figure2")["quick"] else "",
        fidelity=lambda w: W.job("figures", figure="black_figure2")["fidelity"],
        out=W.path("report"),
        code=code("figure_cmds"),
    benchmark:
        f"{RES}/benchmarks/black_figure2/black_figure2.tsv"
    log:
        f"{RES}/logs/black_figure2.log",
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "ctbench black-figure2 --seed {params.seed} {params.quick} --fidelity {params.fidelity} --out {params.out} "
        "> {log} 2>&1"


rule mnist_figures:
    input:
        # made by train_final(_seed): the first seed's constrained CT and the shared BL on MNIST
        ct=lambda w: made_by([W.job("figures", figure="mnist")["ct"]], *MAIN_MODELS),
        bl=lambda w: made_by([W.job("figures", figure="mnist")["bl"]], *MAIN_MODELS),
    output:
        W.path("report_figure", name="mnist_counterfactuals"),
        W.path("report_figure", name="mnist_grid_ct"),  # the appendix's 10x10 grids (paper Figures 4-5)
        W.path("report_figure", name="mnist_grid_bl"),
    params:
        job=lambda w: W.job("figures", figure="mnist"),
        out=W.path("report"),
        code=code("figure_cmds"),
        cpu=f"{RES}/benchmarks/mnist_figures/mnist_figures.cpu.json",
    benchmark:
        f"{RES}/benchmarks/mnist_figures/mnist_figures.tsv"
    log:
        f"{RES}/logs/mnist_figures.log",
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "{CPU_RECORD} {params.cpu:q} "
        "ctbench mnist-figures --ct {input.ct} --bl {input.bl} --out {params.out} > {log} 2>&1"


rule fidelity_effect:
    input:
        # the final models this effect may reuse (made by train_final): those of this profile whose config is the
        # study's (per switch)
        reuse=from_job("fidelity_effect", "reuse", *MAIN_MODELS, *ABLATION_MODELS),
        # Table 1's evaluation of exactly those final models: the study's reference setting, read (issue 21)
        evals=from_job("fidelity_effect", "reference_evals", rules.evaluate.output),
    output:
        W.pattern("fidelity_effect"),
    params:
        job=job("fidelity_effect"),
        quick=lambda w: "--quick" if W.job("fidelity_effect", w)["quick"] else "",
        seeds=lambda w: W.job("fidelity_effect", w)["seeds"],
        reuse=lambda w: ["--reuse", *(f"{k}={v}" for k, v in r.items())] if (
            r := W.job("fidelity_effect", w)["reuse"]) else [],
        evals=lambda w: ["--reference-eval", *(f"{k}={v}" for k, v in r.items())] if (
            r := W.job("fidelity_effect", w)["reference_evals"]) else [],
        # the run's fidelity overrides: the study keeps them for every switch but the one it varies
        overrides=lambda w: json.dumps(W.job("fidelity_effect", w)["fidelity_overrides"], sort_keys=True),
        code=code("study_cmds"),
        cpu=f"{RES}/benchmarks/fidelity_effect/{{switch}}__{{dataset}}.cpu.json",
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
        "{CPU_RECORD} {params.cpu:q} "
        "ctbench fidelity-effect --switch {wildcards.switch} --dataset {wildcards.dataset} {params.quick} "
        "--seeds {params.seeds} {params.reuse:q} {params.evals:q} --fidelity-overrides {params.overrides:q} --out {output} "
        "> {log} 2>&1"


rule fidelity_effects:
    input:
        expand(rules.fidelity_effect.output[0], zip, **W.wildcards("fidelity_effect")),
    output:
        W.path("fidelity_effects"),
    params:
        code=code("study_cmds"),
        cpu=f"{RES}/benchmarks/fidelity_effects/merge.cpu.json",
    benchmark:
        f"{RES}/benchmarks/fidelity_effects/merge.tsv"
    log:
        f"{RES}/logs/fidelity/merge.log",
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "{CPU_RECORD} {params.cpu:q} "
        "ctbench fidelity-effects-merge {input} --out {output} > {log} 2>&1"
