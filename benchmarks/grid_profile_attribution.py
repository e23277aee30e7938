"""Where a ``ctbench grid run`` job's time goes, from a cProfile file of the whole command (issue 21, grid chunks).

    OMP_NUM_THREADS=1 python -m cProfile -o chunk.prof -m ctbench grid run ...   # the job's own arguments
    python benchmarks/grid_profile_attribution.py chunk.prof [more.prof ...]

Cumulative profiled seconds of the functions that bound each part: imports (the outermost ``_find_and_load``
calls), training (``train_population_from_configs``: the VAE fit of REVISE points, the per-epoch counterfactual
search, the rest = SGD, Adam, the per-epoch logs), the points' evaluations (``evaluate_counterfactuals``: search,
IP, IP*, the rest = frames and cheap metrics) and the files written. "Other" is what is left (loading the BL model
and the data, F1, the summary). Imports that happen lazily inside a part are counted twice (there and under
imports), so "other" is a lower bound. Profiled seconds are wall seconds with the profiler's overhead
(Python-heavy parts look larger than they run), so read the shares, not the totals.
"""

from __future__ import annotations

import pstats
import sys

PARTS = {
    "training: VAE fit (REVISE points)": [("generators/vae.py", "fit")],
    "training: counterfactual search": [("training/population_search.py", "_epoch_counterfactuals")],
    "eval: search": [("generators/base.py", "search")],
    "eval: IP": [("evaluation/metrics.py", "implausibility")],
    "eval: IP*": [("evaluation/metrics.py", "ip_star")],
    "write (CSV, sidecar)": [("grids/runner.py", "write")],
}


def cum(stats: pstats.Stats, where: tuple[str, str]) -> float:
    """Cumulative seconds of the functions named ``where[1]`` in files ending with ``where[0]``."""
    return sum(v[3] for (f, _, n), v in stats.stats.items() if n == where[1] and f.endswith(where[0]))


def attribute(path: str) -> dict[str, float]:
    st = pstats.Stats(path)
    total = cum(st, ("ctbench/__main__.py", "<module>"))
    if total == 0:
        raise ValueError(f"{path}: not a profile of `python -m ctbench ...`")
    out = {"imports (torch, pandas, ctbench)": max((v[3] for k, v in st.stats.items() if k[2] == "_find_and_load"),
                                                   default=0.0)}
    out.update({k: sum(cum(st, w) for w in ws) for k, ws in PARTS.items()})
    out["training: rest (SGD, Adam, logs)"] = (cum(st, ("training/pipeline.py", "train_population_from_configs"))
                                               - out["training: VAE fit (REVISE points)"]
                                               - out["training: counterfactual search"])
    out["eval: rest (frames, cost, validity)"] = (cum(st, ("evaluation/protocol.py", "evaluate_counterfactuals"))
                                                 - out["eval: search"] - out["eval: IP"] - out["eval: IP*"])
    out["other (BL model, data, F1, summary)"] = total - sum(out.values())
    out["total"] = total
    return out


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    for path in sys.argv[1:]:
        parts = attribute(path)
        total = parts.pop("total")
        print(f"{path}: {total:.1f} profiled s")
        for k, v in sorted(parts.items(), key=lambda kv: -kv[1]):
            print(f"  {k:38s} {v:7.1f}  {100 * v / total:5.1f}%")


if __name__ == "__main__":
    main()
