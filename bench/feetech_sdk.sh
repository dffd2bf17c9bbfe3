#!/usr/bin/env bash
# Feetech's official Python SDK against `embodia servo-emulator --robot so101` on a
# pseudo-terminal (bench/feetech_sdk.py), in bench/.venv-feetech (git-ignored, made on first
# use). Usage: bash bench/feetech_sdk.sh   (after cargo build --release); exits 3 when the venv
# cannot be made (no python3-venv or no PyPI), 1 when a check fails.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="$(bash "$here/venv.sh" feetech)" || exit $?
out="$(mktemp)"
"$here/../target/release/embodia" servo-emulator --robot so101 > "$out" &
emulator=$!
trap 'kill "$emulator" 2>/dev/null; rm -f "$out"' EXIT
for _ in $(seq 50); do [ -s "$out" ] && break; sleep 0.1; done
"$bin/python" "$here/feetech_sdk.py" "$(head -1 "$out")"
