/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A struct rframe initializer for the writers' unit tests: designated, so
 * a field added to the model (as .op was) needs no change here and clang's
 * -Wmissing-field-initializers stays quiet.
 */
#ifndef TB_RFRAME_FIXTURE_H
#define TB_RFRAME_FIXTURE_H

#define RFRAME(nm, fl, ln, first, ix) \
	{ .name = (char *)(nm), .file = (char *)(fl), .line = (ln), .firstlineno = (first), .id = (ix) }

#endif
