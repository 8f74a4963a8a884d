// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include "output.h"

int output_collapsed(FILE *out, const struct folded *f)
{
	size_t i;

	for (i = 0; i < f->n; i++) {
		if (!f->v[i].stack[0])
			continue;
		if (fprintf(out, "%s %" PRIu64 "\n", f->v[i].stack, f->v[i].count) < 0)
			return -1;
	}
	if (fflush(out))
		return -1;
	return 0;
}
