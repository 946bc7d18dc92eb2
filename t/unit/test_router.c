/* test_router.c - router_match against valid and invalid tables. */
#include <string.h>
#include <CUnit/CUnit.h>

#include "http/router.h"
#include "suites.h"

static int h(struct req *r)
{
	(void)r;
	return 0;
}

#define R(m, p) { (m), (p), h, ROUTE_AUTH_NONE, NULL }

static const struct route routes[] = {
	/* 0 */ R("GET", "/"),
	/* 1 */ R("GET", "/health"),
	/* 2 */ R("GET", "/platform/pipeline"),
	/* 3 */ R("POST", "/platform/pipeline"),
	/* 4 */ R("GET", "/platform/pipeline/new"),      /* literal first */
	/* 5 */ R("GET", "/platform/pipeline/{pipeline_id}"),
	/* 6 */ R("DELETE", "/platform/pipeline/{pipeline_id}"),
	/* 7 */ R("POST", "/platform/pipeline/{pipeline_id}"),
	/* 8 */ R("DELETE", "/platform/pipeline/{other}"),  /* shadowed by 6 */
	/* 9 */ R("GET", "/platform/pipeline/{pipeline_id}/jobs/{job_id}"),
	/* 10 */ R("PUT", "/files/{name}/meta"),
	/* 11 */ R("PATCH", "/files/{name}/meta"),
	/* 12 */ R("PUT", "/files/{name}/meta"),          /* same method again */
	/* 13 */ R("GET", "/p8/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}"),
	/* 14 */ R("GET", "/p9/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}/{i}"),
	/* 15 */ R("GET", "/x/{}/y"),                     /* "{}" is a literal */
};
#define NROUTES (sizeof routes / sizeof routes[0])

struct valid_case {
	const char *method, *path;
	int route;
	size_t nparams;
	const char *p0name, *p0value, *p1name, *p1value;
};

static const struct valid_case valids[] = {
	{ "GET", "/", 0, 0, NULL, NULL, NULL, NULL },
	{ "GET", "/health", 1, 0, NULL, NULL, NULL, NULL },
	{ "GET", "/health/", 1, 0, NULL, NULL, NULL, NULL },
	{ "GET", "/platform/pipeline", 2, 0, NULL, NULL, NULL, NULL },
	{ "POST", "/platform/pipeline/", 3, 0, NULL, NULL, NULL, NULL },
	{ "GET", "/platform/pipeline/new", 4, 0, NULL, NULL, NULL, NULL },
	{ "GET", "/platform/pipeline/new/", 4, 0, NULL, NULL, NULL, NULL },
	{ "GET", "/platform/pipeline/abc_1", 5, 1, "pipeline_id", "abc_1", NULL, NULL },
	{ "GET", "/platform/pipeline/abc_1/", 5, 1, "pipeline_id", "abc_1", NULL, NULL },
	{ "GET", "/platform/pipeline/New", 5, 1, "pipeline_id", "New", NULL, NULL },
	{ "DELETE", "/platform/pipeline/x", 6, 1, "pipeline_id", "x", NULL, NULL },
	{ "POST", "/platform/pipeline/x", 7, 1, "pipeline_id", "x", NULL, NULL },
	{ "GET", "/platform/pipeline/p/jobs/p_0", 9, 2, "pipeline_id", "p", "job_id", "p_0" },
	{ "GET", "/platform/pipeline/p/jobs/j/", 9, 2, "pipeline_id", "p", "job_id", "j" },
	{ "PUT", "/files/a b.csv/meta", 10, 1, "name", "a b.csv", NULL, NULL },
	{ "PATCH", "/files/f/meta", 11, 1, "name", "f", NULL, NULL },
	{ "GET", "/p8/1/2/3/4/5/6/7/8", 13, 8, "a", "1", "b", "2" },
	{ "GET", "/x/{}/y", 15, 0, NULL, NULL, NULL, NULL },
};

static void test_router_valid(void)
{
	for (size_t i = 0; i < sizeof valids / sizeof valids[0]; i++) {
		const struct valid_case *c = &valids[i];
		struct route_match m;
		enum route_status st;

		st = router_match(routes, NROUTES, c->method, c->path, &m);
		CU_ASSERT_EQUAL_FATAL(st, ROUTE_FOUND);
		CU_ASSERT_PTR_EQUAL(m.route, &routes[c->route]);
		CU_ASSERT_EQUAL(m.nparams, c->nparams);
		CU_ASSERT_STRING_EQUAL(m.allow, "");
		if (c->p0name != NULL) {
			CU_ASSERT_EQUAL(m.params[0].name_len, strlen(c->p0name));
			CU_ASSERT_NSTRING_EQUAL(m.params[0].name, c->p0name,
			                        m.params[0].name_len);
			CU_ASSERT_EQUAL(m.params[0].value_len, strlen(c->p0value));
			CU_ASSERT_NSTRING_EQUAL(m.params[0].value, c->p0value,
			                        m.params[0].value_len);
			/* no copies: the value points into the request path */
			CU_ASSERT(m.params[0].value >= c->path &&
			          m.params[0].value < c->path + strlen(c->path));
		}
		if (c->p1name != NULL) {
			CU_ASSERT_EQUAL(m.params[1].name_len, strlen(c->p1name));
			CU_ASSERT_NSTRING_EQUAL(m.params[1].name, c->p1name,
			                        m.params[1].name_len);
			CU_ASSERT_EQUAL(m.params[1].value_len, strlen(c->p1value));
			CU_ASSERT_NSTRING_EQUAL(m.params[1].value, c->p1value,
			                        m.params[1].value_len);
		}
	}
}

struct invalid_case {
	const char *method, *path;
	enum route_status status;
	const char *allow;
};

static const struct invalid_case invalids[] = {
	/* unknown paths */
	{ "GET", "/nope", ROUTE_NOT_FOUND, "" },
	{ "GET", "", ROUTE_NOT_FOUND, "" },
	{ "GET", "health", ROUTE_NOT_FOUND, "" },
	{ "GET", "/Health", ROUTE_NOT_FOUND, "" },
	{ "GET", "/healthz", ROUTE_NOT_FOUND, "" },
	{ "GET", "/health//", ROUTE_NOT_FOUND, "" },
	{ "GET", "//health", ROUTE_NOT_FOUND, "" },
	{ "GET", "//", ROUTE_NOT_FOUND, "" },
	/* empty segments never match a parameter */
	{ "GET", "/platform/pipeline//", ROUTE_NOT_FOUND, "" },
	{ "GET", "/platform/pipeline//jobs/x", ROUTE_NOT_FOUND, "" },
	{ "GET", "/platform/pipeline/p/jobs//", ROUTE_NOT_FOUND, "" },
	{ "PUT", "/files//meta", ROUTE_NOT_FOUND, "" },
	/* too many or too few segments */
	{ "GET", "/platform/pipeline/p/extra", ROUTE_NOT_FOUND, "" },
	{ "GET", "/platform/pipeline/p/jobs", ROUTE_NOT_FOUND, "" },
	{ "GET", "/platform/pipeline/p/jobs/j/k", ROUTE_NOT_FOUND, "" },
	{ "GET", "/health/x", ROUTE_NOT_FOUND, "" },
	{ "GET", "/p8/1/2/3/4/5/6/7", ROUTE_NOT_FOUND, "" },
	/* more parameters than ROUTE_MAX_PARAMS never match */
	{ "GET", "/p9/1/2/3/4/5/6/7/8/9", ROUTE_NOT_FOUND, "" },
	{ "GET", "/x/z/y", ROUTE_NOT_FOUND, "" },
	/* known path, wrong method: Allow in table order, no duplicates */
	{ "DELETE", "/health", ROUTE_BAD_METHOD, "GET" },
	{ "HEAD", "/health", ROUTE_BAD_METHOD, "GET" },
	{ "get", "/health", ROUTE_BAD_METHOD, "GET" },
	{ "PUT", "/platform/pipeline", ROUTE_BAD_METHOD, "GET, POST" },
	{ "PUT", "/platform/pipeline/", ROUTE_BAD_METHOD, "GET, POST" },
	{ "PUT", "/platform/pipeline/x", ROUTE_BAD_METHOD, "GET, DELETE, POST" },
	{ "PUT", "/platform/pipeline/new", ROUTE_BAD_METHOD, "GET, DELETE, POST" },
	{ "GET", "/files/f/meta", ROUTE_BAD_METHOD, "PUT, PATCH" },
	{ "POST", "/", ROUTE_BAD_METHOD, "GET" },
};

static void test_router_invalid(void)
{
	for (size_t i = 0; i < sizeof invalids / sizeof invalids[0]; i++) {
		const struct invalid_case *c = &invalids[i];
		struct route_match m;
		enum route_status st;

		st = router_match(routes, NROUTES, c->method, c->path, &m);
		CU_ASSERT_EQUAL(st, c->status);
		CU_ASSERT_PTR_NULL(m.route);
		CU_ASSERT_STRING_EQUAL(m.allow, c->allow);
	}
}

/* First match wins even when a later route would also fit. */
static void test_router_order(void)
{
	static const struct route t[] = {
		R("GET", "/a/{x}"),
		R("GET", "/a/b"),
		R("GET", "/a/{y}"),
	};
	struct route_match m;

	CU_ASSERT_EQUAL(router_match(t, 3, "GET", "/a/b", &m), ROUTE_FOUND);
	CU_ASSERT_PTR_EQUAL(m.route, &t[0]);
	CU_ASSERT_EQUAL(m.nparams, 1);
	CU_ASSERT_NSTRING_EQUAL(m.params[0].name, "x", 1);
	/* the literal route is reachable only when it comes first */
	CU_ASSERT_EQUAL(router_match(t + 1, 2, "GET", "/a/b", &m), ROUTE_FOUND);
	CU_ASSERT_PTR_EQUAL(m.route, &t[1]);
	CU_ASSERT_EQUAL(m.nparams, 0);
}

static void test_router_edges(void)
{
	static const struct route t[] = { R("GET", "/a"), R("POST", "/a") };
	struct route_match m;

	CU_ASSERT_EQUAL(router_match(t, 2, "GET", NULL, &m), ROUTE_NOT_FOUND);
	CU_ASSERT_EQUAL(router_match(t, 0, "GET", "/a", &m), ROUTE_NOT_FOUND);
	CU_ASSERT_EQUAL(router_match(t, 2, NULL, "/a", &m), ROUTE_BAD_METHOD);
	CU_ASSERT_STRING_EQUAL(m.allow, "GET, POST");
	/* a previous result does not leak into the next match */
	CU_ASSERT_EQUAL(router_match(t, 2, "GET", "/a", &m), ROUTE_FOUND);
	CU_ASSERT_STRING_EQUAL(m.allow, "");
	CU_ASSERT_EQUAL(m.nparams, 0);
}

/* The Allow buffer never overflows; methods that do not fit are left out. */
static void test_router_allow_overflow(void)
{
	static const char *const methods[] = {
		"METHOD_NUMBER_ONE", "METHOD_NUMBER_TWO", "METHOD_NUMBER_THREE",
		"METHOD_NUMBER_FOUR", "METHOD_NUMBER_FIVE", "METHOD_NUMBER_SIX",
	};
	struct route t[6];
	struct route_match m;

	for (size_t i = 0; i < 6; i++) {
		struct route rt = R(methods[i], "/a");

		t[i] = rt;
	}
	CU_ASSERT_EQUAL(router_match(t, 6, "GET", "/a", &m), ROUTE_BAD_METHOD);
	CU_ASSERT(strlen(m.allow) < sizeof m.allow);
	CU_ASSERT_NSTRING_EQUAL(m.allow, "METHOD_NUMBER_ONE, METHOD_NUMBER_TWO", 36);
	CU_ASSERT(m.allow[strlen(m.allow) - 1] != ' ');
	CU_ASSERT(m.allow[strlen(m.allow) - 1] != ',');
}

static const struct test_case tests[] = {
	{ "valid table", test_router_valid },
	{ "invalid table", test_router_invalid },
	{ "first match wins", test_router_order },
	{ "edge arguments", test_router_edges },
	{ "allow overflow", test_router_allow_overflow },
	{ NULL, NULL },
};

int suite_router(void)
{
	return suite_add("router", tests);
}
