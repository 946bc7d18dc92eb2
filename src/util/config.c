/* config.c - sluice.conf parsing.
 *
 * Format: one "key = value" per line; blank lines; comments are full lines
 * whose first non-blank character is '#'.  There are no trailing comments,
 * because a password may contain '#'.  A value may be wrapped in double
 * quotes to keep leading or trailing blanks; the outer pair is removed and
 * nothing inside is unescaped.  A key given twice keeps its last value.
 *
 * Every key is described once, in the table below, with the range it
 * accepts: a value outside it is an error naming the file and line. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "util/config.h"
#include "util/log.h"
#include "util/str.h"

#ifndef SLUICE_PKGDATADIR
#define SLUICE_PKGDATADIR "/usr/local/share/sluice"
#endif

#define CONFIG_LINE_MAX 4096              /* bytes, without the newline */
#define JWT_SECRET_MIN 32
#define JWT_READ_MAX 1024                 /* read no further than this */
#define WORKERS_MAX 256

#if LONG_MAX > 1000000000000
#define MAX_REQUESTS_MAX 1000000000000L
#else
#define MAX_REQUESTS_MAX LONG_MAX
#endif

enum key_type { K_STR, K_NUM, K_BOOL, K_MODE, K_LEVEL, K_PROVIDER, K_HOST };

struct key {
	const char *name;
	enum key_type type;
	size_t off;
	size_t size;                      /* of the member */
	long long min, max;               /* K_NUM */
	bool nonempty;                    /* K_STR */
};

#define MEMBER_SIZE(m) sizeof(((struct config *)0)->m)
#define STR(m, ne) { #m, K_STR, offsetof(struct config, m), MEMBER_SIZE(m), 0, 0, ne }
#define NUM(m, lo, hi) { #m, K_NUM, offsetof(struct config, m), MEMBER_SIZE(m), lo, hi, false }
#define BOOL(m) { #m, K_BOOL, offsetof(struct config, m), MEMBER_SIZE(m), 0, 0, false }

static const struct key keys[] = {
	STR(listen, true),
	STR(wait_listen, false),
	{ "listen_mode", K_MODE, offsetof(struct config, listen_mode),
	  MEMBER_SIZE(listen_mode), 0, 0777, false },
	NUM(listen_backlog, 1, 65535),
	NUM(workers, 0, WORKERS_MAX),
	NUM(max_requests, 0, MAX_REQUESTS_MAX),
	NUM(shutdown_timeout, 1, 3600),
	STR(pid_file, false),
#ifdef SLUICE_TEST_HOOKS
	BOOL(testing_routes),
#endif

	STR(db_host, false),
	NUM(db_port, 1, 65535),
	STR(db_socket, false),
	STR(db_user, true),
	STR(db_password, false),
	STR(db_name, true),
	NUM(db_connect_timeout, 1, 300),
	STR(sql_dir, true),
	STR(migrate_user, false),
	STR(migrate_password_file, false),

	STR(storage_root, true),
	BOOL(render_cache),
	STR(render_cache_dir, false),
	{ "host_name", K_HOST, offsetof(struct config, host_name),
	  MEMBER_SIZE(host_name), 0, 0, false },

	STR(jwt_secret_file, true),
	NUM(jwt_leeway, 0, 300),
	BOOL(health_auth),
	NUM(health_ping_cache_ms, 0, 1000),
	NUM(basic_cache_ttl, 0, 3600),
	NUM(pbkdf2_iterations, 1000, 10000000),
	NUM(password_checks_max, 0, 256),
	NUM(basic_fail_per_user, 1, 1000000),
	NUM(basic_fail_per_address, 1, 1000000),
	NUM(basic_fail_refill_s, 1, 3600),

	NUM(body_max_bytes, 1024, 1073741824),
	NUM(json_max_depth, 1, 1000),

	NUM(memory_default_mb, 1, 1048576),
	NUM(memory_max_mb, 1, 1048576),
	STR(connection_key_file, true),
	NUM(connection_test_timeout_s, 2, 30),

	STR(warehouse_host, false),
	NUM(warehouse_port, 1, 65535),
	STR(warehouse_socket, false),
	STR(warehouse_user, true),
	STR(warehouse_password_file, false),
	STR(warehouse_default_schema, true),
	NUM(jdbc_commit_rows, 1, 1000000000),

	NUM(work_poll_ms, 10, 60000),
	NUM(work_shutdown_grace_s, 0, 3600),
	NUM(work_rag_question_slots, 1, 64),
	NUM(work_rag_question_deadline_s, 1, 86400),
	NUM(work_rag_ingest_slots, 1, 64),
	NUM(work_rag_ingest_deadline_s, 1, 604800),
	NUM(work_storage_infer_slots, 1, 64),
	NUM(work_storage_infer_deadline_s, 1, 604800),
	NUM(work_storage_link_load_slots, 1, 64),
	NUM(work_storage_link_load_deadline_s, 1, 604800),
	NUM(work_runner_sweep_slots, 1, 64),
	NUM(work_runner_sweep_deadline_s, 1, 86400),
	NUM(work_webhook_deliver_slots, 1, 64),
	NUM(work_webhook_deliver_deadline_s, 1, 86400),
#ifdef SLUICE_TEST_HOOKS
	NUM(work_test_slots, 1, 64),
	NUM(work_test_deadline_s, 1, 86400),
#endif

	NUM(runner_max_runs, 1, 256),
	NUM(runner_heartbeat_s, 1, 300),
	NUM(runner_stale_s, 10, 86400),
	NUM(runner_shutdown_grace_s, 0, 3600),
	NUM(runner_retry_base_s, 1, 3600),
	NUM(runner_run_timeout_s, 5, 604800),
	NUM(runner_sweep_interval_s, 10, 86400),
	BOOL(webhook_allow_private),
	NUM(webhook_timeout_s, 1, 300),
	NUM(webhook_max_attempts, 1, 50),
	NUM(webhook_retry_base_s, 1, 86400),
	STR(webhook_ca_file, false),
#ifdef SLUICE_TEST_HOOKS
	NUM(runner_test_task_delay_ms, 0, 600000),
	NUM(runner_test_task_alloc_mb, 0, 1048576),
	NUM(runner_test_qualify_delay_ms, 0, 600000),
	NUM(serve_test_collect_delay_ms, 0, 60000),
#endif

	{ "embedding_provider", K_PROVIDER, offsetof(struct config, embedding_provider),
	  MEMBER_SIZE(embedding_provider), 0, 0, false },
	NUM(embedding_dimensions, 1, 4096),
	STR(openai_base_url, false),
	STR(openai_model, true),
	STR(openai_api_key_file, false),
	NUM(openai_timeout_ms, 100, 600000),
	NUM(openai_batch_size, 1, 2048),
	NUM(openai_max_retries, 0, 10),
	/* page_content is a TEXT column: 16000 characters of UTF-8 fit. */
	NUM(chunk_size, 20, 16000),
	NUM(chunk_overlap, 0, 8000),
	STR(rag_index_dir, false),
	NUM(question_wait_max_s, 0, 300),
	NUM(question_inline_max_snippets, 0, 10000000),
	NUM(question_inline_budget_ms, 0, 10000),
	BOOL(question_shared_passes),
	NUM(dataset_counts_cache_ms, 0, 60000),
#ifdef SLUICE_TEST_HOOKS
	NUM(rag_test_question_delay_ms, 0, 60000),
	NUM(rag_test_ingest_delay_ms, 0, 60000),
	NUM(rag_test_index_delay_ms, 0, 60000),
	NUM(rag_test_give_up_delay_ms, 0, 60000),
	NUM(rag_test_batch_delay_ms, 0, 60000),
	NUM(storage_test_unlink_delay_ms, 0, 60000),
	NUM(rag_test_rank_delay_ms, 0, 60000),
	NUM(rag_test_rank_spin_first_ms, 0, 60000),
	NUM(rag_test_pass_pause_ms, 0, 60000),
	NUM(rag_test_redirect_delay_ms, 0, 60000),
	NUM(rag_test_nudge_poll_ms, 0, 60000),
	NUM(rag_test_linger_ms, 0, 60000),
	BOOL(wait_test_tick_blind),
#endif

	STR(singer_taps_dir, true),
	NUM(singer_line_max_bytes, 1024, 1073741824),
	NUM(singer_commit_rows, 1, 100000000),
	/* storage explorer */
	NUM(upload_max_bytes, 1024, 1099511627776LL),
	NUM(refresh_inline_max_bytes, 0, 1099511627776LL),
	NUM(refresh_wait_s, 0, 110),

	{ "log_level", K_LEVEL, offsetof(struct config, log_level),
	  MEMBER_SIZE(log_level), 0, 0, false },
};

static const char *const providers[] = { "builtin", "openai" };

static const char *const level_names[] = {
	[LOG_DEBUG] = "debug", [LOG_INFO] = "info",
	[LOG_WARN] = "warn", [LOG_ERROR] = "error",
};

void config_defaults(struct config *c)
{
	memset(c, 0, sizeof *c);
	strcpy(c->listen, "/run/sluice/sluice.sock");
	c->listen_mode = 0660;
	c->listen_backlog = 128;
	c->workers = 0;
	c->max_requests = 0;
	c->shutdown_timeout = 30;
	c->pid_file[0] = '\0';
#ifdef SLUICE_TEST_HOOKS
	c->testing_routes = false;
#endif

	strcpy(c->db_host, "localhost");
	c->db_port = 3306;
	c->db_socket[0] = '\0';
	strcpy(c->db_user, "sluice");
	c->db_password[0] = '\0';
	strcpy(c->db_name, "sluice");
	c->db_connect_timeout = 5;
	strcpy(c->sql_dir, SLUICE_PKGDATADIR "/sql");
	c->migrate_user[0] = '\0';
	c->migrate_password_file[0] = '\0';

	strcpy(c->storage_root, "/var/lib/sluice/storage");
	c->render_cache = true;
	c->render_cache_dir[0] = '\0';
	c->host_name[0] = '\0';

	strcpy(c->jwt_secret_file, "/etc/sluice/jwt.secret");
	c->jwt_leeway = 30;
	c->health_auth = false;
	c->health_ping_cache_ms = 250;
	c->basic_cache_ttl = 60;
	c->pbkdf2_iterations = 600000;
	c->basic_fail_per_user = 10;
	c->basic_fail_per_address = 50;
	c->basic_fail_refill_s = 6;

	c->body_max_bytes = 1048576;
	c->json_max_depth = 32;

	c->memory_default_mb = 2048;
	c->memory_max_mb = 12000;
	strcpy(c->connection_key_file, "/etc/sluice/connection.key");
	c->connection_test_timeout_s = 5;

	c->warehouse_host[0] = '\0';
	c->warehouse_port = 3306;
	c->warehouse_socket[0] = '\0';
	strcpy(c->warehouse_user, "sluice_loader");
	c->warehouse_password_file[0] = '\0';
	strcpy(c->warehouse_default_schema, "warehouse");
	c->jdbc_commit_rows = 100000;

	c->work_poll_ms = 250;
	c->work_shutdown_grace_s = 20;
	c->work_rag_question_slots = 2;
	c->work_rag_question_deadline_s = 120;
	c->work_rag_ingest_slots = 2;
	c->work_rag_ingest_deadline_s = 3600;
	c->work_storage_infer_slots = 2;
	c->work_storage_infer_deadline_s = 900;
	c->work_storage_link_load_slots = 2;
	c->work_storage_link_load_deadline_s = 3600;
	c->work_runner_sweep_slots = 1;
	c->work_runner_sweep_deadline_s = 600;
	c->work_webhook_deliver_slots = 4;
	c->work_webhook_deliver_deadline_s = 600;
#ifdef SLUICE_TEST_HOOKS
	c->work_test_slots = 1;
	c->work_test_deadline_s = 10;
#endif

	c->runner_max_runs = 4;
	c->runner_heartbeat_s = 5;
	c->runner_stale_s = 60;
	c->runner_shutdown_grace_s = 20;
	c->runner_retry_base_s = 30;
	c->runner_run_timeout_s = 21600;
	c->runner_sweep_interval_s = 600;
	c->webhook_allow_private = false;
	c->webhook_timeout_s = 10;
	c->webhook_max_attempts = 8;
	c->webhook_retry_base_s = 30;
	c->webhook_ca_file[0] = '\0';
#ifdef SLUICE_TEST_HOOKS
	c->runner_test_task_delay_ms = 0;
	c->runner_test_task_alloc_mb = 0;
	c->runner_test_qualify_delay_ms = 0;
	c->serve_test_collect_delay_ms = 0;
#endif

	strcpy(c->embedding_provider, "builtin");
	c->embedding_dimensions = 384;
	c->openai_base_url[0] = '\0';
	strcpy(c->openai_model, "text-embedding-3-small");
	c->openai_api_key_file[0] = '\0';
	c->openai_timeout_ms = 10000;
	c->openai_batch_size = 64;
	c->openai_max_retries = 3;
	c->chunk_size = 800;
	c->chunk_overlap = 100;
	c->rag_index_dir[0] = '\0';
	c->question_wait_max_s = 30;
	c->question_inline_max_snippets = 200000;
	c->question_inline_budget_ms = 50;
	c->question_shared_passes = true;
	c->dataset_counts_cache_ms = 1000;
#ifdef SLUICE_TEST_HOOKS
	c->rag_test_question_delay_ms = 0;
	c->rag_test_ingest_delay_ms = 0;
	c->rag_test_index_delay_ms = 0;
	c->rag_test_give_up_delay_ms = 0;
	c->storage_test_unlink_delay_ms = 0;
	c->rag_test_nudge_poll_ms = 0;
	c->rag_test_linger_ms = 0;
	c->rag_test_batch_delay_ms = 0;
	c->rag_test_rank_delay_ms = 0;
	c->rag_test_rank_spin_first_ms = 0;
	c->rag_test_redirect_delay_ms = 0;
	c->wait_test_tick_blind = false;
#endif

	strcpy(c->singer_taps_dir, SLUICE_PKGDATADIR "/taps");
	c->singer_line_max_bytes = 16777216;
	c->singer_commit_rows = 10000;
	c->upload_max_bytes = 1153433600L;           /* 1100 MiB, as nginx's 1100m */
	c->refresh_inline_max_bytes = 1048576L;      /* 1 MiB */
	c->refresh_wait_s = 20;

	strcpy(c->log_level, "info");
}

static int parse_bool(const char *v, bool *out)
{
	static const char *const yes[] = { "on", "true", "yes", "1" };
	static const char *const no[] = { "off", "false", "no", "0" };

	for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
		if (str_eq_nocase(v, yes[i])) {
			*out = true;
			return 0;
		}
		if (str_eq_nocase(v, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -1;
}

/* An octal mode such as 0660 or 660: at most four digits, at most 0777. */
static int parse_mode(const char *v, int *out)
{
	size_t n = strlen(v);
	int m = 0;

	if (n == 0 || n > 4)
		return -1;
	for (; *v != '\0'; v++) {
		if (*v < '0' || *v > '7')
			return -1;
		m = m * 8 + (*v - '0');
	}
	if (m > 0777)
		return -1;
	*out = m;
	return 0;
}

static int set_key(struct config *c, const struct key *k, const char *value,
                   char *err, size_t errlen)
{
	char *field = (char *)c + k->off;
	enum log_level lvl;
	long long v;
	bool b;
	int mode;

	switch (k->type) {
	case K_STR:
		if (k->nonempty && value[0] == '\0') {
			str_errf(err, errlen, "value for %s must not be empty", k->name);
			return -1;
		}
		/* Never echo the value: it may be a password. */
		if (str_copy(field, k->size, value) != 0) {
			str_errf(err, errlen, "value for %s is too long (max %zu bytes)",
			        k->name, k->size - 1);
			return -1;
		}
		return 0;
	case K_NUM:
		if (str_to_ll(value, k->min, k->max, &v) != 0) {
			str_errf(err, errlen, "bad value for %s: '%.64s' (expected %lld..%lld)",
			        k->name, value, k->min, k->max);
			return -1;
		}
		if (k->size == sizeof(int))
			*(int *)(void *)field = (int)v;
		else
			*(long *)(void *)field = (long)v;
		return 0;
	case K_BOOL:
		if (parse_bool(value, &b) != 0) {
			str_errf(err, errlen, "bad value for %s: '%.64s' (expected on or off)",
			        k->name, value);
			return -1;
		}
		*(bool *)(void *)field = b;
		return 0;
	case K_MODE:
		if (parse_mode(value, &mode) != 0) {
			str_errf(err, errlen,
			        "bad value for %s: '%.64s' (expected an octal mode 0..0777)",
			        k->name, value);
			return -1;
		}
		*(int *)(void *)field = mode;
		return 0;
	case K_LEVEL:
		if (log_level_parse(value, &lvl) != 0) {
			str_errf(err, errlen,
			        "bad value for %s: '%.64s' (expected debug, info, warn or error)",
			        k->name, value);
			return -1;
		}
		/* stored in its canonical spelling */
		return str_copy(field, k->size, level_names[lvl]);
	case K_HOST:
		/* It goes before the ':' of a work process's id (host:pid). */
		if (strlen(value) >= k->size ||
		    value[strspn(value, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		                        "0123456789.-_")] != '\0') {
			str_errf(err, errlen, "bad value for %s: '%.64s' (expected at most %zu "
			        "letters, digits, '.', '-' or '_')", k->name, value, k->size - 1);
			return -1;
		}
		return str_copy(field, k->size, value);
	case K_PROVIDER:
		for (size_t i = 0; i < sizeof providers / sizeof providers[0]; i++)
			if (strcmp(value, providers[i]) == 0)
				return str_copy(field, k->size, providers[i]);
		str_errf(err, errlen,
		        "bad value for %s: '%.64s' (expected builtin or openai)",
		        k->name, value);
		return -1;
	}
	return -1;
}

int config_set(struct config *c, const char *key, const char *value,
               char *err, size_t errlen)
{
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (strcmp(keys[i].name, key) == 0)
			return set_key(c, &keys[i], value, err, errlen);
	str_errf(err, errlen, "unknown key '%.64s'", key);
	return -1;
}

const char *config_key_name(size_t i)
{
	return i < sizeof keys / sizeof keys[0] ? keys[i].name : NULL;
}

const char *config_key_differing(const struct config *a, const struct config *b)
{
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		const struct key *k = &keys[i];
		const char *x = (const char *)a + k->off, *y = (const char *)b + k->off;

		/* A string ends at its NUL; what lies past it is not its value. */
		if ((k->type == K_STR || k->type == K_PROVIDER || k->type == K_HOST)
		    ? strncmp(x, y, k->size) != 0 : memcmp(x, y, k->size) != 0)
			return k->name;
	}
	return NULL;
}

/* One line without its newline into buf (CONFIG_LINE_MAX + 1 bytes).
 * Returns 1 for a line, 0 at end of file, -1 too long, -2 a NUL byte,
 * -3 a read error. */
static int read_line(FILE *f, char *buf)
{
	size_t n = 0;
	int ch;

	while ((ch = getc(f)) != EOF && ch != '\n') {
		if (ch == '\0')
			return -2;
		if (n == CONFIG_LINE_MAX)
			return -1;
		buf[n++] = (char)ch;
	}
	if (ch == EOF) {
		if (ferror(f))
			return -3;
		if (n == 0)
			return 0;
	}
	buf[n] = '\0';
	return 1;
}

/* Split a trimmed, non-comment line into key and value, in place. */
static int split_line(char *line, char **key, char **value,
                      char *err, size_t errlen)
{
	char *eq = strchr(line, '=');
	char *v;
	size_t n;

	if (eq == NULL) {
		str_errf(err, errlen, "expected 'key = value'");
		return -1;
	}
	*eq = '\0';
	*key = str_trim(line);
	if (**key == '\0') {
		str_errf(err, errlen, "missing key before '='");
		return -1;
	}
	v = str_trim(eq + 1);
	n = strlen(v);
	if (n > 0 && v[0] == '"') {
		if (n < 2 || v[n - 1] != '"') {
			str_errf(err, errlen, "unterminated quote in value for %.64s", *key);
			return -1;
		}
		v[n - 1] = '\0';
		v++;
	}
	*value = v;
	return 0;
}

int config_accounts_check(const struct config *c, char *err, size_t errlen)
{
	/* The loader's grant covers every database named wh_...: the
	 * service's own must never be one of them. */
	if (strncasecmp(c->db_name, "wh_", 3) == 0) {
		str_errf(err, errlen, "db_name must not start with 'wh_': that prefix "
		         "belongs to the warehouse databases");
		return -1;
	}
	/* On the service's own server the loader must be an account of its
	 * own, or MariaDB could not keep loads out of the service database. */
	if (c->warehouse_host[0] == '\0' && c->warehouse_socket[0] == '\0' &&
	    strcmp(c->warehouse_user, c->db_user) == 0) {
		str_errf(err, errlen, "warehouse_user must not be db_user: loads "
		         "write through an account of their own");
		return -1;
	}
	return 0;
}

int config_load(const char *path, struct config *c, char *err, size_t errlen)
{
	static const char *const read_errors[] = {
		"", "line too long (max 4096 bytes)", "NUL byte in line",
		"read error",
	};
	char line[CONFIG_LINE_MAX + 1], msg[512];
	char *key, *value;
	struct config tmp;
	unsigned lineno = 0;
	FILE *f;
	int r, rc = -1;

	f = fopen(path, "re");
	if (f == NULL) {
		str_errf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return -1;
	}
	/* Work on a copy so a bad file leaves *c as it was (SIGHUP reload). */
	tmp = *c;
	while ((r = read_line(f, line)) != 0) {
		lineno++;
		if (r < 0) {
			str_errf(err, errlen, "%s:%u: %s", path, lineno, read_errors[-r]);
			goto out;
		}
		key = str_trim(line);
		if (*key == '\0' || *key == '#')
			continue;
		if (split_line(key, &key, &value, msg, sizeof msg) != 0 ||
		    config_set(&tmp, key, value, msg, sizeof msg) != 0) {
			str_errf(err, errlen, "%s:%u: %s", path, lineno, msg);
			goto out;
		}
	}
	/* Ranges that depend on two keys, set in any order. */
	if (tmp.memory_default_mb > tmp.memory_max_mb) {
		str_errf(err, errlen,
		        "%s: memory_default_mb (%d) is larger than memory_max_mb (%d)",
		        path, tmp.memory_default_mb, tmp.memory_max_mb);
		goto out;
	}
	if (tmp.chunk_overlap >= tmp.chunk_size) {
		str_errf(err, errlen,
		        "%s: chunk_overlap (%d) must be smaller than chunk_size (%d)",
		        path, tmp.chunk_overlap, tmp.chunk_size);
		goto out;
	}
	if (config_accounts_check(&tmp, msg, sizeof msg) != 0) {
		str_errf(err, errlen, "%s: %s", path, msg);
		goto out;
	}
	if (tmp.runner_stale_s <= 2 * tmp.runner_heartbeat_s) {
		str_errf(err, errlen,
		        "%s: runner_stale_s (%d) must be more than twice runner_heartbeat_s (%d)",
		        path, tmp.runner_stale_s, tmp.runner_heartbeat_s);
		goto out;
	}
	*c = tmp;
	rc = 0;
out:
	/* the copy and the line may hold db_password or the JWT secret */
	explicit_bzero(&tmp, sizeof tmp);
	explicit_bzero(line, sizeof line);
	fclose(f);
	return rc;
}

int config_load_jwt_secret(struct config *c, char *err, size_t errlen)
{
	unsigned char buf[JWT_READ_MAX];
	const char *path = c->jwt_secret_file;
	size_t len = 0;
	ssize_t n;
	int fd, rc = -1;

	if (path[0] == '\0') {
		str_errf(err, errlen, "jwt_secret_file is not set");
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		str_errf(err, errlen, "cannot open jwt_secret_file '%s': %s",
		        path, strerror(errno));
		return -1;
	}
	while (len < sizeof buf) {
		n = read(fd, buf + len, sizeof buf - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			str_errf(err, errlen, "cannot read jwt_secret_file '%s': %s",
			        path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	/* An editor's or echo's trailing newline is not part of the secret. */
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r' ||
	                   buf[len - 1] == ' ' || buf[len - 1] == '\t'))
		len--;
	if (len == 0) {
		str_errf(err, errlen, "jwt_secret_file '%s' is empty", path);
		goto out;
	}
	if (len > sizeof c->jwt_secret - 1) {
		str_errf(err, errlen,
		        "jwt secret in '%s' is too long (max %zu bytes)",
		        path, sizeof c->jwt_secret - 1);
		goto out;
	}
	if (len < JWT_SECRET_MIN) {
		str_errf(err, errlen,
		        "jwt secret in '%s' is too short (%zu bytes, need at least %d)",
		        path, len, JWT_SECRET_MIN);
		goto out;
	}
	memcpy(c->jwt_secret, buf, len);
	c->jwt_secret[len] = '\0';
	c->jwt_secret_len = len;
	rc = 0;
out:
	explicit_bzero(buf, sizeof buf);
	close(fd);
	return rc;
}

int config_load_connection_key(struct config *c, char *err, size_t errlen)
{
	c->connection_key_loaded = false;
	if (aead_key_load(c->connection_key_file, c->connection_key,
	                  err, errlen) != 0)
		return -1;
	c->connection_key_loaded = true;
	return 0;
}

int config_render_cache_dir(const struct config *c, char *buf, size_t cap)
{
	int n;

	if (c->render_cache_dir[0] != '\0')
		n = snprintf(buf, cap, "%s", c->render_cache_dir);
	else
		n = snprintf(buf, cap, "%s/.render-cache", c->storage_root);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int config_rag_index_dir(const struct config *c, char *buf, size_t cap)
{
	int n;

	if (c->rag_index_dir[0] != '\0')
		n = snprintf(buf, cap, "%s", c->rag_index_dir);
	else
		n = snprintf(buf, cap, "%s/.rag-index", c->storage_root);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int config_worker_count(const struct config *c)
{
	long n;

	if (c->workers > 0)
		return c->workers;
	n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1)
		n = 1;
	n *= WORKERS_PER_CPU;
	if (n < WORKERS_MIN)
		n = WORKERS_MIN;
	return n > WORKERS_DEFAULT_MAX ? WORKERS_DEFAULT_MAX : (int)n;
}

int config_password_checks(const struct config *c)
{
	int n = config_worker_count(c) / 4;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (c->password_checks_max > 0)
		return c->password_checks_max;
	if (cpus > 0 && n > cpus)
		n = (int)cpus;
	return n > 0 ? n : 1;
}

int config_wait_listen(const struct config *c, char *buf, size_t cap)
{
	int n = c->wait_listen[0] != '\0' ? snprintf(buf, cap, "%s", c->wait_listen)
	        : snprintf(buf, cap, "%s.wait", c->listen);

	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int config_read_password_file(const char *key, const char *path, char *buf,
                              size_t cap, char *err, size_t errlen)
{
	size_t len = 0;
	ssize_t n;
	int fd;

	buf[0] = '\0';
	if (path[0] == '\0')
		return 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		str_errf(err, errlen, "cannot open %s '%s': %s", key, path, strerror(errno));
		return -1;
	}
	while (len < cap - 1) {
		n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			str_errf(err, errlen, "cannot read %s '%s': %s", key, path,
			         strerror(errno));
			close(fd);
			explicit_bzero(buf, cap);
			return -1;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
		len--;
	buf[len] = '\0';
	return 0;
}

int config_use_migrate_account(struct config *c, char *err, size_t errlen)
{
	char pw[CONFIG_STR_MAX];

	if (c->migrate_user[0] == '\0')
		return 0;
	if (config_read_password_file("migrate_password_file", c->migrate_password_file,
	                              pw, sizeof pw, err, errlen) != 0)
		return -1;
	memcpy(c->db_user, c->migrate_user, sizeof c->db_user);
	memcpy(c->db_password, pw, sizeof c->db_password);
	explicit_bzero(pw, sizeof pw);
	return 0;
}
