"""HELOC's batch size: App. B.2 gives every dataset's but HELOC's, and the study uses Keras' default, 32. This runs
the study itself (the paper profile's job: every method, 100 RS + 100 LOO models, base seed 0) with the batch size
replaced, and writes one ``black2022-causes.csv`` row per method against the committed run (batch 32).

    PYTHONPATH=. CTBENCH_DATA=/work/shared/data python benchmarks/black2022_causes/batch_size.py \\
        heloc_b22 128,512 --out /tmp/bsz --seed0 results/paper/consistency > /tmp/bsz/rows.csv

The batch sizes tried are the paper's own for its other datasets (128: Adult, Seizure, Warfarin; 512: Taiwanese
Credit). Each run's per-counterfactual file stays in ``--out`` (resumable), with its sidecar.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd
from base_seeds import paper_job

from ctbench.experiments import consistency as C
from ctbench.report.tables.consistency_tables import read, table1

#: which datasets App. B.2 trains with a batch size
PAPER_USES = {16: "App. B.2: CTG", 32: "App. B.2: German Credit", 128: "App. B.2: Adult, Seizure, Warfarin",
              512: "App. B.2: Taiwanese Credit"}
CAUSE_HEADER = ["difference", "dataset", "method", "n_models", "ours", "alternative", "source", "ours_success",
                "alt_success", "ours_cost_l2", "alt_cost_l2", "ours_iv_loo", "alt_iv_loo", "ours_iv_rs", "alt_iv_rs",
                "log"]


def run(ds: str, batch: int, out: Path) -> Path:
    dest = out / f"{ds}_b{batch}_s0.csv"
    if not dest.exists():
        arch = C.ARCHITECTURES[ds]
        C.ARCHITECTURES[ds] = replace(arch, batch_size=batch)
        try:
            df = C.run(paper_job(ds, 0))
        finally:
            C.ARCHITECTURES[ds] = arch
        C.write(df, dest)
        print(f"{ds} batch {batch}: {df.attrs['meta']['cpu_seconds']['total']:.0f} CPU-s", file=sys.stderr, flush=True)
    return dest


def rows(ds: str, batch: int, alt: Path, seed0: Path) -> pd.DataFrame:
    base = next(p for p in (seed0 / "black2022").glob(f"{ds}_s0.csv*") if not p.name.endswith(".json"))
    ours, theirs = (table1(read([f])[0], None).set_index("method") for f in (base, alt))
    stated = C.ARCHITECTURES[ds].batch_size
    out = []
    for m in ours.index:
        a, b = ours.loc[m], theirs.loc[m]
        out.append([f"batch size {batch}", a["dataset"], m, 100,
                    f"{stated} (Keras' default; App. B.2 gives none for HELOC)",
                    f"{batch} ({PAPER_USES.get(batch, 'not one of App. B.2')})",
                    "App. B.2 (not stated for HELOC); the study at base seed 0, 100 RS + 100 LOO models",
                    a["validity"], b["validity"], a["cost_l2"], b["cost_l2"], a["iv_loo"], b["iv_loo"], a["iv_rs"],
                    b["iv_rs"], "black2022-causes/heloc_batch_size.txt"])
    return pd.DataFrame(out, columns=CAUSE_HEADER)


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset")
    ap.add_argument("batches", help="comma-separated batch sizes")
    ap.add_argument("--out", type=Path, default=Path("/tmp/bsz"))
    ap.add_argument("--seed0", type=Path, required=True, help="the committed run's consistency folder")
    a = ap.parse_args(argv)
    if a.dataset not in C.ARCHITECTURES:
        ap.error(f"{a.dataset!r} is not a dataset of Black et al.'s study; one of {sorted(C.ARCHITECTURES)}")
    try:
        batches = [int(b) for b in a.batches.split(",")]
    except ValueError:
        ap.error(f"batch sizes must be comma-separated integers, got {a.batches!r}")
    if any(b < 1 for b in batches):
        ap.error(f"batch sizes must be >= 1, got {a.batches!r}")
    a.out.mkdir(parents=True, exist_ok=True)
    frames = [rows(a.dataset, b, run(a.dataset, b, a.out), a.seed0) for b in batches]
    pd.concat(frames).to_csv(sys.stdout, index=False, header=False, float_format="%.4g")


if __name__ == "__main__":
    main(sys.argv[1:])
