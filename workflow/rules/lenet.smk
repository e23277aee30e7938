# Stage 4c/5c (config block `lenet`; the CT paper's appendix F.1.2): one CT and one BL LeNet-5 on MNIST at the final
# MNIST settings, each trained alone (one job, one model), so that its sidecar's train_seconds is its own measured
# time: the report's training_time.csv gets `model: lenet` rows for the compute claim lenet_training_time. Then the
# pair is evaluated as evaluate evaluates the single experiment's MNIST models (same generator, λ_egy values, runs,
# individuals and seed), under {results}/lenet/eval/: the report's table1_lenet.csv (Table-1-style LeNet rows beside
# the MLP's; beyond the paper, which reports no LeNet result). Jobs, paths and configs: ctbench.experiments.lenet
# (no ctbench command imports it, so no other rule's code fingerprint moves).
from ctbench.experiments import lenet as lenet_stage


def lenet_threads(w):
    """The CT model's search at lenet.search_threads (null: threads_per_job); BL has no search."""
    base = config.get("threads_per_job", 1)
    return base if w.objective == "vanilla" else (config.get("lenet") or {}).get("search_threads") or base


# lenet.device (null: the profile's device) trains the pair on a GPU: the CT model's 100 epochs are this profile's
# longest job on one CPU thread (46 min), ~40 s on one GPU (benchmarks/README.md, "GPU"). On CUDA the rule asks for
# one GPU with snakemake-executor-plugin-slurm's `gpu` resource (sbatch --gpus=1; its docs, "GPU Jobs"); on the CPU it
# has no such resource, so the CPU plan is today's.
LENET_GPU = {"gpu": lenet_stage.gpus(config)} if lenet_stage.gpus(config) else {}


if W.jobs("lenet"):

    rule lenet_train:
        input:
            data=rules.data.output[0],
        output:
            W.pattern("lenet_model"),
        params:
            job=job("lenet"),
            fidelity=FIDELITY,
            config=lambda w: json.dumps(W.job("lenet", w)["config"], sort_keys=True),
            code=code("train_cmds"),
            cpu=f"{RES}/benchmarks/lenet_train/{{dataset}}_{{objective}}_s{{seed}}.cpu.json",
            # the search in row chunks and the weight update in lenet.grad_chunks chunks on the job's threads, the
            # rest at threads_per_job: `ctbench train --search-threads`; BL's job keeps threads_per_job. The same
            # model bit for bit at any thread count (chunks at one intra-op thread each:
            # ctbench/generators/row_chunks.py, ctbench/training/grad_chunks.py)
            threads=config.get("threads_per_job", 1),
        threads: lenet_threads
        # the CT model is the paper DAG's longest chain (training → evaluation → report): started first, a machine
        # with cores to spare does not leave it for last (Snakemake's scheduler otherwise starts it when 2 cores
        # happen to be free together)
        priority: 10
        resources:
            mem_mb=lambda w: W.mem_mb(w.dataset),
            runtime=lambda w: W.runtime_min(w.dataset) * 4,
            **LENET_GPU,
        benchmark:
            f"{RES}/benchmarks/lenet_train/{{dataset}}_{{objective}}_s{{seed}}.tsv"
        log:
            f"{RES}/logs/lenet_train/{{dataset}}_{{objective}}_s{{seed}}.log",
        conda:
            "../../envs/ctbench.yaml"
        shell:
            "{CPU_RECORD} {params.cpu:q} "
            "ctbench train --config-json {params.config:q} --out {output} --set threads={params.threads} "
            "--search-threads {threads} --quiet > {log} 2>&1"


    rule lenet_evaluate:
        input:
            models=from_job("lenet_evaluation", "models", rules.lenet_train.output),
        output:
            W.pattern("lenet_evaluation"),
        params:
            job=job("lenet_evaluation"),
            models=model_args("lenet_evaluation"),
            args=lambda w: (["--constrained"] if W.job("lenet_evaluation", w)["constrained"] else []) + [
                a for k, v in W.job("lenet_evaluation", w)["settings"].items()
                for a in ("--set", f"{k}={json.dumps(v)}")],
            code=code("eval_cmds"),
            cpu=f"{RES}/benchmarks/lenet_evaluate/{{experiment}}_{{dataset}}_s{{seed}}.cpu.json",
            # the searches in row chunks on the job's threads (lenet.search_threads), the rest at threads_per_job
            threads=config.get("threads_per_job", 1),
        threads: lambda w: (config.get("lenet") or {}).get("search_threads") or config.get("threads_per_job", 1)
        resources:
            mem_mb=lambda w: W.mem_mb(w.dataset, "evaluate"),
            runtime=lambda w: W.runtime_min(w.dataset, "evaluate"),
        benchmark:
            f"{RES}/benchmarks/lenet_evaluate/{{experiment}}_{{dataset}}_s{{seed}}.tsv"
        log:
            f"{RES}/logs/lenet_evaluate/{{experiment}}_{{dataset}}_s{{seed}}.log",
        conda:
            "../../envs/ctbench.yaml"
        shell:
            "OMP_NUM_THREADS={params.threads} {CPU_RECORD} {params.cpu:q} "
            "ctbench evaluate --model {params.models:q} {params.args:q} --search-threads {threads} "
            "--experiment {wildcards.experiment} --out {output} --quiet > {log} 2>&1"


# The LeNet models: the report reads their sidecars with the final models' (--models: training_time.csv only; the
# other model tables keep to the final models' folders).
LENET_MODELS = expand(rules.lenet_train.output[0], zip, **W.wildcards("lenet")) if W.jobs("lenet") else []
# Their evaluations: `ctbench report --lenet-eval` (table1_lenet.csv only; the paper's tables stay on the MLPs').
LENET_EVALS = expand(rules.lenet_evaluate.output[0], zip, **W.wildcards("lenet_evaluation")) if W.jobs(
    "lenet_evaluation") else []
