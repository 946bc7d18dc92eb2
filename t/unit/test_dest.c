/* test_dest.c - the value forms the singer and file_storage connectors hand
 * the warehouse (ISO 8601 date-times to UTC, dates, booleans), the column
 * types they declare, and identifiers in the SQL they build. */
#include <stdio.h>
#include <string.h>

#include "suites.h"
#include "runner/connectors/dest.h"
#include "runner/connectors/file_storage.h"
#include "tabular/tabular.h"

struct dt_case {
	const char *in;
	const char *out;        /* NULL: refused */
};

static const struct dt_case datetime_cases[] = {
	{ "2026-01-02T03:04:05Z", "2026-01-02 03:04:05" },
	{ "2026-01-02T03:04:05z", "2026-01-02 03:04:05" },
	{ "2026-01-02 03:04:05", "2026-01-02 03:04:05" },        /* space, no zone = UTC */
	{ "2026-01-02t03:04:05", "2026-01-02 03:04:05" },
	{ "2026-01-02T03:04", "2026-01-02 03:04:00" },           /* no seconds */
	{ "2026-01-02", "2026-01-02 00:00:00" },                 /* a date alone */
	{ "2026-01-02T03:04:05.5Z", "2026-01-02 03:04:05.5" },
	{ "2026-01-02T03:04:05,25Z", "2026-01-02 03:04:05.25" }, /* decimal comma */
	{ "2026-01-02T03:04:05.123456789Z", "2026-01-02 03:04:05.123456" }, /* cut at 6 */
	{ "2026-01-02T03:04:05+02:00", "2026-01-02 01:04:05" },
	{ "2026-01-02T03:04:05-0530", "2026-01-02 08:34:05" },
	{ "2026-01-02T03:04:05+02", "2026-01-02 01:04:05" },
	{ "2026-01-01T01:00:00+02:00", "2025-12-31 23:00:00" },  /* back over a year */
	{ "2024-02-29T23:30:00-01:00", "2024-03-01 00:30:00" },  /* leap day forward */
	{ "2026-12-31T23:59:60Z", "2026-12-31 23:59:59" },       /* leap second */
	{ "0001-01-01T00:00:00Z", "0001-01-01 00:00:00" },
	{ "9999-12-31T23:59:59Z", "9999-12-31 23:59:59" },
	{ "0001-01-01T00:30:00+01:00", NULL },                   /* before year 1 */
	{ "9999-12-31T23:30:00-01:00", NULL },                   /* after 9999 */
	{ "2025-02-29T00:00:00Z", NULL },                        /* not a leap year */
	{ "2026-13-01T00:00:00Z", NULL },
	{ "2026-00-10T00:00:00Z", NULL },
	{ "2026-04-31T00:00:00Z", NULL },
	{ "2026-01-02T24:00:00Z", NULL },
	{ "2026-01-02T03:60:00Z", NULL },
	{ "2026-01-02T03:04:05+24:00", NULL },
	{ "2026-01-02T03:04:05Zjunk", NULL },
	{ "2026-01-02T03:04:05.Z", NULL },                       /* empty fraction */
	{ "2026-01-02T3:04:05Z", NULL },
	{ "2026-1-02", NULL },
	{ "20260102T030405Z", NULL },                            /* basic format */
	{ "2026-01-02X03:04:05", NULL },
	{ "yesterday", NULL },
	{ "", NULL },
};

static void test_datetime(void)
{
	for (size_t i = 0; i < sizeof datetime_cases / sizeof datetime_cases[0]; i++) {
		const struct dt_case *c = &datetime_cases[i];
		char out[DEST_DATETIME_LEN] = "";
		int rc = dest_datetime_norm(c->in, strlen(c->in), out);

		if ((rc == 0) != (c->out != NULL) || (c->out != NULL && strcmp(out, c->out) != 0))
			fprintf(stderr, "\ndatetime case %zu '%s': rc %d, '%s'\n", i, c->in, rc, out);
		CU_ASSERT_EQUAL(rc == 0, c->out != NULL);
		if (c->out != NULL)
			CU_ASSERT_STRING_EQUAL(out, c->out);
	}
}

/* The length given is what counts, not a NUL further on. */
static void test_datetime_length(void)
{
	char out[DEST_DATETIME_LEN];

	CU_ASSERT_EQUAL(dest_datetime_norm("2026-01-02T03:04:05Zxx", 20, out), 0);
	CU_ASSERT_STRING_EQUAL(out, "2026-01-02 03:04:05");
	CU_ASSERT_EQUAL(dest_datetime_norm("2026-01-02", 9, out), -1);
}

static const struct dt_case date_cases[] = {
	{ "2026-01-02", "2026-01-02" },
	{ "2026-01-02T00:00:00Z", "2026-01-02" },                /* as tap-postgres writes dates */
	{ "2026-01-02 10:00", "2026-01-02" },
	{ "2024-02-29", "2024-02-29" },
	{ "2023-02-29", NULL },
	{ "2026-01-02x", NULL },
	{ "2026/01/02", NULL },
	{ "02-01-2026", NULL },
	{ "", NULL },
};

static void test_date(void)
{
	for (size_t i = 0; i < sizeof date_cases / sizeof date_cases[0]; i++) {
		const struct dt_case *c = &date_cases[i];
		char out[11] = "";
		int rc = dest_date_norm(c->in, strlen(c->in), out);

		CU_ASSERT_EQUAL(rc == 0, c->out != NULL);
		if (c->out != NULL)
			CU_ASSERT_STRING_EQUAL(out, c->out);
	}
}

static void test_bool(void)
{
	static const struct dt_case cases[] = {
		{ "true", "1" }, { "TRUE", "1" }, { "t", "1" }, { "Yes", "1" },
		{ "y", "1" }, { "1", "1" },
		{ "false", "0" }, { "False", "0" }, { "f", "0" }, { "no", "0" },
		{ "N", "0" }, { "0", "0" },
		{ "", NULL }, { "2", NULL }, { "tru", NULL }, { "yess", NULL },
		{ "true ", NULL }, { "falsefalse", NULL },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *out = NULL;
		int rc = dest_bool_norm(cases[i].in, strlen(cases[i].in), &out);

		CU_ASSERT_EQUAL(rc == 0, cases[i].out != NULL);
		if (cases[i].out != NULL && out != NULL)
			CU_ASSERT_STRING_EQUAL(out, cases[i].out);
	}
}

static void test_sql_type(void)
{
	static const struct {
		struct dest_col c;
		const char *type;
	} cases[] = {
		{ { "a", DEST_BIGINT, 0, 0, true }, "BIGINT" },
		{ { "a", DEST_DOUBLE, 0, 0, true }, "DOUBLE" },
		{ { "a", DEST_DECIMAL, 2, 0, true }, "DECIMAL(38,2)" },
		{ { "a", DEST_BOOL, 0, 0, true }, "BOOLEAN" },
		{ { "a", DEST_DATE, 0, 0, true }, "DATE" },
		{ { "a", DEST_DATETIME, 0, 0, true }, "DATETIME(6)" },
		{ { "a", DEST_TEXT, 0, 0, true }, "LONGTEXT" },
		{ { "a", DEST_TEXT, 0, 255, false }, "VARCHAR(255)" },
		{ { "a", DEST_JSON, 0, 0, true }, "LONGTEXT" },
	};
	char buf[32];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		dest_sql_type(&cases[i].c, buf, sizeof buf);
		CU_ASSERT_STRING_EQUAL(buf, cases[i].type);
	}
}

/* Names go into SQL quoted, or the text is marked bad: never raw. */
static void test_dest_ident(void)
{
	struct strbuf b = { 0 };

	strbuf_adds(&b, "DELETE FROM ");
	dest_ident(&b, "we`ird");
	CU_ASSERT_FALSE(b.oom);
	CU_ASSERT_STRING_EQUAL(b.p, "DELETE FROM `we``ird`");
	dest_ident(&b, "");
	CU_ASSERT_TRUE(b.oom);
	strbuf_free(&b);
	dest_ident(&b, "trailing ");
	CU_ASSERT_TRUE(b.oom);
	strbuf_free(&b);
	strbuf_addf(&b, "%s-%d", "x", 42);
	CU_ASSERT_STRING_EQUAL(b.p, "x-42");
	CU_ASSERT_EQUAL(b.len, 4);
	strbuf_free(&b);
	CU_ASSERT_PTR_NULL(b.p);
}

static void test_prefix(void)
{
	static const struct { const char *p; bool ok; } cases[] = {
		{ "", true }, { "exports/", true }, { "exports", true },
		{ "exports/2026-", true }, { "a/./b/", true }, { "..data/", true },
		{ "a/..b", true }, { "a..", true },
		{ "/etc/", false }, { "..", false }, { "../other/", false },
		{ "a/../b", false }, { "a/..", false }, { "a\\b", false },
	};
	char max[1025], over[1026];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		bool got = file_storage_prefix_ok(cases[i].p, strlen(cases[i].p));

		if (got != cases[i].ok)
			fprintf(stderr, "\nprefix case %zu '%s': got %d\n", i, cases[i].p, got);
		CU_ASSERT_EQUAL(got, cases[i].ok);
	}
	/* A NUL inside: the JSON length and the C length differ. */
	CU_ASSERT_FALSE(file_storage_prefix_ok("a\0/../x", 7));
	memset(max, 'a', 1024);
	max[1024] = '\0';
	CU_ASSERT_TRUE(file_storage_prefix_ok(max, 1024));
	memset(over, 'a', 1025);
	over[1025] = '\0';
	CU_ASSERT_FALSE(file_storage_prefix_ok(over, 1025));
}

static void names_of(const char *const *in, size_t n, char (*out)[DEST_NAME_MAX])
{
	struct tab_cell cells[16];

	for (size_t i = 0; i < n; i++) {
		cells[i].kind = TAB_TEXT;
		cells[i].text = in[i];
		cells[i].len = strlen(in[i]);
		cells[i].num = 0;
	}
	file_storage_column_names(cells, n, out);
}

static void test_column_names(void)
{
	static const char *const in[] = {
		"id", "  padded  ", "", "ID", "id", "_source_file", "_SOURCE_ROW",
		"trailing ", "emoji\xf0\x9f\x98\x80", "dot.ted",
	};
	static const char *const want[] = {
		"id", "padded", "column_3", "ID_2", "id_3", "_source_file_2",
		"_SOURCE_ROW_2", "trailing", "column_9", "dot.ted",
	};
	char out[16][DEST_NAME_MAX];
	char long_in[100], long_want[65];
	const char *one[2];

	names_of(in, sizeof in / sizeof in[0], out);
	for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
		if (strcmp(out[i], want[i]) != 0)
			fprintf(stderr, "\ncolumn name %zu: got '%s'\n", i, out[i]);
		CU_ASSERT_STRING_EQUAL(out[i], want[i]);
	}
	/* Cut to 64 characters; a repeat keeps within 64 with its suffix. */
	memset(long_in, 'x', 99);
	long_in[99] = '\0';
	memset(long_want, 'x', 64);
	long_want[64] = '\0';
	one[0] = long_in;
	one[1] = long_in;
	names_of(one, 2, out);
	CU_ASSERT_STRING_EQUAL(out[0], long_want);
	CU_ASSERT_EQUAL(strlen(out[1]), 64);
	CU_ASSERT_STRING_EQUAL(out[1] + 62, "_2");
	/* Multi-byte characters are counted, not bytes, and never split. */
	{
		char wide[3 * 70 + 1];
		size_t o = 0;

		for (int i = 0; i < 70; i++) {
			memcpy(wide + o, "\xe6\x97\xa5", 3);
			o += 3;
		}
		wide[o] = '\0';
		one[0] = wide;
		names_of(one, 1, out);
		CU_ASSERT_EQUAL(strlen(out[0]), 64 * 3);
	}
}

int suite_dest(void)
{
	static const struct test_case tests[] = {
		{ "ISO 8601 date-times to UTC", test_datetime },
		{ "date-time length bound", test_datetime_length },
		{ "dates", test_date },
		{ "booleans", test_bool },
		{ "column types", test_sql_type },
		{ "quoted identifiers", test_dest_ident },
		{ "file_storage prefixes", test_prefix },
		{ "file_storage column names", test_column_names },
		{ NULL, NULL },
	};

	return suite_add("connector destination values", tests);
}
