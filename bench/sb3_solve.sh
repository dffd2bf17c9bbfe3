#!/usr/bin/env bash
# Stable-Baselines3 peer for `embodia bench solve` (Pendulum-v1 time to solve).
# Creates bench/.venv-sb3 (git-ignored) on first use, then runs bench/sb3_solve.py.
# Usage: bash bench/sb3_solve.sh [--algo sac|ppo|both] [--seeds N] [--max-steps N] [--zoo] [--json]
# Threads: 1 torch thread is the default; on the 2-core dev machine it was
# faster than 2 (SAC, 3k steps: 28.2/28.8 s vs 39.6/40.4 s). Override with --threads.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="$(bash "$here/venv.sh" sb3)" || exit $?
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
exec "$bin/python" "$here/sb3_solve.py" "$@"
