"""Paired CPU time and peak RSS of real paper jobs, old code against new, outputs compared bitwise (issue 21: the
search commands keep freed memory in glibc's heap, ``ctbench.runtime.keep_freed_memory``).

Each job is the command of a committed paper job (the arguments its rule builds from ``ctbench.workflow``'s plan of
the paper profile), run in a fresh one-thread process per code tree (``python -P -m ctbench``, the tree on
``PYTHONPATH``), CPU = user + sys and peak RSS of that child (``os.wait4``). The jobs run in a scratch folder whose
``results/paper`` links to the committed result set (read only; every output goes to the scratch folder). Outputs:
tables compared column by column (timing columns left out), models by the sha256 of their tensors, each against the
other tree's run and against the committed file.

    python benchmarks/alloc_jobs_pair.py --paper /work/regen/results/paper --old /work/regen --new . \\
        --out benchmarks/results/alloc-jobs-pair.csv --jobs evaluate:single:mnist:0 grid_chunk:tune_lr:lin_sep:bl:0:0
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_jobs_pair import command as eval_command  # noqa: E402
from eval_jobs_pair import committed as eval_committed  # noqa: E402
from eval_jobs_pair import compare, read  # noqa: E402

#: columns that hold measured times: they differ between any two runs
TIMING = ("seconds", "time", "wall", "cpu")


def workflow(new: Path):
    from ctbench.workflow import Workflow
    from ctbench.workflow_check import typed_config

    return Workflow(typed_config([new / "workflow/config/paper.yaml"], {}))


def job_command(job: str, W, scratch: Path, paper: Path) -> tuple[list[str], Path, Path]:
    """(``ctbench`` arguments writing under ``scratch``, the output file, the committed file to compare with)."""
    kind, *rest = job.split(":")
    out_dir = scratch / "out"
    out_dir.mkdir(parents=True, exist_ok=True)
    if kind in ("evaluate", "robustness", "attribution"):
        ref = eval_committed(job, paper)
        out = out_dir / f"{job.replace(':', '_')}{ref.suffix}"
        return eval_command(job, paper / "models", out), out, ref
    if kind == "train":  # train:MODEL[:EPOCHS], MODEL under the result set: that model alone, its own config
        model, *epochs = rest  # (grouping is bitwise neutral, so at full epochs it is the committed model)
        ref = paper / model
        cfg = json.loads(Path(f"{ref}.json").read_text())["config"]
        out = out_dir / f"{job.replace(':', '_').replace('/', '_')}.pt"
        sets = ["--set", f"training.epochs={epochs[0]}"] if epochs else []
        return (["train", "--config-json", json.dumps(cfg, sort_keys=True), "--out", str(out), *sets,
                 "--set", "threads=1", "--quiet"], out, ref if not epochs else Path())
    if kind == "lenet_evaluate":  # lenet_evaluate:EXPERIMENT:DATASET:SEED, the lenet_evaluate rule's arguments
        exp, ds, seed = rest
        j = W.job("lenet_evaluation", {"experiment": exp, "dataset": ds, "seed": seed})
        out = out_dir / f"{job.replace(':', '_')}.parquet"
        ref = Path(j["out"].replace(W.results, str(paper), 1))
        return (["evaluate", "--model", *[f"{n}={m}" for n, m in j["models"].items()],
                 *(["--constrained"] if j["constrained"] else []),
                 *[a for k, v in j["settings"].items() for a in ("--set", f"{k}={json.dumps(v)}")],
                 "--experiment", exp, "--out", str(out), "--quiet"], out, ref)
    if kind == "grid_chunk":  # grid_chunk:GRID:DATASET:KEY:CHUNK:SEED, the grid_chunk rule's arguments
        grid, ds, key, chunk, seed = rest
        j = W.job("grid_chunk", {"grid": grid, "dataset": ds, "key": key, "chunk": chunk, "seed": seed})
        args = ["--dataset", j["dataset"], "--fidelity", j["fidelity"]]
        for flag, value in (("--fidelity-overrides", j["fidelity_overrides"]), ("--data-params", j["data_params"]),
                            ("--overrides", j["grid_overrides"])):
            if value:
                args += [flag, json.dumps(value, sort_keys=True)]
        args += ["--epochs", str(int(j["epochs"]))] if j["epochs"] else []
        args += [a for p in j["points"] for a in ("--point", p)]
        args += ["--eval", json.dumps(j["evaluation"], sort_keys=True)] if j["evaluation"] else []
        out = out_dir / f"{job.replace(':', '_')}.csv"
        ref = paper / "grids" / grid / ds / f"{key}_c{chunk}_s{seed}.csv"
        return (["grid", "run", "--grid", grid, "--seed", seed, *args, "--baseline", j["baseline"],
                 "--threads", "1", "--quiet", "--out", str(out)], out, ref)
    if kind == "consistency":  # consistency:PART:DATASET:SEED
        part, ds, seed = rest
        j = W.job("consistency", {"part": part, "dataset": ds, "seed": seed})
        out = out_dir / f"{job.replace(':', '_')}.csv"
        ref = Path(W.path("consistency", part=part, dataset=ds, seed=seed).replace(W.results, str(paper), 1))
        return (["consistency", "--part", part, "--dataset", ds, "--seed", seed, "--settings",
                 json.dumps(j["settings"], sort_keys=True), "--out", str(out), "--quiet"], out, ref)
    if kind == "fidelity_effect":  # fidelity_effect:SWITCH:DATASET
        switch, ds = rest
        j = W.job("fidelity_effect", {"switch": switch, "dataset": ds})
        out = out_dir / f"{job.replace(':', '_')}.csv"
        ref = Path(W.path("fidelity_effect", switch=switch, dataset=ds).replace(W.results, str(paper), 1))
        reuse = ["--reuse", *(f"{k}={v}" for k, v in j["reuse"].items())] if j["reuse"] else []
        evals = j.get("reference_evals") or {}  # Table 1's evaluations, read by the study (branch fid-speed)
        reuse += ["--reference-eval", *(f"{k}={v}" for k, v in evals.items())] if evals else []
        return (["fidelity-effect", "--switch", switch, "--dataset", ds, *(["--quick"] if j["quick"] else []),
                 "--seeds", *map(str, j["seeds"]), *reuse, "--fidelity-overrides",
                 json.dumps(j["fidelity_overrides"], sort_keys=True), "--out", str(out)], out, ref)
    raise ValueError(f"unknown job {job!r}")


#: options newer than some trees: flag → the file of a tree that knows it (left out, with their values, for others)
NEW_FLAGS = {"--reference-eval": "ctbench/cli/study_cmds.py"}


def for_tree(args: list[str], tree: Path) -> list[str]:
    """``args`` without the :data:`NEW_FLAGS` (and their values) that ``tree`` does not know (the old tree of a
    pair that adds one: it runs the job as the committed run did)."""
    out, skip = [], False
    for a in args:
        if a.startswith("--"):
            f = NEW_FLAGS.get(a)
            skip = f is not None and a not in (tree / f).read_text()
        if not skip:
            out.append(a)
    return out


def run(tree: Path, args: list[str], cwd: Path) -> tuple[float, float, float, float]:
    """(CPU s, of which system s, wall s, peak RSS MB) of one fresh ``ctbench`` process on ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    for v in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_ARENA_MAX"):
        env.pop(v, None)
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-P", "-m", "ctbench", *args], env=env, cwd=cwd,
                            stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        raise RuntimeError(f"ctbench {' '.join(args)[:300]} failed ({status})")
    return ru.ru_utime + ru.ru_stime, ru.ru_stime, wall, ru.ru_maxrss / 1024


def tensors_digest(path: Path) -> str:
    """sha256 over a saved model's tensors (weights and VAE), not its metadata (which holds timings)."""
    import torch

    blob = torch.load(path, map_location="cpu", weights_only=False)
    h = hashlib.sha256()
    for part in ("state_dict", "vae"):
        sd = blob.get(part) or {}
        sd = sd.get("state_dict", sd) if part == "vae" else sd
        for k in sorted(sd):
            if torch.is_tensor(sd[k]):
                h.update(f"{part}.{k}".encode())
                h.update(sd[k].numpy().tobytes())
    return h.hexdigest()


def same(a: Path, b: Path) -> str:
    """'identical bytes', 'bitwise' (every value equal, NaN where NaN), or what differs."""
    if a.read_bytes() == b.read_bytes():
        return "identical bytes"
    if a.suffix == ".pt":
        return "bitwise" if tensors_digest(a) == tensors_digest(b) else "MODELS DIFFER"
    x, y = read(a), read(b)
    drop = [c for c in x.columns if any(t in c.lower() for t in TIMING)]
    x, y = x.drop(columns=drop, errors="ignore"), y.drop(columns=drop, errors="ignore")
    cmp = compare(x, y)
    if x.equals(y):
        return "bitwise" + (f" (timing columns {', '.join(drop)} left out)" if drop else "")
    return f"DIFFER {cmp}"


def recompare(a, scratch: Path) -> None:
    """The comparison columns of --out's rows that were found to differ, compared again from the outputs their runs
    left under ``scratch`` (the first version of :func:`same` took two NaN in a text column for a difference)."""
    W = workflow(a.new.resolve())
    frame = pd.read_csv(a.out)
    flagged = frame["new_vs_old"].astype(str).str.startswith("DIFFER")
    for i, row in frame[(frame["code"] == "new") & flagged].iterrows():
        _, old, _ = job_command(row["job"], W, scratch / "old", a.paper.resolve())
        _, new, ref = job_command(row["job"], W, scratch / "new", a.paper.resolve())
        frame.loc[i, "new_vs_old"] = same(old, new)
        frame.loc[i, "new_vs_committed"] = same(ref, new) if ref.is_file() else "no committed file"
    frame.to_csv(a.out, index=False)


def markdown(csv: Path) -> str:
    """The table of a results CSV: one line per pair of runs (old, new), in the order they ran."""
    f = pd.read_csv(csv)
    lines = ["| job | old CPU-s (sys) | new CPU-s (sys) | new/old | peak RSS MB old → new | load | "
             "outputs: new vs old; vs committed |", "|---|---|---|---|---|---|---|"]
    for i in range(0, len(f) - 1, 2):
        a, b = f.iloc[i], f.iloc[i + 1]
        old, new = (a, b) if a["code"] == "old" else (b, a)
        cmp = f.iloc[i + 1]
        lines.append(f"| `{a['job']}` | {old['cpu_s']:.1f} ({old['sys_s']:.1f}) | {new['cpu_s']:.1f} "
                     f"({new['sys_s']:.1f}) | {new['cpu_s'] / old['cpu_s']:.2f} | {old['peak_rss_mb']:.0f} → "
                     f"{new['peak_rss_mb']:.0f} | {a['load_1min']:.1f}–{b['load_1min']:.1f} | {cmp['new_vs_old']}; "
                     f"{cmp['new_vs_committed']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--paper", type=Path, required=True, help="the committed result set (models and outputs)")
    ap.add_argument("--old", type=Path, required=True, help="the old tree (on PYTHONPATH)")
    ap.add_argument("--new", type=Path, required=True, help="the new tree (on PYTHONPATH)")
    ap.add_argument("--jobs", nargs="+", required=True)
    ap.add_argument("--tmp", type=Path, default=Path("/tmp/alloc-jobs-pair"))
    ap.add_argument("--out", type=Path, required=True, help="CSV; rows are appended to an existing one")
    ap.add_argument("--new-first", dest="new_first", action="store_true",
                    help="run each job's new tree first (a repeat in the other order shows drift of the load)")
    ap.add_argument("--markdown", action="store_true", help="run nothing: print --out as a Markdown table")
    ap.add_argument("--recompare", action="store_true",
                    help="run nothing: compare again the outputs of the jobs already in --out (kept under --tmp)")
    a = ap.parse_args()
    scratch = a.tmp.resolve()
    if a.recompare:
        recompare(a, scratch)
        return
    if a.markdown:
        print(markdown(a.out), end="")
        return
    (scratch / "results").mkdir(parents=True, exist_ok=True)
    link = scratch / "results" / "paper"
    if not link.exists():
        link.symlink_to(a.paper.resolve())
    W = workflow(a.new.resolve())
    rows = []
    for job in a.jobs:
        res = {}
        order = (("old", a.old), ("new", a.new))
        for label, tree in order[::-1] if a.new_first else order:
            args, out, ref = job_command(job, W, scratch / label, a.paper.resolve())
            load = os.getloadavg()[0]
            cpu, sys_s, wall, rss = run(tree.resolve(), for_tree(args, tree.resolve()), scratch)
            res[label] = out
            rows.append({"job": job, "code": label, "cpu_s": round(cpu, 2), "sys_s": round(sys_s, 2),
                         "wall_s": round(wall, 2), "peak_rss_mb": round(rss), "load_1min": load,
                         "at": time.strftime("%H:%M", time.gmtime())})
            print(json.dumps(rows[-1]), flush=True)
        rows[-1]["new_vs_old"] = same(res["old"], res["new"])
        rows[-1]["new_vs_committed"] = same(ref, res["new"]) if ref.is_file() else "no committed file"
        print(json.dumps(rows[-1]), flush=True)
        frame = pd.DataFrame(rows)
        if a.out.exists():
            frame = pd.concat([pd.read_csv(a.out), frame], ignore_index=True)
        a.out.parent.mkdir(parents=True, exist_ok=True)
        frame.to_csv(a.out, index=False)
        rows = []


if __name__ == "__main__":
    main()
