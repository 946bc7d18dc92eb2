/* test_bm25.c - BM25 against a worked example, the keep mask, and the
 * serialised form. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libstemmer.h>

#include "suites.h"
#include "retrieval/bm25.h"
#include "retrieval/tokenize.h"

/* d0 "the cat sat" (3 tokens), d1 "the dog sat down" (4), d2 "cat cat cat"
 * (3): N = 3, avgdl = 10/3.  k1 = 1.2, b = 0.75.
 *   K(dl=3) = 1.2 * (0.25 + 0.75 * 3 / (10/3)) = 1.11
 *   K(dl=4) = 1.2 * (0.25 + 0.75 * 4 / (10/3)) = 1.38
 * "cat": df 2, idf = ln(1 + 1.5/2.5) = ln 1.6 = 0.4700036
 *   d2: 0.4700036 * 3 * 2.2 / (3 + 1.11) = 0.7547502
 *   d0: 0.4700036 * 1 * 2.2 / (1 + 1.11) = 0.4900512
 * "dog sat": idf(dog) = ln(1 + 2.5/1.5) = 0.9808293, idf(sat) = 0.4700036
 *   d1: (0.9808293 + 0.4700036) * 2.2 / (1 + 1.38) = 1.3411060
 *   d0: 0.4900512 (sat only) */
static const char *const docs[] = { "the cat sat", "the dog sat down", "cat cat cat" };

static struct bm25 *build(void)
{
	size_t lens[3];
	for (int i = 0; i < 3; i++)
		lens[i] = strlen(docs[i]);
	return bm25_build(docs, lens, 3, true);
}

static void check_example(const struct bm25 *b)
{
	struct vec_hit h[3];

	CU_ASSERT_EQUAL(bm25_count(b), 3);
	CU_ASSERT_EQUAL_FATAL(bm25_topk(b, "cat", 3, NULL, 3, h), 2);
	CU_ASSERT_EQUAL(h[0].row, 2);
	CU_ASSERT_DOUBLE_EQUAL(h[0].score, 0.7547502, 1e-5);
	CU_ASSERT_EQUAL(h[1].row, 0);
	CU_ASSERT_DOUBLE_EQUAL(h[1].score, 0.4900512, 1e-5);
	CU_ASSERT_EQUAL_FATAL(bm25_topk(b, "Dog, SAT!", 9, NULL, 3, h), 2);
	CU_ASSERT_EQUAL(h[0].row, 1);
	CU_ASSERT_DOUBLE_EQUAL(h[0].score, 1.3411060, 1e-5);
	CU_ASSERT_EQUAL(h[1].row, 0);
	CU_ASSERT_DOUBLE_EQUAL(h[1].score, 0.4900512, 1e-5);
	/* A repeated query word counts once; k cuts; unknown words find nothing. */
	CU_ASSERT_EQUAL(bm25_topk(b, "cat cat", 7, NULL, 1, h), 1);
	CU_ASSERT_DOUBLE_EQUAL(h[0].score, 0.7547502, 1e-5);
	CU_ASSERT_EQUAL(bm25_topk(b, "zebra", 5, NULL, 3, h), 0);
	CU_ASSERT_EQUAL(bm25_topk(b, "", 0, NULL, 3, h), 0);
	/* The keep mask. */
	const uint8_t keep[3] = { 1, 1, 0 };
	CU_ASSERT_EQUAL_FATAL(bm25_topk(b, "cat", 3, keep, 3, h), 1);
	CU_ASSERT_EQUAL(h[0].row, 0);

	/* Every score, and the most a document could score: "dog sat zebra"
	 * perfect = (idf(dog) + idf(sat)) * 2.2, zebra unknown. */
	struct bm25_scores s;
	CU_ASSERT_EQUAL_FATAL(bm25_score(b, "dog sat zebra", 13, NULL, &s), 0);
	CU_ASSERT_DOUBLE_EQUAL(s.perfect, (0.9808293 + 0.4700036) * 2.2, 1e-5);
	CU_ASSERT_EQUAL(s.ntouched, 2);
	CU_ASSERT_DOUBLE_EQUAL(s.score[1], 1.3411060, 1e-5);
	CU_ASSERT_DOUBLE_EQUAL(s.score[0], 0.4900512, 1e-5);
	CU_ASSERT_DOUBLE_EQUAL(s.score[2], 0.0, 1e-12);
	CU_ASSERT_TRUE(s.score[1] / s.perfect < 1.0);
	bm25_scores_free(&s);
	CU_ASSERT_PTR_NULL(s.score);
	CU_ASSERT_EQUAL_FATAL(bm25_score(b, "zebra", 5, NULL, &s), 0);
	CU_ASSERT_EQUAL(s.ntouched, 0);
	CU_ASSERT_DOUBLE_EQUAL(s.perfect, 0.0, 1e-12);
	bm25_scores_free(&s);
}

static void test_example(void)
{
	struct bm25 *b = build();
	CU_ASSERT_FATAL(b != NULL);
	check_example(b);
	bm25_free(b);
}

static void test_serialise(void)
{
	struct bm25 *b = build(), *l;
	size_t n = bm25_serialized_size(b);
	uint64_t *buf = malloc(n + 8);                 /* 8-aligned */

	CU_ASSERT_FATAL(buf != NULL);
	bm25_serialize(b, buf);
	l = bm25_load(buf, n);
	CU_ASSERT_FATAL(l != NULL);
	check_example(l);
	bm25_free(l);
	/* The two pieces an index file's writer sends are those bytes. */
	{
		struct bm25_part part[2];

		bm25_serialized_parts(b, part);
		CU_ASSERT_EQUAL(part[0].len + part[1].len, n);
		CU_ASSERT(memcmp(buf, part[0].p, part[0].len) == 0);
		CU_ASSERT(memcmp((char *)buf + part[0].len, part[1].p, part[1].len) == 0);
	}
	/* Short, long, misaligned, or a posting outside the documents: refused. */
	CU_ASSERT_PTR_NULL(bm25_load(buf, n - 1));
	CU_ASSERT_PTR_NULL(bm25_load(buf, 8));
	CU_ASSERT_PTR_NULL(bm25_load((char *)buf + 4, n - 4));
	((uint32_t *)buf)[1] = 2;                      /* ndocs 3 -> 2 */
	CU_ASSERT_PTR_NULL(bm25_load(buf, n));
	bm25_serialize(b, buf);
	((uint32_t *)buf)[0] ^= 1;                     /* magic */
	CU_ASSERT_PTR_NULL(bm25_load(buf, n));
	free(buf);
	bm25_free(b);
	/* No documents at all. */
	b = bm25_build(NULL, NULL, 0, true);
	CU_ASSERT_FATAL(b != NULL);
	struct vec_hit h[1];
	CU_ASSERT_EQUAL(bm25_topk(b, "cat", 3, NULL, 1, h), 0);
	bm25_free(b);
}

/* a and b serialise to the same bytes. */
static bool same_bytes(const struct bm25 *a, const struct bm25 *b)
{
	size_t n = bm25_serialized_size(a);
	unsigned char *x, *y;
	bool same;

	if (bm25_serialized_size(b) != n)
		return false;
	x = malloc(n);
	y = malloc(n);
	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	CU_ASSERT_PTR_NOT_NULL_FATAL(y);
	bm25_serialize(a, x);
	bm25_serialize(b, y);
	same = memcmp(x, y, n) == 0;
	free(x);
	free(y);
	return same;
}

/* bm25_build_groups must give, byte for byte, what bm25_build gives on
 * each group's rows joined by '\n': rows cut anywhere in real text (mid
 * word too), empty rows, words past TOKEN_MAX, non-ASCII, groups of one
 * row and of many. */
static void test_groups(void)
{
	enum { NROWS = 3000 };
	static const char *const odd[] = { "", "co-", "operate naïve café ÉCOLE", "",
		"it's 3.14 and 10,000 — don't", "x", "" };
	char *text = NULL, *rows[NROWS], *joined[NROWS];
	size_t len = 0, rlen[NROWS], jlen[NROWS], ngroups = 0;
	uint32_t first[NROWS + 1];
	FILE *f = fopen("/usr/share/common-licenses/GPL-3", "r");

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	text = malloc(1 << 20);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	len = fread(text, 1, (1 << 20) - 1, f);
	fclose(f);
	CU_ASSERT_FATAL(len > 30000);
	for (size_t i = 0, off = 0; i < NROWS; i++) {
		size_t n = 1 + (i * 7919) % 120;

		if (i % 97 == 5) {               /* a word far past TOKEN_MAX */
			rows[i] = malloc(TOKEN_MAX * 3 + 1);
			memset(rows[i], 'q', TOKEN_MAX * 3);
			rows[i][TOKEN_MAX * 3] = '\0';
		} else if (i % 13 == 0) {
			rows[i] = strdup(odd[(i / 13) % 7]);
		} else {
			if (off + n > len)
				off = 0;
			rows[i] = strndup(text + off, n);
			off += n;
		}
		CU_ASSERT_PTR_NOT_NULL_FATAL(rows[i]);
		rlen[i] = strlen(rows[i]);
	}
	/* groups of 1 to 9 rows */
	for (size_t r = 0; r < NROWS; ngroups++) {
		size_t k = 1 + (ngroups * 31) % 9;

		first[ngroups] = (uint32_t)r;
		r = r + k < NROWS ? r + k : NROWS;
	}
	first[ngroups] = NROWS;
	for (size_t g = 0; g < ngroups; g++) {
		size_t n = 0;

		for (uint32_t r = first[g]; r < first[g + 1]; r++)
			n += rlen[r] + 1;
		joined[g] = malloc(n + 1);
		CU_ASSERT_PTR_NOT_NULL_FATAL(joined[g]);
		jlen[g] = 0;
		for (uint32_t r = first[g]; r < first[g + 1]; r++) {
			memcpy(joined[g] + jlen[g], rows[r], rlen[r]);
			jlen[g] += rlen[r];
			joined[g][jlen[g]++] = '\n';
		}
	}
	struct bm25 *rb = bm25_build((const char *const *)rows, rlen, NROWS, true);
	struct bm25 *want = bm25_build((const char *const *)joined, jlen, ngroups, false);
	struct bm25 *got;

	CU_ASSERT_PTR_NOT_NULL_FATAL(rb);
	CU_ASSERT_PTR_NOT_NULL_FATAL(want);
	got = bm25_build_groups(rb, first, ngroups);
	CU_ASSERT_PTR_NOT_NULL_FATAL(got);
	CU_ASSERT(ngroups > 500);
	CU_ASSERT_EQUAL(bm25_count(got), ngroups);
	CU_ASSERT(same_bytes(got, want));
	bm25_free(got);
	/* Every group one row (one-snippet documents, a view of the rows'
	 * index): what bm25_build gives the rows without their words, and it
	 * ranks as that does. */
	{
		uint32_t *each = malloc((NROWS + 1) * sizeof *each);
		struct bm25 *plain = bm25_build((const char *const *)rows, rlen, NROWS, false);

		CU_ASSERT_PTR_NOT_NULL_FATAL(each);
		CU_ASSERT_PTR_NOT_NULL_FATAL(plain);
		for (uint32_t i = 0; i <= NROWS; i++)
			each[i] = i;
		got = bm25_build_groups(rb, each, NROWS);
		CU_ASSERT_PTR_NOT_NULL_FATAL(got);
		CU_ASSERT_EQUAL(bm25_count(got), NROWS);
		CU_ASSERT(same_bytes(got, plain));
		CU_ASSERT_PTR_NULL(bm25_words(got, 0, &(size_t){ 0 }));
		{
			struct vec_hit hg[5], hp[5];
			size_t ng = bm25_topk(got, "the license", 11, NULL, 5, hg);

			CU_ASSERT(ng > 0);
			CU_ASSERT_EQUAL(ng, bm25_topk(plain, "the license", 11, NULL, 5, hp));
			CU_ASSERT(memcmp(hg, hp, ng * sizeof *hg) == 0);
		}
		bm25_free(got);
		bm25_free(plain);
		free(each);
	}
	/* One group of every row; no groups of no rows. */
	first[1] = NROWS;
	got = bm25_build_groups(rb, first, 1);
	CU_ASSERT_PTR_NOT_NULL(got);
	CU_ASSERT_EQUAL(got != NULL ? bm25_count(got) : 0, 1);
	bm25_free(got);
	/* Groups that do not cover the rows in order, and rows without words:
	 * refused. */
	first[1] = NROWS - 1;
	CU_ASSERT_PTR_NULL(bm25_build_groups(rb, first, 1));
	first[0] = 0, first[1] = 10, first[2] = 5, first[3] = NROWS;
	CU_ASSERT_PTR_NULL(bm25_build_groups(rb, first, 3));
	first[0] = 1, first[1] = NROWS;
	CU_ASSERT_PTR_NULL(bm25_build_groups(rb, first, 1));
	first[0] = 0, first[1] = NROWS;
	CU_ASSERT_PTR_NULL(bm25_build_groups(want, first, 1));
	bm25_free(rb);
	bm25_free(want);
	/* Rows without a word among them: no words kept, yet groups work. */
	{
		static const char *const blank[] = { "", "--", " ... " };
		size_t blen[] = { 0, 2, 5 };
		uint32_t bf[] = { 0, 2, 3 };

		rb = bm25_build(blank, blen, 3, true);
		CU_ASSERT_PTR_NOT_NULL_FATAL(rb);
		got = bm25_build_groups(rb, bf, 2);
		CU_ASSERT_PTR_NOT_NULL(got);
		CU_ASSERT_EQUAL(got != NULL ? bm25_count(got) : 0, 2);
		bm25_free(got);
		bm25_free(rb);
	}
	for (size_t i = 0; i < NROWS; i++)
		free(rows[i]);
	for (size_t g = 0; g < ngroups; g++)
		free(joined[g]);
	free(text);
}

/* tok_stem keeps stems it made: what it answers must be the stemmer's
 * answer, first time or cached, after other words took the slot, and for
 * words too long to be cached. */
static void test_stem_cache(void)
{
	struct sb_stemmer *sb = sb_stemmer_new("english", NULL);
	char word[TOKEN_MAX], buf[TOKEN_MAX];
	size_t mismatches = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(sb);
	for (int round = 0; round < 3; round++)
		for (unsigned i = 0; i < 40000; i++) {
			static const char *const stems[] = { "connect", "run", "general", "happi",
			                                     "nation", "argu", "abl" };
			static const char *const ends[] = { "", "s", "ing", "ed", "ions", "ness",
			                                    "ly", "ational", "izes", "fulness" };
			int n;

			if (i % 997 == 0)        /* past the cached length */
				n = snprintf(word, sizeof word, "antidisestablishmentarian%uisations", i);
			else
				n = snprintf(word, sizeof word, "%s%u%s", stems[i % 7], i / 70,
				             ends[(i / 7) % 10]);
			const sb_symbol *want = sb_stemmer_stem(sb, (const sb_symbol *)word, n);
			int wlen = sb_stemmer_length(sb);
			memcpy(buf, word, (size_t)n);
			size_t got = tok_stem(buf, (size_t)n);

			mismatches += got != (size_t)wlen || memcmp(buf, want, got) != 0;
		}
	CU_ASSERT_EQUAL(mismatches, 0);
	memcpy(buf, "running", 7);
	CU_ASSERT_EQUAL(tok_stem(buf, 7), 3);
	CU_ASSERT_NSTRING_EQUAL(buf, "run", 3);
	memcpy(buf, "running", 7);                    /* from the cache */
	CU_ASSERT_EQUAL(tok_stem(buf, 7), 3);
	CU_ASSERT_NSTRING_EQUAL(buf, "run", 3);
	sb_stemmer_delete(sb);
}

int suite_bm25(void)
{
	static const struct test_case tests[] = {
		{ "worked example", test_example },
		{ "serialised form round trip and refusal", test_serialise },
		{ "stems from the cache are the stemmer's", test_stem_cache },
		{ "groups of rows counted from their words, as if tokenised", test_groups },
		{ NULL, NULL },
	};
	return suite_add("bm25", tests);
}
