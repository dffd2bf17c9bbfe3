#!/usr/bin/env bash
# Exported policies on an emulated Cortex-M4F: instructions per forward pass, flash, RAM and
# stack, and the actions checked against embodia's reference forward pass.
#
#   bash bench/mcu.sh [--run runs/NAME ...]      (extra flags go to `embodia bench mcu`)
#
# Needs Debian's gcc-arm-none-eabi and qemu-system-arm (apt-get install gcc-arm-none-eabi
# qemu-system-arm); the Rust rows need `rustup target add thumbv7em-none-eabihf`, the RLtools
# rows its headers (bench/rltools_include.sh fetches the PyPI wheel) and Debian's
# libstdc++-arm-none-eabi-newlib.
#
# Cases: a [64, 64] MLP (pendulum PPO: 3-64-64-1 ELU, observation normalization; and the same
# with ReLU) and the quadrotor-hover SAC policy (26-64-64-8 ReLU, tanh-squashed rotor commands),
# exported from freshly initialized learners of the preset configurations, fed with the task's
# own observations. QEMU counts instructions, not cycles: the cycles are estimated from the
# Cortex-M4 manual's instruction timings (deploy/src/mcu/cycles.rs), without flash wait states.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
# RLtools' ARM dense layers on the same policies, when its headers can be had from PyPI.
if RLTOOLS_INCLUDE="$(bash bench/rltools_include.sh)"; then
  export RLTOOLS_INCLUDE
  set -- --rltools "$@"
fi
./target/release/embodia bench mcu --rust "$@"
