# Stage 5b: accuracy under FGSM and PGD (Fig. 5) on the ablation models (BL, CT, CD, AR).
rule robustness:
    input:
        # the models of one experiment's objectives, in their folders (shared BL and CT: W.model_path)
        lambda w: W.eval_models(W.robustness_experiment(), w.dataset, w.seed).values(),
    output:
        W.pattern("robustness"),
    params:
        models=lambda w: W.model_args(W.eval_models(W.robustness_experiment(), w.dataset, w.seed)),
        experiment=W.robustness_experiment(),
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
        "OMP_NUM_THREADS={threads} ctbench robustness {params.models} --seed {wildcards.seed} "
        "--experiment {params.experiment} --out {output} > {log} 2>&1"
