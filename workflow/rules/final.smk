# Stage 4: the main models (single, mutability, ablation objectives and the shared vanilla baseline) with the
# paper's final hyper-parameters, or the tuning stage's choice when tune.select is true. One job per dataset trains
# all of them, every seed included, as populations (ctbench.training.population): models that share constraints
# are one tensor program.
FINAL_EXPERIMENTS, FINAL_OBJECTIVES, FINAL_SEEDS = W.final_members()


rule train_final:
    input:
        data=f"{RES}/data/{{dataset}}.json",
        best=lambda w: W.best_json(w.dataset),
    output:
        expand(RES + "/models/{experiment}/{{dataset}}/{objective}_s{seed}.pt", zip,
               experiment=FINAL_EXPERIMENTS, objective=FINAL_OBJECTIVES, seed=FINAL_SEEDS),
    params:
        members=lambda w, output: W.final_train_args(w.dataset, output),
        best=lambda w, input: f"--best {input.best}" if input.best else "",
    threads: config.get("threads_per_job", 1)
    resources:
        mem_mb=lambda w: W.mem_mb(w.dataset),
        runtime=lambda w: W.runtime_min(w.dataset) * 4,
    benchmark:
        f"{RES}/benchmarks/train_final/{{dataset}}.tsv"
    log:
        f"{RES}/logs/train_final/{{dataset}}.log",
    shell:
        "ctbench train {params.members} {params.best} --set threads={threads} --quiet > {log} 2>&1"
