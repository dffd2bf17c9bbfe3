#!/usr/bin/env bash
# The rerun viewer and CLI (`rerun-sdk`, pinned to the SDK version embodia builds with) in
# bench/.venv-rerun (git-ignored), created on first use; prints the venv's bin directory.
# Usage: bash bench/rerun_venv.sh            # then: "$(bash bench/rerun_venv.sh)/rerun" runs/x/episodes.rrd
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="$(bash "$here/venv.sh" rerun)" || exit $?
"$bin/rerun" analytics disable >/dev/null 2>&1 || true
echo "$bin"
