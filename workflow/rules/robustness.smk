# Stage 5b: accuracy under FGSM and PGD (Fig. 5) on the ablation models (BL, CT, CD, AR).
# Jobs (the experiment whose models are attacked): ctbench.experiments.robustness.jobs.
rule robustness:
    input:
        models=from_job("robustness", "models", *MAIN_MODELS, *ABLATION_MODELS),
    output:
        W.pattern("robustness"),
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
