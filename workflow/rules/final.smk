# Stage 4: the main models (single, mutability, ablation objectives) with the paper's final hyper-parameters,
# or the tuning stage's choice when tune.select is true. One job per (experiment, dataset, objective) trains all
# seeds at once, as one population (ctbench.training.population): stacked weights, one program for all members.
rule train_final:
    input:
        data=f"{RES}/data/{{dataset}}.json",
        best=lambda w: W.best_json(w.dataset),
    output:
        expand(RES + "/models/{{experiment}}/{{dataset}}/{{objective}}_s{seed}.pt", seed=W.seeds),
    params:
        members=lambda w, output: W.train_args(w.experiment, w.dataset, w.objective, output),
        best=lambda w, input: f"--best {input.best}" if input.best else "",
    threads: config.get("threads_per_job", 1)
    resources:
        mem_mb=lambda w: W.mem_mb(w.dataset),
        runtime=lambda w: W.runtime_min(w.dataset),
    benchmark:
        f"{RES}/benchmarks/train_final/{{experiment}}_{{dataset}}_{{objective}}.tsv"
    log:
        f"{RES}/logs/train_final/{{experiment}}_{{dataset}}_{{objective}}.log",
    shell:
        "ctbench train {params.members} {params.best} --set threads={threads} --quiet > {log} 2>&1"
