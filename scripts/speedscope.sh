#!/bin/sh
# The speedscope web app (npm package speedscope, pinned), which the tests
# load our output into (headless Chromium): a real consumer for collapsed,
# speedscope JSON and pprof files. Fetched once with npm into the cache,
# outside the tree; prints the directory of the app's index.html.
set -eu
ver=1.25.0
dir=${XDG_CACHE_HOME:-$HOME/.cache}/tachyon-bpf/npm/speedscope-$ver
app=$dir/node_modules/speedscope/dist/release
if [ ! -f "$app/index.html" ]; then
	if ! command -v npm >/dev/null; then
		echo "tachyon-bpf: speedscope: npm is not installed (run: sudo apt-get install npm)" >&2
		exit 1
	fi
	mkdir -p "$dir"
	if ! npm install --no-audit --no-fund --loglevel=error --prefix "$dir" \
		"speedscope@$ver" >&2; then
		echo "tachyon-bpf: speedscope: npm could not fetch speedscope@$ver" \
			"(is registry.npmjs.org reachable?)" >&2
		exit 1
	fi
fi
echo "$app"
