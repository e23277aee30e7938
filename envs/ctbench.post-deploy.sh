#!/usr/bin/env bash
# Run by Snakemake once after it creates the `envs/ctbench.yaml` environment, inside that environment and in the
# directory Snakemake was started in. Installs this checkout (editable, dependencies already in the env) so that the
# rules' `ctbench` command runs the checkout's code.
set -euo pipefail
if [ ! -f pyproject.toml ] || ! grep -q '^name = "ctbench"' pyproject.toml; then
  echo "ctbench.post-deploy.sh: start Snakemake from the ctbench repository root (no ctbench pyproject.toml in $PWD)" >&2
  exit 1
fi
python -m pip install --no-deps -e .
