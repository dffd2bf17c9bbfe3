#!/usr/bin/env bash
# The Python package (python/): builds its wheel with maturin from the workspace's release
# build (same profile and features, so on top of `cargo test --release --workspace --features
# gpu` only pyo3, numpy and the module are compiled), installs it into bench/.venv-python
# (bench/requirements-python.txt) and runs python/tests with pytest; with --figures, also
# bench/python_throughput.py. Needs target/release/embodia (EMBODIA_BIN) for the checks
# against the CLI. Exits 3 when the venv cannot be made (no python3-venv or no PyPI).
# Usage: bash bench/python_package.sh [--figures] [pytest arguments]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="$(bash "$here/venv.sh" python)" || exit $?
cd "$here/.."
figures=0
if [ "${1:-}" = --figures ]; then figures=1; shift; fi
rm -f target/wheels/embodia-*.whl
# EMBODIA_PY_FEATURES=mpi where the workspace was built with `--features gpu,mpi` (as CI does):
# the wheel then reuses that build of the embodia crate.
"$bin/maturin" build --release --manifest-path python/Cargo.toml --out target/wheels --interpreter "$bin/python" \
  ${EMBODIA_PY_FEATURES:+--features "$EMBODIA_PY_FEATURES"}
"$bin/pip" install --quiet --force-reinstall --no-deps target/wheels/embodia-*.whl
export EMBODIA_BIN="${EMBODIA_BIN:-$PWD/target/release/embodia}"
# OpenMP busy-waiting slows torch's small matmuls on 2 cores (see bench/sb3_solve.sh).
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
# From the repository root, so that `import embodia` finds the installed package and not
# python/embodia (which lacks the compiled module).
"$bin/python" -m pytest -q -p no:cacheprovider python/tests "$@"
if [ "$figures" = 1 ]; then
  "$bin/python" bench/python_throughput.py
fi
