#!/usr/bin/env bash
# Device check for the `gpu` feature (burn's Vulkan backend), one prepared script for a machine
# with a GPU and a Vulkan driver:
#
#   bash bench/gpu.sh [ENVS]        (default 1048576 tensor environments)
#
# With EMBODIA_BIN set to an embodia built with `cargo build --release --features gpu`, that
# binary is used (a GPU machine without a Rust toolchain); otherwise the script builds it and
# prints the build time. Then:
# 1. the GPU (nvidia-smi) and a smoke test of the Vulkan device (stops here if it fails);
# 2. the VLA on the GPU: forward latency and SFT gradient-step latency of the tiny, small and
#    base presets at batch 1, 64 and 256 (`bench vla-model --train`);
# 3. πRL's recipe on the GPU at small scale (`bench vla`: a short SFT on lang-cubes-ee, then
#    30 s of PPO with GAE, which updates every iteration), for its time split between simulation and rendering, inference and update;
# 4. the tensor environments (quadrotor-hover, quadrotor-track, pendulum) on the GPU at ENVS
#    environments, env-steps/s (device-side random actions, nothing copied back);
# 5. PPO iterations on quadrotor-hover with the networks on the GPU, then on the CPU (4,096
#    CPU environments, 64-step rollouts): training env-steps/s from metrics.csv;
# 6. the VLA on this machine's CPU cores (tiny and small, batch 1 and 64), for the ratio.
# Each stage has its own time limit so a hang cannot eat the machine's budget; figures go to
# stdout and to $OUT (when set); run directories to a temporary directory.
set -uo pipefail
cd "$(dirname "$0")/.."
envs="${1:-1048576}"
out="${OUT:-$(mktemp -d)}"   # figures
runs="$(mktemp -d)"          # run directories

if [ -n "${EMBODIA_BIN:-}" ]; then
  bin="$EMBODIA_BIN"
else
  echo "== build (cargo build --release --features gpu)"
  start=$(date +%s)
  timeout 480 cargo build --release --features gpu --quiet || { echo "BUILD FAILED"; exit 1; }
  echo "build seconds: $(( $(date +%s) - start ))"
  bin=./target/release/embodia
fi

echo "== GPU"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
nproc
if ! timeout 60 "$bin" --device gpu bench sim --task pendulum --tensor --envs 4096 --measure-steps 81920; then
  echo "GPU SMOKE TEST FAILED: no usable Vulkan device"
  exit 1
fi

echo "== VLA presets on the GPU (forward and SFT step latency)"
timeout 150 "$bin" --device gpu bench vla-model --presets tiny,small,base --batches 1,64,256 --reps 5 --train --json \
  | tee "$out/vla-model-gpu.txt"

echo "== VLA recipe on the GPU (short SFT, then 30 s of PPO with GAE)"
timeout 150 "$bin" --device gpu bench vla --task lang-cubes-ee --sft-steps 250 --rl-seconds 30 --eval-episodes 8 \
  --sft-set algo.demos=64 --sft-set eval_episodes=8 --rl-set algo.advantage=gae --out "$runs/bench-vla" --json | tee "$out/bench-vla-gpu.txt"

echo "== tensor environments on the GPU, $envs environments"
for task in quadrotor-hover quadrotor-track pendulum; do
  timeout 30 "$bin" --device gpu bench sim --task "$task" --tensor --envs "$envs" \
    --measure-steps $(( envs * 20 )) --json | tee -a "$out/tensor.txt"
done

echo "== PPO on quadrotor-hover: training throughput, GPU vs CPU networks"
for device in gpu cpu; do
  dir="$runs/ppo-$device"
  timeout 40 "$bin" --device "$device" train --task quadrotor-hover --algo ppo --quiet --run-dir "$dir" \
    --steps 786432 --set algo.num_envs=4096 --set algo.steps_per_env=64 >/dev/null 2>"$dir.err" \
    || { echo "ppo on $device failed or timed out:"; tail -3 "$dir.err"; }
  [ -f "$dir/metrics.csv" ] && python3 - "$dir/metrics.csv" "$device" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
fps = [float(r["fps"]) for r in rows if r.get("fps")]
if fps:
    print(f"ppo {sys.argv[2]}: {len(rows)} iterations, env-steps/s per iteration (rollout + update): "
          f"first {fps[0]:.0f}, median {sorted(fps)[len(fps)//2]:.0f}, wall {float(rows[-1]['wall_seconds']):.1f} s")
PY
done

echo "== VLA presets on the CPU ($(nproc) cores)"
timeout 50 "$bin" --device cpu bench vla-model --presets tiny,small --batches 1,64 --reps 3 --train --json \
  | tee "$out/vla-model-cpu.txt"
