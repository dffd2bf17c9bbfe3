#!/usr/bin/env bash
# ONNX export checked with Python onnxruntime (bench/.venv-onnx, git-ignored, created on first
# use): three tiny pendulum runs (PPO with ELU and an observation normalizer, PPO with tanh and
# none, SAC with its squashed head) are trained and exported with `embodia export --format
# onnx`; bench/onnx_check.py checks onnxruntime reproduces `embodia act` on 1,000 random
# observations within 1e-5.
# Usage: bash bench/onnx_check.sh   (after cargo build --release); exits 3 when the venv cannot
# be made (no python3-venv or no PyPI), 1 when a check fails.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv-onnx"
req="$here/requirements-onnx.txt"
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$req" "$venv/.requirements"; then
  { python3 -m venv "$venv" && "$venv/bin/pip" install --quiet -r "$req"; } >&2 || exit 3
  cp "$req" "$venv/.requirements"
fi
embodia="$here/../target/release/embodia"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
small_ppo=(--algo ppo --steps 256 --set algo.num_envs=4 --set algo.steps_per_env=32 --set algo.mini_batches=2
  --set algo.epochs=2 --set 'algo.hidden=[32, 24]')
check() {
  local name="$1"; shift
  "$embodia" train --task pendulum --seed 3 --quiet --run-dir "$tmp/$name" "$@" >/dev/null
  "$embodia" export --run "$tmp/$name" --format onnx --out "$tmp/$name-onnx" >/dev/null
  if "$venv/bin/python" "$here/onnx_check.py" "$embodia" "$name" "$tmp/$name" "$tmp/$name-onnx/model.onnx"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
}
passed=0 failed=0
check ppo-elu-normalized "${small_ppo[@]}" --set algo.activation=\"elu\" --set algo.normalize_obs=true
check ppo-tanh "${small_ppo[@]}" --set algo.activation=\"tanh\" --set algo.normalize_obs=false
check sac --algo sac --steps 200 --set algo.num_envs=1 --set algo.batch_size=32 --set algo.buffer_size=1000 \
  --set algo.learning_starts=50 --set algo.steps_per_iteration=100 --set 'algo.hidden=[32, 32]'
echo "onnx_check: $passed passed, $failed failed"
[ "$failed" = 0 ]
