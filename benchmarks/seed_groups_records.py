"""A benchmark-records folder for the critical-path model of the grouped small jobs (issue 21, group_seeds):
the committed run's records (copied), plus one record per ``*_seeds`` job of the new plan, whose CPU-s is the sum of
its members' committed per-seed records less ``--saving`` per member after the first (0 = no saving credited: an
upper bound of the grouped job's time). ``critical_path.py --records OUT`` then times the new DAG's jobs from it.

    python benchmarks/seed_groups_records.py --records /work/regen2/results/paper/benchmarks --out /tmp/records \\
        --saving 0
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

#: grouped rule → the per-seed rule whose records its members have
RULES = {"evaluate_seeds": "evaluate", "retrain_evaluate_seeds": "retrain_evaluate",
         "robustness_seeds": "robustness", "attribution_seeds": "attribution"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=Path, required=True, help="the committed run's benchmarks/ folder")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--saving", type=float, default=0.0, help="CPU-s saved per member after the first")
    ap.add_argument("--paper", type=Path, default=Path(__file__).resolve().parents[1] / "workflow/config/paper.yaml")
    a = ap.parse_args()
    from ctbench.workflow import Workflow
    from ctbench.workflow_check import typed_config

    W = Workflow(typed_config([a.paper], {}))
    a.out.mkdir(parents=True, exist_ok=True)
    for d in a.records.iterdir():  # copies: critical_path.py's rglob does not enter linked folders
        if d.is_dir() and not (a.out / d.name).exists():
            shutil.copytree(d, a.out / d.name)
    for rule, per_seed in RULES.items():
        kind = {"evaluate": "evaluation", "retrain_evaluate": "retrain_evaluation"}.get(per_seed, per_seed)
        folder = a.out / rule
        folder.mkdir(exist_ok=True)
        totals = defaultdict(float)
        for g in W.jobs(f"{kind}_group"):
            name = "_".join(str(g[f]) for f in ("experiment", "dataset") if f in g)
            cpu = [json.loads((a.records / per_seed / f"{name}_s{s}.cpu.json").read_text())["cpu_seconds"]
                   for s in g["seeds"]]
            totals[name] = sum(cpu) - a.saving * (len(cpu) - 1)
            (folder / f"{name}.tsv").write_text(f"s\tcpu_time\n{totals[name]:.3f}\t{totals[name]:.3f}\n")
            (folder / f"{name}.cpu.json").write_text(json.dumps({"cpu_seconds": totals[name]}))
        print(f"{rule}: {len(totals)} jobs, {sum(totals.values()):.0f} CPU-s, largest "
              f"{max(totals.items(), key=lambda kv: kv[1]) if totals else None}", file=sys.stderr)


if __name__ == "__main__":
    main()
