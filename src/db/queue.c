/* queue.c - the work queue (see queue.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/db.h"
#include "db/queue.h"
#include "util/log.h"
#include "util/proc.h"

#define FAIR_TENANTS 8             /* tenants tried per claim, fairest first */
#define DEAD_PER_PASS 16           /* dead local processes handled per recover */
#define BACKOFF_MAX_S 3600
/* An item waits while another of its kind for the same row runs (a second
 * ingestion of a dataset whose first is still going round, say): the two
 * would only queue up on the area's own lock. */
#define NOT_BUSY "NOT EXISTS (SELECT 1 FROM work_queue b WHERE b.kind = q.kind " \
	"AND b.ref_id = q.ref_id AND b.status = 'running')"

long long queue_enqueue(struct db *db, const struct queue_new *q)
{
	const char *tenant = q->tenant != NULL ? q->tenant
	                     : q->customer_id != NULL ? q->customer_id : "";
	/* The request being served, if any: the item's log lines will say
	 * which request asked for it. */
	long long rc = db_exec(db,
	    "INSERT INTO work_queue (kind, ref_id, customer_id, tenant, payload, "
	    "request_id, max_attempts, available_at) VALUES (?, ?, ?, ?, ?, ?, ?, "
	    "UTC_TIMESTAMP(3) + INTERVAL ? SECOND)", "ssssssii",
	    q->kind, q->ref_id, q->customer_id, tenant, q->payload, log_request_id(),
	    (long long)(q->max_attempts > 0 ? q->max_attempts : QUEUE_ATTEMPTS),
	    (long long)(q->delay_s > 0 ? q->delay_s : 0));

	return rc < 0 ? rc : db_last_insert_id(db);
}

int queue_pending(struct db *db, const char *kind, const char *ref_id)
{
	struct db_stmt *st = db_query(db, "SELECT 1 FROM work_queue WHERE kind = ? "
	    "AND ref_id = ? AND status = 'queued' AND give_up_reason IS NULL LIMIT 1",
	    "ss", kind, ref_id);
	int rc;

	if (st == NULL)
		return db_last_err(db);
	rc = db_fetch(st);
	db_done(st);
	return rc;
}

long long queue_cancel(struct db *db, const char *kind, const char *ref_id)
{
	return db_exec(db, "UPDATE work_queue SET status = 'done', "
	    "finished_at = UTC_TIMESTAMP(3) WHERE kind = ? AND ref_id = ? "
	    "AND status = 'queued'", "ss", kind, ref_id);
}

long long queue_hurry(struct db *db, const char *kind, const char *ref_id)
{
	return db_exec(db, "UPDATE work_queue SET available_at = UTC_TIMESTAMP(3) "
	    "WHERE kind = ? AND ref_id = ? AND status = 'queued' "
	    "AND available_at > UTC_TIMESTAMP(3)", "ss", kind, ref_id);
}

/* These two go by the ids' key: by the claim index, which status
 * narrows too, they would read a whole backlog of queued rows. */
long long queue_hold(struct db *db, const long long *ids, size_t n, int delay_s)
{
	return db_exec_in(db, "UPDATE work_queue FORCE INDEX (PRIMARY) SET "
	    "available_at = UTC_TIMESTAMP(3) + INTERVAL ? SECOND "
	    "WHERE status = 'queued' AND id IN " DB_IN_LIST,
	    &(struct db_param){ .type = 'i', .i = delay_s }, 1, ids, n);
}

long long queue_done_along(struct db *db, const long long *ids, size_t n,
                           const char *process_id)
{
	return db_exec_in(db, "UPDATE work_queue FORCE INDEX (PRIMARY) SET status = 'done', "
	    "claimed_by = ?, claimed_at = UTC_TIMESTAMP(3), finished_at = UTC_TIMESTAMP(3) "
	    "WHERE status = 'queued' AND id IN " DB_IN_LIST,
	    &(struct db_param){ .type = 's', .p = process_id }, 1, ids, n);
}

int queue_status(struct db *db, long long id, char *status, size_t scap,
                 char *err, size_t ecap, char **payload)
{
	struct db_stmt *st = db_query(db, "SELECT status, error, payload FROM work_queue "
	                              "WHERE id = ?", "i", id);
	int rc;

	if (payload != NULL)
		*payload = NULL;
	if (st == NULL)
		return db_last_err(db);
	if ((rc = db_fetch(st)) == 1) {
		snprintf(status, scap, "%s", db_col_str(st, 0));
		snprintf(err, ecap, "%s", db_col_str(st, 1));
		if (payload != NULL && !db_col_null(st, 2) &&
		    (*payload = strdup(db_col_str(st, 2))) == NULL)
			rc = DB_ERR;
	}
	db_done(st);
	return rc;
}

int queue_settled(struct db *db, const char *const *ids, size_t n, bool *settled)
{
	return db_in_batch(db, "SELECT id FROM work_queue WHERE status IN ('done', 'failed') "
	    "AND id IN " DB_IN_LIST, ids, n, settled);
}

/* ---- claiming ------------------------------------------------------------------ */

struct claim {
	const char *kind;
	const char *process_id;
	struct work_item *it;
	char *buf;
	size_t cap;
};

/* Copy the claimed row's text columns into the caller's buffer: columns die
 * with the statement.  0, or -1 when they do not fit. */
static int copy_row(struct claim *c, struct db_stmt *st)
{
	static const unsigned cols[] = { 1, 2, 3, 4, 5, 8 };
	const char **dst[] = { &c->it->ref_id, &c->it->customer_id, &c->it->tenant,
	                       &c->it->payload, &c->it->give_up_reason,
	                       &c->it->request_id };
	size_t off = 0;

	c->it->id = db_col_ll(st, 0);
	c->it->kind = c->kind;
	c->it->attempts = (int)db_col_ll(st, 6);
	c->it->max_attempts = (int)db_col_ll(st, 7);
	for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
		size_t n;

		if (db_col_null(st, cols[i])) {
			*dst[i] = NULL;
			continue;
		}
		n = db_col_len(st, cols[i]) + 1;
		if (off + n > c->cap)
			return -1;
		memcpy(c->buf + off, db_col_str(st, cols[i]), n);
		*dst[i] = c->buf + off;
		off += n;
	}
	if (c->it->give_up_reason == NULL)
		c->it->attempts++;              /* this one */
	return 0;
}

/* One claim attempt: the tenants with claimable items, fewest running
 * first, then the one served least recently (never: first), then the one
 * waiting longest; and the oldest item of the first whose row is not
 * locked by another claim. */
static int claim_body(struct db *db, void *arg)
{
	struct claim *c = arg;
	char tenants[FAIR_TENANTS][QUEUE_TENANT_MAX + 1];
	size_t ntenants = 0;
	struct db_stmt *st;
	int rc;

	/* The last claim of a tenant is the newest entry of its index
	 * (kind, tenant, claimed_at), read backwards: MAX() there reads
	 * every row the tenant ever had (15,000 done questions: 15,000 rows
	 * a claim), as it is a subquery of the outer row. */
	st = db_query(db, "SELECT q.tenant FROM work_queue q "
	    "WHERE q.status = 'queued' AND q.kind = ? AND q.available_at <= UTC_TIMESTAMP(3) "
	    "AND " NOT_BUSY " GROUP BY q.tenant ORDER BY (SELECT COUNT(*) FROM work_queue r "
	    "WHERE r.status = 'running' AND r.kind = ? AND r.tenant = q.tenant), "
	    "(SELECT r.claimed_at FROM work_queue r WHERE r.kind = ? AND r.tenant = q.tenant "
	    "ORDER BY r.claimed_at DESC LIMIT 1), "
	    "MIN(q.available_at), MIN(q.id) LIMIT 8", "sss", c->kind, c->kind, c->kind);
	if (st == NULL)
		return db_last_err(db);
	while (ntenants < FAIR_TENANTS && (rc = db_fetch(st)) == 1)
		snprintf(tenants[ntenants++], sizeof tenants[0], "%s", db_col_str(st, 0));
	db_done(st);
	if (rc < 0)
		return rc;
	for (size_t t = 0; t < ntenants; t++) {
		st = db_query(db, "SELECT id, ref_id, customer_id, tenant, payload, "
		    "give_up_reason, attempts, max_attempts, request_id FROM work_queue q "
		    "WHERE status = 'queued' AND kind = ? AND tenant = ? "
		    "AND available_at <= UTC_TIMESTAMP(3) AND " NOT_BUSY " "
		    "ORDER BY available_at, id LIMIT 1 FOR UPDATE SKIP LOCKED", "ss",
		    c->kind, tenants[t]);
		if (st == NULL)
			return db_last_err(db);
		if ((rc = db_fetch(st)) == 1 && copy_row(c, st) != 0) {
			log_kv(LOG_ERROR, "work item too large to claim", "id=%lld",
			       db_col_ll(st, 0));
			rc = DB_ERR;
		}
		db_done(st);
		if (rc < 0)
			return rc;
		if (rc == 0)
			continue;             /* all locked by other claims: next tenant */
		if ((rc = (int)db_exec(db, "UPDATE work_queue SET status = 'running', "
		    "claimed_by = ?, claimed_at = UTC_TIMESTAMP(3), "
		    "heartbeat_at = UTC_TIMESTAMP(3), "
		    "attempts = attempts + IF(give_up_reason IS NULL, 1, 0) WHERE id = ?",
		    "si", c->process_id, c->it->id)) < 0)
			return rc;
		return 1;
	}
	return 0;
}

int queue_claim(struct db *db, const char *kind, const char *process_id,
                struct work_item *it, char *buf, size_t cap)
{
	struct claim c = { kind, process_id, it, buf, cap };

	return db_tx(db, "work claim", claim_body, &c);
}

/* ---- outcomes -------------------------------------------------------------------- */

int queue_finish(struct db *db, const struct work_item *it, const char *process_id,
                 enum queue_outcome outcome, const char *err)
{
	long long n = DB_ERR;
	long long backoff = 1LL << (it->attempts < 12 ? it->attempts : 12);

	if (backoff > BACKOFF_MAX_S)
		backoff = BACKOFF_MAX_S;
	switch (outcome) {
	case QUEUE_DONE:
		n = db_exec(db, "UPDATE work_queue SET status = 'done', "
		    "finished_at = UTC_TIMESTAMP(3), error = NULL "
		    "WHERE id = ? AND claimed_by = ? AND status = 'running'",
		    "is", it->id, process_id);
		break;
	case QUEUE_FAILED:
	case QUEUE_GIVE_UP:
		/* Another attempt after 2^attempts s while any are left; a
		 * give-up run, or an item whose own code said why, then ends;
		 * one that never said why is settled by a give-up run first.
		 * MariaDB assigns left to right, each seeing the ones before:
		 * give_up_reason is set last. */
		n = db_exec(db, "UPDATE work_queue SET "
		    "status = IF(give_up_reason IS NULL AND (attempts < max_attempts "
		    "  OR ? = 1), 'queued', 'failed'), "
		    "finished_at = IF(give_up_reason IS NULL AND (attempts < max_attempts "
		    "  OR ? = 1), NULL, UTC_TIMESTAMP(3)), "
		    "available_at = IF(attempts < max_attempts, UTC_TIMESTAMP(3) + "
		    "  INTERVAL ? SECOND, UTC_TIMESTAMP(3)), "
		    "claimed_by = NULL, error = ?, "
		    "give_up_reason = IF(give_up_reason IS NULL AND attempts >= max_attempts "
		    "  AND ? = 1, ?, give_up_reason) "
		    "WHERE id = ? AND claimed_by = ? AND status = 'running'",
		    "iiisisis", (long long)(outcome == QUEUE_GIVE_UP),
		    (long long)(outcome == QUEUE_GIVE_UP), backoff, err,
		    (long long)(outcome == QUEUE_GIVE_UP), err, it->id, process_id);
		break;
	case QUEUE_RELEASE:
		n = db_exec(db, "UPDATE work_queue SET status = 'queued', claimed_by = NULL, "
		    "available_at = UTC_TIMESTAMP(3), "
		    "attempts = attempts - IF(give_up_reason IS NULL AND attempts > 0, 1, 0) "
		    "WHERE id = ? AND claimed_by = ? AND status = 'running'",
		    "is", it->id, process_id);
		break;
	}
	/* Whatever the child left: its leases end with its claim. */
	if (n > 0)
		db_exec(db, "DELETE FROM work_leases WHERE process_id = ? AND item_id = ?",
		        "si", process_id, it->id);
	return n < 0 ? (int)n : n > 0;
}

/* ---- liveness ---------------------------------------------------------------------- */

int queue_process_id(const char *host_name, char *buf, size_t cap, char *host,
                     size_t hostcap)
{
	int n;

	if (host_name[0] != '\0')
		snprintf(host, hostcap, "%s", host_name);
	else if (gethostname(host, hostcap) != 0)
		snprintf(host, hostcap, "localhost");
	host[hostcap - 1] = '\0';
	/* Fits work_processes.id and claimed_by (128): a long host name is cut. */
	n = snprintf(buf, cap, "%.100s:%ld", host, (long)getpid());
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int queue_heartbeat(struct db *db, const char *process_id, const char *host)
{
	long long n = db_exec(db,
	    "INSERT INTO work_processes (id, host, pid, started_at, heartbeat_at) "
	    "VALUES (?, ?, ?, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3)) "
	    "ON DUPLICATE KEY UPDATE heartbeat_at = UTC_TIMESTAMP(3)",
	    "ssi", process_id, host, (long long)getpid());

	if (n >= 0)
		n = db_exec(db, "UPDATE work_queue SET heartbeat_at = UTC_TIMESTAMP(3) "
		            "WHERE claimed_by = ? AND status = 'running'", "s", process_id);
	/* Only leases of items still running here: a lease whose release
	 * failed is not kept alive by its process. */
	if (n >= 0)
		n = db_exec(db, "UPDATE work_leases l JOIN work_queue q ON q.id = l.item_id "
		            "SET l.expires_at = UTC_TIMESTAMP(3) + INTERVAL ? SECOND "
		            "WHERE l.process_id = ? AND q.claimed_by = l.process_id AND "
		            "q.status = 'running'", "is", (long long)QUEUE_LEASE_S,
		            process_id);
	return n < 0 ? (int)n : 0;
}

/* ---- leases ------------------------------------------------------------------------ */

struct lease {
	const char *name, *process_id;
	long long item_id;
};

/* One attempt.  On a cluster two takes write the same row: one commits,
 * the other fails certification and, run again, finds the row held. */
static int lease_take_body(struct db *db, void *arg)
{
	const struct lease *l = arg;
	struct db_stmt *st;
	long long n;
	int rc, held = 0;

	st = db_query(db, "SELECT item_id, expires_at > UTC_TIMESTAMP(3) FROM "
	              "work_leases WHERE name = ? FOR UPDATE", "s", l->name);
	if (st == NULL)
		return db_last_err(db);
	if ((rc = db_fetch(st)) == 1)
		held = db_col_ll(st, 0) != l->item_id && db_col_ll(st, 1) != 0;
	db_done(st);
	if (rc < 0)
		return db_last_err(db);
	if (held)
		return 0;
	n = db_exec(db, "INSERT INTO work_leases (name, process_id, item_id, expires_at) "
	            "VALUES (?, ?, ?, UTC_TIMESTAMP(3) + INTERVAL ? SECOND) "
	            "ON DUPLICATE KEY UPDATE process_id = VALUES(process_id), "
	            "item_id = VALUES(item_id), expires_at = VALUES(expires_at)",
	            "ssii", l->name, l->process_id, l->item_id, (long long)QUEUE_LEASE_S);
	return n < 0 ? (int)n : 1;
}

int queue_lease_take(struct db *db, const char *name, const char *process_id,
                     long long item_id)
{
	struct lease l = { name, process_id, item_id };

	return db_tx(db, "lease take", lease_take_body, &l);
}

int queue_lease_renew(struct db *db, const char *name, const char *process_id,
                      long long item_id)
{
	long long n = db_exec(db, "UPDATE work_leases SET expires_at = UTC_TIMESTAMP(3) "
	                      "+ INTERVAL ? SECOND WHERE name = ? AND process_id = ? "
	                      "AND item_id = ?", "issi", (long long)QUEUE_LEASE_S, name,
	                      process_id, item_id);

	return n < 0 ? (int)n : n > 0;
}

int queue_lease_release(struct db *db, const char *name, const char *process_id,
                        long long item_id)
{
	long long n = db_exec(db, "DELETE FROM work_leases WHERE name = ? AND "
	                      "process_id = ? AND item_id = ?", "ssi", name,
	                      process_id, item_id);

	return n < 0 ? (int)n : 0;
}

void queue_process_gone(struct db *db, const char *process_id)
{
	db_exec(db, "DELETE FROM work_processes WHERE id = ?", "s", process_id);
}

/* Claims of `who` go back to the queue: as another attempt while any are
 * left, else to be given up with why. */
static long long take_back(struct db *db, const char *who, const char *why)
{
	long long n = db_exec(db, "UPDATE work_queue SET status = 'queued', "
	    "claimed_by = NULL, available_at = UTC_TIMESTAMP(3), "
	    "give_up_reason = IF(give_up_reason IS NULL AND attempts >= max_attempts, "
	    "  ?, give_up_reason) "
	    "WHERE status = 'running' AND claimed_by = ?", "ss", why, who);

	if (n >= 0)
		db_exec(db, "DELETE FROM work_leases WHERE process_id = ?", "s", who);
	return n;
}

int queue_recover(struct db *db, const char *process_id)
{
	const char *colon = strrchr(process_id, ':');
	char dead[DEAD_PER_PASS][160];
	size_t plen, ndead = 0;
	struct db_stmt *st;
	long long n, total = 0;
	int rc;

	if (colon == NULL)
		return DB_ERR;
	/* This host's: a process that no longer exists held them. */
	plen = (size_t)(colon - process_id) + 1;          /* "host:" */
	st = db_query(db, "SELECT DISTINCT claimed_by FROM work_queue "
	    "WHERE status = 'running' AND LEFT(claimed_by, ?) = LEFT(?, ?)",
	    "isi", (long long)plen, process_id, (long long)plen);
	if (st == NULL)
		return db_last_err(db);
	while (ndead < DEAD_PER_PASS && (rc = db_fetch(st)) == 1) {
		const char *c = db_col_str(st, 0);
		char *end;
		long pid = strtol(c + plen, &end, 10);

		if (strlen(c) <= plen || *end != '\0' || pid <= 0 || pid == (long)getpid())
			continue;
		if (proc_gone(pid))
			snprintf(dead[ndead++], sizeof dead[0], "%s", c);
	}
	db_done(st);
	for (size_t i = 0; i < ndead; i++) {
		if ((n = take_back(db, dead[i], "the process running it died")) < 0)
			return (int)n;
		if (n > 0)
			log_kv(LOG_WARN, "took back work of a dead process",
			       "process=%s items=%lld", dead[i], n);
		total += n;
	}
	/* Any host's: no heartbeat for QUEUE_STALE_S. */
	n = db_exec(db, "UPDATE work_queue SET status = 'queued', claimed_by = NULL, "
	    "available_at = UTC_TIMESTAMP(3), "
	    "give_up_reason = IF(give_up_reason IS NULL AND attempts >= max_attempts, "
	    "  'the process running it stopped responding', give_up_reason) "
	    "WHERE status = 'running' AND claimed_by <> ? "
	    "AND heartbeat_at < UTC_TIMESTAMP(3) - INTERVAL ? SECOND",
	    "si", process_id, (long long)QUEUE_STALE_S);
	if (n < 0)
		return (int)n;
	if (n > 0)
		log_kv(LOG_WARN, "took back abandoned work", "items=%lld", n);
	total += n;
	db_exec(db, "DELETE FROM work_processes "
	        "WHERE heartbeat_at < UTC_TIMESTAMP(3) - INTERVAL ? SECOND",
	        "i", (long long)QUEUE_STALE_S);
	return (int)total;
}
