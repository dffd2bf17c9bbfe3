#!/usr/bin/env bash
# SAC on pendulum, 10,000 environment steps, RLtools beside embodia in one run: RLtools' own
# pendulum SAC benchmark configuration (bench/rltools/pendulum_sac.cpp against the headers of its
# PyPI wheel, g++ -O3 -Ofast -march=native, OpenBLAS with 1 thread) and `embodia train --task
# pendulum --algo sac --steps 10000` (its preset has the same batch 100 and 64x64 networks).
# Prints per seed the training seconds (RLtools: its loop, with its evaluations of 10
# deterministic episodes every 1,000 steps; embodia: `wall_seconds` of the last metrics row)
# and the mean return of the final policy's 10 deterministic episodes (RLtools' last
# evaluation; embodia's eval.json), then the medians and embodia/RLtools. RLtools also prints the
# first step at which its evaluation reached -200.
# Needs g++ and libopenblas-dev (apt-get install g++ libopenblas-dev); exits 3 without them or
# without the RLtools venv (bench/rltools_include.sh).
# Usage: bash bench/rltools_pendulum_sac.sh [SEEDS]   (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
seeds="${1:-3}"
include="$(bash bench/rltools_include.sh)" || exit 3
if ! command -v g++ >/dev/null || [ ! -e /usr/include/x86_64-linux-gnu/cblas.h ] && [ ! -e /usr/include/cblas.h ]; then
  echo "rltools_pendulum_sac: needs g++ and OpenBLAS (apt-get install g++ libopenblas-dev)" >&2
  exit 3
fi
embodia="${EMBODIA_BIN:-target/release/embodia}"
driver=target/rltools/pendulum_sac
mkdir -p target/rltools
g++ -std=c++17 -O3 -Ofast -march=native -DRL_TOOLS_BACKEND_ENABLE_OPENBLAS -I"$include" \
  bench/rltools/pendulum_sac.cpp -o "$driver" -lopenblas
runs="$(mktemp -d)"
trap 'rm -rf "$runs"' EXIT
export OPENBLAS_NUM_THREADS=1
for seed in $(seq 1 "$seeds"); do
  "$driver" "$seed" | tail -1 | tee -a "$runs/rltools.txt"
  "$embodia" train --task pendulum --algo sac --steps 10000 --seed "$seed" --quiet --run-dir "$runs/embodia-$seed" >/dev/null
  python3 - "$runs/embodia-$seed" "$seed" <<'PY' | tee -a "$runs/embodia.txt"
import csv, json, sys
run = sys.argv[1]
rows = list(csv.DictReader(open(f"{run}/metrics.csv")))
final = json.load(open(f"{run}/eval.json"))["mean_return"]
print(f"embodia seed={sys.argv[2]} steps={rows[-1]['env_steps']} train_s={float(rows[-1]['wall_seconds']):.3f} final_return={final:.1f}")
PY
done
python3 - "$runs" <<'PY'
import pathlib, re, statistics, sys
runs = pathlib.Path(sys.argv[1])
def median(name, key):
    values = [float(re.search(rf"{key}=(\S+)", l).group(1)) for l in (runs / f"{name}.txt").read_text().splitlines()]
    return statistics.median(values)
r, e = median("rltools", "train_s"), median("embodia", "train_s")
print(f"median train_s over seeds: rltools {r:.2f} s, embodia {e:.2f} s, embodia/rltools {e / r:.2f}x")
PY
