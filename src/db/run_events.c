/* run_events.c - webhook deliveries of a run that ended (run_events.h).
 *
 * The event body is built by the database from the run's row, once, and
 * stored with the delivery: every attempt and every redelivery signs and
 * sends the same bytes under the same webhook-id ("msg_" + 32 hex). */
#include <stdio.h>

#include "db/db.h"
#include "db/queue.h"
#include "db/run_events.h"
#include "util/uuid.h"

#define WEBHOOKS_PER_RUN 16           /* more than a pipeline may have */
#define DELIVERY_ID_LEN (4 + RUN_ID_LEN)

int run_events_record(struct db *db, const char *run_id)
{
	char hooks[WEBHOOKS_PER_RUN][RUN_ID_LEN + 1], owners[WEBHOOKS_PER_RUN][40];
	struct db_stmt *st;
	size_t n = 0;
	int rc = 0;

	st = db_query(db, "SELECT w.id, w.customer_id FROM webhooks w JOIN "
	              "pipeline_runs r ON r.pipeline_id = w.pipeline_id WHERE "
	              "r.id = ? ORDER BY w.created_at, w.id", "s", run_id);
	if (st == NULL)
		return db_last_err(db);
	while (n < WEBHOOKS_PER_RUN && (rc = db_fetch(st)) == 1) {
		snprintf(hooks[n], sizeof hooks[n], "%s", db_col_str(st, 0));
		snprintf(owners[n], sizeof owners[n], "%s", db_col_str(st, 1));
		n++;
	}
	db_done(st);
	if (rc < 0)
		return db_last_err(db);
	for (size_t i = 0; i < n; i++) {
		char id[DELIVERY_ID_LEN + 1], hex[RUN_ID_LEN + 1];
		struct queue_new q = { .kind = WEBHOOK_KIND, .ref_id = id,
		                       .customer_id = owners[i] };
		long long k;

		if (run_id_new(hex) != 0)
			return DB_ERR;
		snprintf(id, sizeof id, "msg_%s", hex);
		k = db_exec(db, "INSERT INTO webhook_deliveries (id, webhook_id, "
		    "customer_id, run_id, body) SELECT ?, ?, r.customer_id, r.id, "
		    "JSON_OBJECT('type', '" WEBHOOK_EVENT "', 'timestamp', "
		    DB_ISO_MS("r.finished_at") ", 'data', JSON_OBJECT('run_id', r.id, "
		    "'pipeline_id', r.pipeline_id, 'status', r.status, 'trigger', "
		    "r.trigger_type, 'attempt', r.attempt, 'rows_loaded', "
		    "r.rows_loaded, 'queued_at', " DB_ISO_MS("r.created_at") ", "
		    "'started_at', " DB_ISO_MS("r.started_at") ", 'finished_at', "
		    DB_ISO_MS("r.finished_at") ", 'duration_ms', TIMESTAMPDIFF("
		    "MICROSECOND, r.started_at, r.finished_at) DIV 1000, 'error', "
		    "r.error)) FROM pipeline_runs r WHERE r.id = ?", "sss", id,
		    hooks[i], run_id);
		if (k < 0)
			return (int)k;
		if ((k = queue_enqueue(db, &q)) < 0)
			return (int)k;
	}
	return (int)n;
}

