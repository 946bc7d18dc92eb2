/* run_cancel.c - POST /platform/pipeline_run/{run_id}/cancel.
 *
 * A CREATED run (waiting to be claimed, or waiting for a retry) is failed
 * here at once: the row lock taken first means no work process can be
 * claiming it at the same moment (a claim skips locked rows, and a run a
 * claim already holds is RUNNING by the time this lock is granted).  A
 * RUNNING run gets a cancel request; its supervisor in `sluice work` sees
 * it on its next heartbeat (runner_heartbeat_s), kills the task process and
 * fails the run with a "cancelled by <sub>" line.  Connectors never move
 * state ahead of committed rows, so a killed task leaves state as it was. */
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "db/db.h"
#include "db/run_events.h"
#include "http/errors.h"
#include "http/request.h"
#include "http/response.h"
#include "platform/platform.h"

#define CANCEL_BY_MAX 320                 /* pipeline_runs.cancel_requested_by */

/* One run log line inside the caller's transaction. */
static long long log_line(struct db *db, const char *run_id, const char *level,
                          const char *msg)
{
	long long n = db_exec(db, "UPDATE pipeline_runs SET log_lines = "
	                      "LAST_INSERT_ID(log_lines + 1) WHERE id = ?", "s", run_id);

	if (n < 0)
		return n;
	return db_exec(db, "INSERT INTO run_logs (run_id, line_no, ts, level, "
	               "task_id, message) VALUES (?, ?, UTC_TIMESTAMP(3), ?, NULL, ?)",
	               "siss", run_id, db_last_insert_id(db), level, msg);
}

enum { C_NOT_FOUND = 1, C_FINISHED = 2 };

/* 0 with the new status in status_out; C_NOT_FOUND, C_FINISHED (status_out
 * the final status) or a negative db error. */
static int cancel_tx(struct req *r, const char *run_id, const char *by,
                     char status_out[16])
{
	char pipeline[PIPELINE_ID_LEN + 1] = "", msg[CANCEL_BY_MAX + 64];
	struct db_stmt *st;
	long long n = 0;
	int rc;

	if ((rc = db_begin(r->db)) != DB_OK)
		return rc;
	st = db_query(r->db, "SELECT status, pipeline_id FROM pipeline_runs "
	              "WHERE id = ? AND customer_id = ? FOR UPDATE", "ss", run_id,
	              r->id.customer_id);
	if (st == NULL) {
		rc = db_last_err(r->db);
		goto out;
	}
	if ((rc = db_fetch(st)) == 1) {
		snprintf(status_out, 16, "%s", db_col_str(st, 0));
		snprintf(pipeline, sizeof pipeline, "%s", db_col_str(st, 1));
	}
	db_done(st);
	if (rc <= 0) {
		rc = rc < 0 ? db_last_err(r->db) : C_NOT_FOUND;
		goto out;
	}
	snprintf(msg, sizeof msg, "cancelled by %s", by);
	if (strcmp(status_out, "CREATED") == 0) {
		if ((n = db_exec(r->db, "UPDATE pipeline_runs SET status = 'FAILED', "
		    "finished_at = UTC_TIMESTAMP(3), error = ?, cancel_requested_at = "
		    "UTC_TIMESTAMP(3), cancel_requested_by = ?, not_before = NULL "
		    "WHERE id = ?", "sss", msg, by, run_id)) >= 0 &&
		    (n = db_exec(r->db, "UPDATE run_task_status SET status = 'SKIPPED', "
		    "finished_at = UTC_TIMESTAMP(3), error = ? WHERE run_id = ? AND "
		    "status IN ('PENDING', 'RUNNING')", "ss", msg, run_id)) >= 0 &&
		    (n = db_exec(r->db, "UPDATE pipelines SET last_status = 'FAILED' "
		    "WHERE id = ?", "s", pipeline)) >= 0 &&
		    (n = db_exec(r->db, "UPDATE jobs SET job_status = 'FAILED' "
		    "WHERE pipeline_id = ?", "s", pipeline)) >= 0 &&
		    (n = run_events_record(r->db, run_id)) >= 0)
			n = log_line(r->db, run_id, "ERROR", msg);
		snprintf(status_out, 16, "FAILED");
	} else if (strcmp(status_out, "RUNNING") == 0) {
		snprintf(msg, sizeof msg, "cancel requested by %s", by);
		if ((n = db_exec(r->db, "UPDATE pipeline_runs SET cancel_requested_at = "
		    "IFNULL(cancel_requested_at, UTC_TIMESTAMP(3)), cancel_requested_by "
		    "= IFNULL(cancel_requested_by, ?) WHERE id = ?", "ss", by,
		    run_id)) >= 0)
			n = log_line(r->db, run_id, "WARNING", msg);
	} else {
		rc = C_FINISHED;
		goto out;
	}
	if (n < 0) {
		rc = (int)n;
		goto out;
	}
	if ((rc = db_commit(r->db)) == DB_OK)
		return 0;
out:
	db_rollback(r->db);
	return rc;
}

static int run_cancel(struct req *r)
{
	const char *run_id = platform_run_ref_or_reply(r);
	const char *by = r->id.sub;
	char status[16] = "", msg[96];
	struct json_object *o, *d;
	int rc;

	if (run_id == NULL)
		return -1;
	if (by == NULL || by[0] == '\0' || strlen(by) > CANCEL_BY_MAX)
		by = "a user";
	rc = cancel_tx(r, run_id, by, status);
	if (rc == C_NOT_FOUND)
		return platform_reply(r, PLATFORM_RUN_UNKNOWN);
	if (rc == C_FINISHED) {
		snprintf(msg, sizeof msg, "The run has already finished (%s)", status);
		return platform_reply_text(r, PLATFORM_RUN_FINISHED, msg);
	}
	if (rc != 0)
		return resp_db_error(r, rc);
	d = json_object_new_object();
	json_object_object_add(d, "run_id", json_object_new_string(run_id));
	json_object_object_add(d, "status", json_object_new_string(status));
	o = json_object_new_object();
	json_object_object_add(o, "status", json_object_new_boolean(1));
	json_object_object_add(o, "data", d);
	return resp_json(r, 200, o);
}

const struct route platform_run_cancel_routes[] = {
	{ "POST", "/platform/pipeline_run/{run_id}/cancel", run_cancel,
	  ROUTE_AUTH_JWT, "PLATFORM.WRITE" },
	ROUTES_END
};
