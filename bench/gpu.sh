#!/usr/bin/env bash
# Device check for the `gpu` feature (burn's Vulkan backend), one prepared script for a machine
# with a GPU and a Vulkan driver:
#
#   bash bench/gpu.sh [ENVS]        (default 1048576 tensor environments)
#
# 1. builds embodia with --features gpu and prints the build time;
# 2. lists the Vulkan devices (vulkaninfo --summary, when installed);
# 3. steps the tensor environments (quadrotor-hover, quadrotor-track, pendulum) on the GPU at
#    ENVS environments and prints env-steps/s (device-side random actions, nothing copied back),
#    after the same batch of CPU environments;
# 4. runs PPO iterations on quadrotor-hover with the networks on the GPU (4,096 CPU
#    environments, 64-step rollouts) and prints the update throughput (env steps per second of
#    training, from metrics.csv) next to the same run on the CPU.
# Each stage has its own time limit so a hang cannot eat the machine's budget.
set -uo pipefail
cd "$(dirname "$0")/.."
envs="${1:-1048576}"
out="${OUT:-$(mktemp -d)}"

echo "== build (cargo build --release --features gpu)"
start=$(date +%s)
timeout 480 cargo build --release --features gpu --quiet || { echo "BUILD FAILED"; exit 1; }
echo "build seconds: $(( $(date +%s) - start ))"
bin=./target/release/embodia

echo "== Vulkan devices"
(command -v vulkaninfo >/dev/null && timeout 30 vulkaninfo --summary 2>&1 | grep -E "deviceName|driverName|apiVersion" ) || echo "(vulkaninfo not installed)"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv

echo "== tensor environments on the GPU, $envs environments"
for task in quadrotor-hover quadrotor-track pendulum; do
  timeout 120 "$bin" --device gpu bench sim --task "$task" --tensor --envs "$envs" \
    --measure-steps $(( envs * 20 )) --json | tee -a "$out/tensor.txt"
done

echo "== PPO on quadrotor-hover: update throughput, GPU vs CPU networks"
for device in gpu cpu; do
  dir="$out/ppo-$device"
  timeout 150 "$bin" --device "$device" train --task quadrotor-hover --algo ppo --quiet --run-dir "$dir" \
    --steps 1310720 --set algo.num_envs=4096 --set algo.steps_per_env=64 >/dev/null 2>"$dir.err" \
    || { echo "ppo on $device failed:"; tail -5 "$dir.err"; continue; }
  python3 - "$dir/metrics.csv" "$device" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
fps = [float(r["fps"]) for r in rows if r.get("fps")]
print(f"ppo {sys.argv[2]}: {len(rows)} iterations, env-steps/s per iteration (rollout + update): "
      f"first {fps[0]:.0f}, median {sorted(fps)[len(fps)//2]:.0f}, wall {float(rows[-1]['wall_seconds']):.1f} s")
PY
done
