#!/usr/bin/env bash
# Stable-Baselines3 peer for `embodia bench solve` (Pendulum-v1 time to solve).
# Creates bench/.venv-sb3 (git-ignored) on first use, then runs bench/sb3_solve.py.
# Usage: bash bench/sb3_solve.sh [--algo sac|ppo|both] [--seeds N] [--max-steps N] [--zoo] [--json]
# Threads: 1 torch thread is the default; on the 2-core dev machine it was
# faster than 2 (SAC, 3k steps: 28.2/28.8 s vs 39.6/40.4 s). Override with --threads.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv-sb3"
req="$here/requirements-sb3.txt"
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$req" "$venv/.requirements"; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet -r "$req"
  cp "$req" "$venv/.requirements"
fi
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
exec "$venv/bin/python" "$here/sb3_solve.py" "$@"
