#!/usr/bin/env bash
# The rerun viewer and CLI (`rerun-sdk`, pinned to the SDK version embodia builds with) in
# bench/.venv-rerun (git-ignored), created on first use; prints the venv's bin directory.
# Usage: bash bench/rerun_venv.sh            # then: "$(bash bench/rerun_venv.sh)/rerun" runs/x/episodes.rrd
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv-rerun"
req="$here/requirements-rerun.txt"
if [ ! -x "$venv/bin/rerun" ] || ! cmp -s "$req" "$venv/.requirements"; then
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet -r "$req" >&2
  "$venv/bin/rerun" analytics disable >/dev/null 2>&1 || true
  cp "$req" "$venv/.requirements"
fi
echo "$venv/bin"
