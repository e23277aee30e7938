# Stage 5a: counterfactual evaluation of each experiment's models (test-time ECCo over the λ grid, all runs).
# Jobs (models per experiment, protocol settings): ctbench.experiments.evaluation.jobs. With evaluation.group_seeds
# the datasets trained all seeds at once are evaluated by evaluate_seeds (one process per experiment and dataset).
EVAL_SEEDS, EVAL_GROUPED, EVAL_GROUP_SEEDS = W.seed_groups("evaluation")


rule evaluate:
    input:
        # the models of the job, made by train_final or, per seed, train_final_seed (the ablation's CD and AR by the
        # *_ablation rules)
        models=from_job("evaluation", "models", *MAIN_MODELS, *ABLATION_MODELS),
    output:
        W.pattern("evaluation"),
    wildcard_constraints:
        dataset=only(EVAL_SEEDS, EVAL_GROUPED),
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


if EVAL_GROUPED:

    rule evaluate_seeds:
        input:
            models=from_job("evaluation_group", "models", *MAIN_MODELS, *ABLATION_MODELS),
        output:
            expand(W.pattern("evaluation", experiment="{{experiment}}", dataset="{{dataset}}"),
                   seed=EVAL_GROUP_SEEDS),
        wildcard_constraints:
            dataset=one_of(EVAL_GROUPED),
        params:
            job=job("evaluation_group"),
            jobs=each_jobs("evaluation_group", evaluate_argv, "evaluation", ("experiment", "dataset", "seed")),
            code=code("eval_cmds"),
            cpu=f"{RES}/benchmarks/evaluate_seeds/{{experiment}}_{{dataset}}.cpu.json",
        threads: config.get("threads_per_job", 1)
        resources:
            mem_mb=lambda w: W.mem_mb(w.dataset, "evaluate"),
            runtime=lambda w: W.runtime_min(w.dataset, "evaluate") * len(EVAL_GROUP_SEEDS),
        benchmark:
            f"{RES}/benchmarks/evaluate_seeds/{{experiment}}_{{dataset}}.tsv"
        log:
            f"{RES}/logs/evaluate_seeds/{{experiment}}_{{dataset}}.log",
        conda:
            "../../envs/ctbench.yaml"
        shell:
            "OMP_NUM_THREADS={threads} {CPU_RECORD} {params.cpu:q} "
            "ctbench each evaluate --jobs {params.jobs:q} > {log} 2>&1"
