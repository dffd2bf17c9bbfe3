#!/usr/bin/env bash
# Exported policies on an emulated Cortex-M4F: instructions per forward pass, flash, RAM and
# stack, and the actions checked against embodia's reference forward pass.
#
#   bash bench/mcu.sh [--run runs/NAME ...]      (extra flags go to `embodia bench mcu`)
#
# Needs Debian's gcc-arm-none-eabi and qemu-system-arm (apt-get install gcc-arm-none-eabi
# qemu-system-arm); the Rust rows need `rustup target add thumbv7em-none-eabihf`.
#
# Cases: a [64, 64] MLP (pendulum PPO: 3-64-64-1 ELU, observation normalization) and the
# quadrotor-hover SAC policy (26-64-64-8 ReLU, tanh-squashed rotor commands), both exported
# from freshly initialized learners of the preset configurations, fed with the task's own
# observations. QEMU counts instructions, not cycles: `µs@168MHz` is the instruction count at
# one instruction per cycle on the Crazyflie's 168 MHz STM32F405, a lower bound (a Cortex-M4
# FPU load takes 2 cycles unless pipelined, vmul/vadd 1, taken branches 2-4).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
./target/release/embodia bench mcu --rust "$@"
