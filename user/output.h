/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Writers: one per output format, each taking the folded profile. */
#ifndef TB_OUTPUT_H
#define TB_OUTPUT_H

#include <stdio.h>
#include "profile.h"

/* "frame;frame;frame count" per line, as flamegraph.pl reads it.
 * Returns 0, or -1 with errno set (EPIPE when the reader went away). */
int output_collapsed(FILE *out, const struct folded *f);

#endif
