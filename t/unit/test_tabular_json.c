/* test_tabular_json.c - the JSON reader: arrays and JSON lines, flattened
 * names, the union of columns, typed cells, malformed input with its line,
 * limits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"
#include "tabular/internal.h"
#include "tabular/tabular.h"
#include "tabular_test.h"

struct collect {
	char out[8192];
	size_t len;
};

static void put_cells(struct collect *c, const struct tab_cell *cells, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		static const char kinds[] = { [TAB_NULL] = '~', [TAB_TEXT] = 's', [TAB_NUMBER] = 'n',
		                              [TAB_BOOL] = 'b', [TAB_DATE] = 'd', [TAB_DATETIME] = 't' };
		int w = snprintf(c->out + c->len, sizeof c->out - c->len, "%s%c:%s", i ? "|" : "",
		                 kinds[cells[i].kind], cells[i].text);
		if (w > 0 && c->len + (size_t)w < sizeof c->out)
			c->len += (size_t)w;
	}
	if (c->len + 1 < sizeof c->out) {
		c->out[c->len++] = '\n';
		c->out[c->len] = '\0';
	}
}

static int on_header(void *arg, const struct tab_cell *names, size_t n)
{
	put_cells(arg, names, n);
	return 0;
}

static int on_row(void *arg, const struct tab_cell *cells, size_t n)
{
	put_cells(arg, cells, n);
	return 0;
}

static int read_json(const char *text, struct collect *c, char *err, size_t errlen)
{
	struct tab_sink sink = { on_header, on_row, c };
	char path[512];
	int rc;

	memset(c, 0, sizeof *c);
	if (tt_write(path, sizeof path, ".json", text, strlen(text)) != 0)
		return -100;
	rc = tab_read(path, TAB_JSON, NULL, &sink, NULL, err, errlen);
	unlink(path);
	return rc;
}

struct read_case { const char *name, *in, *want; };

static const struct read_case reads[] = {
	{ "an array of objects",
	  "[{\"a\": 1, \"b\": \"x\"}, {\"a\": 2.50, \"b\": null}]",
	  "s:a|s:b\nn:1|s:x\nn:2.50|~:\n" },
	{ "JSON lines, blank lines between",
	  "{\"a\": true}\n\n{\"a\": false}\r\n", "s:a\nb:true\nb:false\n" },
	{ "objects back to back", "{\"a\":1}{\"a\":2}", "s:a\nn:1\nn:2\n" },
	{ "nested objects flattened, arrays as JSON text",
	  "[{\"id\": 1, \"user\": {\"name\": \"ann\", \"geo\": {\"lat\": 1.5}}, \"tags\": [\"x\", 2]}]",
	  "s:id|s:user.name|s:user.geo.lat|s:tags\nn:1|s:ann|n:1.5|s:[\"x\",2]\n" },
	{ "the union of names in first-seen order",
	  "{\"a\": 1}\n{\"b\": 2, \"a\": 3}\n{\"c\": {\"d\": 4}}\n",
	  "s:a|s:b|s:c.d\nn:1|~:|~:\nn:3|n:2|~:\n~:|~:|n:4\n" },
	{ "an empty nested object adds no column", "[{\"a\": {}, \"b\": 1}]", "s:b\nn:1\n" },
	{ "an empty array", "  [ ]  \n", "\n" },
	{ "an empty object is a row of nulls", "[{\"a\":1},{}]", "s:a\nn:1\n~:\n" },
	{ "empty strings are null, numbers as written",
	  "[{\"s\": \"\", \"n\": 1e5, \"m\": -0.0, \"u\": \"caf\\u00e9\"}]",
	  "s:s|s:n|s:m|s:u\n~:|n:1e5|n:-0.0|s:caf\xc3\xa9\n" },
	{ "a UTF-8 byte order mark", "\xef\xbb\xbf[{\"a\":1}]", "s:a\nn:1\n" },
	{ NULL, NULL, NULL },
};

static void test_reads(void)
{
	for (const struct read_case *t = reads; t->name != NULL; t++) {
		struct collect c;
		char err[256] = "";
		int rc = read_json(t->in, &c, err, sizeof err);

		if (rc != 0 || strcmp(c.out, t->want) != 0)
			fprintf(stderr, "\n%s: rc %d (%s), got:\n%s\nwant:\n%s\n", t->name, rc, err,
			        c.out, t->want);
		CU_ASSERT_EQUAL(rc, 0);
		CU_ASSERT_STRING_EQUAL(c.out, t->want);
	}
}

static void test_infer(void)
{
	const char *in =
		"[\n"
		" {\"id\": 1, \"price\": 12.50, \"ok\": true, \"day\": \"2024-01-02\", \"code\": \"007\",\n"
		"  \"meta\": {\"n\": 3000000000, \"at\": \"2024-01-02T10:00:00Z\"}, \"list\": [1]},\n"
		" {\"id\": 2, \"price\": 3, \"ok\": false, \"day\": \"2024-01-03\", \"code\": \"010\",\n"
		"  \"meta\": {\"n\": 1, \"at\": \"2024-01-03\"}, \"list\": []},\n"
		" {\"id\": 3, \"price\": null, \"ok\": true, \"day\": null, \"code\": \"x\", \"extra\": 1.5e2}\n"
		"]\n";
	struct infer_result r;
	char err[256], buf[512];

	CU_ASSERT_EQUAL_FATAL(tt_infer_str(TAB_JSON, in, &r, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(tt_schema(&r, buf, sizeof buf),
	    "id:INTEGER|price:DECIMAL(4,2)?|ok:BOOLEAN|day:DATE?|code:VARCHAR|"
	    "meta.n:BIGINT?|meta.at:TIMESTAMP?|list:VARCHAR?|extra:DOUBLE?");
	CU_ASSERT_EQUAL(r.row_count, 3);
	CU_ASSERT_EQUAL(r.analyzed_rows, 3);
	infer_result_free(&r);
}

struct fail_case { const char *name, *in, *msg; };

static const struct fail_case fails[] = {
	{ "empty", "", "file is empty" },
	{ "white space only", " \n\t\n", "file is empty" },
	{ "not an array or object", "\"text\"", "line 1: expected an array of objects or JSON lines" },
	{ "an element that is not an object", "[{\"a\":1},\n 2]", "line 2: a row must be a JSON object" },
	{ "a JSON line that is not an object", "{\"a\":1}\n[1]\n", "line 2: a row must be a JSON object" },
	{ "bad JSON on line 3", "{\"a\":1}\n{\"a\":2}\n{\"a\":}\n", "line 3: invalid JSON" },
	{ "a trailing comma", "[{\"a\":1},]", "line 1: invalid JSON" },
	{ "a missing comma", "[{\"a\":1}\n{\"a\":2}]", "line 2: expected ',' or ']'" },
	{ "text after the array", "[{\"a\":1}] x", "line 1: text after the end of the array" },
	{ "the array not closed", "[{\"a\":1},\n", "the file ends inside the array" },
	{ "an object cut short", "{\"a\":\n1", "the file ends inside a JSON value" },
	{ "a NUL escaped in a later row", "{\"a\":\"x\"}\n{\"a\":\"x\\u0000y\"}\n",
	  "line 2: \"a\" holds a \\u0000 (NUL) character" },
	{ "invalid UTF-8 (a C1 byte)", "{\"a\":\"\x85\"}", "invalid UTF-8 at byte 6" },
	{ NULL, NULL, NULL },
};

static void test_failures(void)
{
	for (const struct fail_case *t = fails; t->name != NULL; t++) {
		struct collect c;
		char err[256] = "";
		int rc = read_json(t->in, &c, err, sizeof err);

		if (rc != TAB_ERR_FORMAT || strstr(err, t->msg) == NULL)
			fprintf(stderr, "\n%s: rc %d '%s', want '%s'\n", t->name, rc, err, t->msg);
		CU_ASSERT_EQUAL(rc, TAB_ERR_FORMAT);
		CU_ASSERT(strstr(err, t->msg) != NULL);
	}
}

/* n objects nested in one another: {"k":{"k":...1}} */
static void nested(char *buf, int n)
{
	size_t o = 0;

	for (int i = 0; i < n; i++)
		o += (size_t)sprintf(buf + o, "{\"k\":");
	buf[o++] = '1';
	for (int i = 0; i < n; i++)
		buf[o++] = '}';
	buf[o] = '\0';
}

/* Nesting: 64 levels parse, 65 do not; an element over TAB_ROW_MAX; more
 * columns than TAB_COLUMNS_MAX. */
static void test_limits(void)
{
	char deep[1024];
	struct collect c;
	char err[256];

	nested(deep, 64);
	CU_ASSERT_EQUAL(read_json(deep, &c, err, sizeof err), 0);
	CU_ASSERT(strncmp(c.out, "s:k.k.k.k", 9) == 0);
	nested(deep, 65);
	CU_ASSERT_EQUAL(read_json(deep, &c, err, sizeof err), TAB_ERR_FORMAT);
	CU_ASSERT(strstr(err, "line 1: invalid JSON: nesting too deep") != NULL);

	/* an element longer than TAB_ROW_MAX */
	{
		size_t n = TAB_ROW_MAX + 64;
		char *big = malloc(n + 1);

		CU_ASSERT_FATAL(big != NULL);
		memcpy(big, "{\"a\":\"", 6);
		memset(big + 6, 'x', n - 8);
		memcpy(big + n - 2, "\"}", 3);
		CU_ASSERT_EQUAL(read_json(big, &c, err, sizeof err), TAB_ERR_FORMAT);
		CU_ASSERT(strstr(err, "line 1: a JSON value longer than") != NULL);
		free(big);
	}

	/* more than TAB_COLUMNS_MAX distinct names */
	{
		size_t cap = (size_t)TAB_COLUMNS_MAX * 16 + 64;
		char *wide = malloc(cap);
		size_t w = 0;

		CU_ASSERT_FATAL(wide != NULL);
		w += (size_t)sprintf(wide, "{");
		for (int i = 0; i <= TAB_COLUMNS_MAX; i++)
			w += (size_t)sprintf(wide + w, "%s\"c%d\":1", i ? "," : "", i);
		sprintf(wide + w, "}");
		CU_ASSERT_EQUAL(read_json(wide, &c, err, sizeof err), TAB_ERR_FORMAT);
		CU_ASSERT(strstr(err, "more than 16384 columns") != NULL);
		free(wide);
	}
}

/* Many rows: counted exactly in both passes, the rest not classified. */
static void test_many_rows(void)
{
	size_t cap = 40 * 200000 + 16, o = 0;
	char *data = malloc(cap);
	struct tab_opts opt;
	struct infer_result r;
	char err[256], buf[128];

	CU_ASSERT_FATAL(data != NULL);
	o += (size_t)sprintf(data, "[");
	for (int i = 0; i < 200000; i++)
		o += (size_t)sprintf(data + o, "%s{\"i\":%d,\"s\":\"v%d\"}\n", i ? "," : "", i, i);
	o += (size_t)sprintf(data + o, "]");
	tab_opts_init(&opt);
	CU_ASSERT_EQUAL_FATAL(tt_infer(TAB_JSON, data, o, &opt, &r, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(tt_schema(&r, buf, sizeof buf), "i:INTEGER|s:VARCHAR");
	CU_ASSERT_EQUAL(r.row_count, 200000);
	CU_ASSERT_EQUAL(r.analyzed_rows, 100000);
	infer_result_free(&r);
	free(data);
}

int suite_tabular_json(void)
{
	static const struct test_case tests[] = {
		{ "arrays, JSON lines, flattening, union of names", test_reads },
		{ "inferred schema of typed cells", test_infer },
		{ "malformed JSON: reasons with the line", test_failures },
		{ "limits: depth, element size, columns", test_limits },
		{ "many rows: exact count", test_many_rows },
		{ NULL, NULL },
	};
	return suite_add("tabular_json", tests);
}
