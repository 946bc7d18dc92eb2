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

struct cancel {
	const char *run_id, *customer_id, *by;
	char status[16];             /* the run's status after the cancel */
};

/* One attempt: 0 with the new status in c->status; C_NOT_FOUND,
 * C_FINISHED (c->status the final status) or a negative db error. */
static int cancel_body(struct db *db, void *arg)
{
	struct cancel *c = arg;
	const char *run_id = c->run_id, *by = c->by;
	char pipeline[PIPELINE_ID_LEN + 1] = "", msg[CANCEL_BY_MAX + 64];
	char *status_out = c->status;
	const struct db_text row[] = {
		{ status_out, sizeof c->status }, { pipeline, sizeof pipeline },
	};
	long long n = 0;
	int rc;

	rc = db_first_row(db, db_query(db, "SELECT status, pipeline_id FROM "
	                  "pipeline_runs WHERE id = ? AND customer_id = ? FOR UPDATE",
	                  "ss", run_id, c->customer_id), row, 2);
	if (rc <= 0)
		return rc < 0 ? rc : C_NOT_FOUND;
	snprintf(msg, sizeof msg, "cancelled by %s", by);
	if (strcmp(status_out, "CREATED") == 0) {
		if ((n = db_exec(db, "UPDATE pipeline_runs SET status = 'FAILED', "
		    "finished_at = UTC_TIMESTAMP(3), error = ?, cancel_requested_at = "
		    "UTC_TIMESTAMP(3), cancel_requested_by = ?, not_before = NULL "
		    "WHERE id = ?", "sss", msg, by, run_id)) >= 0 &&
		    (n = db_exec(db, "UPDATE run_task_status SET status = 'SKIPPED', "
		    "finished_at = UTC_TIMESTAMP(3), error = ? WHERE run_id = ? AND "
		    "status IN ('PENDING', 'RUNNING')", "ss", msg, run_id)) >= 0 &&
		    (n = db_exec(db, "UPDATE pipelines SET last_status = 'FAILED' "
		    "WHERE id = ?", "s", pipeline)) >= 0 &&
		    (n = db_exec(db, "UPDATE jobs SET job_status = 'FAILED' "
		    "WHERE pipeline_id = ?", "s", pipeline)) >= 0 &&
		    (n = run_events_record(db, run_id)) >= 0)
			n = log_line(db, run_id, "ERROR", msg);
		snprintf(status_out, sizeof c->status, "FAILED");
	} else if (strcmp(status_out, "RUNNING") == 0) {
		snprintf(msg, sizeof msg, "cancel requested by %s", by);
		if ((n = db_exec(db, "UPDATE pipeline_runs SET cancel_requested_at = "
		    "IFNULL(cancel_requested_at, UTC_TIMESTAMP(3)), cancel_requested_by "
		    "= IFNULL(cancel_requested_by, ?) WHERE id = ?", "ss", by,
		    run_id)) >= 0)
			n = log_line(db, run_id, "WARNING", msg);
	} else {
		return C_FINISHED;
	}
	return n < 0 ? (int)n : 0;
}

static int run_cancel(struct req *r)
{
	const char *run_id = platform_run_ref_or_reply(r);
	struct cancel c = { run_id, r->id.customer_id, r->id.sub, "" };
	char msg[96];
	struct json_object *o, *d;
	int rc;

	if (run_id == NULL)
		return -1;
	if (c.by == NULL || c.by[0] == '\0' || strlen(c.by) > CANCEL_BY_MAX)
		c.by = "a user";
	rc = db_tx(r->db, "run cancel", cancel_body, &c);
	if (rc == C_NOT_FOUND)
		return platform_reply(r, PLATFORM_RUN_UNKNOWN);
	if (rc == C_FINISHED) {
		snprintf(msg, sizeof msg, "The run has already finished (%s)", c.status);
		return platform_reply_text(r, PLATFORM_RUN_FINISHED, msg);
	}
	if (rc != 0)
		return resp_db_error(r, rc);
	d = json_object_new_object();
	json_object_object_add(d, "run_id", json_object_new_string(run_id));
	json_object_object_add(d, "status", json_object_new_string(c.status));
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
