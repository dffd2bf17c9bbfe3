#!/usr/bin/env bash
# Prints RLtools' C++ include directory (the one holding rl_tools/) from the PyPI wheel in the
# venv bench/.venv-rltools, made on first use. Exits 3 when it cannot be made (no python3-venv,
# or no PyPI). Usage: export RLTOOLS_INCLUDE="$(bash bench/rltools_include.sh)"
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="$(bash "$here/venv.sh" rltools)" || exit $?
include="$("$bin/python" -c 'import os, rltools; print(os.path.join(os.path.dirname(rltools.__file__), "external", "rl_tools", "include"))')" || exit 3
[ -f "$include/rl_tools/nn/layers/dense/operations_arm/opt.h" ] || { echo "no RLtools headers in $include" >&2; exit 3; }
echo "$include"
