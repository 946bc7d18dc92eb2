/* answer.c - ranking questions: one at a time in the worker that took the
 * POST (which stores it answered, questions.c), several of a dataset at
 * once in `sluice work`, which stores their results.  A worker's question
 * that reads every vector takes its top k from a pass shared with the
 * questions the other workers rank at the same time (pass_share.h).
 *
 * A question `sluice work` claims brings along the other questions of its
 * dataset and tenant whose queue rows wait, up to RAG_QUESTION_BATCH: the
 * index file is opened and checked once, the embedder called once (one
 * request to a network embedder), the questions that read every vector
 * (hybrid off, or a learned embedder) share one pass over the rows' 8-bit
 * codes, split among the host's CPUs, and the results are stored a
 * statement per DB_IN_BATCH.  Those riders' queue rows are not claimed but
 * held back RAG_QUESTION_FALLBACK_S: marked done once the batch's results
 * are stored (a statement per DB_IN_BATCH), hurried back when their own
 * ranking failed, and come due by themselves should this child die first.
 * Once its own batch is answered, the child takes the next riders, and
 * again, while they keep coming and for at most RAG_QUESTION_ROUNDS_MS
 * (up to RAG_QUESTION_ROUNDS_MAX_MS while no other dataset's question
 * waits), with the index open and the connection made; in between it
 * waits for a nudge (a question posted on this host wakes sluice work,
 * which signals its question children).  A result is stored only while
 * its question is processing, so a question answered twice is harmless. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "db/db.h"
#include "db/queue.h"
#include "retrieval/filter.h"
#include "retrieval/index.h"
#include "retrieval/pass_share.h"
#include "retrieval/rank.h"
#include "retrieval/retrieval.h"
#include "retrieval/vec.h"
#include "retrieval/vec_codes.h"
#include "util/config.h"
#include "util/log.h"
#include "util/test_hooks.h"
#include "util/timeutil.h"
#include "util/wake.h"

/* One question being answered. */
struct asked {
	char id[RAG_ID_LEN + 1];
	long long item;                  /* a rider's queue row, else 0 */
	char *result;                    /* once ranked: its relevant documents' JSON */
	char *text;
	size_t len;
	struct json_object *params;
	struct meta_filter *filter;
	struct rank_params rp;
	bool failed;                     /* its own ranking failed (why in err) */
	char err[256];
};

/* The dataset every question of a batch belongs to. */
struct batch_of {
	char dataset_id[RAG_ID_LEN + 1];
	char embedder[64];
	size_t dim;
};

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
		char why[256];

		if ((*filter = meta_filter_parse(v, why, sizeof why)) == NULL) {
			snprintf(err, errlen, "stored parameters are damaged: metadata_filter %s",
			         why);
			return -1;
		}
		rp->filter = *filter;
	}
	return 0;
}

/* A float as JSON with the digits a float has, not seventeen. */
static struct json_object *json_score(float s)
{
	char buf[32];

	snprintf(buf, sizeof buf, "%.9g", (double)s);
	return json_object_new_double_s((double)s, buf);
}

static void asked_free(struct asked *a)
{
	free(a->text);
	json_object_put(a->params);
	meta_filter_free(a->filter);
	free(a->result);
}

/* a's text and stored parameters (params_json), for a question of b.  1,
 * or -1 (err). */
static int asked_set(struct asked *a, const struct batch_of *b, const char *text,
                     size_t len, const char *params_json, char *err, size_t errlen)
{
	a->text = strndup(text, len);
	a->len = len;
	a->params = json_tokener_parse(params_json);
	if (a->text == NULL || b->dim == 0 || b->dim > 16384) {
		snprintf(err, errlen, "question row is damaged");
		return -1;
	}
	if (params_to_rank(a->params, &a->rp, &a->filter, err, errlen) != 0)
		return -1;
	rank_params_embedder(&a->rp, strcmp(b->embedder, "builtin") == 0);
	return 1;
}

/* The questions of as[0..n) still processing, with their dataset into
 * *b: as[0]'s sets it, and a rider no longer processing or of another
 * dataset is left failed (err empty: nothing went wrong).  A statement
 * per DB_IN_BATCH questions, as[0]'s row first.  1 as[0] loaded, 0 it
 * is not processing any more, -1 on error (err). */
static int load_asked(struct db *db, struct asked *as, size_t n, struct batch_of *b,
                      char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++)
		as[i].failed = true;
	for (size_t c = 0; c < n; c += DB_IN_BATCH) {
		size_t end = c + DB_IN_BATCH < n ? c + DB_IN_BATCH : n;
		const char *v[DB_IN_BATCH];
		struct db_stmt *st;
		int f;

		for (size_t i = 0; i < DB_IN_BATCH; i++)
			v[i] = as[c + i < end ? c + i : c].id;
		/* By the keys: left to itself the optimizer may read every
		 * dataset, or start from the dataset and read its questions. */
		st = db_query(db, "SELECT q.id, q.dataset_id, q.question_text, q.params, "
		    "d.embedder, d.dimensions FROM rag_questions q FORCE INDEX (PRIMARY) "
		    "STRAIGHT_JOIN rag_datasets d FORCE INDEX (PRIMARY) ON d.id = q.dataset_id "
		    "WHERE q.status = 'processing' AND q.id IN " DB_IN_LIST " "
		    "ORDER BY q.id <> ?",
		    "sssssssssssssssss", v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7],
		    v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15], as[0].id);
		while (st != NULL && (f = db_fetch(st)) == 1) {
			size_t i = c;
			struct asked *a;

			while (i < end && strcmp(as[i].id, db_col_str(st, 0)) != 0)
				i++;
			if (i == end || !(a = &as[i])->failed)
				continue;
			if (i == 0) {
				snprintf(b->dataset_id, sizeof b->dataset_id, "%s", db_col_str(st, 1));
				snprintf(b->embedder, sizeof b->embedder, "%s", db_col_str(st, 4));
				b->dim = (size_t)db_col_ll(st, 5);
			} else if (as[0].failed || strcmp(db_col_str(st, 1), b->dataset_id) != 0) {
				continue;
			}
			a->failed = asked_set(a, b, db_col_str(st, 2), db_col_len(st, 2),
			                      db_col_str(st, 3), a->err, sizeof a->err) != 1;
		}
		db_done(st);
		if (st == NULL || f < 0) {
			snprintf(err, errlen, "database error");
			return -1;
		}
		if (as[0].failed) {
			snprintf(err, errlen, "%s", as[0].err);
			return as[0].err[0] != '\0' ? -1 : 0;
		}
	}
	return 1;
}

/* Rank a into a->result, its relevant documents as JSON.  The ranking's
 * CPU time is added to *rank_ms.  0 or -1 (a->err). */
static int rank_one(const struct config *cfg, const struct rindex *ix, struct asked *a,
                    const float *qvec, const struct rank_vector *given, double *rank_ms)
{
	struct vec_hit *hits = malloc(a->rp.top_n * sizeof *hits);
	struct json_object *docs;
	double c0 = time_cpu_ms();
	size_t n;

	(void)cfg;                               /* the test hooks' only */
	if (hits == NULL) {
		snprintf(a->err, sizeof a->err, "out of memory");
		return -1;
	}
	n = rank_question_given(ix, qvec, a->text, a->len, &a->rp, given, hits, a->rp.top_n);
	TEST_HOOK_PAUSE(cfg, rag_test_rank_delay_ms);
#ifdef SLUICE_TEST_HOOKS
	static bool ranked_before;               /* in this process */
	if (!ranked_before) {
		ranked_before = true;
		TEST_HOOK_SPIN(cfg, rag_test_rank_spin_first_ms);
	}
#endif
	*rank_ms += time_cpu_ms() - c0;
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
	free(hits);
	a->result = strdup(json_object_to_json_string_ext(docs, JSON_C_TO_STRING_PLAIN));
	json_object_put(docs);
	if (a->result == NULL)
		snprintf(a->err, sizeof a->err, "out of memory");
	return a->result != NULL ? 0 : -1;
}

/* Up to DB_IN_BATCH results a statement, and at most STORE_BYTES of them
 * (a statement is one packet: max_allowed_packet is 16 MB by default). */
#define STORE_BYTES (4u << 20)
#define STORE_WHEN "WHEN ? THEN ? "
#define STORE_CASE STORE_WHEN STORE_WHEN STORE_WHEN STORE_WHEN STORE_WHEN \
	STORE_WHEN STORE_WHEN STORE_WHEN STORE_WHEN STORE_WHEN STORE_WHEN \
	STORE_WHEN STORE_WHEN STORE_WHEN STORE_WHEN STORE_WHEN  /* DB_IN_BATCH */

/* Store the results of the ranked questions of as[0..n), several to a
 * statement: stored one by one, a batch's commits took the child two to
 * three times its ranking's time.  A result is stored only while its
 * question is processing.  Each waiter is woken (a question answered
 * meanwhile, or deleted, is woken for nothing: a wake is a hint); a
 * question's own queue rows are cancelled, a rider's are not (whoever
 * holds them records them).  A question whose statement failed is left
 * failed (a->err). */
static void store_answers(struct db *db, const struct config *cfg, struct asked *as,
                          size_t n)
{
	struct db_param ps[3 * DB_IN_BATCH];
	struct asked *in[DB_IN_BATCH];
	size_t i = 0;

	while (i < n) {
		size_t k = 0, bytes = 0;

		for (; i < n && k < DB_IN_BATCH; i++) {
			size_t len;

			if (as[i].failed || as[i].result == NULL)
				continue;
			len = strlen(as[i].result);
			if (k > 0 && bytes + len > STORE_BYTES)
				break;
			bytes += len;
			in[k++] = &as[i];
		}
		if (k == 0)
			continue;
		/* Places past k: WHEN NULL matches nothing, the IN list
		 * repeats the first id. */
		for (size_t j = 0; j < DB_IN_BATCH; j++) {
			ps[2 * j] = (struct db_param){ .type = 's', .p = j < k ? in[j]->id : NULL };
			ps[2 * j + 1] = (struct db_param){ .type = 's',
			                                   .p = j < k ? in[j]->result : NULL };
			ps[2 * DB_IN_BATCH + j] = (struct db_param){ .type = 's',
			                                             .p = in[j < k ? j : 0]->id };
		}
		if (db_exec_params(db, "UPDATE rag_questions FORCE INDEX (PRIMARY) SET "
		    "status = 'success', error = NULL, finished_at = UTC_TIMESTAMP(3), "
		    "relevant_documents = CASE id " STORE_CASE "END "
		    "WHERE status = 'processing' AND id IN " DB_IN_LIST, ps, 3 * DB_IN_BATCH) < 0) {
			for (size_t j = 0; j < k; j++) {
				in[j]->failed = true;
				snprintf(in[j]->err, sizeof in[j]->err, "database error");
			}
			continue;
		}
		for (size_t j = 0; j < k; j++) {
			wake_send(cfg, WAKE_WAITER, "question", in[j]->id);
			if (in[j]->item <= 0)
				queue_cancel(db, "rag_question", in[j]->id);
		}
	}
}

/* The exact vector top-k of the questions of as[0..n) that take one over
 * every row, in one pass over the codes for all of them
 * (vec_topk_coded_many): given[i] for those, with have[i] set, their hits
 * in *hold (the caller frees it).  A pass alone is bound by reading the
 * codes; shared, each run of them is read once, and the rows are split
 * among the host's CPUs (vec_topk_coded_parts).  Two questions at least:
 * one ranks as it always did. */
static void shared_vector_pass(const struct rindex *ix, const struct asked *as, size_t n,
                               const float *qvecs, struct rank_vector *given, bool *have,
                               struct vec_hit **hold)
{
	size_t rows = rindex_count(ix), dim = rindex_dim(ix), total = 0, m = 0;
	size_t ks[RAG_QUESTION_BATCH], which[RAG_QUESTION_BATCH];
	struct vec_question vq[RAG_QUESTION_BATCH];
	struct vec_hit *h;

	*hold = NULL;
	for (size_t i = 0; i < n; i++) {
		have[i] = false;
		if (!as[i].failed &&
		    rank_wants_vector(&as[i].rp, rows, as[i].text != NULL, &ks[m])) {
			total += ks[m];
			which[m++] = i;
		}
	}
	if (m < 2 || (*hold = h = malloc(total * sizeof *h)) == NULL)
		return;
	for (size_t j = 0; j < m; j++) {
		const float *q = qvecs + which[j] * dim;

		vq[j] = (struct vec_question){ as[which[j]].rp.metric, q, vec_norm(q, dim), NULL,
		                               ks[j], h, 0, 0 };
		h += ks[j];
	}
	vec_topk_coded_parts(VEC_KERNEL_AUTO, vq, m, rindex_vectors(ix), rindex_norms(ix),
	                     rindex_codes(ix), rows, dim, (size_t)sysconf(_SC_NPROCESSORS_ONLN));
	for (size_t j = 0; j < m; j++) {
		given[which[j]] = (struct rank_vector){ vq[j].out, vq[j].got };
		have[which[j]] = true;
	}
}

/* The exact vector top-k of a question a serve worker took, from a pass
 * shared with the other workers' (pass_share.h): true with *given, its
 * hits in *hold (the caller frees it). */
static bool posted_vector_pass(const struct config *cfg, const struct rindex *ix,
                               const struct asked *a, const float *q,
                               struct rank_vector *given, struct vec_hit **hold)
{
	size_t k, got;

	*hold = NULL;
	if (a->failed || !rank_wants_vector(&a->rp, rindex_count(ix), a->text != NULL, &k) ||
	    k > PASS_K_MAX || (*hold = malloc(k * sizeof **hold)) == NULL)
		return false;
	if (!pass_share_rank(cfg, ix, a->rp.metric, q, k, *hold, &got)) {
		free(*hold);
		*hold = NULL;
		return false;
	}
	*given = (struct rank_vector){ *hold, got };
	return true;
}

/* Answer as[0..n): as[0] is the question asked for, the others ride along
 * with the item process by runs; a rider not answered here goes back to its
 * own queue row.  With given, as[0] and its dataset are given, not read:
 * the serve worker that took the POST, which never rebuilds an index file
 * nor calls a network embedder (db is NULL there).  1 as[0] answered, 0 it
 * was not processing any more, -1 on failure with err. */
static int answer_batch(struct db *db, const struct config *cfg, const char *by,
                        struct asked *as, size_t n, const struct batch_of *given,
                        char *err, size_t errlen)
{
	bool in_serve = given != NULL;
	struct batch_of b = { "", "", 0 };
	const struct rindex *ix;
	const char *texts[RAG_QUESTION_BATCH];
	size_t lens[RAG_QUESTION_BATCH], live = 0;
	float *qvecs = NULL;
	struct rank_vector vtopk[RAG_QUESTION_BATCH];
	bool vtopk_have[RAG_QUESTION_BATCH] = { false };
	struct vec_hit *shared = NULL;            /* vtopk's hits */
	long long along[RAG_QUESTION_BATCH];
	size_t nalong = 0;
	double t0, t_pass, t_ranked, t_stored;     /* the clock */
	double rank_ms = 0;                        /* CPU time */
	int rc;

	if (given != NULL)
		b = *given;
	else if ((rc = load_asked(db, as, n, &b, err, errlen)) != 1)
		goto out;
	rc = -1;
	if (in_serve && strcmp(b.embedder, "builtin") != 0) {
		snprintf(err, errlen, "a network embedder is not called from a worker");
		goto out;
	}
	if ((ix = rag_index_get(db, cfg, b.dataset_id, b.dim, !in_serve, err, errlen)) == NULL)
		goto out;
	/* The texts of those still asked, embedded in one call. */
	if ((qvecs = malloc(n * b.dim * sizeof *qvecs)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (!as[i].failed) {
			texts[live] = as[i].text;
			lens[live++] = as[i].len;
		}
	if (rag_embed(cfg, b.embedder, b.dim, texts, lens, live, qvecs, err, errlen) != 0)
		goto out;
	/* Back to each question's own slot (j <= i: from the top down). */
	for (size_t i = n, j = live; i-- > 0;)
		if (!as[i].failed && --j != i)
			memmove(qvecs + i * b.dim, qvecs + j * b.dim, b.dim * sizeof *qvecs);
	t0 = time_mono_ms();
	double c0 = time_cpu_ms();
	if (!in_serve)
		shared_vector_pass(ix, as, n, qvecs, vtopk, vtopk_have, &shared);
	else if (cfg->question_shared_passes)
		vtopk_have[0] = posted_vector_pass(cfg, ix, &as[0], qvecs, &vtopk[0], &shared);
	rank_ms += time_cpu_ms() - c0;
	t_pass = time_mono_ms();
	for (size_t i = 0; i < n; i++)
		if (!as[i].failed)
			as[i].failed = rank_one(cfg, ix, &as[i], qvecs + i * b.dim,
			                        vtopk_have[i] ? &vtopk[i] : NULL, &rank_ms) != 0;
	t_ranked = time_mono_ms();
	if (!in_serve)
		store_answers(db, cfg, as, n);
	t_stored = time_mono_ms();
	/* The riders' queue rows, in one statement: should this child die
	 * first, those still held come due and find their questions answered. */
	for (size_t i = 0; i < n; i++)
		if (!as[i].failed && as[i].item > 0)
			along[nalong++] = as[i].item;
	if (nalong > 0 && by != NULL)
		queue_done_along(db, along, nalong, by);
	/* What a worker's next inline ranking of this dataset may cost: CPU
	 * time, not the wall clock.  On a busy machine a cheap ranking can
	 * wait tens of ms for a core; measured by the clock, that sent the
	 * worker's next questions to sluice work, whose child forks and
	 * checks the whole index file first, which made the machine busier
	 * still (5 % of all CPU samples at 16 clients, and a p99 of 184 ms).
	 * Rankings that shared a pass over the codes (here, or with other
	 * workers) cost less each than a worker's lone one would: they say
	 * nothing of it. */
	if (shared == NULL)
		rag_index_ranked(b.dataset_id, rank_ms / (double)live);
	if (n > 1)
		log_kv(LOG_DEBUG, "questions answered together", "dataset=%s questions=%zu "
		       "shared_pass=%s rank_cpu_ms=%.1f ms=%.1f pass_ms=%.1f results_ms=%.1f "
		       "store_ms=%.1f", b.dataset_id, live, shared != NULL ? "yes" : "no", rank_ms,
		       time_mono_ms() - t0, t_pass - t0, t_ranked - t_pass, t_stored - t_ranked);
	if (as[0].failed)
		snprintf(err, errlen, "%s", as[0].err);
	rc = as[0].failed ? -1 : 1;
out:
	for (size_t i = 0; i < n; i++)
		if ((rc != 1 || as[i].failed) && as[i].item > 0)
			queue_hurry(db, "rag_question", as[i].id);
	free(shared);
	free(qvecs);
	return rc;
}

int rag_question_rank_posted(const struct config *cfg, const struct rag_posted_question *q,
                             char **result, char *err, size_t errlen)
{
	struct batch_of b = { "", "", (size_t)q->dimensions };
	struct asked a;
	int rc;

	*result = NULL;
	memset(&a, 0, sizeof a);
	snprintf(a.id, sizeof a.id, "%s", q->id);
	snprintf(b.dataset_id, sizeof b.dataset_id, "%s", q->dataset_id);
	snprintf(b.embedder, sizeof b.embedder, "%s", q->embedder);
	rc = asked_set(&a, &b, q->text, strlen(q->text), q->params, err, errlen);
	if (rc == 1)
		rc = answer_batch(NULL, cfg, NULL, &a, 1, &b, err, errlen);
	if (rc == 1) {
		*result = a.result;
		a.result = NULL;
	}
	asked_free(&a);
	return rc == 1 ? 0 : -1;
}

/* --- sluice work ------------------------------------------------------------------------ */

struct riders {
	const struct work_item *it;
	struct asked *as;               /* filled from as[first] */
	size_t first, n;
};

/* The queued questions of it's question's dataset and tenant (none once
 * that question is gone), held back for this
 * child (see the head of this file). */
static int take_riders_body(struct db *db, void *arg)
{
	struct riders *r = arg;
	long long items[RAG_QUESTION_BATCH], held;
	struct db_stmt *st;
	int rc = 0;

	r->n = r->first;
	/* ref_id is utf8mb4 text, question ids ASCII (sql/018): compared
	 * as they are, the question would be found by scanning its dataset's
	 * questions; converted, by its primary key. */
	st = db_query(db, "SELECT w.id, w.ref_id FROM work_queue w STRAIGHT_JOIN rag_questions q "
	    "FORCE INDEX (PRIMARY) ON q.id = CONVERT(w.ref_id USING ascii) "
	    "WHERE w.status = 'queued' AND w.kind = 'rag_question' "
	    "AND w.tenant = ? AND w.available_at <= UTC_TIMESTAMP(3) "
	    "AND w.give_up_reason IS NULL AND q.status = 'processing' AND q.dataset_id = "
	    "(SELECT o.dataset_id FROM rag_questions o WHERE o.id = ?) "
	    "AND w.ref_id <> ? ORDER BY w.available_at, w.id LIMIT ? "
	    "FOR UPDATE SKIP LOCKED", "sssi", r->it->tenant != NULL ? r->it->tenant : "",
	    r->it->ref_id, r->it->ref_id, (long long)(RAG_QUESTION_BATCH - r->first));
	if (st == NULL)
		return db_last_err(db);
	while (r->n < RAG_QUESTION_BATCH && (rc = db_fetch(st)) == 1) {
		struct asked *a = &r->as[r->n];

		if (rag_id_parse(db_col_str(st, 1), a->id) != 0)
			continue;
		a->item = db_col_ll(st, 0);
		r->n++;
	}
	db_done(st);
	if (rc < 0)
		return rc;
	for (size_t i = r->first; i < r->n; i++)
		items[i - r->first] = r->as[i].item;
	held = queue_hold(db, items, r->n - r->first, RAG_QUESTION_FALLBACK_S);
	return held < 0 ? (int)held : 0;
}

/* Whether a due question of another dataset or asker than r's waits in
 * the queue (a row whose question is gone counts: it too needs a slot).
 * 1, 0, or -1 on error. */
static int others_wait(struct db *db, const struct riders *r)
{
	struct db_stmt *st;
	int rc;

	st = db_query(db, "SELECT 1 FROM work_queue w LEFT JOIN rag_questions q "
	    "FORCE INDEX (PRIMARY) ON q.id = CONVERT(w.ref_id USING ascii) "
	    "WHERE w.status = 'queued' AND w.kind = 'rag_question' "
	    "AND w.available_at <= UTC_TIMESTAMP(3) AND w.give_up_reason IS NULL "
	    "AND NOT (w.tenant <=> ? AND q.dataset_id <=> "
	    "(SELECT o.dataset_id FROM rag_questions o WHERE o.id = ?)) LIMIT 1",
	    "ss", r->it->tenant != NULL ? r->it->tenant : "", r->it->ref_id);
	if (st == NULL)
		return -1;
	rc = db_fetch(st);
	db_done(st);
	return rc;
}

/* Whether the rounds may go on past until: for RAG_QUESTION_ROUNDS_MS
 * more, up to RAG_QUESTION_ROUNDS_MAX_MS in all, while no other
 * dataset's question waits for the slot this child holds.  A new child
 * checks the whole index file first (about 100 ms of CPU for 100k
 * snippets), and the bench's 16 clients of one dataset paid that a
 * tenth of their throughput with rounds of 1 s. */
static bool rounds_extend(struct work_ctx *w, const struct riders *r, double start,
                          double *until)
{
	if (*until - start >= RAG_QUESTION_ROUNDS_MAX_MS || others_wait(w->db, r) != 0)
		return false;
	*until += RAG_QUESTION_ROUNDS_MS;
	return true;
}

/* Answer the riders r takes, batch after batch, for at most
 * RAG_QUESTION_ROUNDS_MS (or longer, see rounds_extend), while they keep
 * coming (none for RAG_QUESTION_LINGER_MS ends it): the index is open,
 * the connection made, and a client that got its answer is often about
 * to ask the next. */
static void more_rounds(struct work_ctx *w, struct riders *r)
{
	double linger = TEST_HOOK_OR(w->cfg, rag_test_linger_ms, RAG_QUESTION_LINGER_MS);
	long poll = TEST_HOOK_OR(w->cfg, rag_test_nudge_poll_ms, RAG_QUESTION_NUDGE_POLL_MS);
	double start = time_mono_ms(), now, until = start + RAG_QUESTION_ROUNDS_MS;
	double idle_until = start + linger;
	char err[256];

	r->first = 0;
	for (bool nudged = false; !work_stopping(w) &&
	     ((now = time_mono_ms()) < until || rounds_extend(w, r, start, &until)) &&
	     (now < idle_until || nudged);) {
		memset(r->as, 0, RAG_QUESTION_BATCH * sizeof *r->as);
		if (db_tx(w->db, "question riders", take_riders_body, r) < 0)
			break;
		/* None: wait for a question queued on this host (its POST's
		 * wake nudges us), or for the poll's time (one queued on
		 * another host).  Past the linger a nudge buys one look, not
		 * more lingering: it may be for another dataset's question,
		 * whose claim needs this slot. */
		if (r->n == 0) {
			if (nudged && time_mono_ms() >= idle_until)
				break;
			nudged = work_wait_nudge(w, poll);
			continue;
		}
		nudged = false;
		answer_batch(w->db, w->cfg, w->process_id, r->as, r->n, NULL, err, sizeof err);
		for (size_t i = 0; i < r->n; i++)
			asked_free(&r->as[i]);
		idle_until = time_mono_ms() + linger;
	}
}

int rag_question_work(struct work_ctx *w, const struct work_item *it,
                      char *err, size_t errlen)
{
	struct asked as[RAG_QUESTION_BATCH];
	struct riders r = { it, as, 1, 1 };
	/* Riders only on a first attempt: a question that failed before is
	 * tried alone. */
	bool along = it->attempts <= 1;
	int rc;

	memset(as, 0, sizeof as);
	if (rag_id_parse(it->ref_id, as[0].id) != 0) {
		snprintf(err, errlen, "bad question id");
		return -1;
	}
	if (along && db_tx(w->db, "question riders", take_riders_body, &r) < 0)
		r.n = 1;
	TEST_HOOK_PAUSE(w->cfg, rag_test_batch_delay_ms);
	rc = answer_batch(w->db, w->cfg, w->process_id, as, r.n, NULL, err, errlen);
	for (size_t i = 0; i < r.n; i++)
		asked_free(&as[i]);
	if (rc >= 0 && along)
		more_rounds(w, &r);
	if (rc >= 0)
		return 0;
	if (it->attempts >= it->max_attempts)
		rag_question_give_up(w, it, err);
	return -1;
}

int rag_question_give_up(struct work_ctx *w, const struct work_item *it,
                         const char *reason)
{
	long long n = db_exec(w->db, "UPDATE rag_questions SET status = 'failed', error = ?, "
	                      "finished_at = UTC_TIMESTAMP(3) WHERE id = ? AND "
	                      "status = 'processing'", "ss", reason, it->ref_id);

	if (n > 0)
		wake_send(w->cfg, WAKE_WAITER, "question", it->ref_id);
	return n < 0 ? -1 : 0;
}
