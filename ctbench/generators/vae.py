"""The VAE behind REVISE (reference §4.4): a small Gaussian VAE trained on the training split.

Encoder ``Dense(D, H, sigmoid)`` with linear heads for μ and log σ; decoder ``Dense(L, H, tanh) → Dense(H, D)``.
Loss per batch: ``Σ‖x̂ − x‖²/n + 0.5·Σ(σ² + μ² − 1 − 2 log σ)/n + 0.01·Σ(decoder weights²)``; Adam(1e-3),
batch 50, 100 epochs, shuffled. Defaults: L = 2, H = 16 for 2-D data, L = 4, H = 32 otherwise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ..io import atomic_torch_save


def _randn_like(t: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """Standard normal noise drawn on the generator's device (a CPU generator keeps GPU runs reproducible)."""
    dev = generator.device if generator is not None else t.device
    return torch.randn(t.shape, generator=generator, dtype=t.dtype, device=dev).to(t.device)


class VAE(nn.Module):
    def __init__(self, n_features: int, latent_dim: int | None = None, hidden: int | None = None, seed: int = 0):
        super().__init__()
        small = n_features <= 2
        self.n_features = int(n_features)
        self.latent_dim = int(latent_dim or (2 if small else 4))
        self.hidden = int(hidden or (16 if small else 32))
        with torch.random.fork_rng(devices=[]):  # initial weights from ``seed``, not from the global RNG state
            torch.manual_seed(int(seed))
            self.enc = nn.Sequential(nn.Linear(self.n_features, self.hidden), nn.Sigmoid())
            self.mu = nn.Linear(self.hidden, self.latent_dim)
            self.logsigma = nn.Linear(self.hidden, self.latent_dim)
            self.decoder = nn.Sequential(nn.Linear(self.latent_dim, self.hidden), nn.Tanh(),
                                         nn.Linear(self.hidden, self.n_features))

    def config(self) -> dict[str, int]:
        return {"n_features": self.n_features, "latent_dim": self.latent_dim, "hidden": self.hidden}

    def encode_params(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.enc(x)
        return self.mu(h), self.logsigma(h)

    def sample(self, x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """z ~ q(z | x) by the reparameterisation trick (REVISE re-encodes stochastically every step)."""
        mu, logsigma = self.encode_params(x)
        return mu + logsigma.exp() * _randn_like(mu, generator)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return self.decoder(z)

    def loss(self, x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        mu, logsigma = self.encode_params(x)
        z = mu + logsigma.exp() * _randn_like(mu, generator)
        n = x.shape[0]
        rec = (self.decode(z) - x).square().sum() / n
        kl = 0.5 * ((2 * logsigma).exp() + mu.square() - 1 - 2 * logsigma).sum() / n
        reg = 0.01 * sum(p.square().sum() for p in self.decoder.parameters())
        return rec + kl + reg

    def fit(self, X: Any, epochs: int = 100, batch_size: int = 50, lr: float = 1e-3, seed: int = 0,
            progress: bool = False) -> list[float]:
        """Train on ``X`` (n, D); returns the mean loss per epoch."""
        X = torch.as_tensor(np.asarray(X), dtype=torch.float32)
        gen = torch.Generator().manual_seed(int(seed))
        opt = torch.optim.Adam(self.parameters(), lr=lr)
        history = []
        epochs_iter = range(epochs)
        if progress:
            from tqdm.auto import tqdm
            epochs_iter = tqdm(epochs_iter, desc="VAE", unit="epoch")
        for _ in epochs_iter:
            perm = torch.randperm(X.shape[0], generator=gen)
            total = 0.0
            for start in range(0, X.shape[0], batch_size):
                xb = X[perm[start:start + batch_size]]
                loss = self.loss(xb, gen)
                if not torch.isfinite(loss):
                    raise FloatingPointError(f"VAE loss became {loss.item()} at epoch {len(history) + 1}")
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += loss.item() * xb.shape[0]
            history.append(total / X.shape[0])
        return history

    def save(self, path: str | Path) -> None:
        atomic_torch_save({"config": self.config(), "state_dict": self.state_dict()}, path)

    @classmethod
    def load(cls, path: str | Path) -> VAE:
        blob = torch.load(path, map_location="cpu", weights_only=True)
        vae = cls(**blob["config"])
        vae.load_state_dict(blob["state_dict"])
        return vae


def fit_cached(X: Any, *, latent_dim: int | None = None, hidden: int | None = None, epochs: int = 100,
               batch_size: int = 50, seed: int = 0, cache_dir: str | Path | None = None,
               progress: bool = False) -> VAE:
    """A VAE fitted on ``X`` with these settings, from the cache when an identical fit was stored before.

    A grid trains many REVISE models on one dataset with one VAE; without a cache every workflow job refitted it
    (seconds per job). The key hashes the training rows themselves, every setting, the ctbench version and this
    module's source, so a cached VAE is bit-identical to a fresh fit. Entries live under ``<cache>/vae/``
    (``CTBENCH_CACHE`` or ``data/processed``, as the data splits); a broken entry is refitted, an unwritable cache
    only warns.
    """
    import hashlib
    import warnings

    from .. import __version__
    from ..data.files import cache_key, cache_root

    X = np.ascontiguousarray(np.asarray(X, dtype=np.float32))
    vae = VAE(X.shape[1], latent_dim, hidden, seed=seed)
    spec = {"rows_sha256": hashlib.sha256(X.tobytes()).hexdigest(), "shape": list(X.shape), **vae.config(),
            "epochs": int(epochs), "batch_size": int(batch_size), "seed": int(seed), "ctbench": __version__,
            "code": hashlib.sha256(Path(__file__).read_bytes()).hexdigest()}
    path = cache_root(cache_dir) / "vae" / f"{cache_key(spec)}.pt"
    if path.is_file():
        try:
            return VAE.load(path)
        except Exception:  # noqa: BLE001 - a truncated or foreign file fails in many ways; refit it either way
            pass
    vae.fit(X, epochs=epochs, batch_size=batch_size, seed=seed, progress=progress)
    try:
        vae.save(path)
    except OSError as err:
        warnings.warn(f"could not cache the VAE under {path.parent}: {err}", stacklevel=2)
    return vae
