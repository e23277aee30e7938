# Stage 5c: integrated gradients on the protected features of the mutability models (Table 2).
rule attribution:
    input:
        lambda w: W.eval_models("mutability", w.dataset, w.seed).values(),
    output:
        f"{RES}/attribution/{{dataset}}_s{{seed}}.csv",
    params:
        models=lambda w: W.model_args(W.eval_models("mutability", w.dataset, w.seed)),
        args=W.attribution_args(),
    threads: config.get("threads_per_job", 1)
    resources:
        mem_mb=lambda w: W.mem_mb(w.dataset, "evaluate"),
        runtime=lambda w: W.runtime_min(w.dataset, "evaluate"),
    benchmark:
        f"{RES}/benchmarks/attribution/{{dataset}}_s{{seed}}.tsv"
    log:
        f"{RES}/logs/attribution/{{dataset}}_s{{seed}}.log",
    shell:
        "OMP_NUM_THREADS={threads} ctbench attribution {params.models} {params.args} --seed {wildcards.seed} "
        "--experiment mutability --out {output} > {log} 2>&1"
