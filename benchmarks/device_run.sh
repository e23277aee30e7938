#!/bin/bash
# The GPU checks and benchmarks of one lent GPU machine's call (issue 21's GPU column), in one command because such a
# machine's minutes are few. Run from the repository root where CUDA exists, with the raw data under $CTBENCH_DATA:
#
#   OUT=benchmarks/results/device CTBENCH_DATA=../shared/data bash benchmarks/device_run.sh
#
# Writes device-run.log (machine, `pytest -m gpu`, LeNet-5 one epoch on CUDA and on all CPU cores) and
# core-cuda / core-cpuN / population-cuda .{json,md} (`ctbench bench`), the CPU baseline on the same machine so that
# every ratio is side by side. Each part has its own time limit, so one slow part cannot cost the others.
set -u
OUT=${OUT:-benchmarks/results/device}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
cpus=$(nproc)
log="$OUT/device-run.log"
part() { echo "== $1 ($(date -u +%T), load $(cut -d' ' -f1-3 /proc/loadavg))"; }
{
  part machine
  nvidia-smi -L; echo "cpus $cpus"; cat .devcommit 2>/dev/null
  $py -c "import sys, torch; print(sys.version.split()[0], torch.__version__, torch.cuda.get_device_name(0))"
  part "pytest -m gpu"
  timeout "${T_TESTS:-60}" $py -m pytest -m gpu tests/test_gpu.py -q -p no:cacheprovider
  part "ctbench bench --device cuda"
  timeout "${T_CORE:-150}" $py -m ctbench bench --device cuda --out "$OUT" >/dev/null
  part "ctbench bench --population --device cuda"
  timeout "${T_POP:-90}" $py -m ctbench bench --population --device cuda --out "$OUT" >/dev/null
  part "LeNet-5 on MNIST, one epoch: cuda, then cpu with $cpus threads"
  timeout "${T_LENET:-50}" $py benchmarks/lenet_cost.py 1 cuda 1
  timeout "${T_LENET:-50}" $py benchmarks/lenet_cost.py 1 cpu "$cpus"
  part "ctbench bench --device cpu --threads $cpus"
  timeout "${T_CPU:-90}" $py -m ctbench bench --device cpu --threads "$cpus" --out "$OUT" >/dev/null
  part done
} 2>&1 | tee "$log"
