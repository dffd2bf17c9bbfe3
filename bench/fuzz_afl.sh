#!/usr/bin/env bash
# Coverage-guided fuzzing with AFL++ (through cargo-afl, on the stable toolchain) of the parsers
# whose crates are light enough to instrument: URDF, MJCF, embodia's and LeRobot's calibration
# files, and servo-bus requests read by the emulator (harnesses in fuzz/afl/src/bin/). Each
# target starts from `embodia bench fuzz --write-seeds` (the seed corpus of the seeded-mutation
# campaign) and runs for SECONDS; an input over 1 s is a hang. Prints one line per target from
# AFL's fuzzer_stats (executions, corpus, edges covered, crashes, hangs) and exits 1 on any
# crash or hang (their inputs stay under OUT/<target>/default/{crashes,hangs}/).
#
#   bash bench/fuzz_afl.sh [SECONDS] [TARGET...]     # default: 60 s each, every target
#
# Needs cargo-afl (`cargo install cargo-afl`, which builds AFL++ for the toolchain); exits 3
# without it. OUT (default target/afl/campaign-<date>) must not exist.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(urdf mjcf calibration lerobot-calibration servo-requests)
if ! cargo afl --version >/dev/null 2>&1; then
  echo "fuzz_afl.sh: needs cargo-afl (cargo install cargo-afl)" >&2
  exit 3
fi
bin="${EMBODIA_BIN:-target/release/embodia}"
out="${OUT:-target/afl/campaign-$(date +%Y%m%d-%H%M%S)}"
if [ -e "$out" ]; then
  echo "fuzz_afl.sh: OUT=$out exists already; name a new directory" >&2
  exit 2
fi
mkdir -p "$(dirname "$out")"
"$bin" bench fuzz --targets "$(IFS=,; echo "${targets[*]}")" --write-seeds "$out/seeds" >/dev/null
(cd fuzz/afl && cargo afl build --release --quiet --target-dir ../../target/afl)
export AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_UI=1
status=0
for t in "${targets[@]}"; do
  cargo afl fuzz -V "$secs" -t 1000 -i "$out/seeds/$t" -o "$out/$t" "target/afl/release/${t//-/_}" >"$out/$t.log" 2>&1 || {
    tail -20 "$out/$t.log" >&2
    echo "fuzz_afl.sh: AFL++ failed on $t (log: $out/$t.log)" >&2
    exit 1
  }
  stat() { awk -F' *: *' -v k="$1" '$1 == k { print $2 }' "$out/$t/default/fuzzer_stats"; }
  printf '%-20s %10s execs in %s s, corpus %s, edges %s, %s crashes, %s hangs\n' "$t" "$(stat execs_done)" \
    "$(stat run_time)" "$(stat corpus_count)" "$(stat bitmap_cvg)" "$(stat saved_crashes)" "$(stat saved_hangs)"
  if [ "$(stat saved_crashes)" != 0 ] || [ "$(stat saved_hangs)" != 0 ]; then status=1; fi
done
exit $status
