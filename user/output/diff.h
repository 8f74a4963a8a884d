/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Differential flame graphs (tachyon-bpf diff): the SVG writer with each
 * frame coloured by how much it changed between two profiles.
 */
#ifndef TB_OUTPUT_DIFF_H
#define TB_OUTPUT_DIFF_H

#include <stdio.h>
#include "output/model.h"

struct svg_diff {
	/*
	 * Per sample of the profile drawn (the new one, whose counts size the
	 * frames): its count in the base profile, normalised or not. Stacks
	 * only the base has are samples with count 0: they are not drawn but
	 * their loss counts in their callers' colour.
	 */
	const double *base;
	const char *subtitle;	/* plain text, escaped when written */
};

/* Frames red where they grew, blue where they shrank; 0 or a negative errno. */
int output_svg_diff(FILE *out, const struct resolved *r, const struct svg_diff *diff);

#endif
