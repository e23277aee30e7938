# Stage 4: the main models (single, mutability, ablation objectives and the shared vanilla baseline) with the
# paper's final hyper-parameters, or the tuning stage's choice when tune.select is true. One job per dataset and group
# (ctbench.workflow.FINAL_GROUPS: the main models; the ablation's CD and AR) trains all of them, every seed included,
# as populations (ctbench.training.population): models that share constraints are one tensor program.
MAIN_FOLDERS, MAIN_OBJECTIVES, MAIN_SEEDS = W.final_members("main")
ABL_FOLDERS, ABL_OBJECTIVES, ABL_SEEDS = W.final_members("ablation")


rule train_final:
    input:
        data=rules.data.output[0],
        # tune_select's choice only when tune.select is on and this dataset is tuned (decided per dataset wildcard)
        best=lambda w: expand(rules.tune_select.output[0], dataset=w.dataset) if W.best_json(w.dataset) else [],
    output:
        expand(W.pattern("model", dataset="{{dataset}}"), zip, folder=MAIN_FOLDERS, objective=MAIN_OBJECTIVES,
               seed=MAIN_SEEDS),
    params:
        members=lambda w, output: W.final_train_args(w.dataset, output, "main"),
        best=lambda w, input: f"--best {input.best}" if input.best else "",
    threads: config.get("threads_per_job", 1)
    resources:
        mem_mb=lambda w: W.mem_mb(w.dataset),
        runtime=lambda w: W.runtime_min(w.dataset) * 4,
    benchmark:
        f"{RES}/benchmarks/train_final/{{dataset}}.tsv"
    log:
        f"{RES}/logs/train_final/{{dataset}}.log",
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "ctbench train {params.members} {params.best} --set threads={threads} --quiet > {log} 2>&1"


if ABL_FOLDERS:

    rule train_final_ablation:
        input:
            data=rules.data.output[0],
            # as train_final's: decided per dataset wildcard
            best=lambda w: expand(rules.tune_select.output[0], dataset=w.dataset) if W.best_json(w.dataset) else [],
        output:
            expand(W.pattern("model", dataset="{{dataset}}"), zip, folder=ABL_FOLDERS, objective=ABL_OBJECTIVES,
                   seed=ABL_SEEDS),
        params:
            members=lambda w, output: W.final_train_args(w.dataset, output, "ablation"),
            best=lambda w, input: f"--best {input.best}" if input.best else "",
        threads: config.get("threads_per_job", 1)
        resources:
            mem_mb=lambda w: W.mem_mb(w.dataset),
            runtime=lambda w: W.runtime_min(w.dataset) * 4,
        benchmark:
            f"{RES}/benchmarks/train_final_ablation/{{dataset}}.tsv"
        log:
            f"{RES}/logs/train_final_ablation/{{dataset}}.log",
        conda:
            "../../envs/ctbench.yaml"
        shell:
            "ctbench train {params.members} {params.best} --set threads={threads} --quiet > {log} 2>&1"
