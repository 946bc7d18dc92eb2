/* test_tabular_parquet.c - columns and row counts from the footers of files
 * written by DuckDB and by the Rust parquet writer (parquet-wasm); damaged
 * files; footers encoded here, field by field, to reach what those writers
 * do not write (INT96, legacy annotations, wide decimals) and what no
 * writer should (lies about sizes, deep nesting, cut-off bytes). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"
#include "binary_fixtures.h"
#include "thrift_writer.h"
#include "tabular/formats.h"
#include "tabular/parquet.h"

/* DuckDB writes every column OPTIONAL. */
static void test_duckdb_types(void)
{
	static const struct want_col want[] = {
		{ "i32", INFER_INTEGER, 0, 0, true },
		{ "i64", INFER_BIGINT, 0, 0, true },
		{ "d", INFER_DOUBLE, 0, 0, true },
		{ "f", INFER_DOUBLE, 0, 0, true },
		{ "b", INFER_BOOLEAN, 0, 0, true },
		{ "dt", INFER_DATE, 0, 0, true },
		{ "ts", INFER_TIMESTAMP, 0, 0, true },
		{ "dec", INFER_DECIMAL, 10, 2, true },        /* on INT64 */
		{ "dec18", INFER_DECIMAL, 18, 4, true },
		{ "dec38", INFER_DECIMAL, 38, 6, true },      /* on FIXED_LEN_BYTE_ARRAY */
		{ "v", INFER_VARCHAR, 0, 0, true },
		{ "small", INFER_INTEGER, 0, 0, true },       /* INT_16 */
		{ "tiny", INFER_INTEGER, 0, 0, true },        /* UINT_8 */
		{ "u32", INFER_BIGINT, 0, 0, true },          /* UINT_32 does not fit INTEGER */
	};
	struct infer_result r;
	char err[256] = "";

	CU_ASSERT_EQUAL_FATAL(parquet_infer(FIXTURE("types.parquet"), &r, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(err, "");
	expect_cols(&r, want, sizeof want / sizeof want[0]);
	CU_ASSERT_EQUAL(r.row_count, 3);
	CU_ASSERT_EQUAL(r.analyzed_rows, 3);
	infer_result_free(&r);
}

/* parquet-wasm: REQUIRED columns, logical type annotations. */
static void test_arrow_types(void)
{
	static const struct want_col want[] = {
		{ "id", INFER_INTEGER, 0, 0, false },
		{ "label", INFER_VARCHAR, 0, 0, true },       /* STRING */
		{ "n8", INFER_INTEGER, 0, 0, false },         /* INTEGER(8, signed) */
		{ "u64", INFER_DECIMAL, 20, 0, true },        /* INTEGER(64, unsigned) */
		{ "day", INFER_DATE, 0, 0, false },
		{ "ts", INFER_TIMESTAMP, 0, 0, true },        /* TIMESTAMP(MILLIS) */
		{ "x", INFER_DOUBLE, 0, 0, false },
	};
	struct infer_result r;
	char err[256] = "";

	CU_ASSERT_EQUAL_FATAL(parquet_infer(FIXTURE("arrow.parquet"), &r, err, sizeof err), 0);
	expect_cols(&r, want, sizeof want / sizeof want[0]);
	CU_ASSERT_EQUAL(r.row_count, 3);
	CU_ASSERT_EQUAL(r.analyzed_rows, 3);
	infer_result_free(&r);
}

/* A struct inside a struct, a list, TIMESTAMPTZ, TIME, BLOB, UUID. */
static void test_nested(void)
{
	static const struct want_col want[] = {
		{ "id", INFER_BIGINT, 0, 0, true },
		{ "info.name", INFER_VARCHAR, 0, 0, true },
		{ "info.geo.lat", INFER_DECIMAL, 21, 1, true },
		{ "info.geo.lon", INFER_DECIMAL, 21, 1, true },
		{ "tags", INFER_VARCHAR, 0, 0, true },        /* a LIST: one column */
		{ "tz", INFER_TIMESTAMP, 0, 0, true },
		{ "tm", INFER_VARCHAR, 0, 0, true },          /* TIME */
		{ "raw", INFER_VARCHAR, 0, 0, true },
		{ "u", INFER_VARCHAR, 0, 0, true },           /* UUID */
	};
	struct infer_result r;
	char err[256] = "";

	CU_ASSERT_EQUAL_FATAL(parquet_infer(FIXTURE("nested.parquet"), &r, err, sizeof err), 0);
	expect_cols(&r, want, sizeof want / sizeof want[0]);
	CU_ASSERT_EQUAL(r.row_count, 4);
	infer_result_free(&r);
}

/* Through infer_file: the same schema, and the options Parquet refuses. */
static void test_infer_file(void)
{
	struct tab_opts o;
	struct infer_result r;
	char err[256] = "";

	CU_ASSERT_EQUAL_FATAL(infer_file(FIXTURE("types.parquet"), TAB_PARQUET, NULL, &r, err,
	                                 sizeof err), 0);
	CU_ASSERT_EQUAL(r.ncols, 14);
	CU_ASSERT_EQUAL(r.row_count, 3);
	CU_ASSERT_EQUAL(r.analyzed_rows, 3);
	infer_result_free(&r);

	tab_opts_init(&o);
	o.skip_rows = 1;
	CU_ASSERT_EQUAL(infer_file(FIXTURE("types.parquet"), TAB_PARQUET, &o, &r, err, sizeof err),
	                TAB_ERR_OPTION);
	tab_opts_init(&o);
	strcpy(o.sheet_name, "x");
	CU_ASSERT_EQUAL(infer_file(FIXTURE("types.parquet"), TAB_PARQUET, &o, &r, err, sizeof err),
	                TAB_ERR_OPTION);
	CU_ASSERT_EQUAL(infer_file(FIXTURE("bad-magic.parquet"), TAB_PARQUET, NULL, &r, err,
	                           sizeof err), TAB_ERR_FORMAT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "no PAR1 magic"));
}

static void test_row_groups(void)
{
	static const struct want_col want[] = { { "n", INFER_BIGINT, 0, 0, true } };
	struct infer_result r;
	char err[256] = "";

	CU_ASSERT_EQUAL_FATAL(parquet_infer(FIXTURE("rowgroups.parquet"), &r, err, sizeof err), 0);
	expect_cols(&r, want, 1);
	CU_ASSERT_EQUAL(r.row_count, 2500);        /* two row groups of 1000 and one of 500 */
	CU_ASSERT_EQUAL(r.analyzed_rows, 2500);
	infer_result_free(&r);
}

static void expect_file_fails(const char *path, int want_rc, const char *want_err)
{
	struct infer_result r;
	char err[256] = "";

	CU_ASSERT_EQUAL(parquet_infer(path, &r, err, sizeof err), want_rc);
	if (strstr(err, want_err) == NULL)
		fprintf(stderr, "\n%s: error \"%s\" lacks \"%s\"\n", path, err, want_err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, want_err));
	CU_ASSERT_PTR_NULL(r.cols);
	CU_ASSERT_EQUAL(r.ncols, 0);
}

static void test_malformed_files(void)
{
	expect_file_fails(FIXTURE("bad-magic.parquet"), TAB_ERR_FORMAT,
	                  "not a Parquet file: no PAR1 magic at the start");
	expect_file_fails(FIXTURE("footer-past-end.parquet"), TAB_ERR_FORMAT,
	                  "Parquet footer length 1815 is past the start of the file (1815 bytes)");
	expect_file_fails(FIXTURE("empty.parquet"), TAB_ERR_FORMAT, "empty file");
	expect_file_fails(FIXTURE("types.xlsx"), TAB_ERR_FORMAT, "no PAR1 magic at the start");
	expect_file_fails(FIXTURE("no-such-file.parquet"), TAB_ERR_IO, "cannot open");
}

/* ---- footers encoded here ---------------------------------------------- */

enum { NONE = -1000 };

/* One SchemaElement as a list element; NONE leaves a field out. */
static void w_elem(struct tw *w, const char *name, int type, int rep, int children, int conv,
                   int scale, int precision)
{
	w_push(w);
	if (type != NONE) w_i32(w, 1, type);
	if (rep != NONE) w_i32(w, 3, rep);
	w_str(w, 4, name);
	if (children != NONE) w_i32(w, 5, children);
	if (conv != NONE) w_i32(w, 6, conv);
	if (scale != NONE) w_i32(w, 7, scale);
	if (precision != NONE) w_i32(w, 8, precision);
	w_stop(w);
}

static void w_meta_begin(struct tw *w, uint64_t nelems)
{
	memset(w, 0, sizeof *w);
	w_i32(w, 1, 1);
	w_list(w, 2, 12, nelems);
}

static void w_meta_end(struct tw *w, int64_t rows)
{
	w_i64(w, 3, rows);
	w_list(w, 4, 12, 0);                         /* row_groups, skipped */
	w_str(w, 6, "sluice tests");                  /* created_by, skipped */
	w_byte(w, 0);
}

/* INT96, converted types without logical ones, a repeated primitive, a
 * decimal wider than 38 digits, a REQUIRED group above an OPTIONAL leaf,
 * a MAP group, a BYTE_ARRAY decimal, an unknown field of every kind. */
static void test_encoded(void)
{
	static const struct want_col want[] = {
		{ "legacy_ts", INFER_TIMESTAMP, 0, 0, false },
		{ "amount", INFER_DECIMAL, 9, 3, true },
		{ "huge", INFER_VARCHAR, 0, 0, true },
		{ "ids", INFER_VARCHAR, 0, 0, true },
		{ "g.leaf", INFER_INTEGER, 0, 0, true },
		{ "g.strict", INFER_BOOLEAN, 0, 0, false },
		{ "m", INFER_VARCHAR, 0, 0, false },
		{ "bd", INFER_DECIMAL, 30, 10, false },
		{ "ms", INFER_TIMESTAMP, 0, 0, false },
		{ "date_on_text", INFER_VARCHAR, 0, 0, false },
	};
	struct tw w;
	struct infer_result r;
	char err[256] = "";

	w_meta_begin(&w, 15);
	w_elem(&w, "schema", NONE, NONE, 9, NONE, NONE, NONE);
	w_elem(&w, "legacy_ts", 3, 0, NONE, NONE, NONE, NONE);          /* INT96 */
	w_elem(&w, "amount", 1, 1, NONE, 5, 3, 9);                      /* DECIMAL on INT32 */
	w_elem(&w, "huge", 7, 1, NONE, 5, 2, 40);                       /* 40 digits */
	w_elem(&w, "ids", 2, 2, NONE, NONE, NONE, NONE);                /* repeated INT64 */
	w_elem(&w, "g", NONE, 0, 2, NONE, NONE, NONE);
	w_elem(&w, "leaf", 1, 1, NONE, 17, NONE, NONE);                 /* INT_32 */
	w_elem(&w, "strict", 0, 0, NONE, NONE, NONE, NONE);
	w_elem(&w, "m", NONE, 0, 1, 1, NONE, NONE);                     /* MAP */
	w_elem(&w, "key_value", NONE, 2, 2, 2, NONE, NONE);
	w_elem(&w, "key", 6, 0, NONE, 0, NONE, NONE);
	w_elem(&w, "value", 6, 1, NONE, 0, NONE, NONE);
	w_elem(&w, "bd", 6, 0, NONE, 5, 10, 30);                        /* DECIMAL on BYTE_ARRAY */
	w_elem(&w, "ms", 2, 0, NONE, 9, NONE, NONE);                    /* TIMESTAMP_MILLIS */
	w_elem(&w, "date_on_text", 6, 0, NONE, 6, NONE, NONE);          /* DATE on BYTE_ARRAY */
	/* fields this reader does not know, to be skipped */
	w_field(&w, 1, 20);                                             /* true */
	w_field(&w, 2, 21);                                             /* false */
	w_field(&w, 3, 22); w_byte(&w, 7);                              /* byte */
	w_field(&w, 4, 23); w_varint(&w, 99);                           /* i16 */
	w_field(&w, 7, 24); for (int i = 0; i < 8; i++) w_byte(&w, 0);  /* double */
	w_field(&w, 11, 25); w_varint(&w, 2); w_byte(&w, 0x85);         /* map<binary, i32> */
	w_varint(&w, 1); w_byte(&w, 'a'); w_varint(&w, 2);
	w_varint(&w, 1); w_byte(&w, 'b'); w_varint(&w, 4);
	w_field(&w, 11, 26); w_varint(&w, 0);                           /* an empty map */
	w_field(&w, 10, 27); w_byte(&w, 0x21); w_byte(&w, 1); w_byte(&w, 2); /* set<bool> */
	w_field(&w, 9, 300); w_byte(&w, 0x15); w_varint(&w, 3);         /* a long field id */
	w_meta_end(&w, 123456789012LL);

	CU_ASSERT_EQUAL_FATAL(parquet_footer_parse(w.b, w.n, &r, err, sizeof err), 0);
	expect_cols(&r, want, sizeof want / sizeof want[0]);
	CU_ASSERT_EQUAL(r.row_count, 123456789012LL);
	CU_ASSERT_EQUAL(r.analyzed_rows, 123456789012LL);
	infer_result_free(&r);
}

static void expect_parse_fails(const struct tw *w, const char *want_err)
{
	struct infer_result r;
	char err[256] = "";

	CU_ASSERT_EQUAL(parquet_footer_parse(w->b, w->n, &r, err, sizeof err), TAB_ERR_FORMAT);
	if (strstr(err, want_err) == NULL)
		fprintf(stderr, "\nerror \"%s\" lacks \"%s\"\n", err, want_err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, want_err));
	CU_ASSERT_PTR_NULL(r.cols);
}

static void one_column(struct tw *w, const char *name, int conv, int scale, int precision)
{
	w_meta_begin(w, 2);
	w_elem(w, "schema", NONE, NONE, 1, NONE, NONE, NONE);
	w_elem(w, name, 2, 1, NONE, conv, scale, precision);
}

/* Names as every reader's header has them: a long one cut (not inside a
 * character), an empty one columnN (0-based), one already taken (ignoring
 * case) with _1, _2 (DuckDB's names). */
static void test_names(void)
{
	static const char *const want[] = { NULL, "column1", "a.b", "A.B_1", "a.B_2", "x" };
	char longname[300], cut[256];
	struct tw w;
	struct infer_result r;
	char err[256] = "";

	/* 253 bytes, then a 3-byte character that does not fit in 255, more */
	memset(longname, 'n', 253);
	memcpy(longname + 253, "\xe2\x98\x83tail", 8);
	longname[261] = '\0';
	memcpy(cut, longname, 253);
	cut[253] = '\0';
	w_meta_begin(&w, 8);
	w_elem(&w, "schema", NONE, NONE, 6, NONE, NONE, NONE);
	w_elem(&w, longname, 1, 0, NONE, NONE, NONE, NONE);
	w_elem(&w, "", 1, 0, NONE, NONE, NONE, NONE);
	w_elem(&w, "a", NONE, 0, 1, NONE, NONE, NONE);
	w_elem(&w, "b", 1, 0, NONE, NONE, NONE, NONE);
	w_elem(&w, "A.B", 1, 0, NONE, NONE, NONE, NONE);
	w_elem(&w, "a.B", 1, 0, NONE, NONE, NONE, NONE);
	w_elem(&w, "x", 1, 0, NONE, NONE, NONE, NONE);
	w_meta_end(&w, 1);
	CU_ASSERT_EQUAL_FATAL(parquet_footer_parse(w.b, w.n, &r, err, sizeof err), 0);
	CU_ASSERT_EQUAL_FATAL(r.ncols, 6);
	CU_ASSERT_STRING_EQUAL(r.cols[0].name, cut);
	for (size_t i = 1; i < 6; i++)
		CU_ASSERT_STRING_EQUAL(r.cols[i].name, want[i]);
	infer_result_free(&r);
}

static void test_encoded_bad(void)
{
	struct tw w;

	one_column(&w, "d", 5, 5, 3);
	w_meta_end(&w, 1);
	expect_parse_fails(&w, "Parquet column d: bad decimal precision 3, scale 5");
	one_column(&w, "d", 5, NONE, NONE);
	w_meta_end(&w, 1);
	expect_parse_fails(&w, "bad decimal precision -1");

	one_column(&w, "x", NONE, NONE, NONE);
	w_byte(&w, 0);                                               /* no num_rows */
	expect_parse_fails(&w, "num_rows missing or negative");
	one_column(&w, "x", NONE, NONE, NONE);
	w_meta_end(&w, -1);
	expect_parse_fails(&w, "num_rows missing or negative");

	one_column(&w, "bad\xff", NONE, NONE, NONE);
	w_meta_end(&w, 1);
	expect_parse_fails(&w, "not valid UTF-8");
	w_meta_begin(&w, 2);
	w_elem(&w, "schema", NONE, NONE, 1, NONE, NONE, NONE);
	w_push(&w);
	w_i32(&w, 1, 2);
	w_bin(&w, 4, "nul\0x", 5);
	w_stop(&w);
	w_meta_end(&w, 1);
	expect_parse_fails(&w, "not valid UTF-8");
	/* the root claims more children than there are elements */
	w_meta_begin(&w, 2);
	w_elem(&w, "schema", NONE, NONE, 2, NONE, NONE, NONE);
	w_elem(&w, "a", 1, 0, NONE, NONE, NONE, NONE);
	w_meta_end(&w, 1);
	expect_parse_fails(&w, "the schema root has 2 children of 2 elements");
	/* a group that claims more */
	w_meta_begin(&w, 3);
	w_elem(&w, "schema", NONE, NONE, 1, NONE, NONE, NONE);
	w_elem(&w, "g", NONE, 0, 5, NONE, NONE, NONE);
	w_elem(&w, "a", 1, 0, NONE, NONE, NONE, NONE);
	w_meta_end(&w, 1);
	expect_parse_fails(&w, "schema ends inside a group");
	/* elements left over */
	w_meta_begin(&w, 3);
	w_elem(&w, "schema", NONE, NONE, 1, NONE, NONE, NONE);
	w_elem(&w, "a", 1, 0, NONE, NONE, NONE, NONE);
	w_elem(&w, "b", 1, 0, NONE, NONE, NONE, NONE);
	w_meta_end(&w, 1);
	expect_parse_fails(&w, "1 schema elements outside the tree");
	/* a leaf without a type */
	w_meta_begin(&w, 2);
	w_elem(&w, "schema", NONE, NONE, 1, NONE, NONE, NONE);
	w_elem(&w, "a", NONE, 0, NONE, NONE, NONE, NONE);
	w_meta_end(&w, 1);
	expect_parse_fails(&w, "Parquet column a has no type");
	/* an unknown physical type */
	w_meta_begin(&w, 2);
	w_elem(&w, "schema", NONE, NONE, 1, NONE, NONE, NONE);
	w_elem(&w, "a", 9, 0, NONE, NONE, NONE, NONE);
	w_meta_end(&w, 1);
	expect_parse_fails(&w, "unknown physical type 9");
	/* no schema at all, an empty one */
	memset(&w, 0, sizeof w);
	w_i64(&w, 3, 1);
	w_byte(&w, 0);
	expect_parse_fails(&w, "no schema");
	w_meta_begin(&w, 0);
	w_meta_end(&w, 1);
	expect_parse_fails(&w, "0 schema elements");

	/* a list that says it is longer than the bytes left */
	w_meta_begin(&w, 1000000000);
	expect_parse_fails(&w, "list longer than the footer");
	/* a string that says it is longer than the bytes left */
	memset(&w, 0, sizeof w);
	w_field(&w, 8, 6);
	w_varint(&w, 1u << 30);
	expect_parse_fails(&w, "string longer than the footer");
	/* a varint that never ends, one past 64 bits */
	memset(&w, 0, sizeof w);
	w_field(&w, 6, 3);
	for (int i = 0; i < 11; i++)
		w_byte(&w, 0xff);
	expect_parse_fails(&w, "varint");
	/* structs inside structs past the depth limit */
	memset(&w, 0, sizeof w);
	for (int i = 0; i < 70; i++)
		w_struct(&w, 99);
	for (int i = 0; i < 70; i++)
		w_stop(&w);
	w_byte(&w, 0);
	expect_parse_fails(&w, "nesting too deep");
	/* an unknown type code */
	memset(&w, 0, sizeof w);
	w_field(&w, 13, 99);
	expect_parse_fails(&w, "unknown Thrift type");
	/* a field of the wrong type */
	memset(&w, 0, sizeof w);
	w_str(&w, 3, "rows");
	expect_parse_fails(&w, "unexpected type");
	/* nothing */
	expect_parse_fails(&(struct tw){ .n = 0 }, "empty");
}

/* Every prefix of a real footer is refused with a reason, never read past. */
static void test_truncated_footers(void)
{
	FILE *f = fopen(FIXTURE("types.parquet"), "rb");
	unsigned char *buf = NULL;
	long size;
	size_t flen;

	CU_ASSERT_FATAL(f != NULL);
	CU_ASSERT_FATAL(fseek(f, 0, SEEK_END) == 0);
	size = ftell(f);
	CU_ASSERT_FATAL(size > 12);
	buf = malloc((size_t)size);
	CU_ASSERT_FATAL(buf != NULL);
	rewind(f);
	CU_ASSERT_FATAL(fread(buf, 1, (size_t)size, f) == (size_t)size);
	fclose(f);
	flen = (size_t)buf[size - 8] | (size_t)buf[size - 7] << 8 | (size_t)buf[size - 6] << 16 |
	       (size_t)buf[size - 5] << 24;
	CU_ASSERT_FATAL(flen + 12 <= (size_t)size);
	const unsigned char *footer = buf + size - 8 - flen;

	struct infer_result r;
	char err[256];
	CU_ASSERT_EQUAL(parquet_footer_parse(footer, flen, &r, err, sizeof err), 0);
	CU_ASSERT_EQUAL(r.ncols, 14);
	infer_result_free(&r);
	for (size_t n = 0; n < flen; n++) {
		/* a copy of exactly n bytes, so that ASan sees any read past it */
		unsigned char *cut = malloc(n ? n : 1);
		CU_ASSERT_FATAL(cut != NULL);
		memcpy(cut, footer, n);
		err[0] = '\0';
		int rc = parquet_footer_parse(cut, n, &r, err, sizeof err);
		CU_ASSERT_EQUAL(rc, TAB_ERR_FORMAT);
		CU_ASSERT(err[0] != '\0');
		CU_ASSERT_PTR_NULL(r.cols);
		free(cut);
	}
	free(buf);
}

int suite_tabular_parquet(void)
{
	static const struct test_case tests[] = {
		{ "DuckDB: physical, converted and decimal types; row count", test_duckdb_types },
		{ "parquet-wasm: REQUIRED columns, logical types", test_arrow_types },
		{ "structs flattened with dots, lists as one column", test_nested },
		{ "num_rows over several row groups", test_row_groups },
		{ "through infer_file; options Parquet does not take", test_infer_file },
		{ "bad magic, footer length past the start, empty, foreign", test_malformed_files },
		{ "INT96, legacy annotations, wide decimals, unknown fields", test_encoded },
		{ "names cut, named, made unique as other formats'", test_names },
		{ "bad decimals, counts, names, sizes, depth, types", test_encoded_bad },
		{ "every truncation of a real footer", test_truncated_footers },
		{ NULL, NULL },
	};
	return suite_add("tabular_parquet", tests);
}
