"""Critical path and 34-core makespan of the paper DAG from per-job CPU times (issue 21).

The DAG is Snakemake's own (``snakemake -n --forceall --dag --configfile workflow/config/paper.yaml``, dot text;
committed as ``benchmarks/results/paper-dag.dot``, 413 jobs). Each job's time is, in this order:

1. its Snakemake ``benchmark:`` record (``--records RESULTS/benchmarks``: ``<rule>/<wildcards>.tsv``, ``cpu_time``
   or else ``s``), matched by rule and wildcard values;
2. a per-job override (``--overrides``, CSV ``rule,dataset,cpu_s``: the profile's measured single jobs, e.g. the
   MNIST final training 649 s);
3. the stage's recorded CPU total (``--stages``: the published set's ``report/benchmarks.csv``) less its overrides,
   shared equally by its other jobs;
4. ``--default`` seconds for rules without any record (data, tune_select, figures, book: modelled).

Every job runs on one core (``threads_per_job: 1``), so a job's wall time is taken as its CPU time. The critical
path is the longest chain; the makespan is a list schedule on ``--cores`` cores (ready jobs by longest remaining
chain first). ``--scale`` (CSV ``rule,factor,basis``) multiplies each rule's times, e.g. the estimate after the
levers of issue 21 (``benchmarks/levers.csv``).

    python benchmarks/critical_path.py --cores 34 [--scale benchmarks/levers.csv]
"""

from __future__ import annotations

import argparse
import csv
import heapq
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UNRECORDED = {"report": 360.0, "all": 0.0}  # the profile of the paper report (no benchmark record yet)


def parse_dot(text: str) -> tuple[dict[int, tuple[str, dict[str, str]]], list[tuple[int, int]]]:
    nodes, edges = {}, []
    for m in re.finditer(r'^\s*(\d+)\[label = "([^"]*)"', text, re.M):
        rule, *wc = m.group(2).split("\\n")
        nodes[int(m.group(1))] = (rule, dict(w.split(": ", 1) for w in wc if ": " in w))
    for m in re.finditer(r"^\s*(\d+) -> (\d+)", text, re.M):
        edges.append((int(m.group(1)), int(m.group(2))))
    return nodes, edges


def fill_datasets(nodes, parents) -> None:
    """Snakemake's dot labels leave some wildcards out; a job without ``dataset`` takes its ancestors' one dataset."""
    memo: dict[int, set[str]] = {}

    def ds(n):
        if n not in memo:
            own = nodes[n][1].get("dataset")
            memo[n] = {own} if own else set().union(*(ds(p) for p in parents[n])) if parents[n] else set()
        return memo[n]

    for n, (_, wc) in nodes.items():
        if "dataset" not in wc and len(ds(n)) == 1:
            wc["dataset"] = next(iter(ds(n)))


def read_records(folder: Path | None) -> dict[str, list[tuple[str, float]]]:
    out = defaultdict(list)
    if folder is None or not folder.is_dir():
        return out
    for f in folder.rglob("*.tsv"):
        rows = list(csv.DictReader(f.open(), delimiter="\t"))
        if rows:
            r = rows[-1]
            v = r.get("cpu_time") or r.get("s")
            out[f.parent.name].append((f.stem, float(v)))
    return out


def job_times(nodes, records, overrides, stages, default) -> dict[int, tuple[float, str]]:
    by_rule = defaultdict(list)
    for n, (rule, _) in nodes.items():
        by_rule[rule].append(n)
    times = {}
    for rule, ns in by_rule.items():
        over = {d: s for (r, d), s in overrides.items() if r == rule}
        fixed = {}
        for n in ns:
            wc = nodes[n][1]
            rec = [s for name, s in records.get(rule, []) if all(str(v) in name for v in wc.values())]
            if rec:
                fixed[n] = (rec[0], "record")
            elif wc.get("dataset") in over:
                fixed[n] = (over[wc["dataset"]], "override")
        rest = [n for n in ns if n not in fixed]
        if rule in stages:
            left = stages[rule] - sum(t for t, _ in fixed.values())
            share = (max(left, 0.0) / len(rest), "stage mean") if rest else None
        elif rule in UNRECORDED:
            share = (UNRECORDED[rule] / max(len(rest), 1), "profile")
        else:
            share = (default, "default")
        for n in ns:
            times[n] = fixed.get(n) or share
    return times


def schedule(nodes, edges, times, cores: int):
    parents, children = defaultdict(list), defaultdict(list)
    for a, b in edges:
        parents[b].append(a)
        children[a].append(b)
    order, indeg = [], {n: len(parents[n]) for n in nodes}
    ready = [n for n in nodes if indeg[n] == 0]
    while ready:
        n = ready.pop()
        order.append(n)
        for c in children[n]:
            indeg[c] -= 1
            if indeg[c] == 0:
                ready.append(c)
    bottom = {}
    for n in reversed(order):
        bottom[n] = times[n] + max((bottom[c] for c in children[n]), default=0.0)
    # critical chain
    chain, n = [], max((m for m in nodes if not parents[m]), key=lambda m: bottom[m])
    while True:
        chain.append(n)
        if not children[n]:
            break
        n = max(children[n], key=lambda c: bottom[c])
    # list schedule
    indeg = {n: len(parents[n]) for n in nodes}
    heap = [(-bottom[n], n) for n in nodes if indeg[n] == 0]
    heapq.heapify(heap)
    running, t, free, busy = [], 0.0, cores, 0.0
    while heap or running:
        while heap and free:
            _, n = heapq.heappop(heap)
            heapq.heappush(running, (t + times[n], n))
            free -= 1
            busy += times[n]
        t, n = heapq.heappop(running)
        free += 1
        for c in children[n]:
            indeg[c] -= 1
            if indeg[c] == 0:
                heapq.heappush(heap, (-bottom[c], c))
    return bottom[chain[0]], chain, t, busy / (cores * t) if t else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dag", default=ROOT / "benchmarks" / "results" / "paper-dag.dot", type=Path)
    ap.add_argument("--records", default=None, type=Path, help="a results folder's benchmarks/ (per-job .tsv)")
    ap.add_argument("--stages", default=ROOT / "paper" / "results" / "report" / "benchmarks.csv", type=Path)
    ap.add_argument("--overrides", default=ROOT / "benchmarks" / "paper_jobs.csv", type=Path)
    ap.add_argument("--scale", default=None, type=Path, help="CSV rule,factor,basis applied to every job's time")
    ap.add_argument("--default", default=10.0, type=float, help="CPU-s of a job without any record")
    ap.add_argument("--cores", default=34, type=int)
    args = ap.parse_args()
    nodes, edges = parse_dot(args.dag.read_text())
    parents = defaultdict(list)
    for a, b in edges:
        parents[b].append(a)
    fill_datasets(nodes, parents)
    stages = {r["stage"]: float(r["cpu_seconds"]) for r in csv.DictReader(args.stages.open()) if r["stage"] != "total"}
    stages.setdefault("consistency", stages.pop("consistency_black2022", 0.0) + stages.pop("consistency_ct", 0.0))
    overrides = {}
    if args.overrides and args.overrides.exists():
        overrides = {(r["rule"], r["dataset"]): float(r["cpu_s"]) for r in csv.DictReader(args.overrides.open())}
    times = job_times(nodes, read_records(args.records), overrides, stages, args.default)
    if args.scale:
        factors = {r["rule"]: float(r["factor"]) for r in csv.DictReader(args.scale.open())}
        times = {n: (t * factors.get(nodes[n][0], 1.0), how) for n, (t, how) in times.items()}
    secs = {n: t for n, (t, _) in times.items()}
    length, chain, makespan, util = schedule(nodes, edges, secs, args.cores)
    per_rule = defaultdict(lambda: [0, 0.0, set()])
    for n, (t, how) in times.items():
        r = per_rule[nodes[n][0]]
        r[0] += 1
        r[1] += t
        r[2].add(how)
    print(f"{len(nodes)} jobs, {sum(secs.values()):,.0f} CPU-s in all ({sum(secs.values()) / 3600:.2f} CPU-hours)")
    print("| rule | jobs | CPU s | largest job s | source |\n|---|---|---|---|---|")
    for rule, (k, s, how) in sorted(per_rule.items(), key=lambda kv: -kv[1][1]):
        big = max(secs[n] for n in nodes if nodes[n][0] == rule)
        print(f"| {rule} | {k} | {s:,.0f} | {big:,.0f} | {', '.join(sorted(how))} |")
    print(f"\ncritical path (unlimited cores): {length:,.0f} s = {length / 60:.1f} min")
    for n in chain:
        rule, wc = nodes[n]
        print(f"  {secs[n]:8.0f} s  {rule} {' '.join(f'{k}={v}' for k, v in wc.items())}")
    print(f"list schedule on {args.cores} cores: {makespan:,.0f} s = {makespan / 60:.1f} min, "
          f"cores busy {100 * util:.0f}%")


if __name__ == "__main__":
    main()
