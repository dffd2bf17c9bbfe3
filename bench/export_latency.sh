#!/usr/bin/env bash
# Batch-1 inference latency of an exported [17, 256, 256, 6] MLP policy, all in one run:
# `embodia bench export-latency` (embodia's forward pass, and the model.onnx it writes in tract
# and in onnxruntime through ort where compiled in), then bench/export_latency.py on the same
# model.onnx (Python onnxruntime and PyTorch, one thread each) and one table with the ratios.
# Creates bench/.venv-latency (git-ignored; torch, onnxruntime, onnx) on first use; the Rust ort
# row loads the venv's libonnxruntime.
# Usage: cargo build --release --features tract,ort && bash bench/export_latency.sh [--calls N]
#        [--layers 17,256,256,6]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="$(bash "$here/venv.sh" latency)" || exit $?
venv="$(dirname "$bin")"
# One thread everywhere, and no OpenMP busy-waiting (it slows everything beside it).
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
ORT_DYLIB_PATH="$(ls "$venv"/lib/python3*/site-packages/onnxruntime/capi/libonnxruntime.so.* | head -1)"
export ORT_DYLIB_PATH
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$here/../target/release/embodia" bench export-latency --out "$tmp/model" --json "$@" > "$tmp/embodia.json"
"$bin/python" "$here/export_latency.py" "$tmp/model/model.onnx" "$tmp/embodia.json"
