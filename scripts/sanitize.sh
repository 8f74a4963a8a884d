#!/usr/bin/env bash
# make sanitize: build the unit tests and the profiler with AddressSanitizer +
# UndefinedBehaviorSanitizer (clang) into $SAN_OUT (default build-asan/), run
# every unit test, then a few integration tests against the ASan binary
# (TB_BIN=build-asan/tachyon-bpf). Any sanitizer report fails the run: UBSan
# does not recover, LeakSanitizer is on. Ends with "sanitize: N passed, M failed".
#   scripts/sanitize.sh [INTEGRATION_FILTER ...]
set -uo pipefail
cd "$(dirname "$0")/.."

out=${SAN_OUT:-build-asan}
flags="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
filters=("$@")
[ ${#filters[@]} -eq 0 ] && filters=(test_callgraph test_threads test_sigint test_scribbler_315
				      test_exec_other_script test_fork_subprocesses
				      test_code_objects_reused)
# Two interpreters: the _Py_DebugOffsets path (3.13) and a built-in table (3.11).
export TB_TEST_PYTHONS=${TB_TEST_PYTHONS:-"3.13.0 /usr/bin/python3.11"}
units=()
for t in tests/unit/test_*.c; do
	units+=("$out/tests/$(basename "$t" .c)")
done

# CFLAGS through the environment: the Makefile's `CFLAGS +=` still adds its
# include paths and warnings (a command-line CFLAGS would replace them).
echo "sanitize: building into $out/ with $flags"
mkdir -p "$out"
if ! CFLAGS="$flags" make --no-print-directory -j"$(nproc)" OUT="$out" CC=clang \
	"$out/tachyon-bpf" "${units[@]}" >"$out/build.log" 2>&1 ||
   ! make --no-print-directory build/tests/fakepy build/tests/scribbler >>"$out/build.log" 2>&1; then
	tail -30 "$out/build.log"
	echo "sanitize: 0 passed, 1 failed"
	exit 1
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
passed=0 failed=0

# Unit tests: cmocka's own summary, plus any sanitizer report.
for t in "${units[@]}"; do
	log=$(mktemp)
	"$t" >"$log" 2>&1
	rc=$?
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
	passed=$((passed + ${p:-0}))
	failed=$((failed + ${f:-0}))
	if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$log"; then
		echo "FAIL $t: sanitizer report:"
		grep -E -A12 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$log" | head -30
		failed=$((failed + 1))
	elif [ $rc -ne 0 ] && [ -z "$f" ]; then
		echo "FAIL $t: exit $rc"
		tail -5 "$log"
		failed=$((failed + 1))
	fi
	rm -f "$log"
done
echo "sanitize: unit tests done ($passed passed, $failed failed)"

# Integration tests against the ASan binary (the targets are the usual ones).
log=$(mktemp)
TB_BIN="$out/tachyon-bpf" scripts/run-integration.sh "${filters[@]}" 2>&1 | tee "$log"
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
if [ -z "$line" ]; then
	echo "sanitize: the integration tests did not finish"
	failed=$((failed + 1))
else
	passed=$((passed + ${line%% passed*}))
	f=${line#*passed, }
	failed=$((failed + ${f%% failed*}))
fi
rm -f "$log"
echo "sanitize: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
