/* test_body_cache.c - the names of rendered answers, and their files:
 * stored aside and renamed, sent by X-Accel-Redirect, 304 by name, old
 * files pruned, nothing stored or sent while the cache is off. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>
#include <CUnit/CUnit.h>

#include "http/body_cache.h"
#include "http/request.h"
#include "http/response.h"
#include "util/arena.h"
#include "util/config.h"
#include "suites.h"

static void key_of(const char *owner, const long long *v, size_t n,
                   struct body_key *k)
{
	struct body_digest d;

	CU_ASSERT_EQUAL(body_digest_init(&d, "test/1", owner), 0);
	for (size_t i = 0; i < n; i++)
		body_digest_ll(&d, v[i]);
	body_digest_key(&d, owner, k);
}

static void test_names(void)
{
	static const long long v[] = { 1, 7, -1, 3 }, w[] = { 1, 7, -1, 4 };
	struct body_key a, b;

	key_of("cust-a", v, 4, &a);
	CU_ASSERT_EQUAL(strlen(a.dir), 16);
	CU_ASSERT_EQUAL(strlen(a.name), 32);
	CU_ASSERT_EQUAL(strspn(a.name, "0123456789abcdef"), 32);
	CU_ASSERT_EQUAL(a.etag[0], '"');
	CU_ASSERT_EQUAL(strncmp(a.etag + 1, a.name, 32), 0);
	key_of("cust-a", v, 4, &b);                   /* the same: the same */
	CU_ASSERT_STRING_EQUAL(a.name, b.name);
	CU_ASSERT_STRING_EQUAL(a.dir, b.dir);
	key_of("cust-a", w, 4, &b);                   /* one version more */
	CU_ASSERT_STRING_NOT_EQUAL(a.name, b.name);
	CU_ASSERT_STRING_EQUAL(a.dir, b.dir);
	key_of("cust-a", v, 3, &b);                   /* one row fewer */
	CU_ASSERT_STRING_NOT_EQUAL(a.name, b.name);
	key_of("cust-b", v, 4, &b);                   /* another owner */
	CU_ASSERT_STRING_NOT_EQUAL(a.name, b.name);
	CU_ASSERT_STRING_NOT_EQUAL(a.dir, b.dir);
}

static struct config cfg;
static char dir[64];

/* One request: body_cache_reply of "[1]" (store) or body_cache_send,
 * with If-None-Match inm (or another tag); what it wrote. */
static const char *ask(struct arena *a, const struct body_key *k, int store,
                       const char *inm, int *rc)
{
	char h[96], *env[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/platform/pipelines",
	                       h, NULL };
	const char *out;
	struct req r;
	size_t len;

	snprintf(h, sizeof h, "HTTP_IF_NONE_MATCH=%s", inm != NULL ? inm : "\"none\"");
	CU_ASSERT_EQUAL_FATAL(req_init_env(&r, a, &cfg, env), REQ_OK);
	*rc = store ? body_cache_reply(&r, k, "application/json", "[1]", 3)
	            : body_cache_send(&r, k, "application/json");
	out = resp_test_output(&r, &len);
	return arena_strdup(a, out != NULL ? out : "");
}

static void test_files(void)
{
	static const long long v[] = { 1, 2 }, w[] = { 1, 3 };
	struct arena *a = arena_new();
	struct body_key k, k2;
	char path[CONFIG_PATH_MAX + 128], old[CONFIG_PATH_MAX + 128];
	const char *out;
	struct stat st;
	struct utimbuf t;
	FILE *f;
	int rc;

	snprintf(dir, sizeof dir, "/tmp/sluice-body-cache-XXXXXX");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	config_defaults(&cfg);
	cfg.render_cache = true;
	snprintf(cfg.render_cache_dir, sizeof cfg.render_cache_dir, "%s/c", dir);
	key_of("cust-a", v, 2, &k);

	out = ask(a, &k, 0, NULL, &rc);             /* nothing yet */
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_STRING_EQUAL(out, "");
	out = ask(a, &k, 1, NULL, &rc);             /* rendered: stored, 200 */
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "Status: 200 OK\r\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, k.etag));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\r\n\r\n[1]"));
	snprintf(path, sizeof path, "%s/%s/%s", cfg.render_cache_dir, k.dir, k.name);
	CU_ASSERT_EQUAL_FATAL(stat(path, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 3);
	CU_ASSERT_EQUAL(st.st_mode & 0777, 0640);

	out = ask(a, &k, 0, NULL, &rc);             /* now sent by nginx */
	CU_ASSERT_EQUAL(rc, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "X-Accel-Redirect: " BODY_CACHE_URI));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, k.name));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, k.etag));
	out = ask(a, &k, 0, k.etag, &rc);           /* the client has it */
	CU_ASSERT_EQUAL(rc, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "Status: 304 Not Modified\r\n"));
	CU_ASSERT_PTR_NULL(strstr(out, "X-Accel-Redirect"));

	/* A stale file is removed when the next name is stored. */
	t.actime = t.modtime = time(NULL) - BODY_CACHE_KEEP_S - 5;
	CU_ASSERT_EQUAL(utime(path, &t), 0);
	snprintf(old, sizeof old, "%s/%s/.%s.123", cfg.render_cache_dir, k.dir, k.name);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f = fopen(old, "w"));   /* a crashed write */
	fclose(f);
	CU_ASSERT_EQUAL(utime(old, &t), 0);
	key_of("cust-a", w, 2, &k2);
	ask(a, &k2, 1, NULL, &rc);
	CU_ASSERT_NOT_EQUAL(stat(path, &st), 0);
	CU_ASSERT_NOT_EQUAL(stat(old, &st), 0);
	snprintf(path, sizeof path, "%s/%s/%s", cfg.render_cache_dir, k2.dir, k2.name);
	CU_ASSERT_EQUAL(stat(path, &st), 0);

	/* Off: nothing sent from a file, nothing stored; 304 still by name. */
	cfg.render_cache = false;
	out = ask(a, &k2, 0, NULL, &rc);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(unlink(path), 0);
	out = ask(a, &k2, 1, NULL, &rc);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "Status: 200 OK\r\n"));
	CU_ASSERT_NOT_EQUAL(stat(path, &st), 0);
	out = ask(a, &k2, 0, k2.etag, &rc);
	CU_ASSERT_EQUAL(rc, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "Status: 304 Not Modified\r\n"));

	snprintf(path, sizeof path, "rm -rf '%s'", dir);
	CU_ASSERT_EQUAL(system(path), 0);
	arena_free(a);
}

int suite_body_cache(void)
{
	static const struct test_case tests[] = {
		{ "body_digest: a name per owner and versions", test_names },
		{ "body_cache: stored, sent by nginx, 304, pruned, off", test_files },
		{ NULL, NULL },
	};

	return suite_add("body_cache", tests);
}
