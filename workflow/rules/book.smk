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
    benchmark:
        f"{RES}/benchmarks/book/book.tsv"
    log:
        f"{RES}/logs/book.log",
    conda:
        "../../envs/ctbench.yaml"
    shell:
        "ctbench book --report {params.report} --out {params.out} {params.strict} > {log} 2>&1"
