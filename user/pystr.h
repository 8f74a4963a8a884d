/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Decode CPython str (PyUnicode) and bytes objects from raw bytes copied out
 * of a target process. Nothing here reads memory: callers read the object
 * header, ask where the data lies, read that, and convert it.
 *
 * Target and host are both little-endian x86_64: integers in the copied
 * bytes are read in host order.
 */
#ifndef TACHYON_PYSTR_H
#define TACHYON_PYSTR_H

#include <stddef.h>
#include <stdint.h>

struct pystr_layout {	/* from the per-version layout */
	uint16_t length;	/* offset of Py_ssize_t length (16) */
	uint16_t state;		/* offset of the u32 state bitfield (32) */
	uint16_t ascii_size;	/* sizeof(PyASCIIObject): data of compact ASCII
				 * strings (3.11: 48; 3.12+: 40) */
	uint16_t compact_size;	/* sizeof(PyCompactUnicodeObject): data of
				 * compact non-ASCII (3.11: 72; 3.12+: 56) */
	uint8_t state_shift;	/* right shift of state that puts kind at bits
				 * 2-4, compact at 5, ascii at 6: 0 for GIL
				 * builds; 6 for 3.14t, whose full-byte
				 * `interned` moves kind to bits 8-10 */
	uint16_t bytes_size;	/* offset of ob_size in PyBytesObject (16) */
	uint16_t bytes_data;	/* offset of ob_sval (32) */
};

/*
 * Given the first `have` bytes of a str object, tell where its character
 * data lies: *data_off (offset from the object start), *nbytes
 * (length * kind), *kind (1, 2, 4) and *ascii. Returns 0, or -EINVAL if `have`
 * does not cover the header, or the object is not a compact str, has a bad
 * kind or an absurd length (more than max_len characters). Output pointers
 * may be NULL.
 */
int pystr_locate(const struct pystr_layout *l, const uint8_t *obj, size_t have,
		 size_t max_len, size_t *data_off, size_t *nbytes, int *kind,
		 int *ascii);

/*
 * Convert character data of the given kind (1 = latin-1, 2 = UCS-2,
 * 4 = UCS-4, little-endian) to NUL-terminated UTF-8 in out (size outsz),
 * truncated cleanly on a code point boundary. Surrogates and values above
 * U+10FFFF become U+FFFD; a trailing partial character is ignored; a bad
 * kind gives "". U+0000 is copied as a 0 byte (counted in the result).
 * Returns the bytes written, excluding the NUL.
 */
size_t pystr_to_utf8(const uint8_t *data, size_t nbytes, int kind, char *out,
		     size_t outsz);

/*
 * Bytes object: length and data offset from the first `have` bytes. Returns
 * 0, or -EINVAL if `have` does not cover ob_size or the size is negative or
 * above max_len. Output pointers may be NULL.
 */
int pybytes_locate(const struct pystr_layout *l, const uint8_t *obj,
		   size_t have, size_t max_len, size_t *data_off,
		   size_t *nbytes);

#endif /* TACHYON_PYSTR_H */
