/* test_config.c - sluice.conf parsing, ranges and the JWT secret file. */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "suites.h"
#include "util/config.h"

/* A file with the given bytes under $TMPDIR; the path goes into path. */
static int write_temp(char *path, size_t cap, const char *data, size_t len)
{
	const char *dir = getenv("TMPDIR");
	FILE *f;
	int fd;

	if (dir == NULL || dir[0] == '\0')
		dir = "/tmp";
	if ((size_t)snprintf(path, cap, "%s/sluice-test-XXXXXX", dir) >= cap)
		return -1;
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	f = fdopen(fd, "w");
	if (f == NULL) {
		close(fd);
		return -1;
	}
	if (fwrite(data, 1, len, f) != len) {
		fclose(f);
		return -1;
	}
	return fclose(f);
}

/* Load text as a config file over the defaults; returns config_load's rc.
 * The file name is written to path so messages can be checked. */
static int load_text(const char *text, struct config *c, char *path, size_t pcap,
                     char *err, size_t errlen)
{
	int rc;

	config_defaults(c);
	err[0] = '\0';
	if (write_temp(path, pcap, text, strlen(text)) != 0) {
		CU_FAIL("cannot write a temporary file");
		return -2;
	}
	rc = config_load(path, c, err, errlen);
	unlink(path);
	return rc;
}

/* The installed sample (sluice.conf.sample.in, placeholders filled as make
 * fills them) names every key with its built-in default, since the sample
 * says so and the manual's CONFIGURATION section is made from it.  Test-only
 * keys (testing_*, *_test_*) are left out of it on purpose. */
static void test_sample_is_the_defaults(void)
{
	static const struct { const char *from, *to; } fill[] = {
		{ "@pkgdatadir@", SLUICE_PKGDATADIR },
		{ "@sysconfdir@", SLUICE_SYSCONFDIR },
	};
	char in[4096], raw[16384], text[16384], path[256], err[512], want[128];
	struct config defaults, loaded;
	size_t n, len = 0;
	FILE *f;

	snprintf(in, sizeof in, "%s/sluice.conf.sample.in", SLUICE_TOP_SRCDIR);
	f = fopen(in, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	n = fread(raw, 1, sizeof raw - 1, f);
	fclose(f);
	CU_ASSERT_FATAL(n > 0 && n < sizeof raw - 1);
	raw[n] = '\0';
	for (const char *p = raw; *p != '\0';) {
		size_t i;

		for (i = 0; i < sizeof fill / sizeof fill[0]; i++)
			if (strncmp(p, fill[i].from, strlen(fill[i].from)) == 0)
				break;
		if (i < sizeof fill / sizeof fill[0]) {
			CU_ASSERT_FATAL(len + strlen(fill[i].to) < sizeof text);
			memcpy(text + len, fill[i].to, strlen(fill[i].to));
			len += strlen(fill[i].to);
			p += strlen(fill[i].from);
		} else {
			CU_ASSERT_FATAL(len + 1 < sizeof text);
			text[len++] = *p++;
		}
	}
	text[len] = '\0';
	CU_ASSERT_PTR_NULL(strchr(text, '@'));

	config_defaults(&defaults);
	if (load_text(text, &loaded, path, sizeof path, err, sizeof err) != 0) {
		fprintf(stderr, "\nthe sample does not load: %s\n", err);
		CU_FAIL_FATAL("sluice.conf.sample.in does not load");
	}
	CU_ASSERT_PTR_NULL(config_key_differing(&defaults, &loaded));
	if (config_key_differing(&defaults, &loaded) != NULL)
		fprintf(stderr, "\nsample differs at %s\n", config_key_differing(&defaults, &loaded));

	for (size_t i = 0; config_key_name(i) != NULL; i++) {
		const char *name = config_key_name(i);

		if (strncmp(name, "testing_", 8) == 0 || strstr(name, "_test_") != NULL)
			continue;
		snprintf(want, sizeof want, "\n%s =", name);
		if (strstr(text, want) == NULL) {
			fprintf(stderr, "\nsample lacks %s\n", name);
			CU_FAIL("a key is missing from sluice.conf.sample.in");
		}
	}
}

/* config_key_differing names the key, and only a value's own bytes count. */
static void test_key_differing(void)
{
	struct config a, b;
	char err[256];

	config_defaults(&a);
	config_defaults(&b);
	CU_ASSERT_PTR_NULL(config_key_differing(&a, &b));
	CU_ASSERT_EQUAL(config_set(&b, "chunk_overlap", "99", err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(config_key_differing(&a, &b), "chunk_overlap");
	config_defaults(&b);
	/* "x" written over a longer default leaves old bytes past the NUL. */
	CU_ASSERT_EQUAL(config_set(&a, "db_user", "x", err, sizeof err), 0);
	CU_ASSERT_EQUAL(config_set(&b, "db_user", "x", err, sizeof err), 0);
	memset(b.db_user + 2, 'z', 3);
	CU_ASSERT_PTR_NULL(config_key_differing(&a, &b));
	CU_ASSERT_EQUAL(config_set(&b, "db_user", "y", err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(config_key_differing(&a, &b), "db_user");
	CU_ASSERT_PTR_NULL(config_key_name(100000));
	CU_ASSERT_STRING_EQUAL(config_key_name(0), "listen");
}

static void test_defaults(void)
{
	struct config c;

	config_defaults(&c);
	CU_ASSERT_STRING_EQUAL(c.listen, "/run/sluice/sluice.sock");
	CU_ASSERT_EQUAL(c.listen_mode, 0660);
	CU_ASSERT_EQUAL(c.listen_backlog, 128);
	CU_ASSERT_EQUAL(c.workers, 0);
	CU_ASSERT_EQUAL(c.max_requests, 0);
	CU_ASSERT_EQUAL(c.shutdown_timeout, 30);
	CU_ASSERT_STRING_EQUAL(c.pid_file, "");
	CU_ASSERT_STRING_EQUAL(c.db_host, "localhost");
	CU_ASSERT_EQUAL(c.db_port, 3306);
	CU_ASSERT_STRING_EQUAL(c.db_socket, "");
	CU_ASSERT_STRING_EQUAL(c.db_user, "sluice");
	CU_ASSERT_STRING_EQUAL(c.db_password, "");
	CU_ASSERT_STRING_EQUAL(c.db_name, "sluice");
	CU_ASSERT_EQUAL(c.db_connect_timeout, 5);
	CU_ASSERT(strlen(c.sql_dir) > 4 &&
	          strcmp(c.sql_dir + strlen(c.sql_dir) - 4, "/sql") == 0);
	CU_ASSERT_STRING_EQUAL(c.storage_root, "/var/lib/sluice/storage");
	CU_ASSERT_STRING_EQUAL(c.host_name, "");
	CU_ASSERT_STRING_EQUAL(c.jwt_secret_file, "/etc/sluice/jwt.secret");
	CU_ASSERT_EQUAL(c.jwt_leeway, 30);
	CU_ASSERT_FALSE(c.health_auth);
	CU_ASSERT_EQUAL(c.health_ping_cache_ms, 250);
	CU_ASSERT_EQUAL(c.basic_cache_ttl, 60);
	CU_ASSERT_EQUAL(c.pbkdf2_iterations, 600000);
	CU_ASSERT_EQUAL(c.body_max_bytes, 1048576);
	CU_ASSERT_EQUAL(c.json_max_depth, 32);
	CU_ASSERT_EQUAL(c.memory_default_mb, 2048);
	CU_ASSERT_EQUAL(c.memory_max_mb, 12000);
	CU_ASSERT_STRING_EQUAL(c.connection_key_file, "/etc/sluice/connection.key");
	CU_ASSERT_FALSE(c.connection_key_loaded);
	CU_ASSERT_EQUAL(c.work_poll_ms, 250);
	CU_ASSERT_STRING_EQUAL(c.embedding_provider, "builtin");
	CU_ASSERT_EQUAL(c.embedding_dimensions, 384);
	CU_ASSERT_STRING_EQUAL(c.openai_base_url, "");
	CU_ASSERT_STRING_EQUAL(c.openai_model, "text-embedding-3-small");
	CU_ASSERT_STRING_EQUAL(c.openai_api_key_file, "");
	CU_ASSERT_EQUAL(c.openai_timeout_ms, 10000);
	CU_ASSERT_EQUAL(c.openai_batch_size, 64);
	CU_ASSERT_EQUAL(c.openai_max_retries, 3);
	CU_ASSERT_EQUAL(c.chunk_size, 800);
	CU_ASSERT_EQUAL(c.chunk_overlap, 100);
	CU_ASSERT_STRING_EQUAL(c.rag_index_dir, "");
	CU_ASSERT_EQUAL(c.question_wait_max_s, 30);
	CU_ASSERT_EQUAL(c.question_inline_max_snippets, 200000);
	CU_ASSERT_EQUAL(c.question_inline_budget_ms, 50);
	CU_ASSERT_EQUAL(c.dataset_counts_cache_ms, 1000);
	CU_ASSERT_EQUAL(c.work_shutdown_grace_s, 20);
	CU_ASSERT_EQUAL(c.work_rag_ingest_deadline_s, 3600);
	CU_ASSERT_EQUAL(c.runner_run_timeout_s, 21600);
	CU_ASSERT_EQUAL(c.password_checks_max, 0);
	CU_ASSERT_STRING_EQUAL(c.wait_listen, "");
	CU_ASSERT_STRING_EQUAL(c.log_level, "info");
	CU_ASSERT_EQUAL(c.jwt_secret_len, 0);
}

/* ---- integer ranges, each key at min - 1, min, max and max + 1 ----------- */

struct range_case {
	const char *key;
	size_t off, size;
	long long min, max;
};

#define RANGE(m, lo, hi) \
	{ #m, offsetof(struct config, m), sizeof(((struct config *)0)->m), lo, hi }

static const struct range_case ranges[] = {
	RANGE(listen_backlog, 1, 65535),
	RANGE(workers, 0, 256),
	RANGE(max_requests, 0, 1000000000000LL),
	RANGE(shutdown_timeout, 1, 3600),
	RANGE(db_port, 1, 65535),
	RANGE(db_connect_timeout, 1, 300),
	RANGE(jwt_leeway, 0, 300),
	RANGE(health_ping_cache_ms, 0, 1000),
	RANGE(basic_cache_ttl, 0, 3600),
	RANGE(pbkdf2_iterations, 1000, 10000000),
	RANGE(body_max_bytes, 1024, 1073741824),
	RANGE(json_max_depth, 1, 1000),
	RANGE(memory_default_mb, 1, 1048576),
	RANGE(memory_max_mb, 1, 1048576),
	RANGE(work_poll_ms, 10, 60000),
	RANGE(work_shutdown_grace_s, 0, 3600),
	RANGE(work_rag_question_slots, 1, 64),
	RANGE(work_rag_question_deadline_s, 1, 86400),
	RANGE(work_rag_ingest_slots, 1, 64),
	RANGE(work_rag_ingest_deadline_s, 1, 604800),
	RANGE(work_storage_infer_slots, 1, 64),
	RANGE(work_storage_infer_deadline_s, 1, 604800),
	RANGE(work_storage_link_load_slots, 1, 64),
	RANGE(work_storage_link_load_deadline_s, 1, 604800),
	RANGE(work_runner_sweep_slots, 1, 64),
	RANGE(work_runner_sweep_deadline_s, 1, 86400),
	RANGE(runner_run_timeout_s, 5, 604800),
	RANGE(runner_sweep_interval_s, 10, 86400),
	RANGE(password_checks_max, 0, 256),
	RANGE(question_inline_max_snippets, 0, 10000000),
	RANGE(question_inline_budget_ms, 0, 10000),
	RANGE(dataset_counts_cache_ms, 0, 60000),
	RANGE(runner_max_runs, 1, 256),
	RANGE(runner_heartbeat_s, 1, 300),
	RANGE(runner_stale_s, 10, 86400),
	RANGE(runner_shutdown_grace_s, 0, 3600),
	RANGE(runner_retry_base_s, 1, 3600),
	RANGE(embedding_dimensions, 1, 4096),
	RANGE(openai_timeout_ms, 100, 600000),
	RANGE(openai_batch_size, 1, 2048),
	RANGE(openai_max_retries, 0, 10),
	RANGE(chunk_size, 20, 16000),
	RANGE(chunk_overlap, 0, 8000),
	RANGE(question_wait_max_s, 0, 300),
#ifdef SLUICE_TEST_HOOKS
	RANGE(runner_test_task_delay_ms, 0, 600000),
	RANGE(runner_test_task_alloc_mb, 0, 1048576),
	RANGE(runner_test_qualify_delay_ms, 0, 600000),
	RANGE(rag_test_question_delay_ms, 0, 60000),
	RANGE(rag_test_ingest_delay_ms, 0, 60000),
	RANGE(rag_test_index_delay_ms, 0, 60000),
	RANGE(storage_test_unlink_delay_ms, 0, 60000),
	RANGE(work_test_slots, 1, 64),
	RANGE(work_test_deadline_s, 1, 86400),
#endif
	{ NULL, 0, 0, 0, 0 },
};

static long long field_value(const struct config *c, const struct range_case *r)
{
	const char *p = (const char *)c + r->off;

	if (r->size == sizeof(int))
		return *(const int *)(const void *)p;
	return *(const long *)(const void *)p;
}

static void check_set(const struct range_case *r, long long v, bool ok)
{
	struct config c;
	char value[32], err[256], want[256];
	int rc;

	config_defaults(&c);
	snprintf(value, sizeof value, "%lld", v);
	err[0] = '\0';
	rc = config_set(&c, r->key, value, err, sizeof err);
	if ((rc == 0) != ok)
		fprintf(stderr, "\n  %s = %s: rc %d (%s)", r->key, value, rc, err);
	if (ok) {
		CU_ASSERT_EQUAL(rc, 0);
		CU_ASSERT_EQUAL(field_value(&c, r), v);
	} else {
		CU_ASSERT_EQUAL(rc, -1);
		snprintf(want, sizeof want, "bad value for %s: '%s' (expected %lld..%lld)",
		         r->key, value, r->min, r->max);
		CU_ASSERT_STRING_EQUAL(err, want);
	}
}

static void test_int_ranges(void)
{
	for (const struct range_case *r = ranges; r->key != NULL; r++) {
		check_set(r, r->min, true);
		check_set(r, r->max, true);
		check_set(r, r->min - 1, false);
		check_set(r, r->max + 1, false);
	}
}

struct value_case {
	const char *key, *value;
	int rc;
};

/* Values that are not numbers at all, and the non-integer keys. */
static const struct value_case value_cases[] = {
	{ "workers", "x", -1 },
	{ "workers", "", -1 },
	{ "workers", " 2", -1 },
	{ "workers", "+2", -1 },
	{ "workers", "2k", -1 },
	{ "max_requests", "99999999999999999999", -1 },
	{ "listen_mode", "0660", 0 },
	{ "listen_mode", "660", 0 },
	{ "listen_mode", "0", 0 },
	{ "listen_mode", "0777", 0 },
	{ "listen_mode", "01000", -1 },
	{ "listen_mode", "1000", -1 },
	{ "listen_mode", "0778", -1 },
	{ "listen_mode", "0x1ff", -1 },
	{ "listen_mode", "", -1 },
	{ "listen_mode", "-1", -1 },
	{ "health_auth", "on", 0 },
	{ "health_auth", "off", 0 },
	{ "health_auth", "true", 0 },
	{ "health_auth", "false", 0 },
	{ "health_auth", "yes", 0 },
	{ "health_auth", "no", 0 },
	{ "health_auth", "1", 0 },
	{ "health_auth", "0", 0 },
	{ "health_auth", "ON", 0 },
	{ "health_auth", "maybe", -1 },
	{ "health_auth", "", -1 },
	{ "health_auth", "2", -1 },
	{ "log_level", "debug", 0 },
	{ "log_level", "info", 0 },
	{ "log_level", "warn", 0 },
	{ "log_level", "error", 0 },
	{ "log_level", "verbose", -1 },
	{ "log_level", "", -1 },
	{ "listen", "", -1 },
	{ "db_user", "", -1 },
	{ "db_name", "", -1 },
	{ "sql_dir", "", -1 },
	{ "storage_root", "", -1 },
	{ "jwt_secret_file", "", -1 },
	{ "connection_key_file", "", -1 },
	{ "connection_key_file", "/etc/sluice/connection.key", 0 },
	{ "connection_key", "00", -1 },
	{ "embedding_provider", "builtin", 0 },
	{ "embedding_provider", "openai", 0 },
	{ "embedding_provider", "OpenAI", -1 },
	{ "embedding_provider", "", -1 },
	{ "embedding_provider", "sentence-transformers", -1 },
	{ "openai_model", "", -1 },
	{ "openai_base_url", "", 0 },
	{ "openai_api_key_file", "", 0 },
	{ "rag_index_dir", "", 0 },
	{ "pid_file", "", 0 },
	{ "db_socket", "", 0 },
	{ "db_password", "", 0 },
	{ "db_host", "", 0 },
	{ "wokers", "4", -1 },
	{ "Workers", "4", -1 },
	{ "jwt_secret", "x", -1 },
	{ NULL, NULL, 0 },
};

static void test_values(void)
{
	for (const struct value_case *t = value_cases; t->key != NULL; t++) {
		struct config c;
		char err[256] = "";
		int rc;

		config_defaults(&c);
		rc = config_set(&c, t->key, t->value, err, sizeof err);
		if (rc != t->rc)
			fprintf(stderr, "\n  %s = '%s': rc %d, want %d (%s)",
			        t->key, t->value, rc, t->rc, err);
		CU_ASSERT_EQUAL(rc, t->rc);
		if (rc != 0) {
			CU_ASSERT(err[0] != '\0');
		}
	}
}

static void test_value_results(void)
{
	struct config c;
	char err[256];

	config_defaults(&c);
	CU_ASSERT_EQUAL(config_set(&c, "listen_mode", "0600", err, sizeof err), 0);
	CU_ASSERT_EQUAL(c.listen_mode, 0600);
	CU_ASSERT_EQUAL(config_set(&c, "listen_mode", "755", err, sizeof err), 0);
	CU_ASSERT_EQUAL(c.listen_mode, 0755);
	CU_ASSERT_EQUAL(config_set(&c, "health_auth", "yes", err, sizeof err), 0);
	CU_ASSERT_TRUE(c.health_auth);
	CU_ASSERT_EQUAL(config_set(&c, "health_auth", "Off", err, sizeof err), 0);
	CU_ASSERT_FALSE(c.health_auth);
	CU_ASSERT_EQUAL(config_set(&c, "log_level", "WARN", err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(c.log_level, "warn");
	CU_ASSERT_EQUAL(config_set(&c, "host_name", "sluice-b.example_2", err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(c.host_name, "sluice-b.example_2");
	CU_ASSERT_EQUAL(config_set(&c, "host_name", "", err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(c.host_name, "");

	CU_ASSERT_EQUAL(config_set(&c, "wokers", "4", err, sizeof err), -1);
	CU_ASSERT_STRING_EQUAL(err, "unknown key 'wokers'");
	CU_ASSERT_EQUAL(config_set(&c, "health_auth", "maybe", err, sizeof err), -1);
	CU_ASSERT_STRING_EQUAL(err, "bad value for health_auth: 'maybe' (expected on or off)");
	CU_ASSERT_EQUAL(config_set(&c, "listen_mode", "0800", err, sizeof err), -1);
	CU_ASSERT_STRING_EQUAL(err, "bad value for listen_mode: '0800' (expected an octal mode 0..0777)");
}

/* ---- string lengths ----------------------------------------------------- */

struct len_case {
	const char *key;
	size_t cap;                       /* the buffer, NUL included */
};

static const struct len_case len_cases[] = {
	{ "listen", CONFIG_PATH_MAX },
	{ "pid_file", CONFIG_PATH_MAX },
	{ "db_host", CONFIG_STR_MAX },
	{ "db_socket", CONFIG_PATH_MAX },
	{ "db_user", CONFIG_STR_MAX },
	{ "db_password", CONFIG_STR_MAX },
	{ "db_name", CONFIG_STR_MAX },
	{ "sql_dir", CONFIG_PATH_MAX },
	{ "storage_root", CONFIG_PATH_MAX },
	{ "jwt_secret_file", CONFIG_PATH_MAX },
	{ "connection_key_file", CONFIG_PATH_MAX },
	{ "openai_base_url", CONFIG_PATH_MAX },
	{ "openai_model", CONFIG_STR_MAX },
	{ "openai_api_key_file", CONFIG_PATH_MAX },
	{ "rag_index_dir", CONFIG_PATH_MAX },
	{ NULL, 0 },
};

static void test_string_lengths(void)
{
	char value[CONFIG_PATH_MAX + 1], err[256];

	for (const struct len_case *t = len_cases; t->key != NULL; t++) {
		struct config c;

		config_defaults(&c);
		memset(value, 'p', t->cap - 1);           /* longest that fits */
		value[t->cap - 1] = '\0';
		CU_ASSERT_EQUAL(config_set(&c, t->key, value, err, sizeof err), 0);

		value[t->cap - 1] = 'p';                  /* one byte more */
		value[t->cap] = '\0';
		err[0] = '\0';
		CU_ASSERT_EQUAL(config_set(&c, t->key, value, err, sizeof err), -1);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "too long"));
		CU_ASSERT_PTR_NOT_NULL(strstr(err, t->key));
		CU_ASSERT_PTR_NULL(strstr(err, "ppp"));  /* the value is not echoed */
	}
}

/* The test-only keys exist in a build configured with --enable-test-hooks
 * only: elsewhere each is an unknown key, so no production config can turn
 * a test hook on. */
static void test_test_only_keys(void)
{
	static const char *const keys[] = {
		"testing_routes", "runner_test_task_delay_ms", "runner_test_task_alloc_mb",
		"runner_test_qualify_delay_ms",
		"rag_test_question_delay_ms", "rag_test_ingest_delay_ms",
		"rag_test_index_delay_ms", "storage_test_unlink_delay_ms", "work_test_slots", "work_test_deadline_s", NULL,
	};
	struct config c;
	char err[256], want[256];

	for (const char *const *k = keys; *k != NULL; k++) {
		config_defaults(&c);
		err[0] = '\0';
		int rc = config_set(&c, *k, "1", err, sizeof err);
#ifdef SLUICE_TEST_HOOKS
		CU_ASSERT_EQUAL(rc, 0);
#else
		CU_ASSERT_EQUAL(rc, -1);
		snprintf(want, sizeof want, "unknown key '%s'", *k);
		CU_ASSERT_STRING_EQUAL(err, want);
#endif
	}
	(void)want;
}

/* ---- whole files -------------------------------------------------------- */

static void test_load_file(void)
{
	static const char text[] =
		"# sluice.conf\n"
		"\n"
		"   # an indented comment\n"
		"listen = /tmp/s.sock\n"
		"listen_mode=0600\n"
		"  workers\t=\t4  \n"
		"health_auth = on\r\n"
		"db_password = pa#ss=word\n"
		"db_user = \"  spaced user \"\n"
		"db_socket = \"\"\n"
		"db_host = \"quote\"inside\"\n"
		"max_requests = 1000000\n"
		"log_level = debug\n"
		"workers = 6\n"                  /* the last one wins */
		"storage_root = relative/dir";   /* no final newline */
	struct config c;
	char path[256], err[512];

	CU_ASSERT_EQUAL_FATAL(load_text(text, &c, path, sizeof path, err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(c.listen, "/tmp/s.sock");
	CU_ASSERT_EQUAL(c.listen_mode, 0600);
	CU_ASSERT_EQUAL(c.workers, 6);
	CU_ASSERT_TRUE(c.health_auth);
	CU_ASSERT_STRING_EQUAL(c.db_password, "pa#ss=word");
	CU_ASSERT_STRING_EQUAL(c.db_user, "  spaced user ");
	CU_ASSERT_STRING_EQUAL(c.db_socket, "");
	CU_ASSERT_STRING_EQUAL(c.db_host, "quote\"inside");
	CU_ASSERT_EQUAL(c.max_requests, 1000000);
	CU_ASSERT_STRING_EQUAL(c.log_level, "debug");
	CU_ASSERT_STRING_EQUAL(c.storage_root, "relative/dir");
	/* untouched keys keep their defaults */
	CU_ASSERT_EQUAL(c.db_port, 3306);
	CU_ASSERT_EQUAL(c.json_max_depth, 32);
}

struct file_error_case {
	const char *text;
	const char *want;                 /* after "<path>:" */
};

static const struct file_error_case file_errors[] = {
	{ "# c\n\nwokers = 4\n", "3: unknown key 'wokers'" },
	{ "workers = x\n", "1: bad value for workers: 'x' (expected 0..256)" },
	{ "workers = 257\n", "1: bad value for workers: '257' (expected 0..256)" },
	{ "workers = 2 # two\n", "1: bad value for workers: '2 # two' (expected 0..256)" },
	{ "\n\nworkers\n", "3: expected 'key = value'" },
	{ "= 4\n", "1: missing key before '='" },
	{ "db_name = \"sluice\n", "1: unterminated quote in value for db_name" },
	{ "db_name = \"\n", "1: unterminated quote in value for db_name" },
	{ "db_name = \n", "1: value for db_name must not be empty" },
	{ "workers = 1\nworkers=\n", "2: bad value for workers: '' (expected 0..256)" },
	{ "memory_default_mb = 4096\nmemory_max_mb = 2048\n",
	  " memory_default_mb (4096) is larger than memory_max_mb (2048)" },
	{ "chunk_overlap = 300\nchunk_size = 300\n",
	  " chunk_overlap (300) must be smaller than chunk_size (300)" },
	{ "chunk_size = 50\n",
	  " chunk_overlap (100) must be smaller than chunk_size (50)" },
	/* The host goes before the ':' of a work process's id. */
	{ "host_name = a:1\n", "1: bad value for host_name: 'a:1' (expected at most 100 "
	  "letters, digits, '.', '-' or '_')" },
	{ "host_name = a b\n", "1: bad value for host_name: 'a b' (expected at most 100 "
	  "letters, digits, '.', '-' or '_')" },
	{ "embedding_provider = local\n",
	  "1: bad value for embedding_provider: 'local' (expected builtin or openai)" },
	{ NULL, NULL },
};

static void test_file_errors(void)
{
	for (const struct file_error_case *t = file_errors; t->text != NULL; t++) {
		struct config c;
		char path[256], err[512], want[1024];

		CU_ASSERT_EQUAL(load_text(t->text, &c, path, sizeof path, err, sizeof err), -1);
		snprintf(want, sizeof want, "%s:%s", path, t->want);
		if (strcmp(err, want) != 0)
			fprintf(stderr, "\n  got  '%s'\n  want '%s'", err, want);
		CU_ASSERT_STRING_EQUAL(err, want);
	}
}

static void test_long_lines(void)
{
	char *text = malloc(4096 + 16);
	struct config c;
	char path[256], err[512], want[300];

	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	/* a 4096-byte comment line is fine */
	text[0] = '#';
	memset(text + 1, 'x', 4095);
	strcpy(text + 4096, "\nworkers = 3\n");
	CU_ASSERT_EQUAL(load_text(text, &c, path, sizeof path, err, sizeof err), 0);
	CU_ASSERT_EQUAL(c.workers, 3);

	/* 4097 bytes is not */
	memset(text + 1, 'x', 4096);
	strcpy(text + 4097, "\n");
	CU_ASSERT_EQUAL(load_text(text, &c, path, sizeof path, err, sizeof err), -1);
	snprintf(want, sizeof want, "%s:1: line too long (max 4096 bytes)", path);
	CU_ASSERT_STRING_EQUAL(err, want);

	/* nor at the end of a file without a final newline */
	text[4097] = '\0';
	CU_ASSERT_EQUAL(load_text(text, &c, path, sizeof path, err, sizeof err), -1);
	snprintf(want, sizeof want, "%s:1: line too long (max 4096 bytes)", path);
	CU_ASSERT_STRING_EQUAL(err, want);
	free(text);
}

static void test_load_failure_keeps_config(void)
{
	static const char bad[] = "NUL\0byte";
	struct config c;
	char path[256], err[512], want[300];

	/* a failed load leaves the previous values alone */
	config_defaults(&c);
	CU_ASSERT_EQUAL_FATAL(write_temp(path, sizeof path, "workers = 7\nwokers = 1\n", 23), 0);
	CU_ASSERT_EQUAL(config_load(path, &c, err, sizeof err), -1);
	CU_ASSERT_EQUAL(c.workers, 0);
	unlink(path);

	CU_ASSERT_EQUAL_FATAL(write_temp(path, sizeof path, bad, sizeof bad - 1), 0);
	CU_ASSERT_EQUAL(config_load(path, &c, err, sizeof err), -1);
	snprintf(want, sizeof want, "%s:1: NUL byte in line", path);
	CU_ASSERT_STRING_EQUAL(err, want);
	unlink(path);

	CU_ASSERT_EQUAL(config_load("/nonexistent/sluice.conf", &c, err, sizeof err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "/nonexistent/sluice.conf: cannot open"));

	/* an empty file is the defaults */
	CU_ASSERT_EQUAL(load_text("", &c, path, sizeof path, err, sizeof err), 0);
	CU_ASSERT_EQUAL(c.listen_backlog, 128);
}

/* ---- the JWT secret file ------------------------------------------------ */

static int load_secret(const char *data, size_t len, struct config *c,
                       char *err, size_t errlen)
{
	char path[256];
	int rc;

	config_defaults(c);
	err[0] = '\0';
	if (write_temp(path, sizeof path, data, len) != 0)
		return -2;
	if (config_set(c, "jwt_secret_file", path, err, errlen) != 0) {
		unlink(path);
		return -2;
	}
	rc = config_load_jwt_secret(c, err, errlen);
	unlink(path);
	return rc;
}

static void test_jwt_secret(void)
{
	char secret[400], err[512];
	struct config c;

	memset(secret, 'S', sizeof secret);

	CU_ASSERT_EQUAL(load_secret(secret, 31, &c, err, sizeof err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "too short (31 bytes, need at least 32)"));
	CU_ASSERT_PTR_NULL(strstr(err, "SSSS"));  /* never the secret itself */
	CU_ASSERT_EQUAL(c.jwt_secret_len, 0);

	CU_ASSERT_EQUAL(load_secret(secret, 32, &c, err, sizeof err), 0);
	CU_ASSERT_EQUAL(c.jwt_secret_len, 32);
	CU_ASSERT_EQUAL(memcmp(c.jwt_secret, secret, 32), 0);

	/* a trailing newline (echo, editors) is not part of the secret */
	memcpy(secret + 32, "\n", 1);
	CU_ASSERT_EQUAL(load_secret(secret, 33, &c, err, sizeof err), 0);
	CU_ASSERT_EQUAL(c.jwt_secret_len, 32);
	memcpy(secret + 32, " \r\n\n", 4);
	CU_ASSERT_EQUAL(load_secret(secret, 36, &c, err, sizeof err), 0);
	CU_ASSERT_EQUAL(c.jwt_secret_len, 32);
	CU_ASSERT_EQUAL(c.jwt_secret[32], '\0');

	/* 31 bytes and a newline are still 31 */
	memcpy(secret + 31, "\n", 1);
	CU_ASSERT_EQUAL(load_secret(secret, 32, &c, err, sizeof err), -1);
	memset(secret, 'S', sizeof secret);

	CU_ASSERT_EQUAL(load_secret(secret, 255, &c, err, sizeof err), 0);
	CU_ASSERT_EQUAL(c.jwt_secret_len, 255);
	CU_ASSERT_EQUAL(load_secret(secret, 256, &c, err, sizeof err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "too long"));
	CU_ASSERT_PTR_NULL(strstr(err, "SSSS"));

	CU_ASSERT_EQUAL(load_secret("", 0, &c, err, sizeof err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "is empty"));
	CU_ASSERT_EQUAL(load_secret("\n\n", 2, &c, err, sizeof err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "is empty"));

	config_defaults(&c);
	CU_ASSERT_EQUAL(config_set(&c, "jwt_secret_file", "/nonexistent/jwt.secret",
	                           err, sizeof err), 0);
	CU_ASSERT_EQUAL(config_load_jwt_secret(&c, err, sizeof err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "/nonexistent/jwt.secret"));
}

/* connection_key_file through the config: the file format itself is
 * tested with aead_key_load in test_aead.c. */
static void test_connection_key(void)
{
	static const char hex[] =
		"ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100\n";
	char path[256], err[512];
	struct config c;

	config_defaults(&c);
	CU_ASSERT_EQUAL_FATAL(write_temp(path, sizeof path, hex, strlen(hex)), 0);
	CU_ASSERT_EQUAL(config_set(&c, "connection_key_file", path, err,
	                           sizeof err), 0);
	CU_ASSERT_EQUAL(config_load_connection_key(&c, err, sizeof err), 0);
	CU_ASSERT_TRUE(c.connection_key_loaded);
	CU_ASSERT_EQUAL(c.connection_key[0], 0xff);
	CU_ASSERT_EQUAL(c.connection_key[31], 0x00);
	unlink(path);

	/* a missing file: not loaded, and the message names the key's file */
	CU_ASSERT_EQUAL(config_load_connection_key(&c, err, sizeof err), -1);
	CU_ASSERT_FALSE(c.connection_key_loaded);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, path));
	CU_ASSERT_PTR_NULL(strstr(err, "ffeedd"));
}

static void test_rag_index_dir(void)
{
	struct config c;
	char buf[CONFIG_PATH_MAX + 32], err[256];

	config_defaults(&c);
	CU_ASSERT_EQUAL(config_rag_index_dir(&c, buf, sizeof buf), 0);
	CU_ASSERT_STRING_EQUAL(buf, "/var/lib/sluice/storage/.rag-index");
	CU_ASSERT_EQUAL(config_set(&c, "rag_index_dir", "/srv/idx", err, sizeof err), 0);
	CU_ASSERT_EQUAL(config_rag_index_dir(&c, buf, sizeof buf), 0);
	CU_ASSERT_STRING_EQUAL(buf, "/srv/idx");
	CU_ASSERT_EQUAL(config_rag_index_dir(&c, buf, 8), -1);
	CU_ASSERT_EQUAL(config_rag_index_dir(&c, buf, 9), 0);
	/* the value is kept in its one spelling */
	CU_ASSERT_EQUAL(config_set(&c, "embedding_provider", "openai", err, sizeof err), 0);
	CU_ASSERT_STRING_EQUAL(c.embedding_provider, "openai");
}

static void test_worker_count(void)
{
	struct config c;

	config_defaults(&c);
	c.workers = 3;
	CU_ASSERT_EQUAL(config_worker_count(&c), 3);
	c.workers = 0;
	CU_ASSERT(config_worker_count(&c) >= 1);
	CU_ASSERT(config_worker_count(&c) <= 256);
}

/* A quarter of the workers may hash a password at once, never more than the
 * CPUs, at least one; a set value wins. */
static void test_password_checks(void)
{
	struct config c;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int many = (int)(cpus < 1 ? 1 : cpus) * 8;    /* a quarter of it: 2 a CPU */

	config_defaults(&c);
	c.workers = 2;
	CU_ASSERT_EQUAL(config_password_checks(&c), 1);
	c.workers = 8;
	CU_ASSERT_EQUAL(config_password_checks(&c), cpus >= 2 ? 2 : 1);
	c.workers = many;
	CU_ASSERT_EQUAL(config_password_checks(&c), cpus < 1 ? 2 : (int)cpus);
	c.password_checks_max = 5;
	CU_ASSERT_EQUAL(config_password_checks(&c), 5);
}

int suite_config(void)
{
	static const struct test_case tests[] = {
		{ "defaults", test_defaults },
		{ "integer keys at their bounds", test_int_ranges },
		{ "values by key type", test_values },
		{ "parsed values and messages", test_value_results },
		{ "test-only keys only in a test build", test_test_only_keys },
		{ "string values at their buffer size", test_string_lengths },
		{ "a whole file", test_load_file },
		{ "file errors name the line", test_file_errors },
		{ "line length limit", test_long_lines },
		{ "failed loads", test_load_failure_keeps_config },
		{ "jwt secret file", test_jwt_secret },
		{ "connection key file", test_connection_key },
		{ "retrieval index dir", test_rag_index_dir },
		{ "worker count", test_worker_count },
		{ "password checks at once: a quarter of the workers, at most the CPUs",
		  test_password_checks },
		{ "the sample holds every key at its default", test_sample_is_the_defaults },
		{ "the first differing key", test_key_differing },
		{ NULL, NULL },
	};

	return suite_add("config", tests);
}
