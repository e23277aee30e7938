# Stage 6: tables, figures, CPU time per stage, Proposition 3.1 check and claim verdicts → the report folder.
rule prop31:
    output:
        W.path("prop31_file", table="summary"),
        W.path("prop31_file", table="settings"),
    params:
        job=lambda w: W.job("prop31"),
        quick=lambda w: "--quick" if W.job("prop31")["quick"] else "",
        out=W.path("prop31"),
        code=code("study_cmds"),
        cpu=f"{RES}/benchmarks/prop31/prop31.cpu.json",
    benchmark:
        f"{RES}/benchmarks/prop31/prop31.tsv"
    log:
        f"{RES}/logs/prop31.log",
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "{CPU_RECORD} {params.cpu:q} "
        "ctbench prop31 {params.quick} --out {params.out} > {log} 2>&1"


# The figures that need none of the report's tables (the grid searches', the tuning stage's, robustness), into the
# report folder beside it: a job of its own, so the report job does not draw (issue 21) and a change of figure code
# reruns only this one. Its output lists what it drew (report_figures.json); the book and the gallery read it.
REPORT_FIGURES = bool(W.jobs("grid_chunk") or W.jobs("robustness"))


rule report_figures:
    input:
        grids=expand(rules.grid_chunk.output[0], zip, **W.wildcards("grid_chunk")),
        robustness=expand(rules.robustness.output[0], zip, **W.wildcards("robustness")),
    output:
        W.path("report_figures"),
    params:
        optional=lambda w, input: " ".join(
            f"--{flag} {' '.join(files)}" for flag, files in (("grids", input.grids), ("robustness", input.robustness))
            if files),
        out=W.path("report"),
        code=code("report_figure_cmds"),
        cpu=f"{RES}/benchmarks/report_figures/report_figures.cpu.json",
    benchmark:
        f"{RES}/benchmarks/report_figures/report_figures.tsv"
    log:
        f"{RES}/logs/report_figures.log",
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "{CPU_RECORD} {params.cpu:q} "
        "ctbench report-figures {params.optional} --out {params.out} > {log} 2>&1"


# The per-seed ledger (every claim judged on each training seed's tables, the Table-1 cells per seed) as a job of its
# own (issue 21: half of the report job's CPU): it reads the evaluation, robustness and attribution files and the
# models' training times, none of the pooled tables, into the report folder (verdicts_seeds.csv/.md, table1_seeds.csv,
# listed in seed_ledger.json). The report reads its per-seed verdicts for verdicts.csv's seed shares (a DAG edge).
SEED_LEDGER_EVALS = expand(rules.evaluate.output[0], zip, **W.wildcards("evaluation"))
SEED_LEDGER = bool(SEED_LEDGER_EVALS or RETRAIN_TO_REPORT)
SEED_LEDGER_FILE = f"{W.path('report')}/seed_ledger.json"


rule report_seed_ledger:
    input:
        evals=SEED_LEDGER_EVALS,
        retrain=RETRAIN_EVALS if RETRAIN_TO_REPORT else [],
        robustness=expand(rules.robustness.output[0], zip, **W.wildcards("robustness")),
        attribution=expand(rules.attribution.output[0], zip, **W.wildcards("attribution")),
        # the report's --models (their sidecars' training times, split by seed)
        models=[*made_by(W.final_models(), *MAIN_MODELS, *ABLATION_MODELS), *LENET_MODELS],
        claims="claims.yaml",
    output:
        SEED_LEDGER_FILE,
    params:
        optional=lambda w, input: " ".join(
            f"--{flag} {' '.join(files)}"
            for flag, files in (("eval", input.evals), ("retrain-eval", input.retrain),
                                ("robustness", input.robustness), ("attribution", input.attribution),
                                ("models", input.models))
            if files),
        nan_groups=config.get("report", {}).get("ip_star_nan_groups", "drop"),
        out=W.path("report"),
        code=code("report_cmds"),
        cpu=f"{RES}/benchmarks/report_seed_ledger/report_seed_ledger.cpu.json",
    benchmark:
        f"{RES}/benchmarks/report_seed_ledger/report_seed_ledger.tsv"
    log:
        f"{RES}/logs/report_seed_ledger.log",
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "{CPU_RECORD} {params.cpu:q} "
        "ctbench report-seed-ledger {params.optional} --claims {input.claims} --ip-star-nan-groups {params.nan_groups} "
        "--out {params.out} > {log} 2>&1"


rule report:
    input:
        evals=expand(rules.evaluate.output[0], zip, **W.wildcards("evaluation")),
        robustness=expand(rules.robustness.output[0], zip, **W.wildcards("robustness")),
        attribution=expand(rules.attribution.output[0], zip, **W.wildcards("attribution")),
        grids=expand(rules.grid_chunk.output[0], zip, **W.wildcards("grid_chunk")),
        tuned=expand(rules.tune_select.output[0], zip, **W.wildcards("tune_best")),
        # every final model (their sidecars give the appendix's Table 2), made by train_final(_ablation)(_seed), and the
        # LeNet models when the lenet stage is on (lenet_train: training_time.csv only)
        models=[*made_by(W.final_models(), *MAIN_MODELS, *ABLATION_MODELS), *LENET_MODELS],
        prop31=rules.prop31.output if W.jobs("prop31") else [],
        consistency=expand(rules.consistency.output[0], zip, **W.wildcards("consistency")),
        # the retrain stage's evaluations (workflow/rules/retrain.smk): passed as --retrain-eval when retrain.report
        retrain=RETRAIN_EVALS,
        # the LeNet pair's evaluation (workflow/rules/lenet.smk): --lenet-eval, table1_lenet.csv only
        lenet=LENET_EVALS,
        claims="claims.yaml",
        # the jobs that write into the report folder beside it run first, so that its index.json lists their files
        # and a failing report cannot be mistaken for their writer: the per-seed ledger (read for the seed shares)
        # and the figures
        seed_ledger=SEED_LEDGER_FILE if SEED_LEDGER else [],
        figures=rules.report_figures.output if REPORT_FIGURES else [],
    output:
        W.path("report_index"),
    params:
        optional=lambda w, input: " ".join(
            f"--{flag} {' '.join(files)}"
            for flag, files in (("robustness", input.robustness), ("attribution", input.attribution),
                                ("grids", input.grids), ("tuned", input.tuned),
                                ("consistency", input.consistency),
                                ("retrain-eval", input.retrain if RETRAIN_TO_REPORT else []),
                                ("lenet-eval", input.lenet))
            if files
        ),
        profile=config["profile"],
        config_json=json.dumps(config, sort_keys=True, default=str),
        benchmarks=W.path("benchmarks"),
        # the other stages of this run that write into the report folder (the files of any other stage are set aside)
        stages=" ".join(s for s, on in (
            ("figure1", any(j["figure"] == "figure1" for j in W.jobs("figures"))),
            ("black_figure1", any(j["figure"] == "black_figure1" for j in W.jobs("figures"))),
            ("black_figure2", any(j["figure"] == "black_figure2" for j in W.jobs("figures"))),
            ("mnist_figures", any(j["figure"] == "mnist" for j in W.jobs("figures"))),
            ("prop31", W.jobs("prop31")), ("fidelity_study", W.jobs("fidelity_effect")),
            ("report_figures", REPORT_FIGURES)) if on),
        # the figures that need no table are the report_figures job's (above)
        figures="--no-figures",
        seed_ledger=lambda w, input: f"--seed-ledger {input.seed_ledger}" if input.seed_ledger else "",
        publish="--publish" if config.get("report", {}).get("publish", False) else "",
        # the report's aggregation switch (ctbench.report.settings): NaN IP* groups dropped (authors) or withheld
        nan_groups=config.get("report", {}).get("ip_star_nan_groups", "drop"),
        out=W.path("report"),
        code=code("report_cmds"),
        cpu=f"{RES}/benchmarks/report/report.cpu.json",
    benchmark:
        f"{RES}/benchmarks/report/report.tsv"
    log:
        f"{RES}/logs/report.log",
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "{CPU_RECORD} {params.cpu:q} "
        "ctbench report --eval {input.evals} --models {input.models} {params.optional} --claims {input.claims} "
        "--benchmarks {params.benchmarks} --profile {params.profile} --config-json {params.config_json:q} "
        "--stages {params.stages} {params.figures} {params.seed_ledger} {params.publish} --ip-star-nan-groups {params.nan_groups} --out {params.out} "
        "> {log} 2>&1"


# What the book (and the report gallery) shows: the report, the figures with models of their own, the fidelity study.
BOOK_INPUTS = [
    *rules.report.output,
    *(rules.report_figures.output if REPORT_FIGURES else []),
    *([SEED_LEDGER_FILE] if SEED_LEDGER else []),
    *(rules.figure1.output if any(j["figure"] == "figure1" for j in W.jobs("figures")) else []),
    *(rules.black_figure1.output if any(j["figure"] == "black_figure1" for j in W.jobs("figures")) else []),
    *(rules.black_figure2.output if any(j["figure"] == "black_figure2" for j in W.jobs("figures")) else []),
    *(rules.mnist_figures.output if any(j["figure"] == "mnist" for j in W.jobs("figures")) else []),
    *(rules.fidelity_effects.output if W.jobs("fidelity_effect") else []),
]


# Snakemake's own report (`snakemake --report report.html`): the report folder's tables and figures, sorted into one
# folder per stage, each a category of the report; captions in workflow/report/*.rst.
def _gallery(stage, category, label):
    return report(directory(f"{W.path('report_gallery')}/{stage}"), patterns=["{name}.{ext}"], category=category,
                  subcategory=label, caption=f"../report/{stage}.rst", labels={"result": "{name}", "format": "{ext}"})


rule report_gallery:
    input:
        BOOK_INPUTS,
    output:
        claims=_gallery("claims", "1. Claims", "verdicts per published version"),
        tables=_gallery("paper_tables", "2. Paper tables", "Tables 1-3 and the appendix tables"),
        figures=_gallery("figures", "3. Figures", "Figure 1 and MNIST"),
        robustness=_gallery("robustness", "4. Robustness", "FGSM and PGD"),
        grids=_gallery("grids", "5. Grid searches and tuning", "appendix grids"),
        prop31=_gallery("prop31", "6. Proposition 3.1", "protection check"),
        consistency=_gallery("consistency", "7. Consistency study", "Black et al. 2022"),
        fidelity=_gallery("fidelity", "8. Fidelity switches", "code vs paper"),
        provenance=_gallery("provenance", "9. Provenance and CPU time", "versions and benchmarks"),
        other=_gallery("other", "10. Other outputs", "not sorted into a stage"),
    params:
        report=W.path("report"),
        out=W.path("report_gallery"),
        code=code("report_cmds"),
        cpu=f"{RES}/benchmarks/report_gallery/report_gallery.cpu.json",
    benchmark:
        f"{RES}/benchmarks/report_gallery/report_gallery.tsv"
    log:
        f"{RES}/logs/report_gallery.log",
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "{CPU_RECORD} {params.cpu:q} "
        "ctbench gallery --report {params.report} --out {params.out} > {log} 2>&1"

