/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* tachyon-bpf replay RECORDING.tby: any format from a binary recording. */
#ifndef TB_REPLAY_H
#define TB_REPLAY_H

#include <stddef.h>
#include <stdint.h>

/* argv[0] is "replay". Returns the exit code. */
int replay_main(int argc, char **argv);

/* The whole file at path, malloc'd, into *data and *len. 0 or -errno. */
int replay_slurp(const char *path, uint8_t **data, size_t *len);

#endif
