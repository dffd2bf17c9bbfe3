#!/usr/bin/env bash
# Which crates of the test build (`--features gpu,mpi`, as CI builds it) `--features rerun,gpu,mpi` (or
# the features given) would build a second time, because the feature's dependencies turn on features in crates they share with
# the rest of embodia. Prints the crates at the root of each rebuilt chain; add their extra
# features to the pins in Cargo.toml (`[dependencies]`, or `[build-dependencies]` for a build
# script or proc-macro). Reads cargo's unit graph (a nightly flag, enabled here on stable
# through RUSTC_BOOTSTRAP); builds nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
features="${1:-rerun,gpu,mpi}"
base_features="${EMBODIA_BASE_FEATURES-gpu,mpi}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
graph() { RUSTC_BOOTSTRAP=1 cargo "$@" --unit-graph -Z unstable-options --release; }
graph build --workspace --features "$base_features" > "$dir/base.json"
graph test --no-run --workspace --features "$base_features" > "$dir/test.json"
if [ "$features" = python ]; then graph build -p embodia-py --features mpi > "$dir/feature.json"; else graph build --features "$features" > "$dir/feature.json"; fi
python3 - "$dir" <<'PY'
import json, sys
def load(path):
    return json.load(open(path))["units"]
intern = {}
def keys(units):
    # A unit's identity: package, target, mode, features and its dependencies' identities, as a
    # small integer (nested tuples would be rehashed once per path through the graph).
    memo = {}
    def key(i):
        if i not in memo:
            u = units[i]
            deps = tuple(sorted(key(d["index"]) for d in u["dependencies"]))
            k = (u["pkg_id"], u["target"]["name"], u["mode"], tuple(sorted(u["features"])), deps)
            memo[i] = intern.setdefault(k, len(intern))
        return memo[i]
    return [key(i) for i in range(len(units))]
d = sys.argv[1]
base, packages = set(), set()
for name in ("base", "test"):
    units = load(f"{d}/{name}.json")
    base.update(keys(units))
    packages.update(u["pkg_id"] for u in units)
units = load(f"{d}/feature.json")
rebuilt = {i for i, k in enumerate(keys(units)) if k not in base}
shared = {i for i in rebuilt if units[i]["pkg_id"] in packages}
name = lambda u: u["pkg_id"].split("#")[-1]
print(f"{len(rebuilt)} units to build, {len(shared)} of them of crates the default build has:")
for i in sorted(shared, key=lambda i: name(units[i])):
    u = units[i]
    root = not any(dep["index"] in rebuilt for dep in u["dependencies"])
    print(f"  {name(u)} {u['target']['name']} [{','.join(u['features'])}]{'  <- root' if root else ''}")
PY
