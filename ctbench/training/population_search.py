"""The batched per-epoch counterfactual search of a population (reference §1.3 with a member axis): factuals,
targets and one search per search space, split into each member's mini-batch groups. A mixin of
:class:`.population_run.PopulationRun`, whose state it reads."""

from __future__ import annotations

import time

import torch

from ..generators.population import LatentSpace, PopulationSearchResult, population_search
from ..stacked import StackedMLP
from .trainer import sample_targets

#: factuals × features per member from which the epoch's search runs member by member (see ``_search_each``)
PER_MEMBER_SEARCH_FLOATS = 1 << 17


class EpochSearch:
    """The epoch's counterfactuals of :class:`.population_run.PopulationRun` (set up by its ``__init__``)."""

    def _epoch_counterfactuals(self, active: list[int]):
        """Reference §1.3 for the members in ``active``, batched; returns per-batch padded tensors for all G."""
        G, X, dev = self.G, self.X, self.X.device
        sel = torch.tensor(active, device=dev)
        sub = self.stack.select(sel)
        ns, perms = [], []
        for g in active:
            nce = self.members[g].params.nce
            n = self.n_rows[g] if nce is None else min(max(nce, self.n_batches[g]), self.n_rows[g])
            perm = torch.randperm(self.n_rows[g], generator=self.gens[g])[:n]
            ns.append(n)
            perms.append(self.rows[g][perm])
        n_max = max(ns)
        fidx = torch.stack([torch.cat([p, p[-1:].expand(n_max - len(p))]) for p in perms]).to(dev)
        valid = torch.arange(n_max, device=dev)[None, :] < torch.tensor(ns, device=dev)[:, None]
        xf = X[fidx]
        with torch.no_grad():
            predicted = sub.predict(xf).cpu()
        target = torch.zeros(len(active), n_max, dtype=torch.long)
        for j, g in enumerate(active):
            target[j, :ns[j]] = sample_targets(predicted[j, :ns[j]], self.K, self.gens[g])
        target_d = target.to(dev)
        t0 = time.perf_counter()
        res = self._search(active, sub, xf, target_d, valid)
        search_seconds = time.perf_counter() - t0
        mature = res.mature
        if self.fid.initially_valid_is_immature:
            mature = mature & ~res.initially_valid
        y_ae = self.y[fidx] if self.fid.adversarial_label == "true" else predicted.to(dev)
        pos = torch.zeros(len(active), n_max, dtype=torch.long)
        for j, g in enumerate(active):
            pos[j, :ns[j]] = self.rows[g][self.samplers[g](target[j, :ns[j]], self.gens[g])]
        x_plus = X[pos.to(dev)]
        x_cf = torch.where(mature[..., None], res.counterfactual, x_plus)
        x_plus = self.cons.protect_positive(x_plus, x_cf)
        # split each member's tuples into its n_batches contiguous groups: (G_active, NB, m_max) gather index
        # split_obs per member: the first n % n_b groups get one tuple more
        n_t = torch.tensor(ns)
        nb_t = torch.tensor([self.n_batches[g] for g in active])
        q, r = n_t // nb_t, n_t % nb_t
        col = torch.arange(self.NB)[None, :]
        sizes = torch.where(col < nb_t[:, None], q[:, None] + (col < r[:, None]).long(), 0)
        starts = torch.cumsum(sizes, 1) - sizes
        m_max = int(sizes.max())
        full = len(active) == G and bool((sizes == sizes[:1]).all())  # every member has the same groups

        def for_all(t):  # (Ga, n_max, ...) → (G, n_max, ...), zero rows for members not searching this epoch
            if full:
                return t
            out = torch.zeros((G, *t.shape[1:]), dtype=t.dtype, device=dev)
            out[sel] = t
            return out

        batches = {"x_ae": for_all(res.nascent), "x_cf": for_all(x_cf), "x_plus": for_all(x_plus),
                   "target": for_all(target_d), "y_ae": for_all(y_ae), "full": full,
                   "m_max": sizes.max(0).values.tolist(), "start": starts[0].tolist()}
        if not full:  # per batch, a (G, m) gather index into each member's tuples and the mask of real ones
            ar = torch.arange(m_max)
            index = torch.zeros(G, self.NB, m_max, dtype=torch.long)
            mask = torch.zeros(G, self.NB, m_max, dtype=torch.bool)
            index[sel.cpu()] = (starts[..., None] + ar).clamp(max=n_max - 1)
            mask[sel.cpu()] = ar < sizes[..., None]
            batches["index"], batches["mask"] = index.to(dev), mask.to(dev)
        cnt = valid.sum(1).double()
        share = (torch.where(valid, mature, False).sum(1) / cnt).tolist()
        steps = (torch.where(valid, res.steps, 0).sum(1) / cnt).tolist()
        stats = {g: (share[j], steps[j]) for j, g in enumerate(active)}
        return batches, stats, search_seconds

    def _search(self, active: list[int], sub: StackedMLP, xf, target, valid) -> PopulationSearchResult:
        """One batched search per search space among the ``active`` members; results in ``active`` order."""
        dev = xf.device
        parts = []
        for space, (idx, settings, vae) in self.spaces.items():
            js = [j for j, g in enumerate(active) if self.space_of.get(g) == space]
            if not js:
                continue
            jt = torch.tensor(js, device=dev)
            if vae is None and xf.shape[1] * xf.shape[2] >= PER_MEMBER_SEARCH_FLOATS:
                parts.append((jt, self._search_each(active, js, sub, xf, target, valid)))
                continue
            pos = torch.tensor([idx.index(active[j]) for j in js], device=dev)
            latent = None
            if vae is not None:
                gen = self.members[idx[0]].generator
                latent = LatentSpace(vae, [self.gens[active[j]] for j in js], gen.enforce_mutability)
            res = population_search(sub.select(jt) if len(js) < len(active) else sub, xf[jt], target[jt],
                                    settings.select(pos), self.cons, valid[jt], latent=latent)
            parts.append((jt, res))
        if len(parts) == 1:
            return parts[0][1]
        out = {}
        for name in PopulationSearchResult.__dataclass_fields__:
            first = getattr(parts[0][1], name)
            full = torch.zeros((len(active), *first.shape[1:]), dtype=first.dtype, device=dev)
            for jt, res in parts:
                full[jt] = getattr(res, name)
            out[name] = full
        return PopulationSearchResult(**out)

    def _search_each(self, active, js, sub, xf, target, valid) -> PopulationSearchResult:
        """Member by member through the single-model search: for large factual sets (e.g. 5000 × 108) the search is
        bound by memory traffic, and the single-model path, which works on row chunks that stay in cache, beats
        one stacked program. Same results as the single trainer by construction. Each member's model object is made
        once and refilled with its weights every epoch (``member_models``)."""
        n_max = xf.shape[1]
        out = {name: [] for name in PopulationSearchResult.__dataclass_fields__}
        for j in js:
            g = active[j]
            n = int(valid[j].sum())
            m = self.members[g]
            model = self.member_models[g] = sub.member(j, into=self.member_models.get(g))
            r = m.generator.search(model, xf[j, :n], target[j, :n], self.cons, m.convergence, self.gens[g])
            for name in out:
                v = getattr(r, name)
                pad = torch.zeros((n_max - n, *v.shape[1:]), dtype=v.dtype, device=v.device)
                out[name].append(torch.cat([v, pad]))
        return PopulationSearchResult(**{k: torch.stack(v) for k, v in out.items()})
