/* datasets.c - POST/GET/DELETE /dataset, the route table of the area, the
 * caller's dataset and the area's error bodies. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "db/db.h"
#include "db/queue.h"
#include "http/errors.h"
#include "http/request.h"
#include "http/response.h"
#include "http/validate.h"
#include "retrieval/retrieval.h"
#include "util/config.h"
#include "util/log.h"
#include "util/uuid.h"

static int dataset_post(struct req *r);
static int dataset_get(struct req *r);
static int dataset_delete(struct req *r);

const struct route retrieval_routes[] = {
	{ "POST",   "/dataset", dataset_post, ROUTE_AUTH_BASIC, NULL },
	{ "GET",    "/dataset/{dataset_id}", dataset_get, ROUTE_AUTH_BASIC, NULL },
	{ "DELETE", "/dataset/{dataset_id}", dataset_delete, ROUTE_AUTH_BASIC, NULL },
	{ "POST",   "/dataset/{dataset_id}/documents", rag_documents_post,
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

	if ((body = req_json_body_or_reply(r)) == NULL)
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

/* --- GET /dataset/{id} ----------------------------------------------------------- */

static int dataset_get_read(struct req *r);

/* The counts and the status are read in one snapshot (one read-only
 * transaction under REPEATABLE READ): read apart, a dataset that settled
 * in between showed "success" beside the documents still processing. */
static int dataset_get(struct req *r)
{
	int rc;

	if (db_begin(r->db) != 0)
		return resp_db_error(r, db_last_err(r->db));
	rc = dataset_get_read(r);
	db_rollback(r->db);
	return rc;
}

static int dataset_get_read(struct req *r)
{
	struct rag_dataset ds;
	struct json_object *o = NULL, *progress;
	long long docs[3] = { 0, 0, 0 };   /* processing, success, failed */
	long long snippets = 0, total;
	struct db_stmt *st;
	struct db *db = r->db;
	int rc;

	if (rag_dataset_of_caller(r, req_param(r, "dataset_id"), &ds) != 0)
		return -1;

	st = db_query(db, "SELECT status, COUNT(*) FROM rag_documents "
	              "WHERE dataset_id = ? GROUP BY status", "s", ds.id);
	if (st == NULL)
		return resp_db_error(r, db_last_err(db));
	while ((rc = db_fetch(st)) == 1) {
		const char *s = db_col_str(st, 0);
		int k = strcmp(s, "processing") == 0 ? 0 : strcmp(s, "success") == 0 ? 1 : 2;

		docs[k] += db_col_ll(st, 1);
	}
	db_done(st);
	if (rc < 0)
		return resp_db_error(r, db_last_err(db));

	st = db_query(db, "SELECT COUNT(*) FROM rag_snippets WHERE dataset_id = ?",
	              "s", ds.id);
	if (st == NULL)
		return resp_db_error(r, db_last_err(db));
	if ((rc = db_fetch(st)) == 1)
		snippets = db_col_ll(st, 0);
	db_done(st);
	if (rc < 0)
		return resp_db_error(r, db_last_err(db));

	st = db_query(db, "SELECT name, status, error, embedder, dimensions, "
	              "created_at, updated_at FROM rag_datasets WHERE id = ?",
	              "s", ds.id);
	if (st == NULL)
		return resp_db_error(r, db_last_err(db));
	if ((rc = db_fetch(st)) != 1) {
		db_done(st);
		return rc < 0 ? resp_db_error(r, db_last_err(db))
		              : rag_reply(r, RAG_DATASET_NOT_FOUND);
	}
	total = docs[0] + docs[1] + docs[2];
	o = json_object_new_object();
	json_object_object_add(o, "dataset_id", json_object_new_string(ds.id));
	json_object_object_add(o, "name", json_object_new_string(db_col_str(st, 0)));
	json_object_object_add(o, "status", json_object_new_string(db_col_str(st, 1)));
	json_object_object_add(o, "error", db_col_null(st, 2) ? NULL
	                       : json_object_new_string(db_col_str(st, 2)));
	json_object_object_add(o, "document_count", json_object_new_int64(total));
	json_object_object_add(o, "snippet_count", json_object_new_int64(snippets));
	progress = json_object_new_object();
	json_object_object_add(progress, "documents_total", json_object_new_int64(total));
	json_object_object_add(progress, "documents_done", json_object_new_int64(docs[1]));
	json_object_object_add(progress, "documents_failed", json_object_new_int64(docs[2]));
	json_object_object_add(progress, "documents_processing",
	                       json_object_new_int64(docs[0]));
	json_object_object_add(progress, "percent", json_object_new_int64(
	    total == 0 ? 0 : (docs[1] + docs[2]) * 100 / total));
	json_object_object_add(o, "progress", progress);
	json_object_object_add(o, "embedder", json_object_new_string(db_col_str(st, 3)));
	json_object_object_add(o, "dimensions", json_object_new_int64(db_col_ll(st, 4)));
	json_object_object_add(o, "created_at", rag_json_time(db_col_str(st, 5)));
	json_object_object_add(o, "updated_at", rag_json_time(db_col_str(st, 6)));
	db_done(st);
	return resp_json(r, 200, o);
}

void rag_tenant(char *buf, size_t cap, long long user_id)
{
	snprintf(buf, cap, "user:%lld", user_id);
}

/* --- DELETE /dataset/{id} --------------------------------------------------------- */

static int dataset_delete(struct req *r)
{
	struct rag_dataset ds;
	char path[CONFIG_PATH_MAX + 64];
	long long rc;

	if (rag_dataset_of_caller(r, req_param(r, "dataset_id"), &ds) != 0)
		return -1;
	/* Documents, snippets and questions go with it (ON DELETE CASCADE);
	 * queued ingestion finds no dataset and ends. */
	rc = db_exec(r->db, "DELETE FROM rag_datasets WHERE id = ? AND owner_user_id = ?",
	             "si", ds.id, r->id.user_id);
	if (rc < 0)
		return resp_db_error(r, (int)rc);
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
