"""Pawelczyk et al.'s latent search with the paper's autoencoder and with the authors' sampling (App. B.3).

The study runs ``latent_random`` on ctbench's REVISE VAE (its mean head; latent 4, hidden 32), a deviation it states.
App. B.3: the authors trained a plain autoencoder, hidden layers 1024-128-32-128-1024 (so a 32-d code), and sampled
1,280 codes "within a norm bound of 1.0" of the factual's. Their ``search_z_adv`` (zifanw/consistency,
``attack_utils.py``) draws the directions as ``delta /= tf.norm(batch_flatten(delta))``: one Frobenius norm of the
whole (samples × latent) matrix, so each code moves about radius·U(0, 1)/√samples, not radius·U(0, 1) (ctbench
normalises each direction). This script runs, on the committed run's population (the paper profile's job at base
seed 0: the same base model, 100 RS + 100 LOO models, factuals and targets, all bit for bit), three searches:

- ``vae``: the study's search (checks that it reproduces the committed cells);
- ``ae``: the same search on the paper's autoencoder (ReLU hidden layers, linear output, MSE, Adam 1e-3, batch 128,
  the study's ``vae_epochs``; the paper gives neither activation, loss nor epochs);
- ``ae_authors``: the paper's autoencoder with the authors' sampling (one norm for the whole sample matrix).

    PYTHONPATH=.:benchmarks/black2022_causes CTBENCH_DATA=/work/shared/data \\
        python benchmarks/black2022_causes/autoencoder.py german_credit,cardiotocography

One JSON line per (dataset, variant): success rate, mean ℓ2 cost and invalidation rates of the valid counterfactuals
(the report's Table-1 aggregation), CPU seconds.
"""
from __future__ import annotations

import json
import sys
import time

import numpy as np
import torch
from base_seeds import paper_job
from torch import nn

from ctbench.experiments import consistency as C
from ctbench.experiments.consistency_search import evaluate
from ctbench.experiments.invalidation import retraining_plan
from ctbench.generators import latent_search
from ctbench.generators.latent_search import LatentRandomSearch
from ctbench.generators.vae import fit_cached
from ctbench.training.population import train_population


class PaperAE(nn.Module):
    """App. B.3's autoencoder: D → 1024 → 128 → 32 → 128 → 1024 → D; the code is deterministic (``encode_params``
    returns it with a zero log σ, the interface of ctbench's VAE)."""

    def __init__(self, n_features: int, seed: int = 0):
        super().__init__()
        self.n_features = int(n_features)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            self.enc = nn.Sequential(nn.Linear(n_features, 1024), nn.ReLU(), nn.Linear(1024, 128), nn.ReLU(),
                                     nn.Linear(128, 32))
            self.dec = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 1024), nn.ReLU(),
                                     nn.Linear(1024, n_features))

    def config(self) -> dict:
        return {"n_features": self.n_features, "latent_dim": 32, "hidden": "1024-128-32-128-1024"}

    def encode_params(self, x):
        z = self.enc(x)
        return z, torch.zeros_like(z)

    def decode(self, z):
        return self.dec(z)

    def fit(self, X, epochs: int, batch_size: int = 128, lr: float = 1e-3, seed: int = 0) -> float:
        X = torch.as_tensor(np.asarray(X), dtype=torch.float32)
        gen = torch.Generator().manual_seed(int(seed))
        opt = torch.optim.Adam(self.parameters(), lr=lr)
        for _ in range(epochs):
            perm = torch.randperm(X.shape[0], generator=gen)
            for start in range(0, X.shape[0], batch_size):
                xb = X[perm[start:start + batch_size]]
                loss = (self.dec(self.enc(xb)) - xb).square().mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
        with torch.no_grad():
            return float((self.dec(self.enc(X)) - X).square().mean())


class AuthorsSampling(LatentRandomSearch):
    """The authors' directions: per factual, the (samples × latent) normal matrix divided by its one norm. The
    search is ctbench's; only its per-direction normalisation (``latent_search.unit_rows``) is swapped while it runs."""

    def search(self, model, x, target, constraints=None, convergence=None, generator=None):
        N = self.n_samples

        def one_norm_per_factual(g):  # g: (factuals · N, latent), the draws in ctbench's order
            m = g.reshape(-1, N, g.shape[1])
            return (m / m.flatten(1).norm(dim=1)[:, None, None]).reshape(g.shape)

        saved = latent_search.unit_rows
        latent_search.unit_rows = one_norm_per_factual
        try:
            return super().search(model, x, target, constraints, convergence, generator)
        finally:
            latent_search.unit_rows = saved


def summary(df) -> dict:
    ok = df[df["valid"].astype(bool)]
    return {"success": round(float(df["valid"].mean()), 4), "l2": round(float(ok["cost_l2"].mean()), 4),
            "iv_loo": round(float(ok["iv_loo"].mean()), 4), "iv_rs": round(float(ok["iv_rs"].mean()), 4)}


def main(datasets: list[str]) -> None:
    torch.set_num_threads(1)
    for ds in datasets:
        job = paper_job(ds, 0)
        s = C.resolve_settings(job["settings"], "black2022")
        t = time.process_time()
        data, cons, fid, members, _, plan, _ = C._members(
            "black2022", ds, 0, s, lambda nt, s=s: retraining_plan(0, s["n_models"], nt, s["sources"]))
        res = train_population(members["base"], data.X_train, data.y_train, constraints=cons, fidelity=fid,
                               n_classes=data.n_classes, log_accuracy=False)
        base, retr, _ = C._split(res, members["base"])
        print(json.dumps({"dataset": ds, "train_cpu": round(time.process_time() - t, 1)}), flush=True)
        rows = C._factual_rows(len(data.y_test), s["n_factuals"], 0)
        x = torch.as_tensor(data.X_test[rows], dtype=torch.float32)
        target = C._targets(base, x, data.n_classes, 0)
        radius = C.ARCHITECTURES[ds].latent_radius
        X = data.X_train
        t = time.process_time()
        ae = PaperAE(data.n_features, seed=0)
        mse = ae.fit(X, epochs=int(s["vae_epochs"]), seed=0)
        ae_cpu = time.process_time() - t
        vae = fit_cached(X, epochs=s["vae_epochs"], seed=0)
        with torch.no_grad():
            Xt = torch.as_tensor(X)
            vae_mse = float((vae.decode(vae.encode_params(Xt)[0]) - Xt).square().mean())
        variants = (("vae", LatentRandomSearch(vae, radius=radius)), ("ae", LatentRandomSearch(ae, radius=radius)),
                    ("ae_authors", AuthorsSampling(ae, radius=radius)))
        for name, gen in variants:
            t = time.process_time()
            r = gen.search(base, x, target, cons, None, torch.Generator().manual_seed(0))
            df = evaluate(base, retr, {"latent_random": r}, rows, lipschitz_radius=0.01, lipschitz_samples=1)
            line = {"dataset": ds, "variant": name, **summary(df), "cpu": round(time.process_time() - t, 1)}
            if name == "vae":
                line["reconstruction_mse"] = round(vae_mse, 5)
            else:
                line.update(reconstruction_mse=round(mse, 5), ae_fit_cpu=round(ae_cpu, 1))
            print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main(sys.argv[1].split(","))
