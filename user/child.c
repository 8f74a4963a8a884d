// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The -- CMD child: see child.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "child.h"
#include "errors.h"

#define CHILD_GRACE_MS	2000	/* from SIGTERM to SIGKILL at the end */

struct child {
	char *const *cmd;
	pid_t pid;
	int pidfd;
	int gate;		/* write end: released once sampling is on */
	int status;
	int reaped;		/* it exited and we waited for it */
};

/* In the child: wait for the gate, then exec. Never returns. */
static void run_command(char *const *cmd, int gate_rd, int gate_wr, int own_stdout)
{
	sigset_t none;
	char c;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* Our capabilities are for profiling, not for the command. */
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	signal(SIGPIPE, SIG_DFL);
	/* Our stdout carries the profile: the command's output must not
	 * land in it (`-- python3 app.py > out.folded`). */
	if (!own_stdout && dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
		_exit(127);
	close(gate_wr);
	if (read(gate_rd, &c, 1) != 1)
		_exit(127);
	execvp(cmd[0], cmd);
	fprintf(stderr, "tachyon-bpf: %s: %s (check the command)\n", cmd[0], strerror(errno));
	_exit(127);
}

struct child *child_spawn(char *const *cmd, int own_stdout)
{
	struct child *c = calloc(1, sizeof(*c));
	int gate[2], saved;

	if (!c)
		return NULL;
	if (pipe2(gate, O_CLOEXEC)) {
		saved = errno;
		free(c);
		errno = saved;
		return NULL;
	}
	c->pid = fork();
	if (c->pid < 0) {
		saved = errno;
		close(gate[0]);
		close(gate[1]);
		free(c);
		errno = saved;
		return NULL;
	}
	if (!c->pid)
		run_command(cmd, gate[0], gate[1], own_stdout);
	close(gate[0]);
	c->cmd = cmd;
	c->gate = gate[1];
	c->pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0);
	return c;
}

void child_release(struct child *c)
{
	if (c->gate < 0)
		return;
	if (write(c->gate, "g", 1) != 1)
		tb_warn("%s: could not start the command: %s", c->cmd[0], strerror(errno));
	close(c->gate);
	c->gate = -1;
}

pid_t child_pid(const struct child *c)
{
	return c->pid;
}

int child_pidfd(const struct child *c)
{
	return c->pidfd;
}

int child_status(const struct child *c)
{
	return c->status;
}

int child_reap(struct child *c)
{
	if (!c->reaped && waitpid(c->pid, &c->status, WNOHANG) == c->pid)
		c->reaped = 1;
	return c->reaped;
}

/* Has it exited within ms milliseconds? (Reaps it.) */
static int gone_within(struct child *c, int ms)
{
	struct pollfd p = { .fd = c->pidfd, .events = POLLIN };

	if (c->pidfd >= 0)
		poll(&p, 1, ms);
	else
		usleep(ms * 1000);
	return child_reap(c);
}

/*
 * As py-spy does: so that the command does not linger, re-parented to
 * init, holding the caller's terminal or pipes.
 */
void child_end(struct child *c)
{
	if (c->reaped)
		return;
	tb_debug("the run ended before the command: sending it SIGTERM");
	if (kill(c->pid, SIGTERM) || gone_within(c, CHILD_GRACE_MS))
		return;
	tb_warn("%s (pid %d) did not exit %d s after SIGTERM: sending SIGKILL",
		c->cmd[0], c->pid, CHILD_GRACE_MS / 1000);
	kill(c->pid, SIGKILL);
	gone_within(c, CHILD_GRACE_MS);
}

void child_free(struct child *c)
{
	if (!c)
		return;
	if (c->gate >= 0)
		close(c->gate);
	if (c->pidfd >= 0)
		close(c->pidfd);
	free(c);
}
