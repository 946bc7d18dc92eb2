/* proc.h - small process helpers shared by the processes `sluice work`
 * forks (item children, run supervisors, task children). */
#ifndef SLUICE_PROC_H
#define SLUICE_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A pid of this host that names no live process: none at all, or a zombie
 * nobody reaped yet (it will never heartbeat again either). */
bool proc_gone(long pid);

/* Close every descriptor above 2 but keep (-1: none): a forked child must
 * not hold its parent's sockets (a database session, a keep-alive
 * connection) as long as it runs. */
void proc_close_fds(int keep);

/* In a child just forked: die with the parent (SIGKILL when it exits), so
 * no work goes on unsupervised after a kill -9 of the parent.  parent is
 * the pid read before fork.  -1 when the parent is already gone. */
int proc_die_with_parent(pid_t parent);

/* Write all of buf to fd (a child's report to its parent through a pipe),
 * going on after EINTR and short writes.  0, or -1 when it could not. */
int proc_write_all(int fd, const void *buf, size_t len);

/* How a child ended, as waitpid reported it: "killed by signal 11
 * (Segmentation fault)", "exited with status 3". */
void proc_describe_status(int status, char *buf, size_t cap);

#endif
