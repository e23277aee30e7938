# Stage 5a: counterfactual evaluation of each experiment's models (test-time ECCo over the λ grid, all runs).
# Jobs (models per experiment, protocol settings): ctbench.experiments.evaluation.jobs.
rule evaluate:
    input:
        # the models of the job, made by train_final or, per seed, train_final_seed (the ablation's CD and AR by the
        # *_ablation rules)
        models=from_job("evaluation", "models", *MAIN_MODELS, *ABLATION_MODELS),
    output:
        W.pattern("evaluation"),
    params:
        job=job("evaluation"),
        models=model_args("evaluation"),
        args=lambda w: (["--constrained"] if W.job("evaluation", w)["constrained"] else []) + [
            a for k, v in W.job("evaluation", w)["settings"].items() for a in ("--set", f"{k}={json.dumps(v)}")],
        code=code("eval_cmds"),
        cpu=f"{RES}/benchmarks/evaluate/{{experiment}}_{{dataset}}_s{{seed}}.cpu.json",
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
        "OMP_NUM_THREADS={threads} {CPU_RECORD} {params.cpu:q} "
        "ctbench evaluate --model {params.models:q} {params.args:q} "
        "--experiment {wildcards.experiment} --out {output} --quiet > {log} 2>&1"
