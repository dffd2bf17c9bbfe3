#!/usr/bin/env bash
# Flow-policy RL from few-shot clones (no DAgger), every evaluation mode, 3 seeds, 200 episodes:
# the study behind docs/results/flow-rl.md's "few-shot" tables. One `bench flow` per task,
# algorithm and seed, one after another (a 2-core machine: a second run would share the cores).
#
#   bash bench/flow_rl_study.sh [OUT_DIR] [CASE...]
#
# CASE is TASK:ALGO, TASK:ALGO:dense or TASK:ALGO:sparse (default: every case below): the preset's
# reward, the task's dense reward (`algo.reward = "task"`, still GRPO) or the sparse success
# reward (`algo.reward = "success"`).
# Each run prints its `task=… S0=… S1=…` line into OUT_DIR/<case>.log and writes its runs under
# OUT_DIR/<case>/. RL_STEPS replaces the recipe's flow-RL env steps.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${EMBODIA_BIN:-target/release/embodia}"
out="${1:-runs/flow-rl-study}"
shift || true
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(pick-cube:ppo-flow-sde:dense pick-cube:ppo-flow-noise:dense pick-cube-ee:ppo-flow-sde:dense pick-cube-ee:ppo-flow-noise:dense)
seeds="${SEEDS:-1 2 3}"
mkdir -p "$out"
for case in "${cases[@]}"; do
  IFS=: read -r task algo reward <<<"$case"
  case "$task" in
    # 20 demonstrations, 6,000 SFT steps, no DAgger; 900k env steps of the pick-cube preset.
    pick-cube) recipe=(--demos 20 --sft-steps 6000 --rl-steps "${RL_STEPS:-900000}") ;;
    # 10 demonstrations, 6,000 SFT steps, no DAgger, binary gripper; 900k env steps.
    pick-cube-ee) recipe=(--demos 10 --sft-steps 6000 --rl-steps "${RL_STEPS:-900000}" --set env.action.gripper.binary=true) ;;
    *) echo "flow_rl_study.sh: no recipe for task $task (allowed: pick-cube, pick-cube-ee)" >&2; exit 2 ;;
  esac
  case "$reward" in
    "") ;;
    dense) recipe+=(--set 'algo.reward="task"') ;;
    sparse) recipe+=(--set 'algo.reward="success"') ;;
    *) echo "flow_rl_study.sh: case $case: allowed suffixes are :dense and :sparse" >&2; exit 2 ;;
  esac
  name="$task-$algo${reward:+-$reward}"
  for seed in $seeds; do
    "$bin" bench flow --tasks "$task" --algo "$algo" --seed "$seed" --eval-episodes "${EPISODES:-200}" \
      "${recipe[@]}" --out "$out/$name" 2>>"$out/$name.err" | tee -a "$out/$name.log"
  done
done
