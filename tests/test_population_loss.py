"""The population's hand-written backward pass (``population_loss.batch_grad``) is autograd's, bit for bit.

Every mini-batch of a real epoch is checked against ``batch_loss`` + ``torch.autograd.grad`` with ``torch.equal``
(float32, where round-off differences would show): shared batches, leave-one-out rows, shuffled batches, members
without counterfactuals this epoch (vanilla, burn-in), a masked update, deeper and linear models.
"""

import numpy as np
import pytest
import torch

from ctbench.constraints import Constraints
from ctbench.fidelity import resolve_fidelity
from ctbench.generators import Convergence, make_generator
from ctbench.models import build_model
from ctbench.training import Objective, TrainParams
from ctbench.training.members import validate_members
from ctbench.training.population import Member
from ctbench.training.population_loss import batch_forward, batch_grad, batch_loss
from ctbench.training.population_run import PopulationRun
from ctbench.training.trainer import training_tensors


def _run(members, n=203, fid="reference", model=None):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, n)
    X = (rng.standard_normal((n, 3)) + 1.5 * (2 * y[:, None] - 1)).astype(np.float32)
    fid = resolve_fidelity("reference", fid) if isinstance(fid, dict) else resolve_fidelity(fid)
    Xt, yt, Xv, yv, K = training_tensors(X, y, None, None, None, torch.device("cpu"), torch.float32)
    rows = validate_members(members, n)
    return PopulationRun(members, rows, Xt, yt, Constraints.build(3, domain=([-5.0] * 3, [5.0] * 3)), fid, Xv, yv,
                          K, torch.float32)


def _member(seed, objective="full", model=None, rows=None, burnin=0.0, nce=40, gen="ecco", **obj):
    spec = model or {"type": "mlp"}
    return Member(build_model(spec, 3, 2, seed=seed), Objective(objective, **obj),
                  TrainParams(epochs=4, batch_size=32, nce=nce, seed=seed, burnin=burnin),
                  None if objective == "vanilla" else make_generator({"type": gen}),
                  Convergence("threshold", 0.75, 10), name=f"m{seed}", rows=rows)


def _check_epoch(run, active, order=None, masked=False):
    cf = run._epoch_counterfactuals(active)[0] if active else None
    n_checked = 0
    for i in range(run.NB):
        total, parts, have = batch_loss(run, i, order, cf)
        upd = torch.arange(run.G) % 2 == 0 if masked else torch.ones(run.G, dtype=torch.bool)
        want = torch.autograd.grad(torch.where(upd, total, 0.0).sum(), run.leaves)
        want = torch.cat([g.reshape(run.G, -1) for g in want], 1)
        t2, p2, h2, tape = batch_forward(run, i, order, cf)
        got = batch_grad(run, tape, torch.where(upd, run.ones_g, 0.0) if masked else None)
        assert torch.equal(total.detach(), t2)
        assert torch.equal(parts.detach(), p2) or torch.equal(parts.detach().nan_to_num(7.0), p2.nan_to_num(7.0))
        assert torch.equal(have, h2)
        assert torch.equal(got, want), f"batch {i}: max |Δ| {(got - want).abs().max()}"
        with torch.no_grad():  # move the weights so that later batches see other values
            run.stack.flat.sub_(1e-2 * got.sign())
        n_checked += 1
    assert n_checked == run.NB


@pytest.mark.parametrize("model", [{"type": "mlp"}, {"type": "mlp", "layers": 2, "hidden": 8}, {"type": "linear"}])
def test_hand_written_gradient_equals_autograd_bitwise(model):
    members = [_member(s, model=model) for s in range(4)] + [_member(4, "full", model=model, lambda_reg=0.5)]
    run = _run(members)
    _check_epoch(run, list(range(run.G)))
    _check_epoch(run, list(range(run.G)), masked=True)
    _check_epoch(run, [], masked=False)  # no counterfactuals: the classification loss alone


def test_hand_written_gradient_with_partial_counterfactuals_and_row_subsets():
    loo = [None, np.delete(np.arange(203), 5), np.arange(150)]
    members = [_member(0, rows=loo[0]), _member(1, "vanilla", rows=loo[1]), _member(2, "energy", gen="generic",
                                                                                      rows=loo[2], nce=25)]
    run = _run(members)
    _check_epoch(run, [0, 2])  # member 1 has no counterfactuals: per-batch gather index and tuple masks
    _check_epoch(run, [2], masked=True)


def test_hand_written_gradient_with_shuffled_batches():
    run = _run([_member(s) for s in range(3)], fid={"shuffle_batches": True})
    n_max = run.index.shape[1]
    perms = []
    for g in range(run.G):
        p = run.rows[g][torch.randperm(run.n_rows[g], generator=run.gens[g])]
        perms.append(torch.cat([p, p[-1:].expand(n_max - len(p))]))
    _check_epoch(run, list(range(run.G)), order=torch.stack(perms))
