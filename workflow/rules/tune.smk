# Stage 3: key-parameter tuning (Notes 9, 11) on every dataset; the chunks run through the grid rules above.
# best.json is an input of final training only when tune.select is true (the published values are the default).
# Jobs: ctbench.experiments.grids.select_jobs (one per tuned dataset, with the tuning chunks it reads).
rule tune_select:
    input:
        lambda w: expand(rules.grid_chunk.output[0], zip, **W.job("tune_best", w)["chunks"],
                         dataset=[w.dataset] * len(W.job("tune_best", w)["chunks"]["grid"])),
    output:
        W.pattern("tune_best"),
    params:
        code=code("grid_cmds"),
        cpu=f"{RES}/benchmarks/tune_select/{{dataset}}.cpu.json",
    benchmark:
        f"{RES}/benchmarks/tune_select/{{dataset}}.tsv"
    log:
        f"{RES}/logs/tune/{{dataset}}.log",
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "{CPU_RECORD} {params.cpu:q} "
        "ctbench tune select {input} --dataset {wildcards.dataset} --out {output} > {log} 2>&1"
