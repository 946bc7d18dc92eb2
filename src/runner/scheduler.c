/* scheduler.c - cron schedules become runs.
 *
 * pipelines.next_run_at holds each active schedule's next firing (NULL when
 * there is no cron or the pipeline is paused; create, pause and resume keep
 * it so).  A tick claims due pipelines one at a time with SELECT ... FOR
 * UPDATE SKIP LOCKED, so several work processes never fire one schedule
 * twice, and in the same transaction:
 *   - inserts a run with trigger `schedule`, unless a run of the pipeline is
 *     CREATED or RUNNING (the active-run unique key answers duplicate: the
 *     firing is skipped, with a line in the process log);
 *   - moves next_run_at to the first firing after *now*, not after the slot
 *     that was due: after downtime the missed slots run once, not once each.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>


#include "db/db.h"
#include "runner/runner.h"
#include "util/cron.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/uuid.h"

#define SCHEDULE_BATCH 32          /* pipelines fired per tick at most */

int scheduler_next_run(const char *cron_text, const char *tz, time_t after,
                       time_t *next, char *err, size_t errlen)
{
	struct cron c;

	if (cron_parse(cron_text, &c, err, errlen) != 0)
		return -1;
	if (tz != NULL && tz[0] != '\0' && !cron_tz_valid(tz)) {
		snprintf(err, errlen, "unknown time zone %.64s", tz);
		return -1;
	}
	if (cron_next_tz(&c, tz, after, next) != 0) {
		snprintf(err, errlen, "the schedule never fires");
		return -1;
	}
	return 0;
}

struct due {
	char id[65];
	char customer[37];
	char cron[CRON_EXPR_MAX + 1];
	char tz[CRON_TZ_MAX + 1];
};

/* Fire one due schedule (one transaction attempt).  1 handled, 0 none
 * due, < 0 database error. */
static int fire_body(struct db *db, void *arg)
{
	char next_sql[TIME_SQL_LEN], run_id[RUN_ID_LEN + 1], err[200];
	struct due d;
	const struct db_text row[] = { { d.id, sizeof d.id }, { d.customer, sizeof d.customer },
	                               { d.cron, sizeof d.cron }, { d.tz, sizeof d.tz } };
	time_t next = 0;
	long long n;
	int rc;

	(void)arg;
	rc = db_first_row(db, db_query(db, "SELECT id, customer_id, cron, "
	    "IFNULL(cron_timezone, '') FROM pipelines WHERE paused = 0 AND cron IS NOT NULL "
	    "AND next_run_at IS NOT NULL AND next_run_at <= UTC_TIMESTAMP(3) "
	    "ORDER BY next_run_at LIMIT 1 FOR UPDATE SKIP LOCKED", ""), row, 4);
	if (rc <= 0)
		return rc;

	if (scheduler_next_run(d.cron, d.tz, time(NULL), &next, err, sizeof err) != 0) {
		/* Validated on create; a zone removed from the system since. */
		log_kv(LOG_WARN, "schedule cannot be computed; not rescheduled",
		       "pipeline=%s error=%s", d.id, LOG_Q(err));
		next = 0;
	}
	if (run_id_new(run_id) != 0)
		return DB_ERR;
	n = db_exec(db, "INSERT INTO pipeline_runs (id, pipeline_id, customer_id, "
	    "status, trigger_type) VALUES (?, ?, ?, 'CREATED', 'schedule')",
	    "sss", run_id, d.id, d.customer);
	if (n == DB_ERR_DUPLICATE) {
		log_kv(LOG_INFO, "scheduled run skipped: a run is already active",
		       "pipeline=%s", d.id);
	} else if (n < 0) {
		return (int)n;
	} else {
		if ((n = db_exec(db, "UPDATE pipelines SET last_status = 'CREATED' "
		    "WHERE id = ?", "s", d.id)) < 0 ||
		    (n = db_exec(db, "UPDATE jobs SET job_status = 'CREATED' "
		    "WHERE pipeline_id = ?", "s", d.id)) < 0)
			return (int)n;
		log_kv(LOG_INFO, "scheduled run created", "pipeline=%s run=%s",
		       d.id, run_id);
	}
	n = db_exec(db, "UPDATE pipelines SET next_run_at = ? WHERE id = ?",
	            "ss", time_sql(next_sql, next), d.id);
	return n < 0 ? (int)n : 1;
}

static int fire_one(struct work_ctx *w)
{
	return db_tx(w->db, "schedule firing", fire_body, NULL);
}

int scheduler_tick(struct work_ctx *w)
{
	int n = 0, rc = 0;

	while (n < SCHEDULE_BATCH && !work_stopping(w) && (rc = fire_one(w)) == 1)
		n++;
	if (rc < 0 && rc != DB_ERR_DEADLOCK)
		log_kv(LOG_WARN, "scheduler pass failed", "error=%s",
		       LOG_Q(db_error(w->db)));
	return rc < 0 && n == 0 ? rc : n;
}
