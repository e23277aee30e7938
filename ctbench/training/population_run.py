"""The stacked training loop of one population group: the epoch loop of :func:`.trainer.train` with a member axis
on every tensor (stacked weights, one forward/backward per mini-batch, one masked Adam step, health checks per
member). The epoch's search is :class:`.population_search.EpochSearch`; the mini-batch loss and its gradient are
:mod:`.population_loss`."""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np
import pandas as pd
import torch

from ..generators.population import MemberSearchSettings, search_space
from ..stacked import StackedMLP
from .health import growth_message, learning_message
from .members import MemberResult
from .population_loss import batch_forward, batch_grad
from .population_search import EpochSearch
from .trainer import PositiveSampler

_PARTS = ("clf", "div", "reg", "adv")


class PopulationRun(EpochSearch):
    """One stackable group: the epoch loop of ``trainer.train`` with a member axis on every tensor."""

    def __init__(self, members, rows, X, y, cons, fid, Xv, yv, K, dtype):
        self.members, self.X, self.y, self.cons, self.fid, self.Xv, self.yv, self.K = (
            members, X, y, cons, fid, Xv, yv, K)
        dev = X.device
        self.G = G = len(members)
        self.N = X.shape[0]
        self.stack = StackedMLP.from_models([m.model for m in members]).to(device=dev, dtype=dtype)
        self.stack.requires_grad_(False)
        self.leaves = self.stack.leaves()  # for population_loss.batch_loss, the autograd reference
        self.wb = [self.stack.layer(j) for j in range(len(self.stack.layout))]  # (W, b) views of the weights
        self.ones_g = torch.ones(G, dtype=dtype, device=dev)
        self.plus_minus = torch.tensor([1.0, -1.0], dtype=dtype, device=dev)[None, :, None]
        self.member_models: dict = {}  # population_search._search_each: member g's model, refilled each epoch
        self.upper_cache: dict = {}  # population_loss._upper_grads of the common case, by (batch rows, tuples)
        self.shared = all(r is None for r in rows)
        self.n_rows = [self.N if r is None else int(r.numel()) for r in rows]
        self.rows = [torch.arange(self.N) if r is None else r.cpu() for r in rows]
        p0 = members[0].params
        self.epochs, self.b = p0.epochs, p0.batch_size
        self.n_batches = [-(-n // self.b) for n in self.n_rows]
        self.NB = max(self.n_batches)
        self.gens = [torch.Generator().manual_seed(int(m.params.seed)) for m in members]
        self.lr = torch.tensor([m.params.lr for m in members], dtype=torch.float64, device=dev)
        self.n_rows_t = torch.tensor(self.n_rows, device=dev)
        self.has_batch = torch.arange(self.NB, device=dev)[None, :] < torch.tensor(self.n_batches, device=dev)[:, None]
        self.lam4 = torch.tensor([[m.objective.lambdas()[k] for k in _PARTS] for m in members], dtype=dtype,
                                 device=dev)
        self.use4 = torch.tensor([[k in m.objective.parts for k in _PARTS] for m in members], device=dev)
        self.all_parts = torch.ones(G, 4, dtype=torch.bool, device=dev)
        self.clf_only = torch.zeros(G, 4, dtype=torch.bool, device=dev)
        self.clf_only[:, 0] = True
        self.use_all = self.use4 & self.all_parts
        self.burnin = [round(m.params.burnin * m.params.epochs) for m in members]
        self.needs_cf = [m.objective.needs_counterfactuals for m in members]
        self.max_nonfinite = torch.tensor([m.params.max_nonfinite_batches for m in members], device=dev)
        # members share the training program whatever their search space; the per-epoch search runs once per
        # space (feature space, or one VAE's latent space), each a batched search over its members
        self.spaces: dict[tuple, tuple[list[int], MemberSearchSettings, Any]] = {}
        by_space: dict[tuple, list[int]] = {}
        for i in range(G):
            if self.needs_cf[i]:
                by_space.setdefault(search_space(members[i].generator), []).append(i)
        for space, idx in by_space.items():
            gen0 = members[idx[0]].generator
            vae = gen0.vae.to(dev).requires_grad_(False) if gen0.latent else None
            settings = MemberSearchSettings.build([members[i].generator for i in idx],
                                                  [members[i].convergence for i in idx], device=dev, dtype=dtype)
            self.spaces[space] = (idx, settings, vae)
        self.space_of = {i: space for space, (idx, _, _) in self.spaces.items() for i in idx}
        y_cpu = y.cpu()
        self.samplers = [PositiveSampler(y_cpu[r], K) if self.needs_cf[i] else None
                         for i, r in enumerate(self.rows)]
        # member row index (G, N_max), padded with the last row; membership mask for training accuracy
        n_max = max(self.n_rows)
        self.index = torch.stack([torch.cat([r, r[-1:].expand(n_max - len(r))]) for r in self.rows]).to(dev)
        if not self.shared:
            self.in_train = torch.zeros(G, self.N, dtype=torch.bool, device=dev)
            for g, r in enumerate(self.rows):
                self.in_train[g, r.to(dev)] = True
        # Adam state (torch.optim.Adam defaults β = (0.9, 0.999), ε = 1e-8), one step counter per member
        # on the padded weights (StackedMLP.padded: every member's weights in the fused kernel's vector lanes)
        self.m1 = torch.zeros_like(self.stack.padded)
        self.m2 = torch.zeros_like(self.stack.padded)
        self.pad = self.stack.padded.shape[1] - self.stack.P
        self.steps = torch.zeros(G, dtype=torch.float64, device=dev)
        self.uniform_steps: int | None = 0   # every member has taken this many steps (None once they differ)
        self.step_size_base = self.lr.to(dtype)[:, None]
        # one learning rate for all: torch's fused Adam kernel (one pass over the state instead of ~9; the same
        # formula, so the same numbers up to round-off) — the step that dominates populations with small batches
        lrs = {m.params.lr for m in members}
        self.fused_lr = lrs.pop() if len(lrs) == 1 and hasattr(torch, "_fused_adam_") else None
        self.fused_step = torch.zeros((), dtype=torch.float32, device=dev)
        self.full_batch = [all(i < n for n in self.n_batches) for i in range(self.NB)]
        self.alive = torch.ones(G, dtype=torch.bool, device=dev)
        self.errors: list[str | None] = [None] * G
        self.start_loss: list[float] | None = None  # each member's first mini-batch loss (untrained weights)
        self.log_accuracy = True

    # -- one mini-batch: population_loss.batch_forward / batch_grad (autograd's backward pass, written out) -------
    def _grad_of(self, tape, g_total: torch.Tensor | None) -> torch.Tensor:
        """∂(Σ_g g_total[g]·total[g])/∂flat (G, P) for the mini-batch of ``tape``."""
        return batch_grad(self, tape, g_total)

    def _adam_step_all(self, grad: torch.Tensor) -> None:
        """:meth:`_adam_step` when every member updates and all have taken the same number of steps: the bias
        corrections are plain numbers, as in torch.optim.Adam, and no mask is needed."""
        self.uniform_steps += 1
        self.steps += 1
        grad = self._padded(grad)
        if self.fused_lr is not None:
            self.fused_step.fill_(self.uniform_steps)  # the step count after this update (as torch.optim.Adam)
            with torch.no_grad():
                torch._fused_adam_([self.stack.padded], [grad], [self.m1], [self.m2], [],
                                   [self.fused_step], amsgrad=False, lr=self.fused_lr, beta1=0.9, beta2=0.999,
                                   weight_decay=0.0, eps=1e-8, maximize=False)
            return
        bc1 = 1 - 0.9 ** self.uniform_steps
        bc2_sqrt = (1 - 0.999 ** self.uniform_steps) ** 0.5
        with torch.no_grad():
            self.m1.lerp_(grad, 0.1)
            self.m2.mul_(0.999).addcmul_(grad, grad, value=0.001)
            denom = (self.m2.sqrt() / bc2_sqrt).add_(1e-8)
            self.stack.padded.sub_(self.m1.div(denom).mul_(self.step_size_base / bc1))

    def _padded(self, grad: torch.Tensor) -> torch.Tensor:
        """(G, P) gradient → (G, P') with zero columns for the padding (whose weights, moments and steps stay 0)."""
        return torch.nn.functional.pad(grad, (0, self.pad)) if self.pad else grad.contiguous()

    def _adam_step(self, grad: torch.Tensor, upd: torch.Tensor) -> None:
        """torch.optim.Adam (β = 0.9, 0.999; ε = 1e-8) on the members in ``upd``; the others are left untouched."""
        self.steps += upd.to(self.steps.dtype)
        live = upd & (self.steps > 0)
        bc1 = 1 - 0.9 ** self.steps
        bc2 = 1 - 0.999 ** self.steps
        p = self.stack.padded
        grad = self._padded(grad)
        dt = p.dtype
        step_size = torch.where(live, self.lr / bc1.clamp(min=1e-300), 0.0).to(dt)[:, None]
        bc2_sqrt = torch.where(live, bc2.sqrt(), 1.0).to(dt)[:, None]
        w = upd.to(dt)[:, None]
        with torch.no_grad():
            grad = torch.where(upd[:, None], grad, 0.0)
            self.m1.lerp_(grad, 0.1 * w)
            self.m2.lerp_(grad.square(), 0.001 * w)
            denom = (self.m2.sqrt() / bc2_sqrt).add_(1e-8)
            p.sub_(step_size * self.m1 / denom)

    # -- the epoch loop -----------------------------------------------------------------------------------------
    def run(self, progress: bool) -> list[MemberResult]:
        G, dev = self.G, self.X.device
        logs: list[list[dict]] = [[] for _ in range(G)]
        bar = None
        if progress:
            from tqdm.auto import tqdm
            bar = tqdm(total=self.epochs, desc=f"population of {G}", unit="epoch")
        nonfinite = torch.zeros(G, dtype=torch.long, device=dev)
        for epoch in range(1, self.epochs + 1):
            t0 = time.perf_counter()
            alive = self.alive.tolist()
            active = [g for g in range(G) if alive[g] and self.needs_cf[g] and epoch > self.burnin[g]]
            cf, stats, search_seconds = None, {}, 0.0
            if active:
                self.stack.eval()
                cf, stats, search_seconds = self._epoch_counterfactuals(active)
            order = None
            if self.fid.shuffle_batches:
                n_max = self.index.shape[1]
                perms = []
                for g in range(G):
                    p = self.rows[g][torch.randperm(self.n_rows[g], generator=self.gens[g])]
                    perms.append(torch.cat([p, p[-1:].expand(n_max - len(p))]))
                order = torch.stack(perms).to(dev)
            sums = torch.zeros(G, 5, dtype=torch.float64, device=dev)   # loss, clf, div, reg, adv
            seen = torch.zeros(G, 4, dtype=torch.bool, device=dev)
            n_ok = torch.zeros(G, dtype=torch.long, device=dev)
            skipped = torch.zeros(G, dtype=torch.long, device=dev)
            fast_ok = 0
            for i in range(self.NB):
                total, parts, have, tape = batch_forward(self, i, order, cf)
                if self.start_loss is None:
                    self.start_loss = total.detach().double().cpu().tolist()
                if self.uniform_steps is not None and self.full_batch[i] and bool(torch.isfinite(total).all()):
                    # the common case, every member alive, with a batch and a finite loss: no masks needed
                    self._adam_step_all(self._grad_of(tape, None))
                    fast_ok += 1
                    sums += torch.cat([total[:, None], parts], 1).detach()
                    seen |= have
                    continue
                self.uniform_steps = None
                finite = torch.isfinite(total)
                tried = self.alive & self.has_batch[:, i]
                bad = tried & ~finite
                nonfinite += bad
                skipped += bad
                self.alive &= ~(bad & (nonfinite > self.max_nonfinite))
                upd = tried & finite & self.alive
                self._adam_step(self._grad_of(tape, torch.where(upd, self.ones_g, 0.0)), upd)
                n_ok += upd
                ok = torch.cat([upd[:, None], upd[:, None] & have], 1)
                sums += torch.where(ok, torch.cat([total[:, None], parts], 1).detach(), 0.0)
                seen |= ok[:, 1:]
            n_ok += fast_ok
            self._end_of_epoch(epoch, nonfinite, skipped, n_ok, sums, seen, stats, search_seconds, logs, t0)
            if bar is not None:
                bar.set_postfix(alive=int(self.alive.sum()))
                bar.update()
        if bar is not None:
            bar.close()
        final_val = None  # without per-epoch accuracies, the learning check still gets the final one (one pass)
        if not self.log_accuracy and self.Xv is not None and len(self.Xv):
            final_val = self._accuracy(self.Xv, self.yv).tolist()
        for g, m in enumerate(self.members):  # did it learn? (only the members that are still running)
            if self.errors[g] is None and logs[g]:
                acc_val = logs[g][-1]["acc_val"] if final_val is None else final_val[g]
                why = learning_message(acc_val, self.yv, self.K, int(self.steps[g]), m.params.majority_margin)
                if why is not None:
                    self.errors[g] = f"{m.describe()}: training did not learn: {why}"
        out = []
        for g, m in enumerate(self.members):
            log = pd.DataFrame(logs[g])
            if self.errors[g] is not None:
                out.append(MemberResult(m.name, self.stack.member(g) if m.params.keep_failed else None, log,
                                        self.errors[g]))
            else:
                out.append(MemberResult(m.name, self.stack.member(g), log))
        return out

    def _accuracy(self, X, y, in_train=None) -> torch.Tensor:
        G = self.G
        correct = torch.zeros(G, dtype=torch.float64, device=X.device)
        with torch.no_grad():
            for a in range(0, X.shape[0], 8192):
                xb = X[a:a + 8192]
                hit = self.stack.predict(xb.expand(G, -1, -1)) == y[a:a + 8192]
                if in_train is not None:
                    hit &= in_train[:, a:a + 8192]
                correct += hit.sum(1)
        n = torch.tensor(self.n_rows, device=X.device) if in_train is not None else X.shape[0]
        return correct / n

    def _end_of_epoch(self, epoch, nonfinite, skipped, n_ok, sums, seen, stats, search_seconds, logs, t0):
        G = self.G
        was_alive = [e is None for e in self.errors]
        finite_w = self.stack.finite()
        acc_train, acc_val = [np.nan] * G, [np.nan] * G
        if self.log_accuracy:
            acc_train = self._accuracy(self.X, self.y, None if self.shared else self.in_train).tolist()
            if self.Xv is not None and len(self.Xv):
                acc_val = self._accuracy(self.Xv, self.yv).tolist()
        alive, nf, sk, ok = self.alive.tolist(), nonfinite.tolist(), skipped.tolist(), n_ok.tolist()
        fw = finite_w.tolist()
        sums = dict(zip(("loss", *_PARTS), sums.t().tolist(), strict=True))
        seen = dict(zip(_PARTS, seen.t().tolist(), strict=True))
        seconds = time.perf_counter() - t0
        for g in range(G):
            if not was_alive[g]:
                continue
            m = self.members[g]
            if not alive[g]:
                self.errors[g] = (f"{m.describe()}: training diverged: non-finite loss at epoch {epoch}; {nf[g]} "
                                  f"non-finite batch(es) in total exceed training.max_nonfinite_batches="
                                  f"{m.params.max_nonfinite_batches}. Lower the learning rate or the penalty "
                                  "strengths.")
            elif not fw[g]:
                self.errors[g] = (f"{m.describe()}: training diverged: model weights became non-finite at epoch "
                                  f"{epoch}")
                self.alive[g] = False
            if sk[g] and alive[g]:
                warnings.warn(f"{m.name}: skipped {sk[g]} non-finite batch loss(es) at epoch {epoch}",
                              RuntimeWarning, stacklevel=3)
            row = {"epoch": epoch, "loss": sums["loss"][g] / ok[g] if ok[g] else float("nan")}
            for k in _PARTS:
                row[k] = sums[k][g] / ok[g] if seen[k][g] and ok[g] else float("nan")
            mature, steps = stats.get(g, (float("nan"), float("nan")))
            row.update(share_mature=mature, mean_steps=steps, search_seconds=search_seconds if g in stats else 0.0,
                       nonfinite_batches=nf[g], acc_train=acc_train[g], acc_val=acc_val[g], seconds=seconds)
            logs[g].append(row)
            if self.errors[g] is None and ok[g]:
                why = growth_message(row["loss"], self.start_loss[g], epoch, m.params.max_loss_growth)
                if why is not None:  # stop this member only; the others go on (through the masked update path)
                    self.errors[g] = f"{m.describe()}: training diverged: {why}"
                    self.alive[g] = False
                    self.uniform_steps = None

