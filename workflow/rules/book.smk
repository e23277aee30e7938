# Stage 7: the Jupyter Book from the report (no training inside the book; builds offline).
rule book:
    input:
        BOOK_INPUTS,
    output:
        report(W.path("book_index"), caption="../report/book.rst", category="11. Book", subcategory="front page"),
    params:
        strict="" if config.get("book", {}).get("strict", True) else "--no-strict",
        report=W.path("report"),
        out=W.path("book"),
        code=code("report_cmds"),
        cpu=f"{RES}/benchmarks/book/book.cpu.json",
    benchmark:
        f"{RES}/benchmarks/book/book.tsv"
    log:
        f"{RES}/logs/book.log",
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "{CPU_RECORD} {params.cpu:q} "
        "ctbench book --report {params.report} --out {params.out} {params.strict} > {log} 2>&1"


# The last job: CPU time per stage from every job's benchmark record, the report's, the report figures', the
# per-seed ledger's, the book's and the gallery's included (the report's own benchmarks.csv, written while it runs, cannot hold them), into the
# report folder.
rule stage_times:
    input:
        rules.report.output,
        rules.report_figures.output if REPORT_FIGURES else [],
        rules.report_seed_ledger.output if SEED_LEDGER else [],
        rules.book.output if config.get("book", {}).get("enabled", True) else [],
        rules.report_gallery.output,
    output:
        W.path("stage_times"),
        W.path("stage_times_jobs"),
    params:
        benchmarks=W.path("benchmarks"),
        code=code("report_cmds"),
    log:
        f"{RES}/logs/stage_times.log",
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "ctbench stage-times --benchmarks {params.benchmarks} --out {output[0]} --jobs-out {output[1]} > {log} 2>&1"
