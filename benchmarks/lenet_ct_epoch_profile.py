"""Where a LeNet CT epoch's CPU goes (issue 21, branch ``lenet-cpu``; results in ``results/lenet-cpu-profile.md``).

The committed LeNet CT job's config (its sidecar) through the trainer, one thread, the ``train`` command's process
settings (``keep_freed_memory``, ``no_shape_caches``), for ``--epochs`` epochs: from the initial weights (the first
epochs: every search runs its 30 steps) or, with ``--start``, from a model file's weights (the committed 100-epoch
model: a late epoch, rows retiring after ≈ 13 steps). Each phase is wrapped in a ``record_function`` label (search,
loss forward, backward, optimizer step, accuracy passes) and its CPU time taken with ``time.process_time``; under
``--ops`` torch.profiler (with shapes) attributes each phase's operators' self CPU time by operator and input shape,
so conv1 and conv2 and the search's and the update's batches are told apart. The trained weights' sha256 is
printed, so that two trees' epochs can be compared bit for bit.

    CTBENCH_DATA=/work/shared/data OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/lenet_ct_epoch_profile.py \\
        --sidecar /work/regen2/results/paper/lenet/mnist/full_s0.pt.json --epochs 1 --ops [--start MODEL.pt]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import hashlib
import json
import os
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from ctbench.runtime import keep_freed_memory
from ctbench.shape_caches import no_shape_caches
from ctbench.training import objectives, trainer
from ctbench.training.pipeline import prepare_training

LABELS = ("search", "loss_forward", "backward", "optimizer_step", "accuracy")
CPU: dict[str, float] = collections.defaultdict(float)


@contextlib.contextmanager
def phase(label: str):
    t0 = time.process_time()
    with record_function(label):
        yield
    CPU[label] += time.process_time() - t0


def wrap(owner, name: str, label: str) -> None:
    inner = getattr(owner, name)

    def wrapped(*args, **kwargs):
        with phase(label):
            return inner(*args, **kwargs)
    setattr(owner, name, wrapped)


def instrument() -> None:
    """Labels on the trainer's phases (module globals and methods it calls; nothing else changes)."""
    wrap(trainer, "generate_epoch_counterfactuals", "search")
    wrap(trainer, "_accuracy", "accuracy")
    wrap(objectives.Objective, "__call__", "loss_forward")
    wrap(torch.Tensor, "backward", "backward")
    wrap(torch.optim.Adam, "step", "optimizer_step")


def shape_key(evt) -> str:
    shapes = [s for s in (evt.input_shapes or []) if s]
    return "x".join(str(d) for d in shapes[0]) if shapes else ""


def layer_of(op: str, shape: str) -> str:
    """conv1/conv2/pool1/pool2 by the input's channels × height (batch first)."""
    dims = shape.split("x")
    if len(dims) == 4:
        chw = "x".join(dims[1:])
        for name, sig in (("conv1/pool1", ("1x28x28", "6x28x28")), ("conv2/pool2", ("6x14x14", "16x14x14"))):
            if chw in sig:
                return name
    return ""


def op_table(prof) -> list[dict]:
    """Self CPU seconds per (phase, operator, layer)."""
    agg: dict[tuple, float] = collections.defaultdict(float)
    for evt in prof.events():
        if evt.name in LABELS:
            continue
        label, p = "other", evt.cpu_parent
        while p is not None:
            if p.name in LABELS:
                label = p.name
                break
            p = p.cpu_parent
        shape = shape_key(evt)
        agg[(label, evt.name, layer_of(evt.name, shape))] += evt.self_cpu_time_total / 1e6
    rows = [{"phase": k[0], "op": k[1], "layer": k[2], "self_cpu_s": round(v, 3)} for k, v in agg.items()]
    return sorted(rows, key=lambda r: -r["self_cpu_s"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sidecar", type=Path, required=True, help="the LeNet CT model's sidecar (its config is run)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--start", type=Path, help="a model file whose weights the training starts from")
    ap.add_argument("--ops", action="store_true", help="torch.profiler: self CPU per phase, operator and layer")
    ap.add_argument("--out", type=Path, help="JSON of the phases (and operators)")
    a = ap.parse_args()
    keep_freed_memory()
    no_shape_caches()
    torch.set_num_threads(1)
    cfg = json.loads(a.sidecar.read_text())["config"]
    cfg = {**cfg, "threads": 1, "training": {**cfg["training"], "epochs": a.epochs}}
    p = prepare_training(cfg)
    if a.start is not None:
        p.model.load_state_dict(torch.load(a.start, map_location="cpu", weights_only=False)["state_dict"])
    instrument()
    load = os.getloadavg()[0]
    ctx = profile(activities=[ProfilerActivity.CPU], record_shapes=True) if a.ops else contextlib.nullcontext()
    t0, w0 = time.process_time(), time.perf_counter()
    with ctx as prof:
        _, log = trainer.train(p.model, p.data.X_train, p.data.y_train, objective=p.objective,
                               generator=p.generator, params=p.params, constraints=p.cons, convergence=p.conv,
                               fidelity=p.fid, X_val=p.data.X_val, y_val=p.data.y_val,
                               n_classes=p.data.n_classes, device="cpu")
    total, wall = time.process_time() - t0, time.perf_counter() - w0
    digest = hashlib.sha256()
    for k, v in sorted(p.model.state_dict().items()):
        digest.update(k.encode())
        digest.update(v.numpy().tobytes())
    res = {"epochs": a.epochs, "start": str(a.start) if a.start else None, "load_1min": load,
           "cpu_s": round(total, 2), "wall_s": round(wall, 2), "model_sha256": digest.hexdigest(),
           "phases_cpu_s": {k: round(v, 2) for k, v in CPU.items()},
           "mean_steps": log["mean_steps"].tolist(), "share_mature": log["share_mature"].tolist()}
    res["phases_cpu_s"]["rest"] = round(total - sum(CPU.values()), 2)
    print(json.dumps({k: v for k, v in res.items()}, indent=1))
    if a.ops:
        res["ops"] = op_table(prof)
        for r in res["ops"][:40]:
            print(f"{r['phase']:15s} {r['op']:45s} {r['layer']:12s} {r['self_cpu_s']:8.3f}")
    if a.out:
        a.out.write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
