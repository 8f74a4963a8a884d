#!/usr/bin/env bash
# make check-kernels: the smoke subset (scripts/kernel-smoke.py) on each kernel
# of the matrix, and a table kernel x check.
#
# usage: scripts/check-kernels.sh [KERNEL...]
#   KERNEL: host (the running kernel, no VM), 5.10 (Debian bullseye),
#   6.1 (bookworm), 6.12 (trixie); default: all of them.
#
# Debian's kernel images come through scripts/fetch-debian.sh (an apt
# configuration of its own, cached). Each boots under QEMU (TCG when there is
# no /dev/kvm) with a busybox initramfs that loads the 9p modules of that
# kernel's own module tree, mounts the host's / read-only, and runs the smoke
# script with the host's binaries (this checkout's tachyon-bpf, pyenv's
# Pythons) chrooted in it. One VM at a time, TB_QEMU_SMP CPUs (default 2).
# Exit 1 if any check failed anywhere.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cache=${TB_CACHE:-$HOME/.cache/tachyon-bpf}
smp=${TB_QEMU_SMP:-2}
vm_timeout=${TB_VM_TIMEOUT:-900}
# What runs inside (a debugging aid: any script taking the binary's path).
smoke=${TB_SMOKE:-$here/scripts/kernel-smoke.py}
declare -A suite=([5.10]=bullseye [6.1]=bookworm [6.12]=trixie)
# What the profiler rightly refuses a kernel for: a refusal naming this is the
# expected result there ("refused*"), any other is a failure. None today: 5.10
# lacks bpf_loop, and is served by the walker of bounded loops and tail calls.
declare -A refusal=()
kernels=("$@")
[ ${#kernels[@]} -gt 0 ] || kernels=(host 5.10 6.1 6.12)

die() { echo "tachyon-bpf: check-kernels: $*" >&2; exit 1; }

# QEMU and a static busybox: only this target needs them.
host_deps() {
	local p missing=()
	for p in qemu-system-x86 busybox-static; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return
	[ "$(id -u)" -eq 0 ] || die "missing packages: ${missing[*]} (run as root, or install them)"
	echo "check-kernels: installing ${missing[*]}" >&2
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
		--no-install-recommends "${missing[@]}" >/dev/null
}

# The newest kernel of a suite: what its linux-image-amd64 depends on.
# Prints the unpacked root and the kernel release.
fetch_kernel() {
	local s=$1 root deb rel
	root=$("$here/scripts/fetch-debian.sh" "$s" linux-image-amd64)
	deb=$(ls "$cache/debian-$s"/archives/linux-image-amd64_*.deb | tail -1)
	rel=$(dpkg-deb -f "$deb" Depends | sed -n 's/^linux-image-\([^ ,]*\).*/\1/p')
	[ -n "$rel" ] || die "$s: cannot tell the kernel of linux-image-amd64"
	"$here/scripts/fetch-debian.sh" "$s" "linux-image-$rel-unsigned" >/dev/null
	echo "$root $rel"
}

# A module's file in the tree (names use _ where files may use -).
mod_file() {
	find "$1" -name "$2.ko*" -o -name "${2//_/-}.ko*" | head -1
}

# Copy module $2 and, first, what it depends on, into $3; order in $3/order.
add_module() {
	local tree=$1 name=$2 out=$3 f dep
	grep -qx "$name" "$out/order" 2>/dev/null && return
	f=$(mod_file "$tree" "$name")
	[ -n "$f" ] || return 0	# built in
	case $f in
	*.xz) xz -dc "$f" >"$out/$name.ko" ;;
	*.zst) zstd -qdc "$f" >"$out/$name.ko" ;;
	*) cp "$f" "$out/$name.ko" ;;
	esac
	for dep in $(tr '\0' '\n' <"$out/$name.ko" | sed -n 's/^depends=//p' | tr ',' ' '); do
		add_module "$tree" "$dep" "$out"
	done
	echo "$name" >>"$out/order"
}

# A busybox initramfs for kernel release $2 of root $1; prints its path.
make_initramfs() {
	local root=$1 rel=$2 img=$cache/initramfs-$2.gz tree d m
	[ -s "$img" ] && [ "$img" -nt "$here/scripts/check-kernels.sh" ] && { echo "$img"; return; }
	tree=$root/lib/modules/$rel
	[ -d "$tree" ] || tree=$root/usr/lib/modules/$rel
	d=$(mktemp -d)
	mkdir -p "$d"/{bin,modules,proc,sys,dev,host}
	cp /bin/busybox "$d/bin/busybox"
	ln -s busybox "$d/bin/sh"
	for m in virtio_pci 9pnet_virtio 9p; do
		add_module "$tree" "$m" "$d/modules"
	done
	guest_init >"$d/init"
	chmod +x "$d/init"
	(cd "$d" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$img.tmp"
	rm -rf "$d"
	mv "$img.tmp" "$img"
	echo "$img"
}

# PID 1 of the guest: the host's / read-only at /host, chroot, smoke, off.
guest_init() {
	cat <<'EOF'
#!/bin/sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /modules/order); do insmod /modules/$m.ko || echo "TB-INIT insmod $m failed"; done
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose host /host ||
	echo "TB-INIT cannot mount the host's files"
mount -t proc proc /host/proc
mount -t sysfs sys /host/sys
mount -t devtmpfs dev /host/dev
dir=$(sed -n 's/.*tb.dir=\([^ ]*\).*/\1/p' /proc/cmdline)
smoke=$(sed -n 's/.*tb.smoke=\([^ ]*\).*/\1/p' /proc/cmdline)
# A writable /tmp for the guest; a checkout under the host's /tmp (a CI
# clone there) is bound back into it.
mkdir -p /hosttmp && mount -o bind /host/tmp /hosttmp
mount -t tmpfs tmp /host/tmp
case "$dir" in /tmp/?*)
	mkdir -p "/host$dir" && mount -o bind "/hosttmp/${dir#/tmp/}" "/host$dir" ||
		echo "TB-INIT cannot see the checkout $dir";;
esac
mount -t tmpfs run /host/run
mount -t bpf bpf /host/sys/fs/bpf
mount -t tracefs tracefs /host/sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /host/sys/kernel/debug 2>/dev/null
echo "TB-INIT up"
chroot /host /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
	python3 "$smoke" "$dir/tachyon-bpf"
echo "TB-INIT done"
poweroff -f
EOF
}

# Boot kernel release $2 of root $1; the smoke lines into $3. no_timer_check:
# under a loaded TCG host the IO-APIC timer check fails and 5.10 panics.
# loglevel=5: a lockup's or an oops's registers and call trace reach the log.
qemu_run() {
	local accel=$1 root=$2 rel=$3 log=$4 initrd=$5
	timeout "$vm_timeout" qemu-system-x86_64 -accel "$accel" -m 1024 -smp "$smp" \
		-nographic -no-reboot -cpu max \
		-kernel "$root/boot/vmlinuz-$rel" -initrd "$initrd" \
		-virtfs "local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap" \
		-append "console=ttyS0 quiet loglevel=5 panic=-1 no_timer_check tb.dir=$here tb.smoke=$smoke" \
		</dev/null >"$log" 2>&1 || true
}

# Does KVM run a guest kernel here? Boot $1 alone under KVM with an early
# console: a working KVM prints its banner within a second. Seen on nested
# hosts: QEMU cannot start a vCPU ("failed to set MSR 0x10a"), or it starts
# one that never reaches the kernel's first line (the whole 900 s timeout,
# no output). Decided once a run, before the first boot: sets accel.
accel=
pick_accel() {
	local kernel=$1 out why
	[ -z "$accel" ] || return 0
	accel=tcg
	if [ -w /dev/kvm ]; then
		out=$(timeout 30 qemu-system-x86_64 -accel kvm -m 256 -smp "$smp" -nographic \
			-no-reboot -cpu max -kernel "$kernel" \
			-append "console=ttyS0 earlyprintk=ttyS0 panic=-1" </dev/null 2>&1 | tr -d '\r' || true)
		if grep -q 'Linux version' <<<"$out"; then
			accel=kvm
		else
			why=$(grep -m1 -i 'kvm\|msr' <<<"$out" | cut -c1-80 || true)
			echo "check-kernels: KVM does not run a guest here (${why:-no kernel banner in 30 s}): TCG instead" >&2
		fi
	fi
}

boot() {
	local root=$1 rel=$2 log=$3 initrd
	initrd=$(make_initramfs "$root" "$rel")
	qemu_run "$accel" "$root" "$rel" "$log" "$initrd"
	tr -d '\r' <"$log" | grep -E "^TB-(KERNEL|FEATURES|CHECK|INIT|X)" || true
}

# The guest kernel's last message before the end of log $1, on one line.
last_words() {
	tr -d '\r' <"$1" | grep -E '^\[ *[0-9]+\.[0-9]+\]' | tail -n 1 | cut -c1-160
}

# Rows: kernels; columns: checks; then why each failure failed.
table() {
	awk -F'\t' '
	{ if (!($1 in seen)) { seen[$1] = 1; rows[++nr] = $1; name[$1] = $2 }
	  if (!($3 in col)) { col[$3] = 1; cols[++nc] = $3 }
	  cell[$1, $3] = $4
	  if ($4 != "ok") why[++nw] = $2 " " $3 ": " $4 " " $5
	  if ($4 != "ok" && $4 != "refused*") bad++; else good++ }
	END {
		printf "%-36s", "kernel"; for (j = 1; j <= nc; j++) printf " %-10s", cols[j]; print ""
		for (i = 1; i <= nr; i++) {
			printf "%-36s", name[rows[i]]
			for (j = 1; j <= nc; j++) printf " %-10s", ((rows[i], cols[j]) in cell) ? cell[rows[i], cols[j]] : "-"
			print ""
		}
		for (i = 1; i <= nw; i++) print "  " why[i]
		if (nw) print "  (refused*: the expected refusal of a kernel without that feature)"
		printf "kernels: %d passed, %d failed\n", good, bad
		exit bad > 0
	}'
}

results=$(mktemp)
trap 'rm -f "$results"' EXIT
host_deps
mkdir -p "$cache"
for k in "${kernels[@]}"; do
	t0=$(date +%s)
	if [ "$k" = host ]; then
		echo "check-kernels: host kernel $(uname -r)" >&2
		out=$(python3 "$smoke" "$here/tachyon-bpf" || true)
	else
		[ -n "${suite[$k]:-}" ] || die "unknown kernel '$k' (host, 5.10, 6.1 or 6.12)"
		read -r root rel < <(fetch_kernel "${suite[$k]}")
		pick_accel "$root/boot/vmlinuz-$rel"
		echo "check-kernels: Debian ${suite[$k]} $rel under QEMU, $accel (log: $cache/boot-$rel.log)" >&2
		out=$(boot "$root" "$rel" "$cache/boot-$rel.log")
	fi
	echo "$out" | sed 's/^/  /' >&2
	echo "$out" | grep -q '^TB-KERNEL' || out="TB-KERNEL $k"$'\n'"TB-CHECK boot FAIL no smoke output"
	# A VM that hung or died mid-way reported only some checks: that is a
	# failure, with the kernel's last words (a 5.10 guest under TCG once
	# hung in its first check, soft lockups every 22 s, and the run passed).
	[ "$k" = host ] || echo "$out" | grep -q '^TB-INIT done' ||
		out+=$'\n'"TB-CHECK vm FAIL did not finish within ${vm_timeout} s: $(last_words "$cache/boot-$rel.log")"
	echo "$out" | awk -v k="$k" -v s=$(($(date +%s) - t0)) -v want="${refusal[$k]:-}" '
		/^TB-KERNEL/ { rel = $2 }
		/^TB-CHECK/ { why = $0; sub(/^TB-CHECK [^ ]+ [^ ]+ ?/, "", why); st = $3
			      if (st == "refused" && want != "" && index(why, want)) st = "refused*"
			      printf "%s\t%s (%d s)\t%s\t%s\t%s\n", k, rel, s, $2, st, why }' >>"$results"
done
table <"$results"
