// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "hmap.h"

#define MIN_CAP 16

uint64_t hash_bytes(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h ? h : 1;	/* 0 marks an empty slot */
}

static inline uint64_t *slot_hash(const struct hmap *m, size_t i)
{
	return (uint64_t *)(m->slots + i * m->slot_size);
}

static inline void *slot_key(const struct hmap *m, size_t i)
{
	return m->slots + i * m->slot_size + 8;
}

static inline void **slot_val(const struct hmap *m, size_t i)
{
	/* after the key padded to 8 bytes: the value is 8-aligned */
	return (void **)(m->slots + (i + 1) * m->slot_size - 8);
}

int hmap_init(struct hmap *m, size_t key_size)
{
	memset(m, 0, sizeof(*m));
	m->key_size = key_size;
	m->slot_size = 8 + ((key_size + 7) & ~(size_t)7) + 8;
	m->cap = MIN_CAP;
	m->slots = calloc(m->cap, m->slot_size);
	return m->slots ? 0 : -ENOMEM;
}

void hmap_free_values(struct hmap *m, void (*free_value)(void *))
{
	size_t it = 0;
	void **val;

	while (hmap_next(m, &it, NULL, &val))
		free_value(*val);
	hmap_free(m);
}

void hmap_free(struct hmap *m)
{
	free(m->slots);
	m->slots = NULL;
	m->cap = m->len = 0;
}

/* Index of key's slot, or of the empty slot where it would go. */
static size_t find(const struct hmap *m, const void *key, uint64_t h)
{
	size_t mask = m->cap - 1, i = h & mask;

	for (;;) {
		uint64_t sh = *slot_hash(m, i);

		if (!sh)
			return i;
		if (sh == h && !memcmp(slot_key(m, i), key, m->key_size))
			return i;
		i = (i + 1) & mask;
	}
}

void **hmap_get(const struct hmap *m, const void *key)
{
	uint64_t h = hash_bytes(key, m->key_size);
	size_t i = find(m, key, h);

	return *slot_hash(m, i) ? slot_val(m, i) : NULL;
}

static int grow(struct hmap *m)
{
	struct hmap n = *m;
	size_t i;

	n.cap = m->cap * 2;
	n.slots = calloc(n.cap, n.slot_size);
	if (!n.slots)
		return -ENOMEM;
	for (i = 0; i < m->cap; i++) {
		uint64_t h = *slot_hash(m, i);
		size_t j;

		if (!h)
			continue;
		j = find(&n, slot_key(m, i), h);
		memcpy(n.slots + j * n.slot_size, m->slots + i * m->slot_size, m->slot_size);
	}
	free(m->slots);
	*m = n;
	return 0;
}

void **hmap_put(struct hmap *m, const void *key, int *added)
{
	uint64_t h = hash_bytes(key, m->key_size);
	size_t i;

	if (added)
		*added = 0;
	i = find(m, key, h);
	if (*slot_hash(m, i))
		return slot_val(m, i);
	if ((m->len + 1) * 10 > m->cap * 7) {
		if (grow(m))
			return NULL;
		i = find(m, key, h);
	}
	*slot_hash(m, i) = h;
	memcpy(slot_key(m, i), key, m->key_size);
	*slot_val(m, i) = NULL;
	m->len++;
	if (added)
		*added = 1;
	return slot_val(m, i);
}

void *hmap_del(struct hmap *m, const void *key)
{
	uint64_t h = hash_bytes(key, m->key_size);
	size_t mask = m->cap - 1, i = find(m, key, h), j;
	void *val;

	if (!*slot_hash(m, i))
		return NULL;
	val = *slot_val(m, i);
	*slot_hash(m, i) = 0;
	m->len--;
	/* Backward-shift deletion keeps probe chains intact without tombstones. */
	for (j = (i + 1) & mask; *slot_hash(m, j); j = (j + 1) & mask) {
		size_t home = *slot_hash(m, j) & mask;

		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			memcpy(m->slots + i * m->slot_size, m->slots + j * m->slot_size, m->slot_size);
			*slot_hash(m, j) = 0;
			i = j;
		}
	}
	return val;
}

int hmap_next(const struct hmap *m, size_t *iter, const void **key, void ***val)
{
	for (; *iter < m->cap; (*iter)++) {
		if (!*slot_hash(m, *iter))
			continue;
		if (key)
			*key = slot_key(m, *iter);
		if (val)
			*val = slot_val(m, *iter);
		(*iter)++;
		return 1;
	}
	return 0;
}
