#!/usr/bin/env bash
# The Python virtual environment bench/.venv-NAME (git-ignored) with the pinned packages of
# bench/requirements-NAME.txt, made on first use and remade when that file changes; prints
# the venv's bin directory. Exits 3 when it cannot be made (no python3-venv, or no PyPI), so
# callers can report a check as not run rather than failed.
# Usage: bin="$(bash bench/venv.sh NAME)" || exit $?
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv-$1"
req="$here/requirements-$1.txt"
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$req" "$venv/.requirements"; then
  { python3 -m venv "$venv" && "$venv/bin/pip" install --quiet -r "$req"; } >&2 || exit 3
  cp "$req" "$venv/.requirements"
fi
echo "$venv/bin"
