// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Exception type names for --mode exception: see exctypes.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "exctypes.h"
#include "pyobj.h"

struct exc_key {
	uint32_t target;
	uint32_t pad;
	uint64_t type;
};

int exc_types_init(struct exc_types *e)
{
	return hmap_init(&e->names, sizeof(struct exc_key)) ? -ENOMEM : 0;
}

void exc_types_free(struct exc_types *e)
{
	hmap_free_values(&e->names, free);
}

int exc_types_learn(struct exc_types *e, const struct target *t, uint64_t type)
{
	struct exc_key k = { .target = t->id, .type = type };
	char name[64];
	void **slot;
	int added;

	slot = hmap_put(&e->names, &k, &added);
	if (!slot)
		return -ENOMEM;
	if (!added)
		return 0;
	/* An unreadable type stays NULL: the marker then shows its address. */
	if (!pyobj_type_name_at(t, type, name, sizeof(name)))
		*slot = strdup(name);
	return 0;
}

const char *exc_types_name(const struct exc_types *e, uint32_t target, uint64_t type)
{
	struct exc_key k = { .target = target, .type = type };
	void **slot = hmap_get(&e->names, &k);

	return slot ? *slot : NULL;
}

void exc_types_forget(struct exc_types *e, uint32_t target)
{
	struct exc_key *keys = malloc((e->names.len + 1) * sizeof(*keys));
	const struct exc_key *k;
	size_t it = 0, n = 0, i;

	if (!keys)
		return;
	while (hmap_next(&e->names, &it, (const void **)&k, NULL))
		if (k->target == target)
			keys[n++] = *k;
	for (i = 0; i < n; i++)
		free(hmap_del(&e->names, &keys[i]));
	free(keys);
}
