// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Fuzz the ELF locator (user/pyelf.c): the input is an ELF image, as a
 * hostile process (a container, a file replaced under us) could map it.
 *
 * Properties, besides "no crash, no sanitizer report":
 *  - the result is -1, 0 or 1, and the error text is a terminated string;
 *  - on success, _PyRuntime lies inside a PT_LOAD and, when its file offset
 *    is known, its bytes lie inside the image;
 *  - the in-memory entry point (elf_memory) and the file entry point
 *    (elf_begin on a memfd, what the profiler really uses) agree.
 */
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "pyelf.h"

static int memfd = -1;

static int inspect_fd(const uint8_t *data, size_t size, struct pyelf_info *out,
		      char *err, size_t errlen)
{
	if (memfd < 0) {
		memfd = memfd_create("fuzz-elf", MFD_CLOEXEC);
		FUZZ_CHECK(memfd >= 0, "memfd_create failed");
	}
	FUZZ_CHECK(!ftruncate(memfd, 0), "ftruncate");
	FUZZ_CHECK(pwrite(memfd, data, size, 0) == (ssize_t)size, "pwrite");
	return pyelf_inspect_fd(memfd, "libpython3.13.so.1.0", out, err, errlen);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pyelf_info a, b;
	char ea[256], eb[256];
	int ra, rb;

	memset(ea, 'A', sizeof(ea));
	ra = pyelf_inspect_mem(data, size, &a, ea, sizeof(ea));
	FUZZ_CHECK(ra >= -1 && ra <= 1, "pyelf_inspect_mem returned %d", ra);
	FUZZ_CHECK(memchr(ea, 0, sizeof(ea)) || ra == 0, "error text not terminated");
	if (ra == 0) {
		FUZZ_CHECK(!a.runtime_file_off ||
			   (a.runtime_file_off <= size &&
			    a.runtime_size <= size - a.runtime_file_off),
			   "_PyRuntime bytes [0x%llx, +0x%llx) outside a %zu-byte image",
			   (unsigned long long)a.runtime_file_off,
			   (unsigned long long)a.runtime_size, size);
		FUZZ_CHECK(memchr(a.soname_version, 0, sizeof(a.soname_version)),
			   "soname_version not terminated");
	}
	if (!size)
		return 0;
	memset(eb, 'B', sizeof(eb));
	rb = inspect_fd(data, size, &b, eb, sizeof(eb));
	FUZZ_CHECK(rb >= -1 && rb <= 1, "pyelf_inspect_fd returned %d", rb);
	FUZZ_CHECK(memchr(eb, 0, sizeof(eb)) || rb == 0, "error text not terminated");
	/* The fd variant also learns the version from the name we gave. */
	FUZZ_CHECK(ra == rb, "memory says %d (%s), file says %d (%s)",
		   ra, ra ? ea : "ok", rb, rb ? eb : "ok");
	if (ra == 0) {
		FUZZ_CHECK(a.load_vaddr == b.load_vaddr &&
			   a.runtime_vaddr == b.runtime_vaddr &&
			   a.runtime_size == b.runtime_size &&
			   a.runtime_file_off == b.runtime_file_off &&
			   a.code_type_vaddr == b.code_type_vaddr &&
			   a.py_version_vaddr == b.py_version_vaddr,
			   "memory and file results differ (runtime 0x%llx/0x%llx)",
			   (unsigned long long)a.runtime_vaddr,
			   (unsigned long long)b.runtime_vaddr);
		FUZZ_CHECK(!strcmp(b.soname_version, "3.13"),
			   "file name version %s", b.soname_version);
	}
	return 0;
}
