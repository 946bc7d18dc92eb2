/* test_index.c - the index file: round trip, refusal of truncated,
 * flipped, foreign and missing files, rows put in its order, and the
 * documents' titles in its BM25. */
#include <fcntl.h>
#include <math.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "suites.h"
#include "retrieval/index.h"
#include "retrieval/title.h"
#include "retrieval/tokenize.h"

#define N 5
#define DIM 20

static char dir[64], path[128];
static float vecs[N * DIM];
static const char *const ids[N] = { "s0", "s1", "s2", "s3", "s4" };
static const char *const meta[N] = { "{\"source\":\"a.txt\"}", NULL, "{}", "{\"n\":3}", "{}" };
static const char *const texts[N] = { "the cat sat", "dog", NULL, "cat cat", "" };

static int setup(void)
{
	strcpy(dir, "/tmp/sluice-index-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(path, sizeof path, "%s/ds.idx", dir);
	for (int i = 0; i < N * DIM; i++)
		vecs[i] = (float)(i % 7) - 3.0f;
	return 0;
}

static void teardown(void)
{
	unlink(path);
	rmdir(dir);
}

static void write_ok(void)
{
	char err[256] = "";
	CU_ASSERT_EQUAL_FATAL(rindex_write(path, N, DIM, vecs, ids, meta, texts, NULL, err, sizeof err), 0);
}

/* A file's bytes (*len of them), or NULL. */
static char *slurp(const char *f, size_t *len)
{
	FILE *fp = fopen(f, "rb");
	char *buf = NULL;
	long n;

	*len = 0;
	if (fp == NULL)
		return NULL;
	if (fseek(fp, 0, SEEK_END) == 0 && (n = ftell(fp)) > 0 && fseek(fp, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n)) != NULL && fread(buf, 1, (size_t)n, fp) == (size_t)n)
		*len = (size_t)n;
	fclose(fp);
	if (*len == 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void test_round_trip(void)
{
	char err[256] = "";
	size_t wlen, glen;
	struct rindex *ix;
	struct vec_hit h[2];

	if (setup() != 0) {
		CU_FAIL("mkdtemp");
		return;
	}
	write_ok();
	ix = rindex_open(path, err, sizeof err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ix);
	CU_ASSERT_EQUAL(rindex_count(ix), N);
	CU_ASSERT_EQUAL(rindex_dim(ix), DIM);
	CU_ASSERT(((uintptr_t)rindex_vectors(ix) & 63) == 0);
	CU_ASSERT(memcmp(rindex_vectors(ix), vecs, sizeof vecs) == 0);
	for (int i = 0; i < N; i++) {
		CU_ASSERT_DOUBLE_EQUAL(rindex_norms(ix)[i], vec_norm(vecs + i * DIM, DIM), 1e-6);
		CU_ASSERT_STRING_EQUAL(rindex_snippet_id(ix, i), ids[i]);
		CU_ASSERT_STRING_EQUAL(rindex_metadata(ix, i), meta[i] ? meta[i] : "{}");
		CU_ASSERT_STRING_EQUAL(rindex_text(ix, i), texts[i] ? texts[i] : "");
	}
	/* Each row's code, scale and error as vec_encode gives them. */
	const struct vec_codes *vc = rindex_codes(ix);
	CU_ASSERT_EQUAL_FATAL(vc->stride, vec_code_stride(DIM));
	for (int i = 0; i < N; i++) {
		int8_t code[64], kept[64];
		float scale, cerr;
		vec_encode(vecs + i * DIM, DIM, code, &scale, &cerr);
		vec_code_row(vc->code, vc->stride, (size_t)i, kept);
		CU_ASSERT(memcmp(kept, code, vc->stride) == 0);
		CU_ASSERT_EQUAL(vc->scale[i], scale);
		CU_ASSERT_EQUAL(vc->err[i], cerr);
	}
	CU_ASSERT_PTR_NULL(rindex_snippet_id(ix, N));
	CU_ASSERT_EQUAL(bm25_topk(rindex_bm25(ix), "cat", 3, NULL, 2, h), 2);
	CU_ASSERT_EQUAL(h[0].row, 3);
	/* No document ids: every row is a document of its own. */
	CU_ASSERT_EQUAL(rindex_doc_count(ix), N);
	for (int i = 0; i < N; i++) {
		CU_ASSERT_EQUAL(rindex_row_doc(ix, i), (uint32_t)i);
		CU_ASSERT_EQUAL(rindex_doc_first_row(ix, (size_t)i), (size_t)i);
	}
	CU_ASSERT_EQUAL(bm25_count(rindex_bm25_docs(ix)), N);
	rindex_close(ix);

	/* Rows 0-1 one document, 2 another, 3-4 a third: the map and the
	 * documents' BM25 over their snippets joined. */
	static const char *const docs[N] = { "x", "x", "y", "z", "z" };
	CU_ASSERT_EQUAL_FATAL(rindex_write(path, N, DIM, vecs, ids, meta, texts, docs,
	                                   err, sizeof err), 0);
	ix = rindex_open(path, err, sizeof err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ix);
	CU_ASSERT_EQUAL(rindex_doc_count(ix), 3);
	static const uint32_t row_doc[N] = { 0, 0, 1, 2, 2 };
	for (int i = 0; i < N; i++)
		CU_ASSERT_EQUAL(rindex_row_doc(ix, i), row_doc[i]);
	CU_ASSERT_EQUAL(rindex_doc_first_row(ix, 0), 0);
	CU_ASSERT_EQUAL(rindex_doc_first_row(ix, 1), 2);
	CU_ASSERT_EQUAL(rindex_doc_first_row(ix, 2), 3);
	CU_ASSERT_EQUAL(rindex_doc_first_row(ix, 3), N);
	CU_ASSERT_EQUAL(bm25_count(rindex_bm25_docs(ix)), 3);
	/* "dog" is in row 1 only: document 0 ("the cat sat" + "dog"). */
	CU_ASSERT_EQUAL(bm25_topk(rindex_bm25_docs(ix), "dog", 3, NULL, 3, h), 1);
	CU_ASSERT_EQUAL(h[0].row, 0);
	rindex_close(ix);
	/* The same rows given by pointers into memory of their own, shuffled
	 * and put back in order by rindex_sort: the same file, byte for byte. */
	char *want = slurp(path, &wlen), *got;
	static float own[N][DIM];
	static const int shuffle[N] = { 3, 0, 4, 2, 1 };
	struct rindex_row rows[N];
	for (int i = 0; i < N; i++) {
		int j = shuffle[i];
		memcpy(own[i], vecs + j * DIM, sizeof own[i]);
		rows[i] = (struct rindex_row){ own[i], ids[j], meta[j], texts[j], docs[j], j };
	}
	rindex_sort(rows, N);
	CU_ASSERT_EQUAL_FATAL(rindex_write_rows(path, N, DIM, rows, err, sizeof err), 0);
	got = slurp(path, &glen);
	CU_ASSERT_PTR_NOT_NULL(want);
	CU_ASSERT_PTR_NOT_NULL(got);
	CU_ASSERT_EQUAL(glen, wlen);
	CU_ASSERT(want != NULL && got != NULL && glen == wlen && memcmp(want, got, wlen) == 0);
	free(want);
	free(got);
	/* Only the index is left: the temporary file was renamed. */
	DIR *d = opendir(dir);
	struct dirent *e;
	int files = 0;
	while ((e = readdir(d)) != NULL)
		files += e->d_name[0] != '.';
	closedir(d);
	CU_ASSERT_EQUAL(files, 1);
	/* An empty dataset is a valid index. */
	CU_ASSERT_EQUAL(rindex_write(path, 0, DIM, NULL, NULL, NULL, NULL, NULL, err, sizeof err), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ix = rindex_open(path, err, sizeof err));
	CU_ASSERT_EQUAL(rindex_count(ix), 0);
	rindex_close(ix);
	CU_ASSERT_EQUAL(rindex_write(path, 1, 0, vecs, ids, NULL, NULL, NULL, err, sizeof err), -1);
	vecs[DIM + 3] = NAN;
	CU_ASSERT_EQUAL(rindex_write(path, N, DIM, vecs, ids, NULL, NULL, NULL, err, sizeof err), -1);
	CU_ASSERT_STRING_EQUAL(err, "index: vector 1 has a value that is not a finite number");
	vecs[DIM + 3] = 0;
	teardown();
}

static void expect_refused(const char *what, const char *want)
{
	char err[256] = "";
	struct rindex *ix = rindex_open(path, err, sizeof err);
	CU_ASSERT_PTR_NULL(ix);
	rindex_close(ix);
	if (strstr(err, want) == NULL)
		fprintf(stderr, "\n%s: got \"%s\"\n", what, err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
}

static void flip(off_t off)
{
	unsigned char c;
	int fd = open(path, O_RDWR);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pread(fd, &c, 1, off), 1);
	c ^= 0x10;
	CU_ASSERT_EQUAL(pwrite(fd, &c, 1, off), 1);
	close(fd);
}

static void test_refused(void)
{
	struct stat st;

	if (setup() != 0) {
		CU_FAIL("mkdtemp");
		return;
	}
	expect_refused("missing", "No such file");
	write_ok();
	CU_ASSERT_EQUAL_FATAL(stat(path, &st), 0);
	CU_ASSERT_EQUAL(truncate(path, st.st_size - 1), 0);
	expect_refused("truncated", "truncated");
	CU_ASSERT_EQUAL(truncate(path, 100), 0);
	expect_refused("cut inside the header", "too short");
	/* One flipped bit anywhere in the body or the header. */
	const off_t offs[] = { 200, st.st_size / 2, st.st_size - 1, 24, 40 };
	for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) {
		write_ok();
		flip(offs[i]);
		expect_refused("flipped", "index");
	}
	write_ok();
	flip(st.st_size / 2);
	expect_refused("flipped body", "checksum");
	write_ok();
	flip(0);
	expect_refused("foreign magic", "not an index file");
	FILE *f = fopen(path, "w");
	fputs("hello", f);
	fclose(f);
	expect_refused("foreign", "too short");
	teardown();
}

/* Row i of a sort's input: its id, text and metadata name i, and its
 * vector is i, i + 0.5, ..., so every field can be checked to follow. */
#define SORT_DIM 3
#define SORT_MAX 600
static char sort_names[SORT_MAX][3][16];
static float sort_vecs[SORT_MAX][SORT_DIM];

static void sort_rows_of(size_t n, const char *const *doc, const long *at,
                         struct rindex_row *rows)
{
	for (size_t i = 0; i < n; i++) {
		for (int j = 0; j < 3; j++)
			snprintf(sort_names[i][j], sizeof sort_names[i][j], "%zu", i);
		for (size_t k = 0; k < SORT_DIM; k++)
			sort_vecs[i][k] = (float)i + 0.5f * (float)k;
		rows[i] = (struct rindex_row){ sort_vecs[i], sort_names[i][0], sort_names[i][1],
		                               sort_names[i][2], doc[i], at[i] };
	}
}

/* Rows sorted by (document, position), each still whole. */
static void check_sorted(size_t n, const char *const *doc, const long *at,
                         const struct rindex_row *rows)
{
	for (size_t r = 0; r < n; r++) {
		size_t was = strtoul(rows[r].id, NULL, 10);

		CU_ASSERT_TRUE(was < n);
		if (was >= n)
			return;
		CU_ASSERT_STRING_EQUAL(rows[r].meta, rows[r].id);
		CU_ASSERT_STRING_EQUAL(rows[r].text, rows[r].id);
		CU_ASSERT_STRING_EQUAL(rows[r].doc, doc[was]);
		CU_ASSERT_EQUAL(rows[r].pos, at[was]);
		for (size_t k = 0; k < SORT_DIM; k++)
			CU_ASSERT_EQUAL(rows[r].vec[k], (float)was + 0.5f * (float)k);
		if (r > 0) {
			int c = strcmp(rows[r - 1].doc, rows[r].doc);
			CU_ASSERT_TRUE(c < 0 || (c == 0 && rows[r - 1].pos < rows[r].pos));
		}
	}
}

static void test_sort_rows(void)
{
	/* Documents interleaved as a table's key order can leave them. */
	static const char *const doc[] = { "b", "a", "b", "c", "a", "b", "a" };
	static const long at[] = { 2, 1, 0, 0, 0, 1, 2 };
	enum { n = 7 };
	struct rindex_row rows[n];

	sort_rows_of(n, doc, at, rows);
	rindex_sort(rows, n);
	CU_ASSERT_STRING_EQUAL(rows[0].id, "4");           /* a, 0 */
	CU_ASSERT_STRING_EQUAL(rows[2].id, "6");           /* a, 2 */
	CU_ASSERT_STRING_EQUAL(rows[3].id, "2");           /* b, 0 */
	CU_ASSERT_STRING_EQUAL(rows[6].id, "3");           /* c, 0 */
	check_sorted(n, doc, at, rows);

	/* 600 rows of 37 documents in a shuffled order, and already sorted. */
	enum { big = SORT_MAX, ndocs = 37 };
	static char names[ndocs][8];
	static const char *bdoc[big];
	static long bat[big], next[ndocs];
	static struct rindex_row brows[big];
	unsigned seed = 7;

	for (size_t i = 0; i < ndocs; i++)
		snprintf(names[i], sizeof names[i], "doc%02zu", i);
	for (size_t i = 0; i < big; i++) {
		seed = seed * 1103515245u + 12345u;
		size_t k = (seed >> 16) % ndocs;
		bdoc[i] = names[k];
		bat[i] = next[k]++;
	}
	for (size_t i = big - 1; i > 0; i--) {        /* shuffle the rows */
		seed = seed * 1103515245u + 12345u;
		size_t j = (seed >> 16) % (i + 1);
		const char *x = bdoc[i];
		long y = bat[i];
		bdoc[i] = bdoc[j], bat[i] = bat[j];
		bdoc[j] = x, bat[j] = y;
	}
	sort_rows_of(big, bdoc, bat, brows);
	rindex_sort(brows, big);
	check_sorted(big, bdoc, bat, brows);
	/* Sorted input stays as it is. */
	for (size_t i = 0; i < big; i++)
		bdoc[i] = names[i * ndocs / big], bat[i] = (long)i;
	sort_rows_of(big, bdoc, bat, brows);
	rindex_sort(brows, big);
	for (size_t i = 0; i < big; i++)
		CU_ASSERT_EQUAL(strtoul(brows[i].id, NULL, 10), i);
	check_sorted(big, bdoc, bat, brows);
	rindex_sort(brows, 0);
}

static void title_is(const char *json, const char *want)
{
	char out[DOC_TITLE_MAX + 1];
	size_t n = doc_title(json, out, sizeof out);

	CU_ASSERT_STRING_EQUAL(out, want);
	CU_ASSERT_EQUAL(n, strlen(want));
}

static void test_doc_title(void)
{
	title_is(NULL, "");
	title_is("{}", "");
	title_is("not json", "");
	title_is("[\"title\", \"source\"]", "");
	title_is("{\"source\":\"\"}", "");
	title_is("{\"source\":\"dir/\"}", "");
	/* metadata.title first; else the source's file name without its
	 * directory and extension. */
	title_is("{\"title\":\"Glacier handbook\",\"source\":\"x.txt\"}", "Glacier handbook");
	title_is("{\"title\":7,\"source\":\"dir/sub/git-rebase.md\"}", "git-rebase");
	title_is("{\"title\":null,\"source\":\"ls.1\",\"chunk\":0}", "ls");
	title_is("{\"source\":\"archive.tar.gz\"}", "archive.tar");
	title_is("{\"source\":\"File::Spec\"}", "File::Spec");
	title_is("{\"source\":\".bashrc\"}", ".bashrc");             /* a leading dot is the name */
	title_is("{\"source\":\"notes.final draft\"}", "notes.final draft");
	title_is("{\"source\":\"x.verylong\"}", "x.verylong");       /* more than 5: not an extension */
	title_is("{\"source\":\"a.b-c\"}", "a.b-c");
	title_is("{\"source\":17}", "");
	title_is("{\"n\":{\"title\":\"nested\"}}", "");
	title_is("{\"title\":\"a\\\"b\\u00e9\"}", "a\"b\xc3\xa9");
	/* A long title is cut at DOC_TITLE_MAX bytes, never inside a UTF-8
	 * character: "a" then 1500 two-byte characters keeps "a" and 511. */
	char json[4096], want[DOC_TITLE_MAX + 1], out[DOC_TITLE_MAX + 1];
	size_t m = (size_t)snprintf(json, sizeof json, "{\"title\":\"a");
	for (int i = 0; i < 1500; i++)
		m += (size_t)snprintf(json + m, sizeof json - m, "\xc3\xa9");
	snprintf(json + m, sizeof json - m, "\"}");
	want[0] = 'a';
	for (int i = 0; i < 511; i++)
		memcpy(want + 1 + 2 * i, "\xc3\xa9", 2);
	want[1023] = '\0';
	title_is(json, want);
	/* Too small an output: no title rather than a cut one. */
	CU_ASSERT_EQUAL(doc_title("{\"title\":\"Glacier\"}", out, 4), 0);
	CU_ASSERT_STRING_EQUAL(out, "");
}

/* The term id of a word's stem in b, or -1. */
static long term_of(const struct bm25 *b, const char *word)
{
	char s[TOKEN_MAX];
	size_t n = strlen(word);

	memcpy(s, word, n + 1);
	n = tok_stem(s, n);
	return bm25_term_id(b, s, n);
}

static void test_titles(void)
{
	/* Two documents: d1 (rows 0 and 1) titled in its metadata, d2 (row
	 * 2) by its source's file name. */
	static const char *const tids[3] = { "t0", "t1", "t2" };
	static const char *const tdocs[3] = { "d1", "d1", "d2" };
	static const char *const tmeta[3] = {
		"{\"title\":\"Glacier handbook\",\"document_id\":\"d1\",\"chunk\":0}",
		"{\"title\":\"Glacier handbook\",\"document_id\":\"d1\",\"chunk\":1}",
		"{\"source\":\"notes/river-guide.md\",\"document_id\":\"d2\",\"chunk\":0}",
	};
	static const char *const ttexts[3] = { "ice moves slowly", "snow falls", "water flows" };
	char err[256] = "";
	struct rindex *ix;
	struct vec_hit h[3];
	const uint32_t *w;
	size_t nw, np;

	if (setup() != 0) {
		CU_FAIL("mkdtemp");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(rindex_write(path, 3, DIM, vecs, tids, tmeta, ttexts, tdocs,
	                                   err, sizeof err), 0);
	ix = rindex_open(path, err, sizeof err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ix);
	const struct bm25 *b = rindex_bm25(ix), *bd = rindex_bm25_docs(ix);
	long glacier = term_of(b, "glacier"), handbook = term_of(b, "handbook"),
	     river = term_of(b, "river"), ice = term_of(b, "ice");
	CU_ASSERT_FATAL(glacier >= 0 && handbook >= 0 && river >= 0 && ice >= 0);
	/* The title's words twice, then the snippet's, in the first row only. */
	w = bm25_words(b, 0, &nw);
	CU_ASSERT_EQUAL_FATAL(nw, 7);
	CU_ASSERT(w[0] == (uint32_t)glacier && w[1] == (uint32_t)handbook &&
	          w[2] == (uint32_t)glacier && w[3] == (uint32_t)handbook && w[4] == (uint32_t)ice);
	bm25_words(b, 1, &nw);
	CU_ASSERT_EQUAL(nw, 2);
	const struct bm25_post *p = bm25_postings(b, (uint32_t)glacier, &np);
	CU_ASSERT_EQUAL_FATAL(np, 1);
	CU_ASSERT_EQUAL(p[0].doc, 0);
	/* Twice the term frequency: a larger impact than a word once in the
	 * same row. */
	CU_ASSERT(bm25_impact(b, (uint32_t)glacier, 0) > bm25_impact(b, (uint32_t)ice, 0));
	p = bm25_postings(b, (uint32_t)river, &np);
	CU_ASSERT(np == 1 && p[0].doc == 2);
	CU_ASSERT_EQUAL(term_of(b, "md"), -1);               /* the extension is not a word */
	CU_ASSERT_EQUAL(term_of(b, "notes"), -1);            /* nor the directory */
	/* The documents' BM25 has them through the rows. */
	CU_ASSERT(bm25_impact(bd, (uint32_t)term_of(bd, "glacier"), 0) > 0.0f);
	CU_ASSERT(bm25_impact(bd, (uint32_t)term_of(bd, "river"), 1) > 0.0f);
	CU_ASSERT_EQUAL(bm25_topk(b, "glacier handbook", 16, NULL, 3, h), 1);
	CU_ASSERT_EQUAL(h[0].row, 0);
	/* The stored texts are the snippets', without the title. */
	for (int i = 0; i < 3; i++)
		CU_ASSERT_STRING_EQUAL(rindex_text(ix, (size_t)i), ttexts[i]);
	rindex_close(ix);
	teardown();
}

/* A file of several of the writer's 2 MB pieces, its sections crossing
 * their ends at odd offsets: every byte back where it was written (the
 * checksum checked on open covers the whole file), and each row whole. */
static void test_large_file(void)
{
	enum { ROWS = 3001, WIDE = 384 };
	char err[256] = "";
	float *v = malloc((size_t)ROWS * WIDE * sizeof *v);
	char (*id)[16] = malloc(ROWS * sizeof *id), (*text)[64] = malloc(ROWS * sizeof *text);
	struct rindex_row *rows = calloc(ROWS, sizeof *rows);
	struct rindex *ix;
	struct stat st;

	if (v == NULL || id == NULL || text == NULL || rows == NULL || setup() != 0) {
		CU_FAIL("setup");
		goto out;
	}
	for (size_t i = 0; i < (size_t)ROWS * WIDE; i++)
		v[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
	for (int i = 0; i < ROWS; i++) {
		snprintf(id[i], sizeof id[i], "s%d", i);
		snprintf(text[i], sizeof text[i], "snippet %d of a file larger than a piece", i);
		rows[i] = (struct rindex_row){ v + (size_t)i * WIDE, id[i], NULL, text[i], NULL, i };
	}
	CU_ASSERT_EQUAL_FATAL(rindex_write_rows(path, ROWS, WIDE, rows, err, sizeof err), 0);
	CU_ASSERT_EQUAL_FATAL(stat(path, &st), 0);
	CU_ASSERT(st.st_size > 2 * (2 << 20));
	ix = rindex_open(path, err, sizeof err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ix);
	CU_ASSERT_EQUAL(rindex_count(ix), ROWS);
	CU_ASSERT(memcmp(rindex_vectors(ix), v, (size_t)ROWS * WIDE * sizeof *v) == 0);
	const struct vec_codes *vc = rindex_codes(ix);
	for (int i = 0; i < ROWS; i += 97) {
		int8_t code[WIDE], kept[WIDE];
		float scale, cerr;
		vec_encode(v + (size_t)i * WIDE, WIDE, code, &scale, &cerr);
		vec_code_row(vc->code, vc->stride, (size_t)i, kept);
		CU_ASSERT(memcmp(kept, code, WIDE) == 0);
		CU_ASSERT_EQUAL(vc->scale[i], scale);
		CU_ASSERT_DOUBLE_EQUAL(rindex_norms(ix)[i], vec_norm(v + (size_t)i * WIDE, WIDE), 1e-5);
	}
	for (int i = 0; i < ROWS; i++) {
		CU_ASSERT_STRING_EQUAL(rindex_snippet_id(ix, (size_t)i), id[i]);
		CU_ASSERT_STRING_EQUAL(rindex_text(ix, (size_t)i), text[i]);
	}
	rindex_close(ix);
	teardown();
out:
	free(v);
	free(id);
	free(text);
	free(rows);
}

int suite_index(void)
{
	static const struct test_case tests[] = {
		{ "write, open, read back", test_round_trip },
		{ "a file of several write pieces read back", test_large_file },
		{ "truncated, flipped, foreign, missing refused", test_refused },
		{ "rows sorted by document and position, each row whole", test_sort_rows },
		{ "a document's title from its metadata", test_doc_title },
		{ "the title twice in its document's first snippet's BM25", test_titles },
		{ NULL, NULL },
	};
	return suite_add("index", tests);
}
