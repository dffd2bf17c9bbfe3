#!/usr/bin/env bash
# Device check for the `gpu` feature (burn's wgpu backend: WGSL kernels compiled by naga, on
# Vulkan, Metal or DX12), one prepared script for a machine with a GPU:
#
#   bash bench/gpu.sh            full size (1,048,576 tensor environments, VLA presets up to base)
#   bash bench/gpu.sh --small    every stage at a size Mesa's lavapipe finishes in a few minutes:
#                                CI runs this, so the full-size script is known to work the day a
#                                GPU machine is lent. lavapipe figures are correctness, not speed.
#
# With EMBODIA_BIN set to an embodia built with `cargo build --release --features gpu`, that
# binary is used (a GPU machine without a Rust toolchain); otherwise the script builds it and
# prints the build time. Stages:
# 1. the GPU (nvidia-smi, vulkaninfo) and the device probe (stops here if it fails);
# 2. the VLA on the GPU: forward and SFT gradient-step latency of its presets (`bench vla-model`);
# 3. πRL's recipe on the GPU at small scale (`bench vla`: a short SFT on lang-cubes-ee, then PPO
#    with GAE), for its time split between simulation and rendering, inference and update;
# 4. the tensor environments (quadrotor-hover, quadrotor-track, pendulum) on the GPU,
#    env-steps/s (device-side random actions, nothing copied back);
# 5. PPO iterations on quadrotor-hover with the networks on the GPU, then on the CPU: training
#    env-steps/s from metrics.csv; then PPO with its whole rollout on the device (tensor
#    environments, `bench sim --ppo-iterations`), GPU and CPU;
# 6. the VLA on this machine's CPU cores, for the ratio.
# Each stage has its own time limit so a hang cannot eat the machine's budget; a stage that
# fails or times out makes the script exit non-zero at the end (after the other stages ran).
# Figures go to stdout and to $OUT (when set); run directories to a temporary directory.
set -uo pipefail
cd "$(dirname "$0")/.."
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"

if [ "${1:-}" = "--small" ]; then
  envs=4096 presets=tiny batches=1,8 reps=2 cpu_presets=tiny cpu_batches=1
  ppo_envs=256 ppo_steps=16384 limit=240 device_ppo=(--envs 4096 --ppo-iterations 1 --set algo.steps_per_env=8)
  # `train` with device rollouts is tested on lavapipe in tests/gpu.rs; here only at full size.
  ppo_runs=(gpu cpu)
  # The recipe with a one-block, 32-wide VLA, 2 demonstrations and 1 episode per evaluation.
  vla=(--sft-steps 4 --rl-seconds 2 --eval-episodes 1 --sft-set algo.demos=2 --sft-set eval_episodes=1
       --sft-set algo.batch_size=8 --sft-set algo.num_envs=2 --sft-set algo.updates_per_iteration=4
       --sft-set algo.model.vision.width=32 --sft-set algo.model.vision.depth=1
       --sft-set algo.model.backbone_width=32 --sft-set algo.model.backbone_depth=1
       --sft-set algo.model.expert_depth=1 --sft-set algo.model.vision.image_size=32 --rl-set algo.num_envs=4 --rl-set algo.group_size=2)
else
  envs=1048576 presets=tiny,small,base batches=1,64,256 reps=5 cpu_presets=tiny,small cpu_batches=1,64
  ppo_envs=4096 ppo_steps=786432 limit=150 ppo_runs=(gpu cpu gpu-device cpu-device)
  device_ppo=(--envs 65536,1048576 --ppo-iterations 3 --set algo.steps_per_env=32)
  vla=(--sft-steps 250 --rl-seconds 30 --eval-episodes 8 --sft-set algo.demos=64 --sft-set eval_episodes=8)
fi
out="${OUT:-$(mktemp -d)}"   # figures
runs="$(mktemp -d)"          # run directories
failed=()

# `stage NAME SECONDS FILE CMD...`: runs CMD under its own time limit, its stdout also appended
# to FILE; records NAME when it fails.
stage() {
  local name="$1" seconds="$2" file="$3"
  shift 3
  timeout "$seconds" "$@" | tee -a "$file"
  if [ "${PIPESTATUS[0]}" != 0 ]; then
    echo "STAGE FAILED (or timed out after ${seconds} s): $name"
    failed+=("$name")
  fi
}

if [ -n "${EMBODIA_BIN:-}" ]; then
  bin="$EMBODIA_BIN"
else
  echo "== build (cargo build --release --features gpu)"
  start=$(date +%s)
  timeout 900 cargo build --release --features gpu --quiet || { echo "BUILD FAILED"; exit 1; }
  echo "build seconds: $(( $(date +%s) - start ))"
  bin=./target/release/embodia
fi

echo "== GPU"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
command -v vulkaninfo >/dev/null && vulkaninfo --summary 2>/dev/null | grep -E "deviceName|driverInfo"
echo "cpu cores: $(nproc)"
if ! timeout 120 "$bin" --device gpu bench sim --task pendulum --tensor --envs 4096 --measure-steps 81920; then
  echo "GPU SMOKE TEST FAILED: no usable GPU"
  exit 1
fi

echo "== VLA presets on the GPU (forward and SFT step latency)"
stage "vla-model gpu" "$limit" "$out/vla-model-gpu.txt" "$bin" --device gpu bench vla-model --presets "$presets" --batches "$batches" \
  --reps "$reps" --train --json

echo "== VLA recipe on the GPU (short SFT, then PPO with GAE)"
stage "bench vla gpu" "$limit" "$out/bench-vla-gpu.txt" "$bin" --device gpu bench vla --task lang-cubes-ee "${vla[@]}" \
  --rl-set algo.advantage=gae --out "$runs/bench-vla" --json

echo "== tensor environments on the GPU, $envs environments"
for task in quadrotor-hover quadrotor-track pendulum; do
  stage "tensor $task" "$limit" "$out/tensor.txt" "$bin" --device gpu bench sim --task "$task" --tensor --envs "$envs" \
    --measure-steps $(( envs * 20 )) --json
done

echo "== PPO on quadrotor-hover: training throughput, GPU vs CPU networks, host or device rollouts"
for run in "${ppo_runs[@]}"; do
  device="${run%-device}"
  rollouts=false
  [ "$run" != "$device" ] && rollouts=true
  dir="$runs/ppo-$run"
  stage "ppo $run" "$limit" /dev/null "$bin" --device "$device" train --task quadrotor-hover --algo ppo \
    --quiet --run-dir "$dir" --steps "$ppo_steps" --set "algo.num_envs=$ppo_envs" --set algo.steps_per_env=64 \
    --set "algo.device_rollouts=$rollouts" 2>"$dir.err" || true
  [ -s "$dir.err" ] && tail -3 "$dir.err"
  [ -f "$dir/metrics.csv" ] && python3 - "$dir/metrics.csv" "$run" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
fps = [float(r["fps"]) for r in rows if r.get("fps")]
if fps:
    print(f"ppo {sys.argv[2]}: {len(rows)} iterations, env-steps/s per iteration (rollout + update): "
          f"first {fps[0]:.0f}, median {sorted(fps)[len(fps)//2]:.0f}, wall {float(rows[-1]['wall_seconds']):.1f} s")
PY
done

echo "== PPO with its rollouts on the device (tensor quadrotor-hover, nothing read back per step)"
for device in gpu cpu; do
  stage "device-rollout ppo $device" "$limit" "$out/ppo-tensor.txt" "$bin" --device "$device" bench sim \
    --task quadrotor-hover --algo ppo --tensor --measure-steps 1 "${device_ppo[@]}" --json
done

echo "== VLA presets on the CPU ($(nproc) cores)"
stage "vla-model cpu" "$limit" "$out/vla-model-cpu.txt" "$bin" --device cpu bench vla-model --presets "$cpu_presets" \
  --batches "$cpu_batches" --reps 3 --train --json

if [ ${#failed[@]} -gt 0 ]; then
  echo "gpu.sh: ${#failed[@]} stage(s) failed: ${failed[*]}"
  exit 1
fi
echo "gpu.sh: all stages ran"
