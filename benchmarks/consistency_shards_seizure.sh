#!/bin/bash
# Seizure's consistency job at the paper's settings (the committed sidecar's) but n_models 10 (20 retrained models):
# 2 shard jobs + the merge against the single job: each process's CPU (GNU time, user+sys) and cmp of the two files
# (results/consistency-shards-seizure.md). Run from the repository root with the project venv active and
# CTBENCH_DATA set; REGEN = the committed paper run's folder (default /work/regen). About 200 CPU-s.
set -e
REGEN=${REGEN:-/work/regen}
S=$(python -c "import json,sys;s=json.load(open(sys.argv[1]))['settings'];s['n_models']=10;print(json.dumps(s,sort_keys=True))" \
    "$REGEN/results/paper/consistency/black2022/epileptic_seizure_s0.csv.gz.json")
O=${OUT:-/tmp/consistency-shards-seizure}; mkdir -p "$O"
C=(ctbench consistency --part black2022 --dataset epileptic_seizure --seed 0 --settings "$S" --quiet)
cat /proc/loadavg
for i in 0 1; do /usr/bin/time -f "shard$i cpu %U+%S wall %e" nice -n 10 "${C[@]}" --shard $i/2 --out "$O/k$i.pt"; done
/usr/bin/time -f "merge cpu %U+%S wall %e" nice -n 10 "${C[@]}" --retrained "$O/k0.pt" "$O/k1.pt" --out "$O/merged.csv.gz"
/usr/bin/time -f "single cpu %U+%S wall %e" nice -n 10 "${C[@]}" --out "$O/single.csv.gz"
cmp "$O/merged.csv.gz" "$O/single.csv.gz" && echo BITWISE-EQUAL
cat /proc/loadavg
