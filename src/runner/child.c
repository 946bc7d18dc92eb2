/* child.c - one task of a run in its own process.
 *
 * The supervisor forks this child per task.  The child first limits its
 * address space (RLIMIT_AS) to the job's memory, so everything the task
 * does, its connections included, counts; then it opens its own service
 * database connections (one for its work, one for its log lines, which must
 * never sit inside a transaction) and the warehouse, reads the job and its
 * state, opens the connection's password (AES-256-GCM, key file outside the
 * database) and hands a job_spec to the connector.  The password is
 * registered with the log so it can never appear in a line, and wiped when
 * the task ends.  The result goes to the supervisor through a pipe.
 *
 * How memory exhaustion is recognised (see runner_memory_exceeded): a
 * failed allocation the task notices itself (the test allocation below, a
 * connector's "out of memory" / ENOMEM error, a tap's "Out of memory!"), or
 * a child that dies by SIGSEGV/SIGABRT/SIGBUS/SIGKILL, or exits without a
 * report, with its peak address space within 10% (at least 16 MB) of the
 * limit.  The supervisor samples the child's VmPeak every 100 ms and the
 * child reports its own at the end. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "db/db.h"
#include "db/warehouse.h"
#include "runner/connector.h"
#include "runner/runner.h"
#include "util/aead.h"
#include "util/config.h"
#include "util/log.h"
#include "util/proc.h"
#include "util/test_hooks.h"

#ifdef RUNNER_SANITIZED
/* AddressSanitizer's default of dying on a failed allocation would hide
 * the very failure the memory limit produces: let malloc answer NULL, as
 * it does in a normal build.  ASAN_OPTIONS still overrides. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}
#endif

long long runner_self_vm_kb(const char *key)
{
	char line[256];
	size_t klen = strlen(key);
	long long v = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, key, klen) == 0) {
			v = strtoll(line + klen, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static char *dup_or_null(struct db_stmt *st, unsigned col)
{
	return db_col_null(st, col) ? NULL : strdup(db_col_str(st, col));
}

static const char *obj_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (o != NULL && json_object_object_get_ex(o, key, &v) &&
	    json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return NULL;
}

static enum load_type load_type_of(const char *s)
{
	if (s != NULL && strcmp(s, "incremental") == 0)
		return LOAD_INCREMENTAL;
	if (s != NULL && strcmp(s, "incremental_with_qualify") == 0)
		return LOAD_INCREMENTAL_QUALIFY;
	return LOAD_FULL;
}

struct loaded {
	char *connector, *input, *output, *load_type, *inc_name, *inc_type;
	char *pkeys, *columns, *bookmark, *state, *connection_id;
};

/* The job row with its state.  0, or -1 with err. */
static int job_load(struct db *db, const struct task_ref *t, struct loaded *L,
                    char *err, size_t errlen)
{
	struct db_stmt *st;
	int rc;

	st = db_query(db, "SELECT j.connector, j.input, j.output, j.load_type, "
	    "j.incremental_column_name, j.incremental_column_type, j.primary_keys, "
	    "j.column_include_list, s.incremental_column_value, s.state, "
	    "j.connection_id FROM jobs j JOIN pipelines p ON p.id = j.pipeline_id "
	    "LEFT JOIN job_state s ON s.job_id = j.id "
	    "WHERE j.id = ? AND p.customer_id = ?", "ss", t->job_id, t->customer_id);
	if (st == NULL || (rc = db_fetch(st)) <= 0) {
		db_done(st);
		snprintf(err, errlen, "the job could not be read from the database");
		return -1;
	}
	L->connector = dup_or_null(st, 0);
	L->input = dup_or_null(st, 1);
	L->output = dup_or_null(st, 2);
	L->load_type = dup_or_null(st, 3);
	L->inc_name = dup_or_null(st, 4);
	L->inc_type = dup_or_null(st, 5);
	L->pkeys = dup_or_null(st, 6);
	L->columns = dup_or_null(st, 7);
	L->bookmark = dup_or_null(st, 8);
	L->state = dup_or_null(st, 9);
	L->connection_id = dup_or_null(st, 10);
	db_done(st);
	return 0;
}

/* The job's connection with its password opened.  0, or -1 with err. */
static int source_load(struct db *db, struct config *cfg, const char *conn_id,
                       const char *customer_id, struct source_conn *src,
                       char *err, size_t errlen)
{
	unsigned char sealed[1100];
	char kerr[256];
	struct db_stmt *st;
	size_t n;
	int rc;

	if (!cfg->connection_key_loaded &&
	    config_load_connection_key(cfg, kerr, sizeof kerr) != 0) {
		snprintf(err, errlen, "the connection key cannot be read, so the "
		         "source password cannot be opened");
		log_kv(LOG_ERROR, "connection key", "error=%s", LOG_Q(kerr));
		return -1;
	}
	st = db_query(db, "SELECT plugin, host, port, database_name, user_name, "
	    "password_enc, options FROM connections WHERE id = ? AND customer_id = ?",
	    "ss", conn_id, customer_id);
	if (st == NULL || (rc = db_fetch(st)) <= 0) {
		db_done(st);
		snprintf(err, errlen, "connection %.36s was not found", conn_id);
		return -1;
	}
	snprintf(src->plugin, sizeof src->plugin, "%s", db_col_str(st, 0));
	snprintf(src->host, sizeof src->host, "%s", db_col_str(st, 1));
	src->port = (int)db_col_ll(st, 2);
	snprintf(src->database, sizeof src->database, "%s", db_col_str(st, 3));
	snprintf(src->user, sizeof src->user, "%s", db_col_str(st, 4));
	n = db_col_len(st, 5);
	if (n < AEAD_OVERHEAD || n > sizeof sealed ||
	    n - AEAD_OVERHEAD >= sizeof src->password) {
		db_done(st);
		snprintf(err, errlen, "the stored password of connection %.36s is "
		         "damaged", conn_id);
		return -1;
	}
	memcpy(sealed, db_col_str(st, 5), n);
	src->options = db_col_null(st, 6) ? NULL
	               : json_tokener_parse(db_col_str(st, 6));
	db_done(st);
	if (aead_open(cfg->connection_key, conn_id, strlen(conn_id), sealed, n,
	              (unsigned char *)src->password) != 0) {
		snprintf(err, errlen, "the password of connection %.36s does not open "
		         "with the configured key", conn_id);
		return -1;
	}
	src->password[n - AEAD_OVERHEAD] = '\0';
	return 0;
}

static void child_exit(int fd, struct task_result *res) __attribute__((noreturn));
static void child_exit(int fd, struct task_result *res)
{
	res->vm_peak_kb = runner_self_vm_kb("VmPeak:");
	proc_write_all(fd, res, sizeof *res);
	close(fd);
	fflush(stderr);
	_exit(res->rc == 0 ? 0 : 1);
}

void child_task_main(const struct config *cfg_in, const struct task_ref *t, int fd)
{
	static struct task_result res;
	static struct config cfg;
	static struct job_spec job;
	static char dest_schema[WH_IDENT_MAX + 1];
	struct loaded L;
	struct task_env env;
	struct rlimit rl;
	struct db *db = NULL, *logdb = NULL;
	struct wh *wh = NULL;
	struct run_log *log = NULL;
	struct json_object *in = NULL, *out = NULL, *raw = NULL;
	pid_t parent = getppid();
	const char *logical;
	long long baseline = 0;
	int rc;

	if (proc_die_with_parent(parent) != 0)
		_exit(1);
	proc_close_fds(fd);              /* the supervisor's session is its own */
	signal(SIGTERM, SIG_DFL);
	memset(&res, 0, sizeof res);
	memset(&L, 0, sizeof L);
	memset(&env, 0, sizeof env);
	cfg = *cfg_in;
	res.rc = -1;

	/* The limit first, so that everything the task does counts.  Under
	 * AddressSanitizer the process reserves terabytes of shadow address
	 * space up front; the limit then comes on top of what is mapped now. */
#ifdef RUNNER_SANITIZED
	baseline = runner_self_vm_kb("VmSize:");
#endif
	rl.rlim_cur = rl.rlim_max = runner_rlimit_bytes(t->memory_mb, baseline);
	res.baseline_kb = baseline;
	if (setrlimit(RLIMIT_AS, &rl) != 0) {
		snprintf(res.error, sizeof res.error, "could not set the memory "
		         "limit: %s", strerror(errno));
		child_exit(fd, &res);
	}

	if ((db = db_new(&cfg)) == NULL || (logdb = db_new(&cfg)) == NULL ||
	    db_ensure(db) != DB_OK || db_ensure(logdb) != DB_OK) {
		snprintf(res.error, sizeof res.error, "the service database is not "
		         "reachable from the task");
		child_exit(fd, &res);
	}
	log = run_log_new(logdb, t->run_id, t->task_id);
	if (job_load(db, t, &L, res.error, sizeof res.error) != 0)
		goto out;
	in = L.input != NULL ? json_tokener_parse(L.input) : NULL;
	out = L.output != NULL ? json_tokener_parse(L.output) : NULL;
	if (out != NULL)
		json_object_object_get_ex(out, "raw", &raw);

	job.run_id = t->run_id;
	job.pipeline_id = t->pipeline_id;
	job.job_id = t->job_id;
	job.customer_id = t->customer_id;
	job.task_id = t->task_id;
	job.connector = L.connector;
	job.plugin = obj_str(in, "plugin");
	job.input = in;
	job.output = out;
	/* The customer's own database of the schema it named: nothing a job
	 * says can point a load at another customer's data or the service's. */
	logical = obj_str(raw, "table_schema");
	if (logical == NULL || logical[0] == '\0')
		logical = cfg.warehouse_default_schema;
	if (wh_schema_physical(t->customer_id, logical, dest_schema) != 0) {
		snprintf(res.error, sizeof res.error, "output.raw.table_schema is not "
		         "a valid schema name");
		goto out;
	}
	job.dest_schema = dest_schema;
	job.dest_table = obj_str(raw, "table_name");
	job.load_type = load_type_of(L.load_type);
	job.incremental_column = job.load_type == LOAD_FULL ? NULL : L.inc_name;
	job.incremental_column_type = L.inc_type;
	job.primary_keys = L.pkeys != NULL ? json_tokener_parse(L.pkeys) : NULL;
	job.column_include_list = L.columns != NULL
	                          ? json_tokener_parse(L.columns) : NULL;
	job.bookmark = L.bookmark;
	job.singer_state = L.state;
	job.memory_mb = t->memory_mb;
	if (L.connection_id != NULL) {
		if (source_load(db, &cfg, L.connection_id, t->customer_id, &job.source,
		                res.error, sizeof res.error) != 0)
			goto out;
		job.has_source = true;
		run_log_redact(log, job.source.password);
	}

#ifdef SLUICE_TEST_HOOKS
	/* Memory a hungry connector would take, so a test sees the limit. */
	if (cfg.runner_test_task_alloc_mb > 0) {
		int got;

		if (test_hook_alloc(cfg.runner_test_task_alloc_mb, &got) != 0) {
			res.memory_exceeded = 1;
			snprintf(res.error, sizeof res.error, "out of memory after "
			         "allocating %d MB", got);
			goto out;
		}
	}
#endif
	TEST_HOOK_PAUSE(&cfg, runner_test_task_delay_ms);

	if (connector_driver_check(&job, res.error, sizeof res.error) != 0)
		goto out;
	if ((wh = wh_open(&cfg, res.error, sizeof res.error)) == NULL) {
		char why[sizeof res.error];

		snprintf(why, sizeof why, "%s", res.error);
		snprintf(res.error, sizeof res.error, "the warehouse is not reachable: "
		         "%.960s", why);
		goto out;
	}
	if (strcmp(t->kind, "qualify") == 0)
		run_log_info(log, "qualify %s.%s: one row per primary key, the latest "
		             "by %s", job.dest_schema[0] ? job.dest_schema : "(default)",
		             job.dest_table ? job.dest_table : "?",
		             job.incremental_column ? job.incremental_column : "?");
	else
		run_log_info(log, "%s connector, plugin %s, into %s.%s (%s%s%s)",
		             job.connector ? job.connector : "?",
		             job.plugin ? job.plugin : "?",
		             job.dest_schema[0] ? job.dest_schema : "(default)",
		             job.dest_table ? job.dest_table : "?",
		             L.load_type ? L.load_type : "full_load",
		             job.bookmark ? ", bookmark " : "",
		             job.bookmark ? job.bookmark : "");
	env.cfg = &cfg;
	env.run_id = t->run_id;
	env.task_id = t->task_id;
	env.db = db;
	env.wh = wh;
	env.log = log;
	rc = strcmp(t->kind, "qualify") == 0
	     ? connector_qualify(&job, &env, res.error, sizeof res.error)
	     : connector_extract_load(&job, &env, res.error, sizeof res.error);
	res.rc = rc == 0 ? 0 : -1;
	res.rows_read = env.rows_read;
	res.rows_loaded = env.rows_loaded;
	if (rc != 0 && res.error[0] == '\0')
		snprintf(res.error, sizeof res.error, "the connector failed");
	if (rc != 0 && runner_error_is_oom(res.error))
		res.memory_exceeded = 1;
out:
	explicit_bzero(job.source.password, sizeof job.source.password);
	explicit_bzero(cfg.connection_key, sizeof cfg.connection_key);
	/* The supervisor writes the task's outcome line; connections are not
	 * closed politely: the process ends now. */
	(void)log;
	(void)wh;
	child_exit(fd, &res);
}
