/* test_lexical.c - the hybrid ranking's lexical candidates: the stored
 * BM25 impacts against the formula, and lex_best against a plain sum over
 * every snippet, with common words left out of the passes or not. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "suites.h"
#include "retrieval/bm25.h"
#include "retrieval/lexical.h"
#include "retrieval/tokenize.h"

#define DIM 4
#define NFILL 24                     /* one-snippet documents that all say "the" */
#define N (6 + NFILL)

static const char *const heads[6] = {
	"convert a string to an integer",          /* doc A: rows 0, 1 */
	"the integer may overflow the range",
	"the cat sat on the mat",                  /* doc B: row 2 */
	"parse the command line",                  /* doc C: rows 3, 4, 5 */
	"the options of the program",
	"the string is copied",
};
static char *texts[N], *doc_ids[N];
static char dir[64], path[128];
static struct rindex *ix;

static void test_open(void)
{
	float vecs[N * DIM];
	char err[256];

	for (size_t i = 0; i < N; i++) {
		CU_ASSERT_FATAL(i < 6 ? (texts[i] = strdup(heads[i])) != NULL
		                      : asprintf(&texts[i], "the word%zu", i) > 0);
		CU_ASSERT_FATAL(asprintf(&doc_ids[i], "%s", i < 2 ? "A" : i < 3 ? "B" : i < 6 ? "C"
		                                            : texts[i]) > 0);
		for (size_t d = 0; d < DIM; d++)
			vecs[i * DIM + d] = (float)(i + d + 1);
	}
	strcpy(dir, "/tmp/sluice-lexical-XXXXXX");
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(path, sizeof path, "%s/l.idx", dir);
	CU_ASSERT_EQUAL_FATAL(rindex_write(path, N, DIM, vecs, (const char *const *)texts, NULL,
	                                   (const char *const *)texts,
	                                   (const char *const *)doc_ids, err, sizeof err), 0);
	CU_ASSERT_FATAL((ix = rindex_open(path, err, sizeof err)) != NULL);
	CU_ASSERT_EQUAL(rindex_doc_count(ix), 3 + NFILL);
}

static size_t words_of(const char *s)
{
	struct tok_words tw;
	tok_words(&tw, s, strlen(s));
	return tw.n;
}

/* The impact the index stores is BM25's term weight before idf. */
static void test_impact(void)
{
	const struct bm25 *b = rindex_bm25(ix);
	double total = 0;
	long t = bm25_term_id(b, "overflow", 8), the = bm25_term_id(b, "the", 3);

	for (size_t i = 0; i < N; i++)
		total += (double)words_of(texts[i]);
	double avgdl = total / N, dl = (double)words_of(texts[1]);
	double want = 1 * (BM25_K1 + 1) / (1 + BM25_K1 * (1 - BM25_B + BM25_B * dl / avgdl));
	CU_ASSERT_FATAL(t >= 0 && the >= 0);
	CU_ASSERT_DOUBLE_EQUAL(bm25_impact(b, (uint32_t)t, 1), want, 1e-6);
	CU_ASSERT_DOUBLE_EQUAL(bm25_impact(b, (uint32_t)t, 0), 0.0, 0);     /* absent */
	CU_ASSERT_DOUBLE_EQUAL(bm25_idf(b, (uint32_t)t), log(1 + (N - 1 + 0.5) / 1.5), 1e-6);
	/* tf 2 in a row of 6 words ("the ... the range") */
	want = 2 * (BM25_K1 + 1) / (2 + BM25_K1 * (1 - BM25_B + BM25_B * dl / avgdl));
	CU_ASSERT_DOUBLE_EQUAL(bm25_impact(b, (uint32_t)the, 1), want, 1e-6);
	CU_ASSERT_DOUBLE_EQUAL(bm25_impact(b, (uint32_t)the, N - 1) > 0, 1, 0);
}

/* lex of every row the plain way: both indexes scored in full. */
static void reference(const char *q, double wd, double wh, const uint8_t *keep, double *lex)
{
	struct bm25_scores r, d;
	uint8_t kd[N];

	memset(kd, 0, sizeof kd);
	for (size_t i = 0; keep != NULL && i < N; i++)
		kd[rindex_row_doc(ix, i)] |= keep[i];
	CU_ASSERT_FATAL(bm25_score(rindex_bm25(ix), q, strlen(q), keep, &r) == 0);
	CU_ASSERT_FATAL(bm25_score(rindex_bm25_docs(ix), q, strlen(q), keep ? kd : NULL, &d) == 0);
	for (size_t i = 0; i < N; i++) {
		uint32_t doc = rindex_row_doc(ix, i);
		lex[i] = r.score[i] == 0.0f ? -1.0
		       : (r.score[i] + wh * r.score[rindex_doc_first_row(ix, doc)]) / r.perfect +
		         (d.perfect > 0 ? wd * d.score[doc] / d.perfect : 0.0);
	}
	bm25_scores_free(&r);
	bm25_scores_free(&d);
}

static void check(const char *q, double wd, double wh, size_t max, const uint8_t *keep)
{
	struct tok_words tw;
	struct lex_question lq;
	struct vec_hit h[N];
	double lex[N];
	size_t want = 0;

	reference(q, wd, wh, keep, lex);
	tok_words(&tw, q, strlen(q));
	lex_question_init(&lq, ix, &tw, wd, wh);
	long n = lex_best(ix, &lq, keep, h, max);
	for (size_t i = 0; i < N; i++)
		want += lex[i] >= 0;
	CU_ASSERT_EQUAL_FATAL(n, (long)(want < max ? want : max));
	for (long i = 0; i < n; i++) {
		/* each the best left, ties by row */
		for (size_t r = 0; r < N; r++)
			CU_ASSERT(lex[r] < lex[h[i].row] + 1e-6 || (lex[r] <= lex[h[i].row] + 1e-6 && r >= h[i].row));
		CU_ASSERT_DOUBLE_EQUAL(h[i].score, lex[h[i].row], 1e-5);
		CU_ASSERT_DOUBLE_EQUAL(lex_row(ix, &lq, h[i].row), lex[h[i].row], 1e-5);
		lex[h[i].row] = -1.0;
	}
}

static void test_best(void)
{
	static const struct { const char *q; double wd, wh; } cases[] = {
		{ "overflow", 0.8, 0.8 },
		{ "convert the string", 0.8, 0.8 },
		{ "the integer range", 0.8, 0.8 },     /* "the": common, left out at max 1 */
		{ "the string", 0.8, 0.0 },
		{ "the", 0.8, 0.8 },                   /* nothing rarer: "the" is passed */
		{ "the command string program", 0.0, 0.8 },
		{ "String! strings, stringing", 0.5, 0.25 },
		{ "zebra", 0.8, 0.8 },                 /* no row */
		{ "", 0.8, 0.8 },
	};
	uint8_t keep[N] = { [3] = 1, [4] = 1, [5] = 1, [7] = 1 };

	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
		for (size_t max = 1; max <= 7; max += 2) {
			check(cases[c].q, cases[c].wd, cases[c].wh, max, NULL);
			check(cases[c].q, cases[c].wd, cases[c].wh, max, keep);
		}
	/* A value worked by hand: "overflow" is only in row 1, once, and in
	 * its document A; the first row (0) lacks it, so lex = impact(row) /
	 * (k1 + 1) + 0.8 * impact(doc) / (k1 + 1). */
	struct tok_words tw;
	struct lex_question lq;
	struct vec_hit h[1];
	const struct bm25 *d = rindex_bm25_docs(ix);
	long t = bm25_term_id(d, "overflow", 8);
	tok_words(&tw, "overflow", 8);
	lex_question_init(&lq, ix, &tw, 0.8, 0.8);
	CU_ASSERT_EQUAL_FATAL(lex_best(ix, &lq, NULL, h, 1), 1);
	CU_ASSERT_EQUAL(h[0].row, 1);
	CU_ASSERT_DOUBLE_EQUAL(h[0].score,
		(bm25_impact(rindex_bm25(ix), (uint32_t)bm25_term_id(rindex_bm25(ix), "overflow", 8), 1) +
		 0.8 * bm25_impact(d, (uint32_t)t, 0)) / (BM25_K1 + 1), 1e-6);
}

static void test_words(void)
{
	struct tok_words tw;
	char many[TOK_WORDS_MAX * 3 + 8];

	tok_words(&tw, "Running dogs, RUNNING!", 22);
	CU_ASSERT_EQUAL_FATAL(tw.n, 3);
	CU_ASSERT(tw.len[0] == 3 && memcmp(tw.w[0], "run", 3) == 0);
	CU_ASSERT(tw.len[1] == 3 && memcmp(tw.w[1], "dog", 3) == 0);
	CU_ASSERT(tw.len[2] == 3 && memcmp(tw.w[2], "run", 3) == 0);
	for (size_t i = 0; i < TOK_WORDS_MAX + 2; i++)
		memcpy(many + 3 * i, "ab ", 3);
	tok_words(&tw, many, 3 * (TOK_WORDS_MAX + 2));
	CU_ASSERT_EQUAL(tw.n, TOK_WORDS_MAX);
	tok_words(&tw, "", 0);
	CU_ASSERT_EQUAL(tw.n, 0);
}

static void test_close(void)
{
	rindex_close(ix);
	unlink(path);
	rmdir(dir);
	for (size_t i = 0; i < N; i++) {
		free(texts[i]);
		free(doc_ids[i]);
	}
}

int suite_lexical(void)
{
	static const struct test_case tests[] = {
		{ "an index of three documents and fillers", test_open },
		{ "stored impacts and idf against BM25's formula", test_impact },
		{ "best candidates against every row scored in full", test_best },
		{ "the question's words, stemmed, at most TOK_WORDS_MAX", test_words },
		{ "close", test_close },
		{ NULL, NULL },
	};
	return suite_add("lexical", tests);
}
