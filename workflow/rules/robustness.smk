# Stage 5b: accuracy under FGSM and PGD (Fig. 5) on the ablation models (BL, CT, CD, AR).
# Jobs (the experiment whose models are attacked): ctbench.experiments.robustness.jobs.
# With evaluation.group_seeds the datasets trained all seeds at once are run by robustness_seeds (one process each).
ROB_SEEDS, ROB_GROUPED, ROB_GROUP_SEEDS = W.seed_groups("robustness")


rule robustness:
    input:
        models=from_job("robustness", "models", *MAIN_MODELS, *ABLATION_MODELS),
    output:
        W.pattern("robustness"),
    wildcard_constraints:
        dataset=only(ROB_SEEDS, ROB_GROUPED),
    params:
        job=job("robustness"),
        models=model_args("robustness"),
        experiment=lambda w: W.job("robustness", w)["experiment"],
        code=code("eval_cmds"),
        cpu=f"{RES}/benchmarks/robustness/{{dataset}}_s{{seed}}.cpu.json",
    threads: config.get("threads_per_job", 1)
    resources:
        mem_mb=lambda w: W.mem_mb(w.dataset, "evaluate"),
        runtime=lambda w: W.runtime_min(w.dataset, "evaluate"),
    benchmark:
        f"{RES}/benchmarks/robustness/{{dataset}}_s{{seed}}.tsv"
    log:
        f"{RES}/logs/robustness/{{dataset}}_s{{seed}}.log",
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "OMP_NUM_THREADS={threads} {CPU_RECORD} {params.cpu:q} "
        "ctbench robustness --model {params.models:q} --seed {wildcards.seed} "
        "--experiment {params.experiment} --out {output} > {log} 2>&1"


if ROB_GROUPED:

    rule robustness_seeds:
        input:
            models=from_job("robustness_group", "models", *MAIN_MODELS, *ABLATION_MODELS),
        output:
            expand(W.pattern("robustness", dataset="{{dataset}}"), seed=ROB_GROUP_SEEDS),
        wildcard_constraints:
            dataset=one_of(ROB_GROUPED),
        params:
            job=job("robustness_group"),
            jobs=each_jobs("robustness_group", robustness_argv, "robustness", ("dataset", "seed")),
            code=code("eval_cmds"),
            cpu=f"{RES}/benchmarks/robustness_seeds/{{dataset}}.cpu.json",
        threads: config.get("threads_per_job", 1)
        resources:
            mem_mb=lambda w: W.mem_mb(w.dataset, "evaluate"),
            runtime=lambda w: W.runtime_min(w.dataset, "evaluate") * len(ROB_GROUP_SEEDS),
        benchmark:
            f"{RES}/benchmarks/robustness_seeds/{{dataset}}.tsv"
        log:
            f"{RES}/logs/robustness_seeds/{{dataset}}.log",
        conda:
            "../../envs/ctbench.yaml"
        shell:
            "OMP_NUM_THREADS={threads} {CPU_RECORD} {params.cpu:q} "
            "ctbench each robustness --jobs {params.jobs:q} > {log} 2>&1"
