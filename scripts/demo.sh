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

out=demo.folded
"$py" scripts/demo-app.py 30 &
app=$!
trap 'kill $app 2>/dev/null || true' EXIT
sleep 0.5
echo "== profiling $("$py" -V) (pid $app) for 5 s at 499 Hz:"
echo "   ./tachyon-bpf -p $app -F 499 -d 5 -o $out"
./tachyon-bpf -p "$app" -F 499 -d 5 -o "$out"
echo
echo "== the 8 hottest stacks, leaf first (the file $out has them root first, for flamegraph.pl):"
awk '{n=$NF; $NF=""; k=split($0, f, ";"); s=f[k]; for (i=k-1; i>0 && i>k-4; i--) s=s " <- " f[i];
      if (k > 4) s=s " <- ..."; print n "\t" s}' "$out" | sort -nr | head -8 | cut -c1-200
echo
echo "== self time per function (leaf frame):"
awk '{n=$NF; $NF=""; k=split($0, f, ";"); leaf=f[k]; sub(/ \(.*/, "", leaf); s[leaf]+=n; t+=n}
     END {for (l in s) printf "%6.1f%%  %s\n", 100*s[l]/t, l}' "$out" | sort -nr | head -10
echo
echo "Make a flame graph with: flamegraph.pl $out > demo.svg (flamegraph.pl is from Brendan Gregg's FlameGraph tools)"
