# Stage 4: the main models (single, mutability, ablation objectives and the shared vanilla baseline) with the
# paper's final hyper-parameters, or the tuning stage's choice when tune.select is true. One job per dataset and group
# (ctbench.experiments.final_training: the main models; the ablation's CD and AR) trains all of them, every seed
# included, as populations (ctbench.training.population): models that share constraints are one tensor program.
# Jobs, model paths and each model's train config: ctbench.experiments.final_training.jobs.


def train_args(group):
    """``--config-json CONFIG --out MODEL`` per member of the job (and ``--best`` when tuned); Snakemake quotes."""

    def args(w):
        j = W.job("final", w, group=group)
        out = [a for m in j["members"] for a in ("--config-json", json.dumps(m["config"], sort_keys=True),
                                                 "--out", m["out"])]
        return out + (["--best", j["best"]] if j["best"] else [])

    return args


rule train_final:
    input:
        data=rules.data.output[0],
        # tune_select's choice only when tune.select is on and this dataset is tuned
        best=lambda w: expand(rules.tune_select.output[0], dataset=w.dataset) if W.job("final", w, group="main")[
            "best"] else [],
    output:
        expand(W.pattern("model", dataset="{{dataset}}"), zip, **W.final_members("main")),
    params:
        job=job("final", group="main"),
        fidelity=FIDELITY,
        args=train_args("main"),
        code=code("train_cmds"),
        cpu=f"{RES}/benchmarks/train_final/{{dataset}}.cpu.json",
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
        "{CPU_RECORD} {params.cpu:q} "
        "ctbench train {params.args:q} --set threads={threads} --quiet > {log} 2>&1"


if W.final_members("ablation")["folder"]:

    rule train_final_ablation:
        input:
            data=rules.data.output[0],
            best=lambda w: expand(rules.tune_select.output[0], dataset=w.dataset) if W.job(
                "final", w, group="ablation")["best"] else [],
        output:
            expand(W.pattern("model", dataset="{{dataset}}"), zip, **W.final_members("ablation")),
        params:
            job=job("final", group="ablation"),
            fidelity=FIDELITY,
            args=train_args("ablation"),
            code=code("train_cmds"),
            cpu=f"{RES}/benchmarks/train_final_ablation/{{dataset}}.cpu.json",
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
            "{CPU_RECORD} {params.cpu:q} "
            "ctbench train {params.args:q} --set threads={threads} --quiet > {log} 2>&1"


# The ablation's models, when the profile has the ablation: consumers name rules.train_final.output, *ABLATION_MODELS.
ABLATION_MODELS = [rules.train_final_ablation.output] if W.final_members("ablation")["folder"] else []
