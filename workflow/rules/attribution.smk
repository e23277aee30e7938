# Stage 5c: integrated gradients on the protected features of the mutability models (Table 2).
# Jobs (models, rounds, samples, steps): ctbench.experiments.attributions.jobs.
# With evaluation.group_seeds the datasets trained all seeds at once are run by attribution_seeds (one process each).
ATTR_SEEDS, ATTR_GROUPED, ATTR_GROUP_SEEDS = W.seed_groups("attribution")


rule attribution:
    input:
        models=from_job("attribution", "models", *MAIN_MODELS),
    output:
        W.pattern("attribution"),
    wildcard_constraints:
        dataset=only(ATTR_SEEDS, ATTR_GROUPED),
    params:
        job=job("attribution"),
        models=model_args("attribution"),
        args=lambda w: [a for k, flag in (("n_rounds", "--rounds"), ("n_samples", "--samples"), ("steps", "--steps"))
                        for a in (flag, str(W.job("attribution", w)[k]))],
        code=code("eval_cmds"),
        cpu=f"{RES}/benchmarks/attribution/{{dataset}}_s{{seed}}.cpu.json",
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
        "OMP_NUM_THREADS={threads} {CPU_RECORD} {params.cpu:q} "
        "ctbench attribution --model {params.models:q} {params.args:q} "
        "--seed {wildcards.seed} --experiment mutability --out {output} > {log} 2>&1"


if ATTR_GROUPED:

    rule attribution_seeds:
        input:
            models=from_job("attribution_group", "models", *MAIN_MODELS),
        output:
            expand(W.pattern("attribution", dataset="{{dataset}}"), seed=ATTR_GROUP_SEEDS),
        wildcard_constraints:
            dataset=one_of(ATTR_GROUPED),
        params:
            job=job("attribution_group"),
            jobs=each_jobs("attribution_group", attribution_argv, "attribution", ("dataset", "seed")),
            code=code("eval_cmds"),
            cpu=f"{RES}/benchmarks/attribution_seeds/{{dataset}}.cpu.json",
        threads: config.get("threads_per_job", 1)
        resources:
            mem_mb=lambda w: W.mem_mb(w.dataset, "evaluate"),
            runtime=lambda w: W.runtime_min(w.dataset, "evaluate") * len(ATTR_GROUP_SEEDS),
        benchmark:
            f"{RES}/benchmarks/attribution_seeds/{{dataset}}.tsv"
        log:
            f"{RES}/logs/attribution_seeds/{{dataset}}.log",
        conda:
            "../../envs/ctbench.yaml"
        shell:
            "OMP_NUM_THREADS={threads} {CPU_RECORD} {params.cpu:q} "
            "ctbench each attribution --jobs {params.jobs:q} > {log} 2>&1"
