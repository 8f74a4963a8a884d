#!/usr/bin/env bash
# Fetch binary packages from another Debian suite and unpack them, without
# touching the system's apt: an apt configuration of our own (sources list,
# state, lists and cache) under the cache directory.
#
# usage: scripts/fetch-debian.sh [--deps] SUITE PACKAGE...
# Prints the directory the packages are unpacked in (ROOT, with ROOT/usr/...).
# Without --deps exactly the packages named are fetched (callers name what
# they need, libc included); with --deps apt resolves what they depend on
# as if nothing were installed (the suite's own libc and all).
# Idempotent: a second call with the same suite and packages downloads and
# unpacks nothing. Cache: ${TB_CACHE:-$HOME/.cache/tachyon-bpf}/debian-SUITE.
set -euo pipefail

deps=0
[ "${1:-}" = --deps ] && { deps=1; shift; }
suite=${1:?usage: fetch-debian.sh [--deps] SUITE PACKAGE...}
shift
[ $# -gt 0 ] || { echo "usage: fetch-debian.sh SUITE PACKAGE..." >&2; exit 2; }
cache=${TB_CACHE:-$HOME/.cache/tachyon-bpf}/debian-$suite
root=$cache/root
stamp=$cache/done-$deps-$(printf '%s\n' "$@" | sort | tr '\n' '_')
if [ -e "$stamp" ]; then
	echo "$root"
	exit 0
fi
mkdir -p "$cache"/{lists/partial,archives/partial,etc} "$root"
: >"$cache/status"
mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)
echo "deb ${mirror:-http://deb.debian.org/debian} $suite main" >"$cache/etc/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$cache/etc/sources.list" -o "Dir::Etc::SourceParts=/nonexistent"
	  -o "Dir::State::Lists=$cache/lists" -o "Dir::State::Status=$cache/status"
	  -o "Dir::Cache=$cache" -o "Dir::Cache::archives=$cache/archives"
	  -o "Debug::NoLocking=1" -o "APT::Get::AllowUnauthenticated=false"
	  -o "APT::Sandbox::User=root" -q)
if ! find "$cache/lists" -name '*Packages*' -mmin -1440 | grep -q .; then
	if ! apt-get "${apt_opts[@]}" update >"$cache/update.log" 2>&1; then
		echo "tachyon-bpf: fetch-debian: cannot reach Debian's package service for '$suite' (see $cache/update.log; check the network)" >&2
		exit 1
	fi
fi
if [ $deps = 1 ]; then
	get=(apt-get "${apt_opts[@]}" -y --download-only --no-install-recommends install "$@")
else
	get=(apt-get "${apt_opts[@]}" download "$@")
fi
if ! (cd "$cache/archives" && "${get[@]}") >"$cache/download.log" 2>&1; then
	echo "tachyon-bpf: fetch-debian: cannot download $* from '$suite' (see $cache/download.log)" >&2
	exit 1
fi
if [ $deps = 1 ]; then
	for deb in "$cache"/archives/*.deb; do
		dpkg-deb -x "$deb" "$root"
	done
else
	for p in "$@"; do
		for deb in "$cache"/archives/"${p}"_*.deb; do
			dpkg-deb -x "$deb" "$root"
		done
	done
fi
touch "$stamp"
echo "$root"
