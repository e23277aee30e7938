"""The Jupyter Book: includes rendered from a report folder, an offline strict build, MathJax served locally."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from ctbench.report.book import build as bookmod

ROOT = Path(__file__).resolve().parents[1]

#: a sitecustomize that refuses every non-loopback connection and DNS lookup in the build subprocess
SITECUSTOMIZE = textwrap.dedent('''
    import os
    import socket

    _LOG = os.environ.get("CTBENCH_BLOCK_NETWORK")
    if _LOG:
        _LOCAL = ("127.", "::1", "localhost", "0.0.0.0")

        def _record(what):
            with open(_LOG, "a") as fh:
                fh.write(what + "\\n")

        _connect, _connect_ex, _getaddrinfo = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo

        def _check(self, address):
            if self.family in (socket.AF_INET, socket.AF_INET6) and not str(address[0]).startswith(_LOCAL):
                _record(f"connect {address!r}")
                raise OSError(f"network blocked by ctbench tests: {address!r}")

        def connect(self, address):
            _check(self, address)
            return _connect(self, address)

        def connect_ex(self, address):
            _check(self, address)
            return _connect_ex(self, address)

        def getaddrinfo(host, *args, **kwargs):
            if host is not None and not str(host).startswith(_LOCAL):
                _record(f"getaddrinfo {host!r}")
                raise socket.gaierror(f"network blocked by ctbench tests: {host!r}")
            return _getaddrinfo(host, *args, **kwargs)

        socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = connect, connect_ex, getaddrinfo
        with open(_LOG + ".active", "w") as fh:
            fh.write(str(os.getpid()))
''')


def _png(path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 1.5))
    ax = fig.subplots()
    ax.plot([0, 1], [1, 0])
    ax.set_title(title)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=40)


def make_report(report: Path) -> Path:
    """A small report folder as ``ctbench report`` writes it (LS only; some outputs deliberately absent)."""
    report.mkdir(parents=True, exist_ok=True)
    pub = {("LS", "IP"): (26.26, 0.67), ("LS", "IP*"): (51.28, 2.01), ("LS", "Cost"): (16.41, 0.57),
           ("Circ", "IP"): (58.88, 0.37)}
    ours = {("LS", "IP"): (24.0, 0.5, True), ("LS", "IP*"): (40.0, 3.0, True), ("LS", "Cost"): (17.0, 0.6, True)}
    rows = []
    for key in pub:
        v, pm, sig = ours.get(key, (float("nan"), float("nan"), float("nan")))
        rows.append({"dataset": key[0], "metric": key[1], "reduction_pct": v, "pm": pm, "significant": sig,
                     "n_seeds": 5, "seed_mean": v, "seed_lb": v - 3, "seed_ub": v + 3, "seed_significant": True,
                     "flag": "" if key[0] == "LS" else "not computable: 64% of the IP values are NaN"})
    from ctbench.report.tables.paper_tables import PUBLISHED_DIR
    from ctbench.report.tables.table1 import compare_versions

    compare_versions(pd.DataFrame(rows), PUBLISHED_DIR).to_csv(report / "table1.csv", index=False)
    pd.DataFrame({"dataset": ["LS", "Avg."], "ct_unconstrained": [1.0, 1.0], "bl_unconstrained": [1.0, 1.0],
                  "pub_ct_unconstrained": [1.0, 0.91], "pub_bl_unconstrained": [1.0, 0.94],
                  "diff_ct_unconstrained": [0.0, 0.09], "diff_bl_unconstrained": [0.0, 0.06]}).to_csv(
        report / "table3.csv", index=False)
    pd.DataFrame({"dataset": ["LS", "LS"], "objective": ["full", "vanilla"], "median": [0.3, 25.0],
                  "lb_2_5": [0.2, 10.0], "ub_97_5": [0.4, 400.0], "n_rounds": [10, 10], "model": ["CT", "BL"],
                  "pub_median": [0.21, 30.69], "pub_lb_2_5": [0.2, 12.92], "pub_ub_97_5": [0.22, 629.2]}).to_csv(
        report / "table2.csv", index=False)
    rob = [{"dataset": "lin_sep", "experiment": "single", "model": m, "objective": o, "attack": a, "eps": e,
            "accuracy": 1.0 - e} for m, o in (("CT", "full"), ("BL", "vanilla")) for a in ("fgsm", "pgd")
           for e in (0.0, 0.05, 0.1)]
    pd.DataFrame(rob).to_csv(report / "robustness.csv", index=False)
    _png(report / "robustness.png", "robustness")
    _png(report / "grids" / "lin_sep_penalties.png", "grid")
    _png(report / "figure1.png", "figure 1")
    pd.DataFrame({"tau": [0.5, 0.9], "share_mature": [0.9, 0.4]}).to_csv(report / "grids" / "tune_ls.csv",
                                                                          index=False)
    pd.DataFrame({"stage": ["train", "evaluate"], "jobs": [2, 1], "cpu_seconds": [20.0, 40.0],
                  "wall_seconds": [11.0, 21.0]}).to_csv(report / "benchmarks.csv", index=False)
    (report / "provenance.json").write_text(json.dumps({"ctbench_version": "0.1.0", "torch": "2.13.0+cpu",
                                                        "profile": "smoke"}))
    (report / "e.csv.gz.json").write_text(json.dumps({"fidelity": {"mode": "reference", "ce_step_size": 0.1}}))
    (report / "index.json").write_text(json.dumps({"written": {"table1": {"rows": 4, "csv": "table1.csv"},
                                                               "robustness_figure": ["robustness.png"]},
                                                   "provenance": {"python": "3.11"}}))
    return report


def copy_book(dst: Path) -> Path:
    """A private copy of ``paper/`` (the build writes _generated/ and _build/ into it)."""
    shutil.copytree(ROOT / "paper", dst, ignore=shutil.ignore_patterns("_build", "_generated"))
    if not (dst / "prop31.md").exists():   # the chapter is written separately; the test needs the TOC complete
        (dst / "prop31.md").write_text("# Proposition 3.1\n\n```{prf:proposition} Protecting immutable features\n"
                                       ":label: prop-31\n\nA linear classifier $f(x) = S(\\Theta x)$.\n```\n")
    return dst


# --------------------------------------------------------------------------------------------------- includes


def test_includes_without_a_report_are_notes(tmp_path):
    book = copy_book(tmp_path / "book")
    out = bookmod.render_includes(None, book, claims_yaml=ROOT / "claims.yaml")
    for name in ("table1", "table2", "table3", "appendix_ci", "ablation", "robustness", "grids", "benchmarks",
                 "fidelity_effects", "provenance"):
        assert "Not yet run in this profile" in out[name].read_text(), name
    assert "not yet run" in out["verdicts"].read_text()
    assert "`ce_step_size`" in out["fidelity_switches"].read_text()   # from the code, always present
    # OL's measured causes are committed benchmark files, rendered whatever the report (issue 25, items 4 and 2)
    from ctbench.report.text.ol_causes_text import render_ol_causes
    assert out["discrepancy_ol_causes"].read_text() == render_ol_causes()


def test_includes_from_a_report(tmp_path):
    report = make_report(tmp_path / "report")
    book = copy_book(tmp_path / "book")
    out = bookmod.render_includes(report, book, claims_yaml=ROOT / "claims.yaml")
    t1 = out["table1"].read_text()
    # ours, the seed interval, July, final, March, agreement with July
    assert ("| LS | IP | 24.00\u00a0±\u00a00.50\\*<br>[21.0,\u00a027.0] | 29.05\u00a0±\u00a00.67\\* | "
            "26.26\u00a0±\u00a00.67\\* | 29.22 | sign and significance |") in t1
    assert "over n = 5 training seeds" in t1                              # one n for all rows: said once
    assert "| Circ | IP | — |" in t1 and "58.88\u00a0±\u00a00.37\\*" in t1
    assert "- Circ IP: not computable" in t1                              # notes below the table, not a column
    t2 = out["table2"].read_text()
    assert "(Δ\u00a0**0.09**)" in t2 and "**-5.69**" not in t2           # CT median outside, BL inside the CI
    assert "| LS | CT | 0.30<br><small>paper\u00a00.21" in t2
    assert "Not yet run" in out["appendix_ci"].read_text()
    assert "/_generated/report/robustness.png" in out["robustness"].read_text()
    assert "grids/lin_sep_penalties.png" in out["grids"].read_text()
    assert "grids/tune_ls.csv" in out["grids"].read_text()
    figs = out["paper_figures"].read_text()
    assert "/_generated/report/figure1.png" in figs and "Not yet run in this profile: `mnist_attribution.png`" in figs
    assert "appendix's mutability figure (`app_mtblty.svg`" in figs          # Figure 1 (b)/(d) is the appendix figure
    assert "**MNIST.**\n\n```{note}" in figs and not re.search(r"\S[^\n]*```", figs)   # fences open a line
    assert "total" in out["benchmarks"].read_text()
    prov = out["provenance"].read_text()
    assert "smoke" in prov and "**reference**" in prov
    verdicts = pd.read_csv(book / "_generated" / "report" / "verdicts.csv")
    ls = verdicts.set_index("claim").loc["t1_ip_ls"]
    # 24.00* vs July 29.05* (tolerance 5): magnitude off; vs final 26.26*: within
    assert (ls["verdict"], ls["verdict_satml_2026"]) == ("partly", "reproduced")
    assert not (report / "verdicts.csv").exists()                          # the report folder is not modified


# --------------------------------------------------------------------------------------------------- build


def _offline_env(tmp_path: Path) -> tuple[dict[str, str], Path]:
    site = tmp_path / "nonet"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    log = tmp_path / "network.log"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), *filter(None, [env.get("PYTHONPATH")])])
    env["CTBENCH_BLOCK_NETWORK"] = str(log)
    for proxy in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        env.pop(proxy, None)
    return env, log


def _build(tmp_path: Path) -> Path:
    pytest.importorskip("jupyter_book", reason="the book extra is not installed (pip install -e '.[book]')")
    pytest.importorskip("sphinx_proof")
    report = make_report(tmp_path / "report")
    book = copy_book(tmp_path / "book")
    env, log = _offline_env(tmp_path)
    html = bookmod.build_book(report, book, strict=True, claims_yaml=ROOT / "claims.yaml", env=env)
    assert Path(str(log) + ".active").exists(), "the network block was not active in the build"
    assert not log.exists(), f"the build tried to reach the network: {log.read_text()}"
    return html


def _remote_refs(page: str) -> list[str]:
    return re.findall(r"<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=[\"']((?:https?:)?//[^\"']+)", page)


def test_book_builds_offline_strict(tmp_path):
    html = _build(tmp_path)
    assert html.name == "index.html" and html.exists()
    site = html.parent
    claims = (site / "claims.html").read_text()
    assert "t1_ip_circ" in claims and "not yet run" in claims and "reproduced" in claims
    results = (site / "results.html").read_text()
    assert "58.88" in results and "Not yet run in this profile" in results
    assert (site / "_images" / "robustness.png").exists() and (site / "_images" / "figure1.png").exists()
    intro = (site / "intro.html").read_text()
    assert 'class="math notranslate nohighlight"' in intro
    assert re.search(r'<script[^>]*src="_static/mathjax/tex-chtml\.js"', intro)
    assert (site / "_static" / "mathjax" / "tex-chtml.js").exists()
    assert (site / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2").is_dir()
    for page in site.glob("*.html"):
        text = page.read_text()
        assert not _remote_refs(text), f"{page.name} loads remote resources: {_remote_refs(text)}"
        assert "cdn.jsdelivr.net/npm/mathjax" not in text and "mathjax@" not in text, page.name


def test_build_rejects_a_missing_report_folder_and_missing_toc_pages(tmp_path):
    book = copy_book(tmp_path / "book")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        bookmod.render_includes(tmp_path / "no-such-report", book)
    (book / "grids.md").unlink()
    with pytest.raises(bookmod.BookBuildError, match="missing: \\['grids'\\]"):
        bookmod.build_book(None, book)


@pytest.mark.slow
def test_mathjax_renders_in_headless_chromium(tmp_path):
    chromium = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    if chromium is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    html = _build(tmp_path)
    page = html.parent / "intro.html"
    # any request that is not file:// goes to a dead proxy, so the page must render from local files only
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
           f"--user-data-dir={tmp_path / 'chromium-profile'}", "--virtual-time-budget=15000", "--dump-dom",
           page.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    dom = proc.stdout
    assert "<mjx-container" in dom, f"MathJax did not render (exit {proc.returncode}): {proc.stderr[-2000:]}"
    assert dom.count("<mjx-container") >= 3, "expected the display equations and inline math to be typeset"
    assert "<mjx-merror" not in dom, "MathJax reported a TeX error"


def test_the_book_defaults_to_the_committed_result_set(tmp_path):
    report = bookmod.committed_results(ROOT / "paper")
    assert report == ROOT / "paper" / "results" / "report"
    t1 = pd.read_csv(report / "table1.csv")
    assert {"seed_lb", "preprint_2025_07_agreement"} <= set(t1.columns) and (t1["n_seeds"].dropna() >= 5).all()
    with pytest.raises(bookmod.BookBuildError, match="no committed result set"):
        bookmod.committed_results(tmp_path)


# --------------------------------------------------------------------------------------------------- markup, width

ARTICLE = ('<html><body><nav>**menu**</nav><article class="bd-article">'
           '<section class="tex2jax_ignore mathjax_ignore">{}</section></article></body></html>')


@pytest.mark.parametrize("body,leaked", [
    ("<p><strong>MNIST.</strong> ```{note}\nNot yet run</p>", "```{note}"),                 # fence opened mid-line
    ('<p>A <code class="literal">{figure} /x.png\n:width: 90%</code> here</p>', "{figure}"),  # fence as code span
    ("<div class=\"highlight\"><pre>**Figure 1.** ```{note}\ntext\n</pre></div>", "```{note}"),
    ("<p>{include} _generated/table1.md</p>", "{include}"),
    ("<p>**bold** was not rendered</p>", "**bold**"),
    ("<p>| a | b |\n|---|---|</p>", "|---|"),
])
def test_unrendered_markup_is_found(tmp_path, body, leaked):
    (tmp_path / "page.html").write_text(ARTICLE.format(body))
    found = bookmod.unrendered_markup(tmp_path)
    assert len(found) == 1 and found[0][0] == "page.html" and leaked in found[0][1], found


def test_rendered_markup_and_math_pass(tmp_path):
    body = ('<p><strong>MNIST.</strong></p><div class="admonition note"><p>Not yet run: <code>x.png</code></p></div>'
            '<span class="math notranslate nohighlight">\\(a^{**} = \\{note\\}\\)</span>'
            '<div class="highlight-bash"><pre>ctbench book --report DIR</pre></div><p>IP* and 5 * 3</p>')
    (tmp_path / "page.html").write_text(ARTICLE.format(body))
    assert bookmod.unrendered_markup(tmp_path) == []


def test_strict_build_fails_on_markup_that_did_not_render(tmp_path):
    pytest.importorskip("jupyter_book", reason="the book extra is not installed (pip install -e '.[book]')")
    book = copy_book(tmp_path / "book")
    (book / "_broken.md").write_text("**Broken.** ```{note}\nThis note opens mid-line.\n```\n")
    with (book / "figures.md").open("a") as fh:
        fh.write("\n```{include} _broken.md\n```\n")
    with pytest.raises(bookmod.BookBuildError, match=r"(?s)markup shown as text.*figures\.html.*Broken\. ```\{note\}"):
        bookmod.build_book(None, book, strict=True, claims_yaml=False)
    assert bookmod.build_book(None, book, strict=False, claims_yaml=False).exists()   # not strict: it builds


def test_the_committed_book_builds_strict_with_compact_tables(tmp_path):
    pytest.importorskip("jupyter_book", reason="the book extra is not installed (pip install -e '.[book]')")
    book = copy_book(tmp_path / "book")
    html = bookmod.build_book(bookmod.committed_results(ROOT / "paper"), book, strict=True)
    assert bookmod.unrendered_markup(html.parent) == []
    results = (html.parent / "results.html").read_text()
    # every table of the results chapter fits a laptop screen: at most 7 columns
    for table in re.findall(r"<table.*?</table>", results, re.S):
        header = re.search(r"<tr.*?</tr>", table, re.S).group(0)
        assert header.count("<th") <= 7, re.sub(r"<[^>]+>", " ", header)
    # the variant run kept beside the committed set (paper/results/variants/) is rendered, not "no variant run"
    discrepancies = (html.parent / "discrepancies.html").read_text()
    assert "reference_2025_07" in discrepancies and "No variant run" not in discrepancies
    # the committed set was made by one code version in one run (issue 20 item 6): the first page says which
    intro = (html.parent / "intro.html").read_text()
    assert "Mixed result set" not in intro
    assert "made by one code version" in intro or "is what the code at" in intro


def test_the_first_page_says_whether_the_result_set_is_mixed(tmp_path):
    from ctbench.report.book.meta_pages import render_result_set

    committed_dir = bookmod.committed_results(ROOT / "paper")
    prov = json.loads((committed_dir / "provenance.json").read_text())
    commit = {v for kind in prov["input_code_versions"].values() for v in kind}
    committed = render_result_set(committed_dir)
    assert prov["mixed"] is False and prov["dirty_inputs"] == 0  # the committed set: what one commit's code makes
    if len(commit) == 1:                                      # one run at one commit
        assert committed.startswith(f"Every number in this book was made by one code version, `{commit.pop()[:7]}`")
    else:  # several commits, each input made by the report commit's code for its stage (run_set.current_code)
        assert all(k["other"] == 0 for k in prov["stage_code"].values())
        assert committed.startswith(f"Every number in this book is what the code at `{prov['git_commit'][:7]}` "
                                    f"makes: its {sum(prov['code_versions'].values())} input files were written at "
                                    f"{len(commit)} commits")
    # a mixed set says so first (the committed set until 2026-11-26; here a hand-made provenance)
    (tmp_path / "mixed").mkdir()
    (tmp_path / "mixed" / "provenance.json").write_text(json.dumps({"input_code_versions": {
        "evaluations": {"a" * 40: 3}, "models": {"b" * 40 + "+dirty": 2}}, "mixed": True}))
    assert render_result_set(tmp_path / "mixed").startswith("```{warning}\n**Mixed result set.**")
    assert "_generated/result_set.md" in (ROOT / "paper" / "intro.md").read_text()
    (tmp_path / "provenance.json").write_text(json.dumps({"input_code_versions": {"evaluations": {"a" * 40: 3},
                                                                                  "models": {"a" * 40: 2}}}))
    assert render_result_set(tmp_path) == ("Every number in this book was made by one code version, `aaaaaaa` "
                                           "(5 input files).\n")
    assert "records no code versions" in render_result_set(tmp_path / "missing")


def test_fidelity_effects_and_prop31_tables_are_compact(tmp_path):
    from ctbench.report.book.figure_pages import render_prop31
    from ctbench.report.book.meta_pages import render_fidelity_effects

    rows = [{"switch": "mmd_length_scale", "dataset": d, "metric": m, "reference": 1.0, "paper": 1.5, "delta": 0.5,
             "pm_reference": 0.1, "pm_paper": 0.2, "reference_setting": 5.0, "paper_setting": 0.5,
             "experiment": "single", "epochs": 10, "n_runs": 10, "n_individuals": 50, "note": "evaluation only"}
            for d in ("lin_sep", "circles") for m in ("IP", "Cost")]
    pd.DataFrame(rows).to_csv(tmp_path / "fidelity_effects.csv", index=False)
    text = render_fidelity_effects(tmp_path)
    assert ("| `mmd_length_scale`<br>5.0 → 0.5 | LS | IP | 1.000\u00a0±\u00a00.100 | 1.500\u00a0±\u00a00.200 | 0.500 | "
            "evaluation only |") in text                                  # equal results stay in the table
    assert "Every row has experiment = single, epochs = 10" in text
    cols = [f"median_{k}_{s}" for k in ("rs", "abs_w_imm", "abs_w_mut") for s in ("u", "p", "bl")]
    summary = {"by": "all", "group": "all", "runs": 40, "lowered": 38, "share": 0.95, "ci_low": 0.83, "ci_high": 0.99,
               "median_ratio": 0.16, **dict.fromkeys(cols, 1.0), "acc_u": 0.76, "acc_p": 0.79, "acc_bl": 0.81}
    (tmp_path / "prop31").mkdir()
    pd.DataFrame([summary]).to_csv(tmp_path / "prop31" / "prop31_summary.csv", index=False)
    results, _ = render_prop31(tmp_path)
    assert "| all | all | 38 / 40 | 0.95 [0.83,\u00a00.99] | 0.160 | 1.000 / 1.000 / 1.000 | 0.760 / 0.790 / 0.810 |" \
        in results
