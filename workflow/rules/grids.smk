# Stage 2: the appendix grid searches (Notes 3, 5, 7) on the synthetic data. Each job trains and evaluates a
# chunk of grid points against one shared baseline model (BL does not depend on generator/penalty parameters).
rule grid_baseline:
    input:
        rules.data.output,
    output:
        W.pattern("grid_baseline"),
    params:
        common=lambda w: W.grid_common_args(w.grid, w.dataset),
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
        "ctbench grid baseline --grid {wildcards.grid} --key {wildcards.key} --seed {wildcards.seed} {params.common} "
        "--threads {threads} --quiet --out {output} > {log} 2>&1"


rule grid_chunk:
    input:
        baseline=rules.grid_baseline.output[0],
    output:
        W.pattern("grid_chunk"),
    params:
        points=lambda w: " ".join(f"--point {p}" for p in W.grid_chunk_ids(w.grid, w.key, w.chunk)),
        common=lambda w: W.grid_common_args(w.grid, w.dataset),
        eval=lambda w: W.grid_eval_arg(w.grid),
    threads: 1
    resources:
        mem_mb=lambda w: W.mem_mb(w.dataset),
        runtime=lambda w: 2 * W.runtime_min(w.dataset) * len(W.grid_chunk_ids(w.grid, w.key, w.chunk)),
    benchmark:
        f"{RES}/benchmarks/grid_chunk/{{grid}}_{{dataset}}_{{key}}_c{{chunk}}_s{{seed}}.tsv"
    log:
        f"{RES}/logs/grids/{{grid}}_{{dataset}}_{{key}}_c{{chunk}}_s{{seed}}.log",
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "ctbench grid run --grid {wildcards.grid} --seed {wildcards.seed} {params.common} {params.points} "
        "--baseline {input.baseline} {params.eval} --threads {threads} --quiet --out {output} > {log} 2>&1"
