# tachyon-bpf — build, test, bench, install, demo.
# Model: libbpf-bootstrap. `make` builds ./tachyon-bpf.

OUT	?= build
CLANG	?= clang
BPFTOOL	?= $(shell command -v bpftool || echo /usr/sbin/bpftool)
CC	?= cc
PREFIX	?= /usr/local
# Parallel jobs for the builds `make check` runs itself
JOBS	?= $(shell nproc)
DESTDIR	?=
ARCH	:= $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')

CFLAGS	?= -O2 -g
CFLAGS	+= -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -Iuser -Ibpf -I$(OUT)
LDLIBS	+= $(shell pkg-config --libs libbpf libelf zlib 2>/dev/null || echo -lbpf -lelf -lz)
LDLIBS	+= $(shell pkg-config --libs ncursesw libcurl 2>/dev/null || echo -lncursesw -ltinfo -lcurl)
LDLIBS	+= -lm -lstdc++
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
	-I$(OUT) -Ibpf -idirafter /usr/include/$(shell uname -m)-linux-gnu $(BPF_EXTRA)

USER_SRC := $(filter-out user/main.c,$(sort $(wildcard user/*.c user/output/*.c)))
USER_OBJ := $(patsubst user/%.c,$(OUT)/user/%.o,$(USER_SRC))
# Only the sources that include the BPF skeleton wait for clang and bpftool;
# the rest (decoders, writers, the model) build and unit-test without them.
SKEL_SRC := $(shell grep -l 'tachyon\.skel\.h' $(USER_SRC) user/main.c)
SKEL_OBJ := $(patsubst user/%.c,$(OUT)/user/%.o,$(SKEL_SRC))
# The tests link this archive: the linker takes only the objects a test needs.
CORE_OBJ := $(filter-out $(SKEL_OBJ),$(USER_OBJ))
CORE_LIB := $(OUT)/libtachyon.a
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN := $(patsubst tests/unit/%.c,$(OUT)/tests/%,$(UNIT_SRC))

.PHONY: all deps check unit integration bench bench-compare demo install clean check-kernels \
	check-old-pythons
.DELETE_ON_ERROR:

all: tachyon-bpf

deps:
	@scripts/deps.sh

# vmlinux.h from the running kernel's BTF; the committed copy where there is none.
$(OUT)/vmlinux.h: | $(OUT)
	@if [ -r /sys/kernel/btf/vmlinux ] && [ -x "$(BPFTOOL)" ]; then \
		$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@; \
	else \
		echo "  using committed vmlinux/vmlinux.h (no kernel BTF or bpftool)"; \
		cp vmlinux/vmlinux.h $@; \
	fi

$(OUT)/tachyon.bpf.o: bpf/tachyon.bpf.c bpf/tachyon.h bpf/pywalk.h bpf/asyncio.bpf.h bpf/latprobe.bpf.h bpf/unwind.h bpf/unwind.bpf.h bpf/cfi_notify.bpf.h bpf/fpstack.bpf.h $(OUT)/vmlinux.h
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUT)/tachyon.skel.h: $(OUT)/tachyon.bpf.o
	$(BPFTOOL) gen skeleton $< name tachyon_bpf > $@

$(OUT)/user/%.o: user/%.c $(wildcard user/*.h user/output/*.h) bpf/tachyon.h bpf/pywalk.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(SKEL_OBJ): $(OUT)/tachyon.skel.h

# The writers and their model see neither the BPF ABI nor the build directory:
# an include of tachyon.h (or of profile.h, which bridges to it) under
# user/output/ fails to build.
$(OUT)/user/output/%.o: CFLAGS := $(filter-out -Ibpf -I$(OUT),$(CFLAGS))

$(CORE_LIB): $(CORE_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

tachyon-bpf: $(OUT)/user/main.o $(USER_OBJ)
	$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

# The output checkers the unit and fuzz tests share.
CHECK_SRC := tests/common/outcheck.c
$(OUT)/tests/outcheck.o: $(CHECK_SRC) tests/common/outcheck.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(OUT)/tests/%: tests/unit/%.c $(CORE_LIB) $(OUT)/tests/outcheck.o \
		$(wildcard tests/unit/*.h tests/unit/fixtures/*.h tests/common/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/unit -Itests/common $< $(OUT)/tests/outcheck.o $(CORE_LIB) \
		$(LDLIBS) -lcmocka -o $@

# Test programs: a synthetic 3.14/3.15 interpreter, and an embedded one.
TEST_PROGS := $(OUT)/tests/fakepy $(OUT)/tests/embedded $(OUT)/tests/scribbler \
	$(OUT)/tests/cfidump
$(OUT)/tests/fakepy: tests/synthetic/fakepy.c
	@mkdir -p $(dir $@)
	$(CC) -O1 -g -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -rdynamic $< -o $@ -lpthread

# The unwind tables of user/cfi*.c, dumped for the readelf and gdb comparisons.
$(OUT)/tests/cfidump: tests/synthetic/cfidump.c $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(CORE_LIB) $(LDLIBS) -o $@

PY313	?= $(firstword $(wildcard /root/.pyenv/versions/3.13.*))
$(OUT)/tests/embedded: tests/synthetic/embedded.c
	@mkdir -p $(dir $@)
	$(CC) -O1 -g -Wall -Wextra -Werror $< -o $@ -I$(PY313)/include/python3.13 \
		-L$(PY313)/lib -lpython3.13 -Wl,-rpath,$(PY313)/lib -lm -ldl -lpthread

$(OUT):
	@mkdir -p $@

unit: $(UNIT_BIN)
	@TB_SKIP_INTEGRATION=1 scripts/run-tests.sh $(UNIT_BIN)

integration: tachyon-bpf $(TEST_PROGS)
	@scripts/real-pythons.sh >/dev/null
	@scripts/speedscope.sh >/dev/null
	@scripts/run-integration.sh

# Installs what is missing, builds, runs every test.
check: deps
	@scripts/real-pythons.sh >/dev/null
	@scripts/speedscope.sh >/dev/null
	@$(MAKE) --no-print-directory -j$(JOBS) all $(UNIT_BIN) $(TEST_PROGS)
	@scripts/run-tests.sh $(UNIT_BIN)

# Every parametrised integration test on 3.8 to 3.10 (pyenv's and Debian 11's
# static python3.9): too slow for `make check`, which runs 3.10.13 only on the
# tests marked @old_python_too (tests/integration/common.py).
OLD_PYTHONS := 3.8.18 3.9.18 3.10.13 deb11-3.9
check-old-pythons: deps
	@scripts/real-pythons.sh >/dev/null
	@scripts/speedscope.sh >/dev/null
	@$(MAKE) --no-print-directory all $(TEST_PROGS)
	@TB_TEST_PYTHONS="$(OLD_PYTHONS)" scripts/run-integration.sh $(foreach p,$(OLD_PYTHONS),"[$(p)]")

# The smoke subset on Debian's 5.10, 6.1 and 6.12 under QEMU and on the
# running kernel (KERNELS="host 6.1" for some); see scripts/check-kernels.sh.
check-kernels: deps
	@$(MAKE) --no-print-directory all
	@scripts/check-kernels.sh $(KERNELS)

bench: deps
	@$(MAKE) --no-print-directory all
	@python3 scripts/bench.py

# This tree side by side with commit BASE (built once in ~/.cache), interleaved:
# make bench-compare BASE=main~5
BASE	?= HEAD
bench-compare: deps
	@$(MAKE) --no-print-directory all
	@scripts/bench-compare.sh $(BASE)

demo: deps
	@$(MAKE) --no-print-directory all
	@scripts/demo.sh

# The binary in sbin (it needs root or capabilities) and the man page, section 8.
MANDIR	?= $(PREFIX)/share/man
install: tachyon-bpf
	install -D -m 0755 tachyon-bpf $(DESTDIR)$(PREFIX)/sbin/tachyon-bpf
	install -D -m 0644 doc/tachyon-bpf.8 $(DESTDIR)$(MANDIR)/man8/tachyon-bpf.8

clean:
	rm -rf $(OUT) tachyon-bpf

# ---- Reliability: fuzzing and sanitizer builds --------------------------------
# Owned by tests/fuzz/ (see its README). Separate build directories; nothing
# above depends on this block. `make fuzz` runs every libFuzzer target for
# FUZZ_SECONDS each, `make fuzz-smoke` for FUZZ_SMOKE_SECONDS (what CI runs),
# `make sanitize` builds the unit tests and the binary with ASan+UBSan in
# build-asan/ and runs them plus a few integration tests against that binary.
FUZZ_SECONDS	?= 60
FUZZ_SMOKE_SECONDS ?= 10
FUZZ_OUT	?= build-fuzz
FUZZ_CC		?= clang
FUZZ_SAN	:= -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS	:= -g -O1 -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -Iuser -Ibpf -I$(OUT) $(FUZZ_SAN)
FUZZ_NAMES	:= pyelf layout linetable pystr output pyobj cfi tby
FUZZ_BIN	:= $(patsubst %,$(FUZZ_OUT)/fuzz_%,$(FUZZ_NAMES))
# Every userspace object but main and the skeleton's users, in an archive:
# a target links what it needs.
FUZZ_SRC	:= $(filter-out $(SKEL_SRC),$(USER_SRC))
FUZZ_OBJ	:= $(patsubst user/%.c,$(FUZZ_OUT)/obj/%.o,$(FUZZ_SRC))
FUZZ_LIB	:= $(FUZZ_OUT)/libtachyon.a

.PHONY: fuzz fuzz-smoke fuzz-build sanitize
.SECONDARY: $(FUZZ_OBJ)

$(FUZZ_OUT)/obj/%.o: user/%.c $(wildcard user/*.h user/output/*.h) bpf/tachyon.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_LIB): $(FUZZ_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(FUZZ_OUT)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(FUZZ_LIB) $(CHECK_SRC) \
		tests/common/outcheck.h
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Itests/common -fsanitize=fuzzer $< $(CHECK_SRC) $(FUZZ_LIB) \
		$(LDLIBS) -o $@

fuzz-build: $(FUZZ_BIN)

fuzz: fuzz-build
	@FUZZ_OUT=$(FUZZ_OUT) scripts/run-fuzz.sh $(FUZZ_SECONDS)

fuzz-smoke: fuzz-build
	@FUZZ_OUT=$(FUZZ_OUT) scripts/run-fuzz.sh $(FUZZ_SMOKE_SECONDS)

# The binary inside $(OUT), for builds in another directory (build-asan/).
$(OUT)/tachyon-bpf: $(OUT)/user/main.o $(USER_OBJ)
	$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

# The synthetic target whose memory is scribbled over while it is profiled.
$(OUT)/tests/scribbler: tests/synthetic/scribbler.c tests/synthetic/fakepy.c
	@mkdir -p $(dir $@)
	$(CC) -O1 -g -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE $< -o $@ -lpthread

sanitize: deps
	@scripts/sanitize.sh
# ---- end of the reliability block ---------------------------------------------
