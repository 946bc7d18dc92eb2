/* staging.c - staging tables are never left behind.
 *
 * A task registers a staging table in run_staging before it creates it,
 * and removes the row once the table was swapped in or dropped.  Whatever a
 * task could not clean up itself (it was killed by a cancel or the run's
 * timeout, it crashed, its process died) is dropped:
 *   - by the run's supervisor when the task ended (staging_drop_run);
 *   - by the runner_sweep work item `sluice work` queues every
 *     runner_sweep_interval_s, for rows of runs no longer RUNNING (their
 *     supervisor died too), and for tables named like staging tables that
 *     no row covers, older than runner_stale_s (left by versions before the
 *     registry, or by a pipeline deleted since). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "db/queue.h"
#include "db/warehouse.h"
#include "runner/connector.h"
#include "runner/runner.h"
#include "util/config.h"
#include "util/log.h"
#include "util/str.h"
#include "util/uuid.h"

#define SWEEP_MAX 256                 /* tables dropped per sweep */
#define STAGING_LIKE "\\_sluice\\_stage\\_%"

int staging_register(struct task_env *env, const char *schema, const char *table,
                     char *err, size_t errlen)
{
	if (db_exec(env->db, "INSERT INTO run_staging (wh_schema, wh_table, run_id, task_id) "
	            "VALUES (?, ?, ?, ?) ON DUPLICATE KEY UPDATE run_id = VALUES(run_id), "
	            "task_id = VALUES(task_id), created_at = UTC_TIMESTAMP(3)", "ssss",
	            schema, table, env->run_id, env->task_id) < 0) {
		str_errf(err, errlen, "cannot register the staging table: %s",
		         db_error(env->db));
		return -1;
	}
	return 0;
}

void staging_release(struct task_env *env, const char *schema, const char *table)
{
	db_exec(env->db, "DELETE FROM run_staging WHERE wh_schema = ? AND wh_table = ? "
	        "AND run_id = ?", "sss", schema, table, env->run_id);
}

struct named {
	char schema[WH_IDENT_MAX * 4 + 1];
	char table[WH_IDENT_MAX * 4 + 1];
	char run_id[RUN_ID_LEN + 1];
};

/* Drop each table of list (n) and its registry row; how many went. */
static int drop_all(struct db *db, struct wh *wh, const struct named *list, size_t n,
                    struct run_log *log)
{
	int dropped = 0;

	for (size_t i = 0; i < n; i++) {
		char err[300];

		if (wh_table_drop(wh, list[i].schema, list[i].table, err, sizeof err) != 0) {
			log_kv(LOG_WARN, "staging table not dropped", "schema=%s table=%s "
			       "error=%s", LOG_Q(list[i].schema), list[i].table, LOG_Q(err));
			continue;
		}
		db_exec(db, "DELETE FROM run_staging WHERE wh_schema = ? AND wh_table = ?",
		        "ss", list[i].schema, list[i].table);
		if (log != NULL)
			run_log_warning(log, "staging table %s.%s dropped: its task did not "
			                "finish", list[i].schema, list[i].table);
		log_kv(LOG_INFO, "staging table dropped", "schema=%s table=%s run=%s",
		       LOG_Q(list[i].schema), list[i].table, list[i].run_id);
		dropped++;
	}
	return dropped;
}

/* Rows of run_staging that query (one string parameter, or none) selects:
 * schema, table, run id. */
static size_t registered(struct db *db, const char *sql, const char *param,
                         struct named *out, size_t cap)
{
	struct db_stmt *st = param != NULL ? db_query(db, sql, "s", param)
	                                   : db_query(db, sql, "");
	size_t n = 0;

	if (st == NULL)
		return 0;
	while (n < cap && db_fetch(st) == 1) {
		snprintf(out[n].schema, sizeof out[n].schema, "%s", db_col_str(st, 0));
		snprintf(out[n].table, sizeof out[n].table, "%s", db_col_str(st, 1));
		snprintf(out[n].run_id, sizeof out[n].run_id, "%s", db_col_str(st, 2));
		n++;
	}
	db_done(st);
	return n;
}

int staging_drop_run(const struct config *cfg, struct db *db, const char *run_id,
                     struct run_log *log)
{
	static struct named list[SWEEP_MAX];
	struct wh *wh;
	char err[300];
	size_t n;
	int dropped;

	n = registered(db, "SELECT wh_schema, wh_table, run_id FROM run_staging "
	               "WHERE run_id = ?", run_id, list, SWEEP_MAX);
	if (n == 0)
		return 0;
	if ((wh = wh_open(cfg, err, sizeof err)) == NULL) {
		log_kv(LOG_WARN, "staging tables left to the sweep", "run=%s error=%s",
		       run_id, LOG_Q(err));
		return -1;
	}
	dropped = drop_all(db, wh, list, n, log);
	wh_close(wh);
	return dropped;
}

struct orphans {
	struct db *db;
	struct named *list;
	size_t n, cap;
};

/* A staging-named table no registry row covers. */
static void collect_orphan(void *arg, const char *schema, const char *table)
{
	struct orphans *o = arg;
	struct db_stmt *st;
	int covered;

	if (o->n == o->cap)
		return;
	st = db_query(o->db, "SELECT 1 FROM run_staging WHERE wh_schema = ? AND "
	              "wh_table = ?", "ss", schema, table);
	covered = st == NULL ? 1 : db_fetch(st);
	db_done(st);
	if (covered != 0)
		return;
	snprintf(o->list[o->n].schema, sizeof o->list[0].schema, "%s", schema);
	snprintf(o->list[o->n].table, sizeof o->list[0].table, "%s", table);
	snprintf(o->list[o->n].run_id, sizeof o->list[0].run_id, "none");
	o->n++;
}

void runner_sweep_request(struct db *db)
{
	static const struct queue_new sweep = { .kind = "runner_sweep",
	                                        .ref_id = "staging", .max_attempts = 1 };

	if (queue_pending(db, sweep.kind, sweep.ref_id) == 0)
		queue_enqueue(db, &sweep);
}

int runner_sweep_work(struct work_ctx *w, const struct work_item *it,
                      char *err, size_t errlen)
{
	static struct named list[SWEEP_MAX];
	struct orphans o = { w->db, list, 0, SWEEP_MAX };
	struct wh *wh;
	size_t n;
	int dropped;

	(void)it;
	/* Registered by runs that are over (or gone with their pipeline). */
	n = registered(w->db, "SELECT s.wh_schema, s.wh_table, s.run_id FROM run_staging s "
	               "LEFT JOIN pipeline_runs r ON r.id = s.run_id "
	               "WHERE r.id IS NULL OR r.status <> 'RUNNING'", NULL, list, SWEEP_MAX);
	if ((wh = wh_open(w->cfg, err, errlen)) == NULL)
		return -1;
	dropped = drop_all(w->db, wh, list, n, NULL);
	/* Named like ours, registered by nobody. */
	if (wh_tables_like(wh, STAGING_LIKE, w->cfg->runner_stale_s, collect_orphan, &o,
	                   err, errlen) < 0) {
		wh_close(wh);
		return -1;
	}
	dropped += drop_all(w->db, wh, list, o.n, NULL);
	wh_close(wh);
	if (dropped > 0)
		log_kv(LOG_INFO, "staging sweep", "dropped=%d", dropped);
	return 0;
}
