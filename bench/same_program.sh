#!/usr/bin/env bash
# Is it the same program? Runs a CI-sized training of every algorithm with fixed seeds and prints
# one digest per run: metrics.csv without its wall-time and speed columns, the checkpoint's
# tensors and state, and eval.json. A behaviour-preserving refactor leaves every digest equal:
#
#   EMBODIA_BIN=/tmp/embodia-before bash bench/same_program.sh > before.txt
#   EMBODIA_BIN=target/release/embodia bash bench/same_program.sh > after.txt
#   diff before.txt after.txt
#
# Usage: bench/same_program.sh [WORK_DIR]   (default: a fresh temporary directory, removed at the end)
set -euo pipefail
BIN="$(realpath "${EMBODIA_BIN:-target/release/embodia}")"
work="${1:-$(mktemp -d /tmp/embodia-same-program.XXXXXX)}"
[ -n "${1:-}" ] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work" && cd "$work"

# metrics.csv minus the columns that measure time (wall_seconds, fps), eval.json, and the
# checkpoint: its tensors byte for byte and state.json without its wall time. (checksums.json is
# derived from the other two.)
digest() {
  local run="$1"
  {
    python3 - "$run" <<'PY'
import csv, json, sys, pathlib
run = pathlib.Path(sys.argv[1])
timing = lambda c: c in ("wall_seconds", "fps") or c.endswith("_seconds")
with open(run / "metrics.csv") as f:
    rows = list(csv.reader(f))
keep = [i for i, c in enumerate(rows[0]) if not timing(c)]
for r in rows:
    print(",".join(r[i] for i in keep if i < len(r)))
if (run / "eval.json").exists():
    print(json.dumps(json.load(open(run / "eval.json")), sort_keys=True))
state = json.load(open(run / "checkpoint" / "state.json"))
print(json.dumps({k: v for k, v in state.items() if not timing(k)}, sort_keys=True))
PY
    sha256sum < "$run/checkpoint/tensors.safetensors"
  } | sha256sum | cut -c1-16
}

run() {
  local name="$1"; shift
  "$BIN" "$@" --quiet > "$name.log" 2>&1 || { echo "$name: FAILED"; tail -5 "$name.log"; return 0; }
  echo "$name: $(digest "$name")"
}

small=(--set algo.policy.width=32 --set "algo.policy.hidden=[32]" --seed 4)
run ppo train --task pendulum --algo ppo --steps 8192 --seed 3 --set eval_episodes=2 --run-dir ppo
run sac train --task pendulum --algo sac --steps 1500 --seed 3 --set eval_episodes=2 --set algo.learning_starts=500 --run-dir sac
sft=(train --task reach --algo sft --demos 4 --steps 20 --set algo.updates_per_iteration=10 --set algo.num_envs=2 --set eval_episodes=1)
run sft "${sft[@]}" --set algo.model=flow "${small[@]}" --run-dir sft
run dsft "${sft[@]}" --set algo.model=diffusion "${small[@]}" --run-dir dsft
for algo in ppo-flow-sde ppo-flow-noise; do
  run "$algo" train --task reach --algo "$algo" --init sft --steps 200 --set algo.num_envs=4 --set algo.chunk_steps=50 \
    --set eval_episodes=1 --run-dir "$algo"
done
run ppo-flow-sde-grpo train --task reach --algo ppo-flow-sde --init sft --steps 200 --set algo.num_envs=4 \
  --set algo.chunk_steps=50 --set algo.group_size=2 --set algo.advantage=grpo --set eval_episodes=1 --run-dir ppo-flow-sde-grpo
run ppo-flow-sde-alongside train --task reach --algo ppo-flow-sde --init sft --steps 200 --set algo.num_envs=4 \
  --set algo.chunk_steps=50 --set eval_episodes=1 --distill-during-rl --run-dir ppo-flow-sde-alongside
run dppo train --task reach --algo dppo --init dsft --steps 200 --set algo.num_envs=4 --set algo.chunk_steps=25 \
  --set algo.critic_warmup_iterations=1 --set algo.update_epochs=1 --set eval_episodes=1 --run-dir dppo
run distill distill --run sft --steps 10 --eval-episodes 1 --eval-seeds 1 --latency-calls 5 --set algo.num_envs=2 \
  --set algo.chunk_steps=5 --set algo.batch_size=32 --set algo.updates_per_iteration=5 --set algo.warmup_steps=2 \
  --set "algo.student.hidden=[32]" --set eval_episodes=1 --out distill
vla=(--set algo.model.vision.width=32 --set algo.model.vision.depth=1 --set algo.model.backbone_width=32
     --set algo.model.backbone_depth=1 --set algo.model.expert_depth=1 --set eval_episodes=1)
run vla-sft train --task lang-cubes --algo vla-sft --demos 2 --steps 4 --set algo.updates_per_iteration=4 \
  --set algo.num_envs=2 --seed 4 "${vla[@]}" --run-dir vla-sft
run vla-ppo-flow-sde train --task lang-cubes --algo vla-ppo-flow-sde --init vla-sft --steps 100 --set algo.num_envs=4 \
  --set algo.group_size=2 --set eval_episodes=1 --set algo.advantage=gae --run-dir vla-ppo-flow-sde
run vla-ppo-flow-noise train --task lang-cubes --algo vla-ppo-flow-noise --init vla-sft --steps 100 --set algo.num_envs=4 \
  --set algo.group_size=2 --set eval_episodes=1 --run-dir vla-ppo-flow-noise
run vla-dsrl train --task lang-cubes --algo vla-dsrl --init vla-sft --steps 64 --set algo.num_envs=4 --set eval_episodes=1 \
  --set algo.random_iterations=1 --set algo.updates_per_iteration=8 --set algo.batch_size=32 --run-dir vla-dsrl
