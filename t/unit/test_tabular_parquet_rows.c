/* test_tabular_parquet_rows.c - Parquet rows: every fixture's cells equal,
 * one by one, to what DuckDB reads from the same file (NAME.expected.json,
 * written by gen-binary), for files of two writers (DuckDB and the Rust
 * parquet writer through parquet-wasm) over pages v1 and v2, every value
 * encoding and codec they use, several row groups and nested values; and
 * column chunks encoded here, page by page, for what no writer should
 * write (sizes past the caps, decompression bombs, bad indices, levels
 * that run short). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>
#include <snappy-c.h>
#include <zlib.h>

#include "suites.h"
#include "binary_fixtures.h"
#include "thrift_writer.h"
#include "tabular/parquet.h"

/* ---- the fixtures against DuckDB's reading ---------------------------------- */

struct compare {
	const char *file;
	struct json_object *cols, *rows;
	size_t row;
	int mismatches;
};

/* a and b the same JSON value, numbers compared by value (DuckDB writes a
 * decimal 1.0 as 1, sluice as 1.0) */
static bool json_same(struct json_object *a, struct json_object *b)
{
	enum json_type ta = json_object_get_type(a), tb = json_object_get_type(b);
	bool na = ta == json_type_int || ta == json_type_double;
	bool nb = tb == json_type_int || tb == json_type_double;

	if (na && nb)
		return json_object_get_double(a) == json_object_get_double(b);
	if (ta != tb)
		return false;
	switch (ta) {
	case json_type_null:
		return true;
	case json_type_boolean:
		return json_object_get_boolean(a) == json_object_get_boolean(b);
	case json_type_string:
		return strcmp(json_object_get_string(a), json_object_get_string(b)) == 0;
	case json_type_array:
		if (json_object_array_length(a) != json_object_array_length(b))
			return false;
		for (size_t i = 0; i < json_object_array_length(a); i++)
			if (!json_same(json_object_array_get_idx(a, i), json_object_array_get_idx(b, i)))
				return false;
		return true;
	case json_type_object: {
		if (json_object_object_length(a) != json_object_object_length(b))
			return false;
		json_object_object_foreach(a, k, v) {
			struct json_object *w;
			if (!json_object_object_get_ex(b, k, &w) || !json_same(v, w))
				return false;
		}
		return true;
	}
	default:
		return false;
	}
}

/* The cell as the expected value says: null, exact text, a double or a
 * float by value, or a JSON value. */
static bool cell_matches(const struct tab_cell *c, struct json_object *want)
{
	struct json_object *v;

	if (want == NULL)
		return c->kind == TAB_NULL;
	if (c->kind == TAB_NULL)
		return false;
	if (json_object_is_type(want, json_type_string))
		return strcmp(c->text, json_object_get_string(want)) == 0;
	if (json_object_object_get_ex(want, "double", &v))
		return c->kind == TAB_NUMBER && strtod(c->text, NULL) == json_object_get_double(v);
	if (json_object_object_get_ex(want, "float", &v))
		return c->kind == TAB_NUMBER &&
		       (float)strtod(c->text, NULL) == (float)json_object_get_double(v);
	if (json_object_object_get_ex(want, "json", &v)) {
		struct json_object *got = json_tokener_parse(c->text);
		bool same = got != NULL && json_same(got, v);
		json_object_put(got);
		return same;
	}
	return false;
}

static int cmp_header(void *arg, const struct tab_cell *names, size_t n)
{
	struct compare *k = arg;

	CU_ASSERT_EQUAL(n, json_object_array_length(k->cols));
	for (size_t i = 0; i < n && i < json_object_array_length(k->cols); i++) {
		const char *want = json_object_get_string(json_object_array_get_idx(k->cols, i));
		if (strcmp(names[i].text, want) != 0) {
			fprintf(stderr, "\n%s: column %zu is %s, DuckDB's %s\n", k->file, i,
			        names[i].text, want);
			k->mismatches++;
		}
	}
	return 0;
}

static int cmp_row(void *arg, const struct tab_cell *cells, size_t n)
{
	struct compare *k = arg;
	struct json_object *want = json_object_array_get_idx(k->rows, k->row);

	if (want == NULL || json_object_array_length(want) != n) {
		if (k->mismatches++ < 5)
			fprintf(stderr, "\n%s: row %zu has %zu cells, DuckDB's %zu\n", k->file, k->row,
			        n, want != NULL ? json_object_array_length(want) : 0);
		k->row++;
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *w = json_object_array_get_idx(want, i);
		if (!cell_matches(&cells[i], w) && k->mismatches++ < 5)
			fprintf(stderr, "\n%s: row %zu column %zu is %s, DuckDB's %s\n", k->file, k->row,
			        i, cells[i].kind == TAB_NULL ? "NULL" : cells[i].text,
			        w != NULL ? json_object_to_json_string(w) : "null");
	}
	k->row++;
	return 0;
}

static void expect_as_duckdb(const char *file, const char *expected)
{
	char path[512], want_path[512], err[512] = "";
	struct compare k = { .file = file };
	struct tab_sink sink = { cmp_header, cmp_row, &k };
	struct tab_stats st;
	struct json_object *exp;

	snprintf(path, sizeof path, "%s/%s", FIXTURE(""), file);
	snprintf(want_path, sizeof want_path, "%s/%s.expected.json", FIXTURE(""), expected);
	exp = json_object_from_file(want_path);
	CU_ASSERT_PTR_NOT_NULL_FATAL(exp);
	CU_ASSERT_FATAL(json_object_object_get_ex(exp, "columns", &k.cols));
	CU_ASSERT_FATAL(json_object_object_get_ex(exp, "rows", &k.rows));
	int rc = tab_read(path, TAB_PARQUET, NULL, &sink, &st, err, sizeof err);
	if (rc != 0)
		fprintf(stderr, "\n%s: %s\n", file, err);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(k.mismatches, 0);
	CU_ASSERT_EQUAL(k.row, json_object_array_length(k.rows));
	CU_ASSERT_EQUAL(st.rows, (long long)json_object_array_length(k.rows));
	json_object_put(exp);
}

/* DuckDB: SNAPPY (its default), UNCOMPRESSED, GZIP, ZSTD; dictionary pages
 * and several row groups; data pages v2 with DELTA_BINARY_PACKED,
 * DELTA_LENGTH_BYTE_ARRAY and BYTE_STREAM_SPLIT; nested values. */
static void test_duckdb_files(void)
{
	static const char *const files[][2] = {
		{ "types.parquet", "types" }, { "duck-uncompressed.parquet", "types" },
		{ "duck-gzip.parquet", "types" }, { "duck-zstd.parquet", "types" },
		{ "duck-dict.parquet", "duck-dict" }, { "duck-v2.parquet", "duck-v2" },
		{ "rowgroups.parquet", "rowgroups" }, { "nested.parquet", "nested" },
		{ "duck-nested.parquet", "duck-nested" },
	};

	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
		expect_as_duckdb(files[i][0], files[i][1]);
}

/* parquet-wasm (the Rust writer): pages v1 and v2, PLAIN, dictionary,
 * RLE booleans, DELTA_BINARY_PACKED and DELTA_BYTE_ARRAY, uncompressed,
 * SNAPPY, GZIP and ZSTD, pages of 1 KiB and row groups of 500 rows, a list
 * column; REQUIRED columns next to OPTIONAL ones. */
static void test_arrow_files(void)
{
	static const char *const files[] = {
		"arrow-v1-gzip-dict.parquet", "arrow-v1-none-plain.parquet",
		"arrow-v2-zstd-plain.parquet", "arrow-v2-snappy-dict.parquet",
		"arrow-v2-delta.parquet",
	};

	expect_as_duckdb("arrow.parquet", "arrow");
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
		expect_as_duckdb(files[i], "arrow-rows");
}

/* Cell kinds, as the inference's types are loaded. */
struct kinds {
	char got[16][8];
	size_t n;
};

static int kinds_row(void *arg, const struct tab_cell *cells, size_t n)
{
	struct kinds *k = arg;

	if (k->n++ > 0)
		return 1;                      /* the first row only, then stop */
	for (size_t i = 0; i < n && i < 16; i++)
		snprintf(k->got[i], sizeof k->got[i], "%d", (int)cells[i].kind);
	return 0;
}

/* The first row of types.parquet: numbers are numbers, booleans booleans,
 * dates dates; a sink that stops after it ends the read without error. */
static void test_cell_kinds(void)
{
	static const enum tab_cell_kind want[] = {
		TAB_NUMBER, TAB_NUMBER, TAB_NUMBER, TAB_NUMBER, TAB_BOOL, TAB_DATE, TAB_DATETIME,
		TAB_NUMBER, TAB_NUMBER, TAB_NUMBER, TAB_TEXT, TAB_NUMBER, TAB_NUMBER, TAB_NUMBER,
	};
	struct kinds k = { .n = 0 };
	struct tab_sink sink = { NULL, kinds_row, &k };
	struct tab_stats st;
	char err[256] = "";

	CU_ASSERT_EQUAL(tab_read(FIXTURE("types.parquet"), TAB_PARQUET, NULL, &sink, &st, err,
	                         sizeof err), 0);
	CU_ASSERT_EQUAL(k.n, 2);
	CU_ASSERT_EQUAL(st.rows, 2);
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		char w[8];
		snprintf(w, sizeof w, "%d", (int)want[i]);
		CU_ASSERT_STRING_EQUAL(k.got[i], w);
	}
}

/* ---- column chunks encoded here ------------------------------------------ */

enum { PAGE_V1 = 0, PAGE_DICT = 2, PAGE_V2 = 3 };

/* A page header: a data page v1 (def_enc and rep_enc RLE), a dictionary
 * page, or a data page v2 (levels lengths def_len, rep_len). */
static void w_page(struct tw *w, int type, int64_t num_values, int encoding, int64_t usize,
                   int64_t csize, int64_t def_len, int64_t rep_len)
{
	w->last[0] = 0;
	w_i32(w, 1, type);
	w_i32(w, 2, usize);
	w_i32(w, 3, csize);
	w_struct(w, type == PAGE_V1 ? 5 : type == PAGE_DICT ? 7 : 8);
	w_i32(w, 1, num_values);
	if (type == PAGE_V2) {
		w_i32(w, 2, 0);
		w_i32(w, 3, num_values);
		w_i32(w, 4, encoding);
		w_i32(w, 5, def_len);
		w_i32(w, 6, rep_len);
	} else {
		w_i32(w, 2, encoding);
		if (type == PAGE_V1) {
			w_i32(w, 3, 3);
			w_i32(w, 4, 3);
		}
	}
	w_stop(w);
	w_byte(w, 0);
}

static void w_bytes(struct tw *w, const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		w_byte(w, ((const unsigned char *)p)[i]);
}

static void w_le32(struct tw *w, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		w_byte(w, (v >> (8 * i)) & 0xff);
}

/* The chunk in w read through a cursor: the values (INT32, BOOLEAN) as
 * text into got ("1,-,3": - for a null), and the result of the last call. */
static int read_chunk(const struct tw *w, int type, int max_def, int codec,
                      int64_t num_values, char *got, size_t cap, char *err, size_t errlen)
{
	struct pq_src src = { .fd = -1, .mem = w->b, .size = w->n };
	struct pq_leaf_desc d = {
		.name = "c", .type = type, .max_def = max_def,
		.chunk = { .start = 0, .size = w->n, .num_values = num_values, .codec = codec },
	};
	struct pq_budget budget = { 0 };
	struct pq_cursor *c = NULL;
	struct pq_entry e;
	size_t n = 0;
	int rc;

	got[0] = '\0';
	err[0] = '\0';
	if ((rc = pq_cursor_open(&c, &src, &d, &budget, err, errlen)) != 0)
		return rc;
	while ((rc = pq_cursor_next(c, &e, err, errlen)) == 1) {
		int k = e.present ? snprintf(got + n, cap - n, "%s%lld", n ? "," : "", (long long)e.i)
		                  : snprintf(got + n, cap - n, "%s-", n ? "," : "");
		if (k > 0 && (size_t)k < cap - n)
			n += (size_t)k;
	}
	pq_cursor_free(c);
	CU_ASSERT_EQUAL(budget.held, 0);       /* every buffer given back */
	return rc;
}

static void expect_chunk(const struct tw *w, int type, int max_def, int codec, int64_t nv,
                         const char *want_values, const char *want_err)
{
	char got[256], err[256];
	int rc = read_chunk(w, type, max_def, codec, nv, got, sizeof got, err, sizeof err);

	if (want_err == NULL) {
		if (rc != 0)
			fprintf(stderr, "\nunexpected error: %s\n", err);
		CU_ASSERT_EQUAL(rc, 0);
		CU_ASSERT_STRING_EQUAL(got, want_values);
		return;
	}
	CU_ASSERT(rc < 0);
	if (strstr(err, want_err) == NULL)
		fprintf(stderr, "\nerror \"%s\" lacks \"%s\"\n", err, want_err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, want_err));
}

/* Definition levels as the hybrid writes them: a bit-packed run of 8
 * (1,0,1,1,0,1,1,1) and an RLE run of 2 ones; values PLAIN. */
static void test_levels_hybrid(void)
{
	struct tw w;
	const unsigned char levels[] = { 0x03, 0xed, 0x04, 0x01 };  /* 1 group; 2 x 1 */

	memset(&w, 0, sizeof w);
	w_page(&w, PAGE_V1, 10, 0, 4 + 4 + 8 * 4, 4 + 4 + 8 * 4, 0, 0);
	w_le32(&w, 4);
	w_bytes(&w, levels, 4);
	for (int i = 1; i <= 8; i++)
		w_le32(&w, (uint32_t)(i * 10));
	expect_chunk(&w, PT_INT32, 1, CODEC_UNCOMPRESSED, 10, "10,-,20,30,-,40,50,60,70,80", NULL);
	/* one value more than the chunk holds: the page runs short */
	expect_chunk(&w, PT_INT32, 1, CODEC_UNCOMPRESSED, 11, NULL, "ends 1 values short");
}

/* A dictionary page, then indices of 2 bits; an index past the
 * dictionary's end fails. */
static void test_dictionary(void)
{
	struct tw w;

	memset(&w, 0, sizeof w);
	w_page(&w, PAGE_DICT, 3, 0, 12, 12, 0, 0);
	w_le32(&w, 7);
	w_le32(&w, 8);
	w_le32(&w, 9);
	w_page(&w, PAGE_V1, 4, 8, 3, 3, 0, 0);          /* RLE_DICTIONARY, required */
	w_byte(&w, 2);                                   /* bit width */
	w_byte(&w, 0x03);                                /* 1 group of 8, bit-packed */
	w_byte(&w, 0x24);                                /* 0,1,2,0 */
	expect_chunk(&w, PT_INT32, 0, CODEC_UNCOMPRESSED, 4, "7,8,9,7", NULL);

	w.b[w.n - 1] = 0x27;                             /* 3,1,2,0: no entry 3 */
	expect_chunk(&w, PT_INT32, 0, CODEC_UNCOMPRESSED, 4, NULL,
	             "dictionary index is out of range");
	/* indices without a dictionary */
	memset(&w, 0, sizeof w);
	w_page(&w, PAGE_V1, 1, 8, 3, 3, 0, 0);
	w_byte(&w, 1); w_byte(&w, 0x02); w_byte(&w, 0);
	expect_chunk(&w, PT_INT32, 0, CODEC_UNCOMPRESSED, 1, NULL, "without a dictionary");
}

/* A data page v2: levels uncompressed first, then RLE booleans. */
static void test_page_v2(void)
{
	struct tw w;

	memset(&w, 0, sizeof w);
	/* def levels: RLE run of 3 ones (0x06 0x01); values: length 2, a
	 * bit-packed group 1,0,1 */
	w_page(&w, PAGE_V2, 3, 3, 2 + 4 + 2, 2 + 4 + 2, 2, 0);
	w_byte(&w, 0x06); w_byte(&w, 0x01);
	w_le32(&w, 2);
	w_byte(&w, 0x03); w_byte(&w, 0x05);
	expect_chunk(&w, PT_BOOLEAN, 1, CODEC_UNCOMPRESSED, 3, "1,0,1", NULL);

	memset(&w, 0, sizeof w);
	w_page(&w, PAGE_V2, 3, 3, 8, 8, 20, 0);           /* levels longer than the page */
	for (int i = 0; i < 8; i++)
		w_byte(&w, 0);
	expect_chunk(&w, PT_BOOLEAN, 1, CODEC_UNCOMPRESSED, 3, NULL, "levels run past its end");
}

/* Sizes a page header may not claim, codecs not read, a compressed page
 * that does not inflate to its declared size (a bomb, or a lie). */
static void test_page_sizes_and_codecs(void)
{
	struct tw w;
	char raw[64], packed[128];
	size_t plen = sizeof packed;

	memset(&w, 0, sizeof w);
	w_page(&w, PAGE_V1, 1, 0, (int64_t)PARQUET_PAGE_MAX + 1, 4, 0, 0);
	w_le32(&w, 1);
	expect_chunk(&w, PT_INT32, 0, CODEC_SNAPPY, 1, NULL, "over the limit of 128 MiB");

	memset(&w, 0, sizeof w);
	w_page(&w, PAGE_V1, 1, 0, 4, 400, 0, 0);          /* past the chunk's end */
	w_le32(&w, 1);
	expect_chunk(&w, PT_INT32, 0, CODEC_UNCOMPRESSED, 1, NULL, "runs past the end of its column");

	memset(&w, 0, sizeof w);
	w_page(&w, PAGE_V1, 1, 0, 4, 4, 0, 0);
	w_le32(&w, 1);
	expect_chunk(&w, PT_INT32, 0, CODEC_LZ4, 1, NULL, "compression LZ4 is not supported");

	/* Snappy: 64 bytes declared as 8 */
	memset(raw, 'a', sizeof raw);
	CU_ASSERT_FATAL(snappy_compress(raw, sizeof raw, packed, &plen) == SNAPPY_OK);
	memset(&w, 0, sizeof w);
	w_page(&w, PAGE_V1, 2, 0, 8, (int64_t)plen, 0, 0);
	w_bytes(&w, packed, plen);
	expect_chunk(&w, PT_INT32, 0, CODEC_SNAPPY, 2, NULL, "does not inflate to its declared 8");

	/* gzip: 1 MiB of zeros declared as 8 bytes: refused, nothing past 8 written */
	unsigned char *big = calloc(1, 1 << 20), gz[4096];
	z_stream z = { 0 };
	CU_ASSERT_FATAL(big != NULL);
	CU_ASSERT_FATAL(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
	z.next_in = big;
	z.avail_in = 1 << 20;
	z.next_out = gz;
	z.avail_out = sizeof gz;
	CU_ASSERT_FATAL(deflate(&z, Z_FINISH) == Z_STREAM_END);
	size_t glen = sizeof gz - z.avail_out;
	deflateEnd(&z);
	free(big);
	memset(&w, 0, sizeof w);
	w_page(&w, PAGE_V1, 2, 0, 8, (int64_t)glen, 0, 0);
	w_bytes(&w, gz, glen);
	expect_chunk(&w, PT_INT32, 0, CODEC_GZIP, 2, NULL, "does not inflate to its declared 8");

	/* and honest ones read */
	memset(&w, 0, sizeof w);
	int32_t vals[2] = { 5, -6 };
	plen = sizeof packed;
	CU_ASSERT_FATAL(snappy_compress((const char *)vals, 8, packed, &plen) == SNAPPY_OK);
	w_page(&w, PAGE_V1, 2, 0, 8, (int64_t)plen, 0, 0);
	w_bytes(&w, packed, plen);
	expect_chunk(&w, PT_INT32, 0, CODEC_SNAPPY, 2, "5,-6", NULL);
}

/* Encodings not read name themselves. */
static void test_unknown_encoding(void)
{
	struct tw w;

	memset(&w, 0, sizeof w);
	w_page(&w, PAGE_V1, 1, 5, 4, 4, 0, 0);            /* DELTA_BINARY_PACKED on BOOLEAN */
	w_le32(&w, 0);
	expect_chunk(&w, PT_BOOLEAN, 0, CODEC_UNCOMPRESSED, 1, NULL,
	             "values encoded DELTA_BINARY_PACKED are not supported for BOOLEAN");
}

/* Every byte of a small real file changed in turn: each read either
 * succeeds or fails with a reason, and never reads out of bounds (the
 * sanitizer build checks that). */
static void test_damaged_bytes(void)
{
	FILE *f = fopen(FIXTURE("duck-nested.parquet"), "rb");
	unsigned char buf[4096];
	char path[] = "/tmp/sluice-pq-XXXXXX", err[512];
	size_t n;
	int fd = mkstemp(path);

	CU_ASSERT_FATAL(f != NULL && fd >= 0);
	n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	CU_ASSERT_FATAL(n > 100 && n < sizeof buf);
	for (size_t i = 4; i < n - 8; i++) {
		unsigned char keep = buf[i];
		buf[i] ^= 0x5a;
		CU_ASSERT_FATAL(pwrite(fd, buf, n, 0) == (ssize_t)n);
		err[0] = '\0';
		int rc = tab_read(path, TAB_PARQUET, NULL, &(struct tab_sink){ 0 }, NULL, err,
		                  sizeof err);
		if (rc != 0 && err[0] == '\0') {
			fprintf(stderr, "\nbyte %zu changed: rc %d without a reason\n", i, rc);
			CU_FAIL("a failure without a reason");
		}
		buf[i] = keep;
	}
	close(fd);
	unlink(path);
}

int suite_tabular_parquet_rows(void)
{
	static const struct test_case tests[] = {
		{ "DuckDB's files: cells as DuckDB reads them", test_duckdb_files },
		{ "parquet-wasm's files: cells as DuckDB reads them", test_arrow_files },
		{ "cell kinds; a sink that stops", test_cell_kinds },
		{ "definition levels: bit-packed and RLE runs", test_levels_hybrid },
		{ "dictionary pages and indices", test_dictionary },
		{ "data page v2: levels apart, RLE booleans", test_page_v2 },
		{ "page size caps, codecs, decompression bombs", test_page_sizes_and_codecs },
		{ "an encoding not read names itself", test_unknown_encoding },
		{ "every byte of a file damaged in turn", test_damaged_bytes },
		{ NULL, NULL },
	};
	return suite_add("tabular_parquet_rows", tests);
}
