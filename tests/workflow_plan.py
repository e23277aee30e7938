"""The jobs ``snakemake -n -p`` plans for a profile, normalised, so that two versions of the workflow can be compared
job by job: the job set (rule, inputs, outputs, logs, wildcards, resources, threads) must be the same; the shell
commands are compared as parsed argument lists (the order of repeated options aside is significant), and are listed
separately, since a refactoring may quote or group arguments differently on purpose (``--shell`` makes a changed
command fail the comparison too).

A refactoring of the rules must plan exactly the same jobs:

    python tests/workflow_plan.py --against main                 # smoke, quick and paper: this tree vs main
    python tests/workflow_plan.py --against main paper_table1

Set ``CTBENCH_DATA`` as for a real run (the start-up check looks at the raw files of the real datasets).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
#: per-job lines that differ between two runs of the same plan
_VOLATILE = ("jobid", "reason", "priority")


def parse(text: str, results: str) -> list[str]:
    """The jobs of a ``snakemake -n -p`` output, one canonical JSON string each, sorted; ``results`` becomes
    ``{results}``."""
    jobs, job = [], None
    for line in text.splitlines():
        stripped = line.strip()
        if line.startswith(("rule ", "localrule ")) and line.endswith(":"):
            job = {"rule": line.split()[1].rstrip(":")}
            jobs.append(job)
        elif job is not None and line.startswith("    ") and ": " in stripped:
            key, value = stripped.split(": ", 1)
            if key not in _VOLATILE:
                items = sorted(v.strip() for v in value.split(", ")) if key in ("input", "output", "log") else value
                job[key] = items
        elif job is not None and stripped.startswith("Shell command:"):
            job["shell"] = stripped.removeprefix("Shell command:").strip()
        elif not stripped:
            job = None
    out = [json.dumps(j, sort_keys=True).replace(results, "{results}") for j in jobs]
    return sorted(out)


def plan(root: Path, profile: str, results: str) -> list[str]:
    """The normalised plan of ``workflow/config/<profile>.yaml`` for the workflow in ``root``."""
    code = root if (root / "ctbench").is_dir() else ROOT  # a copied workflow (copy_workflow) runs this tree's code
    env = {**os.environ, "PYTHONPATH": str(code), "PATH": f"{SNAKEMAKE.parent}{os.pathsep}{os.environ['PATH']}"}
    p = subprocess.run([str(SNAKEMAKE), "-n", "-p", "--cores", "1", "--configfile", f"workflow/config/{profile}.yaml",
                        "--config", f"results={results}"], cwd=root, env=env, capture_output=True, text=True,
                       timeout=600)
    if p.returncode:
        raise RuntimeError(f"snakemake -n in {root} ({profile}) failed:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return parse(p.stdout + p.stderr, results)


def jobs_by_rule(root: Path, profile: str, results: str) -> dict[str, list[dict]]:
    """Rule → its planned jobs (``input``/``output``/``log`` as lists, ``shell`` as text), paths under ``results``
    written ``{results}``: what a test asserts about one profile's plan."""
    jobs: dict[str, list[dict]] = {}
    for j in plan(root, profile, results):
        d = json.loads(j)
        jobs.setdefault(d["rule"], []).append(d)
    return jobs


def copy_workflow(dst: Path) -> Path:
    """The workflow's files (Snakefile, rules, configs, claims) copied to ``dst``, so that a dry run there writes
    Snakemake's ``.snakemake`` folder outside the checkout."""
    import shutil

    for name in ("Snakefile", "workflow", "envs", "claims.yaml"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dst / name)
    return dst


def diff(before: list[str], after: list[str]) -> tuple[list[str], list[str]]:
    """(jobs only in ``before``, jobs only in ``after``)."""
    b, a = Counter(before), Counter(after)
    return sorted((b - a).elements()), sorted((a - b).elements())


def _argv(shell: str) -> list[str]:
    """A shell command as its words, ``--model A --model B`` and ``--model A B`` alike (``NAME=PATH`` lists)."""
    words, out, flag = shlex.split(shell), [], None
    for w in words:
        if w.startswith("--"):
            flag = w
            if w == "--model":
                continue
        elif flag == "--model":
            out.append(f"--model={w}")
            continue
        out.append(w)
    return out


def split(jobs: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """(the jobs without their shell command, job → its command's words)."""
    bare, shells = [], {}
    for j in jobs:
        d = json.loads(j)
        shell = d.pop("shell", "")
        key = json.dumps(d, sort_keys=True)
        bare.append(key)
        shells[key] = _argv(shell) if shell else []
    return bare, shells


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", required=True, help="git revision to compare this working tree with")
    ap.add_argument("profiles", nargs="*", default=["smoke", "quick", "paper"])
    ap.add_argument("--shell", action="store_true", help="a changed shell command fails the comparison too")
    args = ap.parse_args(argv)
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        ref = Path(tmp) / "ref"
        ref.mkdir()
        archive = subprocess.run(["git", "archive", args.against], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(ref)], input=archive, check=True)
        results = str(Path(tmp) / "results")
        for profile in args.profiles:
            (before, sh_b), (after, sh_a) = split(plan(ref, profile, results)), split(plan(ROOT, profile, results))
            gone, new = diff(before, after)
            changed = sorted(k for k in set(sh_b) & set(sh_a) if sh_b[k] != sh_a[k])
            failed += bool(gone or new) or (args.shell and bool(changed))
            print(f"{profile}: {'same jobs' if not (gone or new) else f'{len(gone)} job(s) gone, {len(new)} new'}"
                  f" ({len(after)} jobs); {len(changed)} shell command(s) with other arguments")
            for tag, jobs in (("-", gone), ("+", new)):
                for j in jobs[:20]:
                    print(f"  {tag} {j[:400]}")
            for k in changed[:10]:
                b, a = sh_b[k], sh_a[k]
                print(f"  ~ {json.loads(k)['rule']}: only before {[w for w in b if w not in a][:6]}, "
                      f"only after {[w for w in a if w not in b][:6]}"[:600])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
