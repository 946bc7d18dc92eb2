/* work.h - `sluice work`: the process that runs everything slow.
 *
 * Work is a row in work_queue.  Any number of work processes, on any number
 * of hosts, claim rows with SELECT ... FOR UPDATE SKIP LOCKED, so each row
 * runs once.  A claimed row carries a heartbeat; a row whose process died
 * (heartbeat older than WORK_STALE_S) is queued again, up to max_attempts.
 *
 * Areas plug in by adding a kind to the handler table in work.c. */
#ifndef SLUICE_WORK_H
#define SLUICE_WORK_H

#include <stdbool.h>
#include <stddef.h>

struct config;
struct db;

#define WORK_STALE_S 300            /* a claim without heartbeat for this long is dead */
#define WORK_HEARTBEAT_S 10

struct work_item {
	long long id;
	const char *kind;
	const char *ref_id;
	const char *customer_id;        /* NULL when the work is not a customer's */
	const char *payload;            /* JSON text or NULL */
	int attempts;                   /* including this one */
	int max_attempts;
};

struct work_ctx {
	const struct config *cfg;
	struct db *db;
	const char *process_id;         /* host:pid, the claimed_by value */
};

/* Runs one item.  0 = done; -1 = failed with a reason in err (short,
 * client-safe: it is stored and may be shown to the customer). */
typedef int (*work_fn)(struct work_ctx *w, const struct work_item *it,
                       char *err, size_t errlen);

/* Run the work loop until SIGTERM/SIGINT.  Returns the exit status. */
int work_main(const struct config *cfg);

/* Queue work; returns the new id (> 0) or a negative enum db_err. */
long long work_enqueue(struct db *db, const char *kind, const char *ref_id,
                       const char *customer_id, const char *payload);

/* The same, claimable only delay_s seconds from now (a fallback for work
 * that something else is expected to do first). */
long long work_enqueue_delayed(struct db *db, const char *kind, const char *ref_id,
                               const char *customer_id, const char *payload,
                               int delay_s);

/* Long handlers call this now and then so their claim is not taken as dead. */
void work_heartbeat(struct work_ctx *w, const struct work_item *it);

/* True once SIGTERM arrived: long handlers stop at a safe point. */
int work_stopping(void);

/* A pid of this host that names no live process: none at all, or a zombie
 * nobody reaped yet (it will never heartbeat again either).  Claims held by
 * such a process can be taken back at once. */
bool work_process_gone(long pid);

#endif
