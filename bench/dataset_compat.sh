#!/usr/bin/env bash
# LeRobot compatibility of embodia's datasets, both ways, with pyarrow, pandas and HF datasets
# (what LeRobot v3.0 loads with) in bench/.venv-data (git-ignored, created on first use):
#   1. `embodia record` writes a pick-cube dataset; bench/dataset_check.py checks it as LeRobot
#      would load it (schema vs info.json, task table, episode table, stats).
#   2. bench/lerobot_like.py writes a dataset the way LeRobot's writer does; `embodia dataset
#      info` reads it.
# Usage: bash bench/dataset_compat.sh   (after cargo build --release); exits 3 when the venv
# cannot be made (no python3-venv or no PyPI), 1 when a check fails.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="$(bash "$here/venv.sh" data)" || exit $?
embodia="$here/../target/release/embodia"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export HF_DATASETS_CACHE="$tmp/hf"
"$embodia" record --task pick-cube --episodes 4 --envs 2 --out "$tmp/ours"
"$bin/python" "$here/dataset_check.py" "$tmp/ours"
"$bin/python" "$here/lerobot_like.py" "$tmp/lerobot" 2>/dev/null
"$embodia" dataset info "$tmp/lerobot"
