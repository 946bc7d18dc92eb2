/* wait.h - long polls that hold no worker.
 *
 * A handler that would wait for slow work (GET question ?wait=N, a large
 * refresh-schema) answers at once with X-Accel-Redirect to
 *   /_sluice_wait/<kind>/<owner>/<a>/<b>/<deadline_ms>/<mac>
 * nginx takes that to the waiter (serve/waiter.c), one process holding every
 * such request in a poll loop, which answers once the work is done or the
 * deadline passed.  The worker is free again the moment it answered.
 *
 * The waiter only acts on URIs a worker wrote after its own checks
 * (authentication, ownership, bounds): mac is HMAC-SHA256 over the rest
 * with a key the serve master draws at start, shared with its children by
 * fork, compared in constant time.  The location is internal in nginx, so
 * no client can send it directly either. */
#ifndef SLUICE_WAIT_H
#define SLUICE_WAIT_H

#include <stdbool.h>
#include <stddef.h>

struct req;

#define WAIT_PREFIX "/_sluice_wait/"
#define WAIT_FIELD_MAX 80            /* kind, owner, a and b, each */

struct wait_ref {
	char kind[WAIT_FIELD_MAX + 1];
	char owner[WAIT_FIELD_MAX + 1];
	char a[WAIT_FIELD_MAX + 1];
	char b[WAIT_FIELD_MAX + 1];
	long long deadline_ms;          /* wall clock, ms since the epoch */
	char request_id[WAIT_FIELD_MAX + 1];  /* the request's id; "" = none */
};

/* Draw the key (the serve master, before it forks).  0 or -1. */
int wait_key_init(void);
/* True once a key exists: redirects can be written and checked. */
bool wait_enabled(void);

/* Answer r with the redirect to the waiter: kind, owner, a and b are
 * [A-Za-z0-9_.:-]{1,80}; the wait ends wait_ms from now.  0, or -1 when
 * waiting is not possible (no key, a field out of shape): the caller
 * answers by itself. */
int wait_redirect(struct req *r, const char *kind, const char *owner,
                  const char *a, const char *b, long long wait_ms);

/* The request line's path of a waiter request, checked: 0 with ref filled,
 * -1 when it is not one the workers wrote.  The redirect carries the
 * request's id as ?request_id=ID, outside the mac: it only names the
 * request in the waiter's answer, and the location is internal. */
int wait_uri_parse(const char *path, size_t len, struct wait_ref *ref);

/* Now, wall clock, in ms since the epoch. */
long long wait_now_ms(void);

#endif
