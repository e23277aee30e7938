"""Figure 1's run: three linear models on LS trained with the library's trainer and searched, panels (a)–(d).

**Figure 1** (:func:`figure1`): four panels on the linearly separable data (``lin_sep``) with a *linear* classifier:
(a) conventional training (BL), all features mutable; (b) CT, all mutable; (c) the same BL model with the first
feature (the caption's *age*) immutable in the counterfactual search; (d) CT trained *and* searched with the first
feature immutable (its ``x⁺`` protected). Settings, from the paper's proof-of-concept notebook as recorded in
reference §12 (``paper/sections/other/constraints.qmd``) where they apply to a linear model:

* generator **Generic** (Wachter: cross-entropy + λ_cst·L1, λ_cst = 0.001, step η = 0.1 of the reference mode)
  in training *and* for the plotted counterfactuals, threshold convergence τ = 0.75, T = 30;
* CT weights λ = [λ_clf, λ_div, λ_reg, λ_adv] = [1, 0.5, 0.01, 0.1], nce = 1000 counterfactuals per epoch,
  batch size 50, the run's fidelity (``reference`` in the paper profile; the workflow passes its mode and
  overrides);
* deviations (documented choices): the caption's linear classifier instead of the notebook's MLP; the *first*
  feature immutable (the caption's *age*, the protected feature of ``lin_sep`` in all mutability runs) instead of
  the notebook's second; Adam with learning rate 0.01 instead of the notebook's AMSGrad (ctbench trains with Adam),
  for 30 epochs; and **zero initial weights** (the initialisation of the proof of Proposition 3.1 and of
  ``ctbench.theory.prop31``). The last two matter: LS is symmetric in its two features, and with a random
  initialisation the BL and CT models inherit whichever feature the draw favours. When the model leans on the
  immutable feature, counterfactuals that may only move the other feature must overshoot the target-class mean
  (so the divergence penalty lowers the sensitivity to the mutable feature instead of raising it) or cannot reach
  τ = 0.75 within T = 30 (immature, so CT has no divergence signal and the adversarial term, whose nascent examples
  move only the mutable feature, makes the model *more* reliant on the immutable one). From zero weights, BL sits
  at the symmetric solution and protected CT tilts the boundary towards the mutable feature, as in the paper.
  Each panel's title gives the relative sensitivity |w_age| / |w_2| of the log-odds, so the tilt is read off the
  figure rather than claimed.

Outputs (written by ``ctbench figure1``): ``figure1.png``/``.pdf`` and ``figure1.csv`` (factuals, counterfactuals and
each panel's coefficients) plus ``figure1.json`` (settings, provenance), each written atomically.
"""

from __future__ import annotations

import copy
import time
from typing import Any

import numpy as np
import pandas as pd
import torch

from ...io import provenance
from ...paper_settings import FIG1  # the settings of Figure 1 (sources: this docstring)

#: the four panels: (key, title, objective, immutable in training, immutable in the search)
PANELS = (
    ("a", "conventional, all mutable", "vanilla", False, False),
    ("b", "CT, all mutable", "full", False, False),
    ("c", "conventional, age immutable", "vanilla", False, True),
    ("d", "CT, age immutable", "full", True, True),
)


def _log_odds_coefficients(model) -> tuple[np.ndarray, float]:
    """w = θ₁ − θ₀ and c = b₁ − b₀ of a two-class linear model (its log-odds of class 1 are w·x + c)."""
    lin = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    if len(lin) != 1 or lin[0].out_features != 2:
        raise ValueError("figure1 expects a single linear layer with two outputs")
    W = lin[0].weight.detach().double().cpu().numpy()
    b = lin[0].bias.detach().double().cpu().numpy()
    return W[1] - W[0], float(b[1] - b[0])


def _train_fig1(data, objective: str, immutable: bool, seed: int, epochs: int, fid):
    """One Figure 1 model, trained with the library's trainer (zero initial weights; see the module docstring)."""
    from ...constraints import Constraints
    from ...generators import Convergence, make_generator
    from ...models import build_model
    from ...training import Objective, TrainParams, train

    D = data.n_features
    mut = ["none" if d in FIG1["immutable"] else "both" for d in range(D)] if immutable else None
    cons = Constraints.build(D, domain=data.domain, mutability=mut)
    model = build_model(FIG1["model"], D, data.n_classes, seed=seed)
    if FIG1["init"] == "zeros":
        with torch.no_grad():
            for p in model.parameters():
                p.zero_()
    gen = make_generator(FIG1["generator"], fid) if objective != "vanilla" else None
    tp = {**FIG1["training"], "epochs": int(epochs)}
    model, log = train(model, data.X_train, data.y_train, objective=Objective(name=objective, **FIG1["objective"]),
                       generator=gen, params=TrainParams(seed=seed, **tp), constraints=cons,
                       convergence=Convergence(**FIG1["convergence"]), fidelity=fid, X_val=data.X_val,
                       y_val=data.y_val, n_classes=data.n_classes)
    return model.eval(), log


def figure1(seed: int = 0, epochs: int | None = None, quick: bool = False,
            n_factuals: int | None = None, fidelity: str | None = None,
            fidelity_overrides: dict[str, Any] | None = None) -> pd.DataFrame:
    """The run behind the paper's Figure 1 (see the module docstring): the table written as ``figure1.csv``, with
    what the drawing needs in its ``attrs`` (``panels``, ``train`` = (X, y) of the training split, ``meta`` = the
    ``figure1.json`` sidecar). :func:`ctbench.cli.figure_cmds.write_figure1` draws and writes it.

    Three models are trained (BL, CT, CT with the first feature protected); BL serves panels (a) and (c). The same
    factuals (test points of class 0 that every model predicts as 0, drawn with ``default_rng(seed)``) are
    explained towards class 1 in every panel; in (c) and (d) the search keeps the first feature fixed.
    ``quick`` trains for ``FIG1["quick_epochs"]`` epochs (a smoke run; the tilt needs the full 30).
    """
    from ...constraints import Constraints
    from ...data import load_dataset
    from ...fidelity import resolve_fidelity
    from ...generators import Convergence, make_generator

    t0 = time.perf_counter()
    epochs = int(epochs if epochs is not None else (FIG1["quick_epochs"] if quick else FIG1["training"]["epochs"]))
    n_factuals = int(n_factuals or FIG1["n_factuals"])
    # the run's fidelity (mode and overrides; the workflow passes its own): FIG1's mode when none is given
    fid = resolve_fidelity(fidelity or FIG1["fidelity"], fidelity_overrides or {})
    data = load_dataset(FIG1["dataset"], fidelity=fid)
    D = data.n_features
    prev_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        models, logs = {}, {}
        for key, objective, immutable in (("BL", "vanilla", False), ("CT", "full", False), ("CT_imm", "full", True)):
            models[key], logs[key] = _train_fig1(data, objective, immutable, seed, epochs, fid)

        X_test = torch.as_tensor(data.X_test, dtype=torch.float32)
        with torch.no_grad():
            preds = [m(X_test).argmax(1).numpy() for m in models.values()]
        pool = np.flatnonzero((data.y_test == 0) & np.all([p == 0 for p in preds], axis=0))
        if len(pool) == 0:
            raise ValueError("figure1: no test point of class 0 is predicted as 0 by all three models")
        rng = np.random.default_rng(seed)
        idx = np.sort(rng.choice(pool, size=min(n_factuals, len(pool)), replace=False))
        x0 = X_test[idx]
        target = torch.ones(len(idx), dtype=torch.long)
        gen = make_generator(FIG1["generator"], fid)
        conv = Convergence(**FIG1["convergence"])
        imm_mut = ["none" if d in FIG1["immutable"] else "both" for d in range(D)]

        rows, panel_info = [], {}
        for key, title, objective, imm_train, imm_search in PANELS:
            mkey = "BL" if objective == "vanilla" else ("CT_imm" if imm_train else "CT")
            model = models[mkey]
            cons = Constraints.build(D, domain=data.domain, mutability=imm_mut if imm_search else None)
            res = gen.search(model, x0, target, cons, conv, torch.Generator().manual_seed(seed))
            with torch.no_grad():
                pred_cf = model(res.counterfactual).argmax(1).numpy()
            w, c = _log_odds_coefficients(model)
            ratio = abs(w[0]) / abs(w[1]) if w[1] != 0 else float("inf")
            panel_info[key] = {"title": title, "model": mkey, "w": w, "c": c, "ratio": ratio,
                               "valid": float((pred_cf == 1).mean())}
            cf = res.counterfactual.numpy()
            for j, i in enumerate(idx):
                rows.append({"panel": key, "title": title, "objective": objective, "immutable_search": imm_search,
                             "immutable_train": imm_train, "test_index": int(i),
                             **{f"x{d + 1}": float(x0[j, d]) for d in range(D)},
                             **{f"cf_x{d + 1}": float(cf[j, d]) for d in range(D)},
                             "target": 1, "p_target": float(res.prob_target[j]), "valid": bool(pred_cf[j] == 1),
                             "mature": bool(res.mature[j]), "steps": int(res.steps[j]),
                             "w1": float(w[0]), "w2": float(w[1]), "bias": c, "sensitivity_ratio": ratio})
    finally:
        torch.set_num_threads(prev_threads)
    table = pd.DataFrame(rows)
    summary = {k: {"title": v["title"], "model": v["model"], "w": v["w"].tolist(), "bias": v["c"],
                   "sensitivity_ratio": v["ratio"], "valid": v["valid"]} for k, v in panel_info.items()}
    side = {"kind": "figure1", "settings": {**copy.deepcopy(FIG1), "epochs": epochs, "fidelity": fid.mode,
                                            "fidelity_overrides": dict(fidelity_overrides or {})},
            "fidelity_resolved": fid.to_dict(), "seed": seed, "quick": quick,
            "factual_test_indices": idx.tolist(), "panels": summary,
            "final_share_mature": {k: float(v["share_mature"].iloc[-1]) for k, v in logs.items() if k != "BL"},
            "acc_val": {k: float(v["acc_val"].iloc[-1]) for k, v in logs.items()},
            "seconds": time.perf_counter() - t0, "provenance": provenance()}
    table.attrs.update(panels=panel_info, train=(data.X_train, data.y_train), meta=side)
    return table
