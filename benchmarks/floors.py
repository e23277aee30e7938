"""Issue 21: each stage's arithmetic floor, computed (not estimated by hand).

For every stage (Snakemake rule) of the committed paper set's ``paper/results/report/benchmarks.csv`` the FLOPs of
the dominant kernels the stage must run, from the ``paper`` profile's jobs as ctbench's own planner resolves them
(:class:`ctbench.workflow.Workflow` over ``workflow/config/paper.yaml``) and, where the count depends on the data,
from what the committed run recorded under ``--regen`` (model sidecars: training-set size, epochs, mean search steps
per counterfactual per epoch; evaluation files: search steps per counterfactual; robustness files: the ε grid).
FLOPs become seconds at one core's peak, measured here by a large matmul (float32, and float64 for the report).
A floor is a lower bound on arithmetic, not a target: memory traffic, Python, process start-up are all left out.

    python benchmarks/floors.py --regen /work/regen --out benchmarks/results
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

# LeNet-5 of ctbench.models.LeNet on 1x28x28: conv(1→6, 5x5, pad 2) 28x28, pool, conv(6→16, 5x5, pad 2) 14x14,
# pool, 784→120→84→n_classes. Written out so the test can check it against the formula.
LENET_LAYERS = (("conv", 1, 6, 5, 28 * 28), ("conv", 6, 16, 5, 14 * 14), ("fc", 7 * 7 * 16, 120), ("fc", 120, 84))


# -- FLOP formulas (pure: tests/test_floors.py) ---------------------------------------------------------------------
def mlp_forward(n_in: int, hidden: int, layers: int, n_out: int) -> int:
    """Multiply-adds of one row through an MLP, as 2·in·out per dense layer (biases and ReLU left out)."""
    if layers < 0 or min(n_in, n_out) < 1 or (layers and hidden < 1):
        raise ValueError(f"bad MLP shape in={n_in} hidden={hidden} layers={layers} out={n_out}")
    widths = [n_in] + [hidden] * layers + [n_out]
    return sum(2 * a * b for a, b in zip(widths[:-1], widths[1:], strict=True))


def dense_forward(widths: list[int]) -> int:
    """Multiply-adds of one row through dense layers of the given widths (input first), 2·in·out each."""
    if len(widths) < 2 or min(widths) < 1:
        raise ValueError(f"bad dense widths {widths}")
    return sum(2 * a * b for a, b in zip(widths[:-1], widths[1:], strict=False))


def lenet_forward(n_out: int = 10) -> int:
    """One 28x28 image through LeNet-5: 2·Cin·k²·Cout per output pixel per conv, 2·in·out per dense layer."""
    total = 0
    for layer in LENET_LAYERS:
        if layer[0] == "conv":
            _, cin, cout, k, pixels = layer
            total += 2 * cin * k * k * cout * pixels
        else:
            total += 2 * layer[1] * layer[2]
    return total + 2 * 84 * n_out


def model_forward(spec: dict[str, Any]) -> int:
    """Forward FLOPs per row of a sidecar's ``model_spec``."""
    kind = spec.get("type")
    if kind == "mlp":
        return mlp_forward(spec["n_features"], spec["hidden"], spec["layers"], spec["n_classes"])
    if kind == "linear":
        return mlp_forward(spec["n_features"], 0, 0, spec["n_classes"])
    if kind == "lenet":
        return lenet_forward(spec["n_classes"])
    raise ValueError(f"no FLOP formula for model type {kind!r}")


def training_flops(fwd: int, n_train: int, epochs: int, nce: int = 0, mean_steps: list[float] | None = None
                   ) -> dict[str, float]:
    """One model's training: SGD passes (forward + backward = 3 forwards per row per epoch) and, for a CT objective,
    the counterfactual search (each step a forward and a gradient to the input, 2 forwards, for ``nce`` counterfactuals
    times the epoch's mean steps) plus the counterfactuals' own forward/backward in the loss (3 forwards each).
    An epoch whose mean is not recorded (NaN: no search ran, e.g. burn-in) counts no search."""
    sgd = 3.0 * fwd * n_train * epochs
    steps = np.asarray(mean_steps or [], dtype=float)
    searched = np.isfinite(steps)
    search = 2.0 * fwd * nce * float(steps[searched].sum())
    ce_loss = 3.0 * fwd * nce * int(searched.sum())
    return {"sgd": sgd, "search": search, "ce_loss": ce_loss}


def n_counterfactuals(nce: int | None, n_train: int, batch_size: int) -> int:
    """Counterfactuals searched per epoch as the trainer draws them (``generate_epoch_counterfactuals``): nce, at
    least one per batch, at most the training set (None = all)."""
    if nce is None:
        return n_train
    return min(max(nce, -(-n_train // batch_size)), n_train)


def ig_flops(fwd: int, rounds: int, samples: int, steps: int) -> float:
    """Integrated gradients: rounds·samples rows, steps+1 points on the path, each a forward and an input gradient."""
    return 2.0 * fwd * rounds * samples * (steps + 1)


def attack_flops(fwd: int, rows: int, n_eps: int, pgd_steps: int) -> dict[str, float]:
    """FGSM (one gradient) and PGD (``pgd_steps`` gradients) per ε, each followed by one scoring forward."""
    return {"fgsm": n_eps * rows * (2.0 + 1.0) * fwd, "pgd": n_eps * rows * (2.0 * pgd_steps + 1.0) * fwd}


def ip_flops(rows: int, pool: int, dim: int) -> float:
    """IP: the L1 distance of every counterfactual to ``pool`` rows of the target class (rows·pool·D)."""
    return float(rows) * pool * dim


def mmd_flops(group_sizes: np.ndarray, n_sub: int, dim: int) -> float:
    """IP*: one MMD per group, the kernel matrix of the (n + n_sub) points, (n + n_sub)²·D."""
    g = np.asarray(group_sizes, dtype=float) + n_sub
    return float((g * g).sum() * dim)


def bootstrap_flops(rows: int, n_boot: int, n_metrics: int) -> float:
    """The percentile bootstrap as the estimator needs it: per replicate per row one draw and one add per metric."""
    return float(n_boot) * rows * (1 + n_metrics)


# -- peak ---------------------------------------------------------------------------------------------------------
def measure_peak(n: int = 2048, reps: int = 20) -> dict[str, float]:
    """GFLOP/s of one core (torch, one thread) on an n×n matmul: the best of ``reps`` by CPU time is the peak
    (``float32``, ``float64``); the median (``*_median``) shows how much the shared machine's load moved it."""
    import torch

    torch.set_num_threads(1)
    out = {}
    for dtype in (torch.float32, torch.float64):
        a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
        a @ b
        rates = []
        for _ in range(reps):
            t = time.process_time()
            a @ b
            rates.append(2.0 * n ** 3 / (time.process_time() - t) / 1e9)
        name = str(dtype).split(".")[-1]
        out[name], out[name + "_median"] = max(rates), float(np.median(rates))
    return out


# -- counts from the plan and the committed outputs ----------------------------------------------------------------
class Counter:
    """The stages' FLOPs from the planner's jobs and the committed run under ``regen``."""

    def __init__(self, regen: Path):
        from ctbench.workflow import Workflow
        from ctbench.workflow_check import typed_config

        self.regen = regen
        self.W = Workflow(typed_config([str(ROOT / "workflow/config/paper.yaml")], {}))
        self._side: dict[str, dict] = {}

    def file(self, rel: str) -> Path:
        p = self.regen / rel
        if not p.exists():
            raise FileNotFoundError(f"{p}: the committed run's file is missing (is --regen the run's root?)")
        return p

    def sidecar(self, model_path: str) -> dict:
        if model_path not in self._side:
            self._side[model_path] = json.loads(self.file(model_path + ".json").read_text())
        return self._side[model_path]

    def fwd(self, model_path: str) -> int:
        return model_forward(self.sidecar(model_path)["model_spec"])

    def trained(self, model_path: str) -> dict[str, float]:
        s = self.sidecar(model_path)
        log, cfg = s["log"], s["config"]
        vanilla = s.get("objective_effective", cfg["objective"])["name"] == "vanilla"
        steps = None if vanilla else log.get("mean_steps")
        n_train, tr = s["dataset"]["meta"]["n_train"], cfg["training"]
        return training_flops(self.fwd(model_path), n_train, len(log["epoch"]),
                              n_counterfactuals(tr["nce"], n_train, tr["batch_size"]), steps)

    # stages ---------------------------------------------------------------------------------------------------
    def train(self, kind: str, rule: str | None = None) -> dict[str, float]:
        tot: dict[str, float] = {}
        for job in self.W.jobs(kind):
            if rule and job.get("rule") != rule:
                continue
            outs = [m["out"] for m in job["members"]] if "members" in job else [job["out"]]
            for out in outs:
                for k, v in self.trained(out).items():
                    tot[k] = tot.get(k, 0.0) + v
        return tot

    def grid_baseline(self) -> dict[str, float]:
        tot: dict[str, float] = {}
        for job in self.W.jobs("grid_baseline"):
            for k, v in self.trained(job["baseline"]).items():
                tot[k] = tot.get(k, 0.0) + v
        return tot

    def grid_chunk(self) -> dict[str, float]:
        """Each point's training from its config, the run's per-epoch mean steps and the baseline's data size."""
        import pandas as pd

        tot = {"sgd": 0.0, "search": 0.0, "ce_loss": 0.0}
        for job in self.W.jobs("grid_chunk"):
            base = self.sidecar(job["baseline"])
            rel = Path(job["baseline"]).parent / f"{job['key']}_c{job['chunk']}_s{job['seed']}.csv"
            meta = json.loads(self.file(str(rel) + ".json").read_text())
            epochs = pd.read_csv(self.file(str(rel.parent / meta["epochs_csv"])))
            spec = dict(base["model_spec"])
            for point, cfg in meta["configs"].items():
                spec.update(hidden=cfg["model"]["hidden"], layers=cfg["model"]["layers"])
                steps = epochs.loc[epochs["point"] == point, "mean_steps"].tolist()
                n_train, tr = base["dataset"]["meta"]["n_train"], cfg["training"]
                f = training_flops(model_forward(spec), n_train, len(steps),
                                   n_counterfactuals(tr["nce"], n_train, tr["batch_size"]), steps)
                for k, v in f.items():
                    tot[k] += v
        return tot

    def evaluate(self, kind: str) -> dict[str, float]:
        """Search steps as recorded per counterfactual, IP against the protocol's ip_k rows, IP* per (model, λ, run)."""
        import pandas as pd

        tot = {"search": 0.0, "ip": 0.0, "ip_star": 0.0}
        for job in self.W.jobs(kind):
            rel = job.get("out") or self.W.path(kind, experiment=job["experiment"], dataset=job["dataset"],
                                                seed=job["seed"])
            meta = json.loads(self.file(rel + ".json").read_text())
            proto = meta["protocol"]
            df = pd.read_parquet(self.file(rel), columns=["model", "lambda_energy", "run", "steps"])
            for name, g in df.groupby("model", sort=False):
                path = job["models"][name]
                fwd, dim = self.fwd(path), self.sidecar(path)["model_spec"].get("n_features", 784)
                tot["search"] += 2.0 * fwd * float(g["steps"].sum())
                tot["ip"] += ip_flops(len(g), proto["ip_k"], dim)
                sizes = g.groupby(["lambda_energy", "run"]).size().to_numpy()
                tot["ip_star"] += mmd_flops(sizes, proto["mmd_n_sub"], dim)
        return tot

    def attribution(self) -> dict[str, float]:
        tot = 0.0
        for job in self.W.jobs("attribution"):
            for path in job["models"].values():
                tot += ig_flops(self.fwd(path), job["n_rounds"], job["n_samples"], job["steps"])
        return {"ig": tot}

    def robustness(self, pgd_steps: int) -> dict[str, float]:
        import pandas as pd

        tot = {"fgsm": 0.0, "pgd": 0.0}
        for job in self.W.jobs("robustness"):
            rel = self.W.path("robustness", dataset=job["dataset"], seed=job["seed"])
            curve = pd.read_csv(self.file(rel))
            for name, path in job["models"].items():
                n_test = self.sidecar(path)["dataset"]["summary"]["test"]
                for attack, n in curve[curve["model"] == name].groupby("attack").size().items():
                    tot[attack] += attack_flops(self.fwd(path), n_test, int(n), pgd_steps)[attack]
        return tot

    def consistency(self, part: str) -> dict[str, float]:
        """Retraining the base, RS and LOO models (the job's sidecar: sizes, epochs, model counts). Black et al.'s
        networks (``architecture.hidden``) on the dataset's features (loaded by ctbench); the CT part's BL/CT MLPs
        at their configs, each CT model's search at the matching main model's recorded mean steps per epoch."""
        from ctbench.data.registry import load_dataset

        tot = {"sgd": 0.0, "search": 0.0, "ce_loss": 0.0}
        for job in self.W.jobs("consistency"):
            if job["part"] != part:
                continue
            rel = self.W.path("consistency", part=part, dataset=job["dataset"], seed=job["seed"])
            meta = json.loads(self.file(rel + ".json").read_text())
            n_train = meta["n_train"]
            if part == "black2022":
                ds = load_dataset(job["dataset"])
                arch = meta["architecture"]
                fwd = dense_forward([ds.n_features, *arch["hidden"], ds.n_classes])
                m = meta["models"]["base"]
                f = training_flops(fwd, n_train, arch["epochs"])
                for k, v in f.items():
                    tot[k] += v * (1 + m["n_rs"] + m["n_loo"])
                continue
            main = f"{self.W.results}/models/single/{job['dataset']}/full_s{job['seed']}.pt"
            spec = dict(self.sidecar(main)["model_spec"])
            for name, cfg in meta["configs"].items():
                spec.update(hidden=cfg["model"]["hidden"], layers=cfg["model"]["layers"])
                epochs = cfg["training"]["epochs"]
                vanilla = cfg["objective"]["name"] == "vanilla"
                steps = None if vanilla else self.sidecar(main)["log"]["mean_steps"][:epochs]
                nce = n_counterfactuals(cfg["training"]["nce"], n_train, cfg["training"]["batch_size"])
                f = training_flops(model_forward(spec), n_train, epochs, nce, steps)
                m = meta["models"][name]
                for k, v in f.items():
                    tot[k] += v * (1 + m["n_rs"] + m["n_loo"])
        return tot

    def fidelity_effect(self) -> dict[str, float]:
        """Each switch's retrained models (``n_models_trained``) at the mean recorded count of the final models they
        stand in for (the switch's own trainings record no steps), and its evaluations (``n_rows`` per setting) at
        the main evaluation's mean recorded steps per counterfactual for that experiment and dataset, plus IP."""
        import pandas as pd

        tot = {"train": 0.0, "search": 0.0, "ip": 0.0}
        for job in self.W.jobs("fidelity_effect"):
            rel = self.W.path("fidelity_effect", switch=job["switch"], dataset=job["dataset"])
            meta = json.loads(self.file(rel + ".json").read_text())
            reused = meta["reused"]
            retrain = meta["switch"].get("retrain")
            stand_in = [p for n, p in reused.items() if retrain == "all" or n.startswith("full")]
            if meta["n_models_trained"]:
                per_model = np.mean([sum(self.trained(p).values()) for p in stand_in])
                tot["train"] += meta["n_models_trained"] * float(per_model)
            any_model = next(iter(reused.values()))
            fwd, dim = self.fwd(any_model), self.sidecar(any_model)["model_spec"]["n_features"]
            main_eval = self.W.path("evaluation", experiment=meta["experiment"], dataset=job["dataset"], seed=0)
            mean_steps = float(pd.read_parquet(self.file(main_eval), columns=["steps"])["steps"].mean())
            for setting in meta["settings"].values():
                tot["search"] += setting["n_rows"] * 2.0 * fwd * mean_steps
                tot["ip"] += ip_flops(setting["n_rows"], setting["protocol"]["ip_k"], dim)
        return tot

    def black_figure1(self) -> dict[str, float]:
        """Plain training of each model kind at each seed (the figure's sidecar settings) on the dataset's training
        split (n_train and D from the final model of that dataset) and their predictions on the grid."""
        meta = json.loads(self.file(f"{self.W.results}/report/black_figure1.json").read_text())
        st = meta["settings"]
        data = self.sidecar(f"{self.W.results}/models/single/{st['dataset']}/full_s0.pt")
        n_train = data["dataset"]["meta"]["n_train"]
        tot = {"sgd": 0.0, "grid": 0.0}
        for spec in st["models"].values():
            fwd = model_forward({"hidden": 0, "layers": 0, **spec, "n_features": data["model_spec"]["n_features"],
                                 "n_classes": data["model_spec"]["n_classes"]})
            for _ in meta["seeds"]:
                tot["sgd"] += training_flops(fwd, n_train, st["training"]["epochs"])["sgd"]
                tot["grid"] += float(fwd) * st["grid"] ** 2
        return tot

    def report(self, n_boot: int, n_metrics: int) -> tuple[dict[str, float], int]:
        import pyarrow.parquet as pq

        # the bootstrapped tables: IP on `single`, cost on `mutability`, drawn from one stream per dataset (same
        # strata), so one draw per `single` row per replicate serves both metrics (benchmarks/README.md, `rperf`)
        rows = sum(pq.ParquetFile(self.file(p)).metadata.num_rows for p in self.W.outputs("evaluation")
                   if "/single/" in p)
        return {"bootstrap": bootstrap_flops(rows, n_boot, n_metrics)}, rows


def fold_seed_groups(stages):
    """Count a ``<rule>_seeds`` stage (one process for a dataset's seeds, ``evaluation.group_seeds``) as ``<rule>``
    and Seizure's consistency shards as ``consistency_black2022``: the counters above count every file of a kind,
    whichever job wrote it."""
    stages = stages.copy()
    stages["stage"] = stages["stage"].str.removesuffix("_seeds")
    # Seizure's retrained models train in the shards of ``consistency.shards``; its merged sidecar counts them all
    stages["stage"] = stages["stage"].replace({"consistency_shard": "consistency_black2022"})
    return stages.groupby("stage", as_index=False, sort=True)[["jobs", "cpu_seconds"]].sum()


def _git_commit() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--regen", type=Path, required=True, help="root of the committed run (holds results/paper)")
    ap.add_argument("--stages", type=Path, default=ROOT / "paper/results/report/benchmarks.csv")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results")
    args = ap.parse_args(argv)
    import inspect

    import pandas as pd

    from ctbench.evaluation.aggregate import bootstrap_reduction
    from ctbench.evaluation.robustness import robustness_curve

    peak = measure_peak()
    c = Counter(args.regen)
    pgd_steps = inspect.signature(robustness_curve).parameters["n_steps"].default
    n_boot = inspect.signature(bootstrap_reduction).parameters["n_boot"].default
    report_flops, report_rows = c.report(n_boot, 2)
    # stage → (FLOPs by kernel, dtype, assumptions)
    counted: dict[str, tuple[dict[str, float], str, str]] = {
        "train_final": (c.train("final", "train_final"), "float32",
                        "MLP/linear 2·in·out per layer; SGD 3 fwd/row/epoch; search 2 fwd × nce × mean_steps(epoch) "
                        "from each sidecar's log; CE loss 3 fwd × nce/epoch; n_train and epochs from sidecars"),
        "train_final_ablation": (c.train("final", "train_final_ablation"), "float32", "as train_final"),
        "train_final_seed": (c.train("final_seed", "train_final_seed"), "float32",
                             "as train_final (MNIST, one job per seed)"),
        "train_final_ablation_seed": (c.train("final_seed", "train_final_ablation_seed"), "float32",
                                      "as train_final (MNIST's CD and AR, one job per seed)"),
        "retrain_train": (c.train("retrain_final"), "float32", "as train_final (retrain sidecars)"),
        "lenet_train": (c.train("lenet"), "float32", "LeNet-5 fwd 1.39 MFLOP/image (convs counted per output "
                        "pixel); otherwise as train_final"),
        "grid_baseline": (c.grid_baseline(), "float32", "as train_final (grid baseline sidecars)"),
        "grid_chunk": (c.grid_chunk(), "float32", "each point's config (chunk .csv.json) and per-epoch mean_steps "
                       "(.epochs.csv); the points' own evaluation (5 runs) NOT counted"),
        "evaluate": (c.evaluate("evaluation"), "float32",
                     "search 2 fwd × recorded steps per CE; IP rows·ip_k·D; IP* (n_run+mmd_n_sub)²·D per "
                     "(model, λ, run)"),
        "retrain_evaluate": (c.evaluate("retrain_evaluation"), "float32", "as evaluate"),
        "lenet_evaluate": (c.evaluate("lenet_evaluation"), "float32", "as evaluate, LeNet fwd; D = 784"),
        "attribution": (c.attribution(), "float32", "IG: rounds·samples·(steps+1) points × 2 fwd, per model"),
        "robustness": (c.robustness(pgd_steps), "float32",
                       f"test split × ε grid (rows of the committed curve); FGSM 3 fwd, PGD {pgd_steps}·2+1 fwd"),
        "consistency_black2022": (c.consistency("black2022"), "float32",
                                  "(1 + n_rs + n_loo) trainings of Black et al.'s net (sidecar architecture, epochs, "
                                  "n_train; D from the loaded data), SGD only; the 8 methods' searches and the VAE "
                                  "NOT counted (steps not recorded)"),
        "consistency_ct": (c.consistency("ct"), "float32",
                           "(1 + n_rs + n_loo) trainings of BL and CT at the sidecar configs; CT search at the "
                           "matching main CT model's recorded mean steps per epoch (estimate); searches of the "
                           "4 methods NOT counted"),
        "fidelity_effect": (c.fidelity_effect(), "float32",
                            "retrained models at the mean recorded count of the final models they replace; "
                            "evaluation rows (sidecar n_rows) at the main evaluation's mean steps per CE "
                            "(estimate) + IP; IP* NOT counted"),
        "black_figure1": (c.black_figure1(), "float32",
                          "plain training (3 fwd/row/epoch) of each model kind × seed of the sidecar settings on the "
                          "dataset's n_train (final model's sidecar) + grid predictions"),
        "report": (report_flops, "float64",
                   f"bootstrap only: {n_boot} replicates × {report_rows:,} `single` rows × (1 draw + 2 metric adds: "
                   "IP, and cost on the same strata); a draw counted as 1 op; reading and group-bys NOT counted"),
    }
    stages = fold_seed_groups(pd.read_csv(args.stages))
    rows = []
    for _, r in stages[stages["stage"] != "total"].iterrows():
        name = r["stage"]
        if name in counted:
            flops, dtype, why = counted[name]
            total = sum(flops.values())
            dominant = max(flops, key=flops.get)
            floor_s = total / (peak[dtype] * 1e9)
            rows.append(dict(stage=name, jobs=int(r["jobs"]), cpu_s=round(r["cpu_seconds"], 1), floor_flop=total,
                             floor_s=round(floor_s, 2), ratio=round(r["cpu_seconds"] / floor_s, 1),
                             dominant=f"{dominant} ({flops[dominant] / total:.0%})",
                             terms="; ".join(f"{k} {v / (peak[dtype] * 1e9):.3g} s" for k, v in flops.items()),
                             assumptions=why))
        else:
            rows.append(dict(stage=name, jobs=int(r["jobs"]), cpu_s=round(r["cpu_seconds"], 1), floor_flop=None,
                             floor_s=None, ratio=None, dominant="not computed", terms="",
                             assumptions=NOT_COUNTED[name]))
    out = pd.DataFrame(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"floors-{_git_commit()}"
    out.to_csv(stem.with_suffix(".csv"), index=False)
    load = Path("/proc/loadavg").read_text().split()[:3]
    head = (f"# Per-stage arithmetic floors\n\nPeak (one core, torch one thread, 2048² matmul, best of 20 by CPU "
            f"time): float32 {peak['float32']:.1f} GFLOP/s (median {peak['float32_median']:.1f}), float64 "
            f"{peak['float64']:.1f} GFLOP/s (median {peak['float64_median']:.1f}); load average "
            f"{' '.join(load)} on {len(__import__('os').sched_getaffinity(0))} cores. Stages from {args.stages.name}"
            f" (CPU-s summed over the stage's records), counts from {args.regen}.\n\n")
    md = out.assign(floor_flop=out["floor_flop"].map(lambda v: "" if pd.isna(v) else f"{v:.3g}"),
                    ratio=out["ratio"].map(lambda v: "–" if pd.isna(v) else f"{v:,.1f}×"))
    table = ["| " + " | ".join(md.columns) + " |", "|" + "---|" * len(md.columns)]
    table += ["| " + " | ".join("" if pd.isna(v) else str(v) for v in row) + " |" for row in md.itertuples(index=False)]
    stem.with_suffix(".md").write_text(head + "\n".join(table) + "\n")
    print(head + "\n".join(table))


NOT_COUNTED = {
    "data": "I/O: reading, splitting and writing the raw files; no arithmetic kernel",
    "tune_select": "reads the tune chunks' CSVs and picks a row; no arithmetic kernel",
    "fidelity_effects": "merges CSVs; no arithmetic kernel",
    "report_gallery": "copies tables; no arithmetic kernel",
    "report_figures": "plots of the report's grid, tuning and robustness tables; no arithmetic kernel",
    "report_seed_ledger": "the per-seed tables (Tables 1/3, cost, per training seed) and claim verdicts: reading and "
                          "group-bys, NOT counted (as in the report's floor); no bootstrap",
    "book": "Sphinx/Jupyter Book HTML build; no arithmetic kernel",
    "figure1": "plots; its few small trainings not counted here",
    "mnist_figures": "plots of stored models; no arithmetic kernel",
    "black_figure2": "not computed here (small trainings and plots; no count of its work in this script)",
    "prop31": "not computed here (the proposition's numerical check; no count of its work in this script)",
}


if __name__ == "__main__":
    main()
