/* vec_questions.c - the exact vector top-k (vec_topk_coded) of real
 * questions over an index file of real text, alone in a process: the
 * pass bench/retrieval_service.sh's questions make with hybrid and MMR off.
 *
 *   vec_questions build TEXT SNIPPETS OUT
 *     The text repeated until it holds about SNIPPETS * 700 characters, as
 *     the service bench uploads it (so passages recur, as boilerplate does
 *     in real collections), cut into 20 documents, chunked (800
 *     characters, overlap 100), embedded by the built-in embedder (384
 *     dimensions) and written as an index file.
 *   vec_questions ask TEXT QUESTIONS INDEX REPS
 *     QUESTIONS lines of the text (longer than 30 bytes, with a word of
 *     four letters, as the service bench asks), embedded, each ranked (cos,
 *     top 20) REPS times; prints the median over the repetitions of the
 *     mean time a question, the rows scored exactly from the floats (mean,
 *     p50, p99, max) and an FNV-1a of every hit (two builds that print the
 *     same one gave the same answers). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bench.h"
#include "retrieval/chunk.h"
#include "retrieval/embed.h"
#include "retrieval/index.h"
#include "retrieval/vec.h"
#include "retrieval/vec_codes.h"

#define DIM 384
#define K 20
#define DOCS 20
#define MAX_REPS 101

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

static char *read_text(const char *path, size_t want, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t cap = (want > (64u << 20) ? want : (64u << 20)) + 1, n;
	char *t = malloc(cap);

	if (f == NULL || t == NULL) {
		fprintf(stderr, "vec_questions: cannot read %s\n", path);
		exit(1);
	}
	n = fread(t, 1, cap - 1, f);
	fclose(f);
	for (size_t i = 0; i < n; i++)
		if (t[i] == '\0')
			t[i] = ' ';
	/* "\n\n" and the text again, until it is long enough (the service
	 * bench's own doubling), then cut */
	while (n > 0 && n < want) {
		size_t add = n + 2 < cap - 1 - n ? n + 2 : cap - 1 - n;
		t[n] = '\n';
		if (add > 1)
			t[n + 1] = '\n';
		if (add > 2)
			memcpy(t + n + 2, t, add - 2);
		n += add;
	}
	if (want > 0 && n > want)
		n = want;
	t[n] = '\0';
	*len = n;
	return t;
}

static int build(const char *path, size_t snippets, const char *out)
{
	size_t tl, n = 0, cap = snippets + snippets / 2 + 64;
	char *text = read_text(path, snippets * 700, &tl), err[256];
	struct rindex_row *rows = calloc(cap, sizeof *rows);
	struct chunk *ch = malloc(cap * sizeof *ch);
	float *vecs = malloc(cap * DIM * sizeof *vecs);
	size_t per = tl / DOCS + 1;

	if (rows == NULL || ch == NULL || vecs == NULL)
		return 1;
	for (size_t d = 0; d * per < tl; d++) {
		size_t off = d * per, len = tl - off < per ? tl - off : per;
		size_t got = chunk_text(text + off, len, 800, 100, ch, cap - n);
		char *doc = malloc(48);

		if (doc == NULL || got > cap - n) {
			fprintf(stderr, "vec_questions: more chunks than expected\n");
			return 1;
		}
		snprintf(doc, 48, "0190bbbb-0000-7000-8000-%012zu", d);
		for (size_t c = 0; c < got; c++, n++) {
			char *t = malloc(ch[c].len + 1), *id = malloc(48);
			if (t == NULL || id == NULL)
				return 1;
			memcpy(t, text + off + ch[c].off, ch[c].len);
			t[ch[c].len] = '\0';
			snprintf(id, 48, "0190aaaa-0000-7000-8000-%012zu", n);
			if (embed_builtin(t, ch[c].len, vecs + n * DIM, DIM) != 0)
				return 1;
			rows[n] = (struct rindex_row){ vecs + n * DIM, id, "{}", t, doc, (long)c };
		}
	}
	if (rindex_write_rows(out, n, DIM, rows, err, sizeof err) != 0) {
		fprintf(stderr, "vec_questions: %s\n", err);
		return 1;
	}
	printf("index of %zu snippets in %d documents: %s\n", n, DOCS, out);
	return 0;
}

/* The service bench's questions: lines longer than 30 bytes with four
 * lower-case letters in a row, every step-th of them. */
static bool asked(const char *s, size_t len)
{
	if (len <= 30)
		return false;
	for (size_t i = 0, run = 0; i < len; i++)
		if ((run = s[i] >= 'a' && s[i] <= 'z' ? run + 1 : 0) == 4)
			return true;
	return false;
}

static int ask(const char *path, size_t want, const char *index, int reps)
{
	size_t tl, lines = 0, nq = 0;
	char *text = read_text(path, 0, &tl), err[256];
	struct rindex *ix = rindex_open(index, err, sizeof err);
	float *q = malloc(want * DIM * sizeof *q);
	size_t *cand = malloc(want * sizeof *cand);
	static double ms[MAX_REPS];
	struct vec_hit hits[K];
	uint64_t fnv = 0xcbf29ce484222325ull;

	if (ix == NULL) {
		fprintf(stderr, "vec_questions: %s\n", err);
		return 1;
	}
	if (q == NULL || cand == NULL || want == 0)
		return 1;
	for (char *s = text; *s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : s + strlen(s))
		lines += asked(s, strcspn(s, "\n"));
	size_t step = lines / want ? lines / want : 1, i = 0;
	for (char *s = text; *s && nq < want; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : s + strlen(s)) {
		size_t len = strcspn(s, "\n");
		if (asked(s, len) && i++ % step == 0 &&
		    embed_builtin(s, len, q + nq * DIM, DIM) == 0)
			nq++;
	}
	for (int r = 0; r < reps; r++) {
		double t0 = now_ms();
		for (size_t j = 0; j < nq; j++) {
			const float *qj = q + j * DIM;
			size_t got = vec_topk_coded(VEC_COS, qj, vec_norm(qj, DIM), rindex_vectors(ix),
			                            rindex_norms(ix), rindex_codes(ix), rindex_count(ix),
			                            DIM, NULL, K, hits, &cand[j]);
			if (r == 0)
				for (size_t h = 0; h < got; h++)
					fnv = (fnv ^ hits[h].row) * 0x100000001b3ull;
		}
		ms[r] = (now_ms() - t0) / (double)nq;
	}
	qsort(ms, (size_t)reps, sizeof *ms, cmp_double);
	double mean = 0;
	for (size_t j = 0; j < nq; j++)
		mean += (double)cand[j] / (double)nq;
	qsort(cand, nq, sizeof *cand, cmp_size);
	printf("%zu questions over %zu rows: median %.3f ms a question (%.3f .. %.3f); rows "
	       "scored exactly mean %.0f, p50 %zu, p99 %zu, max %zu; fnv %016llx\n",
	       nq, rindex_count(ix), ms[reps / 2], ms[0], ms[reps - 1], mean, cand[nq / 2],
	       cand[nq * 99 / 100], cand[nq - 1], (unsigned long long)fnv);
	rindex_close(ix);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "build") == 0)
		return build(argv[2], strtoul(argv[3], NULL, 10), argv[4]);
	if (argc == 6 && strcmp(argv[1], "ask") == 0 && atoi(argv[5]) >= 1 &&
	    atoi(argv[5]) <= MAX_REPS)
		return ask(argv[2], strtoul(argv[3], NULL, 10), argv[4], atoi(argv[5]));
	fprintf(stderr, "usage: vec_questions build TEXT SNIPPETS OUT\n"
	                "       vec_questions ask TEXT QUESTIONS INDEX REPS\n");
	return 2;
}
