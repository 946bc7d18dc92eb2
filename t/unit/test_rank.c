/* test_rank.c - the ranking pipeline on a tiny corpus. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>

#include "suites.h"
#include "retrieval/embed.h"
#include "retrieval/rank.h"

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
	if (rindex_write(path, N, DIM, vecs, ids, meta, texts, err, sizeof err) != 0)
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
	 * cosine alone prefers: the answer keeps the fused order, scores and
	 * all, where re-sorting by the metric would swap them. */
	rank_params_default(&p);
	p.mmr = false;
	CU_ASSERT_EQUAL(ask("search the query", &p, plain, N), 3);
	CU_ASSERT_EQUAL(plain[0].row, 4);
	CU_ASSERT_EQUAL(plain[1].row, 5);
	CU_ASSERT_TRUE(plain[0].score < plain[1].score);

	/* vec_weight 0 (the built-in embedder): BM25's order first, then the
	 * rest of the vector pool by the metric. */
	p.vec_weight = RANK_VEC_WEIGHT_BUILTIN;
	p.top_n = N;
	p.k = N;
	size_t nh = ask("zymurgy", &p, plain, N);
	CU_ASSERT_EQUAL(nh, N);
	CU_ASSERT_EQUAL(plain[0].row, 7);          /* the only BM25 match */
	for (size_t i = 2; i < nh; i++)           /* then by cosine */
		CU_ASSERT_FALSE(vec_better(VEC_COS, plain[i].score, plain[i - 1].score));

	/* When BM25 fills the pool the scan is skipped: the same answer, rows
	 * and scores, as a weight too small to reorder anything that scans. */
	for (int m = 0; m < VEC_METRIC_COUNT; m++) {
		struct vec_hit scanned[N];
		size_t a, c;

		rank_params_default(&p);
		p.metric = (enum vec_metric)m;
		p.k = 2;
		p.top_n = 2;
		p.vec_weight = RANK_VEC_WEIGHT_BUILTIN;
		a = ask("cats cat dogs dog", &p, plain, N);
		p.vec_weight = 1e-12;
		c = ask("cats cat dogs dog", &p, scanned, N);
		CU_ASSERT_EQUAL(a, 2);
		CU_ASSERT_EQUAL(a, c);
		for (size_t i = 0; i < a && i < c; i++) {
			CU_ASSERT_EQUAL(plain[i].row, scanned[i].row);
			CU_ASSERT_DOUBLE_EQUAL(plain[i].score, scanned[i].score, 1e-6);
		}
	}
	close_corpus();
}

int suite_rank(void)
{
	static const struct test_case tests[] = {
		{ "pipeline: top_n, order and scores per metric", test_pipeline },
		{ "metadata filter and score_threshold", test_filter_and_threshold },
		{ "hybrid finds the rare word", test_hybrid },
		{ "the answer keeps the ranking's order", test_ranking_order },
		{ NULL, NULL },
	};
	return suite_add("rank", tests);
}
