#!/usr/bin/env bash
# Checks a dataset written by `embodia record` with pyarrow, pandas and HF datasets, the way
# LeRobot v3.0 loads one (bench/dataset_check.py). The venv bench/.venv-data (git-ignored) is
# created on first use.
# Usage: bash bench/dataset_check.sh data/pick-cube-50
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv-data"
req="$here/requirements-data.txt"
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$req" "$venv/.requirements"; then
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet -r "$req" >&2
  cp "$req" "$venv/.requirements"
fi
exec "$venv/bin/python" "$here/dataset_check.py" "$@"
