#!/usr/bin/env bash
# How faithfully embodia's rapier ant follows MuJoCo's Ant-v5, per rapier solver iteration count.
#
#   bash bench/ant_fidelity.sh [ITERATIONS]     (default 1,2,3,4,8,16)
#
# Runs open-loop action sequences (zero, gentle and strong 1 Hz sines) from the same initial
# state in embodia (`sim/examples/ant_trajectory.rs`, one run per solver iteration count) and in
# gymnasium's Ant-v5 (bench/ant_fidelity.py, venv bench/.venv-mujoco), and prints the RMS and
# final differences in torso height, torso position and joint angles over 3 s.
set -euo pipefail
cd "$(dirname "$0")/.."
iterations="${1:-1,2,3,4,8,16}"
cargo build --release --quiet -p embodia-sim --example ant_trajectory
bin="$(bash bench/venv.sh mujoco)" || exit $?
./target/release/examples/ant_trajectory "$iterations" | "$bin/python" bench/ant_fidelity.py
