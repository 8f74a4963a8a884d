#!/usr/bin/env bash
# Run the libFuzzer targets of tests/fuzz/ (built by `make fuzz-build`).
#   scripts/run-fuzz.sh [SECONDS] [TARGET ...]
# For each target: first every committed input (tests/fuzz/regressions/TARGET/
# and tests/fuzz/corpus/TARGET/) once, then SECONDS of fuzzing (default 10;
# 0 = regressions and seeds only) starting from the seeds, in a scratch
# corpus under $FUZZ_OUT/corpus/ so the committed one stays small.
# One line per target, then "fuzz: N passed, M failed". A crash leaves its
# input in $FUZZ_OUT/crashes/: add it to tests/fuzz/regressions/TARGET/.
set -uo pipefail
cd "$(dirname "$0")/.."

secs=${1:-10}
shift || true
out=${FUZZ_OUT:-build-fuzz}
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(pyelf layout linetable pystr output pyobj cfi tby)

passed=0 failed=0
mkdir -p "$out/crashes" "$out/logs"
for t in "${targets[@]}"; do
	bin=$out/fuzz_$t
	log=$out/logs/$t.log
	if [ ! -x "$bin" ]; then
		echo "FAIL fuzz_$t: $bin not built (run make fuzz-build)"
		failed=$((failed + 1))
		continue
	fi
	inputs=()
	for d in tests/fuzz/regressions/$t tests/fuzz/corpus/$t; do
		[ -d "$d" ] && inputs+=("$d"/*)
	done
	# Known inputs, each once: a fixed bug must stay fixed.
	if [ ${#inputs[@]} -gt 0 ] && ! "$bin" -runs=1 "${inputs[@]}" >"$log" 2>&1; then
		bad=$(sed -n 's/^Running: //p' "$log" | tail -1)
		echo "FAIL fuzz_$t: committed input ${bad:-?} fails: $(grep -m1 -E 'property failed|ERROR: AddressSanitizer|runtime error|ERROR: LeakSanitizer|ERROR: libFuzzer' "$log")"
		echo "     (log: $log)"
		failed=$((failed + 1))
		continue
	fi
	if [ "$secs" -eq 0 ]; then
		echo "ok fuzz_$t: ${#inputs[@]} committed inputs"
		passed=$((passed + 1))
		continue
	fi
	corpus=$out/corpus/$t
	mkdir -p "$corpus"
	"$bin" -max_total_time="$secs" -timeout=20 -rss_limit_mb=3072 -print_final_stats=1 \
		-artifact_prefix="$out/crashes/$t-" "$corpus" "tests/fuzz/corpus/$t" >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	if [ $rc -eq 0 ]; then
		echo "ok fuzz_$t: ${runs:-?} runs in ${secs}s, ${#inputs[@]} committed inputs"
		passed=$((passed + 1))
	else
		art=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
		echo "FAIL fuzz_$t: $(grep -m1 -E 'property failed|ERROR: AddressSanitizer|runtime error|ERROR: LeakSanitizer|ERROR: libFuzzer' "$log")"
		echo "     input: ${art:-?} (copy it to tests/fuzz/regressions/$t/); log: $log"
		failed=$((failed + 1))
	fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
