# Stage 3: key-parameter tuning (Notes 9, 11) on every dataset; the chunks run through the grid rules above.
# best.json is an input of final training only when tune.select is true (the published values are the default).
rule tune_select:
    input:
        expand(rules.grid_chunk.output[0], zip, allow_missing=True, **W.tune_chunk_wildcards()),
    output:
        W.pattern("tune_best"),
    benchmark:
        f"{RES}/benchmarks/tune_select/{{dataset}}.tsv"
    log:
        f"{RES}/logs/tune/{{dataset}}.log",
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "ctbench tune select {input} --dataset {wildcards.dataset} --out {output} > {log} 2>&1"
