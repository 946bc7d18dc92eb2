/* questions.c - POST/GET /dataset/{id}/question, and answering a question.
 *
 * Who ranks a question POST registers:
 *   - the worker that took the POST, inside the request, when that is
 *     cheap and bounded: the dataset's embedder is the built-in one (no
 *     network call), its index file is there (no rebuild from MariaDB) and
 *     holds at most question_inline_max_snippets snippets, and no two of
 *     the last three rankings of it in this worker took more than
 *     question_inline_budget_ms of CPU time (a wait for a core on a busy
 *     machine is no reason to move the work somewhere costlier, and one
 *     dear question - a filter that reads every row's metadata - is no
 *     reason to move the cheap ones after it).  While two of three were
 *     dearer, every RANK_PROBE-th question is ranked here all the same, so
 *     that a dear moment passes.  The question is then stored once,
 *     answered: one INSERT, no queue row, no result to wait for (a GET
 *     finds it done).  That INSERT stores it only while the dataset is the
 *     caller's and says success, so the same user's next POST here reads
 *     no dataset first (dataset_recall); one that stored nothing reads it
 *     then, and answers as a first POST would.  Should the ranking fail,
 *     the question takes the other path; should the worker die first,
 *     nothing was stored and the client's POST failed (a 502 from nginx),
 *     so it asks again.
 *   - otherwise `sluice work`, at once: the question and its queue row are
 *     stored in one transaction.
 * sluice work also queues any question still processing
 * RAG_QUESTION_FALLBACK_S after it was asked without a queue row (one an
 * earlier sluice stored before ranking it, left by a worker that died:
 * rag_question_recover).
 * sluice work stores a result only while the question is still processing,
 * so answering twice is harmless and a question is never lost.  A row
 * claimable now wakes sluice work, a result it stored wakes the waiter on
 * this host (util/wake.h); their polls still find either without it.
 *
 * GET ?wait=N of a question still processing does not wait in the worker:
 * it answers with a redirect to the waiter (http/wait.h), which answers the
 * client when the result is stored or N seconds passed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <json-c/json.h>

#include "db/db.h"
#include "db/queue.h"
#include "http/errors.h"
#include "http/request.h"
#include "http/response.h"
#include "http/validate.h"
#include "http/wait.h"
#include "retrieval/filter.h"
#include "retrieval/index.h"
#include "retrieval/rank.h"
#include "retrieval/retrieval.h"
#include "retrieval/vec.h"
#include "util/config.h"
#include "util/log.h"
#include "util/test_hooks.h"
#include "util/timeutil.h"
#include "util/uuid.h"
#include "util/wake.h"

#define INDEX_CACHE_SLOTS 16

/* --- the per-process index cache ------------------------------------------------- */

/* While a dataset's rankings here are dear, one question in this many is
 * still ranked here, to see whether they still are. */
#define RANK_PROBE 8

struct cached_index {
	char id[RAG_ID_LEN + 1];
	struct rindex *ix;
	double used_ms;
	double rank_ms[3];               /* the last rankings over it here, newest
	                                  * first: CPU time (0: none yet) */
	unsigned away;                   /* questions sent to sluice work since */
	long long owner;                 /* the user whose POST read row (0: none) */
	struct rag_dataset row;          /* the dataset as a POST answered here
	                                  * read it (dataset_recall) */
};

static struct cached_index cache[INDEX_CACHE_SLOTS];

static bool same_file(const struct cached_index *c, const struct stat *st)
{
	struct rindex_file now = rindex_file_of(st);

	return rindex_file_same(rindex_file(c->ix), &now);
}

void rag_index_forget(const char *dataset_id)
{
	for (int i = 0; i < INDEX_CACHE_SLOTS; i++)
		if (cache[i].ix != NULL && strcmp(cache[i].id, dataset_id) == 0) {
			rindex_close(cache[i].ix);
			memset(&cache[i], 0, sizeof cache[i]);
		}
}

static struct cached_index *cache_slot(const char *dataset_id)
{
	for (int i = 0; i < INDEX_CACHE_SLOTS; i++)
		if (cache[i].ix != NULL && strcmp(cache[i].id, dataset_id) == 0)
			return &cache[i];
	return NULL;
}

void rag_index_ranked(const char *dataset_id, double cpu_ms)
{
	struct cached_index *slot = cache_slot(dataset_id);

	if (slot != NULL) {
		slot->rank_ms[2] = slot->rank_ms[1];
		slot->rank_ms[1] = slot->rank_ms[0];
		slot->rank_ms[0] = cpu_ms;
		slot->away = 0;
	}
}

/* The row of ds, read for user's POST that was then answered here, kept
 * with the index it was ranked over (and dropped with it when the file is
 * replaced or the dataset deleted here). */
static void dataset_remember(const struct rag_dataset *ds, long long user)
{
	struct cached_index *slot = cache_slot(ds->id);

	if (slot != NULL) {
		slot->owner = user;
		slot->row = *ds;
	}
}

static void dataset_forget_row(const char *dataset_id)
{
	struct cached_index *slot = cache_slot(dataset_id);

	if (slot != NULL)
		slot->owner = 0;
}

/* Whether an earlier POST of user read dataset id here: its row into *ds.
 * Only a hint: the INSERT that stores the answer checks the owner and the
 * status again (question_answered_here), and the embedder and dimensions
 * never change. */
static bool dataset_recall(const char *id, long long user, struct rag_dataset *ds)
{
	struct cached_index *slot = cache_slot(id);

	if (slot == NULL || slot->owner == 0 || slot->owner != user)
		return false;
	*ds = slot->row;
	return true;
}

const struct rindex *rag_index_get(struct db *db, const struct config *cfg,
                                   const char *dataset_id, size_t dim, bool may_build,
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
	slot = cache_slot(dataset_id);
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
	if (ix == NULL && !may_build) {
		snprintf(err, errlen, "the index file cannot be used here: %s", oerr);
		return NULL;
	}
	if (ix == NULL) {
		/* Missing or corrupt: MariaDB has every snippet. */
		log_kv(LOG_WARN, "rebuilding index file", "dataset=%s reason=%s",
		       dataset_id, LOG_Q(oerr));
		if (rag_index_build(db, cfg, dataset_id, NULL, &count, err, errlen) != 0)
			return NULL;
		if ((ix = rindex_open(path, err, errlen)) == NULL)
			return NULL;
	}
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
	slot->ix = ix;              /* what it maps, not what the path names now */
	slot->used_ms = time_mono_ms();
	return ix;
}

/* --- parameters -------------------------------------------------------------------- */

/* The body of POST question, typed; absent fields keep the defaults. */
struct question_in {
	const char *question;
	long long k, fetch_k, top_n;
	double lambda_mult, score_threshold;
	enum vec_metric metric;
	bool mmr, mmr_alias, hybrid;
	struct json_object *filter;        /* borrowed from the body */
	bool has_threshold;                /* score_threshold was given */
};

static int metric_check(struct json_object *v, void *out, char *msg, size_t len)
{
	if (json_object_is_type(v, json_type_string) &&
	    vec_metric_parse(json_object_get_string(v), out) == 0)
		return 0;
	snprintf(msg, len, "must be one of L2, L1, max, cos, dot");
	return -1;
}

/* Parsed now so that a bad filter is a 400, not a failed question. */
static int filter_check(struct json_object *v, void *out, char *msg, size_t len)
{
	struct meta_filter *mf = meta_filter_parse(v, msg, len);

	if (mf == NULL)
		return -1;
	meta_filter_free(mf);
	*(struct json_object **)out = v;
	return 0;
}

#define QIN(member) VOFF(struct question_in, member)
const struct vfield rag_question_body[] = {
	{ "question", V_STR, V_REQUIRED | V_NONBLANK, 1, RAG_QUESTION_MAX, NULL, NULL,
	  QIN(question) },
	{ "k", V_INT, 0, 1, RAG_K_MAX, NULL, NULL, QIN(k) },
	{ "fetch_k", V_INT, 0, 1, RAG_K_MAX, NULL, NULL, QIN(fetch_k) },
	{ "top_n", V_INT, 0, 1, RAG_TOP_N_MAX, NULL, NULL, QIN(top_n) },
	{ "lambda_mult", V_NUM, 0, 0, 1, NULL, NULL, QIN(lambda_mult) },
	{ "score_threshold", V_NUM, 0, -1e30, 1e30, NULL, NULL, QIN(score_threshold) },
	{ "distance_metric", V_CHECK, 0, 0, 0, NULL, metric_check, QIN(metric) },
	{ "maximal_marginal_relevance", V_BOOL, 0, 0, 0, NULL, NULL, QIN(mmr) },
	{ "use_maximal_marginal_relevance", V_BOOL, 0, 0, 0, NULL, NULL, QIN(mmr_alias) },
	{ "hybrid", V_BOOL, 0, 0, 0, NULL, NULL, QIN(hybrid) },
	{ "metadata_filter", V_CHECK, 0, 0, 0, NULL, filter_check, QIN(filter) },
	VFIELDS_END
};
#undef QIN

/* The body of r into *in with every default filled in.  0, or -1 after
 * a 400. */
static int question_read_or_reply(struct req *r, struct question_in *in)
{
	struct json_object *body;
	struct rank_params d;
	struct verror e;
	vgiven given;
	bool mmr, alias;

	if ((body = req_json_body_or_reply(r)) == NULL)
		return -1;
	rank_params_default(&d);
	*in = (struct question_in){ .k = (long long)d.k, .fetch_k = (long long)d.fetch_k,
	        .top_n = (long long)d.top_n, .lambda_mult = d.lambda_mult,
	        .metric = d.metric, .mmr = d.mmr, .hybrid = d.hybrid };
	if (validate_json(rag_question_body, body, in, &given, &e) != 0)
		return rag_reply_verror(r, &e);
	/* Users of the common Python wrappers send either spelling. */
	mmr = validate_given(rag_question_body, given, "maximal_marginal_relevance");
	alias = validate_given(rag_question_body, given, "use_maximal_marginal_relevance");
	if (mmr && alias && in->mmr != in->mmr_alias)
		return rag_reply(r, RAG_MMR_DISAGREE);
	if (alias)
		in->mmr = in->mmr_alias;
	in->has_threshold = validate_given(rag_question_body, given, "score_threshold");
	return 0;
}

/* The parameters under their wire names: what is stored with the question
 * and shown by GET. */
static struct json_object *question_params(const struct question_in *in)
{
	struct json_object *p = json_object_new_object();

	json_object_object_add(p, "k", json_object_new_int64(in->k));
	json_object_object_add(p, "fetch_k", json_object_new_int64(in->fetch_k));
	json_object_object_add(p, "top_n", json_object_new_int64(in->top_n));
	json_object_object_add(p, "distance_metric",
	                       json_object_new_string(vec_metric_name(in->metric)));
	json_object_object_add(p, "maximal_marginal_relevance",
	                       json_object_new_boolean(in->mmr));
	json_object_object_add(p, "hybrid", json_object_new_boolean(in->hybrid));
	json_object_object_add(p, "lambda_mult", json_object_new_double(in->lambda_mult));
	json_object_object_add(p, "score_threshold", in->has_threshold
	                       ? json_object_new_double(in->score_threshold) : NULL);
	json_object_object_add(p, "metadata_filter", json_object_get(in->filter));
	return p;
}

/* A queue row for sluice work to answer question id; < 0 enum db_err. */
static long long queue_question(struct db *db, const char *id, const char *tenant)
{
	return queue_enqueue(db, &(struct queue_new){ .kind = "rag_question",
	                     .ref_id = id, .tenant = tenant });
}

/* Is ranking ds in this request cheap and bounded?  The built-in embedder,
 * at most question_inline_max_snippets snippets, and at most one of its
 * last three rankings here over question_inline_budget_ms of CPU time; or
 * the RANK_PROBE-th question since one was ranked here. */
static bool rank_here(struct req *r, const struct rag_dataset *ds)
{
	struct cached_index *slot;
	int dear = 0;

	if (strcmp(ds->embedder, "builtin") != 0 || ds->dimensions <= 0 ||
	    ds->snippets > r->cfg->question_inline_max_snippets)
		return false;
	if ((slot = cache_slot(ds->id)) == NULL)
		return true;
	for (int i = 0; i < 3; i++)
		dear += slot->rank_ms[i] > r->cfg->question_inline_budget_ms;
	return dear <= 1 || ++slot->away % RANK_PROBE == 0;
}

struct question_insert {
	struct rag_posted_question q;
	const char *tenant;
	long long user_id;
};

/* What question_answered_here did, besides < 0 enum db_err. */
enum answered_here {
	NOT_RANKED = 0,                  /* why in the log: the caller queues it */
	STORED = 1,
	DATASET_CHANGED = 2,             /* deleted, or no longer 'success' */
};

/* Rank q here, then store it with its result: one INSERT, which says
 * when the POST came (created_at) and when it was answered, and stores it
 * only while the dataset is still the caller's and says success (the POST
 * may have read the dataset before, or not at all: dataset_recall). */
static int question_answered_here(struct req *r, const struct question_insert *ins)
{
	const struct rag_posted_question *q = &ins->q;
	char err[256] = "", *docs;
	long long n;

	/* Requests nginx sends on this worker's other kept connections meanwhile
	 * go to idle workers: waiting behind rankings (milliseconds, more on a
	 * busy machine) doubled the p99 at 16 clients. */
	req_before_slow_work(r);
	TEST_HOOK_PAUSE(r->cfg, rag_test_question_delay_ms);
	if (rag_question_rank_posted(r->cfg, q, &docs, err, sizeof err) != 0) {
		log_kv(LOG_WARN, "question left to sluice work", "question=%s error=%s",
		       q->id, LOG_Q(err));
		return NOT_RANKED;
	}
	n = db_exec(r->db, "INSERT INTO rag_questions (id, dataset_id, asked_by_user_id, "
	            "question_text, params, status, relevant_documents, created_at, "
	            "finished_at) SELECT ?, d.id, ?, ?, ?, 'success', ?, UTC_TIMESTAMP(3) - "
	            "INTERVAL ? MICROSECOND, UTC_TIMESTAMP(3) FROM rag_datasets d "
	            "WHERE d.id = ? AND d.owner_user_id = ? AND d.status = 'success'",
	            "sisssisi", q->id, ins->user_id, q->text, q->params, docs,
	            (long long)((time_mono_ms() - r->started_ms) * 1000.0), q->dataset_id,
	            ins->user_id);
	free(docs);
	return n < 0 ? (int)n : n == 0 ? DATASET_CHANGED : STORED;
}

/* The question and its queue row, for sluice work to answer. */
static int question_queued_body(struct db *db, void *arg)
{
	const struct question_insert *ins = arg;
	const struct rag_posted_question *q = &ins->q;
	long long n = db_exec(db, "INSERT INTO rag_questions (id, dataset_id, "
	                      "asked_by_user_id, question_text, params) VALUES (?, ?, ?, ?, ?)",
	                      "ssiss", q->id, q->dataset_id, ins->user_id, q->text, q->params);

	if (n < 0)
		return (int)n;
	n = queue_question(db, q->id, ins->tenant);
	return n < 0 ? (int)n : 0;
}

/* --- POST /dataset/{id}/question ---------------------------------------------------------- */

/* The dataset of r's POST, when it takes questions: 0, or -1 after the
 * answer (404, 422, 503). */
static int dataset_for_question(struct req *r, struct rag_dataset *ds)
{
	if (rag_dataset_of_caller(r, req_param(r, "dataset_id"), ds) != 0)
		return -1;
	if (strcmp(ds->status, "success") != 0)
		return rag_reply(r, strcmp(ds->status, "failed") == 0
		                 ? RAG_DATASET_FAILED : RAG_DATASET_PROCESSING);
	return 0;
}

int rag_question_post(struct req *r)
{
	struct json_object *params, *o;
	struct question_insert ins;
	struct question_in in;
	struct rag_dataset ds;
	char qid[UUID_STR_LEN], tenant[QUEUE_TENANT_MAX + 1], id[RAG_ID_LEN + 1];
	bool recalled;
	int rc = NOT_RANKED;

	if (rag_query_or_reply(r, NULL, NULL) != 0 || question_read_or_reply(r, &in) != 0)
		return -1;
	/* A dataset this user's POST read here before is not read again: the
	 * INSERT of an answer ranked here checks it. */
	recalled = rag_id_parse(req_param(r, "dataset_id"), id) == 0 &&
	           dataset_recall(id, r->id.user_id, &ds);
	if (recalled ? req_db_or_reply(r) == NULL : dataset_for_question(r, &ds) != 0)
		return -1;
	/* Version 7: questions are the rows the service adds most, and kept;
	 * under random ids, once rag_questions outgrew the buffer pool, every
	 * INSERT read a page from disk and dirtied another (as snippets' did). */
	if (uuid_v7(qid) != 0)
		return rag_reply(r, RAG_QUESTION_NOT_REGISTERED);
	params = question_params(&in);
	rag_tenant(tenant, sizeof tenant, r->id.user_id);
	ins = (struct question_insert){ .q = { .id = qid, .dataset_id = ds.id,
	        .embedder = ds.embedder, .dimensions = ds.dimensions, .text = in.question,
	        .params = json_object_to_json_string_ext(params, JSON_C_TO_STRING_PLAIN) },
	        .tenant = tenant, .user_id = r->id.user_id };
	/* Ranked here and stored answered; else (or should that fail) stored
	 * with a queue row for sluice work. */
	if (rank_here(r, &ds))
		rc = question_answered_here(r, &ins);
	/* The queue's INSERT checks nothing: a question goes to sluice work
	 * only after its dataset was read. */
	if (rc == DATASET_CHANGED || (rc == NOT_RANKED && recalled)) {
		dataset_forget_row(ds.id);
		if (dataset_for_question(r, &ds) != 0) {
			json_object_put(params);
			return -1;
		}
		rc = NOT_RANKED;
	}
	if (rc == NOT_RANKED && (rc = db_tx(r->db, "question", question_queued_body, &ins)) >= 0)
		wake_send(r->cfg, WAKE_WORK, "rag_question", NULL);
	else if (rc == STORED && !recalled)
		dataset_remember(&ds, r->id.user_id);
	json_object_put(params);
	if (rc < 0) {
		if (rc == DB_ERR_UNAVAILABLE)
			return resp_db_error(r, DB_ERR_UNAVAILABLE);
		/* The dataset was deleted since it was read. */
		if (rc == DB_ERR_FOREIGN_KEY)
			return rag_reply(r, RAG_DATASET_NOT_FOUND);
		log_kv(LOG_ERROR, "cannot register question", "error=%s", LOG_Q(db_error(r->db)));
		return rag_reply(r, RAG_QUESTION_NOT_REGISTERED);
	}
	o = json_object_new_object();
	json_object_object_add(o, "dataset_id", json_object_new_string(ds.id));
	json_object_object_add(o, "question_id", json_object_new_string(qid));
	return resp_json(r, 200, o);
}

/* --- questions a worker took and did not answer ----------------------------------------- */

int rag_question_recover(struct db *db, const struct config *cfg)
{
	struct { char id[RAG_ID_LEN + 1]; long long user; } found[RAG_QUESTION_BATCH];
	char tenant[QUEUE_TENANT_MAX + 1];
	struct db_stmt *st;
	size_t n = 0, queued = 0;
	int rc;

	/* An earlier sluice stored a question before its worker ranked it,
	 * with no queue row: one still processing this long after it was
	 * asked has lost its worker. */
	st = db_query(db, "SELECT q.id, q.asked_by_user_id FROM rag_questions q "
	              "WHERE q.status = 'processing' AND q.created_at < UTC_TIMESTAMP(3) "
	              "- INTERVAL ? SECOND AND NOT EXISTS (SELECT 1 FROM work_queue w "
	              "WHERE w.kind = 'rag_question' AND w.ref_id = q.id) "
	              "ORDER BY q.status, q.created_at LIMIT ?", "ii",
	              (long long)RAG_QUESTION_FALLBACK_S, (long long)RAG_QUESTION_BATCH);
	if (st == NULL)
		return db_last_err(db);
	while (n < RAG_QUESTION_BATCH && (rc = db_fetch(st)) == 1) {
		snprintf(found[n].id, sizeof found[n].id, "%s", db_col_str(st, 0));
		found[n++].user = db_col_ll(st, 1);
	}
	db_done(st);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		rag_tenant(tenant, sizeof tenant, found[i].user);
		if (queue_question(db, found[i].id, tenant) < 0)
			return db_last_err(db);
		queued++;
		log_kv(LOG_WARN, "question left unanswered by its worker, queued",
		       "question=%s", found[i].id);
	}
	if (queued > 0)
		wake_send(cfg, WAKE_WORK, "rag_question", NULL);
	return (int)queued;
}

/* --- GET /dataset/{id}/question/{qid} ------------------------------------------------------- */

int rag_question_render(struct db *db, const char *owner, const char *dataset_id,
                        const char *question_id, struct json_object **out)
{
	struct json_object *o;
	struct db_stmt *st;
	char buf[32];
	int rc;

	*out = NULL;
	/* The owner's check and the question in one statement: a GET of a
	 * question is what a client polls. */
	st = db_query(db, "SELECT q.question_text, q.status, q.params, "
	              "q.relevant_documents, q.error, q.created_at, q.finished_at, "
	              "TIMESTAMPDIFF(MICROSECOND, q.created_at, q.finished_at) "
	              "FROM rag_questions q JOIN rag_datasets d ON d.id = q.dataset_id "
	              "WHERE q.id = ? AND q.dataset_id = ? "
	              "AND CONCAT('user:', d.owner_user_id) = ?",
	              "sss", question_id, dataset_id, owner);
	if (st == NULL)
		return db_last_err(db);
	if ((rc = db_fetch(st)) != 1) {
		db_done(st);
		return rc;
	}
	o = json_object_new_object();
	json_object_object_add(o, "question_id", json_object_new_string(question_id));
	json_object_object_add(o, "dataset_id", json_object_new_string(dataset_id));
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
	snprintf(buf, sizeof buf, "%.3f", db_col_ll(st, 7) / 1000.0);
	json_object_object_add(o, "elapsed_ms", db_col_null(st, 7) ? NULL
	                       : json_object_new_double_s(db_col_ll(st, 7) / 1000.0, buf));
	db_done(st);
	*out = o;
	return 1;
}

struct rag_question_query {
	long long wait;
};

const struct vfield rag_question_query[] = {
	/* max is question_wait_max_s, set per request */
	{ "wait", V_INT, V_CFG_MAX, 0, 0, NULL, NULL, VOFF(struct rag_question_query, wait) },
	VFIELDS_END
};

int rag_question_get(struct req *r)
{
	struct vfield query[sizeof rag_question_query / sizeof rag_question_query[0]];
	struct rag_question_query in = { 0 };
	char ds[RAG_ID_LEN + 1], qid[RAG_ID_LEN + 1], owner[QUEUE_TENANT_MAX + 1];
	struct rag_dataset found;
	struct json_object *o = NULL, *status;
	struct db *db;
	int rc;

	memcpy(query, rag_question_query, sizeof query);
	query[0].max = r->cfg->question_wait_max_s;
	if (rag_query_or_reply(r, query, &in) != 0 || (db = req_db_or_reply(r)) == NULL)
		return -1;
	rag_tenant(owner, sizeof owner, r->id.user_id);
	rc = 0;
	if (rag_id_parse(req_param(r, "dataset_id"), ds) == 0 &&
	    rag_id_parse(req_param(r, "question_id"), qid) == 0 &&
	    (rc = rag_question_render(db, owner, ds, qid, &o)) < 0)
		return resp_db_error(r, rc);
	/* Not found: which 404 says the dataset's check, made only now. */
	if (rc == 0)
		return rag_dataset_of_caller(r, req_param(r, "dataset_id"), &found) != 0 ? -1
		       : rag_reply(r, RAG_QUESTION_NOT_FOUND);
	/* Still processing and the caller will wait: the waiter holds the
	 * request, not this worker. */
	if (in.wait > 0 && json_object_object_get_ex(o, "status", &status) &&
	    strcmp(json_object_get_string(status), "processing") == 0) {
		TEST_HOOK_PAUSE(r->cfg, rag_test_redirect_delay_ms);
		if (wait_redirect(r, "question", owner, ds, qid, in.wait * 1000) == 0) {
			json_object_put(o);
			return 0;
		}
	}
	return resp_json(r, 200, o);
}

int rag_questions_settled(struct db *db, const char *const *ids, size_t n, bool *settled)
{
	return db_in_batch(db, "SELECT id FROM rag_questions WHERE status <> 'processing' "
	    "AND id IN " DB_IN_LIST, ids, n, settled);
}

int rag_question_wait_answer(struct db *db, const char *owner, const char *dataset_id,
                             const char *question_id, int *status,
                             struct json_object **body)
{
	char ds[RAG_ID_LEN + 1], qid[RAG_ID_LEN + 1];
	int rc;

	*body = NULL;
	*status = 404;
	if (rag_id_parse(dataset_id, ds) != 0 || rag_id_parse(question_id, qid) != 0)
		return 0;
	/* Gone while waiting (the dataset deleted, or no longer owner's): 404. */
	if ((rc = rag_question_render(db, owner, ds, qid, body)) < 0)
		return rc;
	if (rc == 1)
		*status = 200;
	else
		*body = rag_reply_json(RAG_QUESTION_NOT_FOUND, status);
	return 0;
}
