#!/usr/bin/env bash
# PPO training throughput with the environments in one batch and in two groups whose simulation
# overlaps the other group's inference (`algo.env_groups = 2`), in the same run, same settings:
# prints env-steps/s of each (from the runs' own wall time) and their ratio.
#
#   bash bench/env_groups.sh [TASK] [STEPS] [NUM_ENVS]     # default: ant-run 262144 64
#
# RAYON_NUM_THREADS limits the simulation's threads (e.g. 1 to see the overlap with one core
# for the simulation and the caller's thread for inference).
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${EMBODIA_BIN:-target/release/embodia}"
task="${1:-ant-run}"
steps="${2:-262144}"
envs="${3:-64}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
rate() {
  "$bin" train --task "$task" --algo ppo --steps "$steps" --set "algo.num_envs=$envs" --set "algo.env_groups=$1" \
    --set eval_episodes=1 --run-dir "$out/groups-$1" --quiet >/dev/null
  # The last metrics row: env_steps and wall_seconds of the training loop.
  tail -n 1 "$out/groups-$1/metrics.csv" | awk -F, '{ printf "%.0f", $1 / $2 }'
}
one="$(rate 1)"
two="$(rate 2)"
echo "env_groups: $task, $envs envs, $steps env steps, RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-all}: one batch $one env-steps/s, two overlapped groups $two env-steps/s, ratio $(awk -v a="$two" -v b="$one" 'BEGIN { printf "%.2f", a / b }')"
