/* auth.h - authenticate a request and check its permission.
 *
 * Each function fills r->id on success and returns 0; otherwise it has
 * written the 401/403/503 answer and returns -1. */
#ifndef SLUICE_AUTH_H
#define SLUICE_AUTH_H

#include "http/request.h"

/* In the serve master, before it forks: the Basic cache and the table of
 * failed attempts, shared by every worker.  0, or -1 (errno set). */
int auth_shared_init(void);

/* Whether a Basic check of the last request handed this process the
 * renewal of a cached password (auth/basic.h), and doing it: the worker
 * calls auth_renew once the response is sent (a full check, PBKDF2 and
 * all, that renews or drops the entry). */
bool auth_renewal_due(void);
void auth_renew(struct db *db, const struct config *cfg);

int auth_jwt_or_reply(struct req *r, const char *permission);
int auth_basic_or_reply(struct req *r);
int auth_health_or_reply(struct req *r);

/* The caller's customer id, after auth_jwt_or_reply, checked once more in
 * its canonical form (identity_customer_id_ok: what a storage path and a
 * warehouse database name may hold); else 403 was answered and NULL is
 * returned. */
const char *auth_customer_or_reply(struct req *r);
/* The same, and the customers row exists: made from the token on first
 * sight (tokens are minted by the operator, so the token is the
 * authority).  NULL after a 403 (the token's customer_name belongs to
 * another customer) or a database error was answered. */
const char *auth_customer_ensure_or_reply(struct req *r);

/* True when the caller's token carries the permission. */
bool auth_has_permission(const struct req *r, const char *permission);

#endif
