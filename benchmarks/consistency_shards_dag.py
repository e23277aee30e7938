"""A committed paper DAG (Snakemake dot text) with the consistency shard jobs of ``consistency.shards`` added.

The DAG files under ``results/`` are Snakemake's own (``snakemake -n --forceall --dag``), made at a commit
before the shard rule existed; making a new one means a paper-scale DAG build. This adds, for each black2022
``consistency`` job of a dataset given with K, the K ``consistency_shard`` jobs that feed it, as the rule file does
(workflow/rules/consistency.smk), and changes nothing else. Then ``critical_path.py --dag OUT`` models the split.

    python benchmarks/consistency_shards_dag.py results/paper-dag-per-seed-nolenet.dot OUT.dot \\
        --shards epileptic_seizure=4
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

NODE = re.compile(r'^\s*(\d+)\[label = "([^"]*)"(.*)$', re.M)


def add_shards(text: str, shards: dict[str, int]) -> str:
    ids = [int(m.group(1)) for m in NODE.finditer(text)]
    nxt, nodes, edges = max(ids) + 1, [], []
    for m in NODE.finditer(text):
        rule, *wc = m.group(2).split("\\n")
        w = dict(x.split(": ", 1) for x in wc)
        if rule != "consistency" or w.get("part") != "black2022" or w.get("dataset") not in shards:
            continue
        k = shards[w["dataset"]]
        for i in range(k):
            label = f"consistency_shard\\ndataset: {w['dataset']}\\nn: {k}\\npart: black2022\\nseed: {w['seed']}" \
                    f"\\nshard: {i}"
            nodes.append(f'\t{nxt}[label = "{label}"{m.group(3)}')
            edges.append(f"\t{nxt} -> {m.group(1)}")
            nxt += 1
    if len(nodes) != sum(shards.values()):
        raise SystemExit(f"--shards {shards}: not every dataset has one black2022 consistency job in the DAG")
    first_edge = re.search(r"^\s*\d+ -> \d+", text, re.M).start()
    end = text.rstrip().rfind("}")
    return text[:first_edge] + "\n".join(nodes) + "\n" + text[first_edge:end] + "\n".join(edges) + "\n}\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dag", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--shards", nargs="+", required=True, metavar="DATASET=K")
    args = ap.parse_args()
    shards = {d: int(k) for d, _, k in (s.partition("=") for s in args.shards)}
    args.out.write_text(add_shards(args.dag.read_text(), shards))


if __name__ == "__main__":
    main()
