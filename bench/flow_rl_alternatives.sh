#!/usr/bin/env bash
# What flow RL is worth against the alternatives, on the recipes of bench/flow_rl_study.sh:
# SFT on 5x the demonstrations, SFT with DAgger, and Gaussian PPO from scratch for the same env
# steps as flow RL. Each policy is evaluated on the same 200 episodes in every mode it has.
#
#   bash bench/flow_rl_alternatives.sh [OUT_DIR] [TASK...]
#
# Prints one line per run and mode (`alt task=… run=… mode=… success=…`) into OUT_DIR/alternatives.log.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${EMBODIA_BIN:-target/release/embodia}"
out="${1:-runs/flow-rl-study}"
shift || true
tasks=("$@")
[ ${#tasks[@]} -gt 0 ] || tasks=(pick-cube pick-cube-ee)
seeds="${SEEDS:-1 2 3}"
episodes="${EPISODES:-200}"
mkdir -p "$out/alternatives"
evaluate() { # RUN TASK NAME MODES...
  local run="$1" task="$2" name="$3"; shift 3
  for mode in "$@"; do
    local s
    s=$("$bin" eval --run "$run" --episodes "$episodes" --mode "$mode" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["success_rate"])')
    echo "alt task=$task run=$name mode=$mode success=$s" | tee -a "$out/alternatives.log"
  done
}
for task in "${tasks[@]}"; do
  case "$task" in
    pick-cube) demos=20 env=() rl_steps=900000 ;;
    pick-cube-ee) demos=10 env=(--set env.action.gripper.binary=true) rl_steps=900000 ;;
    *) echo "flow_rl_alternatives.sh: no recipe for task $task (allowed: pick-cube, pick-cube-ee)" >&2; exit 2 ;;
  esac
  for seed in $seeds; do
    dir="$out/alternatives/$task-seed$seed"
    sft=(train --task "$task" --algo sft --steps 6000 --seed "$seed" --set algo.decay_steps=6000 --quiet "${env[@]}")
    "$bin" "${sft[@]}" --demos $((5 * demos)) --run-dir "$dir/sft-5x-demos" 2>>"$out/alternatives.err"
    evaluate "$dir/sft-5x-demos" "$task" "sft-$((5 * demos))-demos-seed$seed" sampled zero fixed-draw
    "$bin" "${sft[@]}" --demos "$demos" --set algo.dagger_episodes=20 --run-dir "$dir/sft-dagger" 2>>"$out/alternatives.err"
    evaluate "$dir/sft-dagger" "$task" "sft-dagger-seed$seed" sampled zero fixed-draw
    "$bin" train --task "$task" --algo ppo --steps "$rl_steps" --seed "$seed" --quiet "${env[@]}" \
      --run-dir "$dir/ppo" 2>>"$out/alternatives.err"
    evaluate "$dir/ppo" "$task" "ppo-seed$seed" zero sampled
  done
done
