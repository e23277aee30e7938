"""CPU-s of Seizure's consistency retraining against the population size (issue 21: how to cut the 200 models).

Trains the base alone, 12/25/50 RS members and 25 LOO members at 10 epochs (the job: 100), one thread, and prints
the CPU-s of each ``train_population`` call: the cost is linear in the members (no fixed part worth a shard), and
RS and LOO members cost the same. Project venv, ``PYTHONPATH=.``, ``CTBENCH_DATA`` set; about 35 CPU-s.
"""

import time

import torch

from ctbench.experiments.consistency import _members, resolve_settings
from ctbench.experiments.invalidation import retraining_plan
from ctbench.training.population import train_population

torch.set_num_threads(1)
s = resolve_settings({"epochs": 10, "n_models": 50, "methods": ["min_l1"]})
data, cons, fid, members, _, plan, _ = _members("black2022", "epileptic_seizure", 0, s,
                                                lambda n: retraining_plan(0, 50, n, ["rs", "loo"]))
ms = members["base"]
for name, sel in [("base", ms[:1]), ("rs12", ms[1:13]), ("rs25", ms[1:26]), ("rs50", ms[1:51]), ("loo25", ms[51:76])]:
    t = time.process_time()
    train_population(sel, data.X_train, data.y_train, constraints=cons, fidelity=fid, n_classes=data.n_classes,
                     log_accuracy=False)
    print(name, len(sel), round(time.process_time() - t, 2), flush=True)
