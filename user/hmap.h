/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A small open-addressing hash map with fixed-size keys stored inline and a
 * pointer-sized value. Used for every userspace table (stacks, aggregation,
 * code cache): one implementation, linear probing, power-of-two capacity.
 */
#ifndef TB_HMAP_H
#define TB_HMAP_H

#include <stddef.h>
#include <stdint.h>

struct hmap {
	uint8_t *slots;		/* cap * slot_size bytes */
	size_t cap;		/* power of two */
	size_t len;
	size_t key_size;
	size_t slot_size;	/* 8 (hash, 0 = empty) + key + 8 (value) */
};

/* 0 or -ENOMEM. */
int hmap_init(struct hmap *m, size_t key_size);
void hmap_free(struct hmap *m);
/* free_value() each value (free, for malloc'd ones), then hmap_free(). */
void hmap_free_values(struct hmap *m, void (*free_value)(void *));
/* Returns a pointer to the value slot for key, or NULL if absent. */
void **hmap_get(const struct hmap *m, const void *key);
/* Returns the value slot for key, inserting a NULL value if absent (*added
 * says which). NULL only on allocation failure. */
void **hmap_put(struct hmap *m, const void *key, int *added);
/* Removes key; returns its value or NULL. */
void *hmap_del(struct hmap *m, const void *key);

/* Iteration: for (i = 0; hmap_next(m, &i, &key, &val);) */
int hmap_next(const struct hmap *m, size_t *iter, const void **key, void ***val);

uint64_t hash_bytes(const void *p, size_t n);

#endif
