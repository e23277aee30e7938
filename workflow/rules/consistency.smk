# The consistency study (Black et al., ICLR 2022): a base model, counterfactuals by each method ± SNS, RS and LOO
# retrained models as one population, invalidation rates; part `black2022` (003's Table 1) and part `ct` (the same
# on CT and BL models). One job per dataset (and seed); the report turns the files into tables and the figure.
# Jobs (settings per part): ctbench.experiments.consistency.jobs.
#
# Shards (issue 21): Seizure's job is 593 CPU-s, 534 of them training its 200 retrained models, the DAG's longest
# chain. With `consistency.shards: {DATASET: K}` (part black2022) the K slices of a job's retrained models train in K
# `consistency_shard` jobs at once, and the `consistency` job trains only the base model, searches, and evaluates on
# the shards' models: its files are bitwise the single job's (tests/test_consistency_shards.py). Datasets not
# listed keep the single job (their 53-175 CPU-s are off the critical path; a shard job repeats the data load and
# the setup). Shard files are temporary.


def consistency_shards(w):
    """K of a consistency job: `consistency.shards[dataset]` for part black2022, else 1 (the single job)."""
    if w.part != "black2022":
        return 1
    return int(((config.get("consistency") or {}).get("shards") or {}).get(w.dataset, 1))


def consistency_shard_files(w):
    k = consistency_shards(w)
    if k < 2:
        return []
    return expand(rules.consistency_shard.output[0], part=w.part, dataset=w.dataset, seed=w.seed, shard=range(k),
                  n=k)


rule consistency_shard:
    output:
        temp(W.pattern("consistency_shard")),
    wildcard_constraints:
        part="black2022|ct",
        shard=r"\d+",
        n=r"\d+",
    params:
        job=job("consistency"),
        settings=lambda w: json.dumps(W.job("consistency", w)["settings"], sort_keys=True),
        code=code("study_cmds"),
        cpu=f"{RES}/benchmarks/consistency_shard/{{part}}_{{dataset}}_k{{shard}}_n{{n}}_s{{seed}}.cpu.json",
    threads: 1
    resources:
        mem_mb=lambda w: W.mem_mb(w.dataset, "evaluate"),
        runtime=lambda w: 4 * W.runtime_min(w.dataset),
    benchmark:
        f"{RES}/benchmarks/consistency_shard/{{part}}_{{dataset}}_k{{shard}}_n{{n}}_s{{seed}}.tsv"
    log:
        f"{RES}/logs/consistency/{{part}}/{{dataset}}_s{{seed}}_k{{shard}}of{{n}}.log",
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "{CPU_RECORD} {params.cpu:q} "
        "ctbench consistency --part {wildcards.part} --dataset {wildcards.dataset} --seed {wildcards.seed} "
        "--settings {params.settings:q} --shard {wildcards.shard}/{wildcards.n} --out {output} --quiet > {log} 2>&1"


rule consistency:
    input:
        shards=consistency_shard_files,
    output:
        W.pattern("consistency"),
    wildcard_constraints:
        part="black2022|ct",
    params:
        job=job("consistency"),
        settings=lambda w: json.dumps(W.job("consistency", w)["settings"], sort_keys=True),
        code=code("study_cmds"),
        cpu=f"{RES}/benchmarks/consistency_{{part}}/{{dataset}}_s{{seed}}.cpu.json",
        retrained=lambda w, input: ["--retrained", *input.shards] if input.shards else [],
    threads: 1
    resources:
        mem_mb=lambda w: W.mem_mb(w.dataset, "evaluate"),
        runtime=lambda w: 4 * W.runtime_min(w.dataset),
    benchmark:
        f"{RES}/benchmarks/consistency_{{part}}/{{dataset}}_s{{seed}}.tsv"
    log:
        f"{RES}/logs/consistency/{{part}}/{{dataset}}_s{{seed}}.log",
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "{CPU_RECORD} {params.cpu:q} "
        "ctbench consistency --part {wildcards.part} --dataset {wildcards.dataset} --seed {wildcards.seed} "
        "--settings {params.settings:q} {params.retrained:q} --out {output} --quiet > {log} 2>&1"
