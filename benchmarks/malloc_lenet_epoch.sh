#!/usr/bin/env bash
# One epoch of the paper run's LeNet CT training twice, with glibc's default allocator settings and with freed memory
# kept in the heap (MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ / MALLOC_TOP_PAD_), under GNU time: CPU (user/sys), wall, page faults, peak RSS; the two
# models must be bitwise equal (printed). Issue 21; results in benchmarks/results/malloc-lenet-epoch.md.
#
#   usage: benchmarks/malloc_lenet_epoch.sh SIDECAR OUT      (SIDECAR: results/paper/lenet/mnist/full_s0.pt.json)
set -euo pipefail
SIDE=$(realpath "$1"); OUT=$2
mkdir -p "$OUT"
python - "$SIDE" "$OUT/cfg.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["config"]
c["training"]["epochs"] = 1
json.dump(c, open(sys.argv[2], "w"))
PY
C=$(cat "$OUT/cfg.json")
run() {  # name, then env(1) arguments
  local name=$1; shift
  env "$@" OMP_NUM_THREADS=1 /usr/bin/time -v ctbench train --config-json "$C" --out "$OUT/$name.pt" --set threads=1 \
    --quiet > "$OUT/$name.log" 2> "$OUT/$name.time"
  grep -E "User time|System time|Elapsed|Maximum resident|Minor" "$OUT/$name.time" | sed "s/^/$name: /"
}
cat /proc/loadavg > "$OUT/load"
run default -u MALLOC_MMAP_THRESHOLD_ -u MALLOC_TRIM_THRESHOLD_ -u MALLOC_TOP_PAD_
run kept MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=4294967296 MALLOC_TOP_PAD_=536870912
cat /proc/loadavg >> "$OUT/load"
python - "$OUT/default.pt" "$OUT/kept.pt" <<'PY'
import hashlib, sys, torch
def digest(p):
    sd = torch.load(p, map_location="cpu", weights_only=False)
    sd = sd.get("state_dict", sd)
    h = hashlib.sha256()
    for k in sorted(sd):
        if torch.is_tensor(sd[k]):
            h.update(k.encode()); h.update(sd[k].numpy().tobytes())
    return h.hexdigest()
a, b = digest(sys.argv[1]), digest(sys.argv[2])
print("models bitwise equal" if a == b else f"MODELS DIFFER: {a[:16]} vs {b[:16]}")
PY
