"""Every search driver's outputs on 668 cases, saved for a bitwise comparison between revisions.

    PYTHONPATH=<tree A> python benchmarks/search_capture.py /tmp/a.pt
    PYTHONPATH=<tree B> python benchmarks/search_capture.py /tmp/b.pt
    python benchmarks/search_capture.py --compare /tmp/a.pt /tmp/b.pt

Cases: float32/64; MLP, 2-layer MLP, linear; Generic, ECCo (two settings); no constraints, full constraints
(mutability, categorical group, domain), domain only; threshold and max_iter convergence; reference and paper fidelity;
closed-form, autograd and chunked closed-form paths; REVISE; populations (feature space, three compaction settings,
and REVISE in latent space). The generators branch used it to show the shared search step left every output equal.
"""

import sys

import torch

from ctbench.constraints import Constraints
from ctbench.generators import Convergence, make_generator, mlp_search
from ctbench.generators.population import LatentSpace, MemberSearchSettings, population_search
from ctbench.generators.vae import VAE
from ctbench.models import build_model
from ctbench.stacked import StackedMLP

if sys.argv[1] == "--compare":
    a, b = torch.load(sys.argv[2]), torch.load(sys.argv[3])
    assert a.keys() == b.keys()
    bad = [(k, f) for k in a for f in a[k] if not torch.equal(a[k][f].nan_to_num(-7.0), b[k][f].nan_to_num(-7.0))]
    print(len(a), "cases,", len(bad), "differ", bad[:10])
    raise SystemExit(1 if bad else 0)
torch.set_num_threads(1)
out = {}


def rec(key, r):
    out[key] = {
        f: getattr(r, f).clone()
        for f in ("counterfactual", "nascent", "mature", "steps", "prob_target", "initially_valid")
    }


for dt in (torch.float32, torch.float64):
    D, K, B = 6, 3, 400
    g = torch.Generator().manual_seed(0)
    x = torch.randn(B, D, generator=g, dtype=dt).clamp(-1.9, 1.9)
    x[:, 4:] = torch.nn.functional.one_hot(torch.randint(0, 2, (B,), generator=g), 2).to(dt)
    conss = {
        "none": None,
        "full": Constraints.build(
            D,
            domain=([-2.0] * D, [2.0] * D),
            mutability=["both", "none", "increase", "decrease", "both", "both"],
            categorical_groups=[[4, 5]],
        ),
        "dom": Constraints.build(D, domain=([-1.5] * D, [1.5] * D)),
    }
    for mk in ("mlp", "linear", "mlp2"):
        spec = {
            "mlp": {"type": "mlp", "hidden": 16},
            "linear": {"type": "linear"},
            "mlp2": {"type": "mlp", "layers": 2, "hidden": 8},
        }[mk]
        model = build_model(spec, D, K, seed=1).to(dt)
        y = (model(x).argmax(1) + 1) % K
        y[:50] = model(x[:50]).argmax(1)
        for gk, gs in (
            ("generic", {"type": "generic", "lambda_cost": 0.01}),
            ("ecco", {"type": "ecco", "lambda_energy": 5.0, "lambda_cost": 0.001}),
            ("ecco0", {"type": "ecco", "lambda_energy": 1.0}),
        ):
            for ck, cons in conss.items():
                for conv in (Convergence("threshold", 0.75, 30), Convergence("max_iter", 0.5, 12)):
                    for fid in ("reference", "paper"):
                        gen = make_generator(gs, fid)
                        for cf in (True, False):
                            gen.closed_form = cf
                            rec((str(dt), mk, gk, ck, conv.kind, fid, cf), gen.search(model, x, y, cons, conv))
                        gen.closed_form = True
                        old = mlp_search.CHUNK_FLOATS
                        mlp_search.CHUNK_FLOATS = 64 * D
                        rec((str(dt), mk, gk, ck, conv.kind, fid, "chunk"), gen.search(model, x, y, cons, conv))
                        mlp_search.CHUNK_FLOATS = old
    # REVISE single + SNS
    model = build_model({"type": "mlp", "hidden": 16}, D, K, seed=1).to(dt)
    y = (model(x).argmax(1) + 1) % K
    vae = VAE(D, 2, 8, seed=0)
    vae.fit(x.float(), epochs=2, batch_size=50, seed=0)
    vae.to(dt)
    for ck, cons in conss.items():
        gen = make_generator({"type": "revise", "lambda_cost": 0.01}, vae=vae)
        rec(
            (str(dt), "revise", ck),
            gen.search(model, x, y, cons, Convergence("threshold", 0.75, 20), torch.Generator().manual_seed(3)),
        )
    # population
    Dp = 4
    models = [build_model({"type": "mlp"}, Dp, 2, seed=s).to(dt) for s in range(3)]
    gens = [
        make_generator({"type": "ecco", "lambda_energy": 5.0}),
        make_generator({"type": "generic", "lambda_cost": 0.01, "step_size": 0.3}),
        make_generator({"type": "ecco", "lambda_energy": 1.0, "lambda_cost": 0.0}),
    ]
    convs = [Convergence("threshold", 0.75, 30), Convergence("threshold", 0.9, 12), Convergence("max_iter", 0.5, 7)]
    pc = Constraints.build(
        Dp,
        domain=([-2.0] * Dp, [2.0] * Dp),
        mutability=["none", "increase", "both", "both"],
        categorical_groups=[[2, 3]],
    )
    xp = torch.randn(3, 80, Dp, generator=g, dtype=dt)
    xp[..., 2:] = torch.nn.functional.one_hot(torch.randint(0, 2, (3, 80), generator=g), 2).to(dt)
    st = StackedMLP.from_models(models)
    with torch.no_grad():
        tp = (st(xp).argmax(-1) + 1) % 2
    valid = torch.ones(3, 80, dtype=torch.bool)
    valid[1, 60:] = False
    for ck, cons in (("none", None), ("full", pc)):
        for cb in (0.8, 0.0, 2.0):
            r = population_search(
                st, xp, tp, MemberSearchSettings.build(gens, convs, dtype=dt), cons, valid, compact_below=cb
            )
            rec((str(dt), "pop", ck, cb), r)
    vae = VAE(Dp, 2, 8, seed=0)
    vae.fit(xp.reshape(-1, Dp).float(), epochs=2, batch_size=50, seed=0)
    vae.to(dt)
    rg = [make_generator({"type": "revise", "lambda_cost": c}, vae=vae) for c in (0.0, 0.01, 0.1)]
    r = population_search(
        st,
        xp,
        tp,
        MemberSearchSettings.build(rg, convs, dtype=dt),
        pc,
        latent=LatentSpace(vae, [torch.Generator().manual_seed(10 + i) for i in range(3)]),
    )
    rec((str(dt), "pop-revise"), r)
torch.save(out, sys.argv[1])
print(len(out), "cases")
