/* test_etag.c - the strong tag of a body and If-None-Match (RFC 9110
 * 13.1.2), and the 200/304 answer built from them. */
#include <string.h>
#include <CUnit/CUnit.h>

#include "http/etag.h"
#include "http/request.h"
#include "http/response.h"
#include "util/arena.h"
#include "util/config.h"
#include "suites.h"

/* SHA-256("abc") = ba7816bf8f01cfea414140de5dae2223 b00361a3... */
static void test_etag_of(void)
{
	char a[ETAG_SIZE], b[ETAG_SIZE];

	etag_of("abc", 3, a);
	CU_ASSERT_STRING_EQUAL(a, "\"ba7816bf8f01cfea414140de5dae2223\"");
	etag_of("abd", 3, b);
	CU_ASSERT_STRING_NOT_EQUAL(a, b);
	etag_of("ab", 2, b);                    /* a prefix is another body */
	CU_ASSERT_STRING_NOT_EQUAL(a, b);
	etag_of(NULL, 0, b);                    /* SHA-256 of nothing */
	CU_ASSERT_STRING_EQUAL(b, "\"e3b0c44298fc1c149afbf4c8996fb924\"");
}

#define TAG "\"0123456789abcdef0123456789abcdef\""

static const struct inm_case {
	const char *header;
	bool match;
} inm_cases[] = {
	{ TAG, true },
	{ "W/" TAG, true },                     /* weak comparison */
	{ "*", true },
	{ "  *\t", true },
	{ " " TAG " ", true },
	{ "\"x\", " TAG, true },                /* in a list */
	{ "\"x\"," TAG ",\"y\"", true },
	{ "W/\"x\" ,\t W/" TAG, true },
	{ ", ," TAG ",", true },                /* empty members are allowed */
	{ NULL, false },
	{ "", false },
	{ "\"x\"", false },
	{ "\"0123456789abcdef0123456789abcde\"", false },   /* one digit short */
	{ "\"0123456789abcdef0123456789abcdef0\"", false }, /* one digit more */
	{ "0123456789abcdef0123456789abcdef", false },      /* unquoted */
	{ "w/" TAG, false },                    /* W/ is case-sensitive */
	{ "\"0123456789ABCDEF0123456789ABCDEF\"", false },  /* byte-exact */
	{ "*, " TAG, false },                   /* "*" stands alone */
	{ "\"x\" " TAG, false },                /* no comma: malformed */
	{ "\"x, " TAG, false },                 /* unterminated: malformed */
	{ "\"a\"b\", " TAG, false },
};

static void test_none_match(void)
{
	for (size_t i = 0; i < sizeof inm_cases / sizeof inm_cases[0]; i++) {
		bool got = etag_none_match(inm_cases[i].header, TAG);

		if (got != inm_cases[i].match)
			fprintf(stderr, "If-None-Match [%s]: got %d\n",
			        inm_cases[i].header ? inm_cases[i].header : "(null)", got);
		CU_ASSERT_EQUAL(got, inm_cases[i].match);
	}
}

/* The answer: 200 with the body and its tag; with the tag in
 * If-None-Match, 304 with the same tag, no Content-Length and no body. */
static const char *answer(struct arena *a, char *inm)
{
	static struct config cfg;
	char *env[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/platform/pipelines",
	                inm, NULL };
	struct req r;
	size_t len;

	CU_ASSERT_EQUAL_FATAL(req_init_env(&r, a, &cfg, env), REQ_OK);
	CU_ASSERT_EQUAL(resp_raw_etag(&r, "application/json", "[1]", 3), 0);
	return arena_strdup(a, resp_test_output(&r, &len));
}

static void test_answer(void)
{
	struct arena *a = arena_new();
	char tag[ETAG_SIZE], inm[80], other[] = "HTTP_IF_NONE_MATCH=\"x\"";
	const char *out;

	etag_of("[1]", 3, tag);
	out = answer(a, other);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "Status: 200 OK\r\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "Content-Length: 3\r\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, tag));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\r\n\r\n[1]"));

	snprintf(inm, sizeof inm, "HTTP_IF_NONE_MATCH=W/%s", tag);
	out = answer(a, inm);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "Status: 304 Not Modified\r\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "ETag: "));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, tag));
	CU_ASSERT_PTR_NULL(strstr(out, "Content-Length"));
	CU_ASSERT_PTR_NULL(strstr(out, "Content-Type"));
	CU_ASSERT_EQUAL(strcmp(out + strlen(out) - 4, "\r\n\r\n"), 0);
	arena_free(a);
}

int suite_etag(void)
{
	static const struct test_case tests[] = {
		{ "etag_of: SHA-256, first 128 bits, quoted", test_etag_of },
		{ "etag_none_match: RFC 9110 lists, *, weak comparison", test_none_match },
		{ "resp_raw_etag: 200 with the tag, 304 without a body", test_answer },
		{ NULL, NULL },
	};

	return suite_add("etag", tests);
}
