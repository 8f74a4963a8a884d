#!/usr/bin/env bash
# make demo: profile the bundled workload for a few seconds and show the result.
set -eu
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
	echo "tachyon-bpf: demo: needs root to load BPF programs (run: sudo make demo)" >&2
	exit 1
fi
py=""
for c in /root/.pyenv/versions/3.13.*/bin/python3 /root/.pyenv/versions/3.12.*/bin/python3 \
	 /usr/bin/python3.11 "$(command -v python3 || true)"; do
	[ -x "$c" ] && { py=$c; break; }
done
[ -n "$py" ] || { echo "tachyon-bpf: demo: no Python 3.11+ found (apt-get install python3.11)" >&2; exit 1; }

out=demo.svg
"$py" scripts/demo-app.py 30 &
app=$!
trap 'kill $app 2>/dev/null || true' EXIT
sleep 0.5
echo "== profiling $("$py" -V) (pid $app) for 5 s, then the functions it spent its time in:"
echo "   ./tachyon-bpf -p $app -d 5 -o $out --summary"
./tachyon-bpf -p "$app" -d 5 -o "$out" --summary
echo
echo "== the flame graph is $PWD/$out: open it in a browser (xdg-open $out);"
echo "   hover for details, click to zoom, Ctrl-F to search."
