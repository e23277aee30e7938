"""The paper's qualitative figures: Figure 1 (linear classifiers on LS) and the MNIST counterfactuals/attributions.

**Figure 1** (:func:`figure1`): four panels on the linearly separable data (``lin_sep``) with a *linear* classifier:
(a) conventional training (BL), all features mutable; (b) CT, all mutable; (c) the same BL model with the first
feature (the caption's *age*) immutable in the counterfactual search; (d) CT trained *and* searched with the first
feature immutable (its ``x⁺`` protected). Settings, from the paper's proof-of-concept notebook as recorded in
reference §12 (``paper/sections/other/constraints.qmd``) where they apply to a linear model:

* generator **Generic** (Wachter: cross-entropy + λ_cst·L1, λ_cst = 0.001, step η = 0.1 of the reference mode)
  in training *and* for the plotted counterfactuals, threshold convergence τ = 0.75, T = 30;
* CT weights λ = [λ_clf, λ_div, λ_reg, λ_adv] = [1, 0.5, 0.01, 0.1], nce = 1000 counterfactuals per epoch,
  batch size 50, fidelity ``reference``;
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

Outputs: ``figure1.png``/``.pdf`` and ``figure1.csv`` (factuals, counterfactuals and each panel's coefficients) plus
``figure1.json`` (settings, provenance), each written atomically.

**MNIST** (:func:`mnist_figures`, reference §7.8): counterfactuals of factuals of class 0 that both models predict
as 0 (``default_rng(seed)``, seed 42 as ``Random.seed!(42)`` of ``mnist_chart.jl``), towards several targets, by
ECCo with λ_egy = 1.0, λ_cst = 0.001 and ``MaxIterConvergence(1000)``, searched in the [−1, 1] pixel box with the
dataset's protected pixel rows immutable for both models (the shared baseline is trained without constraints, so
its own metadata has none); BL rows on top,
CT rows below → ``mnist_counterfactuals.png``/``.pdf``/``.csv``. Class-conditional integrated gradients
(:func:`ctbench.evaluation.attribution.class_attribution_maps`: all test images of a class, 50 steps, U(−1, 1)
baselines, min–max normalised) for both models → ``mnist_attribution.png``/``.pdf``/``.csv``, with the protected
rows marked.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from ..io import atomic_write_json, atomic_write_text, provenance, save_figure

__all__ = ["FIG1", "add_cli", "figure1", "mnist_figures"]

#: the settings of Figure 1 (see the module docstring for where each comes from)
FIG1: dict[str, Any] = {
    "dataset": "lin_sep",
    "fidelity": "reference",
    "model": {"type": "linear"},
    "init": "zeros",
    "objective": {"lambda_clf": 1.0, "lambda_div": 0.5, "lambda_reg": 0.01, "lambda_adv": 0.1},
    "generator": {"type": "generic", "lambda_cost": 0.001},
    "convergence": {"kind": "threshold", "tau": 0.75, "max_iter": 30},
    "training": {"epochs": 30, "batch_size": 50, "nce": 1000, "lr": 0.01},
    "immutable": [0],
    "feature_labels": ["age", "x₂"],
    "n_factuals": 6,
    "quick_epochs": 8,
}

#: the four panels: (key, title, objective, immutable in training, immutable in the search)
PANELS = (
    ("a", "conventional, all mutable", "vanilla", False, False),
    ("b", "CT, all mutable", "full", False, False),
    ("c", "conventional, age immutable", "vanilla", False, True),
    ("d", "CT, age immutable", "full", True, True),
)


# --------------------------------------------------------------------------------------------------- helpers
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
    from ..constraints import Constraints
    from ..generators import Convergence, make_generator
    from ..models import build_model
    from ..training import Objective, TrainParams, train

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


# --------------------------------------------------------------------------------------------------- Figure 1
def figure1(out_dir: str | Path, seed: int = 0, epochs: int | None = None, quick: bool = False,
            n_factuals: int | None = None) -> dict[str, Any]:
    """Regenerate the paper's Figure 1 into ``out_dir`` (see the module docstring); returns paths and a summary.

    Three models are trained (BL, CT, CT with the first feature protected); BL serves panels (a) and (c). The same
    factuals (test points of class 0 that every model predicts as 0, drawn with ``default_rng(seed)``) are
    explained towards class 1 in every panel; in (c) and (d) the search keeps the first feature fixed.
    ``quick`` trains for ``FIG1["quick_epochs"]`` epochs (a smoke run; the tilt needs the full 30).
    """
    from matplotlib.figure import Figure

    from ..constraints import Constraints
    from ..data import load_dataset
    from ..fidelity import resolve_fidelity
    from ..generators import Convergence, make_generator

    t0 = time.perf_counter()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    epochs = int(epochs if epochs is not None else (FIG1["quick_epochs"] if quick else FIG1["training"]["epochs"]))
    n_factuals = int(n_factuals or FIG1["n_factuals"])
    fid = resolve_fidelity(FIG1["fidelity"])
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

    # ---- drawing
    Xtr, ytr = data.X_train, data.y_train
    sub = np.random.default_rng(seed + 1).choice(len(ytr), size=min(800, len(ytr)), replace=False)
    lo = np.minimum(Xtr.min(0), table[["cf_x1", "cf_x2"]].min().to_numpy()) - 0.5
    hi = np.maximum(Xtr.max(0), table[["cf_x1", "cf_x2"]].max().to_numpy()) + 0.5
    fig = Figure(figsize=(10.0, 9.0))
    axes = fig.subplots(2, 2, sharex=True, sharey=True).ravel()
    colours = np.where(ytr[sub] == 1, "tab:orange", "tab:blue")
    for ax, (key, title, *_rest) in zip(axes, PANELS, strict=True):
        info = panel_info[key]
        ax.scatter(Xtr[sub, 0], Xtr[sub, 1], c=colours, s=8, alpha=0.35, linewidths=0)
        w, c = info["w"], info["c"]
        xs = np.linspace(lo[0], hi[0], 2)
        if abs(w[1]) > 1e-12:
            ax.plot(xs, -(w[0] * xs + c) / w[1], color="green", lw=2)
        elif abs(w[0]) > 1e-12:
            ax.axvline(-c / w[0], color="green", lw=2)
        t = table[table["panel"] == key]
        for _, r in t.iterrows():
            ax.annotate("", xy=(r["cf_x1"], r["cf_x2"]), xytext=(r["x1"], r["x2"]),
                        arrowprops={"arrowstyle": "->", "color": "0.3", "lw": 0.8})
        ax.scatter(t["x1"], t["x2"], c="tab:blue", edgecolors="black", s=45, zorder=3, label="factual")
        ax.scatter(t["cf_x1"], t["cf_x2"], c="tab:orange", marker="*", edgecolors="black", s=220, zorder=4,
                   label="counterfactual")
        if key in ("c", "d"):
            ax.text(0.02, 0.02, "age immutable in the search" + (" and protected in CT" if key == "d" else ""),
                    transform=ax.transAxes, fontsize="small", color="0.3")
        ax.set_title(f"({key}) {title}\n|w_age| / |w_x₂| = {info['ratio']:.2f}, valid {info['valid']:.0%}",
                     fontsize="medium")
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
    for ax in axes[2:]:
        ax.set_xlabel(f"x₁ ({FIG1['feature_labels'][0]})")
    for ax in axes[::2]:
        ax.set_ylabel("x₂")
    axes[0].legend(loc="upper left", fontsize="small")
    fig.suptitle(f"Linear classifiers on LS: conventional training vs CT (Generic counterfactuals, "
                 f"{epochs} epochs, seed {seed})", fontsize="medium")
    paths = save_figure(fig, out / "figure1")
    paths.append(atomic_write_text(out / "figure1.csv", table.to_csv(index=False)))
    summary = {k: {"title": v["title"], "model": v["model"], "w": v["w"].tolist(), "bias": v["c"],
                   "sensitivity_ratio": v["ratio"], "valid": v["valid"]} for k, v in panel_info.items()}
    side = {"kind": "figure1", "settings": {**copy.deepcopy(FIG1), "epochs": epochs}, "seed": seed, "quick": quick,
            "factual_test_indices": idx.tolist(), "panels": summary,
            "final_share_mature": {k: float(v["share_mature"].iloc[-1]) for k, v in logs.items() if k != "BL"},
            "acc_val": {k: float(v["acc_val"].iloc[-1]) for k, v in logs.items()},
            "seconds": time.perf_counter() - t0, "provenance": provenance()}
    paths.append(atomic_write_json(out / "figure1.json", side))
    return {"paths": paths, "table": table, "panels": summary}


# --------------------------------------------------------------------------------------------------- MNIST
def _mark_protected_rows(ax, protected: Sequence[int], width: int = 28) -> None:
    rows = sorted({int(p) // width for p in protected})
    if not rows:
        return
    # contiguous blocks of protected rows → a dashed line at each block edge that faces the image centre
    blocks, start = [], rows[0]
    for a, b in zip(rows, rows[1:] + [None], strict=True):
        if b != a + 1:
            blocks.append((start, a))
            start = b
    for s, e in blocks:
        for edge in (s - 0.5, e + 0.5):
            if 0 < edge < width - 1:
                ax.axhline(edge, color="black", lw=0.8, ls="--")


def mnist_figures(ct_model_path: str | Path, bl_model_path: str | Path, out_dir: str | Path, seed: int = 42, *,
                  n_factuals: int = 3, factual_class: int = 0, targets: Sequence[int] = (1, 2, 3, 4),
                  lambda_energy: float = 1.0, lambda_cost: float = 0.001, max_iter: int = 1000,
                  use_constraints: bool = True, classes: Sequence[int] = (5, 6, 7, 8, 9),
                  attribution_samples: int | None = None, steps: int = 50, data=None, grid10: bool = True,
                  grid10_lambda_energy: float = 25.0) -> dict[str, Any]:
    """The MNIST counterfactual grid and class-conditional attribution maps of a CT and a BL model; with ``grid10``
    also the appendix's 10×10 grids (Figures 4–5, :mod:`.mnist_grid`, ECCo λ_egy ``grid10_lambda_energy``).

    ``data``: the dataset (default: rebuilt from the CT model's metadata, as ``ctbench evaluate`` does);
    ``attribution_samples``: at most this many test images per class for the maps (default: all, as the paper).
    Returns the written paths and the two tables.
    """
    from matplotlib.figure import Figure

    from ..api import load_model
    from ..data import load_dataset
    from ..evaluation.attribution import class_attribution_maps

    t0 = time.perf_counter()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    models = {"BL": load_model(bl_model_path), "CT": load_model(ct_model_path)}
    for name, m in models.items():
        if m.meta["model_spec"]["n_features"] != 784:
            raise ValueError(f"mnist_figures: the {name} model takes {m.meta['model_spec']['n_features']} features, "
                             "not 784 (28×28 images)")
    if data is None:
        ct = models["CT"]
        data = load_dataset(ct.config["data"]["name"], fidelity=ct.fidelity, **ct.config["data"]["params"])
    X, y = np.asarray(data.X_test, dtype=np.float32), np.asarray(data.y_test)
    K = int(data.n_classes)
    targets = [int(t) for t in targets]
    if any(t == factual_class or not 0 <= t < K for t in targets):
        raise ValueError(f"targets {targets} must be classes in 0..{K - 1} other than the factual class")
    preds = {n: m.predict(X) for n, m in models.items()}
    pool = np.flatnonzero((y == factual_class) & (preds["BL"] == factual_class) & (preds["CT"] == factual_class))
    if len(pool) == 0:
        raise ValueError(f"mnist_figures: no test image of class {factual_class} is predicted as such by both models")
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.choice(pool, size=min(int(n_factuals), len(pool)), replace=False))
    n_f, n_t = len(idx), len(targets)
    x_rep = np.repeat(X[idx], n_t, axis=0)
    t_rep = np.tile(np.asarray(targets, dtype=np.int64), n_f)
    gen_spec = {"type": "ecco", "lambda_cost": float(lambda_cost), "lambda_energy": float(lambda_energy)}
    conv = {"kind": "max_iter", "tau": 0.5, "max_iter": int(max_iter)}
    protected = list(getattr(data, "protected", []) or [])
    rows, cfs = [], {}
    prev_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for name, m in models.items():
            res = m.counterfactuals(x_rep, t_rep, generator=gen_spec, convergence=conv,
                                    use_constraints=use_constraints,
                                    mutability=protected if (use_constraints and protected) else None, seed=seed)
            cf = res.counterfactual.detach().cpu().numpy()
            cfs[name] = cf
            pred_cf = m.predict(cf)
            delta = np.abs(cf - x_rep)
            for r in range(len(cf)):
                rows.append({"model": name, "test_index": int(idx[r // n_t]), "factual": factual_class,
                             "target": int(t_rep[r]), "p_target": float(res.prob_target[r]),
                             "predicted": int(pred_cf[r]), "valid": bool(pred_cf[r] == t_rep[r]),
                             "steps": int(res.steps[r]), "cost_l1": float(delta[r].sum()),
                             "max_change_protected": float(delta[r, protected].max()) if protected else np.nan})
        cf_table = pd.DataFrame(rows)

        # ---- counterfactual grid: BL rows on top, CT rows below; column 0 = the factual
        fig = Figure(figsize=(1.6 * (n_t + 1) + 0.8, 1.75 * 2 * n_f + 0.6))
        axes = fig.subplots(2 * n_f, n_t + 1, squeeze=False)
        for b, name in enumerate(("BL", "CT")):
            for i in range(n_f):
                r = b * n_f + i
                ax = axes[r, 0]
                ax.imshow(X[idx[i]].reshape(28, 28), cmap="gray", vmin=-1, vmax=1)
                ax.set_title(f"factual {factual_class} (#{idx[i]})" if r == 0 else f"#{idx[i]}", fontsize="small")
                ax.set_ylabel(name, fontsize="large", rotation=0, labelpad=18, va="center")
                for j, t in enumerate(targets):
                    k = i * n_t + j
                    ax = axes[r, j + 1]
                    ax.imshow(cfs[name][k].reshape(28, 28), cmap="gray", vmin=-1, vmax=1)
                    p = cf_table[(cf_table["model"] == name)].iloc[k]["p_target"]
                    ax.set_title(f"→ {t}  p={p:.2f}", fontsize="small")
        for ax in axes.ravel():
            ax.set_xticks([])
            ax.set_yticks([])
        fig.suptitle(f"ECCo counterfactuals (λ_egy {lambda_energy}, λ_cst {lambda_cost}, {max_iter} steps): "
                     "BL (top), CT (bottom)", fontsize="medium")
        paths = save_figure(fig, out / "mnist_counterfactuals")
        paths.append(atomic_write_text(out / "mnist_counterfactuals.csv", cf_table.to_csv(index=False)))
        if grid10:  # appendix Figures 4-5: every factual class × every target, one batched search per model
            from .mnist_grid import write_mnist_grids

            paths += write_mnist_grids(models, X, y, out, seed=seed, lambda_energy=grid10_lambda_energy,
                                       lambda_cost=lambda_cost, max_iter=max_iter, use_constraints=use_constraints,
                                       protected=protected)["paths"]

        # ---- class-conditional integrated gradients
        classes = [int(c) for c in classes]
        sel = []
        arng = np.random.default_rng([seed, 1])
        for c in classes:
            pool_c = np.flatnonzero(y == c)
            if attribution_samples is not None and len(pool_c) > attribution_samples:
                pool_c = np.sort(arng.choice(pool_c, size=int(attribution_samples), replace=False))
            sel.append(pool_c)
        sel = np.concatenate(sel) if sel else np.array([], dtype=np.int64)
        maps = {name: class_attribution_maps(m.model.eval(), X[sel], y[sel], K, steps=steps, seed=seed)
                for name, m in models.items()}
    finally:
        torch.set_num_threads(prev_threads)
    prot_mask = np.zeros(784, dtype=bool)
    prot_mask[protected] = True
    arows = []
    for name in ("BL", "CT"):
        for c in classes:
            mp = maps[name][c].reshape(-1)
            arows.append({"model": name, "class": c, "n_images": int((y[sel] == c).sum()),
                          "mean_protected": float(mp[prot_mask].mean()) if prot_mask.any() else np.nan,
                          "mean_other": float(mp[~prot_mask].mean())})
    attr_table = pd.DataFrame(arows)
    fig = Figure(figsize=(1.9 * len(classes) + 1.0, 4.3))
    axes = fig.subplots(2, len(classes), squeeze=False)
    im = None
    for r, name in enumerate(("BL", "CT")):
        for j, c in enumerate(classes):
            ax = axes[r, j]
            im = ax.imshow(maps[name][c], cmap="coolwarm", vmin=0.0, vmax=1.0)
            if protected:
                _mark_protected_rows(ax, protected)
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(f"class {c}", fontsize="small")
            if j == 0:
                ax.set_ylabel(name, fontsize="large", rotation=0, labelpad=18, va="center")
    if im is not None:
        fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.8, label="normalised IG")
    fig.suptitle("Integrated gradients per class (mean over test images; dashed: protected rows)", fontsize="medium")
    paths += save_figure(fig, out / "mnist_attribution")
    paths.append(atomic_write_text(out / "mnist_attribution.csv", attr_table.to_csv(index=False)))
    side = {"kind": "mnist_figures", "models": {"CT": str(ct_model_path), "BL": str(bl_model_path)}, "seed": seed,
            "factual_class": factual_class, "factual_test_indices": idx.tolist(), "targets": targets,
            "generator": gen_spec, "convergence": conv, "use_constraints": use_constraints, "classes": classes,
            "attribution_samples": attribution_samples, "ig_steps": steps,
            "grid10": {"lambda_energy": grid10_lambda_energy} if grid10 else None,
            "model_meta": {n: {"objective": m.meta.get("objective_effective"), "acc_test": m.meta.get("acc_test"),
                               "fidelity": m.fidelity.mode} for n, m in models.items()},
            "seconds": time.perf_counter() - t0, "provenance": provenance()}
    paths.append(atomic_write_json(out / "mnist_figures.json", side))
    return {"paths": paths, "counterfactuals": cf_table, "attribution": attr_table}


# --------------------------------------------------------------------------------------------------- CLI
def _cmd_figure1(args) -> int:
    res = figure1(args.out, seed=args.seed, epochs=args.epochs, quick=args.quick)
    ratios = ", ".join(f"({k}) {v['sensitivity_ratio']:.2f}" for k, v in res["panels"].items())
    print(f"wrote {', '.join(str(p) for p in res['paths'])}; |w_age|/|w_x2|: {ratios}")
    return 0


def _cmd_mnist_figures(args) -> int:
    res = mnist_figures(args.ct, args.bl, args.out, seed=args.seed, n_factuals=args.n_factuals,
                        targets=args.targets, max_iter=args.max_iter, classes=args.classes,
                        attribution_samples=args.attribution_samples, steps=args.steps,
                        use_constraints=not args.unconstrained, grid10=not args.no_grid10,
                        grid10_lambda_energy=args.grid10_lambda_energy)
    valid = res["counterfactuals"].groupby("model")["valid"].mean().round(3).to_dict()
    print(f"wrote {', '.join(str(p) for p in res['paths'])}; validity {valid}")
    return 0


def add_cli(subparsers) -> None:
    """Register ``ctbench figure1`` and ``ctbench mnist-figures``."""
    f = subparsers.add_parser("figure1", help="the paper's Figure 1: linear BL vs CT on LS, without/with age immutable")
    f.add_argument("--out", required=True, help="folder for figure1.png/.pdf/.csv/.json")
    f.add_argument("--quick", action="store_true", help=f"{FIG1['quick_epochs']} epochs (smoke run)")
    f.add_argument("--epochs", type=int, help=f"training epochs (default {FIG1['training']['epochs']})")
    f.add_argument("--seed", type=int, default=0)
    f.set_defaults(func=_cmd_figure1)

    m = subparsers.add_parser("mnist-figures", help="MNIST counterfactual grid and per-class integrated gradients")
    m.add_argument("--ct", required=True, help="CT model (.pt)")
    m.add_argument("--bl", required=True, help="BL model (.pt)")
    m.add_argument("--out", required=True, help="folder for mnist_counterfactuals.* and mnist_attribution.*")
    m.add_argument("--seed", type=int, default=42)
    m.add_argument("--n-factuals", dest="n_factuals", type=int, default=3)
    m.add_argument("--targets", type=int, nargs="+", default=[1, 2, 3, 4])
    m.add_argument("--max-iter", dest="max_iter", type=int, default=1000)
    m.add_argument("--classes", type=int, nargs="+", default=[5, 6, 7, 8, 9], help="classes of the attribution maps")
    m.add_argument("--attribution-samples", dest="attribution_samples", type=int,
                   help="at most N test images per class for the maps (default: all)")
    m.add_argument("--steps", type=int, default=50, help="integrated-gradients path steps")
    m.add_argument("--unconstrained", action="store_true", help="search without the models' mutability constraints")
    m.add_argument("--no-grid10", dest="no_grid10", action="store_true",
                   help="skip the appendix's 10x10 grids (mnist_grid_ct/bl.png, paper Figures 4-5)")
    m.add_argument("--grid10-lambda-energy", dest="grid10_lambda_energy", type=float, default=25.0,
                   help="ECCo energy penalty of the 10x10 grids (the authors': 25)")
    m.set_defaults(func=_cmd_mnist_figures)
