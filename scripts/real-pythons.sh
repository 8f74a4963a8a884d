#!/usr/bin/env bash
# Debian unstable's own CPython builds (3.13.x, 3.14, 3.15), and Debian 11's
# python3.9, for the tests:
# fetched with scripts/fetch-debian.sh (cached, idempotent) and made to run
# on this machine. They need sid's glibc, so each gets a copy, NAME-host,
# whose ELF interpreter and RPATH point into the unpacked tree (patchelf):
# the same interpreter code and data, a process whose executable is the
# interpreter (sys.executable works for child processes), no wrapper.
#
# usage: scripts/real-pythons.sh    prints one interpreter path per line
set -euo pipefail
cd "$(dirname "$0")/.."

versions=(3.13 3.14 3.15)
root=$(scripts/fetch-debian.sh --deps sid "${versions[@]/#/python}")
command -v patchelf >/dev/null || {
	echo "tachyon-bpf: real-pythons: patchelf is missing (run scripts/deps.sh)" >&2
	exit 1
}
for v in "${versions[@]}"; do
	src=$root/usr/bin/python$v host=$root/usr/bin/python$v-host
	if [ ! -x "$host" ] || [ "$src" -nt "$host" ]; then
		cp "$src" "$host.tmp"
		patchelf --set-interpreter "$root/usr/lib64/ld-linux-x86-64.so.2" \
			 --force-rpath --set-rpath "$root/usr/lib/x86_64-linux-gnu" "$host.tmp"
		mv "$host.tmp" "$host"
	fi
	"$host" -c 'import sys; assert sys.version_info[:2] == tuple(map(int, sys.argv[1].split(".")))' "$v"
	echo "$host"
done

# Debian 11's static python3.9 (3.9.2: RHEL 9's and Amazon Linux 2023's minor
# version) runs on this machine's glibc as it is; it only needs to be told
# where its standard library is (and its _ctypes and _hashlib where bullseye's
# libffi.so.7 and libssl.so.1.1 are). Its -host is a wrapper that sets PYTHONHOME and LD_LIBRARY_PATH and
# execs it: the same pid, the interpreter as executable.
root=$(scripts/fetch-debian.sh bullseye python3.9-minimal libpython3.9-minimal \
	libpython3.9-stdlib libffi7 libssl1.1)
host=$root/usr/bin/python3.9-host
printf '#!/bin/sh\nPYTHONHOME=%s/usr LD_LIBRARY_PATH=%s/usr/lib/x86_64-linux-gnu exec %s/usr/bin/python3.9 "$@"\n' \
	"$root" "$root" "$root" >"$host.tmp"
chmod +x "$host.tmp"
if cmp -s "$host.tmp" "$host"; then rm "$host.tmp"; else mv "$host.tmp" "$host"; fi
"$host" -c 'import sys; assert sys.version_info[:2] == (3, 9)'
echo "$host"
