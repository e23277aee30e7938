# Stage 2: the appendix grid searches (Notes 3, 5, 7) on the synthetic data. Each job trains and evaluates a
# chunk of grid points against one shared baseline model (BL does not depend on generator/penalty parameters).
# Jobs: ctbench.experiments.grids.jobs (one per chunk; a baseline per grid, dataset, key and seed).


def grid_args(kind):
    """The settings of a grid job as ``ctbench grid`` arguments (JSON values are quoted by Snakemake's :q)."""

    def args(w):
        j = W.job(kind, w)
        out = ["--dataset", j["dataset"], "--fidelity", j["fidelity"]]
        for flag, value in (("--fidelity-overrides", j["fidelity_overrides"]), ("--data-params", j["data_params"]),
                            ("--overrides", j["grid_overrides"])):
            if value:
                out += [flag, json.dumps(value, sort_keys=True)]
        return out + (["--epochs", str(int(j["epochs"]))] if j["epochs"] else [])

    return args


rule grid_baseline:
    input:
        rules.data.output,
    output:
        W.pattern("grid_baseline"),
    params:
        job=job("grid_baseline"),
        fidelity=FIDELITY,
        args=grid_args("grid_baseline"),
        code=code("grid_cmds"),
        cpu=f"{RES}/benchmarks/grid_baseline/{{grid}}_{{dataset}}_{{key}}_s{{seed}}.cpu.json",
    threads: 1
    resources:
        mem_mb=lambda w: W.mem_mb(w.dataset),
    benchmark:
        f"{RES}/benchmarks/grid_baseline/{{grid}}_{{dataset}}_{{key}}_s{{seed}}.tsv"
    log:
        f"{RES}/logs/grids/{{grid}}_{{dataset}}_baseline_{{key}}_s{{seed}}.log",
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "{CPU_RECORD} {params.cpu:q} "
        "ctbench grid baseline --grid {wildcards.grid} --key {wildcards.key} --seed {wildcards.seed} {params.args:q} "
        "--threads {threads} --quiet --out {output} > {log} 2>&1"


rule grid_chunk:
    input:
        baseline=rules.grid_baseline.output[0],
    output:
        W.pattern("grid_chunk"),
    params:
        job=job("grid_chunk"),
        fidelity=FIDELITY,
        args=grid_args("grid_chunk"),
        points=lambda w: [a for p in W.job("grid_chunk", w)["points"] for a in ("--point", p)],
        eval=lambda w: ["--eval", json.dumps(e, sort_keys=True)] if (e := W.job("grid_chunk", w)["evaluation"]) else [],
        code=code("grid_cmds"),
        cpu=f"{RES}/benchmarks/grid_chunk/{{grid}}_{{dataset}}_{{key}}_c{{chunk}}_s{{seed}}.cpu.json",
    threads: 1
    resources:
        mem_mb=lambda w: W.mem_mb(w.dataset),
        runtime=lambda w: 2 * W.runtime_min(w.dataset) * len(W.job("grid_chunk", w)["points"]),
    benchmark:
        f"{RES}/benchmarks/grid_chunk/{{grid}}_{{dataset}}_{{key}}_c{{chunk}}_s{{seed}}.tsv"
    log:
        f"{RES}/logs/grids/{{grid}}_{{dataset}}_{{key}}_c{{chunk}}_s{{seed}}.log",
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "{CPU_RECORD} {params.cpu:q} "
        "ctbench grid run --grid {wildcards.grid} --seed {wildcards.seed} {params.args:q} {params.points:q} "
        "--baseline {input.baseline} {params.eval:q} --threads {threads} --quiet --out {output} > {log} 2>&1"
