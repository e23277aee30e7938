# Stage 5c: integrated gradients on the protected features of the mutability models (Table 2).
# Jobs (models, rounds, samples, steps): ctbench.experiments.attributions.jobs.
rule attribution:
    input:
        models=from_job("attribution", "models", *MAIN_MODELS),
    output:
        W.pattern("attribution"),
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
