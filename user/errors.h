/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Messages. Every problem is one line on stderr:
 *   tachyon-bpf: <what went wrong>: <why> (<what to do>)
 */
#ifndef TB_ERRORS_H
#define TB_ERRORS_H

enum tb_exit {
	TB_EXIT_OK = 0,
	TB_EXIT_RUNTIME = 1,	/* the run failed: target, privileges, kernel, files */
	TB_EXIT_USAGE = 2,	/* bad command line */
};

extern int tb_verbose;
/* Called before any message is printed (the progress line erases itself). */
extern void (*tb_before_message)(void);

void tb_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tb_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tb_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tb_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
