/* test_rank.c - the ranking pipeline on a tiny corpus. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>

#include "suites.h"
#include "retrieval/embed.h"
#include "retrieval/filter.h"
#include "retrieval/rank.h"
#include "retrieval/vec_codes.h"

#define DIM 64
#define N 8

static const char *const texts[N] = {
	"Cats purr when they are content and sleep most of the day.",
	"A cat chases mice; cats are agile hunters.",
	"Dogs bark at strangers and love long walks.",
	"The dog fetched the stick from the river.",
	"Vector search ranks snippets by distance to the question.",
	"BM25 ranks documents by the words they share with the query.",
	"Le chat dort sur le canape toute la journee.",
	"Zymurgy is the chemistry of fermentation in brewing.",
};
static const char *const meta[N] = {
	"{\"lang\":\"en\",\"topic\":\"cats\"}", "{\"lang\":\"en\",\"topic\":\"cats\"}",
	"{\"lang\":\"en\",\"topic\":\"dogs\"}", "{\"lang\":\"en\",\"topic\":\"dogs\"}",
	"{\"lang\":\"en\",\"topic\":\"search\"}", "{\"lang\":\"en\",\"topic\":\"search\"}",
	"{\"lang\":\"fr\",\"topic\":\"cats\"}", "{\"lang\":\"en\"}",
};
static const char *const ids[N] = { "c0", "c1", "d0", "d1", "s0", "s1", "f0", "z0" };

static char dir[64], path[128];
static struct rindex *ix;

static int open_corpus(void)
{
	float vecs[N * DIM];
	char err[256];

	strcpy(dir, "/tmp/sluice-rank-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(path, sizeof path, "%s/r.idx", dir);
	for (int i = 0; i < N; i++)
		if (embed_builtin(texts[i], strlen(texts[i]), vecs + i * DIM, DIM) != 0)
			return -1;
	if (rindex_write(path, N, DIM, vecs, ids, meta, texts, NULL, err, sizeof err) != 0)
		return -1;
	ix = rindex_open(path, err, sizeof err);
	return ix != NULL ? 0 : -1;
}

static void close_corpus(void)
{
	rindex_close(ix);
	unlink(path);
	rmdir(dir);
}

static size_t ask(const char *q, const struct rank_params *p, struct vec_hit *out, size_t max)
{
	float qv[DIM];
	CU_ASSERT_EQUAL(embed_builtin(q, strlen(q), qv, DIM), 0);
	return rank_question(ix, qv, q, strlen(q), p, out, max);
}

static void test_pipeline(void)
{
	struct rank_params p;
	struct vec_hit h[N];
	size_t n;

	CU_ASSERT_FATAL(open_corpus() == 0);
	rank_params_default(&p);
	CU_ASSERT_EQUAL(p.metric, VEC_COS);
	CU_ASSERT_EQUAL(p.k, 20);
	CU_ASSERT_EQUAL(p.fetch_k, 10);
	CU_ASSERT_EQUAL(p.top_n, 3);
	CU_ASSERT_TRUE(p.mmr && p.hybrid);

	/* top_n results for every metric and switch; with hybrid and mmr off
	 * best first is the metric's own order (the others keep the fused or
	 * the pick order, test_ranking_order). */
	for (int m = 0; m < VEC_METRIC_COUNT; m++)
		for (int sw = 0; sw < 4; sw++) {
			p.metric = (enum vec_metric)m;
			p.mmr = sw & 1;
			p.hybrid = sw & 2;
			n = ask("which cat is a hunter?", &p, h, N);
			CU_ASSERT_EQUAL(n, 3);
			for (size_t i = 1; i < n && sw == 0; i++)
				CU_ASSERT_FALSE(vec_better(p.metric, h[i].score, h[i - 1].score));
			/* The metric's own value. */
			for (size_t i = 0; i < n; i++) {
				float qv[DIM];
				embed_builtin("which cat is a hunter?", 22, qv, DIM);
				float s = vec_score(p.metric, qv, vec_norm(qv, DIM),
				                    rindex_vectors(ix) + h[i].row * DIM,
				                    rindex_norms(ix)[h[i].row], DIM);
				CU_ASSERT_DOUBLE_EQUAL(h[i].score, s, 1e-6);
			}
			/* The snippet about a hunting cat is among them. */
			bool found = false;
			for (size_t i = 0; i < n; i++)
				found = found || h[i].row == 1;
			CU_ASSERT_TRUE(found);
		}
	rank_params_default(&p);
	p.top_n = 5;
	CU_ASSERT_EQUAL(ask("cats", &p, h, N), 5);
	CU_ASSERT_EQUAL(ask("cats", &p, h, 2), 2);                 /* max */
	p.k = 2;
	CU_ASSERT_EQUAL(ask("cats", &p, h, N), 2);                 /* pool of k */
	close_corpus();
}

static void test_filter_and_threshold(void)
{
	struct rank_params p;
	struct vec_hit h[N];
	char err[128];

	CU_ASSERT_FATAL(open_corpus() == 0);
	rank_params_default(&p);
	struct json_object *spec = json_tokener_parse("{\"topic\": \"cats\", \"lang\": \"fr\"}");
	struct meta_filter *f = meta_filter_parse(spec, err, sizeof err);
	p.filter = f;
	CU_ASSERT_EQUAL(ask("cat", &p, h, N), 1);
	CU_ASSERT_EQUAL(h[0].row, 6);
	meta_filter_free(f);
	json_object_put(spec);
	/* A filter that excludes everything: an empty answer, not an error. */
	spec = json_tokener_parse("{\"lang\": {\"$in\": [\"de\"]}}");
	f = meta_filter_parse(spec, err, sizeof err);
	p.filter = f;
	CU_ASSERT_EQUAL(ask("cat", &p, h, N), 0);
	meta_filter_free(f);
	json_object_put(spec);
	p.filter = NULL;

	/* The threshold cuts in the metric's direction. */
	p.mmr = false;
	p.hybrid = false;
	p.top_n = N;
	p.k = N;
	size_t all = ask("dog walks", &p, h, N);
	CU_ASSERT_EQUAL(all, N);
	float mid = h[2].score;
	p.has_threshold = true;
	p.score_threshold = mid;
	CU_ASSERT_EQUAL(ask("dog walks", &p, h, N), 3);            /* cos >= mid */
	p.metric = VEC_L2;
	p.has_threshold = false;
	ask("dog walks", &p, h, N);
	p.has_threshold = true;
	p.score_threshold = h[1].score;
	CU_ASSERT_EQUAL(ask("dog walks", &p, h, N), 2);            /* L2 <= thr */
	p.score_threshold = -1;
	CU_ASSERT_EQUAL(ask("dog walks", &p, h, N), 0);
	close_corpus();
}

/* A word the embedder spreads thin but BM25 weighs by rarity: hybrid
 * ranking puts the one snippet with it first. */
static void test_hybrid(void)
{
	struct rank_params p;
	struct vec_hit h[N];

	CU_ASSERT_FATAL(open_corpus() == 0);
	rank_params_default(&p);
	p.mmr = false;
	p.top_n = 1;
	CU_ASSERT_EQUAL(ask("zymurgy", &p, h, N), 1);
	CU_ASSERT_EQUAL(h[0].row, 7);
	close_corpus();
}

/* The answer keeps the ranking's order: with hybrid the fused order (the
 * rare word's snippet first even among three), with mmr the pick order
 * (whose first pick is the fused best), for every metric. */
static void test_ranking_order(void)
{
	struct rank_params p;
	struct vec_hit plain[N], picked[N];

	CU_ASSERT_FATAL(open_corpus() == 0);
	for (int m = 0; m < VEC_METRIC_COUNT; m++) {
		rank_params_default(&p);
		p.metric = (enum vec_metric)m;
		p.mmr = false;
		CU_ASSERT_EQUAL(ask("zymurgy brewing", &p, plain, N), 3);
		CU_ASSERT_EQUAL(plain[0].row, 7);
		p.mmr = true;
		CU_ASSERT_EQUAL(ask("zymurgy brewing", &p, picked, N), 3);
		CU_ASSERT_EQUAL(picked[0].row, plain[0].row);
		/* lambda 1: MMR is pure relevance, the fused order itself. */
		p.lambda_mult = 1.0;
		CU_ASSERT_EQUAL(ask("zymurgy brewing", &p, picked, N), 3);
		for (int i = 0; i < 3; i++)
			CU_ASSERT_EQUAL(picked[i].row, plain[i].row);
	}
	/* BM25 puts s0 ("search ... the question") ahead of s1, which the
	 * cosine alone prefers: the answer keeps the lexical order, scores and
	 * all, where re-sorting by the metric would swap them (the phrase and
	 * vector terms, which prefer s1 too, off). */
	rank_params_default(&p);
	p.w.prox = 0;
	p.w.vec = 0;
	p.mmr = false;
	CU_ASSERT_EQUAL(ask("search the query", &p, plain, N), 3);
	CU_ASSERT_EQUAL(plain[0].row, 4);
	CU_ASSERT_EQUAL(plain[1].row, 5);
	CU_ASSERT_TRUE(plain[0].score < plain[1].score);

	/* The built-in embedder's weights: BM25's one match first, then the
	 * rest of the pool (the vector scan fills it) by the metric. */
	rank_params_embedder(&p, true);
	CU_ASSERT_FALSE(p.vec_search);
	CU_ASSERT_DOUBLE_EQUAL(p.w.vec, RANK_VEC_WEIGHT_BUILTIN, 1e-12);
	p.top_n = N;
	p.k = N;
	size_t nh = ask("zymurgy", &p, plain, N);
	CU_ASSERT_EQUAL(nh, N);
	CU_ASSERT_EQUAL(plain[0].row, 7);          /* the only BM25 match */
	for (size_t i = 2; i < nh; i++)           /* then by cosine */
		CU_ASSERT_FALSE(vec_better(VEC_COS, plain[i].score, plain[i - 1].score));
	close_corpus();
}

/* Four documents of two snippets each (rows 0-1, 2-3, 4-5, 6-7). */
static const char *const dtexts[8] = {
	"The ferry leaves the harbour at dawn.",
	"Tickets for the island are sold at dawn.",
	"The harbour master keeps a log of every ship.",
	"Ships leave when the tide allows.",
	"An old bakery sells fresh bread.",
	"Ferry tickets for the island, sold at dawn.",
	"Lighthouses guide ships along the coast.",
	"The keeper trims the lamp each night.",
};
static const char *const ddocs[8] = { "a", "a", "b", "b", "c", "c", "d", "d" };
static const char *const dids[8] = { "a0", "a1", "b0", "b1", "c0", "c1", "d0", "d1" };

static int open_docs(void)
{
	float vecs[8 * DIM];
	char err[256];

	strcpy(dir, "/tmp/sluice-rank-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(path, sizeof path, "%s/d.idx", dir);
	for (int i = 0; i < 8; i++)
		if (embed_builtin(dtexts[i], strlen(dtexts[i]), vecs + i * DIM, DIM) != 0)
			return -1;
	if (rindex_write(path, 8, DIM, vecs, dids, NULL, dtexts, ddocs, err, sizeof err) != 0)
		return -1;
	ix = rindex_open(path, err, sizeof err);
	return ix != NULL ? 0 : -1;
}

/* "ferry harbour dawn island tickets": document a has every word, split
 * over its two snippets, and says most of it first; c has four of them,
 * all in its second snippet.  Snippet BM25 alone ranks c's snippet
 * first; with the document and first-snippet terms, a's lead.  With the
 * repeat factor, a's second snippet counts half and falls behind c's. */
static void test_documents(void)
{
	const char *q = "ferry harbour dawn island tickets";
	struct rank_params p;
	struct vec_hit h[8];

	CU_ASSERT_FATAL(open_docs() == 0);
	CU_ASSERT_EQUAL(rindex_doc_count(ix), 4);
	rank_params_default(&p);
	rank_params_embedder(&p, true);
	p.mmr = false;
	p.top_n = 8;
	p.w = (struct rank_weights){ 0, 0, 0, 0, 1 };     /* the snippet's BM25 alone */
	CU_ASSERT_EQUAL_FATAL(ask(q, &p, h, 8), 8);
	CU_ASSERT_EQUAL(h[0].row, 5);
	p.w = (struct rank_weights){ RANK_WEIGHT_DOC, RANK_WEIGHT_HEAD, 0, 0, 1 };
	CU_ASSERT_EQUAL_FATAL(ask(q, &p, h, 8), 8);
	CU_ASSERT_EQUAL(h[0].row, 0);
	CU_ASSERT_EQUAL(h[1].row, 1);                    /* repeat off: a's two first */
	p.w.repeat = RANK_WEIGHT_REPEAT;
	CU_ASSERT_EQUAL_FATAL(ask(q, &p, h, 8), 8);
	CU_ASSERT_EQUAL(h[0].row, 0);
	CU_ASSERT_EQUAL(h[1].row, 5);                    /* c's first */
	CU_ASSERT_EQUAL(h[2].row, 1);                    /* then a's second, by a lead */
	/* The defaults (MMR on) agree: document a first, then c. */
	rank_params_default(&p);
	rank_params_embedder(&p, true);
	CU_ASSERT_EQUAL_FATAL(ask(q, &p, h, 8), 3);
	CU_ASSERT_EQUAL(h[0].row, 0);
	CU_ASSERT_EQUAL(h[1].row, 5);
	close_corpus();
}

/* With equal lexical evidence, the vector term orders the snippets: its
 * weight is not 0, so the metric a caller picks decides between them. */
static void test_vector_counts(void)
{
	struct rank_params p;
	struct vec_hit h[N];
	float qv[DIM];
	const char *q = "dog";

	CU_ASSERT_FATAL(open_corpus() == 0);
	embed_builtin(q, strlen(q), qv, DIM);
	for (int m = 0; m < VEC_METRIC_COUNT; m++) {
		rank_params_default(&p);
		rank_params_embedder(&p, true);
		p.metric = (enum vec_metric)m;
		p.mmr = false;
		p.w = (struct rank_weights){ 0, 0, 0, RANK_VEC_WEIGHT_BUILTIN, 1 };
		/* d0 and d1 each have "dog" once in 7 and 6 words: BM25 tells
		 * them apart by length; the vector term must be able to swap
		 * them, so compare against the snippet BM25 alone. */
		CU_ASSERT_EQUAL_FATAL(ask(q, &p, h, N), 3);
		float s2 = vec_score(p.metric, qv, vec_norm(qv, DIM), rindex_vectors(ix) + 2 * DIM,
		                     rindex_norms(ix)[2], DIM);
		float s3 = vec_score(p.metric, qv, vec_norm(qv, DIM), rindex_vectors(ix) + 3 * DIM,
		                     rindex_norms(ix)[3], DIM);
		bool two_first = h[0].row == 2;
		CU_ASSERT_TRUE(h[0].row == 2 || h[0].row == 3);
		p.w.vec = 100.0;                     /* the metric alone decides */
		CU_ASSERT_EQUAL_FATAL(ask(q, &p, h, N), 3);
		CU_ASSERT_EQUAL(h[0].row, vec_better(p.metric, s2, s3) ? 2 : 3);
		(void)two_first;
	}
	close_corpus();
}

/* Questions ranked together take their exact vector top-k from one
 * shared pass (vec_topk_coded_many): rank_wants_vector names those whose
 * ranking surely takes it over every row, and their answers given it are
 * the answers each gets alone, hit for hit. */
static void test_given_vector(void)
{
	static const char *const qs[] = { "cat", "dog walks", "ranks the query", "zymurgy" };
	enum { NQ = sizeof qs / sizeof *qs, NP = 3 };
	struct rank_params ps[NP], p;
	struct vec_question vq[NQ * NP];
	struct vec_hit topk[NQ * NP][N], alone[N], given[N];
	float qv[NQ][DIM];
	size_t k = 0;
	char err[128];

	CU_ASSERT_FATAL(open_corpus() == 0);
	rank_params_default(&p);
	rank_params_embedder(&p, true);
	CU_ASSERT_FALSE(rank_wants_vector(&p, N, true, &k));    /* only when too few */
	CU_ASSERT_TRUE(rank_wants_vector(&p, N, false, &k));    /* no text: no hybrid */
	CU_ASSERT_EQUAL(k, N);                                    /* at most the rows */
	CU_ASSERT_FALSE(rank_wants_vector(&p, 0, false, &k));
	struct json_object *spec = json_tokener_parse("{\"lang\": \"en\"}");
	p.filter = meta_filter_parse(spec, err, sizeof err);
	p.hybrid = false;
	CU_ASSERT_FALSE(rank_wants_vector(&p, N, true, &k));    /* a filter's own rows */
	meta_filter_free((struct meta_filter *)p.filter);
	json_object_put(spec);

	/* A learned embedder's hybrid ranking, the exact path with MMR and
	 * dot, and L1 with a pool smaller than the rows. */
	for (int i = 0; i < NP; i++) {
		rank_params_default(&ps[i]);
		rank_params_embedder(&ps[i], false);
	}
	ps[1].hybrid = false;
	ps[1].metric = VEC_DOT;
	ps[1].top_n = 5;
	ps[2].hybrid = false;
	ps[2].mmr = false;
	ps[2].metric = VEC_L1;
	ps[2].k = 3;
	for (size_t i = 0; i < NQ * NP; i++) {
		size_t qi = i / NP;
		const struct rank_params *pi = &ps[i % NP];

		CU_ASSERT_EQUAL(embed_builtin(qs[qi], strlen(qs[qi]), qv[qi], DIM), 0);
		CU_ASSERT_FATAL(rank_wants_vector(pi, N, true, &k));
		CU_ASSERT_EQUAL(k, pi->k < N ? pi->k : N);
		vq[i] = (struct vec_question){ pi->metric, qv[qi], vec_norm(qv[qi], DIM), NULL, k,
		                               topk[i], 0, 0 };
	}
	vec_topk_coded_many(VEC_KERNEL_AUTO, vq, NQ * NP, rindex_vectors(ix), rindex_norms(ix),
	                    rindex_codes(ix), N, DIM);
	for (size_t i = 0; i < NQ * NP; i++) {
		size_t qi = i / NP, len = strlen(qs[qi]);
		const struct rank_params *pi = &ps[i % NP];
		struct rank_vector rv = { vq[i].out, vq[i].got };
		size_t a = rank_question(ix, qv[qi], qs[qi], len, pi, alone, N);
		size_t b = rank_question_given(ix, qv[qi], qs[qi], len, pi, &rv, given, N);

		CU_ASSERT(a > 0);
		CU_ASSERT_EQUAL(b, a);
		CU_ASSERT(memcmp(alone, given, a * sizeof *alone) == 0);
	}
	/* What is given is what is used: none given, none found. */
	struct rank_vector none = { NULL, 0 };
	CU_ASSERT_EQUAL(rank_question_given(ix, qv[0], qs[0], 3, &ps[1], &none, given, N), 0);
	close_corpus();
}

int suite_rank(void)
{
	static const struct test_case tests[] = {
		{ "pipeline: top_n, order and scores per metric", test_pipeline },
		{ "metadata filter and score_threshold", test_filter_and_threshold },
		{ "hybrid finds the rare word", test_hybrid },
		{ "the answer keeps the ranking's order", test_ranking_order },
		{ "documents: the whole text and one snippet each first", test_documents },
		{ "the vector term orders equal lexical evidence", test_vector_counts },
		{ "a vector top-k given from a shared pass: the same answers", test_given_vector },
		{ NULL, NULL },
	};
	return suite_add("rank", tests);
}
