"""Critical path and 34-core makespan of the paper DAG from per-job CPU times (issue 21).

The DAG is Snakemake's own (``snakemake -n --forceall --dag --configfile workflow/config/paper.yaml``, dot text;
committed as ``benchmarks/results/paper-dag.dot``, 298 jobs and ``all`` at f109280). Each job's time is, in this order:

1. its own CPU record where the job wrote one (``<rule>/<wildcards>.cpu.json``, ``cpu_seconds``: the kernel's count,
   ``python -m ctbench.cpu_record``), else its Snakemake ``benchmark:`` record (``--records RESULTS/benchmarks``, or
   the same records as ``ctbench stage-times`` chose them, kept in a result set: ``--records
   RESULTS/report/benchmarks_jobs.csv``:
   ``<rule>/<wildcards>.tsv``, ``cpu_time``
   or else ``s``), matched by rule and wildcard values (those the dot label omits inherited from the job's
   parents: :func:`fill_wildcards`);
2. a per-job override (``--overrides``, CSV ``rule,dataset,cpu_s``: the profile's measured single jobs, e.g. the
   MNIST final training 649 s);
3. the stage's recorded CPU total (``--stages``: the published set's ``report/benchmarks.csv``) less its overrides,
   shared equally by its other jobs;
4. ``--default`` seconds for rules without any record (data, tune_select, figures, book: modelled).

Every job runs on one core (``threads_per_job: 1``), so a job's wall time is taken as its CPU time, except a job
whose own record shows more than :data:`MULTI_CORE` times as much CPU as wall time: it ran on several cores (the
LeNet CT job's search at ``lenet.search_threads``; Snakemake gives such a job its threads' cores to itself), so its
time is its recorded wall time. The critical
path is the longest chain; the makespan is a list schedule on ``--cores`` cores (ready jobs by longest remaining
chain first). ``--scale`` (CSV ``rule,factor,basis``) multiplies each rule's times, e.g. the estimate after the
levers of issue 21 (``benchmarks/levers.csv``); ``--assume RULE=S`` sets every job of a rule to a modelled time
(e.g. the report at its 60 s target); ``--replace`` (CSV as ``--overrides``) sets the jobs it names over their
records (a job whose work changed since, e.g. the consistency merge). Records in a ``<rule>_<part>`` folder
(``consistency_black2022``) count for the rule.

    python benchmarks/critical_path.py --cores 34 [--scale benchmarks/levers.csv] [--assume report=60]
"""

from __future__ import annotations

import argparse
import csv
import heapq
import json
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


def fill_wildcards(nodes, parents) -> dict[int, dict[str, str]]:
    """Snakemake's dot labels show only a job's *new* wildcards (``DAG.new_wildcards``: those no dependency has with
    the same value), so a job inherits each wildcard that all its parents carry with one value (the dataset of
    a job downstream of one dataset's ``data``, the seed of an evaluation downstream of a per-seed training). The
    dataset goes into the job's wildcards; the others are returned (node → wildcards), for telling records apart:
    an ancestor's wildcard need not be the job's own."""
    memo: dict[int, dict[str, str]] = {}

    def full(n):
        if n not in memo:
            ps = [full(p) for p in parents[n]]
            # inherited only where every parent carries the wildcard, all with one value
            common = {k: v for k, v in ps[0].items() if all(q.get(k) == v for q in ps[1:])} if ps else {}
            memo[n] = {**common, **nodes[n][1]}
        return memo[n]

    filled = {n: full(n) for n in nodes}
    extra = {}
    for n, wc in filled.items():
        own = nodes[n][1]
        if "dataset" not in own and "dataset" in wc:
            own["dataset"] = wc["dataset"]
        extra[n] = {k: v for k, v in wc.items() if k not in own}
    return extra


#: record folders named ``<rule>_<part>`` (the rule's ``part`` wildcard in the folder name): rule and part
PART_FOLDERS = {"consistency_black2022": ("consistency", "black2022"), "consistency_ct": ("consistency", "ct")}


#: a record with more than this many CPU-s per wall second ran on several cores: its wall time is its duration.
#: The one-thread jobs of the set at 05d47ba reach at most 0.995 (the report); its two-thread LeNet jobs 1.30 and
#: 1.248, so 1.1 parts them (1.25 counted the LeNet evaluation at its CPU time, 67 s, against 54 s of wall)
MULTI_CORE = 1.1


def duration(cpu: float, wall: float | None) -> float:
    """A job's time on the path: its CPU-s (one core), or its wall time where it ran on several cores."""
    return wall if wall and cpu > MULTI_CORE * wall else cpu


def read_records(folder: Path | None) -> dict[str, list[tuple[str, float]]]:
    """Rule → (record name, seconds: :func:`duration`) of every ``benchmark:`` record under ``folder``; a
    ``<rule>_<part>`` folder's records go to the rule, the part put in front of the name (so that wildcard matching
    sees it)."""
    out = defaultdict(list)
    if folder is not None and folder.is_file():  # a result set's report/benchmarks_jobs.csv (ctbench stage-times)
        for r in csv.DictReader(folder.open()):
            rule, part = PART_FOLDERS.get(r["stage"], (r["stage"], None))
            wall = float(r["wall_seconds"]) if r.get("wall_seconds") else None
            out[rule].append((f"{part}_{r['job']}" if part else r["job"], duration(float(r["cpu_seconds"]), wall)))
        return out
    if folder is None or not folder.is_dir():
        return out
    for f in folder.rglob("*.tsv"):
        rows = list(csv.DictReader(f.open(), delimiter="\t"))
        own = f.with_suffix(".cpu.json")  # the kernel's count of the job (python -m ctbench.cpu_record): preferred
        if own.is_file():
            rec = json.loads(own.read_text())
            rows = [{"cpu_time": duration(rec["cpu_seconds"], rec.get("wall_seconds"))}]
        if rows:
            r = rows[-1]
            v = r.get("cpu_time") or r.get("s")
            rule, part = PART_FOLDERS.get(f.parent.name, (f.parent.name, None))
            out[rule].append((f"{part}_{f.stem}" if part else f.stem, float(v)))
    return out


#: how a benchmark record's name writes a wildcard's value (``{dataset}_s{seed}``, ``..._c{chunk}_...``,
#: ``..._k{shard}_n{n}_...``)
PREFIX = {"seed": "s", "chunk": "c", "shard": "k", "n": "n"}


def holds(name: str, key: str, value: str) -> bool:
    """Record name ``name`` (wildcard values joined by ``_``) holds wildcard ``key`` = ``value`` as a whole field:
    chunk 1 is not chunk 10, and seed 0 (``s0``) is not chunk 0 (``c0``)."""
    return re.search(rf"(?:^|_){PREFIX.get(key, '')}{re.escape(str(value))}(?:_|$)", name) is not None


def job_times(nodes, records, overrides, stages, default, inherited=None) -> dict[int, tuple[float, str]]:
    """Each job's (seconds, source): the record whose name holds all the job's wildcard values (of several, the one
    that also holds most of its ``inherited`` ones), else an override, else the stage mean or a default."""
    inherited = inherited or {}
    by_rule = defaultdict(list)
    for n, (rule, _) in nodes.items():
        by_rule[rule].append(n)
    times = {}
    for rule, ns in by_rule.items():
        over = {d: s for (r, d), s in overrides.items() if r == rule}
        fixed = {}
        for n in ns:
            wc = nodes[n][1]
            # of several, the one holding most inherited values, then the shortest (tune_... before tune_lr_...)
            rec = [(-sum(holds(name, k, v) for k, v in inherited.get(n, {}).items()), len(name), i, s)
                   for i, (name, s) in enumerate(records.get(rule, []))
                   if all(holds(name, k, v) for k, v in wc.items())]
            if rec:
                fixed[n] = (min(rec)[3], "record")
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
    ap.add_argument("--records", default=None, type=Path,
                    help="a results folder's benchmarks/ (per-job .tsv), or a result set's "
                         "report/benchmarks_jobs.csv (the same records, kept with the set)")
    ap.add_argument("--stages", default=ROOT / "paper" / "results" / "report" / "benchmarks.csv", type=Path)
    ap.add_argument("--overrides", default=[ROOT / "benchmarks" / "paper_jobs.csv"], type=Path, nargs="+",
                    help="CSV files rule,dataset,cpu_s (later files win)")
    ap.add_argument("--replace", default=None, type=Path,
                    help="CSV rule,dataset,cpu_s that wins over records too: jobs whose work changed since the "
                         "records (e.g. the consistency merge of consistency_shards_jobs.csv)")
    ap.add_argument("--assume", default=[], action="append", metavar="RULE=S",
                    help="every job of RULE takes S seconds (a modelled target, e.g. report=60)")
    ap.add_argument("--scale", default=None, type=Path, help="CSV rule,factor,basis applied to every job's time")
    ap.add_argument("--default", default=10.0, type=float, help="CPU-s of a job without any record")
    ap.add_argument("--cores", default=34, type=int)
    args = ap.parse_args()
    nodes, edges = parse_dot(args.dag.read_text())
    parents = defaultdict(list)
    for a, b in edges:
        parents[b].append(a)
    inherited = fill_wildcards(nodes, parents)
    stages = {r["stage"]: float(r["cpu_seconds"]) for r in csv.DictReader(args.stages.open()) if r["stage"] != "total"}
    stages.setdefault("consistency", stages.pop("consistency_black2022", 0.0) + stages.pop("consistency_ct", 0.0))
    overrides = {}
    for f in args.overrides:
        if not f.exists():
            raise SystemExit(f"--overrides: no file {f}")
        overrides.update({(r["rule"], r["dataset"]): float(r["cpu_s"]) for r in csv.DictReader(f.open())})
    times = job_times(nodes, read_records(args.records), overrides, stages, args.default, inherited)
    if args.replace:
        if not args.replace.exists():
            raise SystemExit(f"--replace: no file {args.replace}")
        new = {(r["rule"], r["dataset"]): float(r["cpu_s"]) for r in csv.DictReader(args.replace.open())}
        times = {n: ((new[key], "replaced") if (key := (nodes[n][0], nodes[n][1].get("dataset"))) in new else t)
                 for n, t in times.items()}
    for a in args.assume:
        rule, _, sec = a.partition("=")
        if not sec or rule not in {r for r, _ in nodes.values()}:
            raise SystemExit(f"--assume {a!r}: write RULE=SECONDS with a rule of the DAG")
        times = {n: ((float(sec), "assumed") if nodes[n][0] == rule else t) for n, t in times.items()}
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
        print(f"  {secs[n]:8.0f} s  {rule} {' '.join(f'{k}={v}' for k, v in {**inherited[n], **wc}.items())}")
    print(f"list schedule on {args.cores} cores: {makespan:,.0f} s = {makespan / 60:.1f} min, "
          f"cores busy {100 * util:.0f}%")


if __name__ == "__main__":
    main()
