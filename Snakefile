# ctbench: the whole paper as one DAG.
#   snakemake --cores N                                       the paper (workflow/config/paper.yaml)
#   snakemake --cores 2 --configfile workflow/config/quick.yaml  synthetic data, minutes
#   snakemake --cores 2 --configfile workflow/config/smoke.yaml  every stage on tiny sizes (CI)
# Rules are thin: each calls one `ctbench` command; what to build and how is decided in ctbench.workflow.
import os
import sys

from snakemake.utils import min_version, validate

from ctbench.workflow import Workflow

min_version("9.0")
# Jobs call the `ctbench` installed next to this Snakemake, even when its virtualenv is not activated.
os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")


configfile: "workflow/config/paper.yaml"


validate(config, "workflow/schemas/config.schema.yaml")
W = Workflow(config)
RES = W.results


wildcard_constraints:
    experiment="single|mutability|ablation|baseline",
    objective="full|vanilla|energy|adversarial",
    seed=r"\d+",
    dataset=r"[a-z0-9_]+",
    grid="gen_params|penalties|training_params|tune|tune_lr",
    key=r"bl[a-z0-9_]*",
    chunk=r"\d+",
    switch=r"[a-z_]+",


include: "workflow/rules/data.smk"
include: "workflow/rules/grids.smk"
include: "workflow/rules/tune.smk"
include: "workflow/rules/final.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/robustness.smk"
include: "workflow/rules/attribution.smk"
include: "workflow/rules/consistency.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/book.smk"


rule all:
    input:
        W.final_targets(),
    default_target: True
