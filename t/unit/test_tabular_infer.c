/* test_tabular_infer.c - the type of one value, widening across values,
 * nullability, typed cells, the schema JSON, the SQL types, format names
 * and options. */
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "suites.h"
#include "tabular/internal.h"
#include "tabular/tabular.h"
#include "tabular_test.h"

struct class_case { const char *text; enum infer_type want; int int_digits, scale; };

static const struct class_case classes[] = {
	/* integers: 32-bit limits, then 64-bit, then DECIMAL(n,0), then DOUBLE */
	{ "0", INFER_INTEGER, 1, 0 },
	{ "-0", INFER_INTEGER, 1, 0 },
	{ "+7", INFER_INTEGER, 1, 0 },
	{ "2147483647", INFER_INTEGER, 10, 0 },
	{ "2147483648", INFER_BIGINT, 10, 0 },
	{ "-2147483648", INFER_INTEGER, 10, 0 },
	{ "-2147483649", INFER_BIGINT, 10, 0 },
	{ "9999999999", INFER_BIGINT, 10, 0 },
	{ "9223372036854775807", INFER_BIGINT, 19, 0 },
	{ "-9223372036854775808", INFER_BIGINT, 19, 0 },
	{ "9223372036854775808", INFER_DECIMAL, 19, 0 },
	{ "-9223372036854775809", INFER_DECIMAL, 19, 0 },
	{ "99999999999999999999999999999999999999", INFER_DECIMAL, 38, 0 },
	{ "999999999999999999999999999999999999999", INFER_DOUBLE, 0, 0 },
	/* codes with leading zeros are text */
	{ "007", INFER_VARCHAR, 0, 0 },
	{ "-01", INFER_VARCHAR, 0, 0 },
	{ "00.5", INFER_VARCHAR, 0, 0 },
	{ "01e3", INFER_VARCHAR, 0, 0 },
	/* decimals: precision and scale as written */
	{ "12.50", INFER_DECIMAL, 2, 2 },
	{ "-3.1", INFER_DECIMAL, 1, 1 },
	{ "0.5", INFER_DECIMAL, 0, 1 },
	{ "-0.25", INFER_DECIMAL, 0, 2 },
	{ ".5", INFER_DECIMAL, 0, 1 },
	{ " -.03957", INFER_DECIMAL, 0, 5 },         /* Stata's leading point */
	{ "0x7f800000", INFER_VARCHAR, 0, 0 },       /* hexadecimal is text */
	{ "1.00000000000000000000000000000000000001", INFER_DOUBLE, 0, 0 },
	{ "1234567890123456789.1234567890123456789", INFER_DECIMAL, 19, 19 },
	{ "1234567890123456789.12345678901234567890", INFER_DOUBLE, 0, 0 },
	{ "123456789012345678.12345678901234567890", INFER_DECIMAL, 18, 20 },
	{ "5.", INFER_DOUBLE, 0, 0 },                /* DuckDB reads it as a float */
	{ ".", INFER_VARCHAR, 0, 0 },
	{ "-", INFER_VARCHAR, 0, 0 },
	{ "+", INFER_VARCHAR, 0, 0 },
	{ "1.2.3", INFER_VARCHAR, 0, 0 },
	{ "1,234", INFER_VARCHAR, 0, 0 },
	{ " 1", INFER_INTEGER, 1, 0 },             /* blanks around a value aside */
	{ "\t-2.50 ", INFER_DECIMAL, 1, 2 },
	{ "1 ", INFER_INTEGER, 1, 0 },
	{ "  ", INFER_VARCHAR, 0, 0 },
	{ "--1", INFER_VARCHAR, 0, 0 },
	/* exponents are DOUBLE */
	{ "1e5", INFER_DOUBLE, 0, 0 },
	{ "-2.5E-3", INFER_DOUBLE, 0, 0 },
	{ "0e0", INFER_DOUBLE, 0, 0 },
	{ "1.5e+10", INFER_DOUBLE, 0, 0 },
	{ "3.3E-010", INFER_DOUBLE, 0, 0 },        /* R's exponents: '-' where a date has it */
	{ "12.4/5678", INFER_VARCHAR, 0, 0 },
	{ "1e", INFER_VARCHAR, 0, 0 },
	{ "1e+", INFER_VARCHAR, 0, 0 },
	{ "e5", INFER_VARCHAR, 0, 0 },
	{ "1e5x", INFER_VARCHAR, 0, 0 },
	{ "inf", INFER_DOUBLE, 0, 0 },              /* NaN and Inf: floats */
	{ "-Inf", INFER_DOUBLE, 0, 0 },
	{ "+infinity", INFER_DOUBLE, 0, 0 },
	{ "-nan", INFER_DOUBLE, 0, 0 },
	{ "infinit", INFER_VARCHAR, 0, 0 },
	{ "-", INFER_VARCHAR, 0, 0 },
	{ "-x", INFER_VARCHAR, 0, 0 },
	{ "NaN", INFER_DOUBLE, 0, 0 },
	/* booleans: true/false, t/f, yes/no in any case */
	{ "true", INFER_BOOLEAN, 0, 0 },
	{ "FALSE", INFER_BOOLEAN, 0, 0 },
	{ "True", INFER_BOOLEAN, 0, 0 },
	{ "yes", INFER_BOOLEAN, 0, 0 },             /* as DuckDB: t f yes no too */
	{ "NO", INFER_BOOLEAN, 0, 0 },
	{ "F", INFER_BOOLEAN, 0, 0 },
	{ "y", INFER_VARCHAR, 0, 0 },
	{ "NA", INFER_VARCHAR, 0, 0 },
	{ ".", INFER_VARCHAR, 0, 0 },
	{ "t", INFER_BOOLEAN, 0, 0 },
	{ "trues", INFER_VARCHAR, 0, 0 },
	/* dates */
	{ "2024-01-31", INFER_DATE, 0, 0 },
	{ "2024-02-29", INFER_DATE, 0, 0 },
	{ "2000-02-29", INFER_DATE, 0, 0 },
	{ "1900-02-29", INFER_VARCHAR, 0, 0 },
	{ "2023-02-29", INFER_VARCHAR, 0, 0 },
	{ "2024-04-31", INFER_VARCHAR, 0, 0 },
	{ "2024-13-01", INFER_VARCHAR, 0, 0 },
	{ "2024-00-10", INFER_VARCHAR, 0, 0 },
	{ "2024-1-01", INFER_DATE, 0, 0 },          /* one-digit month and day */
	{ "1988-4-2", INFER_DATE, 0, 0 },
	{ "1988-4-31", INFER_VARCHAR, 0, 0 },
	{ "1988-123-1", INFER_VARCHAR, 0, 0 },
	{ "2024-01/02", INFER_VARCHAR, 0, 0 },
	{ "2024-1-01 10:00", INFER_VARCHAR, 0, 0 },
	{ "2024/01/01", INFER_DATE, 0, 0 },
	{ "2010/01/01 00:00", INFER_TIMESTAMP, 0, 0 },
	{ "01/02/2024", INFER_VARCHAR, 0, 0 },
	/* timestamps */
	{ "2024-01-31T10:20:30", INFER_TIMESTAMP, 0, 0 },
	{ "2024-01-31 10:20:30", INFER_TIMESTAMP, 0, 0 },
	{ "2024-01-31 10:20", INFER_TIMESTAMP, 0, 0 },
	{ "2024-01-31T10:20:30.123456", INFER_TIMESTAMP, 0, 0 },
	{ "2024-01-31T10:20:30.123456789Z", INFER_TIMESTAMP, 0, 0 },
	{ "2024-01-31T10:20:30+02:00", INFER_TIMESTAMP, 0, 0 },
	{ "2024-01-31T10:20:30-0530", INFER_TIMESTAMP, 0, 0 },
	{ "2024-01-31T10:20:30+02", INFER_TIMESTAMP, 0, 0 },
	{ "2024-01-31T10:20:30.1234567890", INFER_VARCHAR, 0, 0 },
	{ "2024-01-31T24:00:00", INFER_VARCHAR, 0, 0 },
	{ "2024-01-31T10:60:00", INFER_VARCHAR, 0, 0 },
	{ "2024-01-31T10:20:61", INFER_VARCHAR, 0, 0 },
	{ "2024-01-31T10", INFER_VARCHAR, 0, 0 },
	{ "2024-01-31  10:20", INFER_VARCHAR, 0, 0 },
	{ "2024-01-31T10:20:30.", INFER_VARCHAR, 0, 0 },
	{ "2024-01-31T10:20:30ZZ", INFER_VARCHAR, 0, 0 },
	{ "2024-01-31T10:20:30+2", INFER_VARCHAR, 0, 0 },
	{ "2024-01-31x", INFER_VARCHAR, 0, 0 },
	/* text */
	{ "hello", INFER_VARCHAR, 0, 0 },
	{ "null", INFER_VARCHAR, 0, 0 },
	{ "caf\xc3\xa9", INFER_VARCHAR, 0, 0 },
	{ NULL, 0, 0, 0 },
};

static void test_classify(void)
{
	for (const struct class_case *c = classes; c->text != NULL; c++) {
		int id = -1, sc = -1;
		enum infer_type t = infer_classify_text(c->text, strlen(c->text), &id, &sc);

		if (t != c->want || (t == INFER_DECIMAL && (id != c->int_digits || sc != c->scale)))
			fprintf(stderr, "\nclassify '%s': got %s (%d,%d), want %s (%d,%d)\n", c->text,
			        infer_type_name(t), id, sc, infer_type_name(c->want),
			        c->int_digits, c->scale);
		CU_ASSERT_EQUAL(t, c->want);
		if (c->want == INFER_DECIMAL) {
			CU_ASSERT_EQUAL(id, c->int_digits);
			CU_ASSERT_EQUAL(sc, c->scale);
		}
	}
}

/* Columns of values through the accumulator: "v1|v2|..." per column. */
struct widen_case { const char *values; const char *want; };

static const struct widen_case widens[] = {
	{ "1|2|3", "c:INTEGER" },
	{ "1|3000000000", "c:BIGINT" },
	{ "1|2.5", "c:DECIMAL(2,1)" },
	{ "123|0.25", "c:DECIMAL(5,2)" },
	{ "12.5|1.125", "c:DECIMAL(5,3)" },
	{ "3000000000|0.5", "c:DECIMAL(11,1)" },
	{ "1|2.5|1e3", "c:DOUBLE" },
	{ "1e3|7", "c:DOUBLE" },
	/* DECIMAL whose integer digits and scale together pass 38 */
	{ "12345678901234567890123456789012345678|0.5", "c:DOUBLE" },
	{ "1234567890123456789012345678901234567|0.5", "c:DECIMAL(38,1)" },
	{ "0.5|0.25", "c:DECIMAL(2,2)" },
	{ "2024-01-01|2024-01-02", "c:DATE" },
	{ "2024-01-01|2024-01-02 10:00:00", "c:TIMESTAMP" },
	{ "2024-01-02 10:00:00|2024-01-01", "c:TIMESTAMP" },
	{ "true|false|TRUE", "c:BOOLEAN" },
	{ "true|1", "c:VARCHAR" },
	{ "1|true", "c:VARCHAR" },
	{ "2024-01-01|5", "c:VARCHAR" },
	{ "1|007", "c:VARCHAR" },
	{ "x|1|2", "c:VARCHAR" },
	{ "1||2", "c:INTEGER?" },
	{ "|", "c:VARCHAR?" },
	{ NULL, NULL },
};

static void test_widening(void)
{
	for (const struct widen_case *w = widens; w->values != NULL; w++) {
		struct infer_acc *a = infer_acc_new();
		struct tab_cell name = { .kind = TAB_TEXT, .text = "c", .len = 1 };
		struct infer_result r;
		char buf[256], vals[256];
		char *save = NULL;

		CU_ASSERT_FATAL(a != NULL);
		CU_ASSERT_EQUAL(infer_acc_header(a, &name, 1), 0);
		snprintf(vals, sizeof vals, "%s", w->values);
		/* strsep keeps empty values */
		char *p = vals;
		while ((save = strsep(&p, "|")) != NULL) {
			struct tab_cell c = { .kind = save[0] ? TAB_TEXT : TAB_NULL, .text = save,
			                      .len = strlen(save) };
			CU_ASSERT_EQUAL(infer_acc_row(a, &c, 1), 0);
		}
		CU_ASSERT_EQUAL(infer_acc_finish(a, &r), 0);
		tt_schema(&r, buf, sizeof buf);
		if (strcmp(buf, w->want) != 0)
			fprintf(stderr, "\nwiden '%s': got %s want %s\n", w->values, buf, w->want);
		CU_ASSERT_STRING_EQUAL(buf, w->want);
		infer_result_free(&r);
		infer_acc_free(a);
	}
}

/* Spreadsheet and JSON cells are taken by kind. */
static void test_typed_cells(void)
{
	struct infer_acc *a = infer_acc_new();
	struct tab_cell names[6] = {
		{ TAB_TEXT, "n", 1, 0, false }, { TAB_TEXT, "d", 1, 0, false }, { TAB_TEXT, "b", 1, 0, false },
		{ TAB_TEXT, "dt", 2, 0, false }, { TAB_TEXT, "big", 3, 0, false }, { TAB_TEXT, "mix", 3, 0, false },
	};
	struct tab_cell r1[6] = {
		{ TAB_NUMBER, "42", 2, 42, false }, { TAB_DATE, "2024-01-01", 10, 0, false },
		{ TAB_BOOL, "true", 4, 1, false }, { TAB_DATETIME, "2024-01-01 10:00:00", 19, 0, false },
		{ TAB_NUMBER, "", 0, 5e9, false }, { TAB_NUMBER, "1", 1, 1, false },
	};
	struct tab_cell r2[6] = {
		{ TAB_NUMBER, "12.25", 5, 12.25, false }, { TAB_NULL, "", 0, 0, false },
		{ TAB_BOOL, "false", 5, 0, false }, { TAB_DATE, "2024-01-02", 10, 0, false },
		{ TAB_NUMBER, "", 0, 0.5, false }, { TAB_TEXT, "x", 1, 0, false },
	};
	struct infer_result r;
	char buf[512];

	CU_ASSERT_FATAL(a != NULL);
	CU_ASSERT_EQUAL(infer_acc_header(a, names, 6), 0);
	CU_ASSERT_EQUAL(infer_acc_row(a, r1, 6), 0);
	CU_ASSERT_EQUAL(infer_acc_finish(a, &r), 0);
	CU_ASSERT_STRING_EQUAL(tt_schema(&r, buf, sizeof buf),
	                       "n:INTEGER|d:DATE|b:BOOLEAN|dt:TIMESTAMP|big:BIGINT|mix:INTEGER");
	infer_result_free(&r);
	infer_acc_free(a);

	a = infer_acc_new();
	CU_ASSERT_FATAL(a != NULL);
	CU_ASSERT_EQUAL(infer_acc_header(a, names, 6), 0);
	CU_ASSERT_EQUAL(infer_acc_row(a, r1, 6), 0);
	CU_ASSERT_EQUAL(infer_acc_row(a, r2, 6), 0);
	/* a short row: the missing cells are nulls */
	CU_ASSERT_EQUAL(infer_acc_row(a, r1, 5), 0);
	CU_ASSERT_EQUAL(infer_acc_finish(a, &r), 0);
	CU_ASSERT_STRING_EQUAL(tt_schema(&r, buf, sizeof buf),
	                       "n:DECIMAL(4,2)|d:DATE?|b:BOOLEAN|dt:TIMESTAMP|big:DOUBLE|mix:VARCHAR?");
	CU_ASSERT_EQUAL(r.row_count, 3);
	CU_ASSERT_EQUAL(r.cols[5].max_len, 1);
	infer_result_free(&r);
	infer_acc_free(a);
}

static void test_result_json(void)
{
	struct infer_column cols[3] = {
		{ .name = "id", .type = INFER_INTEGER },
		{ .name = "amount", .type = INFER_DECIMAL, .precision = 10, .scale = 2, .nullable = true },
		{ .name = "note", .type = INFER_VARCHAR, .nullable = true },
	};
	struct infer_result r = { .cols = cols, .ncols = 3, .row_count = 12, .analyzed_rows = 10 };
	struct json_object *j = infer_result_json(&r);

	CU_ASSERT_FATAL(j != NULL);
	CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN),
	    "{\"columns\":["
	    "{\"name\":\"id\",\"inferred_type\":\"INTEGER\",\"nullable\":false,\"position\":0},"
	    "{\"name\":\"amount\",\"inferred_type\":\"DECIMAL\",\"nullable\":true,\"position\":1,"
	    "\"precision\":10,\"scale\":2},"
	    "{\"name\":\"note\",\"inferred_type\":\"VARCHAR\",\"nullable\":true,\"position\":2}],"
	    "\"row_count\":12,\"analyzed_rows\":10}");
	json_object_put(j);

	r.ncols = 0;
	j = infer_result_json(&r);
	CU_ASSERT_FATAL(j != NULL);
	CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN),
	                       "{\"columns\":[],\"row_count\":12,\"analyzed_rows\":10}");
	json_object_put(j);
}

static void test_sql_types(void)
{
	struct { struct infer_column c; const char *want; } cases[] = {
		{ { .type = INFER_INTEGER }, "INT" },
		{ { .type = INFER_BIGINT }, "BIGINT" },
		{ { .type = INFER_DECIMAL, .precision = 12, .scale = 2 }, "DECIMAL(12,2)" },
		{ { .type = INFER_DOUBLE }, "DOUBLE" },
		{ { .type = INFER_BOOLEAN }, "BOOLEAN" },
		{ { .type = INFER_DATE }, "DATE" },
		{ { .type = INFER_TIMESTAMP }, "DATETIME(6)" },
		{ { .type = INFER_VARCHAR, .max_len = 0 }, "VARCHAR(255)" },
		{ { .type = INFER_VARCHAR, .max_len = 255 }, "VARCHAR(255)" },
		{ { .type = INFER_VARCHAR, .max_len = 256 }, "TEXT" },
		{ { .type = INFER_VARCHAR, .max_len = 65535 }, "TEXT" },
		{ { .type = INFER_VARCHAR, .max_len = 65536 }, "MEDIUMTEXT" },
	};
	char buf[32];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		CU_ASSERT_EQUAL(infer_column_sql_type(&cases[i].c, buf, sizeof buf), 0);
		CU_ASSERT_STRING_EQUAL(buf, cases[i].want);
	}
	/* too small a buffer: "DECIMAL(12,2)" needs 14 bytes */
	CU_ASSERT_EQUAL(infer_column_sql_type(&cases[2].c, buf, 13), -1);
	CU_ASSERT_EQUAL(infer_column_sql_type(&cases[2].c, buf, 14), 0);
}

static void test_type_names(void)
{
	enum infer_type t;
	const char *names[] = { "INTEGER", "BIGINT", "DECIMAL", "DOUBLE", "BOOLEAN", "DATE",
	                        "TIMESTAMP", "VARCHAR" };

	for (int i = 0; i < 8; i++) {
		CU_ASSERT_STRING_EQUAL(infer_type_name((enum infer_type)i), names[i]);
		CU_ASSERT_EQUAL(infer_type_parse(names[i], &t), 0);
		CU_ASSERT_EQUAL(t, (enum infer_type)i);
	}
	CU_ASSERT_EQUAL(infer_type_parse("decimal", &t), 0);
	CU_ASSERT_EQUAL(t, INFER_DECIMAL);
	CU_ASSERT_EQUAL(infer_type_parse("TEXT", &t), -1);
	CU_ASSERT_EQUAL(infer_type_parse("", &t), -1);
}

static void test_format_names(void)
{
	struct { const char *file; int rc; enum tab_format f; } cases[] = {
		{ "a.csv", 0, TAB_CSV }, { "A.CSV", 0, TAB_CSV }, { "x.txt", 0, TAB_TXT },
		{ "x.tsv", 0, TAB_TXT }, { "x.json", 0, TAB_JSON }, { "x.jsonl", 0, TAB_JSON },
		{ "x.NDJSON", 0, TAB_JSON }, { "x.xlsx", 0, TAB_XLSX }, { "x.xls", 0, TAB_XLS },
		{ "dir.v2/x.parquet", 0, TAB_PARQUET }, { "x.csv.gz", -1, 0 }, { "csv", -1, 0 },
		{ "dir.csv/x", -1, 0 }, { "x.", -1, 0 }, { "", -1, 0 },
	};
	enum tab_format f;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int rc = tab_format_from_name(cases[i].file, &f);
		CU_ASSERT_EQUAL(rc, cases[i].rc);
		if (rc == 0)
			CU_ASSERT_EQUAL(f, cases[i].f);
	}
	CU_ASSERT_STRING_EQUAL(tab_format_name(TAB_TXT), "txt");
	CU_ASSERT_STRING_EQUAL(tab_format_name(TAB_PARQUET), "parquet");
	CU_ASSERT_STRING_EQUAL(tab_format_api_name(TAB_TXT), "csv");
	CU_ASSERT_STRING_EQUAL(tab_format_api_name(TAB_XLS), "excel");
	CU_ASSERT_STRING_EQUAL(tab_format_api_name(TAB_XLSX), "excel");
	CU_ASSERT_STRING_EQUAL(tab_format_api_name(TAB_JSON), "json");
	CU_ASSERT_STRING_EQUAL(tab_format_api_name(TAB_PARQUET), "parquet");
	for (int i = TAB_CSV; i <= TAB_PARQUET; i++) {
		CU_ASSERT_EQUAL(tab_format_parse(tab_format_name((enum tab_format)i), &f), 0);
		CU_ASSERT_EQUAL(f, (enum tab_format)i);
	}
	CU_ASSERT_EQUAL(tab_format_parse("excel", &f), -1);
	CU_ASSERT_EQUAL(tab_format_parse("CSV", &f), -1);
}

static void test_opts(void)
{
	struct tab_opts o;
	struct infer_result r;
	char err[256];

	tab_opts_init(&o);
	CU_ASSERT_EQUAL(o.header_row, -1);
	CU_ASSERT_EQUAL(o.skip_rows, 0);
	CU_ASSERT_EQUAL(o.delimiter, 0);
	CU_ASSERT_EQUAL(o.max_analyze_rows, 100000);
	CU_ASSERT_STRING_EQUAL(o.encoding, "");
	CU_ASSERT_STRING_EQUAL(o.sheet_name, "");

	/* options a format does not take */
	strcpy(o.sheet_name, "Sheet1");
	CU_ASSERT_EQUAL(tt_infer(TAB_CSV, "a\n1\n", 4, &o, &r, err, sizeof err), TAB_ERR_OPTION);
	CU_ASSERT(strstr(err, "sheet_name") != NULL);
	tab_opts_init(&o);
	o.delimiter = ';';
	CU_ASSERT_EQUAL(tt_infer(TAB_JSON, "[]", 2, &o, &r, err, sizeof err), TAB_ERR_OPTION);
	CU_ASSERT(strstr(err, "delimiter") != NULL);
	tab_opts_init(&o);
	o.skip_rows = 1;
	CU_ASSERT_EQUAL(tt_infer(TAB_JSON, "[]", 2, &o, &r, err, sizeof err), TAB_ERR_OPTION);
	tab_opts_init(&o);
	o.skip_rows = -1;
	CU_ASSERT_EQUAL(tt_infer(TAB_CSV, "a\n1\n", 4, &o, &r, err, sizeof err), TAB_ERR_OPTION);
	tab_opts_init(&o);
	strcpy(o.encoding, "ebcdic");
	CU_ASSERT_EQUAL(tt_infer(TAB_CSV, "a\n1\n", 4, &o, &r, err, sizeof err), TAB_ERR_OPTION);
	CU_ASSERT(strstr(err, "unknown encoding 'ebcdic'") != NULL);
	tab_opts_init(&o);
	o.delimiter = '"';
	CU_ASSERT_EQUAL(tt_infer(TAB_CSV, "a\n1\n", 4, &o, &r, err, sizeof err), TAB_ERR_OPTION);
	tab_opts_init(&o);
	o.delimiter = '\n';
	CU_ASSERT_EQUAL(tt_infer(TAB_CSV, "a\n1\n", 4, &o, &r, err, sizeof err), TAB_ERR_OPTION);

	/* a file that is no Parquet: tab_read refuses it with the reader's reason */
	{
		char path[512];
		struct tab_sink sink = { 0 };
		CU_ASSERT_FATAL(tt_write(path, sizeof path, ".parquet", "PAR1", 4) == 0);
		CU_ASSERT_EQUAL(tab_read(path, TAB_PARQUET, NULL, &sink, NULL, err, sizeof err),
		                TAB_ERR_FORMAT);
		CU_ASSERT_STRING_EQUAL(err, "not a Parquet file: 4 bytes is too short");
		unlink(path);
	}
	/* a file that is not there */
	CU_ASSERT_EQUAL(infer_file("/nonexistent/x.csv", TAB_CSV, NULL, &r, err, sizeof err),
	                TAB_ERR_IO);
	CU_ASSERT(strstr(err, "cannot open") != NULL);
}

/* max_analyze_rows: the first N rows are classified, all are counted. */
static void test_analyze_limit(void)
{
	const char *text = "n\n1\n2\n3\nx\n5\n";
	struct tab_opts o;
	struct infer_result r;
	char err[256], buf[128];

	tab_opts_init(&o);
	o.max_analyze_rows = 3;
	CU_ASSERT_EQUAL_FATAL(tt_infer(TAB_CSV, text, strlen(text), &o, &r, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(tt_schema(&r, buf, sizeof buf), "n:INTEGER");
	CU_ASSERT_EQUAL(r.row_count, 5);
	CU_ASSERT_EQUAL(r.analyzed_rows, 3);
	infer_result_free(&r);

	o.max_analyze_rows = 4;
	CU_ASSERT_EQUAL_FATAL(tt_infer(TAB_CSV, text, strlen(text), &o, &r, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(tt_schema(&r, buf, sizeof buf), "n:VARCHAR");
	CU_ASSERT_EQUAL(r.row_count, 5);
	CU_ASSERT_EQUAL(r.analyzed_rows, 4);
	infer_result_free(&r);

	/* 0 means the default */
	o.max_analyze_rows = 0;
	CU_ASSERT_EQUAL_FATAL(tt_infer(TAB_CSV, text, strlen(text), &o, &r, err, sizeof err), 0);
	CU_ASSERT_EQUAL(r.analyzed_rows, 5);
	infer_result_free(&r);

	/* JSON likewise */
	const char *js = "{\"a\":1}\n{\"a\":2}\n{\"a\":\"x\"}\n";
	o.max_analyze_rows = 2;
	CU_ASSERT_EQUAL_FATAL(tt_infer(TAB_JSON, js, strlen(js), &o, &r, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(tt_schema(&r, buf, sizeof buf), "a:INTEGER");
	CU_ASSERT_EQUAL(r.row_count, 3);
	CU_ASSERT_EQUAL(r.analyzed_rows, 2);
	infer_result_free(&r);
}

/* Header names: empty ones numbered, duplicates suffixed, long ones cut. */
static void test_header_names(void)
{
	const char *dup = "a,,A,a,a_2\nx,y,z,w,v\n";
	char text[1200], buf[2048];
	struct infer_result r;
	struct tab_opts o;
	char err[256];

	tab_opts_init(&o);
	/* DuckDB's names: columnN (0-based), _K counting clashes per name */
	CU_ASSERT_EQUAL_FATAL(tt_infer(TAB_CSV, dup, strlen(dup), &o, &r, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(tt_schema(&r, buf, sizeof buf),
	    "a:VARCHAR|column1:VARCHAR|A_1:VARCHAR|a_2:VARCHAR|a_2_1:VARCHAR");
	infer_result_free(&r);

	/* 300 x 'n' then e-acute: cut to 255 bytes */
	memset(text, 'n', 300);
	memcpy(text + 300, ",m\n1,2\n", 8);
	CU_ASSERT_EQUAL_FATAL(tt_infer_str(TAB_CSV, text, &r, err, sizeof err), 0);
	CU_ASSERT_EQUAL(strlen(r.cols[0].name), 255);
	infer_result_free(&r);

	/* a cut never splits a UTF-8 sequence: 254 'n' + "é" (2 bytes) */
	memset(text, 'n', 254);
	memcpy(text + 254, "\xc3\xa9" ",m\n1,2\n", 10);
	CU_ASSERT_EQUAL_FATAL(tt_infer_str(TAB_CSV, text, &r, err, sizeof err), 0);
	CU_ASSERT_EQUAL(strlen(r.cols[0].name), 254);
	infer_result_free(&r);
}

/* Files as other programs write them: the schema and the exact row count,
 * classifying every row and only the first (the fast counting path). */
static void test_real_writers(void)
{
	static const struct {
		const char *name, *in, *schema;
		long long rows;
	} cases[] = {
		{ "R write.csv: NA in numbers, booleans and text; row names",
		  "\"\",\"x\",\"flag\",\"s\",\"t\"\n\"1\",1,TRUE,\"a\",NA\n\"2\",NA,FALSE,NA,NA\n"
		  "\"3\",3.5,NA,\"b\",NA\n",
		  "column0:INTEGER|x:DECIMAL(2,1)?|flag:BOOLEAN?|s:VARCHAR|t:VARCHAR", 3 },
		{ "Stata's '.' and NaN, Inf from numpy",
		  "a,b,c\n1,.,NaN\n2,5,Inf\n3,.,-inf\n", "a:INTEGER|b:INTEGER?|c:DOUBLE", 3 },
		{ "NULL and N/A in dates and timestamps",
		  "d,ts\n2024-01-02,NULL\nN/A,2024-01-02 10:00:00\n",
		  "d:DATE?|ts:TIMESTAMP?", 2 },
		{ "old Mac line ends", "id,v\r1,a\r2,b\r3,c\r", "id:INTEGER|v:VARCHAR", 3 },
		{ "header over a column empty in every row", "id,empty,v\n1,,2.5\n2,,3\n",
		  "id:INTEGER|empty:VARCHAR?|v:DECIMAL(2,1)", 2 },
		{ "names with spaces around them", "a, cpi , scenario\n1, 2.5 ,x\n2,3,y\n",
		  "a:INTEGER|cpi:DECIMAL(2,1)|scenario:VARCHAR", 2 },
		{ "space-separated numbers without a header",
		  "0.7 1.0 0.17\n0.6 0.0 0.23\n1.4 1.0 0.07\n",
		  "column0:DECIMAL(2,1)|column1:DECIMAL(2,1)|column2:DECIMAL(2,2)", 3 },
		{ "R write.table: quoted names, runs of blanks",
		  "\"x\" \"name\"\n1 \"a b\"\n2   \"c\"\n", "x:INTEGER|name:VARCHAR", 2 },
		{ "Stan's '#' comments", "# Samples\n# seed=1\nlp__,theta\n-7.1,0.2\n# Adaptation\n-7.3,0.3\n",
		  "lp__:DECIMAL(2,1)|theta:DECIMAL(1,1)", 2 },
		{ "a count line before the table (sklearn)", "3,2,setosa\n5.1,3.5,1.4,0\n4.9,3.0,1.4,0\n4.7,3.2,1.3,0\n",
		  "column0:DECIMAL(2,1)|column1:DECIMAL(2,1)|column2:DECIMAL(2,1)|column3:INTEGER", 3 },
		{ "t/f and yes/no", "a,b\nt,yes\nf,no\n", "a:BOOLEAN|b:BOOLEAN", 2 },
		{ "R's exponents of three digits (a '-' where a date has one)",
		  "species,mu\nT. thermophila,7.61E-012\nD. discoideum,3.3E-010\n",
		  "species:VARCHAR|mu:DOUBLE", 2 },
		{ "R write.csv of a wide table: quoted years name the columns",
		  "\"country\",\"1960\",\"1961\"\n\"Germany\",2.41,2.44\n\"South Korea\",6.16,5.99\n",
		  "country:VARCHAR|1960:DECIMAL(3,2)|1961:DECIMAL(3,2)", 2 },
		{ "prose notes over a short table (FreeCAD's LineGroup)",
		  ";Line group definitions\n;in two thicknesses, thin and thick\n;l = line group\n"
		  ";thin = 1/2 * l\n;thick = 1 * l\n;Format: *Name,thin,thick\n\n"
		  "*FC 0.25mm,0.13,0.25\n*FC 0.35mm,0.18,0.35\n*FC 0.50mm,0.25,0.50\n\n",
		  ";Format: *Name:VARCHAR|thin:DECIMAL(2,2)|thick:DECIMAL(2,2)", 3 },
	};
	char buf[1024], err[256];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		for (int limit = 0; limit < 2; limit++) {
			struct infer_result r;
			struct tab_opts o;
			int rc;

			tab_opts_init(&o);
			if (limit)
				o.max_analyze_rows = 1;
			rc = tt_infer(TAB_CSV, cases[i].in, strlen(cases[i].in), &o, &r, err, sizeof err);
			CU_ASSERT_EQUAL(rc, 0);
			if (rc != 0)
				continue;
			if (!limit && strcmp(tt_schema(&r, buf, sizeof buf), cases[i].schema) != 0)
				fprintf(stderr, "\n%s: %s\n", cases[i].name, buf);
			if (!limit)
				CU_ASSERT_STRING_EQUAL(buf, cases[i].schema);
			if (r.row_count != cases[i].rows)
				fprintf(stderr, "\n%s (max %d): %lld rows\n", cases[i].name, limit,
				        r.row_count);
			CU_ASSERT_EQUAL(r.row_count, cases[i].rows);
			infer_result_free(&r);
		}
	}
}

/* refresh-schema's null_markers: the list replaces the default one. */
static void test_null_markers_option(void)
{
	const char *in = "a,b\n1,NA\n-99,2\n3,4\n";
	struct infer_result r;
	struct tab_opts o;
	char buf[256], err[256];

	tab_opts_init(&o);
	CU_ASSERT_EQUAL_FATAL(tt_infer(TAB_CSV, in, strlen(in), &o, &r, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(tt_schema(&r, buf, sizeof buf), "a:INTEGER|b:INTEGER?");
	infer_result_free(&r);

	o.n_null_markers = 0;                      /* none: NA is text */
	CU_ASSERT_EQUAL_FATAL(tt_infer(TAB_CSV, in, strlen(in), &o, &r, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(tt_schema(&r, buf, sizeof buf), "a:INTEGER|b:VARCHAR");
	infer_result_free(&r);

	strcpy(o.null_markers[0], "-99");          /* a sentinel number */
	strcpy(o.null_markers[1], "NA");
	o.n_null_markers = 2;
	CU_ASSERT_EQUAL_FATAL(tt_infer(TAB_CSV, in, strlen(in), &o, &r, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(tt_schema(&r, buf, sizeof buf), "a:INTEGER?|b:INTEGER?");
	infer_result_free(&r);
}

int suite_tabular_infer(void)
{
	static const struct test_case tests[] = {
		{ "one value: every type, at its limits", test_classify },
		{ "widening across values, nullability", test_widening },
		{ "typed cells by kind; short rows", test_typed_cells },
		{ "the schema JSON", test_result_json },
		{ "MariaDB column types", test_sql_types },
		{ "type names", test_type_names },
		{ "format names", test_format_names },
		{ "options: defaults and refusals", test_opts },
		{ "max_analyze_rows: classified vs counted", test_analyze_limit },
		{ "header names: empty, duplicate, long", test_header_names },
		{ "files as R, Stata, numpy, Stan write them", test_real_writers },
		{ "null_markers replace the default markers", test_null_markers_option },
		{ NULL, NULL },
	};
	return suite_add("tabular_infer", tests);
}
