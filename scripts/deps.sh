#!/usr/bin/env bash
# Install every Debian package the build, the tests and the demo need.
# Idempotent: does nothing (and needs no network) when all are present.
set -euo pipefail

pkgs=(clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev libcmocka-dev
      pkg-config make gcc python3.11 linux-perf
      # output format tests: protoc --decode_raw reads the pprof output,
      # headless Chromium renders the SVG flame graph
      protobuf-compiler chromium
      # ... and go tool pprof shows it as pprof users see it
      golang-go
      # top (ncurses, tested in tmux), Pyroscope pushes (libcurl),
      # the man page (man -l, groff)
      libncurses-dev libcurl4-openssl-dev tmux man-db groff-base
      # Debian unstable's real 3.13.x/3.14/3.15 for the tests (scripts/real-pythons.sh)
      patchelf
      # make bench's real application: a Django site under gunicorn
      python3-django gunicorn
      # unwind tables checked against readelf, the native unwinder against gdb
      binutils gdb)

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "tachyon-bpf: deps: missing packages: ${missing[*]} (run 'sudo $0')" >&2
	exit 1
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
