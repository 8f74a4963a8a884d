/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* tachyon-bpf diff BASE NEW: a differential flame graph of two profiles. */
#ifndef TB_DIFF_H
#define TB_DIFF_H

/* argv[0] is "diff". Returns the exit code. */
int diff_main(int argc, char **argv);

#endif
