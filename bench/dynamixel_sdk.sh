#!/usr/bin/env bash
# Robotis' official Python SDK against `embodia servo-emulator --robot koch` (Dynamixel
# protocol 2.0) on a pseudo-terminal (bench/dynamixel_sdk.py), in bench/.venv-dynamixel
# (git-ignored, made on first use). Usage: bash bench/dynamixel_sdk.sh   (after cargo build
# --release); exits 3 when the venv cannot be made (no python3-venv or no PyPI), 1 when a check
# fails.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="$(bash "$here/venv.sh" dynamixel)" || exit $?
out="$(mktemp)"
"$here/../target/release/embodia" servo-emulator --robot koch > "$out" &
emulator=$!
trap 'kill "$emulator" 2>/dev/null; rm -f "$out"' EXIT
for _ in $(seq 50); do [ -s "$out" ] && break; sleep 0.1; done
"$bin/python" "$here/dynamixel_sdk.py" "$(head -1 "$out")"
