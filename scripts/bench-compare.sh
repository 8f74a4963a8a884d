#!/bin/sh
# make bench-compare BASE=REV: build commit REV of this repository in a cache
# directory (once; outside the tree) and run scripts/bench-compare.py with its
# binary as the base and this tree's ./tachyon-bpf as the new one.
set -eu
rev=${1:?usage: bench-compare.sh REV}
repo=$(cd "$(dirname "$0")/.." && pwd)
sha=$(git -C "$repo" rev-parse --verify "$rev^{commit}" 2>/dev/null) || {
	echo "tachyon-bpf: bench-compare: $rev: not a commit of this repository (name one: BASE=main~3)" >&2
	exit 2
}
dir=${XDG_CACHE_HOME:-$HOME/.cache}/tachyon-bpf/bench-base/$sha
if [ ! -x "$dir/tachyon-bpf" ]; then
	rm -rf "$dir" && mkdir -p "$dir"
	git -C "$repo" archive "$sha" | tar -x -C "$dir"
	make -C "$dir" --no-print-directory -s tachyon-bpf >&2
fi
exec python3 "$repo/scripts/bench-compare.py" "$dir/tachyon-bpf" "$repo/tachyon-bpf"
