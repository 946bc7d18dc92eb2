/* state.c - the state that covers loaded rows: a jdbc bookmark, a Singer
 * state, a processed file.
 *
 * When the warehouse is the service's own server, each write goes through
 * the warehouse connection, inside the transaction the connector has open
 * there: rows and state commit together or not at all.  Otherwise the write
 * is remembered and made on the service database by state_after_commit,
 * right after the warehouse commit: the state is then at worst behind the
 * rows (a crash in between makes the next run load those rows again), never
 * ahead of them.
 *
 * A task runs in its own child process, so the deferred writes live in this
 * file's one pending list. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "db/warehouse.h"
#include "runner/connector.h"
#include "util/str.h"

enum pending_kind { P_BOOKMARK, P_SINGER, P_FILE, P_ROWS };

struct pending {
	enum pending_kind kind;
	char *job_id;
	char *text;                  /* bookmark, state JSON or file path */
	char *last_modified;         /* P_FILE */
	long long size;              /* P_FILE; < 0 = unknown; P_ROWS: the rows */
};

static struct pending *pend;
static size_t npend, cappend;

static const char sql_bookmark[] =
	"INSERT INTO %s (job_id, incremental_column_value) VALUES (?, ?) "
	"ON DUPLICATE KEY UPDATE incremental_column_value = "
	"VALUES(incremental_column_value)";
static const char sql_singer[] =
	"INSERT INTO %s (job_id, state) VALUES (?, ?) "
	"ON DUPLICATE KEY UPDATE state = VALUES(state)";
static const char sql_rows[] =
	"UPDATE %s SET rows_loaded = ? WHERE run_id = ? AND task_id = ?";
static const char sql_file[] =
	"INSERT INTO %s (job_id, file_path, last_modified, size_bytes) "
	"VALUES (?, ?, ?, ?) ON DUPLICATE KEY UPDATE "
	"last_modified = VALUES(last_modified), size_bytes = VALUES(size_bytes), "
	"processed_at = CURRENT_TIMESTAMP(3)";

static void pending_free(struct pending *p)
{
	free(p->job_id);
	free(p->text);
	free(p->last_modified);
	memset(p, 0, sizeof *p);
}

static void pending_clear(void)
{
	for (size_t i = 0; i < npend; i++)
		pending_free(&pend[i]);
	npend = 0;
}

/* A later write of the same thing replaces an earlier one still pending. */
static struct pending *pending_slot(enum pending_kind kind, const char *job_id,
                                    const char *file_path)
{
	struct pending *np;

	for (size_t i = 0; i < npend; i++)
		if (pend[i].kind == kind && strcmp(pend[i].job_id, job_id) == 0 &&
		    (kind != P_FILE || strcmp(pend[i].text, file_path) == 0)) {
			pending_free(&pend[i]);
			pend[i].kind = kind;
			return &pend[i];
		}
	if (npend == cappend) {
		size_t ncap = cappend > 0 ? cappend * 2 : 16;

		if ((np = realloc(pend, ncap * sizeof *np)) == NULL)
			return NULL;
		pend = np;
		cappend = ncap;
	}
	np = &pend[npend++];
	memset(np, 0, sizeof *np);
	np->kind = kind;
	return np;
}

static char *dup_or_null(const char *s)
{
	return s != NULL ? strdup(s) : NULL;
}

/* One statement on the warehouse connection, naming the service's table. */
static int via_wh(struct task_env *env, const char *fmt, const char *table,
                  const char *const *params, size_t n, char *err, size_t errlen)
{
	char qt[2 * (2 * WH_IDENT_MAX * 4 + 3) + 2];
	char sql[sizeof sql_file + sizeof qt];
	char why[256];

	if (wh_app_table(env->wh, table, qt, sizeof qt) != 0) {
		str_errf(err, errlen, "cannot name the %s table", table);
		return -1;
	}
	snprintf(sql, sizeof sql, fmt, qt);
	if (wh_exec_bound(env->wh, sql, params, n, why, sizeof why) < 0) {
		str_errf(err, errlen, "saving state failed: %s", why);
		return -1;
	}
	return 0;
}

/* A job's bookmark or Singer state: written now when the warehouse shares
 * the service's server (one transaction with the load), else kept for the
 * commit. */
static int save_text(struct task_env *env, enum pending_kind kind, const char *sql,
                     const char *job_id, const char *text, char *err, size_t errlen)
{
	struct pending *p;

	if (wh_shares_app_server(env->wh)) {
		const char *params[] = { job_id, text };

		return via_wh(env, sql, "job_state", params, 2, err, errlen);
	}
	if ((p = pending_slot(kind, job_id, NULL)) == NULL ||
	    (p->job_id = strdup(job_id)) == NULL ||
	    (text != NULL && (p->text = strdup(text)) == NULL)) {
		str_errf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

int state_save_bookmark(struct task_env *env, const char *job_id,
                        const char *value, char *err, size_t errlen)
{
	return save_text(env, P_BOOKMARK, sql_bookmark, job_id, value, err, errlen);
}

int state_save_singer(struct task_env *env, const char *job_id,
                      const char *state_json, char *err, size_t errlen)
{
	return save_text(env, P_SINGER, sql_singer, job_id, state_json, err, errlen);
}

int state_save_processed_file(struct task_env *env, const char *job_id,
                              const char *file_path, const char *last_modified_sql,
                              long long size_bytes, char *err, size_t errlen)
{
	char size[32];
	struct pending *p;

	if (wh_shares_app_server(env->wh)) {
		const char *params[4];

		snprintf(size, sizeof size, "%lld", size_bytes);
		params[0] = job_id;
		params[1] = file_path;
		params[2] = last_modified_sql;
		params[3] = size_bytes >= 0 ? size : NULL;
		return via_wh(env, sql_file, "file_storage_processed", params, 4,
		              err, errlen);
	}
	if ((p = pending_slot(P_FILE, job_id, file_path)) == NULL ||
	    (p->job_id = strdup(job_id)) == NULL ||
	    (p->text = strdup(file_path)) == NULL ||
	    (p->last_modified = dup_or_null(last_modified_sql)) == NULL) {
		str_errf(err, errlen, "out of memory");
		return -1;
	}
	p->size = size_bytes;
	return 0;
}

int state_save_rows(struct task_env *env, long long rows_committed,
                    char *err, size_t errlen)
{
	struct pending *p;

	if (env->run_id == NULL || env->task_id == NULL)
		return 0;
	if (wh_shares_app_server(env->wh)) {
		char rows[32];
		const char *params[] = { rows, env->run_id, env->task_id };

		snprintf(rows, sizeof rows, "%lld", rows_committed);
		return via_wh(env, sql_rows, "run_task_status", params, 3, err, errlen);
	}
	if ((p = pending_slot(P_ROWS, env->task_id, NULL)) == NULL ||
	    (p->job_id = strdup(env->task_id)) == NULL) {
		str_errf(err, errlen, "out of memory");
		return -1;
	}
	p->size = rows_committed;
	return 0;
}

/* One attempt at the whole pending list (kept until the commit: a retry
 * writes it all again). */
static int pending_write_body(struct db *db, void *arg)
{
	const struct task_env *env = arg;
	long long n = 0;

	for (size_t i = 0; i < npend && n >= 0; i++) {
		struct pending *p = &pend[i];

		switch (p->kind) {
		case P_BOOKMARK:
			n = db_exec(db, "INSERT INTO job_state (job_id, "
			            "incremental_column_value) VALUES (?, ?) ON DUPLICATE KEY "
			            "UPDATE incremental_column_value = "
			            "VALUES(incremental_column_value)", "ss",
			            p->job_id, p->text);
			break;
		case P_SINGER:
			n = db_exec(db, "INSERT INTO job_state (job_id, state) "
			            "VALUES (?, ?) ON DUPLICATE KEY UPDATE "
			            "state = VALUES(state)", "ss", p->job_id, p->text);
			break;
		case P_FILE:
			n = p->size >= 0
			    ? db_exec(db, "INSERT INTO file_storage_processed (job_id, "
			              "file_path, last_modified, size_bytes) VALUES (?, ?, ?, ?) "
			              "ON DUPLICATE KEY UPDATE last_modified = "
			              "VALUES(last_modified), size_bytes = VALUES(size_bytes), "
			              "processed_at = CURRENT_TIMESTAMP(3)", "sssi",
			              p->job_id, p->text, p->last_modified, p->size)
			    : db_exec(db, "INSERT INTO file_storage_processed (job_id, "
			              "file_path, last_modified, size_bytes) VALUES (?, ?, ?, NULL) "
			              "ON DUPLICATE KEY UPDATE last_modified = "
			              "VALUES(last_modified), size_bytes = NULL, "
			              "processed_at = CURRENT_TIMESTAMP(3)", "sss",
			              p->job_id, p->text, p->last_modified);
			break;
		case P_ROWS:
			n = db_exec(db, "UPDATE run_task_status SET rows_loaded = ? "
			            "WHERE run_id = ? AND task_id = ?", "iss", p->size,
			            env->run_id, env->task_id);
			break;
		}
	}
	return n < 0 ? (int)n : 0;
}

int state_after_commit(struct task_env *env, char *err, size_t errlen)
{
	int rc = 0;

	if (npend == 0)
		return 0;
	if (db_tx(env->db, "task state", pending_write_body, env) < 0) {
		str_errf(err, errlen, "saving state failed: %s", db_error(env->db));
		rc = -1;
	}
	pending_clear();
	return rc;
}
