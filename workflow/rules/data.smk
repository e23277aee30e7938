# Stage 1: deterministic splits, feature metadata and domain boxes (cached by ctbench under data/processed/).
rule data:
    output:
        W.pattern("data"),
    params:
        # the switches that shape the data (ctbench.fidelity.DATA_SWITCHES), resolved: a change reruns this rule
        fidelity={k: FIDELITY[k] for k in DATA_SWITCHES},
        overrides=json.dumps({k: v for k, v in (config.get("fidelity_overrides") or {}).items()
                              if k in DATA_SWITCHES}, sort_keys=True),
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
        "ctbench data prepare {wildcards.dataset} --fidelity {config[fidelity]} "
        "--fidelity-overrides {params.overrides:q} --params {params.data_params:q} --out {output} > {log} 2>&1"
