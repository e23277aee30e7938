# Stage 5a: counterfactual evaluation of each experiment's models (test-time ECCo over the λ grid, all runs).
rule evaluate:
    input:
        # the models depend on the experiment wildcard (shared BL and CT live in other experiments' folders)
        lambda w: W.evaluated_models(w.experiment, w.dataset, w.seed).values(),
    output:
        W.pattern("evaluation"),
    params:
        models=lambda w: W.model_args(W.evaluated_models(w.experiment, w.dataset, w.seed)),
        args=lambda w: W.eval_args(w.experiment, w.dataset),
    threads: config.get("threads_per_job", 1)
    resources:
        mem_mb=lambda w: W.mem_mb(w.dataset, "evaluate"),
        runtime=lambda w: W.runtime_min(w.dataset, "evaluate"),
    benchmark:
        f"{RES}/benchmarks/evaluate/{{experiment}}_{{dataset}}_s{{seed}}.tsv"
    log:
        f"{RES}/logs/evaluate/{{experiment}}_{{dataset}}_s{{seed}}.log",
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "OMP_NUM_THREADS={threads} ctbench evaluate {params.models} {params.args} "
        "--experiment {wildcards.experiment} --out {output} --quiet > {log} 2>&1"
