"""G models of one architecture as one tensor program: stacked weights, one batched forward for all members.

Tiny MLPs spend their time in per-operation overhead, not arithmetic, so training G of them one after another costs
about G times the overhead of one. Stacking member weights along a leading axis (``W[g]`` of shape (in, out)) turns G
forwards into one ``torch.baddbmm`` per layer. :class:`StackedMLP` is built from ordinary ``MLP``/``LinearModel``
instances (so member g starts from exactly the weights ``build_model(..., seed=seed_g)`` gives) and hands each member
back as an ordinary model of the same class, so files, evaluation and reports do not know a population was involved.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch
from torch import nn

from .generators import mlp_grad
from .generators.mlp_grad import Layers
from .models import MLP, LinearModel


def stackable(model: nn.Module) -> bool:
    """True for the plain MLP/linear models of :mod:`ctbench.models` (Linear layers with ReLU in between)."""
    if not isinstance(model, (MLP, LinearModel)):
        return False
    mods = list(model)
    return all(isinstance(m, nn.Linear) for m in mods[0::2]) and all(isinstance(m, nn.ReLU) for m in mods[1::2])


def architecture(model: nn.Module) -> tuple:
    """A hashable signature: models with equal signatures can share a :class:`StackedMLP`."""
    if not stackable(model):
        return ("unstackable", type(model).__name__, id(model))
    return (type(model).__name__,) + tuple((m.in_features, m.out_features) for m in model if isinstance(m, nn.Linear))


#: floats per member row of :attr:`StackedMLP.padded`: a multiple of every CPU vector width (AVX-512: 16 floats)
ALIGN = 16


class StackedMLP(nn.Module):
    """G stacked MLPs: ``forward`` maps (G, n, D) to (G, n, K) through member g's weights for rows (g, ·).

    All weights live in one parameter ``flat`` of shape (G, P) (P = weights per member) so that an optimiser step
    for the whole population is a handful of tensor operations; layer l uses the view ``W_l`` (G, in, out) and the
    bias (G, 1, out) of it.

    ``flat`` is a view of ``padded`` (G, P'), whose rows are padded with zeros to a multiple of :data:`ALIGN`
    floats. Why: torch's fused Adam kernel runs its vector loop over the whole (G, P') buffer and a scalar loop over
    the last ``numel % vector width`` elements, and the two round differently (measured: the last weight of a
    2-32-2 MLP moved by 2e-10 after 7 steps). Unpadded, a member's last weights took the scalar loop only when it
    was the last member of its population, so its weights depended on its companions; padded, every member's
    weights see the same lanes whatever G and whatever its position.
    """

    def __init__(self, weights: Sequence[torch.Tensor], biases: Sequence[torch.Tensor], template: nn.Module):
        super().__init__()
        G = weights[0].shape[0]
        pieces, self.layout = [], []
        offset = 0
        for w, b in zip(weights, biases, strict=True):
            n_in, n_out = w.shape[1], w.shape[2]
            self.layout.append((offset, n_in, n_out))
            pieces += [w.reshape(G, -1), b.reshape(G, -1)]
            offset += n_in * n_out + n_out
        self.P = offset
        pad = -offset % ALIGN
        if pad:
            pieces.append(torch.zeros(G, pad, dtype=weights[0].dtype, device=weights[0].device))
        self.padded = nn.Parameter(torch.cat(pieces, 1).contiguous())
        self.__dict__["_template"] = copy.deepcopy(template).cpu()  # not a submodule: its weights are not ours

    @classmethod
    def from_models(cls, models: Sequence[nn.Module]) -> StackedMLP:
        if not models:
            raise ValueError("StackedMLP needs at least one model")
        sig = architecture(models[0])
        for i, m in enumerate(models):
            if not stackable(m):
                raise ValueError(f"member {i}: {type(m).__name__} cannot be stacked (only MLP and linear models)")
            if architecture(m) != sig:
                raise ValueError(f"member {i}: architecture {architecture(m)} differs from member 0's {sig}")
        layers = [[m for m in model if isinstance(m, nn.Linear)] for model in models]
        n_layers = len(layers[0])
        weights = [torch.stack([lay[i].weight.detach().t() for lay in layers]) for i in range(n_layers)]
        biases = [torch.stack([lay[i].bias.detach()[None, :] for lay in layers]) for i in range(n_layers)]
        return cls(weights, biases, models[0])

    @property
    def flat(self) -> torch.Tensor:
        """The weights, (G, P): a view of ``padded`` (in-place updates of it update the members)."""
        return self.padded[:, :self.P]

    @property
    def size(self) -> int:
        return self.flat.shape[0]

    def layer(self, i: int, flat: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(W (G, in, out), b (G, 1, out)) of layer ``i`` as views of ``flat``."""
        flat = self.flat if flat is None else flat
        off, n_in, n_out = self.layout[i]
        G = flat.shape[0]
        w = flat[:, off:off + n_in * n_out].view(G, n_in, n_out)
        b = flat[:, off + n_in * n_out:off + n_in * n_out + n_out].view(G, 1, n_out)
        return w, b

    def leaves(self) -> list[torch.Tensor]:
        """[W₀, b₀, W₁, b₁, …] as leaf tensors that share ``flat``'s memory, for training: autograd then hands back
        one gradient per layer tensor (cheap to concatenate) instead of scattering each into a zero (G, P) tensor,
        and an optimiser step on ``flat`` updates them in place."""
        flat = self.flat.detach()
        out = []
        for i in range(len(self.layout)):
            out += [t.requires_grad_(True) for t in self.layer(i, flat)]
        return out

    def forward(self, x: torch.Tensor, leaves: list[torch.Tensor] | None = None) -> torch.Tensor:
        """``x`` (G, n, D) → logits (G, n, K); member g's rows go through member g's weights only.

        Plain batched products, for training through autograd (the transposed output layer of
        :meth:`forward_cached` would hand ReLU's backward a gradient of other strides, which is slow).
        ``leaves``: the layer tensors of :meth:`leaves` to differentiate with respect to."""
        h = x
        last = len(self.layout) - 1
        for i in range(len(self.layout)):
            w, b = self.layer(i) if leaves is None else leaves[2 * i:2 * i + 2]
            h = torch.baddbmm(b, h, w)
            if i < last:
                h = torch.relu(h)
        return h

    def layers(self) -> Layers:
        """The member-stacked layers ``[(W (G, in, out), b (G, out)), …]`` of :mod:`ctbench.generators.mlp_grad`."""
        return [(w, b.squeeze(1)) for w, b in (self.layer(i) for i in range(len(self.layout)))]

    def forward_cached(self, x: torch.Tensor, work: list[torch.Tensor] | None = None
                       ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Logits (G, n, K) and the hidden activations, for :meth:`input_grad` (closed form, no autograd graph).

        The logits are a transposed view of a class-major (G, K, n) tensor (:func:`mlp_grad.forward`): products and
        reductions over only K = 2–10 classes are several times slower in the other layout. ``work``:
        :func:`mlp_grad.workspace` buffers for the hidden activations.
        """
        logits_t, hidden = mlp_grad.forward(x, self.layers(), work)
        return logits_t.transpose(1, 2), hidden

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """Predicted classes (G, n): argmax over a contiguous (G, n, K) copy (over the class-major layout's strided
        class axis it is ~10× slower; the same indices, ties and NaN included)."""
        return self.forward_cached(x)[0].contiguous().argmax(-1)

    def input_grad(self, hidden: list[torch.Tensor], dlogits: torch.Tensor,
                   out: torch.Tensor | None = None, work: list[torch.Tensor] | None = None) -> torch.Tensor:
        """∂L/∂x from ∂L/∂logits (G, n, K) by hand (:func:`mlp_grad.first_layer_grad`), ReLU by autograd's own rule;
        ``out``: a reused (G, n, D) buffer for the result (a fresh tensor of that size costs page faults)."""
        layers = self.layers()
        g = mlp_grad.first_layer_grad(dlogits.transpose(1, 2), layers, hidden, work)
        return torch.bmm(g, layers[0][0].transpose(1, 2), out=out)

    def select(self, members: torch.Tensor | Sequence[int]) -> StackedMLP:
        """A detached sub-population (copies of the chosen members' weights), e.g. for a search."""
        idx = torch.as_tensor(members, dtype=torch.long, device=self.flat.device)
        flat = self.flat.detach().index_select(0, idx)
        layers = [self.layer(i, flat) for i in range(len(self.layout))]
        sub = StackedMLP([w for w, _ in layers], [b for _, b in layers], self._template)
        return sub.requires_grad_(False)

    def member(self, g: int, into: nn.Module | None = None) -> nn.Module:
        """Member ``g`` as an ordinary model of the template's class (on the stack's device). ``into``: a model an
        earlier call returned, whose weights are overwritten instead of copying the template again (a population's
        per-epoch search asks for every member each epoch; the copy was ~2% of such a job)."""
        model = into if into is not None else copy.deepcopy(self._template).to(device=self.flat.device,
                                                                                 dtype=self.flat.dtype)
        linear = [m for m in model if isinstance(m, nn.Linear)]
        with torch.no_grad():
            for i, lin in enumerate(linear):
                w, b = self.layer(i)
                lin.weight.copy_(w[g].t())
                lin.bias.copy_(b[g, 0])
        return model.eval()

    def finite(self) -> torch.Tensor:
        """(G,) bool: all of member g's weights are finite."""
        return torch.isfinite(self.flat.detach()).all(1)


__all__ = ["StackedMLP", "architecture", "stackable"]
