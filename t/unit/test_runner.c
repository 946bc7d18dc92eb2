/* test_runner.c - the runner's pure pieces: retry backoff, the memory limit
 * and how an exhausted task is recognised, the task order, the connector
 * dispatch's refusals, and how a run log line is cleaned. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "suites.h"
#include "runner/connector.h"
#include "runner/runner.h"

static void test_retry_delay(void)
{
	CU_ASSERT_EQUAL(runner_retry_delay(30, 1), 30);
	CU_ASSERT_EQUAL(runner_retry_delay(30, 2), 60);
	CU_ASSERT_EQUAL(runner_retry_delay(30, 3), 120);
	CU_ASSERT_EQUAL(runner_retry_delay(30, 5), 480);
	CU_ASSERT_EQUAL(runner_retry_delay(1, 1), 1);
	CU_ASSERT_EQUAL(runner_retry_delay(1, 2), 2);
	CU_ASSERT_EQUAL(runner_retry_delay(0, 1), 1);            /* at least 1 s */
	CU_ASSERT_EQUAL(runner_retry_delay(3600, 5), RUNNER_RETRY_MAX_S);
	CU_ASSERT_EQUAL(runner_retry_delay(1000, 3), RUNNER_RETRY_MAX_S);
	CU_ASSERT_EQUAL(runner_retry_delay(30, 1000), RUNNER_RETRY_MAX_S);  /* no overflow */
}

static void test_rlimit(void)
{
	CU_ASSERT_EQUAL(runner_rlimit_bytes(2048, 0), 2048ULL << 20);
	CU_ASSERT_EQUAL(runner_rlimit_bytes(12000, 0), 12000ULL << 20);
	CU_ASSERT_EQUAL(runner_rlimit_bytes(1, 0), 1ULL << 20);
	CU_ASSERT_EQUAL(runner_rlimit_bytes(0, 0), 1ULL << 20);        /* never 0 */
	CU_ASSERT_EQUAL(runner_rlimit_bytes(100, 1024), (100ULL << 20) + (1024ULL << 10));
	CU_ASSERT_EQUAL(runner_rlimit_bytes(1048576, 0), 1ULL << 40);
}

static void test_oom_text(void)
{
	static const char *const yes[] = {
		"out of memory", "Out of memory!", "tap stderr: Out of memory!",
		"malloc: Cannot allocate memory", "MemoryError", "memory exhausted",
		"terminate called after throwing an instance of 'std::bad_alloc'", NULL,
	};
	static const char *const no[] = {
		"", "connection refused", "memory", "the memory limit is 200 MB",
		"out of disk space", "driver not available: oracle", NULL,
	};

	for (const char *const *s = yes; *s != NULL; s++)
		CU_ASSERT_TRUE(runner_error_is_oom(*s));
	for (const char *const *s = no; *s != NULL; s++)
		CU_ASSERT_FALSE(runner_error_is_oom(*s));
	CU_ASSERT_FALSE(runner_error_is_oom(NULL));
}

/* waitpid statuses made by real processes. */
static int status_of(int how)
{
	int st = 0;
	pid_t p = fork();

	if (p == 0) {
		if (how > 0)
			_exit(how);
		signal(-how, SIG_DFL);
		raise(-how);
		_exit(99);
	}
	waitpid(p, &st, 0);
	return st;
}

static void test_memory_exceeded(void)
{
	struct task_result r;
	long long lim = 256 * 1024;                 /* 256 MB in kB */
	int segv = status_of(-SIGSEGV), kill9 = status_of(-SIGKILL);
	int abrt = status_of(-SIGABRT), term = status_of(-SIGTERM);
	int exit1 = status_of(1), exit0 = status_of(0);

	memset(&r, 0, sizeof r);
	/* The task said so. */
	r.rc = -1;
	r.memory_exceeded = 1;
	CU_ASSERT_TRUE(runner_memory_exceeded(exit1, 30 * 1024, lim, &r));
	r.memory_exceeded = 0;
	snprintf(r.error, sizeof r.error, "tap exited 1: Out of memory!");
	CU_ASSERT_TRUE(runner_memory_exceeded(exit1, 30 * 1024, lim, &r));
	/* An ordinary failure far from the limit is not. */
	snprintf(r.error, sizeof r.error, "connection refused");
	CU_ASSERT_FALSE(runner_memory_exceeded(exit1, 30 * 1024, lim, &r));
	/* A failure at the limit is. */
	CU_ASSERT_TRUE(runner_memory_exceeded(exit1, 250 * 1024, lim, &r));
	/* Success is never. */
	memset(&r, 0, sizeof r);
	CU_ASSERT_FALSE(runner_memory_exceeded(exit0, 255 * 1024, lim, &r));
	/* Deaths by signal near the limit, without a report. */
	CU_ASSERT_TRUE(runner_memory_exceeded(segv, 240 * 1024, lim, NULL));
	CU_ASSERT_TRUE(runner_memory_exceeded(abrt, 240 * 1024, lim, NULL));
	CU_ASSERT_TRUE(runner_memory_exceeded(kill9, 240 * 1024, lim, NULL));
	CU_ASSERT_TRUE(runner_memory_exceeded(exit1, 240 * 1024, lim, NULL));
	/* The margin: 10%, at least 16 MB. */
	CU_ASSERT_TRUE(runner_memory_exceeded(segv, lim - lim / 10, lim, NULL));
	CU_ASSERT_FALSE(runner_memory_exceeded(segv, lim - lim / 10 - 1, lim, NULL));
	CU_ASSERT_TRUE(runner_memory_exceeded(segv, 48 * 1024, 64 * 1024, NULL));
	CU_ASSERT_FALSE(runner_memory_exceeded(segv, 48 * 1024 - 1, 64 * 1024, NULL));
	/* Far from it, or a signal that is not how allocations fail. */
	CU_ASSERT_FALSE(runner_memory_exceeded(segv, 40 * 1024, lim, NULL));
	CU_ASSERT_FALSE(runner_memory_exceeded(term, 255 * 1024, lim, NULL));
}

static void test_task_order(void)
{
	static struct task_deps big[RUNNER_TASKS_MAX + 1];
	static size_t order[RUNNER_TASKS_MAX + 1];
	/* 0 extract, 1 qualify(0), 2 extract, 3 qualify(2). */
	struct task_deps d1[4] = { { 0, { 0 } }, { 1, { 0 } }, { 0, { 0 } }, { 1, { 2 } } };
	/* Given out of order: 0 after 2, 1 after 0. */
	struct task_deps d2[3] = { { 1, { 2 } }, { 1, { 0 } }, { 0, { 0 } } };
	struct task_deps cyc[2] = { { 1, { 1 } }, { 1, { 0 } } };
	struct task_deps self[1] = { { 1, { 0 } } };
	struct task_deps bad[2] = { { 0, { 0 } }, { 1, { 7 } } };
	struct task_deps many[2] = { { 0, { 0 } }, { RUNNER_UP_MAX + 1, { 0 } } };

	CU_ASSERT_EQUAL(runner_task_order(4, d1, order), 0);
	CU_ASSERT(order[0] == 0 && order[1] == 1 && order[2] == 2 && order[3] == 3);
	CU_ASSERT_EQUAL(runner_task_order(3, d2, order), 0);
	CU_ASSERT(order[0] == 2 && order[1] == 0 && order[2] == 1);
	CU_ASSERT_EQUAL(runner_task_order(2, cyc, order), -1);
	CU_ASSERT_EQUAL(runner_task_order(1, self, order), -1);
	CU_ASSERT_EQUAL(runner_task_order(2, bad, order), -1);
	CU_ASSERT_EQUAL(runner_task_order(2, many, order), -1);
	CU_ASSERT_EQUAL(runner_task_order(0, NULL, order), 0);
	/* The largest pipeline: 100 jobs with qualify tasks = 200 tasks, each
	 * qualify after its extract; and the bound. */
	for (size_t i = 0; i < 200; i++) {
		big[i].n = i % 2;
		big[i].up[0] = i - i % 2;
	}
	CU_ASSERT_EQUAL(runner_task_order(200, big, order), 0);
	CU_ASSERT(order[0] == 0 && order[1] == 1 && order[198] == 198 && order[199] == 199);
	CU_ASSERT_EQUAL(runner_task_order(RUNNER_TASKS_MAX, big, order), 0);
	CU_ASSERT_EQUAL(runner_task_order(RUNNER_TASKS_MAX + 1, big, order), -1);
}

static void test_dispatch_refusals(void)
{
	struct job_spec job;
	char err[128];

	memset(&job, 0, sizeof job);
	job.connector = "jdbc";
	job.plugin = "oracle";
	CU_ASSERT_EQUAL(connector_extract_load(&job, NULL, err, sizeof err), -1);
	CU_ASSERT_STRING_EQUAL(err, "driver not available: oracle");
	CU_ASSERT_EQUAL(connector_driver_check(&job, err, sizeof err), -1);
	job.plugin = "sqlserver";
	CU_ASSERT_EQUAL(connector_qualify(&job, NULL, err, sizeof err), -1);
	CU_ASSERT_STRING_EQUAL(err, "driver not available: sqlserver");
	job.plugin = "mariadb";
	CU_ASSERT_EQUAL(connector_driver_check(&job, err, sizeof err), 0);
	job.connector = "singer";
	CU_ASSERT_EQUAL(connector_qualify(&job, NULL, err, sizeof err), -1);
	CU_ASSERT_STRING_EQUAL(err, "the qualify task applies to jdbc jobs only (connector singer)");
	CU_ASSERT_EQUAL(connector_driver_check(&job, err, sizeof err), 0);
	job.connector = "ftp";
	CU_ASSERT_EQUAL(connector_extract_load(&job, NULL, err, sizeof err), -1);
	CU_ASSERT_STRING_EQUAL(err, "unknown connector: ftp");
}

static void test_log_clean(void)
{
	static char big[RUN_LOG_LINE_MAX * 2];
	char out[RUN_LOG_LINE_MAX + 1], small[16];

	run_log_clean("plain text", NULL, out, sizeof out);
	CU_ASSERT_STRING_EQUAL(out, "plain text");
	run_log_clean("two\nlines\tand\rmore\x7f", NULL, out, sizeof out);
	CU_ASSERT_STRING_EQUAL(out, "two lines and more ");
	run_log_clean("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", NULL, out, sizeof out);
	CU_ASSERT_STRING_EQUAL(out, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	run_log_clean("bad \xff\xfe \xc3 \xed\xa0\x80 end", NULL, out, sizeof out);
	CU_ASSERT_STRING_EQUAL(out, "bad ?? ? ??? end");
	/* The secret, wherever it is. */
	run_log_clean("login pw=hunter2; again hunter2hunter2", "hunter2", out, sizeof out);
	CU_ASSERT_STRING_EQUAL(out, "login pw=***; again ******");
	run_log_clean("hunter", "hunter2", out, sizeof out);
	CU_ASSERT_STRING_EQUAL(out, "hunter");
	/* Exactly the limit is kept; one more byte is cut with "...". */
	memset(big, 'a', RUN_LOG_LINE_MAX);
	big[RUN_LOG_LINE_MAX] = '\0';
	run_log_clean(big, NULL, out, sizeof out);
	CU_ASSERT_EQUAL(strlen(out), RUN_LOG_LINE_MAX);
	CU_ASSERT_EQUAL(out[RUN_LOG_LINE_MAX - 1], 'a');
	big[RUN_LOG_LINE_MAX] = 'b';
	big[RUN_LOG_LINE_MAX + 1] = '\0';
	run_log_clean(big, NULL, out, sizeof out);
	CU_ASSERT_EQUAL(strlen(out), RUN_LOG_LINE_MAX);
	CU_ASSERT_STRING_EQUAL(out + RUN_LOG_LINE_MAX - 3, "...");
	/* A multi-byte character is never cut in half. */
	memset(big, 'a', RUN_LOG_LINE_MAX);
	memcpy(big + RUN_LOG_LINE_MAX - 4, "\xe2\x82\xac\xe2\x82\xac", 6);
	big[RUN_LOG_LINE_MAX + 2] = '\0';
	run_log_clean(big, NULL, out, sizeof out);
	CU_ASSERT(strlen(out) <= RUN_LOG_LINE_MAX);
	CU_ASSERT_STRING_EQUAL(out + strlen(out) - 3, "...");
	CU_ASSERT((unsigned char)out[strlen(out) - 4] == 'a');
	/* A small buffer bounds it too; a secret cut by the limit never leaks
	 * a prefix. */
	run_log_clean("0123456789abcdefghij", NULL, small, sizeof small);
	CU_ASSERT_STRING_EQUAL(small, "0123456789ab...");
	run_log_clean("0123456789ab secret", "secret", small, sizeof small);
	CU_ASSERT_STRING_EQUAL(small, "0123456789ab...");
}

int suite_runner(void)
{
	static const struct test_case tests[] = {
		{ "retry backoff", test_retry_delay },
		{ "RLIMIT_AS of a job", test_rlimit },
		{ "allocation failure texts", test_oom_text },
		{ "memory limit recognised", test_memory_exceeded },
		{ "task order", test_task_order },
		{ "dispatch refusals", test_dispatch_refusals },
		{ "log line cleaning", test_log_clean },
		{ NULL, NULL },
	};

	return suite_add("runner", tests);
}
