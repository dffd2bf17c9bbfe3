#!/usr/bin/env bash
# ONNX export checked with Python onnxruntime (bench/.venv-onnx, git-ignored, created on first
# use): three tiny pendulum runs (PPO with ELU and an observation normalizer, PPO with tanh and
# none, SAC with its squashed head) and a one-step student distilled from a tiny reach SFT run
# (action chunks, relative joint targets) are trained and exported with `embodia export --format
# onnx`; bench/onnx_check.py checks onnxruntime reproduces `embodia act` on 1,000 random
# observations within 1e-5.
# Usage: bash bench/onnx_check.sh   (after cargo build --release); exits 3 when the venv cannot
# be made (no python3-venv or no PyPI), 1 when a check fails.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="$(bash "$here/venv.sh" onnx)" || exit $?
embodia="$here/../target/release/embodia"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
small_ppo=(--algo ppo --steps 256 --set algo.num_envs=4 --set algo.steps_per_env=32 --set algo.mini_batches=2
  --set algo.epochs=2 --set 'algo.hidden=[32, 24]')
# Exports the run $tmp/NAME and checks it.
check() {
  local name="$1"
  "$embodia" export --run "$tmp/$name" --format onnx --out "$tmp/$name-onnx" >/dev/null
  if "$bin/python" "$here/onnx_check.py" "$embodia" "$name" "$tmp/$name" "$tmp/$name-onnx/model.onnx"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
}
train() {
  local name="$1"; shift
  "$embodia" train --seed 3 --quiet --run-dir "$tmp/$name" "$@" >/dev/null
}
passed=0 failed=0
train ppo-elu-normalized --task pendulum "${small_ppo[@]}" --set algo.activation=\"elu\" --set algo.normalize_obs=true
check ppo-elu-normalized
train ppo-tanh --task pendulum "${small_ppo[@]}" --set algo.activation=\"tanh\" --set algo.normalize_obs=false
check ppo-tanh
train sac --task pendulum --algo sac --steps 200 --set algo.num_envs=1 --set algo.batch_size=32 --set algo.buffer_size=1000 \
  --set algo.learning_starts=50 --set algo.steps_per_iteration=100 --set 'algo.hidden=[32, 32]'
check sac
# A one-step student of a tiny reach SFT teacher: a chunk of 4 actions per row, joint targets
# relative to the observed joint positions.
train sft --task reach --algo sft --steps 40 --set algo.num_envs=2 --set algo.demos=2 --set algo.batch_size=32 \
  --set algo.updates_per_iteration=20 --set algo.warmup_steps=5 --set algo.decay_steps=40 \
  --set algo.policy.denoise_steps=3 --set algo.policy.width=16 --set 'algo.policy.hidden=[32, 16]'
"$embodia" distill --run "$tmp/sft" --out "$tmp/student" --steps 40 --quiet --eval-episodes 2 --eval-seeds 1 \
  --latency-calls 10 --set algo.num_envs=2 --set algo.chunk_steps=5 --set algo.batch_size=32 \
  --set algo.updates_per_iteration=20 --set algo.warmup_steps=5 --set 'algo.student.hidden=[32, 24]' >/dev/null
check student
echo "onnx_check: $passed passed, $failed failed"
[ "$failed" = 0 ]
