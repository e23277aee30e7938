# Stage 1: deterministic splits, feature metadata and domain boxes (cached by ctbench under data/processed/).
rule data:
    output:
        W.pattern("data"),
    params:
        fidelity=config["fidelity"],
        data_params=lambda w: json.dumps((config.get("data_params") or {}).get(w.dataset, {}), sort_keys=True),
        code=code("data_cmds"),
    benchmark:
        f"{RES}/benchmarks/data/{{dataset}}.tsv"
    log:
        f"{RES}/logs/data/{{dataset}}.log",
    resources:
        mem_mb=4000,
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "ctbench data prepare {wildcards.dataset} --fidelity {params.fidelity} --params {params.data_params:q} "
        "--out {output} > {log} 2>&1"
