#!/usr/bin/env bash
# Runs every test: the cmocka unit tests given as arguments, then the
# integration suite (real BPF, real interpreters). Ends with one line
# "N passed, M failed" over both, and fails if anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."

passed=0 failed=0
for t in "$@"; do
	out=$("$t" 2>&1); rc=$?
	printf '%s\n' "$out"
	p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
	f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
	passed=$((passed + ${p:-0}))
	failed=$((failed + ${f:-0}))
	# A crash or a non-zero exit without a cmocka summary still counts.
	if [ $rc -ne 0 ] && [ -z "$f" ]; then failed=$((failed + 1)); echo "FAIL $t: exit $rc"; fi
done
echo "unit: $passed passed, $failed failed"

if [ "${TB_SKIP_INTEGRATION:-0}" != 1 ]; then
	out=$(mktemp)
	scripts/run-integration.sh 2>&1 | tee "$out"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out" | tail -1)
	rm -f "$out"
	if [ -z "$line" ]; then
		echo "integration: no summary line (the suite did not finish)"
		failed=$((failed + 1))
	else
		passed=$((passed + ${line%% passed*}))
		f=${line#*passed, }; failed=$((failed + ${f%% failed*}))
	fi
fi

# Fuzz smoke (make fuzz-smoke: 10 s per target) and the ASan/UBSan build
# (scripts/sanitize.sh): each ends with "WORD: N passed, M failed".
add_summary() {
	local line=$1 what=$2 f
	if [ -z "$line" ]; then
		echo "$what: no summary line (it did not finish)"
		failed=$((failed + 1))
		return
	fi
	line=${line#*: }
	passed=$((passed + ${line%% passed*}))
	f=${line#*passed, }; failed=$((failed + ${f%% failed*}))
}
if [ "${TB_SKIP_FUZZ:-0}" != 1 ]; then
	out=$(mktemp)
	make --no-print-directory fuzz-smoke 2>&1 | tee "$out"
	add_summary "$(grep -E '^fuzz: [0-9]+ passed, [0-9]+ failed' "$out" | tail -1)" fuzz
	rm -f "$out"
fi
if [ "${TB_SKIP_INTEGRATION:-0}" != 1 ] && [ "${TB_SKIP_SANITIZE:-0}" != 1 ]; then
	out=$(mktemp)
	scripts/sanitize.sh 2>&1 | tee "$out"
	add_summary "$(grep -E '^sanitize: [0-9]+ passed, [0-9]+ failed' "$out" | tail -1)" sanitize
	rm -f "$out"
fi
# The oldest kernel of the matrix under QEMU (make check-kernels runs all).
if [ "${TB_SKIP_INTEGRATION:-0}" != 1 ] && [ "${TB_SKIP_KERNELS:-0}" != 1 ]; then
	out=$(mktemp)
	scripts/check-kernels.sh 5.10 2>&1 | tee "$out"
	add_summary "$(grep -E '^kernels: [0-9]+ passed, [0-9]+ failed' "$out" | tail -1)" kernels
	rm -f "$out"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
