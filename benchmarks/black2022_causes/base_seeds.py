"""Black et al.'s Table 1 is one base model per dataset, trained from a seed the paper does not give (App. B.4: "a
base model F(θ) with a specified random seed"); its SDs (Table 3) are spreads over the 100 retrained models, not over
base models. This script runs the study itself (``ctbench.experiments.consistency.run``, the paper profile's job for
the dataset: every method, 100 RS + 100 LOO models, the seeded 1,000 factuals) at other base seeds, so each cell of
Table 1 gets its spread over base models: how far a reproduction that differs from the paper only in that seed can
land. Seed 0 is the committed run (its files are read, not rerun, when ``--seed0 DIR`` names its consistency folder).

    PYTHONPATH=. CTBENCH_DATA=/work/shared/data python benchmarks/black2022_causes/base_seeds.py \\
        german_credit,cardiotocography 1,2,3,4 --out /tmp/bs
    PYTHONPATH=. python benchmarks/black2022_causes/base_seeds.py --table /tmp/bs \\
        --seed0 results/paper/consistency > benchmarks/results/black2022-base-seeds.csv

The first form writes one ``<dataset>_s<seed>.csv`` (+ sidecar) per run, as the workflow's consistency rule does;
the second turns the folder into one row per (dataset, method, seed) with the report's own Table-1 aggregation
(``consistency_tables.table1``: means over the valid counterfactuals).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[2]
PAPER = ROOT / "workflow" / "config" / "paper.yaml"
COLUMNS = ["dataset", "method", "seed", "n_models", "validity", "cost_l2", "cost_l1", "iv_loo", "iv_rs", "n_valid"]


def paper_job(dataset: str, seed: int) -> dict:
    """The paper profile's black2022 job for ``dataset``, at base seed ``seed``."""
    from ctbench.experiments.consistency import jobs

    config = yaml.safe_load(PAPER.read_text())
    found = [j for j in jobs(config) if j["part"] == "black2022" and j["dataset"] == dataset]
    if not found:
        raise SystemExit(f"{dataset}: not a dataset of the paper profile's consistency block")
    return {**found[0], "seed": int(seed)}


def run(datasets: list[str], seeds: list[int], out: Path) -> None:
    from ctbench.experiments.consistency import run as run_job
    from ctbench.experiments.consistency import write

    out.mkdir(parents=True, exist_ok=True)
    for ds in datasets:
        for seed in seeds:
            dest = out / f"{ds}_s{seed}.csv"
            if dest.exists():  # resumable: a finished run is kept
                continue
            df = run_job(paper_job(ds, seed))
            write(df, dest)
            cpu = df.attrs["meta"]["cpu_seconds"]["total"]
            print(f"{ds} seed {seed}: {len(df)} rows, {cpu:.0f} CPU-s", flush=True)


def table(folder: Path, seed0: Path | None) -> pd.DataFrame:
    """One row per (dataset, method, seed): the report's Table-1 aggregation of each run's file."""
    from ctbench.report.tables.consistency_tables import read, table1

    def runs(d: Path) -> list[Path]:
        return sorted(p for p in d.glob("*_s*.csv*") if not p.name.endswith(".json"))

    files = runs(folder) + (runs(seed0 / "black2022") if seed0 is not None else [])
    rows = []
    for f in files:
        df, metas = read([f])
        if df.empty or metas[0].get("part", "black2022") != "black2022":
            continue
        t = table1(df, None)
        n = int(df["n_rs"].max()) if "n_rs" in df else None
        rows.append(t.assign(seed=int(df["seed"].iloc[0]), n_models=n))
    if not rows:
        raise SystemExit(f"no black2022 run files (<dataset>_s<seed>.csv[.gz]) under {folder}"
                         + (f" or {seed0 / 'black2022'}" if seed0 is not None else ""))
    out = pd.concat(rows, ignore_index=True)
    return out[COLUMNS].sort_values(["dataset", "method", "seed"], kind="stable").reset_index(drop=True)


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("datasets", nargs="?", help="comma-separated dataset keys (run mode)")
    ap.add_argument("seeds", nargs="?", help="comma-separated base seeds (run mode)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/bs"), help="folder of the runs' files")
    ap.add_argument("--table", type=Path, help="turn this folder of runs into the CSV on stdout")
    ap.add_argument("--seed0", type=Path, help="the committed run's consistency folder (seed 0)")
    a = ap.parse_args(argv)
    if a.table is not None:
        table(a.table, a.seed0).to_csv(sys.stdout, index=False, float_format="%.4f")
        return
    if not a.datasets or not a.seeds:
        ap.error("give DATASETS and SEEDS, or --table FOLDER")
    try:
        seeds = [int(s) for s in a.seeds.split(",")]
    except ValueError:
        ap.error(f"SEEDS must be comma-separated integers, got {a.seeds!r}")
    if any(s < 0 for s in seeds):
        ap.error(f"base seeds must be >= 0, got {a.seeds!r}")
    for ds in a.datasets.split(","):
        paper_job(ds, 0)  # an unknown dataset stops here, before any run
    run(a.datasets.split(","), seeds, a.out)


if __name__ == "__main__":
    main(sys.argv[1:])
