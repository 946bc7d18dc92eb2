/* pipeline_patch.c - PATCH /platform/pipeline/{pipeline_id}: change a
 * pipeline's settings and its jobs' input and output in place, keeping its
 * run history and its jobs' incremental state.
 *
 * The body is the create body's fields, each optional; a job is named by
 * its job_id and its input and output are JSON merge patches (RFC 7396) of
 * what GET shows.  The merged objects go through create's own checks
 * (pipeline_create.c), so a PATCH accepts exactly what a create would, and
 * then through the one rule a create has no reason for: a change must not
 * orphan the job's state.  What identifies the source (connector, plugin,
 * table_name, prefix) and the destination table (output.raw) is fixed, and
 * the load settings change through sync-mode, which decides what happens to
 * the bookmark.
 *
 * Everything happens under the pipeline's row lock, the one execute and
 * delete take: a run cannot start between the check that none is in
 * progress and the commit, so no run sees half the change. */
#include <stdio.h>
#include <string.h>
#include <time.h>

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
#include "util/strbuf.h"
#include "util/timeutil.h"

#define FIELD_MAX 96                  /* "jobs[99].output.raw.table_schema" */

struct job_patch_in {
	struct job_in job;                /* platform_job_body's rows */
	const char *job_id;
};

const struct vfield platform_job_patch_id[] = {
	{ "job_id", V_STR, V_REQUIRED, 1, JOB_ID_MAX, NULL, NULL,
	  VOFF(struct job_patch_in, job_id) },
	VFIELDS_END
};

/* The top-level fields null may clear: no schedule (manual runs only),
 * UTC, the server's run time limit. */
enum { CLEAR_CRON, CLEAR_TZ, CLEAR_TIMEOUT };
static const char *const clearable[] = {
	[CLEAR_CRON] = "cron", [CLEAR_TZ] = "cron_timezone",
	[CLEAR_TIMEOUT] = "run_timeout_s", NULL
};

/* Room for a copy of a create table's rows (7 and 4 now) with job_id. */
#define ROWS_MAX 16

/* One job of the body, checked against the table only. */
struct job_patch {
	struct job_patch_in in;
	char id[JOB_ID_MAX + 1];          /* canonical; "" when malformed */
};

struct patch {
	struct pipeline_in in;
	vgiven given;                     /* rows of platform_pipeline_body */
	bool cleared[CLEAR_TIMEOUT + 1];  /* clearable[i] was null */
	size_t njobs;
	struct job_patch *jobs;
};

/* A table's rows with V_REQUIRED dropped (a PATCH names only what it
 * changes), after extra's rows when extra is not NULL; ended by
 * VFIELDS_END within ROWS_MAX rows (a longer table is cut there, and the
 * rows cut are refused as unknown: the API tests would say so). */
static void rows_optional(struct vfield out[ROWS_MAX],
                          const struct vfield *extra, const struct vfield *rows)
{
	size_t n = 0;

	for (; extra != NULL && extra->name != NULL && n < ROWS_MAX - 1; extra++)
		out[n++] = *extra;
	for (; rows->name != NULL && n < ROWS_MAX - 1; rows++) {
		out[n] = *rows;
		out[n++].flags &= ~(unsigned)V_REQUIRED;
	}
	out[n] = (struct vfield)VFIELDS_END;
}

static bool is_null(struct json_object *o, const char *key)
{
	struct json_object *x = NULL;

	return json_object_object_get_ex(o, key, &x) && x == NULL;
}

/* A null for a field PATCH cannot clear is refused, not ignored; one it
 * can clear is recorded in cleared (NULL: none can). */
static void nulls_check(struct platform_verr *v, const char *prefix,
                        struct json_object *o, const struct vfield *fields,
                        bool *cleared)
{
	char field[FIELD_MAX];

	if (!json_object_is_type(o, json_type_object))
		return;
	for (const struct vfield *f = fields; f->name != NULL; f++) {
		size_t i = 0;

		if (!is_null(o, f->name) || (f->flags & V_REQUIRED))
			continue;
		while (cleared != NULL && clearable[i] != NULL &&
		       strcmp(clearable[i], f->name) != 0)
			i++;
		if (cleared != NULL && clearable[i] != NULL) {
			cleared[i] = true;
			continue;
		}
		snprintf(field, sizeof field, "%s%s%s", prefix,
		         prefix[0] != '\0' ? "." : "", f->name);
		platform_verr_add(v, field, "INVALID_TYPE", "%s cannot be null",
		                  field);
	}
}

/* ==== what needs no database: the body against the tables ================ */

static void job_parse(struct req *r, struct platform_verr *v, size_t i,
                      struct json_object *jo, const char *pipeline_id,
                      struct job_patch *jp)
{
	struct vfield fields[ROWS_MAX];
	char prefix[32], pid[PIPELINE_ID_LEN + 1];

	rows_optional(fields, platform_job_patch_id, platform_job_body);
	fields[1 + JOB_MEMORY_ROW].max = r->cfg->memory_max_mb;
	snprintf(prefix, sizeof prefix, "jobs[%zu]", i);
	platform_verr_validate(v, prefix, fields, jo, &jp->in, true);
	nulls_check(v, prefix, jo, fields, NULL);
	if (jp->in.job_id != NULL &&
	    (platform_job_id_parse(jp->in.job_id, jp->id, pid, NULL) != 0 ||
	     strcmp(pid, pipeline_id) != 0)) {
		char field[FIELD_MAX];

		snprintf(field, sizeof field, "%s.job_id", prefix);
		platform_verr_add(v, field, "UNKNOWN_JOB",
		                  "%s is not a job of this pipeline", field);
		jp->id[0] = '\0';
	}
	if (json_object_is_type(jo, json_type_object) &&
	    json_object_object_length(jo) == 1 && jp->in.job_id != NULL)
		platform_verr_add(v, prefix, "NOTHING_TO_CHANGE",
		                  "%s names no field to change: name, input, output, "
		                  "memory_allocated_mb", prefix);
}

/* Fills p; every refusal goes to v. */
static void patch_parse(struct req *r, struct platform_verr *v,
                        struct json_object *body, const char *pipeline_id,
                        struct patch *p)
{
	struct vfield fields[ROWS_MAX];

	rows_optional(fields, NULL, platform_pipeline_body);
	platform_verr_validate_given(v, "", fields, body, &p->in, true, &p->given);
	nulls_check(v, "", body, fields, p->cleared);
	if (json_object_is_type(body, json_type_object) &&
	    json_object_object_length(body) == 0)
		platform_verr_add(v, "body", "NOTHING_TO_CHANGE",
		                  "The body names no field to change: name, "
		                  "description, cron, cron_timezone, retries, "
		                  "run_timeout_s, jobs");
	p->njobs = p->in.jobs != NULL ? json_object_array_length(p->in.jobs) : 0;
	p->jobs = arena_alloc(r->arena, (p->njobs + 1) * sizeof *p->jobs);
	memset(p->jobs, 0, (p->njobs + 1) * sizeof *p->jobs);
	for (size_t i = 0; i < p->njobs; i++) {
		job_parse(r, v, i, json_object_array_get_idx(p->in.jobs, i),
		          pipeline_id, &p->jobs[i]);
		for (size_t k = 0; k < i && p->jobs[i].id[0] != '\0'; k++)
			if (strcmp(p->jobs[k].id, p->jobs[i].id) == 0) {
				char field[FIELD_MAX];

				snprintf(field, sizeof field, "jobs[%zu].job_id", i);
				platform_verr_add(v, field, "DUPLICATE_JOB",
				                  "%s names job %s a second time", field,
				                  p->jobs[i].id);
			}
	}
}

/* ==== against the pipeline as it is ====================================== */

static struct json_object *get(struct json_object *o, const char *key)
{
	struct json_object *x = NULL;

	return json_object_object_get_ex(o, key, &x) ? x : NULL;
}

static const char *get_str(struct json_object *o, const char *key)
{
	struct json_object *x = get(o, key);

	return json_object_is_type(x, json_type_string)
	    ? json_object_get_string(x) : NULL;
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* RFC 7396: target (taken) with patch (borrowed) merged in; the result is
 * the caller's.  A null in patch removes the key. */
static struct json_object *merge_patch(struct json_object *target,
                                       struct json_object *patch)
{
	if (!json_object_is_type(patch, json_type_object)) {
		struct json_object *copy = NULL;

		json_object_put(target);
		json_object_deep_copy(patch, &copy, NULL);
		return copy;
	}
	if (!json_object_is_type(target, json_type_object)) {
		json_object_put(target);
		target = json_object_new_object();
	}
	json_object_object_foreach(patch, key, val) {
		struct json_object *cur = get(target, key), *next;

		if (val == NULL) {
			json_object_object_del(target, key);
			continue;
		}
		next = merge_patch(json_object_get(cur), val);
		if (next == cur)
			json_object_put(next);      /* changed in place */
		else
			json_object_object_add(target, key, next);
	}
	return target;
}

/* cur (borrowed) patched by patch, kept alive in hold (its strings are
 * what the checks point into). */
static struct json_object *merged(struct json_object *hold,
                                  struct json_object *cur,
                                  struct json_object *patch,
                                  const char *drop)
{
	struct json_object *base = NULL, *m;

	if (cur != NULL)
		json_object_deep_copy(cur, &base, NULL);
	if (drop != NULL && base != NULL)
		json_object_object_del(base, drop);
	m = merge_patch(base, patch);
	json_object_array_add(hold, m);
	return m;
}

/* A job whose state would be orphaned by another source or destination:
 * every job but a jdbc full_load one (which extracts everything each run)
 * keeps state that belongs to them. */
static bool job_keeps_state(struct json_object *cur_input)
{
	return !same_str(get_str(cur_input, "connector"), "jdbc") ||
	       !same_str(get_str(cur_input, "load_type"), "full_load");
}

/* Field prefix.key refused: code, and why after the field's name. */
static void refuse(struct platform_verr *v, const char *prefix,
                   const char *key, const char *code, const char *why)
{
	char field[FIELD_MAX];

	snprintf(field, sizeof field, "%s.%s", prefix, key);
	platform_verr_add(v, field, code, "%s %s", field, why);
}

static const char *const source_keys[] = {
	"plugin", "table_name", "prefix", NULL
};

/* The merged input may change what create allows, except what the job's
 * state belongs to, and the load settings (sync-mode's).  The connector
 * is the same (job_check). */
static void input_safety(struct platform_verr *v, const char *prefix,
                         struct json_object *cur, struct json_object *m,
                         const struct job_new *js)
{
	const char *load[][2] = {
		{ "load_type", js->load_type },
		{ "incremental_column_name", js->inc_name },
		{ "incremental_column_type", js->inc_type },
	};
	bool jdbc = same_str(js->connector, "jdbc");

	for (size_t i = 0; source_keys[i] != NULL && job_keeps_state(cur); i++)
		if (!json_object_equal(get(cur, source_keys[i]),
		                       get(m, source_keys[i])))
			refuse(v, prefix, source_keys[i], "UNSAFE_CHANGE", "cannot "
			       "change: the job's incremental state (bookmark, Singer "
			       "state, processed files) belongs to its source; create "
			       "another pipeline to read another source");
	for (size_t i = 0; jdbc && i < sizeof load / sizeof load[0]; i++)
		if (!same_str(get_str(cur, load[i][0]), load[i][1]))
			refuse(v, prefix, load[i][0], "USE_SYNC_MODE", "changes "
			       "through POST /platform/jobs/jdbc/{jobId}/sync-mode, "
			       "which decides what becomes of the bookmark");
	if (jdbc && !json_object_equal(get(cur, "primary_keys"),
	                               get(m, "primary_keys")))
		refuse(v, prefix, "primary_keys", "USE_SYNC_MODE", "changes through "
		       "POST /platform/jobs/jdbc/{jobId}/sync-mode");
}

/* The strings of a JSON array (create's checks let only names through). */
static struct sync_list names_of(struct req *r, struct json_object *a)
{
	size_t n = json_object_is_type(a, json_type_array)
	         ? json_object_array_length(a) : 0;
	struct sync_list l = { arena_alloc(r->arena, (n + 1) * sizeof *l.v), 0 };

	for (size_t i = 0; i < n; i++)
		l.v[l.n++] = json_object_get_string(json_object_array_get_idx(a, i));
	return l;
}

/* A new column_include_list of an incremental jdbc job under sync-mode's
 * rule: it must hold the incremental column (and, for
 * incremental_with_qualify, the primary keys), or the run could not track
 * the bookmark (or deduplicate).  Sync-mode lets "force" override this for
 * a change of load type; a list that breaks the job as it stands is
 * refused outright. */
static void include_risks(struct req *r, struct platform_verr *v,
                          const char *prefix, struct json_object *m,
                          const struct job_new *js)
{
	struct sync_job job = { .connector = "jdbc" };
	struct sync_request req = { .target = sync_load_parse(js->load_type),
	                            .column_name = js->inc_name };
	struct sync_result *res = arena_alloc(r->arena, sizeof *res);

	job.include = names_of(r, get(m, "column_include_list"));
	req.primary_keys = names_of(r, get(m, "primary_keys"));
	if (req.target == SYNC_FULL_LOAD || job.include.n == 0)
		return;
	memset(res, 0, sizeof *res);
	sync_risk_warnings(&job, &req, res);
	for (size_t i = 0; i < res->nwarnings; i++) {
		char field[FIELD_MAX];

		snprintf(field, sizeof field, "%s.column_include_list", prefix);
		platform_verr_add(v, field, "COLUMN_INCLUDE_RISK", "%s",
		                  res->warnings[i].message);
	}
}

static void output_safety(struct platform_verr *v, const char *prefix,
                          struct json_object *cur_input,
                          struct json_object *cur, struct json_object *m)
{
	char raw[64];

	snprintf(raw, sizeof raw, "%s.raw", prefix);
	for (size_t i = 0; i < 2 && job_keeps_state(cur_input); i++) {
		const char *key = platform_raw_body[i].name;

		if (!json_object_equal(get(get(cur, "raw"), key),
		                       get(get(m, "raw"), key)))
			refuse(v, raw, key, "UNSAFE_CHANGE", "cannot change: the "
			       "job's incremental state belongs to the rows loaded "
			       "into its table; create another pipeline to load "
			       "elsewhere");
	}
}

/* One job's change, checked. */
struct job_change {
	struct job_new js;                /* the merged input and output */
	const char *cur_connection;       /* the job's connection_id now */
};

/* The rendered job of id among jobs, or NULL. */
static struct json_object *job_find(struct json_object *jobs, const char *id)
{
	size_t n = json_object_array_length(jobs);

	for (size_t i = 0; i < n; i++) {
		struct json_object *j = json_object_array_get_idx(jobs, i);

		if (same_str(get_str(j, "job_id"), id))
			return j;
	}
	return NULL;
}

static void job_check(struct req *r, struct platform_verr *v, size_t i,
                      const struct job_patch *jp, struct json_object *jobs,
                      struct json_object *hold, struct job_change *jc)
{
	struct json_object *cur = job_find(jobs, jp->id), *m;
	const char *connector;
	char job[32], prefix[48];
	size_t before;

	if (jp->id[0] == '\0')
		return;                       /* refused by job_parse */
	snprintf(job, sizeof job, "jobs[%zu]", i);
	if (cur == NULL) {
		refuse(v, job, "job_id", "UNKNOWN_JOB", "is not a job of this "
		       "pipeline");
		return;
	}
	jc->cur_connection = get_str(get(cur, "input"), "connection_id");
	snprintf(prefix, sizeof prefix, "jobs[%zu].input", i);
	connector = get_str(jp->in.job.input, "connector");
	if (connector != NULL &&
	    !same_str(connector, get_str(get(cur, "input"), "connector")))
		/* Nothing else of such an input is worth checking. */
		refuse(v, prefix, "connector", "UNSAFE_CHANGE", "cannot change: the "
		       "job's state and tasks are its connector's; create another "
		       "pipeline for another connector");
	else if (jp->in.job.input != NULL) {
		/* The bookmark is state, not configuration: PATCH .../input. */
		m = merged(hold, get(cur, "input"), jp->in.job.input,
		           "incremental_column_value");
		before = platform_verr_count(v);
		pipeline_job_check(r, v, job, m, NULL, &jc->js);
		if (platform_verr_count(v) == before)
			input_safety(v, prefix, get(cur, "input"), m, &jc->js);
		if (platform_verr_count(v) == before &&
		    get(jp->in.job.input, "column_include_list") != NULL)
			include_risks(r, v, prefix, m, &jc->js);
	}
	if (jp->in.job.output != NULL) {
		snprintf(prefix, sizeof prefix, "jobs[%zu].output", i);
		m = merged(hold, get(cur, "output"), jp->in.job.output, NULL);
		before = platform_verr_count(v);
		pipeline_job_check(r, v, job, NULL, m, &jc->js);
		if (platform_verr_count(v) == before)
			output_safety(v, prefix, get(cur, "input"), get(cur, "output"), m);
	}
}

/* The schedule after the change: *changed when cron or its zone is given
 * or cleared; then *next is the new next firing (0: none, or paused). */
struct schedule {
	bool changed;
	const char *cron, *tz;
	time_t next;
};

/* Whether the body gave the top-level field name a value. */
static bool has(const struct patch *p, const char *name)
{
	return validate_given(platform_pipeline_body, p->given, name);
}

static void schedule_check(struct platform_verr *v, const struct patch *p,
                           struct json_object *cur, struct schedule *s)
{
	bool cron_set = has(p, "cron") || p->cleared[CLEAR_CRON];
	bool tz_set = has(p, "cron_timezone") || p->cleared[CLEAR_TZ];

	s->cron = cron_set ? p->in.cron : get_str(cur, "cron");
	s->tz = tz_set ? p->in.cron_timezone : get_str(cur, "cron_timezone");
	s->changed = cron_set || tz_set;
	s->next = 0;
	if (!s->changed)
		return;
	pipeline_schedule_check(v, s->cron, &s->tz, &s->next);
	if (json_object_get_boolean(get(cur, "paused")))
		s->next = 0;                  /* resume computes it */
}

/* ==== writing ============================================================= */

static long long pipeline_write(struct req *r, const char *id,
                                const struct patch *p, const struct schedule *s)
{
	bool timeout_set = has(p, "run_timeout_s") || p->cleared[CLEAR_TIMEOUT];
	char next[TIME_SQL_LEN];

	return db_exec(r->db, "UPDATE pipelines SET name = IF(?, ?, name), "
	    "description = IF(?, ?, description), retries = IF(?, ?, retries), "
	    "run_timeout_s = IF(?, NULLIF(?, 0), run_timeout_s), "
	    "cron = IF(?, ?, cron), cron_timezone = IF(?, ?, cron_timezone), "
	    "next_run_at = IF(?, ?, next_run_at) WHERE id = ?",
	    "isisiiiiisisiss",
	    (long long)has(p, "name"), p->in.name,
	    (long long)has(p, "description"), p->in.description,
	    (long long)has(p, "retries"), p->in.retries,
	    (long long)timeout_set, p->in.run_timeout_s,
	    (long long)s->changed, s->cron, (long long)s->changed, s->tz,
	    (long long)s->changed, time_sql(next, s->next), id);
}

static long long job_write(struct req *r, const struct job_patch *jp,
                           const struct job_change *jc)
{
	const struct job_in *in = &jp->in.job;
	char mem[24];
	long long n = 0;

	snprintf(mem, sizeof mem, "%lld", in->memory_mb);
	if (in->input != NULL &&
	    (n = db_exec(r->db, "UPDATE jobs SET input = ?, column_include_list = ? "
	                 "WHERE id = ?", "sss", jc->js.input, jc->js.columns,
	                 jp->id)) < 0)
		return n;
	if (in->output != NULL &&
	    (n = db_exec(r->db, "UPDATE jobs SET output = ? WHERE id = ?", "ss",
	                 jc->js.output, jp->id)) < 0)
		return n;
	if (in->name != NULL || in->memory_mb > 0)
		n = db_exec(r->db, "UPDATE jobs SET name = IFNULL(?, name), "
		            "memory_allocated_mb = IFNULL(?, memory_allocated_mb) "
		            "WHERE id = ?", "sss", in->name,
		            in->memory_mb > 0 ? mem : NULL, jp->id);
	return n;
}

/* ==== the transaction ===================================================== */

enum { PATCH_DONE = 0, PATCH_MISSING = 1, PATCH_INVALID = 2, PATCH_BUSY = 3 };

/* The pipeline as GET shows it (with paused), parsed: 1, 0 when it is
 * gone, or a negative db error. */
static int current_read(struct req *r, const char *id, struct json_object **cur)
{
	struct strbuf b = { 0 };
	int rc = pipeline_render(r, id, 1, &b);

	*cur = NULL;
	if (rc == 1 && (b.oom || (*cur = json_tokener_parse(b.p)) == NULL))
		rc = DB_ERR;
	strbuf_free(&b);
	return rc;
}

struct patch_tx {
	struct req *r;
	const char *id;
	const struct patch *p;
	struct platform_verr *v;
	struct job_change *jc;        /* p->njobs + 1 */
};

/* One attempt: every check that needs the pipeline (locked), then the
 * writes.  One of the PATCH_ values (v filled for PATCH_INVALID) or a
 * negative db error; only PATCH_DONE has written anything.  v and jc start
 * empty on every attempt: a retried one must not repeat the first's
 * refusals. */
static int patch_body(struct db *db, void *arg)
{
	const struct patch_tx *t = arg;
	struct req *r = t->r;
	const struct patch *p = t->p;
	struct job_change *jc = t->jc;
	struct platform_verr *v = t->v;
	struct json_object *cur = NULL, *hold;
	struct schedule s;
	bool busy;
	long long n;
	int rc;

	(void)db;
	memset(jc, 0, (p->njobs + 1) * sizeof *jc);
	platform_verr_free(v);
	platform_verr_init(v);
	hold = json_object_new_array();
	if ((rc = pipeline_lock_idle(r, t->id)) < 0)
		goto out;
	if (rc == PIPELINE_MISSING) {
		rc = PATCH_MISSING;
		goto out;
	}
	busy = rc == PIPELINE_ACTIVE;
	if ((rc = current_read(r, t->id, &cur)) != 1) {
		rc = rc == 0 ? PATCH_MISSING : rc;
		goto out;
	}
	for (size_t i = 0; i < p->njobs; i++)
		job_check(r, v, i, &p->jobs[i], get(cur, "jobs"), hold, &jc[i]);
	schedule_check(v, p, cur, &s);
	for (size_t i = 0; i < p->njobs; i++) {
		char field[FIELD_MAX];

		if (jc[i].js.connection_id == NULL ||
		    same_str(jc[i].js.connection_id, jc[i].cur_connection))
			continue;
		snprintf(field, sizeof field, "jobs[%zu].input.connection_id", i);
		if ((rc = pipeline_connection_check(r, jc[i].js.connection_id, field,
		                                    v)) < 0)
			goto out;
	}
	rc = platform_verr_count(v) > 0 ? PATCH_INVALID : busy ? PATCH_BUSY : 0;
	if (rc != 0)
		goto out;
	if ((n = pipeline_write(r, t->id, p, &s)) < 0) {
		rc = (int)n;
		goto out;
	}
	for (size_t i = 0; i < p->njobs; i++)
		if ((n = job_write(r, &p->jobs[i], &jc[i])) < 0) {
			rc = (int)n;
			goto out;
		}
	rc = PATCH_DONE;
out:
	json_object_put(cur);
	json_object_put(hold);
	return rc;
}

/* The checks and writes, all or nothing (retried whole on a deadlock). */
static int patch_tx(struct req *r, const char *id, const struct patch *p,
                    struct platform_verr *v)
{
	struct patch_tx t = {
		r, id, p, v, arena_alloc(r->arena, (p->njobs + 1) * sizeof *t.jc),
	};

	return db_tx(r->db, "pipeline patch", patch_body, &t);
}

/* ==== handler ============================================================= */

int pipeline_patch(struct req *r)
{
	char id[PIPELINE_ID_LEN + 1];
	struct json_object *body;
	struct platform_verr v;
	struct strbuf b = { 0 };
	struct verror e;
	struct patch *p;
	int rc;

	if (validate_query(vfields_none, r, NULL, NULL, &e) != 0)
		return platform_reply_verror(r, &e);
	if (platform_pipeline_id_parse(req_param(r, "pipeline_id"), id) != 0)
		return platform_reply(r, PLATFORM_PIPELINE_NOT_FOUND);
	if ((body = req_json_body_or_reply(r)) == NULL ||
	    req_db_or_reply(r) == NULL)
		return -1;
	p = arena_alloc(r->arena, sizeof *p);
	memset(p, 0, sizeof *p);
	platform_verr_init(&v);
	patch_parse(r, &v, body, id, p);
	rc = platform_verr_count(&v) > 0 ? PATCH_INVALID : patch_tx(r, id, p, &v);
	if (rc == PATCH_MISSING) {
		platform_verr_free(&v);
		return platform_reply(r, PLATFORM_PIPELINE_NOT_FOUND);
	}
	if (rc == PATCH_INVALID)
		return platform_reply_validation(r, PLATFORM_PIPELINE_INVALID, &v);
	platform_verr_free(&v);
	if (rc == PATCH_BUSY)
		return platform_reply(r, PLATFORM_PIPELINE_BUSY_PATCH);
	if (rc != 0)
		return resp_db_error(r, rc);
	if ((rc = pipeline_render(r, id, 1, &b)) != 1) {
		strbuf_free(&b);
		return rc == 0 ? platform_reply(r, PLATFORM_PIPELINE_NOT_FOUND)
		               : resp_db_error(r, rc);
	}
	return jb_reply(r, 200, &b);
}
