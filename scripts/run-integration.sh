#!/usr/bin/env bash
# Integration tests: the real ./tachyon-bpf against real Python processes.
#   scripts/run-integration.sh [-v] [-k] [-l] [FILTER ...]
# Env: TB_TEST_PYTHONS="3.13.0 3.12.1 3.11.7 /usr/bin/python3.11" (interpreters),
#      TB_BIN (binary, default ./tachyon-bpf). See tests/integration/run.py.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
	echo "tachyon-bpf: integration tests: must run as root, they load BPF programs and read other processes (run 'sudo $0')" >&2
	exit 1
fi
bin=${TB_BIN:-./tachyon-bpf}
if [ ! -x "$bin" ]; then
	echo "tachyon-bpf: integration tests: $bin not built (run 'make')" >&2
	exit 1
fi
py=$(command -v python3 || true)
if [ -z "$py" ]; then
	echo "tachyon-bpf: integration tests: python3 not found (install python3)" >&2
	exit 1
fi
exec "$py" tests/integration/run.py "$@"
