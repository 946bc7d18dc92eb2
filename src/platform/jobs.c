/* jobs.c - operations on one job (and the pipeline-wide memory setting):
 * memory, reset-state, sync-mode, and PATCH of the input.
 *
 * Every handler reads the job inside its transaction with FOR UPDATE,
 * scoped by the caller's customer through the pipeline, so a concurrent
 * change or run start cannot slip between the check and the write.  The
 * sync-mode rules are in sync_mode.c; this file reads and writes. */
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "db/db.h"
#include "http/errors.h"
#include "http/request.h"
#include "http/response.h"
#include "http/validate.h"
#include "platform/pipelines.h"
#include "platform/platform.h"
#include "platform/sync_mode.h"
#include "util/arena.h"
#include "util/config.h"

/* --- the job row ------------------------------------------------------------ */

struct job_row {
	const char *id;
	const char *pipeline_id;
	long long index;
	const char *connector;
	const char *plugin;              /* NULL when input has none */
	enum sync_load load_type;
	const char *column_name;         /* NULLs as in the table */
	const char *column_type;
	const char *primary_keys;        /* JSON text */
	const char *include;             /* JSON text */
	const char *input;               /* JSON text */
	const char *bookmark;            /* job_state.incremental_column_value */
	bool running;
};

static const char *col_dup(struct req *r, struct db_stmt *st, unsigned c)
{
	return db_col_null(st, c) ? NULL
	                          : arena_strndup(r->arena, db_col_str(st, c),
	                                          db_col_len(st, c));
}

/* The caller's job, locked until the transaction ends: 1, 0 when there is
 * none, or a negative enum db_err.  "Running" as the contract says: the job
 * or an active run of its pipeline is RUNNING. */
static int job_lock(struct req *r, const char *job_id, struct job_row *j)
{
	struct db_stmt *st;
	int rc;

	st = db_query(r->db,
	    "SELECT j.id, j.pipeline_id, j.job_index, j.connector, "
	    "JSON_UNQUOTE(JSON_EXTRACT(j.input, '$.plugin')), j.load_type, "
	    "j.incremental_column_name, j.incremental_column_type, j.primary_keys, "
	    "j.column_include_list, j.input, s.incremental_column_value, "
	    "j.job_status = 'RUNNING' OR EXISTS (SELECT 1 FROM pipeline_runs pr "
	    "  WHERE pr.pipeline_id = j.pipeline_id AND pr.status = 'RUNNING') "
	    "FROM jobs j JOIN pipelines p ON p.id = j.pipeline_id "
	    "LEFT JOIN job_state s ON s.job_id = j.id "
	    "WHERE j.id = ? AND p.customer_id = ? FOR UPDATE",
	    "ss", job_id, r->id.customer_id);
	if (st == NULL)
		return db_last_err(r->db);
	if ((rc = db_fetch(st)) == 1) {
		j->id = col_dup(r, st, 0);
		j->pipeline_id = col_dup(r, st, 1);
		j->index = db_col_ll(st, 2);
		j->connector = col_dup(r, st, 3);
		j->plugin = col_dup(r, st, 4);
		j->load_type = sync_load_parse(db_col_str(st, 5));
		j->column_name = col_dup(r, st, 6);
		j->column_type = col_dup(r, st, 7);
		j->primary_keys = col_dup(r, st, 8);
		j->include = col_dup(r, st, 9);
		j->input = col_dup(r, st, 10);
		j->bookmark = col_dup(r, st, 11);
		j->running = db_col_ll(st, 12) != 0;
	}
	db_done(st);
	return rc < 0 ? db_last_err(r->db) : rc;
}

/* What a job step decided, inside its transaction: JOB_WRITTEN, or a
 * refusal (nothing written; the handler answers it after the commit). */
enum { JOB_MISSING = 0, JOB_WRITTEN = 1, JOB_REFUSED = 2, JOB_REFUSED_2 = 3 };

/* One attempt's work on the locked job: a JOB_ value or a negative enum
 * db_err.  It may run again on a deadlock: it starts from its argument. */
typedef int (*job_step_fn)(struct req *r, struct job_row *j, void *arg);

struct job_tx {
	struct req *r;
	const char *id;
	struct job_row *j;
	job_step_fn step;
	void *arg;
};

static int job_tx_body(struct db *db, void *arg)
{
	const struct job_tx *t = arg;
	int rc;

	/* The pipeline row written too (pipeline_touch), once per attempt. */
	if ((rc = job_lock(t->r, t->id, t->j)) != 1 ||
	    (rc = pipeline_touch(db, t->j->pipeline_id)) < 0)
		return rc;
	return t->step(t->r, t->j, t->arg);
}

/* Lock the caller's job id (canonical) and run step on it, one transaction
 * retried whole on a deadlock.  step's JOB_ value (JOB_MISSING when there
 * is no such job), or -1 after a database error was answered. */
static int job_tx(struct req *r, const char *id, struct job_row *j,
                  job_step_fn step, void *arg)
{
	struct job_tx t = { r, id, j, step, arg };
	int rc;

	if (req_db_or_reply(r) == NULL)
		return -1;
	rc = db_tx(r->db, "job change", job_tx_body, &t);
	return rc < 0 ? resp_db_error(r, rc) : rc;
}

/* A JSON array stored as text, as strings in the arena (none when NULL
 * or not an array of strings). */
static struct sync_list list_from_json(struct req *r, const char *text)
{
	struct sync_list l = { NULL, 0 };
	struct json_object *a = text != NULL ? json_tokener_parse(text) : NULL;
	size_t n;

	if (json_object_is_type(a, json_type_array)) {
		n = json_object_array_length(a);
		l.v = arena_alloc(r->arena, (n + 1) * sizeof *l.v);
		for (size_t i = 0; i < n; i++) {
			struct json_object *e = json_object_array_get_idx(a, i);

			if (json_object_is_type(e, json_type_string))
				l.v[l.n++] = arena_strdup(r->arena,
				                          json_object_get_string(e));
		}
	}
	json_object_put(a);
	return l;
}

/* The job's input as GET renders it: the stored object plus the settings
 * kept in columns and the jdbc bookmark.  A new object owned by the caller. */
static struct json_object *input_render(const struct job_row *j)
{
	struct json_object *in = json_tokener_parse(j->input);
	bool jdbc = strcmp(j->connector, "jdbc") == 0;

	if (!json_object_is_type(in, json_type_object)) {
		json_object_put(in);
		in = json_object_new_object();
	}
	if (jdbc)
		json_object_object_add(in, "load_type",
		    json_object_new_string(sync_load_name(j->load_type)));
	if (j->column_name != NULL)
		json_object_object_add(in, "incremental_column_name",
		    json_object_new_string(j->column_name));
	if (j->column_type != NULL)
		json_object_object_add(in, "incremental_column_type",
		    json_object_new_string(j->column_type));
	if (j->primary_keys != NULL)
		json_object_object_add(in, "primary_keys",
		    json_tokener_parse(j->primary_keys));
	if (j->include != NULL)
		json_object_object_add(in, "column_include_list",
		    json_tokener_parse(j->include));
	if (jdbc && j->bookmark != NULL)
		json_object_object_add(in, "incremental_column_value",
		    json_object_new_string(j->bookmark));
	return in;
}

static struct json_object *jstr(const char *s)
{
	return json_object_new_string(s);
}

/* --- memory ------------------------------------------------------------------ */

struct amount_in {
	long long mb;
};

/* The maximum is the config's memory_max_mb. */
const struct vfield platform_memory_body[] = {
	{ "amount", V_INT, V_REQUIRED | V_CFG_MAX, 1, 0, NULL, NULL, VOFF(struct amount_in, mb) },
	VFIELDS_END
};

/* body.amount in 1..memory_max_mb; 0, or -1 after answering 400 in the
 * {"message", "statusCode"} shape (or the body's own error). */
static int amount_or_reply(struct req *r, long long *mb)
{
	struct json_object *body = req_json_body_or_reply(r);
	struct vfield fields[sizeof platform_memory_body / sizeof platform_memory_body[0]];
	struct amount_in in = { 0 };
	struct verror e;
	char msg[160];

	if (body == NULL)
		return -1;
	memcpy(fields, platform_memory_body, sizeof fields);
	fields[0].max = r->cfg->memory_max_mb;
	if (validate_json(fields, body, &in, NULL, &e) == 0) {
		*mb = in.mb;
		return 0;
	}
	/* Above the maximum: the spec's own answer. */
	if (e.code == VERR_RANGE &&
	    json_object_get_int64(json_object_object_get(body, "amount")) > 0) {
		snprintf(msg, sizeof msg, "Memory allocation cannot exceed %d MB "
		         "through the API; ask support for more", r->cfg->memory_max_mb);
		return platform_reply_text(r, PLATFORM_BAD_AMOUNT, msg);
	}
	return platform_reply_text(r, PLATFORM_BAD_AMOUNT, e.message);
}

static struct json_object *memory_answer(const char *pipeline_id,
                                         const char *job_id, long long mb)
{
	struct json_object *o = json_object_new_object();
	struct json_object *d = json_object_new_object();
	char msg[256];

	if (job_id != NULL)
		snprintf(msg, sizeof msg, "Memory of job %s set to %lld MB; it takes "
		         "effect on the next execution", job_id, mb);
	else
		snprintf(msg, sizeof msg, "Memory of every job of pipeline %s set to "
		         "%lld MB; it takes effect on the next execution",
		         pipeline_id, mb);
	json_object_object_add(d, "message", jstr(msg));
	json_object_object_add(d, "pipeline_id", jstr(pipeline_id));
	if (job_id != NULL)
		json_object_object_add(d, "job_id", jstr(job_id));
	json_object_object_add(d, "memory_mb", json_object_new_int64(mb));
	json_object_object_add(o, "status", json_object_new_boolean(1));
	json_object_object_add(o, "data", d);
	return o;
}

/* 1 when the caller has the pipeline (locked), 0 when not, or < 0. */
static int pipeline_lock(struct req *r, const char *id)
{
	struct db_stmt *st = db_query(r->db,
	    "SELECT 1 FROM pipelines WHERE id = ? AND customer_id = ? FOR UPDATE",
	    "ss", id, r->id.customer_id);
	int rc;

	if (st == NULL)
		return db_last_err(r->db);
	rc = db_fetch(st);
	db_done(st);
	return rc < 0 ? db_last_err(r->db) : rc;
}

struct memory_tx {
	struct req *r;
	const char *pipeline_id;
	long long mb;
};

/* One attempt: 1 set, 0 no such pipeline of the caller, or < 0. */
static int pipeline_memory_body(struct db *db, void *arg)
{
	const struct memory_tx *m = arg;
	long long n;
	int rc;

	if ((rc = pipeline_lock(m->r, m->pipeline_id)) != 1)
		return rc;
	n = db_exec(db, "UPDATE pipelines SET memory_allocated_mb = ? "
	            "WHERE id = ?", "is", m->mb, m->pipeline_id);
	if (n >= 0)
		n = db_exec(db, "UPDATE jobs SET memory_allocated_mb = ? "
		            "WHERE pipeline_id = ?", "is", m->mb, m->pipeline_id);
	return n < 0 ? (int)n : 1;
}

static int pipeline_memory_put(struct req *r)
{
	char id[PIPELINE_ID_LEN + 1];
	struct memory_tx m = { r, id, 0 };
	int rc;

	if (platform_query_or_reply(r, NULL, NULL) != 0)
		return -1;
	if (platform_pipeline_id_parse(req_param(r, "pipeline_id"), id) != 0)
		return platform_reply(r, PLATFORM_PIPELINE_UNKNOWN);
	if (amount_or_reply(r, &m.mb) != 0 || req_db_or_reply(r) == NULL)
		return -1;
	rc = db_tx(r->db, "pipeline memory", pipeline_memory_body, &m);
	if (rc != 1)
		return rc < 0 ? resp_db_error(r, rc)
		              : platform_reply(r, PLATFORM_PIPELINE_UNKNOWN);
	return resp_json(r, 200, memory_answer(id, NULL, m.mb));
}

static int job_memory_step(struct req *r, struct job_row *j, void *arg)
{
	long long n = db_exec(r->db, "UPDATE jobs SET memory_allocated_mb = ? "
	                      "WHERE id = ?", "is", *(long long *)arg, j->id);

	return n < 0 ? (int)n : JOB_WRITTEN;
}

static int job_memory_put(struct req *r)
{
	char id[JOB_ID_MAX + 1], pid[PIPELINE_ID_LEN + 1];
	struct job_row j;
	long long mb;
	int rc;

	if (platform_query_or_reply(r, NULL, NULL) != 0)
		return -1;
	if (platform_job_id_parse(req_param(r, "job_id"), id, pid, NULL) != 0)
		return platform_reply(r, PLATFORM_JOB_UNKNOWN);
	if (amount_or_reply(r, &mb) != 0)
		return -1;
	if ((rc = job_tx(r, id, &j, job_memory_step, &mb)) <= 0)
		return rc < 0 ? -1 : platform_reply(r, PLATFORM_JOB_UNKNOWN);
	return resp_json(r, 200, memory_answer(pid, id, mb));
}

/* --- reset-state ---------------------------------------------------------------- */

/* What the next run does after the reset, per connector (spec: reset table). */
static const char *reset_effect(const struct job_row *j)
{
	if (strcmp(j->connector, "singer") == 0)
		return "The next execution starts from the beginning: a full sync of "
		       "every stream; new bookmarks are written after it succeeds.";
	if (strcmp(j->connector, "file_storage") == 0)
		return "The next execution starts from the beginning: every file under "
		       "the prefix is processed, whatever its last-modified time.";
	if (j->load_type == SYNC_FULL_LOAD)
		return "The next execution starts from the beginning, as every run of a "
		       "full_load job does: there was no incremental state to clear.";
	return "The next execution starts from the beginning: all rows are "
	       "extracted, then tracked incrementally again.";
}

static long long reset_apply(struct req *r, const struct job_row *j)
{
	if (strcmp(j->connector, "singer") == 0)
		return db_exec(r->db, "UPDATE job_state SET state = NULL "
		               "WHERE job_id = ?", "s", j->id);
	if (strcmp(j->connector, "file_storage") == 0)
		return db_exec(r->db, "DELETE FROM file_storage_processed "
		               "WHERE job_id = ?", "s", j->id);
	return db_exec(r->db, "UPDATE job_state SET incremental_column_value = NULL "
	               "WHERE job_id = ?", "s", j->id);
}

static int job_reset_step(struct req *r, struct job_row *j, void *arg)
{
	long long n;

	(void)arg;
	if (j->running)
		return JOB_REFUSED;
	n = reset_apply(r, j);
	return n < 0 ? (int)n : JOB_WRITTEN;
}

static int job_reset_state(struct req *r)
{
	char id[JOB_ID_MAX + 1], detail[160];
	struct json_object *o;
	struct job_row j;
	int rc;

	if (platform_query_or_reply(r, NULL, NULL) != 0)
		return -1;
	if (platform_job_id_parse(req_param(r, "job_id"), id, NULL, NULL) != 0)
		return platform_reply(r, PLATFORM_JOB_NOT_FOUND);
	if ((rc = job_tx(r, id, &j, job_reset_step, NULL)) <= 0)
		return rc < 0 ? -1 : platform_reply(r, PLATFORM_JOB_NOT_FOUND);
	if (rc == JOB_REFUSED)
		return platform_reply(r, PLATFORM_JOB_RUNNING_RESET);
	snprintf(detail, sizeof detail, "State of job %s reset", id);
	o = json_object_new_object();
	json_object_object_add(o, "status", json_object_new_boolean(1));
	json_object_object_add(o, "detail", jstr(detail));
	json_object_object_add(o, "message", jstr(reset_effect(&j)));
	return resp_json(r, 200, o);
}

/* --- sync-mode ---------------------------------------------------------------------- */

static int reply_sync_errors(struct req *r, const struct sync_result *res)
{
	struct platform_verr v;

	platform_verr_init(&v);
	for (size_t i = 0; i < res->nerrors; i++)
		platform_verr_add(&v, res->errors[i].field, res->errors[i].code, "%s",
		                  res->errors[i].message);
	for (size_t i = 0; i < res->nrequired; i++)
		platform_verr_require(&v, res->required[i]);
	return platform_reply_validation(r, PLATFORM_SYNC_INVALID, &v);
}

static struct json_object *warnings_json(const struct sync_result *res)
{
	struct json_object *a = json_object_new_array();

	for (size_t i = 0; i < res->nwarnings; i++)
		json_object_array_add(a, jstr(res->warnings[i].message));
	return a;
}

static long long sync_write_job(struct req *r, const struct job_row *j,
                                const struct sync_request *req,
                                const struct sync_result *res)
{
	const char *name = req->target != SYNC_FULL_LOAD ? req->column_name : NULL;
	const char *keys = NULL;
	struct json_object *a = NULL;
	long long n;

	if (req->target == SYNC_QUALIFY) {
		a = json_object_new_array();
		for (size_t i = 0; i < req->primary_keys.n; i++)
			json_object_array_add(a, jstr(req->primary_keys.v[i]));
		keys = json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN |
		                                      JSON_C_TO_STRING_NOSLASHESCAPE);
	}
	n = db_exec(r->db, "UPDATE jobs SET load_type = ?, incremental_column_name = ?, "
	            "incremental_column_type = ?, primary_keys = ? WHERE id = ?",
	            "sssss", sync_load_name(req->target), name, res->column_type,
	            keys, j->id);
	json_object_put(a);
	return n;
}

/* The deduplication task follows the extract_load task of its job. */
static long long sync_write_task(struct req *r, const struct job_row *j,
                                 const struct sync_result *res)
{
	char task[JOB_ID_MAX + 16], upstream[JOB_ID_MAX + 32];

	snprintf(task, sizeof task, "%s.qualify", j->id);
	if (!res->qualify_task)
		return db_exec(r->db, "DELETE FROM orchestration_tasks "
		               "WHERE pipeline_id = ? AND task_id = ?", "ss",
		               j->pipeline_id, task);
	snprintf(upstream, sizeof upstream, "[\"%s.extract_load\"]", j->id);
	return db_exec(r->db, "INSERT INTO orchestration_tasks (pipeline_id, task_id, "
	               "job_id, kind, upstream_task_ids, position) "
	               "VALUES (?, ?, ?, 'qualify', ?, ?) ON DUPLICATE KEY UPDATE "
	               "upstream_task_ids = VALUES(upstream_task_ids), "
	               "position = VALUES(position)", "ssssi", j->pipeline_id, task,
	               j->id, upstream, 2 * j->index + 1);
}

static long long sync_write(struct req *r, const struct job_row *j,
                            const struct sync_request *req,
                            const struct sync_result *res)
{
	long long n;

	if (!res->changed)
		return 0;
	if ((n = sync_write_job(r, j, req, res)) < 0)
		return n;
	if (res->clear_bookmark &&
	    (n = db_exec(r->db, "UPDATE job_state SET incremental_column_value = NULL "
	                 "WHERE job_id = ?", "s", j->id)) < 0)
		return n;
	return sync_write_task(r, j, res);
}

static int reply_sync_done(struct req *r, const struct job_row *j,
                           const struct sync_request *req,
                           const struct sync_result *res)
{
	struct json_object *o = json_object_new_object();
	struct json_object *d = json_object_new_object();
	char msg[SYNC_MSG_MAX + 160];

	snprintf(msg, sizeof msg, "Sync mode of job %s: %s to %s. %s", j->id,
	         sync_load_name(j->load_type), sync_load_name(req->target),
	         res->effect);
	json_object_object_add(d, "target_load_type",
	                       jstr(sync_load_name(req->target)));
	json_object_object_add(d, "state_action", jstr(sync_action_name(res->action)));
	json_object_object_add(d, "warnings", warnings_json(res));
	json_object_object_add(o, "status", jstr("success"));
	json_object_object_add(o, "message", jstr(msg));
	json_object_object_add(o, "migration_details", d);
	return resp_json(r, 200, o);
}

/* A PATCH's job id (path) and JSON body; NULL once 404 or 400 was answered. */
static struct json_object *job_patch_or_reply(struct req *r, char id[JOB_ID_MAX + 1])
{
	if (platform_query_or_reply(r, NULL, NULL) != 0)
		return NULL;
	if (platform_job_id_parse(req_param(r, "job_id"), id, NULL, NULL) != 0) {
		platform_reply(r, PLATFORM_JOB_NOT_FOUND);
		return NULL;
	}
	return req_json_body_or_reply(r);
}

struct sync_tx {
	const struct sync_request *req;
	const struct sync_result *parsed;  /* what the body alone decided */
	struct sync_result *res;
};

/* JOB_WRITTEN, JOB_REFUSED (errors in res) or JOB_REFUSED_2 (blocked). */
static int job_sync_step(struct req *r, struct job_row *j, void *arg)
{
	const struct sync_tx *x = arg;
	struct sync_job sj = {
		.connector = j->connector, .plugin = j->plugin,
		.load_type = j->load_type, .column_name = j->column_name,
		.column_type = j->column_type,
		.primary_keys = list_from_json(r, j->primary_keys),
		.include = list_from_json(r, j->include), .running = j->running,
	};
	long long n;

	*x->res = *x->parsed;
	sync_decide(&sj, x->req, x->res);
	if (x->res->nerrors > 0)
		return JOB_REFUSED;
	if (sync_blocked(x->res, x->req))
		return JOB_REFUSED_2;
	n = sync_write(r, j, x->req, x->res);
	return n < 0 ? (int)n : JOB_WRITTEN;
}

static int job_sync_mode(struct req *r)
{
	struct sync_result *res = arena_alloc(r->arena, sizeof *res);
	struct sync_result *parsed = arena_alloc(r->arena, sizeof *parsed);
	struct json_object *body;
	struct sync_request req;
	struct sync_tx x = { &req, parsed, res };
	char id[JOB_ID_MAX + 1];
	struct job_row j;
	int rc;

	if ((body = job_patch_or_reply(r, id)) == NULL)
		return -1;
	sync_request_parse(body, &req, parsed);
	if ((rc = job_tx(r, id, &j, job_sync_step, &x)) <= 0)
		return rc < 0 ? -1 : platform_reply(r, PLATFORM_JOB_NOT_FOUND);
	if (rc == JOB_REFUSED)
		return reply_sync_errors(r, res);
	if (rc == JOB_REFUSED_2)
		return platform_reply_warnings(r, PLATFORM_SYNC_BLOCKED,
		                               warnings_json(res));
	return reply_sync_done(r, &j, &req, res);
}

/* --- PATCH input ---------------------------------------------------------------------- */

struct input_patch {
	const char *connector;
	const char *bookmark;             /* incremental_column_value */
	struct json_object *include;      /* column_include_list, NULL: clear */
	bool has_include;
};

/* incremental_column_value: an ISO 8601 date or timestamp. */
static int check_bookmark(struct json_object *v, void *out, char *msg, size_t len)
{
	if (!json_object_is_type(v, json_type_string) ||
	    sync_timestamp_check(json_object_get_string(v)) != 0) {
		snprintf(msg, len, "must be an ISO 8601 date or timestamp, e.g. "
		         "2024-01-31T23:59:59Z");
		return -1;
	}
	*(const char **)out = json_object_get_string(v);
	return 0;
}

/* column_include_list: names, or [] / null to clear it. */
static int check_include(struct json_object *v, void *out, char *msg, size_t len)
{
	bool clear;

	if (sync_include_check(v, &clear, msg, len) != 0)
		return -1;
	*(struct json_object **)out = clear ? NULL : v;
	return 0;
}

const struct vfield platform_input_patch_body[] = {
	{ "connector", V_STR, 0, 1, 32, NULL, NULL,
	  VOFF(struct input_patch, connector) },
	{ "incremental_column_value", V_CHECK, V_NULL, 0, 0, NULL, check_bookmark,
	  VOFF(struct input_patch, bookmark) },
	{ "column_include_list", V_CHECK, V_NULL, 0, 0, NULL, check_include,
	  VOFF(struct input_patch, include) },
	VFIELDS_END
};

/* The error_codes of the checks of this body. */
static const char *patch_code(const struct verror *e)
{
	if (e->code != VERR_INVALID)
		return NULL;
	if (strcmp(e->field, "incremental_column_value") == 0)
		return "INVALID_INCREMENTAL_COLUMN_VALUE";
	return "INVALID_COLUMN_INCLUDE_LIST";
}

/* The checks that need no job: field names, types and bounds. */
static void patch_parse(struct json_object *body, struct input_patch *p,
                        struct platform_verr *v)
{
	struct verror e;
	vgiven given;

	memset(p, 0, sizeof *p);
	if (validate_json(platform_input_patch_body, body, p, &given, &e) != 0)
		platform_verr_add_verror(v, "", &e, patch_code(&e));
	else
		p->has_include = validate_given(platform_input_patch_body, given,
		                                "column_include_list");
}

/* The checks against the job itself. */
static void patch_check_job(const struct input_patch *p, const struct job_row *j,
                            struct platform_verr *v)
{
	if (p->connector != NULL && strcmp(p->connector, j->connector) != 0)
		platform_verr_add(v, "connector", "CONNECTOR_MISMATCH",
		                  "connector '%.32s' does not match the job's connector "
		                  "'%s'", p->connector,
		                  j->connector);
	if (p->bookmark != NULL && (strcmp(j->connector, "jdbc") != 0 ||
	                            j->load_type == SYNC_FULL_LOAD))
		platform_verr_add(v, "incremental_column_value",
		                  "INCREMENTAL_VALUE_NOT_SUPPORTED",
		                  "incremental_column_value applies to jdbc jobs of load "
		                  "type incremental or incremental_with_qualify; use "
		                  "reset-state for other jobs");
}

static long long patch_write(struct req *r, const struct input_patch *p,
                             const struct job_row *j)
{
	const char *include = NULL;
	long long n = 0;

	if (p->bookmark != NULL &&
	    (n = db_exec(r->db, "INSERT INTO job_state (job_id, "
	                 "incremental_column_value) VALUES (?, ?) ON DUPLICATE KEY "
	                 "UPDATE incremental_column_value = "
	                 "VALUES(incremental_column_value)", "ss", j->id,
	                 p->bookmark)) < 0)
		return n;
	if (p->include != NULL)
		include = json_object_to_json_string_ext(p->include,
		    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (p->has_include)
		n = db_exec(r->db, "UPDATE jobs SET column_include_list = ? WHERE id = ?",
		            "ss", include, j->id);
	return n;
}

static int reply_patch_done(struct req *r, const struct job_row *j)
{
	struct json_object *o = json_object_new_object();
	struct json_object *d = json_object_new_object();

	json_object_object_add(d, "job_id", jstr(j->id));
	json_object_object_add(d, "input", input_render(j));
	json_object_object_add(o, "status", json_object_new_boolean(1));
	json_object_object_add(o, "data", d);
	return resp_json(r, 200, o);
}

struct input_tx {
	const struct input_patch *p;
	struct platform_verr *v;         /* the body's refusals, then the job's */
	const char *id;
};

/* JOB_WRITTEN (j read again, as the answer shows it), JOB_REFUSED (errors
 * in v) or JOB_REFUSED_2 (a bookmark while the job runs).  The job's checks
 * add to v only while it is empty, so a second attempt adds nothing twice. */
static int job_input_step(struct req *r, struct job_row *j, void *arg)
{
	const struct input_tx *x = arg;
	long long n;
	int rc;

	if (platform_verr_count(x->v) == 0)
		patch_check_job(x->p, j, x->v);
	if (platform_verr_count(x->v) > 0)
		return JOB_REFUSED;
	if (x->p->bookmark != NULL && j->running)
		return JOB_REFUSED_2;
	if ((n = patch_write(r, x->p, j)) < 0)
		return (int)n;
	if ((rc = job_lock(r, x->id, j)) < 0)
		return rc;
	return JOB_WRITTEN;
}

static int job_input_patch(struct req *r)
{
	struct json_object *body;
	struct platform_verr v;
	struct input_patch p;
	char id[JOB_ID_MAX + 1];
	struct input_tx x = { &p, &v, id };
	struct job_row j;
	int rc;

	if ((body = job_patch_or_reply(r, id)) == NULL)
		return -1;
	platform_verr_init(&v);
	patch_parse(body, &p, &v);
	rc = job_tx(r, id, &j, job_input_step, &x);
	if (rc == JOB_REFUSED)
		return platform_reply_validation(r, PLATFORM_INPUT_INVALID, &v);
	platform_verr_free(&v);
	if (rc <= 0)
		return rc < 0 ? -1 : platform_reply(r, PLATFORM_JOB_NOT_FOUND);
	if (rc == JOB_REFUSED_2)
		return platform_reply(r, PLATFORM_JOB_RUNNING_BOOKMARK);
	return reply_patch_done(r, &j);
}

const struct route platform_job_routes[] = {
	{ "PUT",   "/platform/pipeline/{pipeline_id}/memory", pipeline_memory_put,
	  ROUTE_AUTH_JWT, "PLATFORM.WRITE" },
	{ "PUT",   "/platform/jobs/{job_id}/memory", job_memory_put,
	  ROUTE_AUTH_JWT, "PLATFORM.WRITE" },
	{ "POST",  "/platform/jobs/{job_id}/reset-state", job_reset_state,
	  ROUTE_AUTH_JWT, "PLATFORM.WRITE" },
	{ "POST",  "/platform/jobs/jdbc/{job_id}/sync-mode", job_sync_mode,
	  ROUTE_AUTH_JWT, "PLATFORM.WRITE" },
	{ "PATCH", "/platform/jobs/{job_id}/input", job_input_patch,
	  ROUTE_AUTH_JWT, "PLATFORM.WRITE" },
	ROUTES_END
};
