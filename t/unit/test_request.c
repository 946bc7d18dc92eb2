/* test_request.c - request context, JSON bodies and the response writer. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <CUnit/CUnit.h>

#include "http/request.h"
#include "http/response.h"
#include "http/router.h"
#include "util/arena.h"
#include "util/config.h"
#include "util/uuid.h"
#include "suites.h"

#define MAX_DEPTH 32

static struct config cfg;

static void cfg_setup(void)
{
	memset(&cfg, 0, sizeof cfg);
	cfg.body_max_bytes = 100;
	cfg.json_max_depth = MAX_DEPTH;
}

/* --- environment ------------------------------------------------------ */

static void test_env_copy(void)
{
	struct arena *a = arena_new();
	char method[] = "REQUEST_METHOD=GET";
	char uri[] = "REQUEST_URI=/health?x=1";
	char *env[] = { method, uri, "QUERY_STRING=x=1", "NOEQUALS", NULL };
	struct req r;

	cfg_setup();
	CU_ASSERT_EQUAL_FATAL(req_init_env(&r, a, &cfg, env), REQ_OK);
	/* the caller's strings may go away: nothing points into them */
	memset(method, 'X', sizeof method - 1);
	memset(uri, 'X', sizeof uri - 1);
	CU_ASSERT_EQUAL(r.nenv, 4);
	CU_ASSERT_STRING_EQUAL(r.method, "GET");
	CU_ASSERT_STRING_EQUAL(r.path, "/health");
	CU_ASSERT_STRING_EQUAL(r.query, "x=1");
	CU_ASSERT_STRING_EQUAL(r.content_type, "");
	CU_ASSERT_EQUAL(r.content_length, -1);
	CU_ASSERT_STRING_EQUAL(req_env(&r, "REQUEST_METHOD"), "GET");
	CU_ASSERT_PTR_NULL(req_env(&r, "REQUEST"));
	CU_ASSERT_PTR_NULL(req_env(&r, "NOEQUALS"));
	CU_ASSERT_PTR_NULL(req_env(&r, "MISSING"));
	CU_ASSERT_PTR_NULL(r.in);
	CU_ASSERT_PTR_NULL(r.out);
	CU_ASSERT_EQUAL(r.status, 0);
	CU_ASSERT(r.started_ms > 0);
	req_finish(&r);
	CU_ASSERT_PTR_NULL(r.env);
	CU_ASSERT_PTR_NULL(req_env(&r, "REQUEST_METHOD"));
	arena_free(a);
}

/* 256 variables and 64 KiB are the limits; one more of either is refused. */
static void test_env_caps(void)
{
	static char vars[258][32];
	static char *env[260];
	static char big[64 * 1024 + 16];
	struct arena *a = arena_new();
	struct req r;
	size_t i, used;

	cfg_setup();
	env[0] = "REQUEST_METHOD=GET";
	env[1] = "REQUEST_URI=/";
	for (i = 2; i < 256; i++) {
		snprintf(vars[i], sizeof vars[i], "V%zu=1", i);
		env[i] = vars[i];
	}
	env[256] = NULL;
	CU_ASSERT_EQUAL(req_init_env(&r, a, &cfg, env), REQ_OK);
	CU_ASSERT_EQUAL(r.nenv, 256);
	snprintf(vars[256], sizeof vars[256], "V256=1");
	env[256] = vars[256];
	env[257] = NULL;
	CU_ASSERT_EQUAL(req_init_env(&r, a, &cfg, env), REQ_ERR_BAD);

	/* exactly 64 KiB including each string's NUL */
	used = strlen(env[0]) + 1 + strlen(env[1]) + 1;
	memset(big, 'a', sizeof big);
	memcpy(big, "BIG=", 4);
	big[64 * 1024 - used - 1] = '\0';
	env[2] = big;
	env[3] = NULL;
	CU_ASSERT_EQUAL(req_init_env(&r, a, &cfg, env), REQ_OK);
	big[64 * 1024 - used - 1] = 'a';
	big[64 * 1024 - used] = '\0';
	CU_ASSERT_EQUAL(req_init_env(&r, a, &cfg, env), REQ_ERR_BAD);
	CU_ASSERT_EQUAL(req_init_env(&r, a, &cfg, NULL), REQ_ERR_BAD);
	arena_free(a);
}

struct path_case {
	const char *doc, *uri;      /* NULL: not in the environment */
	int rc;
	const char *path;
};

static const struct path_case path_cases[] = {
	{ NULL, "/health", REQ_OK, "/health" },
	{ NULL, "/a%20b/c?x=%20", REQ_OK, "/a b/c" },
	{ NULL, "/a+b", REQ_OK, "/a+b" },             /* no plus-as-space */
	{ NULL, "/%2Fx", REQ_OK, "//x" },
	{ NULL, "/caf%C3%A9", REQ_OK, "/caf\xc3\xa9" },
	{ NULL, "/?", REQ_OK, "/" },
	{ NULL, "/a%00b", REQ_ERR_BAD, NULL },
	{ NULL, "/a%0", REQ_ERR_BAD, NULL },
	{ NULL, "/a%zz", REQ_ERR_BAD, NULL },
	{ NULL, "", REQ_ERR_BAD, NULL },
	{ NULL, NULL, REQ_ERR_BAD, NULL },
	/* DOCUMENT_URI comes decoded from the web server: used as it is */
	{ "/files/100%.csv", "/files/100%25.csv", REQ_OK, "/files/100%.csv" },
	{ "/a b", "/a%20b?q", REQ_OK, "/a b" },
	{ "", "/from%20uri", REQ_OK, "/from uri" },
};

static void test_path(void)
{
	struct arena *a = arena_new();

	cfg_setup();
	for (size_t i = 0; i < sizeof path_cases / sizeof path_cases[0]; i++) {
		const struct path_case *c = &path_cases[i];
		char doc[128], uri[128];
		char *env[4] = { "REQUEST_METHOD=GET", NULL, NULL, NULL };
		size_t n = 1;
		struct req r;
		int rc;

		if (c->doc != NULL) {
			snprintf(doc, sizeof doc, "DOCUMENT_URI=%s", c->doc);
			env[n++] = doc;
		}
		if (c->uri != NULL) {
			snprintf(uri, sizeof uri, "REQUEST_URI=%s", c->uri);
			env[n++] = uri;
		}
		rc = req_init_env(&r, a, &cfg, env);
		CU_ASSERT_EQUAL(rc, c->rc);
		if (rc != c->rc)
			fprintf(stderr, "\npath case %zu: rc %d\n", i, rc);
		if (c->path != NULL && rc == REQ_OK)
			CU_ASSERT_STRING_EQUAL(r.path, c->path);
	}
	arena_free(a);
}

/* 2048 decoded bytes are fine, 2049 are not, however they are spelled. */
static void test_path_limit(void)
{
	static char uri[16 + 3 * 2050];
	struct arena *a = arena_new();
	char *env[] = { "REQUEST_METHOD=GET", uri, NULL };
	struct req r;
	size_t off;

	cfg_setup();
	off = (size_t)snprintf(uri, sizeof uri, "REQUEST_URI=/");
	memset(uri + off, 'a', 2047);
	uri[off + 2047] = '\0';
	CU_ASSERT_EQUAL(req_init_env(&r, a, &cfg, env), REQ_OK);
	CU_ASSERT_EQUAL(strlen(r.path), 2048);
	uri[off + 2047] = 'a';
	uri[off + 2048] = '\0';
	CU_ASSERT_EQUAL(req_init_env(&r, a, &cfg, env), REQ_ERR_BAD);

	/* escaped: 2047 x "%41" after the slash decode to 2048 bytes */
	for (size_t i = 0; i < 2047; i++)
		memcpy(uri + off + 3 * i, "%41", 3);
	uri[off + 3 * 2047] = '\0';
	CU_ASSERT_EQUAL(req_init_env(&r, a, &cfg, env), REQ_OK);
	CU_ASSERT_EQUAL(strlen(r.path), 2048);
	memcpy(uri + off + 3 * 2047, "%41", 4);
	CU_ASSERT_EQUAL(req_init_env(&r, a, &cfg, env), REQ_ERR_BAD);
	arena_free(a);
}

static void test_method_required(void)
{
	struct arena *a = arena_new();
	char *none[] = { "REQUEST_URI=/", NULL };
	char *empty[] = { "REQUEST_METHOD=", "REQUEST_URI=/", NULL };
	struct req r;

	cfg_setup();
	CU_ASSERT_EQUAL(req_init_env(&r, a, &cfg, none), REQ_ERR_BAD);
	CU_ASSERT_STRING_EQUAL(r.method, "");   /* still safe to log */
	CU_ASSERT_PTR_EQUAL(r.arena, a);
	CU_ASSERT_EQUAL(req_init_env(&r, a, &cfg, empty), REQ_ERR_BAD);
	arena_free(a);
}

struct clen_case {
	const char *env;            /* NULL: absent */
	int rc;
	long long value;
};

static const struct clen_case clen_cases[] = {
	{ NULL, REQ_OK, -1 },
	{ "CONTENT_LENGTH=", REQ_OK, -1 },     /* nginx sends it empty */
	{ "CONTENT_LENGTH=0", REQ_OK, 0 },
	{ "CONTENT_LENGTH=1048576", REQ_OK, 1048576 },
	{ "CONTENT_LENGTH=9223372036854775807", REQ_OK, 9223372036854775807LL },
	{ "CONTENT_LENGTH=9223372036854775808", REQ_ERR_BAD, 0 },
	{ "CONTENT_LENGTH=-1", REQ_ERR_BAD, 0 },
	{ "CONTENT_LENGTH=+5", REQ_ERR_BAD, 0 },
	{ "CONTENT_LENGTH= 5", REQ_ERR_BAD, 0 },
	{ "CONTENT_LENGTH=5 ", REQ_ERR_BAD, 0 },
	{ "CONTENT_LENGTH=5x", REQ_ERR_BAD, 0 },
	{ "CONTENT_LENGTH=0x10", REQ_ERR_BAD, 0 },
};

static void test_content_length(void)
{
	struct arena *a = arena_new();

	cfg_setup();
	for (size_t i = 0; i < sizeof clen_cases / sizeof clen_cases[0]; i++) {
		const struct clen_case *c = &clen_cases[i];
		char *env[] = { "REQUEST_METHOD=POST", "REQUEST_URI=/",
		                (char *)c->env, NULL };
		struct req r;
		int rc = req_init_env(&r, a, &cfg, env);

		CU_ASSERT_EQUAL(rc, c->rc);
		if (rc == REQ_OK)
			CU_ASSERT_EQUAL(r.content_length, c->value);
	}
	arena_free(a);
}

/* --- headers, parameters, query --------------------------------------- */

static void test_headers(void)
{
	struct arena *a = arena_new();
	char *env[] = {
		"REQUEST_METHOD=GET", "REQUEST_URI=/",
		"HTTP_AUTHORIZATION=Bearer abc",
		"HTTP_CUSTOMER_NAME=acme",
		"HTTP_X_EMPTY=",
		"CONTENT_TYPE=application/json; charset=utf-8",
		"CONTENT_LENGTH=",
		"HTTP_CONTENT_TYPE=never-used",
		NULL,
	};
	static const struct { const char *name, *value; } cases[] = {
		{ "Authorization", "Bearer abc" },
		{ "authorization", "Bearer abc" },
		{ "AUTHORIZATION", "Bearer abc" },
		{ "customer_name", "acme" },
		{ "Customer-Name", "acme" },
		{ "X-Empty", "" },
		{ "Content-Type", "application/json; charset=utf-8" },
		{ "content-type", "application/json; charset=utf-8" },
		{ "Content-Length", NULL },     /* empty counts as absent */
		{ "X-Missing", NULL },
		{ "", NULL },
		{ NULL, NULL },
	};
	struct req r;

	cfg_setup();
	CU_ASSERT_EQUAL_FATAL(req_init_env(&r, a, &cfg, env), REQ_OK);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *v = req_header(&r, cases[i].name);

		if (cases[i].value == NULL) {
			CU_ASSERT_PTR_NULL(v);
		} else {
			CU_ASSERT_PTR_NOT_NULL_FATAL(v);
			CU_ASSERT_STRING_EQUAL(v, cases[i].value);
		}
	}
	arena_free(a);
}

static void test_params(void)
{
	static const struct route routes[] = {
		{ "GET", "/p/{pipeline_id}/jobs/{job_id}", NULL, ROUTE_AUTH_NONE, NULL },
	};
	struct arena *a = arena_new();
	char *env[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/p/abc/jobs/abc_2/",
	                NULL };
	struct route_match m;
	struct req r;

	cfg_setup();
	CU_ASSERT_EQUAL_FATAL(req_init_env(&r, a, &cfg, env), REQ_OK);
	CU_ASSERT_PTR_NULL(req_param(&r, "pipeline_id"));
	CU_ASSERT_EQUAL_FATAL(router_match(routes, 1, r.method, r.path, &m),
	                      ROUTE_FOUND);
	req_set_params(&r, &m);
	CU_ASSERT_EQUAL(r.nparams, 2);
	CU_ASSERT_STRING_EQUAL(req_param(&r, "pipeline_id"), "abc");
	CU_ASSERT_STRING_EQUAL(req_param(&r, "job_id"), "abc_2");
	CU_ASSERT_PTR_NULL(req_param(&r, "job"));
	CU_ASSERT_PTR_NULL(req_param(&r, NULL));
	arena_free(a);
}

struct query_case {
	const char *query, *name;
	const char *value;          /* NULL: absent or refused */
	int err;
};

static const struct query_case query_cases[] = {
	{ "ms=10", "ms", "10", REQ_OK },
	{ "a=1&ms=250&b=2", "ms", "250", REQ_OK },
	{ "q=hello+world", "q", "hello world", REQ_OK },
	{ "q=hello%20world", "q", "hello world", REQ_OK },
	{ "q=a%2Bb", "q", "a+b", REQ_OK },
	{ "q=%26%3D", "q", "&=", REQ_OK },
	{ "my+name=1", "my name", "1", REQ_OK },
	{ "my%20name=2", "my name", "2", REQ_OK },
	{ "a=1&a=2", "a", "1", REQ_OK },           /* first wins */
	{ "flag", "flag", "", REQ_OK },
	{ "flag=", "flag", "", REQ_OK },
	{ "&&x=1&&", "x", "1", REQ_OK },
	{ "x==1", "x", "=1", REQ_OK },
	{ "ms=10", "m", NULL, REQ_OK },
	{ "msx=10", "ms", NULL, REQ_OK },
	{ "", "ms", NULL, REQ_OK },
	{ "q=%zz", "q", NULL, REQ_ERR_BAD },
	{ "q=%4", "q", NULL, REQ_ERR_BAD },
	{ "q=a%00b", "q", NULL, REQ_ERR_BAD },
	{ "%zz=1&q=2", "q", NULL, REQ_ERR_BAD },
	{ "q=1&r=%zz", "q", "1", REQ_OK },         /* r is never decoded */
};

static void test_query(void)
{
	struct arena *a = arena_new();

	cfg_setup();
	for (size_t i = 0; i < sizeof query_cases / sizeof query_cases[0]; i++) {
		const struct query_case *c = &query_cases[i];
		char qs[128];
		char *env[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/", qs, NULL };
		struct req r;
		const char *v;
		int err = 12345;

		snprintf(qs, sizeof qs, "QUERY_STRING=%s", c->query);
		CU_ASSERT_EQUAL_FATAL(req_init_env(&r, a, &cfg, env), REQ_OK);
		v = req_query(&r, c->name, &err);
		CU_ASSERT_EQUAL(err, c->err);
		if (c->value == NULL) {
			CU_ASSERT_PTR_NULL(v);
		} else {
			CU_ASSERT_PTR_NOT_NULL_FATAL(v);
			CU_ASSERT_STRING_EQUAL(v, c->value);
		}
		/* err may be NULL */
		v = req_query(&r, c->name, NULL);
		CU_ASSERT((v == NULL) == (c->value == NULL));
	}
	arena_free(a);
}

static void test_query_absent(void)
{
	struct arena *a = arena_new();
	char *env[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/", NULL };
	struct req r;
	int err = 1;

	cfg_setup();
	CU_ASSERT_EQUAL_FATAL(req_init_env(&r, a, &cfg, env), REQ_OK);
	CU_ASSERT_STRING_EQUAL(r.query, "");
	CU_ASSERT_PTR_NULL(req_query(&r, "ms", &err));
	CU_ASSERT_EQUAL(err, REQ_OK);
	arena_free(a);
}

/* --- body ------------------------------------------------------------- */

/* A request with the given content type, length (-1: absent) and body. */
static int make_req(struct req *r, struct arena *a, const char *ctype,
                    long long clen, const char *body, size_t len)
{
	static char ct[128], cl[64];
	char *env[5] = { "REQUEST_METHOD=POST", "REQUEST_URI=/_test/echo",
	                 NULL, NULL, NULL };
	size_t n = 2;
	int rc;

	if (ctype != NULL) {
		snprintf(ct, sizeof ct, "CONTENT_TYPE=%s", ctype);
		env[n++] = ct;
	}
	if (clen >= 0) {
		snprintf(cl, sizeof cl, "CONTENT_LENGTH=%lld", clen);
		env[n++] = cl;
	}
	rc = req_init_env(r, a, &cfg, env);
	req_set_test_body(r, body, len);
	return rc;
}

static void test_read_body(void)
{
	struct arena *a = arena_new();
	char body[80];
	struct req r;
	char *buf;
	size_t len;

	cfg_setup();
	memset(body, 'x', sizeof body);

	/* with CONTENT_LENGTH: max is fine, max + 1 refused before reading */
	make_req(&r, a, NULL, 64, body, 64);
	CU_ASSERT_EQUAL(req_read_body(&r, 64, &buf, &len), REQ_OK);
	CU_ASSERT_EQUAL(len, 64);
	CU_ASSERT_EQUAL(buf[64], '\0');
	make_req(&r, a, NULL, 65, body, 65);
	CU_ASSERT_EQUAL(req_read_body(&r, 64, &buf, &len), REQ_ERR_TOO_LARGE);
	CU_ASSERT_PTR_NULL(buf);
	CU_ASSERT_EQUAL(len, 0);

	/* only CONTENT_LENGTH bytes are taken */
	make_req(&r, a, NULL, 3, "abcdef", 6);
	CU_ASSERT_EQUAL(req_read_body(&r, 64, &buf, &len), REQ_OK);
	CU_ASSERT_EQUAL(len, 3);
	CU_ASSERT_STRING_EQUAL(buf, "abc");

	/* a body shorter than announced: the client went away */
	make_req(&r, a, NULL, 10, "abc", 3);
	CU_ASSERT_EQUAL(req_read_body(&r, 64, &buf, &len), REQ_ERR_IO);
	CU_ASSERT_PTR_NULL(buf);

	/* without CONTENT_LENGTH: up to max, one more is refused */
	make_req(&r, a, NULL, -1, body, 64);
	CU_ASSERT_EQUAL(req_read_body(&r, 64, &buf, &len), REQ_OK);
	CU_ASSERT_EQUAL(len, 64);
	make_req(&r, a, NULL, -1, body, 65);
	CU_ASSERT_EQUAL(req_read_body(&r, 64, &buf, &len), REQ_ERR_TOO_LARGE);
	make_req(&r, a, NULL, -1, NULL, 0);
	CU_ASSERT_EQUAL(req_read_body(&r, 64, &buf, &len), REQ_OK);
	CU_ASSERT_EQUAL(len, 0);
	CU_ASSERT_STRING_EQUAL(buf, "");
	arena_free(a);
}

/* --- json_parse_bounded ----------------------------------------------- */

/* depth levels of arrays ("[" ... "]") or objects ({"k": ... }) around inner. */
static char *nest(int depth, bool objects, const char *inner)
{
	size_t n = (size_t)depth * 6 + strlen(inner) + 1;
	char *s = malloc(n), *p = s;

	for (int i = 0; i < depth; i++)
		p += sprintf(p, "%s", objects ? "{\"k\":" : "[");
	p += sprintf(p, "%s", inner);
	for (int i = 0; i < depth; i++)
		*p++ = objects ? '}' : ']';
	*p = '\0';
	return s;
}

struct depth_case {
	int depth;
	bool objects;
	const char *inner;
	bool ok;
};

/* The innermost level is empty, holds a scalar, or holds an empty
 * container (which is one more level). */
static const struct depth_case depth_cases[] = {
	{ MAX_DEPTH, false, "", true },
	{ MAX_DEPTH, false, "1", true },
	{ MAX_DEPTH, false, "\"s\",null,true", true },
	{ MAX_DEPTH - 1, false, "{}", true },
	{ MAX_DEPTH + 1, false, "", false },
	{ MAX_DEPTH + 1, false, "1", false },
	{ MAX_DEPTH, false, "[]", false },
	{ MAX_DEPTH, false, "{}", false },
	{ MAX_DEPTH - 1, true, "{}", true },
	{ MAX_DEPTH - 1, true, "1", true },
	{ MAX_DEPTH, true, "1", true },
	{ MAX_DEPTH, true, "[]", false },
	{ MAX_DEPTH, true, "{}", false },
	{ MAX_DEPTH + 1, true, "1", false },
	{ 200, false, "", false },
};

static void test_json_depth(void)
{
	for (size_t i = 0; i < sizeof depth_cases / sizeof depth_cases[0]; i++) {
		const struct depth_case *c = &depth_cases[i];
		char *text = nest(c->depth, c->objects, c->inner);
		struct json_object *o = (struct json_object *)1;
		char err[128], want[128];
		int rc;

		rc = json_parse_bounded(text, strlen(text), MAX_DEPTH, &o,
		                        err, sizeof err);
		if (c->ok) {
			CU_ASSERT_EQUAL(rc, REQ_OK);
			CU_ASSERT_PTR_NOT_NULL(o);
			if (rc != REQ_OK)
				fprintf(stderr, "\ndepth case %zu: %s\n", i, err);
		} else {
			/* the offset is that of the first bracket too deep */
			const char *p = text;
			int d = 0;

			for (; *p != '\0'; p++)
				if ((*p == '[' || *p == '{') && ++d > MAX_DEPTH)
					break;
			snprintf(want, sizeof want,
			         "Malformed JSON: nesting deeper than %d at offset %zu",
			         MAX_DEPTH, (size_t)(p - text));
			CU_ASSERT_EQUAL(rc, REQ_ERR_BAD);
			CU_ASSERT_PTR_NULL(o);
			CU_ASSERT_STRING_EQUAL(err, want);
		}
		json_object_put(o);
		free(text);
	}
}

struct json_case {
	const char *text;
	size_t len;                 /* 0: strlen(text) */
	const char *err;            /* NULL: accepted */
};

#define JC(t, e) { (t), 0, (e) }

static const struct json_case json_cases[] = {
	JC("{}", NULL),
	JC("{\"a\":[1,2.5,-3e2,true,false,null,\"x\"]}", NULL),
	JC("  [1]\r\n\t ", NULL),
	JC("123", NULL),
	JC("\"caf\xc3\xa9\"", NULL),
	JC("\"a\\\\u0000\"", NULL),       /* escaped backslash, then text */
	JC("true", NULL),
	JC("[1] x", "Malformed JSON: unexpected character at offset 4"),
	JC("[1][2]", "Malformed JSON: unexpected character at offset 3"),
	JC("{} {}", "Malformed JSON: unexpected character at offset 3"),
	JC("1 2", "Malformed JSON: unexpected character at offset 2"),
	JC("", "Malformed JSON: unexpected end of data at offset 0"),
	JC("   ", "Malformed JSON: unexpected end of data at offset 3"),
	JC("[1,2", "Malformed JSON: unexpected end of data at offset 4"),
	JC("{\"a\":", "Malformed JSON: unexpected end of data at offset 5"),
	JC("tru", "Malformed JSON: unexpected end of data at offset 3"),
	JC("[1,]", "Malformed JSON: unexpected character at offset 3"),
	JC("{a:1}", "Malformed JSON: quoted object property name expected at offset 1"),
	JC("{'a':1}", "Malformed JSON: unexpected character at offset 1"),
	JC("[NaN]", "Malformed JSON: unexpected character at offset 1"),
	JC("-Infinity", "Malformed JSON: unexpected character at offset 1"),
	JC("[1.]", "Malformed JSON: digit expected after '.' at offset 2"),
	JC("[/*c*/1]", "Malformed JSON: unexpected character at offset 1"),
	JC("\"a\tb\"", "Malformed JSON: control character in a string at offset 2"),
	JC("\"a\\u0000\"", "Malformed JSON: \\u0000 in a string at offset 2"),
	JC("\"\xff\"", "Malformed JSON: invalid utf-8 string at offset 1"),
	{ "[1]\0 ", 5, "Malformed JSON: NUL byte at offset 3" },
	{ "{\"a\0\":1}", 8, "Malformed JSON: NUL byte at offset 3" },
	{ "\0", 1, "Malformed JSON: NUL byte at offset 0" },
};

static void test_json_cases(void)
{
	for (size_t i = 0; i < sizeof json_cases / sizeof json_cases[0]; i++) {
		const struct json_case *c = &json_cases[i];
		size_t len = c->len ? c->len : strlen(c->text);
		struct json_object *o = NULL;
		char err[128] = "unchanged";
		int rc = json_parse_bounded(c->text, len, MAX_DEPTH, &o,
		                            err, sizeof err);

		if (c->err == NULL) {
			CU_ASSERT_EQUAL(rc, REQ_OK);
			CU_ASSERT_PTR_NOT_NULL(o);
			if (rc != REQ_OK)
				fprintf(stderr, "\njson case %zu: %s\n", i, err);
		} else {
			CU_ASSERT_EQUAL(rc, REQ_ERR_BAD);
			CU_ASSERT_PTR_NULL(o);
			CU_ASSERT_STRING_EQUAL(err, c->err);
			if (strcmp(err, c->err) != 0)
				fprintf(stderr, "\njson case %zu: got '%s'\n", i, err);
		}
		json_object_put(o);
	}
}

/* The whole buffer is parsed, not up to a NUL the caller did not count. */
static void test_json_length(void)
{
	struct json_object *o = NULL;
	char err[128];

	CU_ASSERT_EQUAL(json_parse_bounded("[1]xyz", 3, 4, &o, err, sizeof err),
	                REQ_OK);
	CU_ASSERT_PTR_NOT_NULL(o);
	json_object_put(o);
	CU_ASSERT_EQUAL(json_parse_bounded("[12", 2, 4, &o, err, sizeof err),
	                REQ_ERR_BAD);
	CU_ASSERT_EQUAL(json_parse_bounded("1", 1, 0, &o, err, sizeof err),
	                REQ_OK);
	json_object_put(o);
	CU_ASSERT_EQUAL(json_parse_bounded("[]", 2, 0, &o, err, sizeof err),
	                REQ_ERR_BAD);
	CU_ASSERT_STRING_EQUAL(err,
	        "Malformed JSON: nesting deeper than 0 at offset 0");
	/* cut short after a level too many: the nesting is the first error */
	CU_ASSERT_EQUAL(json_parse_bounded("[[[[[", 5, 4, &o, err, sizeof err),
	                REQ_ERR_BAD);
	CU_ASSERT_STRING_EQUAL(err,
	        "Malformed JSON: nesting deeper than 4 at offset 4");
	CU_ASSERT_EQUAL(json_parse_bounded("[[[[", 4, 4, &o, err, sizeof err),
	                REQ_ERR_BAD);
	CU_ASSERT_STRING_EQUAL(err,
	        "Malformed JSON: unexpected end of data at offset 4");
	CU_ASSERT_EQUAL(json_parse_bounded("[[[[x", 5, 4, &o, err, sizeof err),
	                REQ_ERR_BAD);
	CU_ASSERT_STRING_EQUAL(err,
	        "Malformed JSON: unexpected character at offset 4");
	/* err may be NULL */
	CU_ASSERT_EQUAL(json_parse_bounded("[", 1, 4, &o, NULL, 0), REQ_ERR_BAD);
}

/* --- req_json_body_or_reply ------------------------------------------- */

struct body_case {
	const char *ctype;          /* NULL: no CONTENT_TYPE */
	long long clen;             /* -1: absent, -2: strlen(body) */
	const char *body;
	int status;                 /* 0: accepted */
	const char *detail;
};

static const struct body_case body_cases[] = {
	{ "application/json", -2, "{\"a\":1}", 0, NULL },
	{ "application/json; charset=utf-8", -2, "[1]", 0, NULL },
	{ "Application/JSON;charset=UTF-8", -2, "[1]", 0, NULL },
	{ " application/json ", -2, "[1]", 0, NULL },
	{ "application/json", -1, "[1]", 0, NULL },
	{ NULL, -2, "{}", 415, "Content-Type must be application/json" },
	{ "", -2, "{}", 415, "Content-Type must be application/json" },
	{ "text/plain", -2, "{}", 415, "Content-Type must be application/json" },
	{ "application/jsonx", -2, "{}", 415, "Content-Type must be application/json" },
	{ "application/json-patch+json", -2, "{}", 415,
	  "Content-Type must be application/json" },
	{ "application/x-www-form-urlencoded", -2, "a=1", 415,
	  "Content-Type must be application/json" },
	{ "application/json", 0, "", 400, "Request body is empty" },
	{ "application/json", -1, "", 400, "Request body is empty" },
	{ "application/json", -2, "{\"a\":", 400,
	  "Malformed JSON: unexpected end of data at offset 5" },
	{ "application/json", -2, "{\"a\":1} trailing", 400,
	  "Malformed JSON: unexpected character at offset 8" },
	{ "application/json", -2, "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[" "[]"
	  "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]", 400,
	  "Malformed JSON: nesting deeper than 32 at offset 32" },
};

static void check_detail(struct req *r, int status, const char *detail)
{
	size_t len;
	const char *out = resp_test_output(r, &len);
	const char *body = strstr(out, "\r\n\r\n");
	struct json_object *o, *d;
	char line[64];

	CU_ASSERT_EQUAL(r->status, status);
	snprintf(line, sizeof line, "Status: %d ", status);
	CU_ASSERT_NSTRING_EQUAL(out, line, strlen(line));
	CU_ASSERT_PTR_NOT_NULL_FATAL(body);
	o = json_tokener_parse(body + 4);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT(json_object_object_get_ex(o, "detail", &d));
	CU_ASSERT_STRING_EQUAL(json_object_get_string(d), detail);
	json_object_put(o);
}

static void test_json_body(void)
{
	cfg_setup();
	for (size_t i = 0; i < sizeof body_cases / sizeof body_cases[0]; i++) {
		const struct body_case *c = &body_cases[i];
		struct arena *a = arena_new();
		long long clen = c->clen == -2 ? (long long)strlen(c->body) : c->clen;
		struct json_object *o;
		struct req r;

		CU_ASSERT_EQUAL_FATAL(make_req(&r, a, c->ctype, clen, c->body,
		                               strlen(c->body)), REQ_OK);
		o = req_json_body_or_reply(&r);
		if (c->status == 0) {
			CU_ASSERT_PTR_NOT_NULL(o);
			CU_ASSERT_PTR_EQUAL(r.json, o);
			CU_ASSERT_EQUAL(r.status, 0);
			/* asking twice gives the same object */
			CU_ASSERT_PTR_EQUAL(req_json_body_or_reply(&r), o);
		} else {
			CU_ASSERT_PTR_NULL(o);
			CU_ASSERT_PTR_NULL(r.json);
			check_detail(&r, c->status, c->detail);
		}
		req_finish(&r);
		CU_ASSERT_PTR_NULL(r.json);
		arena_free(a);
	}
}

/* body_max_bytes is allowed, one more byte is 413, announced or not. */
static void test_json_body_limit(void)
{
	char body[128];

	cfg_setup();
	/* a valid document of exactly body_max_bytes: "[1,  ...  ]" */
	memset(body, ' ', sizeof body);
	memcpy(body, "[1", 2);
	body[cfg.body_max_bytes - 1] = ']';
	for (int announced = 0; announced < 2; announced++) {
		for (long extra = 0; extra < 2; extra++) {
			struct arena *a = arena_new();
			size_t len = (size_t)(cfg.body_max_bytes + extra);
			struct json_object *o;
			struct req r;

			make_req(&r, a, "application/json",
			         announced ? (long long)len : -1, body, len);
			o = req_json_body_or_reply(&r);
			if (extra == 0) {
				CU_ASSERT_PTR_NOT_NULL(o);
				CU_ASSERT_EQUAL(r.status, 0);
			} else {
				CU_ASSERT_PTR_NULL(o);
				check_detail(&r, 413,
				             "Request body too large (limit 100 bytes)");
			}
			req_finish(&r);
			arena_free(a);
		}
	}
}

/* A body cut short means the client left: nothing is written, and the
 * request is logged with 499. */
static void test_json_body_io(void)
{
	struct arena *a = arena_new();
	struct req r;
	size_t len;

	cfg_setup();
	make_req(&r, a, "application/json", 20, "{\"a\":", 5);
	CU_ASSERT_PTR_NULL(req_json_body_or_reply(&r));
	CU_ASSERT_EQUAL(r.status, 499);   /* logged as nginx logs a client gone */
	resp_test_output(&r, &len);
	CU_ASSERT_EQUAL(len, 0);
	/* and a late answer from the handler is refused */
	CU_ASSERT_EQUAL(resp_detail(&r, 500, "x"), -1);
	resp_test_output(&r, &len);
	CU_ASSERT_EQUAL(len, 0);
	req_finish(&r);
	arena_free(a);
}

/* --- responses -------------------------------------------------------- */

static struct req *resp_req(struct arena *a)
{
	static struct req r;
	char *env[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/", NULL };

	cfg_setup();
	req_init_env(&r, a, &cfg, env);
	return &r;
}

static void test_resp_json(void)
{
	struct arena *a = arena_new();
	struct req *r = resp_req(a);
	struct json_object *o = json_object_new_object();
	const char *out;
	size_t len;

	json_object_object_add(o, "path", json_object_new_string("a/b"));
	json_object_object_add(o, "n", json_object_new_int(1));
	resp_header(r, "Allow", "GET, POST");
	resp_header(r, "WWW-Authenticate", "Bearer");
	CU_ASSERT_EQUAL(resp_json(r, 200, o), 0);
	CU_ASSERT_EQUAL(r->status, 200);
	out = resp_test_output(r, &len);
	CU_ASSERT_STRING_EQUAL(out,
		"Status: 200 OK\r\n"
		"Content-Type: application/json\r\n"
		"Content-Length: 20\r\n"
		"Allow: GET, POST\r\n"
		"WWW-Authenticate: Bearer\r\n"
		"\r\n"
		"{\"path\":\"a/b\",\"n\":1}");
	CU_ASSERT_EQUAL(len, strlen(out));
	arena_free(a);
}

static void test_resp_detail(void)
{
	struct arena *a = arena_new();
	struct req *r = resp_req(a);
	const char *out;

	CU_ASSERT_EQUAL(resp_detail(r, 404, "Not Found"), 0);
	out = resp_test_output(r, NULL);
	CU_ASSERT_STRING_EQUAL(out,
		"Status: 404 Not Found\r\n"
		"Content-Type: application/json\r\n"
		"Content-Length: 22\r\n"
		"\r\n"
		"{\"detail\":\"Not Found\"}");
	arena_free(a);
}

/* The request id: a well-formed X-Request-Id is kept, anything else is
 * replaced by a new UUID; every answer carries it, a 5xx body too. */
static void test_request_id(void)
{
	static const struct { const char *given; bool kept; } cases[] = {
		{ "abc-123_x.y:z", true },
		{ "0123456789012345678901234567890123456789012345678901234567890123", true },
		{ "01234567890123456789012345678901234567890123456789012345678901234", false },
		{ "", false },
		{ "has space", false },
		{ "new\nline", false },
		{ "semi;colon", false },
		{ "caf\xc3\xa9", false },
		{ NULL, false },
	};
	char hdr[160], want[200];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct arena *a = arena_new();
		char *env[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/", hdr, NULL };
		struct req r;
		const char *out;

		snprintf(hdr, sizeof hdr, "HTTP_X_REQUEST_ID=%s",
		         cases[i].given != NULL ? cases[i].given : "");
		if (cases[i].given == NULL)
			env[2] = NULL;
		cfg_setup();
		CU_ASSERT_EQUAL_FATAL(req_init_env(&r, a, &cfg, env), REQ_OK);
		req_take_request_id(&r);
		if (cases[i].kept) {
			CU_ASSERT_STRING_EQUAL(r.request_id, cases[i].given);
		} else {
			char canon[UUID_STR_LEN];

			CU_ASSERT_EQUAL(strlen(r.request_id), 36);
			CU_ASSERT_EQUAL(uuid_parse(r.request_id, canon), 0);
		}
		CU_ASSERT_EQUAL(resp_detail(&r, 503, "Database unavailable"), 0);
		out = resp_test_output(&r, NULL);
		snprintf(want, sizeof want, "X-Request-Id: %s\r\n", r.request_id);
		CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
		snprintf(want, sizeof want, "\"request_id\":\"%s\"}", r.request_id);
		CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
		arena_free(a);
	}
}

/* Below 500 the body is the handler's own. */
static void test_request_id_4xx_body(void)
{
	struct arena *a = arena_new();
	char *env[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/",
	                "HTTP_X_REQUEST_ID=r-1", NULL };
	struct req r;
	const char *out;

	cfg_setup();
	CU_ASSERT_EQUAL_FATAL(req_init_env(&r, a, &cfg, env), REQ_OK);
	req_take_request_id(&r);
	CU_ASSERT_EQUAL(resp_detail(&r, 404, "Not Found"), 0);
	out = resp_test_output(&r, NULL);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "X-Request-Id: r-1\r\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\r\n\r\n{\"detail\":\"Not Found\"}"));
	arena_free(a);
}

/* Content-Length counts bytes, including multi-byte UTF-8 and escapes. */
static void test_resp_length(void)
{
	struct arena *a = arena_new();
	struct req *r = resp_req(a);
	const char *out, *body, *cl;
	size_t len;

	CU_ASSERT_EQUAL(resp_detail(r, 400, "caf\xc3\xa9 \"q\"\n"), 0);
	out = resp_test_output(r, &len);
	body = strstr(out, "\r\n\r\n");
	cl = strstr(out, "Content-Length: ");
	CU_ASSERT_PTR_NOT_NULL_FATAL(body);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	body += 4;
	CU_ASSERT_EQUAL(strtoul(cl + 16, NULL, 10), strlen(body));
	CU_ASSERT_EQUAL(len, (size_t)(body - out) + strlen(body));
	arena_free(a);
}

static void test_resp_header_injection(void)
{
	struct arena *a = arena_new();
	struct req *r = resp_req(a);
	const char *out;

	resp_header(r, "X-Ok", "fine");
	resp_header(r, "X-Bad", "a\r\nSet-Cookie: evil=1");
	resp_header(r, "X-Bad2", "a\nb");
	resp_header(r, "X-Bad3", "a\rb");
	resp_header(r, "Bad Name", "v");
	resp_header(r, "X-Evil\r\nSet-Cookie", "v");
	resp_header(r, "", "v");
	resp_header(r, "Content-Length", "5");
	resp_header(r, "Status", "200 OK");
	resp_header(r, "X-Tab", "a\tb");
	CU_ASSERT_EQUAL(resp_empty(r, 200), 0);
	out = resp_test_output(r, NULL);
	CU_ASSERT_STRING_EQUAL(out,
		"Status: 200 OK\r\n"
		"Content-Length: 0\r\n"
		"X-Ok: fine\r\n"
		"X-Tab: a\tb\r\n"
		"\r\n");
	CU_ASSERT_PTR_NULL(strstr(out, "evil"));
	arena_free(a);
}

static void test_resp_double_write(void)
{
	struct arena *a = arena_new();
	struct req *r = resp_req(a);
	size_t len1, len2;

	CU_ASSERT_EQUAL(resp_detail(r, 409, "first"), 0);
	resp_test_output(r, &len1);
	/* resp_json takes the object even when it refuses to write */
	CU_ASSERT_EQUAL(resp_json(r, 200, json_object_new_array()), -1);
	CU_ASSERT_EQUAL(resp_detail(r, 500, "second"), -1);
	CU_ASSERT_EQUAL(resp_empty(r, 204), -1);
	CU_ASSERT_EQUAL(resp_raw(r, 200, "text/plain", "x", 1), -1);
	resp_header(r, "X-Late", "1");
	CU_ASSERT_PTR_NULL(r->headers);
	CU_ASSERT_EQUAL(r->status, 409);
	resp_test_output(r, &len2);
	CU_ASSERT_EQUAL(len1, len2);
	CU_ASSERT_PTR_NULL(strstr(resp_test_output(r, NULL), "second"));
	arena_free(a);
}

static void test_resp_empty_raw(void)
{
	struct arena *a = arena_new();
	struct req *r = resp_req(a);

	CU_ASSERT_EQUAL(resp_empty(r, 204), 0);
	CU_ASSERT_STRING_EQUAL(resp_test_output(r, NULL),
		"Status: 204 No Content\r\n\r\n");
	arena_free(a);

	a = arena_new();
	r = resp_req(a);
	CU_ASSERT_EQUAL(resp_raw(r, 201, "text/csv", "a,b\n", 4), 0);
	CU_ASSERT_STRING_EQUAL(resp_test_output(r, NULL),
		"Status: 201 Created\r\n"
		"Content-Type: text/csv\r\n"
		"Content-Length: 4\r\n"
		"\r\n"
		"a,b\n");
	arena_free(a);

	/* a content type with CR/LF is not written at all */
	a = arena_new();
	r = resp_req(a);
	CU_ASSERT_EQUAL(resp_raw(r, 200, "text/plain\r\nX: y", "x", 1), -1);
	CU_ASSERT_EQUAL(r->status, 0);
	arena_free(a);
}

static void test_status_text(void)
{
	static const struct { int status; const char *text; } cases[] = {
		{ 200, "OK" }, { 201, "Created" }, { 202, "Accepted" },
		{ 204, "No Content" }, { 301, "Moved Permanently" },
		{ 302, "Found" }, { 304, "Not Modified" },
		{ 400, "Bad Request" }, { 401, "Unauthorized" },
		{ 403, "Forbidden" }, { 404, "Not Found" },
		{ 405, "Method Not Allowed" }, { 409, "Conflict" },
		{ 413, "Content Too Large" }, { 415, "Unsupported Media Type" },
		{ 422, "Unprocessable Content" }, { 429, "Too Many Requests" },
		{ 499, "Client Closed Request" },
		{ 500, "Internal Server Error" }, { 502, "Bad Gateway" },
		{ 503, "Service Unavailable" }, { 504, "Gateway Timeout" },
		{ 418, "Unknown" }, { 0, "Unknown" }, { -1, "Unknown" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		CU_ASSERT_STRING_EQUAL(resp_status_text(cases[i].status),
		                       cases[i].text);
}

static const struct test_case tests[] = {
	{ "env copy", test_env_copy },
	{ "env caps", test_env_caps },
	{ "path decoding", test_path },
	{ "path limit", test_path_limit },
	{ "method required", test_method_required },
	{ "content length", test_content_length },
	{ "headers", test_headers },
	{ "path params", test_params },
	{ "query", test_query },
	{ "query absent", test_query_absent },
	{ "read body", test_read_body },
	{ "json depth", test_json_depth },
	{ "json cases", test_json_cases },
	{ "json length", test_json_length },
	{ "json body", test_json_body },
	{ "json body limit", test_json_body_limit },
	{ "json body io", test_json_body_io },
	{ "resp json", test_resp_json },
	{ "resp detail", test_resp_detail },
	{ "request id", test_request_id },
	{ "request id, 4xx body", test_request_id_4xx_body },
	{ "resp content length", test_resp_length },
	{ "resp header injection", test_resp_header_injection },
	{ "resp double write", test_resp_double_write },
	{ "resp empty and raw", test_resp_empty_raw },
	{ "status text", test_status_text },
	{ NULL, NULL },
};

int suite_request(void)
{
	return suite_add("request", tests);
}
