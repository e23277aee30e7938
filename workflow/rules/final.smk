# Stage 4: the main models (single, mutability, ablation objectives and the shared vanilla baseline) with the
# paper's final hyper-parameters, or the tuning stage's choice when tune.select is true. One job per dataset and group
# (ctbench.experiments.final_training: the main models; the ablation's CD and AR) trains all of them, every seed
# included, as populations (ctbench.training.population): models that share constraints are one tensor program.
# The datasets named in `training.per_seed` (the paper profile: MNIST, the longest training) train one job per
# seed and group instead (rules *_seed; ctbench.experiments.final_split): the same models bit for bit, so the 34-core
# critical path holds one seed's training, not five. Each dataset is made by one of the two rules (wildcard
# constraints), and consumers name both: MAIN_MODELS, ABLATION_MODELS.
# Jobs, model paths and each model's train config: ctbench.experiments.final_training.jobs.
import re


def train_args(kind, group):
    """``--config-json CONFIG --out MODEL`` per member of the job (and ``--best`` when tuned); Snakemake quotes."""

    def args(w):
        j = W.job(kind, w, group=group)
        out = [a for m in j["members"] for a in ("--config-json", json.dumps(m["config"], sort_keys=True),
                                                 "--out", m["out"])]
        return out + (["--best", j["best"]] if j["best"] else [])

    return args


def tuned_best(kind, group):
    """An input function: tune_select's choice, only when tune.select is on and this dataset is tuned."""
    return lambda w: expand(rules.tune_select.output[0], dataset=w.dataset) if W.job(kind, w, group=group)[
        "best"] else []


GROUPED = W.final_datasets(per_seed=False)  # all seeds in one job
PER_SEED = W.final_datasets(per_seed=True)  # one job per seed
HAS_ABLATION = bool(W.final_members("ablation")["folder"])


def one_of(datasets):
    """A wildcard constraint that matches exactly these dataset names."""
    return "|".join(re.escape(d) for d in datasets)


if GROUPED:

    rule train_final:
        input:
            data=rules.data.output[0],
            best=tuned_best("final", "main"),
        output:
            expand(W.pattern("model", dataset="{{dataset}}"), zip, **W.final_members("main")),
        wildcard_constraints:
            dataset=one_of(GROUPED),
        params:
            job=job("final", group="main"),
            fidelity=FIDELITY,
            args=train_args("final", "main"),
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


if PER_SEED:

    rule train_final_seed:
        input:
            data=rules.data.output[0],
            best=tuned_best("final_seed", "main"),
        output:
            expand(W.pattern("model", dataset="{{dataset}}", seed="{{seed}}"), zip,
                   **W.final_members("main", per_seed=True)),
        wildcard_constraints:
            dataset=one_of(PER_SEED),
        params:
            job=job("final_seed", group="main"),
            fidelity=FIDELITY,
            args=train_args("final_seed", "main"),
            code=code("train_cmds"),
            cpu=f"{RES}/benchmarks/train_final_seed/{{dataset}}_s{{seed}}.cpu.json",
        threads: config.get("threads_per_job", 1)
        resources:
            mem_mb=lambda w: W.mem_mb(w.dataset),
            runtime=lambda w: W.runtime_min(w.dataset) * 4,
        benchmark:
            f"{RES}/benchmarks/train_final_seed/{{dataset}}_s{{seed}}.tsv"
        log:
            f"{RES}/logs/train_final_seed/{{dataset}}_s{{seed}}.log",
        conda:
            "../../envs/ctbench.yaml"
        shell:
            "{CPU_RECORD} {params.cpu:q} "
            "ctbench train {params.args:q} --set threads={threads} --quiet > {log} 2>&1"


if HAS_ABLATION and GROUPED:

    rule train_final_ablation:
        input:
            data=rules.data.output[0],
            best=tuned_best("final", "ablation"),
        output:
            expand(W.pattern("model", dataset="{{dataset}}"), zip, **W.final_members("ablation")),
        wildcard_constraints:
            dataset=one_of(GROUPED),
        params:
            job=job("final", group="ablation"),
            fidelity=FIDELITY,
            args=train_args("final", "ablation"),
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


if HAS_ABLATION and PER_SEED:

    rule train_final_ablation_seed:
        input:
            data=rules.data.output[0],
            best=tuned_best("final_seed", "ablation"),
        output:
            expand(W.pattern("model", dataset="{{dataset}}", seed="{{seed}}"), zip,
                   **W.final_members("ablation", per_seed=True)),
        wildcard_constraints:
            dataset=one_of(PER_SEED),
        params:
            job=job("final_seed", group="ablation"),
            fidelity=FIDELITY,
            args=train_args("final_seed", "ablation"),
            code=code("train_cmds"),
            cpu=f"{RES}/benchmarks/train_final_ablation_seed/{{dataset}}_s{{seed}}.cpu.json",
        threads: config.get("threads_per_job", 1)
        resources:
            mem_mb=lambda w: W.mem_mb(w.dataset),
            runtime=lambda w: W.runtime_min(w.dataset) * 4,
        benchmark:
            f"{RES}/benchmarks/train_final_ablation_seed/{{dataset}}_s{{seed}}.tsv"
        log:
            f"{RES}/logs/train_final_ablation_seed/{{dataset}}_s{{seed}}.log",
        conda:
            "../../envs/ctbench.yaml"
        shell:
            "{CPU_RECORD} {params.cpu:q} "
            "ctbench train {params.args:q} --set threads={threads} --quiet > {log} 2>&1"


# The final models' producers: consumers name *MAIN_MODELS (baseline, single, mutability) and *ABLATION_MODELS (the
# ablation's CD and AR, when the profile has the ablation), whichever of the rules above this profile defines.
MAIN_MODELS = [*([rules.train_final.output] if GROUPED else []),
               *([rules.train_final_seed.output] if PER_SEED else [])]
ABLATION_MODELS = [*([rules.train_final_ablation.output] if HAS_ABLATION and GROUPED else []),
                   *([rules.train_final_ablation_seed.output] if HAS_ABLATION and PER_SEED else [])]
