/* wake.h - a nudge, on the same host, from the process that made progress
 * to the one waiting for it.
 *
 * A datagram on a unix socket whose path derives from the config both sides
 * read: the waiter's is <wait socket>.wake (a question's result is stored,
 * a refresh's outcome recorded),
 * sluice work's is <listen>.work (an item was queued for it now).  Sending
 * never blocks and never fails the sender.  A wake is a hint, not a fact:
 * the receiver looks in MariaDB as it would on its own poll, which stays
 * the source of truth, so a lost wake (nobody bound, a full socket queue,
 * the work done on another host) costs only the time to that poll. */
#ifndef SLUICE_WAKE_H
#define SLUICE_WAKE_H

#include <stdbool.h>
#include <stddef.h>

struct config;

enum wake_target {
	WAKE_WAITER,                  /* serve's waiter: "<kind> <id>" settled */
	WAKE_WORK,                    /* sluice work: "<kind>" claimable now */
};

#define WAKE_KIND_MAX 40
#define WAKE_ID_MAX 80

/* The socket's path for target.  0, or -1 when it does not fit a unix
 * socket address (then nothing is bound or sent: the poll does it all). */
int wake_path(const struct config *cfg, enum wake_target t, char *buf, size_t cap);

/* Bind target's socket (non-blocking, close-on-exec, mode 0600: only our
 * own user wakes us), replacing a file left there.  The fd, or -1. */
int wake_bind(const struct config *cfg, enum wake_target t);

/* True when nothing is at target's path any more (a stopped serve's
 * runtime directory took it away): bind again.  A socket another process
 * bound there since is left to it. */
bool wake_gone(const struct config *cfg, enum wake_target t);

/* Nudge target: kind is [a-z_]{1,40}, id NULL or [A-Za-z0-9_.:-]{1,80}.
 * Errors are ignored: the receiver's poll finds what the wake would have
 * said. */
void wake_send(const struct config *cfg, enum wake_target t, const char *kind,
               const char *id);

/* One datagram from fd into kind and id (id "" when it had none).  1 read,
 * 0 none left; a datagram out of shape is dropped and the next one read. */
int wake_recv(int fd, char kind[WAKE_KIND_MAX + 1], char id[WAKE_ID_MAX + 1]);

#endif
