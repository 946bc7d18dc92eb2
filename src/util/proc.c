/* proc.c - small process helpers. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/proc.h"

bool proc_gone(long pid)
{
	char path[64], buf[256];
	const char *close_paren;
	FILE *f;
	bool zombie = false;

	if (kill((pid_t)pid, 0) != 0)
		return errno == ESRCH;
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	if ((f = fopen(path, "re")) == NULL)
		return false;
	if (fgets(buf, sizeof buf, f) != NULL &&
	    (close_paren = strrchr(buf, ')')) != NULL)
		zombie = close_paren[1] == ' ' &&
		         (close_paren[2] == 'Z' || close_paren[2] == 'X');
	fclose(f);
	return zombie;
}

void proc_close_fds(int keep)
{
	long max = sysconf(_SC_OPEN_MAX);

	if (keep < 3) {
		if (close_range(3, ~0U, 0) == 0)
			return;
	} else if ((keep == 3 || close_range(3, (unsigned)keep - 1, 0) == 0) &&
	           close_range((unsigned)keep + 1, ~0U, 0) == 0) {
		return;
	}
	/* A kernel without close_range (before 5.9). */
	if (max < 0 || max > 65536)
		max = 65536;
	for (int fd = 3; fd < max; fd++)
		if (fd != keep)
			close(fd);
}

int proc_die_with_parent(pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* The parent may have died between fork and prctl. */
	return getppid() == parent ? 0 : -1;
}

int proc_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

void proc_describe_status(int status, char *buf, size_t cap)
{
	if (WIFSIGNALED(status))
		snprintf(buf, cap, "killed by signal %d (%s)", WTERMSIG(status),
		         strsignal(WTERMSIG(status)));
	else if (WIFEXITED(status))
		snprintf(buf, cap, "exited with status %d", WEXITSTATUS(status));
	else
		snprintf(buf, cap, "ended (status %d)", status);
}
