/* test_wait.c - what keeps slow requests off the workers: the waiter's
 * signed redirect URIs (http/wait.c), the bounded shares of the pool
 * (http/pool.c), the config that sizes both, and the wakes that tell the
 * waiter and sluice work to look now (util/wake.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "suites.h"
#include "http/pool.h"
#include "http/request.h"
#include "http/response.h"
#include "http/wait.h"
#include "util/arena.h"
#include "util/config.h"
#include "util/wake.h"

static struct config cfg;

/* The X-Accel-Redirect value of a wait_redirect answer, into uri. */
static int redirect_of(const char *kind, const char *owner, const char *a,
                       const char *b, long long ms, char *uri, size_t cap)
{
	char *env[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/", NULL };
	struct arena *ar = arena_new();
	struct req r;
	const char *out, *h, *end;
	int rc;

	config_defaults(&cfg);
	req_init_env(&r, ar, &cfg, env);
	rc = wait_redirect(&r, kind, owner, a, b, ms);
	uri[0] = '\0';
	if (rc == 0) {
		out = resp_test_output(&r, NULL);
		if ((h = strstr(out, "X-Accel-Redirect: ")) != NULL &&
		    (end = strstr(h, "\r\n")) != NULL) {
			h += strlen("X-Accel-Redirect: ");
			snprintf(uri, cap, "%.*s", (int)(end - h), h);
		}
	}
	arena_free(ar);
	return rc;
}

static void test_redirect_round_trip(void)
{
	char uri[512];
	struct wait_ref ref;
	long long now;

	CU_ASSERT_EQUAL_FATAL(wait_key_init(), 0);
	CU_ASSERT(wait_enabled());
	now = wait_now_ms();
	CU_ASSERT_EQUAL_FATAL(redirect_of("question", "user:7",
	    "3f9c2a10-5b7e-4d21-9a0c-12ab34cd56ef", "b2b0685e-0000-4000-8000-000000000001",
	    5000, uri, sizeof uri), 0);
	CU_ASSERT_NSTRING_EQUAL(uri, WAIT_PREFIX "question/user:7/3f9c", 24);
	CU_ASSERT_EQUAL_FATAL(wait_uri_parse(uri, strlen(uri), &ref), 0);
	CU_ASSERT_STRING_EQUAL(ref.kind, "question");
	CU_ASSERT_STRING_EQUAL(ref.owner, "user:7");
	CU_ASSERT_STRING_EQUAL(ref.a, "3f9c2a10-5b7e-4d21-9a0c-12ab34cd56ef");
	CU_ASSERT_STRING_EQUAL(ref.b, "b2b0685e-0000-4000-8000-000000000001");
	CU_ASSERT(ref.deadline_ms >= now + 5000 && ref.deadline_ms <= wait_now_ms() + 5000);
}

/* The request's id rides along outside the mac; a malformed one is
 * dropped, and neither changes what the URI is checked for. */
static void test_redirect_request_id(void)
{
	char *env[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/",
	                "HTTP_X_REQUEST_ID=req-42", NULL };
	struct arena *ar = arena_new();
	struct wait_ref ref;
	struct req r;
	char uri[512], odd[600];
	const char *out, *h, *end, *q;

	CU_ASSERT_EQUAL_FATAL(wait_key_init(), 0);
	config_defaults(&cfg);
	req_init_env(&r, ar, &cfg, env);
	req_take_request_id(&r);
	CU_ASSERT_EQUAL_FATAL(wait_redirect(&r, "question", "u", "a", "b", 1000), 0);
	out = resp_test_output(&r, NULL);
	h = strstr(out, "X-Accel-Redirect: ");
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	h += strlen("X-Accel-Redirect: ");
	end = strstr(h, "\r\n");
	snprintf(uri, sizeof uri, "%.*s", (int)(end - h), h);
	q = strchr(uri, '?');
	CU_ASSERT_PTR_NOT_NULL_FATAL(q);
	CU_ASSERT_STRING_EQUAL(q, "?request_id=req-42");
	CU_ASSERT_EQUAL(wait_uri_parse(uri, strlen(uri), &ref), 0);
	CU_ASSERT_STRING_EQUAL(ref.request_id, "req-42");
	CU_ASSERT_STRING_EQUAL(ref.b, "b");
	/* A query of any other shape names no id, and the URI still checks. */
	snprintf(odd, sizeof odd, "%.*s?request_id=a b", (int)(q - uri), uri);
	CU_ASSERT_EQUAL(wait_uri_parse(odd, strlen(odd), &ref), 0);
	CU_ASSERT_STRING_EQUAL(ref.request_id, "");
	snprintf(odd, sizeof odd, "%.*s?other=1", (int)(q - uri), uri);
	CU_ASSERT_EQUAL(wait_uri_parse(odd, strlen(odd), &ref), 0);
	CU_ASSERT_STRING_EQUAL(ref.request_id, "");
	/* The mac still covers the path before the query. */
	snprintf(odd, sizeof odd, "%.*sX%s", (int)(q - uri - 1), uri, q);
	CU_ASSERT_EQUAL(wait_uri_parse(odd, strlen(odd), &ref), -1);
	arena_free(ar);
}

/* Every byte changed, added or taken away makes the URI one no worker
 * wrote: the waiter must refuse it. */
static void test_forgeries(void)
{
	char uri[512], bad[520];
	struct wait_ref ref;
	size_t n;

	CU_ASSERT_EQUAL_FATAL(wait_key_init(), 0);
	CU_ASSERT_EQUAL_FATAL(redirect_of("refresh", "cust-1", "ds-1", "42", 20000,
	                                  uri, sizeof uri), 0);
	n = strlen(uri);
	CU_ASSERT_EQUAL(wait_uri_parse(uri, n, &ref), 0);
	for (size_t i = 0; i < n; i++) {
		memcpy(bad, uri, n + 1);
		bad[i] = bad[i] == 'a' ? 'b' : 'a';
		CU_ASSERT_EQUAL(wait_uri_parse(bad, n, &ref), -1);
	}
	CU_ASSERT_EQUAL(wait_uri_parse(uri, n - 1, &ref), -1);
	snprintf(bad, sizeof bad, "%s0", uri);
	CU_ASSERT_EQUAL(wait_uri_parse(bad, n + 1, &ref), -1);
	CU_ASSERT_EQUAL(wait_uri_parse("/_sluice_wait/", 14, &ref), -1);
	CU_ASSERT_EQUAL(wait_uri_parse("/dataset/x", 10, &ref), -1);
	/* Another key (a restarted master) does not know this URI. */
	CU_ASSERT_EQUAL_FATAL(wait_key_init(), 0);
	CU_ASSERT_EQUAL(wait_uri_parse(uri, n, &ref), -1);
}

static void test_redirect_fields(void)
{
	static const char *const bad[] = {
		"", "a/b", "a b", "a?b", "a%2f", "a\nb",
		"0123456789012345678901234567890123456789012345678901234567890123456789012345678901",
	};
	char uri[512];

	CU_ASSERT_EQUAL_FATAL(wait_key_init(), 0);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		CU_ASSERT_EQUAL(redirect_of("question", bad[i], "a", "b", 1000, uri, sizeof uri), -1);
		CU_ASSERT_EQUAL(redirect_of("question", "o", "a", bad[i], 1000, uri, sizeof uri), -1);
	}
	/* 80 characters is the most a field may have. */
	CU_ASSERT_EQUAL(redirect_of("question", "o", "a",
	    "01234567890123456789012345678901234567890123456789012345678901234567890123456789",
	    1000, uri, sizeof uri), 0);
}

/* Shares are counted across processes, and a worker that dies holding one
 * gives it back through the master. */
static void test_pool_shares(void)
{
	int fds[2];
	char got = 0;
	pid_t pid;
	int status;

	/* Without a pool (unit tests, admin commands) every take succeeds. */
	CU_ASSERT(pool_take(POOL_PASSWORD_CHECKS, 0));
	CU_ASSERT_EQUAL_FATAL(pool_init(4), 0);
	pool_slot_set(0);
	CU_ASSERT(pool_take(POOL_PASSWORD_CHECKS, 1));
	CU_ASSERT_EQUAL_FATAL(pipe(fds), 0);
	if ((pid = fork()) == 0) {
		/* Another worker: the one share is taken. */
		char r;

		pool_slot_set(1);
		r = pool_take(POOL_PASSWORD_CHECKS, 1) ? 'y' : 'n';
		r = r == 'n' && pool_take(POOL_PASSWORD_CHECKS, 2) ? 'o' : r;
		(void)!write(fds[1], &r, 1);
		_exit(0);                 /* dies holding the second share */
	}
	CU_ASSERT_EQUAL(read(fds[0], &got, 1), 1);
	waitpid(pid, &status, 0);
	CU_ASSERT_EQUAL(got, 'o');     /* refused at 1, granted at 2 */
	pool_give(POOL_PASSWORD_CHECKS);
	CU_ASSERT(!pool_take(POOL_PASSWORD_CHECKS, 0));
	CU_ASSERT(!pool_take(POOL_PASSWORD_CHECKS, 1));  /* slot 1 still holds one */
	pool_slot_clear(1);                              /* the master reaps it */
	CU_ASSERT(pool_take(POOL_PASSWORD_CHECKS, 1));
	pool_give(POOL_PASSWORD_CHECKS);
	close(fds[0]);
	close(fds[1]);
}

static void test_sizes(void)
{
	char buf[CONFIG_PATH_MAX + 8];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int want;

	config_defaults(&cfg);
	want = (int)(cpus < 1 ? 1 : cpus) * WORKERS_PER_CPU;
	if (want < WORKERS_MIN)
		want = WORKERS_MIN;
	CU_ASSERT_EQUAL(config_worker_count(&cfg), want > WORKERS_DEFAULT_MAX ? WORKERS_DEFAULT_MAX : want);
	cfg.workers = 3;
	CU_ASSERT_EQUAL(config_worker_count(&cfg), 3);
	CU_ASSERT_EQUAL(config_wait_listen(&cfg, buf, sizeof buf), 0);
	CU_ASSERT_STRING_EQUAL(buf, "/run/sluice/sluice.sock.wait");
	CU_ASSERT_EQUAL(config_set(&cfg, "wait_listen", "/tmp/w.sock", NULL, 0), 0);
	CU_ASSERT_EQUAL(config_wait_listen(&cfg, buf, sizeof buf), 0);
	CU_ASSERT_STRING_EQUAL(buf, "/tmp/w.sock");
	CU_ASSERT_EQUAL(config_wait_listen(&cfg, buf, 5), -1);
}

/* Wakes: paths from the shared config, a round trip, nothing bound,
 * datagrams out of shape dropped, a file taken away noticed. */
static void test_wakes(void)
{
	char dir[] = "/tmp/sluice-wake-XXXXXX", path[256], kind[WAKE_KIND_MAX + 1];
	char id[WAKE_ID_MAX + 1], junk[300];
	struct sockaddr_un sa;
	int fd, raw;

	config_defaults(&cfg);
	CU_ASSERT_EQUAL(wake_path(&cfg, WAKE_WAITER, path, sizeof path), 0);
	CU_ASSERT_STRING_EQUAL(path, "/run/sluice/sluice.sock.wait.wake");
	CU_ASSERT_EQUAL(wake_path(&cfg, WAKE_WORK, path, sizeof path), 0);
	CU_ASSERT_STRING_EQUAL(path, "/run/sluice/sluice.sock.work");
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(cfg.listen, sizeof cfg.listen, "%s/s.sock", dir);

	/* Nobody bound: the sender goes on. */
	wake_send(&cfg, WAKE_WAITER, "question", "b2b0685e-0000-4000-8000-000000000001");
	CU_ASSERT(wake_gone(&cfg, WAKE_WAITER));

	fd = wake_bind(&cfg, WAKE_WAITER);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT(!wake_gone(&cfg, WAKE_WAITER));
	CU_ASSERT_EQUAL(wake_recv(fd, kind, id), 0);
	wake_send(&cfg, WAKE_WAITER, "question", "b2b0685e-0000-4000-8000-000000000001");
	wake_send(&cfg, WAKE_WAITER, "rag_question", NULL);
	/* Out of shape: not sent. */
	wake_send(&cfg, WAKE_WAITER, "Question", "x");
	wake_send(&cfg, WAKE_WAITER, "question", "a b");
	wake_send(&cfg, WAKE_WAITER, "question", "");
	CU_ASSERT_EQUAL(wake_recv(fd, kind, id), 1);
	CU_ASSERT_STRING_EQUAL(kind, "question");
	CU_ASSERT_STRING_EQUAL(id, "b2b0685e-0000-4000-8000-000000000001");
	CU_ASSERT_EQUAL(wake_recv(fd, kind, id), 1);
	CU_ASSERT_STRING_EQUAL(kind, "rag_question");
	CU_ASSERT_STRING_EQUAL(id, "");
	CU_ASSERT_EQUAL(wake_recv(fd, kind, id), 0);

	/* Anyone's datagrams out of shape are dropped, the next one read. */
	raw = socket(AF_UNIX, SOCK_DGRAM, 0);
	CU_ASSERT_FATAL(raw >= 0);
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	CU_ASSERT_EQUAL_FATAL(wake_path(&cfg, WAKE_WAITER, sa.sun_path, sizeof sa.sun_path), 0);
	memset(junk, 'a', sizeof junk);
	CU_ASSERT(sendto(raw, junk, sizeof junk, 0, (struct sockaddr *)&sa, sizeof sa) > 0);
	CU_ASSERT(sendto(raw, "question\0x", 10, 0, (struct sockaddr *)&sa, sizeof sa) > 0);
	CU_ASSERT(sendto(raw, "", 0, 0, (struct sockaddr *)&sa, sizeof sa) == 0);
	CU_ASSERT(sendto(raw, "question a/b", 12, 0, (struct sockaddr *)&sa, sizeof sa) > 0);
	CU_ASSERT(sendto(raw, "refresh 42", 10, 0, (struct sockaddr *)&sa, sizeof sa) > 0);
	CU_ASSERT_EQUAL(wake_recv(fd, kind, id), 1);
	CU_ASSERT_STRING_EQUAL(kind, "refresh");
	CU_ASSERT_STRING_EQUAL(id, "42");
	CU_ASSERT_EQUAL(wake_recv(fd, kind, id), 0);
	close(raw);

	/* Taken away (a runtime directory emptied): gone, and bound again. */
	unlink(sa.sun_path);
	CU_ASSERT(wake_gone(&cfg, WAKE_WAITER));
	close(fd);
	fd = wake_bind(&cfg, WAKE_WAITER);
	CU_ASSERT(fd >= 0);
	CU_ASSERT(!wake_gone(&cfg, WAKE_WAITER));
	close(fd);
	unlink(sa.sun_path);
	rmdir(dir);

	/* A path that does not fit a socket address: no wakes, never a cut path. */
	memset(cfg.listen, 'x', 120);
	cfg.listen[0] = '/';
	cfg.listen[120] = '\0';
	CU_ASSERT_EQUAL(wake_path(&cfg, WAKE_WORK, path, sizeof path), -1);
	CU_ASSERT_EQUAL(wake_bind(&cfg, WAKE_WORK), -1);
	CU_ASSERT(!wake_gone(&cfg, WAKE_WORK));
	wake_send(&cfg, WAKE_WORK, "rag_question", NULL);
}

int suite_wait(void)
{
	static const struct test_case tests[] = {
		{ "redirect round trip", test_redirect_round_trip },
		{ "forged redirects refused", test_forgeries },
		{ "redirect fields", test_redirect_fields },
		{ "redirect with the request id", test_redirect_request_id },
		{ "pool shares", test_pool_shares },
		{ "worker count and wait socket", test_sizes },
		{ "wakes", test_wakes },
		{ NULL, NULL },
	};

	return suite_add("wait", tests);
}
