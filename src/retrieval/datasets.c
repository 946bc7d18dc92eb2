/* datasets.c - POST/GET/DELETE /dataset, GET /dataset (the caller's
 * datasets, paged), the route table of the area, the caller's dataset and
 * the area's error bodies. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "db/db.h"
#include "db/queue.h"
#include "http/errors.h"
#include "http/pagination.h"
#include "http/request.h"
#include "http/response.h"
#include "http/validate.h"
#include "retrieval/retrieval.h"
#include "util/config.h"
#include "util/log.h"
#include "util/uuid.h"

static int dataset_post(struct req *r);
static int datasets_list(struct req *r);
static int dataset_get(struct req *r);
static int dataset_delete(struct req *r);

const struct route retrieval_routes[] = {
	{ "POST",   "/dataset", dataset_post, ROUTE_AUTH_BASIC, NULL },
	{ "GET",    "/dataset", datasets_list, ROUTE_AUTH_BASIC, NULL },
	{ "GET",    "/dataset/{dataset_id}", dataset_get, ROUTE_AUTH_BASIC, NULL },
	{ "DELETE", "/dataset/{dataset_id}", dataset_delete, ROUTE_AUTH_BASIC, NULL },
	{ "POST",   "/dataset/{dataset_id}/documents", rag_documents_post,
	  ROUTE_AUTH_BASIC, NULL },
	{ "GET",    "/dataset/{dataset_id}/documents", rag_documents_list,
	  ROUTE_AUTH_BASIC, NULL },
	{ "DELETE", "/dataset/{dataset_id}/documents/{document_id}", rag_document_delete,
	  ROUTE_AUTH_BASIC, NULL },
	{ "POST",   "/dataset/{dataset_id}/question", rag_question_post,
	  ROUTE_AUTH_BASIC, NULL },
	{ "GET",    "/dataset/{dataset_id}/question/{question_id}", rag_question_get,
	  ROUTE_AUTH_BASIC, NULL },
	ROUTES_END
};

/* --- answers ------------------------------------------------------------------ */

static const struct {
	int status;
	const char *detail;        /* a printf format where the enum says so */
} replies[] = {
	[RAG_DATASET_NOT_FOUND] = { 404, "Dataset not found" },
	[RAG_QUESTION_NOT_FOUND] = { 404, "Question not found" },
	[RAG_DOCUMENT_NOT_FOUND] = { 404, "Document not found" },
	[RAG_DATASET_PROCESSING] = { 422,
	    "Dataset is still processing: questions can be asked once its "
	    "status is success" },
	[RAG_DATASET_FAILED] = { 422,
	    "Dataset ingestion failed: questions can be asked once its status "
	    "is success" },
	[RAG_QUESTION_NOT_REGISTERED] = { 500, "The question could not be registered" },
	[RAG_EMBEDDER_MISCONFIGURED] = { 500, "Server configuration error: "
	    "embedding_provider = openai needs openai_base_url" },
	[RAG_INVALID] = { 400, "%s" },
	[RAG_MMR_DISAGREE] = { 400, "maximal_marginal_relevance and "
	    "use_maximal_marginal_relevance disagree" },
	[RAG_SOURCE_TOO_LONG] = { 400,
	    "documents[%zu].metadata.source is longer than %d bytes" },
	[RAG_UPLOAD_NOT_A_FILE] = { 400,
	    "Unexpected form field '%.64s': send files (parts with a filename)" },
	[RAG_UPLOAD_FILE_NAME] = { 400, "File name '%.64s' must be 1 to 255 bytes of UTF-8" },
	[RAG_UPLOAD_FILE_TYPE] = { 400, "Unsupported file type '%.64s' "
	    "(expected .txt, .md, .html, .csv or .json)" },
	[RAG_UPLOAD_TOO_MANY_FILES] = { 400, "More than %d files in one request" },
	[RAG_UPLOAD_NOT_UTF8] = { 400, "File '%.64s' is not UTF-8 text" },
	[RAG_UPLOAD_BAD_CSV] = { 400, "File '%.64s' is not valid CSV: %.200s" },
	[RAG_UPLOAD_BAD_JSON] = { 400, "File '%.64s' is not valid JSON: %.200s" },
	[RAG_UPLOAD_NO_TEXT] = { 400, "File '%.64s' holds no text" },
	[RAG_UPLOAD_TEXT_TOO_LARGE] = { 413,
	    "The text of the upload is larger than %ld bytes (at file '%.64s')" },
	[RAG_UPLOAD_NO_FILES] = { 400,
	    "No files in the upload: send them as form parts named file" },
};

struct json_object *rag_reply_json(enum rag_reply what, int *status)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "detail", json_object_new_string(replies[what].detail));
	*status = replies[what].status;
	return o;
}

int rag_reply(struct req *r, enum rag_reply what, ...)
{
	char detail[512];
	va_list ap;

	va_start(ap, what);
	vsnprintf(detail, sizeof detail, replies[what].detail, ap);
	va_end(ap);
	resp_detail(r, replies[what].status, detail);
	return -1;
}

int rag_reply_verror(struct req *r, const struct verror *e)
{
	return rag_reply(r, RAG_INVALID, e->message);
}

int rag_query_or_reply(struct req *r, const struct vfield *fields, void *out)
{
	struct verror e;

	if (validate_query(fields != NULL ? fields : vfields_none, r, out, NULL, &e) != 0)
		return rag_reply_verror(r, &e);
	return 0;
}

struct json_object *rag_json_time(const char *t)
{
	char buf[40];

	if (t == NULL || strlen(t) < 19 || strlen(t) > 26)
		return NULL;
	snprintf(buf, sizeof buf, "%.10sT%sZ", t, t + 11);
	return json_object_new_string(buf);
}

/* --- ids ------------------------------------------------------------------- */

int rag_id_parse(const char *in, char out[RAG_ID_LEN + 1])
{
	return uuid_parse(in, out);
}

/* --- the caller's dataset ------------------------------------------------------- */

int rag_dataset_of_caller(struct req *r, const char *raw_id, struct rag_dataset *ds)
{
	struct db_stmt *st;
	struct db *db;
	int rc;

	memset(ds, 0, sizeof *ds);
	if (rag_id_parse(raw_id, ds->id) != 0)
		return rag_reply(r, RAG_DATASET_NOT_FOUND);
	if ((db = req_db_or_reply(r)) == NULL)
		return -1;
	st = db_query(db, "SELECT status, embedder, dimensions, snippet_count FROM "
	              "rag_datasets WHERE id = ? AND owner_user_id = ?", "si", ds->id,
	              r->id.user_id);
	if (st == NULL)
		return resp_db_error(r, db_last_err(db));
	rc = db_fetch(st);
	if (rc == 1) {
		snprintf(ds->status, sizeof ds->status, "%s", db_col_str(st, 0));
		snprintf(ds->embedder, sizeof ds->embedder, "%s", db_col_str(st, 1));
		ds->dimensions = (int)db_col_ll(st, 2);
		ds->snippets = db_col_ll(st, 3);
	}
	db_done(st);
	if (rc < 0)
		return resp_db_error(r, db_last_err(db));
	if (rc == 0)
		return rag_reply(r, RAG_DATASET_NOT_FOUND);
	return 0;
}

/* --- POST /dataset ------------------------------------------------------------- */

struct dataset_in {
	const char *name;
};

const struct vfield rag_dataset_body[] = {
	{ "name", V_STR, V_REQUIRED, 1, RAG_NAME_MAX, NULL, NULL,
	  VOFF(struct dataset_in, name) },
	VFIELDS_END
};

static int dataset_post(struct req *r)
{
	struct dataset_in in = { NULL };
	struct json_object *body, *o;
	char id[UUID_STR_LEN], embedder[64];
	struct verror e;
	struct db *db;
	long long rc;

	if (rag_query_or_reply(r, NULL, NULL) != 0 ||
	    (body = req_json_body_or_reply(r)) == NULL)
		return -1;
	if (validate_json(rag_dataset_body, body, &in, NULL, &e) != 0)
		return rag_reply_verror(r, &e);

	/* Refused now rather than by every ingestion attempt later. */
	if (strcmp(r->cfg->embedding_provider, "openai") == 0 &&
	    r->cfg->openai_base_url[0] == '\0') {
		log_error("embedding_provider = openai needs openai_base_url");
		return rag_reply(r, RAG_EMBEDDER_MISCONFIGURED);
	}
	if ((db = req_db_or_reply(r)) == NULL)
		return -1;
	if (uuid_v4(id, '-') != 0)
		return resp_internal(r, "uuid_v4 failed");
	rag_embedder_of_config(r->cfg, embedder, sizeof embedder);
	rc = db_exec(db, "INSERT INTO rag_datasets (id, owner_user_id, name, status, "
	             "embedder, dimensions) VALUES (?, ?, ?, 'processing', ?, ?)",
	             "sissi", id, r->id.user_id, in.name, embedder,
	             (long long)r->cfg->embedding_dimensions);
	if (rc < 0)
		return resp_db_error(r, (int)rc);
	o = json_object_new_object();
	json_object_object_add(o, "dataset_id", json_object_new_string(id));
	json_object_object_add(o, "status", json_object_new_string("processing"));
	return resp_json(r, 201, o);
}

/* --- GET /dataset/{id} and GET /dataset ------------------------------------------ */

/* A dataset as GET shows it: its row and its counts, read in one statement
 * and so in one snapshot (read apart, a dataset that settled in between
 * showed "success" beside documents still processing).
 *
 * A settled dataset's counts of done documents and of snippets are the
 * ones stored when it settled: every change since (a POST, a delete, a
 * retry) sets it processing again in the same transaction, and it settles
 * only when no document is processing.  Its processing and failed
 * documents are still counted: two empty ranges of the index.
 *
 * A processing (or failed) dataset is counted from rag_documents_pending_idx
 * and rag_snippets_dataset_idx, never by reading the rows: an index entry
 * per document and per snippet, 37-46 ms for 100,000 documents.  Clients
 * poll a dataset while it is ingested, so a processing dataset's counts are
 * kept in rag_dataset_counts (migration 020) and shown again for
 * dataset_counts_cache_ms while its index_generation, which every POST,
 * delete and retry bumps, is the one they were counted at.  The columns
 * after the counts say whether this statement counted and what to store.
 * Binds: the counts' age in microseconds (at 0 nothing is stored, and
 * what was is too old), the caller's user id, then what the WHERE clause
 * that follows binds. */
#define DOCS_WITH "(SELECT COUNT(*) FROM rag_documents x FORCE INDEX " \
	"(rag_documents_pending_idx) WHERE x.dataset_id = d.id AND x.status = "
#define SNIPPETS_COUNTED "(SELECT COUNT(*) FROM rag_snippets s FORCE INDEX " \
	"(rag_snippets_dataset_idx) WHERE s.dataset_id = d.id)"
#define DATASET_SELECT "SELECT d.id, d.name, d.status, d.error, d.embedder, " \
	"d.dimensions, d.created_at, d.updated_at, " \
	"IFNULL(c.processing, " DOCS_WITH "'processing')), " \
	"IF(d.status = 'success', d.document_count, IFNULL(c.done, " DOCS_WITH "'success'))), " \
	"IFNULL(c.failed, " DOCS_WITH "'failed')), " \
	"IF(d.status = 'success', d.snippet_count, IFNULL(c.snippets, " SNIPPETS_COUNTED ")), " \
	"d.status = 'processing' AND c.dataset_id IS NULL, d.index_generation, NOW(6) " \
	"FROM rag_datasets d LEFT JOIN rag_dataset_counts c ON c.dataset_id = d.id AND " \
	"d.status = 'processing' AND c.index_generation = d.index_generation AND " \
	"c.counted_at >= NOW(6) - INTERVAL ? MICROSECOND WHERE d.owner_user_id = ? "
enum { COL_PROCESSING = 8, COL_DONE, COL_FAILED, COL_SNIPPETS, COL_COUNTED, COL_GENERATION,
       COL_NOW };

/* Counts a GET took. */
struct counted {
	char id[RAG_ID_LEN + 1];
	char at[32];
	long long generation, n[4];
};

/* Stored unless newer ones are there already (the assignments run left to
 * right: the generation goes last, after the others compared against it).
 * Best effort: a GET has its answer, and a dataset deleted meanwhile
 * refuses the row by its foreign key. */
#define COUNTS_NEWER "(VALUES(index_generation) > index_generation OR " \
	"(VALUES(index_generation) = index_generation AND VALUES(counted_at) > counted_at))"
#define COUNTS_KEEP(col) #col " = IF(" COUNTS_NEWER ", VALUES(" #col "), " #col "), "
static void counts_store(struct db *db, const struct counted *c)
{
	(void)db_exec(db, "INSERT INTO rag_dataset_counts (dataset_id, index_generation, "
	              "counted_at, processing, done, failed, snippets) VALUES (?, ?, ?, ?, ?, ?, ?) "
	              "ON DUPLICATE KEY UPDATE " COUNTS_KEEP(processing) COUNTS_KEEP(done)
	              COUNTS_KEEP(failed) COUNTS_KEEP(snippets) COUNTS_KEEP(counted_at)
	              "index_generation = GREATEST(index_generation, VALUES(index_generation))",
	              "sisiiii", c->id, c->generation, c->at, c->n[0], c->n[1], c->n[2], c->n[3]);
}

static struct json_object *dataset_row_json(const struct db_stmt *st)
{
	struct json_object *o = json_object_new_object(), *progress;
	long long processing = db_col_ll(st, COL_PROCESSING), done = db_col_ll(st, COL_DONE);
	long long failed = db_col_ll(st, COL_FAILED);
	long long total = processing + done + failed;

	json_object_object_add(o, "dataset_id", json_object_new_string(db_col_str(st, 0)));
	json_object_object_add(o, "name", json_object_new_string(db_col_str(st, 1)));
	json_object_object_add(o, "status", json_object_new_string(db_col_str(st, 2)));
	json_object_object_add(o, "error", db_col_null(st, 3) ? NULL
	                       : json_object_new_string(db_col_str(st, 3)));
	json_object_object_add(o, "document_count", json_object_new_int64(total));
	json_object_object_add(o, "snippet_count",
	                       json_object_new_int64(db_col_ll(st, COL_SNIPPETS)));
	progress = json_object_new_object();
	json_object_object_add(progress, "documents_total", json_object_new_int64(total));
	json_object_object_add(progress, "documents_done", json_object_new_int64(done));
	json_object_object_add(progress, "documents_failed", json_object_new_int64(failed));
	json_object_object_add(progress, "documents_processing",
	                       json_object_new_int64(processing));
	json_object_object_add(progress, "percent", json_object_new_int64(
	    total == 0 ? 0 : (done + failed) * 100 / total));
	json_object_object_add(o, "progress", progress);
	json_object_object_add(o, "embedder", json_object_new_string(db_col_str(st, 4)));
	json_object_object_add(o, "dimensions", json_object_new_int64(db_col_ll(st, 5)));
	json_object_object_add(o, "created_at", rag_json_time(db_col_str(st, 6)));
	json_object_object_add(o, "updated_at", rag_json_time(db_col_str(st, 7)));
	return o;
}

/* Counts a statement took, to be stored once it is read (the connection
 * is busy until then). */
struct counted_list {
	struct counted *c;
	size_t n, cap;
	bool keep;                      /* dataset_counts_cache_ms > 0 */
};

/* A row as dataset_row_json shows it, its counts noted when it took them. */
static struct json_object *dataset_row_noting(const struct db_stmt *st, void *arg)
{
	struct counted_list *l = arg;
	struct counted *c;

	if (l->keep && db_col_ll(st, COL_COUNTED) != 0) {
		if (l->n == l->cap) {
			size_t cap = l->cap ? 2 * l->cap : 4;
			struct counted *t = realloc(l->c, cap * sizeof *t);

			if (t == NULL)         /* not stored: the next GET counts again */
				return dataset_row_json(st);
			l->c = t;
			l->cap = cap;
		}
		c = &l->c[l->n++];
		snprintf(c->id, sizeof c->id, "%s", db_col_str(st, 0));
		snprintf(c->at, sizeof c->at, "%s", db_col_str(st, COL_NOW));
		c->generation = db_col_ll(st, COL_GENERATION);
		for (int k = 0; k < 4; k++)
			c->n[k] = db_col_ll(st, COL_PROCESSING + k);
	}
	return dataset_row_json(st);
}

/* The datasets a DATASET_SELECT statement reads, as a JSON array, the
 * counts it took stored; NULL once the error is answered. */
static struct json_object *datasets_read(struct req *r, struct db_stmt *st)
{
	struct counted_list l = { .keep = r->cfg->dataset_counts_cache_ms > 0 };
	struct json_object *arr = req_rows_arg_or_reply(r, st, dataset_row_noting, &l);

	for (size_t i = 0; arr != NULL && i < l.n; i++)
		counts_store(r->db, &l.c[i]);
	free(l.c);
	return arr;
}

static int dataset_get(struct req *r)
{
	char id[RAG_ID_LEN + 1];
	struct json_object *arr, *o;

	if (rag_query_or_reply(r, NULL, NULL) != 0)
		return -1;
	if (rag_id_parse(req_param(r, "dataset_id"), id) != 0)
		return rag_reply(r, RAG_DATASET_NOT_FOUND);
	if (req_db_or_reply(r) == NULL)
		return -1;
	arr = datasets_read(r, db_query(r->db, DATASET_SELECT "AND d.id = ?", "iis",
	                    r->cfg->dataset_counts_cache_ms * 1000LL, r->id.user_id, id));
	if (arr == NULL)
		return -1;
	if (json_object_array_length(arr) == 0) {
		json_object_put(arr);
		return rag_reply(r, RAG_DATASET_NOT_FOUND);
	}
	o = json_object_get(json_object_array_get_idx(arr, 0));
	json_object_put(arr);
	return resp_json(r, 200, o);
}

struct datasets_query {
	struct page_query page;
};

const struct vfield rag_datasets_query[] = {
	PAGE_QUERY_ROWS(struct datasets_query, page),
	VFIELDS_END
};

/* The caller's datasets, newest first. */
static int datasets_list(struct req *r)
{
	struct datasets_query q = { PAGE_QUERY_INIT };
	struct json_object *o, *arr;
	long long total = 0;

	if (rag_query_or_reply(r, rag_datasets_query, &q) != 0 ||
	    req_db_or_reply(r) == NULL)
		return -1;
	if (req_count_or_reply(r, db_query(r->db, "SELECT COUNT(*) FROM rag_datasets "
	    "WHERE owner_user_id = ?", "i", r->id.user_id), &total) != 0)
		return -1;
	arr = datasets_read(r, db_query(r->db, DATASET_SELECT "ORDER BY d.created_at "
	    "DESC, d.id LIMIT ? OFFSET ?", "iiii", r->cfg->dataset_counts_cache_ms * 1000LL,
	    r->id.user_id, q.page.limit, page_offset(&q.page)));
	if (arr == NULL)
		return -1;
	o = json_object_new_object();
	json_object_object_add(o, "datasets", arr);
	json_object_object_add(o, "pagination", pagination_json(q.page.page, q.page.limit,
	                                                        total));
	return resp_json(r, 200, o);
}

void rag_tenant(char *buf, size_t cap, long long user_id)
{
	snprintf(buf, cap, "user:%lld", user_id);
}

/* --- DELETE /dataset/{id} --------------------------------------------------------- */

struct dataset_removal {
	const char *id;
	long long user_id;
};

/* Documents, snippets and questions go with it (ON DELETE CASCADE), so it
 * takes the row locks ingestion's groups hold, in another order: a
 * deadlock is retried whole (db_tx), never answered 500. */
static int dataset_removal_tx(struct db *db, void *arg)
{
	const struct dataset_removal *x = arg;
	long long n = db_exec(db, "DELETE FROM rag_datasets WHERE id = ? AND owner_user_id = ?",
	                      "si", x->id, x->user_id);

	return n < 0 ? (int)n : n > 0;
}

static int dataset_delete(struct req *r)
{
	struct rag_dataset ds;
	struct dataset_removal x;
	char path[CONFIG_PATH_MAX + 64];
	int rc;

	if (rag_query_or_reply(r, NULL, NULL) != 0 ||
	    rag_dataset_of_caller(r, req_param(r, "dataset_id"), &ds) != 0)
		return -1;
	/* Queued ingestion finds no dataset and ends. */
	x.id = ds.id;
	x.user_id = r->id.user_id;
	rc = db_tx(r->db, "dataset delete", dataset_removal_tx, &x);
	if (rc < 0)
		return resp_db_error(r, rc);
	if (rc == 0)
		return rag_reply(r, RAG_DATASET_NOT_FOUND);
	queue_cancel(r->db, "rag_ingest", ds.id);
	rag_index_forget(ds.id);
	if (rag_index_path(r->cfg, ds.id, path, sizeof path) == 0 &&
	    unlink(path) != 0 && errno != ENOENT)
		log_kv(LOG_WARN, "cannot remove index file", "path=%s errno=%d",
		       LOG_Q(path), errno);
	return resp_empty(r, 204);
}
