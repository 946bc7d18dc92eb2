/* queue.h - the work queue: slow work as rows of work_queue, done by
 * `sluice work` (src/work/).
 *
 * An area queues an item (queue_enqueue) in the transaction that makes the
 * work necessary; `sluice work` claims it (queue_claim), runs it in a child
 * process with the kind's entry point, and records the outcome
 * (queue_finish).  Any number of work processes on any number of hosts
 * share one queue:
 *   - a claim is SELECT ... FOR UPDATE SKIP LOCKED then UPDATE, in one
 *     transaction retried on deadlock or Galera certification failure; an
 *     item is ours only once that COMMIT succeeded (on Galera SKIP LOCKED is
 *     not exclusive across nodes: the COMMIT is where a double claim fails);
 *   - claims are fair across tenants: the tenant with the fewest items of
 *     the kind running goes first, then the one served least recently, so
 *     a tenant with a thousand items queued delays another's single item
 *     by at most one item per slot, and equal tenants take turns;
 *   - an item is not claimed while another of its kind and ref_id runs;
 *   - a claimed item carries its process's heartbeat; an item whose process
 *     died is taken back (queue_recover) and runs again, up to its attempts.
 * Items are written so that running one twice is harmless.
 *
 * Areas include this header for struct work_ctx / work_item and the
 * signature of their entry points; nothing of src/work/. */
#ifndef SLUICE_QUEUE_H
#define SLUICE_QUEUE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

struct config;
struct db;

#define QUEUE_STALE_S 300          /* a claim without heartbeat this long is dead */
#define QUEUE_HEARTBEAT_S 10       /* how often a work process heartbeats its claims */
#define QUEUE_ATTEMPTS 3           /* an item's attempts unless it says otherwise */
#define QUEUE_TENANT_MAX 80
#define QUEUE_LEASE_S 60           /* a lease not renewed this long is free */

struct work_item {
	long long id;
	const char *kind;
	const char *ref_id;
	const char *customer_id;        /* NULL when the work is not a customer's */
	const char *tenant;             /* fairness key ("" = nobody's) */
	const char *payload;            /* JSON text or NULL */
	const char *give_up_reason;     /* non-NULL: settle as failed, do not run */
	const char *request_id;         /* the request that queued it, or NULL */
	int attempts;                   /* including this one */
	int max_attempts;
};

/* What an entry point works with, in its own child process. */
struct work_ctx {
	const struct config *cfg;
	struct db *db;                  /* the child's own connection */
	const char *process_id;         /* host:pid of the work process (claimed_by) */
	const volatile sig_atomic_t *stop;  /* set on shutdown: stop at a safe point */
};

/* An area's entry point for one item.  0 = done; -1 = failed with a short,
 * client-safe reason in err (it is stored and may be shown). */
typedef int (*work_fn)(struct work_ctx *w, const struct work_item *it,
                       char *err, size_t errlen);
/* An area's way to settle an item that will not run again (its attempts
 * ran out while crashing or hanging): mark its own rows failed with reason.
 * 0, or -1 when that could not be written (tried again later). */
typedef int (*work_give_up_fn)(struct work_ctx *w, const struct work_item *it,
                               const char *reason);

/* True once the work process asked w's child to stop. */
static inline bool work_stopping(const struct work_ctx *w)
{
	return w->stop != NULL && *w->stop != 0;
}

/* Wait up to ms for a nudge: a wake named w's kind, one whose children
 * linger for more items (work_kind.lingers), see work/supervisor.c.  true
 * when nudged; false when ms passed or the child was asked to stop.  A
 * nudge that came while the child was busy is taken at once: the item it
 * named may still wait.  Implemented in work/child.c. */
bool work_wait_nudge(const struct work_ctx *w, long ms);

/* A new item.  tenant NULL = customer_id (or '').  delay_s > 0: claimable
 * only that long from now.  max_attempts 0 = QUEUE_ATTEMPTS. */
struct queue_new {
	const char *kind;
	const char *ref_id;
	const char *customer_id;
	const char *tenant;
	const char *payload;
	int delay_s;
	int max_attempts;
};

/* Queue it (inside the caller's transaction, if one is open).  The new id
 * (> 0) or a negative enum db_err. */
long long queue_enqueue(struct db *db, const struct queue_new *q);

/* Claim the fairest claimable item of kind for process_id.  1 claimed (it
 * filled, its strings in buf of cap bytes), 0 none, < 0 enum db_err. */
int queue_claim(struct db *db, const char *kind, const char *process_id,
                struct work_item *it, char *buf, size_t cap);

enum queue_outcome {
	QUEUE_DONE,              /* finished */
	QUEUE_FAILED,            /* failed: again after a back-off, or for good */
	QUEUE_GIVE_UP,           /* failed without a word from its own code: again
	                          * if attempts are left, else settled by give-up */
	QUEUE_RELEASE,           /* stopped by a shutdown: back to the queue, the
	                          * attempt not counted */
};

/* Queued (not yet claimed) items of kind for ref_id that will do their work
 * (not one waiting only to give up, whose process died on its last
 * attempt): 1 when there is one, 0 none, < 0 enum db_err. */
int queue_pending(struct db *db, const char *kind, const char *ref_id);

/* Queued items of kind for ref_id are not needed any more (done without
 * running).  How many, or < 0. */
long long queue_cancel(struct db *db, const char *kind, const char *ref_id);

/* Queued items of kind for ref_id are claimable now (their delay was a
 * head start for someone else, who gave up).  < 0 on error. */
long long queue_hurry(struct db *db, const char *kind, const char *ref_id);

/* Queued items ids[0..n) are claimable only delay_s from now: another
 * process does their work and cancels them, and they run after all should
 * that process die first.  One statement per DB_IN_BATCH items.  The
 * number held (those still queued), or < 0 enum db_err. */
long long queue_hold(struct db *db, const long long *ids, size_t n, int delay_s);

/* Queued items ids[0..n) were done by process_id while it ran another
 * (they rode along: see queue_hold).  The number recorded (those still
 * queued), or < 0 enum db_err. */
long long queue_done_along(struct db *db, const long long *ids, size_t n,
                           const char *process_id);

/* An item's status ("queued", "running", "done", "failed") and error into
 * the buffers, and (payload not NULL) its payload text, malloc'd or NULL.
 * 1 found, 0 not, < 0 enum db_err. */
int queue_status(struct db *db, long long id, char *status, size_t scap,
                 char *err, size_t ecap, char **payload);

/* Which of the items ids (their ids as text, n <= DB_IN_BATCH) are done or
 * failed: settled[i].  0 or < 0 enum db_err. */
int queue_settled(struct db *db, const char *const *ids, size_t n, bool *settled);

/* Record an item's outcome, if process_id still holds the claim.  1
 * recorded, 0 the claim was not ours any more, < 0 enum db_err. */
int queue_finish(struct db *db, const struct work_item *it, const char *process_id,
                 enum queue_outcome outcome, const char *err);

/* Leases (work_leases): the right to name (one dataset's ingestion, say)
 * held by a claimed item, exclusive across every work process and every
 * node of a Galera cluster, where GET_LOCK is not (it is per server).  The
 * process's heartbeat renews its items' leases while they run; an item's
 * outcome releases its leases; a holder that died loses them when its
 * claim is taken back or QUEUE_LEASE_S after its last heartbeat.
 * Take: 1 taken (or ours already: the same item, claimed again after its
 * process died), 0 held by another item, < 0 enum db_err. */
int queue_lease_take(struct db *db, const char *name, const char *process_id,
                     long long item_id);
/* Still ours?  1 yes (renewed), 0 lost, < 0 enum db_err. */
int queue_lease_renew(struct db *db, const char *name, const char *process_id,
                      long long item_id);
/* Let go of it (if ours); < 0 on error. */
int queue_lease_release(struct db *db, const char *name, const char *process_id,
                        long long item_id);

/* Heartbeat every claim of process_id (and the leases of the ones that
 * run), and the process itself. */
int queue_heartbeat(struct db *db, const char *process_id, const char *host);

/* Take back the claims of dead processes: on this host, of pids that no
 * longer run (at once); anywhere, of claims without a heartbeat for
 * QUEUE_STALE_S.  Back to the queue while attempts are left, else to be
 * given up.  How many items were taken back, or < 0. */
int queue_recover(struct db *db, const char *process_id);

/* Forget process_id in work_processes (a clean exit). */
void queue_process_gone(struct db *db, const char *process_id);

/* "host:pid" of this process into buf, and the host into host: host_name
 * (the config's) or, when that is empty, gethostname().  0 or -1 (never too
 * small with 160). */
int queue_process_id(const char *host_name, char *buf, size_t cap, char *host,
                     size_t hostcap);

#endif
