# Stage 7: the Jupyter Book from the report (no training inside the book; builds offline).
rule book:
    input:
        W.book_inputs(),
    output:
        report(f"{RES}/book/_build/html/index.html", caption="../report/book.rst", category="11. Book",
               subcategory="front page"),
    params:
        strict="" if config.get("book", {}).get("strict", True) else "--no-strict",
    benchmark:
        f"{RES}/benchmarks/book/book.tsv"
    log:
        f"{RES}/logs/book.log",
    shell:
        "ctbench book --report {RES}/report --out {RES}/book {params.strict} > {log} 2>&1"
