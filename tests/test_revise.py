"""REVISE: the VAE trains, saves and loads; the latent search is reproducible and respects constraints."""

import numpy as np
import torch

from ctbench.constraints import Constraints
from ctbench.data import load_dataset
from ctbench.generators import VAE, Convergence, make_generator
from ctbench.models import build_model


def test_vae_learns_and_roundtrips(tmp_path):
    data = load_dataset("moons", n_draws=4000, n_train=1500, n_val=200)
    vae = VAE(2)
    assert (vae.latent_dim, vae.hidden) == (2, 16) and (VAE(8).latent_dim, VAE(8).hidden) == (4, 32)
    hist = vae.fit(data.X_train, epochs=15, seed=0)
    assert hist[-1] < 0.8 * hist[0]
    X = torch.tensor(data.X_test)
    with torch.no_grad():
        mu, _ = vae.encode_params(X)
        rec = float((vae.decode(mu) - X).square().sum(1).mean())
    assert rec < float(X.var(0).sum())  # reconstructs better than the mean
    vae.save(tmp_path / "vae.pt")
    back = VAE.load(tmp_path / "vae.pt")
    for a, b in zip(vae.state_dict().values(), back.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    torch.manual_seed(123)  # the global RNG state must not matter
    again = VAE(2)
    again.fit(data.X_train, epochs=15, seed=0)
    for a, b in zip(vae.state_dict().values(), again.state_dict().values(), strict=True):
        assert torch.equal(a, b)


def test_revise_search_is_seeded_and_constrained():
    data = load_dataset("lin_sep", n_draws=4000, n_train=1500, n_val=200)
    vae = VAE(2)
    vae.fit(data.X_train, epochs=10, seed=0)
    model = build_model({"type": "mlp"}, 2, 2, seed=0)
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    X, y = torch.tensor(data.X_train), torch.tensor(data.y_train)
    for _ in range(200):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(X), y).backward()
        opt.step()
    gen = make_generator({"type": "revise", "lambda_cost": 0.001}, vae=vae)
    xf = torch.tensor(data.X_test[:64])
    tgt = 1 - model(xf).argmax(1)
    cons = Constraints.build(2, domain=data.domain, mutability=[0])
    conv = Convergence("threshold", 0.75, 50)
    a = gen.search(model, xf, tgt, cons, conv, torch.Generator().manual_seed(1))
    b = gen.search(model, xf, tgt, cons, conv, torch.Generator().manual_seed(1))
    c = gen.search(model, xf, tgt, cons, conv, torch.Generator().manual_seed(2))
    assert torch.equal(a.counterfactual, b.counterfactual) and not torch.equal(a.counterfactual, c.counterfactual)
    moved = a.steps > 0
    assert bool(moved.any())
    assert torch.equal(a.counterfactual[:, 0], xf[:, 0])  # projected onto the mutability set
    lo, hi = (torch.tensor(v) for v in data.domain)
    assert bool((a.counterfactual[:, 1] >= lo[1]).all() and (a.counterfactual[:, 1] <= hi[1]).all())
    assert np.isfinite(a.counterfactual.numpy()).all()


def test_fitted_vae_is_cached_bit_identical(tmp_path):
    import numpy as np

    from ctbench.generators.vae import fit_cached

    X = np.random.default_rng(0).normal(size=(200, 3)).astype(np.float32)
    a = fit_cached(X, epochs=2, batch_size=50, seed=0, cache_dir=tmp_path)
    files = list((tmp_path / "vae").glob("*.pt"))
    assert len(files) == 1
    b = fit_cached(X, epochs=2, batch_size=50, seed=0, cache_dir=tmp_path)        # a hit: loaded, not refitted
    for p, q in zip(a.state_dict().values(), b.state_dict().values(), strict=True):
        assert torch.equal(p, q)
    fit_cached(X, epochs=3, batch_size=50, seed=0, cache_dir=tmp_path)           # other settings: another entry
    fit_cached(X[:150], epochs=2, batch_size=50, seed=0, cache_dir=tmp_path)     # other rows: another entry
    assert len(list((tmp_path / "vae").glob("*.pt"))) == 3
    files[0].write_bytes(b"truncated")                                          # a broken entry is refitted
    c = fit_cached(X, epochs=2, batch_size=50, seed=0, cache_dir=tmp_path)
    assert torch.equal(next(iter(c.state_dict().values())), next(iter(a.state_dict().values())))
