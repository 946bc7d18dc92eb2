/* pipelines.c - pipelines: create, list, detail, delete, pause, resume.
 *
 * The Pipeline and Job objects are written straight into a JSON text
 * buffer: a job's stored input and output are already JSON text, so the
 * render splices them instead of parsing and re-serialising each one (the
 * list of a customer is the hot read).  The list costs one statement
 * whatever its size: the pipelines joined with their jobs and job states,
 * sorted here and written in one walk; the detail adds one for its tasks. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "db/db.h"
#include "http/errors.h"
#include "http/request.h"
#include "http/response.h"
#include "platform/dbkind.h"
#include "platform/platform.h"
#include "util/arena.h"
#include "util/config.h"
#include "util/cron.h"
#include "util/log.h"
#include "util/str.h"
#include "util/timeutil.h"

/* Bounds of a create body; every one is tested at max and max + 1. */
#define PIPELINE_NAME_MAX   255
#define PIPELINE_DESC_MAX   4096
#define PIPELINE_JOBS_MAX   100
#define JOB_NAME_MAX        255
#define JOB_PLUGIN_MAX      64
#define JOB_TEXT_MAX        255       /* table_name, column names */
#define JOB_PREFIX_MAX      1024
#define JOB_KEYS_MAX        64        /* primary_keys entries */
#define JOB_JSON_MAX        16384     /* stored input or output, bytes */
#define WAREHOUSE_NAME_MAX  64        /* MariaDB identifier length */
#define CONNECTION_ID_LEN   36

#define MSG_NOT_FOUND "Pipeline not found"

/* ==== JSON text buffer ===================================================== */

struct jbuf {
	char *p;
	size_t len, cap;
};

static void jb_raw(struct jbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;

		while (b->len + n + 1 > cap)
			cap *= 2;
		if ((b->p = realloc(b->p, cap)) == NULL)
			abort();         /* as the arena: no memory, no answer */
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void jb_lit(struct jbuf *b, const char *s)
{
	jb_raw(b, s, strlen(s));
}

/* A JSON string; the bytes are UTF-8 already (json-c and MariaDB utf8mb4). */
static void jb_str(struct jbuf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const char *run = s;

	jb_raw(b, "\"", 1);
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		jb_raw(b, run, (size_t)(s - run));
		if (c == '"' || c == '\\') {
			esc[1] = (char)c;
			jb_raw(b, esc, 2);
		} else {
			jb_raw(b, esc, 6);
		}
		run = s + 1;
	}
	jb_raw(b, run, (size_t)(s - run));
	jb_raw(b, "\"", 1);
}

static void jb_ll(struct jbuf *b, long long v)
{
	char n[24];

	jb_raw(b, n, (size_t)snprintf(n, sizeof n, "%lld", v));
}

static void jb_key(struct jbuf *b, const char *key, int *first)
{
	if (!*first)
		jb_raw(b, ",", 1);
	*first = 0;
	jb_str(b, key);
	jb_raw(b, ":", 1);
}

static int jb_reply(struct req *r, int status, struct jbuf *b)
{
	int rc = resp_raw(r, status, "application/json", b->p, b->len);

	free(b->p);
	b->p = NULL;
	return rc;
}

/* ==== reading: rows and their render ====================================== */

/* A pipeline's rows: the pipeline's columns, then one job with its state
 * (NULL job columns for a pipeline without jobs).  One statement for a
 * whole list: no query per pipeline.  No ORDER BY: sorting a join that
 * carries LONGTEXT columns makes MariaDB build an on-disk temporary table
 * per request, so the rows are copied and sorted here instead. */
#define PIPELINE_SELECT "SELECT p.seq, p.id, p.customer_id, p.created_by, " \
	"p.name, p.description, p.cron, p.last_status, p.paused, " \
	"j.seq, j.id, j.job_status, j.connector, j.input, j.output, j.load_type, " \
	"j.incremental_column_name, j.incremental_column_type, j.primary_keys, " \
	"j.column_include_list, j.memory_allocated_mb, s.incremental_column_value, " \
	"j.job_index " \
	"FROM pipelines p LEFT JOIN jobs j ON j.pipeline_id = p.id " \
	"LEFT JOIN job_state s ON s.job_id = j.id "

enum { PC_SEQ, PC_ID, PC_CUSTOMER, PC_CREATED_BY, PC_NAME, PC_DESCRIPTION,
       PC_CRON, PC_LAST_STATUS, PC_PAUSED,
       JC_SEQ, JC_ID, JC_STATUS, JC_CONNECTOR, JC_INPUT, JC_OUTPUT,
       JC_LOAD_TYPE, JC_INC_NAME, JC_INC_TYPE, JC_PKEYS, JC_COLUMNS,
       JC_MEMORY, JC_INC_VALUE, JC_INDEX, NCOLS };

/* One row copied out of the statement (arena). */
struct row {
	const char *v[NCOLS];          /* NULL for SQL NULL */
	size_t len[NCOLS];
	long long pseq, jindex;        /* jindex -1: no job */
};

static const char *row_str(const struct row *w, unsigned c)
{
	return w->v[c] != NULL ? w->v[c] : "";
}

static size_t row_len(const struct row *w, unsigned c)
{
	return w->len[c];
}

static int row_null(const struct row *w, unsigned c)
{
	return w->v[c] == NULL;
}

static long long row_ll(const struct row *w, unsigned c)
{
	return w->v[c] != NULL ? strtoll(w->v[c], NULL, 10) : 0;
}

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = *(const struct row *const *)a;
	const struct row *y = *(const struct row *const *)b;

	if (x->pseq != y->pseq)
		return x->pseq < y->pseq ? -1 : 1;
	return (x->jindex > y->jindex) - (x->jindex < y->jindex);
}

/* All rows of st into *out (arena), sorted by pipeline then job index.
 * 0, or -1 when a fetch failed. */
static int rows_load(struct req *r, struct db_stmt *st, struct row ***out,
                     size_t *n)
{
	size_t cap = 64;
	struct row **rows = arena_alloc(r->arena, cap * sizeof *rows);
	int rc;

	*n = 0;
	while ((rc = db_fetch(st)) == 1) {
		struct row *w = arena_alloc(r->arena, sizeof *w);

		for (unsigned c = 0; c < NCOLS; c++) {
			w->len[c] = db_col_len(st, c);
			w->v[c] = db_col_null(st, c) ? NULL :
			    arena_strndup(r->arena, db_col_str(st, c), w->len[c]);
		}
		w->pseq = row_ll(w, PC_SEQ);
		w->jindex = row_null(w, JC_INDEX) ? -1 : row_ll(w, JC_INDEX);
		if (*n == cap) {
			struct row **more = arena_alloc(r->arena, 2 * cap * sizeof *rows);

			memcpy(more, rows, cap * sizeof *rows);
			rows = more;
			cap *= 2;
		}
		rows[(*n)++] = w;
	}
	if (rc < 0)
		return -1;
	qsort(rows, *n, sizeof *rows, row_cmp);
	*out = rows;
	return 0;
}

static void jb_col_or_null(struct jbuf *b, const struct row *w, unsigned col)
{
	if (row_null(w, col))
		jb_lit(b, "null");
	else
		jb_str(b, row_str(w, col));
}

/* The stored input object with the column-held settings added back. */
static void job_write_input(struct jbuf *b, const struct row *w)
{
	const char *in = row_str(w, JC_INPUT);
	size_t n = row_len(w, JC_INPUT);
	int jdbc = strcmp(row_str(w, JC_CONNECTOR), "jdbc") == 0;
	int first = 1;

	while (n > 0 && isspace((unsigned char)in[n - 1]))
		n--;
	if (n < 2 || in[n - 1] != '}') {         /* the CHECK rules this out */
		jb_lit(b, "{}");
		return;
	}
	jb_raw(b, in, n - 1);
	for (size_t i = 1; i < n - 1; i++)
		if (!isspace((unsigned char)in[i])) {
			first = 0;
			break;
		}
	if (jdbc) {
		jb_key(b, "load_type", &first);
		jb_str(b, row_str(w, JC_LOAD_TYPE));
	}
	if (!row_null(w, JC_INC_NAME)) {
		jb_key(b, "incremental_column_name", &first);
		jb_str(b, row_str(w, JC_INC_NAME));
	}
	if (!row_null(w, JC_INC_TYPE)) {
		jb_key(b, "incremental_column_type", &first);
		jb_str(b, row_str(w, JC_INC_TYPE));
	}
	if (!row_null(w, JC_PKEYS)) {
		jb_key(b, "primary_keys", &first);
		jb_raw(b, row_str(w, JC_PKEYS), row_len(w, JC_PKEYS));
	}
	if (!row_null(w, JC_COLUMNS)) {
		jb_key(b, "column_include_list", &first);
		jb_raw(b, row_str(w, JC_COLUMNS), row_len(w, JC_COLUMNS));
	}
	if (jdbc && !row_null(w, JC_INC_VALUE)) {
		jb_key(b, "incremental_column_value", &first);
		jb_str(b, row_str(w, JC_INC_VALUE));
	}
	jb_raw(b, "}", 1);
}

static void job_write(struct jbuf *b, const struct row *w)
{
	jb_lit(b, "{\"id\":");
	jb_ll(b, row_ll(w, JC_SEQ));
	jb_lit(b, ",\"job_id\":");
	jb_str(b, row_str(w, JC_ID));
	jb_lit(b, ",\"job_status\":");
	jb_str(b, row_str(w, JC_STATUS));
	jb_lit(b, ",\"input\":");
	job_write_input(b, w);
	jb_lit(b, ",\"output\":");
	jb_raw(b, row_str(w, JC_OUTPUT), row_len(w, JC_OUTPUT));
	if (!row_null(w, JC_MEMORY)) {
		jb_lit(b, ",\"memory_allocated_mb\":");
		jb_ll(b, row_ll(w, JC_MEMORY));
	}
	jb_raw(b, "}", 1);
}

/* Everything of a Pipeline object up to "jobs":[ */
static void pipeline_write_head(struct jbuf *b, const struct row *w)
{
	jb_lit(b, "{\"id\":");
	jb_ll(b, row_ll(w, PC_SEQ));
	jb_lit(b, ",\"pipeline_id\":");
	jb_str(b, row_str(w, PC_ID));
	jb_lit(b, ",\"customer_id\":");
	jb_str(b, row_str(w, PC_CUSTOMER));
	jb_lit(b, ",\"user_id\":");
	jb_col_or_null(b, w, PC_CREATED_BY);
	jb_lit(b, ",\"name\":");
	jb_str(b, row_str(w, PC_NAME));
	jb_lit(b, ",\"description\":");
	jb_str(b, row_str(w, PC_DESCRIPTION));
	jb_lit(b, ",\"cron\":");
	jb_col_or_null(b, w, PC_CRON);
	jb_lit(b, ",\"last_status\":");
	jb_str(b, row_str(w, PC_LAST_STATUS));
	jb_lit(b, ",\"jobs\":[");
}

/* Write the pipelines of rows (sorted PIPELINE_SELECT rows).  With array:
 * a JSON array of whole objects.  Without: the first pipeline, left open
 * after its jobs so the detail can add to it, its paused flag in *paused.
 * Returns the number of pipelines. */
static int pipelines_write(struct jbuf *b, struct row **rows, size_t nrows,
                           int array, int *paused)
{
	long long cur = 0;              /* seq starts at 1 */
	int n = 0, first_job = 1;

	if (array)
		jb_raw(b, "[", 1);
	for (size_t i = 0; i < nrows; i++) {
		const struct row *w = rows[i];

		if (w->pseq != cur) {
			if (n > 0 && !array)
				break;          /* only one pipeline asked */
			if (n > 0)
				jb_raw(b, "]},", 3);
			cur = w->pseq;
			n++;
			first_job = 1;
			pipeline_write_head(b, w);
			if (paused != NULL)
				*paused = row_ll(w, PC_PAUSED) != 0;
		}
		if (row_null(w, JC_SEQ))
			continue;
		if (!first_job)
			jb_raw(b, ",", 1);
		first_job = 0;
		job_write(b, w);
	}
	if (n > 0)
		jb_raw(b, array ? "]}" : "]", array ? 2 : 1);
	if (array)
		jb_raw(b, "]", 1);
	return n;
}

/* The JSON array of the customer's pipelines with their jobs into b. */
static int pipelines_render(struct req *r, struct jbuf *b)
{
	struct db_stmt *st;
	struct row **rows;
	size_t n;
	int rc;

	st = db_query(r->db, PIPELINE_SELECT "WHERE p.customer_id = ?"
	              , "s", r->id.customer_id);
	if (st == NULL)
		return db_last_err(r->db);
	rc = rows_load(r, st, &rows, &n);
	db_done(st);
	if (rc < 0)
		return db_last_err(r->db);
	pipelines_write(b, rows, n, 1, NULL);
	return 0;
}

static int tasks_write(struct req *r, struct jbuf *b, const char *id)
{
	struct db_stmt *st;
	int rc, first = 1;

	st = db_query(r->db, "SELECT task_id, job_id, kind, upstream_task_ids "
	              "FROM orchestration_tasks WHERE pipeline_id = ? "
	              "ORDER BY position, task_id", "s", id);
	if (st == NULL)
		return db_last_err(r->db);
	jb_lit(b, ",\"tasks\":[");
	while ((rc = db_fetch(st)) == 1) {
		if (!first)
			jb_raw(b, ",", 1);
		first = 0;
		jb_lit(b, "{\"task_id\":");
		jb_str(b, db_col_str(st, 0));
		jb_lit(b, ",\"job_id\":");
		jb_str(b, db_col_str(st, 1));
		jb_lit(b, ",\"kind\":");
		jb_str(b, db_col_str(st, 2));
		jb_lit(b, ",\"upstream_task_ids\":");
		jb_raw(b, db_col_str(st, 3), db_col_len(st, 3));
		jb_raw(b, "}", 1);
	}
	db_done(st);
	jb_raw(b, "]", 1);
	return rc < 0 ? db_last_err(r->db) : 0;
}

/* One Pipeline object into b; with detail also "paused" and "tasks".
 * 1 written, 0 no such pipeline of the caller, or a negative db error. */
static int pipeline_render(struct req *r, const char *id, int detail,
                           struct jbuf *b)
{
	struct db_stmt *st;
	struct row **rows;
	int n, paused = 0, rc;
	size_t nrows;

	st = db_query(r->db, PIPELINE_SELECT "WHERE p.id = ? AND p.customer_id = ?"
	              , "ss", id, r->id.customer_id);
	if (st == NULL)
		return db_last_err(r->db);
	rc = rows_load(r, st, &rows, &nrows);
	db_done(st);
	if (rc < 0)
		return db_last_err(r->db);
	if ((n = pipelines_write(b, rows, nrows, 0, &paused)) == 0)
		return 0;
	if (detail) {
		jb_lit(b, ",\"paused\":");
		jb_lit(b, paused ? "true" : "false");
		if ((rc = tasks_write(r, b, id)) != 0)
			return rc;
	}
	jb_raw(b, "}", 1);
	return 1;
}

/* ==== validation of a create body ========================================= */

struct job_spec {
	const char *name, *connector, *connection_id;
	const char *input, *output;          /* JSON text to store */
	const char *load_type, *inc_name, *inc_type;
	const char *primary_keys, *columns;  /* JSON array text or NULL */
	long long memory_mb;                 /* 0: not set */
};

struct pipeline_spec {
	const char *name, *description, *cron;
	time_t next_run;                     /* 0: none */
	size_t njobs;
	struct job_spec jobs[PIPELINE_JOBS_MAX];
};

/* A field's path for messages: "jobs[2].input.plugin". */
struct vpath {
	char prefix[96];
	char buf[128];
};

static const char *vp(struct vpath *p, const char *key)
{
	snprintf(p->buf, sizeof p->buf, "%s%s%s", p->prefix,
	         p->prefix[0] != '\0' ? "." : "", key);
	return p->buf;
}

/* child's prefix = parent's path of key ("jobs[0]" -> "jobs[0].input"). */
static void vp_child(struct vpath *child, struct vpath *parent, const char *key)
{
	if (str_copy(child->prefix, sizeof child->prefix, vp(parent, key)) != 0)
		child->prefix[0] = '\0';       /* keys are ours: never too long */
}

static size_t utf8_chars(const char *s)
{
	size_t n = 0;

	for (; *s != '\0'; s++)
		n += ((unsigned char)*s & 0xC0) != 0x80;
	return n;
}

/* The string at key of o, min..max characters.  NULL when absent, null or
 * invalid (an error is recorded unless it is optional and absent/null). */
static const char *want_str(struct platform_verr *v, struct vpath *p,
                            struct json_object *o, const char *key,
                            size_t min, size_t max, int required)
{
	struct json_object *x = NULL;
	const char *s;
	size_t n;

	if (!json_object_object_get_ex(o, key, &x) || x == NULL) {
		if (required) {
			platform_verr_add(v, vp(p, key), "MISSING_FIELD",
			                  "%s is required", vp(p, key));
			platform_verr_require(v, vp(p, key));
		}
		return NULL;
	}
	if (!json_object_is_type(x, json_type_string)) {
		platform_verr_add(v, vp(p, key), "INVALID_TYPE",
		                  "%s must be a string", vp(p, key));
		return NULL;
	}
	s = json_object_get_string(x);
	n = utf8_chars(s);
	if (n < min || n > max) {
		platform_verr_add(v, vp(p, key), "INVALID_LENGTH",
		                  "%s must be %zu to %zu characters long (got %zu)",
		                  vp(p, key), min, max, n);
		return NULL;
	}
	return s;
}

/* An object at key (required); NULL with an error otherwise. */
static struct json_object *want_obj(struct platform_verr *v, struct vpath *p,
                                    struct json_object *o, const char *key)
{
	struct json_object *x = NULL;

	if (!json_object_object_get_ex(o, key, &x) || x == NULL) {
		platform_verr_add(v, vp(p, key), "MISSING_FIELD", "%s is required",
		                  vp(p, key));
		platform_verr_require(v, vp(p, key));
		return NULL;
	}
	if (!json_object_is_type(x, json_type_object)) {
		platform_verr_add(v, vp(p, key), "INVALID_TYPE",
		                  "%s must be an object", vp(p, key));
		return NULL;
	}
	return x;
}

/* An array of min..max non-empty strings of up to JOB_TEXT_MAX characters,
 * as compact JSON text (arena); NULL when absent or invalid. */
static const char *want_str_array(struct req *r, struct platform_verr *v,
                                  struct vpath *p, struct json_object *o,
                                  const char *key, size_t min, size_t max)
{
	struct json_object *x = NULL;
	size_t n;

	if (!json_object_object_get_ex(o, key, &x) || x == NULL)
		return NULL;
	if (!json_object_is_type(x, json_type_array)) {
		platform_verr_add(v, vp(p, key), "INVALID_TYPE",
		                  "%s must be an array of strings", vp(p, key));
		return NULL;
	}
	n = json_object_array_length(x);
	if (n < min || n > max) {
		platform_verr_add(v, vp(p, key), "INVALID_LENGTH",
		                  "%s must have %zu to %zu entries (got %zu)",
		                  vp(p, key), min, max, n);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(x, i);
		size_t len;

		if (!json_object_is_type(e, json_type_string) ||
		    (len = utf8_chars(json_object_get_string(e))) == 0 ||
		    len > JOB_TEXT_MAX) {
			platform_verr_add(v, vp(p, key), "INVALID_VALUE",
			                  "%s[%zu] must be a string of 1 to %d characters",
			                  vp(p, key), i, JOB_TEXT_MAX);
			return NULL;
		}
	}
	return arena_strdup(r->arena,
	    json_object_to_json_string_ext(x, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* Unknown keys of o are errors: a typo must not be silently dropped. */
static void reject_unknown(struct platform_verr *v, struct vpath *p,
                           struct json_object *o, const char *const *known)
{
	json_object_object_foreach(o, key, val) {
		const char *const *k;

		(void)val;
		for (k = known; *k != NULL && strcmp(*k, key) != 0; k++)
			;
		if (*k == NULL)
			platform_verr_add(v, vp(p, key), "UNKNOWN_FIELD",
			                  "%s is not a known field", vp(p, key));
	}
}

static int is_present(struct json_object *o, const char *key)
{
	struct json_object *x = NULL;

	return json_object_object_get_ex(o, key, &x) && x != NULL;
}

/* A warehouse identifier: letters, digits and '_', not starting with a
 * digit, at most 64 bytes, so it can be quoted safely. */
static int warehouse_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > WAREHOUSE_NAME_MAX || isdigit((unsigned char)s[0]))
		return 0;
	for (; *s != '\0'; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return 0;
	return 1;
}

/* A relative path prefix: no leading '/', no ".." segment, no '\\'. */
static int prefix_ok(const char *s)
{
	if (s[0] == '/' || strchr(s, '\\') != NULL)
		return 0;
	for (const char *seg = s; seg != NULL; seg = strchr(seg, '/')) {
		if (*seg == '/')
			seg++;
		if (strncmp(seg, "..", 2) == 0 && (seg[2] == '/' || seg[2] == '\0'))
			return 0;
	}
	return 1;
}

static int uuid_ok(const char *s)
{
	if (strlen(s) != CONNECTION_ID_LEN)
		return 0;
	for (int i = 0; i < CONNECTION_ID_LEN; i++) {
		int dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != '-' : !isxdigit((unsigned char)s[i]))
			return 0;
	}
	return 1;
}

static const char *const input_column_keys[] = {
	"load_type", "incremental_column_name", "incremental_column_type",
	"primary_keys", "column_include_list", "incremental_column_value", NULL
};

/* The input object without the keys the job's columns hold, as JSON text. */
static const char *input_stored(struct req *r, struct json_object *in)
{
	struct json_object *o = json_object_new_object();
	const char *text;

	json_object_object_foreach(in, key, val) {
		const char *const *k;

		for (k = input_column_keys; *k != NULL && strcmp(*k, key) != 0; k++)
			;
		if (*k == NULL)
			json_object_object_add(o, key, json_object_get(val));
	}
	text = arena_strdup(r->arena,
	    json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return text;
}

static const char *const load_types[] = {
	"full_load", "incremental", "incremental_with_qualify", NULL
};

/* load_type and its settings (jdbc only). */
static void input_load_type(struct req *r, struct platform_verr *v,
                            struct vpath *p, struct json_object *in,
                            const char *plugin, struct job_spec *js)
{
	enum dbkind kind = dbkind_of_plugin(plugin);
	const char *lt;
	int incremental;
	char allowed[512];

	js->load_type = "full_load";
	lt = want_str(v, p, in, "load_type", 1, 32, 0);
	if (lt != NULL) {
		const char *const *t;

		for (t = load_types; *t != NULL && strcmp(*t, lt) != 0; t++)
			;
		if (*t == NULL) {
			platform_verr_add(v, vp(p, "load_type"), "INVALID_LOAD_TYPE",
			    "load_type must be one of full_load, incremental, "
			    "incremental_with_qualify");
			return;
		}
		js->load_type = *t;
	}
	incremental = strcmp(js->load_type, "full_load") != 0;
	js->inc_name = want_str(v, p, in, "incremental_column_name", 1,
	                        JOB_TEXT_MAX, 0);
	js->inc_type = want_str(v, p, in, "incremental_column_type", 1, 64, 0);
	js->primary_keys = want_str_array(r, v, p, in, "primary_keys", 1,
	                                  JOB_KEYS_MAX);
	if (!incremental) {
		if (is_present(in, "incremental_column_name") ||
		    is_present(in, "incremental_column_type"))
			platform_verr_add(v, vp(p, "load_type"), "INVALID_LOAD_TYPE",
			    "incremental_column_name and incremental_column_type "
			    "need an incremental load_type");
		js->inc_name = js->inc_type = NULL;
		return;
	}
	if (!is_present(in, "incremental_column_name")) {
		platform_verr_add(v, vp(p, "incremental_column_name"),
		    "MISSING_INCREMENTAL_COLUMN_NAME",
		    "incremental_column_name is required for load_type %s",
		    js->load_type);
		platform_verr_require(v, vp(p, "incremental_column_name"));
	}
	if (!is_present(in, "incremental_column_type")) {
		platform_verr_add(v, vp(p, "incremental_column_type"),
		    "MISSING_INCREMENTAL_COLUMN_TYPE",
		    "incremental_column_type is required for load_type %s",
		    js->load_type);
		platform_verr_require(v, vp(p, "incremental_column_type"));
	} else if (js->inc_type != NULL &&
	           (js->inc_type = dbkind_type_find(kind, js->inc_type)) == NULL) {
		platform_verr_add(v, vp(p, "incremental_column_type"),
		    "INVALID_INCREMENTAL_COLUMN_TYPE",
		    "incremental_column_type is not allowed for plugin %s; "
		    "allowed: %s", plugin,
		    dbkind_types_joined(kind, allowed, sizeof allowed));
	}
	if (strcmp(js->load_type, "incremental_with_qualify") == 0 &&
	    !is_present(in, "primary_keys")) {
		platform_verr_add(v, vp(p, "primary_keys"), "MISSING_PRIMARY_KEYS",
		    "primary_keys is required for load_type incremental_with_qualify");
		platform_verr_require(v, vp(p, "primary_keys"));
	}
}

static const char *const jdbc_only_keys[] = {
	"load_type", "incremental_column_name", "incremental_column_type",
	"primary_keys", NULL
};

static const char *const connectors[] = { "jdbc", "singer", "file_storage", NULL };

static void job_input(struct req *r, struct platform_verr *v, struct vpath *p,
                      struct json_object *in, struct job_spec *js)
{
	const char *plugin, *cid;
	const char *const *c;

	js->connector = want_str(v, p, in, "connector", 1, 32, 1);
	plugin = want_str(v, p, in, "plugin", 1, JOB_PLUGIN_MAX, 1);
	if (js->connector == NULL)
		return;
	for (c = connectors; *c != NULL && strcmp(*c, js->connector) != 0; c++)
		;
	if (*c == NULL) {
		platform_verr_add(v, vp(p, "connector"), "INVALID_CONNECTOR_TYPE",
		    "connector must be one of jdbc, singer, file_storage");
		js->connector = NULL;
		return;
	}
	js->connector = *c;
	if (strcmp(*c, "file_storage") == 0) {
		const char *pre = want_str(v, p, in, "prefix", 0, JOB_PREFIX_MAX, 1);

		if (pre != NULL && !prefix_ok(pre))
			platform_verr_add(v, vp(p, "prefix"), "INVALID_VALUE",
			    "prefix must be a relative path without '..' segments");
	} else {
		want_str(v, p, in, "table_name", 1, JOB_TEXT_MAX, 1);
	}
	if (strcmp(*c, "jdbc") == 0 && plugin != NULL &&
	    dbkind_of_plugin(plugin) == DBKIND_NONE)
		platform_verr_add(v, vp(p, "plugin"), "INVALID_PLUGIN",
		    "jdbc plugin must be one of postgres, mysql, mariadb, oracle, "
		    "sqlserver");
	cid = want_str(v, p, in, "connection_id", 1, CONNECTION_ID_LEN, 0);
	if (cid != NULL && !uuid_ok(cid))
		platform_verr_add(v, vp(p, "connection_id"), "UNKNOWN_CONNECTION",
		                  "connection_id is not a connection of this customer");
	else
		js->connection_id = cid;
	js->columns = want_str_array(r, v, p, in, "column_include_list", 0,
	                             PLATFORM_COLUMNS_MAX);
	if (is_present(in, "incremental_column_value"))
		platform_verr_add(v, vp(p, "incremental_column_value"),
		    "INVALID_FIELD", "incremental_column_value is job state: set it "
		    "with PATCH /platform/jobs/{jobId}/input");
	if (strcmp(*c, "jdbc") == 0 && plugin != NULL) {
		input_load_type(r, v, p, in, plugin, js);
	} else {
		for (const char *const *k = jdbc_only_keys; *k != NULL; k++)
			if (is_present(in, *k))
				platform_verr_add(v, vp(p, *k), "INVALID_CONNECTOR_TYPE",
				                  "%s applies to jdbc jobs only", *k);
		js->load_type = "full_load";
	}
	js->input = input_stored(r, in);
	if (strlen(js->input) > JOB_JSON_MAX)
		platform_verr_add(v, p->prefix, "INVALID_LENGTH",
		                  "%s is larger than %d bytes", p->prefix, JOB_JSON_MAX);
}

static void job_output(struct req *r, struct platform_verr *v, struct vpath *p,
                       struct json_object *out, struct job_spec *js)
{
	const char *plugin = want_str(v, p, out, "plugin", 1, JOB_PLUGIN_MAX, 1);
	struct json_object *raw;

	if (plugin != NULL && strcmp(plugin, "mariadb") != 0)
		platform_verr_add(v, vp(p, "plugin"), "INVALID_PLUGIN",
		                  "output plugin must be mariadb");
	if ((raw = want_obj(v, p, out, "raw")) != NULL) {
		struct vpath rp;
		const char *keys[] = { "table_name", "table_schema" };

		vp_child(&rp, p, "raw");
		for (int i = 0; i < 2; i++) {
			const char *s = want_str(v, &rp, raw, keys[i], 1,
			                         WAREHOUSE_NAME_MAX, 1);

			if (s != NULL && !warehouse_name_ok(s))
				platform_verr_add(v, vp(&rp, keys[i]), "INVALID_VALUE",
				    "%s may hold letters, digits and '_' and must not "
				    "start with a digit", vp(&rp, keys[i]));
		}
	}
	js->output = arena_strdup(r->arena,
	    json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE));
	if (strlen(js->output) > JOB_JSON_MAX)
		platform_verr_add(v, p->prefix, "INVALID_LENGTH",
		                  "%s is larger than %d bytes", p->prefix, JOB_JSON_MAX);
}

static void job_validate(struct req *r, struct platform_verr *v, size_t i,
                         struct json_object *jo, struct job_spec *js)
{
	static const char *const known[] = {
		"name", "input", "output", "memory_allocated_mb", NULL
	};
	struct json_object *in, *out, *mem = NULL;
	struct vpath p;

	snprintf(p.prefix, sizeof p.prefix, "jobs[%zu]", i);
	if (!json_object_is_type(jo, json_type_object)) {
		platform_verr_add(v, p.prefix, "INVALID_TYPE", "%s must be an object",
		                  p.prefix);
		return;
	}
	reject_unknown(v, &p, jo, known);
	js->name = want_str(v, &p, jo, "name", 1, JOB_NAME_MAX, 0);
	if (json_object_object_get_ex(jo, "memory_allocated_mb", &mem) &&
	    mem != NULL) {
		long long mb = json_object_get_int64(mem);

		if (!json_object_is_type(mem, json_type_int) || mb < 1 ||
		    mb > r->cfg->memory_max_mb)
			platform_verr_add(v, vp(&p, "memory_allocated_mb"),
			    "INVALID_VALUE", "memory_allocated_mb must be an integer "
			    "from 1 to %d", r->cfg->memory_max_mb);
		else
			js->memory_mb = mb;
	}
	if ((in = want_obj(v, &p, jo, "input")) != NULL) {
		struct vpath ip;

		vp_child(&ip, &p, "input");
		job_input(r, v, &ip, in, js);
	}
	if ((out = want_obj(v, &p, jo, "output")) != NULL) {
		struct vpath op;

		vp_child(&op, &p, "output");
		job_output(r, v, &op, out, js);
	}
}

static void pipeline_validate(struct req *r, struct platform_verr *v,
                              struct json_object *body,
                              struct pipeline_spec *ps)
{
	static const char *const known[] = {
		"name", "description", "cron", "jobs", NULL
	};
	struct json_object *jobs = NULL;
	struct vpath p = { "", "" };
	char err[160];

	if (!json_object_is_type(body, json_type_object)) {
		platform_verr_add(v, "body", "INVALID_TYPE",
		                  "the body must be a JSON object");
		return;
	}
	reject_unknown(v, &p, body, known);
	ps->name = want_str(v, &p, body, "name", 1, PIPELINE_NAME_MAX, 1);
	ps->description = want_str(v, &p, body, "description", 0,
	                           PIPELINE_DESC_MAX, 0);
	ps->cron = want_str(v, &p, body, "cron", 1, CRON_EXPR_MAX, 0);
	if (ps->cron != NULL) {
		struct cron c;

		if (cron_parse(ps->cron, &c, err, sizeof err) != 0)
			platform_verr_add(v, "cron", "INVALID_CRON",
			                  "cron is not valid: %s", err);
		else if (cron_next(&c, time(NULL), &ps->next_run) != 0)
			platform_verr_add(v, "cron", "INVALID_CRON",
			                  "cron never fires");
	}
	if (!json_object_object_get_ex(body, "jobs", &jobs) || jobs == NULL) {
		platform_verr_add(v, "jobs", "MISSING_FIELD", "jobs is required");
		platform_verr_require(v, "jobs");
		return;
	}
	if (!json_object_is_type(jobs, json_type_array)) {
		platform_verr_add(v, "jobs", "INVALID_TYPE", "jobs must be an array");
		return;
	}
	ps->njobs = json_object_array_length(jobs);
	if (ps->njobs < 1 || ps->njobs > PIPELINE_JOBS_MAX) {
		platform_verr_add(v, "jobs", "INVALID_LENGTH",
		                  "jobs must have 1 to %d entries (got %zu)",
		                  PIPELINE_JOBS_MAX, ps->njobs);
		ps->njobs = 0;
		return;
	}
	for (size_t i = 0; i < ps->njobs; i++)
		job_validate(r, v, i, json_object_array_get_idx(jobs, i),
		             &ps->jobs[i]);
}

/* ==== writing ============================================================= */

/* "2026-11-22 10:00:00" for a DATETIME column; NULL for 0. */
static const char *sql_time(char buf[24], time_t t)
{
	struct tm tm;

	if (t == 0 || gmtime_r(&t, &tm) == NULL)
		return NULL;
	strftime(buf, 24, "%Y-%m-%d %H:%M:%S", &tm);
	return buf;
}

/* Every connection_id must be a connection of the caller; the shared lock
 * keeps it from being deleted before the jobs reference it.  0, 1 when an
 * error was recorded, or a negative db error. */
static int connections_check(struct req *r, struct pipeline_spec *ps,
                             struct platform_verr *v)
{
	for (size_t i = 0; i < ps->njobs; i++) {
		struct db_stmt *st;
		char field[64];
		int rc;

		if (ps->jobs[i].connection_id == NULL)
			continue;
		st = db_query(r->db, "SELECT 1 FROM connections WHERE id = ? "
		              "AND customer_id = ? LOCK IN SHARE MODE", "ss",
		              ps->jobs[i].connection_id, r->id.customer_id);
		if (st == NULL)
			return db_last_err(r->db);
		rc = db_fetch(st);
		db_done(st);
		if (rc < 0)
			return db_last_err(r->db);
		if (rc == 0) {
			snprintf(field, sizeof field, "jobs[%zu].input.connection_id", i);
			platform_verr_add(v, field, "UNKNOWN_CONNECTION",
			    "connection_id is not a connection of this customer");
		}
	}
	return platform_verr_count(v) > 0;
}

static int job_insert(struct req *r, const char *pid, size_t i,
                      const struct job_spec *js)
{
	char jid[JOB_ID_MAX + 1], mem[24], task[JOB_ID_MAX + 32];
	char upstream[JOB_ID_MAX + 40];
	const char *name = js->name;
	long long rc;

	platform_job_id_make(jid, pid, (int)i);
	snprintf(mem, sizeof mem, "%lld", js->memory_mb);
	if (name == NULL)
		name = jid;
	rc = db_exec(r->db, "INSERT INTO jobs (id, pipeline_id, job_index, name, "
	    "connector, input, output, load_type, incremental_column_name, "
	    "incremental_column_type, primary_keys, column_include_list, "
	    "memory_allocated_mb) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
	    "ssissssssssss", jid, pid, (long long)i, name, js->connector,
	    js->input, js->output, js->load_type, js->inc_name, js->inc_type,
	    js->primary_keys, js->columns, js->memory_mb > 0 ? mem : NULL);
	if (rc < 0)
		return (int)rc;
	rc = db_exec(r->db, "INSERT INTO job_state (job_id) VALUES (?)", "s", jid);
	if (rc < 0)
		return (int)rc;
	snprintf(task, sizeof task, "%s.extract_load", jid);
	rc = db_exec(r->db, "INSERT INTO orchestration_tasks (pipeline_id, "
	    "task_id, job_id, kind, upstream_task_ids, position) "
	    "VALUES (?, ?, ?, 'extract_load', '[]', ?)", "sssi", pid, task, jid,
	    (long long)(2 * i));
	if (rc < 0 || strcmp(js->load_type, "incremental_with_qualify") != 0)
		return rc < 0 ? (int)rc : 0;
	snprintf(upstream, sizeof upstream, "[\"%s\"]", task);
	snprintf(task, sizeof task, "%s.qualify", jid);
	rc = db_exec(r->db, "INSERT INTO orchestration_tasks (pipeline_id, "
	    "task_id, job_id, kind, upstream_task_ids, position) "
	    "VALUES (?, ?, ?, 'qualify', ?, ?)", "ssssi", pid, task, jid,
	    upstream, (long long)(2 * i + 1));
	return rc < 0 ? (int)rc : 0;
}

/* The pipeline, its jobs, job states and tasks in one transaction.
 * 0; 1 when a connection check failed (recorded in v); or a db error. */
static int pipeline_insert(struct req *r, struct pipeline_spec *ps,
                           const char *pid, struct platform_verr *v)
{
	char next[24];
	long long n;
	int rc;

	if ((rc = db_begin(r->db)) != 0)
		return rc;
	if ((rc = connections_check(r, ps, v)) != 0)
		goto out;
	n = db_exec(r->db, "INSERT INTO pipelines (id, customer_id, created_by, "
	    "name, description, cron, next_run_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
	    "sssssss", pid, r->id.customer_id, r->id.sub, ps->name,
	    ps->description != NULL ? ps->description : "", ps->cron,
	    sql_time(next, ps->next_run));
	if (n < 0) {
		rc = (int)n;
		goto out;
	}
	for (size_t i = 0; i < ps->njobs; i++)
		if ((rc = job_insert(r, pid, i, &ps->jobs[i])) != 0)
			goto out;
	rc = db_commit(r->db);
out:
	if (rc != 0)
		db_rollback(r->db);
	return rc;
}

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

enum { DEL_OK = 0, DEL_NOT_FOUND = 1, DEL_RUNNING = 2 };

/* Lock the caller's pipeline row; then refuse while a run is active.
 * DEL_OK, DEL_NOT_FOUND, DEL_RUNNING or a negative db error. */
static int delete_check(struct req *r, const char *id)
{
	struct db_stmt *st;
	int rc;

	st = db_query(r->db, "SELECT 1 FROM pipelines WHERE id = ? AND "
	              "customer_id = ? FOR UPDATE", "ss", id, r->id.customer_id);
	if (st == NULL)
		return db_last_err(r->db);
	rc = db_fetch(st);
	db_done(st);
	if (rc <= 0)
		return rc < 0 ? db_last_err(r->db) : DEL_NOT_FOUND;
	st = db_query(r->db, "SELECT 1 FROM pipeline_runs WHERE pipeline_id = ? "
	              "AND status IN ('CREATED', 'RUNNING') UNION ALL "
	              "SELECT 1 FROM jobs WHERE pipeline_id = ? AND "
	              "job_status = 'RUNNING' LIMIT 1", "ss", id, id);
	if (st == NULL)
		return db_last_err(r->db);
	rc = db_fetch(st);
	db_done(st);
	if (rc < 0)
		return db_last_err(r->db);
	return rc == 1 ? DEL_RUNNING : DEL_OK;
}

static int pipeline_delete(struct req *r, const char *id)
{
	int rc;

	if ((rc = db_begin(r->db)) != 0)
		return rc;
	if ((rc = delete_check(r, id)) != DEL_OK)
		goto out;
	for (size_t i = 0; i < sizeof delete_sql / sizeof delete_sql[0]; i++) {
		long long n = db_exec(r->db, delete_sql[i], "s", id);

		if (n < 0) {
			rc = (int)n;
			goto out;
		}
	}
	rc = db_commit(r->db);
out:
	if (rc != DEL_OK)
		db_rollback(r->db);
	return rc;
}

/* Pause (next_run_at NULL) or resume (next_run_at from the cron).  1 done,
 * 0 no such pipeline of the caller, or a negative db error. */
static int pipeline_set_paused(struct req *r, const char *id, int paused,
                               time_t *next_run)
{
	struct db_stmt *st;
	char cron_text[CRON_EXPR_MAX + 1] = "", next[24], err[160];
	struct cron c;
	long long n;
	int rc;

	*next_run = 0;
	if ((rc = db_begin(r->db)) != 0)
		return rc;
	st = db_query(r->db, "SELECT cron FROM pipelines WHERE id = ? AND "
	              "customer_id = ? FOR UPDATE", "ss", id, r->id.customer_id);
	if (st == NULL) {
		rc = db_last_err(r->db);
		goto out;
	}
	if ((rc = db_fetch(st)) == 1)
		snprintf(cron_text, sizeof cron_text, "%s", db_col_str(st, 0));
	db_done(st);
	if (rc != 1) {
		rc = rc < 0 ? db_last_err(r->db) : 0;
		goto out;
	}
	if (!paused && cron_text[0] != '\0' &&
	    (cron_parse(cron_text, &c, err, sizeof err) != 0 ||
	     cron_next(&c, time(NULL), next_run) != 0))
		*next_run = 0;
	n = db_exec(r->db, "UPDATE pipelines SET paused = ?, next_run_at = ? "
	            "WHERE id = ?", "iss", (long long)paused,
	            sql_time(next, *next_run), id);
	if (n < 0) {
		rc = (int)n;
		goto out;
	}
	if ((rc = db_commit(r->db)) == 0)
		return 1;
out:
	db_rollback(r->db);
	return rc;
}

/* ==== handlers ============================================================ */

static int pipelines_list(struct req *r)
{
	struct jbuf b = { 0 };
	int rc;

	if (db_ensure(r->db) != DB_OK || (rc = pipelines_render(r, &b)) != 0) {
		int unavailable = !db_connected(r->db);

		free(b.p);
		log_kv(LOG_ERROR, "pipeline list failed", "error=%s",
		       LOG_Q(db_error(r->db)));
		return platform_reply_msg(r, 500, "Failed to retrieve pipelines",
		    unavailable ? "Database unavailable" : "Database error");
	}
	return jb_reply(r, 200, &b);
}

static int pipeline_get(struct req *r)
{
	char id[PIPELINE_ID_LEN + 1];
	struct jbuf b = { 0 };
	int rc;

	if (platform_pipeline_id_parse(req_param(r, "pipeline_id"), id) != 0)
		return resp_detail(r, 404, MSG_NOT_FOUND);
	if (req_db_or_reply(r) == NULL)
		return -1;
	rc = pipeline_render(r, id, 1, &b);
	if (rc != 1) {
		free(b.p);
		return rc == 0 ? resp_detail(r, 404, MSG_NOT_FOUND)
		               : resp_db_error(r, rc);
	}
	return jb_reply(r, 200, &b);
}

static int pipeline_create(struct req *r)
{
	struct json_object *body = req_json_body_or_reply(r);
	struct pipeline_spec *ps;
	struct platform_verr v;
	char id[PIPELINE_ID_LEN + 1];
	struct jbuf b = { 0 };
	int rc;

	if (body == NULL)
		return -1;
	ps = arena_alloc(r->arena, sizeof *ps);
	platform_verr_init(&v);
	pipeline_validate(r, &v, body, ps);
	if (platform_verr_count(&v) > 0)
		return platform_reply_validation(r, &v, "Pipeline validation failed");
	if (platform_customer_ensure(r) != 0 ||
	    platform_pipeline_id_new(id) != 0) {
		platform_verr_free(&v);
		return r->status != 0 ? -1 : resp_internal(r, "pipeline id");
	}
	rc = pipeline_insert(r, ps, id, &v);
	if (rc == 1)
		return platform_reply_validation(r, &v, "Pipeline validation failed");
	platform_verr_free(&v);
	if (rc != 0)
		return resp_db_error(r, rc);
	if ((rc = pipeline_render(r, id, 0, &b)) != 1) {
		free(b.p);
		return rc == 0 ? resp_internal(r, "created pipeline vanished")
		               : resp_db_error(r, rc);
	}
	return jb_reply(r, 201, &b);
}

static int pipeline_delete_handler(struct req *r)
{
	const char *name = req_header(r, "customer_name");
	char id[PIPELINE_ID_LEN + 1];
	struct json_object *o;
	int rc;

	if (name == NULL || name[0] == '\0')
		return platform_reply_msg(r, 401, "customer_name header is required",
		                          NULL);
	if (r->id.customer_name == NULL || strcmp(name, r->id.customer_name) != 0)
		return resp_detail(r, 403, "customer_name does not match the "
		                   "token's customer");
	if (platform_pipeline_id_parse(req_param(r, "pipeline_id"), id) != 0)
		return resp_detail(r, 404, MSG_NOT_FOUND);
	if (req_db_or_reply(r) == NULL)
		return -1;
	rc = pipeline_delete(r, id);
	if (rc == DEL_NOT_FOUND)
		return resp_detail(r, 404, MSG_NOT_FOUND);
	if (rc == DEL_RUNNING)
		return resp_detail(r, 409, "Pipeline has a run in progress; "
		                   "wait for it to finish before deleting");
	if (rc != 0) {
		log_kv(LOG_ERROR, "pipeline delete rolled back", "pipeline_id=%s "
		       "error=%s", id, LOG_Q(db_error(r->db)));
		return resp_detail(r, 500, "Database error while deleting the "
		                   "pipeline; nothing was deleted");
	}
	o = json_object_new_object();
	json_object_object_add(o, "pipeline_id", json_object_new_string(id));
	json_object_object_add(o, "status",
	                       json_object_new_string("PIPELINE_DELETED"));
	return resp_json(r, 200, o);
}

/* Body {"customer_id", "pipeline_id"} of pause and resume: 0 with the
 * canonical id in id, or -1 once answered (a malformed id answers 404,
 * as an unknown one does). */
static int pause_body_or_reply(struct req *r, char id[PIPELINE_ID_LEN + 1])
{
	static const char *const keys[] = { "customer_id", "pipeline_id" };
	struct json_object *body = req_json_body_or_reply(r), *x;
	const char *val[2] = { NULL, NULL };
	char msg[160] = "";

	if (body == NULL)
		return -1;
	if (!json_object_is_type(body, json_type_object))
		return resp_detail(r, 400, "The body must be a JSON object");
	json_object_object_foreach(body, key, unused) {
		(void)unused;
		if (strcmp(key, keys[0]) != 0 && strcmp(key, keys[1]) != 0) {
			snprintf(msg, sizeof msg, "Unknown field '%.64s'", key);
			return resp_detail(r, 400, msg);
		}
	}
	for (int i = 0; i < 2; i++) {
		if (!json_object_object_get_ex(body, keys[i], &x) || x == NULL) {
			snprintf(msg + strlen(msg), sizeof msg - strlen(msg), "%s%s",
			         msg[0] != '\0' ? ", " : "Missing required field(s): ",
			         keys[i]);
			continue;
		}
		if (!json_object_is_type(x, json_type_string)) {
			snprintf(msg, sizeof msg, "%s must be a string", keys[i]);
			return resp_detail(r, 400, msg);
		}
		val[i] = json_object_get_string(x);
	}
	if (msg[0] != '\0')
		return resp_detail(r, 400, msg);
	if (r->id.customer_id == NULL || strcmp(val[0], r->id.customer_id) != 0)
		return resp_detail(r, 403, "customer_id does not match the token's "
		                   "customer");
	if (platform_pipeline_id_parse(val[1], id) != 0)
		return resp_detail(r, 404, MSG_NOT_FOUND);
	return 0;
}

static int pause_or_resume(struct req *r, int paused)
{
	char id[PIPELINE_ID_LEN + 1], iso[40];
	struct json_object *o, *d;
	time_t next;
	int rc;

	if (pause_body_or_reply(r, id) != 0 || req_db_or_reply(r) == NULL)
		return -1;
	rc = pipeline_set_paused(r, id, paused, &next);
	if (rc != 1)
		return rc == 0 ? resp_detail(r, 404, MSG_NOT_FOUND)
		               : resp_db_error(r, rc);
	d = json_object_new_object();
	json_object_object_add(d, "pipeline_id", json_object_new_string(id));
	json_object_object_add(d, "paused", json_object_new_boolean(paused));
	json_object_object_add(d, "next_run_at", next == 0 ? NULL :
	    json_object_new_string(time_iso8601(iso, sizeof iso, next, -1)));
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
	ROUTES_END
};
