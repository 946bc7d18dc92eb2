/* wake.c - datagrams on unix sockets that say "look now" (wake.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/config.h"
#include "util/wake.h"

#define MSG_MAX (WAKE_KIND_MAX + 1 + WAKE_ID_MAX)

static int send_fd = -1;              /* one unbound socket for every send */

int wake_path(const struct config *cfg, enum wake_target t, char *buf, size_t cap)
{
	struct sockaddr_un sa;
	char base[CONFIG_PATH_MAX];
	int n;

	if (t == WAKE_WAITER) {
		if (config_wait_listen(cfg, base, sizeof base) != 0)
			return -1;
		n = snprintf(buf, cap, "%s.wake", base);
	} else {
		n = snprintf(buf, cap, "%s.work", cfg->listen);
	}
	return n < 0 || (size_t)n >= cap || (size_t)n >= sizeof sa.sun_path ? -1 : 0;
}

static int addr_of(const struct config *cfg, enum wake_target t, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof *sa);
	sa->sun_family = AF_UNIX;
	return wake_path(cfg, t, sa->sun_path, sizeof sa->sun_path);
}

int wake_bind(const struct config *cfg, enum wake_target t)
{
	struct sockaddr_un sa;
	mode_t old;
	int fd, rc;

	if (addr_of(cfg, t, &sa) != 0) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	/* A file left by a process that is gone, or the one we replace. */
	unlink(sa.sun_path);
	old = umask(0177);
	rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
	umask(old);
	if (rc != 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

bool wake_gone(const struct config *cfg, enum wake_target t)
{
	struct sockaddr_un sa;
	struct stat st;

	return addr_of(cfg, t, &sa) == 0 && stat(sa.sun_path, &st) != 0 && errno == ENOENT;
}

static bool word_ok(const char *s, size_t max, bool id)
{
	size_t n = 0;

	for (; s[n] != '\0'; n++) {
		char c = s[n];

		if (!((c >= 'a' && c <= 'z') || c == '_' ||
		      (id && ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		              c == '.' || c == ':' || c == '-'))))
			return false;
	}
	return n >= 1 && n <= max;
}

void wake_send(const struct config *cfg, enum wake_target t, const char *kind,
               const char *id)
{
	struct sockaddr_un sa;
	char msg[MSG_MAX + 1];
	int n;

	if (!word_ok(kind, WAKE_KIND_MAX, false) ||
	    (id != NULL && !word_ok(id, WAKE_ID_MAX, true)) || addr_of(cfg, t, &sa) != 0)
		return;
	n = id != NULL ? snprintf(msg, sizeof msg, "%s %s", kind, id)
	    : snprintf(msg, sizeof msg, "%s", kind);
	if (send_fd < 0)
		send_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (send_fd < 0)
		return;
	/* ENOENT, ECONNREFUSED (nobody bound), EAGAIN (queue full): the
	 * receiver's own poll finds it. */
	(void)sendto(send_fd, msg, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL,
	             (struct sockaddr *)&sa, sizeof sa);
}

int wake_recv(int fd, char kind[WAKE_KIND_MAX + 1], char id[WAKE_ID_MAX + 1])
{
	char msg[MSG_MAX + 2], *sp;
	ssize_t n;

	for (;;) {
		/* One byte more than the longest message: a longer one is
		 * cut (MSG_TRUNC) and dropped, never read in part. */
		n = recv(fd, msg, MSG_MAX + 1, MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return 0;
		if (n == 0 || n > MSG_MAX)
			continue;
		msg[n] = '\0';
		if (memchr(msg, '\0', (size_t)n) != NULL)
			continue;
		sp = strchr(msg, ' ');
		if (sp != NULL)
			*sp++ = '\0';
		if (!word_ok(msg, WAKE_KIND_MAX, false) ||
		    (sp != NULL && !word_ok(sp, WAKE_ID_MAX, true)))
			continue;
		/* word_ok bounded both */
		memcpy(kind, msg, strlen(msg) + 1);
		if (sp != NULL)
			memcpy(id, sp, strlen(sp) + 1);
		else
			id[0] = '\0';
		return 1;
	}
}
