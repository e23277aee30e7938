# Stage 5c: integrated gradients on the protected features of the mutability models (Table 2).
rule attribution:
    input:
        # the mutability experiment's models, in their folders (the shared BL: W.model_path)
        lambda w: W.eval_models("mutability", w.dataset, w.seed).values(),
    output:
        W.pattern("attribution"),
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
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "OMP_NUM_THREADS={threads} ctbench attribution {params.models} {params.args} --seed {wildcards.seed} "
        "--experiment mutability --out {output} > {log} 2>&1"
