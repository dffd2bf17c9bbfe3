#!/usr/bin/env bash
# MuJoCo peer for embodia's simulation throughput: gymnasium Ant-v5 env-steps/s with random
# actions, single process, one thread, plus the raw mujoco.mj_step rate of the same model.
# Creates bench/.venv-mujoco (git-ignored) on first use, then runs bench/mujoco_ant.py.
# Usage: bash bench/mujoco_peer.sh [--env Ant-v5] [--steps 100000] [--raw-steps 200000]
#                                  [--seed 0] [--pin CPU] [--json]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="$(bash "$here/venv.sh" mujoco)" || exit $?
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
exec "$bin/python" "$here/mujoco_ant.py" "$@"
