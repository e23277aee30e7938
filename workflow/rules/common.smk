# Helpers of the rule files. Every job is planned once, by its stage's jobs(config) in ctbench/experiments/
# (ctbench.workflow.Workflow looks a job up by its wildcards): a rule's params carry that job's full resolved
# settings, as functions of the wildcards only, so Snakemake reruns a job whose settings changed (and what reads its
# files); `code` is the fingerprint of the ctbench source the rule runs (ctbench.code_version), so a library change
# reruns what it can affect. Which rule consumes which rule's files is written in the rules: rules.X.output.
import json
import re

from snakemake.io import regex_from_filepattern

from ctbench.code_version import fingerprint
from ctbench.fidelity import DATA_SWITCHES, resolve_fidelity


def job(kind, **fixed):
    """A params function: the job of ``kind`` (ctbench.workflow.PLANS) that the rule's wildcards name."""
    return lambda w: W.job(kind, w, **fixed)


def code(module):
    """The fingerprint of ctbench.cli.<module> (the command the rule calls) and every ctbench module it imports."""
    return fingerprint(f"ctbench.cli.{module}")


# The resolved fidelity switches (mode and fidelity_overrides applied): a param of every rule whose outputs they set.
FIDELITY = resolve_fidelity(config["fidelity"], config.get("fidelity_overrides") or {}).to_dict()


def made_by(files, *outputs):
    """``files`` (paths), each checked to be a file that one of ``outputs`` (output templates of other rules, e.g.
    rules.train_final.output) makes: the consumer's edge to its producer, written in the consumer's rule."""
    patterns = [re.compile(regex_from_filepattern(o)) for out in outputs for o in out]
    files = list(files)
    for f in files:
        if not any(p.match(f) for p in patterns):
            raise ValueError(f"{f} is not an output of the rule(s) named as its producer")
    return files


def from_job(kind, key, *outputs, **fixed):
    """An input function: the files that field ``key`` of the rule's job names (a mapping's values or a list),
    made by ``outputs`` (made_by)."""

    def files(w):
        named = W.job(kind, w, **fixed)[key]
        return made_by(named.values() if isinstance(named, dict) else named, *outputs)

    return files


def model_args(kind):
    """A params function: ``NAME=PATH`` of each model of the job (``ctbench evaluate --model ...``)."""
    return lambda w: [f"{name}={path}" for name, path in W.job(kind, w)["models"].items()]


# The prefix of a command that counts its own CPU (ctbench.cpu_record): `{CPU_RECORD} {params.cpu:q} ctbench ...`
# runs the command and writes what the kernel counted for it (user + system seconds, peak RSS) to params.cpu, the
# job's `benchmark:` record with `.cpu.json` for `.tsv`; `ctbench stage-times` prefers it to Snakemake's record, which
# samples and under-counts (~20%). Rules whose command code does not change in a regeneration (data, figure1,
# black_figure1/2) keep Snakemake's record only, so that adding this reran none of them.
CPU_RECORD = "python -m ctbench.cpu_record"


# Small evaluation jobs grouped per dataset (evaluation.group_seeds, ctbench.experiments.seed_groups): the per-seed
# rule (evaluate, retrain_evaluate, robustness, attribution) keeps the datasets that stay one job per seed, and its
# *_seeds rule runs each other dataset's per-seed jobs, unchanged, in one process (`ctbench each COMMAND`).
def only(datasets, grouped):
    """A wildcard constraint for a per-seed rule: ``datasets`` where some are grouped, else any dataset."""
    if not grouped:
        return r"[a-z0-9_]+"
    return "|".join(re.escape(d) for d in datasets) or "(?!)"


def evaluate_argv(j, out):
    """``ctbench evaluate``'s arguments of one evaluation job (as the per-seed rules' shell writes them)."""
    return (["--model", *[f"{n}={p}" for n, p in j["models"].items()]]
            + (["--constrained"] if j["constrained"] else [])
            + [a for k, v in j["settings"].items() for a in ("--set", f"{k}={json.dumps(v)}")]
            + ["--experiment", j["experiment"], "--out", out, "--quiet"])


def robustness_argv(j, out):
    """``ctbench robustness``'s arguments of one robustness job (as the robustness rule's shell writes them)."""
    return ["--model", *[f"{n}={p}" for n, p in j["models"].items()], "--seed", str(j["seed"]), "--experiment",
            j["experiment"], "--out", out]


def attribution_argv(j, out):
    """``ctbench attribution``'s arguments of one attribution job (as the attribution rule's shell writes them)."""
    return ["--model", *[f"{n}={p}" for n, p in j["models"].items()],
            *[a for k, flag in (("n_rounds", "--rounds"), ("n_samples", "--samples"), ("steps", "--steps"))
              for a in (flag, str(j[k]))], "--seed", str(j["seed"]), "--experiment", "mutability", "--out", out]


def each_jobs(kind, argv, path_kind, fields):
    """A params function: the arguments of every member of a grouped job (``ctbench each --jobs``), as JSON; each
    member writes result file ``path_kind`` named by its ``fields``."""
    return lambda w: json.dumps([argv(m, W.path(path_kind, **{f: m[f] for f in fields}))
                                 for m in W.job(kind, w)["members"]])
