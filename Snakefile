# ctbench: the whole paper as one DAG.
#   snakemake --cores N                                       the paper (workflow/config/paper.yaml)
#   snakemake --cores 2 --configfile workflow/config/quick.yaml  synthetic data, minutes
#   snakemake --cores 2 --configfile workflow/config/smoke.yaml  every stage on tiny sizes (CI)
# Rules are thin: each calls one `ctbench` command. Which jobs exist and each job's settings are planned once, by the
# stage's jobs(config) in ctbench/experiments/ (looked up by wildcard through ctbench.workflow.Workflow, helpers in
# workflow/rules/common.smk); each rule's params carry its job's resolved settings and a fingerprint of the code it
# runs, so a changed setting or library module reruns what it affects. Every output path is a template of
# ctbench.facts.PATHS (W.pattern / W.path), and a rule that reads another's files names them as rules.X.output, so
# the DAG (data → grids → tune → train → evaluate → report → book) can be read from the rules.
import os
import sys

from snakemake.utils import min_version

from ctbench.facts import EXPERIMENTS, GRID_NAMES, OBJECTIVE_LABELS, TUNING_GRIDS
from ctbench.workflow import Workflow
from ctbench.workflow_check import snakemake_config

min_version("9.0")
# Jobs call the `ctbench` installed next to this Snakemake, even when its virtualenv is not activated.
os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")


configfile: "workflow/config/paper.yaml"


# Start-up check, before the first job: the config typed by ctbench's YAML 1.2 reader (the files, and the --config
# values, which Snakemake passes as text), then every setting of every job (schema, fidelity switches, device, data
# files, each model's and grid point's train config) by the same code as `ctbench train` (ctbench.workflow_check).
try:
    _typed = snakemake_config(workflow)
    config.clear()
    config.update(_typed)
    W = Workflow(config)
    # `--unlock` after a killed run runs no job: it must work whatever the data directory or config says
    if "--unlock" not in sys.argv:
        # under a cluster executor the jobs run on other nodes: this one (a login node) need not have their GPU, nor
        # need the node of one submitted job (remote_exec) have the GPU of another: each job's ctbench checks its own
        W.check(os.path.join(workflow.basedir, "workflow/schemas/config.schema.yaml"),
                jobs_run_here=not (workflow.non_local_exec or workflow.remote_exec))
except (ValueError, OSError) as err:  # ctbench.errors.ConfigError and friends, an unreadable file: one message
    sys.exit(f"ctbench: error in the workflow config: {err}")
RES = W.results  # logs and benchmarks (Snakemake's own files) live under it too
# a failing job also leaves a record of its own there (Snakemake deletes a job's log before it runs it again)
os.environ["CTBENCH_FAILURE_LOGS"] = os.path.abspath(f"{RES}/logs/failed")
# Every rule that runs ctbench names envs/ctbench.yaml (`conda:`, relative to its rule file) for --use-conda users.


wildcard_constraints:
    experiment="|".join(EXPERIMENTS),
    objective="|".join(OBJECTIVE_LABELS),
    seed=r"\d+",
    dataset=r"[a-z0-9_]+",
    grid="|".join([*GRID_NAMES, *TUNING_GRIDS]),
    key=r"bl[a-z0-9_]*",
    chunk=r"\d+",
    switch=r"[a-z_]+",


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/grids.smk"
include: "workflow/rules/tune.smk"
include: "workflow/rules/final.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/robustness.smk"
include: "workflow/rules/attribution.smk"
include: "workflow/rules/consistency.smk"
include: "workflow/rules/retrain.smk"
include: "workflow/rules/lenet.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/book.smk"


# `snakemake --report report.html`: this description, the rule graph, run times, and the results that the rules
# mark with report() (report_gallery: one category per stage; the book's front page).
report: "workflow/report/workflow.rst"


rule all:
    input:
        rules.report.output,
        rules.book.output if config.get("book", {}).get("enabled", True) else [],
        rules.report_gallery.output,
        rules.stage_times.output,
    default_target: True
