# Stage 4: the main models (single, mutability, ablation objectives) with the paper's final hyper-parameters,
# or the tuning stage's choice when tune.select is true.
rule train_final:
    input:
        data=f"{RES}/data/{{dataset}}.json",
        best=lambda w: W.best_json(w.dataset),
    output:
        f"{RES}/models/{{experiment}}/{{dataset}}/{{objective}}_s{{seed}}.pt",
    params:
        cfg=lambda w: W.train_config_json(w.experiment, w.dataset, w.objective, w.seed),
        best=lambda w, input: f"--best {input.best}" if input.best else "",
    threads: config.get("threads_per_job", 1)
    resources:
        mem_mb=lambda w: W.mem_mb(w.dataset),
        runtime=lambda w: W.runtime_min(w.dataset),
    benchmark:
        f"{RES}/benchmarks/train_final/{{experiment}}_{{dataset}}_{{objective}}_s{{seed}}.tsv"
    log:
        f"{RES}/logs/train_final/{{experiment}}_{{dataset}}_{{objective}}_s{{seed}}.log",
    shell:
        "ctbench train --config-json {params.cfg:q} {params.best} --set threads={threads} --out {output} --quiet "
        "> {log} 2>&1"
