# The consistency study (Black et al., ICLR 2022): a base model, counterfactuals by each method ± SNS, RS and LOO
# retrained models as one population, invalidation rates; part `black2022` (003's Table 1) and part `ct` (the same
# on CT and BL models). One job per dataset (and seed); the report turns the files into tables and the figure.
# Jobs (settings per part): ctbench.experiments.consistency.jobs.
rule consistency:
    output:
        W.pattern("consistency"),
    wildcard_constraints:
        part="black2022|ct",
    params:
        job=job("consistency"),
        settings=lambda w: json.dumps(W.job("consistency", w)["settings"], sort_keys=True),
        code=code("study_cmds"),
        cpu=f"{RES}/benchmarks/consistency_{{part}}/{{dataset}}_s{{seed}}.cpu.json",
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
        "--settings {params.settings:q} --out {output} --quiet > {log} 2>&1"
