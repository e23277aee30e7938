"""Peak RSS and glibc's heap after every epoch of the paper's LeNet CT training, old code against new (issue 21:
LeNet CT's memory grows with the epochs; ``ctbench.shape_caches``).

Each tree runs the committed LeNet CT model's config (its sidecar's, ``training.epochs`` set to ``--epochs``) through
the real ``ctbench train`` command in a fresh one-thread process (``python -P``, the tree on ``PYTHONPATH``); the
only addition is a hook around ``generate_epoch_counterfactuals`` that records, at the start of each epoch's search
and after the last epoch, the process's peak RSS so far (``VmHWM``), its RSS, and glibc's heap (``mallinfo2``: arena
size, bytes in use, free bytes, number of free chunks). CPU = user + sys of the child (``os.wait4``), so the hook's
cost is inside it (a few ms an epoch). The trained models of the two trees are compared tensor by tensor.

    python benchmarks/lenet_mem_epochs.py --paper /work/regen2/results/paper --tree old=/work/main --tree new=. \\
        --epochs 8 --out benchmarks/results/lenet-mem-epochs.csv
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

CHILD = r"""
import ctypes, json, sys
out, config, trim = sys.argv[1], sys.argv[2], sys.argv[3] == "trim"
samples = []

class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = Info

def sample(epoch):
    import gc
    import torch
    tensors = [o for o in gc.get_objects() if isinstance(o, torch.Tensor)]
    st = {k: int(v.split()[0]) / 1024 for k, v in (l.split(":", 1) for l in open("/proc/self/status"))
          if k in ("VmHWM", "VmRSS")}
    mi = libc.mallinfo2()
    samples.append({"epoch": epoch, "peak_rss_mb": st["VmHWM"], "rss_mb": st["VmRSS"],
                    "heap_mb": mi.arena / 2**20, "heap_used_mb": mi.uordblks / 2**20,
                    "heap_free_mb": mi.fordblks / 2**20, "free_chunks": mi.ordblks, "tensors": len(tensors),
                    "tensor_mb": sum(t.numel() * t.element_size() for t in tensors) / 2**20})

import ctbench.training.trainer as trainer
search = trainer.generate_epoch_counterfactuals
def hooked(*args, **kwargs):
    sample(len(samples))  # before epoch e's search: the peak of epochs 1..e-1 (0: after setup)
    if trim and len(samples) > 1:
        libc.malloc_trim(0)  # the lever the brief proposed: give back the heap's free pages once an epoch
    return search(*args, **kwargs)
trainer.generate_epoch_counterfactuals = hooked
from ctbench.cli import run
rc = run(["train", "--config-json", config, "--out", out, "--set", "threads=1", "--quiet"])
sample(len(samples))
print("SAMPLES " + json.dumps(samples))
sys.exit(rc)
"""


def run_tree(tree: Path, config: str, out: Path, trim: bool = False) -> tuple[list[dict], float, float, float]:
    """(per-epoch samples, CPU s, system s, wall s) of one fresh training process on ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    for v in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_ARENA_MAX",
              "ONEDNN_PRIMITIVE_CACHE_CAPACITY", "DNNL_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY"):
        env.pop(v, None)
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-P", "-c", CHILD, str(out), config, "trim" if trim else "-"], env=env,
                            stdout=subprocess.PIPE, text=True)
    stdout = proc.stdout.read()
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = status
    wall = time.perf_counter() - t0
    if status != 0:
        raise RuntimeError(f"training on {tree} failed ({status})")
    line = next(ln for ln in stdout.splitlines() if ln.startswith("SAMPLES "))
    return json.loads(line[len("SAMPLES "):]), ru.ru_utime + ru.ru_stime, ru.ru_stime, wall


def same_models(a: Path, b: Path) -> str:
    import torch

    x = torch.load(a, map_location="cpu", weights_only=False)["state_dict"]
    y = torch.load(b, map_location="cpu", weights_only=False)["state_dict"]
    if x.keys() != y.keys():
        return "DIFFER (keys)"
    diff = [k for k in x if not torch.equal(x[k], y[k])]
    return "bitwise (torch.equal, every tensor)" if not diff else f"DIFFER ({', '.join(diff)})"


def markdown(csv: Path) -> str:
    """Per run: peak RSS after each epoch (MB), heap free chunks at the end, CPU."""
    f = pd.read_csv(csv)
    lines = []
    for (run_id, label), g in f.groupby(["run", "tree"], sort=False):
        g = g.sort_values("epoch")
        last = g.iloc[-1]
        runs = []  # equal peaks in a row as "value (×count)"
        for v in (round(x) for x in g["peak_rss_mb"].iloc[1:]):
            runs[-1:] = [[v, runs[-1][1] + 1]] if runs and runs[-1][0] == v else runs[-1:] + [[v, 1]]
        peaks = ", ".join(f"{v}" + (f" (×{n})" if n > 1 else "") for v, n in runs)
        starts = g.iloc[1:-1]  # the samples before epochs 2..n's searches: what an epoch leaves alive
        alive = (f"{starts['tensors'].min()}–{starts['tensors'].max()} ({starts['tensor_mb'].min():.0f}–"
                 f"{starts['tensor_mb'].max():.0f} MB); heap in use {starts['heap_used_mb'].min():.0f}–"
                 f"{starts['heap_used_mb'].max():.0f} MB") if len(starts) else "–"
        lines.append(f"| {run_id} | {label} | {int(last['epochs'])} | {peaks} | {last['heap_mb']:.0f} / "
                     f"{last['heap_used_mb']:.0f} / {int(last['free_chunks'])} | {alive} | {last['cpu_s']:.1f} "
                     f"({last['sys_s']:.1f}) | {last['load_1min']:.1f} | {last['models']} |")
    head = ["| run | tree | epochs | peak RSS MB after epoch 1, 2, … | heap MB / in use MB / free chunks at the end | "
            "between epochs: live tensors (MB); heap in use | CPU-s (sys) | load | models |",
            "|---|---|---|---|---|---|---|---|---|"]
    return "\n".join(head + lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--paper", type=Path, help="the committed result set (its LeNet CT sidecar gives the config)")
    ap.add_argument("--tree", action="append", default=[], metavar="LABEL=PATH", help="a code tree; repeat")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--malloc-trim", dest="trim", action="store_true",
                    help="call glibc's malloc_trim(0) before every epoch's search but the first (label +trim)")
    ap.add_argument("--tmp", type=Path, default=Path("/tmp/lenet-mem-epochs"))
    ap.add_argument("--out", type=Path, required=True, help="CSV; rows are appended to an existing one")
    ap.add_argument("--markdown", action="store_true", help="run nothing: print --out as a Markdown table")
    a = ap.parse_args()
    if a.markdown:
        print(markdown(a.out), end="")
        return
    if a.paper is None or not a.tree:
        ap.error("--paper and at least one --tree are needed to run")
    cfg = json.loads((a.paper / "lenet/mnist/full_s0.pt.json").read_text())["config"]
    cfg["training"]["epochs"] = a.epochs
    config = json.dumps(cfg, sort_keys=True)
    run_id = time.strftime("%Y%m%dT%H%M", time.gmtime())
    a.tmp.mkdir(parents=True, exist_ok=True)
    models, rows = {}, []
    for spec in a.tree:
        label, _, path = spec.partition("=")
        label += "+trim" if a.trim else ""
        out = a.tmp / f"{run_id}_{label}_{a.epochs}.pt"
        load = os.getloadavg()[0]
        samples, cpu, sys_s, wall = run_tree(Path(path).resolve(), config, out, a.trim)
        models[label] = out
        for s in samples:
            rows.append({"run": run_id, "tree": label, "epochs": a.epochs, **{k: round(v, 1) if isinstance(v, float)
                         else v for k, v in s.items()}, "cpu_s": round(cpu, 2), "sys_s": round(sys_s, 2),
                         "wall_s": round(wall, 1), "load_1min": load})
        print(json.dumps(rows[-1]), flush=True)
    first = next(iter(models.values()))
    verdict = {label: "reference" if m == first else same_models(first, m) for label, m in models.items()}
    for r in rows:
        r["models"] = verdict[r["tree"]]
    frame = pd.DataFrame(rows)
    if a.out.exists():
        frame = pd.concat([pd.read_csv(a.out), frame], ignore_index=True)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(a.out, index=False)
    print(markdown(a.out), end="")


if __name__ == "__main__":
    main()
