#!/usr/bin/env bash
# The paper set's whole `ctbench report` with one code tree, measured with GNU time (issue 21): peak RSS and CPU
# seconds of the exact command the workflow runs, written to a fresh folder.
#
#   usage: benchmarks/report_full_run.sh CODE_TREE OUT [SET_REPO]
#
# CODE_TREE: a ctbench git checkout (its ctbench/ is imported through PYTHONPATH; a `git archive` copy has no git, so
# the report's --publish check refuses it: use `git worktree add`); OUT: the report folder
# to write (emptied first; OUT.time = `/usr/bin/time -v`, OUT.log = stdout/stderr, OUT.load = load average before and
# after); SET_REPO: the checkout holding results/paper (default /work/regen). The command is the one Snakemake prints
# (`snakemake -n -p -f results/paper/report/index.json`), with --out replaced; the other stages' files of the report
# folder (figure1, black_figure*, mnist_*, prop31/, fidelity_effects) are copied in first, as the workflow leaves
# them there. A set whose report rule wraps the command in `python -m ctbench.cpu_record FILE` (the per-job CPU
# records) is measured without that wrapper: GNU time measures the report itself.
# Compare the tables: `ctbench compare OUT --committed SET_REPO/results/paper/report --rtol 0 --atol 0`.
# CMDS_FROM=TREE (default SET_REPO): the commands are those of TREE's workflow (its Snakefile, run in SET_REPO
# with TREE's ctbench on PYTHONPATH, dry). Where that workflow has the `report_figures` rule (`ctbench
# report-figures`, branch `report-figures`), its command is measured first, the same way (OUT.figures.time,
# OUT.figures.log), and then the report's (`--no-figures`), as the workflow runs them. Where it has the
# `report_seed_ledger` rule (`ctbench report-seed-ledger`, branch `report-ledger`), that command is measured after the
# figures' and before the report's (OUT.ledger.time, OUT.ledger.log), and the report reads it (`--seed-ledger`).
set -euo pipefail
CODE=$(realpath "$1"); OUT=$2; REPO=${3:-/work/regen}; FROM=$(realpath "${CMDS_FROM:-$REPO}")
command -v snakemake > /dev/null || { echo "snakemake is not on PATH: activate the project's venv first" >&2; exit 2; }
R=$REPO/results/paper/report
TARGETS=(results/paper/report/index.json)
grep -q '^rule report_figures:' "$FROM/workflow/rules/report.smk" && TARGETS+=(results/paper/report/report_figures.json)
grep -q '^rule report_seed_ledger:' "$FROM/workflow/rules/report.smk" && TARGETS+=(results/paper/report/seed_ledger.json)
DRY=$(cd "$REPO" && CTBENCH_DATA=${CTBENCH_DATA:-/work/shared/data} PYTHONPATH=$FROM \
      snakemake -s "$FROM/Snakefile" -n -p --nolock -f "${TARGETS[@]}" 2>/dev/null)
command_of() {  # the shell command of `ctbench $1 ...` in the dry run, without the CPU-record wrapper and the log
  grep -E "^Shell command: (python -m ctbench\.cpu_record [^ ]+ )?ctbench $1 " <<< "$DRY" \
    | sed -E 's/^Shell command: (python -m ctbench\.cpu_record [^ ]+ )?ctbench //; s/ > results.*$//' || true
}
CMD=$(command_of report)
[ -n "$CMD" ] || { echo "no report command from snakemake -n -p" >&2; exit 1; }
CMD=${CMD//--out results\/paper\/report/--out $OUT}
CMD=${CMD//results\/paper\/report\/seed_ledger.json/$OUT\/seed_ledger.json}
FIG=$(command_of report-figures)
FIG=${FIG//--out results\/paper\/report/--out $OUT}
LEDGER=$(command_of report-seed-ledger)
LEDGER=${LEDGER//--out results\/paper\/report/--out $OUT}
rm -rf "$OUT" "$OUT.stale"; mkdir -p "$OUT"
cp -r "$R"/figure1.* "$R"/mnist_* "$R"/prop31 "$R"/fidelity_effects.* "$OUT"/
cp "$R"/black_figure* "$OUT"/ 2>/dev/null || true  # the black_figure stages' files, where the set has them
RUNNER=$(mktemp -d)/ctb.py  # a script, not `python -c`/-m: those put the working directory first on sys.path
printf 'import sys\nfrom ctbench.cli import main\nsys.argv[0] = "ctbench"\nsys.exit(main())\n' > "$RUNNER"
cat /proc/loadavg > "$OUT.load"
cd "$REPO"
if [ -n "$FIG" ]; then
  eval "CTBENCH_DATA=\${CTBENCH_DATA:-/work/shared/data} PYTHONPATH=$CODE nice -n 19 /usr/bin/time -v python $RUNNER $FIG" \
    > "$OUT.figures.log" 2> "$OUT.figures.time"
  cat /proc/loadavg >> "$OUT.load"
  echo "report-figures:"; grep -E 'Maximum resident|User time|System time|Elapsed' "$OUT.figures.time"
fi
if [ -n "$LEDGER" ]; then
  eval "CTBENCH_DATA=\${CTBENCH_DATA:-/work/shared/data} PYTHONPATH=$CODE nice -n 19 /usr/bin/time -v python $RUNNER $LEDGER" \
    > "$OUT.ledger.log" 2> "$OUT.ledger.time"
  cat /proc/loadavg >> "$OUT.load"
  echo "report-seed-ledger:"; grep -E 'Maximum resident|User time|System time|Elapsed' "$OUT.ledger.time"
fi
[ -z "$FIG$LEDGER" ] || echo "report:"
eval "CTBENCH_DATA=\${CTBENCH_DATA:-/work/shared/data} PYTHONPATH=$CODE nice -n 19 /usr/bin/time -v python $RUNNER $CMD" \
  > "$OUT.log" 2> "$OUT.time"
cat /proc/loadavg >> "$OUT.load"
grep -E 'Maximum resident|User time|System time|Elapsed' "$OUT.time"
