# Stage 7: the Jupyter Book from the report (no training inside the book; builds offline).
rule book:
    input:
        f"{RES}/report/index.json",
    output:
        f"{RES}/book/html/index.html",
    params:
        strict="--strict" if config.get("book", {}).get("strict", True) else "",
    log:
        f"{RES}/logs/book.log",
    shell:
        "ctbench book --report {RES}/report --out {RES}/book {params.strict} > {log} 2>&1"
