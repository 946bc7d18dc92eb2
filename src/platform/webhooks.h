/* webhooks.h - HTTPS endpoints told when a pipeline's run ends.
 *
 *   webhooks.c         the routes: create, list, get, delete, the delivery
 *                      log and redelivery; a URL's checks
 *   webhook_deliver.c  deliveries (recorded by db/run_events.c in the
 *                      transaction that ends a run) sent by the
 *                      webhook_deliver work kind, signed as Standard
 *                      Webhooks (https://www.standardwebhooks.com/)
 *
 * One work item is one attempt: a failed attempt with attempts left queues
 * the next one after its back-off, so no child waits out a retry delay. */
#ifndef SLUICE_WEBHOOKS_H
#define SLUICE_WEBHOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "db/queue.h"
#include "db/run_events.h"

#define WEBHOOK_SECRET_PREFIX "whsec_"
#define WEBHOOK_RETRY_MAX_S 3600      /* the longest back-off */

/* True when a connection to sa may be made with private addresses
 * refused: not loopback, private (RFC 1918, unique local, CGNAT),
 * link-local, unspecified, multicast or reserved (IPv4-mapped IPv6 is
 * judged by its IPv4 address). */
bool webhook_addr_public(const struct sockaddr *sa);

/* "v1,<base64 HMAC-SHA256>" of "<msg_id>.<timestamp>.<body>" keyed with the
 * base64-decoded part of secret after "whsec_", into out (cap >= 64).
 * 0, or -1 when the secret is not of that form. */
int webhook_sign(const char *secret, const char *msg_id, long long timestamp,
                 const char *body, size_t len, char *out, size_t cap);

/* The delay before attempt n + 1 after n failed attempts (n >= 1):
 * base * 2^(n-1), at most WEBHOOK_RETRY_MAX_S. */
int webhook_retry_delay(int base_s, int failed);

/* The webhook_deliver work kind (ref_id = delivery id) and its give-up. */
int webhook_deliver_work(struct work_ctx *w, const struct work_item *it,
                         char *err, size_t errlen);
int webhook_deliver_give_up(struct work_ctx *w, const struct work_item *it,
                            const char *reason);

#endif
