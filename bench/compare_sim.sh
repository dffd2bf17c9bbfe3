#!/usr/bin/env bash
# Simulation throughput: embodia's rapier ant-run vs MuJoCo's gymnasium Ant-v5, random
# actions, measured back to back in the same run.
#
#   bash bench/compare_sim.sh [STEPS]      (default 50000 env steps per measurement)
#
# Both sides step the same robot (assets/robots/ant.urdf reproduces ant.xml: geometry, masses,
# armature 1, damping 1, gear 150, 5 physics steps of 0.01 s per env step) with uniform random
# actions, resets included. MuJoCo runs single-process on one core; embodia runs 64 worlds on
# 1 and on 2 threads, with exact (reduced-coordinate, the task's default) and with impulse
# joints. The ratio is embodia env-steps/s per thread over MuJoCo's.
# Also prints quadruped-velocity and reach throughput for the record.
set -euo pipefail
cd "$(dirname "$0")/.."
steps="${1:-50000}"
cargo build --release --quiet
out=$(mktemp -d)
./target/release/embodia bench sim --task ant-run --envs 64 --threads 1,2 --measure-steps "$steps" --json | tee "$out/embodia.txt"
./target/release/embodia bench sim --task ant-run --envs 64 --threads 1,2 --measure-steps "$steps" --json \
  --set env.scene.joint_model=impulse | tee "$out/embodia-impulse.txt"
bash bench/mujoco_peer.sh --steps "$steps" --json | tee "$out/mujoco.txt"
for task in quadruped-velocity reach pick-cube; do
  ./target/release/embodia bench sim --task "$task" --envs 64 --threads 1,2 --measure-steps "$steps"
done
python3 - "$out" <<'PY'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
def last_json(path):
    return json.loads([l for l in path.read_text().splitlines() if l.startswith("{")][-1])
mj = last_json(out / "mujoco.txt")
peer = mj["env_steps_per_s"]
for model in ["reduced", "impulse"]:
    emb = last_json(out / ("embodia.txt" if model == "reduced" else "embodia-impulse.txt"))
    for r in emb["results"]:
        per_thread = r["steps_per_s"] / r["threads"]
        print(f"ant ({model} joints): embodia {r['envs']} envs x {r['threads']} threads {r['steps_per_s']:.0f} "
              f"env-steps/s ({per_thread:.0f} per thread) vs MuJoCo Ant-v5 {peer:.0f} on one core: "
              f"{per_thread / peer:.2f}x per core")
PY
