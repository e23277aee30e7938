# Stage 4b/5b (issue 24 item 5, config block `retrain`): how robust is each claim to retraining? Extra training
# seeds of the single (and mutability) experiment's CT and BL models, trained as train_final trains the main models
# (one job per dataset, all its seeds as one population, the same train configs apart from the seed) and evaluated
# as evaluate does (one job per experiment, dataset and seed), under {results}/retrain/. Jobs and paths:
# ctbench.experiments.retrain (the final-training and evaluation planners re-run on the block's seeds); no ctbench
# command imports it, so this stage leaves every other rule's code fingerprint as it was.


def retrain_args(w):
    """``--config-json CONFIG --out MODEL`` per retrained model of the job (and ``--best`` when tuned)."""
    j = W.job("retrain_final", w)
    out = [a for m in j["members"] for a in ("--config-json", json.dumps(m["config"], sort_keys=True),
                                             "--out", m["out"])]
    return out + (["--best", j["best"]] if j["best"] else [])


if W.jobs("retrain_final"):

    rule retrain_train:
        input:
            data=rules.data.output[0],
            best=lambda w: expand(rules.tune_select.output[0], dataset=w.dataset) if W.job("retrain_final", w)[
                "best"] else [],
        output:
            expand(W.pattern("retrain_model", dataset="{{dataset}}"), zip, **W.retrain_members()),
        params:
            job=job("retrain_final"),
            fidelity=FIDELITY,
            args=retrain_args,
            code=code("train_cmds"),
            cpu=f"{RES}/benchmarks/retrain_train/{{dataset}}.cpu.json",
        threads: config.get("threads_per_job", 1)
        resources:
            mem_mb=lambda w: W.mem_mb(w.dataset),
            runtime=lambda w: W.runtime_min(w.dataset) * 4,
        benchmark:
            f"{RES}/benchmarks/retrain_train/{{dataset}}.tsv"
        log:
            f"{RES}/logs/retrain_train/{{dataset}}.log",
        conda:
            "../../envs/ctbench.yaml"
        shell:
            "{CPU_RECORD} {params.cpu:q} "
            "ctbench train {params.args:q} --set threads={threads} --quiet > {log} 2>&1"

    RT_SEEDS, RT_GROUPED, RT_GROUP_SEEDS = W.seed_groups("retrain_evaluation")

    rule retrain_evaluate:
        input:
            models=from_job("retrain_evaluation", "models", rules.retrain_train.output),
        output:
            W.pattern("retrain_evaluation"),
        wildcard_constraints:
            dataset=only(RT_SEEDS, RT_GROUPED),
        params:
            job=job("retrain_evaluation"),
            models=model_args("retrain_evaluation"),
            args=lambda w: (["--constrained"] if W.job("retrain_evaluation", w)["constrained"] else []) + [
                a for k, v in W.job("retrain_evaluation", w)["settings"].items()
                for a in ("--set", f"{k}={json.dumps(v)}")],
            code=code("eval_cmds"),
            cpu=f"{RES}/benchmarks/retrain_evaluate/{{experiment}}_{{dataset}}_s{{seed}}.cpu.json",
        threads: config.get("threads_per_job", 1)
        resources:
            mem_mb=lambda w: W.mem_mb(w.dataset, "evaluate"),
            runtime=lambda w: W.runtime_min(w.dataset, "evaluate"),
        benchmark:
            f"{RES}/benchmarks/retrain_evaluate/{{experiment}}_{{dataset}}_s{{seed}}.tsv"
        log:
            f"{RES}/logs/retrain_evaluate/{{experiment}}_{{dataset}}_s{{seed}}.log",
        conda:
            "../../envs/ctbench.yaml"
        shell:
            "OMP_NUM_THREADS={threads} {CPU_RECORD} {params.cpu:q} "
            "ctbench evaluate --model {params.models:q} {params.args:q} "
            "--experiment {wildcards.experiment} --out {output} --quiet > {log} 2>&1"

    if RT_GROUPED:

        # with evaluation.group_seeds: one process per experiment and dataset evaluates its retrained seeds
        rule retrain_evaluate_seeds:
            input:
                models=from_job("retrain_evaluation_group", "models", rules.retrain_train.output),
            output:
                expand(W.pattern("retrain_evaluation", experiment="{{experiment}}", dataset="{{dataset}}"),
                       seed=RT_GROUP_SEEDS),
            wildcard_constraints:
                dataset=one_of(RT_GROUPED),
            params:
                job=job("retrain_evaluation_group"),
                jobs=each_jobs("retrain_evaluation_group", evaluate_argv, "retrain_evaluation",
                               ("experiment", "dataset", "seed")),
                code=code("eval_cmds"),
                cpu=f"{RES}/benchmarks/retrain_evaluate_seeds/{{experiment}}_{{dataset}}.cpu.json",
            threads: config.get("threads_per_job", 1)
            resources:
                mem_mb=lambda w: W.mem_mb(w.dataset, "evaluate"),
                runtime=lambda w: W.runtime_min(w.dataset, "evaluate") * len(RT_GROUP_SEEDS),
            benchmark:
                f"{RES}/benchmarks/retrain_evaluate_seeds/{{experiment}}_{{dataset}}.tsv"
            log:
                f"{RES}/logs/retrain_evaluate_seeds/{{experiment}}_{{dataset}}.log",
            conda:
                "../../envs/ctbench.yaml"
            shell:
                "OMP_NUM_THREADS={threads} {CPU_RECORD} {params.cpu:q} "
                "ctbench each evaluate --jobs {params.jobs:q} > {log} 2>&1"


# The retrained models' evaluations: inputs of the report (which runs after them, so its stage times count them).
# `ctbench report --retrain-eval FILES` (branch `ledger`: the seed-share of every claim) reads them when
# `retrain.report` is true; until that option is merged the profiles leave it false.
RETRAIN_EVALS = expand(rules.retrain_evaluate.output[0], zip, **W.wildcards("retrain_evaluation")) if W.jobs(
    "retrain_evaluation") else []
RETRAIN_TO_REPORT = bool(RETRAIN_EVALS) and bool((config.get("retrain") or {}).get("report", False))
