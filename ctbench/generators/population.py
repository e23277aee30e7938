"""The counterfactual search for a population of stacked models: every member searches its own factuals at once.

Factuals come as (G, n, D): row (g, i) is searched against member g's weights with member g's settings (step size,
τ, T, L1 cost, ECCo energy strength and φ(t) schedule, nascent ε as per-member tensors). The per-row rules are
:mod:`.step`'s, shared with :meth:`GradientGenerator._search`, so member g's result equals a single-model search with
g's weights and generator: finished rows are frozen by a mask (and the layout compacted once most rows of every member
have finished) instead of being dropped one by one, and a row's step never depends on the other rows or members.
Generators whose hooks are the base class's can be batched this way: Generic and ECCo in feature space, and REVISE in
the latent space of a VAE its members share; REVISE's fresh latent sample per step is drawn from each member's own
random stream, as many draws in the same order as the single-model search, so its results are the same too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..constraints import Constraints
from . import mlp_grad
from .base import Convergence, GradientGenerator
from .ecco import ECCoGenerator, energy_multiplier
from .generic import GenericGenerator
from .revise import REVISEGenerator
from .step import StepRule, move, to_domain

#: generators whose search a population can batch: the base class's direction and postprocess hooks, in feature
#: space (Generic, ECCo) or in a VAE's latent space (REVISE, members sharing one VAE)
BATCHABLE = (GenericGenerator, ECCoGenerator, REVISEGenerator)


def batchable(generator: GradientGenerator | None) -> bool:
    return generator is None or type(generator) in BATCHABLE


def search_space(generator: GradientGenerator | None) -> tuple:
    """Members can share a search only if this is equal: feature space, or the same VAE (and projection rule)."""
    if isinstance(generator, REVISEGenerator):
        return ("latent", id(generator.vae), generator.enforce_mutability)
    return ("feature",)


@dataclass
class MemberSearchSettings:
    """Per-member search settings as tensors of length G (``phi`` is (G, T_max + 1): φ(t) per member)."""

    step: torch.Tensor
    tau: torch.Tensor
    max_iter: torch.Tensor
    threshold: torch.Tensor
    lenient: torch.Tensor
    lambda_cost: torch.Tensor
    lambda_energy: torch.Tensor
    energy_reg: torch.Tensor
    phi: torch.Tensor
    epsilon: torch.Tensor
    inclusive: bool

    @classmethod
    def build(cls, generators: Sequence[GradientGenerator], convergences: Sequence[Convergence],
              device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32) -> MemberSearchSettings:
        if len(generators) != len(convergences):
            raise ValueError(f"{len(generators)} generators for {len(convergences)} convergence rules")
        for i, gen in enumerate(generators):
            if type(gen) not in BATCHABLE:
                raise ValueError(f"member {i}: generator {gen.name!r} cannot be batched over a population "
                                 f"(batchable: {[c.name for c in BATCHABLE]})")
        if len({search_space(g) for g in generators}) > 1:
            raise ValueError("members search in different spaces (feature space or different VAEs); split them")
        inclusive = {g.nascent_inclusive for g in generators}
        if len(inclusive) > 1:
            raise ValueError("members disagree on nascent_inclusive (a fidelity switch); split the population")
        t_max = max(int(c.max_iter) for c in convergences)
        phi = []
        for gen, conv in zip(generators, convergences, strict=True):
            if isinstance(gen, ECCoGenerator) and gen.lambda_energy != 0.0:
                phi.append([energy_multiplier(t, int(conv.max_iter), gen.decay) for t in range(t_max + 1)])
            else:
                phi.append([0.0] * (t_max + 1))

        def vec(values, dt=dtype):
            return torch.tensor(values, dtype=dt, device=device)

        return cls(
            step=vec([g.step_size for g in generators]),
            tau=vec([c.tau for c in convergences]),
            max_iter=vec([int(c.max_iter) for c in convergences], torch.long),
            threshold=vec([c.kind == "threshold" for c in convergences], torch.bool),
            lenient=vec([c.kind != "threshold" or g.maturity != "threshold"
                         for g, c in zip(generators, convergences, strict=True)], torch.bool),
            lambda_cost=vec([g.lambda_cost for g in generators]),
            lambda_energy=vec([getattr(g, "lambda_energy", 0.0) for g in generators]),
            energy_reg=vec([getattr(g, "energy_reg", 0.0) for g in generators]),
            phi=vec(phi),
            epsilon=vec([g.nascent_epsilon for g in generators]),
            inclusive=inclusive.pop(),
        )

    def select(self, members: torch.Tensor) -> MemberSearchSettings:
        out = {k: (v.index_select(0, members.to(v.device)) if isinstance(v, torch.Tensor) else v)
               for k, v in self.__dict__.items()}
        return MemberSearchSettings(**out)


@dataclass
class PopulationSearchResult:
    """As :class:`~ctbench.generators.base.CounterfactualResult`, with a leading member axis: (G, n[, D])."""

    counterfactual: torch.Tensor
    nascent: torch.Tensor
    mature: torch.Tensor
    steps: torch.Tensor
    prob_target: torch.Tensor
    initially_valid: torch.Tensor


#: the fewest rows a search's layout holds: compaction stops there and smaller inputs are padded to it (with inactive
#: rows). Why: ATen multiplies batched matrices in a naive loop when contraction × rows × columns < 400, and MKL
#: takes other kernels for a few rows; both round differently from the kernels of larger layouts, so a row's bits
#: depended on how many rows its companions had left (measured in float32: a 2-32-2 MLP's rows differ in layouts of
#: ≤ 6 rows, D = 784 with 10 classes in layouts of ≤ 11; from 12 rows on every layout gave every row the same bits
#: as a 1,000-row one for the shapes measured). With it a feature-space member's counterfactuals do not depend on the
#: other members of its population; REVISE's latent search still can (benchmarks/README.md, stop 45).
MIN_LAYOUT_ROWS = 32


def _gather_rows(t: torch.Tensor, perm: torch.Tensor) -> torch.Tensor:
    if t.ndim == 2:
        return t.gather(1, perm)
    return t.gather(1, perm[..., None].expand(-1, -1, t.shape[-1]))


def population_search(model, x: torch.Tensor, target: torch.Tensor, settings: MemberSearchSettings,
                      constraints: Constraints | None = None, valid: torch.Tensor | None = None,
                      compact_below: float = 0.8, latent: LatentSpace | None = None) -> PopulationSearchResult:
    """Search counterfactuals for factuals ``x`` (G, n, D) towards ``target`` (G, n) with a stacked ``model``.

    ``valid`` (G, n) marks real rows when members have fewer factuals than ``n`` (padding is never searched).
    ``compact_below``: drop finished rows from the layout once the busiest member has fewer than this share of the
    current rows active (a gather; in feature space results do not depend on it, nor on the other members: the
    layout keeps at least :data:`MIN_LAYOUT_ROWS` rows; REVISE's latent search still can, see there).
    ``latent``: search in a VAE's latent space (REVISE) with each member's own random stream.
    """
    if x.shape[1] == 0:  # no factuals: an empty result at once
        G, _, D = x.shape
        z = torch.zeros(G, 0, dtype=torch.bool, device=x.device)
        return PopulationSearchResult(x.clone(), x.clone(), z, torch.zeros(G, 0, dtype=torch.long, device=x.device),
                                      torch.zeros(G, 0, dtype=x.dtype, device=x.device), z.clone())
    n = x.shape[1]
    x = x.detach()
    if n < MIN_LAYOUT_ROWS:  # inactive copies of the first row up to the minimal layout; cut off below
        G, pad = x.shape[0], MIN_LAYOUT_ROWS - n
        x = torch.cat([x, x[:, :1].expand(-1, pad, -1)], 1)
        target = torch.cat([target, target[:, :1].expand(-1, pad)], 1)
        real = torch.ones(G, n, dtype=torch.bool, device=x.device) if valid is None else valid.bool()
        valid = torch.cat([real, torch.zeros(G, pad, dtype=torch.bool, device=x.device)], 1)
    with torch.no_grad():  # gradients are taken by hand (StackedMLP.input_grad); no autograd graph is needed
        res = _search(model, x, target, settings, constraints, valid, compact_below, latent)
    if x.shape[1] == n:
        return res
    return PopulationSearchResult(*(getattr(res, f)[:, :n] for f in PopulationSearchResult.__dataclass_fields__))


@dataclass
class LatentSpace:
    """REVISE's search space for a population: the shared VAE, each member's generator of random numbers (the
    stochastic re-encoding draws from it exactly as the single-model search does) and whether decoded points are
    projected onto the mutability set."""

    vae: torch.nn.Module
    rngs: Sequence[torch.Generator]
    enforce_mutability: bool = True

    def encode(self, x: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        """z ~ q(z | x) for every row; the noise of member g's active rows comes from member g's generator, in
        row order, as many draws as the single-model search makes."""
        mu, logsigma = self.vae.encode_params(x)
        noise = torch.zeros_like(mu)
        draws = [torch.randn((c, mu.shape[-1]), generator=rng, dtype=mu.dtype, device=rng.device)
                 for c, rng in zip(active.sum(1).tolist(), self.rngs, strict=True)]
        noise[active] = torch.cat(draws).to(mu.device)  # boolean indexing is row-major: member by member, in order
        return mu + logsigma.exp() * noise

    def decode(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Decoded point and the decoder's hidden activation (Dense(L, H, tanh) → Dense(H, D))."""
        first, last = self.vae.decoder[0], self.vae.decoder[2]
        a = torch.tanh(F.linear(z, first.weight, first.bias))
        return F.linear(a, last.weight, last.bias), a

    def grad(self, a: torch.Tensor, dx: torch.Tensor) -> torch.Tensor:
        """∂L/∂z from ∂L/∂x' back through the decoder (tanh' = 1 − a², autograd's own rule)."""
        first, last = self.vae.decoder[0], self.vae.decoder[2]
        return ((dx @ last.weight) * (1 - a.square())) @ first.weight


def _search(model, x, target, settings, constraints, valid, compact_below, latent):
    G, n, D = x.shape
    y = target.long()
    dev = x.device
    cons = constraints or Constraints(D)
    if cons.n_features != D:
        raise ValueError(f"constraints are for {cons.n_features} features, factuals have {D}")
    codes = cons.codes(dev)
    lo, hi = cons.row_bounds(x, codes)
    per_row_bounds = lo is not None and lo.ndim == 3
    s = settings
    # the per-row rules of .step with one value per member: (G, 1, 1) on points, (G, 1) on rows
    rule = StepRule(eta=s.step[:, None, None], lam=s.lambda_cost[:, None, None], eps=s.epsilon[:, None],
                    inclusive=s.inclusive, tau=s.tau[:, None], max_iter=s.max_iter[:, None],
                    threshold=s.threshold[:, None], lenient=s.lenient[:, None])
    lam_egy, e_reg = s.lambda_energy[:, None], s.energy_reg[:, None]
    any_energy = bool((s.phi != 0).any()) and bool((s.lambda_energy != 0).any())
    any_cost = bool((s.lambda_cost != 0).any())

    out_cf, out_nascent = x.clone(), x.clone()
    out_steps = torch.zeros(G, n, dtype=torch.long, device=dev)
    out_prob = torch.zeros(G, n, dtype=x.dtype, device=dev)
    out_mature = torch.zeros(G, n, dtype=torch.bool, device=dev)
    out_init = torch.zeros(G, n, dtype=torch.bool, device=dev)

    active = torch.ones(G, n, dtype=torch.bool, device=dev) if valid is None else valid.clone().bool()
    # each current row's position in the flat (G·n) outputs: finished rows are written by one nonzero and
    # index_select/index_copy_ (the row-major order of boolean indexing, without a nonzero per tensor)
    dst = torch.arange(G * n, device=dev).view(G, n)
    x0, xcf, nascent = x, x.clone(), x.clone()  # xcf and nascent are updated in place, never aliases of x
    K = model(x[:, :1]).shape[-1]
    onehot = F.one_hot(y, K).to(x.dtype)
    z = latent.encode(xcf, active) if latent is not None else None
    ws_diff, ws_grad = torch.empty(G * n * D, dtype=x.dtype, device=dev), torch.empty(G * n * D, dtype=x.dtype,
                                                                                        device=dev)
    # hidden activations and their gradients in reused buffers (fresh multi-MB tensors cost page faults)
    work_fwd, work_bwd = (mlp_grad.workspace(model.layers(), G * n, x) for _ in range(2))
    t = 0
    while bool(active.any()):
        logits, hidden = model.forward_cached(xcf, work_fwd)
        # softmax by hand: torch.softmax over a last axis of 2–10 classes is several times slower
        e = (logits - logits.amax(-1, keepdim=True)).exp_()
        prob = e.div_(e.sum(-1, keepdim=True))
        p = prob.gather(-1, y[..., None]).squeeze(-1)
        # big (G, M, D) results go to reused buffers: a fresh tensor of that size costs more in page faults than
        # the arithmetic (3–5× at MNIST size)
        M = xcf.shape[1]
        diff = torch.sub(xcf, x0, out=ws_diff[:G * M * D].view(G, M, D))
        if t > 0:  # the nascent example: the last path point inside the L∞ ε-ball
            inside = rule.in_ball(diff)
            nascent = torch.where((inside & active)[..., None], xcf, nascent, out=nascent)
        passed = rule.passed(p)
        if t == 0:
            init = active & passed & rule.threshold
            out_init.view(-1)[dst.reshape(-1)[init.reshape(-1)]] = True
        finish = active & rule.finished(passed, t)
        if bool(finish.any()):
            pos = finish.reshape(-1).nonzero().squeeze(1)
            d_f = dst.reshape(-1).index_select(0, pos)
            out_cf.view(-1, D).index_copy_(0, d_f, xcf.reshape(-1, D).index_select(0, pos))
            out_nascent.view(-1, D).index_copy_(0, d_f, nascent.reshape(-1, D).index_select(0, pos))
            out_steps.view(-1).index_fill_(0, d_f, t)
            out_prob.view(-1).index_copy_(0, d_f, p.reshape(-1).index_select(0, pos))
            out_mature.view(-1).index_copy_(0, d_f, rule.mature(passed).reshape(-1).index_select(0, pos))
            active = active & ~finish
            if not bool(active.any()):
                break
        # ∂/∂logits of CE(logits, y⁺) + λ_egy·φ(t)·(E + r·E²), E = −logit[y⁺]: softmax − onehot, and on the target
        # logit −λ_egy·φ(t)·(1 + 2r·E); then back through the network by hand (StackedMLP.input_grad)
        if latent is not None:  # the gradient is taken at the decoded latent point, not at the clamped x'
            cur, dec_hidden = latent.decode(z)
            logits, hidden = model.forward_cached(cur, work_fwd)
            e = (logits - logits.amax(-1, keepdim=True)).exp_()
            prob = e.div_(e.sum(-1, keepdim=True))
        dlogits = prob - onehot
        if any_energy:
            coef = lam_egy * s.phi[:, min(t, s.phi.shape[1] - 1)][:, None]
            energy = -logits.gather(-1, y[..., None]).squeeze(-1)
            dlogits = dlogits - onehot * (coef * (1 + 2 * e_reg * energy))[..., None]
        # rows are independent: finished rows need no masking here
        grad = model.input_grad(hidden, dlogits, out=None if latent is not None else ws_grad[:G * M * D].view(G, M, D),
                                work=work_bwd)
        if latent is not None:
            if any_cost:  # REVISE's L1 cost is a penalty on the decoded point: its gradient goes through the decoder
                grad = grad + rule.lam * (cur - x0).sign()
            grad = latent.grad(dec_hidden, grad)
        m_new = max(int(active.sum(1).max()), MIN_LAYOUT_ROWS)  # never below the minimal layout (see there)
        if m_new < compact_below * active.shape[1]:  # drop finished rows from the layout
            perm = torch.argsort((~active).to(torch.int8), dim=1, stable=True)[:, :m_new]
            grad, xcf, x0, nascent, diff = (_gather_rows(v, perm) for v in (grad, xcf, x0, nascent, diff))
            if latent is not None:
                z = _gather_rows(z, perm)
            y, dst, active = (v.gather(1, perm) for v in (y, dst, active))
            onehot = _gather_rows(onehot, perm)
            if per_row_bounds:
                lo, hi = _gather_rows(lo, perm), _gather_rows(hi, perm)
        # in-place from here: xcf, grad and diff are this step's own tensors (outputs were copied out above)
        if any_cost and latent is None:
            grad = rule.add_cost(grad, diff.sign_())
        delta = rule.finite_delta(rule.descent(grad), None, inplace=True)
        if latent is None:
            xcf = move(xcf, delta, cons, codes, inplace=True)
        else:
            z = z + delta
            xcf = latent.decode(z)[0]
        xcf = to_domain(xcf, cons, lo, hi, inplace=True)
        if latent is not None:
            if latent.enforce_mutability:
                xcf = cons.project(xcf, x0, codes)
            z = latent.encode(xcf, active)
        t += 1
    return PopulationSearchResult(out_cf, out_nascent, out_mature, out_steps, out_prob, out_init)


__all__ = ["BATCHABLE", "LatentSpace", "MemberSearchSettings", "PopulationSearchResult", "batchable",
           "population_search", "search_space"]
