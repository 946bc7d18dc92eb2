/* pipelines.c - the pipeline routes: list, detail, delete, pause, resume
 * here; create in pipeline_create.c; the JSON in pipeline_render.c. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "db/db.h"
#include "http/body_cache.h"
#include "http/errors.h"
#include "http/pagination.h"
#include "http/request.h"
#include "http/response.h"
#include "platform/pipelines.h"
#include "platform/platform.h"
#include "util/arena.h"
#include "util/config.h"
#include "util/cron.h"
#include "util/log.h"
#include "util/str.h"
#include "util/strbuf.h"
#include "util/timeutil.h"

/* ==== delete, pause, resume =============================================== */

/* Children first, each with its own statement: cascades would do it, but
 * MariaDB runs no triggers for cascaded rows and the order keeps the
 * foreign keys satisfied at every step. */
static const char *const delete_sql[] = {
	"DELETE l FROM run_logs l JOIN pipeline_runs pr ON pr.id = l.run_id "
		"WHERE pr.pipeline_id = ?",
	"DELETE t FROM run_task_status t JOIN pipeline_runs pr ON pr.id = t.run_id "
		"WHERE pr.pipeline_id = ?",
	"DELETE FROM pipeline_runs WHERE pipeline_id = ?",
	"DELETE FROM orchestration_tasks WHERE pipeline_id = ?",
	"DELETE f FROM file_storage_processed f JOIN jobs j ON j.id = f.job_id "
		"WHERE j.pipeline_id = ?",
	"DELETE s FROM job_state s JOIN jobs j ON j.id = s.job_id "
		"WHERE j.pipeline_id = ?",
	"DELETE FROM jobs WHERE pipeline_id = ?",
	"DELETE FROM pipelines WHERE id = ?",
};

int pipeline_touch(struct db *db, const char *id)
{
	long long n = db_exec(db, "UPDATE pipelines SET updated_at = GREATEST(UTC_TIMESTAMP(3), "
	                      "updated_at + INTERVAL 1000 MICROSECOND) WHERE id = ?", "s", id);

	return n < 0 ? (int)n : 0;
}

/* A delete and a PATCH take the same lock and ask the same question: a
 * run that has started (or is about to) must not see its pipeline vanish
 * or change under it. */
int pipeline_lock_idle(struct req *r, const char *id)
{
	int rc;

	rc = db_first_row(r->db, db_query(r->db, "SELECT 1 FROM pipelines "
	    "WHERE id = ? AND customer_id = ? FOR UPDATE", "ss", id,
	    r->id.customer_id), NULL, 0);
	if (rc <= 0)
		return rc < 0 ? rc : PIPELINE_MISSING;
	if ((rc = pipeline_touch(r->db, id)) < 0)
		return rc;
	rc = db_first_row(r->db, db_query(r->db, "SELECT 1 FROM pipeline_runs "
	    "WHERE pipeline_id = ? AND status IN ('CREATED', 'RUNNING') "
	    "UNION ALL SELECT 1 FROM jobs WHERE pipeline_id = ? AND "
	    "job_status = 'RUNNING' LIMIT 1", "ss", id, id), NULL, 0);
	if (rc < 0)
		return rc;
	return rc == 1 ? PIPELINE_ACTIVE : PIPELINE_IDLE;
}

struct pipeline_tx {
	struct req *r;
	const char *id;
	int paused;
	time_t next_run;
};

/* One attempt: the children and the pipeline gone when it is idle.  The
 * answer of pipeline_lock_idle, or a negative db error. */
static int pipeline_delete_body(struct db *db, void *arg)
{
	const struct pipeline_tx *p = arg;
	int rc;

	if ((rc = pipeline_lock_idle(p->r, p->id)) != PIPELINE_IDLE)
		return rc;
	for (size_t i = 0; i < sizeof delete_sql / sizeof delete_sql[0]; i++) {
		long long n = db_exec(db, delete_sql[i], "s", p->id);

		if (n < 0)
			return (int)n;
	}
	return PIPELINE_IDLE;
}

/* Pause (next_run_at NULL) or resume (next_run_at from the cron, read in
 * the pipeline's cron_timezone), one attempt.  1 done, 0 no such pipeline
 * of the caller, or a negative db error. */
static int pipeline_paused_body(struct db *db, void *arg)
{
	struct pipeline_tx *p = arg;
	char cron_text[CRON_EXPR_MAX + 1] = "", tz[CRON_TZ_MAX + 1] = "";
	char next[TIME_SQL_LEN], err[160];
	const struct db_text row[] = {
		{ cron_text, sizeof cron_text }, { tz, sizeof tz },
	};
	struct cron c;
	long long n;
	int rc;

	p->next_run = 0;
	rc = db_first_row(db, db_query(db, "SELECT cron, cron_timezone FROM "
	                  "pipelines WHERE id = ? AND customer_id = ? FOR UPDATE",
	                  "ss", p->id, p->r->id.customer_id), row, 2);
	if (rc != 1)
		return rc;
	if (!p->paused && cron_text[0] != '\0' &&
	    (cron_parse(cron_text, &c, err, sizeof err) != 0 ||
	     cron_next_tz(&c, tz, time(NULL), &p->next_run) != 0))
		p->next_run = 0;
	n = db_exec(db, "UPDATE pipelines SET paused = ?, next_run_at = ? "
	            "WHERE id = ?", "iss", (long long)p->paused,
	            time_sql(next, p->next_run), p->id);
	return n < 0 ? (int)n : 1;
}

/* ==== handlers ============================================================ */

/* The listing's paging, in the storage explorer's shape: without page and
 * limit the whole array the spec gives; with either, one page of it in
 * {"pipelines": [...], "pagination": {...}}. */
#define PIPELINES_PAGE_MAX          1000000000LL
#define PIPELINES_LIMIT_DEFAULT     20
#define PIPELINES_LIMIT_MAX         100

struct pipelines_page {
	long long page, limit;            /* 0: not given */
};

const struct vfield platform_pipelines_query[] = {
	{ "page", V_INT, 0, 1, PIPELINES_PAGE_MAX, NULL, NULL,
	  VOFF(struct pipelines_page, page) },
	{ "limit", V_INT, 0, 1, PIPELINES_LIMIT_MAX, NULL, NULL,
	  VOFF(struct pipelines_page, limit) },
	VFIELDS_END
};

/* One page as {"pipelines": [...], "pagination": {...}} into b. */
static int pipelines_page_render(struct req *r, struct strbuf *b,
                                 struct pipelines_page q)
{
	struct db_stmt *st;
	struct json_object *pg;
	long long total;
	int rc;

	st = db_query(r->db, "SELECT COUNT(*) FROM pipelines WHERE customer_id = ?",
	              "s", r->id.customer_id);
	if (st == NULL)
		return db_last_err(r->db);
	rc = db_fetch(st);
	total = db_col_ll(st, 0);
	db_done(st);
	if (rc < 0)
		return db_last_err(r->db);
	strbuf_adds(b, "{\"pipelines\":");
	if ((rc = pipelines_render(r, b, q.limit, (q.page - 1) * q.limit)) != 0)
		return rc;
	pg = pagination_json(q.page, q.limit, total);
	strbuf_adds(b, ",\"pagination\":");
	strbuf_adds(b, json_object_to_json_string_ext(pg, JSON_C_TO_STRING_PLAIN));
	strbuf_add(b, "}", 1);
	json_object_put(pg);
	return 0;
}

/* The whole list (the spec's array), answered from the render cache when
 * its rows are unchanged since it was last rendered: one small query, and
 * nginx sends the file (http/body_cache.h).  0 answered, or a negative db
 * error with nothing answered. */
static int pipelines_list_all(struct req *r, struct strbuf *b)
{
	struct body_key k;
	int rc;

	if ((rc = pipelines_list_key(r, &k)) != 0)
		return rc;
	if (body_cache_send(r, &k, "application/json") != 0)
		return 0;
	if ((rc = pipelines_render_all(r, b, &k)) != 0)
		return rc;
	jb_reply_cached(r, b, &k);
	return 0;
}

static int pipelines_list(struct req *r)
{
	struct pipelines_page q = { 0, 0 };
	struct strbuf *b;
	int rc;

	if (platform_query_or_reply(r, platform_pipelines_query, &q) != 0)
		return -1;
	b = jb_buf();
	if (q.page != 0 || q.limit != 0) {
		q.page = q.page != 0 ? q.page : 1;
		q.limit = q.limit != 0 ? q.limit : PIPELINES_LIMIT_DEFAULT;
	}
	if (db_ensure(r->db) != DB_OK)
		rc = DB_ERR_UNAVAILABLE;
	else if (q.page == 0)
		rc = pipelines_list_all(r, b);
	else if ((rc = pipelines_page_render(r, b, q)) == 0)
		return jb_reply_etag(r, b);
	if (rc == 0)
		return 0;
	strbuf_free(b);
	log_kv(LOG_ERROR, "pipeline list failed", "error=%s",
	       LOG_Q(db_error(r->db)));
	return platform_reply(r, db_connected(r->db) ? PLATFORM_LIST_FAILED
	                                             : PLATFORM_LIST_UNAVAILABLE);
}

static int pipeline_get(struct req *r)
{
	char id[PIPELINE_ID_LEN + 1];
	struct strbuf *b;
	int rc;

	if (platform_query_or_reply(r, NULL, NULL) != 0)
		return -1;
	if (platform_pipeline_id_parse(req_param(r, "pipeline_id"), id) != 0)
		return platform_reply(r, PLATFORM_PIPELINE_NOT_FOUND);
	if (req_db_or_reply(r) == NULL)
		return -1;
	b = jb_buf();
	rc = pipeline_render(r, id, 1, b);
	if (rc != 1) {
		strbuf_free(b);
		return rc == 0 ? platform_reply(r, PLATFORM_PIPELINE_NOT_FOUND)
		               : resp_db_error(r, rc);
	}
	return jb_reply_etag(r, b);
}

static int pipeline_delete_handler(struct req *r)
{
	const char *name = req_header(r, "customer_name");
	char id[PIPELINE_ID_LEN + 1];
	struct json_object *o;
	int rc;

	if (platform_query_or_reply(r, NULL, NULL) != 0)
		return -1;
	if (name == NULL || name[0] == '\0')
		return platform_reply(r, PLATFORM_CUSTOMER_NAME_MISSING);
	if (r->id.customer_name == NULL || strcmp(name, r->id.customer_name) != 0)
		return platform_reply(r, PLATFORM_CUSTOMER_NAME_MISMATCH);
	if (platform_pipeline_id_parse(req_param(r, "pipeline_id"), id) != 0)
		return platform_reply(r, PLATFORM_PIPELINE_NOT_FOUND);
	if (req_db_or_reply(r) == NULL)
		return -1;
	rc = db_tx(r->db, "pipeline delete", pipeline_delete_body,
	           &(struct pipeline_tx){ .r = r, .id = id });
	if (rc == PIPELINE_MISSING)
		return platform_reply(r, PLATFORM_PIPELINE_NOT_FOUND);
	if (rc == PIPELINE_ACTIVE)
		return platform_reply(r, PLATFORM_PIPELINE_BUSY);
	/* Transient (the node went away, or conflicts outlasted the retries):
	 * nothing was deleted, and trying again later will do. */
	if (rc == DB_ERR_UNAVAILABLE || rc == DB_ERR_DEADLOCK)
		return resp_db_error(r, rc);
	if (rc != 0) {
		log_kv(LOG_ERROR, "pipeline delete rolled back", "pipeline_id=%s "
		       "error=%s", id, LOG_Q(db_error(r->db)));
		return platform_reply(r, PLATFORM_DELETE_FAILED);
	}
	o = json_object_new_object();
	json_object_object_add(o, "pipeline_id", json_object_new_string(id));
	json_object_object_add(o, "status",
	                       json_object_new_string("PIPELINE_DELETED"));
	return resp_json(r, 200, o);
}

static int pause_or_resume(struct req *r, int paused)
{
	char id[PIPELINE_ID_LEN + 1], iso[40];
	struct json_object *o, *d;
	struct pipeline_tx p = { .r = r, .id = id, .paused = paused };
	int rc;

	if (platform_query_or_reply(r, NULL, NULL) != 0 ||
	    platform_pipeline_ref_or_reply(r, PLATFORM_PIPELINE_NOT_FOUND, id) != 0 ||
	    req_db_or_reply(r) == NULL)
		return -1;
	rc = db_tx(r->db, "pipeline pause", pipeline_paused_body, &p);
	if (rc != 1)
		return rc == 0 ? platform_reply(r, PLATFORM_PIPELINE_NOT_FOUND)
		               : resp_db_error(r, rc);
	d = json_object_new_object();
	json_object_object_add(d, "pipeline_id", json_object_new_string(id));
	json_object_object_add(d, "paused", json_object_new_boolean(paused));
	json_object_object_add(d, "next_run_at", p.next_run == 0 ? NULL :
	    json_object_new_string(time_iso8601(iso, sizeof iso, p.next_run, -1)));
	o = json_object_new_object();
	json_object_object_add(o, "status", json_object_new_boolean(1));
	json_object_object_add(o, "data", d);
	return resp_json(r, 200, o);
}

static int pipeline_pause(struct req *r)
{
	return pause_or_resume(r, 1);
}

static int pipeline_resume(struct req *r)
{
	return pause_or_resume(r, 0);
}

/* Literal paths before /platform/pipeline/{pipeline_id}. */
const struct route platform_pipeline_routes[] = {
	{ "GET",    "/platform/pipelines", pipelines_list,
	  ROUTE_AUTH_JWT, "PLATFORM.READ" },
	{ "POST",   "/platform/pipeline", pipeline_create,
	  ROUTE_AUTH_JWT, "PLATFORM.WRITE" },
	{ "POST",   "/platform/pipeline/pause", pipeline_pause,
	  ROUTE_AUTH_JWT, "PLATFORM.WRITE" },
	{ "POST",   "/platform/pipeline/resume", pipeline_resume,
	  ROUTE_AUTH_JWT, "PLATFORM.WRITE" },
	{ "GET",    "/platform/pipeline/{pipeline_id}", pipeline_get,
	  ROUTE_AUTH_JWT, "PLATFORM.READ" },
	{ "DELETE", "/platform/pipeline/{pipeline_id}", pipeline_delete_handler,
	  ROUTE_AUTH_JWT, "PLATFORM.WRITE" },
	{ "PATCH",  "/platform/pipeline/{pipeline_id}", pipeline_patch,
	  ROUTE_AUTH_JWT, "PLATFORM.WRITE" },
	ROUTES_END
};
