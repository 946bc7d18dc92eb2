/* runs.c - pipeline runs and their logs: execute, the run listing, the
 * log lines of a run.
 *
 * Execute only records the wish: a run row in state CREATED that
 * `sluice work` claims later.  The unique active_pipeline_id column of
 * pipeline_runs allows one CREATED or RUNNING run per pipeline, so a second
 * execute is a duplicate key (409) without a race.  Runs and log lines are
 * read with the customer in every WHERE clause. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "auth/auth.h"
#include "db/db.h"
#include "http/errors.h"
#include "http/request.h"
#include "http/response.h"
#include "http/validate.h"
#include "platform/platform.h"
#include "util/log.h"
#include "util/str.h"
#include "util/uuid.h"

#define RUNS_LIMIT_DEFAULT 100
#define RUNS_LIMIT_MAX     1000
#define LOGS_LIMIT_DEFAULT 1000
#define LOGS_LIMIT_MAX     10000
#define OFFSET_MAX         1000000000LL
#define TASK_ID_MAX        128            /* orchestration_tasks.task_id */
#define REQUESTED_BY_MAX   320            /* pipeline_runs.requested_by */


/* --- small pieces ------------------------------------------------------------ */

/* {"status": true, "data": data} - the success shape of the run calls. */
static int reply_data(struct req *r, struct json_object *data)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "status", json_object_new_boolean(1));
	json_object_object_add(o, "data", data);
	return resp_json(r, 200, o);
}

static struct json_object *str_or_null(const struct db_stmt *st, unsigned col)
{
	return db_col_null(st, col) ? NULL : json_object_new_string(db_col_str(st, col));
}

/* 1 when the row the query finds exists, 0 when not, or an answer was sent
 * for a database failure and -1 is returned. */
static int row_exists(struct req *r, const char *sql, const char *id)
{
	struct db_stmt *st = db_query(r->db, sql, "ss", id, r->id.customer_id);
	int rc;

	if (st == NULL)
		return resp_db_error(r, db_last_err(r->db));
	rc = db_fetch(st);
	db_done(st);
	return rc < 0 ? resp_db_error(r, db_last_err(r->db)) : rc;
}

/* --- POST /platform/pipeline/execute ----------------------------------------- */

struct execute {
	const char *pipeline_id, *customer_id, *run_id, *by;
};

/* One attempt: 1 the run is created, 0 no such pipeline of the customer,
 * < 0 enum db_err (DB_ERR_DUPLICATE: a run is already active). */
static int execute_body(struct db *db, void *arg)
{
	const struct execute *e = arg;
	struct db_stmt *st;
	long long n;
	int rc;

	/* Locks the pipeline: a concurrent delete waits for this run. */
	st = db_query(db, "SELECT 1 FROM pipelines WHERE id = ? AND customer_id = ? "
	              "FOR UPDATE", "ss", e->pipeline_id, e->customer_id);
	if (st == NULL)
		return db_last_err(db);
	rc = db_fetch(st);
	db_done(st);
	if (rc <= 0)
		return rc;
	if ((n = db_exec(db, "INSERT INTO pipeline_runs (id, pipeline_id, customer_id,"
	                 " status, trigger_type, requested_by, request_id)"
	                 " VALUES (?, ?, ?, 'CREATED', 'manual', ?, ?)", "sssss",
	                 e->run_id, e->pipeline_id, e->customer_id, e->by,
	                 log_request_id())) < 0 ||
	    (n = db_exec(db, "UPDATE pipelines SET last_status = 'CREATED'"
	                 " WHERE id = ?", "s", e->pipeline_id)) < 0 ||
	    (n = db_exec(db, "UPDATE jobs SET job_status = 'CREATED'"
	                 " WHERE pipeline_id = ?", "s", e->pipeline_id)) < 0)
		return (int)n;
	return 1;
}

/* The run row and the CREATED statuses, all or nothing (retried on a
 * deadlock).  0; or -1 after answering (404 unknown pipeline, 409 a run is
 * active, 5xx). */
static int execute_tx(struct req *r, const char *pipeline_id, const char *run_id)
{
	struct execute e = { pipeline_id, r->id.customer_id, run_id, r->id.sub };
	int rc;

	if (e.by != NULL && strlen(e.by) > REQUESTED_BY_MAX)
		e.by = NULL;              /* who asked is a courtesy, not a key */
	rc = db_tx(r->db, "run execute", execute_body, &e);
	if (rc == 1)
		return 0;
	if (rc == 0)
		return platform_reply(r, PLATFORM_PIPELINE_UNKNOWN);
	if (rc != DB_ERR_DUPLICATE)
		return resp_db_error(r, rc);
	return platform_reply(r, PLATFORM_RUN_ACTIVE);
}

static int run_execute(struct req *r)
{
	char pipeline_id[PIPELINE_ID_LEN + 1], run_id[RUN_ID_LEN + 1];
	struct json_object *d;

	if (platform_pipeline_ref_or_reply(r, PLATFORM_PIPELINE_UNKNOWN,
	                                   pipeline_id) != 0)
		return -1;
	if (auth_customer_ensure_or_reply(r) == NULL)
		return -1;
	if (run_id_new(run_id) != 0)
		return resp_internal(r, "CSPRNG failed");
	if (execute_tx(r, pipeline_id, run_id) != 0)
		return -1;
	d = json_object_new_object();
	json_object_object_add(d, "run_id", json_object_new_string(run_id));
	json_object_object_add(d, "pipeline_id", json_object_new_string(pipeline_id));
	json_object_object_add(d, "status", json_object_new_string("CREATED"));
	return reply_data(r, d);
}

/* --- GET /platform/pipeline/{pipeline_id}/pipeline_run --------------------------- */

static struct json_object *run_render(const struct db_stmt *st)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "run_id", json_object_new_string(db_col_str(st, 0)));
	json_object_object_add(o, "status", json_object_new_string(db_col_str(st, 1)));
	json_object_object_add(o, "trigger", json_object_new_string(db_col_str(st, 2)));
	json_object_object_add(o, "started_at", str_or_null(st, 3));
	json_object_object_add(o, "finished_at", str_or_null(st, 4));
	json_object_object_add(o, "rows_loaded", json_object_new_int64(db_col_ll(st, 5)));
	return o;
}

/* The run listing's query: a page of runs. */
struct page {
	long long limit, offset;
};

const struct vfield platform_run_query[] = {
	{ "limit", V_INT, 0, 1, RUNS_LIMIT_MAX, NULL, NULL, VOFF(struct page, limit) },
	{ "offset", V_INT, 0, 0, OFFSET_MAX, NULL, NULL, VOFF(struct page, offset) },
	VFIELDS_END
};

static int run_list(struct req *r)
{
	char pipeline_id[PIPELINE_ID_LEN + 1];
	struct page q = { RUNS_LIMIT_DEFAULT, 0 };
	struct json_object *runs, *d;
	struct verror e;
	int rc;

	if (platform_pipeline_id_parse(req_param(r, "pipeline_id"), pipeline_id) != 0)
		return platform_reply(r, PLATFORM_PIPELINE_UNKNOWN);
	if (validate_query(platform_run_query, r, &q, NULL, &e) != 0)
		return platform_reply_verror(r, &e);
	if (req_db_or_reply(r) == NULL)
		return -1;
	rc = row_exists(r, "SELECT 1 FROM pipelines WHERE id = ? AND customer_id = ?",
	                pipeline_id);
	if (rc <= 0)
		return rc < 0 ? -1 : platform_reply(r, PLATFORM_PIPELINE_UNKNOWN);
	/* Newest first; the id breaks ties within one millisecond. */
	runs = req_rows_or_reply(r, db_query(r->db, "SELECT id, status, trigger_type, "
	    ISO_MS("started_at") ", " ISO_MS("finished_at") ", rows_loaded FROM "
	    "pipeline_runs WHERE pipeline_id = ? AND customer_id = ? ORDER BY "
	    "created_at DESC, id DESC LIMIT ? OFFSET ?", "ssii", pipeline_id,
	    r->id.customer_id, q.limit, q.offset), run_render);
	if (runs == NULL)
		return -1;
	d = json_object_new_object();
	json_object_object_add(d, "pipeline_id", json_object_new_string(pipeline_id));
	json_object_object_add(d, "runs", runs);
	return reply_data(r, d);
}

/* --- GET /platform/pipeline/pipeline_run/{run_id}/logs ----------------------------- */

/* level=L means L and the levels above it: what a reader looking for
 * trouble wants.  Without level every line is shown, DEBUG included.
 * The list is bound as four values, padded with the highest level. */
static const char *const levels[] = { "DEBUG", "INFO", "WARNING", "ERROR" };

struct log_filter {
	const char *run_id;
	const char *level[4];
	const char *task_id;      /* NULL: every task */
	long long offset, limit;
};

/* The log query as given; level the index in log_levels, -1 absent. */
struct log_query {
	int level;
	const char *task_id;
	long long offset, limit;
};

static const char *const log_levels[] = { "INFO", "WARNING", "ERROR", NULL };

const struct vfield platform_log_query[] = {
	{ "level", V_ENUM, 0, 0, 0, log_levels, NULL, VOFF(struct log_query, level) },
	{ "task_id", V_STR, 0, 1, TASK_ID_MAX, NULL, NULL,
	  VOFF(struct log_query, task_id) },
	{ "offset", V_INT, 0, 0, OFFSET_MAX, NULL, NULL,
	  VOFF(struct log_query, offset) },
	{ "limit", V_INT, 0, 1, LOGS_LIMIT_MAX, NULL, NULL,
	  VOFF(struct log_query, limit) },
	VFIELDS_END
};

/* The filter of the query; 0, or -1 after a 400 naming the parameter. */
static int logs_parse(struct req *r, struct log_filter *f)
{
	struct log_query q = { -1, NULL, 0, LOGS_LIMIT_DEFAULT };
	size_t from = 0;              /* DEBUG and up */
	struct verror e;

	if (validate_query(platform_log_query, r, &q, NULL, &e) != 0)
		return platform_reply_verror(r, &e);
	if (q.level >= 0)
		from = (size_t)q.level + 1;     /* levels[] starts at DEBUG */
	for (size_t i = 0; i < 4; i++)
		f->level[i] = levels[from + i < 4 ? from + i : 3];
	f->task_id = q.task_id;
	f->offset = q.offset;
	f->limit = q.limit;
	return 0;
}

#define LOGS_WHERE " FROM run_logs WHERE run_id = ? AND level IN (?, ?, ?, ?)"
#define LOGS_TASK  " AND task_id = ?"
#define LOGS_COUNT "SELECT COUNT(*)"
#define LOGS_ROWS \
	"SELECT " ISO_MS("ts") ", level, task_id, message"
#define LOGS_PAGE  " ORDER BY line_no LIMIT ? OFFSET ?"

/* The count (count true) or the page of lines the filter selects. */
static struct db_stmt *logs_query(struct req *r, const struct log_filter *f,
                                  bool count)
{
	const char *const *l = f->level;

	if (f->task_id == NULL && count)
		return db_query(r->db, LOGS_COUNT LOGS_WHERE, "sssss",
		                f->run_id, l[0], l[1], l[2], l[3]);
	if (f->task_id == NULL)
		return db_query(r->db, LOGS_ROWS LOGS_WHERE LOGS_PAGE, "sssssii",
		                f->run_id, l[0], l[1], l[2], l[3], f->limit, f->offset);
	if (count)
		return db_query(r->db, LOGS_COUNT LOGS_WHERE LOGS_TASK, "ssssss",
		                f->run_id, l[0], l[1], l[2], l[3], f->task_id);
	return db_query(r->db, LOGS_ROWS LOGS_WHERE LOGS_TASK LOGS_PAGE, "ssssssii",
	                f->run_id, l[0], l[1], l[2], l[3], f->task_id, f->limit,
	                f->offset);
}

static struct json_object *log_render(const struct db_stmt *st)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "timestamp", json_object_new_string(db_col_str(st, 0)));
	json_object_object_add(o, "level", json_object_new_string(db_col_str(st, 1)));
	json_object_object_add(o, "task_id", str_or_null(st, 2));
	json_object_object_add(o, "message", json_object_new_string(db_col_str(st, 3)));
	return o;
}

/* The filtered lines into *logs and their number into *total; 0 or -1
 * after answering a database failure. */
static int logs_read(struct req *r, const struct log_filter *f,
                     struct json_object **logs, long long *total)
{
	if (req_count_or_reply(r, logs_query(r, f, true), total) != 0)
		return -1;
	*logs = req_rows_or_reply(r, logs_query(r, f, false), log_render);
	return *logs != NULL ? 0 : -1;
}

static int run_logs(struct req *r)
{
	struct json_object *logs = NULL, *d;
	struct log_filter f;
	long long total = 0;
	int rc;

	f.run_id = req_param(r, "run_id");
	if (platform_run_id_check(f.run_id) != 0)
		return platform_reply(r, PLATFORM_RUN_UNKNOWN);
	if (logs_parse(r, &f) != 0 || req_db_or_reply(r) == NULL)
		return -1;
	rc = row_exists(r, "SELECT 1 FROM pipeline_runs WHERE id = ? AND customer_id = ?",
	                f.run_id);
	if (rc <= 0)
		return rc < 0 ? -1 : platform_reply(r, PLATFORM_RUN_UNKNOWN);
	if (logs_read(r, &f, &logs, &total) != 0)
		return -1;
	d = json_object_new_object();
	json_object_object_add(d, "run_id", json_object_new_string(f.run_id));
	json_object_object_add(d, "logs", logs);
	json_object_object_add(d, "total_lines", json_object_new_int64(total));
	return reply_data(r, d);
}

const struct route platform_run_routes[] = {
	{ "POST", "/platform/pipeline/execute", run_execute, ROUTE_AUTH_JWT,
	  "PLATFORM.WRITE" },
	{ "GET", "/platform/pipeline/{pipeline_id}/pipeline_run", run_list,
	  ROUTE_AUTH_JWT, "PLATFORM.READ" },
	{ "GET", "/platform/pipeline/pipeline_run/{run_id}/logs", run_logs,
	  ROUTE_AUTH_JWT, "PLATFORM.READ" },
	ROUTES_END
};
