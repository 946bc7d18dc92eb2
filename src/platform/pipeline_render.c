/* pipeline_render.c - the Pipeline and Job objects as JSON text.
 *
 * A job's stored input and output are already JSON text (the columns carry
 * json_valid CHECKs), so the render splices them instead of parsing and
 * re-serialising each one: the list of a customer is the hot read.  The list
 * costs one statement whatever its size: the pipelines joined with their
 * jobs and job states, sorted here and written in one walk; the detail adds
 * one for its tasks. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "http/errors.h"
#include "http/body_cache.h"
#include "http/etag.h"
#include "http/request.h"
#include "http/response.h"
#include "platform/pipelines.h"
#include "util/arena.h"
#include "util/strbuf.h"

/* A JSON string; the bytes are UTF-8 already (json-c and MariaDB utf8mb4). */
static void jb_str(struct strbuf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const char *run = s;

	strbuf_add(b, "\"", 1);
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		strbuf_add(b, run, (size_t)(s - run));
		if (c == '"' || c == '\\') {
			esc[1] = (char)c;
			strbuf_add(b, esc, 2);
		} else {
			strbuf_add(b, esc, 6);
		}
		run = s + 1;
	}
	strbuf_add(b, run, (size_t)(s - run));
	strbuf_add(b, "\"", 1);
}

static void jb_ll(struct strbuf *b, long long v)
{
	char n[24];

	strbuf_add(b, n, (size_t)snprintf(n, sizeof n, "%lld", v));
}

static void jb_key(struct strbuf *b, const char *key, int *first)
{
	if (!*first)
		strbuf_add(b, ",", 1);
	*first = 0;
	jb_str(b, key);
	strbuf_add(b, ":", 1);
}

/* The reads' text, kept for the worker's lifetime: growing a list of
 * 160 KB from nothing and handing it back cost every request its reallocs
 * and page faults.  A text over JB_KEEP is freed once it is sent. */
#define JB_KEEP (4 * 1024 * 1024)
static struct strbuf jb_kept;

struct strbuf *jb_buf(void)
{
	strbuf_reset(&jb_kept, JB_KEEP);
	return &jb_kept;
}

/* status 0: 200 with an ETag, or 304 (http/etag.h); with k, the ETag is
 * k's and the text is kept in the render cache (http/body_cache.h). */
static int jb_send(struct req *r, int status, struct strbuf *b,
                   const struct body_key *k)
{
	int rc;

	if (b->oom)
		rc = resp_internal(r, "out of memory");
	else if (k != NULL)
		rc = body_cache_reply(r, k, "application/json", b->p, b->len);
	else if (status == 0)
		rc = resp_raw_etag(r, "application/json", b->p, b->len);
	else
		rc = resp_raw(r, status, "application/json", b->p, b->len);
	if (b == &jb_kept)
		strbuf_reset(b, JB_KEEP);
	else
		strbuf_free(b);
	return rc;
}

int jb_reply(struct req *r, int status, struct strbuf *b)
{
	return jb_send(r, status, b, NULL);
}

int jb_reply_etag(struct req *r, struct strbuf *b)
{
	return jb_send(r, 0, b, NULL);
}

int jb_reply_cached(struct req *r, struct strbuf *b, const struct body_key *k)
{
	return jb_send(r, 0, b, k);
}

/* ==== reading: rows and their render ====================================== */

/* A pipeline's rows: the pipeline's columns, then one job with its state
 * (NULL job columns for a pipeline without jobs).  One statement for a
 * whole list: no query per pipeline.  No ORDER BY: sorting a join that
 * carries LONGTEXT columns makes MariaDB build an on-disk temporary table
 * per request, so the rows are copied and sorted here instead. */
/* A pipeline's version (sql/015): with its seq, what names a rendered
 * listing (rows_key, pipelines_list_key). */
#define PIPELINE_VERSIONS "p.version "
#define PIPELINE_FROM "FROM pipelines p LEFT JOIN jobs j ON j.pipeline_id = p.id " \
	"LEFT JOIN job_state s ON s.job_id = j.id "
#define PIPELINES_FORMAT "pipelines/1"

#define PIPELINE_SELECT "SELECT p.seq, p.id, p.customer_id, p.created_by, " \
	"p.name, p.description, p.cron, p.last_status, p.paused, " \
	"j.seq, j.id, j.job_status, j.connector, j.input, j.output, j.load_type, " \
	"j.incremental_column_name, j.incremental_column_type, j.primary_keys, " \
	"j.column_include_list, j.memory_allocated_mb, s.incremental_column_value, " \
	"j.job_index, p.cron_timezone, p.retries, p.run_timeout_s, " \
	PIPELINE_VERSIONS PIPELINE_FROM

enum { PC_SEQ, PC_ID, PC_CUSTOMER, PC_CREATED_BY, PC_NAME, PC_DESCRIPTION,
       PC_CRON, PC_LAST_STATUS, PC_PAUSED,
       JC_SEQ, JC_ID, JC_STATUS, JC_CONNECTOR, JC_INPUT, JC_OUTPUT,
       JC_LOAD_TYPE, JC_INC_NAME, JC_INC_TYPE, JC_PKEYS, JC_COLUMNS,
       JC_MEMORY, JC_INC_VALUE, JC_INDEX, PC_CRON_TZ, PC_RETRIES,
       PC_RUN_TIMEOUT, PC_VERSION, NCOLS };

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

static void jb_col_or_null(struct strbuf *b, const struct row *w, unsigned col)
{
	if (row_null(w, col))
		strbuf_adds(b, "null");
	else
		jb_str(b, row_str(w, col));
}

/* The stored input object with the column-held settings added back. */
static void job_write_input(struct strbuf *b, const struct row *w)
{
	const char *in = row_str(w, JC_INPUT);
	size_t n = row_len(w, JC_INPUT);
	int jdbc = strcmp(row_str(w, JC_CONNECTOR), "jdbc") == 0;
	int first = 1;

	while (n > 0 && isspace((unsigned char)in[n - 1]))
		n--;
	if (n < 2 || in[n - 1] != '}') {         /* the CHECK rules this out */
		strbuf_adds(b, "{}");
		return;
	}
	strbuf_add(b, in, n - 1);
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
		strbuf_add(b, row_str(w, JC_PKEYS), row_len(w, JC_PKEYS));
	}
	if (!row_null(w, JC_COLUMNS)) {
		jb_key(b, "column_include_list", &first);
		strbuf_add(b, row_str(w, JC_COLUMNS), row_len(w, JC_COLUMNS));
	}
	if (jdbc && !row_null(w, JC_INC_VALUE)) {
		jb_key(b, "incremental_column_value", &first);
		jb_str(b, row_str(w, JC_INC_VALUE));
	}
	strbuf_add(b, "}", 1);
}

static void job_write(struct strbuf *b, const struct row *w)
{
	strbuf_adds(b, "{\"id\":");
	jb_ll(b, row_ll(w, JC_SEQ));
	strbuf_adds(b, ",\"job_id\":");
	jb_str(b, row_str(w, JC_ID));
	strbuf_adds(b, ",\"job_status\":");
	jb_str(b, row_str(w, JC_STATUS));
	strbuf_adds(b, ",\"input\":");
	job_write_input(b, w);
	strbuf_adds(b, ",\"output\":");
	strbuf_add(b, row_str(w, JC_OUTPUT), row_len(w, JC_OUTPUT));
	if (!row_null(w, JC_MEMORY)) {
		strbuf_adds(b, ",\"memory_allocated_mb\":");
		jb_ll(b, row_ll(w, JC_MEMORY));
	}
	strbuf_add(b, "}", 1);
}

/* Everything of a Pipeline object up to "jobs":[ */
static void pipeline_write_head(struct strbuf *b, const struct row *w)
{
	strbuf_adds(b, "{\"id\":");
	jb_ll(b, row_ll(w, PC_SEQ));
	strbuf_adds(b, ",\"pipeline_id\":");
	jb_str(b, row_str(w, PC_ID));
	strbuf_adds(b, ",\"customer_id\":");
	jb_str(b, row_str(w, PC_CUSTOMER));
	strbuf_adds(b, ",\"user_id\":");
	jb_col_or_null(b, w, PC_CREATED_BY);
	strbuf_adds(b, ",\"name\":");
	jb_str(b, row_str(w, PC_NAME));
	strbuf_adds(b, ",\"description\":");
	jb_str(b, row_str(w, PC_DESCRIPTION));
	strbuf_adds(b, ",\"cron\":");
	jb_col_or_null(b, w, PC_CRON);
	/* Runner settings, present only when set (as memory_allocated_mb). */
	if (!row_null(w, PC_CRON_TZ)) {
		strbuf_adds(b, ",\"cron_timezone\":");
		jb_str(b, row_str(w, PC_CRON_TZ));
	}
	if (row_ll(w, PC_RETRIES) > 0) {
		strbuf_adds(b, ",\"retries\":");
		jb_ll(b, row_ll(w, PC_RETRIES));
	}
	if (!row_null(w, PC_RUN_TIMEOUT)) {
		strbuf_adds(b, ",\"run_timeout_s\":");
		jb_ll(b, row_ll(w, PC_RUN_TIMEOUT));
	}
	strbuf_adds(b, ",\"last_status\":");
	jb_str(b, row_str(w, PC_LAST_STATUS));
	strbuf_adds(b, ",\"jobs\":[");
}

/* Write the pipelines of rows (sorted PIPELINE_SELECT rows).  With array:
 * a JSON array of whole objects.  Without: the first pipeline, left open
 * after its jobs so the detail can add to it, its paused flag in *paused.
 * Returns the number of pipelines. */
static int pipelines_write(struct strbuf *b, struct row **rows, size_t nrows,
                           int array, int *paused)
{
	long long cur = 0;              /* seq starts at 1 */
	int n = 0, first_job = 1;

	if (array)
		strbuf_add(b, "[", 1);
	for (size_t i = 0; i < nrows; i++) {
		const struct row *w = rows[i];

		if (w->pseq != cur) {
			if (n > 0 && !array)
				break;          /* only one pipeline asked */
			if (n > 0)
				strbuf_add(b, "]},", 3);
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
			strbuf_add(b, ",", 1);
		first_job = 0;
		job_write(b, w);
	}
	if (n > 0)
		strbuf_add(b, array ? "]}" : "]", array ? 2 : 1);
	if (array)
		strbuf_add(b, "]", 1);
	return n;
}

/* A list's name is a digest of the (seq, version) of each of its
 * pipelines, in seq order: the render takes them from its rows,
 * pipelines_list_key from pipelines_customer_version_idx, and both must
 * agree. */
static void key_init(struct req *r, struct body_digest *d)
{
	body_digest_init(d, PIPELINES_FORMAT, r->id.customer_id);
}

static void key_add(struct body_digest *d, long long seq, long long version)
{
	body_digest_ll(d, seq);
	body_digest_ll(d, version);
}

/* rows are sorted by pipeline (row_cmp), a pipeline on each of its jobs. */
static void rows_key(struct req *r, struct row **rows, size_t n,
                     struct body_key *k)
{
	struct body_digest d;

	key_init(r, &d);
	for (size_t i = 0; i < n; i++)
		if (i == 0 || rows[i]->pseq != rows[i - 1]->pseq)
			key_add(&d, rows[i]->pseq, row_ll(rows[i], PC_VERSION));
	body_digest_key(&d, r->id.customer_id, k);
}

/* The JSON array of the customer's pipelines with their jobs into b: all
 * of them (limit < 0), or limit from offset in creation order.  With k
 * (the whole list only), also the name of exactly these rows' render. */
static int list_render(struct req *r, struct strbuf *b, long long limit,
                       long long offset, struct body_key *k)
{
	struct db_stmt *st;
	struct row **rows;
	size_t n;
	int rc;

	if (limit < 0)
		st = db_query(r->db, PIPELINE_SELECT "WHERE p.customer_id = ?"
		              , "s", r->id.customer_id);
	else    /* the page's pipelines first, then their jobs joined */
		st = db_query(r->db, PIPELINE_SELECT "WHERE p.customer_id = ? AND "
		              "p.seq IN (SELECT seq FROM (SELECT seq FROM pipelines "
		              "WHERE customer_id = ? ORDER BY seq LIMIT ? OFFSET ?) pg)",
		              "ssii", r->id.customer_id, r->id.customer_id, limit,
		              offset);
	if (st == NULL)
		return db_last_err(r->db);
	rc = rows_load(r, st, &rows, &n);
	db_done(st);
	if (rc < 0)
		return db_last_err(r->db);
	pipelines_write(b, rows, n, 1, NULL);
	if (k != NULL)
		rows_key(r, rows, n, k);
	return 0;
}

int pipelines_render(struct req *r, struct strbuf *b, long long limit,
                     long long offset)
{
	return list_render(r, b, limit, offset, NULL);
}

int pipelines_render_all(struct req *r, struct strbuf *b, struct body_key *k)
{
	return list_render(r, b, -1, 0, k);
}

/* Reads only (seq, version) of the customer's pipelines, from one index:
 * no row read, nothing joined. */
int pipelines_list_key(struct req *r, struct body_key *k)
{
	struct body_digest d;
	struct db_stmt *st;
	int rc;

	st = db_query(r->db, "SELECT seq, version FROM pipelines WHERE "
	              "customer_id = ? ORDER BY seq", "s", r->id.customer_id);
	if (st == NULL)
		return db_last_err(r->db);
	key_init(r, &d);
	while ((rc = db_fetch(st)) == 1)
		key_add(&d, db_col_ll(st, 0), db_col_ll(st, 1));
	db_done(st);
	body_digest_key(&d, r->id.customer_id, k);
	return rc < 0 ? db_last_err(r->db) : 0;
}

static int tasks_write(struct req *r, struct strbuf *b, const char *id)
{
	struct db_stmt *st;
	int rc, first = 1;

	st = db_query(r->db, "SELECT task_id, job_id, kind, upstream_task_ids "
	              "FROM orchestration_tasks WHERE pipeline_id = ? "
	              "ORDER BY position, task_id", "s", id);
	if (st == NULL)
		return db_last_err(r->db);
	strbuf_adds(b, ",\"tasks\":[");
	while ((rc = db_fetch(st)) == 1) {
		if (!first)
			strbuf_add(b, ",", 1);
		first = 0;
		strbuf_adds(b, "{\"task_id\":");
		jb_str(b, db_col_str(st, 0));
		strbuf_adds(b, ",\"job_id\":");
		jb_str(b, db_col_str(st, 1));
		strbuf_adds(b, ",\"kind\":");
		jb_str(b, db_col_str(st, 2));
		strbuf_adds(b, ",\"upstream_task_ids\":");
		strbuf_add(b, db_col_str(st, 3), db_col_len(st, 3));
		strbuf_add(b, "}", 1);
	}
	db_done(st);
	strbuf_add(b, "]", 1);
	return rc < 0 ? db_last_err(r->db) : 0;
}

/* One Pipeline object into b; with detail also "paused" and "tasks".
 * 1 written, 0 no such pipeline of the caller, or a negative db error. */
int pipeline_render(struct req *r, const char *id, int detail,
                           struct strbuf *b)
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
		strbuf_adds(b, ",\"paused\":");
		strbuf_adds(b, paused ? "true" : "false");
		if ((rc = tasks_write(r, b, id)) != 0)
			return rc;
	}
	strbuf_add(b, "}", 1);
	return 1;
}
