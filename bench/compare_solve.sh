#!/usr/bin/env bash
# Time-to-solve pendulum: embodia vs Stable-Baselines3, measured in the same run; then SAC's
# cost for 10,000 steps beside RLtools', built here from its PyPI headers
# (bench/rltools_pendulum_sac.sh, NOT RUN without g++ and OpenBLAS).
#
#   bash bench/compare_solve.sh [SEEDS]      (default 5; SB3 SAC takes ~1 min per seed)
#
# Protocol (both sides): train seed s = 1..SEEDS; deterministic evaluation of 10 episodes
# every 1,000 env steps (SAC) or after every iteration (PPO); solved when the mean return
# first reaches -200; wall time from the start of training, evaluations included. SAC runs
# twice on the SB3 side: with embodia's preset and evaluation protocol (`--matched`: the same
# networks, batch, learning rate and warm-up, the same ten start states at every evaluation, and
# the solving policy's mean return over 1,000 fresh start states), the fair ratio; and with SB3's
# defaults (256x256, batch 256, lr 3e-4, learning_starts 100, fresh start states at every
# evaluation), labelled defaults vs defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
seeds="${1:-5}"

cargo build --release --quiet
out=$(mktemp -d)
for algo in sac ppo; do
  ./target/release/embodia bench solve --task pendulum --algo "$algo" --seeds "$seeds" --json | tee "$out/embodia-$algo.txt"
  bash bench/sb3_solve.sh --algo "$algo" --seeds "$seeds" --json | tee "$out/sb3-$algo.txt"
done
bash bench/sb3_solve.sh --algo sac --matched --seeds "$seeds" --json | tee "$out/sb3-sac-matched.txt"

python3 - "$out" <<'PY'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
def last_json(path):
    return json.loads([l for l in path.read_text().splitlines() if l.startswith("{")][-1])
print("\n== time to solve pendulum (median over solved seeds) ==")
print(f"{'algo':<5} {'embodia steps':>13} {'embodia s':>10} {'sb3 steps':>10} {'sb3 s':>8} {'sb3/embodia':>12}")
for algo, sb3, label in (("sac", "sac-matched", "sac, same settings and protocol"),
                         ("sac", "sac", "sac, defaults vs defaults"),
                         ("ppo", "ppo", "ppo, zoo settings (SB3) vs preset")):
    e, s = last_json(out / f"embodia-{algo}.txt"), last_json(out / f"sb3-{sb3}.txt")
    ew, sw = e["median_wall_s"], s["median_wall_s"]
    ratio = f"{sw / ew:.1f}x" if ew and sw else "n/a"
    print(f"# {label}")
    print(f"{algo:<5} {e['median_env_steps'] or 'n/a':>13} {ew or float('nan'):>10.2f} "
          f"{s['median_env_steps'] or 'n/a':>10} {sw or float('nan'):>8.2f} {ratio:>12}"
          f"   (solved {e['solved']}/{len(e['seeds'])} vs {sum(r['solved'] for r in s['seeds'])}/{len(s['seeds'])})")
PY

echo
echo "== SAC pendulum, 10,000 steps: RLtools beside embodia =="
status=0
bash bench/rltools_pendulum_sac.sh 3 || status=$?
if [ "$status" = 3 ]; then
  echo "NOT RUN: bench/rltools_pendulum_sac.sh (needs g++, libopenblas-dev and the RLtools venv)"
elif [ "$status" != 0 ]; then
  exit "$status"
fi
