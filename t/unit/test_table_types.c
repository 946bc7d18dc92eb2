/* test_table_types.c - column types of storage explorer tables: parsing,
 * DDL, and the dataset -> table compatibility matrix of links. */
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "suites.h"
#include "storage/tables.h"
#include "tabular/tabular.h"

static void test_parse(void)
{
	static const struct {
		const char *in;
		int rc;
		const char *canon, *sql;
	} cases[] = {
		{ "INTEGER", 0, "INTEGER", "INT" },
		{ "integer", 0, "INTEGER", "INT" },
		{ "BigInt", 0, "BIGINT", "BIGINT" },
		{ "DOUBLE", 0, "DOUBLE", "DOUBLE" },
		{ "BOOLEAN", 0, "BOOLEAN", "BOOLEAN" },
		{ "DATE", 0, "DATE", "DATE" },
		{ "TIMESTAMP", 0, "TIMESTAMP", "DATETIME(6)" },
		{ "DECIMAL(12,2)", 0, "DECIMAL(12,2)", "DECIMAL(12,2)" },
		{ "decimal( 12 , 2 )", 0, "DECIMAL(12,2)", "DECIMAL(12,2)" },
		{ "DECIMAL(5)", 0, "DECIMAL(5,0)", "DECIMAL(5,0)" },
		{ "DECIMAL(1,0)", 0, "DECIMAL(1,0)", "DECIMAL(1,0)" },
		{ "DECIMAL(38,38)", 0, "DECIMAL(38,38)", "DECIMAL(38,38)" },
		{ "DECIMAL(39,2)", -1, NULL, NULL },              /* precision max + 1 */
		{ "DECIMAL(0,0)", -1, NULL, NULL },
		{ "DECIMAL(5,6)", -1, NULL, NULL },               /* scale > precision */
		{ "DECIMAL", -1, NULL, NULL },
		{ "DECIMAL()", -1, NULL, NULL },
		{ "DECIMAL(1,2,3)", -1, NULL, NULL },
		{ "DECIMAL(-1,2)", -1, NULL, NULL },
		{ "DECIMAL(12,2) ", -1, NULL, NULL },
		{ "DECIMAL(12,2", -1, NULL, NULL },
		{ "DECIMAL(9999999999,2)", -1, NULL, NULL },
		{ "VARCHAR", 0, "VARCHAR", "LONGTEXT" },
		{ "VARCHAR(1)", 0, "VARCHAR(1)", "VARCHAR(1)" },
		{ "varchar(255)", 0, "VARCHAR(255)", "VARCHAR(255)" },
		{ "VARCHAR(1024)", 0, "VARCHAR(1024)", "VARCHAR(1024)" },
		{ "VARCHAR(1025)", 0, "VARCHAR(1025)", "TEXT" },
		{ "VARCHAR(16383)", 0, "VARCHAR(16383)", "TEXT" },
		{ "VARCHAR(16384)", 0, "VARCHAR(16384)", "MEDIUMTEXT" },
		{ "VARCHAR(65535)", 0, "VARCHAR(65535)", "MEDIUMTEXT" },
		{ "VARCHAR(65536)", -1, NULL, NULL },
		{ "VARCHAR(0)", -1, NULL, NULL },
		{ "VARCHAR(1,2)", -1, NULL, NULL },
		{ "INTEGER(11)", -1, NULL, NULL },
		{ "INT", -1, NULL, NULL },
		{ "TEXT", -1, NULL, NULL },
		{ "DATETIME", -1, NULL, NULL },
		{ "", -1, NULL, NULL },
		{ " INTEGER", -1, NULL, NULL },
		{ NULL, 0, NULL, NULL },
	};

	for (size_t i = 0; cases[i].in != NULL; i++) {
		struct table_type t;
		char err[200] = "", buf[TABLE_TYPE_TEXT_MAX];
		int rc = table_type_parse(cases[i].in, &t, err, sizeof err);

		if (rc != cases[i].rc)
			fprintf(stderr, "\n  parse(%s) = %d, want %d\n", cases[i].in, rc, cases[i].rc);
		CU_ASSERT_EQUAL(rc, cases[i].rc);
		if (rc != 0) {
			CU_ASSERT(err[0] != '\0');
			continue;
		}
		table_type_name(&t, buf);
		CU_ASSERT_STRING_EQUAL(buf, cases[i].canon);
		table_type_sql(&t, buf);
		CU_ASSERT_STRING_EQUAL(buf, cases[i].sql);
	}
}

static void test_messages(void)
{
	struct table_type t;
	char err[200];

	table_type_parse("FLOAT", &t, err, sizeof err);
	CU_ASSERT_STRING_EQUAL(err, "unknown type: use one of INTEGER, BIGINT, DECIMAL(p,s), "
	                       "DOUBLE, BOOLEAN, DATE, TIMESTAMP, VARCHAR or VARCHAR(n)");
	table_type_parse("DECIMAL", &t, err, sizeof err);
	CU_ASSERT_STRING_EQUAL(err, "DECIMAL needs a precision and a scale: DECIMAL(p,s) with p 1 to 38");
	table_type_parse("VARCHAR(70000)", &t, err, sizeof err);
	CU_ASSERT_STRING_EQUAL(err, "VARCHAR(n) needs n from 1 to 65535");
	table_type_parse("DATE(3)", &t, err, sizeof err);
	CU_ASSERT_STRING_EQUAL(err, "DATE takes no size");
}

static void test_row_bytes(void)
{
	struct table_type t;
	char err[100];

	table_type_parse("VARCHAR(1024)", &t, err, sizeof err);
	CU_ASSERT_EQUAL(table_type_row_bytes(&t), 4098);
	table_type_parse("VARCHAR(10)", &t, err, sizeof err);
	CU_ASSERT_EQUAL(table_type_row_bytes(&t), 41);
	table_type_parse("VARCHAR", &t, err, sizeof err);
	CU_ASSERT_EQUAL(table_type_row_bytes(&t), 12);
	table_type_parse("BIGINT", &t, err, sizeof err);
	CU_ASSERT_EQUAL(table_type_row_bytes(&t), 8);
}

static void test_from_inferred(void)
{
	struct table_type t;

	CU_ASSERT_EQUAL(table_type_from_inferred("DECIMAL", 12, 2, &t), 0);
	CU_ASSERT_EQUAL(t.kind, TABLE_DECIMAL);
	CU_ASSERT_EQUAL(t.precision, 12);
	CU_ASSERT_EQUAL(t.scale, 2);
	CU_ASSERT_EQUAL(table_type_from_inferred("VARCHAR", 0, 0, &t), 0);
	CU_ASSERT_EQUAL(t.kind, TABLE_VARCHAR);
	CU_ASSERT_EQUAL(t.length, 0);
	CU_ASSERT_EQUAL(table_type_from_inferred("timestamp", 0, 0, &t), 0);
	CU_ASSERT_EQUAL(t.kind, TABLE_TIMESTAMP);
	CU_ASSERT_EQUAL(table_type_from_inferred("DECIMAL", 0, 0, &t), 0);
	CU_ASSERT_EQUAL(t.precision, 38);
	CU_ASSERT_EQUAL(table_type_from_inferred("JSON", 0, 0, &t), -1);
}

/* The matrix: dataset type (row) into table type (column). */
static void test_compat_matrix(void)
{
	static const struct { const char *from, *to; int want; } cases[] = {
		/* identity */
		{ "INTEGER", "INTEGER", 0 }, { "BIGINT", "BIGINT", 0 },
		{ "DECIMAL(12,2)", "DECIMAL(12,2)", 0 }, { "DOUBLE", "DOUBLE", 0 },
		{ "BOOLEAN", "BOOLEAN", 0 }, { "DATE", "DATE", 0 },
		{ "TIMESTAMP", "TIMESTAMP", 0 }, { "VARCHAR", "VARCHAR", 0 },
		/* widening chain INTEGER -> BIGINT -> DECIMAL -> DOUBLE */
		{ "INTEGER", "BIGINT", 1 }, { "INTEGER", "DECIMAL(10,0)", 1 },
		{ "INTEGER", "DECIMAL(12,2)", 1 }, { "INTEGER", "DECIMAL(11,2)", -1 },
		{ "INTEGER", "DOUBLE", 1 }, { "BIGINT", "DECIMAL(19,0)", 1 },
		{ "BIGINT", "DECIMAL(20,2)", -1 }, { "BIGINT", "DECIMAL(38,10)", 1 },
		{ "BIGINT", "DOUBLE", 1 }, { "DECIMAL(12,2)", "DOUBLE", 1 },
		/* narrowing */
		{ "BIGINT", "INTEGER", -1 }, { "DOUBLE", "DECIMAL(38,10)", -1 },
		{ "DOUBLE", "BIGINT", -1 }, { "DECIMAL(12,2)", "INTEGER", -1 },
		{ "DECIMAL(12,2)", "BIGINT", -1 }, { "TIMESTAMP", "DATE", -1 },
		/* a DECIMAL must fit precision and scale */
		{ "DECIMAL(12,2)", "DECIMAL(14,4)", 1 }, { "DECIMAL(12,2)", "DECIMAL(13,2)", 1 },
		{ "DECIMAL(12,2)", "DECIMAL(12,3)", -1 },      /* 10 -> 9 integer digits */
		{ "DECIMAL(12,2)", "DECIMAL(12,1)", -1 },      /* scale lost */
		{ "DECIMAL(12,2)", "DECIMAL(11,2)", -1 },
		{ "DECIMAL(5,0)", "INTEGER", 1 }, { "DECIMAL(10,0)", "INTEGER", -1 },
		{ "DECIMAL(18,0)", "BIGINT", 1 }, { "DECIMAL(19,0)", "BIGINT", -1 },
		/* dates */
		{ "DATE", "TIMESTAMP", 1 },
		/* anything into VARCHAR */
		{ "INTEGER", "VARCHAR", 1 }, { "BOOLEAN", "VARCHAR", 1 },
		{ "TIMESTAMP", "VARCHAR", 1 }, { "DATE", "VARCHAR(10)", 1 },
		{ "DATE", "VARCHAR(9)", -1 }, { "INTEGER", "VARCHAR(11)", 1 },
		{ "INTEGER", "VARCHAR(10)", -1 }, { "BIGINT", "VARCHAR(20)", 1 },
		{ "DECIMAL(12,2)", "VARCHAR(14)", 1 }, { "DECIMAL(12,2)", "VARCHAR(13)", -1 },
		{ "BOOLEAN", "VARCHAR(5)", 1 }, { "BOOLEAN", "VARCHAR(4)", -1 },
		{ "TIMESTAMP", "VARCHAR(26)", 1 }, { "DOUBLE", "VARCHAR(24)", 1 },
		{ "VARCHAR", "VARCHAR(255)", 1 },              /* with a caveat */
		/* VARCHAR into anything else, and unrelated types */
		{ "VARCHAR", "INTEGER", -1 }, { "VARCHAR", "DATE", -1 },
		{ "VARCHAR", "BOOLEAN", -1 }, { "BOOLEAN", "INTEGER", -1 },
		{ "INTEGER", "BOOLEAN", -1 }, { "DATE", "INTEGER", -1 },
		{ "INTEGER", "DATE", -1 }, { "DOUBLE", "TIMESTAMP", -1 },
		{ NULL, NULL, 0 },
	};

	for (size_t i = 0; cases[i].from != NULL; i++) {
		struct table_type f, t;
		char err[100], note[256];
		int got;

		CU_ASSERT_EQUAL_FATAL(table_type_parse(cases[i].from, &f, err, sizeof err), 0);
		CU_ASSERT_EQUAL_FATAL(table_type_parse(cases[i].to, &t, err, sizeof err), 0);
		got = table_type_compat(&f, &t, note, sizeof note);
		if (got != cases[i].want)
			fprintf(stderr, "\n  %s -> %s: %d (%s), want %d\n", cases[i].from,
			        cases[i].to, got, note, cases[i].want);
		CU_ASSERT_EQUAL(got, cases[i].want);
		CU_ASSERT_EQUAL(note[0] == '\0', got == 0);
	}
}

/* ---- the whole link check -------------------------------------------------- */

static struct table_column col(const char *name, const char *type, bool nullable)
{
	struct table_column c = { name, { 0 }, nullable };
	char err[100];

	table_type_parse(type, &c.type, err, sizeof err);
	return c;
}

static const char *arr_str(struct json_object *a, size_t i)
{
	return json_object_get_string(json_object_array_get_idx(a, i));
}

static void test_match_exact(void)
{
	struct table_column t[] = { col("id", "INTEGER", false), col("name", "VARCHAR", true) };
	struct table_column d[] = { col("id", "INTEGER", false), col("name", "VARCHAR", true) };
	struct table_match m;

	CU_ASSERT_EQUAL_FATAL(table_match_columns(t, 2, d, 2, &m), 0);
	CU_ASSERT(m.compatible);
	CU_ASSERT(m.schema_matched);
	CU_ASSERT_EQUAL(json_object_array_length(m.warnings), 0);
	table_match_free(&m);

	/* A dataset without empty values into a nullable column: still matched. */
	d[1].nullable = false;
	CU_ASSERT_EQUAL_FATAL(table_match_columns(t, 2, d, 2, &m), 0);
	CU_ASSERT(m.compatible);
	CU_ASSERT(m.schema_matched);
	table_match_free(&m);
}

static void test_match_case_and_order(void)
{
	struct table_column t[] = { col("id", "BIGINT", true), col("Name", "VARCHAR", true) };
	struct table_column d[] = { col("NAME", "VARCHAR", true), col("ID", "INTEGER", true) };
	struct table_match m;

	CU_ASSERT_EQUAL_FATAL(table_match_columns(t, 2, d, 2, &m), 0);
	CU_ASSERT(m.compatible);
	CU_ASSERT_FALSE(m.schema_matched);
	CU_ASSERT_EQUAL(json_object_array_length(m.missing_columns), 0);
	CU_ASSERT_EQUAL(json_object_array_length(m.extra_columns), 0);
	CU_ASSERT_EQUAL(json_object_array_length(m.warnings), 3);
	CU_ASSERT_STRING_EQUAL(arr_str(m.warnings, 0),
	    "column 'ID' of the dataset is loaded into column 'id' of the table");
	CU_ASSERT_STRING_EQUAL(arr_str(m.warnings, 1), "column 'id': INTEGER values widened to BIGINT");
	CU_ASSERT_STRING_EQUAL(arr_str(m.warnings, 2),
	    "column 'NAME' of the dataset is loaded into column 'Name' of the table");
	table_match_free(&m);
}

static void test_match_incompatible(void)
{
	struct table_column t[] = {
		col("id", "INTEGER", false), col("amount", "DECIMAL(10,2)", true),
		col("created", "DATE", true), col("region", "VARCHAR", true),
		col("code", "INTEGER", false),
	};
	struct table_column d[] = {
		col("ID", "INTEGER", false), col("amount", "DOUBLE", true),
		col("created", "INTEGER", true), col("note", "VARCHAR", true),
		col("code", "INTEGER", true),
	};
	struct table_match m;
	struct json_object *x;

	CU_ASSERT_EQUAL_FATAL(table_match_columns(t, 5, d, 5, &m), 0);
	CU_ASSERT_FALSE(m.compatible);
	CU_ASSERT_FALSE(m.schema_matched);
	CU_ASSERT_EQUAL(json_object_array_length(m.missing_columns), 1);
	CU_ASSERT_STRING_EQUAL(arr_str(m.missing_columns, 0), "region");
	CU_ASSERT_EQUAL(json_object_array_length(m.extra_columns), 1);
	CU_ASSERT_STRING_EQUAL(arr_str(m.extra_columns, 0), "note");
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(m.type_mismatches), 3);
	x = json_object_array_get_idx(m.type_mismatches, 0);
	CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(x, JSON_C_TO_STRING_PLAIN),
	    "{\"column\":\"amount\",\"table_type\":\"DECIMAL(10,2)\",\"dataset_type\":\"DOUBLE\"}");
	x = json_object_array_get_idx(m.type_mismatches, 1);
	CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(x, JSON_C_TO_STRING_PLAIN),
	    "{\"column\":\"created\",\"table_type\":\"DATE\",\"dataset_type\":\"INTEGER\"}");
	/* empty values into NOT NULL */
	x = json_object_array_get_idx(m.type_mismatches, 2);
	CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(x, JSON_C_TO_STRING_PLAIN),
	    "{\"column\":\"code\",\"table_type\":\"INTEGER NOT NULL\",\"dataset_type\":\"INTEGER NULL\"}");
	table_match_free(&m);
}

/* Dataset types wider than the table's are taken: the load widens. */
static void test_match_wider(void)
{
	struct table_column t[] = {
		col("amount", "DECIMAL(5,1)", true), col("day", "DATE", true),
		col("n", "INTEGER", true), col("label", "VARCHAR(10)", true),
		col("flag", "BOOLEAN", true),
	};
	struct table_column d[] = {
		col("amount", "DECIMAL(8,3)", true), col("day", "TIMESTAMP", true),
		col("n", "DECIMAL(12,2)", true), col("label", "VARCHAR(25)", true),
		col("flag", "INTEGER", true),
	};
	struct table_match m;

	CU_ASSERT_EQUAL_FATAL(table_match_columns(t, 5, d, 5, &m), 0);
	CU_ASSERT_FALSE(m.compatible);            /* a BOOLEAN is no number to widen */
	CU_ASSERT_FALSE(m.schema_matched);
	CU_ASSERT_EQUAL(json_object_array_length(m.type_mismatches), 1);
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(m.warnings), 4);
	CU_ASSERT_STRING_EQUAL(arr_str(m.warnings, 0),
	    "column 'amount': DECIMAL(5,1) table column widened to DECIMAL(8,3)");
	CU_ASSERT_STRING_EQUAL(arr_str(m.warnings, 1),
	    "column 'day': DATE table column widened to TIMESTAMP");
	CU_ASSERT_STRING_EQUAL(arr_str(m.warnings, 2),
	    "column 'n': INTEGER table column widened to DECIMAL(12,2)");
	CU_ASSERT_STRING_EQUAL(arr_str(m.warnings, 3),
	    "column 'label': VARCHAR(10) table column widened to VARCHAR(25)");
	table_match_free(&m);
}

static void test_match_duplicates_and_empty(void)
{
	struct table_column t[] = { col("a", "VARCHAR", true) };
	struct table_column d[] = { col("A", "VARCHAR", true), col("a", "VARCHAR", true) };
	struct table_match m;

	/* The first 'a' of the dataset matches; the second is extra. */
	CU_ASSERT_EQUAL_FATAL(table_match_columns(t, 1, d, 2, &m), 0);
	CU_ASSERT_FALSE(m.compatible);
	CU_ASSERT_EQUAL(json_object_array_length(m.extra_columns), 1);
	CU_ASSERT_STRING_EQUAL(arr_str(m.extra_columns, 0), "a");
	table_match_free(&m);

	CU_ASSERT_EQUAL_FATAL(table_match_columns(t, 1, NULL, 0, &m), 0);
	CU_ASSERT_FALSE(m.compatible);
	CU_ASSERT_EQUAL(json_object_array_length(m.missing_columns), 1);
	table_match_free(&m);
}

/* ---- values for the load ---------------------------------------------------- */

static void test_values(void)
{
	static const struct {
		const char *type;
		enum tab_cell_kind kind;
		const char *text;
		double num;
		const char *want;               /* NULL: SQL NULL */
	} cases[] = {
		/* NaN and Inf: MariaDB stores no such number */
		{ "DOUBLE", TAB_TEXT, "NaN", 0, NULL },
		{ "DOUBLE", TAB_TEXT, "-Inf", 0, NULL },
		{ "DECIMAL(5,2)", TAB_TEXT, "inf", 0, NULL },
		{ "VARCHAR", TAB_TEXT, "NaN", 0, "NaN" },
		/* NULL and blanks */
		{ "INTEGER", TAB_NULL, "", 0, NULL },
		{ "VARCHAR", TAB_NULL, "", 0, NULL },
		{ "INTEGER", TAB_TEXT, "  ", 0, NULL },
		{ "DATE", TAB_TEXT, "", 0, NULL },
		{ "VARCHAR", TAB_TEXT, "", 0, "" },            /* text stays text */
		{ "VARCHAR", TAB_TEXT, "  a b ", 0, "  a b " },
		{ "VARCHAR(3)", TAB_NUMBER, "12.50", 12.5, "12.50" },
		{ "VARCHAR", TAB_BOOL, "true", 1, "true" },
		/* numbers */
		{ "INTEGER", TAB_TEXT, " 42 ", 0, "42" },
		{ "INTEGER", TAB_TEXT, "+7", 0, "7" },
		{ "BIGINT", TAB_TEXT, "-9223372036854775808", 0, "-9223372036854775808" },
		{ "DOUBLE", TAB_TEXT, "1e5", 0, "1e5" },
		{ "DOUBLE", TAB_TEXT, "+", 0, "+" },             /* not a number: as it is */
		{ "DECIMAL(12,2)", TAB_TEXT, "12.5", 0, "12.5" },
		{ "DECIMAL(12,2)", TAB_TEXT, "12.345", 0, "12.35" },
		{ "DECIMAL(12,2)", TAB_TEXT, "-12.344", 0, "-12.34" },
		{ "DECIMAL(12,2)", TAB_TEXT, "9.999", 0, "10.00" },
		{ "DECIMAL(12,2)", TAB_TEXT, "-99.995", 0, "-100.00" },
		{ "DECIMAL(12,2)", TAB_TEXT, ".125", 0, "0.13" },
		{ "DECIMAL(12,0)", TAB_TEXT, "2.5", 0, "3" },
		{ "DECIMAL(12,1)", TAB_NUMBER, "0.10000000000000001", 0.1, "0.1" },
		{ "DECIMAL(12,3)", TAB_NUMBER, "1.5e-3", 0.0015, "0.002" },
		{ "DECIMAL(12,2)", TAB_TEXT, "abc", 0, "abc" },
		{ "DECIMAL(12,2)", TAB_TEXT, "7", 0, "7" },
		{ "INTEGER", TAB_BOOL, "true", 1, "1" },
		/* booleans */
		{ "BOOLEAN", TAB_TEXT, "true", 0, "1" }, { "BOOLEAN", TAB_TEXT, "FALSE", 0, "0" },
		{ "BOOLEAN", TAB_TEXT, "Yes", 0, "1" }, { "BOOLEAN", TAB_TEXT, "n", 0, "0" },
		{ "BOOLEAN", TAB_TEXT, "T", 0, "1" }, { "BOOLEAN", TAB_TEXT, " 0 ", 0, "0" },
		{ "BOOLEAN", TAB_BOOL, "false", 0, "0" }, { "BOOLEAN", TAB_NUMBER, "2", 2, "1" },
		{ "BOOLEAN", TAB_TEXT, "maybe", 0, "maybe" },
		/* dates and times */
		{ "DATE", TAB_TEXT, "2024-02-29", 0, "2024-02-29" },
		{ "DATE", TAB_TEXT, "2024/02/29", 0, "2024-02-29" },
		{ "DATE", TAB_DATE, "2024-02-29", 0, "2024-02-29" },
		{ "TIMESTAMP", TAB_TEXT, "2024-01-15T10:00:00Z", 0, "2024-01-15 10:00:00" },
		{ "TIMESTAMP", TAB_TEXT, "2024-01-15 10:00", 0, "2024-01-15 10:00:00" },
		{ "TIMESTAMP", TAB_TEXT, "2024-01-15T10:00:00.123456789", 0, "2024-01-15 10:00:00.123456" },
		{ "TIMESTAMP", TAB_TEXT, "2024-03-01T12:30:00.25+02:00", 0, "2024-03-01 10:30:00.25" },
		{ "TIMESTAMP", TAB_TEXT, "2024-03-01T01:00:00+0230", 0, "2024-02-29 22:30:00" },
		{ "TIMESTAMP", TAB_TEXT, "2023-12-31T23:30:00-01", 0, "2024-01-01 00:30:00" },
		{ "TIMESTAMP", TAB_TEXT, "2024-01-15", 0, "2024-01-15" },     /* midnight */
		{ "TIMESTAMP", TAB_DATETIME, "2024-01-15 10:00:00.5", 0, "2024-01-15 10:00:00.5" },
		{ "TIMESTAMP", TAB_TEXT, "2024-13-01T00:00:00", 0, "2024-13-01T00:00:00" },
		{ "TIMESTAMP", TAB_TEXT, "yesterday", 0, "yesterday" },
		{ NULL, TAB_NULL, NULL, 0, NULL },
	};

	for (size_t i = 0; cases[i].type != NULL; i++) {
		struct table_type t;
		struct tab_cell c = { .kind = cases[i].kind, .text = cases[i].text,
		                      .len = strlen(cases[i].text), .num = cases[i].num };
		char err[100], buf[TABLE_VALUE_BUF], got[TABLE_VALUE_BUF + 8];
		const char *v;
		size_t len;

		CU_ASSERT_EQUAL_FATAL(table_type_parse(cases[i].type, &t, err, sizeof err), 0);
		v = table_value(&t, &c, buf, &len);
		if (v != NULL)
			snprintf(got, sizeof got, "%.*s", (int)len, v);
		if ((v == NULL) != (cases[i].want == NULL) ||
		    (v != NULL && strcmp(got, cases[i].want) != 0))
			fprintf(stderr, "\n  %s <- '%s': got %s, want %s\n", cases[i].type,
			        cases[i].text, v ? got : "NULL", cases[i].want ? cases[i].want : "NULL");
		CU_ASSERT_EQUAL(v == NULL, cases[i].want == NULL);
		if (v != NULL && cases[i].want != NULL)
			CU_ASSERT_STRING_EQUAL(got, cases[i].want);
	}
}

/* A missing-value marker (the CSV reader flags it) is a null in a typed
 * column and its text in a VARCHAR one. */
static void test_value_markers(void)
{
	static const struct {
		const char *type, *text, *want;
		bool marker;
	} cases[] = {
		{ "INTEGER", "NA", NULL, true },
		{ "DATE", " . ", NULL, true },
		{ "BOOLEAN", "NA", NULL, true },
		{ "VARCHAR", "NA", "NA", true },
		{ "INTEGER", "NA", "NA", false },          /* not flagged: as written */
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct table_type t;
		struct tab_cell c = { .kind = TAB_TEXT, .text = cases[i].text,
		                      .len = strlen(cases[i].text), .marker = cases[i].marker };
		char err[100], buf[TABLE_VALUE_BUF];
		const char *v;
		size_t len;

		CU_ASSERT_EQUAL_FATAL(table_type_parse(cases[i].type, &t, err, sizeof err), 0);
		v = table_value(&t, &c, buf, &len);
		CU_ASSERT_EQUAL(v == NULL, cases[i].want == NULL);
		if (v != NULL && cases[i].want != NULL)
			CU_ASSERT_EQUAL(len == strlen(cases[i].want) &&
			                memcmp(v, cases[i].want, len) == 0, true);
	}
}

int suite_table_types(void)
{
	static const struct test_case tests[] = {
		{ "parse, canonical name, DDL", test_parse },
		{ "parse error messages", test_messages },
		{ "row bytes", test_row_bytes },
		{ "types of dataset schemas", test_from_inferred },
		{ "compatibility matrix", test_compat_matrix },
		{ "match: the same schema", test_match_exact },
		{ "match: case, order, widening", test_match_case_and_order },
		{ "match: missing, extra, mismatched, NOT NULL", test_match_incompatible },
		{ "match: wider dataset types widen the table", test_match_wider },
		{ "match: duplicates, empty dataset", test_match_duplicates_and_empty },
		{ "values for the load", test_values },
		{ "values: missing-value markers", test_value_markers },
		{ NULL, NULL },
	};

	return suite_add("table_types", tests);
}
