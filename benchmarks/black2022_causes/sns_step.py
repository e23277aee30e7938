"""SNS against the authors' code on one small population: its step normalisation and the box of Min-ε PGD and SNS.

The authors' ``update_delta`` (zifanw/consistency, ``code/consistency/attack_utils.py``) steps by
``step_size * unit_vector(grad)`` with ``unit_vector(x) = x / l2_norm(x)`` and ``l2_norm(x) = sqrt(Σx²) +
tf.keras.backend.epsilon()`` (1e-7). Where the class probability saturates along the whole path t·x′, the
gradient of Σ_t σ_c(t·x′) is far below 1e-7 and the authors' step shrinks with it (SNS stalls); ours stays a full
step of η whatever the gradient's size. This script measures what that does to SNS on top of Min-ℓ1, Min-ℓ2 and
Min-ε PGD, with the study's settings (paper SNS: δ = 0.8 × the largest PGD ball, 200 steps, η = 2δ/200, 10 grid
points; ART's box; the PGD step rule of the authors' code), on a population pickled by ``train.py``:

    python benchmarks/black2022_causes/train.py credit_default_b22 20
    python benchmarks/black2022_causes/sns_step.py credit_default_b22 20 --factuals 1000

It prints, per base method: success, mean ℓ2 cost and IV (LOO, RS) of the base counterfactuals, then of SNS under
each normalisation (with each feature's own range), then of SNS (and for Min-ε PGD of the base search too) under the
authors' box (``consistency.search_box: scalar``: their README and example pass ``clamp=[X_train.min(),
X_train.max()]``, one range for every feature, to the PGD and to SNS), and the share of SNS starts whose objective
gradient is below 1e-7 (and 1e-6) in norm.
"""
import json
import sys
import time
from dataclasses import replace

import torch
from ctg_features import factuals_arg, features_arg, load_population
from scaling import scaling_arg

import ctbench.generators.sns as sns_module
from ctbench.experiments.consistency_search import SearchContext, evaluate, search_methods
from ctbench.generators._batch import unit_rows
from ctbench.generators.sns import riemann_grid

EPS = 1e-7  # tf.keras.backend.epsilon(), added to the norm by the authors' l2_norm


def unit_rows_authors(g: torch.Tensor) -> torch.Tensor:
    """The authors' unit_vector: g / (‖g‖₂ + 1e-7) per row."""
    return g / (g.norm(dim=1, keepdim=True) + EPS)


def objective_grad_norms(model, x, target, grid_points):
    """‖∇ₓ Σ_t σ_c(t·x)‖₂ per row: the gradient SNS's first step normalises."""
    x = x.clone().requires_grad_(True)
    ts = riemann_grid(grid_points, x.dtype)[:, None, None]
    R, (B, D) = grid_points, x.shape
    probs = torch.softmax(model((ts * x[None]).reshape(R * B, D)), 1).reshape(R, B, -1)
    (g,) = torch.autograd.grad(probs.gather(2, target.reshape(1, B, 1).expand(R, B, 1)).sum(), x)
    return g.norm(dim=1)


def summary(df):
    ok = df[df.valid]
    return dict(success=round(float(df.valid.mean()), 3), l2=round(float(ok.cost_l2.mean()), 3),
                iv_loo=round(float(ok.iv_loo.mean()), 3), iv_rs=round(float(ok.iv_rs.mean()), 3))


def main(argv):
    argv, features = features_arg(argv)
    argv, scaling = scaling_arg(argv)
    argv, k = factuals_arg(argv)
    ds, n = argv[0], argv[1]
    data, cons, base, retr, a, rows, x, target = load_population(ds, n, features, scaling, k)
    ctx = SearchContext(a.pgd_max_eps, 0.8 * a.pgd_max_eps, "paper", a.l1_step, a.l2_step, a.latent_radius,
                        data.X_train, None, None, 0, elastic_net_box="art", pgd_step_rule="code",
                        search_box="feature")
    print("dataset", ds, "factuals", len(rows), "sns radius", ctx.sns_radius, flush=True)
    for method in ("min_l1", "min_l2", "min_eps_pgd"):
        t = time.process_time()
        methods = [method, method + "+sns"]
        found, _ = search_methods(base, x, target, cons, methods, ctx)
        starts = found[method].counterfactual
        with torch.no_grad():
            valid = base(starts).argmax(1) == target  # SNS refines the valid starts only
        norms = objective_grad_norms(base, starts[valid], target[valid], 10)
        line = {"base": summary(evaluate(base, retr, {method: found[method]}, rows, lipschitz_radius=0.01,
                                         lipschitz_samples=1)),
                "sns_ours": summary(evaluate(base, retr, {method + "+sns": found[method + "+sns"]}, rows,
                                             lipschitz_radius=0.01, lipschitz_samples=1))}
        sns_module.unit_rows = unit_rows_authors
        try:
            authors, _ = search_methods(base, x, target, cons, methods, ctx)
        finally:
            sns_module.unit_rows = unit_rows
        line["sns_authors_step"] = summary(evaluate(base, retr, {method + "+sns": authors[method + "+sns"]}, rows,
                                                    lipschitz_radius=0.01, lipschitz_samples=1))
        # the authors' box for Min-ε PGD and SNS (consistency.search_box: scalar): one range for every feature, the
        # training split's overall min and max, against each feature's own range
        boxed, _ = search_methods(base, x, target, cons, methods, replace(ctx, search_box="scalar"))
        if method == "min_eps_pgd":
            line["base_scalar_box"] = summary(evaluate(base, retr, {method: boxed[method]}, rows,
                                                       lipschitz_radius=0.01, lipschitz_samples=1))
        line["sns_scalar_box"] = summary(evaluate(base, retr, {method + "+sns": boxed[method + "+sns"]}, rows,
                                                  lipschitz_radius=0.01, lipschitz_samples=1))
        line["start_grad_below_1e-7"] = round(float((norms < 1e-7).double().mean()), 3)
        line["start_grad_below_1e-6"] = round(float((norms < 1e-6).double().mean()), 3)
        line["start_grad_median"] = round(float(norms.median()), 3)
        line["cpu"] = round(time.process_time() - t, 1)
        print(method, json.dumps(line), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
