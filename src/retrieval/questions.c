/* questions.c - POST/GET /dataset/{id}/question, and answering a question.
 *
 * POST stores the question with its resolved parameters and a work_queue
 * row that becomes claimable RAG_QUESTION_FALLBACK_S later, answers 200,
 * and then (req_after) the same worker ranks it while the client is already
 * on its way to GET it.  Should that worker die first, `sluice work` claims
 * the queue row and answers it instead: a question is never lost.  Either
 * path stores the result only while the question is still processing, so
 * answering twice is harmless. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <json-c/json.h>

#include "db/db.h"
#include "http/errors.h"
#include "http/request.h"
#include "http/response.h"
#include "retrieval/filter.h"
#include "retrieval/index.h"
#include "retrieval/rank.h"
#include "retrieval/retrieval.h"
#include "retrieval/vec.h"
#include "util/arena.h"
#include "util/config.h"
#include "util/log.h"
#include "util/str.h"
#include "util/timeutil.h"
#include "util/uuid.h"

#define INDEX_CACHE_SLOTS 16
#define WAIT_POLL_MIN_MS 2
#define WAIT_POLL_MAX_MS 25

/* --- the per-process index cache ------------------------------------------------- */

struct cached_index {
	char id[RAG_ID_LEN + 1];
	struct rindex *ix;
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	off_t size;
	double used_ms;
};

static struct cached_index cache[INDEX_CACHE_SLOTS];

static bool same_file(const struct cached_index *c, const struct stat *st)
{
	return c->dev == st->st_dev && c->ino == st->st_ino &&
	       c->size == st->st_size && c->mtime.tv_sec == st->st_mtim.tv_sec &&
	       c->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

void rag_index_forget(const char *dataset_id)
{
	for (int i = 0; i < INDEX_CACHE_SLOTS; i++)
		if (cache[i].ix != NULL && strcmp(cache[i].id, dataset_id) == 0) {
			rindex_close(cache[i].ix);
			memset(&cache[i], 0, sizeof cache[i]);
		}
}

const struct rindex *rag_index_get(struct db *db, const struct config *cfg,
                                   const char *dataset_id, size_t dim,
                                   char *err, size_t errlen)
{
	char path[CONFIG_PATH_MAX + 64], oerr[256];
	struct cached_index *slot = NULL;
	struct rindex *ix;
	struct stat st;
	size_t count;

	if (rag_index_path(cfg, dataset_id, path, sizeof path) != 0) {
		snprintf(err, errlen, "index path too long");
		return NULL;
	}
	for (int i = 0; i < INDEX_CACHE_SLOTS; i++)
		if (cache[i].ix != NULL && strcmp(cache[i].id, dataset_id) == 0) {
			slot = &cache[i];
			break;
		}
	/* A replaced file (re-ingestion renames a new one in) has a new
	 * inode; one changed in place would be foreign anyway. */
	if (slot != NULL && stat(path, &st) == 0 && same_file(slot, &st)) {
		slot->used_ms = time_mono_ms();
		return slot->ix;
	}
	if (slot != NULL)
		rag_index_forget(dataset_id);

	ix = rindex_open(path, oerr, sizeof oerr);
	if (ix != NULL && rindex_dim(ix) != dim) {
		rindex_close(ix);
		ix = NULL;
		snprintf(oerr, sizeof oerr, "dimension differs from the dataset's");
	}
	if (ix == NULL) {
		/* Missing or corrupt: MariaDB has every snippet. */
		log_kv(LOG_WARN, "rebuilding index file", "dataset=%s reason=%s",
		       dataset_id, LOG_Q(oerr));
		if (rag_index_build(db, cfg, dataset_id, &count, err, errlen) != 0)
			return NULL;
		if ((ix = rindex_open(path, err, errlen)) == NULL)
			return NULL;
	}
	if (stat(path, &st) != 0)
		memset(&st, 0, sizeof st);

	/* the empty slot, else the least recently used one */
	slot = &cache[0];
	for (int i = 0; i < INDEX_CACHE_SLOTS; i++) {
		if (cache[i].ix == NULL) {
			slot = &cache[i];
			break;
		}
		if (cache[i].used_ms < slot->used_ms)
			slot = &cache[i];
	}
	if (slot->ix != NULL)
		rindex_close(slot->ix);
	memset(slot, 0, sizeof *slot);
	snprintf(slot->id, sizeof slot->id, "%s", dataset_id);
	slot->ix = ix;
	slot->dev = st.st_dev;
	slot->ino = st.st_ino;
	slot->mtime = st.st_mtim;
	slot->size = st.st_size;
	slot->used_ms = time_mono_ms();
	return ix;
}

/* --- parameters -------------------------------------------------------------------- */

enum qtype { Q_TEXT, Q_INT, Q_NUM, Q_BOOL, Q_METRIC, Q_FILTER };

/* The body of POST question: wire name, type, bounds. */
static const struct qfield {
	const char *name;
	enum qtype type;
	double min, max;
} qfields[] = {
	{ "question",                       Q_TEXT,   1, RAG_QUESTION_MAX },
	{ "k",                              Q_INT,    1, 1000 },
	{ "fetch_k",                        Q_INT,    1, 1000 },
	{ "top_n",                          Q_INT,    1, 100 },
	{ "lambda_mult",                    Q_NUM,    0, 1 },
	{ "score_threshold",                Q_NUM,    -1e30, 1e30 },
	{ "distance_metric",                Q_METRIC, 0, 0 },
	{ "maximal_marginal_relevance",     Q_BOOL,   0, 0 },
	{ "use_maximal_marginal_relevance", Q_BOOL,   0, 0 },
	{ "hybrid",                         Q_BOOL,   0, 0 },
	{ "metadata_filter",                Q_FILTER, 0, 0 },
};
#define NQFIELDS (sizeof qfields / sizeof qfields[0])

static const struct qfield *qfield(const char *name)
{
	for (size_t i = 0; i < NQFIELDS; i++)
		if (strcmp(qfields[i].name, name) == 0)
			return &qfields[i];
	return NULL;
}

/* One value against its field; 0, or -1 after a 400. */
static int check_value(struct req *r, const struct qfield *f, struct json_object *v)
{
	enum vec_metric m;
	int64_t i;
	double d;

	switch (f->type) {
	case Q_TEXT: {
		size_t len, chars;
		const char *s;
		bool blank = true;

		if (!json_object_is_type(v, json_type_string))
			return rag_reply_bad(r, "%s must be a string", f->name);
		s = json_object_get_string(v);
		len = (size_t)json_object_get_string_len(v);
		if (memchr(s, '\0', len) != NULL)
			return rag_reply_bad(r, "%s must not contain NUL", f->name);
		for (size_t k = 0; k < len && blank; k++)
			blank = strchr(" \t\r\n", s[k]) != NULL;
		chars = str_utf8_chars(s, len);
		if (chars < (size_t)f->min || blank)
			return rag_reply_bad(r, "%s must not be empty", f->name);
		if (chars > (size_t)f->max)
			return rag_reply_bad(r, "%s must be at most %.0f characters (got %zu)",
			                     f->name, f->max, chars);
		return 0;
	}
	case Q_INT:
		if (!json_object_is_type(v, json_type_int))
			return rag_reply_bad(r, "%s must be an integer %.0f..%.0f",
			                     f->name, f->min, f->max);
		errno = 0;
		i = json_object_get_int64(v);
		if (errno != 0 || i < (int64_t)f->min || i > (int64_t)f->max)
			return rag_reply_bad(r, "%s must be an integer %.0f..%.0f",
			                     f->name, f->min, f->max);
		return 0;
	case Q_NUM:
		if (!json_object_is_type(v, json_type_int) &&
		    !json_object_is_type(v, json_type_double))
			return rag_reply_bad(r, "%s must be a number", f->name);
		d = json_object_get_double(v);
		if (!isfinite(d) || d < f->min || d > f->max) {
			if (f->max < 1e30)
				return rag_reply_bad(r, "%s must be a number %g..%g",
				                     f->name, f->min, f->max);
			return rag_reply_bad(r, "%s must be a finite number", f->name);
		}
		return 0;
	case Q_BOOL:
		if (!json_object_is_type(v, json_type_boolean))
			return rag_reply_bad(r, "%s must be true or false", f->name);
		return 0;
	case Q_METRIC:
		if (!json_object_is_type(v, json_type_string) ||
		    vec_metric_parse(json_object_get_string(v), &m) != 0)
			return rag_reply_bad(r, "%s must be one of L2, L1, max, cos, dot",
			                     f->name);
		return 0;
	case Q_FILTER: {
		char err[256] = "";
		struct meta_filter *mf;

		if (!json_object_is_type(v, json_type_object))
			return rag_reply_bad(r, "%s must be an object", f->name);
		if ((mf = meta_filter_parse(v, err, sizeof err)) == NULL)
			return rag_reply_bad(r, "%s", err[0] != '\0' ? err
			                     : "metadata_filter is not valid");
		meta_filter_free(mf);
		return 0;
	}
	}
	return rag_reply_bad(r, "bad field %s", f->name);
}

/* The parameters with every default filled in, under their wire names: what
 * is stored with the question and shown by GET.  NULL after a 400. */
static struct json_object *resolve_params(struct req *r, struct json_object *body)
{
	struct json_object *p, *v, *mmr = NULL, *alias = NULL;
	struct rank_params d;

	json_object_object_foreach(body, key, val) {
		const struct qfield *f = qfield(key);

		if (f == NULL) {
			rag_reply_bad(r, "Unknown field '%.64s'", key);
			return NULL;
		}
		/* null = not given, as clients send for an unset option */
		if (val == NULL && f->type != Q_TEXT)
			continue;
		if (val == NULL || check_value(r, f, val) != 0) {
			if (val == NULL)
				rag_reply_bad(r, "question must be a string");
			return NULL;
		}
	}
	if (!json_object_object_get_ex(body, "question", &v) || v == NULL) {
		rag_reply_bad(r, "question is required");
		return NULL;
	}
	json_object_object_get_ex(body, "maximal_marginal_relevance", &mmr);
	json_object_object_get_ex(body, "use_maximal_marginal_relevance", &alias);
	if (mmr != NULL && alias != NULL &&
	    json_object_get_boolean(mmr) != json_object_get_boolean(alias)) {
		rag_reply_bad(r, "maximal_marginal_relevance and "
		              "use_maximal_marginal_relevance disagree");
		return NULL;
	}
	if (mmr == NULL)
		mmr = alias;

	rank_params_default(&d);
	p = json_object_new_object();
#define GIVEN(name) (json_object_object_get_ex(body, name, &v) && v != NULL)
	json_object_object_add(p, "k", GIVEN("k") ? json_object_get(v)
	                       : json_object_new_int64((int64_t)d.k));
	json_object_object_add(p, "fetch_k", GIVEN("fetch_k") ? json_object_get(v)
	                       : json_object_new_int64((int64_t)d.fetch_k));
	json_object_object_add(p, "top_n", GIVEN("top_n") ? json_object_get(v)
	                       : json_object_new_int64((int64_t)d.top_n));
	json_object_object_add(p, "distance_metric", GIVEN("distance_metric")
	                       ? json_object_get(v)
	                       : json_object_new_string(vec_metric_name(d.metric)));
	json_object_object_add(p, "maximal_marginal_relevance", mmr != NULL
	                       ? json_object_new_boolean(json_object_get_boolean(mmr))
	                       : json_object_new_boolean(d.mmr));
	json_object_object_add(p, "hybrid", GIVEN("hybrid") ? json_object_get(v)
	                       : json_object_new_boolean(d.hybrid));
	json_object_object_add(p, "lambda_mult", GIVEN("lambda_mult")
	                       ? json_object_new_double(json_object_get_double(v))
	                       : json_object_new_double(d.lambda_mult));
	json_object_object_add(p, "score_threshold", GIVEN("score_threshold")
	                       ? json_object_new_double(json_object_get_double(v)) : NULL);
	json_object_object_add(p, "metadata_filter", GIVEN("metadata_filter")
	                       ? json_object_get(v) : NULL);
#undef GIVEN
	return p;
}

/* Stored parameters into rank_params; *filter is the caller's to free.
 * 0 or -1 (stored parameters are ours, so only a damaged row fails). */
static int params_to_rank(struct json_object *p, struct rank_params *rp,
                          struct meta_filter **filter, char *err, size_t errlen)
{
	struct json_object *v;

	*filter = NULL;
	rank_params_default(rp);
	if (p == NULL || !json_object_is_type(p, json_type_object)) {
		snprintf(err, errlen, "stored parameters are damaged");
		return -1;
	}
	if (json_object_object_get_ex(p, "k", &v))
		rp->k = (size_t)json_object_get_int64(v);
	if (json_object_object_get_ex(p, "fetch_k", &v))
		rp->fetch_k = (size_t)json_object_get_int64(v);
	if (json_object_object_get_ex(p, "top_n", &v))
		rp->top_n = (size_t)json_object_get_int64(v);
	if (json_object_object_get_ex(p, "distance_metric", &v) &&
	    vec_metric_parse(json_object_get_string(v), &rp->metric) != 0) {
		snprintf(err, errlen, "stored parameters are damaged");
		return -1;
	}
	if (json_object_object_get_ex(p, "maximal_marginal_relevance", &v))
		rp->mmr = json_object_get_boolean(v);
	if (json_object_object_get_ex(p, "hybrid", &v))
		rp->hybrid = json_object_get_boolean(v);
	if (json_object_object_get_ex(p, "lambda_mult", &v))
		rp->lambda_mult = json_object_get_double(v);
	if (json_object_object_get_ex(p, "score_threshold", &v) && v != NULL) {
		rp->has_threshold = true;
		/* Scores are float32 and shown with a float's digits: a score
		 * copied back as the threshold must keep its own snippet. */
		rp->score_threshold = (double)(float)json_object_get_double(v);
	}
	if (json_object_object_get_ex(p, "metadata_filter", &v) && v != NULL) {
		if ((*filter = meta_filter_parse(v, err, errlen)) == NULL)
			return -1;
		rp->filter = *filter;
	}
	return 0;
}

/* --- answering ------------------------------------------------------------------------ */

/* A float as JSON with the digits a float has, not seventeen. */
static struct json_object *json_score(float s)
{
	char buf[32];

	snprintf(buf, sizeof buf, "%.9g", (double)s);
	return json_object_new_double_s((double)s, buf);
}

int rag_question_answer(struct db *db, const struct config *cfg,
                        const char *question_id, char *err, size_t errlen)
{
	char dataset_id[RAG_ID_LEN + 1], embedder[64];
	char *question = NULL;
	struct json_object *params = NULL, *docs = NULL;
	struct meta_filter *filter = NULL;
	struct vec_hit *hits = NULL;
	const struct rindex *ix;
	struct rank_params rp;
	struct db_stmt *st;
	float *qvec = NULL;
	size_t dim, qlen, n;
	long long upd;
	int rc = -1, f;

	st = db_query(db, "SELECT q.dataset_id, q.question_text, q.params, q.status, "
	              "d.embedder, d.dimensions FROM rag_questions q JOIN rag_datasets d "
	              "ON d.id = q.dataset_id WHERE q.id = ?", "s", question_id);
	if (st == NULL) {
		snprintf(err, errlen, "database error");
		return -1;
	}
	if ((f = db_fetch(st)) != 1 || strcmp(db_col_str(st, 3), "processing") != 0) {
		db_done(st);
		if (f < 0)
			snprintf(err, errlen, "database error");
		return f < 0 ? -1 : 0;
	}
	snprintf(dataset_id, sizeof dataset_id, "%s", db_col_str(st, 0));
	question = strdup(db_col_str(st, 1));
	qlen = db_col_len(st, 1);
	params = json_tokener_parse(db_col_str(st, 2));
	snprintf(embedder, sizeof embedder, "%s", db_col_str(st, 4));
	dim = (size_t)db_col_ll(st, 5);
	db_done(st);
	if (question == NULL || dim == 0 || dim > 16384) {
		snprintf(err, errlen, "question row is damaged");
		goto out;
	}
	if (params_to_rank(params, &rp, &filter, err, errlen) != 0)
		goto out;
	rank_params_embedder(&rp, strcmp(embedder, "builtin") == 0);
	if ((ix = rag_index_get(db, cfg, dataset_id, dim, err, errlen)) == NULL)
		goto out;
	qvec = malloc(dim * sizeof *qvec);
	hits = malloc(rp.top_n * sizeof *hits);
	if (qvec == NULL || hits == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (rag_embed(cfg, embedder, dim, (const char *const *)&question, &qlen, 1,
	              qvec, err, errlen) != 0)
		goto out;
	n = rank_question(ix, qvec, question, qlen, &rp, hits, rp.top_n);

	docs = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		struct json_object *s = json_object_new_object();
		struct json_object *meta = json_tokener_parse(rindex_metadata(ix, hits[i].row));

		json_object_object_add(s, "snippet_id",
		    json_object_new_string(rindex_snippet_id(ix, hits[i].row)));
		json_object_object_add(s, "page_content",
		    json_object_new_string(rindex_text(ix, hits[i].row)));
		json_object_object_add(s, "metadata", meta != NULL ? meta
		                       : json_object_new_object());
		json_object_object_add(s, "score", json_score(hits[i].score));
		json_object_array_add(docs, s);
	}
	upd = db_exec(db, "UPDATE rag_questions SET status = 'success', "
	              "relevant_documents = ?, error = NULL, finished_at = UTC_TIMESTAMP(3) "
	              "WHERE id = ? AND status = 'processing'", "ss",
	              json_object_to_json_string_ext(docs, JSON_C_TO_STRING_PLAIN),
	              question_id);
	if (upd < 0) {
		snprintf(err, errlen, "database error");
		goto out;
	}
	/* The fallback is not needed any more. */
	db_exec(db, "UPDATE work_queue SET status = 'done', finished_at = UTC_TIMESTAMP(3) "
	        "WHERE kind = 'rag_question' AND ref_id = ? AND status = 'queued'",
	        "s", question_id);
	rc = upd > 0 ? 1 : 0;
out:
	json_object_put(params);
	json_object_put(docs);
	meta_filter_free(filter);
	free(question);
	free(qvec);
	free(hits);
	return rc;
}

/* A named lock per question, held by the connection of the worker that
 * will rank it, from before POST answers until the result is stored: a GET
 * ?wait blocks on it and wakes the moment the result is there, instead of
 * polling.  A worker that dies drops its connection and so the lock. */
static void question_lock_name(char *buf, size_t cap, const char *question_id)
{
	snprintf(buf, cap, "sluice_rag_q:%s", question_id);
}

/* GET_LOCK(name, timeout_s): 1 acquired, 0 timed out, -1 error. */
static int named_lock(struct db *db, const char *name, double timeout_s)
{
	struct db_stmt *st = db_query(db, "SELECT GET_LOCK(?, ?)", "sd", name, timeout_s);
	int got = -1;

	if (st != NULL && db_fetch(st) == 1 && !db_col_null(st, 0))
		got = db_col_ll(st, 0) == 1;
	db_done(st);
	return got;
}

static void named_unlock(struct db *db, const char *name)
{
	struct db_stmt *st = db_query(db, "SELECT RELEASE_LOCK(?)", "s", name);

	if (st != NULL)
		db_fetch(st);
	db_done(st);
}

/* What the worker does after answering POST question. */
struct after_answer {
	struct db *db;
	const struct config *cfg;
	char question_id[RAG_ID_LEN + 1];
};

static void answer_after_response(void *arg)
{
	struct after_answer *a = arg;
	char err[256] = "", lock[64];
	double t0 = time_mono_ms();

	if (a->cfg->testing_routes && a->cfg->rag_test_question_delay_ms > 0) {
		int ms = a->cfg->rag_test_question_delay_ms;
		struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
	}
	if (db_ensure(a->db) != DB_OK ||
	    rag_question_answer(a->db, a->cfg, a->question_id, err, sizeof err) < 0)
		/* the queue row is still there: sluice work answers it */
		log_kv(LOG_WARN, "question left to sluice work", "question=%s error=%s",
		       a->question_id, LOG_Q(err));
	else
		log_kv(LOG_DEBUG, "question answered", "question=%s ms=%.1f",
		       a->question_id, time_mono_ms() - t0);
	question_lock_name(lock, sizeof lock, a->question_id);
	named_unlock(a->db, lock);
}

int rag_question_work(struct work_ctx *w, const struct work_item *it,
                      char *err, size_t errlen)
{
	char id[RAG_ID_LEN + 1];

	if (rag_id_parse(it->ref_id, id) != 0) {
		snprintf(err, errlen, "bad question id");
		return -1;
	}
	if (rag_question_answer(w->db, w->cfg, id, err, errlen) >= 0)
		return 0;
	if (it->attempts >= it->max_attempts)
		db_exec(w->db, "UPDATE rag_questions SET status = 'failed', error = ?, "
		        "finished_at = UTC_TIMESTAMP(3) WHERE id = ? AND status = 'processing'",
		        "ss", err, id);
	return -1;
}

/* --- POST /dataset/{id}/question ---------------------------------------------------------- */

int rag_question_post(struct req *r)
{
	struct json_object *body, *params, *q, *o;
	struct after_answer *a;
	struct rag_dataset ds;
	char qid[UUID_STR_LEN];
	const char *text;
	struct db *db;

	if ((body = req_json_body_or_reply(r)) == NULL)
		return -1;
	if (!json_object_is_type(body, json_type_object))
		return rag_reply_bad(r, "Body must be a JSON object");
	if ((params = resolve_params(r, body)) == NULL)
		return -1;
	json_object_object_get_ex(body, "question", &q);
	text = json_object_get_string(q);

	if (rag_dataset_of_caller(r, req_param(r, "dataset_id"), &ds) != 0) {
		json_object_put(params);
		return -1;
	}
	if (strcmp(ds.status, "success") != 0) {
		json_object_put(params);
		return rag_reply(r, strcmp(ds.status, "failed") == 0
		                 ? RAG_DATASET_FAILED : RAG_DATASET_PROCESSING);
	}
	db = r->db;
	if (uuid_v4(qid, '-') != 0) {
		json_object_put(params);
		return rag_reply(r, RAG_QUESTION_NOT_REGISTERED);
	}
	if (db_begin(db) != DB_OK)
		goto dberr;
	if (db_exec(db, "INSERT INTO rag_questions (id, dataset_id, asked_by_user_id, "
	            "question_text, params) VALUES (?, ?, ?, ?, ?)", "ssiss",
	            qid, ds.id, r->id.user_id, text,
	            json_object_to_json_string_ext(params, JSON_C_TO_STRING_PLAIN)) < 0 ||
	    work_enqueue_delayed(db, "rag_question", qid, NULL, NULL,
	                         RAG_QUESTION_FALLBACK_S) < 0 ||
	    db_commit(db) != DB_OK)
		goto dberr;
	json_object_put(params);
	{
		char lock[64];

		/* before the answer goes out, so a GET ?wait finds it held */
		question_lock_name(lock, sizeof lock, qid);
		named_lock(db, lock, 0);
	}

	a = arena_alloc(r->arena, sizeof *a);
	a->db = db;
	a->cfg = r->cfg;
	snprintf(a->question_id, sizeof a->question_id, "%s", qid);
	req_after(r, answer_after_response, a);

	o = json_object_new_object();
	json_object_object_add(o, "dataset_id", json_object_new_string(ds.id));
	json_object_object_add(o, "question_id", json_object_new_string(qid));
	return resp_json(r, 200, o);
dberr:
	db_rollback(db);
	json_object_put(params);
	if (db_last_err(db) == DB_ERR_UNAVAILABLE)
		return resp_db_error(r, DB_ERR_UNAVAILABLE);
	log_kv(LOG_ERROR, "cannot register question", "error=%s", LOG_Q(db_error(db)));
	return rag_reply(r, RAG_QUESTION_NOT_REGISTERED);
}

/* --- GET /dataset/{id}/question/{qid} ------------------------------------------------------- */

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int rag_question_get(struct req *r)
{
	char qid[RAG_ID_LEN + 1], lock[64];
	struct rag_dataset ds;
	struct json_object *o;
	struct db_stmt *st;
	bool lock_tried = false;
	const char *w;
	long long wait_s = 0;
	double deadline;
	int poll = WAIT_POLL_MIN_MS, rc, qerr = 0;

	w = req_query(r, "wait", &qerr);
	if (qerr != 0 || (w != NULL &&
	    str_to_ll(w, 0, r->cfg->question_wait_max_s, &wait_s) != 0))
		return rag_reply_bad(r, "wait must be an integer 0..%d (seconds)",
		                     r->cfg->question_wait_max_s);
	if (rag_dataset_of_caller(r, req_param(r, "dataset_id"), &ds) != 0)
		return -1;
	if (rag_id_parse(req_param(r, "question_id"), qid) != 0)
		return rag_reply(r, RAG_QUESTION_NOT_FOUND);

	/* ?wait holds the request (and this worker) for at most
	 * question_wait_max_s: blocked on the question's lock while the worker
	 * ranking it holds it, else polling the row with short sleeps (the
	 * fallback in sluice work holds no lock). */
	deadline = time_mono_ms() + (double)wait_s * 1000.0;
	question_lock_name(lock, sizeof lock, qid);
	for (;;) {
		double now, left;

		st = db_query(r->db, "SELECT question_text, status, params, "
		              "relevant_documents, error, created_at, finished_at, "
		              "TIMESTAMPDIFF(MICROSECOND, created_at, finished_at) "
		              "FROM rag_questions WHERE id = ? AND dataset_id = ?",
		              "ss", qid, ds.id);
		if (st == NULL)
			return resp_db_error(r, db_last_err(r->db));
		if ((rc = db_fetch(st)) != 1) {
			db_done(st);
			return rc < 0 ? resp_db_error(r, db_last_err(r->db))
			              : rag_reply(r, RAG_QUESTION_NOT_FOUND);
		}
		now = time_mono_ms();
		if (strcmp(db_col_str(st, 1), "processing") != 0 || now >= deadline)
			break;
		db_done(st);
		left = deadline - now;
		if (!lock_tried) {
			lock_tried = true;
			if (named_lock(r->db, lock, left / 1000.0) == 1) {
				named_unlock(r->db, lock);
				/* got at once: nobody holds it, so poll */
				if (time_mono_ms() - now >= WAIT_POLL_MIN_MS)
					continue;
			}
		}
		sleep_ms(poll < left ? poll : (int)left + 1);
		if ((poll *= 2) > WAIT_POLL_MAX_MS)
			poll = WAIT_POLL_MAX_MS;
	}
	o = json_object_new_object();
	json_object_object_add(o, "question_id", json_object_new_string(qid));
	json_object_object_add(o, "dataset_id", json_object_new_string(ds.id));
	json_object_object_add(o, "question_text", json_object_new_string(db_col_str(st, 0)));
	json_object_object_add(o, "status", json_object_new_string(db_col_str(st, 1)));
	json_object_object_add(o, "parameters", json_tokener_parse(db_col_str(st, 2)));
	json_object_object_add(o, "relevant_documents", db_col_null(st, 3)
	                       ? json_object_new_array()
	                       : json_tokener_parse(db_col_str(st, 3)));
	json_object_object_add(o, "error", db_col_null(st, 4) ? NULL
	                       : json_object_new_string(db_col_str(st, 4)));
	json_object_object_add(o, "created_at", rag_json_time(db_col_str(st, 5)));
	json_object_object_add(o, "finished_at", rag_json_time(db_col_str(st, 6)));
	json_object_object_add(o, "elapsed_ms", db_col_null(st, 7) ? NULL
	                       : json_object_new_double_s(db_col_ll(st, 7) / 1000.0,
	                           arena_printf(r->arena, "%.3f", db_col_ll(st, 7) / 1000.0)));
	db_done(st);
	return resp_json(r, 200, o);
}
