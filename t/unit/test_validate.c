/* test_validate.c - http/validate: every bound at max and max + 1, in a
 * JSON body and in a query string. */
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "suites.h"
#include "http/request.h"
#include "http/validate.h"
#include "util/arena.h"
#include "util/config.h"

struct in {
	const char *name, *secret, *note;
	long long port;
	double ratio;
	bool on;
	int color;
	struct json_object *opts, *list;
	int even;
};

static const char *const colors[] = { "red", "green", NULL };

/* A V_CHECK row: even integers only. */
static int check_even(struct json_object *v, void *out, char *msg, size_t len)
{
	long long n;

	if (v == NULL || sscanf(json_object_get_string(v), "%lld", &n) != 1 || n % 2) {
		snprintf(msg, len, "must be an even integer");
		return -1;
	}
	*(int *)out = (int)n;
	return 0;
}

#define I(m) VOFF(struct in, m)
static const struct vfield fields[] = {
	{ "name",   V_STR,  V_REQUIRED | V_NONBLANK, 1, 5, NULL, NULL, I(name) },
	{ "secret", V_STR,  V_BYTES, 0, 4, NULL, NULL, I(secret) },
	{ "note",   V_STR,  V_NULL, 0, 3, NULL, NULL, I(note) },
	{ "port",   V_INT,  0, 1, 65535, NULL, NULL, I(port) },
	{ "ratio",  V_NUM,  0, 0, 1, NULL, NULL, I(ratio) },
	{ "on",     V_BOOL, 0, 0, 0, NULL, NULL, I(on) },
	{ "color",  V_ENUM, V_NOCASE, 0, 0, colors, NULL, I(color) },
	{ "opts",   V_OBJ,  0, 0, 16, NULL, NULL, I(opts) },
	{ "list",   V_ARR,  0, 1, 2, NULL, NULL, I(list) },
	{ "even",   V_CHECK, 0, 0, 0, NULL, check_even, I(even) },
	VFIELDS_END
};

struct json_case {
	const char *body;
	enum verr_code code;          /* VERR_NONE: accepted */
	const char *field;            /* the field the error names */
};

static const struct json_case json_cases[] = {
	{ "{\"name\":\"abcde\"}", VERR_NONE, NULL },                 /* 5 = max */
	{ "{\"name\":\"abcdef\"}", VERR_RANGE, "name" },             /* max + 1 */
	{ "{\"name\":\"\"}", VERR_RANGE, "name" },                   /* min - 1 */
	{ "{\"name\":\"\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\"}", VERR_NONE, NULL }, /* 5 chars, 10 bytes */
	{ "{\"name\":\"   \"}", VERR_BLANK, "name" },
	{ "{\"name\":\"\\f\\u000b\\t\"}", VERR_BLANK, "name" },     /* any isspace */
	{ "{\"name\":\"a\\u0000b\"}", VERR_NUL, "name" },
	{ "{\"name\":5}", VERR_TYPE, "name" },
	{ "{}", VERR_REQUIRED, "name" },
	{ "{\"name\":null}", VERR_REQUIRED, "name" },
	{ "[]", VERR_NOT_OBJECT, "" },
	{ "{\"name\":\"a\",\"nme\":1}", VERR_UNKNOWN, "nme" },
	{ "{\"name\":\"a\",\"secret\":\"abcd\"}", VERR_NONE, NULL },  /* 4 bytes */
	{ "{\"name\":\"a\",\"secret\":\"\\u00e9\\u00e9\\u00e9\"}", VERR_RANGE, "secret" }, /* 6 bytes */
	{ "{\"name\":\"a\",\"note\":null}", VERR_NONE, NULL },
	{ "{\"name\":\"a\",\"note\":\"abcd\"}", VERR_RANGE, "note" },
	{ "{\"name\":\"a\",\"port\":65535}", VERR_NONE, NULL },
	{ "{\"name\":\"a\",\"port\":65536}", VERR_RANGE, "port" },
	{ "{\"name\":\"a\",\"port\":1}", VERR_NONE, NULL },
	{ "{\"name\":\"a\",\"port\":0}", VERR_RANGE, "port" },
	{ "{\"name\":\"a\",\"port\":1.5}", VERR_TYPE, "port" },
	{ "{\"name\":\"a\",\"port\":\"80\"}", VERR_TYPE, "port" },
	{ "{\"name\":\"a\",\"port\":99999999999999999999999}", VERR_RANGE, "port" },
	{ "{\"name\":\"a\",\"ratio\":1}", VERR_NONE, NULL },
	{ "{\"name\":\"a\",\"ratio\":1.0000001}", VERR_RANGE, "ratio" },
	{ "{\"name\":\"a\",\"ratio\":-0.0000001}", VERR_RANGE, "ratio" },
	{ "{\"name\":\"a\",\"on\":true}", VERR_NONE, NULL },
	{ "{\"name\":\"a\",\"on\":1}", VERR_TYPE, "on" },
	{ "{\"name\":\"a\",\"color\":\"GREEN\"}", VERR_NONE, NULL },
	{ "{\"name\":\"a\",\"color\":\"blue\"}", VERR_CHOICE, "color" },
	{ "{\"name\":\"a\",\"opts\":{\"k\":\"12345678\"}}", VERR_NONE, NULL },  /* 16 bytes */
	{ "{\"name\":\"a\",\"opts\":{\"k\":\"123456789\"}}", VERR_RANGE, "opts" }, /* 17 */
	{ "{\"name\":\"a\",\"opts\":[]}", VERR_TYPE, "opts" },
	{ "{\"name\":\"a\",\"list\":[1,2]}", VERR_NONE, NULL },
	{ "{\"name\":\"a\",\"list\":[1,2,3]}", VERR_RANGE, "list" },
	{ "{\"name\":\"a\",\"list\":[]}", VERR_RANGE, "list" },
	{ "{\"name\":\"a\",\"even\":4}", VERR_NONE, NULL },
	{ "{\"name\":\"a\",\"even\":3}", VERR_INVALID, "even" },
	/* the first error in table order, whatever the key order */
	{ "{\"port\":0,\"name\":\"abcdef\"}", VERR_RANGE, "name" },
	/* a bad value is named before an absent required field */
	{ "{\"port\":0}", VERR_RANGE, "port" },
};

static void test_json_bounds(void)
{
	for (size_t i = 0; i < sizeof json_cases / sizeof json_cases[0]; i++) {
		const struct json_case *c = &json_cases[i];
		struct json_object *body = json_tokener_parse(c->body);
		struct in in;
		struct verror e;
		int rc;

		CU_ASSERT_PTR_NOT_NULL_FATAL(body);
		memset(&in, 0, sizeof in);
		rc = validate_json(fields, body, &in, NULL, &e);
		if (c->code == VERR_NONE) {
			if (rc != 0)
				fprintf(stderr, "\n  %s: %s\n", c->body, e.message);
			CU_ASSERT_EQUAL(rc, 0);
		} else {
			if (e.code != c->code)
				fprintf(stderr, "\n  %s: got %s\n", c->body, verr_code_name(e.code));
			CU_ASSERT_EQUAL(rc, -1);
			CU_ASSERT_EQUAL(e.code, c->code);
			CU_ASSERT_STRING_EQUAL(e.field, c->field);
			/* the message names the field */
			CU_ASSERT_PTR_NOT_NULL(strstr(e.message, c->field));
		}
		json_object_put(body);
	}
}

static void test_json_values(void)
{
	struct json_object *body = json_tokener_parse(
	    "{\"name\":\"ab\",\"port\":8080,\"ratio\":0.5,\"on\":false,"
	    "\"color\":\"Green\",\"list\":[7],\"even\":6,\"note\":null}");
	struct in in;
	struct verror e;
	vgiven given;

	memset(&in, 0, sizeof in);
	in.on = true;
	in.secret = "default";
	CU_ASSERT_EQUAL_FATAL(validate_json(fields, body, &in, &given, &e), 0);
	CU_ASSERT_STRING_EQUAL(in.name, "ab");
	CU_ASSERT_STRING_EQUAL(in.secret, "default");     /* absent: untouched */
	CU_ASSERT_PTR_NULL(in.note);                      /* V_NULL: stored */
	CU_ASSERT_EQUAL(in.port, 8080);
	CU_ASSERT_DOUBLE_EQUAL(in.ratio, 0.5, 1e-12);
	CU_ASSERT_FALSE(in.on);
	CU_ASSERT_EQUAL(in.color, 1);
	CU_ASSERT_EQUAL(json_object_array_length(in.list), 1);
	CU_ASSERT_EQUAL(in.even, 6);
	CU_ASSERT_TRUE(validate_given(fields, given, "port"));
	CU_ASSERT_TRUE(validate_given(fields, given, "note"));
	CU_ASSERT_FALSE(validate_given(fields, given, "secret"));
	CU_ASSERT_FALSE(validate_given(fields, given, "opts"));
	CU_ASSERT_FALSE(validate_given(fields, given, "nothing"));
	json_object_put(body);
}

/* --- every refusal, and paths ------------------------------------------------ */

struct seen {
	enum verr_code code[8];
	char field[8][VERR_FIELD_MAX + 1];
	size_t n, stop_at;
};

static int record(const struct verror *e, void *arg)
{
	struct seen *s = arg;

	if (s->n < 8) {
		s->code[s->n] = e->code;
		memcpy(s->field[s->n], e->field, sizeof e->field);
	}
	s->n++;
	return s->n == s->stop_at ? -1 : 0;
}

static void test_json_each(void)
{
	struct json_object *body = json_tokener_parse(
	    "{\"port\":0,\"extra\":1,\"on\":true,\"list\":[]}");
	struct seen s = { .stop_at = 0 };
	struct in in;
	vgiven given;

	memset(&in, 0, sizeof in);
	/* the unknown key, then the rows in table order, name's absence where
	 * its row stands */
	CU_ASSERT_EQUAL(validate_json_each(fields, body, &in, 0, &given, record, &s), 4);
	CU_ASSERT_EQUAL_FATAL(s.n, 4);
	CU_ASSERT_EQUAL(s.code[0], VERR_UNKNOWN);
	CU_ASSERT_STRING_EQUAL(s.field[0], "extra");
	CU_ASSERT_EQUAL(s.code[1], VERR_REQUIRED);
	CU_ASSERT_STRING_EQUAL(s.field[1], "name");
	CU_ASSERT_EQUAL(s.code[2], VERR_RANGE);
	CU_ASSERT_STRING_EQUAL(s.field[2], "port");
	CU_ASSERT_EQUAL(s.code[3], VERR_RANGE);
	CU_ASSERT_STRING_EQUAL(s.field[3], "list");
	/* the good field was still taken, and said to be given */
	CU_ASSERT_TRUE(in.on);
	CU_ASSERT_TRUE(validate_given(fields, given, "on"));

	/* open: keys not in the table are the caller's */
	memset(&s, 0, sizeof s);
	CU_ASSERT_EQUAL(validate_json_each(fields, body, &in, VALIDATE_OPEN, NULL,
	                                   record, &s), 3);
	CU_ASSERT_EQUAL(s.code[0], VERR_REQUIRED);

	/* fn stops the walk */
	memset(&s, 0, sizeof s);
	s.stop_at = 2;
	CU_ASSERT_EQUAL(validate_json_each(fields, body, &in, 0, NULL, record, &s), 2);
	json_object_put(body);

	/* not an object: one refusal */
	body = json_object_new_array();
	memset(&s, 0, sizeof s);
	CU_ASSERT_EQUAL(validate_json_each(fields, body, &in, 0, NULL, record, &s), 1);
	CU_ASSERT_EQUAL(s.code[0], VERR_NOT_OBJECT);
	json_object_put(body);
}

static void test_nest(void)
{
	struct json_object *body = json_tokener_parse("{\"name\":\"abcdef\"}");
	char longer[VERR_FIELD_MAX + 10];
	struct in in;
	struct verror e;

	CU_ASSERT_EQUAL_FATAL(validate_json(fields, body, &in, NULL, &e), -1);
	verror_nest(&e, "documents[%d]", 3);
	CU_ASSERT_STRING_EQUAL(e.field, "documents[3].name");
	CU_ASSERT_STRING_EQUAL(e.message, "documents[3].name must be 1 to 5 characters long");
	json_object_put(body);

	body = json_object_new_string("x");
	CU_ASSERT_EQUAL_FATAL(validate_json(fields, body, &in, NULL, &e), -1);
	verror_nest(&e, "jobs[%d].input", 0);
	CU_ASSERT_STRING_EQUAL(e.field, "jobs[0].input");
	CU_ASSERT_STRING_EQUAL(e.message, "jobs[0].input must be an object");
	json_object_put(body);

	/* a path longer than the field's buffer is cut, not overrun */
	body = json_tokener_parse("{\"name\":\"abcdef\"}");
	memset(longer, 'p', sizeof longer - 1);
	longer[sizeof longer - 1] = '\0';
	CU_ASSERT_EQUAL_FATAL(validate_json(fields, body, &in, NULL, &e), -1);
	verror_nest(&e, "%s", longer);
	CU_ASSERT_EQUAL(strlen(e.field), VERR_FIELD_MAX);
	CU_ASSERT(strlen(e.message) < sizeof e.message);
	json_object_put(body);
}

/* --- the query string ----------------------------------------------------- */

struct query_case {
	const char *query;
	enum verr_code code;
	const char *field;
};

static const struct query_case query_cases[] = {
	{ "name=abcde", VERR_NONE, NULL },
	{ "name=abcdef", VERR_RANGE, "name" },
	{ "name=%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9", VERR_NONE, NULL },
	{ "name=+++", VERR_BLANK, "name" },
	{ "", VERR_REQUIRED, "name" },
	{ "name=a&port=65535", VERR_NONE, NULL },
	{ "name=a&port=65536", VERR_RANGE, "port" },
	{ "name=a&port=0", VERR_RANGE, "port" },
	{ "name=a&port=99999999999999999999999", VERR_RANGE, "port" },
	{ "name=a&port=", VERR_TYPE, "port" },
	{ "name=a&port=8x", VERR_TYPE, "port" },
	{ "name=a&port=+8", VERR_TYPE, "port" },
	{ "name=a&ratio=1", VERR_NONE, NULL },
	{ "name=a&ratio=1.01", VERR_RANGE, "ratio" },
	{ "name=a&ratio=nan", VERR_RANGE, "ratio" },
	{ "name=a&ratio=x", VERR_TYPE, "ratio" },
	{ "name=a&on=true", VERR_NONE, NULL },
	{ "name=a&on=0", VERR_NONE, NULL },
	{ "name=a&on=yes", VERR_TYPE, "on" },
	{ "name=a&color=red", VERR_NONE, NULL },
	{ "name=a&color=blue", VERR_CHOICE, "color" },
	{ "name=a&even=2", VERR_NONE, NULL },
	{ "name=a&even=1", VERR_INVALID, "even" },
	{ "name=a&opts=x", VERR_TYPE, "opts" },
	{ "name=a&pgae=2", VERR_UNKNOWN, "pgae" },
	{ "name=a&name=b", VERR_DUPLICATE, "name" },
	{ "name=a&port=%zz", VERR_MALFORMED, "port" },     /* names the parameter */
	{ "name=a%00", VERR_MALFORMED, "name" },
	{ "name=a&p%zz=1", VERR_MALFORMED, "" },           /* no name to give */
	{ "name=a&pgae=%zz", VERR_UNKNOWN, "pgae" },
};

static void test_query_bounds(void)
{
	struct arena *a = arena_new();
	struct config cfg;

	memset(&cfg, 0, sizeof cfg);
	for (size_t i = 0; i < sizeof query_cases / sizeof query_cases[0]; i++) {
		const struct query_case *c = &query_cases[i];
		char qs[128];
		char *env[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/", qs, NULL };
		struct req r;
		struct in in;
		struct verror e;
		int rc;

		snprintf(qs, sizeof qs, "QUERY_STRING=%s", c->query);
		CU_ASSERT_EQUAL_FATAL(req_init_env(&r, a, &cfg, env), REQ_OK);
		memset(&in, 0, sizeof in);
		rc = validate_query(fields, &r, &in, NULL, &e);
		if (c->code == VERR_NONE) {
			if (rc != 0)
				fprintf(stderr, "\n  %s: %s\n", c->query, e.message);
			CU_ASSERT_EQUAL(rc, 0);
		} else {
			if (e.code != c->code)
				fprintf(stderr, "\n  %s: got %s\n", c->query, verr_code_name(e.code));
			CU_ASSERT_EQUAL(rc, -1);
			CU_ASSERT_EQUAL(e.code, c->code);
			CU_ASSERT_STRING_EQUAL(e.field, c->field);
			CU_ASSERT(e.message[0] != '\0');
		}
	}
	arena_free(a);
}

static void test_query_values(void)
{
	struct arena *a = arena_new();
	struct config cfg;
	char *env[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/",
	                "QUERY_STRING=port=443&name=a+b&&on=1&color=GREEN", NULL };
	struct req r;
	struct in in;
	struct verror e;
	vgiven given;

	memset(&cfg, 0, sizeof cfg);
	CU_ASSERT_EQUAL_FATAL(req_init_env(&r, a, &cfg, env), REQ_OK);
	memset(&in, 0, sizeof in);
	CU_ASSERT_EQUAL_FATAL(validate_query(fields, &r, &in, &given, &e), 0);
	CU_ASSERT_STRING_EQUAL(in.name, "a b");
	CU_ASSERT_EQUAL(in.port, 443);
	CU_ASSERT_TRUE(in.on);
	CU_ASSERT_EQUAL(in.color, 1);
	CU_ASSERT_TRUE(validate_given(fields, given, "on"));
	CU_ASSERT_FALSE(validate_given(fields, given, "ratio"));
	arena_free(a);
}

int suite_validate(void)
{
	static const struct test_case tests[] = {
		{ "json: every bound at max and max + 1", test_json_bounds },
		{ "json: typed values and what was given", test_json_values },
		{ "json: every refusal in order, open tables, stopping", test_json_each },
		{ "json: a refusal put under a path", test_nest },
		{ "query: every bound at max and max + 1", test_query_bounds },
		{ "query: typed values and what was given", test_query_values },
		{ NULL, NULL },
	};

	return suite_add("validate", tests);
}
